#include "es_cart.h"

uint32_t es_log2_q16(uint64_t x)
{
    uint32_t exponent = 0;
    uint32_t result;
    uint64_t y = x;
    int bit;
    while (y >> 1) {
        y >>= 1;
        exponent++;
    }
    y = exponent <= 30u ? x << (30u - exponent) : x >> (exponent - 30u); /* mantissa in [1, 2), Q30 */
    result = exponent << 16;
    for (bit = 15; bit >= 0; bit--) {
        y = (y * y) >> 30;
        if (y >= ((uint64_t)2u << 30)) {
            y >>= 1;
            result += (uint32_t)1u << bit;
        }
    }
    return result;
}

static int64_t es_xlog2x(uint64_t c)
{
    return c > 1u ? (int64_t)(c * es_log2_q16(c)) : 0;
}

/* Score of one side of a split (larger is better) from its class counts: `counts - minus` when `minus` is
 * given (the right side, without storing its counts), `counts` otherwise. */
static int64_t es_side_score(uint8_t criterion, const uint32_t *counts, const uint32_t *minus, uint8_t n_classes,
                             uint64_t total)
{
    uint64_t squares = 0;
    int64_t entropy = criterion == ES_ENTROPY ? -es_xlog2x(total) : 0;
    uint8_t k;
    for (k = 0; k < n_classes; k++) {
        const uint64_t c = (uint64_t)counts[k] - (minus != 0 ? minus[k] : 0u);
        if (criterion == ES_ENTROPY) {
            entropy += es_xlog2x(c);
        } else {
            squares += c * c;
        }
    }
    if (criterion == ES_ENTROPY) {
        return entropy;
    }
    return (int64_t)(((squares / total) << 24) + (((squares % total) << 24) / total));
}

/* Sort order[start..stop) by the bin of `feature` (insertion sort: no recursion, no extra memory). */
static void es_sort_by_feature(uint16_t *order, uint16_t start, uint16_t stop, const uint8_t *bins,
                               uint8_t n_features, uint8_t feature)
{
    uint16_t i;
    for (i = (uint16_t)(start + 1u); i < stop; i++) {
        const uint16_t key = order[i];
        const uint8_t key_bin = bins[(uint32_t)key * n_features + feature];
        uint16_t j = i;
        while (j > start && bins[(uint32_t)order[j - 1u] * n_features + feature] > key_bin) {
            order[j] = order[j - 1u];
            j--;
        }
        order[j] = key;
    }
}

typedef struct {
    int64_t score;
    int feature; /* -1: no split better than the parent */
    uint8_t threshold;
} es_split;

/* Best split of one node over all features, scanning thresholds in ascending order (strict improvement). */
static es_split es_best_split(const uint8_t *bins, const uint8_t *labels, uint8_t n_features, uint8_t n_classes,
                              const es_tree_params *params, const es_tree_scratch *scratch, uint16_t start,
                              uint16_t stop, uint32_t total)
{
    es_split best;
    uint8_t f;
    uint8_t k;
    best.score = es_side_score(params->criterion, scratch->class_counts, 0, n_classes, total);
    best.feature = -1;
    best.threshold = 0;
    for (f = 0; f < n_features; f++) {
        uint32_t n_left = 0;
        uint16_t i = start;
        es_sort_by_feature(scratch->order, start, stop, bins, n_features, f);
        for (k = 0; k < n_classes; k++) {
            scratch->left_counts[k] = 0;
        }
        while (i < stop) {
            const uint8_t bin = bins[(uint32_t)scratch->order[i] * n_features + f];
            int64_t score;
            while (i < stop && bins[(uint32_t)scratch->order[i] * n_features + f] == bin) {
                scratch->left_counts[labels[scratch->order[i]]]++;
                n_left++;
                i++;
            }
            if (bin > 254u || total - n_left < params->min_samples_leaf) {
                break; /* threshold 255 does not exist; the right side only shrinks from here */
            }
            if (n_left < params->min_samples_leaf) {
                continue;
            }
            score = es_side_score(params->criterion, scratch->left_counts, 0, n_classes, n_left) +
                    es_side_score(params->criterion, scratch->class_counts, scratch->left_counts, n_classes,
                                  total - n_left);
            if (score > best.score) {
                best.score = score;
                best.feature = f;
                best.threshold = bin;
            }
        }
    }
    return best;
}

