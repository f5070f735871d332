/* Integer split criteria for the trees that learners grow on the device (shrubs): criterion codes and the
 * bit-by-bit fixed-point logarithm of edgestream/_kernels.pyx (log2_q16), to the bit. */
#ifndef ES_CART_H
#define ES_CART_H

#include "es_tree.h"

#define ES_GINI 0u
#define ES_ENTROPY 1u

/* floor(log2(x) * 65536) up to the last bit, for x >= 1, in integers. */
uint32_t es_log2_q16(uint64_t x);

#endif
