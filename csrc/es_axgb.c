#include "es_axgb.h"

#define ES_AXGB_IDLE 0u
#define ES_AXGB_GRAD 1u
#define ES_AXGB_HIST 2u
#define ES_AXGB_SCAN 3u
#define ES_AXGB_NODE 4u
#define ES_AXGB_PART 5u
#define ES_AXGB_PUSH 0u
#define ES_AXGB_NO_FEATURE 255u
#define ES_AXGB_CODE_MAX 32767 /* a regressor's target codes and margins: -32767..32767 */
#define ES_AXGB_ERROR_CODES 4095 /* a regressor's miss by more codes is an error bit for ADWIN */

/* A regressor's state has one output and n_classes 1 (edgestream.learners.axgb_regression). */
#define ES_AXGB_REGRESSION(config) ((config)->n_classes == 1u)

static uint16_t es_axgb_nodes_per_tree(const es_axgb_config *config)
{
    return (uint16_t)((2u << config->max_depth) - 1u);
}

static uint16_t es_axgb_leaves_per_tree(const es_axgb_config *config)
{
    return (uint16_t)(1u << config->max_depth);
}

/* Ring row of the i-th buffered sample: (head + i) mod capacity for head, i < capacity, without a division. A
 * macro (arguments without side effects) so that the training loops have it inline under -Os. */
#define ES_AXGB_ROW(model, i)                                                                              \
    ((uint32_t)(model)->counters->head + (uint32_t)(i) >= (model)->config->capacity                          \
         ? (uint32_t)(model)->counters->head + (uint32_t)(i) - (model)->config->capacity                     \
         : (uint32_t)(model)->counters->head + (uint32_t)(i))

/* Score sums of the first n_members members into model->scores. */
static void es_axgb_sums(const es_axgb *model, const uint8_t *bins, uint16_t n_members)
{
    const uint8_t out = model->config->n_outputs;
    uint16_t m;
    uint8_t k;
    for (k = 0; k < out; k++) {
        model->scores[k] = 0;
    }
    for (m = 0; m < n_members; m++) {
        const uint16_t leaf = es_tree_leaf(model->nodes, model->roots[m], bins);
        const int16_t *values = &model->leaf_values[(uint32_t)leaf * out];
        for (k = 0; k < out; k++) {
            model->scores[k] += values[k];
        }
    }
}

/* Pieces of `weight` units to run of the `remaining` ones while budget is left (the last may overrun it, then 0
 * is left); all of them for a negative (unlimited) budget, which then goes down by their units. */
static int64_t es_axgb_spend(int64_t *budget, int64_t remaining, uint32_t weight)
{
    uint32_t left, n;
    if (*budget < 0) {
        *budget -= remaining * (int64_t)weight;
        return remaining;
    }
    /* a bounded budget is at most work_per_call and remaining at most a window: 32-bit division (the M0 has no
     * division instruction and a 64-bit one costs it about a thousand) */
    left = (uint32_t)*budget;
    n = left / weight + (left % weight != 0u ? 1u : 0u);
    n = (int64_t)n < remaining ? n : (uint32_t)remaining;
    *budget = (int64_t)n * weight < *budget ? *budget - (int64_t)n * weight : 0;
    return n;
}

/* A node can split if above the last level with at least split_samples (edgestream.learners.axgb): each child
 * needs a hessian sum of min_child_q15, one sample's is at most 8192 (binary) or 16384 per output (softmax). */
static uint8_t es_axgb_splittable(const es_axgb *model)
{
    const es_axgb_config *config = model->config;
    const uint16_t v = model->counters->node;
    const uint32_t most = ES_AXGB_REGRESSION(config) ? ES_Q15_ONE /* squared error: h = 1 */
                          : config->n_outputs == 1u ? 8192u : 16384u * (uint32_t)config->n_outputs; /* 16384u * 4 wraps AVR int */
    const uint32_t half = (config->min_child_q15 + most - 1u) / most;
    return (uint8_t)(model->node_depth[v] < config->max_depth &&
                     (uint32_t)(model->node_stop[v] - model->node_start[v]) >= (half > 1u ? 2u * half : 2u) ? 1u : 0u);
}

static void es_axgb_begin_node(const es_axgb *model)
{
    es_axgb_counters *c = model->counters;
    uint8_t k;
    for (k = 0; k < model->config->n_outputs; k++) {
        model->node_g[k] = 0;
        model->node_h[k] = 0;
    }
    c->best_gain = 2 * (int64_t)model->config->gamma_q15;
    c->best_feature = ES_AXGB_NO_FEATURE;
    c->best_bin = 0;
    c->feature = es_axgb_splittable(model) ? 0u : model->config->n_features;
    c->phase = ES_AXGB_HIST;
    c->pos = model->node_start[c->node];
}

