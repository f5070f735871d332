#include "es_shrubs.h"

/* The learning step follows edgestream/learners/shrubs.py (whose kernel is _kernels.ShrubKernel) to the bit;
 * the docstring there states the algorithm and every rounding point. */

#define ES_WEIGHT_LIMIT ((int32_t)1 << 17) /* weights stay within +-4.0 during the gradient steps */
#define ES_NONE 0xFFFFu                     /* no node, no bin seen yet, no split better than the parent */
#define ES_LEAF_MARK 0x10000u               /* split choice of a node that may not split */
#define ES_STATS 6u                         /* split_stats words per splittable node */
#define ES_ST_N_LEFT 0u
#define ES_ST_LAST 1u                       /* last bin seen in a scan, then the left child's local index */
#define ES_ST_BEST_LO 2u
#define ES_ST_BEST_HI 3u
#define ES_ST_BEST_DEN 4u
#define ES_ST_CHOICE 5u                     /* feature << 8 | threshold */

static uint16_t es_nodes_per_shrub(const es_shrubs_config *config)
{
    return (uint16_t)((2u << config->max_depth) - 1u);
}

static uint16_t es_leaves_per_shrub(const es_shrubs_config *config)
{
    return (uint16_t)(1u << config->max_depth);
}

/* floor(sum_c a[c] * b[c] / 2^15) of two Q15 leaf rows (the sum stays below 2^31). */
static uint32_t es_pair_term(const uint16_t *a, const uint16_t *b, uint8_t n_classes)
{
    uint32_t t = 0;
    uint8_t c;
    for (c = 0; c < n_classes; c++) {
        t += (uint32_t)a[c] * b[c];
    }
    return t >> 15;
}

static uint64_t es_xlog2x_u(uint64_t c)
{
    return c > 1u ? c * es_log2_q16(c) : 0u;
}

static int64_t es_trunc_div(int64_t a, int64_t b)
{
    return a / b; /* C99: toward zero */
}

/* Add (add != 0) or remove window row `row`'s terms to/from the Gram matrix and label sums of the active shrubs. */
static void es_pair_terms(const es_shrubs *model, uint16_t row, int add)
{
    const es_shrubs_config *config = model->config;
    const uint8_t n_classes = config->n_classes;
    const uint16_t slots = (uint16_t)(config->max_shrubs + 1u);
    const uint16_t per_shrub = es_nodes_per_shrub(config);
    const uint16_t n = model->counters->n_shrubs;
    const uint16_t *cache = &model->leaf_cache[(uint32_t)row * slots];
    const uint8_t y = model->window_labels[row];
    uint16_t i;
    uint16_t j;
    for (i = 0; i < n; i++) {
        const uint16_t a = (uint16_t)(model->roots[i] / per_shrub);
        const uint16_t *ha = &model->leaf_values[(uint32_t)cache[a] * n_classes];
        uint32_t *gram_a = &model->gram[(uint32_t)a * slots];
        if (add) {
            model->label_sum[a] += ha[y];
        } else {
            model->label_sum[a] -= ha[y];
        }
        for (j = i; j < n; j++) {
            const uint16_t b = (uint16_t)(model->roots[j] / per_shrub);
            const uint32_t t = es_pair_term(ha, &model->leaf_values[(uint32_t)cache[b] * n_classes], n_classes);
            if (add) {
                gram_a[b] += t;
                if (a != b) {
                    model->gram[(uint32_t)b * slots + a] += t;
                }
            } else {
                gram_a[b] -= t;
                if (a != b) {
                    model->gram[(uint32_t)b * slots + a] -= t;
                }
            }
        }
    }
}

/* Every feature's list of window rows stays sorted by (bin, row): `row` (already written) moves to its place.
 * `present` rows are listed, `row` among them when the window was full. */
static void es_insert_row(const es_shrubs *model, uint16_t row, uint16_t present)
{
    const uint8_t d = model->config->n_features;
    const uint16_t window = model->config->window_size;
    uint8_t f;
    for (f = 0; f < d; f++) {
        uint16_t *list = &model->sorted_rows[(uint32_t)f * window];
        uint16_t n = present;
        uint16_t i;
        uint32_t key;
        if (model->counters->count == window) {
            i = 0;
            while (list[i] != row) {
                i++;
            }
            while ((uint32_t)i + 1u < n) {
                list[i] = list[i + 1u];
                i++;
            }
            n--;
        }
        key = ((uint32_t)model->window_bins[(uint32_t)row * d + f] << 16) | row;
        i = n;
        while (i > 0u) {
            const uint16_t other_row = list[i - 1u];
            const uint32_t other = ((uint32_t)model->window_bins[(uint32_t)other_row * d + f] << 16) | other_row;
            if (other < key) {
                break;
            }
            list[i] = other_row;
            i--;
        }
        list[i] = row;
    }
}

