/* Online broad learning system: the device state's C types. Generated from edgestream's state description (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_BLS_STATE_H
#define ES_BLS_STATE_H

#include "es_common.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;              /* readout outputs: the classes, 1 for a regressor */
    uint16_t feature_nodes;         /* F */
    uint16_t enhancement_nodes;     /* E; m = F + E nodes */
    uint32_t seed;                  /* random weights: xorshift32 from this seed */
    float feature_scale;            /* sqrt(3 / d) */
    float enhance_scale;            /* sqrt(3 / F) */
    float sqrt_forget;              /* sqrt(mu); 1 = no forgetting */
    float refresh_sqrt;             /* sqrt(lambda (1 - mu^m)); 0 = no refresh */
    float diag_limit;               /* the factor halves when a diagonal entry reaches it */
    float diag_floor;               /* sqrt(lambda): the diagonal after a halving is at least this */
} es_bls_config;

typedef struct {
    uint64_t n_learned;             /* samples learned */
    uint16_t refresh;               /* node whose regularization is refreshed next */
} es_bls_counters;

typedef struct {
    const es_bls_config *config;    /* constant, in flash */
    float *center;                  /* input: d */
    float *scale;                   /* input: d */
    float *factor;                  /* factor: m (m + 1) / 2, lower, packed by columns */
    float *weights;                 /* weights: m x classes */
    float *inputs;                  /* scratch: d, standardized */
    float *broad;                   /* scratch: m */
    float *rotate;                  /* scratch: m */
    float *delta;                   /* scratch: classes x m, class-major */
    float *residual;                /* scratch: classes */
    int32_t *scores;                /* scratch: classes, Q10 */
    es_bls_counters *counters;
} es_bls;

#endif
