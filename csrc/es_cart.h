/* CART on bins for the device: grows the trees that learners train on the device (shrubs). It follows
 * edgestream/_kernels.pyx (build_tree) to the bit: integer split criteria, breadth-first growth, ties to the
 * lowest feature and then the lowest threshold. No recursion and no memory beyond the caller's scratch. */
#ifndef ES_CART_H
#define ES_CART_H

#include "es_tree.h"

/* Settings and scratch of es_tree_build (CART on bins; see edgestream/_kernels.pyx for the exact rule). */
typedef struct {
    uint8_t criterion;         /* ES_GINI or ES_ENTROPY */
    uint8_t max_depth;
    uint16_t min_samples_leaf;
    uint16_t max_nodes;        /* node slots available to the tree */
} es_tree_params;

typedef struct {
    uint16_t *order;           /* n_rows: sample indices, partitioned per node */
    uint16_t *node_start;      /* max_nodes: first sample of each node in `order` */
    uint16_t *node_stop;       /* max_nodes: one past its last sample */
    uint8_t *node_depth;       /* max_nodes */
    uint32_t *class_counts;    /* n_classes */
    uint32_t *left_counts;     /* n_classes */
} es_tree_scratch;

#define ES_GINI 0u
#define ES_ENTROPY 1u

/* Grow a tree breadth first on rows of bins (n_rows x n_features) with labels < n_classes. Node i is
 * written to nodes[i] with children offset by node_offset, leaf j to leaf_values[j * n_classes] with leaf
 * indices offset by leaf_offset. Ties go to the lowest feature, then the lowest threshold. */
es_status es_tree_build(const uint8_t *bins, const uint8_t *labels, uint16_t n_rows, uint8_t n_features,
                        uint8_t n_classes, const es_tree_params *params, const es_tree_scratch *scratch,
                        es_node *nodes, uint16_t *leaf_values, uint16_t node_offset, uint16_t leaf_offset);

/* floor(log2(x) * 65536) up to the last bit, for x >= 1, in integers. */
uint32_t es_log2_q16(uint64_t x);

#endif
