/* HT+AE / IRF+AE on the device; see es_hoeffding.h and edgestream/learners/hoeffding.py (the specification).
 * No malloc, no recursion, no VLAs, no libm: float32 arithmetic in the specification's order, every sum from
 * index 0 up, one rounded operation per statement where the order matters. */
#include "es_hoeffding.h"

#include <string.h>

#include "es_f32.h"
#include "es_fixed.h"
#include "es_flash.h"

#define HT_LEAF 255u
#define HT_FREE 254u
#define HT_NO_PAIR 0xFFFFFFFFu
#define HT_FLT_MAX 0x1.fffffep+127f
#define HT_FEATURE_LIMIT 0x1p+50f
#define HT_SCORE_LIMIT 536870912.0f
#define HT_EXCLUDED (-1073741824L)
#define HT_WEIGHT_CAP 255u
#define HT_LN2 0x1.62e43p-1f
#define HT_SQRT2_BITS 0x3FB504F3u /* the bits of the float32 sqrt(2), 0x1.6a09e6p+0f */
#define HT_INV_SQRT2 0x1.6a09e6p-1f
#define HT_ERF_LIMIT 5.0f
#define HT_COUNT_LIMIT 16384.0f   /* a leaf's counts halve when one reaches it (see the specification) */
#define HT_VALID_COUNT 32768.0f   /* a restored state's counts are below it */
#define HT_ONE 16777216u          /* an error rate of 1 in the detectors' fixed point */
#define HT_KEPT_LEVELS 3u         /* a drift keeps this many levels of splits under the node that signals it */
#define HT_REVISIT_ROWS 512u      /* a revisit collects at least this weight (the slow detectors' window) */
#define HT_KEPT (HT_ONE + 1u)     /* detector values no average reaches, HT_KEPT + depth, mark a subtree adapted */
#define HT_MERGED_DEPTH (HT_KEPT_LEVELS + 1u) /* the mark's depth of the nodes deeper than the kept levels */
#define HT_ADAPT_VISITS 16u       /* node visits per unit of an adaptation's passes */
#define HT_FAST_SHIFT 6u
#define HT_SLOW_SHIFT 9u
#define HT_FAST_VARIANCE 127u
#define HT_RATE_FLOOR (HT_ONE >> 4)
#define HT_ESTABLISHED 32.0f
#define HT_PROPAGATED 64.0f
#define HT_IDLE 0xFFFFu           /* attempt_node of a tree with no split attempt under way */
#define HT_NO_FEATURE 255u        /* best_feature before an attempt has a candidate */

/* The statistics of a leaf that a candidate split reads: a live leaf slot's or a tree's attempt snapshot. */
typedef struct {
    const float *counts, *est, *mean, *m2;
} leaf_stats;

static const float es_log_series[4] ES_FLASH = { 0x1.c71c72p-4f, 0x1.24924ap-3f, 0x1.99999ap-3f, 0x1.555556p-2f };
static const float es_erf_coeffs[6] ES_FLASH = { 0x1.693ecep-15f, 0x1.220072p-12f, 0x1.3ecc0ep-13f, 0x1.2fc6d2p-7f,
                                     0x1.5a5fcep-5f, 0x1.20dccep-4f };

/* ((c[0] x + c[1]) x + ... + c[n-1]) x + 1, one rounded operation per statement (c: a table in flash). */
static inline float horner(const float *c, uint8_t n, float x)
{
    float p = es_flash_f32(&c[0]);
    uint8_t i;
    for (i = 1; i < n; i++) {
        p = p * x;
        p = p + es_flash_f32(&c[i]);
    }
    p = p * x;
    return p + 1.0f;
}

/* The logarithm of the specification without branches, so that a loop of them vectorizes (the same operations
 * on every lane give the same bits): the subnormal's scaled bits chosen by a mask, the mantissa's halving above
 * sqrt(2) (exact) as a decrement of its exponent bits, the comparison with sqrt(2) on the bits (m is in [1, 2)). */
static inline float ln_f32(float x)
{
    uint32_t bits, scaled_bits, subnormal, big;
    int32_t exponent;
    float m, t, t2, p, r, e, scaled = x * 8388608.0f;

    memcpy(&bits, &x, sizeof bits);
    memcpy(&scaled_bits, &scaled, sizeof scaled_bits);
    subnormal = bits < 0x00800000u ? 1u : 0u;
    bits = (scaled_bits & (0u - subnormal)) | (bits & (subnormal - 1u));
    exponent = (int32_t)((bits >> 23) & 0xFFu) - 127 - (int32_t)(subnormal * 23u);
    bits = (bits & 0x007FFFFFu) | 0x3F800000u;
    big = bits > HT_SQRT2_BITS ? 1u : 0u;
    bits -= big << 23;
    exponent += (int32_t)big;
    memcpy(&m, &bits, sizeof m);
    t = m - 1.0f;
    r = m + 1.0f;
    t = t / r;
    t2 = t * t;
    p = horner(es_log_series, 4, t2);
    r = t * p;
    r = r + r;
    e = (float)exponent * HT_LN2;
    return e + r;
}

float es_hoeffding_log(float x)
{
    return ln_f32(x);
}

float es_hoeffding_erf(float x)
{
    float a = x < 0.0f ? -x : x, p, r;
    if (a >= HT_ERF_LIMIT) {
        r = 1.0f;
    } else {
        p = horner(es_erf_coeffs, 6, a);
        p = p * p;
        p = p * p;
        p = p * p;
        p = p * p;
        r = 1.0f / p;
        r = 1.0f - r;
    }
    return x < 0.0f ? -r : r;
}

/* P(x <= t) of one Gaussian estimator; a step at the mean when m2 == 0. */
static float cdf(float t, float mean, float m2, float count)
{
    float std, z;
    if (m2 == 0.0f) {
        return t >= mean ? 1.0f : 0.0f;
    }
    std = m2 / count;
    std = es_f32_sqrt(std);
    z = t - mean;
    z = z / std;
    z = z * HT_INV_SQRT2;
    z = es_hoeffding_erf(z);
    z = 1.0f + z;
    return 0.5f * z;
}

/* -sum p ln p over the entries v[k] > 0, p = v[k] / total. */
static float entropy(const float *v, uint8_t n, float total)
{
    float h = 0.0f;
    uint8_t k;
    for (k = 0; k < n; k++) {
        if (v[k] > 0.0f) {
            float p = v[k] / total;
            float term = p * ln_f32(p);
            h = h - term;
        }
    }
    return h;
}

/* ((s >> 8) + 1) 2**-24, in (0, 1]. */
static float uniform(uint32_t *state)
{
    float u = (float)((es_xorshift32(state) >> 8) + 1u);
    return u * 5.9604644775390625e-8f;
}

static uint32_t poisson(uint32_t *state, float limit)
{
    uint32_t w = 0;
    float p = uniform(state);
    while (p > limit && w < HT_WEIGHT_CAP) {
        w++;
        p = p * uniform(state);
    }
    return w;
}

static int valid_row(const float *x, uint8_t d)
{
    uint8_t j;
    for (j = 0; j < d; j++) {
        float a = x[j] < 0.0f ? -x[j] : x[j];
        if (!(a <= HT_FEATURE_LIMIT)) {
            return 0;
        }
    }
    return 1;
}

/* The leaf node of a row in tree t; 0 when the node tables lead outside the pool (a corrupt state). */
static int leaf_of(const es_hoeffding *model, uint32_t t, const float *x, uint16_t *leaf)
{
    const es_hoeffding_config *config = model->config;
    uint32_t base = t * config->max_nodes, steps;
    uint16_t node = 0;
    if (model->n_nodes[t] < 1u || model->n_nodes[t] > config->max_nodes || model->n_leaves[t] < 1u
        || model->n_leaves[t] > config->max_leaves) {
        return 0;
    }
    for (steps = 0; steps < config->max_nodes; steps++) {
        uint8_t f = model->feature[base + node];
        uint16_t child = model->child[base + node];
        if (f == HT_LEAF) {
            if (child >= config->max_leaves) {
                return 0;
            }
            *leaf = node;
            return 1;
        }
        if (f >= config->n_features || (uint32_t)child + 1u >= config->max_nodes) {
            return 0;
        }
        node = (uint16_t)(child + (x[f] > model->threshold[base + node] ? 1u : 0u));
    }
    return 0;
}

/* The first free pair after node (children point forward), else the next pair of the pool, else HT_NO_PAIR. */
static uint32_t free_pair(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t base = t * model->config->max_nodes, used = model->n_nodes[t];
    uint32_t a;
    for (a = node + 1u + (node & 1u); a < used; a += 2u) {
        if (model->feature[base + a] == HT_FREE) {
            return a;
        }
    }
    return used + 2u <= model->config->max_nodes ? used : HT_NO_PAIR;
}

/* Halve each class's estimator count and M2 of leaf g until the count is at most limit (exact). */
static void fade_estimators(const es_hoeffding *model, uint32_t g, float limit)
{
    const uint8_t C = model->config->n_classes, d = model->config->n_features;
    uint8_t k, j;
    for (k = 0; k < C; k++) {
        float *m2 = model->m2 + (g * C + k) * d;
        while (model->est_count[g * C + k] > limit) {
            model->est_count[g * C + k] = model->est_count[g * C + k] * 0.5f;
            for (j = 0; j < d; j++) {
                m2[j] = m2[j] * 0.5f;
            }
        }
    }
}

/* Leaf k of parallel per-class arrays (priors, estimator counts) and per-class-and-feature ones (means, M2). */
static leaf_stats leaf_in(const es_hoeffding *model, const float *counts, const float *est, const float *mean,
                          const float *m2, uint32_t k)
{
    const uint32_t C = model->config->n_classes, d = model->config->n_features;
    leaf_stats leaf;
    leaf.counts = counts + k * C;
    leaf.est = est + k * C;
    leaf.mean = mean + k * C * d;
    leaf.m2 = m2 + k * C * d;
    return leaf;
}

