/* Quantization of raw features to 8-bit bins: the rule of edgestream/binning.py, to the bit.
 *
 * Feature j owns the strictly increasing edges[offsets[j] .. offsets[j + 1]). Its bin is the number of
 * edges strictly below the value: a value on an edge falls in that edge's bin, values outside the fitted
 * range fall in the first or last bin, and NaN falls in ES_MISSING_BIN.
 *
 * Contract (not checkable in C): features and bins hold n_features values, offsets n_features + 1
 * non-decreasing indexes into edges, and no feature has more than 254 edges. The generated bundles pass their
 * own tables and sizes; edgestream/fuzz/quantize.c fuzzes these functions within the contract. edges and
 * offsets are constant tables defined with ES_FLASH (es_flash.h): in program memory on AVR.
 */
#ifndef ES_BINNING_H
#define ES_BINNING_H

#include "es_common.h"

es_status es_quantize_f32(const float *features, const float *edges, const uint16_t *offsets,
                          uint8_t n_features, uint8_t *bins);

es_status es_quantize_i32(const int32_t *features, const int32_t *edges, const uint16_t *offsets,
                          uint8_t n_features, uint8_t *bins);

#endif
