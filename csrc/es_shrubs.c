#include "es_shrubs.h"
#include "es_flash.h"

/* The learning step follows edgestream/learners/shrubs.py, the specification, to the bit; its docstring states
 * the algorithm and every rounding point. Loops keep the region pointers in locals:
 * the regions may alias as far as the compiler knows, so reading them through `model` costs a load each time. */

#define ES_WEIGHT_LIMIT ((int32_t)1 << 17) /* weights stay within +-4.0 during the gradient steps */
#define ES_NONE 0xFFFFu                     /* no node, no bin, no pending threshold */
#define ES_MAX_BIN 0xFFu                    /* a bin or threshold is at most this, ES_NONE above (a cheaper test) */
#define ES_MIXED 0x100u                     /* class of a run of rows with more than one class */
#define ES_LEAF_MARK 0x10000u               /* split choice of a node that may not split */
#define ES_PARKED 0x8000u                   /* node_of flag: the row's node may not split (the scans skip it) */
#define ES_STATS 10u                        /* split_stats words per splittable node, then its left counts */
#define ES_ST_N_TOTAL 0u
#define ES_ST_NODE 1u                       /* 2-class gini: min_samples_leaf << 16 | the node's class-0 total */
#define ES_ST_LAST 2u                       /* bin of the current run, then the left child's index or the leaf */
#define ES_ST_PEND 3u                       /* undecided threshold: the previous run's bin */
#define ES_ST_RUN_CLASS 4u                  /* the current run's class while it has one, else ES_MIXED */
#define ES_ST_RUN_START 5u                  /* the run class's left count before the current run */
#define ES_ST_BEST_LO 6u
#define ES_ST_BEST_HI 7u
#define ES_ST_BEST_DEN 8u
#define ES_ST_CHOICE 9u                     /* feature << 8 | threshold */
#define ES_ROUTE_LEAF 0x80000000u            /* a route word's flag: the node is a leaf (its index below) */
#define ES_ST_SUM 1u                        /* a regressor's node: the sum of its codes */
#define ES_ST_LEFT_SUM 3u                   /* a regressor's node: the sum of the codes left of the scan */
#define ES_JOB_IDLE 0u                      /* counters->phase: the new-shrub job's next piece */
#define ES_JOB_TRAIN 1u
#define ES_JOB_TERMS 2u
#define ES_JOB_WEIGHTS 3u

#if defined(__AVR__)
#define ES_COPIES 0 /* flash is scarce: one copy of each loop, the general one (2-class gini: es_score_gini2_of) */
#else
#define ES_COPIES 1 /* loops copied for speed: the root's scans, 2-class gini scans, 2-class routing and pair update */
#endif

#if defined(__GNUC__)
#define ES_NOINLINE __attribute__((noinline)) /* keeps hot loops in small functions: fewer spilled registers */
#define ES_INLINE __attribute__((always_inline)) inline /* one body in each caller: no call per candidate */
#else
#define ES_NOINLINE
#define ES_INLINE inline
#endif
#if defined(__GNUC__) && !defined(__clang__)
/* a zeroing loop stays a loop: GCC makes it a call to memset, a byte at a time in the small C libraries */
#define ES_NO_MEMSET __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define ES_NO_MEMSET
#endif

static ES_NO_MEMSET void es_zero_words(uint32_t *words, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        words[i] = 0;
    }
}

static ES_NO_MEMSET void es_zero_halves(uint16_t *halves, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        halves[i] = 0;
    }
}

/* The steps that differ between the tasks, one table of them per task in flash: each task's entry points pass their
 * own down, so that a firmware links the steps of its task alone. */
typedef void es_pair_step(const es_shrubs *model, uint32_t row, int32_t *new_leaf, int has_old, int32_t *old_leaf,
                          int32_t old_target); /* new_leaf and old_leaf: scratch, a step may overwrite them */
typedef void es_level_step(const es_shrubs *model, uint32_t level, uint32_t last);
typedef void es_slot_step(const es_shrubs *model, uint32_t slot);
typedef struct {
    es_pair_step *pair_update;     /* window row `row` changed: its terms move from the old row to the new one */
    es_level_step *scan_level;     /* the best split of every node of the level being trained */
    es_slot_step *new_shrub_terms; /* the new shrub's Gram row and column and its label sum */
} es_shrubs_task;

static uint32_t es_nodes_per_shrub(const es_shrubs_config *config)
{
    return (2u << config->max_depth) - 1u;
}

/* A regressor's state has one value per leaf (n_classes 1): int16 target codes (es_shrubs_learn_target). */
static int es_regressor(const es_shrubs_config *config)
{
    return config->n_classes == 1u;
}

/* The int16 code stored (two's complement) in a uint16. */
static int32_t es_code(uint32_t stored)
{
    return stored >= 0x8000u ? (int32_t)stored - 65536 : (int32_t)stored;
}

/* The int32 a uint32 sum holds (two's complement; a plain conversion would be implementation-defined). */
static int32_t es_as_int32(uint32_t v)
{
    return v >= 0x80000000u ? (int32_t)(v - 0x80000000u) - (int32_t)0x7FFFFFFF - 1 : (int32_t)v;
}

/* A regressor's target code of window (or queue) row `row`: two bytes, low first. */
static int32_t es_row_code(const uint8_t *targets, uint32_t row)
{
    return es_code((uint32_t)targets[2u * row] | ((uint32_t)targets[2u * row + 1u] << 8));
}

/* A regressor's Gram or label term floor(a b / 2^15) of two codes, as a uint32 (|a b| < 2^30: the sum with 2^30
 * is non-negative, so the shift floors). */
static uint32_t es_code_term(int32_t a, int32_t b)
{
    return (((uint32_t)(a * b) + 0x40000000u) >> 15) - 0x8000u;
}

/* The variance-reduction score of one side of a regression split (as the frozen regression trees score it):
 * floor(sum^2 / n) of the sum of its n >= 1 int16 target codes (|sum| < 2^27). */
static uint64_t es_variance_key(int32_t sum, uint32_t n)
{
    const uint64_t magnitude = sum < 0 ? (uint64_t)(-(int64_t)sum) : (uint64_t)sum;
    return magnitude * magnitude / n;
}

