/* Fast exact inference for frozen tree models: edgestream/encoding.py is the specification, to the bit.
 *
 * No quantization: each internal node compares the raw input with its edge and goes left iff x[f] <= edge
 * (NaN compares false and goes right; -0.0 == +0.0), which is the bin rule of es_tree.c with the edge of the
 * bin threshold. Only internal nodes are stored, as a structure of arrays; leaves are folded into the child refs
 * of their parent: in tree t (nodes tree_base[t] .. tree_base[t + 1] - 1), ref r is internal node r of the
 * tree if r < n_internal, else leaf slot r - n_internal. Ref 0 is the root.
 *
 * Complete layout (ES_LAYOUT_COMPLETE, for shallow trees): every tree is the complete binary tree of depth
 * `depth` in heap order, 2^depth - 1 internal positions per tree (feature, inline threshold; position i has
 * children 2i + 1 and 2i + 2) and 2^depth leaf slots (children: uint8, or uint16 with ES_LAYOUT_CHILD16).
 * Shallower leaves are padded (their slot fills every bottom position under them), so the walk is exactly
 * `depth` steps i = 2i + 1 + !(x[f] <= e) with no child loads, then slot i - (2^depth - 1).
 *
 * NaN-left flags (ES_LAYOUT_NAN_LEFT, float inputs; models imported from elsewhere): a flagged node sends NaN
 * left: it goes left iff x[f] <= edge or x[f] is NaN. The flags are bits after the feature table: bit (g & 7) of
 * feature[n_nodes + (g >> 3)] for internal node g counted over all trees (n_nodes = tree_base[n_trees]).
 *
 * Leaf kinds (leaf_kind): ES_LEAVES_CLASS (the slot is the class: a hard vote), ES_LEAVES_Q8 (uint8 rows,
 * 1.0 == 128), ES_LEAVES_Q15 (uint16 rows), all combined by weighted vote into Q15 probabilities:
 * acc[k] = sum_t w_t * q15_t[k], proba[k] = (acc[k] + W / 2) / W, class = first largest proba;
 * ES_LEAVES_ADDITIVE (int16 score rows): sum[k] = base_score[k] + sum_t row_t[k] (int32), class = first largest
 * sum (or sum[0] > 0 with one score), probabilities by es_additive_proba (es_fixed.c) of the sums rounded to
 * Q10 from their 10 + score_shift fraction bits (floor((s + 2^(shift-1)) / 2^shift)).
 *
 * Inline code (a bundle exported with --optimize speed): the bundle's own walk function compares the raw inputs with
 * constants in nested ifs and adds each leaf's terms to the accumulators itself (the integers es_forest_add_leaf
 * adds from a leaf table); es_forest_predict_inline starts the accumulators, calls it and finishes as above. The
 * feature, threshold, edges, children, tree_base and leaves tables are then not used (NULL).
 *
 * The tables and sizes are arguments (an es_forest), so one compiled runtime serves every model; a generated
 * bundle only adds const tables, an es_infer_config.h and thin wrappers. The es_forest and every table it points
 * to are constant data defined with ES_FLASH (es_flash.h): on AVR they stay in program memory and are read with
 * pgm_read_*, so the caller's es_forest must be in flash there too; elsewhere they are plain const data.
 */
#ifndef ES_INFER_H
#define ES_INFER_H

#include "es_common.h"

/* es_forest.layout bits */
#define ES_LAYOUT_CHILD16 1u   /* child refs are uint16 (else uint8) */
#define ES_LAYOUT_INDEX 2u     /* thresholds are indices into edges (else the edge values inline) */
#define ES_LAYOUT_INDEX16 4u   /* ... uint16 indices (else uint8) */
#define ES_LAYOUT_COMPLETE 8u  /* complete trees of `depth` in heap order, inline thresholds, leaf slots */
#define ES_LAYOUT_NAN_LEFT 16u /* NaN-left flag bits follow the feature table (float inputs) */

#define ES_COMPLETE_MAX_DEPTH 10u
#define ES_MAX_SCORE_SHIFT 20u

/* es_forest.leaf_kind */
#define ES_LEAVES_CLASS 0u
#define ES_LEAVES_Q8 1u
#define ES_LEAVES_Q15 2u
#define ES_LEAVES_ADDITIVE 3u