/* Score the split of node v at threshold t of feature f; keeps it if strictly better than the best so far. */
static void es_candidate(const es_shrubs *model, uint16_t v, uint8_t f, uint32_t t)
{
    const uint8_t n_classes = model->config->n_classes;
    uint32_t *st = &model->split_stats[(uint32_t)v * ES_STATS];
    const uint16_t *total = &model->split_counts[(uint32_t)v * 2u * n_classes];
    const uint16_t *left = total + n_classes;
    const uint64_t n_left = st[ES_ST_N_LEFT];
    uint64_t n_total = 0;
    uint64_t n_right;
    uint64_t best;
    uint8_t k;
    for (k = 0; k < n_classes; k++) {
        n_total += total[k];
    }
    n_right = n_total - n_left;
    if (n_left < model->config->min_samples_leaf || n_right < model->config->min_samples_leaf) {
        return;
    }
    best = ((uint64_t)st[ES_ST_BEST_HI] << 32) | st[ES_ST_BEST_LO];
    if (model->config->criterion == ES_GINI) {
        uint64_t l2 = 0;
        uint64_t r2 = 0;
        uint64_t num;
        uint64_t den;
        for (k = 0; k < n_classes; k++) {
            const uint64_t right = (uint64_t)(total[k] - left[k]);
            l2 += (uint64_t)left[k] * left[k];
            r2 += right * right;
        }
        num = l2 * n_right + r2 * n_left;
        den = n_left * n_right;
        if (num * st[ES_ST_BEST_DEN] > best * den) {
            st[ES_ST_BEST_LO] = (uint32_t)num;
            st[ES_ST_BEST_HI] = (uint32_t)(num >> 32);
            st[ES_ST_BEST_DEN] = (uint32_t)den;
            st[ES_ST_CHOICE] = ((uint32_t)f << 8) | t;
        }
    } else {
        uint64_t cost = es_xlog2x_u(n_left) + es_xlog2x_u(n_right);
        for (k = 0; k < n_classes; k++) {
            cost -= es_xlog2x_u(left[k]) + es_xlog2x_u((uint64_t)(total[k] - left[k]));
        }
        if (cost < best) {
            st[ES_ST_BEST_LO] = (uint32_t)cost;
            st[ES_ST_BEST_HI] = (uint32_t)(cost >> 32);
            st[ES_ST_CHOICE] = ((uint32_t)f << 8) | t;
        }
    }
}

