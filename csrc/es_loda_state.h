/* Loda: the device state's C types. Generated from edgestream's state description (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_LODA_STATE_H
#define ES_LODA_STATE_H

#include "es_common.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;              /* 1: one output */
    uint8_t n_projections;          /* K */
    uint8_t n_nonzero;              /* m: features per projection */
    uint8_t n_bins;                 /* B: bins per projection */
    uint32_t bin_scale;             /* floor(65536 B / (30 m + 1)): the bin of a sum s is (s * bin_scale) >> 16 */
    uint16_t window;                /* W: rows per window */
    uint16_t log_window;            /* log2(W + 1) in Q8: the surprise of an empty bin */
    uint16_t alarm_q16;             /* target false-alarm rate * 65536 */
} es_loda_config;

typedef struct {
    uint64_t n_learned;             /* rows learned */
    uint16_t filled;                /* rows in the latest window */
    uint16_t threshold;             /* Q15 score flagged from; 32768 flags nothing */
    uint8_t ready;                  /* 1 once a reference window exists */
} es_loda_counters;

typedef struct {
    const es_loda_config *config;   /* constant, in flash */
    float *offset;                  /* levels: per feature: level 0 starts here */
    float *scale;                   /* levels: per feature: levels per input unit */
    uint16_t *reference;            /* counts: K x B, the window before: log2(W + 1) - log2(count + 1) in Q8 */
    uint16_t *latest;               /* counts: K x B, the window being counted */
    uint16_t *histogram;            /* threshold: recent Q15 scores, bins of 256 */
    uint8_t *feature;               /* projections: K x m features */
    uint8_t *negative;              /* projections: K x m: 1 where the weight is -1 */
    es_loda_counters *counters;
} es_loda;

#endif
