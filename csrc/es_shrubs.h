/* Shrub Ensembles that keep learning on the device in memory fixed at generation time.
 * edgestream/shrubs.py is the specification (fixed-point formats and rounding are written there). */
#ifndef ES_SHRUBS_H
#define ES_SHRUBS_H

#include "es_cart.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;
    uint8_t max_depth;
    uint8_t criterion;          /* ES_GINI or ES_ENTROPY */
    uint16_t window_size;       /* B */
    uint16_t max_shrubs;        /* M; the pool has M + 1 slots */
    uint16_t min_samples_leaf;
    uint16_t burnin;            /* gradient steps per new shrub */
    uint16_t update_every;
    uint32_t step_q16;          /* gradient step in Q16; 0 = adaptive, 65536 / (shrubs + 1) */
} es_shrubs_config;

typedef struct {
    uint16_t head;              /* next window row to write */
    uint16_t count;             /* rows in the window */
    uint16_t n_shrubs;          /* active shrubs: roots[0..n_shrubs) and weights[0..n_shrubs) */
    uint16_t since_update;      /* samples since the last new shrub */
} es_shrubs_counters;

/* Pointers to the regions of one model's state (sizes in edgestream.shrubs.ShrubEnsemble.layout). */
typedef struct {
    const es_shrubs_config *config;
    uint8_t *window_bins;       /* B x n_features */
    uint8_t *window_labels;     /* B */
    es_node *nodes;             /* (M + 1) x (2^(depth+1) - 1) */
    uint16_t *leaf_values;      /* (M + 1) x 2^depth x n_classes, Q15 */
    uint16_t *roots;            /* M + 1 */
    uint16_t *weights;          /* M + 1, Q15 */
    uint16_t *leaf_index;       /* scratch: B x (M + 1) */
    int32_t *residual;          /* scratch: B x n_classes */
    int32_t *work_weights;      /* scratch: M + 1 */
    uint16_t *order;            /* scratch: B */
    uint16_t *node_start;       /* scratch: nodes per shrub */
    uint16_t *node_stop;        /* scratch: nodes per shrub */
    uint8_t *node_depth;        /* scratch: nodes per shrub */
    uint8_t *rank;              /* scratch: M + 1 */
    uint32_t *class_counts;     /* scratch: n_classes */
    uint32_t *left_counts;      /* scratch: n_classes */
    es_shrubs_counters *counters;
} es_shrubs;

/* Learn one binned sample. A label >= n_classes is rejected with ES_ERR_LABEL and changes nothing. */
es_status es_shrubs_learn(const es_shrubs *model, const uint8_t *bins, uint8_t label);

/* Q15 probabilities of one binned sample; acc is scratch of n_classes. */
es_status es_shrubs_predict_proba(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba);

/* Most probable class (first on ties); acc and proba are scratch of n_classes. */
es_status es_shrubs_predict(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba,
                            uint8_t *class_out);

#endif
