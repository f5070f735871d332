#include "es_infer.h"

#include <string.h>

#include "es_flash.h"
#include "es_infer_config.h"

/* ------------------------------------------------------------------------------------------ configuration */

#ifndef ES_INFER_ALL
#define ES_INFER_ALL 0
#endif

/* Float compares: the FPU's when there is one; on cores without, ES_F32_COMPARE_BITS (es_infer.h): the bit
 * patterns as sign-magnitude integers, which is the same relation. */

#if ES_INFER_ALL
#define ES_KIND(m) ((m)->leaf_kind)
#define ES_HAS_CLASS 1
#define ES_HAS_Q8 1
#define ES_HAS_Q15 1
#define ES_HAS_ADDITIVE 1
#else
#define ES_HAS_CLASS (ES_INFER_CLASS + 0)
#define ES_HAS_Q8 (ES_INFER_Q8 + 0)
#define ES_HAS_Q15 (ES_INFER_Q15 + 0)
#define ES_HAS_ADDITIVE (ES_INFER_ADDITIVE + 0)
#if ES_HAS_CLASS
#define ES_KIND(m) ES_LEAVES_CLASS
#elif ES_HAS_Q8
#define ES_KIND(m) ES_LEAVES_Q8
#elif ES_HAS_Q15
#define ES_KIND(m) ES_LEAVES_Q15
#else
#define ES_KIND(m) ES_LEAVES_ADDITIVE
#endif
#endif

#if ES_HAS_ADDITIVE
#include "es_fixed.h"
#endif

#if ES_INFER_ALL || !defined(ES_INFER_UNWEIGHTED)
#define ES_WEIGHT(m, t) ((m)->weights != 0 ? (int32_t)es_flash_u16(&(m)->weights[(t)]) : 1)
#else
#define ES_WEIGHT(m, t) 1
#endif

/* ------------------------------------------------------------------------------------------ compares */

#if ES_INFER_ALL || ((ES_INFER_F32 + 0) && ES_F32_COMPARE_BITS)
static int es_isnan_bits(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    return (u & 0x7fffffffu) > 0x7f800000u;
}

static int es_le_bits(float a, float b)
{
    uint32_t u, v;
    int32_t ka, kb;
    memcpy(&u, &a, sizeof u);
    memcpy(&v, &b, sizeof v);
    if (es_isnan_bits(a)) {
        return 0; /* NaN goes right; edges are never NaN */
    }
    ka = (u & 0x80000000u) != 0u ? -(int32_t)(u & 0x7fffffffu) : (int32_t)u;
    kb = (v & 0x80000000u) != 0u ? -(int32_t)(v & 0x7fffffffu) : (int32_t)v;
    return ka <= kb;
}

int es_f32_le_bits(float x, float e)
{
    return es_le_bits(x, e);
}
#endif

#if ES_INFER_ALL || ((ES_INFER_INLINE + 0) && (ES_INFER_F32 + 0) && ES_F32_COMPARE_BITS)
int32_t es_f32_key(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return ES_F32_KEY_NAN;
    }
    return (u & 0x80000000u) != 0u ? -(int32_t)(u & 0x7fffffffu) : (int32_t)u;
}
#endif

#if ES_F32_COMPARE_BITS
#define ES_LE_F32(a, b) es_le_bits((a), (b))
#define ES_ISNAN_F32(a) es_isnan_bits(a)
#else
#define ES_LE_F32(a, b) ((a) <= (b))
#define ES_ISNAN_F32(a) ((a) != (a))
#endif
#define ES_LE_INT(a, b) ((a) <= (b))

/* Go left at node g (counted over all trees): LEFT(x value, edge, g). Nodes flagged in nan_bits (the walkers'
 * local, see ES_LAYOUT_NAN_LEFT) also send NaN left. */