static leaf_stats live_leaf(const es_hoeffding *model, uint32_t g)
{
    return leaf_in(model, model->class_count, model->est_count, model->mean, model->m2, g);
}

static leaf_stats snapshot(const es_hoeffding *model, uint32_t t)
{
    return leaf_in(model, model->snap_count, model->snap_est, model->snap_mean, model->snap_m2, t);
}

/* The sum of a leaf's priors, from class 0 up. */
static float prior_sum(const float *counts, uint8_t C)
{
    float n = 0.0f;
    uint8_t k;
    for (k = 0; k < C; k++) {
        n = n + counts[k];
    }
    return n;
}

/* l_k and r_k of eq. 8 at feature f, threshold thr into the left and right scratch; returns the entropy after
 * that split, wl H(l / wl) + wr H(r / wr). n: the sum of the leaf's priors. */
static float split_entropy(const es_hoeffding *model, const leaf_stats *leaf, uint8_t f, float thr, float n)
{
    uint8_t C = model->config->n_classes, d = model->config->n_features, k;
    float wl = 0.0f, wr = 0.0f, a, b;
    for (k = 0; k < C; k++) {
        float count = leaf->est[k], l = 0.0f, r = 0.0f;
        if (count != 0.0f) {
            uint32_t at = (uint32_t)k * d + f;
            float lp = cdf(thr, leaf->mean[at], leaf->m2[at], count);
            float prior = leaf->counts[k] / n;
            l = lp * prior;
            r = 1.0f - lp;
            r = r * prior;
        }
        model->left[k] = l;
        model->right[k] = r;
        wl = wl + l;
        wr = wr + r;
    }
    a = entropy(model->left, C, wl);
    a = wl * a;
    b = entropy(model->right, C, wr);
    b = wr * b;
    return a + b;
}

/* Split leaf slot s as it is now (rows learned during a spread attempt included). */
static void split(const es_hoeffding *model, uint32_t t, uint16_t node, uint16_t s, uint8_t f, float thr)
{
    const es_hoeffding_config *config = model->config;
    uint8_t C = config->n_classes, d = config->n_features, k;
    uint32_t base = t * config->max_nodes, L = config->max_leaves, g = t * L + s, g2, i;
    uint32_t pair = free_pair(model, t, node);
    uint16_t a, s2 = model->n_leaves[t];
    leaf_stats leaf = live_leaf(model, g);
    float n = prior_sum(leaf.counts, C);
    if (s2 >= L || pair == HT_NO_PAIR) {
        return;  /* a consistent state never gets here */
    }
    a = (uint16_t)pair;
    (void)split_entropy(model, &leaf, f, thr, n);
    g2 = t * L + s2;
    model->feature[base + node] = f;
    model->threshold[base + node] = thr;
    model->child[base + node] = a;
    model->feature[base + a] = HT_LEAF;
    model->threshold[base + a] = 0.0f;
    model->child[base + a] = s;
    model->feature[base + a + 1u] = HT_LEAF;
    model->threshold[base + a + 1u] = 0.0f;
    model->child[base + a + 1u] = s2;
    if ((uint32_t)a + 2u > model->n_nodes[t]) {
        model->n_nodes[t] = (uint16_t)(a + 2u);
    }
    model->n_leaves[t] = (uint16_t)(s2 + 1u);
    if (config->propagate) {
        fade_estimators(model, g, HT_PROPAGATED);
        memcpy(model->est_count + g2 * C, model->est_count + g * C, C * sizeof(float));
        memcpy(model->mean + g2 * C * d, model->mean + g * C * d, (uint32_t)C * d * sizeof(float));
        memcpy(model->m2 + g2 * C * d, model->m2 + g * C * d, (uint32_t)C * d * sizeof(float));
        memcpy(model->low + g2 * d, model->low + g * d, d * sizeof(float));
        memcpy(model->high + g2 * d, model->high + g * d, d * sizeof(float));
        model->high[g * d + f] = thr;
        model->low[g2 * d + f] = thr;
    } else {
        uint32_t slot[2];
        uint8_t which;
        slot[0] = g;
        slot[1] = g2;
        for (which = 0; which < 2; which++) {
            uint32_t h = slot[which];
            for (i = 0; i < C; i++) {
                model->est_count[h * C + i] = 0.0f;
            }
            for (i = 0; i < (uint32_t)C * d; i++) {
                model->mean[h * C * d + i] = 0.0f;
                model->m2[h * C * d + i] = 0.0f;
            }
            for (i = 0; i < d; i++) {
                model->low[h * d + i] = HT_FLT_MAX;
                model->high[h * d + i] = -HT_FLT_MAX;
            }
        }
    }
    for (k = 0; k < C; k++) {
        model->class_count[g * C + k] = n * model->left[k];
        model->class_count[g2 * C + k] = n * model->right[k];
    }
    model->since[g] = 0;
    model->since[g2] = 0;
}

/* Draw tree t's attempt features: 0 .. d-1, the first subspace of them by a partial Fisher-Yates shuffle. */
static void draw_order(const es_hoeffding *model, uint32_t t)
{
    const uint8_t d = model->config->n_features, m = model->config->subspace;
    uint8_t *order = model->order + t * d, i;
    for (i = 0; i < d; i++) {
        order[i] = i;
    }
    if (m < d) {
        for (i = 0; i < m; i++) {
            uint8_t j = (uint8_t)(i + es_xorshift32(&model->counters->random) % (uint32_t)(d - i)), swap;
            swap = order[i];
            order[i] = order[j];
            order[j] = swap;
        }
    }
}

/* Tree t's attempt is now at node, before its first candidate. */
static void begin_attempt(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    model->attempt_node[t] = node;
    model->attempt_pos[t] = 0;
    model->best_feature[t] = HT_NO_FEATURE;
    model->best_threshold[t] = 0.0f;
    model->best_entropy[t] = 0.0f;
}

/* Start tree t's split attempt at leaf node (slot s): draw its features, copy the leaf's statistics. */
static void start_attempt(const es_hoeffding *model, uint32_t t, uint16_t node, uint16_t s)
{
    const es_hoeffding_config *config = model->config;
    const uint8_t C = config->n_classes, d = config->n_features;
    const uint32_t g = t * config->max_leaves + s;
    draw_order(model, t);
    memcpy(model->snap_count + t * C, model->class_count + g * C, C * sizeof(float));
    memcpy(model->snap_est + t * C, model->est_count + g * C, C * sizeof(float));
    memcpy(model->snap_mean + t * C * d, model->mean + g * C * d, (uint32_t)C * d * sizeof(float));
    memcpy(model->snap_m2 + t * C * d, model->m2 + g * C * d, (uint32_t)C * d * sizeof(float));
    memcpy(model->snap_low + t * d, model->low + g * d, d * sizeof(float));
    memcpy(model->snap_high + t * d, model->high + g * d, d * sizeof(float));
    begin_attempt(model, t, node);
}

/* Empty one leaf's (or the snapshot's) statistics: C priors and estimator counts, C * d means and M2, d ranges. */
static void empty_statistics(float *count, float *est, float *mean, float *m2, float *low, float *high, uint32_t C,
                             uint32_t d)
{
    uint32_t i;
    for (i = 0; i < C; i++) {
        count[i] = 0.0f;
        est[i] = 0.0f;
    }
    for (i = 0; i < C * d; i++) {
        mean[i] = 0.0f;
        m2[i] = 0.0f;
    }
    for (i = 0; i < d; i++) {
        low[i] = HT_FLT_MAX;
        high[i] = -HT_FLT_MAX;
    }
}

/* Tree t's attempt becomes the revisit of the inner node's split: an empty snapshot that collects the rows
 * through node (see the specification). */
static void start_revisit(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t C = model->config->n_classes, d = model->config->n_features;
    begin_attempt(model, t, node);
    empty_statistics(model->snap_count + t * C, model->snap_est + t * C, model->snap_mean + t * C * d,
                     model->snap_m2 + t * C * d, model->snap_low + t * d, model->snap_high + t * d, C, d);
}

/* 1 if tree t's attempt is a revisit whose snapshot holds less than the grace period (at most HT_COUNT_LIMIT)
 * of weight. */
static int collecting(const es_hoeffding *model, uint32_t t)
{
    const es_hoeffding_config *config = model->config;
    const uint16_t node = model->attempt_node[t];
    const float rows = (float)(config->grace > HT_REVISIT_ROWS ? config->grace : HT_REVISIT_ROWS);
    const float target = rows < HT_COUNT_LIMIT ? rows : HT_COUNT_LIMIT;
    if (node == HT_IDLE || model->feature[t * config->max_nodes + node] == HT_LEAF) {
        return 0;
    }
    return prior_sum(model->snap_count + t * config->n_classes, config->n_classes) < target;
}

/* Candidate pos of tree t's attempt on its snapshot (n: the snapshot's prior sum): feature pos / (steps - 1) of
 * the attempt's order, threshold k = pos % (steps - 1) + 1; kept if it is the first smallest entropy so far. */
static void evaluate(const es_hoeffding *model, uint32_t t, uint32_t pos, float n)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t d = config->n_features, steps = config->split_steps - 1u;
    const uint8_t f = model->order[t * d + pos / steps];
    const float lo = model->snap_low[t * d + f], hi = model->snap_high[t * d + f];
    float step, thr, ent;
    leaf_stats leaf;
    if (!(hi > lo)) {
        return;
    }
    step = hi - lo;
    step = step * config->split_step;
    thr = (float)(pos % steps + 1u) * step;
    thr = lo + thr;
    leaf = snapshot(model, t);
    ent = split_entropy(model, &leaf, f, thr, n);
    if (model->best_feature[t] == HT_NO_FEATURE || ent < model->best_entropy[t]) {
        model->best_feature[t] = f;
        model->best_threshold[t] = thr;
        model->best_entropy[t] = ent;
    }
}