static void es_axgb_start_job(const es_axgb *model)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint16_t per_tree = es_axgb_nodes_per_tree(config);
    uint16_t slot;
    c->job_window = c->window;
    c->window = (uint16_t)(2u * c->window < config->window_max ? 2u * c->window : config->window_max);
    for (slot = 0; slot < config->members; slot++) { /* lowest slot no member uses; slot K is free otherwise */
        uint16_t i;
        uint8_t used = 0;
        for (i = 0; i < c->n_members; i++) {
            used = (uint8_t)(used | (model->roots[i] / per_tree == slot ? 1u : 0u));
        }
        if (!used) {
            break;
        }
    }
    c->job_slot = slot;
    if (config->strategy == ES_AXGB_PUSH) {
        c->job_target = c->n_members;
    } else {
        c->job_target = c->replace_index;
        c->replace_index = (uint16_t)((c->replace_index + 1u) % config->members);
    }
    c->phase = ES_AXGB_GRAD;
    c->pos = 0;
}

static int64_t es_axgb_grad(const es_axgb *model, int64_t budget, uint32_t *work)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint8_t out = config->n_outputs;
    const int64_t n = es_axgb_spend(&budget, (int64_t)c->job_window - c->pos, /* a sample walks job_target members */
                                    (uint32_t)config->unit_grad + (uint32_t)config->unit_walk * c->job_target);
    int64_t done;
    for (done = 0; done < n; done++) {
        const uint16_t i = (uint16_t)(c->pos + done);
        es_axgb_sums(model, &model->window_bins[ES_AXGB_ROW(model, i) * config->n_features], c->job_target);
        if (ES_AXGB_REGRESSION(config)) {
            const int32_t margin = model->scores[0];
            model->margins[i] = (int16_t)(margin > ES_AXGB_CODE_MAX    ? ES_AXGB_CODE_MAX
                                          : margin < -ES_AXGB_CODE_MAX ? -ES_AXGB_CODE_MAX
                                                                        : margin);
        } else if (out == 1u) {
            model->proba[i] = es_sigmoid_q15(model->scores[0]);
        } else {
            (void)es_softmax_q15(model->scores, out, work, &model->proba[(uint32_t)i * out]);
        }
        model->order[i] = i;
    }
    c->pos = (uint16_t)(c->pos + n);
    if (c->pos == c->job_window) {
        model->node_start[0] = 0;
        model->node_stop[0] = c->job_window;
        model->node_depth[0] = 0;
        c->node = 0;
        c->n_nodes = 1;
        c->n_leaves = 0;
        es_axgb_begin_node(model);
    }
    return budget;
}

/* g and h (int32 lvalues) of output k of job sample s in ring row `row`: a classifier's g = p - 32768 [target],
 * h = p (32768 - p) >> 15 (binary) or >> 14 (softmax), p <= 32768 (validated for restored states); a
 * regressor's g = margin - code, h = 32768. A macro, as ES_AXGB_ROW. */
#define ES_AXGB_GRADIENT(model, s, row, k, g, h)                                                         \
    do {                                                                                                 \
        const uint8_t out_ = (model)->config->n_outputs;                                                 \
        if (ES_AXGB_REGRESSION((model)->config)) {                                                       \
            (g) = (int32_t)(model)->margins[s] - (int32_t)(model)->window_targets[row];                  \
            (h) = (int32_t)ES_Q15_ONE;                                                                   \
        } else {                                                                                         \
            const uint8_t label_ = (model)->window_labels[row];                                          \
            const int32_t p_ = (model)->proba[(uint32_t)(s) * out_ + (k)];                               \
            (g) = p_ - ((out_ == 1u ? label_ == 1u : label_ == (k)) ? (int32_t)ES_Q15_ONE : 0);          \
            (h) = (int32_t)(((uint32_t)p_ * (ES_Q15_ONE - (uint32_t)p_)) >> (out_ == 1u ? 15 : 14));     \
        }                                                                                                \
    } while (0)