/* CART on the window, level by level over the sorted lists, into pool slot `slot`. */
static void es_train_shrub(const es_shrubs *model, uint16_t slot)
{
    const es_shrubs_config *config = model->config;
    const uint8_t n_classes = config->n_classes;
    const uint8_t d = config->n_features;
    const uint16_t window = config->window_size;
    const uint16_t n = model->counters->count;
    const uint16_t node_base = (uint16_t)(slot * es_nodes_per_shrub(config));
    const uint16_t leaf_base = (uint16_t)(slot * es_leaves_per_shrub(config));
    const uint32_t width = 2u * n_classes;
    es_node *nodes = &model->nodes[node_base];
    uint16_t *leaves = &model->leaf_values[(uint32_t)leaf_base * n_classes];
    uint8_t level = 0;
    uint16_t level_first = 0;
    uint16_t level_size = 1;
    uint16_t n_nodes = 1;
    uint16_t n_leaves = 0;
    uint16_t s;
    uint16_t v;
    uint8_t k;
    for (s = 0; s < n; s++) {
        model->node_of[s] = 0;
    }
    for (;;) {
        uint16_t next_size = 0;
        uint32_t z;
        for (z = 0; z < (uint32_t)level_size * width; z++) {
            model->split_counts[z] = 0;
        }
        for (s = 0; s < n; s++) {
            v = model->node_of[s];
            if (v != ES_NONE) {
                model->split_counts[(uint32_t)v * width + model->window_labels[s]]++;
            }
        }
        if (level < config->max_depth) {
            uint8_t f;
            for (v = 0; v < level_size; v++) { /* which nodes may split, and the parent's score to beat */
                const uint16_t *counts = &model->split_counts[(uint32_t)v * width];
                uint32_t *st = &model->split_stats[(uint32_t)v * ES_STATS];
                uint32_t total = 0;
                uint8_t n_present = 0;
                for (k = 0; k < n_classes; k++) {
                    total += counts[k];
                    n_present = (uint8_t)(n_present + (counts[k] > 0u ? 1u : 0u));
                }
                if (n_present > 1u && total >= 2u * (uint32_t)config->min_samples_leaf) {
                    uint64_t cost = 0;
                    st[ES_ST_CHOICE] = ES_NONE;
                    st[ES_ST_BEST_DEN] = total;
                    if (config->criterion == ES_GINI) {
                        for (k = 0; k < n_classes; k++) {
                            cost += (uint64_t)counts[k] * counts[k];
                        }
                    } else {
                        cost = es_xlog2x_u(total);
                        for (k = 0; k < n_classes; k++) {
                            cost -= es_xlog2x_u(counts[k]);
                        }
                    }
                    st[ES_ST_BEST_LO] = (uint32_t)cost;
                    st[ES_ST_BEST_HI] = (uint32_t)(cost >> 32);
                } else {
                    st[ES_ST_CHOICE] = ES_LEAF_MARK;
                }
            }
            for (s = 0; s < n; s++) {
                v = model->node_of[s];
                if (v != ES_NONE && model->split_stats[(uint32_t)v * ES_STATS + ES_ST_CHOICE] == ES_LEAF_MARK) {
                    model->node_of[s] = ES_NONE;
                }
            }
            for (f = 0; f < d; f++) {
                const uint16_t *list = &model->sorted_rows[(uint32_t)f * window];
                uint16_t i;
                for (v = 0; v < level_size; v++) {
                    uint32_t *st = &model->split_stats[(uint32_t)v * ES_STATS];
                    st[ES_ST_N_LEFT] = 0;
                    st[ES_ST_LAST] = ES_NONE;
                    for (k = 0; k < n_classes; k++) {
                        model->split_counts[(uint32_t)v * width + n_classes + k] = 0;
                    }
                }
                for (i = 0; i < n; i++) {
                    const uint16_t row = list[i];
                    uint32_t *st;
                    uint32_t bin;
                    v = model->node_of[row];
                    if (v == ES_NONE) {
                        continue;
                    }
                    st = &model->split_stats[(uint32_t)v * ES_STATS];
                    bin = model->window_bins[(uint32_t)row * d + f];
                    if (bin != st[ES_ST_LAST]) {
                        if (st[ES_ST_LAST] != ES_NONE) {
                            es_candidate(model, v, f, st[ES_ST_LAST]);
                        }
                        st[ES_ST_LAST] = bin;
                    }
                    model->split_counts[(uint32_t)v * width + n_classes + model->window_labels[row]]++;
                    st[ES_ST_N_LEFT]++;
                }
            }
        }
        for (v = 0; v < level_size; v++) { /* this level's nodes in order; children next to each other */
            const uint16_t *counts = &model->split_counts[(uint32_t)v * width];
            const uint32_t choice = level < config->max_depth ?
                                    model->split_stats[(uint32_t)v * ES_STATS + ES_ST_CHOICE] : ES_LEAF_MARK;
            es_node *node = &nodes[level_first + v];
            if (choice < ES_NONE) {
                node->feature = (uint8_t)(choice >> 8);
                node->threshold = (uint8_t)(choice & 0xFFu);
                node->child = (uint16_t)(node_base + n_nodes);
                model->split_stats[(uint32_t)v * ES_STATS + ES_ST_LAST] = next_size;
                next_size = (uint16_t)(next_size + 2u);
                n_nodes = (uint16_t)(n_nodes + 2u);
            } else {
                uint32_t total = 0;
                for (k = 0; k < n_classes; k++) {
                    total += counts[k];
                }
                node->feature = (uint8_t)ES_LEAF;
                node->threshold = 0;
                node->child = (uint16_t)(leaf_base + n_leaves);
                for (k = 0; k < n_classes; k++) {
                    leaves[(uint32_t)n_leaves * n_classes + k] =
                        (uint16_t)(((uint64_t)counts[k] * ES_Q15_ONE + total / 2u) / total);
                }
                n_leaves++;
            }
        }
        if (next_size == 0u) {
            break;
        }
        for (s = 0; s < n; s++) {
            const uint32_t *st;
            uint32_t choice;
            v = model->node_of[s];
            if (v == ES_NONE) {
                continue;
            }
            st = &model->split_stats[(uint32_t)v * ES_STATS];
            choice = st[ES_ST_CHOICE];
            if (choice < ES_NONE) {
                model->node_of[s] = (uint16_t)(st[ES_ST_LAST] +
                    (model->window_bins[(uint32_t)s * d + (choice >> 8)] > (choice & 0xFFu) ? 1u : 0u));
            } else {
                model->node_of[s] = ES_NONE;
            }
        }
        level_first = (uint16_t)(level_first + level_size);
        level_size = next_size;
        level++;
    }
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

/* The new shrub's leaf for every window row, its Gram row and column and its label sum. */
static void es_new_shrub_terms(const es_shrubs *model, uint16_t slot)
{
    const es_shrubs_config *config = model->config;
    const uint8_t n_classes = config->n_classes;
    const uint16_t slots = (uint16_t)(config->max_shrubs + 1u);
    const uint16_t per_shrub = es_nodes_per_shrub(config);
    const uint16_t n = model->counters->count;
    const uint16_t n_active = model->counters->n_shrubs;
    const uint16_t root = (uint16_t)(slot * per_shrub);
    uint32_t *g = &model->gram[(uint32_t)slot * slots];
    uint16_t s;
    uint16_t i;
    for (i = 0; i < n_active; i++) {
        g[model->roots[i] / per_shrub] = 0;
    }
    g[slot] = 0;
    model->label_sum[slot] = 0;
    for (s = 0; s < n; s++) {
        uint16_t *cache = &model->leaf_cache[(uint32_t)s * slots];
        const uint16_t *h;
        cache[slot] = es_tree_leaf(model->nodes, root, &model->window_bins[(uint32_t)s * config->n_features]);
        h = &model->leaf_values[(uint32_t)cache[slot] * n_classes];
        model->label_sum[slot] += h[model->window_labels[s]];
        g[slot] += es_pair_term(h, h, n_classes);
        for (i = 0; i < n_active; i++) {
            const uint16_t b = (uint16_t)(model->roots[i] / per_shrub);
            g[b] += es_pair_term(h, &model->leaf_values[(uint32_t)cache[b] * n_classes], n_classes);
        }
    }
    for (i = 0; i < n_active; i++) {
        const uint16_t b = (uint16_t)(model->roots[i] / per_shrub);
        model->gram[(uint32_t)b * slots + slot] = g[b];
    }
}

/* `burnin` proximal gradient steps (Jacobi: every weight moves by the gradient at the previous weights). */
static void es_gradient_steps(const es_shrubs *model, uint16_t n_candidates)
{
    const es_shrubs_config *config = model->config;
    const uint16_t slots = (uint16_t)(config->max_shrubs + 1u);
    int32_t *w = model->work_weights;
    int32_t *next_w = &model->work_weights[slots];
    const uint64_t alpha = config->step_q16 != 0u ? (uint64_t)config->step_q16 : 65536u / ((uint64_t)n_candidates + 1u);
    const int64_t scale = (int64_t)((alpha << 15) / ((uint64_t)model->counters->count * config->n_classes));
    uint16_t step;
    uint16_t k;
    uint16_t j;
    for (step = 0; step < config->burnin; step++) {
        for (k = 0; k < n_candidates; k++) {
            const uint32_t *g = &model->gram[(uint32_t)model->cand_slot[k] * slots];
            int64_t m = 0;
            int64_t x;
            for (j = 0; j < n_candidates; j++) {
                m += (int64_t)w[j] * (int32_t)g[model->cand_slot[j]];
            }
            m -= (int64_t)model->label_sum[model->cand_slot[k]] * 32768;
            x = w[k] - es_trunc_div(es_trunc_div(m, 32768) * scale, (int64_t)1 << 30);
            next_w[k] = (int32_t)(x > ES_WEIGHT_LIMIT ? ES_WEIGHT_LIMIT : (x < -ES_WEIGHT_LIMIT ? -ES_WEIGHT_LIMIT : x));
        }
        for (k = 0; k < n_candidates; k++) {
            w[k] = next_w[k];
        }
    }
}

static int64_t es_floor_div(int64_t a, int64_t b)
{
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Hard-L0 prox, integer simplex projection of the non-zero kept weights, and pruning of zero weights. */
static void es_prox(const es_shrubs *model, uint16_t n_candidates)
{
    const int64_t one = ES_Q15_ONE;
    const uint16_t kept = n_candidates < model->config->max_shrubs ? n_candidates : model->config->max_shrubs;
    const uint16_t per_shrub = es_nodes_per_shrub(model->config);
    const int32_t *w = model->work_weights;
    uint16_t support = 0;
    uint16_t i;
    uint16_t j;
    uint16_t rho = 1;
    int64_t total = 0;
    int64_t total_rho = 0;
    int64_t lambda;
    int64_t remainder;
    for (i = 0; i < n_candidates; i++) { /* rank by weight, descending, ties to the older position */
        j = i;
        while (j > 0 && w[model->rank[j - 1u]] < w[i]) {
            model->rank[j] = model->rank[j - 1u];
            j--;
        }
        model->rank[j] = (uint8_t)i;
    }
    for (j = 0; j < kept; j++) {
        if (w[model->rank[j]] != 0) {
            model->rank[support++] = model->rank[j];
        }
    }
    model->counters->n_shrubs = 0;
    if (support == 0) {
        return;
    }
    for (j = 0; j < support; j++) {
        const int64_t u = w[model->rank[j]];
        total += u;
        if ((int64_t)(j + 1u) * u + one - total > 0) {
            rho = (uint16_t)(j + 1u);
            total_rho = total;
        }
    }
    lambda = es_floor_div(one - total_rho, rho);
    remainder = one - total_rho - (int64_t)rho * lambda;
    for (j = 0; j < support; j++) {
        int64_t x = w[model->rank[j]] + lambda;
        x = (x > 0 ? x : 0) + (j < remainder ? 1 : 0);
        if (x > 0) {
            model->roots[model->counters->n_shrubs] = (uint16_t)(model->cand_slot[model->rank[j]] * per_shrub);
            model->weights[model->counters->n_shrubs] = (uint16_t)x;
            model->counters->n_shrubs++;
        }
    }
}

es_status es_shrubs_learn(const es_shrubs *model, const uint8_t *bins, uint8_t label)
{
    const es_shrubs_config *config;
    es_shrubs_counters *counters;
    uint16_t slots;
    uint16_t per_shrub;
    uint16_t head;
    uint16_t count;
    uint16_t n_candidates;
    uint16_t slot;
    uint16_t i;
    if (model == 0 || bins == 0 || model->config == 0 || model->counters == 0) {
        return ES_ERR_NULL;
    }
    config = model->config;
    counters = model->counters;
    if (label >= config->n_classes) {
        return ES_ERR_LABEL;
    }
    slots = (uint16_t)(config->max_shrubs + 1u);
    per_shrub = es_nodes_per_shrub(config);
    head = counters->head;
    count = counters->count;
    if (count == config->window_size) {
        es_pair_terms(model, head, 0);
    }
    for (i = 0; i < config->n_features; i++) {
        model->window_bins[(uint32_t)head * config->n_features + i] = bins[i];
    }
    model->window_labels[head] = label;
    es_insert_row(model, head, count);
    for (i = 0; i < counters->n_shrubs; i++) {
        model->leaf_cache[(uint32_t)head * slots + model->roots[i] / per_shrub] =
            es_tree_leaf(model->nodes, model->roots[i], bins);
    }
    counters->head = (uint16_t)(head + 1u == config->window_size ? 0u : head + 1u);
    if (count < config->window_size) {
        counters->count = (uint16_t)(count + 1u);
    }
    es_pair_terms(model, head, 1);
    counters->since_update++;
    if (counters->since_update < config->update_every) {
        return ES_OK;
    }
    counters->since_update = 0;
    slot = es_free_slot(model);
    es_train_shrub(model, slot);
    es_new_shrub_terms(model, slot);
    n_candidates = (uint16_t)(counters->n_shrubs + 1u);
    for (i = 0; i < n_candidates; i++) {
        model->cand_slot[i] = (uint8_t)(i < counters->n_shrubs ? model->roots[i] / per_shrub : slot);
        model->work_weights[i] = i < counters->n_shrubs ? (int32_t)model->weights[i] : 0;
    }
    es_gradient_steps(model, n_candidates);
    es_prox(model, n_candidates);
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