#define ES_LEFT_F32(a, b, g) ES_LE_F32(a, b)
#define ES_LEFT_INT(a, b, g) ES_LE_INT(a, b)
#define ES_NAN_BIT(g) ((es_flash_u8(&nan_bits[(g) >> 3]) >> ((g) & 7u)) & 1u)
#define ES_LEFT_NAN(a, b, g) (ES_LE_F32(a, b) || (ES_NAN_BIT(g) != 0u && ES_ISNAN_F32(a)))
/* the NaN-left bits of a walker (NAN: 1 for the flagged variants, else 0 and never read) */
#define ES_NAN_BITS(m, NAN) ((NAN) ? (m)->feature + es_flash_u16(&(m)->tree_base[(m)->n_trees]) : 0)

/* ------------------------------------------------------------------------------------------ table reads */

/* Every table of an es_forest (and the es_forest itself) is constant data in flash: read through es_flash.h. */
#define ES_RD_uint8_t es_flash_u8
#define ES_RD_uint16_t es_flash_u16
#define ES_RD_int16_t es_flash_i16
#define ES_RD_int32_t es_flash_i32
#define ES_RD_float es_flash_f32
#define ES_READ(T, p) ES_READ_(T, p) /* the T at address p */
#define ES_READ_(T, p) ES_RD_##T(p)

/* ------------------------------------------------------------------------------------------ leaves */

/* acc[k] += w * row[k] for k < n (row: T values in flash), four at a time (fewer loop tests; compilers pack the
 * four into vector adds) */
#define ES_TERM(w, T, row, k) ((w) * (int32_t)ES_READ(T, &(row)[(k)]))
#define ES_ADD_ROW(acc, w, T, row, n)                    \
    do {                                                 \
        for (k = 0; k + 4u <= (n); k += 4u) {            \
            acc[k] += ES_TERM(w, T, row, k);             \
            acc[k + 1u] += ES_TERM(w, T, row, k + 1u);   \
            acc[k + 2u] += ES_TERM(w, T, row, k + 2u);   \
            acc[k + 3u] += ES_TERM(w, T, row, k + 3u);   \
        }                                                \
        for (; k < (n); k++) {                           \
            acc[k] += ES_TERM(w, T, row, k);             \
        }                                                \
    } while (0)

static inline void es_add_leaf(const es_forest *m, uint16_t t, uint16_t slot, int32_t *acc)
{
    /* n_scores in a local: acc stores could alias the uint8_t field, which would be reloaded every step */
    const uint32_t n = m->n_scores;
    uint32_t k;
    (void)k;
    (void)n;
    (void)t;
    (void)m;
    switch (ES_KIND(m)) {
#if ES_HAS_CLASS
    case ES_LEAVES_CLASS:
        acc[slot] += ES_WEIGHT(m, t);
        break;
#endif
#if ES_HAS_Q8
    case ES_LEAVES_Q8: {
        const int32_t w = ES_WEIGHT(m, t);
        const uint8_t *row = (const uint8_t *)m->leaves + (uint32_t)slot * n;
        ES_ADD_ROW(acc, w, uint8_t, row, n);
        break;
    }
#endif
#if ES_HAS_Q15
    case ES_LEAVES_Q15: {
        const int32_t w = ES_WEIGHT(m, t);
        const uint16_t *row = (const uint16_t *)m->leaves + (uint32_t)slot * n;
        ES_ADD_ROW(acc, w, uint16_t, row, n);
        break;
    }
#endif
#if ES_HAS_ADDITIVE
    case ES_LEAVES_ADDITIVE: {
        const int16_t *row = (const int16_t *)m->leaves + (uint32_t)slot * n;
        ES_ADD_ROW(acc, 1, int16_t, row, n);
        break;
    }
#endif
    default:
        break;
    }
}


/* Zeroing a few accumulators inline: GCC would turn the loop into a memset call, which costs more than the loop
 * for ten classes on small cores (and is counted in every prediction). */
#if defined(__GNUC__) && !defined(__clang__)
#define ES_INLINE_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define ES_INLINE_LOOPS
#endif

#if ES_HAS_ADDITIVE
/* s = floor((s + 2^(shift-1)) / 2^shift), computed on the offset value u = s + 2^31 in uint32 (exact, no
 * overflow, no shift of a negative value): floor((u + 2^(shift-1)) / 2^shift) - 2^(31-shift). */