static int64_t es_axgb_hist(const es_axgb *model, int64_t budget)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint8_t out = config->n_outputs;
    const uint16_t stop = model->node_stop[c->node];
    const int64_t n = es_axgb_spend(&budget, (int64_t)stop - c->pos, config->unit_hist);
    const uint8_t totals = (uint8_t)(c->feature == 0u || c->feature == config->n_features);
    const uint8_t histogram = (uint8_t)(c->feature < config->n_features);
    int64_t done;
    for (done = 0; done < n; done++) {
        const uint16_t s = model->order[c->pos + done];
        const uint32_t row = ES_AXGB_ROW(model, s);
        uint32_t b = 0;
        uint8_t k;
        if (histogram) {
            b = model->window_bins[row * config->n_features + c->feature];
            b = b < (uint32_t)(config->hist_bins - 1u) ? b : (uint32_t)(config->hist_bins - 1u);
        }
        for (k = 0; k < out; k++) {
            int32_t g, h;
            ES_AXGB_GRADIENT(model, s, row, k, g, h);
            if (totals) {
                model->node_g[k] += g;
                model->node_h[k] += h;
            }
            if (histogram) {
                model->hist_g[b * out + k] += g;
                model->hist_h[b * out + k] += h;
            }
        }
    }
    c->pos = (uint16_t)(c->pos + n);
    if (c->pos == stop) {
        if (c->feature == config->n_features) {
            c->phase = ES_AXGB_NODE;
        } else {
            uint8_t k;
            c->phase = ES_AXGB_SCAN;
            c->pos = 0;
            for (k = 0; k < out; k++) {
                model->left_g[k] = 0;
                model->left_h[k] = 0;
            }
        }
    }
    return budget;
}

static int64_t es_axgb_score(int64_t g, int64_t h, uint32_t lambda)
{
    return (int64_t)((uint64_t)(g * g) / (uint64_t)(h + (int64_t)lambda));
}

static int64_t es_axgb_scan(const es_axgb *model, int64_t budget)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint8_t out = config->n_outputs;
    const uint16_t max_bins = (uint16_t)(config->hist_bins - 1u);
    int64_t parent = 0;
    int64_t node_h = 0;
    uint8_t k;
    for (k = 0; k < out; k++) {
        parent += es_axgb_score(model->node_g[k], model->node_h[k], config->lambda_q15);
        node_h += model->node_h[k];
    }
    while (c->pos < config->hist_bins && budget != 0) {
        const uint32_t b = c->pos;
        int64_t hl = 0;
        uint32_t cost = config->unit_scan;
        uint8_t filled = 0;
        for (k = 0; k < out; k++) {
            filled = (uint8_t)(filled | (model->hist_g[b * out + k] != 0 || model->hist_h[b * out + k] != 0));
        }
        for (k = 0; filled && k < out; k++) { /* an empty bin leaves the left sums, so the gain, unchanged */
            model->left_g[k] += model->hist_g[b * out + k];
            model->left_h[k] += model->hist_h[b * out + k];
            model->hist_g[b * out + k] = 0;
            model->hist_h[b * out + k] = 0;
            hl += model->left_h[k];
        }
        if (filled && b + 2u <= max_bins && hl >= (int64_t)config->min_child_q15 &&
            node_h - hl >= (int64_t)config->min_child_q15) {
            int64_t gain = 0;
            cost += config->unit_gain;
            for (k = 0; k < out; k++) {
                const int64_t gl = model->left_g[k];
                const int64_t hk = model->left_h[k];
                gain += es_axgb_score(gl, hk, config->lambda_q15) +
                        es_axgb_score(model->node_g[k] - gl, model->node_h[k] - hk, config->lambda_q15);
            }
            gain -= parent;
            if (gain > c->best_gain) {
                c->best_gain = gain;
                c->best_feature = c->feature;
                c->best_bin = (uint8_t)b;
            }
        }
        budget = budget < 0 ? budget - cost : (budget > (int64_t)cost ? budget - cost : 0);
        c->pos++;
    }
    if (c->pos == config->hist_bins) {
        c->feature++;
        if (c->feature < config->n_features) {
            c->phase = ES_AXGB_HIST;
            c->pos = model->node_start[c->node];
        } else {
            c->phase = ES_AXGB_NODE;
        }
    }
    return budget;
}

/* No job: the counters as validation expects them when idle. */
static void es_axgb_idle(es_axgb_counters *c)
{
    c->phase = ES_AXGB_IDLE;
    c->pos = 0;
    c->pos_end = 0;
    c->node = 0;
    c->n_nodes = 0;
    c->n_leaves = 0;
    c->feature = 0;
    c->job_window = 0;
    c->job_slot = 0;
    c->job_target = 0;
    c->best_gain = -1;
    c->best_feature = ES_AXGB_NO_FEATURE;
    c->best_bin = 0;
}

static void es_axgb_install(const es_axgb *model)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint16_t root = (uint16_t)(c->job_slot * es_axgb_nodes_per_tree(config));
    if (config->strategy == ES_AXGB_PUSH) {
        if (c->n_members == config->members) {
            uint16_t i;
            for (i = 0; i + 1u < config->members; i++) {
                model->roots[i] = model->roots[i + 1u];
            }
            c->n_members--;
        }
        model->roots[c->n_members] = root;
        c->n_members++;
    } else {
        model->roots[c->job_target] = root;
        if (c->job_target + 1u > c->n_members) {
            c->n_members = (uint16_t)(c->job_target + 1u);
        }
    }
    c->head = (uint16_t)(((uint32_t)c->head + c->job_window) % config->capacity);
    c->count = (uint16_t)(c->count - c->job_window);
    es_axgb_idle(c);
}