/* The squared Hoeffding bound R^2 ln(1/delta) / (2 n) of tree t's snapshot (n: its prior sum), R = ln C of the
 * classes with a positive prior there (at least 2). */
static float bound2(const es_hoeffding *model, uint32_t t, float n)
{
    const uint8_t C = model->config->n_classes;
    const float *counts = model->snap_count + t * C;
    uint8_t k, present = 0;
    float r, eps2;
    for (k = 0; k < C; k++) {
        present = (uint8_t)(present + (counts[k] > 0.0f ? 1u : 0u));
    }
    r = ln_f32((float)(present < 2u ? 2u : present));
    eps2 = r * r;
    eps2 = eps2 * model->config->log_inv_delta;
    return eps2 / (n + n);
}

static void merge_subtree(const es_hoeffding *model, uint32_t t, uint16_t node);
static void adapt_steps(const es_hoeffding *model, uint32_t t);

/* The revisit of tree t's inner node (n: the snapshot's prior sum): its split stands unless the best candidate's
 * entropy on the collected rows is below its own by more than the Hoeffding bound; then its subtree merges into a
 * leaf that splits on the best. */
static void decide_revisit(const es_hoeffding *model, uint32_t t, uint16_t node, float n)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t i = t * config->max_nodes + node;
    leaf_stats leaf = snapshot(model, t);
    float better = split_entropy(model, &leaf, model->feature[i], model->threshold[i], n);
    better = better - model->best_entropy[t];
    if (model->best_feature[t] == HT_NO_FEATURE || !(better > 0.0f)) {
        return;
    }
    better = better * better;
    if (better > bound2(model, t, n)) {
        merge_subtree(model, t, node);
        split(model, t, node, model->child[i], model->best_feature[t], model->best_threshold[t]);
    }
}

/* The Hoeffding test of tree t's finished attempt on its snapshot (n: its prior sum): a split of the live leaf
 * when it passes, or at a revisit (an inner node) its decision. */
static void decide(const es_hoeffding *model, uint32_t t, float n)
{
    const es_hoeffding_config *config = model->config;
    const uint8_t C = config->n_classes;
    const float *counts = model->snap_count + t * C;
    const uint16_t node = model->attempt_node[t];
    float gain, eps2, tie2;
    model->attempt_node[t] = (uint16_t)HT_IDLE;
    if (model->feature[t * config->max_nodes + node] != HT_LEAF) {
        decide_revisit(model, t, node, n);
        return;
    }
    gain = entropy(counts, C, n);
    gain = gain - model->best_entropy[t];
    if (model->best_feature[t] == HT_NO_FEATURE || !(gain > 0.0f)) {
        return;
    }
    eps2 = bound2(model, t, n);
    tie2 = config->tie * config->tie;
    gain = gain * gain;
    if (gain > eps2 || eps2 < tie2) {
        split(model, t, node, model->child[t * config->max_nodes + node], model->best_feature[t],
              model->best_threshold[t]);
    }
}

/* Tree t's adaptation, else its attempt, goes on for at most work_per_call units (0: to its end): an attempt's
 * candidate each, then its decision. */
static void advance(const es_hoeffding *model, uint32_t t)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t total = (uint32_t)config->subspace * (config->split_steps - 1u);
    const uint32_t budget = config->work_per_call != 0u ? config->work_per_call : total + 1u;
    uint32_t pos = model->attempt_pos[t], done = 0;
    float n;
    if (model->adapt_pos[t] != HT_IDLE) {
        adapt_steps(model, t);
        return;
    }
    if (model->attempt_node[t] == HT_IDLE || collecting(model, t)) {
        return;
    }
    n = prior_sum(model->snap_count + t * config->n_classes, config->n_classes);
    for (; done < budget && pos < total; done++, pos++) {
        evaluate(model, t, pos, n);
    }
    model->attempt_pos[t] = (uint16_t)pos;
    if (done < budget) {
        decide(model, t, n);
    }
}

/* Halve every count and M2 of leaf g (exact: a power of two). */
static void halve_leaf(const es_hoeffding *model, uint32_t g)
{
    const uint32_t C = model->config->n_classes, cells = C * model->config->n_features;
    uint32_t i;
    for (i = 0; i < C; i++) {
        model->class_count[g * C + i] = model->class_count[g * C + i] * 0.5f;
        model->est_count[g * C + i] = model->est_count[g * C + i] * 0.5f;
    }
    for (i = 0; i < cells; i++) {
        model->m2[g * cells + i] = model->m2[g * cells + i] * 0.5f;
    }
}

static void tree_scores(const es_hoeffding *model, uint32_t t, uint16_t node, const float *x);

/* A detector's average after its n-th value: the running mean while n <= 2**shift, then the exponential average
 * of weight 2**-shift (integers, truncated). */
static uint32_t average(uint32_t mean, uint32_t value, uint32_t n, unsigned shift)
{
    if (n <= (1u << shift)) {
        return (uint32_t)(((uint64_t)mean * (n - 1u) + value) / n);
    }
    return mean - (mean >> shift) + (value >> shift);
}

/* Update node i's error averages with value (0 or HT_ONE); 1 if they signal a drift. */
static int detect(const es_hoeffding *model, uint32_t i, uint32_t value)
{
    uint32_t n = model->seen[i] == 0xFFFFu ? 0xFFFFu : model->seen[i] + 1u, fast, slow, p;
    uint64_t gap, bound;
    model->seen[i] = (uint16_t)n;
    fast = average(model->fast[i], value, n, HT_FAST_SHIFT);
    slow = average(model->slow[i], value, n, HT_SLOW_SHIFT);
    model->fast[i] = fast;
    model->slow[i] = slow;
    if (n <= (1u << HT_SLOW_SHIFT) || fast <= slow) {
        return 0;
    }
    p = slow > HT_RATE_FLOOR ? slow : HT_RATE_FLOOR;
    gap = (uint64_t)(fast - slow) * (fast - slow) * HT_FAST_VARIANCE;
    bound = (uint64_t)p * (HT_ONE - p) * ((uint32_t)model->config->drift * model->config->drift);
    return gap > bound;
}

/* Feed a row's error to the detectors of tree t from the root down; 1 and the node in *fired at the first that
 * signals a drift. */
static int watch_path(const es_hoeffding *model, uint32_t t, const float *x, int error, uint16_t *fired)
{
    const uint32_t base = t * model->config->max_nodes;
    uint16_t node = 0;
    uint32_t steps;
    for (steps = 0; steps < model->config->max_nodes; steps++) {
        const uint32_t i = base + node;
        if (detect(model, i, error ? HT_ONE : 0u)) {
            *fired = node;
            return 1;
        }
        if (model->feature[i] == HT_LEAF) {
            return 0;
        }
        node = (uint16_t)(model->child[i] + (x[model->feature[i]] > model->threshold[i] ? 1u : 0u));
    }
    return 0;
}

/* Add leaf h's priors, estimators (Chan et al.'s pairwise update) and ranges to leaf g. */
static void merge_slot(const es_hoeffding *model, uint32_t g, uint32_t h)
{
    const uint8_t C = model->config->n_classes, d = model->config->n_features;
    uint8_t k, j;
    for (k = 0; k < C; k++) {
        model->class_count[g * C + k] = model->class_count[g * C + k] + model->class_count[h * C + k];
    }
    for (k = 0; k < C; k++) {
        float na = model->est_count[g * C + k], nb = model->est_count[h * C + k], n, ratio, w;
        float *mean = model->mean + (g * C + k) * d, *m2 = model->m2 + (g * C + k) * d;
        const float *mean_h = model->mean + (h * C + k) * d, *m2_h = model->m2 + (h * C + k) * d;
        if (nb == 0.0f) {
            continue;
        }
        n = na + nb;
        ratio = nb / n;
        w = na * nb;
        w = w / n;
        for (j = 0; j < d; j++) {
            float delta = mean_h[j] - mean[j], u = delta * ratio, v;
            mean[j] = mean[j] + u;
            v = m2[j] + m2_h[j];
            u = delta * delta;
            u = u * w;
            m2[j] = v + u;
        }
        model->est_count[g * C + k] = n;
    }
    for (j = 0; j < d; j++) {
        if (model->low[h * d + j] < model->low[g * d + j]) {
            model->low[g * d + j] = model->low[h * d + j];
        }
        if (model->high[h * d + j] > model->high[g * d + j]) {
            model->high[g * d + j] = model->high[h * d + j];
        }
    }
}

/* Free leaf slot s of tree t: the last slot in use moves into it (its leaf node follows). */
static void release_slot(const es_hoeffding *model, uint32_t t, uint16_t s)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t C = config->n_classes, d = config->n_features, L = config->max_leaves;
    const uint32_t base = t * config->max_nodes, g = t * L + s;
    const uint16_t last = (uint16_t)(model->n_leaves[t] - 1u);
    const uint32_t h = t * L + last;
    uint32_t i;
    if (s != last) {
        if (C == 1u) {  /* a regressor's slot (its statistics: es_hoeffding_learn_target) */
            const uint32_t bins = d * config->split_steps;
            model->leaf_n[g] = model->leaf_n[h];
            model->leaf_sum[g] = model->leaf_sum[h];
            memcpy(model->bin_n + g * bins, model->bin_n + h * bins, bins * sizeof(uint32_t));
            memcpy(model->bin_sum + g * bins, model->bin_sum + h * bins, bins * sizeof(int32_t));
            if (config->linear != 0u) {
                memcpy(model->leaf_linear + g * (d + 2u), model->leaf_linear + h * (d + 2u), (d + 2u) * sizeof(int32_t));
            }
        } else {
            memcpy(model->class_count + g * C, model->class_count + h * C, C * sizeof(float));
            memcpy(model->est_count + g * C, model->est_count + h * C, C * sizeof(float));
            memcpy(model->mean + g * C * d, model->mean + h * C * d, C * d * sizeof(float));
            memcpy(model->m2 + g * C * d, model->m2 + h * C * d, C * d * sizeof(float));
        }
        memcpy(model->low + g * d, model->low + h * d, d * sizeof(float));
        memcpy(model->high + g * d, model->high + h * d, d * sizeof(float));
        model->since[g] = model->since[h];
        for (i = 0; i < model->n_nodes[t]; i++) {
            if (model->feature[base + i] == HT_LEAF && model->child[base + i] == last) {
                model->child[base + i] = s;
                break;
            }
        }
    }
    model->n_leaves[t] = last;
}