static void es_shift_scores(int32_t *s, uint32_t n, unsigned shift)
{
    uint32_t k;
    for (k = 0; shift != 0u && k < n; k++) {
        const uint32_t u = (uint32_t)s[k] ^ 0x80000000u;
        s[k] = (int32_t)(u >> shift) - (int32_t)(0x80000000u >> shift) + (int32_t)((u >> (shift - 1u)) & 1u);
    }
}
#endif

ES_INLINE_LOOPS static void es_start(const es_forest *m, int32_t *acc)
{
    uint8_t k;
#if ES_HAS_ADDITIVE
    if (ES_KIND(m) == ES_LEAVES_ADDITIVE) {
        for (k = 0; k < m->n_scores; k++) {
            acc[k] = es_flash_i32(&m->base_score[k]);
        }
        return;
    }
#endif
    for (k = 0; k < m->n_classes; k++) {
        acc[k] = 0;
    }
}

static es_status es_finish(const es_forest *m, int32_t *acc, uint16_t *proba, uint8_t *class_out)
{
    uint8_t k, best = 0;
#if ES_HAS_ADDITIVE
    if (ES_KIND(m) == ES_LEAVES_ADDITIVE) {
        if (m->n_scores == 1u) {
            best = acc[0] > 0 ? 1u : 0u;
        } else {
            for (k = 1; k < m->n_scores; k++) {
                if (acc[k] > acc[best]) {
                    best = k;
                }
            }
        }
        if (proba != 0) {
            /* scratch holds 2 * n_scores: the sums, then the softmax's work (int32 and uint32 may alias) */
            es_status status;
            es_shift_scores(acc, m->n_scores, m->score_shift);
            status = es_additive_proba(acc, m->n_scores, (uint32_t *)&acc[m->n_scores], proba);
            if (status != ES_OK) {
                return status;
            }
        }
    } else
#endif
    {
        const uint32_t total = m->total_weight;
        const unsigned shift = ES_KIND(m) == ES_LEAVES_CLASS ? 15u : ES_KIND(m) == ES_LEAVES_Q8 ? 8u : 0u;
        uint16_t best_p = 0;
        if (total == 0u) {
            return ES_ERR_MODEL;
        }
        if (proba == 0 && (1u << shift) >= total) {
            /* The class alone, no division: distinct acc_k differ by at least W after the shift, so p_k keeps
             * the order of acc_k and the first largest acc_k is the first largest p_k. */
            for (k = 1; k < m->n_classes; k++) {
                if (acc[k] > acc[best]) {
                    best = k;
                }
            }
        } else if (proba == 0) {
            /* The class alone: p_k = ((acc_k << shift) + W / 2) / W never exceeds p_max = p(max acc), and
             * p_k == p_max iff (acc_k << shift) + W / 2 >= p_max * W (one division). A class whose
             * acc_k << shift is W or more below the largest's has a smaller p_k. The classes before the first
             * largest acc_k are at most `below`, the largest of them (the top before the last rise): when it is
             * that far below, the first largest is the class, without the division and without a second pass. */
            uint32_t top = (uint32_t)acc[0], below = 0, bound;
            uint8_t first = 0;
            for (k = 1; k < m->n_classes; k++) {
                const uint32_t a = (uint32_t)acc[k];
                const int rise = a > top; /* selects, not a branch: which class leads is data */
                below = rise ? top : below;
                first = rise ? k : first;
                top = rise ? a : top;
            }
            k = first;
            if (first != 0u && (top << shift) - (below << shift) < total) {
                bound = (((top << shift) + total / 2u) / total) * total;
                for (k = 0; ((uint32_t)acc[k] << shift) + total / 2u < bound; k++) {
                }
            }
            best = k;
        }
        for (k = 0; proba != 0 && k < m->n_classes; k++) {
            const uint16_t p = (uint16_t)((((uint32_t)acc[k] << shift) + total / 2u) / total);
            if (proba != 0) {
                proba[k] = p;
            }
            if (k == 0u || p > best_p) {
                best = k;
                best_p = p;
            }
        }
    }
    if (class_out != 0) {
        *class_out = best;
    }
    return ES_OK;
}

/* ------------------------------------------------------------------------------------------ walkers */

