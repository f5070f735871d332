#include "es_shrubs.h"

#define ES_WEIGHT_LIMIT ((int32_t)1 << 17) /* weights stay within +-4.0 during the gradient steps */

static uint16_t es_nodes_per_shrub(const es_shrubs_config *config)
{
    return (uint16_t)((2u << config->max_depth) - 1u);
}

static uint16_t es_leaves_per_shrub(const es_shrubs_config *config)
{
    return (uint16_t)(1u << config->max_depth);
}

/* Lowest pool slot that no active shrub uses; one always exists because the pool has M + 1 slots. */
static uint16_t es_free_slot(const es_shrubs *model)
{
    const uint16_t per_shrub = es_nodes_per_shrub(model->config);
    uint16_t slot;
    for (slot = 0; slot < model->config->max_shrubs; slot++) { /* if slots 0..M-1 are all used, M is free */
        uint16_t i;
        uint8_t used = 0;
        for (i = 0; i < model->counters->n_shrubs; i++) {
            used = (uint8_t)(used | (model->roots[i] / per_shrub == slot ? 1u : 0u));
        }
        if (!used) {
            return slot;
        }
    }
    return slot;
}

static es_status es_train_shrub(const es_shrubs *model, uint16_t slot)
{
    const es_shrubs_config *config = model->config;
    const uint16_t per_shrub = es_nodes_per_shrub(config);
    const uint16_t leaves = es_leaves_per_shrub(config);
    es_tree_params params;
    es_tree_scratch scratch;
    params.criterion = config->criterion;
    params.max_depth = config->max_depth;
    params.min_samples_leaf = config->min_samples_leaf;
    params.max_nodes = per_shrub;
    scratch.order = model->order;
    scratch.node_start = model->node_start;
    scratch.node_stop = model->node_stop;
    scratch.node_depth = model->node_depth;
    scratch.class_counts = model->class_counts;
    scratch.left_counts = model->left_counts;
    return es_tree_build(model->window_bins, model->window_labels, model->counters->count, config->n_features,
                         config->n_classes, &params, &scratch, &model->nodes[(uint32_t)slot * per_shrub],
                         &model->leaf_values[(uint32_t)slot * leaves * config->n_classes],
                         (uint16_t)(slot * per_shrub), (uint16_t)(slot * leaves));
}

/* One proximal gradient step on the window's MSE loss for the n_candidates shrubs of roots[]. The residual of
 * each (sample, class) is computed once with the old weights, so every weight can be updated in place. */
static void es_gradient_step(const es_shrubs *model, uint16_t n_candidates, int32_t *residual, int64_t alpha)
{
    const es_shrubs_config *config = model->config;
    const uint16_t n = model->counters->count;
    const uint8_t n_classes = config->n_classes;
    uint16_t s;
    uint16_t k;
    uint8_t c;
    for (s = 0; s < n; s++) {
        for (c = 0; c < n_classes; c++) {
            int64_t f30 = 0;
            for (k = 0; k < n_candidates; k++) {
                const uint16_t leaf = model->leaf_index[(uint32_t)s * n_candidates + k];
                f30 += (int64_t)model->work_weights[k] * model->leaf_values[(uint32_t)leaf * n_classes + c];
            }
            if (model->window_labels[s] == c) {
                f30 -= (int64_t)1 << 30;
            }
            residual[(uint32_t)s * n_classes + c] = (int32_t)(f30 / 32768); /* C99 division truncates */
        }
    }
    for (k = 0; k < n_candidates; k++) {
        int64_t g = 0;
        int64_t w;
        for (s = 0; s < n; s++) {
            const uint16_t leaf = model->leaf_index[(uint32_t)s * n_candidates + k];
            for (c = 0; c < n_classes; c++) {
                g += (int64_t)residual[(uint32_t)s * n_classes + c] *
                     model->leaf_values[(uint32_t)leaf * n_classes + c];
            }
        }
        w = model->work_weights[k] - (g / ((int64_t)n * n_classes)) * alpha / ((int64_t)1 << 30);
        w = w > ES_WEIGHT_LIMIT ? ES_WEIGHT_LIMIT : (w < -ES_WEIGHT_LIMIT ? -ES_WEIGHT_LIMIT : w);
        model->work_weights[k] = (int32_t)w;
    }
}