/* Restart the detector of node i. */
static void restart(const es_hoeffding *model, uint32_t i)
{
    model->seen[i] = 0;
    model->fast[i] = 0;
    model->slow[i] = 0;
}

/* Clear a merged node (a free node). */
static void free_node(const es_hoeffding *model, uint32_t i)
{
    model->feature[i] = HT_FREE;
    model->threshold[i] = 0.0f;
    model->child[i] = 0;
    restart(model, i);
}

/* Tree t's n_nodes drops past the free pairs at its end. */
static void drop_free_pairs(const es_hoeffding *model, uint32_t t)
{
    const uint32_t base = t * model->config->max_nodes;
    while (model->n_nodes[t] > 1u && model->feature[base + model->n_nodes[t] - 1u] == HT_FREE) {
        model->n_nodes[t] = (uint16_t)(model->n_nodes[t] - 2u);
    }
}

/* A leaf slot g after a drift: with propagation it keeps its class-conditional estimators and priors, faded to
 * limit; without it starts empty. */
static void restart_leaf(const es_hoeffding *model, uint32_t g, float limit)
{
    const uint32_t C = model->config->n_classes, d = model->config->n_features;
    uint32_t i;
    model->since[g] = 0;
    if (model->config->propagate) {
        float most;
        fade_estimators(model, g, limit);
        do {
            most = 0.0f;
            for (i = 0; i < C; i++) {
                most = model->class_count[g * C + i] > most ? model->class_count[g * C + i] : most;
            }
            if (most > limit) {
                for (i = 0; i < C; i++) {
                    model->class_count[g * C + i] = model->class_count[g * C + i] * 0.5f;
                }
            }
        } while (most > limit);
        return;
    }
    empty_statistics(model->class_count + g * C, model->est_count + g * C, model->mean + g * C * d,
                     model->m2 + g * C * d, model->low + g * d, model->high + g * d, C, d);
}

/* A leaf node of tree t that signals a drift restarts with its detector; an attempt at it ends (its snapshot
 * holds the old concept), an attempt elsewhere goes on. */
static void restart_signalled(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t base = t * model->config->max_nodes;
    if (model->attempt_node[t] == node) {
        model->attempt_node[t] = (uint16_t)HT_IDLE;
    }
    restart(model, base + node);
    restart_leaf(model, t * model->config->max_leaves + model->child[base + node], HT_PROPAGATED);
}

/* Tree t's inner node signalled a drift: its adaptation starts (marked, then merged and restarted by
 * adapt_steps) and the tree's attempt becomes the revisit of its split (see the specification). */
static void adapt(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    model->fast[t * model->config->max_nodes + node] = HT_KEPT;
    model->adapt_pos[t] = node;
    start_revisit(model, t, node);
}

/* The depth below the adapted node that node i's mark holds, else -1. */
static int32_t mark_depth(const es_hoeffding *model, uint32_t i)
{
    const uint32_t mark = model->fast[i];
    return mark >= HT_KEPT && mark <= HT_KEPT + HT_MERGED_DEPTH ? (int32_t)(mark - HT_KEPT) : -1;
}

/* Mark the children of tree t's marked inner node one level deeper (the merged depth at most). */
static void mark_children(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t base = t * model->config->max_nodes;
    const int32_t depth = mark_depth(model, base + node);
    if (depth >= 0 && model->feature[base + node] < HT_FREE) {
        const uint32_t c = model->child[base + node];
        const uint32_t below = (uint32_t)depth + 1u < HT_MERGED_DEPTH ? (uint32_t)depth + 1u : HT_MERGED_DEPTH;
        model->fast[base + c] = HT_KEPT + below;
        model->fast[base + c + 1u] = HT_KEPT + below;
    }
}

/* Make tree t's inner node a leaf of its two leaf children's slots merged (the right slot released, the pair
 * freed); a child that is not a leaf, two children of one slot or a slot not in use (only a crafted image has
 * them) leave it as it is. Returns the units done. */
static uint32_t merge_children(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t base = t * model->config->max_nodes, L = model->config->max_leaves;
    const uint32_t c = model->child[base + node];
    const uint16_t left = model->child[base + c], right = model->child[base + c + 1u];
    if (model->feature[base + c] != HT_LEAF || model->feature[base + c + 1u] != HT_LEAF || left == right
        || left >= model->n_leaves[t] || right >= model->n_leaves[t]) {
        return 0;
    }
    merge_slot(model, t * L + left, t * L + right);
    model->feature[base + node] = HT_LEAF;
    model->threshold[base + node] = 0.0f;
    model->child[base + node] = left;
    free_node(model, base + c);
    free_node(model, base + c + 1u);
    release_slot(model, t, right);
    return 1;
}

/* Tree t's node in the merging pass (its descendants done): a kept leaf restarts with the limit halved per level;
 * an inner node at the kept depth or deeper merges its two leaves and becomes a leaf, restarted at the kept depth;
 * every node's detector restarts. Returns the units done. */
static uint32_t adapt_node(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t i = t * model->config->max_nodes + node;
    const int32_t depth = mark_depth(model, i);
    uint32_t units = 0;
    if (depth < 0) {
        return 0;
    }
    if (model->feature[i] < HT_FREE && depth >= (int32_t)HT_KEPT_LEVELS) {
        units = merge_children(model, t, node);
    }
    if (model->feature[i] == HT_LEAF && depth <= (int32_t)HT_KEPT_LEVELS) {
        restart_leaf(model, t * model->config->max_leaves + model->child[i],
                     HT_PROPAGATED / (float)(1u << (uint32_t)depth));
        units = 1;
    }
    if (depth <= (int32_t)HT_KEPT_LEVELS || model->feature[i] != HT_LEAF) {
        restart(model, i);
    }
    return units;
}

/* Make tree t's inner node a leaf of its subtree's leaves merged: the adaptation's two passes, run whole, with
 * every node at the merged depth; the node's detector restarts. */
static void merge_subtree(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const uint32_t base = t * model->config->max_nodes;
    uint32_t i;
    model->fast[base + node] = HT_KEPT + HT_MERGED_DEPTH;
    for (i = node; i < model->n_nodes[t]; i++) {
        mark_children(model, t, (uint16_t)i);
    }
    for (i = model->n_nodes[t]; i-- > node;) {
        (void)adapt_node(model, t, (uint16_t)i);
    }
    restart(model, base + node);
    drop_free_pairs(model, t);
}

/* One node of tree t's adaptation: the marking pass goes forward from the node that signalled to the last node in
 * use, then the merging pass back to it. Returns the units done. */
static uint32_t adapt_visit(const es_hoeffding *model, uint32_t t)
{
    const uint32_t N = model->config->max_nodes, pos = model->adapt_pos[t];
    const uint32_t first = model->attempt_node[t], last = model->n_nodes[t] - 1u;
    uint32_t units;
    if (pos < N) {
        mark_children(model, t, (uint16_t)pos);
        model->adapt_pos[t] = (uint16_t)(pos < last ? pos + 1u : N + last);
        return 0;
    }
    units = adapt_node(model, t, (uint16_t)(pos - N));
    if (pos - N > first) {
        model->adapt_pos[t] = (uint16_t)(pos - 1u);
        return units;
    }
    model->adapt_pos[t] = (uint16_t)HT_IDLE;
    drop_free_pairs(model, t);
    return units;
}

/* Tree t's adaptation goes on for at most work_per_call units and HT_ADAPT_VISITS node visits per unit (0: to its
 * end). */
static void adapt_steps(const es_hoeffding *model, uint32_t t)
{
    const uint32_t budget = model->config->work_per_call;
    uint32_t units = 0, visits = 0;
    while (model->adapt_pos[t] != HT_IDLE && (budget == 0u || (units < budget && visits < HT_ADAPT_VISITS * budget))) {
        units += adapt_visit(model, t);
        visits++;
    }
}

/* The first largest of the naive Bayes scores in model->scores. */
static uint8_t best_score(const es_hoeffding *model)
{
    uint8_t k, best = 0;
    for (k = 1; k < model->config->n_classes; k++) {
        if (model->scores[k] > model->scores[best]) {
            best = k;
        }
    }
    return best;
}

/* Learn a row of class k with weight w into a leaf's statistics (Welford): priors and estimator counts per
 * class, means and M2 per class and feature, lows and highs per feature; returns the estimator count. */
static float learn_stats(const es_hoeffding *model, float *counts, float *est, float *mean, float *m2, float *low,
                         float *high, const float *x, uint8_t k, uint32_t w)
{
    const uint8_t d = model->config->n_features;
    const float wf = (float)w;
    float count, r;
    uint8_t j;
    counts[k] = counts[k] + wf;
    count = est[k] + wf;
    est[k] = count;
    r = wf / count;
    mean += (uint32_t)k * d;
    m2 += (uint32_t)k * d;
    for (j = 0; j < d; j++) {
        float mu = mean[j], dd = x[j] - mu, next, v, u;
        next = r * dd;
        next = mu + next;
        v = wf * dd;
        u = x[j] - next;
        v = v * u;
        v = m2[j] + v;
        if (v < 0.0f) {
            v = 0.0f;
        }
        m2[j] = v;
        mean[j] = next;
        if (x[j] < low[j]) {
            low[j] = x[j];
        }
        if (x[j] > high[j]) {
            high[j] = x[j];
        }
    }
    return count;
}

