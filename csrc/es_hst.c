/* Half-Space Trees on the device; edgestream/learners/hst.py is the specification. */
#include "es_hst.h"

/* The walk of one row down tree t: with count set, every node on the path gains a row in the latest window.
 * Returns the tree's mass-weighted depth r * 2^k of the first node whose reference mass is at most the size
 * limit, or of the leaf. */
static uint32_t es_hst_walk(const es_hst *model, const float *features, uint32_t t, int count)
{
    const es_hst_config *config = model->config;
    uint32_t internal = ((uint32_t)1 << config->height) - 1u;
    uint32_t nodes = 2u * internal + 1u;
    const uint8_t *feature = model->split_feature + t * internal;
    const float *point = model->split_point + t * internal;
    uint16_t *reference = model->reference + t * nodes;
    uint16_t *latest = model->latest + t * nodes;
    uint32_t node = 0, depth, contribution = 0;
    int scored = 0;
    for (depth = 0;; depth++) {
        if (!scored && (reference[node] <= config->size_limit || depth == config->height)) {
            contribution = (uint32_t)reference[node] << depth;
            scored = 1;
        }
        if (count) {
            latest[node]++;
        }
        if (depth == config->height) {
            return contribution;
        }
        node = 2u * node + (features[feature[node]] <= point[node] ? 1u : 2u);
    }
}

/* The Q15 score of a row (count: and learn it at once). */
static uint16_t es_hst_walk_all(const es_hst *model, const float *features, int count)
{
    const es_hst_config *config = model->config;
    uint64_t raw = 0, most;
    uint32_t t;
    for (t = 0; t < config->n_trees; t++) {
        raw += es_hst_walk(model, features, t, count);
    }
    if (!model->counters->ready) {
        return 0;
    }
    most = ((uint64_t)config->n_trees * config->window) << config->height;
    return (uint16_t)(ES_DETECT_SCORE_MAX - (uint32_t)(raw * ES_DETECT_SCORE_MAX / most));
}

es_status es_hst_learn(const es_hst *model, const float *features)
{
    const es_hst_config *config;
    es_hst_counters *counters;
    uint32_t nodes;
    if (model == 0 || features == 0) {
        return ES_ERR_NULL;
    }
    if (!es_detect_finite(features, model->config->n_features)) {
        return ES_ERR_INPUT;
    }
    config = model->config;
    counters = model->counters;
    nodes = (uint32_t)config->n_trees * ((((uint32_t)2) << config->height) - 1u);
    es_detect_learned(model->reference, model->latest, nodes, model->histogram, config->window,
                      config->alarm_q16, es_hst_walk_all(model, features, 1), &counters->n_learned, &counters->filled,
                      &counters->threshold, &counters->ready);
    return ES_OK;
}

es_status es_hst_score(const es_hst *model, const float *features, int32_t *out)
{
    uint16_t score;
    if (model == 0 || features == 0 || out == 0) {
        return ES_ERR_NULL;
    }
    if (!es_detect_finite(features, model->config->n_features)) {
        return ES_ERR_INPUT;
    }
    score = es_hst_walk_all(model, features, 0);
    *out = es_detect_output(score, model->counters->threshold);
    return ES_OK;
}

es_status es_hst_validate(const es_hst *candidate)
{
    const es_hst_config *config;
    const es_hst_counters *counters;
    uint32_t i, internal;
    if (candidate == 0 || candidate->config == 0 || candidate->counters == 0) {
        return ES_ERR_NULL;
    }
    config = candidate->config;
    counters = candidate->counters;
    internal = (uint32_t)config->n_trees * (((uint32_t)1 << config->height) - 1u);
    for (i = 0; i < internal; i++) {
        if (candidate->split_feature[i] >= config->n_features || !es_detect_finite(&candidate->split_point[i], 1u)) {
            return ES_ERR_IMAGE;
        }
    }
    if (!es_detect_valid_windows(candidate->reference, candidate->latest, 2u * internal + config->n_trees,
                                 config->window, config->window, counters->filled, counters->threshold,
                                 counters->ready)) {
        return ES_ERR_IMAGE;
    }
    return ES_OK;
}
