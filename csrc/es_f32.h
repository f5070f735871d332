/* float32 helpers shared by the learners that compute in float32 on the device (bit-exact on x86, Cortex-M4F and
 * Cortex-M0 with soft float): the bits of a float, a correctly rounded square root by integer arithmetic (no
 * libm), and the xorshift32 random stream. */
#ifndef ES_F32_H
#define ES_F32_H

#include <stdint.h>

/* The IEEE bits of a float. */
uint32_t es_f32_bits(float x);

/* Correctly rounded IEEE float32 square root (integer algorithm, no libm; for positive normal inputs the FPU's
 * instruction where there is one, SSE on x86 and VSQRT on a single-precision ARM FPU such as the Cortex-M4F's,
 * also correctly rounded): equal to sqrtf for every input. */
float es_f32_sqrt(float x);

/* The next number of a xorshift32 stream (s ^= s << 13; s ^= s >> 17; s ^= s << 5), stored back in *state. */
uint32_t es_xorshift32(uint32_t *state);

#endif
