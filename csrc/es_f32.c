/* float32 helpers shared by the float learners (Online-BLS, the Hoeffding trees); see es_f32.h. No libm. */
#include "es_f32.h"

#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

uint32_t es_f32_bits(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

static float bits_float(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

float es_f32_sqrt(float x)
{
    uint32_t ix = es_f32_bits(x);
    uint32_t exponent = (ix >> 23) & 0xFFu;
    uint32_t mantissa = ix & 0x007FFFFFu;
    uint32_t q = 0, s = 0, r = 0x01000000u, t;
    uint32_t odd;

#if defined(__SSE__) || (defined(__ARM_FP) && (__ARM_FP & 4))
    if (ix - 0x00800000u < 0x7F000000u) { /* positive and normal: the FPU's instruction, also correctly rounded */
#if defined(__SSE__)
        return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x)));
#else
        float root;
        __asm__("vsqrt.f32 %0, %1" : "=t"(root) : "t"(x));
        return root;
#endif
    }
#endif
    if (exponent == 0xFFu) {          /* NaN stays NaN, +inf stays +inf, -inf becomes NaN */
        return (ix & 0x80000000u) && mantissa == 0 ? bits_float(0x7FC00000u) : x;
    }
    if ((ix & 0x7FFFFFFFu) == 0) {    /* +-0 */
        return x;
    }
    if (ix & 0x80000000u) {
        return bits_float(0x7FC00000u);
    }
    if (exponent == 0) {              /* subnormal: normalize, the exponent goes to 1 - shifts */
        uint32_t shifts = 0;
        while ((mantissa & 0x00800000u) == 0) {
            mantissa <<= 1;
            shifts++;
        }
        mantissa &= 0x007FFFFFu;
        /* biased exponent 1 - shifts, kept non-negative as e + 32 below */
        exponent = 33u - shifts;
    } else {
        exponent += 32u;
    }
    /* x = 1.m * 2^(exponent - 32 - 127); the unbiased exponent is odd when exponent - 159 is */
    mantissa |= 0x00800000u;
    odd = (exponent - 159u) & 1u;     /* modulo 2**32, the parity is right either way */
    if (odd) {
        mantissa += mantissa;
    }
    mantissa += mantissa;
    /* bit by bit: q = floor(sqrt(mantissa * 2**23)) with one extra (rounding) bit */
    while (r != 0) {
        t = s + r;
        if (t <= mantissa) {
            s = t + r;
            mantissa -= t;
            q += r;
        }
        mantissa += mantissa;
        r >>= 1;
    }
    if (mantissa != 0) {              /* inexact: round to nearest (a tie is impossible) */
        q += q & 1u;
    }
    /* the result's biased exponent is (unbiased - odd) / 2 + 127 = (exponent - odd + 95) / 2 >= 1; q >> 1
     * carries the hidden bit (1 << 23), so one less goes into the exponent field */
    return bits_float((q >> 1) + (((exponent - odd + 95u) / 2u - 1u) << 23));
}

uint32_t es_xorshift32(uint32_t *state)
{
    uint32_t s = *state;
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    *state = s;
    return s;
}