static int64_t es_floor_div(int64_t a, int64_t b)
{
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Rank candidates by weight, descending, ties to the older position (stable insertion sort). */
static void es_rank_weights(const es_shrubs *model, uint16_t n_candidates)
{
    uint16_t i;
    for (i = 0; i < n_candidates; i++) {
        const uint8_t key = (uint8_t)i;
        uint16_t j = i;
        while (j > 0 && model->work_weights[model->rank[j - 1u]] < model->work_weights[key]) {
            model->rank[j] = model->rank[j - 1u];
            j--;
        }
        model->rank[j] = key;
    }
}

/* Hard-L0 prox, integer simplex projection of the non-zero kept weights, and pruning of zero weights. */
static void es_prox(const es_shrubs *model, uint16_t n_candidates, uint16_t *candidate_roots)
{
    const int64_t one = ES_Q15_ONE;
    const uint16_t kept = n_candidates < model->config->max_shrubs ? n_candidates : model->config->max_shrubs;
    uint16_t support = 0;
    uint16_t j;
    uint16_t rho = 1;
    int64_t total = 0;
    int64_t total_rho = 0;
    int64_t lambda;
    int64_t remainder;
    es_rank_weights(model, n_candidates);
    for (j = 0; j < kept; j++) { /* the support, in rank order, to the front of rank[] */
        if (model->work_weights[model->rank[j]] != 0) {
            model->rank[support++] = model->rank[j];
        }
    }
    for (j = 0; j < n_candidates; j++) {
        candidate_roots[j] = model->roots[j];
    }
    model->counters->n_shrubs = 0;
    if (support == 0) {
        return;
    }
    for (j = 0; j < support; j++) {
        const int64_t u = model->work_weights[model->rank[j]];
        total += u;
        if ((int64_t)(j + 1u) * u + one - total > 0) {
            rho = (uint16_t)(j + 1u);
            total_rho = total;
        }
    }
    lambda = es_floor_div(one - total_rho, rho);
    remainder = one - total_rho - (int64_t)rho * lambda;
    for (j = 0; j < support; j++) {
        int64_t w = model->work_weights[model->rank[j]] + lambda;
        w = (w > 0 ? w : 0) + (j < remainder ? 1 : 0);
        if (w > 0) {
            model->roots[model->counters->n_shrubs] = candidate_roots[model->rank[j]];
            model->weights[model->counters->n_shrubs] = (uint16_t)w;
            model->counters->n_shrubs++;
        }
    }
}

es_status es_shrubs_learn(const es_shrubs *model, const uint8_t *bins, uint8_t label)
{
    const es_shrubs_config *config;
    es_shrubs_counters *counters;
    uint16_t n_candidates;
    uint16_t slot;
    uint16_t s;
    uint16_t k;
    uint8_t j;
    int64_t alpha;
    es_status status;
    if (model == 0 || bins == 0 || model->config == 0 || model->counters == 0) {
        return ES_ERR_NULL;
    }
    config = model->config;
    counters = model->counters;
    if (label >= config->n_classes) {
        return ES_ERR_LABEL;
    }
    for (j = 0; j < config->n_features; j++) {
        model->window_bins[(uint32_t)counters->head * config->n_features + j] = bins[j];
    }
    model->window_labels[counters->head] = label;
    counters->head = (uint16_t)(counters->head + 1u == config->window_size ? 0u : counters->head + 1u);
    if (counters->count < config->window_size) {
        counters->count++;
    }
    counters->since_update++;
    if (counters->since_update < config->update_every) {
        return ES_OK;
    }
    counters->since_update = 0;
    slot = es_free_slot(model);
    status = es_train_shrub(model, slot);
    if (status != ES_OK) {
        return status;
    }
    n_candidates = (uint16_t)(counters->n_shrubs + 1u);
    model->roots[counters->n_shrubs] = (uint16_t)(slot * es_nodes_per_shrub(config));
    for (k = 0; k < n_candidates; k++) {
        model->work_weights[k] = k < counters->n_shrubs ? (int32_t)model->weights[k] : 0;
    }
    for (s = 0; s < counters->count; s++) {
        for (k = 0; k < n_candidates; k++) {
            model->leaf_index[(uint32_t)s * n_candidates + k] =
                es_tree_leaf(model->nodes, model->roots[k], &model->window_bins[(uint32_t)s * config->n_features]);
        }
    }
    alpha = config->step_q16 != 0u ? (int64_t)config->step_q16 : 65536 / ((int64_t)n_candidates + 1);
    for (k = 0; k < config->burnin; k++) {
        es_gradient_step(model, n_candidates, model->residual, alpha);
    }
    /* leaf_index is free again: it holds the candidates' roots while the survivors are written back. */
    es_prox(model, n_candidates, model->leaf_index);
    return ES_OK;
}

es_status es_shrubs_predict_proba(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba)
{
    es_ensemble active;
    uint8_t k;
    if (model == 0 || model->config == 0 || model->counters == 0 || proba == 0) {
        return ES_ERR_NULL;
    }
    if (model->counters->n_shrubs == 0) {
        for (k = 0; k < model->config->n_classes; k++) {
            proba[k] = (uint16_t)(ES_Q15_ONE / model->config->n_classes);
        }
        return ES_OK;
    }
    active.nodes = model->nodes;
    active.roots = model->roots;
    active.weights = model->weights;
    active.leaf_values = model->leaf_values;
    active.n_trees = model->counters->n_shrubs;
    active.n_features = model->config->n_features;
    active.n_classes = model->config->n_classes;
    return es_ensemble_predict_proba(&active, bins, acc, proba);
}

es_status es_shrubs_predict(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba,
                            uint8_t *class_out)
{
    es_status status;
    if (class_out == 0) {
        return ES_ERR_NULL;
    }
    status = es_shrubs_predict_proba(model, bins, acc, proba);
    if (status == ES_OK) {
        *class_out = es_argmax(proba, model->config->n_classes);
    }
    return status;
}