typedef struct {
    const uint8_t *feature;     /* per internal node */
    const void *threshold;      /* per internal node: edge values (input type) or uint8/uint16 edge indices */
    const void *edges;          /* ES_LAYOUT_INDEX: the distinct edges (input type); else unused */
    const void *children;       /* 2 refs per internal node (left, right), uint8 or uint16; complete: leaf slots */
    const uint16_t *tree_base;  /* n_trees + 1: first internal node of each tree, then the node count */
    const uint16_t *weights;    /* per tree; NULL: every weight is 1 (unused for additive leaves) */
    const void *leaves;         /* uint8 Q8 / uint16 Q15 / int16 score rows of n_scores; NULL for class leaves */
    const int32_t *base_score;  /* additive: n_scores */
    uint16_t total_weight;      /* sum of the weights (1..65535) */
    uint16_t n_trees;
    uint8_t n_features;
    uint8_t n_classes;
    uint8_t n_scores;           /* values per leaf row: n_classes, or 1 for a binary additive model */
    uint8_t layout;
    uint8_t leaf_kind;
    uint8_t depth;              /* ES_LAYOUT_COMPLETE: depth of every tree (0..ES_COMPLETE_MAX_DEPTH); else 0 */
    uint8_t score_shift;        /* additive: fraction bits of the scores beyond Q10 (0..ES_MAX_SCORE_SHIFT) */
} es_forest;

/* Q15 probabilities into proba[n_classes] and the class into *class_out (either may be NULL); scratch is
 * caller-provided: n_classes entries, or 2 * n_scores for additive leaves. One function per input type.
 * With additive leaves and proba NULL, scratch[0 .. n_scores) holds the sums after the call: a regressor's raw
 * output is scratch[0] (edgestream/task.py). */
es_status es_forest_predict_f32(const es_forest *model, const float *x, int32_t *scratch, uint16_t *proba,
                                uint8_t *class_out);
es_status es_forest_predict_i32(const es_forest *model, const int32_t *x, int32_t *scratch, uint16_t *proba,
                                uint8_t *class_out);
es_status es_forest_predict_i16(const es_forest *model, const int16_t *x, int32_t *scratch, uint16_t *proba,
                                uint8_t *class_out);

/* x <= e on float32 by the bit patterns as sign-magnitude integers (no float arithmetic): exact, NaN x is
 * false, -0.0 == +0.0. Used for float inputs on cores without an FPU (ES_F32_COMPARE_BITS). */
int es_f32_le_bits(float x, float e);

/* Float compares on cores without an FPU (a soft-float compare is a library call) go by the bit patterns. */
#ifndef ES_F32_COMPARE_BITS
#if defined(__arm__) && !defined(__ARM_FP)
#define ES_F32_COMPARE_BITS 1
#else
#define ES_F32_COMPARE_BITS 0
#endif
#endif

/* The comparison key of a float32: its bits as a sign-magnitude integer (-0.0 and +0.0 both 0), NaN
 * ES_F32_KEY_NAN above every other key: key(x) <= key(e) iff x <= e for every non-NaN e. */
#define ES_F32_KEY_NAN INT32_MAX
int32_t es_f32_key(float x);

/* Between two trees of inline code: the compiler may no longer assume what the inputs (or their keys) hold, so it
 * lays out every tree's comparisons on their own instead of threading one tree's leaves into the next tree's
 * branches, which copies blocks: with it the code grows tree by tree, as the budget bounds it. GCC and clang (the
 * toolchains the budget compiles with); elsewhere nothing. */
#if defined(__GNUC__)
#define ES_TREE_BOUNDARY(p) __asm__ __volatile__("" : : "r"(p) : "memory")
#else
#define ES_TREE_BOUNDARY(p) ((void)(p))
#endif

/* The walk of inline code is one large function of comparisons and branches, each instruction run at most once per
 * call: on a host core its speed is bound by instruction fetch (the bytes of its code), not by its instruction count,
 * so GCC compiles it for size whatever the -O level of the build (microcontroller builds are -Os already: no change
 * there). For size also means no straight-line vectorization, which packs a leaf's adjacent additions into one wide
 * read-modify-write that the narrower stores of earlier leaves cannot forward to (a stall per leaf on x86-64). On
 * the host cores, no code hoisting either: it loads an accumulator that both sides of a branch add to before the
 * branch, and each side then adds and stores it, which takes more bytes than each side's one add to memory. */
#if defined(__GNUC__) && !defined(__clang__)
#if defined(__x86_64__) || defined(__aarch64__) || defined(__i386__)
#define ES_WALK_CODE __attribute__((optimize("Os", "no-code-hoisting")))
#else
#define ES_WALK_CODE __attribute__((optimize("Os")))
#endif
#else
#define ES_WALK_CODE
#endif

/* Inline code: walk(x, acc, model) adds every tree's leaf to acc (es_forest_add_leaf: tree t, leaf slot s). */
typedef void (*es_walk_fn)(const void *x, int32_t *acc, const es_forest *model);
es_status es_forest_predict_inline(const es_forest *model, es_walk_fn walk, const void *x, int32_t *scratch,
                                   uint16_t *proba, uint8_t *class_out);
void es_forest_add_leaf(const es_forest *model, uint16_t tree, uint16_t slot, int32_t *acc);

#endif