/* 1 if the row's path in tree t goes through node target. */
static int passes(const es_hoeffding *model, uint32_t t, const float *x, uint16_t target)
{
    const uint32_t base = t * model->config->max_nodes;
    uint16_t node = 0;
    uint32_t steps;
    for (steps = 0; steps < model->config->max_nodes && node != target; steps++) {
        const uint32_t i = base + node;
        if (model->feature[i] == HT_LEAF) {
            return 0;
        }
        node = (uint16_t)(model->child[i] + (x[model->feature[i]] > model->threshold[i] ? 1u : 0u));
    }
    return node == target;
}

/* The leaf node of a checked row in tree t: the cache's when the row is the last one predicted. */
static uint16_t checked_leaf(const es_hoeffding *model, uint32_t t, const float *x, int cached)
{
    uint16_t node = 0;
    if (cached) {
        return model->cached_leaf[t];
    }
    (void)leaf_of(model, t, x, &node);  /* checked by the caller */
    return node;
}

/* The naive Bayes class of tree t's leaf node for x (the cache's when the row is the last one predicted). */
static uint8_t tree_class(const es_hoeffding *model, uint32_t t, uint16_t node, const float *x, int cached)
{
    if (cached) {
        return model->cached_class[t];
    }
    tree_scores(model, t, node, x);
    return best_score(model);
}

/* A row of class label in tree t: drift detection on its path, the leaf's statistics, a revisit's collection,
 * the leaf's grace check. */
static void learn_tree(const es_hoeffding *model, uint32_t t, const float *x, uint8_t label, uint32_t w, int cached)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t C = config->n_classes, d = config->n_features;
    uint16_t node = checked_leaf(model, t, x, cached), s;
    uint32_t g;
    float count;

    s = model->child[t * config->max_nodes + node];
    g = t * config->max_leaves + s;
    if (config->drift != 0u && model->adapt_pos[t] == HT_IDLE && model->est_count[g * C + label] >= HT_ESTABLISHED) {
        uint16_t fired;
        if (watch_path(model, t, x, tree_class(model, t, node, x, cached) != label, &fired)) {
            if (model->feature[t * config->max_nodes + fired] == HT_LEAF) {
                restart_signalled(model, t, fired);
            } else {
                adapt(model, t, fired);
            }
            (void)leaf_of(model, t, x, &node);
            s = model->child[t * config->max_nodes + node];
            g = t * config->max_leaves + s;
        }
    }
    count = learn_stats(model, model->class_count + g * C, model->est_count + g * C, model->mean + g * C * d,
                        model->m2 + g * C * d, model->low + g * d, model->high + g * d, x, label, w);
    if (model->class_count[g * C + label] >= HT_COUNT_LIMIT || count >= HT_COUNT_LIMIT) {
        halve_leaf(model, g);
    }
    if (collecting(model, t) && passes(model, t, x, model->attempt_node[t])) {
        (void)learn_stats(model, model->snap_count + t * C, model->snap_est + t * C, model->snap_mean + t * C * d,
                          model->snap_m2 + t * C * d, model->snap_low + t * d, model->snap_high + t * d, x, label, w);
        if (!collecting(model, t)) {
            draw_order(model, t);
        }
    }
    model->since[g] = model->since[g] > 0xFFFFFFFFu - w ? 0xFFFFFFFFu : model->since[g] + w;
    if (model->since[g] >= config->grace && model->attempt_node[t] == HT_IDLE) {
        model->since[g] = 0;
        if (free_pair(model, t, node) != HT_NO_PAIR) {
            start_attempt(model, t, node, s);
        }
    }
}

/* Row and state checks shared by learning and prediction, before the trees' walks; a call of the other task (a
 * regressor's state has one output, a classifier's at least 2 class slots) gets ES_ERR_MODEL. */
static es_status check_call(const es_hoeffding *model, const float *features, int regression)
{
    if (model == NULL || model->config == NULL || features == NULL) {
        return ES_ERR_NULL;
    }
    if (model->config->n_trees == 0 || model->config->n_classes == 0
        || (model->config->n_classes == 1u) != (regression != 0)) {
        return ES_ERR_MODEL;
    }
    if (!valid_row(features, model->config->n_features)) {
        return ES_ERR_INPUT;
    }
    return ES_OK;
}

/* The cache (its regions in the state description): the row of the last prediction and, per tree, the leaf node
 * it reached and (a classifier) that leaf's naive Bayes class. A prediction writes it; the learn call that
 * follows takes a row with the same bits from it instead of walking and scoring every tree again (no tree has
 * changed since: the same results, without the work; its checks still walk every tree), and forgets it, as
 * es_hoeffding_rebuild does after a restore (cached[0] is 0 while it holds no row). */
static void forget_row(const es_hoeffding *model)
{
    model->cached[0] = 0u;
}

static void remember_row(const es_hoeffding *model, const float *x)
{
    memcpy(model->cached_row, x, (size_t)model->config->n_features * sizeof(float));
    model->cached[0] = 1u;
}

/* 1 if a checked call's row is the one the cache holds. */
static int is_cached(const es_hoeffding *model, const float *x)
{
    return model->cached[0] != 0u
           && memcmp(model->cached_row, x, (size_t)model->config->n_features * sizeof(float)) == 0;
}

/* The checks of check_call and every tree's walk of the row (a state changed since the last call is refused
 * as before); *cached: the row is the cached one and every walk ends at its cached leaf. */
static es_status check(const es_hoeffding *model, const float *features, int regression, int *cached)
{
    uint32_t t;
    uint16_t node;
    es_status status = check_call(model, features, regression);
    if (status != ES_OK) {
        return status;
    }
    *cached = is_cached(model, features);
    for (t = 0; t < model->config->n_trees; t++) {
        if (!leaf_of(model, t, features, &node)) {
            return ES_ERR_MODEL;
        }
        *cached = *cached && node == model->cached_leaf[t];
    }
    return ES_OK;
}

void es_hoeffding_rebuild(const es_hoeffding *model)
{
    forget_row(model);
}

void es_hoeffding_rebuild_target(const es_hoeffding *model)
{
    forget_row(model);
}

es_status es_hoeffding_learn(const es_hoeffding *model, const float *features, uint8_t label)
{
    uint32_t t;
    int cached;
    es_status status;
    if (model != NULL && model->config != NULL && label >= model->config->n_classes) {
        return ES_ERR_LABEL;
    }
    status = check(model, features, 0, &cached);
    if (status != ES_OK) {
        return status;
    }
    for (t = 0; t < model->config->n_trees; t++) {
        uint32_t w = model->config->exp_neg_lambda > 0.0f
                         ? poisson(&model->counters->random, model->config->exp_neg_lambda) : 1u;
        if (w != 0u) {
            learn_tree(model, t, features, label, w, cached);
        }
    }
    forget_row(model);
    for (t = 0; t < model->config->n_trees; t++) {
        advance(model, t);
    }
    model->counters->n_learned++;
    return ES_OK;
}

/* Q10 naive Bayes scores at tree t's leaf node into model->scores (HT_EXCLUDED for classes that take no part). */
static void tree_scores(const es_hoeffding *model, uint32_t t, uint16_t node, const float *x)
{
    const es_hoeffding_config *config = model->config;
    uint8_t C = config->n_classes, d = config->n_features, k, j;
    uint32_t g;
    const float *counts, *est;
    float n = 0.0f;
    int any = 0;

    g = t * config->max_leaves + model->child[t * config->max_nodes + node];
    counts = model->class_count + g * C;
    est = model->est_count + g * C;
    for (k = 0; k < C; k++) {
        model->scores[k] = (int32_t)HT_EXCLUDED;
        n = n + counts[k];
        if (counts[k] > 0.0f && est[k] > 0.0f) {
            any = 1;
        }
    }
    if (!(n > 0.0f)) {
        return;
    }
    for (k = 0; k < C; k++) {
        float score, v;
        if (!(counts[k] > 0.0f) || (any && !(est[k] > 0.0f))) {
            continue;
        }
        score = counts[k] / n;
        score = ln_f32(score);
        if (any) {
            const float *mean = model->mean + (g * C + k) * d, *m2 = model->m2 + (g * C + k) * d;
            float acc = 0.0f, *terms = model->terms;
            /* the terms apart (elementwise: vectorized on a host), then summed in feature order */
            for (j = 0; j < d; j++) {
                float var = m2[j] / est[k], dd, q;
                var = var + model->var_floor[j];
                dd = x[j] - mean[j];
                q = dd * dd;
                q = q / var;
                terms[j] = q + ln_f32(var);
            }
            for (j = 0; j < d; j++) {
                acc = acc + terms[j];
            }
            acc = acc * 0.5f;
            score = score - acc;
        }
        v = score * 1024.0f;
        if (v != v) {  /* NaN (a state overflowed to infinities) scores lowest, as in the specification */
            v = -HT_SCORE_LIMIT;
        } else if (v > HT_SCORE_LIMIT) {
            v = HT_SCORE_LIMIT;
        } else if (v < -HT_SCORE_LIMIT) {
            v = -HT_SCORE_LIMIT;
        }
        model->scores[k] = (int32_t)v;
    }
}

