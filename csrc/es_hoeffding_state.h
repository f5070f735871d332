/* Hoeffding trees with class-conditional estimator propagation (HT+AE) and their forest (IRF+AE): the device state's C types. Generated from edgestream's state description (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_HOEFFDING_STATE_H
#define ES_HOEFFDING_STATE_H

#include "es_common.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;              /* class slots (max_classes) */
    uint8_t n_trees;
    uint8_t propagate;              /* 1: children copy the parent's estimators */
    uint16_t max_nodes;             /* per tree, 2 max_leaves - 1 */
    uint16_t max_leaves;            /* per tree */
    uint16_t grace;                 /* weight between split attempts */
    uint8_t split_steps;            /* thresholds low + k (high - low) / split_steps */
    uint8_t subspace;               /* features per split attempt (n_features: all, no random draw) */
    uint32_t seed;                  /* xorshift32 start of the forest's random stream */
    float split_step;               /* 1 / split_steps */
    float log_inv_delta;            /* ln(1 / delta) */
    float tie;                      /* tie threshold tau */
    float exp_neg_lambda;           /* exp(-lambda) of the Poisson weights; 0 = every tree learns every row */
    uint8_t drift;                  /* drift threshold in standard deviations; 0 = no drift handling */
    uint16_t work_per_call;         /* units (candidates, adapted leaves) per learn call and tree; 0: whole */
    uint8_t linear;                 /* regression: 1 = linear leaves (leaf_linear), 0 = mean leaves */
} es_hoeffding_config;

typedef struct {
    uint64_t n_learned;             /* rows learned */
    uint32_t random;                /* xorshift32 state */
} es_hoeffding_counters;

typedef struct {
    const es_hoeffding_config *config;/* constant, in flash */
    float *var_floor;               /* input: d, naive Bayes variance floor */
    uint8_t *feature;               /* node pool: trees x nodes; 255 = leaf */
    float *threshold;               /* node pool: trees x nodes; x <= t goes left */
    uint16_t *child;                /* node pool: trees x nodes; left child (right = +1) or leaf slot */
    uint16_t *seen;                 /* node pool: trees x nodes, rows in the drift detector (saturating) */
    uint32_t *fast;                 /* node pool: trees x nodes, fast error average (1 = 2**24) */
    uint32_t *slow;                 /* node pool: trees x nodes, slow error average (1 = 2**24) */
    uint16_t *n_nodes;              /* node pool: nodes used per tree (free pairs included) */
    uint16_t *n_leaves;             /* node pool: leaf slots used per tree */
    float *class_count;             /* leaves: slots x classes, priors */
    float *est_count;               /* leaves: slots x classes */
    float *mean;                    /* leaves: slots x classes x d */
    float *m2;                      /* leaves: slots x classes x d, sum of squared deviations */
    float *low;                     /* leaves: slots x d, smallest value */
    float *high;                    /* leaves: slots x d, largest value */
    uint32_t *since;                /* leaves: slots, weight since the last split attempt */
    float *left;                    /* scratch: classes */
    float *right;                   /* scratch: classes */
    int32_t *scores;                /* scratch: classes, Q10 */
    uint16_t *tree_proba;           /* scratch: classes, Q15 */
    uint32_t *sums;                 /* scratch: classes, Q15 sums over trees */
    float *terms;                   /* scratch: d, a class's naive Bayes terms */
    uint16_t *attempt_node;         /* attempt: per tree, leaf node of the attempt under way; 0xFFFF none */
    uint16_t *attempt_pos;          /* attempt: per tree, candidates evaluated */
    uint16_t *adapt_pos;            /* attempt: per tree, the drift adaptation under way: marking at node p < max_nodes, merging at max_nodes + p; 0xFFFF none */
    uint8_t *best_feature;          /* attempt: per tree, best candidate's feature; 255 none yet */
    float *best_threshold;          /* attempt: per tree, best candidate's threshold */
    float *best_entropy;            /* attempt: per tree, best candidate's entropy */
    uint8_t *order;                 /* attempt: trees x d, the attempt's features (drawn at its start) */
    float *snap_count;              /* attempt: trees x classes, the leaf's priors at the attempt's start */
    float *snap_est;                /* attempt: trees x classes */
    float *snap_mean;               /* attempt: trees x classes x d */
    float *snap_m2;                 /* attempt: trees x classes x d */
    float *snap_low;                /* attempt: trees x d */
    float *snap_high;               /* attempt: trees x d */
    uint32_t *leaf_n;               /* leaves: slots, regression: rows (weighted) */
    int32_t *leaf_sum;              /* leaves: slots, regression: sum of target codes */
    uint32_t *bin_n;                /* leaves: slots x d x split_steps, regression: rows */
    int32_t *bin_sum;               /* leaves: slots x d x split_steps, regression: codes */
    int32_t *leaf_linear;           /* leaves: slots x (d + 2), linear leaves: d weights, the mean's and the linear model's running error */
    uint8_t *cached;                /* cache: 1: the cached_ regions hold the last prediction's row */
    float *cached_row;              /* cache: d, the row of the last prediction */
    uint16_t *cached_leaf;          /* cache: per tree, the leaf node of that row */
    uint8_t *cached_class;          /* cache: per tree, its leaf's naive Bayes class */
    es_hoeffding_counters *counters;
} es_hoeffding;

#endif