#define ES_EDGE_INLINE(X_T, THR_T, i) ES_READ(X_T, &thr[(i)])
#define ES_EDGE_INDEX(X_T, THR_T, i) ES_READ(X_T, &edges[ES_READ(THR_T, &thr[(i)])])

#define ES_WALK(NAME, X_T, C_T, THR_T, EDGE, LEFT, NAN)                                         \
    static void NAME(const es_forest *m, const X_T *x, int32_t *acc)                            \
    {                                                                                            \
        const uint8_t *feature = m->feature;                                                     \
        const uint8_t *nan_bits = ES_NAN_BITS(m, NAN);                                           \
        const THR_T *thr = (const THR_T *)m->threshold;                                         \
        const C_T *child = (const C_T *)m->children;                                            \
        const X_T *edges = (const X_T *)m->edges;                                               \
        const uint16_t *end = m->tree_base + 1;                                                  \
        const uint16_t *stop = end + m->n_trees;                                                 \
        uint32_t first = es_flash_u16(m->tree_base);                                             \
        (void)edges;                                                                             \
        (void)nan_bits;                                                                          \
        feature += first;                                                                        \
        thr += first;                                                                            \
        child += 2u * first;                                                                     \
        for (; end != stop; end++) {                                                             \
            const uint32_t n_internal = (uint32_t)es_flash_u16(end) - first;                     \
            uint32_t i = 0;                                                                      \
            if (n_internal != 0u) {                                                              \
                do {                                                                             \
                    i = ES_READ(C_T, &child[2u * i + (LEFT(x[es_flash_u8(&feature[i])],          \
                                                            EDGE(X_T, THR_T, i),                 \
                                                            (size_t)(feature - m->feature) + i)  \
                                                       ? 0u : 1u)]);                             \
                } while (i < n_internal);                                                        \
            }                                                                                    \
            es_add_leaf(m, (uint16_t)(end - m->tree_base - 1), (uint16_t)(i - n_internal), acc); \
            feature += n_internal;                                                               \
            thr += n_internal;                                                                   \
            child += 2u * n_internal;                                                            \
            first = es_flash_u16(end);                                                           \
        }                                                                                        \
    }

/* Complete layout: `depth` unrolled steps (a switch entering at the model's depth, falling through), no
 * child loads, no exit test; the step is branch-free: i = 2i + 2 - (x[f] <= e). On cores that run
 * instructions out of order, ES_INFER_WAYS trees are walked level by level together (independent load chains
 * overlap); the leaves are still added in tree order, so every way gives the same integers. */
#ifndef ES_INFER_WAYS
#if defined(__x86_64__) || defined(__aarch64__) || defined(__i386__)
#define ES_INFER_WAYS 4
#else
#define ES_INFER_WAYS 1
#endif
#endif

#define ES_STEP(LE, X_T) \
    i = 2u * i + 2u - (size_t)(LE(x[es_flash_u8(&feature[i])], ES_READ(X_T, &thr[i]), (size_t)(feature - m->feature) + i))

/* Four trees at once, indices relative to the first one's tables: tree k's node a = k n + i has its children at
 * k n + 2i + 1 + r = 2a + (2 - k n) - (x <= e) (size_t arithmetic, wrapping), then slot a + k - n. */
#define ES_STEP_FROM(LE, X_T, A, C) \
    A = 2u * A + (C) - (size_t)(LE(x[es_flash_u8(&feature[A])], ES_READ(X_T, &thr[A]), (size_t)(feature - m->feature) + A))