es_status es_hoeffding_predict_proba(const es_hoeffding *model, const float *features, uint32_t *work,
                                     uint16_t *proba)
{
    uint32_t t, T;
    uint8_t k, C;
    es_status status;
    if (work == NULL || proba == NULL) {
        return ES_ERR_NULL;
    }
    status = check_call(model, features, 0);
    if (status != ES_OK) {
        return status;
    }
    C = model->config->n_classes;
    T = model->config->n_trees;
    for (k = 0; k < C; k++) {
        model->sums[k] = 0;
    }
    for (t = 0; t < T; t++) {
        uint16_t node = 0;
        if (!leaf_of(model, t, features, &node)) {
            forget_row(model);
            return ES_ERR_MODEL;
        }
        tree_scores(model, t, node, features);
        model->cached_leaf[t] = node;
        model->cached_class[t] = best_score(model);
        (void)es_softmax_q15(model->scores, C, work, model->tree_proba);  /* C >= 2: ES_OK */
        for (k = 0; k < C; k++) {
            model->sums[k] += model->tree_proba[k];
        }
    }
    remember_row(model, features);
    for (k = 0; k < C; k++) {
        proba[k] = (uint16_t)((model->sums[k] + T / 2u) / T);
    }
    return ES_OK;
}

es_status es_hoeffding_predict(const es_hoeffding *model, const float *features, uint32_t *work, uint16_t *proba,
                               uint8_t *class_out)
{
    uint8_t k, best = 0;
    es_status status;
    if (class_out == NULL) {
        return ES_ERR_NULL;
    }
    status = es_hoeffding_predict_proba(model, features, work, proba);
    if (status != ES_OK) {
        return status;
    }
    for (k = 1; k < model->config->n_classes; k++) {
        if (proba[k] > proba[best]) {
            best = k;
        }
    }
    *class_out = best;
    return ES_OK;
}

/* 1 if every tree's attempt is idle or under way at a used node (a leaf; an inner node: a revisit), within its
 * candidates, and names features < d, and the snapshots' counts are valid. */
static int valid_attempts(const es_hoeffding *candidate)
{
    const es_hoeffding_config *config = candidate->config;
    const uint32_t d = config->n_features, total = (uint32_t)config->subspace * (config->split_steps - 1u);
    uint32_t t, j;
    for (t = 0; t < config->n_trees; t++) {
        const uint16_t node = candidate->attempt_node[t];
        const uint8_t best = candidate->best_feature[t];
        const uint32_t adapt = candidate->adapt_pos[t], at = adapt % config->max_nodes;
        if ((node != HT_IDLE && (node >= candidate->n_nodes[t]
                                 || candidate->feature[t * config->max_nodes + node] == HT_FREE))
            || candidate->attempt_pos[t] > total || (best != HT_NO_FEATURE && best >= d)) {
            return 0;
        }
        if (adapt != HT_IDLE && (adapt >= 2u * config->max_nodes || node == HT_IDLE
                                 || candidate->feature[t * config->max_nodes + node] >= HT_FREE || at < node
                                 || at >= candidate->n_nodes[t])) {
            return 0;
        }
    }
    for (j = 0; j < config->n_trees * d; j++) {
        if (candidate->order[j] >= d) {
            return 0;
        }
    }
    for (j = 0; j < (uint32_t)config->n_trees * config->n_classes; j++) {
        if (!(candidate->snap_count[j] >= 0.0f && candidate->snap_count[j] < HT_VALID_COUNT
              && candidate->snap_est[j] >= 0.0f && candidate->snap_est[j] < HT_VALID_COUNT)) {
            return 0;
        }
    }
    return 1;
}

/* 1 if every tree's node and leaf counts are within the pool and its used nodes split on a feature < n_features
 * with children forward to used nodes that are not free, leaves name a used leaf slot and free nodes come in
 * pairs. */
static int valid_nodes(const es_hoeffding *candidate)
{
    const es_hoeffding_config *config = candidate->config;
    uint32_t t, node;
    for (t = 0; t < config->n_trees; t++) {
        const uint32_t base = t * config->max_nodes;
        const uint16_t n_nodes = candidate->n_nodes[t], n_leaves = candidate->n_leaves[t];
        if (n_nodes < 1u || n_nodes > config->max_nodes || n_leaves < 1u || n_leaves > config->max_leaves) {
            return 0;
        }
        if ((n_nodes & 1u) == 0u || candidate->feature[base] == HT_FREE) {
            return 0;
        }
        for (node = 0; node < n_nodes; node++) {  /* children point forward to used nodes; free nodes in pairs */
            const uint8_t f = candidate->feature[base + node];
            const uint16_t child = candidate->child[base + node];
            if (f == HT_FREE) {
                if (candidate->feature[base + (node & 1u ? node + 1u : node - 1u)] != HT_FREE) {
                    return 0;
                }
            } else if (f == HT_LEAF ? child >= n_leaves
                                    : f >= config->n_features || child <= node || (uint32_t)child + 1u >= n_nodes
                                          || candidate->feature[base + child] == HT_FREE) {
                return 0;
            }
        }
    }
    return 1;
}

static es_status validate_regression(const es_hoeffding *candidate);

es_status es_hoeffding_validate(const es_hoeffding *candidate)
{
    const es_hoeffding_config *config;
    uint32_t j;
    if (candidate == 0 || candidate->config == 0 || candidate->counters == 0) {
        return ES_ERR_NULL;
    }
    config = candidate->config;
    if (config->n_classes == 1u) {
        return validate_regression(candidate);
    }
    for (j = 0; j < config->n_features; j++) {
        float floor = candidate->var_floor[j];
        if (!(floor > 0.0f && floor <= HT_FLT_MAX)) {
            return ES_ERR_IMAGE;
        }
    }
    for (j = 0; j < (uint32_t)config->n_trees * config->max_leaves * config->n_classes; j++) {
        if (!(candidate->class_count[j] >= 0.0f && candidate->class_count[j] < HT_VALID_COUNT
              && candidate->est_count[j] >= 0.0f && candidate->est_count[j] < HT_VALID_COUNT)) {
            return ES_ERR_IMAGE;
        }
    }
    if (!valid_nodes(candidate)) {
        return ES_ERR_IMAGE;
    }
    for (j = 0; j < (uint32_t)config->n_trees * config->max_nodes; j++) {  /* marks only in an adaptation */
        const int marked = candidate->adapt_pos[j / config->max_nodes] != HT_IDLE && mark_depth(candidate, j) >= 0;
        if ((candidate->fast[j] > HT_ONE && !marked) || candidate->slow[j] > HT_ONE) {
            return ES_ERR_IMAGE;
        }
    }
    return valid_attempts(candidate) ? ES_OK : ES_ERR_IMAGE;
}

/* -- Regression (edgestream/learners/hoeffding_regression.py): binned integer statistics of the target codes,
 * variance reduction under the Hoeffding bound on the ratio of the best two features, mean-code leaves and
 * Page-Hinkley on every node. A regressor's state has one output (n_classes 1). */

#define HTR_CODE_MAX 32767
#define HTR_COUNT_LIMIT 32768u   /* a leaf's counts halve when its rows reach it */
#define HTR_VALID_COUNT 65536u   /* a restored state's counts are below it */
#define HTR_ESTABLISHED 32u      /* a leaf's rows before its errors are watched */
#define HTR_PH_ROWS 64u          /* rows a detector sees before it may signal */
#define HTR_PH_SCALE 8u          /* the gap that signals, in mean errors per unit of drift */
#define HTR_GAP_CAP 1073741824u
#define HTR_ERROR_MAX 65534u     /* the largest absolute error of a code */
#define HTR_RESTART 16u          /* the weight a collapsed leaf's mean keeps */
#define HTR_MARK 0xFFFFFFFFu     /* in fast: a node of the subtree being collapsed */
#define HTR_LINEAR_SHIFT 1u      /* linear leaves: the learning rate 2^-HTR_LINEAR_SHIFT / d */
#define HTR_WEIGHT_LIMIT 1048576 /* linear leaves: weights within +-2^20 */
#define HTR_ERROR_DECAY 5u       /* linear leaves: the running errors forget 1/32 per row */
#define HTR_RUNNING_ERROR_MAX ((HTR_ERROR_MAX << HTR_ERROR_DECAY) + (1u << HTR_ERROR_DECAY) - 1u)

/* s / n rounded half away from zero; 0 when n is 0. */
static int32_t mean_code(uint32_t n, int64_t s)
{
    uint64_t magnitude, q;
    if (n == 0u) {
        return 0;
    }
    magnitude = (uint64_t)(s < 0 ? -s : s);
    q = (2u * magnitude + n) / (2u * (uint64_t)n);
    return s < 0 ? -(int32_t)q : (int32_t)q;
}

/* c^2 / n in float32 of a centred sum c over n rows. */
static float spread_term(int64_t c, uint32_t n)
{
    float f = (float)c;
    return (f * f) / (float)n;
}

/* Threshold k (1 .. split_steps - 1) of feature j at leaf slot g. */
static float bin_threshold(const es_hoeffding *model, uint32_t g, uint32_t j, uint32_t k)
{
    const uint32_t d = model->config->n_features;
    const float low = model->low[g * d + j], step = (model->high[g * d + j] - low) * model->config->split_step;
    return low + (float)k * step;
}

/* The bin of x in feature j at leaf slot g: the largest k with x > t_k, else 0. */
static uint32_t bin_of(const es_hoeffding *model, uint32_t g, uint32_t j, float x)
{
    uint32_t k, bin = 0;
    for (k = 1; k < model->config->split_steps; k++) {
        if (x > bin_threshold(model, g, j, k)) {
            bin = k;
        }
    }
    return bin;
}

static int32_t halved(int32_t v)
{
    return v / 2; /* truncated toward zero */
}

