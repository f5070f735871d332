# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, language_level=3
"""Hot loops of the host trainers: class histograms, exact integer split search, tree growth, traversal.

The split criteria are evaluated in integer arithmetic so that a device (``csrc/es_tree.c``) training on
the same bins picks the same split:

* gini: maximise ``sum over children of floor_q24(sum_k c_k**2 / n)``, which is minimising weighted gini;
* entropy: maximise ``sum over children of sum_k xlog2x(c_k) - xlog2x(n)`` with ``xlog2x(c) = c * log2_q16(c)``
  and ``log2_q16`` the bit-by-bit integer logarithm below.

A split must score strictly above its parent. Candidates are scanned by feature, then threshold, ascending,
and only a strictly better score replaces the best one: ties go to the lowest feature, then the lowest threshold.
"""

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset

cnp.import_array()

cdef enum:
    LEAF = 255
    CRITERION_GINI = 0
    CRITERION_ENTROPY = 1
    Q15 = 32768
    N_BINS = 256
    LAST_THRESHOLD = 254

LEAF_FEATURE = LEAF
GINI = CRITERION_GINI
ENTROPY = CRITERION_ENTROPY
Q15_ONE = Q15
NODE_DTYPE = np.dtype([("feature", "u1"), ("threshold", "u1"), ("child", "<u2")])

cdef packed struct Node:
    uint8_t feature
    uint8_t threshold
    uint16_t child


