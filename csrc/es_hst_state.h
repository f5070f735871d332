/* Half-Space Trees: the device state's C types. Generated from edgestream's state description (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_HST_STATE_H
#define ES_HST_STATE_H

#include "es_common.h"

typedef struct {
    uint8_t n_features;
    uint8_t n_classes;              /* 1: one output */
    uint8_t n_trees;                /* T */
    uint8_t height;                 /* h: 2^h leaves per tree */
    uint16_t window;                /* W: rows per window */
    uint16_t size_limit;            /* floor(W / 10): a node with no more reference mass ends the walk */
    uint16_t alarm_q16;             /* target false-alarm rate * 65536 */
} es_hst_config;

typedef struct {
    uint64_t n_learned;             /* rows learned */
    uint16_t filled;                /* rows in the latest window */
    uint16_t threshold;             /* Q15 score flagged from; 32768 flags nothing */
    uint8_t ready;                  /* 1 once a reference window exists */
} es_hst_counters;

typedef struct {
    const es_hst_config *config;    /* constant, in flash */
    float *split_point;             /* trees: T x (2^h - 1) split points, x <= t goes left */
    uint16_t *reference;            /* masses: T x (2^(h+1) - 1), the window before */
    uint16_t *latest;               /* masses: T x (2^(h+1) - 1), the window being counted */
    uint16_t *histogram;            /* threshold: recent Q15 scores, bins of 256 */
    uint8_t *split_feature;         /* trees: T x (2^h - 1) split features */
    es_hst_counters *counters;
} es_hst;

#endif