static void es_axgb_next_node(const es_axgb *model)
{
    es_axgb_counters *c = model->counters;
    c->node++;
    if (c->node < c->n_nodes) {
        es_axgb_begin_node(model);
    } else {
        es_axgb_install(model);
    }
}

static void es_axgb_node(const es_axgb *model)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint16_t base_node = (uint16_t)(c->job_slot * es_axgb_nodes_per_tree(config));
    const uint16_t v = c->node;
    es_node *node = &model->nodes[base_node + v];
    uint16_t leaf;
    uint8_t k;
    if (c->best_feature != ES_AXGB_NO_FEATURE) {
        const uint16_t child = c->n_nodes;
        node->feature = c->best_feature;
        node->threshold = c->best_bin;
        node->child = (uint16_t)(base_node + child);
        model->node_depth[child] = (uint8_t)(model->node_depth[v] + 1u);
        model->node_depth[child + 1u] = (uint8_t)(model->node_depth[v] + 1u);
        c->n_nodes = (uint16_t)(c->n_nodes + 2u);
        c->phase = ES_AXGB_PART;
        c->pos = model->node_start[v];
        c->pos_end = model->node_stop[v];
        return;
    }
    leaf = (uint16_t)(c->job_slot * es_axgb_leaves_per_tree(config) + c->n_leaves);
    for (k = 0; k < config->n_outputs; k++) {
        const int64_t num = -(int64_t)model->node_g[k] * (int64_t)config->eta_q16;
        const int64_t den = ((int64_t)model->node_h[k] + (int64_t)config->lambda_q15) *
                            (ES_AXGB_REGRESSION(config) ? 2 : 64); /* codes; a classifier's Q10 */
        int64_t w = num / den; /* C99 division truncates toward zero */
        w = w > 32767 ? 32767 : (w < -32768 ? -32768 : w);
        model->leaf_values[(uint32_t)leaf * config->n_outputs + k] = (int16_t)w;
    }
    node->feature = ES_LEAF;
    node->threshold = 0;
    node->child = leaf;
    c->n_leaves++;
    es_axgb_next_node(model);
}

static int64_t es_axgb_partition(const es_axgb *model, int64_t budget)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    const uint16_t base_node = (uint16_t)(c->job_slot * es_axgb_nodes_per_tree(config));
    const uint16_t v = c->node;
    const es_node *node = &model->nodes[base_node + v];
    uint16_t i = c->pos;
    uint16_t j = c->pos_end;
    uint32_t n = (uint32_t)es_axgb_spend(&budget, (int64_t)j - i, config->unit_part);
    /* in locals: the stores to order would otherwise make the compiler reload them on every step */
    const uint32_t head = c->head, capacity = config->capacity, n_features = config->n_features;
    const uint8_t *column = model->window_bins + node->feature;
    const uint8_t threshold = node->threshold;
    uint16_t *order = model->order;
    for (; n > 0u; n--) {
        const uint32_t row = head + order[i];
        if (column[(row >= capacity ? row - capacity : row) * n_features] <= threshold) {
            i++;
        } else {
            const uint16_t swap = order[i];
            j--;
            order[i] = order[j];
            order[j] = swap;
        }
    }
    c->pos = i;
    c->pos_end = j;
    if (i == j) {
        const uint16_t child = (uint16_t)(node->child - base_node);
        model->node_start[child] = model->node_start[v];
        model->node_stop[child] = i;
        model->node_start[child + 1u] = i;
        model->node_stop[child + 1u] = model->node_stop[v];
        es_axgb_next_node(model);
    }
    return budget;
}

/* Up to budget units of the training job (budget < 0: until it is done and no new job can start). */
static void es_axgb_work(const es_axgb *model, int64_t budget, uint32_t *work)
{
    es_axgb_counters *c = model->counters;
    while (budget != 0) {
        if (c->phase == ES_AXGB_IDLE) {
            if (c->count < c->window) {
                return;
            }
            es_axgb_start_job(model);
        }
        switch (c->phase) {
        case ES_AXGB_GRAD:
            budget = es_axgb_grad(model, budget, work);
            break;
        case ES_AXGB_HIST:
            budget = es_axgb_hist(model, budget);
            break;
        case ES_AXGB_SCAN:
            budget = es_axgb_scan(model, budget);
            break;
        case ES_AXGB_NODE:
            es_axgb_node(model);
            (void)es_axgb_spend(&budget, 1, model->config->unit_node);
            break;
        default:
            budget = es_axgb_partition(model, budget);
            break;
        }
    }
}