cdef inline uint64_t gini_q24(const uint64_t *counts, uint64_t total, int n_classes) noexcept nogil:
    cdef uint64_t squares = 0, quotient, remainder
    cdef int k
    for k in range(n_classes):
        squares += counts[k] * counts[k]
    quotient = squares // total
    remainder = squares % total
    return (quotient << 24) + ((remainder << 24) // total)


cpdef uint32_t log2_q16(uint64_t x) noexcept nogil:
    """floor-exact fixed-point log2 with 16 fraction bits, for x >= 1 (bit-by-bit squaring)."""
    cdef uint32_t exponent = 0, result
    cdef uint64_t y = x, two = 2ULL << 30
    cdef int bit
    while y >> 1:
        y >>= 1
        exponent += 1
    y = x << (30 - exponent) if exponent <= 30 else x >> (exponent - 30)  # mantissa in [1, 2), Q30
    result = exponent << 16
    for bit in range(15, -1, -1):
        y = (y * y) >> 30
        if y >= two:
            y >>= 1
            result += 1U << bit
    return result


cdef inline int64_t xlog2x(uint64_t c) noexcept nogil:
    return <int64_t>(c * log2_q16(c)) if c > 1 else 0


cdef inline int64_t entropy_score(const uint64_t *counts, uint64_t total, int n_classes) noexcept nogil:
    cdef int64_t score = -xlog2x(total)
    cdef int k
    for k in range(n_classes):
        score += xlog2x(counts[k])
    return score


cdef inline int64_t node_score(const uint64_t *counts, uint64_t total, int n_classes, int criterion) noexcept nogil:
    if criterion == CRITERION_GINI:
        return <int64_t>gini_q24(counts, total, n_classes)
    return entropy_score(counts, total, n_classes)


cdef inline uint32_t xorshift32(uint32_t *state) noexcept nogil:
    cdef uint32_t x = state[0]
    x ^= x << 13
    x ^= x >> 17
    x ^= x << 5
    state[0] = x
    return x


cdef void choose_features(int *candidates, int n_features, int max_features, uint32_t *rng) noexcept nogil:
    """Partial Fisher-Yates over ``candidates`` (a permutation), then the chosen prefix sorted ascending."""
    cdef int i, j, swap, key
    if max_features >= n_features:
        return
    for i in range(max_features):
        j = i + <int>(xorshift32(rng) % <uint32_t>(n_features - i))
        swap = candidates[i]
        candidates[i] = candidates[j]
        candidates[j] = swap
    for i in range(1, max_features):  # insertion sort keeps the lowest-feature tie-break
        key = candidates[i]
        j = i - 1
        while j >= 0 and candidates[j] > key:
            candidates[j + 1] = candidates[j]
            j -= 1
        candidates[j + 1] = key


def build_tree(const uint8_t[:, ::1] X, const uint8_t[::1] y, const uint32_t[::1] weight, int n_classes,
               int criterion, int max_depth, uint64_t min_samples_leaf, int max_nodes, int max_features,
               uint32_t seed):
    """Grow one tree breadth first on binned data; returns (nodes, leaf_values Q15 [n_leaves, n_classes]).

    ``weight`` holds integer sample multiplicities (bootstrap counts; 0 leaves a sample out). A node becomes a
    leaf when it is pure, at ``max_depth``, too small for two leaves of ``min_samples_leaf``, when two more
    nodes would exceed ``max_nodes``, or when no split among its candidate features improves the criterion.
    Children are allocated next to each other: left = ``child``, right = ``child + 1``.
    """
    cdef Py_ssize_t n_samples = X.shape[0], n_features = X.shape[1]
    cdef cnp.intp_t[::1] order = np.flatnonzero(np.asarray(weight)).astype(np.intp)
    nodes_array = np.zeros(max_nodes, dtype=NODE_DTYPE)
    leaves_array = np.zeros((max_nodes, n_classes), dtype=np.uint16)
    cdef Node[::1] nodes = nodes_array
    cdef uint16_t[:, ::1] leaves = leaves_array
    cdef cnp.intp_t[::1] start = np.zeros(max_nodes, dtype=np.intp)
    cdef cnp.intp_t[::1] stop = np.zeros(max_nodes, dtype=np.intp)
    cdef int[::1] depth = np.zeros(max_nodes, dtype=np.intc)
    cdef int[::1] candidates = np.arange(n_features, dtype=np.intc)
    cdef uint64_t[::1] counts = np.zeros(n_classes, dtype=np.uint64)
    cdef uint64_t[::1] left = np.zeros(n_classes, dtype=np.uint64)
    cdef uint64_t[::1] right = np.zeros(n_classes, dtype=np.uint64)
    cdef uint64_t[::1] hist = np.zeros(N_BINS * n_classes, dtype=np.uint64)
    cdef uint64_t[::1] bin_total = np.zeros(N_BINS, dtype=np.uint64)
    cdef uint32_t rng = seed if seed != 0 else 0x9E3779B9U
    cdef int node = 0, n_nodes = 1, n_leaves = 0, k, c, f, t, best_feature, best_threshold, n_pure
    cdef Py_ssize_t a, b, s
    cdef uint64_t total, n_left, n_right
    cdef int64_t best_score, score
    cdef bint splittable

    stop[0] = order.shape[0]
    with nogil:
        while node < n_nodes:
            memset(&counts[0], 0, n_classes * sizeof(uint64_t))
            for a in range(start[node], stop[node]):
                counts[y[order[a]]] += weight[order[a]]
            total = 0
            n_pure = 0
            for k in range(n_classes):
                total += counts[k]
                n_pure += counts[k] > 0
            best_feature = -1
            best_threshold = 0
            splittable = (depth[node] < max_depth and n_nodes + 2 <= max_nodes and n_pure > 1
                          and total >= 2 * min_samples_leaf)
            if splittable:
                best_score = node_score(&counts[0], total, n_classes, criterion)
                choose_features(&candidates[0], <int>n_features, max_features, &rng)
                for c in range(min(max_features, <int>n_features)):
                    f = candidates[c]
                    memset(&hist[0], 0, N_BINS * n_classes * sizeof(uint64_t))
                    memset(&bin_total[0], 0, N_BINS * sizeof(uint64_t))
                    for a in range(start[node], stop[node]):
                        s = order[a]
                        hist[X[s, f] * n_classes + y[s]] += weight[s]
                        bin_total[X[s, f]] += weight[s]
                    memset(&left[0], 0, n_classes * sizeof(uint64_t))
                    n_left = 0
                    for t in range(LAST_THRESHOLD + 1):
                        if bin_total[t] == 0:
                            continue  # same partition as the previous threshold
                        n_left += bin_total[t]
                        for k in range(n_classes):
                            left[k] += hist[t * n_classes + k]
                            right[k] = counts[k] - left[k]
                        n_right = total - n_left
                        if n_right < min_samples_leaf:
                            break
                        if n_left < min_samples_leaf:
                            continue
                        score = (node_score(&left[0], n_left, n_classes, criterion)
                                 + node_score(&right[0], n_right, n_classes, criterion))
                        if score > best_score:
                            best_score = score
                            best_feature = f
                            best_threshold = t
            if best_feature < 0:
                nodes[node].feature = LEAF
                nodes[node].threshold = 0
                nodes[node].child = n_leaves
                for k in range(n_classes):
                    leaves[n_leaves, k] = <uint16_t>((counts[k] * Q15 + total // 2) // total)
                n_leaves += 1
            else:
                a = start[node]
                b = stop[node] - 1
                while a <= b:  # partition the node's samples: left block, then right block
                    if X[order[a], best_feature] <= best_threshold:
                        a += 1
                    else:
                        s = order[a]
                        order[a] = order[b]
                        order[b] = s
                        b -= 1
                nodes[node].feature = best_feature
                nodes[node].threshold = best_threshold
                nodes[node].child = n_nodes
                start[n_nodes] = start[node]
                stop[n_nodes] = a
                start[n_nodes + 1] = a
                stop[n_nodes + 1] = stop[node]
                depth[n_nodes] = depth[node] + 1
                depth[n_nodes + 1] = depth[node] + 1
                n_nodes += 2
            node += 1
    return nodes_array[:n_nodes].copy(), leaves_array[:n_leaves].copy()


def apply(const Node[::1] nodes, const uint16_t[::1] roots, const uint8_t[:, ::1] X):
    """Leaf index reached in every tree for every row: uint16 [n_rows, n_trees]."""
    cdef Py_ssize_t n_rows = X.shape[0], n_trees = roots.shape[0], r, t
    out = np.empty((n_rows, n_trees), dtype=np.uint16)
    cdef uint16_t[:, ::1] leaves = out
    cdef uint16_t i
    with nogil:
        for r in range(n_rows):
            for t in range(n_trees):
                i = roots[t]
                while nodes[i].feature != LEAF:
                    i = nodes[i].child + (X[r, nodes[i].feature] > nodes[i].threshold)
                leaves[r, t] = nodes[i].child
    return out

