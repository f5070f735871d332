/* Integer split criteria for the trees that learners grow on the device (shrubs): criterion codes, the
 * regression trees' variance score and the
 * bit-by-bit fixed-point logarithm of edgestream/_kernels.pyx (log2_q16), to the bit. */
#ifndef ES_CART_H
#define ES_CART_H

#include "es_tree.h"

#define ES_GINI 0u
#define ES_ENTROPY 1u

/* floor(log2(x) * 65536) up to the last bit, for x >= 1, in integers. */
uint32_t es_log2_q16(uint64_t x);

/* The variance-reduction score of one side of a regression split (as the frozen regression trees score it):
 * floor(sum^2 / n) of the sum of its n >= 1 int16 target codes (|sum| < 2^27). */
uint64_t es_variance_key(int32_t sum, uint32_t n);

#endif