/* Move the samples of a node that go left (bin <= threshold) before those that go right; returns the split. */
static uint16_t es_partition(uint16_t *order, uint16_t start, uint16_t stop, const uint8_t *bins,
                             uint8_t n_features, uint8_t feature, uint8_t threshold)
{
    uint16_t a = start;
    uint16_t b = stop;
    while (a < b) {
        if (bins[(uint32_t)order[a] * n_features + feature] <= threshold) {
            a++;
        } else {
            const uint16_t swap = order[a];
            b--;
            order[a] = order[b];
            order[b] = swap;
        }
    }
    return a;
}

es_status es_tree_build(const uint8_t *bins, const uint8_t *labels, uint16_t n_rows, uint8_t n_features,
                        uint8_t n_classes, const es_tree_params *params, const es_tree_scratch *scratch,
                        es_node *nodes, uint16_t *leaf_values, uint16_t node_offset, uint16_t leaf_offset)
{
    uint16_t node;
    uint16_t n_nodes = 1;
    uint16_t n_leaves = 0;
    if (bins == 0 || labels == 0 || params == 0 || scratch == 0 || nodes == 0 || leaf_values == 0) {
        return ES_ERR_NULL;
    }
    if (n_rows == 0 || params->max_nodes == 0) {
        return ES_ERR_MODEL;
    }
    for (node = 0; node < n_rows; node++) {
        scratch->order[node] = node;
    }
    scratch->node_start[0] = 0;
    scratch->node_stop[0] = n_rows;
    scratch->node_depth[0] = 0;
    for (node = 0; node < n_nodes; node++) {
        const uint16_t start = scratch->node_start[node];
        const uint16_t stop = scratch->node_stop[node];
        uint32_t total = (uint32_t)(stop - start);
        uint8_t n_present = 0;
        uint8_t k;
        uint16_t i;
        es_split split;
        for (k = 0; k < n_classes; k++) {
            scratch->class_counts[k] = 0;
        }
        for (i = start; i < stop; i++) {
            scratch->class_counts[labels[scratch->order[i]]]++;
        }
        for (k = 0; k < n_classes; k++) {
            n_present = (uint8_t)(n_present + (scratch->class_counts[k] > 0u ? 1u : 0u));
        }
        split.feature = -1;
        if (scratch->node_depth[node] < params->max_depth && (uint32_t)n_nodes + 2u <= params->max_nodes &&
            n_present > 1u && total >= 2u * (uint32_t)params->min_samples_leaf) {
            split = es_best_split(bins, labels, n_features, n_classes, params, scratch, start, stop, total);
        }
        if (split.feature < 0) {
            nodes[node].feature = (uint8_t)ES_LEAF;
            nodes[node].threshold = 0;
            nodes[node].child = (uint16_t)(leaf_offset + n_leaves);
            for (k = 0; k < n_classes; k++) {
                leaf_values[(uint32_t)n_leaves * n_classes + k] =
                    (uint16_t)(((uint64_t)scratch->class_counts[k] * ES_Q15_ONE + total / 2u) / total);
            }
            n_leaves++;
        } else {
            const uint16_t middle = es_partition(scratch->order, start, stop, bins, n_features,
                                                 (uint8_t)split.feature, split.threshold);
            nodes[node].feature = (uint8_t)split.feature;
            nodes[node].threshold = split.threshold;
            nodes[node].child = (uint16_t)(node_offset + n_nodes);
            scratch->node_start[n_nodes] = start;
            scratch->node_stop[n_nodes] = middle;
            scratch->node_start[n_nodes + 1u] = middle;
            scratch->node_stop[n_nodes + 1u] = stop;
            scratch->node_depth[n_nodes] = (uint8_t)(scratch->node_depth[node] + 1u);
            scratch->node_depth[n_nodes + 1u] = (uint8_t)(scratch->node_depth[node] + 1u);
            n_nodes = (uint16_t)(n_nodes + 2u);
        }
    }
    return ES_OK;
}
