#include "es_cart.h"

uint32_t es_log2_q16(uint64_t x)
{
    uint32_t exponent = 0;
    uint32_t result;
    uint64_t y = x;
    int bit;
    while (y >> 1) {
        y >>= 1;
        exponent++;
    }
    y = exponent <= 30u ? x << (30u - exponent) : x >> (exponent - 30u); /* mantissa in [1, 2), Q30 */
    result = exponent << 16;
    for (bit = 15; bit >= 0; bit--) {
        y = (y * y) >> 30;
        if (y >= ((uint64_t)2u << 30)) {
            y >>= 1;
            result += (uint32_t)1u << bit;
        }
    }
    return result;
}