#if ES_INFER_WAYS == 4
#define ES_WAYS_GROUP(LE, X_T, S_T)                                                                     \
    for (; t + 4u <= m->n_trees; t += 4u) {                                                     \
        size_t a0 = 0, a1 = n_nodes, a2 = 2u * n_nodes, a3 = 3u * n_nodes;                      \
        const size_t c1 = 2u - n_nodes, c2 = 2u - 2u * n_nodes, c3 = 2u - 3u * n_nodes;         \
        unsigned d;                                                                             \
        for (d = 0; d < depth; d++) {                                                           \
            ES_STEP_FROM(LE, X_T, a0, 2u);                                                           \
            ES_STEP_FROM(LE, X_T, a1, c1);                                                           \
            ES_STEP_FROM(LE, X_T, a2, c2);                                                           \
            ES_STEP_FROM(LE, X_T, a3, c3);                                                           \
        }                                                                                       \
        es_add_leaf(m, t, (uint16_t)ES_READ(S_T, &slot[a0 - n_nodes]), acc);                                   \
        es_add_leaf(m, (uint16_t)(t + 1u), (uint16_t)ES_READ(S_T, &slot[a1 + 1u - n_nodes]), acc);             \
        es_add_leaf(m, (uint16_t)(t + 2u), (uint16_t)ES_READ(S_T, &slot[a2 + 2u - n_nodes]), acc);             \
        es_add_leaf(m, (uint16_t)(t + 3u), (uint16_t)ES_READ(S_T, &slot[a3 + 3u - n_nodes]), acc);             \
        feature += 4u * n_nodes;                                                                \
        thr += 4u * n_nodes;                                                                    \
        slot += 4u * (n_nodes + 1u);                                                            \
    }
#else
#define ES_WAYS_GROUP(LE, X_T, S_T)
#endif

#define ES_WALK_COMPLETE(NAME, X_T, S_T, LE, NAN)                                               \
    static void NAME(const es_forest *m, const X_T *x, int32_t *acc)                           \
    {                                                                                           \
        const uint8_t *feature = m->feature;                                                    \
        const uint8_t *nan_bits = ES_NAN_BITS(m, NAN);                                          \
        const X_T *thr = (const X_T *)m->threshold;                                            \
        const S_T *slot = (const S_T *)m->children;                                            \
        const size_t n_nodes = ((size_t)1 << m->depth) - 1u;                                    \
        const unsigned depth = m->depth;                                                        \
        uint16_t t = 0;                                                                         \
        (void)nan_bits;                                                                         \
        ES_WAYS_GROUP(LE, X_T, S_T)                                                                      \
        for (; t < m->n_trees; t++) {                                                           \
            size_t i = 0;                                                                       \
            switch (depth) {                                                                    \
            case 10: ES_STEP(LE, X_T); /* fall through */                                            \
            case 9: ES_STEP(LE, X_T); /* fall through */                                             \
            case 8: ES_STEP(LE, X_T); /* fall through */                                             \
            case 7: ES_STEP(LE, X_T); /* fall through */                                             \
            case 6: ES_STEP(LE, X_T); /* fall through */                                             \
            case 5: ES_STEP(LE, X_T); /* fall through */                                             \
            case 4: ES_STEP(LE, X_T); /* fall through */                                             \
            case 3: ES_STEP(LE, X_T); /* fall through */                                             \
            case 2: ES_STEP(LE, X_T); /* fall through */                                             \
            case 1: ES_STEP(LE, X_T); /* fall through */                                             \
            default: break;                                                                     \
            }                                                                                   \
            es_add_leaf(m, t, (uint16_t)ES_READ(S_T, &slot[i - n_nodes]), acc);                                \
            feature += n_nodes;                                                                 \
            thr += n_nodes;                                                                     \
            slot += n_nodes + 1u;                                                               \
        }                                                                                       \
    }

/* Layout codes: 0 uint8 refs inline, 1 uint16 refs inline, 2/3 uint8 indices, 6/7 uint16 indices, 8/9 complete;
 * plus 16 with NaN-left flags (float inputs only). */
#define ES_USE(IN, L) (ES_INFER_ALL || ((IN) && (L)))
#define ES_IN_F32 (ES_INFER_F32 + 0)
#define ES_IN_I32 (ES_INFER_I32 + 0)
#define ES_IN_I16 (ES_INFER_I16 + 0)
#define ES_L0 (ES_INFER_L0 + 0)
#define ES_L1 (ES_INFER_L1 + 0)
#define ES_L2 (ES_INFER_L2 + 0)
#define ES_L3 (ES_INFER_L3 + 0)
#define ES_L6 (ES_INFER_L6 + 0)
#define ES_L7 (ES_INFER_L7 + 0)
#define ES_L8 (ES_INFER_L8 + 0)
#define ES_L9 (ES_INFER_L9 + 0)
#define ES_L16 (ES_INFER_L16 + 0)
#define ES_L17 (ES_INFER_L17 + 0)
#define ES_L18 (ES_INFER_L18 + 0)
#define ES_L19 (ES_INFER_L19 + 0)
#define ES_L22 (ES_INFER_L22 + 0)
#define ES_L23 (ES_INFER_L23 + 0)
#define ES_L24 (ES_INFER_L24 + 0)
#define ES_L25 (ES_INFER_L25 + 0)

