#include "es_binning.h"

#include <string.h>

#include "es_flash.h"

/* NaN test on the bits: no float compare, which costs a library call on cores without an FPU. */
static int es_is_nan(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return (bits & 0x7fffffffu) > 0x7f800000u;
}

/* Binary search for the first edge >= value (edges and offsets are constant tables in flash: es_flash.h); NaN
 * compares false everywhere and is handled by the caller. */
#define ES_COUNT_EDGES_BELOW(READ, edges, lo, hi, value) \
    while ((lo) < (hi)) {                               \
        uint16_t mid_ = (uint16_t)((lo) + ((hi) - (lo)) / 2u); \
        if (READ(&(edges)[mid_]) < (value)) {           \
            (lo) = (uint16_t)(mid_ + 1u);               \
        } else {                                        \
            (hi) = mid_;                                \
        }                                               \
    }

es_status es_quantize_f32(const float *features, const float *edges, const uint16_t *offsets,
                          uint8_t n_features, uint8_t *bins)
{
    uint8_t j;
    if (features == 0 || edges == 0 || offsets == 0 || bins == 0) {
        return ES_ERR_NULL;
    }
    for (j = 0; j < n_features; j++) {
        const float value = features[j];
        uint16_t lo = es_flash_u16(&offsets[j]);
        uint16_t hi = es_flash_u16(&offsets[j + 1u]);
        if (es_is_nan(value)) {
            bins[j] = (uint8_t)ES_MISSING_BIN;
            continue;
        }
        ES_COUNT_EDGES_BELOW(es_flash_f32, edges, lo, hi, value)
        bins[j] = (uint8_t)(lo - es_flash_u16(&offsets[j]));
    }
    return ES_OK;
}

es_status es_quantize_i32(const int32_t *features, const int32_t *edges, const uint16_t *offsets,
                          uint8_t n_features, uint8_t *bins)
{
    uint8_t j;
    if (features == 0 || edges == 0 || offsets == 0 || bins == 0) {
        return ES_ERR_NULL;
    }
    for (j = 0; j < n_features; j++) {
        uint16_t lo = es_flash_u16(&offsets[j]);
        uint16_t hi = es_flash_u16(&offsets[j + 1u]);
        ES_COUNT_EDGES_BELOW(es_flash_i32, edges, lo, hi, features[j])
        bins[j] = (uint8_t)(lo - es_flash_u16(&offsets[j]));
    }
    return ES_OK;
}