static void halve_slot(const es_hoeffding *model, uint32_t g)
{
    const uint32_t bins = (uint32_t)model->config->n_features * model->config->split_steps;
    uint32_t i;
    model->leaf_n[g] >>= 1;
    model->leaf_sum[g] = halved(model->leaf_sum[g]);
    for (i = g * bins; i < (g + 1u) * bins; i++) {
        model->bin_n[i] >>= 1;
        model->bin_sum[i] = halved(model->bin_sum[i]);
    }
}

/* A linear leaf's model (d weights, the mean's and the model's running errors) starts empty. */
static void clear_linear(const es_hoeffding *model, uint32_t g)
{
    const uint32_t width = model->config->n_features + 2u;
    if (model->config->linear != 0u) {
        memset(model->leaf_linear + g * width, 0, width * sizeof(int32_t));
    }
}

/* The row's Q15 input j at leaf slot g: feature j normalised to the leaf's range (0 for an empty range). */
static int32_t leaf_input(const es_hoeffding *model, uint32_t g, uint32_t j, float x)
{
    const uint32_t k = g * model->config->n_features + j;
    const float mid = (model->low[k] + model->high[k]) * 0.5f, half = (model->high[k] - model->low[k]) * 0.5f;
    float v;
    if (!(half > 0.0f)) {
        return 0;
    }
    v = (x - mid) / half;
    v = v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
    return (int32_t)(v * 32767.0f);
}

/* Slot g's linear prediction: its mean code plus its weights times the row's Q15 inputs / 2^15, a code. */
static int32_t linear_output(const es_hoeffding *model, uint32_t g, const float *x)
{
    const uint32_t d = model->config->n_features;
    const int32_t *w = model->leaf_linear + g * (d + 2u);
    int64_t total = 0, out;
    uint32_t j;
    for (j = 0; j < d; j++) {
        total += (int64_t)w[j] * leaf_input(model, g, j, x[j]);
    }
    out = (int64_t)mean_code(model->leaf_n[g], model->leaf_sum[g]) + total / 32768;
    return (int32_t)(out < -HTR_CODE_MAX ? -HTR_CODE_MAX : (out > HTR_CODE_MAX ? HTR_CODE_MAX : out));
}

/* e - e / 32 + |err|: a running absolute error (at most HTR_RUNNING_ERROR_MAX). */
static int32_t running_error(int32_t e, int32_t err)
{
    const uint32_t u = (uint32_t)e;
    return (int32_t)(u - (u >> HTR_ERROR_DECAY) + (uint32_t)(err < 0 ? -err : err));
}

/* One step of slot g's linear leaf on a row of weight w: the running errors, then the normalised LMS step. */
static void learn_linear(const es_hoeffding *model, uint32_t g, const float *x, int32_t code, uint32_t w)
{
    const uint32_t d = model->config->n_features;
    int32_t *state = model->leaf_linear + g * (d + 2u);
    const int32_t err = code - linear_output(model, g, x);
    const int64_t scale = (int64_t)d << (15u + HTR_LINEAR_SHIFT);
    uint32_t j;
    state[d] = running_error(state[d], code - mean_code(model->leaf_n[g], model->leaf_sum[g]));
    state[d + 1u] = running_error(state[d + 1u], err);
    for (j = 0; j < d; j++) {
        const int64_t v = state[j] + (int64_t)err * w * leaf_input(model, g, j, x[j]) / scale;
        state[j] = (int32_t)(v < -HTR_WEIGHT_LIMIT ? -HTR_WEIGHT_LIMIT : (v > HTR_WEIGHT_LIMIT ? HTR_WEIGHT_LIMIT : v));
    }
}

/* A leaf's output: its linear model's when that errs less than its mean, else its mean code. */
static int32_t leaf_output(const es_hoeffding *model, uint32_t g, const float *x)
{
    const uint32_t d = model->config->n_features;
    const int32_t *state = model->leaf_linear + g * (d + 2u);
    if (model->config->linear != 0u && state[d + 1u] < state[d]) {
        return linear_output(model, g, x);
    }
    return mean_code(model->leaf_n[g], model->leaf_sum[g]);
}

/* A leaf slot's statistics restart at (n, s) with empty bins (its range stays as set by the caller). */
static void restart_slot(const es_hoeffding *model, uint32_t g, uint32_t n, int64_t s)
{
    const uint32_t bins = (uint32_t)model->config->n_features * model->config->split_steps;
    clear_linear(model, g);
    while (n > HTR_RESTART) {
        n >>= 1;
        s /= 2;
    }
    model->leaf_n[g] = n;
    model->leaf_sum[g] = (int32_t)s;
    memset(model->bin_n + g * bins, 0, bins * sizeof(uint32_t));
    memset(model->bin_sum + g * bins, 0, bins * sizeof(int32_t));
    model->since[g] = 0;
}

/* Page-Hinkley of node i: the mean error (fast) and the gap (slow); 1 if it signals. */
static int detect_error(const es_hoeffding *model, uint32_t i, uint32_t error)
{
    uint32_t n = model->seen[i] == 0xFFFFu ? 0xFFFFu : model->seen[i] + 1u, mean, gap, allowance;
    model->seen[i] = (uint16_t)n;
    mean = average(model->fast[i], error, n, HT_SLOW_SHIFT);
    gap = model->slow[i] + error;
    allowance = mean + (mean >> 3);
    gap = gap > allowance ? gap - allowance : 0u;
    if (gap > HTR_GAP_CAP) {
        gap = HTR_GAP_CAP;
    }
    model->fast[i] = mean;
    model->slow[i] = gap;
    return n > HTR_PH_ROWS && gap > HTR_PH_SCALE * (uint32_t)model->config->drift * (mean > 1u ? mean : 1u);
}

/* Feed the row's error to tree t's detectors from the root down; 1 and the node in *fired at the first that
 * signals. */
static int watch_errors(const es_hoeffding *model, uint32_t t, const float *x, uint32_t error, uint16_t *fired)
{
    const uint32_t base = t * model->config->max_nodes;
    uint16_t node = 0;
    for (;;) {
        const uint8_t f = model->feature[base + node];
        if (detect_error(model, base + node, error)) {
            *fired = node;
            return 1;
        }
        if (f == HT_LEAF) {
            return 0;
        }
        node = (uint16_t)(model->child[base + node] + (x[f] > model->threshold[base + node] ? 1u : 0u));
    }
}

/* The node that signalled becomes a leaf: a leaf keeps its faded mean; an inner node's subtree merges into one
 * leaf in the slot of its last leaf in node order (its rows, sums and range gathered there), the other slots and
 * the descendants' nodes freed. */
static void collapse(const es_hoeffding *model, uint32_t t, uint16_t node)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t base = t * config->max_nodes, d = config->n_features, L = config->max_leaves;
    uint32_t i, j, n = 0, keep = HT_NO_PAIR;
    int64_t s = 0;
    restart(model, base + node);
    if (model->feature[base + node] == HT_LEAF) {
        const uint32_t g = t * L + model->child[base + node];
        restart_slot(model, g, model->leaf_n[g], model->leaf_sum[g]);
        return;
    }
    model->fast[base + node] = HTR_MARK;
    for (i = node; i < model->n_nodes[t]; i++) {
        if (model->fast[base + i] == HTR_MARK && model->feature[base + i] < HT_FREE) {
            const uint32_t c = model->child[base + i];
            model->fast[base + c] = HTR_MARK;
            model->fast[base + c + 1u] = HTR_MARK;
        }
    }
    for (i = model->n_nodes[t] - 1u; i > node; i--) {  /* gather into the kept slot */
        if (model->fast[base + i] == HTR_MARK && model->feature[base + i] == HT_LEAF) {
            const uint32_t h = t * L + model->child[base + i];
            n += model->leaf_n[h];
            s += model->leaf_sum[h];
            if (keep == HT_NO_PAIR) {
                keep = model->child[base + i];
                continue;
            }
            for (j = 0; j < d; j++) {
                const uint32_t k = (t * L + keep) * d + j;
                model->low[k] = model->low[h * d + j] < model->low[k] ? model->low[h * d + j] : model->low[k];
                model->high[k] = model->high[h * d + j] > model->high[k] ? model->high[h * d + j] : model->high[k];
            }
        }
    }
    for (i = model->n_nodes[t] - 1u; i > node; i--) {  /* free the rest */
        if (model->fast[base + i] != HTR_MARK) {
            continue;
        }
        if (model->feature[base + i] == HT_LEAF && model->child[base + i] != keep) {
            const uint16_t slot = model->child[base + i];
            model->feature[base + i] = HT_FREE;
            if (keep == model->n_leaves[t] - 1u) {
                keep = slot;  /* the last slot moves into the released one */
            }
            release_slot(model, t, slot);
        }
        free_node(model, base + i);
    }
    model->feature[base + node] = HT_LEAF;
    model->threshold[base + node] = 0.0f;
    model->child[base + node] = (uint16_t)keep;
    model->fast[base + node] = 0;
    restart_slot(model, t * L + keep, n, s);
    drop_free_pairs(model, t);
}

/* The best candidate of feature j at leaf slot g: 1 and (*merit, *best_k) when one has rows on both sides. */
static int best_candidate(const es_hoeffding *model, uint32_t g, uint32_t j, float *merit, uint32_t *best_k)
{
    const uint32_t S = model->config->split_steps, at = (g * model->config->n_features + j) * S;
    uint32_t k, n = 0, n_left = 0;
    int64_t total = 0, m, centred, c_left = 0;
    float whole;
    int found = 0;
    for (k = 0; k < S; k++) {
        n += model->bin_n[at + k];
        total += model->bin_sum[at + k];
    }
    if (n == 0u) {
        return 0;
    }
    m = total / (int64_t)n;  /* truncated toward zero */
    centred = total - (int64_t)n * m;
    whole = spread_term(centred, n);
    for (k = 1; k < S; k++) {
        float value;
        n_left += model->bin_n[at + k - 1u];
        c_left += model->bin_sum[at + k - 1u] - (int64_t)model->bin_n[at + k - 1u] * m;
        if (n_left == 0u || n_left == n) {
            continue;
        }
        value = spread_term(c_left, n_left) + spread_term(centred - c_left, n - n_left);
        value = value - whole;
        if (!found || value > *merit) {
            *merit = value;
            *best_k = k;
            found = 1;
        }
    }
    return found;
}

