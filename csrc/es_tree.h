/* The shared tree core of the device runtime: one node format and one prediction path for every tree
 * learner. edgestream/tree.py is the specification; this file follows it to the bit.
 *
 * A node sends a row to `child` when bins[feature] <= threshold and to `child + 1` otherwise; a leaf has
 * feature == ES_LEAF and `child` is its row in the Q15 leaf table. An ensemble combines trees with integer
 * weights: acc[k] = sum_t weight_t * leaf_t[k], proba[k] = (acc[k] + W / 2) / W with W = sum_t weight_t
 * (at most 65535, so acc fits in 32 bits), and the class is the first index of the largest proba.
 */
#ifndef ES_TREE_H
#define ES_TREE_H

#include "es_common.h"

typedef struct {
    uint8_t feature;
    uint8_t threshold;
    uint16_t child;
} es_node;

typedef struct {
    const es_node *nodes;
    const uint16_t *roots;       /* first node of each tree */
    const uint16_t *weights;     /* integer weight of each tree */
    const uint16_t *leaf_values; /* n_leaves x n_classes, Q15 */
    uint16_t n_trees;
    uint8_t n_features;
    uint8_t n_classes;
} es_ensemble;

/* Row of the leaf table that `bins` reaches in the tree starting at node `root`. */
uint16_t es_tree_leaf(const es_node *nodes, uint16_t root, const uint8_t *bins);

/* Q15 class probabilities into proba[n_classes]; acc[n_classes] is caller-provided scratch. */
es_status es_ensemble_predict_proba(const es_ensemble *model, const uint8_t *bins, uint32_t *acc,
                                    uint16_t *proba);

/* First index of the largest probability. */
uint8_t es_argmax(const uint16_t *proba, uint8_t n_classes);

/* The most probable class (first on ties); acc and proba are caller-provided scratch of n_classes. */
es_status es_ensemble_predict(const es_ensemble *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba,
                              uint8_t *class_out);

#endif
