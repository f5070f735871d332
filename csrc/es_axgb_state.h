/* Adaptive XGBoost: the device state's C types. Generated from edgestream's state description (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_AXGB_STATE_H
#define ES_AXGB_STATE_H

#include "es_tree.h"
#include "es_adwin.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;
    uint8_t n_outputs;              /* scores per leaf: 1 for 2 classes, else n_classes */
    uint8_t max_depth;
    uint8_t strategy;               /* 0 push, 1 replace */
    uint8_t drift;                  /* 1: ADWIN on the error stream */
    uint16_t hist_bins;             /* max_bins + 1 (the last row holds the missing bin) */
    uint16_t window_min;
    uint16_t window_max;
    uint16_t capacity;              /* ring rows: window_max + calls a job may take - 1 */
    uint16_t members;               /* K */
    uint32_t work_per_call;         /* units per learn call, 0 = all */
    uint32_t lambda_q15;
    uint32_t gamma_q15;
    uint32_t min_child_q15;
    uint32_t eta_q16;               /* learning rate in Q16 */
    uint32_t drift_log_q24;         /* ADWIN's ln(2/delta) in Q24 (a restored detector must have it) */
    uint32_t drift_cuts;            /* ADWIN's cut tests per update (0: a whole check at once) */
    uint16_t drift_clock;           /* ADWIN's check period */
    uint16_t unit_grad;             /* units of a sample's margins (unit_weights) */
    uint16_t unit_walk;             /* units per member walked */
    uint16_t unit_hist;
    uint16_t unit_scan;             /* per bin visited */
    uint16_t unit_gain;             /* per split gain */
    uint16_t unit_node;
    uint16_t unit_part;
} es_axgb_config;

typedef struct {
    int64_t best_gain;              /* best split gain of the current node so far */
    uint16_t head;                  /* ring row of the oldest sample */
    uint16_t count;                 /* rows in the ring */
    uint16_t window;                /* size of the next window, W(i) */
    uint16_t n_members;             /* members: roots[0..n_members) */
    uint16_t replace_index;         /* replace: position of the next member */
    uint16_t job_window;            /* samples of the window being trained */
    uint16_t job_slot;              /* tree slot receiving the new member */
    uint16_t job_target;            /* members before it (its residual base); replace: its position */
    uint16_t node;                  /* node of the new tree being grown */
    uint16_t n_nodes;
    uint16_t n_leaves;
    uint16_t pos;                   /* cursor of the phase */
    uint16_t pos_end;               /* partition: right cursor */
    uint8_t phase;                  /* 0 idle */
    uint8_t feature;                /* feature of the histogram; n_features = totals only */
    uint8_t best_feature;           /* 255: no split found */
    uint8_t best_bin;
} es_axgb_counters;

typedef struct {
    const es_axgb_config *config;   /* constant, in flash */
    uint8_t *window_bins;           /* window: ring x features */
    uint8_t *window_labels;         /* window: ring (a regressor: 1) */
    int16_t *window_targets;        /* window: ring of target codes (a classifier: 1) */
    es_node *nodes;                 /* node pool: (K + 1) x (2^(depth+1) - 1) */
    int16_t *leaf_values;           /* leaves: (K + 1) x 2^depth x outputs, Q10 */
    uint16_t *roots;                /* ensemble: K + 1 */
    es_adwin *adwin;                /* drift: error-stream change detector */
    uint16_t *proba;                /* training: W_max x outputs, Q15 (a regressor: 1) */
    int16_t *margins;               /* training: W_max target codes (a classifier: 1) */
    uint16_t *order;                /* training: W_max */
    uint16_t *node_start;           /* training: nodes per tree */
    uint16_t *node_stop;            /* training: nodes per tree */
    uint8_t *node_depth;            /* training: nodes per tree */
    int32_t *hist_g;                /* training: bins x outputs */
    int32_t *hist_h;                /* training: bins x outputs */
    int32_t *node_g;                /* training: outputs */
    int32_t *node_h;                /* training: outputs */
    int32_t *left_g;                /* training: outputs */
    int32_t *left_h;                /* training: outputs */
    int32_t *scores;                /* scratch: outputs */
    uint32_t *work;                 /* scratch: outputs (softmax) */
    es_axgb_counters *counters;
} es_axgb;

#endif