#if ES_USE(ES_IN_F32, ES_L0)
ES_WALK(es_walk_f32_0, float, uint8_t, float, ES_EDGE_INLINE, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L1)
ES_WALK(es_walk_f32_1, float, uint16_t, float, ES_EDGE_INLINE, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L2)
ES_WALK(es_walk_f32_2, float, uint8_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L3)
ES_WALK(es_walk_f32_3, float, uint16_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L6)
ES_WALK(es_walk_f32_6, float, uint8_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L7)
ES_WALK(es_walk_f32_7, float, uint16_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L8)
ES_WALK_COMPLETE(es_walk_f32_8, float, uint8_t, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L9)
ES_WALK_COMPLETE(es_walk_f32_9, float, uint16_t, ES_LEFT_F32, 0)
#endif
#if ES_USE(ES_IN_F32, ES_L16)
ES_WALK(es_walk_f32_16, float, uint8_t, float, ES_EDGE_INLINE, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L17)
ES_WALK(es_walk_f32_17, float, uint16_t, float, ES_EDGE_INLINE, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L18)
ES_WALK(es_walk_f32_18, float, uint8_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L19)
ES_WALK(es_walk_f32_19, float, uint16_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L22)
ES_WALK(es_walk_f32_22, float, uint8_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L23)
ES_WALK(es_walk_f32_23, float, uint16_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L24)
ES_WALK_COMPLETE(es_walk_f32_24, float, uint8_t, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_F32, ES_L25)
ES_WALK_COMPLETE(es_walk_f32_25, float, uint16_t, ES_LEFT_NAN, 1)
#endif
#if ES_USE(ES_IN_I32, ES_L0)
ES_WALK(es_walk_i32_0, int32_t, uint8_t, int32_t, ES_EDGE_INLINE, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L1)
ES_WALK(es_walk_i32_1, int32_t, uint16_t, int32_t, ES_EDGE_INLINE, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L2)
ES_WALK(es_walk_i32_2, int32_t, uint8_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L3)
ES_WALK(es_walk_i32_3, int32_t, uint16_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L6)
ES_WALK(es_walk_i32_6, int32_t, uint8_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L7)
ES_WALK(es_walk_i32_7, int32_t, uint16_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L8)
ES_WALK_COMPLETE(es_walk_i32_8, int32_t, uint8_t, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I32, ES_L9)
ES_WALK_COMPLETE(es_walk_i32_9, int32_t, uint16_t, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L0)
ES_WALK(es_walk_i16_0, int16_t, uint8_t, int16_t, ES_EDGE_INLINE, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L1)
ES_WALK(es_walk_i16_1, int16_t, uint16_t, int16_t, ES_EDGE_INLINE, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L2)
ES_WALK(es_walk_i16_2, int16_t, uint8_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L3)
ES_WALK(es_walk_i16_3, int16_t, uint16_t, uint8_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L6)
ES_WALK(es_walk_i16_6, int16_t, uint8_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L7)
ES_WALK(es_walk_i16_7, int16_t, uint16_t, uint16_t, ES_EDGE_INDEX, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L8)
ES_WALK_COMPLETE(es_walk_i16_8, int16_t, uint8_t, ES_LEFT_INT, 0)
#endif
#if ES_USE(ES_IN_I16, ES_L9)
ES_WALK_COMPLETE(es_walk_i16_9, int16_t, uint16_t, ES_LEFT_INT, 0)
#endif

/* ------------------------------------------------------------------------------------------ entry points */