/* Split leaf slot s of node in tree t at candidate k of feature f: the children start from the rows of their
 * side, empty bins, narrowed ranges and empty detectors. */
static void split_regression(const es_hoeffding *model, uint32_t t, uint16_t node, uint16_t s, uint32_t f,
                             uint32_t k)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t base = t * config->max_nodes, d = config->n_features, L = config->max_leaves;
    const uint32_t S = config->split_steps, g = t * L + s, at = (g * d + f) * S;
    const uint32_t a = free_pair(model, t, node);
    const uint16_t s2 = model->n_leaves[t];
    const uint32_t g2 = t * L + s2;
    const float threshold = bin_threshold(model, g, f, k);
    uint32_t i, n_left = 0, n_right = 0;
    int64_t sum_left = 0, sum_right = 0;
    for (i = 0; i < S; i++) {
        if (i < k) {
            n_left += model->bin_n[at + i];
            sum_left += model->bin_sum[at + i];
        } else {
            n_right += model->bin_n[at + i];
            sum_right += model->bin_sum[at + i];
        }
    }
    model->feature[base + node] = (uint8_t)f;
    model->threshold[base + node] = threshold;
    model->child[base + node] = (uint16_t)a;
    for (i = a; i < a + 2u; i++) {
        model->feature[base + i] = HT_LEAF;
        model->threshold[base + i] = 0.0f;
        model->child[base + i] = i == a ? s : s2;
        restart(model, base + i);
    }
    if (a + 2u > model->n_nodes[t]) {
        model->n_nodes[t] = (uint16_t)(a + 2u);
    }
    model->n_leaves[t] = (uint16_t)(s2 + 1u);
    memcpy(model->low + g2 * d, model->low + g * d, d * sizeof(float));
    memcpy(model->high + g2 * d, model->high + g * d, d * sizeof(float));
    model->high[g * d + f] = threshold;
    model->low[g2 * d + f] = threshold;
    model->leaf_n[g] = n_left;
    model->leaf_sum[g] = (int32_t)sum_left;
    model->leaf_n[g2] = n_right;
    model->leaf_sum[g2] = (int32_t)sum_right;
    memset(model->bin_n + g * d * S, 0, d * S * sizeof(uint32_t));
    memset(model->bin_sum + g * d * S, 0, d * S * sizeof(int32_t));
    memset(model->bin_n + g2 * d * S, 0, d * S * sizeof(uint32_t));
    memset(model->bin_sum + g2 * d * S, 0, d * S * sizeof(int32_t));
    model->since[g] = 0;
    model->since[g2] = 0;
    clear_linear(model, g);
    clear_linear(model, g2);
}

/* A split attempt at leaf slot s of node: every candidate of the drawn features, then the Hoeffding test on the
 * ratio of the best two features' merits. */
static void attempt_regression(const es_hoeffding *model, uint32_t t, uint16_t node, uint16_t s)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t g = t * config->max_leaves + s;
    const uint8_t *order = model->order + t * config->n_features;
    uint32_t i, best_f = 0, best_k = 0, k;
    float b1 = 0.0f, b2 = 0.0f, merit = 0.0f, u, n, eps2;
    int found = 0;
    draw_order(model, t);
    for (i = 0; i < config->subspace; i++) {
        if (!best_candidate(model, g, order[i], &merit, &k)) {
            continue;
        }
        if (!found || merit > b1) {
            if (found && b1 > b2) {
                b2 = b1;
            }
            b1 = merit;
            best_f = order[i];
            best_k = k;
            found = 1;
        } else if (merit > b2) {
            b2 = merit;
        }
    }
    if (!found || !(b1 > 0.0f)) {
        return;
    }
    u = 1.0f - b2 / b1;
    n = (float)model->leaf_n[g];
    eps2 = config->log_inv_delta / (n + n);
    if (eps2 < u * u || eps2 < config->tie * config->tie) {
        split_regression(model, t, node, s, best_f, best_k);
    }
}

static void learn_tree_target(const es_hoeffding *model, uint32_t t, const float *x, int32_t code, uint32_t w,
                              int cached)
{
    const es_hoeffding_config *config = model->config;
    const uint32_t d = config->n_features, S = config->split_steps, L = config->max_leaves;
    uint16_t node = checked_leaf(model, t, x, cached), fired;
    uint32_t g, j;
    g = t * L + model->child[t * config->max_nodes + node];
    if (config->drift != 0u && model->leaf_n[g] >= HTR_ESTABLISHED) {
        int32_t error = code - mean_code(model->leaf_n[g], model->leaf_sum[g]);
        if (watch_errors(model, t, x, (uint32_t)(error < 0 ? -error : error), &fired)) {
            collapse(model, t, fired);
            (void)leaf_of(model, t, x, &node);
            g = t * L + model->child[t * config->max_nodes + node];
        }
    }
    if (config->linear != 0u && model->leaf_n[g] > 0u) {
        learn_linear(model, g, x, code, w);
    }
    model->leaf_n[g] += w;
    model->leaf_sum[g] += (int32_t)w * code;
    for (j = 0; j < d; j++) {
        const uint32_t at = (g * d + j) * S + bin_of(model, g, j, x[j]);
        model->bin_n[at] += w;
        model->bin_sum[at] += (int32_t)w * code;
    }
    if (model->leaf_n[g] >= HTR_COUNT_LIMIT) {
        halve_slot(model, g);
    }
    model->since[g] = model->since[g] > 0xFFFFFFFFu - w ? 0xFFFFFFFFu : model->since[g] + w;
    if (model->since[g] >= config->grace) {
        model->since[g] = 0;
        if (free_pair(model, t, node) != HT_NO_PAIR) {
            attempt_regression(model, t, node, (uint16_t)(g - t * L));
        }
    }
}

es_status es_hoeffding_learn_target(const es_hoeffding *model, const float *features, int16_t target)
{
    uint32_t t;
    int cached;
    es_status status = check(model, features, 1, &cached);
    if (status != ES_OK) {
        return status;
    }
    if (target < -HTR_CODE_MAX) {
        return ES_ERR_LABEL;
    }
    for (t = 0; t < model->config->n_trees; t++) {
        uint32_t w = model->config->exp_neg_lambda > 0.0f
                         ? poisson(&model->counters->random, model->config->exp_neg_lambda) : 1u;
        if (w != 0u) {
            learn_tree_target(model, t, features, target, w, cached);
        }
    }
    forget_row(model);
    model->counters->n_learned++;
    return ES_OK;
}

es_status es_hoeffding_predict_raw(const es_hoeffding *model, const float *features, int32_t *raw_out)
{
    uint32_t t;
    int32_t raw = 0;
    uint16_t node = 0;
    es_status status;
    if (raw_out == NULL) {
        return ES_ERR_NULL;
    }
    status = check_call(model, features, 1);
    if (status != ES_OK) {
        return status;
    }
    for (t = 0; t < model->config->n_trees; t++) {
        uint32_t g;
        if (!leaf_of(model, t, features, &node)) {
            forget_row(model);
            return ES_ERR_MODEL;
        }
        model->cached_leaf[t] = node;
        g = t * model->config->max_leaves + model->child[t * model->config->max_nodes + node];
        raw += leaf_output(model, g, features);
    }
    remember_row(model, features);
    *raw_out = raw;
    return ES_OK;
}

/* A regressor's state: the node tables, the features drawn, counts below HTR_VALID_COUNT with sums within
 * count x 32767, detectors' mean errors at most HTR_ERROR_MAX and gaps at most HTR_GAP_CAP, linear leaves'
 * weights within +-HTR_WEIGHT_LIMIT and running errors within 0..HTR_RUNNING_ERROR_MAX. */
static es_status validate_regression(const es_hoeffding *candidate)
{
    const es_hoeffding_config *config = candidate->config;
    const uint32_t slots = (uint32_t)config->n_trees * config->max_leaves;
    const uint32_t bins = slots * config->n_features * config->split_steps;
    uint32_t j;
    if (!valid_nodes(candidate)) {
        return ES_ERR_IMAGE;
    }
    for (j = 0; j < (uint32_t)config->n_trees * config->n_features; j++) {
        if (candidate->order[j] >= config->n_features) {
            return ES_ERR_IMAGE;
        }
    }
    for (j = 0; j < slots + bins; j++) {
        const uint32_t n = j < slots ? candidate->leaf_n[j] : candidate->bin_n[j - slots];
        const int64_t s = j < slots ? candidate->leaf_sum[j] : candidate->bin_sum[j - slots];
        if (n >= HTR_VALID_COUNT || (s < 0 ? -s : s) > (int64_t)n * HTR_CODE_MAX) {
            return ES_ERR_IMAGE;
        }
    }
    for (j = 0; j < (uint32_t)config->n_trees * config->max_nodes; j++) {
        if (candidate->fast[j] > HTR_ERROR_MAX || candidate->slow[j] > HTR_GAP_CAP) {
            return ES_ERR_IMAGE;
        }
    }
    for (j = 0; config->linear != 0u && j < slots * (config->n_features + 2u); j++) {
        const int32_t v = candidate->leaf_linear[j];
        if (j % (config->n_features + 2u) >= config->n_features
                ? v < 0 || (uint32_t)v > HTR_RUNNING_ERROR_MAX : v < -HTR_WEIGHT_LIMIT || v > HTR_WEIGHT_LIMIT) {
            return ES_ERR_IMAGE;
        }
    }
    return ES_OK;
}
