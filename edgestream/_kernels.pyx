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

cimport cython
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


cdef inline int64_t trunc_div(int64_t a, int64_t b) noexcept nogil:
    """C99 division (toward zero), spelled out so it does not depend on Cython's cdivision setting."""
    return a // b if a >= 0 else -((-a) // b)


# -- shrub ensembles: the whole learning step over the state arrays (the specification is learners/shrubs.py) ----

from libc.stdint cimport int32_t

cdef enum:
    NONE = 0xFFFF           # no node / no bin / no pending threshold
    MIXED = 0x100           # run class of a run with more than one class
    STATS = 10              # split_stats words per splittable node
    ST_N_TOTAL = 0
    ST_N_LEFT = 1           # rows scanned so far (the current run included)
    ST_LAST = 2             # bin of the current run, then the local index of the left child
    ST_PEND = 3             # undecided threshold: the previous run's bin
    ST_RUN_CLASS = 4        # the current run's class while it has one, else MIXED
    ST_RUN_START = 5        # rows scanned before the current run
    ST_BEST_LO = 6
    ST_BEST_HI = 7
    ST_BEST_DEN = 8
    ST_CHOICE = 9           # feature << 8 | threshold, NONE: no split better than the parent
    LEAF_MARK = 0x10000     # ST_CHOICE of a node that may not split
    WEIGHT_LIMIT = 1 << 17


cdef inline uint16_t tree_leaf(const Node *nodes, uint16_t root, const uint8_t *row) noexcept nogil:
    cdef uint16_t i = root
    while nodes[i].feature != LEAF:
        i = nodes[i].child + (row[nodes[i].feature] > nodes[i].threshold)
    return nodes[i].child


cdef inline uint32_t pair_term(const uint16_t *a, const uint16_t *b, int n_classes) noexcept nogil:
    """floor(sum_c a[c] * b[c] / 2**15) of two Q15 leaf rows (the sum stays below 2**31)."""
    cdef uint32_t t = 0
    cdef int c
    if n_classes == 2:
        return (<uint32_t>a[0] * b[0] + <uint32_t>a[1] * b[1]) >> 15
    for c in range(n_classes):
        t += <uint32_t>a[c] * b[c]
    return t >> 15


cdef inline uint64_t xlog2x_u(uint64_t c) noexcept nogil:
    return c * log2_q16(c) if c > 1 else 0