/* The descriptor: read in place, or copied to *copy where flash is not addressed like RAM (AVR). */
static const es_forest *es_descriptor(const es_forest *model, es_forest *copy)
{
#if ES_FLASH_SEPARATE
    if (model != 0) {
        es_flash_copy(copy, model, sizeof *copy);
        return copy;
    }
#endif
    (void)copy;
    return model;
}

static es_status es_check(const es_forest *m, const void *x, const int32_t *acc)
{
    if (m == 0 || x == 0 || acc == 0) {
        return ES_ERR_NULL;
    }
    if (m->leaf_kind != ES_KIND(m) || m->depth > ES_COMPLETE_MAX_DEPTH || m->score_shift > ES_MAX_SCORE_SHIFT) {
        return ES_ERR_MODEL;
    }
    return ES_OK;
}

#define ES_CASE(IN, L, WALKER) \
    case L:                    \
        WALKER(model, x, scratch); \
        break;

#if ES_INFER_ALL || ES_IN_F32
es_status es_forest_predict_f32(const es_forest *model, const float *x, int32_t *scratch, uint16_t *proba,
                                uint8_t *class_out)
{
    es_forest copy;
    es_status status;
    model = es_descriptor(model, &copy);
    status = es_check(model, x, scratch);
    if (status != ES_OK) {
        return status;
    }
    es_start(model, scratch);
    switch (model->layout) {
#if ES_USE(ES_IN_F32, ES_L0)
    ES_CASE(ES_IN_F32, 0u, es_walk_f32_0)
#endif
#if ES_USE(ES_IN_F32, ES_L1)
    ES_CASE(ES_IN_F32, 1u, es_walk_f32_1)
#endif
#if ES_USE(ES_IN_F32, ES_L2)
    ES_CASE(ES_IN_F32, 2u, es_walk_f32_2)
#endif
#if ES_USE(ES_IN_F32, ES_L3)
    ES_CASE(ES_IN_F32, 3u, es_walk_f32_3)
#endif
#if ES_USE(ES_IN_F32, ES_L6)
    ES_CASE(ES_IN_F32, 6u, es_walk_f32_6)
#endif
#if ES_USE(ES_IN_F32, ES_L7)
    ES_CASE(ES_IN_F32, 7u, es_walk_f32_7)
#endif
#if ES_USE(ES_IN_F32, ES_L8)
    ES_CASE(ES_IN_F32, 8u, es_walk_f32_8)
#endif
#if ES_USE(ES_IN_F32, ES_L9)
    ES_CASE(ES_IN_F32, 9u, es_walk_f32_9)
#endif
#if ES_USE(ES_IN_F32, ES_L16)
    ES_CASE(ES_IN_F32, 16u, es_walk_f32_16)
#endif
#if ES_USE(ES_IN_F32, ES_L17)
    ES_CASE(ES_IN_F32, 17u, es_walk_f32_17)
#endif
#if ES_USE(ES_IN_F32, ES_L18)
    ES_CASE(ES_IN_F32, 18u, es_walk_f32_18)
#endif
#if ES_USE(ES_IN_F32, ES_L19)
    ES_CASE(ES_IN_F32, 19u, es_walk_f32_19)
#endif
#if ES_USE(ES_IN_F32, ES_L22)
    ES_CASE(ES_IN_F32, 22u, es_walk_f32_22)
#endif
#if ES_USE(ES_IN_F32, ES_L23)
    ES_CASE(ES_IN_F32, 23u, es_walk_f32_23)
#endif
#if ES_USE(ES_IN_F32, ES_L24)
    ES_CASE(ES_IN_F32, 24u, es_walk_f32_24)
#endif
#if ES_USE(ES_IN_F32, ES_L25)
    ES_CASE(ES_IN_F32, 25u, es_walk_f32_25)
#endif
    default:
        return ES_ERR_MODEL;
    }
    return es_finish(model, scratch, proba, class_out);
}
#endif