/* A learning step on a checked target (class index or target code): the error bit to ADWIN (a rise drops the
 * buffered samples and a job under way), the sample buffered, up to work_per_call units of the job. */
static es_status es_axgb_step(const es_axgb *model, const uint8_t *bins, uint8_t wrong, int16_t target)
{
    const es_axgb_config *config = model->config;
    es_axgb_counters *c = model->counters;
    uint32_t row;
    uint8_t j;
    if (config->drift) {
        uint8_t change = 0;
        if (es_adwin_update(model->adwin, wrong, &change) != ES_OK) {
            return ES_ERR_MODEL;
        }
        if (change == ES_ADWIN_RISE) {
            c->window = config->window_min;
            c->n_members = 0u;
            if (config->strategy != ES_AXGB_PUSH) {
                c->replace_index = 0;
            }
            c->count = 0;
            if (c->phase != ES_AXGB_IDLE) { /* a spread job on a window from before the change is abandoned */
                uint32_t i;
                for (i = 0; i < (uint32_t)config->hist_bins * config->n_outputs; i++) {
                    model->hist_g[i] = 0;
                    model->hist_h[i] = 0;
                }
                es_axgb_idle(c);
            }
        }
    }
    if (c->count < config->capacity) { /* always, but for a crafted state: then the sample is not buffered */
        row = ES_AXGB_ROW(model, c->count);
        for (j = 0; j < config->n_features; j++) {
            model->window_bins[row * config->n_features + j] = bins[j];
        }
        if (ES_AXGB_REGRESSION(config)) {
            model->window_targets[row] = target;
        } else {
            model->window_labels[row] = (uint8_t)target;
        }
        c->count++;
    }
    es_axgb_work(model, config->work_per_call != 0u ? (int64_t)config->work_per_call : -1, model->work);
    return ES_OK;
}

/* ES_ERR_NULL for a missing pointer (out: the call's output; a learn call has none and passes its row), and a call
 * of the task's API on a state of the other task gets ES_ERR_MODEL. */
static es_status es_axgb_check(const es_axgb *model, const uint8_t *bins, const void *out, uint8_t regression)
{
    if (model == 0 || bins == 0 || model->config == 0 || model->counters == 0 || out == 0) {
        return ES_ERR_NULL;
    }
    return (ES_AXGB_REGRESSION(model->config) ? 1u : 0u) == regression ? ES_OK : ES_ERR_MODEL;
}

es_status es_axgb_learn(const es_axgb *model, const uint8_t *bins, uint8_t label)
{
    uint8_t wrong = 0;
    es_status status = es_axgb_check(model, bins, bins, 0u);
    if (status != ES_OK) {
        return status;
    }
    if (label >= model->config->n_classes) {
        return ES_ERR_LABEL;
    }
    if (model->config->drift) {
        es_axgb_sums(model, bins, model->counters->n_members);
        wrong = (uint8_t)(es_additive_argmax(model->scores, model->config->n_outputs) != label ? 1u : 0u);
    }
    return es_axgb_step(model, bins, wrong, (int16_t)label);
}

es_status es_axgb_learn_target(const es_axgb *model, const uint8_t *bins, int16_t target)
{
    uint8_t wrong = 0;
    es_status status = es_axgb_check(model, bins, bins, 1u);
    if (status != ES_OK) {
        return status;
    }
    if (target < -ES_AXGB_CODE_MAX) {
        return ES_ERR_LABEL;
    }
    if (model->config->drift) {
        int32_t error;
        es_axgb_sums(model, bins, model->counters->n_members);
        error = (int32_t)target - model->scores[0];
        wrong = (uint8_t)(error > ES_AXGB_ERROR_CODES || error < -ES_AXGB_ERROR_CODES ? 1u : 0u);
    }
    return es_axgb_step(model, bins, wrong, target);
}

/* The score sums of every member into model->scores, after es_axgb_check. */
static es_status es_axgb_scores(const es_axgb *model, const uint8_t *bins, const void *out, uint8_t regression)
{
    es_status status = es_axgb_check(model, bins, out, regression);
    if (status == ES_OK) {
        es_axgb_sums(model, bins, model->counters->n_members);
    }
    return status;
}

es_status es_axgb_predict_raw(const es_axgb *model, const uint8_t *bins, int32_t *raw_out)
{
    es_status status = es_axgb_scores(model, bins, raw_out, 1u);
    if (status == ES_OK) {
        *raw_out = model->scores[0];
    }
    return status;
}