@cython.final
cdef class ShrubKernel:
    """One shrub ensemble's learning step and prediction on its state arrays (views of the Python learner's).

    ``counters`` is a uint16 array (head, count, n_shrubs, since_update) shared with the learner.
    """
    cdef uint8_t[::1] window_bins, window_labels, rank, cand_slot
    cdef Node[::1] nodes
    cdef uint16_t[::1] leaf_values, roots, weights, sorted_rows, node_of, split_counts, counters
    cdef uint8_t[::1] leaf_index
    cdef uint32_t[::1] gram, label_sum, split_stats
    cdef int32_t[::1] work_weights
    cdef int d, n_classes, depth, criterion, window, max_shrubs, burnin, update_every, slots, nps, lps
    cdef uint32_t min_samples_leaf, step_q16
    cdef const float *p_edges
    cdef const uint16_t *p_offsets
    cdef uint8_t *p_row_bins
    cdef bint allow_missing

    cdef uint8_t *p_window_bins
    cdef uint8_t *p_window_labels
    cdef uint8_t *p_rank
    cdef uint8_t *p_cand_slot
    cdef Node *p_nodes
    cdef uint16_t *p_leaf_values
    cdef uint16_t *p_roots
    cdef uint16_t *p_weights
    cdef uint16_t *p_sorted_rows
    cdef uint8_t *p_leaf_index
    cdef uint16_t *p_node_of
    cdef uint16_t *p_split_counts
    cdef uint16_t *p_counters
    cdef uint32_t *p_gram
    cdef uint32_t *p_label_sum
    cdef uint32_t *p_split_stats
    cdef int32_t *p_work_weights

    def __init__(self, dict arrays, uint16_t[::1] counters, int n_features, int n_classes, int max_depth,
                 int criterion, int window_size, int max_shrubs, int min_samples_leaf, int burnin, int update_every,
                 uint32_t step_q16):
        self.window_bins = arrays["window_bins"].reshape(-1)
        self.window_labels = arrays["window_labels"]
        self.nodes = arrays["nodes"]
        self.leaf_values = arrays["leaf_values"].reshape(-1)
        self.roots = arrays["roots"]
        self.weights = arrays["weights"]
        self.sorted_rows = arrays["sorted_rows"]
        self.leaf_index = arrays["leaf_index"]
        self.gram = arrays["gram"]
        self.label_sum = arrays["label_sum"]
        self.node_of = arrays["node_of"]
        self.split_counts = arrays["split_counts"]
        self.split_stats = arrays["split_stats"]
        self.work_weights = arrays["work_weights"]
        self.rank = arrays["rank"]
        self.cand_slot = arrays["cand_slot"]
        self.counters = counters
        self.d, self.n_classes, self.depth, self.criterion = n_features, n_classes, max_depth, criterion
        self.window, self.max_shrubs, self.min_samples_leaf = window_size, max_shrubs, min_samples_leaf
        self.burnin, self.update_every, self.step_q16 = burnin, update_every, step_q16
        self.slots = max_shrubs + 1
        self.nps = (2 << max_depth) - 1
        self.lps = 1 << max_depth
        self.p_window_bins = &self.window_bins[0]
        self.p_window_labels = &self.window_labels[0]
        self.p_rank = &self.rank[0]
        self.p_cand_slot = &self.cand_slot[0]
        self.p_nodes = &self.nodes[0]
        self.p_leaf_values = &self.leaf_values[0]
        self.p_roots = &self.roots[0]
        self.p_weights = &self.weights[0]
        self.p_sorted_rows = &self.sorted_rows[0]
        self.p_leaf_index = &self.leaf_index[0]
        self.p_node_of = &self.node_of[0]
        self.p_split_counts = &self.split_counts[0]
        self.p_counters = &self.counters[0]
        self.p_gram = &self.gram[0]
        self.p_label_sum = &self.label_sum[0]
        self.p_split_stats = &self.split_stats[0]
        self.p_work_weights = &self.work_weights[0]

    # -- caches -----------------------------------------------------------------------------------------------

    cdef void pair_terms(self, uint16_t row, bint add) noexcept nogil:
        """Add (or remove) window row ``row``'s terms to the Gram and label sums of the active shrubs."""
        cdef int i, j, a, b, C = self.n_classes, n = self.p_counters[2], slots = self.slots
        cdef uint32_t t, sign = 1 if add else 0xFFFFFFFFU  # modular: += sign * t adds or subtracts t
        cdef const uint16_t *ha
        cdef const uint8_t *cache = &self.p_leaf_index[row * slots]
        cdef const uint16_t *leaf_values = self.p_leaf_values
        cdef const uint8_t *cand_slot = self.p_cand_slot
        cdef uint32_t *gram = self.p_gram
        cdef uint8_t y = self.p_window_labels[row]
        cdef int depth = self.depth
        for i in range(n):
            a = cand_slot[i]
            ha = &leaf_values[((a << depth) + cache[a]) * C]
            self.p_label_sum[a] += sign * ha[y]
            for j in range(i, n):
                b = cand_slot[j]
                t = sign * pair_term(ha, &leaf_values[((b << depth) + cache[b]) * C], C)
                gram[a * slots + b] += t
                if a != b:
                    gram[b * slots + a] += t

    cdef void insert_row(self, uint16_t row, int present) noexcept nogil:
        """Keep every feature's list of window rows sorted by (bin, row): ``row`` (already written) moves to
        its place; ``present`` rows are listed, ``row`` among them when the window was full."""
        cdef int f, i, n, d = self.d, B = self.window
        cdef uint16_t *lst
        cdef uint32_t key, other
        for f in range(d):
            lst = &self.p_sorted_rows[f * B]
            n = present
            if self.p_counters[1] == B:  # the row was listed: take it out
                i = 0
                while lst[i] != row:
                    i += 1
                while i + 1 < n:
                    lst[i] = lst[i + 1]
                    i += 1
                n -= 1
            key = (<uint32_t>self.p_window_bins[row * d + f] << 16) | row
            i = n
            while i > 0:
                other = (<uint32_t>self.p_window_bins[lst[i - 1] * d + f] << 16) | lst[i - 1]
                if other < key:
                    break
                lst[i] = lst[i - 1]
                i -= 1
            lst[i] = row

    # -- shrub training: CART on the window, level by level over the sorted lists ---------------------------------

    cdef void candidate(self, int v, int f, uint32_t t, int less_class, uint32_t less) noexcept nogil:
        """Score threshold ``t`` of feature ``f`` for node ``v``: its left side is the rows scanned so far without
        the last ``less`` rows (all of class ``less_class``). Kept if strictly better than the best so far."""
        cdef int C = self.n_classes, k
        cdef uint32_t *st = &self.p_split_stats[v * (STATS + C)]
        cdef const uint16_t *total = &self.p_split_counts[v * C]
        cdef const uint32_t *left = st + STATS
        cdef uint64_t n_left = st[ST_N_LEFT] - less, n_right = st[ST_N_TOTAL] - n_left
        cdef uint64_t l2 = 0, r2 = 0, num, den, best, cost, lk, l0, l1
        if n_left < self.min_samples_leaf or n_right < self.min_samples_leaf:
            return
        best = (<uint64_t>st[ST_BEST_HI] << 32) | st[ST_BEST_LO]
        if self.criterion == CRITERION_GINI and C == 2:
            l0 = left[0] - (less if less_class == 0 else 0)
            l1 = left[1] - (less if less_class == 1 else 0)
            num = (l0 * l0 + l1 * l1) * n_right + ((total[0] - l0) * (total[0] - l0) + (total[1] - l1) * (total[1] - l1)) * n_left
            den = n_left * n_right
            if num * st[ST_BEST_DEN] > best * den:
                st[ST_BEST_LO] = <uint32_t>num
                st[ST_BEST_HI] = <uint32_t>(num >> 32)
                st[ST_BEST_DEN] = <uint32_t>den
                st[ST_CHOICE] = (<uint32_t>f << 8) | t
        elif self.criterion == CRITERION_GINI:
            for k in range(C):
                lk = left[k] - (less if k == less_class else 0)
                l2 += lk * lk
                r2 += (total[k] - lk) * (total[k] - lk)
            num = l2 * n_right + r2 * n_left
            den = n_left * n_right
            if num * st[ST_BEST_DEN] > best * den:
                st[ST_BEST_LO] = <uint32_t>num
                st[ST_BEST_HI] = <uint32_t>(num >> 32)
                st[ST_BEST_DEN] = <uint32_t>den
                st[ST_CHOICE] = (<uint32_t>f << 8) | t
        else:
            cost = xlog2x_u(n_left) + xlog2x_u(n_right)
            for k in range(C):
                lk = left[k] - (less if k == less_class else 0)
                cost -= xlog2x_u(lk) + xlog2x_u(total[k] - lk)
            if cost < best:
                st[ST_BEST_LO] = <uint32_t>cost
                st[ST_BEST_HI] = <uint32_t>(cost >> 32)
                st[ST_CHOICE] = (<uint32_t>f << 8) | t

    cdef void scan_root(self, int f) noexcept nogil:
        """:meth:`scan_feature` for the root alone (every row in node 0): the running state in locals."""
        cdef int d = self.d, k
        cdef uint32_t *st = self.p_split_stats
        cdef uint32_t *left = st + STATS
        cdef const uint16_t *lst = &self.p_sorted_rows[f * self.window]
        cdef const uint16_t *end = lst + self.p_counters[1]
        cdef const uint8_t *bins = &self.p_window_bins[f]
        cdef const uint8_t *labels = self.p_window_labels
        cdef uint32_t row, bin_, y, last = NONE, pend = NONE, run_class = MIXED, run_start = 0, n_left = 0
        for k in range(self.n_classes):
            left[k] = 0
        while lst != end:
            row = lst[0]
            lst += 1
            bin_ = bins[row * d]
            y = labels[row]
            if bin_ != last:  # a run of rows with the next bin starts
                if last != NONE and run_class != y:
                    st[ST_N_LEFT] = n_left
                    self.candidate(0, f, last, 0, 0)
                    pend = NONE
                else:
                    pend = last
                last = bin_
                run_class = y
                run_start = n_left
            elif run_class != y and run_class != MIXED:
                if pend != NONE:
                    st[ST_N_LEFT] = n_left
                    self.candidate(0, f, pend, run_class, n_left - run_start)
                    pend = NONE
                run_class = MIXED
            left[y] += 1
            n_left += 1

    cdef void scan_feature(self, int f) noexcept nogil:
        """One feature's scan of a level: rows in (bin, row) order to their nodes' running counts; a threshold
        between two runs of rows (rows of one bin) is a candidate unless both runs have one and the same class."""
        cdef int C = self.n_classes, d = self.d, stride = STATS + C
        cdef const uint16_t *lst = &self.p_sorted_rows[f * self.window]
        cdef const uint16_t *end = lst + self.p_counters[1]
        cdef const uint16_t *node_of = self.p_node_of
        cdef const uint8_t *bins = &self.p_window_bins[f]
        cdef uint32_t *stats = self.p_split_stats
        cdef uint32_t *st
        cdef uint32_t tag, v, y, bin_, row
        while lst != end:
            row = lst[0]
            lst += 1
            tag = node_of[row]
            if tag == NONE:
                continue
            y = tag & 0xFF
            v = tag >> 8
            st = &stats[v * stride]
            bin_ = bins[row * d]
            if bin_ != st[ST_LAST]:  # a run of rows with the next bin starts
                if st[ST_LAST] != NONE and st[ST_RUN_CLASS] != y:
                    self.candidate(v, f, st[ST_LAST], 0, 0)
                    st[ST_PEND] = NONE
                else:
                    st[ST_PEND] = st[ST_LAST]
                st[ST_LAST] = bin_
                st[ST_RUN_CLASS] = y
                st[ST_RUN_START] = st[ST_N_LEFT]
            elif st[ST_RUN_CLASS] != y and st[ST_RUN_CLASS] != MIXED:
                if st[ST_PEND] != NONE:
                    self.candidate(v, f, st[ST_PEND], st[ST_RUN_CLASS], st[ST_N_LEFT] - st[ST_RUN_START])
                    st[ST_PEND] = NONE
                st[ST_RUN_CLASS] = MIXED
            st[STATS + y] += 1
            st[ST_N_LEFT] += 1

    cdef void train(self, int slot) noexcept nogil:
        """CART on the window (see the module docstring of learners/shrubs.py), into pool slot ``slot``."""
        cdef int C = self.n_classes, d = self.d, B = self.window, n = self.p_counters[1]
        cdef int level = 0, level_first = 0, level_size = 1, next_size, n_nodes = 1, n_leaves = 0
        cdef int s, v, k, f, i, n_present
        cdef uint32_t total, bin_, choice, y
        cdef uint64_t cost
        cdef uint16_t *counts
        cdef uint32_t *st
        cdef uint16_t row
        cdef Node *nodes = &self.p_nodes[slot * self.nps]
        cdef uint16_t *leaves = &self.p_leaf_values[slot * self.lps * C]
        cdef uint16_t node_base = slot * self.nps, leaf_base = slot * self.lps
        for s in range(n):
            self.p_node_of[s] = self.p_window_labels[s]  # node << 8 | label, or NONE
        while True:
            for v in range(level_size * C):
                self.p_split_counts[v] = 0
            for s in range(n):
                v = self.p_node_of[s]
                if v != NONE:
                    self.p_split_counts[(v >> 8) * C + (v & 0xFF)] += 1
            if level < self.depth:
                for v in range(level_size):  # which nodes may split, and the parent's score to beat
                    counts = &self.p_split_counts[v * C]
                    st = &self.p_split_stats[v * (STATS + C)]
                    total = 0
                    n_present = 0
                    for k in range(C):
                        total += counts[k]
                        n_present += counts[k] > 0
                    if n_present > 1 and total >= 2 * self.min_samples_leaf:
                        st[ST_CHOICE] = NONE
                        st[ST_N_TOTAL] = total
                        st[ST_BEST_DEN] = total
                        if self.criterion == CRITERION_GINI:
                            cost = 0
                            for k in range(C):
                                cost += <uint64_t>counts[k] * counts[k]
                        else:
                            cost = xlog2x_u(total)
                            for k in range(C):
                                cost -= xlog2x_u(counts[k])
                        st[ST_BEST_LO] = <uint32_t>cost
                        st[ST_BEST_HI] = <uint32_t>(cost >> 32)
                    else:
                        st[ST_CHOICE] = LEAF_MARK
                for s in range(n):
                    v = self.p_node_of[s]
                    if v != NONE and self.p_split_stats[(v >> 8) * (STATS + C) + ST_CHOICE] == LEAF_MARK:
                        self.p_node_of[s] = NONE
                for f in range(d):
                    for v in range(level_size):
                        st = &self.p_split_stats[v * (STATS + C)]
                        st[ST_N_LEFT] = 0
                        st[ST_LAST] = NONE
                        st[ST_PEND] = NONE
                        for k in range(C):
                            st[STATS + k] = 0
                    if level > 0:
                        self.scan_feature(f)
                    elif self.p_split_stats[ST_CHOICE] != LEAF_MARK:
                        self.scan_root(f)
            next_size = 0
            for v in range(level_size):  # this level's nodes in order; children next to each other
                counts = &self.p_split_counts[v * C]
                choice = self.p_split_stats[v * (STATS + C) + ST_CHOICE] if level < self.depth else LEAF_MARK
                if choice < NONE:
                    nodes[level_first + v].feature = choice >> 8
                    nodes[level_first + v].threshold = choice & 0xFF
                    nodes[level_first + v].child = node_base + n_nodes
                    self.p_split_stats[v * (STATS + C) + ST_LAST] = next_size
                    next_size += 2
                    n_nodes += 2
                else:
                    total = 0
                    for k in range(C):
                        total += counts[k]
                    nodes[level_first + v].feature = LEAF
                    nodes[level_first + v].threshold = 0
                    nodes[level_first + v].child = leaf_base + n_leaves
                    for k in range(C):
                        leaves[n_leaves * C + k] = <uint16_t>((<uint64_t>counts[k] * Q15 + total // 2) // total)
                    n_leaves += 1
            if next_size == 0:
                break
            for s in range(n):
                v = self.p_node_of[s]
                if v == NONE:
                    continue
                st = &self.p_split_stats[(v >> 8) * (STATS + C)]
                choice = st[ST_CHOICE]
                if choice < NONE:
                    self.p_node_of[s] = ((st[ST_LAST] + (self.p_window_bins[s * d + (choice >> 8)] > (choice & 0xFF))) << 8
                                         | (v & 0xFF))
                else:
                    self.p_node_of[s] = NONE
            level_first += level_size
            level_size = next_size
            level += 1

    # -- the learning step ----------------------------------------------------------------------------------------

    cdef int free_slot(self) noexcept nogil:
        cdef int slot, i
        cdef bint used
        for slot in range(self.max_shrubs):
            used = False
            for i in range(self.p_counters[2]):
                used = used or self.p_cand_slot[i] == slot
            if not used:
                return slot
        return self.max_shrubs

    cdef void new_shrub_terms(self, int slot) noexcept nogil:
        """Leaves of the new shrub for every window row, and its Gram row/column and label sum."""
        cdef int C = self.n_classes, slots = self.slots, n = self.p_counters[1], n_active = self.p_counters[2]
        cdef int s, i, b, d = self.d
        cdef uint16_t root = slot * self.nps
        cdef uint8_t *cache = self.p_leaf_index
        cdef const uint16_t *h
        cdef const uint16_t *leaf_values = self.p_leaf_values
        cdef const uint8_t *cand_slot = self.p_cand_slot
        cdef const uint8_t *bins = self.p_window_bins
        cdef const uint8_t *labels = self.p_window_labels
        cdef const Node *nodes = self.p_nodes
        cdef uint32_t *g = &self.p_gram[slot * slots]
        cdef uint32_t label_sum = 0, own = 0
        cdef const uint8_t *col
        cdef const uint8_t *own_col = &cache[slot]
        cdef uint32_t acc, leaf
        cdef int depth = self.depth, own_base = slot << self.depth, base
        for s in range(n):
            leaf = tree_leaf(nodes, root, &bins[s * d])
            cache[slot] = leaf - own_base  # the leaf within its shrub
            h = &leaf_values[leaf * C]
            label_sum += h[labels[s]]
            own += pair_term(h, h, C)
            cache += slots
        for i in range(n_active):  # column by column: independent loads, the sum in a register
            b = cand_slot[i]
            col = &self.p_leaf_index[b]
            base = b << depth
            acc = 0
            for s in range(n):
                acc += pair_term(&leaf_values[(own_base + own_col[s * slots]) * C],
                                 &leaf_values[(base + col[s * slots]) * C], C)
            g[b] = acc
        g[slot] = own
        self.p_label_sum[slot] = label_sum
        for i in range(n_active):
            b = cand_slot[i]
            self.p_gram[b * slots + slot] = g[b]

    cdef void gradient_steps(self, int n_candidates) noexcept nogil:
        cdef int k, j, step, slots = self.slots
        cdef int32_t *w = &self.p_work_weights[0]
        cdef int32_t *next_w = &self.p_work_weights[slots]
        cdef const uint32_t *g
        cdef int64_t m, delta, x
        cdef uint64_t alpha = self.step_q16 if self.step_q16 != 0 else 65536 // (n_candidates + 1)
        cdef uint64_t scale = (alpha << 15) // (<uint64_t>self.p_counters[1] * self.n_classes)
        for step in range(self.burnin):
            for k in range(n_candidates):
                g = &self.p_gram[self.p_cand_slot[k] * slots]
                m = 0
                for j in range(n_candidates):
                    m += <int64_t>w[j] * <int32_t>g[self.p_cand_slot[j]]
                m -= <int64_t>self.p_label_sum[self.p_cand_slot[k]] << 15
                delta = trunc_div(trunc_div(m, 1 << 15) * <int64_t>scale, 1 << 30)
                x = w[k] - delta
                next_w[k] = <int32_t>(WEIGHT_LIMIT if x > WEIGHT_LIMIT else (-WEIGHT_LIMIT if x < -WEIGHT_LIMIT else x))
            for k in range(n_candidates):
                w[k] = next_w[k]

    cdef void prox(self, int n_candidates) noexcept nogil:
        """Hard-L0 prox, integer simplex projection of the non-zero kept weights, pruning of zero weights."""
        cdef int i, j, key, support = 0, rho = 1, n_kept = 0
        cdef int kept = n_candidates if n_candidates < self.max_shrubs else self.max_shrubs
        cdef int32_t *w = &self.p_work_weights[0]
        cdef int64_t total = 0, total_rho = 0, lam, remainder, u, x
        for i in range(n_candidates):  # rank by weight, descending, ties to the older position
            key = i
            j = i
            while j > 0 and w[self.p_rank[j - 1]] < w[key]:
                self.p_rank[j] = self.p_rank[j - 1]
                j -= 1
            self.p_rank[j] = key
        for j in range(kept):
            if w[self.p_rank[j]] != 0:
                self.p_rank[support] = self.p_rank[j]
                support += 1
        self.p_counters[2] = 0
        if support == 0:
            return
        for j in range(support):
            u = w[self.p_rank[j]]
            total += u
            if (j + 1) * u + Q15 - total > 0:
                rho = j + 1
                total_rho = total
        lam = Q15 - total_rho
        lam = lam // rho if lam >= 0 else -((-lam + rho - 1) // rho)  # floor division
        remainder = Q15 - total_rho - rho * lam
        for j in range(support):
            x = w[self.p_rank[j]] + lam
            x = (x if x > 0 else 0) + (1 if j < remainder else 0)
            if x > 0:
                self.p_roots[n_kept] = self.p_cand_slot[self.p_rank[j]] * self.nps
                self.p_weights[n_kept] = <uint16_t>x
                n_kept += 1
        self.p_counters[2] = n_kept

    cdef void step(self, const uint8_t *bins, int label) noexcept nogil:
        """One learning step on a binned sample with an encoded label (checked by the caller)."""
        cdef int C = self.n_classes, d = self.d, slots = self.slots, i, slot, n_candidates
        cdef uint16_t head = self.p_counters[0], count = self.p_counters[1]
        for i in range(self.p_counters[2]):  # the active shrubs' pool slots
            self.p_cand_slot[i] = self.p_roots[i] // self.nps
        if count == self.window:
            self.pair_terms(head, False)
        for i in range(d):
            self.p_window_bins[head * d + i] = bins[i]
        self.p_window_labels[head] = label
        self.insert_row(head, count)
        for i in range(self.p_counters[2]):
            self.p_leaf_index[head * slots + self.p_cand_slot[i]] = (
                tree_leaf(&self.p_nodes[0], self.p_roots[i], bins) - (self.p_cand_slot[i] << self.depth))
        self.p_counters[0] = 0 if head + 1 == self.window else head + 1
        if count < self.window:
            self.p_counters[1] = count + 1
        self.pair_terms(head, True)
        self.p_counters[3] += 1
        if self.p_counters[3] < self.update_every:
            return
        self.p_counters[3] = 0
        slot = self.free_slot()
        self.train(slot)
        self.new_shrub_terms(slot)
        n_candidates = self.p_counters[2] + 1
        self.p_cand_slot[n_candidates - 1] = slot
        for i in range(n_candidates):
            self.p_work_weights[i] = self.p_weights[i] if i < self.p_counters[2] else 0
        self.gradient_steps(n_candidates)
        self.prox(n_candidates)
        return


    cpdef int learn(self, const uint8_t[::1] bins, int label) except -1:
        """One learning step on a binned sample with an encoded label (checked by the caller)."""
        with nogil:
            self.step(&bins[0], label)
        return 0

    cdef int predict_ptr(self, const uint8_t *bins, uint16_t *proba) noexcept nogil:
        """Q15 probabilities of one binned row into ``proba``; returns the most probable class (first on ties)."""
        cdef int C = self.n_classes, k, t, best = 0
        cdef uint64_t acc[256]
        cdef uint64_t total = 0
        cdef const uint16_t *h
        if self.p_counters[2] == 0:
            for k in range(C):
                proba[k] = Q15 // C
            return 0
        for k in range(C):
            acc[k] = 0
        for t in range(self.p_counters[2]):
            h = &self.p_leaf_values[tree_leaf(&self.p_nodes[0], self.p_roots[t], bins) * C]
            for k in range(C):
                acc[k] += <uint64_t>self.p_weights[t] * h[k]
            total += self.p_weights[t]
        for k in range(C):
            proba[k] = <uint16_t>((acc[k] + total // 2) // total)
            if proba[k] > proba[best]:
                best = k
        return best

    cpdef int predict(self, const uint8_t[::1] bins, uint16_t[::1] proba) except -1:
        """Q15 probabilities of one binned row into ``proba``; returns the most probable class (first on ties)."""
        return self.predict_ptr(&bins[0], &proba[0])

    def predict_many(self, const uint8_t[:, ::1] bins, uint16_t[:, ::1] proba):
        """:meth:`predict` for every row of ``bins`` into the rows of ``proba``."""
        cdef Py_ssize_t r
        if bins.shape[1] != self.d or proba.shape[1] != self.n_classes or proba.shape[0] < bins.shape[0]:
            raise ValueError("bins or proba have the wrong shape")
        with nogil:
            for r in range(bins.shape[0]):
                self.predict_ptr(&bins[r, 0], &proba[r, 0])

    cdef int bin_raw(self, const double[::1] x) except -2:
        """Bins of one raw float row into ``row_bins`` (-1), or the first NaN feature when NaN is refused."""
        cdef int nan_at = bin_values(&x[0], self.d, self.p_edges, self.p_offsets, self.p_row_bins)
        return -1 if self.allow_missing else nan_at

    def set_edges(self, const float[::1] edges, const uint16_t[::1] offsets, uint8_t[::1] row_bins,
                  bint allow_missing):
        """Float32 bin edges for :meth:`learn_raw` and :meth:`predict_raw` (views kept alive by the caller)."""
        self.p_edges = &edges[0] if edges.shape[0] else NULL
        self.p_offsets = &offsets[0]
        self.p_row_bins = &row_bins[0]
        self.allow_missing = allow_missing

    def learn_raw(self, const double[::1] x, int label):
        """Bin a raw float64 row and learn it; returns -1, or the first NaN feature (nothing learned)."""
        cdef int nan_at = self.bin_raw(x)
        if nan_at >= 0:
            return nan_at
        self.step(self.p_row_bins, label)
        return -1

    def predict_raw(self, const double[::1] x, uint16_t[::1] proba):
        """Bin a raw float64 row and predict it: the class index, or -2 - (first NaN feature)."""
        cdef int nan_at = self.bin_raw(x)
        if nan_at >= 0:
            return -2 - nan_at
        return self.predict_ptr(self.p_row_bins, &proba[0])

    def rebuild(self):
        """Recompute the caches (sorted lists, leaves, Gram and label sums) from the window and the shrubs."""
        cdef int i, n = self.p_counters[1], saved = self.p_counters[1], s, j, slot
        self.sorted_rows[:] = 0
        self.leaf_index[:] = 0
        self.gram[:] = 0
        self.label_sum[:] = 0
        with nogil:
            for j in range(self.p_counters[2]):
                self.p_cand_slot[j] = self.p_roots[j] // self.nps
            for s in range(n):
                self.p_counters[1] = s
                self.insert_row(s, s)
                for j in range(self.p_counters[2]):
                    slot = self.p_roots[j] // self.nps
                    self.p_leaf_index[s * self.slots + slot] = tree_leaf(
                        &self.p_nodes[0], self.p_roots[j], &self.p_window_bins[s * self.d]) - (slot << self.depth)
                self.pair_terms(s, True)
            self.p_counters[1] = saved


cdef int bin_values(const double *x, Py_ssize_t n, const float *edges, const uint16_t *offsets,
                    uint8_t *out) noexcept nogil:
    cdef Py_ssize_t j
    cdef int lo, hi, mid, nan_at = -1
    cdef float v
    for j in range(n):
        v = <float>x[j]
        if v != v:
            out[j] = 255
            if nan_at < 0:
                nan_at = <int>j
            continue
        lo = offsets[j]
        hi = offsets[j + 1]
        while lo < hi:  # first edge >= v
            mid = (lo + hi) >> 1
            if edges[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        out[j] = <uint8_t>(lo - offsets[j])
    return nan_at


def bin_row_f32(const double[::1] x, const float[::1] edges, const uint16_t[::1] offsets, uint8_t[::1] out):
    """Bins of one raw row (BinMapper.transform for float32 edges): the number of the feature's edges strictly
    below the value rounded to float32; NaN -> 255. Returns the first NaN feature, or -1."""
    return bin_values(&x[0], x.shape[0], &edges[0] if edges.shape[0] else NULL, &offsets[0], &out[0])