#if ES_INFER_ALL || ES_IN_I32
es_status es_forest_predict_i32(const es_forest *model, const int32_t *x, int32_t *scratch, uint16_t *proba,
                                uint8_t *class_out)
{
    es_forest copy;
    es_status status;
    model = es_descriptor(model, &copy);
    status = es_check(model, x, scratch);
    if (status != ES_OK) {
        return status;
    }
    es_start(model, scratch);
    switch (model->layout) {
#if ES_USE(ES_IN_I32, ES_L0)
    ES_CASE(ES_IN_I32, 0u, es_walk_i32_0)
#endif
#if ES_USE(ES_IN_I32, ES_L1)
    ES_CASE(ES_IN_I32, 1u, es_walk_i32_1)
#endif
#if ES_USE(ES_IN_I32, ES_L2)
    ES_CASE(ES_IN_I32, 2u, es_walk_i32_2)
#endif
#if ES_USE(ES_IN_I32, ES_L3)
    ES_CASE(ES_IN_I32, 3u, es_walk_i32_3)
#endif
#if ES_USE(ES_IN_I32, ES_L6)
    ES_CASE(ES_IN_I32, 6u, es_walk_i32_6)
#endif
#if ES_USE(ES_IN_I32, ES_L7)
    ES_CASE(ES_IN_I32, 7u, es_walk_i32_7)
#endif
#if ES_USE(ES_IN_I32, ES_L8)
    ES_CASE(ES_IN_I32, 8u, es_walk_i32_8)
#endif
#if ES_USE(ES_IN_I32, ES_L9)
    ES_CASE(ES_IN_I32, 9u, es_walk_i32_9)
#endif
    default:
        return ES_ERR_MODEL;
    }
    return es_finish(model, scratch, proba, class_out);
}
#endif

#if ES_INFER_ALL || ES_IN_I16
es_status es_forest_predict_i16(const es_forest *model, const int16_t *x, int32_t *scratch, uint16_t *proba,
                                uint8_t *class_out)
{
    es_forest copy;
    es_status status;
    model = es_descriptor(model, &copy);
    status = es_check(model, x, scratch);
    if (status != ES_OK) {
        return status;
    }
    es_start(model, scratch);
    switch (model->layout) {
#if ES_USE(ES_IN_I16, ES_L0)
    ES_CASE(ES_IN_I16, 0u, es_walk_i16_0)
#endif
#if ES_USE(ES_IN_I16, ES_L1)
    ES_CASE(ES_IN_I16, 1u, es_walk_i16_1)
#endif
#if ES_USE(ES_IN_I16, ES_L2)
    ES_CASE(ES_IN_I16, 2u, es_walk_i16_2)
#endif
#if ES_USE(ES_IN_I16, ES_L3)
    ES_CASE(ES_IN_I16, 3u, es_walk_i16_3)
#endif
#if ES_USE(ES_IN_I16, ES_L6)
    ES_CASE(ES_IN_I16, 6u, es_walk_i16_6)
#endif
#if ES_USE(ES_IN_I16, ES_L7)
    ES_CASE(ES_IN_I16, 7u, es_walk_i16_7)
#endif
#if ES_USE(ES_IN_I16, ES_L8)
    ES_CASE(ES_IN_I16, 8u, es_walk_i16_8)
#endif
#if ES_USE(ES_IN_I16, ES_L9)
    ES_CASE(ES_IN_I16, 9u, es_walk_i16_9)
#endif
    default:
        return ES_ERR_MODEL;
    }
    return es_finish(model, scratch, proba, class_out);
}
#endif

#if ES_INFER_ALL || (ES_INFER_INLINE + 0)
void es_forest_add_leaf(const es_forest *model, uint16_t tree, uint16_t slot, int32_t *acc)
{
    es_add_leaf(model, tree, slot, acc);
}

es_status es_forest_predict_inline(const es_forest *model, es_walk_fn walk, const void *x, int32_t *scratch,
                                   uint16_t *proba, uint8_t *class_out)
{
    es_forest copy;
    es_status status;
    model = es_descriptor(model, &copy);
    status = es_check(model, x, scratch);
    if (status != ES_OK) {
        return status;
    }
    if (walk == 0) {
        return ES_ERR_NULL;
    }
    es_start(model, scratch);
    walk(x, scratch, model);
    return es_finish(model, scratch, proba, class_out);
}
#endif