static int64_t es_floor_div(int64_t a, int64_t b)
{
    const int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static uint64_t es_xlog2x_u(uint64_t c)
{
    return c > 1u ? c * es_log2_q16(c) : 0u;
}

static uint32_t es_term(const uint16_t *ha, const uint16_t *hb, uint32_t n_classes)
{
    uint32_t t = 0;
    uint32_t c;
    if (n_classes == 2u) {
        return ((uint32_t)ha[0] * hb[0] + (uint32_t)ha[1] * hb[1]) >> 15;
    }
    for (c = 0; c < n_classes; c++) {
        t += (uint32_t)ha[c] * hb[c];
    }
    return t >> 15;
}

/* What es_pair_terms2 reads beside the other shrubs' values: one pointer argument. */
typedef struct es_pair_terms {
    uint32_t *gram_a;   /* the Gram row of the shrub whose terms change */
    uint32_t *gram_col; /* its column: gram[b][a] at gram_col[b * slots] */
    uint32_t slots;
    uint32_t a0;        /* its class-0 leaf values of the new row and of the old one */
    uint32_t o0;
} es_pair_terms;

/* The change of the 2-class terms of one shrub (pair->a0, pair->o0) with the shrubs of slots slot_of[0..n), whose
 * class-0 values of the new and the old row are xy[j] & 0xFFFF and xy[j] >> 16. Complementary leaves: a term is
 * (a0 b0 >> 14) + 32768 - a0 - b0 (es_column_terms2). */
static ES_NOINLINE void es_pair_terms2(const es_pair_terms *pair, const uint8_t *slot_of, const uint32_t *xy,
                                       uint32_t n)
{
    uint32_t *gram_a = pair->gram_a;
    uint32_t *gram_col = pair->gram_col;
    const uint32_t slots = pair->slots;
    const uint32_t a0 = pair->a0;
    const uint32_t o0 = pair->o0;
    const uint8_t *end = slot_of + n;
    if (n == 0u) {
        return;
    }
    do { /* the test at the end: one branch a shrub */
        const uint32_t b = *slot_of++;
        const uint32_t x0 = *xy & 0xFFFFu;
        const uint32_t y0 = *xy++ >> 16;
        const uint32_t t = ((a0 * x0) >> 14) - ((o0 * y0) >> 14) + (y0 - x0) + (o0 - a0);
        gram_a[b] += t;
        gram_col[b * slots] += t;
    } while (slot_of != end);
}

/* es_pair_update of 2 classes when an old row leaves (complementary leaves): the label sums, then every shrub's
 * class-0 values of the new and the old row packed in old_leaf (a0 | o0 << 16), then the terms. */
static ES_NOINLINE void es_pair_update2(const es_shrubs *model, uint32_t y, const int32_t *new_leaf,
                                        int32_t *old_leaf, uint32_t old_label)
{
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t n = model->counters->n_shrubs;
    const uint16_t *leaf_values = model->leaf_values;
    const uint8_t *cand_slot = model->cand_slot;
    uint32_t *xy = (uint32_t *)old_leaf; /* two values of at most 32768 a word, each leaf row read first */
    es_pair_terms pair;
    uint32_t i;
    for (i = 0; i < n; i++) {
        const uint16_t *ha = &leaf_values[2u * (uint32_t)new_leaf[i]];
        const uint16_t *oa = &leaf_values[2u * (uint32_t)old_leaf[i]];
        model->label_sum[cand_slot[i]] += (uint32_t)ha[y] - oa[old_label];
        xy[i] = (uint32_t)ha[0] | ((uint32_t)oa[0] << 16);
    }
    pair.slots = slots;
    for (i = 0; i < n; i++) {
        const uint32_t a = cand_slot[i];
        pair.a0 = xy[i] & 0xFFFFu;
        pair.o0 = xy[i] >> 16;
        pair.gram_a = &model->gram[a * slots];
        pair.gram_col = &model->gram[a];
        pair.gram_a[a] += ((pair.a0 * pair.a0) >> 14) - ((pair.o0 * pair.o0) >> 14) + 2u * (pair.o0 - pair.a0);
        es_pair_terms2(&pair, &cand_slot[i + 1u], &xy[i + 1u], n - i - 1u);
    }
}

/* Window row `row` changed: its terms in the Gram matrix and label sums of the active shrubs (slots in
 * cand_slot[0..n_shrubs)) move from the old row (leaf rows old_leaf[i], label old_label; none if !has_old) to
 * the new one (leaf rows new_leaf[i], label in window_labels). Unsigned arithmetic: every sum stays below 2^32. */
static ES_NOINLINE void es_pair_update(const es_shrubs *model, uint32_t row, int32_t *new_leaf, int has_old,
                                       int32_t *old_leaf, int32_t old_label)
{
    const uint32_t n_classes = model->config->n_classes;
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t n = model->counters->n_shrubs;
    const uint16_t *leaf_values = model->leaf_values;
    const uint8_t *cand_slot = model->cand_slot;
    uint32_t *gram = model->gram;
    const uint32_t y = model->window_labels[row];
    uint32_t i;
    uint32_t j;
    if (has_old && n_classes == 2u && ES_COPIES) {
        es_pair_update2(model, y, new_leaf, old_leaf, (uint32_t)old_label);
        return;
    }
    for (i = 0; i < n; i++) {
        const uint32_t a = cand_slot[i];
        const uint16_t *ha = &leaf_values[(uint32_t)new_leaf[i] * n_classes];
        const uint16_t *oa = &leaf_values[(uint32_t)old_leaf[i] * n_classes];
        uint32_t *gram_a = &gram[a * slots];
        uint32_t *gram_col = &gram[a]; /* gram[b * slots + a] at gram_col[b * slots] */
        model->label_sum[a] += (uint32_t)ha[y] - (has_old ? (uint32_t)oa[old_label] : 0u); /* 32-bit even where int is 16 */
        gram_a[a] += es_term(ha, ha, n_classes) - (has_old ? es_term(oa, oa, n_classes) : 0u);
        for (j = i + 1u; j < n; j++) {
            const uint32_t b = cand_slot[j];
            const uint32_t t = es_term(ha, &leaf_values[(uint32_t)new_leaf[j] * n_classes], n_classes) -
                               (has_old ? es_term(oa, &leaf_values[(uint32_t)old_leaf[j] * n_classes], n_classes) : 0u);
            gram_a[b] += t;
            gram_col[b * slots] += t;
        }
    }
}

/* es_pair_update of a regressor: the terms of codes (es_code_term); old_y is the old row's code. */
static ES_NOINLINE void es_pair_update_codes(const es_shrubs *model, uint32_t row, int32_t *new_leaf,
                                             int has_old, int32_t *old_leaf, int32_t old_y)
{
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t n = model->counters->n_shrubs;
    const uint16_t *leaf_values = model->leaf_values;
    const uint8_t *cand_slot = model->cand_slot;
    uint32_t *gram = model->gram;
    const int32_t y = es_row_code(model->window_labels, row);
    uint32_t i;
    uint32_t j;
    for (i = 0; i < n; i++) {
        const uint32_t a = cand_slot[i];
        const int32_t ha = es_code(leaf_values[new_leaf[i]]);
        const int32_t oa = has_old ? es_code(leaf_values[old_leaf[i]]) : 0;
        model->label_sum[a] += es_code_term(ha, y) - es_code_term(oa, old_y);
        for (j = i; j < n; j++) {
            const uint32_t b = cand_slot[j];
            const uint32_t t = es_code_term(ha, es_code(leaf_values[new_leaf[j]])) -
                               (has_old ? es_code_term(oa, es_code(leaf_values[old_leaf[j]])) : 0u);
            gram[a * slots + b] += t;
            if (b != a) {
                gram[b * slots + a] += t;
            }
        }
    }
}

/* Every feature's list of window rows stays sorted by (bin, row): `row` (already written) moves to its place.
 * `present` rows are listed, `row` among them when the window was full: it moves from its old place, the rows it
 * passes shift by one; otherwise it enters at the end. */
static ES_NOINLINE void es_insert_row(const es_shrubs *model, uint32_t row, uint32_t present)
{
    const uint32_t d = model->config->n_features;
    const uint32_t window = model->config->window_size;
    const uint8_t *bins = model->window_bins;
    const int full = model->counters->count == window;
    uint32_t f;
    for (f = 0; f < d; f++) {
        uint16_t *list = &model->sorted_rows[f * window];
        const uint32_t key = ((uint32_t)bins[row * d + f] << 16) | row;
        uint32_t i = present;
        if (full) {
            i = 0;
            while (list[i] != row) {
                i++;
            }
        }
        while (i + 1u < present) {
            const uint32_t next = list[i + 1u];
            if ((((uint32_t)bins[next * d + f] << 16) | next) > key) {
                break;
            }
            list[i++] = (uint16_t)next;
        }
        while (i > 0u) {
            const uint32_t prev = list[i - 1u];
            if ((((uint32_t)bins[prev * d + f] << 16) | prev) < key) {
                break;
            }
            list[i--] = (uint16_t)prev;
        }
        list[i] = (uint16_t)row;
    }
}

/* What a level's scans read, gathered once per shrub: fewer loads through the model in the hot loops. */
typedef struct es_scan {
    const uint16_t *sorted_rows;
    const uint8_t *bins;          /* window_bins */
    const uint8_t *labels;        /* window_labels */
    const uint16_t *node_of;
    uint32_t *stats;              /* split_stats */
    const uint16_t *counts;       /* split_counts */
    uint32_t window;
    uint32_t count;               /* rows in the window */
    uint32_t d;
    uint32_t n_classes;
    uint32_t stride;              /* split_stats words per node */
    uint32_t min_leaf;            /* min_samples_leaf */
    /* scores split `choice` (feature << 8 | threshold) of node v: its left side is the rows counted so far
     * without the last `less` rows (all of class less_class); kept if strictly better than the best so far */
    void (*score)(const struct es_scan *scan, uint32_t v, uint32_t choice, uint32_t less_class, uint32_t less);
} es_scan;

static void es_keep_best(uint32_t *st, uint64_t score, uint32_t den, uint32_t choice)
{
    st[ES_ST_BEST_LO] = (uint32_t)score;
    st[ES_ST_BEST_HI] = (uint32_t)(score >> 32);
    st[ES_ST_BEST_DEN] = den;
    st[ES_ST_CHOICE] = choice;
}

/* A gini candidate with n_left rows on the left (l2, r2: the sides' sums of squared class counts), compared with
 * the best so far (best_num / best_den) by cross multiplication. A node of at most ES_SMALL_NODE rows has
 * num <= n^3 / 4, den and best_den <= n^2 / 4 and best_num <= n^2 or n^3 / 4, so every product stays below 2^32
 * and 32 bits give the answer of 64 (no 64-bit multiply call on Cortex-M0). */
#define ES_SMALL_NODE 128u
static ES_INLINE void es_gini_candidate(uint32_t min_leaf, uint32_t *st, uint32_t n_left, uint32_t l2,
                                        uint32_t r2, uint32_t choice)
{
    const uint32_t n_right = st[ES_ST_N_TOTAL] - n_left;
    uint32_t den;
    if (n_left < min_leaf || n_right < min_leaf) {
        return;
    }
    den = n_left * n_right;
    if (st[ES_ST_N_TOTAL] <= ES_SMALL_NODE) {
        const uint32_t num = l2 * n_right + r2 * n_left;
        if (num * st[ES_ST_BEST_DEN] > st[ES_ST_BEST_LO] * den) {
            es_keep_best(st, num, den, choice);
        }
    } else {
        const uint64_t num = (uint64_t)l2 * n_right + (uint64_t)r2 * n_left;
        if (num * st[ES_ST_BEST_DEN] > (((uint64_t)st[ES_ST_BEST_HI] << 32) | st[ES_ST_BEST_LO]) * den) {
            es_keep_best(st, num, den, choice);
        }
    }
}

/* A 2-class gini candidate of the node of stats st, its left side the rows counted in st less sub0 of class 0
 * and sub1 of class 1: all it reads is in st (ES_ST_NODE), so that the scans call it with four arguments in
 * registers, as the last thing an entry does (their loops then keep nothing else across the call). */
static ES_NOINLINE void es_score_gini2(uint32_t *st, uint32_t choice, uint32_t sub0, uint32_t sub1)
{
    const uint32_t l0 = st[ES_STATS] - sub0;
    const uint32_t l1 = st[ES_STATS + 1u] - sub1;
    const uint32_t r0 = (st[ES_ST_NODE] & 0xFFFFu) - l0;
    const uint32_t r1 = st[ES_ST_N_TOTAL] - (st[ES_ST_NODE] & 0xFFFFu) - l1;
    es_gini_candidate(st[ES_ST_NODE] >> 16, st, l0 + l1, l0 * l0 + l1 * l1, r0 * r0 + r1 * r1, choice);
}

/* es_score_gini2 of node v through scan->score: where the scans are not instantiated for 2-class gini. */
static void es_score_gini2_of(const es_scan *scan, uint32_t v, uint32_t choice, uint32_t less_class, uint32_t less)
{
    es_score_gini2(&scan->stats[v * (ES_STATS + 2u)], choice, less_class == 0u ? less : 0u,
                   less_class == 1u ? less : 0u);
}

static void es_score_gini(const es_scan *scan, uint32_t v, uint32_t choice, uint32_t less_class, uint32_t less)
{
    uint32_t *st = &scan->stats[v * scan->stride];
    const uint16_t *total = &scan->counts[v * scan->n_classes];
    uint32_t n_left = 0;
    uint32_t l2 = 0; /* at most 4096^2 */
    uint32_t r2 = 0;
    uint32_t k;
    for (k = 0; k < scan->n_classes; k++) {
        const uint32_t lk = st[ES_STATS + k] - (k == less_class ? less : 0u);
        const uint32_t rk = total[k] - lk;
        n_left += lk;
        l2 += lk * lk;
        r2 += rk * rk;
    }
    es_gini_candidate(scan->min_leaf, st, n_left, l2, r2, choice);
}

static void es_score_entropy(const es_scan *scan, uint32_t v, uint32_t choice, uint32_t less_class, uint32_t less)
{
    uint32_t *st = &scan->stats[v * scan->stride];
    const uint16_t *total = &scan->counts[v * scan->n_classes];
    uint32_t n_left = 0;
    uint32_t n_right;
    uint32_t k;
    for (k = 0; k < scan->n_classes; k++) {
        n_left += st[ES_STATS + k];
    }
    n_left -= less;
    n_right = st[ES_ST_N_TOTAL] - n_left;
    if (n_left >= scan->min_leaf && n_right >= scan->min_leaf) {
        uint64_t cost = es_xlog2x_u(n_left) + es_xlog2x_u(n_right);
        for (k = 0; k < scan->n_classes; k++) {
            const uint32_t lk = st[ES_STATS + k] - (k == less_class ? less : 0u);
            cost -= es_xlog2x_u(lk) + es_xlog2x_u(total[k] - lk);
        }
        if (cost < (((uint64_t)st[ES_ST_BEST_HI] << 32) | st[ES_ST_BEST_LO])) {
            es_keep_best(st, cost, st[ES_ST_BEST_DEN], choice);
        }
    }
}

/* Scores split `choice` of node v (stats st) whose left side is the rows counted in st but the last one (class y)
 * and the last `less` rows of class less_class (another class, or less 0): 2-class gini by a direct call of four
 * arguments in registers (y is 0 or 1), other criteria through scan->score. The scans call it last, their counts
 * updated. */
static ES_INLINE void es_score_run(const es_scan *scan, int gini2, uint32_t *st, uint32_t v, uint32_t choice,
                                   uint32_t y, uint32_t less_class, uint32_t less)
{
    if (gini2) {
        es_score_gini2(st, choice, 1u - y + (less_class == 0u ? less : 0u), y + (less_class == 1u ? less : 0u));
    } else {
        st[ES_STATS + y]--; /* the counts without the last row, as the criteria read them */
        scan->score(scan, v, choice, less_class, less);
        st[ES_STATS + y]++;
    }
}

/* One feature's scan of the level: the window rows in (bin, row) order, each to its node's running counts.
 * A threshold between two runs of rows (rows of one bin) is a candidate unless both runs have one and the same
 * class; it is scored as soon as that is known (at the next run's first row of another class). `stride` and
 * `gini2` are constants in es_scan_feature_gini2, `root` (a level of one node, every row's) in the root's scans. */
static ES_INLINE void es_scan_nodes(const es_scan *scan, uint32_t f, uint32_t level_size, uint32_t stride,
                                    int gini2, int root)
{
    const uint32_t d = scan->d;
    const uint16_t *list = &scan->sorted_rows[f * scan->window];
    const uint16_t *end = list + scan->count;
    const uint16_t *node_of = scan->node_of;
    const uint8_t *labels = scan->labels;
    const uint8_t *bins = &scan->bins[f];
    uint32_t *stats = scan->stats;
    uint32_t v;
    f <<= 8;
    for (v = 0; v < level_size * stride; v += stride) { /* bin and pending threshold none, left counts 0 */
        stats[v + ES_ST_LAST] = ES_NONE;
        stats[v + ES_ST_PEND] = ES_NONE;
        if (stride == ES_STATS + 2u) { /* 2 classes: two stores, not a call per node */
            stats[v + ES_STATS] = 0;
            stats[v + ES_STATS + 1u] = 0;
        } else {
            es_zero_words(&stats[v + ES_STATS], stride - ES_STATS);
        }
    }
    if (list == end) {
        return;
    }
    do { /* the test at the end: one branch an entry */
        const uint32_t row = *list++;
        const uint32_t tag = root ? labels[row] : node_of[row]; /* the root: every row in node 0 */
        uint32_t *st;
        uint32_t bin;
        uint32_t y;
        uint32_t left_y;
        if (!root && tag >= ES_PARKED) {
            continue;
        }
        y = tag & 0xFFu;
        st = root ? stats : &stats[(tag >> 8) * stride];
        bin = bins[row * d];
        left_y = st[ES_STATS + y];
        st[ES_STATS + y] = left_y + 1u;
        if (bin != st[ES_ST_LAST]) { /* a run of rows with the next bin starts */
            const uint32_t last = st[ES_ST_LAST];
            const int boundary = last <= ES_MAX_BIN && st[ES_ST_RUN_CLASS] != y;
            st[ES_ST_PEND] = boundary ? ES_NONE : last;
            st[ES_ST_LAST] = bin;
            st[ES_ST_RUN_CLASS] = y;
            st[ES_ST_RUN_START] = left_y;
            if (boundary) { /* its left side: the rows before this one */
                es_score_run(scan, gini2, st, tag >> 8, f | last, y, 0u, 0u);
            }
        } else if (st[ES_ST_RUN_CLASS] != y && st[ES_ST_RUN_CLASS] != ES_MIXED) {
            const uint32_t pend = st[ES_ST_PEND];
            const uint32_t run_class = st[ES_ST_RUN_CLASS];
            st[ES_ST_PEND] = ES_NONE;
            st[ES_ST_RUN_CLASS] = ES_MIXED;
            if (pend <= ES_MAX_BIN) { /* its left side: the rows before the current run */
                es_score_run(scan, gini2, st, tag >> 8, f | pend, y, run_class,
                             st[ES_STATS + run_class] - st[ES_ST_RUN_START]);
            }
        }
    } while (list != end);
}

static ES_NOINLINE void es_scan_feature(const es_scan *scan, uint32_t f, uint32_t level_size)
{
    es_scan_nodes(scan, f, level_size, scan->stride, 0, 0);
}

static ES_NOINLINE void es_scan_feature_gini2(const es_scan *scan, uint32_t f, uint32_t level_size)
{
    es_scan_nodes(scan, f, level_size, ES_STATS + 2u, 1, 0);
}

/* The root's scans (a level of one node, that of every row). */
static ES_NOINLINE void es_scan_root(const es_scan *scan, uint32_t f)
{
    es_scan_nodes(scan, f, 1u, scan->stride, 0, 1);
}

static ES_NOINLINE void es_scan_root_gini2(const es_scan *scan, uint32_t f)
{
    es_scan_nodes(scan, f, 1u, ES_STATS + 2u, 1, 1);
}

/* A regressor's candidate (split `choice` of the node of stats st, the rows scanned so far on its left): kept if
 * its variance key beats the best so far (edgestream/learners/shrubs_regressor.py). */
static void es_score_variance(const es_scan *scan, uint32_t *st, uint32_t choice)
{
    const uint32_t n_left = st[ES_STATS];
    const uint32_t n_right = st[ES_ST_N_TOTAL] - n_left;
    int32_t s_left;
    uint64_t key;
    if (n_left < scan->min_leaf || n_right < scan->min_leaf) {
        return;
    }
    s_left = es_as_int32(st[ES_ST_LEFT_SUM]);
    key = es_variance_key(s_left, n_left) + es_variance_key(es_as_int32(st[ES_ST_SUM]) - s_left, n_right);
    if (key > (((uint64_t)st[ES_ST_BEST_HI] << 32) | st[ES_ST_BEST_LO])) {
        es_keep_best(st, key, 0u, choice);
    }
}

/* A regressor's scan of one feature: every threshold between two runs of a node's rows is a candidate. */
static ES_NOINLINE void es_scan_variance(const es_scan *scan, uint32_t f, uint32_t level_size)
{
    const uint32_t stride = scan->stride;
    const uint16_t *list = &scan->sorted_rows[f * scan->window];
    const uint16_t *end = list + scan->count;
    uint32_t v;
    f <<= 8;
    for (v = 0; v < level_size * stride; v += stride) {
        scan->stats[v + ES_ST_LAST] = ES_NONE;
        scan->stats[v + ES_ST_LEFT_SUM] = 0;
        scan->stats[v + ES_STATS] = 0;
    }
    while (list != end) {
        const uint32_t row = *list++;
        const uint32_t tag = scan->node_of[row];
        const uint32_t bin = scan->bins[row * scan->d + (f >> 8)];
        uint32_t *st;
        if (tag >= ES_PARKED) {
            continue;
        }
        st = &scan->stats[(tag >> 8) * stride];
        if (bin != st[ES_ST_LAST]) {
            if (st[ES_ST_LAST] != ES_NONE) {
                es_score_variance(scan, st, f | st[ES_ST_LAST]);
            }
            st[ES_ST_LAST] = bin;
        }
        st[ES_STATS]++;
        st[ES_ST_LEFT_SUM] += (uint32_t)es_row_code(scan->labels, row);
    }
}

/* A regressor's level: the sum of the codes of every node's rows, in split_stats word `at` of every `stride`. */
static void es_node_sums(const es_shrubs *model, uint32_t level_size, uint32_t stride, uint32_t at)
{
    uint32_t *stats = model->split_stats;
    uint32_t s;
    for (s = 0; s < level_size; s++) {
        stats[s * stride + at] = 0;
    }
    for (s = 0; s < model->counters->count; s++) {
        const uint32_t tag = model->node_of[s];
        if (tag != ES_NONE) {
            stats[((tag >> 8) & 0x7Fu) * stride + at] += (uint32_t)es_row_code(model->window_labels, s);
        }
    }
}

/* The rows of the level's nodes that may not split (ES_LEAF_MARK) are parked: out of the scans, their node kept
 * for their leaf. Below the last level a tag is node << 8 | label with node < 128. */
static void es_park_rows(const es_shrubs *model, uint32_t stride)
{
    const uint32_t n = model->counters->count;
    const uint32_t *choice = &model->split_stats[ES_ST_CHOICE];
    uint16_t *node_of = model->node_of;
    uint32_t s;
    for (s = 0; s < n; s++) {
        const uint32_t v = node_of[s];
        if (v != ES_NONE && choice[(v >> 8) * stride] == ES_LEAF_MARK) {
            node_of[s] = (uint16_t)(v | ES_PARKED);
        }
    }
}

/* Which nodes of the level may split (their parent score to beat); the rows of those that may not are parked. */
static ES_NOINLINE void es_level_setup(const es_shrubs *model, uint32_t level_size)
{
    const es_shrubs_config *config = model->config;
    const uint32_t n_classes = config->n_classes;
    const uint32_t stride = ES_STATS + n_classes;
    uint32_t *split_stats = model->split_stats;
    uint32_t parked = 0;
    uint32_t v;
    uint32_t k;
    for (v = 0; v < level_size; v++) {
        const uint16_t *counts = &model->split_counts[v * n_classes];
        uint32_t *st = &split_stats[v * stride];
        uint32_t total = 0;
        uint32_t n_present = 0;
        for (k = 0; k < n_classes; k++) {
            total += counts[k];
            n_present += counts[k] > 0u ? 1u : 0u;
        }
        if (n_present > 1u && total >= 2u * (uint32_t)config->min_samples_leaf) {
            uint64_t cost = 0;
            st[ES_ST_CHOICE] = ES_NONE;
            st[ES_ST_N_TOTAL] = total;
            st[ES_ST_NODE] = ((uint32_t)config->min_samples_leaf << 16) | counts[0];
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
            parked = 1;
        }
    }
    if (parked) {
        es_park_rows(model, stride);
    }
}

/* es_level_setup of a regressor: a node of enough rows may split (equal codes never do: no candidate beats the
 * parent), its parent's variance key to beat. */
static ES_NOINLINE void es_level_setup_codes(const es_shrubs *model, uint32_t level_size)
{
    const uint32_t min_leaf = model->config->min_samples_leaf;
    const uint32_t stride = ES_STATS + 1u;
    uint32_t parked = 0;
    uint32_t v;
    for (v = 0; v < level_size; v++) {
        const uint32_t total = model->split_counts[v];
        uint32_t *st = &model->split_stats[v * stride];
        if (total >= 2u * min_leaf) {
            st[ES_ST_N_TOTAL] = total;
            es_keep_best(st, es_variance_key(es_as_int32(st[ES_ST_SUM]), total), total, ES_NONE);
        } else {
            st[ES_ST_CHOICE] = ES_LEAF_MARK;
            parked = 1;
        }
    }
    if (parked) {
        es_park_rows(model, stride);
    }
}

/* A row that reaches a leaf of the level: its leaf in the new shrub's column of leaf_index (row s's at
 * leaves[s * slots]), out of the tree (a call out of the routing loop: it keeps fewer values in registers). */
static ES_NOINLINE void es_row_to_leaf(const es_shrubs *model, uint16_t *tag, uint32_t slot, uint32_t leaf)
{
    const uint32_t row = (uint32_t)(tag - model->node_of);
    model->leaf_index[row * (model->config->max_shrubs + 1u) + slot] = (uint8_t)leaf;
    *tag = ES_NONE;
}

/* es_level_reassign's loop over the rows, `n_classes` a constant in es_level_reassign2. */
static ES_INLINE void es_route_rows(const es_shrubs *model, uint32_t slot, uint32_t n_classes)
{
    const uint32_t d = model->config->n_features;
    const uint32_t *route = model->split_stats;
    const uint8_t *bins = model->window_bins;
    uint16_t *node_of = model->node_of;
    uint16_t *const end = node_of + model->counters->count;
    uint16_t *split_counts = model->split_counts;
    if (node_of == end) {
        return;
    }
    do { /* the test at the end: one branch a row */
        const uint32_t tag = *node_of;
        if (tag != ES_NONE) {
            const uint32_t r = route[(tag >> 8) & 0x7Fu];
            if (r < ES_ROUTE_LEAF) {
                const uint32_t v = (r >> 16) + (bins[(r >> 8) & 0xFFu] > (r & 0xFFu) ? 1u : 0u);
                const uint32_t y = tag & 0xFFu;
                *node_of = (uint16_t)((v << 8) | y);
                split_counts[v * n_classes + y]++;
            } else {
                es_row_to_leaf(model, node_of, slot, r);
            }
        }
        bins += d;
    } while (++node_of != end);
}

static ES_NOINLINE void es_level_reassign2(const es_shrubs *model, uint32_t slot)
{
    es_route_rows(model, slot, 2u);
}

static ES_NOINLINE void es_level_reassign_any(const es_shrubs *model, uint32_t slot)
{
    es_route_rows(model, slot, model->config->n_classes);
}

/* Rows to the next level's nodes, whose class totals they count; the rows of the level's leaves take their leaf
 * in the new shrub's column of leaf_index and leave the tree. Node v's route word is split_stats[v]
 * (es_place_level): child << 16 | feature << 8 | threshold of a split, ES_ROUTE_LEAF | leaf of a leaf. */
static void es_level_reassign(const es_shrubs *model, uint32_t next_size, uint32_t slot)
{
    const uint32_t n_classes = model->config->n_classes;
    es_zero_halves(model->split_counts, next_size * n_classes);
    if (n_classes == 2u && ES_COPIES) {
        es_level_reassign2(model, slot);
    } else {
        es_level_reassign_any(model, slot);
    }
}

/* The rows still in the tree at its last level: every node there is a leaf, numbered from `first` in order. */
static void es_last_level_leaves(const es_shrubs *model, uint32_t first, uint32_t slot)
{
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t n = model->counters->count;
    const uint16_t *node_of = model->node_of;
    uint8_t *leaves = model->leaf_index;
    uint32_t s;
    for (s = 0; s < n; s++, leaves += slots) {
        if (node_of[s] != ES_NONE) {
            leaves[slot] = (uint8_t)(first + (node_of[s] >> 8u));
        }
    }
}

/* Leaf values of a leaf holding class counts `counts` (their sum is total); returns its rows' term of the Gram
 * diagonal (each row's floor(sum_c h_c^2 / 2^15)) and adds their label terms (h of each row's label) to *label_sum. */
static uint32_t es_make_leaf(const uint16_t *counts, uint32_t n_classes, uint16_t *leaf, uint32_t *label_sum)
{
    uint32_t total = 0;
    uint32_t k;
    for (k = 0; k < n_classes; k++) {
        total += counts[k];
    }
    for (k = 0; k < n_classes; k++) {
        leaf[k] = (uint16_t)(((uint32_t)counts[k] * ES_Q15_ONE + total / 2u) / total);
        *label_sum += (uint32_t)counts[k] * leaf[k];
    }
    return total * es_term(leaf, leaf, n_classes);
}

/* The new shrub's root level: every row in node 0 (node_of holds node << 8 | label, or ES_NONE), its class
 * totals, and the slot's label sum and Gram diagonal from 0. */
static void es_start_shrub(const es_shrubs *model, uint32_t slot)
{
    es_shrubs_counters *counters = model->counters;
    const uint32_t n_classes = model->config->n_classes;
    uint16_t *split_counts = model->split_counts;
    uint32_t s;
    es_zero_halves(split_counts, n_classes);
    if (es_regressor(model->config)) { /* a regressor's tag: node 0 */
        es_zero_halves(model->node_of, counters->count);
        split_counts[0] = counters->count;
    } else {
        const uint8_t *labels = model->window_labels;
        uint16_t *node_of = model->node_of;
        for (s = 0; s < counters->count; s++) {
            node_of[s] = labels[s];
            split_counts[labels[s]]++;
        }
    }
    counters->level_first = 0;
    counters->level_size = 1;
    counters->n_nodes = 1;
    counters->n_leaves = 0;
    model->label_sum[slot] = 0;
    model->gram[slot * (model->config->max_shrubs + 1u) + slot] = 0;
}

/* What the scans of the level read (the scores apart). */
static void es_scan_init(const es_shrubs *model, es_scan *scan)
{
    const es_shrubs_config *config = model->config;
    scan->sorted_rows = model->sorted_rows;
    scan->bins = model->window_bins;
    scan->labels = model->window_labels;
    scan->node_of = model->node_of;
    scan->stats = model->split_stats;
    scan->counts = model->split_counts;
    scan->window = config->window_size;
    scan->count = model->counters->count;
    scan->d = config->n_features;
    scan->n_classes = config->n_classes;
    scan->stride = ES_STATS + config->n_classes;
    scan->min_leaf = config->min_samples_leaf;
}

/* The best split of every node of the level (split_stats' choices), over the sorted lists; none at the last. */
static ES_NOINLINE void es_scan_level(const es_shrubs *model, uint32_t level, uint32_t last)
{
    const es_shrubs_config *config = model->config;
    const uint32_t level_size = model->counters->level_size;
    const int gini2 = config->criterion == ES_GINI && config->n_classes == 2u;
    es_scan scan;
    uint32_t f;
    if (last) {
        return;
    }
    es_scan_init(model, &scan);
    scan.score = config->criterion != ES_GINI ? es_score_entropy : gini2 ? es_score_gini2_of : es_score_gini;
    es_level_setup(model, level_size);
    if (level == 0u && model->split_stats[ES_ST_CHOICE] == ES_LEAF_MARK) {
        return; /* the root may not split */
    }
    for (f = 0; f < config->n_features; f++) {
        if (level > 0u && gini2 && ES_COPIES) { /* direct calls (the stack analysis follows them) */
            es_scan_feature_gini2(&scan, f, level_size);
        } else if (level > 0u || !ES_COPIES) { /* (the root's rows are tagged with their labels in node 0) */
            es_scan_feature(&scan, f, level_size);
        } else if (gini2) {
            es_scan_root_gini2(&scan, f);
        } else {
            es_scan_root(&scan, f);
        }
    }
}

/* es_scan_level of a regressor: the sums of its nodes' codes first (the last level's packed: its nodes may
 * outnumber the stats'), for its splits or its leaves. */
static ES_NOINLINE void es_scan_level_codes(const es_shrubs *model, uint32_t level, uint32_t last)
{
    const uint32_t level_size = model->counters->level_size;
    es_scan scan;
    uint32_t f;
    (void)level;
    es_node_sums(model, level_size, last ? 1u : ES_STATS + 1u, last ? 0u : ES_ST_SUM);
    if (last) {
        return;
    }
    es_scan_init(model, &scan);
    es_level_setup_codes(model, level_size);
    for (f = 0; f < model->config->n_features; f++) {
        es_scan_variance(&scan, f, level_size);
    }
}

/* The level's nodes in order (children next to each other) into pool slot `slot`: splits, or leaves with their
 * values and their rows' terms in the slot's Gram diagonal and label sum, and below the last level every node's
 * route word in split_stats[v]. Returns the next level's size. */
static ES_NOINLINE uint32_t es_place_level(const es_shrubs *model, uint32_t slot, uint32_t last)
{
    const es_shrubs_config *config = model->config;
    es_shrubs_counters *counters = model->counters;
    const uint32_t n_classes = config->n_classes;
    const uint32_t stride = ES_STATS + n_classes;
    const uint32_t node_base = slot * es_nodes_per_shrub(config);
    const uint32_t leaf_base = slot << config->max_depth;
    uint32_t *split_stats = model->split_stats;
    uint16_t *leaves = &model->leaf_values[leaf_base * n_classes];
    const uint32_t level_size = counters->level_size;
    const uint32_t first_child = node_base + counters->n_nodes;
    es_node *nodes = &model->nodes[node_base + counters->level_first];
    uint32_t n_leaves = counters->n_leaves;
    uint32_t own = 0;
    uint32_t label_sum = 0;
    uint32_t next_size = 0;
    uint32_t v;
    for (v = 0; v < level_size; v++) {
        const uint32_t choice = last ? ES_LEAF_MARK : split_stats[v * stride + ES_ST_CHOICE];
        es_node *node = &nodes[v];
        uint32_t route;
        if (choice < ES_NONE) {
            node->feature = (uint8_t)(choice >> 8);
            node->threshold = (uint8_t)(choice & 0xFFu);
            node->child = (uint16_t)(first_child + next_size);
            route = (next_size << 16) | choice;
            next_size += 2u;
        } else {
            route = ES_ROUTE_LEAF | n_leaves;
            node->feature = (uint8_t)ES_LEAF;
            node->threshold = 0;
            node->child = (uint16_t)(leaf_base + n_leaves);
            if (es_regressor(config)) { /* the mean code, rounded half up; its terms come with the column */
                const int64_t total = model->split_counts[v];
                const int32_t sum = es_as_int32(split_stats[last ? v : v * stride + ES_ST_SUM]);
                leaves[n_leaves] = (uint16_t)es_floor_div(2 * (int64_t)sum + total, 2 * total);
            } else {
                own += es_make_leaf(&model->split_counts[v * n_classes], n_classes, &leaves[n_leaves * n_classes],
                                    &label_sum);
            }
            n_leaves++;
        }
        if (!last) { /* node v's words are read: its route word packs below the next node's (es_level_reassign) */
            split_stats[v] = route;
        }
    }
    counters->n_leaves = (uint16_t)n_leaves;
    model->gram[slot * (config->max_shrubs + 1u) + slot] += own;
    model->label_sum[slot] += label_sum;
    return next_size;
}

/* One level of CART on the window into pool slot `slot`: the level's nodes and leaves, its leaf rows' leaf in
 * leaf_index; then the next level's rows (node_of) and class totals (split_counts). The counters carry the level
 * from one call to the next; the shrub done, the job goes on to its Gram column. */
static void es_train_level(const es_shrubs *model, const es_shrubs_task *task, uint32_t slot)
{
    es_shrubs_counters *counters = model->counters;
    const uint32_t level = counters->job_level;
    const uint32_t last = level == model->config->max_depth;
    const uint32_t first_leaf = level == 0u ? 0u : counters->n_leaves;
    es_level_step *scan_level;
    uint32_t next_size;
    if (level == 0u) {
        es_start_shrub(model, slot);
    }
    es_flash_copy(&scan_level, &task->scan_level, sizeof scan_level);
    scan_level(model, level, last);
    next_size = es_place_level(model, slot, last);
    if (last) {
        es_last_level_leaves(model, first_leaf, slot);
    } else {
        es_level_reassign(model, next_size, slot);
    }
    counters->level_first = (uint16_t)(counters->level_first + counters->level_size);
    counters->level_size = (uint16_t)next_size;
    counters->n_nodes = (uint16_t)(counters->n_nodes + next_size);
    counters->job_level = (uint16_t)(level + 1u);
    if (next_size == 0u) { /* the shrub is done */
        counters->phase = ES_JOB_TERMS;
        counters->job_level = 0;
        counters->level_first = 0;
        counters->level_size = 0;
        counters->n_nodes = 0;
        counters->n_leaves = 0;
    }
}

/* A piece of training: a level, and the last level too when it comes next (its nodes are all leaves). */
static void es_train_piece(const es_shrubs *model, const es_shrubs_task *task, uint32_t slot)
{
    es_train_level(model, task, slot);
    if (model->counters->phase == ES_JOB_TRAIN && model->counters->job_level == model->config->max_depth) {
        es_train_level(model, task, slot);
    }
}

/* Lowest pool slot that no active shrub uses; one always exists because the pool has M + 1 slots. */
static uint32_t es_free_slot(const es_shrubs *model)
{
    uint8_t *used = model->rank; /* scratch until the prox */
    uint32_t slot;
    uint32_t i;
    for (slot = 0; slot <= model->config->max_shrubs; slot++) {
        used[slot] = 0;
    }
    for (i = 0; i < model->counters->n_shrubs; i++) {
        used[model->cand_slot[i]] = 1;
    }
    slot = 0;
    while (used[slot]) {
        slot++;
    }
    return slot;
}

/* What es_column_terms2 reads beside the rows: four arguments in registers (more go through the stack, which a
 * loop compiled for size reads again on every row). */
typedef struct es_column_pair {
    const uint16_t *h_0;  /* the first column's leaf values */
    const uint16_t *h_1;  /* the second column's */
    int32_t apart;        /* the second column's place in leaf_index from the first's */
    uint32_t slots;       /* leaf_index's row length */
    uint32_t sums[2];
} es_column_pair;

/* es_column_terms of 2 classes with complementary leaves (h[1] = 32768 - h[0]), where a row's term is
 * (a0 x0 >> 14) + 32768 - a0 - x0 for class-0 values a0 (own's, in a0s[row]) and x0: adds to pair->sums the sums
 * over the window's rows of (a0 x0 >> 14) - x0 for the columns of l0 (values h_0) and l0 + apart (values h_1);
 * own's share is added once. */
static ES_NOINLINE void es_column_terms2(const uint16_t *a0s, uint32_t rows, const uint8_t *l0, es_column_pair *pair)
{
    const uint16_t *h_0 = pair->h_0;
    const uint16_t *h_1 = pair->h_1;
    const int32_t apart = pair->apart;
    const uint32_t slots = pair->slots;
    const uint16_t *end = a0s + rows;
    uint32_t sum0 = pair->sums[0];
    uint32_t sum1 = pair->sums[1];
    if (rows == 0u) {
        return;
    }
    do { /* the test at the end: one branch a row */
        const uint32_t a0 = *a0s++;
        const uint32_t x0 = h_0[2u * l0[0]];
        const uint32_t y0 = h_1[2u * l0[apart]];
        sum0 += ((a0 * x0) >> 14) - x0;
        sum1 += ((a0 * y0) >> 14) - y0;
        l0 += slots;
    } while (a0s != end);
    pair->sums[0] = sum0;
    pair->sums[1] = sum1;
}

/* The sums over the window's rows of the terms of the shrub in pool slot `own` with those of slots b[0] and b[1]
 * (leaf_index's columns side by side in each row; one pass for two columns shares the loads of own's leaves). */
static ES_NOINLINE void es_column_terms(const es_shrubs *model, uint32_t own, const uint8_t *b, uint32_t *sums)
{
    const uint32_t n_classes = model->config->n_classes;
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t depth = model->config->max_depth;
    const uint32_t b0 = b[0];
    const uint32_t b1 = b[1];
    const uint8_t *row = model->leaf_index;
    const uint8_t *end = row + model->counters->count * slots;
    const uint16_t *h_own = &model->leaf_values[(own << depth) * n_classes];
    const uint16_t *h_0 = &model->leaf_values[(b0 << depth) * n_classes];
    const uint16_t *h_1 = &model->leaf_values[(b1 << depth) * n_classes];
    uint32_t sum0 = 0;
    uint32_t sum1 = 0;
    for (; row != end; row += slots) {
        const uint16_t *ha = &h_own[n_classes * row[own]];
        sum0 += es_term(ha, &h_0[n_classes * row[b0]], n_classes);
        sum1 += es_term(ha, &h_1[n_classes * row[b1]], n_classes);
    }
    sums[0] = sum0;
    sums[1] = sum1;
}

/* A regressor's new shrub (pool slot `slot`): its Gram diagonal entry and label sum, and its Gram row and column
 * against the active shrubs (slots in cand_slot), over the window's rows. */
static ES_NOINLINE void es_new_shrub_terms_codes(const es_shrubs *model, uint32_t slot)
{
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t n = model->counters->n_shrubs;
    const uint32_t count = model->counters->count;
    const uint32_t depth = model->config->max_depth;
    const uint16_t *leaf_values = model->leaf_values;
    const uint8_t *row = model->leaf_index;
    uint32_t own = 0;
    uint32_t label = 0;
    uint32_t i;
    uint32_t s;
    for (i = 0; i < n; i++) {
        model->gram[slot * slots + model->cand_slot[i]] = 0;
    }
    for (s = 0; s < count; s++, row += slots) {
        const int32_t h = es_code(leaf_values[(slot << depth) + row[slot]]);
        own += es_code_term(h, h);
        label += es_code_term(h, es_row_code(model->window_labels, s));
        for (i = 0; i < n; i++) {
            const uint32_t b = model->cand_slot[i];
            model->gram[slot * slots + b] += es_code_term(h, es_code(leaf_values[(b << depth) + row[b]]));
        }
    }
    for (i = 0; i < n; i++) {
        const uint32_t b = model->cand_slot[i];
        model->gram[b * slots + slot] = model->gram[slot * slots + b];
    }
    model->gram[slot * slots + slot] = own;
    model->label_sum[slot] = label;
}

/* The new shrub's (pool slot `slot`) Gram row and column against the active shrubs, two at a time (the last one
 * twice if their number is odd). With 2 classes its class-0 leaf value of every row goes to node_of (scratch free
 * after the training) and its share of the terms, sum_rows 32768 - a0, is counted once for all columns. */
static ES_NOINLINE void es_new_shrub_terms(const es_shrubs *model, uint32_t slot)
{
    const uint32_t slots = model->config->max_shrubs + 1u;
    const uint32_t n = model->counters->n_shrubs;
    const uint32_t count = model->counters->count;
    const uint32_t depth = model->config->max_depth;
    const uint16_t *leaf_values = model->leaf_values;
    uint16_t *a0s = model->node_of;
    uint32_t share = 0;
    uint32_t i;
    if (model->config->n_classes == 2u) {
        const uint16_t *h_own = &leaf_values[(slot << depth) * 2u];
        const uint8_t *own = &model->leaf_index[slot];
        for (i = 0; i < count; i++, own += slots) {
            a0s[i] = h_own[2u * *own];
            share += ES_Q15_ONE - (uint32_t)a0s[i];
        }
    }
    for (i = 0; i < n; i += 2u) {
        uint8_t pair[2];
        uint32_t sums[2];
        uint32_t k;
        pair[0] = model->cand_slot[i];
        pair[1] = model->cand_slot[i + 1u < n ? i + 1u : i];
        if (model->config->n_classes == 2u) {
            es_column_pair columns;
            columns.h_0 = &leaf_values[((uint32_t)pair[0] << depth) * 2u];
            columns.h_1 = &leaf_values[((uint32_t)pair[1] << depth) * 2u];
            columns.apart = (int32_t)pair[1] - (int32_t)pair[0];
            columns.slots = slots;
            columns.sums[0] = share;
            columns.sums[1] = share;
            es_column_terms2(a0s, count, &model->leaf_index[pair[0]], &columns);
            sums[0] = columns.sums[0];
            sums[1] = columns.sums[1];
        } else {
            es_column_terms(model, slot, pair, sums);
        }
        for (k = 0; k < 2u; k++) {
            model->gram[slot * slots + pair[k]] = sums[k];
            model->gram[pair[k] * slots + slot] = sums[k];
        }
    }
}

#if defined(__ARM_ARCH_6M__) || defined(__AVR__)
#define ES_NO_MUL64 /* no 32 x 32 -> 64-bit multiply instruction: a 64-bit product is a library call */
#endif

#ifdef ES_NO_MUL64
/* m + sum_j w[j] * g[j] (g read as int32) in 32-bit products: |g| < 2^28 in three 7-bit parts and a signed top
 * part (bits 21.., |top| < 2^7), so |w[j] * part| < 2^24 (|w| <= 2^17) and the sums of n <= 65 of them stay below
 * 2^31. */
static ES_NOINLINE int64_t es_split_dot(const uint32_t *g, const int32_t *w, uint32_t n, int64_t m)
{
    int32_t s0 = 0;
    int32_t s1 = 0;
    int32_t s2 = 0;
    int32_t s3 = 0;
    uint32_t j;
    for (j = 0; j < n; j++) {
        const int32_t x = w[j];
        const uint32_t a = g[j];
        s0 += x * (int32_t)(a & 0x7Fu);
        s1 += x * (int32_t)((a >> 7) & 0x7Fu);
        s2 += x * (int32_t)((a >> 14) & 0x7Fu);
        s3 += x * ((int32_t)(a >> 21) - (a >> 31 != 0u ? 2048 : 0));
    }
    return m + s0 + (int64_t)s1 * 128 + (int64_t)s2 * 16384 + (int64_t)s3 * 2097152;
}
#endif

/* A weight after its gradient step (m: its gradient sum), clipped */
static ES_INLINE int32_t es_step_weight(int32_t w, int64_t m, uint64_t scale)
{
    /* trunc(trunc(m / 2^15) * scale / 2^30) on |m|: both roundings toward zero keep the sign out */
    const uint64_t step = (((m < 0 ? 0u - (uint64_t)m : (uint64_t)m) >> 15) * scale) >> 30;
    const int64_t x = m < 0 ? w + (int64_t)step : w - (int64_t)step;
    return (int32_t)(x > ES_WEIGHT_LIMIT ? ES_WEIGHT_LIMIT : (x < -ES_WEIGHT_LIMIT ? -ES_WEIGHT_LIMIT : x));
}

/* What a gradient step reads beside the two candidates it moves: one pointer argument. */
typedef struct es_jacobi {
    const uint32_t *gram;
    const uint32_t *label_sum;
    const int32_t *w;      /* the weights before the step, by slot */
    int32_t *next_w;       /* after it */
    uint32_t slots;
    uint32_t used;         /* the candidates' slots are below this */
    uint64_t scale;
} es_jacobi;

/* The step of the candidates of slots a and b: their gradient sums m = sum_j w[j] gram[a][j] - 2^15 label_sum[a]
 * along their Gram rows (two rows share the loads of the weights; in 32-bit products where a 64-bit one is a
 * library call), then their weights. */
static ES_NOINLINE void es_jacobi_pair(const es_jacobi *jacobi, uint32_t a, uint32_t b)
{
    const int32_t *w = jacobi->w;
    const uint32_t *g0 = &jacobi->gram[a * jacobi->slots];
    const uint32_t *g1 = &jacobi->gram[b * jacobi->slots];
    int64_t m0 = -(int64_t)es_as_int32(jacobi->label_sum[a]) * 32768;
    int64_t m1 = -(int64_t)es_as_int32(jacobi->label_sum[b]) * 32768;
#ifdef ES_NO_MUL64
    m0 = es_split_dot(g0, w, jacobi->used, m0);
    m1 = es_split_dot(g1, w, jacobi->used, m1);
#else
    const int32_t *end = w + jacobi->used;
    if (w != end) {
        do { /* the test at the end: one branch a turn */
            const int64_t x = *w++;
            m0 += x * es_as_int32(*g0++);
            m1 += x * es_as_int32(*g1++);
        } while (w != end);
    }
#endif
    jacobi->next_w[a] = es_step_weight(jacobi->w[a], m0, jacobi->scale);
    jacobi->next_w[b] = es_step_weight(jacobi->w[b], m1, jacobi->scale);
}

/* `burnin` proximal gradient steps (Jacobi: every weight moves by the gradient at the previous weights) from the
 * active shrubs' weights and 0 for the new one. The weights are held by pool slot (0 in slots that are not
 * candidates), so that each dot product runs along a Gram row; its sum is an exact integer, the same in any
 * order. Returns the final weights in candidate order (in work_weights). */
static ES_NOINLINE const int32_t *es_gradient_steps(const es_shrubs *model, uint32_t n_candidates)
{
    const es_shrubs_config *config = model->config;
    const uint32_t slots = config->max_shrubs + 1u;
    const uint8_t *cand_slot = model->cand_slot;
    int32_t *w = model->work_weights;
    int32_t *next_w = &model->work_weights[slots];
    const uint64_t alpha = config->step_q16 != 0u ? (uint64_t)config->step_q16 : 65536u / ((uint64_t)n_candidates + 1u);
    es_jacobi jacobi;
    uint32_t step;
    uint32_t k;
    jacobi.gram = model->gram;
    jacobi.label_sum = model->label_sum;
    jacobi.slots = slots;
    jacobi.used = 0;
    jacobi.scale = (alpha << 15) / ((uint64_t)model->counters->count * config->n_classes);
    es_zero_words((uint32_t *)w, 2u * slots); /* w and next_w (int32 read as uint32: the same bits) */
    for (k = 0; k < n_candidates; k++) {
        const uint32_t a = cand_slot[k];
        w[a] = k < model->counters->n_shrubs ? (int32_t)model->weights[k] : 0;
        jacobi.used = a >= jacobi.used ? a + 1u : jacobi.used;
    }
    for (step = 0; step < config->burnin; step++) {
        jacobi.w = w;
        jacobi.next_w = next_w;
        for (k = 0; k < n_candidates; k += 2u) { /* two candidates at a time (the last one twice if odd) */
            es_jacobi_pair(&jacobi, cand_slot[k], cand_slot[k + 1u < n_candidates ? k + 1u : k]);
        }
        next_w = w;
        w = (int32_t *)jacobi.next_w;
    }
    for (k = 0; k < n_candidates; k++) {
        next_w[k] = w[cand_slot[k]];
    }
    return next_w;
}

/* Hard-L0 prox, integer simplex projection of the non-zero kept weights, and pruning of zero weights. */
static ES_NOINLINE void es_prox(const es_shrubs *model, uint32_t n_candidates, const int32_t *w)
{
    const int64_t one = ES_Q15_ONE;
    const uint32_t kept = n_candidates < model->config->max_shrubs ? n_candidates : model->config->max_shrubs;
    const uint32_t per_shrub = es_nodes_per_shrub(model->config);
    uint8_t *rank = model->rank;
    uint32_t support = 0;
    uint32_t n_kept = 0;
    uint32_t i;
    uint32_t j;
    uint32_t rho = 1;
    int64_t total = 0;
    int64_t total_rho = 0;
    int64_t lambda;
    int64_t remainder;
    for (i = 0; i < n_candidates; i++) { /* rank by weight, descending, ties to the older position */
        j = i;
        while (j > 0 && w[rank[j - 1u]] < w[i]) {
            rank[j] = rank[j - 1u];
            j--;
        }
        rank[j] = (uint8_t)i;
    }
    for (j = 0; j < kept; j++) {
        if (w[rank[j]] != 0) {
            rank[support++] = rank[j];
        }
    }
    model->counters->n_shrubs = 0;
    if (support == 0) {
        return;
    }
    for (j = 0; j < support; j++) {
        const int64_t u = w[rank[j]];
        total += u;
        if ((int64_t)(j + 1u) * u + one - total > 0) {
            rho = j + 1u;
            total_rho = total;
        }
    }
    lambda = es_floor_div(one - total_rho, rho);
    remainder = one - total_rho - (int64_t)rho * lambda;
    for (j = 0; j < support; j++) {
        int64_t x = w[rank[j]] + lambda;
        x = (x > 0 ? x : 0) + ((int64_t)j < remainder ? 1 : 0);
        if (x > 0) {
            model->roots[n_kept] = (uint16_t)(model->cand_slot[rank[j]] * per_shrub);
            model->weights[n_kept] = (uint16_t)x;
            n_kept++;
        }
    }
    model->counters->n_shrubs = (uint16_t)n_kept;
}

/* The active shrubs' leaves for window row `row` (written): in leaf_index, and their leaf rows in leaf_row. */
static void es_row_leaves(const es_shrubs *model, uint32_t row, int32_t *leaf_row)
{
    const es_shrubs_config *config = model->config;
    uint8_t *leaves = &model->leaf_index[row * (config->max_shrubs + 1u)];
    uint32_t i;
    for (i = 0; i < model->counters->n_shrubs; i++) {
        const uint32_t slot = model->cand_slot[i];
        const uint32_t leaf = es_tree_leaf(model->nodes, model->roots[i], &model->window_bins[row * config->n_features]);
        leaves[slot] = (uint8_t)(leaf - (slot << config->max_depth));
        leaf_row[i] = (int32_t)leaf;
    }
}

/* The active shrubs' pool slots, in rank order, in cand_slot[0..n_shrubs). */
static void es_active_slots(const es_shrubs *model)
{
    const uint32_t per_shrub = es_nodes_per_shrub(model->config);
    const uint32_t n = model->counters->n_shrubs;
    const uint16_t *roots = model->roots;
    uint8_t *cand_slot = model->cand_slot;
    uint32_t i;
    for (i = 0; i < n; i++) {
        cand_slot[i] = (uint8_t)(roots[i] / per_shrub);
    }
}

/* The oldest pending row enters the window (the caches follow); every update_every rows a new-shrub job starts. */
static void es_learn_oldest(const es_shrubs *model, const es_shrubs_task *task)
{
    const es_shrubs_config *config = model->config;
    es_shrubs_counters *counters = model->counters;
    const uint32_t slots = config->max_shrubs + 1u;
    const uint32_t d = config->n_features;
    const uint32_t head = counters->head;
    const uint32_t count = counters->count;
    const uint32_t at = counters->queue_head;
    const int regressor = es_regressor(config);
    const int32_t old_target = regressor ? es_row_code(model->window_labels, head) : (int32_t)model->window_labels[head];
    const uint32_t per_shrub = es_nodes_per_shrub(config);
    es_pair_step *pair_update;
    uint32_t i;
    for (i = 0; i < counters->n_shrubs; i++) { /* the active shrubs' pool slots, the leaf rows of the row replaced */
        model->cand_slot[i] = (uint8_t)(model->roots[i] / per_shrub);
        model->work_weights[i] = (int32_t)(((uint32_t)model->cand_slot[i] << config->max_depth) +
                                           model->leaf_index[head * slots + model->cand_slot[i]]);
    }
    for (i = 0; i < d; i++) {
        model->window_bins[head * d + i] = model->queue_bins[at * d + i];
    }
    for (i = 0; i < (regressor ? 2u : 1u); i++) {
        model->window_labels[(regressor ? 2u : 1u) * head + i] = model->queue_labels[(regressor ? 2u : 1u) * at + i];
    }
    counters->queue_head = (uint16_t)(at + 1u == config->queue_size ? 0u : at + 1u);
    counters->pending--;
    es_insert_row(model, head, count);
    es_row_leaves(model, head, &model->work_weights[slots]);
    counters->head = (uint16_t)(head + 1u == config->window_size ? 0u : head + 1u);
    if (count < config->window_size) {
        counters->count = (uint16_t)(count + 1u);
    }
    es_flash_copy(&pair_update, &task->pair_update, sizeof pair_update);
    pair_update(model, head, &model->work_weights[slots], count == config->window_size, model->work_weights,
                old_target);
    counters->since_update++;
    if (counters->since_update == config->update_every) {
        counters->since_update = 0;
        counters->phase = ES_JOB_TRAIN;
        counters->job_slot = (uint16_t)es_free_slot(model);
    }
}

/* The new-shrub job's next piece (the Gram column and the weights read the active shrubs' slots). */
static void es_job_piece(const es_shrubs *model, const es_shrubs_task *task)
{
    es_shrubs_counters *counters = model->counters;
    const uint32_t n_active = counters->n_shrubs;
    const uint32_t slot = counters->job_slot;
    if (counters->phase == ES_JOB_TRAIN) {
        es_train_piece(model, task, slot);
        return;
    }
    es_active_slots(model);
    if (counters->phase == ES_JOB_TERMS) {
        es_slot_step *new_shrub_terms;
        es_flash_copy(&new_shrub_terms, &task->new_shrub_terms, sizeof new_shrub_terms);
        new_shrub_terms(model, slot);
        counters->phase = ES_JOB_WEIGHTS;
    } else {
        model->cand_slot[n_active] = (uint8_t)slot;
        es_prox(model, n_active + 1u, es_gradient_steps(model, n_active + 1u));
        counters->phase = ES_JOB_IDLE;
        counters->job_slot = 0;
    }
}

/* The units of the next piece of work (0: none is pending). */
static uint32_t es_next_units(const es_shrubs *model)
{
    const es_shrubs_config *config = model->config;
    switch (model->counters->phase) {
    case ES_JOB_TRAIN:
        return config->unit_train;
    case ES_JOB_TERMS:
        return config->unit_terms;
    case ES_JOB_WEIGHTS:
        return config->unit_weights;
    default:
        return model->counters->pending > 0u ? config->unit_row : 0u;
    }
}

/* A checked row (bins and its target's `n_bytes` bytes) joins the queue, then pieces of pending work run while they
 * fit in the budget. */
static ES_INLINE void es_learn_row(const es_shrubs *model, const es_shrubs_task *task, const uint8_t *bins,
                         const uint8_t *target, uint32_t n_bytes)
{
    const es_shrubs_config *config = model->config;
    es_shrubs_counters *counters = model->counters;
    uint32_t budget;
    uint32_t i;
    if (counters->pending < config->queue_size) { /* a full queue (only a crafted state holds one) drops the row */
        const uint32_t at = (uint32_t)counters->queue_head + counters->pending;
        const uint32_t place = at >= config->queue_size ? at - config->queue_size : at;
        for (i = 0; i < config->n_features; i++) {
            model->queue_bins[place * config->n_features + i] = bins[i];
        }
        for (i = 0; i < n_bytes; i++) {
            model->queue_labels[place * n_bytes + i] = target[i];
        }
        counters->pending++;
    }
    budget = config->work_per_call;
    for (;;) { /* pieces while they fit in the budget (0: no bound) */
        const uint32_t units = es_next_units(model);
        if (units == 0u || (config->work_per_call != 0u && units > budget)) {
            break;
        }
        budget -= config->work_per_call != 0u ? units : 0u;
        if (counters->phase == ES_JOB_IDLE) {
            es_learn_oldest(model, task);
        } else {
            es_job_piece(model, task);
        }
    }
}

static const es_shrubs_task es_classifier_steps ES_FLASH = { es_pair_update, es_scan_level, es_new_shrub_terms };
static const es_shrubs_task es_regressor_steps ES_FLASH = { es_pair_update_codes, es_scan_level_codes,
                                                            es_new_shrub_terms_codes };

es_status es_shrubs_learn(const es_shrubs *model, const uint8_t *bins, uint8_t label)
{
    if (model == 0 || bins == 0 || model->config == 0 || model->counters == 0) {
        return ES_ERR_NULL;
    }
    if (es_regressor(model->config)) {
        return ES_ERR_MODEL;
    }
    if (label >= model->config->n_classes) {
        return ES_ERR_LABEL;
    }
    es_learn_row(model, &es_classifier_steps, bins, &label, 1u);
    return ES_OK;
}

es_status es_shrubs_learn_target(const es_shrubs *model, const uint8_t *bins, int16_t target)
{
    uint8_t bytes[2];
    if (model == 0 || bins == 0 || model->config == 0 || model->counters == 0) {
        return ES_ERR_NULL;
    }
    if (!es_regressor(model->config)) {
        return ES_ERR_MODEL;
    }
    if (target < -32767) {
        return ES_ERR_LABEL;
    }
    bytes[0] = (uint8_t)((uint16_t)target & 0xFFu);
    bytes[1] = (uint8_t)((uint16_t)target >> 8);
    es_learn_row(model, &es_regressor_steps, bins, bytes, 2u);
    return ES_OK;
}

es_status es_shrubs_predict_raw(const es_shrubs *model, const uint8_t *bins, int32_t *raw_out)
{
    const es_shrubs_counters *counters;
    int32_t raw = 0;
    uint32_t i;
    if (model == 0 || model->config == 0 || model->counters == 0 || bins == 0 || raw_out == 0) {
        return ES_ERR_NULL;
    }
    if (!es_regressor(model->config)) {
        return ES_ERR_MODEL;
    }
    counters = model->counters;
    for (i = 0; i < counters->n_shrubs; i++) { /* |raw| <= 65535 * 32767 < 2^31 */
        raw += (int32_t)model->weights[i] * es_code(model->leaf_values[es_tree_leaf(model->nodes, model->roots[i], bins)]);
    }
    *raw_out = raw;
    return ES_OK;
}

es_status es_shrubs_predict_proba(const es_shrubs *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba)
{
    es_ensemble active;
    uint8_t k;
    if (model == 0 || model->config == 0 || model->counters == 0 || proba == 0) {
        return ES_ERR_NULL;
    }
    if (es_regressor(model->config)) {
        return ES_ERR_MODEL;
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

/* Shrubs of depth up to 8 have at most 511 nodes (leaf_index holds a leaf in a uint8_t). */
#define ES_SHRUBS_MAX_NODES 511u

/* One active shrub of pool slot `slot`: every node reachable from its root stays in the slot's nodes, children
 * point forward, splits test a feature < n_features, leaves name one of the slot's leaf rows. */
static int es_valid_shrub(const es_shrubs *model, uint32_t slot)
{
    const es_shrubs_config *config = model->config;
    const uint32_t per_shrub = es_nodes_per_shrub(config);
    const uint32_t first = slot * per_shrub;
    const uint32_t first_leaf = slot << config->max_depth;
    uint8_t reached[(ES_SHRUBS_MAX_NODES + 7u) / 8u] = { 0 };
    uint32_t i;
    reached[0] = 1u;
    for (i = 0; i < per_shrub; i++) {
        const es_node *node = &model->nodes[first + i];
        uint32_t child;
        if (!(reached[i >> 3] & (1u << (i & 7u)))) {
            continue;
        }
        if (node->feature == ES_LEAF) {
            const uint32_t leaf = 2u * (uint32_t)node->child; /* its values' index with 2 classes */
            if (node->child < first_leaf || node->child >= first_leaf + (1u << config->max_depth)
                || (config->n_classes == 2u
                    && (uint32_t)model->leaf_values[leaf] + model->leaf_values[leaf + 1u] != ES_Q15_ONE)
                || (es_regressor(config) && model->leaf_values[node->child] == 0x8000u)) {
                return 0; /* (2 classes: es_column_terms2 needs complementary leaves, as learned ones are) */
            }
            continue;
        }
        child = node->child;
        if (node->feature >= config->n_features || child <= first + i || child + 1u >= first + per_shrub) {
            return 0;
        }
        child -= first;
        reached[child >> 3] |= (uint8_t)(1u << (child & 7u));
        reached[(child + 1u) >> 3] |= (uint8_t)(1u << ((child + 1u) & 7u));
    }
    return 1;
}

es_status es_shrubs_validate(const es_shrubs *candidate)
{
    const es_shrubs_config *config;
    const es_shrubs_counters *counters;
    uint32_t slots, per_shrub, window, i, j, total = 0;
    if (candidate == 0 || candidate->config == 0 || candidate->counters == 0) {
        return ES_ERR_NULL;
    }
    config = candidate->config;
    counters = candidate->counters;
    window = config->window_size;
    slots = config->max_shrubs + 1u;
    per_shrub = es_nodes_per_shrub(config);
    if (config->max_depth > 8u || per_shrub > ES_SHRUBS_MAX_NODES || window == 0u || config->update_every == 0u) {
        return ES_ERR_MODEL;
    }
    if (config->queue_size == 0u) {
        return ES_ERR_MODEL;
    }
    if (counters->head >= window || counters->count > window || counters->n_shrubs > config->max_shrubs
        || counters->since_update >= config->update_every
        || (counters->count != window && counters->head != counters->count)
        || counters->pending >= config->queue_size || counters->queue_head >= config->queue_size
        || counters->phase > ES_JOB_WEIGHTS
        || (counters->phase != ES_JOB_IDLE && counters->count == 0u)
        || counters->job_level >= (counters->phase != ES_JOB_TRAIN ? 1u
                                   : config->max_depth > 0u ? config->max_depth : 1u)) {
        return ES_ERR_IMAGE;
    }
    for (i = 0; i < window; i++) {
        if (es_regressor(config) ? es_row_code(candidate->window_labels, i) < -32767
                                 : candidate->window_labels[i] >= config->n_classes) {
            return ES_ERR_IMAGE;
        }
    }
    for (i = 0; i < config->queue_size; i++) {
        if (es_regressor(config) ? es_row_code(candidate->queue_labels, i) < -32767
                                 : candidate->queue_labels[i] >= config->n_classes) {
            return ES_ERR_IMAGE;
        }
    }
    if (counters->phase == ES_JOB_IDLE ? counters->job_slot != 0u : counters->job_slot >= slots) {
        return ES_ERR_IMAGE;
    }
    for (i = 0; i < counters->n_shrubs; i++) {
        const uint32_t root = candidate->roots[i];
        if (root % per_shrub != 0u || root / per_shrub >= slots || !es_valid_shrub(candidate, root / per_shrub)
            || (counters->phase != ES_JOB_IDLE && root / per_shrub == counters->job_slot)) {
            return ES_ERR_IMAGE;
        }
        for (j = 0; j < i; j++) {
            if (candidate->roots[j] == root) {
                return ES_ERR_IMAGE;
            }
        }
        total += candidate->weights[i];
    }
    if (counters->n_shrubs > 0u && (total == 0u || total > 65535u)) {
        return ES_ERR_IMAGE;
    }
    for (i = 0; counters->n_shrubs > 0u && !es_regressor(config) && i < (slots << config->max_depth) * config->n_classes; i++) {
        if (candidate->leaf_values[i] > ES_Q15_ONE) {  /* as TreeEnsemble.validate: Q15 probabilities */
            return ES_ERR_IMAGE;
        }
    }
    return ES_OK;
}

/* A job under way: its pieces run again from its start up to where it was (the window and the ensemble are those
 * it started from), so that the caches are what they computed (ShrubEnsemble._replay_job). */
static void es_replay_job(const es_shrubs *model, const es_shrubs_task *task)
{
    es_shrubs_counters *counters = model->counters;
    const uint32_t phase = counters->phase;
    const uint32_t levels = counters->job_level;
    if (phase == ES_JOB_IDLE) {
        return;
    }
    counters->phase = ES_JOB_TRAIN;
    counters->job_level = 0;
    while (counters->phase == ES_JOB_TRAIN && (phase > ES_JOB_TRAIN || counters->job_level < levels)) {
        es_job_piece(model, task);
    }
    if (phase == ES_JOB_WEIGHTS && counters->phase == ES_JOB_TERMS) {
        es_job_piece(model, task);
    }
}

static void es_rebuild(const es_shrubs *model, const es_shrubs_task *task)
{
    const es_shrubs_config *config = model->config;
    es_shrubs_counters *counters = model->counters;
    const uint32_t slots = config->max_shrubs + 1u;
    const uint32_t window = config->window_size, n = counters->count;
    es_pair_step *pair_update;
    uint32_t i, row;
    for (i = 0; i < (uint32_t)config->n_features * window; i++) {
        model->sorted_rows[i] = 0;
    }
    for (i = 0; i < window * slots; i++) {
        model->leaf_index[i] = 0;
    }
    for (i = 0; i < window; i++) {
        model->node_of[i] = 0;
    }
    for (i = 0; i < ((uint32_t)config->n_classes << config->max_depth); i++) {
        model->split_counts[i] = 0;
    }
    for (i = 0; i < slots * slots; i++) {
        model->gram[i] = 0;
    }
    for (i = 0; i < slots; i++) {
        model->label_sum[i] = 0;
        model->work_weights[i] = 0;
    }
    es_active_slots(model);
    for (row = 0; row < n; row++) {  /* the window's rows in order, as if learned into an empty window */
        counters->count = (uint16_t)row;
        es_insert_row(model, row, row);
        es_row_leaves(model, row, &model->work_weights[slots]);
        es_flash_copy(&pair_update, &task->pair_update, sizeof pair_update);
        pair_update(model, row, &model->work_weights[slots], 0, model->work_weights, 0);
    }
    counters->count = (uint16_t)n;
    es_replay_job(model, task);
}

void es_shrubs_rebuild(const es_shrubs *model)
{
    es_rebuild(model, &es_classifier_steps);
}

void es_shrubs_rebuild_target(const es_shrubs *model)
{
    es_rebuild(model, &es_regressor_steps);
}
