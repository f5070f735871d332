/* Loda on the device; edgestream/learners/loda.py is the specification. */
#include "es_loda.h"

#define ES_LODA_LEVELS 16u
#define ES_LODA_MAX_FEATURES 255u

uint32_t es_loda_log2_q8(uint32_t n)
{
    uint32_t k = 0, v = n, step, fraction;
    for (step = 16u; step != 0u; step >>= 1) { /* the top bit's position, by halves */
        if ((v >> step) != 0u) {
            v >>= step;
            k += step;
        }
    }
    fraction = k >= 8u ? (n >> (k - 8u)) : (n << (8u - k));
    return (k << 8) + (fraction & 0xFFu);
}

/* The level 0..15 of every feature: floor((x - offset) * scale) in float32, clamped. */
static void es_loda_levels(const es_loda *model, const float *features, uint8_t *level)
{
    uint32_t j;
    for (j = 0; j < model->config->n_features; j++) {
        float t = (features[j] - model->offset[j]) * model->scale[j];
        level[j] = (uint8_t)(t < 0.0f ? 0u : t >= (float)(ES_LODA_LEVELS - 1u) ? ES_LODA_LEVELS - 1u : (uint32_t)t);
    }
}

/* The bin of projection p for a row's levels. */
static uint32_t es_loda_bin(const es_loda *model, const uint8_t *level, uint32_t p)
{
    const es_loda_config *config = model->config;
    uint32_t m = config->n_nonzero, i;
    const uint8_t *feature = model->feature + p * m;
    const uint8_t *negative = model->negative + p * m;
    uint32_t shifted = (ES_LODA_LEVELS - 1u) * m; /* the sum of +-levels, shifted to start at 0 */
    for (i = 0; i < m; i++) {
        shifted = negative[i] ? shifted - level[feature[i]] : shifted + level[feature[i]];
    }
    return (shifted * config->bin_scale) >> 16;
}

/* The Q15 score of a row (count: and learn its bins at once). */
static uint16_t es_loda_walk(const es_loda *model, const float *features, int count)
{
    const es_loda_config *config = model->config;
    uint32_t p, bins = config->n_bins;
    uint64_t raw = 0;
    uint8_t level[ES_LODA_MAX_FEATURES];
    es_loda_levels(model, features, level);
    for (p = 0; p < config->n_projections; p++) {
        uint32_t b = p * bins + es_loda_bin(model, level, p);
        raw += model->reference[b];
        if (count) {
            model->latest[b]++;
        }
    }
    if (!model->counters->ready) {
        return 0;
    }
    return (uint16_t)(raw * ES_DETECT_SCORE_MAX / ((uint64_t)config->n_projections * config->log_window));
}

es_status es_loda_learn(const es_loda *model, const float *features)
{
    const es_loda_config *config;
    es_loda_counters *counters;
    uint32_t cells, i;
    if (model == 0 || features == 0) {
        return ES_ERR_NULL;
    }
    if (!es_detect_finite(features, model->config->n_features)) {
        return ES_ERR_INPUT;
    }
    config = model->config;
    counters = model->counters;
    cells = (uint32_t)config->n_projections * config->n_bins;
    if (es_detect_learned(model->reference, model->latest, cells, model->histogram, config->window, config->alarm_q16,
                          es_loda_walk(model, features, 1), &counters->n_learned, &counters->filled,
                          &counters->threshold, &counters->ready)) {
        for (i = 0; i < cells; i++) { /* the reference's counts become their surprises, once per window */
            model->reference[i] = (uint16_t)(config->log_window - es_loda_log2_q8((uint32_t)model->reference[i] + 1u));
        }
    }
    return ES_OK;
}

es_status es_loda_score(const es_loda *model, const float *features, int32_t *out)
{
    if (model == 0 || features == 0 || out == 0) {
        return ES_ERR_NULL;
    }
    if (!es_detect_finite(features, model->config->n_features)) {
        return ES_ERR_INPUT;
    }
    *out = es_detect_output(es_loda_walk(model, features, 0), model->counters->threshold);
    return ES_OK;
}

es_status es_loda_validate(const es_loda *candidate)
{
    const es_loda_config *config;
    const es_loda_counters *counters;
    uint32_t i, weights;
    if (candidate == 0 || candidate->config == 0 || candidate->counters == 0) {
        return ES_ERR_NULL;
    }
    config = candidate->config;
    counters = candidate->counters;
    if (!es_detect_finite(candidate->offset, config->n_features) ||
        !es_detect_finite(candidate->scale, config->n_features)) {
        return ES_ERR_IMAGE;
    }
    for (i = 0; i < config->n_features; i++) {
        if (!(candidate->scale[i] > 0.0f)) {
            return ES_ERR_IMAGE;
        }
    }
    weights = (uint32_t)config->n_projections * config->n_nonzero;
    for (i = 0; i < weights; i++) {
        if (candidate->feature[i] >= config->n_features || candidate->negative[i] > 1u) {
            return ES_ERR_IMAGE;
        }
    }
    if (!es_detect_valid_windows(candidate->reference, candidate->latest,
                                 (uint32_t)config->n_projections * config->n_bins, config->log_window,
                                 config->window, counters->filled, counters->threshold, counters->ready)) {
        return ES_ERR_IMAGE;
    }
    return ES_OK;
}
