/* Shrub Ensembles: the device state's C types. Generated from edgestream's state description (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_SHRUBS_STATE_H
#define ES_SHRUBS_STATE_H

#include "es_tree.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;              /* values per leaf: the classes, 1 for a regressor */
    uint8_t max_depth;
    uint8_t criterion;              /* ES_GINI or ES_ENTROPY (a regressor: unused) */
    uint16_t window_size;           /* B */
    uint16_t max_shrubs;            /* M; the pool has M + 1 slots */
    uint16_t min_samples_leaf;
    uint16_t burnin;                /* gradient steps per new shrub */
    uint16_t update_every;
    uint32_t step_q16;              /* gradient step in Q16; 0 = adaptive, 65536 / (shrubs + 1) */
    uint32_t work_per_call;         /* units of work per learn call; 0 = all of it */
    uint16_t queue_size;            /* rows the queue of pending rows holds */
    uint32_t unit_row;              /* units of inserting one pending row */
    uint32_t unit_train;            /* units of training a new shrub (CART) */
    uint32_t unit_terms;            /* units of the new shrub's Gram column */
    uint32_t unit_weights;          /* units of the gradient steps and the prox */
} es_shrubs_config;

typedef struct {
    uint16_t head;                  /* next window row to write */
    uint16_t count;                 /* rows in the window */
    uint16_t n_shrubs;              /* active shrubs: roots[0..n_shrubs) and weights[0..n_shrubs) */
    uint16_t since_update;          /* samples since the last new shrub */
    uint16_t pending;               /* rows in the queue, not yet learned */
    uint16_t queue_head;            /* the oldest pending row's place in the queue */
    uint16_t phase;                 /* the new-shrub job's next piece: 0 none, 1 train, 2 terms, 3 weights */
    uint16_t job_slot;              /* the new shrub's pool slot while its job runs (0 without a job) */
    uint16_t job_level;             /* levels of the new shrub grown */
    uint16_t level_first;           /* the new shrub's first node of the level being grown */
    uint16_t level_size;            /* nodes of the level being grown */
    uint16_t n_nodes;               /* nodes of the new shrub so far */
    uint16_t n_leaves;              /* leaves of the new shrub so far */
} es_shrubs_counters;

typedef struct {
    const es_shrubs_config *config; /* constant, in flash */
    uint8_t *window_bins;           /* window: B x features */
    uint8_t *window_labels;         /* window: B (a regressor: 2 B, int16 target codes, low byte first) */
    uint8_t *queue_bins;            /* queue: queue x features: rows waiting to be learned */
    uint8_t *queue_labels;          /* queue: queue (a regressor: 2 x queue) */
    uint16_t *sorted_rows;          /* window: features x B: window rows by (bin, row) */
    es_node *nodes;                 /* node pool: (M + 1) x (2^(depth+1) - 1) */
    uint16_t *leaf_values;          /* leaves: (M + 1) x 2^depth x classes, Q15 */
    uint16_t *roots;                /* weights: M + 1 */
    uint16_t *weights;              /* weights: M + 1, Q15 */
    uint8_t *leaf_index;            /* cache: B x (M + 1): leaf of each window row in each slot's shrub */
    uint32_t *gram;                 /* cache: (M + 1) x (M + 1), Q15 sums */
    uint32_t *label_sum;            /* cache: M + 1, Q15 sums */
    uint16_t *node_of;              /* cache: B: rows' nodes while CART runs, then (2 classes) the new shrub's class-0 values */
    uint16_t *split_counts;         /* cache: 2^depth x classes: class totals of a level's nodes */
    uint32_t *split_stats;          /* scratch: 2^(depth-1) x (10 + classes): scan state of a level's nodes */
    int32_t *work_weights;          /* scratch: 2 x (M + 1) */
    uint8_t *rank;                  /* scratch: M + 1 */
    uint8_t *cand_slot;             /* scratch: M + 1 */
    es_shrubs_counters *counters;
} es_shrubs;

#endif