es_status es_axgb_predict_proba(const es_axgb *model, const uint8_t *bins, uint32_t *work, uint16_t *proba)
{
    es_status status = es_axgb_scores(model, bins, proba == 0 ? 0 : work, 0u);
    if (status != ES_OK) {
        return status;
    }
    return es_additive_proba(model->scores, model->config->n_outputs, work, proba);
}

es_status es_axgb_predict(const es_axgb *model, const uint8_t *bins, uint8_t *class_out)
{
    es_status status = es_axgb_scores(model, bins, class_out, 0u);
    if (status == ES_OK) {
        *class_out = es_additive_argmax(model->scores, model->config->n_outputs);
    }
    return status;
}

/* -- validation of a state (images) ------------------------------------------------------------------------ */

#define ES_AXGB_REFUSE(condition) \
    do {                          \
        if (condition) {          \
            return ES_ERR_IMAGE;  \
        }                         \
    } while (0)

/* The member tree in tree slot `slot`: every node reached from its root stays in the slot (children forward,
 * features in range), every leaf reached is one of the slot's leaf rows. */
static int es_axgb_member_ok(const es_axgb *m, uint32_t slot)
{
    const es_axgb_config *config = m->config;
    const uint32_t per_tree = es_axgb_nodes_per_tree(config), base = slot * per_tree;
    const uint32_t first_leaf = slot * es_axgb_leaves_per_tree(config);
    uint8_t reached[64]; /* per_tree <= 511 bits */
    uint32_t v;
    for (v = 0; v < sizeof reached; v++) {
        reached[v] = 0u;
    }
    reached[0] = 1u;
    for (v = 0; v < per_tree; v++) {
        const es_node *node = &m->nodes[base + v];
        uint32_t child = node->child;
        if (!(reached[v >> 3] & (1u << (v & 7u)))) {
            continue;
        }
        if (node->feature == ES_LEAF) {
            if (child < first_leaf || child >= first_leaf + es_axgb_leaves_per_tree(config)) {
                return 0;
            }
            continue;
        }
        if (child <= base + v || child + 1u >= base + per_tree || node->feature >= config->n_features) {
            return 0;
        }
        child -= base;
        reached[child >> 3] |= (uint8_t)(1u << (child & 7u));
        reached[(child + 1u) >> 3] |= (uint8_t)(1u << ((child + 1u) & 7u));
    }
    return 1;
}

/* Sums of g and h of output k over the job samples order[from..to). */
static void es_axgb_sample_sums(const es_axgb *m, uint32_t from, uint32_t to, uint8_t k, int64_t *g_sum,
                                int64_t *h_sum)
{
    uint32_t i;
    *g_sum = 0;
    *h_sum = 0;
    for (i = from; i < to; i++) {
        const uint16_t s = m->order[i];
        int32_t g, h;
        ES_AXGB_GRADIENT(m, s, ES_AXGB_ROW(m, s), k, g, h);
        *g_sum += g;
        *h_sum += h;
    }
}

static int es_axgb_hist_zero(const es_axgb *m, uint32_t to_bin)
{
    const uint32_t out = m->config->n_outputs;
    uint32_t i;
    for (i = 0; i < to_bin * out; i++) {
        if (m->hist_g[i] != 0 || m->hist_h[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* Histogram column k from row from_bin on, plus (left_g, left_h): left_h and every h >= 0, the sums equal
 * (g_sum, h_sum), |left_g| + sum |g| <= 32768 n (a regressor's: 65534 n). */
static int es_axgb_column_ok(const es_axgb *m, uint8_t k, uint32_t from_bin, int64_t left_g, int64_t left_h,
                             int64_t g_sum, int64_t h_sum, uint32_t n)
{
    const uint32_t out = m->config->n_outputs;
    int64_t size = left_g < 0 ? -left_g : left_g;
    uint32_t b;
    if (left_h < 0) {
        return 0;
    }
    for (b = from_bin; b < m->config->hist_bins; b++) {
        const int64_t g = m->hist_g[b * out + k], h = m->hist_h[b * out + k];
        if (h < 0) {
            return 0;
        }
        left_g += g;
        left_h += h;
        size += g < 0 ? -g : g;
    }
    return left_g == g_sum && left_h == h_sum &&
           size <= (ES_AXGB_REGRESSION(m->config) ? 2 * (int64_t)ES_AXGB_CODE_MAX : (int64_t)ES_Q15_ONE) * n;
}

es_status es_axgb_validate(const es_axgb *candidate)
{
    const es_axgb_config *config;
    const es_axgb_counters *c;
    const es_axgb *m = candidate;
    uint32_t per_tree, capacity, i, j, following = 1u, leaves = 0u, decided, pending_end;
    int64_t gamma2;
    uint16_t start, stop, window;
    uint8_t splittable, F, out, k;
    const es_node *entry;
    if (m == 0 || m->config == 0 || m->counters == 0) {
        return ES_ERR_NULL;
    }
    config = m->config;
    c = m->counters;
    if (config->max_depth < 1u || config->max_depth > 8u || config->members == 0u || config->capacity == 0u ||
        config->hist_bins < 3u || config->window_max == 0u || config->n_outputs == 0u) {
        return ES_ERR_MODEL;
    }
    per_tree = es_axgb_nodes_per_tree(config);
    capacity = config->capacity;
    F = config->n_features;
    out = config->n_outputs;
    gamma2 = 2 * (int64_t)config->gamma_q15;
    /* the detector, with this model's parameters */
    ES_AXGB_REFUSE(es_adwin_check(m->adwin) != ES_OK || m->adwin->log_term_q24 != config->drift_log_q24 ||
                   m->adwin->clock != config->drift_clock || m->adwin->max_cuts != config->drift_cuts);
    ES_AXGB_REFUSE(c->head >= capacity || c->count > capacity || c->window < config->window_min ||
                   c->window > config->window_max || c->n_members > config->members ||
                   c->replace_index >= config->members || c->phase > ES_AXGB_PART);
    ES_AXGB_REFUSE(config->strategy == ES_AXGB_PUSH && c->replace_index != 0u);
    for (i = 0; i < capacity; i++) { /* the ring's targets and the job's record of them */
        ES_AXGB_REFUSE(ES_AXGB_REGRESSION(config) ? m->window_targets[i] < -ES_AXGB_CODE_MAX
                                                  : m->window_labels[i] >= config->n_classes);
    }
    for (i = 0; i < (uint32_t)config->window_max * out; i++) {
        ES_AXGB_REFUSE(ES_AXGB_REGRESSION(config) ? m->margins[i] < -ES_AXGB_CODE_MAX : m->proba[i] > ES_Q15_ONE);
    }
    for (i = 0; i < c->n_members; i++) { /* members: distinct slots, trees inside them */
        const uint32_t root = m->roots[i];
        ES_AXGB_REFUSE(root % per_tree != 0u || root / per_tree > config->members);
        for (j = 0; j < i; j++) {
            ES_AXGB_REFUSE(m->roots[j] == root);
        }
        ES_AXGB_REFUSE(!es_axgb_member_ok(m, root / per_tree));
    }
    if (c->phase == ES_AXGB_IDLE || c->phase == ES_AXGB_GRAD) { /* fresh node counters, empty histogram */
        ES_AXGB_REFUSE(c->pos_end != 0u || c->node != 0u || c->n_nodes != 0u || c->n_leaves != 0u ||
                       c->feature != 0u || c->best_gain != -1 || c->best_feature != ES_AXGB_NO_FEATURE ||
                       c->best_bin != 0u || !es_axgb_hist_zero(m, config->hist_bins));
    }
    if (c->phase == ES_AXGB_IDLE) {
        ES_AXGB_REFUSE(c->pos != 0u || c->job_window != 0u || c->job_slot != 0u || c->job_target != 0u ||
                       c->replace_index > c->n_members);
        return ES_OK;
    }
    /* a training job */
    window = c->job_window;
    ES_AXGB_REFUSE(window < config->window_min || window > config->window_max || window > c->count ||
                   c->job_slot > config->members);
    for (i = 0; i < c->n_members; i++) {
        ES_AXGB_REFUSE(m->roots[i] / per_tree == c->job_slot);
    }
    if (config->strategy == ES_AXGB_PUSH) {
        ES_AXGB_REFUSE(c->job_target != c->n_members);
    } else {
        ES_AXGB_REFUSE(c->job_target > c->n_members || c->job_target >= config->members ||
                       c->replace_index > (c->n_members > c->job_target ? c->n_members : c->job_target + 1u));
    }
    if (c->phase == ES_AXGB_GRAD) {
        ES_AXGB_REFUSE(c->pos >= window);
        for (i = 0; i < c->pos; i++) {
            ES_AXGB_REFUSE(m->order[i] != i);
        }
        return ES_OK;
    }
    for (i = 0; i < window; i++) {
        ES_AXGB_REFUSE(m->order[i] >= window);
    }
    /* the tree being grown: the decided nodes (before the current one; in the partition, that one too) */
    ES_AXGB_REFUSE(c->node >= c->n_nodes || c->n_nodes > per_tree || m->node_depth[0] != 0u);
    decided = (uint32_t)c->node + (c->phase == ES_AXGB_PART ? 1u : 0u);
    for (i = 0; i < decided; i++) {
        entry = &m->nodes[c->job_slot * per_tree + i];
        ES_AXGB_REFUSE(i >= following);
        if (entry->feature == ES_LEAF) {
            ES_AXGB_REFUSE(leaves >= es_axgb_leaves_per_tree(config) ||
                           entry->child != c->job_slot * es_axgb_leaves_per_tree(config) + leaves);
            leaves++;
            continue;
        }
        ES_AXGB_REFUSE(entry->feature >= F || m->node_depth[i] >= config->max_depth ||
                       entry->child != c->job_slot * per_tree + following || following + 2u > per_tree ||
                       m->node_depth[following] != m->node_depth[i] + 1u ||
                       m->node_depth[following + 1u] != m->node_depth[i] + 1u);
        following += 2u;
    }
    ES_AXGB_REFUSE(following != c->n_nodes || leaves != c->n_leaves);
    pending_end = c->phase != ES_AXGB_PART ? c->n_nodes : (c->n_nodes >= 2u ? c->n_nodes - 2u : 0u);
    for (i = c->node; i < pending_end; i++) {
        ES_AXGB_REFUSE(m->node_start[i] > m->node_stop[i] || m->node_stop[i] > window);
    }
    start = m->node_start[c->node];
    stop = m->node_stop[c->node];
    splittable = es_axgb_splittable(m);
    ES_AXGB_REFUSE(c->best_gain < gamma2 || (c->best_feature == ES_AXGB_NO_FEATURE &&
                                             (c->best_gain != gamma2 || c->best_bin != 0u)));
    switch (c->phase) {
    case ES_AXGB_HIST: /* node totals and histogram hold the samples order[start..pos) */
        ES_AXGB_REFUSE(c->pos < start || c->pos > stop);
        ES_AXGB_REFUSE(splittable ? c->feature >= F || (c->best_feature != ES_AXGB_NO_FEATURE &&
                                                        c->best_feature >= c->feature)
                                  : c->feature != F || c->best_feature != ES_AXGB_NO_FEATURE);
        ES_AXGB_REFUSE(c->feature == F && !es_axgb_hist_zero(m, config->hist_bins));
        for (k = 0; k < out; k++) {
            int64_t g_part, h_part, g_all, h_all;
            es_axgb_sample_sums(m, start, c->pos, k, &g_part, &h_part);
            if (c->feature == 0u || c->feature == F) {
                g_all = g_part;
                h_all = h_part;
            } else {
                es_axgb_sample_sums(m, start, stop, k, &g_all, &h_all);
            }
            ES_AXGB_REFUSE(m->node_g[k] != g_all || m->node_h[k] != h_all);
            ES_AXGB_REFUSE(c->feature < F &&
                           !es_axgb_column_ok(m, k, 0u, 0, 0, g_part, h_part, (uint32_t)(c->pos - start)));
        }
        return ES_OK;
    case ES_AXGB_SCAN: /* bins < pos moved into left_g/left_h */
        ES_AXGB_REFUSE(!splittable || c->feature >= F || c->pos >= config->hist_bins ||
                       (c->best_feature != ES_AXGB_NO_FEATURE && c->best_feature > c->feature) ||
                       !es_axgb_hist_zero(m, c->pos));
        for (k = 0; k < out; k++) {
            int64_t g_all, h_all;
            es_axgb_sample_sums(m, start, stop, k, &g_all, &h_all);
            ES_AXGB_REFUSE(m->node_g[k] != g_all || m->node_h[k] != h_all ||
                           !es_axgb_column_ok(m, k, c->pos, m->left_g[k], m->left_h[k], g_all, h_all,
                                              (uint32_t)(stop - start)));
        }
        return ES_OK;
    case ES_AXGB_NODE:
        ES_AXGB_REFUSE(c->feature != F || !es_axgb_hist_zero(m, config->hist_bins) ||
                       (c->best_feature != ES_AXGB_NO_FEATURE && (c->best_feature >= F || !splittable)));
        for (k = 0; k < out; k++) {
            int64_t g_all, h_all;
            es_axgb_sample_sums(m, start, stop, k, &g_all, &h_all);
            ES_AXGB_REFUSE(m->node_g[k] != g_all || m->node_h[k] != h_all);
        }
        return ES_OK;
    default:
        entry = &m->nodes[c->job_slot * per_tree + c->node];
        ES_AXGB_REFUSE(c->feature != F || !es_axgb_hist_zero(m, config->hist_bins) || entry->feature == ES_LEAF ||
                       entry->feature != c->best_feature || entry->threshold != c->best_bin ||
                       c->pos < start || c->pos > c->pos_end || c->pos_end > stop);
        return ES_OK;
    }
}
