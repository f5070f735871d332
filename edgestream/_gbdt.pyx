# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, language_level=3
"""The in-place online GBDT's training (:mod:`edgestream.learners.gbdt`): :class:`Booster` fits, adds and
deletes rows in one call each, and :func:`ensemble_tables` lays the trees out for export.

All statistics are integers: a row's stored derivatives are int32 (the loss's, :class:`Loss`), and a node
keeps int64 sums of them (totals, and left sums at every split candidate), so adding rows and deleting them again
gives back the same bits, and sums computed incrementally equal sums recomputed from scratch in any order.

Tree pool (one row of ``nodes`` per tree, ``P = 2 * max_leaves - 1`` node slots, node 0 is the root):
``nodes[t, u, f]`` with the fields below; ``CAND`` is the split candidate of an internal node, ``IS_LEAF`` a leaf,
``IS_FREE`` an unused slot. Internal node ``u`` owns ``slots[t, nodes[t, u, SLOT]]``: int64 ``[C, 3]`` left sums
(gradient, hessian, count) at every candidate ``c`` (rows with ``bin[cand_feature[c]] <= cand_threshold[c]``).
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport exp, fabs, floor, ceil, nearbyint
from libc.stdint cimport INT32_MAX, int16_t, int32_t, int64_t, uint8_t, uint16_t

cnp.import_array()

cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* GL^2/HL + GR^2/HR - parent: the two quotients in one SSE2 division where there is one (each lane is the
       IEEE quotient a scalar division gives, so the bits are the same), added in the same order. */
    static inline double es_gbdt_split_gain(double gl, double hl, double gr, double hr, double parent)
    {
    #if defined(__SSE2__)
        __m128d q = _mm_div_pd(_mm_set_pd(gr * gr, gl * gl), _mm_set_pd(hr, hl));
        return (_mm_cvtsd_f64(q) + _mm_cvtsd_f64(_mm_unpackhi_pd(q, q))) - parent;
    #else
        return (gl * gl) / hl + (gr * gr) / hr - parent;
    #endif
    }
    """
    void __builtin_prefetch(const void *address) noexcept nogil
    double es_gbdt_split_gain(double gl, double hl, double gr, double hr, double parent) noexcept nogil

cdef enum:
    CAND = 0
    LEFT = 1
    RIGHT = 2
    PARENT = 3
    DEPTH = 4
    SLOT = 5
    SUM_G = 6
    SUM_H = 7
    SUM_N = 8
    VALUE = 9
    N_FIELDS = 10
    IS_LEAF = -1
    IS_FREE = -2

FIELDS = {"cand": CAND, "left": LEFT, "right": RIGHT, "parent": PARENT, "depth": DEPTH, "slot": SLOT,
          "G": SUM_G, "H": SUM_H, "N": SUM_N, "value": VALUE}
NODE_FIELDS = N_FIELDS
LEAF = IS_LEAF
FREE = IS_FREE
DERIV_BITS = 30
cdef double DERIV_ONE = 1073741824.0  # 2**30
cdef double SCORE_ONE = 1024.0


cdef inline double parent_term(int64_t G, int64_t H) noexcept nogil:
    """The last term of a node's split gains, G^2/H (computed once per node)."""
    cdef double g = <double>G
    return (g * g) / <double>H


cdef inline double split_gain(int64_t GL, int64_t HL, int64_t G, int64_t H, double parent) noexcept nogil:
    """Gain of a split: GL^2/HL + GR^2/HR - G^2/H, in double from the exact integer sums (``parent``: the node's
    :func:`parent_term`)."""
    return es_gbdt_split_gain(<double>GL, <double>HL, <double>(G - GL), <double>(H - HL), parent)


cdef inline int16_t quantize_score(double v, double unit) noexcept nogil:
    """``v`` in int16 units of ``1/unit``, as :func:`edgestream.fixedpoint.quantize_scores` (unit 1024, Q10): round
    half away from zero, saturating."""
    cdef double q = floor(fabs(v) * unit + 0.5)
    if q > 32767.0:
        q = 32768.0 if v < 0 else 32767.0
    if v < 0:
        return <int16_t>(-q)
    return <int16_t>q


cdef class Loss:
    """What the booster minimizes, one object per task as scikit-learn's loss objects: the labels of the stored
    rows, the initial scores, the stored derivatives of rows from their scores (the negative gradient ``r`` and the
    hessian ``h``, int32) and the unit of a leaf value (a leaf is ``quantize(scale * sum r / sum h)`` in units of
    ``1 / unit``). Everything else in the booster is the same for every loss; the subclasses give
    :meth:`derivatives_into`."""

    cdef readonly double unit
    cdef int64_t[::1] base

    def __init__(self, double unit, base):
        self.unit = unit
        self.base = np.ascontiguousarray(base, dtype=np.int64)

    cdef void start(self, int64_t[:, ::1] F) noexcept:
        """Every row's scores set to the initial ones."""
        cdef Py_ssize_t i, k
        for i in range(F.shape[0]):
            for k in range(F.shape[1]):
                F[i, k] = self.base[k]

    cdef void derivatives_into(self, const int64_t[:, ::1] F, const int64_t[::1] rows, int32_t[:, ::1] g,
                               int32_t[:, ::1] h) noexcept:
        """The derivatives of the rows ``rows`` (their labels) whose scores are ``F`` (row ``i`` of ``F`` is the
        row ``rows[i]``) into ``g`` and ``h``."""
        pass

    def derivatives(self, const int64_t[:, ::1] F, const int64_t[::1] rows):
        """(g, h) as :meth:`derivatives_into` stores them, as new int32 arrays."""
        g_out = np.empty((F.shape[0], F.shape[1]), dtype=np.int32)
        h_out = np.empty((F.shape[0], F.shape[1]), dtype=np.int32)
        self.derivatives_into(F, rows, g_out, h_out)
        return g_out, h_out


cdef class LogLoss(Loss):
    """Robust LogitBoost's (classes, scores in Q10 starting at 0): ``r = [y == k] - p_k`` and ``h = p_k (1 - p_k)``
    as int32 with ``DERIV_BITS`` fraction bits (computed in float64, rounded half to even; a hessian is at least 1
    unit so that every row weighs). One score (binary): ``p`` is the sigmoid of ``F``; otherwise the softmax over
    the scores. ``y``: the class index of every stored row."""

    cdef const uint8_t[::1] y
    cdef double[::1] ev

    def __init__(self, const uint8_t[::1] y, Py_ssize_t n_scores):
        super().__init__(SCORE_ONE, np.zeros(n_scores, dtype=np.int64))
        self.y = y
        self.ev = np.empty(n_scores, dtype=np.float64)

    cdef void derivatives_into(self, const int64_t[:, ::1] F, const int64_t[::1] rows, int32_t[:, ::1] g,
                               int32_t[:, ::1] h) noexcept:
        cdef Py_ssize_t n = F.shape[0], S = F.shape[1], i, k
        cdef double mx, total, p, target, hq
        cdef double[::1] ev = self.ev
        cdef uint8_t label
        for i in range(n):
            label = self.y[rows[i]]
            if S == 1:
                p = 1.0 / (1.0 + exp(-(<double>F[i, 0]) / SCORE_ONE))
                target = 1.0 if label == 1 else 0.0
                g[i, 0] = <int32_t>nearbyint((target - p) * DERIV_ONE)
                hq = nearbyint(p * (1.0 - p) * DERIV_ONE)
                h[i, 0] = <int32_t>(hq if hq >= 1.0 else 1.0)
                continue
            mx = <double>F[i, 0]
            for k in range(1, S):
                if <double>F[i, k] > mx:
                    mx = <double>F[i, k]
            total = 0.0
            for k in range(S):
                ev[k] = exp((<double>F[i, k] - mx) / SCORE_ONE)
                total = total + ev[k]
            for k in range(S):
                p = ev[k] / total
                target = 1.0 if label == k else 0.0
                g[i, k] = <int32_t>nearbyint((target - p) * DERIV_ONE)
                hq = nearbyint(p * (1.0 - p) * DERIV_ONE)
                h[i, k] = <int32_t>(hq if hq >= 1.0 else 1.0)


cdef class SquaredLoss(Loss):
    """Half the squared error of a number (one score in target codes, :class:`edgestream.task.TargetScale`,
    starting at ``base``): ``r = code - F`` and ``h = 1``, both exact integers (``r`` saturated to int32, reached
    only by a diverging model). ``codes``: the int16 target code of every stored row."""

    cdef const int16_t[::1] codes

    def __init__(self, const int16_t[::1] codes, int64_t base):
        super().__init__(1.0, np.array([base], dtype=np.int64))
        self.codes = codes

    cdef void derivatives_into(self, const int64_t[:, ::1] F, const int64_t[::1] rows, int32_t[:, ::1] g,
                               int32_t[:, ::1] h) noexcept:
        cdef Py_ssize_t i
        cdef int64_t r
        for i in range(F.shape[0]):
            r = <int64_t>self.codes[rows[i]] - F[i, 0]
            if r > INT32_MAX:
                r = INT32_MAX
            elif r < -INT32_MAX:
                r = -INT32_MAX
            g[i, 0] = <int32_t>r
            h[i, 0] = 1


cdef void cand_sums(const uint8_t[:, ::1] Xb, const int64_t[::1] rows, Py_ssize_t lo, Py_ssize_t hi,
                    const int64_t[::1] gv, const int64_t[::1] hv, const int64_t[::1] nv,
                    const int32_t[::1] cand_start, const uint8_t[::1] cand_thr,
                    int64_t[:, ::1] out, int64_t[:, :, ::1] hist) noexcept nogil:
    """Left sums at every candidate of rows[lo:hi] (values gv/hv/nv indexed like rows) into ``out`` [C, 3]:
    per row and candidate for few rows, else through per-feature bin histograms (``hist`` [F, 256, 3])."""
    cdef Py_ssize_t C = out.shape[0], F = Xb.shape[1], i, c, f, b, row
    cdef int64_t a0, a1, a2
    cdef uint8_t v
    for c in range(C):
        out[c, 0] = 0
        out[c, 1] = 0
        out[c, 2] = 0
    if (hi - lo) * C <= F * 256:
        for i in range(lo, hi):
            row = rows[i]
            for f in range(F):
                v = Xb[row, f]
                c = cand_start[f + 1] - 1
                while c >= cand_start[f] and cand_thr[c] >= v:
                    out[c, 0] += gv[i]
                    out[c, 1] += hv[i]
                    out[c, 2] += nv[i]
                    c -= 1
        return
    for f in range(F):
        for b in range(256):
            hist[f, b, 0] = 0
            hist[f, b, 1] = 0
            hist[f, b, 2] = 0
    for i in range(lo, hi):
        row = rows[i]
        for f in range(F):
            v = Xb[row, f]
            hist[f, v, 0] += gv[i]
            hist[f, v, 1] += hv[i]
            hist[f, v, 2] += nv[i]
    for f in range(F):
        a0 = 0
        a1 = 0
        a2 = 0
        b = 0
        for c in range(cand_start[f], cand_start[f + 1]):
            while b <= cand_thr[c]:
                a0 += hist[f, b, 0]
                a1 += hist[f, b, 1]
                a2 += hist[f, b, 2]
                b += 1
            out[c, 0] = a0
            out[c, 1] = a1
            out[c, 2] = a2


cdef inline int best_candidate(const int64_t[:, ::1] sums, int64_t G, int64_t H, int64_t N, int64_t min_leaf,
                               double* best_gain) noexcept nogil:
    """First candidate of largest gain among the valid ones (``min_leaf`` rows or more on each side); -1 if
    none."""
    cdef Py_ssize_t c
    cdef int best = -1
    cdef double gain, top = 0.0, parent = parent_term(G, H)
    for c in range(sums.shape[0]):
        if sums[c, 2] < min_leaf or N - sums[c, 2] < min_leaf:
            continue
        gain = split_gain(sums[c, 0], sums[c, 1], G, H, parent)
        if best < 0 or gain > top:
            best = <int>c
            top = gain
    best_gain[0] = top
    return best


cdef inline void prefetch_left_sums(const int64_t[:, :, ::1] nodes, const int64_t[:, :, :, ::1] slots, Py_ssize_t t,
                                    int64_t u) noexcept nogil:
    """Ask the cache for the left sums of node ``u`` of tree ``t`` if it splits (a hint: it changes no value). The
    updates are bound by memory (every path node's sums are scattered over the pool), so the next node's are
    fetched while the current one's are added to."""
    cdef const char *start
    cdef Py_ssize_t b
    if nodes[t, u, CAND] < 0:
        return
    start = <const char *>&slots[t, nodes[t, u, SLOT], 0, 0]
    for b in range(0, slots.shape[2] * 3 * 8, 64):
        __builtin_prefetch(start + b)


cdef void route_rows(int64_t[:, :, ::1] nodes, int64_t[:, :, :, ::1] slots, int t, const uint8_t[:, ::1] Xb,
                     const int32_t[:, ::1] g, const int32_t[:, ::1] h, int16_t[:, ::1] leaf,
                     const int64_t[::1] rows, int sign, const int32_t[::1] cand_feat, const int32_t[::1] cand_start,
                     const uint8_t[::1] cand_thr, uint8_t[::1] touched) noexcept nogil:
    """Add (sign +1, recording each row's leaf) or remove (sign -1) the stored derivatives of ``rows`` in the sums
    of tree ``t`` on each row's path: the node totals and the left sums of every candidate the row goes left at
    (for each feature the candidates from the last one down while the threshold is at least the row's bin, one run
    of adjacent slot entries added through a pointer); marks the nodes passed in ``touched``."""
    cdef Py_ssize_t i, f, row, F = Xb.shape[1], first, end
    cdef int64_t u, w, s, c, gr, hr
    cdef int64_t *left
    cdef uint8_t v
    for i in range(rows.shape[0]):
        row = rows[i]
        gr = sign * <int64_t>g[t, row]
        hr = sign * <int64_t>h[t, row]
        u = 0
        while True:
            touched[u] = 1
            nodes[t, u, SUM_G] += gr
            nodes[t, u, SUM_H] += hr
            nodes[t, u, SUM_N] += sign
            c = nodes[t, u, CAND]
            if c < 0:
                break
            s = nodes[t, u, SLOT]
            w = nodes[t, u, LEFT] if Xb[row, cand_feat[c]] <= cand_thr[c] else nodes[t, u, RIGHT]
            prefetch_left_sums(nodes, slots, t, w)  # fetched while this node's are added to
            for f in range(F):
                v = Xb[row, f]
                end = cand_start[f + 1]
                first = end
                while first > cand_start[f] and cand_thr[first - 1] >= v:
                    first -= 1
                left = &slots[t, s, first, 0]
                for c in range(end - first):
                    left[0] += gr
                    left[1] += hr
                    left[2] += sign
                    left += 3
            u = w
        if sign > 0:
            leaf[t, row] = <int16_t>u


cdef bint keeps(const int64_t[:, :, ::1] nodes, const int64_t[:, :, :, ::1] slots, int t, int64_t u,
                double alpha, int64_t min_leaf) noexcept nogil:
    """Whether node ``u`` keeps its split: the split is valid and fewer than ``max(1, ceil(alpha * valid))`` valid
    candidates have a strictly larger gain. The valid candidates are counted first (integers only), so that the
    gains stop being computed as soon as that many are larger; the node's :func:`parent_term` is computed once."""
    cdef int64_t G = nodes[t, u, SUM_G], H = nodes[t, u, SUM_H], N = nodes[t, u, SUM_N]
    cdef int64_t s = nodes[t, u, SLOT], cur = nodes[t, u, CAND]
    cdef Py_ssize_t c, C = slots.shape[2]
    cdef const int64_t *left = &slots[t, s, 0, 0]
    cdef int64_t valid = 0, above = 0, count
    cdef double parent, own, allowed
    if left[3 * cur + 2] < min_leaf or N - left[3 * cur + 2] < min_leaf:
        return False
    for c in range(C):
        count = left[3 * c + 2]
        valid += count >= min_leaf and N - count >= min_leaf
    allowed = ceil(alpha * <double>valid)
    if allowed < 1.0:
        allowed = 1.0
    parent = parent_term(G, H)
    own = split_gain(left[3 * cur], left[3 * cur + 1], G, H, parent)
    for c in range(C):
        count = left[3 * c + 2]
        if count < min_leaf or N - count < min_leaf:
            continue
        if split_gain(left[3 * c], left[3 * c + 1], G, H, parent) > own:
            above += 1
            if <double>above >= allowed:
                return False
    return True


cdef void leaf_values(int64_t[:, :, ::1] nodes, int t, double scale, double unit) noexcept nogil:
    """Every leaf's score ``quantize(scale * G / H)`` in units of ``1 / unit`` in tree ``t`` (0 for an empty
    leaf)."""
    cdef Py_ssize_t u
    for u in range(nodes.shape[1]):
        if nodes[t, u, CAND] == IS_LEAF:
            if nodes[t, u, SUM_H] > 0:
                nodes[t, u, VALUE] = quantize_score(scale * (<double>nodes[t, u, SUM_G] / <double>nodes[t, u, SUM_H]),
                                                     unit)
            else:
                nodes[t, u, VALUE] = 0


cdef class Booster:
    """The learner's arrays as the kernels see them (views, no copies), its settings and the scratch a subtree's
    growth needs; made per call by :class:`edgestream.learners.gbdt.InPlaceGBDT`, whose row tables are
    reallocated when they fill up; the loss (:class:`Loss`) holds the rows' labels. :meth:`fit` and :meth:`update`
    run a whole pass with no Python call per iteration, tree, node or row."""

    cdef int64_t[:, :, ::1] nodes
    cdef int64_t[:, :, :, ::1] slots
    cdef int64_t[:, ::1] owner
    cdef const uint8_t[:, ::1] Xb
    cdef Loss loss
    cdef const uint8_t[::1] alive
    cdef int32_t[:, ::1] g
    cdef int32_t[:, ::1] h
    cdef int16_t[:, ::1] leaf
    cdef const int32_t[::1] cand_feat
    cdef const int32_t[::1] cand_start
    cdef const uint8_t[::1] cand_thr
    cdef Py_ssize_t n_rows, S, M, P, C
    cdef double scale, alpha
    cdef int max_leaves, max_depth, min_leaf
    # scratch per row (sub: the rows being grown on or retrained, then their values), per node of one tree, per
    # candidate, per feature bin, and the nodes to retrain in one iteration
    cdef int64_t[::1] sub, gv, hv, tmp, tg, th, ones, zeros
    cdef int64_t[:, :, ::1] fr, hist
    cdef int64_t[:, ::1] seg, sums
    cdef int64_t[::1] best, queue, retrain_t, retrain_v
    cdef double[::1] gains
    cdef uint8_t[::1] frontier, touched, inside

    def __init__(self, nodes, slots, owner, Xb, Loss loss, alive, g, h, leaf, cand_feat, cand_start, cand_thr,
                 Py_ssize_t n_rows, Py_ssize_t n_scores, double scale, double alpha, int max_leaves, int max_depth,
                 int min_leaf):
        self.nodes, self.slots, self.owner = nodes, slots, owner
        self.Xb, self.loss, self.alive, self.g, self.h, self.leaf = Xb, loss, alive, g, h, leaf
        self.cand_feat, self.cand_start, self.cand_thr = cand_feat, cand_start, cand_thr
        self.n_rows, self.S, self.M = n_rows, n_scores, nodes.shape[0] // n_scores
        self.P, self.C = nodes.shape[1], cand_thr.shape[0]
        self.scale, self.alpha = scale, alpha
        self.max_leaves, self.max_depth, self.min_leaf = max_leaves, max_depth, min_leaf
        self.sub, self.gv, self.hv, self.tmp, self.tg, self.th = (np.empty(n_rows, dtype=np.int64) for _ in range(6))
        self.ones = np.ones(n_rows, dtype=np.int64)
        self.zeros = np.zeros(n_rows, dtype=np.int64)
        self.fr = np.empty((self.P, self.C, 3), dtype=np.int64)
        self.hist = np.empty((Xb.shape[1], 256, 3), dtype=np.int64)
        self.seg = np.empty((self.P, 2), dtype=np.int64)
        self.sums = np.empty((self.C, 3), dtype=np.int64)
        self.best = np.empty(self.P, dtype=np.int64)
        self.queue = np.empty(self.P, dtype=np.int64)
        self.retrain_t = np.empty(n_scores * self.P, dtype=np.int64)
        self.retrain_v = np.empty(n_scores * self.P, dtype=np.int64)
        self.gains = np.empty(self.P, dtype=np.float64)
        self.frontier = np.empty(self.P, dtype=np.uint8)
        self.touched = np.empty(self.P, dtype=np.uint8)
        self.inside = np.empty(self.P, dtype=np.uint8)

    def fit(self):
        """Grow every tree from scratch on all rows, iteration by iteration: the derivatives of the scores so far,
        then per score a tree grown from a single leaf (:meth:`grow`) and its leaf values."""
        cdef Py_ssize_t n = self.n_rows, S = self.S, m, k, i
        cdef int t
        cdef int64_t[:, ::1] scores = np.empty((n, S), dtype=np.int64)
        cdef int64_t[::1] all_rows = np.arange(n, dtype=np.int64)
        cdef int32_t[:, ::1] gn = np.empty((n, S), dtype=np.int32)
        cdef int32_t[:, ::1] hn = np.empty((n, S), dtype=np.int32)
        self.loss.start(scores)
        for m in range(self.M):
            self.loss.derivatives_into(scores, all_rows, gn, hn)
            for k in range(S):
                t = <int>(m * S + k)
                for i in range(n):
                    self.g[t, i] = gn[i, k]
                    self.h[t, i] = hn[i, k]
                    self.sub[i] = i
                self.reset_tree(t)
                self.grow(t, 0, n)
                leaf_values(self.nodes, t, self.scale, self.loss.unit)
                for i in range(n):
                    scores[i, k] += self.nodes[t, self.leaf[t, i], VALUE]

    def update(self, const int64_t[::1] rows, int sign):
        """Add (sign +1; their labels and bins already stored) or delete (sign -1) ``rows``, iteration by
        iteration: added rows get their derivatives from the model as updated so far; the rows' stored derivatives
        go into or out of the sums on their paths; the nodes failing the tolerance rule are retrained (the first
        retrain of the pass computes every row's scores, carried on by the following iterations); the leaf values
        are set. Returns the number of nodes retrained."""
        cdef Py_ssize_t count = rows.shape[0], S = self.S, n = self.n_rows, m, k, i, j, retrains, retrained = 0
        cdef int t
        cdef int64_t[:, ::1] scores = np.empty((count if sign > 0 else 0, S), dtype=np.int64)
        cdef int32_t[:, ::1] gn = np.empty((count, S), dtype=np.int32)
        cdef int32_t[:, ::1] hn = np.empty((count, S), dtype=np.int32)
        cdef int64_t[:, ::1] pass_scores
        cdef int32_t[:, ::1] pass_g
        cdef int32_t[:, ::1] pass_h
        cdef int64_t[::1] all_rows
        cdef bint scored = False
        self.loss.start(scores)
        for m in range(self.M):
            if sign > 0:
                self.loss.derivatives_into(scores, rows, gn, hn)
                for k in range(S):
                    for i in range(count):
                        self.g[m * S + k, rows[i]] = gn[i, k]
                        self.h[m * S + k, rows[i]] = hn[i, k]
            retrains = self.check_iteration(m, rows, sign)
            if retrains:
                if not scored:
                    all_rows = np.arange(n, dtype=np.int64)
                    pass_scores = np.empty((n, S), dtype=np.int64)
                    self.loss.start(pass_scores)
                    pass_g = np.empty((n, S), dtype=np.int32)
                    pass_h = np.empty((n, S), dtype=np.int32)
                    for t in range(m * S):
                        self.add_leaf_scores(t, all_rows, pass_scores)
                    scored = True
                self.loss.derivatives_into(pass_scores, all_rows, pass_g, pass_h)
                for j in range(retrains):
                    self.retrain(<int>self.retrain_t[j], self.retrain_v[j], pass_g, pass_h)
                retrained += retrains
            for t in range(m * S, (m + 1) * S):
                leaf_values(self.nodes, t, self.scale, self.loss.unit)
                if sign > 0:
                    self.add_leaf_scores(t, rows, scores)
                if scored:
                    self.add_leaf_scores(t, all_rows, pass_scores)
        return retrained

    cdef void add_leaf_scores(self, int t, const int64_t[::1] rows, int64_t[:, ::1] scores) noexcept:
        """Add the value of the leaf each row reached in tree ``t`` to its score ``t % S``."""
        cdef Py_ssize_t i, k = t % self.S
        for i in range(rows.shape[0]):
            scores[i, k] += self.nodes[t, self.leaf[t, rows[i]], VALUE]

    cdef void reset_tree(self, int t) noexcept:
        """Tree ``t`` as a single empty leaf at node 0; every other node and every slot free."""
        cdef Py_ssize_t u, k
        for u in range(self.P):
            for k in range(N_FIELDS):
                self.nodes[t, u, k] = 0
            self.nodes[t, u, CAND] = IS_FREE
        self.nodes[t, 0, CAND] = IS_LEAF
        self.nodes[t, 0, LEFT] = -1
        self.nodes[t, 0, RIGHT] = -1
        self.nodes[t, 0, PARENT] = -1
        self.nodes[t, 0, SLOT] = -1
        for k in range(self.owner.shape[1]):
            self.owner[t, k] = -1

    cdef Py_ssize_t check_iteration(self, Py_ssize_t m, const int64_t[::1] rows, int sign) noexcept:
        """For the trees of iteration ``m``: add (sign +1, also recording each row's leaf) or remove (sign -1) the
        stored derivatives of ``rows`` in the sums on each row's path, then check the nodes the rows passed, top
        down (breadth first): a node whose split fails the tolerance rule (:func:`keeps`) goes into
        ``retrain_t``/``retrain_v`` and its subtree is not visited further. Returns how many there are."""
        cdef Py_ssize_t head, tail, count = 0
        cdef int64_t u
        cdef int t
        for t in range(m * self.S, (m + 1) * self.S):
            self.touched[:] = 0
            route_rows(self.nodes, self.slots, t, self.Xb, self.g, self.h, self.leaf, rows, sign, self.cand_feat,
                       self.cand_start, self.cand_thr, self.touched)
            if t + 1 < self.nodes.shape[0]:  # the next tree's root, fetched during this tree's checks
                prefetch_left_sums(self.nodes, self.slots, t + 1, 0)
            head = 0
            tail = 1
            self.queue[0] = 0
            while head < tail:
                u = self.queue[head]
                head += 1
                if self.nodes[t, u, CAND] < 0 or not self.touched[u]:
                    continue
                if keeps(self.nodes, self.slots, t, u, self.alpha, self.min_leaf):
                    self.queue[tail] = self.nodes[t, u, LEFT]
                    self.queue[tail + 1] = self.nodes[t, u, RIGHT]
                    tail += 2
                else:
                    self.retrain_t[count] = t
                    self.retrain_v[count] = u
                    count += 1
        return count

    cdef void retrain(self, int t, int64_t v, const int32_t[:, ::1] pass_g, const int32_t[:, ::1] pass_h) noexcept:
        """Refresh the stored derivatives of the rows reaching ``v`` to ``pass_g``/``pass_h`` (and the sums of its
        ancestors by the changes), then regrow its subtree."""
        cdef Py_ssize_t n = self.subtree_rows(t, v), k = t % self.S, i, c
        cdef int64_t row, a, s, total_g = 0, total_h = 0
        cdef bint changed = False
        # tg, th hold the changes (grow overwrites them afterwards)
        for i in range(n):
            row = self.sub[i]
            self.tg[i] = <int64_t>pass_g[row, k] - self.g[t, row]
            self.th[i] = <int64_t>pass_h[row, k] - self.h[t, row]
            self.g[t, row] = pass_g[row, k]
            self.h[t, row] = pass_h[row, k]
            changed = changed or self.tg[i] != 0 or self.th[i] != 0
            total_g += self.tg[i]
            total_h += self.th[i]
        if changed:
            cand_sums(self.Xb, self.sub, 0, n, self.tg, self.th, self.zeros, self.cand_start, self.cand_thr,
                      self.sums, self.hist)
            a = self.nodes[t, v, PARENT]
            while a >= 0:
                self.nodes[t, a, SUM_G] += total_g
                self.nodes[t, a, SUM_H] += total_h
                s = self.nodes[t, a, SLOT]
                for c in range(self.C):
                    self.slots[t, s, c, 0] += self.sums[c, 0]
                    self.slots[t, s, c, 1] += self.sums[c, 1]
                    self.slots[t, s, c, 2] += self.sums[c, 2]
                a = self.nodes[t, a, PARENT]
        self.grow(t, v, n)

    cdef Py_ssize_t subtree_rows(self, int t, int64_t v) noexcept:
        """The alive rows whose leaf in tree ``t`` lies in the subtree of ``v``, ascending, into ``sub``; returns
        their number."""
        cdef Py_ssize_t u, i, count = 0
        cdef int64_t a
        for u in range(self.P):
            if self.nodes[t, u, CAND] == IS_FREE:
                self.inside[u] = 0
                continue
            a = u
            while a >= 0 and a != v:
                a = self.nodes[t, a, PARENT]
            self.inside[u] = a == v
        for i in range(self.n_rows):
            if self.alive[i] and self.inside[self.leaf[t, i]]:
                self.sub[count] = i
                count += 1
        return count

    cdef void grow(self, int t, int64_t v, Py_ssize_t n) noexcept:
        """(Re)grow the subtree of node ``v`` of tree ``t`` on the rows ``sub[:n]`` (their stored derivatives),
        best first.

        The subtree's nodes but ``v`` are freed (and their candidate slots); ``v`` becomes a leaf with the rows'
        sums; then, while the tree has fewer than ``max_leaves`` leaves, the leaf of the subtree with the largest
        positive gain (ties: the lowest node id) and depth below ``max_depth`` is split at its best candidate
        (ties: the first candidate), its children taking the two lowest free node ids (left first) and it the
        lowest free slot. The smaller child's sums come from its rows, the larger one's by subtraction (exact in
        integers). Leaf values are set separately (:func:`leaf_values`). ``sub[:n]`` is reordered in place."""
        cdef int64_t[:, :, ::1] nodes = self.nodes, fr = self.fr
        cdef int64_t[::1] rows = self.sub, gv = self.gv, hv = self.hv, tmp = self.tmp, tg = self.tg, th = self.th
        cdef int64_t[:, ::1] seg = self.seg
        cdef int64_t[::1] best = self.best, stack = self.queue
        cdef double[::1] gains = self.gains
        cdef uint8_t[::1] frontier = self.frontier
        cdef const uint8_t[:, ::1] Xb = self.Xb
        cdef Py_ssize_t P = self.P, S_slots = self.slots.shape[1], C = self.C, i, w, c, k, lo, hi, mid, top, side
        cdef int64_t u, a, small, large, l_id, r_id, s_id, feat, thr
        cdef int leaves = 0
        cdef double gain
        # free the subtree below v
        stack[0] = v
        top = 1
        while top > 0:
            top -= 1
            u = stack[top]
            if nodes[t, u, CAND] >= 0:
                stack[top] = nodes[t, u, LEFT]
                stack[top + 1] = nodes[t, u, RIGHT]
                top += 2
                self.owner[t, nodes[t, u, SLOT]] = -1
            if u != v:
                nodes[t, u, CAND] = IS_FREE
        for k in range(N_FIELDS):
            if k != PARENT and k != DEPTH:
                nodes[t, v, k] = 0
        nodes[t, v, CAND] = IS_LEAF
        nodes[t, v, LEFT] = -1
        nodes[t, v, RIGHT] = -1
        nodes[t, v, SLOT] = -1
        for w in range(P):
            if nodes[t, w, CAND] == IS_LEAF:
                leaves += 1
            seg[w, 0] = 0
            seg[w, 1] = 0
            best[w] = -1
            gains[w] = 0.0
            frontier[w] = 0
        for i in range(n):
            gv[i] = self.g[t, rows[i]]
            hv[i] = self.h[t, rows[i]]
            nodes[t, v, SUM_G] += gv[i]
            nodes[t, v, SUM_H] += hv[i]
        nodes[t, v, SUM_N] = n
        seg[v, 1] = n
        if C > 0 and nodes[t, v, DEPTH] < self.max_depth and n >= 2 * self.min_leaf:
            cand_sums(Xb, rows, 0, n, gv, hv, self.ones, self.cand_start, self.cand_thr, fr[v], self.hist)
            best[v] = best_candidate(fr[v], nodes[t, v, SUM_G], nodes[t, v, SUM_H], n, self.min_leaf, &gain)
            gains[v] = gain
            frontier[v] = best[v] >= 0 and gain > 0.0
        while leaves < self.max_leaves:
            u = -1
            for w in range(P):
                if frontier[w] and (u < 0 or gains[w] > gains[u]):
                    u = w
            if u < 0:
                break
            frontier[u] = 0
            c = best[u]
            # slot and children ids
            s_id = -1
            for k in range(S_slots):
                if self.owner[t, k] < 0:
                    s_id = k
                    break
            l_id = -1
            r_id = -1
            for w in range(P):
                if nodes[t, w, CAND] == IS_FREE:
                    if l_id < 0:
                        l_id = w
                    else:
                        r_id = w
                        break
            self.owner[t, s_id] = u
            for k in range(C):
                self.slots[t, s_id, k, 0] = fr[u, k, 0]
                self.slots[t, s_id, k, 1] = fr[u, k, 1]
                self.slots[t, s_id, k, 2] = fr[u, k, 2]
            nodes[t, u, CAND] = c
            nodes[t, u, SLOT] = s_id
            nodes[t, u, LEFT] = l_id
            nodes[t, u, RIGHT] = r_id
            # stable partition of u's rows: left (bin <= threshold) first
            lo = seg[u, 0]
            hi = seg[u, 1]
            feat = self.cand_feat[c]
            thr = self.cand_thr[c]
            k = lo
            for i in range(lo, hi):
                if Xb[rows[i], feat] <= thr:
                    tmp[k] = rows[i]
                    tg[k] = gv[i]
                    th[k] = hv[i]
                    k += 1
            mid = k
            for i in range(lo, hi):
                if Xb[rows[i], feat] > thr:
                    tmp[k] = rows[i]
                    tg[k] = gv[i]
                    th[k] = hv[i]
                    k += 1
            for i in range(lo, hi):
                rows[i] = tmp[i]
                gv[i] = tg[i]
                hv[i] = th[i]
            for side in range(2):
                w = l_id if side == 0 else r_id
                for k in range(N_FIELDS):
                    nodes[t, w, k] = 0
                nodes[t, w, CAND] = IS_LEAF
                nodes[t, w, LEFT] = -1
                nodes[t, w, RIGHT] = -1
                nodes[t, w, SLOT] = -1
                nodes[t, w, PARENT] = u
                nodes[t, w, DEPTH] = nodes[t, u, DEPTH] + 1
            seg[l_id, 0] = lo
            seg[l_id, 1] = mid
            seg[r_id, 0] = mid
            seg[r_id, 1] = hi
            nodes[t, l_id, SUM_G] = fr[u, c, 0]
            nodes[t, l_id, SUM_H] = fr[u, c, 1]
            nodes[t, l_id, SUM_N] = fr[u, c, 2]
            nodes[t, r_id, SUM_G] = nodes[t, u, SUM_G] - fr[u, c, 0]
            nodes[t, r_id, SUM_H] = nodes[t, u, SUM_H] - fr[u, c, 1]
            nodes[t, r_id, SUM_N] = nodes[t, u, SUM_N] - fr[u, c, 2]
            leaves += 1
            if nodes[t, u, DEPTH] + 1 < self.max_depth:
                if mid - lo <= hi - mid:
                    small, large = l_id, r_id
                else:
                    small, large = r_id, l_id
                cand_sums(Xb, rows, seg[small, 0], seg[small, 1], gv, hv, self.ones, self.cand_start,
                          self.cand_thr, fr[small], self.hist)
                for k in range(C):
                    fr[large, k, 0] = fr[u, k, 0] - fr[small, k, 0]
                    fr[large, k, 1] = fr[u, k, 1] - fr[small, k, 1]
                    fr[large, k, 2] = fr[u, k, 2] - fr[small, k, 2]
                for side in range(2):
                    w = l_id if side == 0 else r_id
                    if nodes[t, w, SUM_N] >= 2 * self.min_leaf:
                        best[w] = best_candidate(fr[w], nodes[t, w, SUM_G], nodes[t, w, SUM_H],
                                                 nodes[t, w, SUM_N], self.min_leaf, &gain)
                        gains[w] = gain
                        frontier[w] = best[w] >= 0 and gain > 0.0
        # leaf of every row
        for w in range(P):
            if nodes[t, w, CAND] == IS_LEAF and seg[w, 1] > seg[w, 0]:
                a = w
                while a >= 0 and a != v:
                    a = nodes[t, a, PARENT]
                if a == v:
                    for i in range(seg[w, 0], seg[w, 1]):
                        self.leaf[t, rows[i]] = <int16_t>w


def ensemble_tables(const int64_t[:, :, ::1] nodes, const int32_t[::1] cand_feat, const uint8_t[::1] cand_thr,
                    int n_scores, int leaf_feature):
    """The trees as the exported format lays them out: each tree breadth first (the two children of a node side
    by side), a leaf's feature ``leaf_feature`` and its child the leaf's row, a leaf row holding the leaf value at
    score ``t % n_scores`` and 0 at the others. Returns (feature, threshold, child, roots, leaf rows)."""
    cdef Py_ssize_t T = nodes.shape[0], P = nodes.shape[1], t, i, head, tail, total = 0, n_leaves = 0
    cdef int64_t u, c
    feature_buf = np.empty(T * P, dtype=np.uint8)
    threshold_buf = np.empty(T * P, dtype=np.uint8)
    child_buf = np.empty(T * P, dtype=np.uint16)
    roots_buf = np.empty(T, dtype=np.uint16)
    leaves_buf = np.zeros((T * P, n_scores), dtype=np.int16)
    cdef uint8_t[::1] feature = feature_buf, threshold = threshold_buf
    cdef uint16_t[::1] child = child_buf, roots = roots_buf
    cdef int16_t[:, ::1] leaves = leaves_buf
    cdef int64_t[::1] order = np.empty(P, dtype=np.int64), position = np.empty(P, dtype=np.int64)
    for t in range(T):
        roots[t] = <uint16_t>total
        order[0] = 0
        head = 0
        tail = 1
        while head < tail:
            u = order[head]
            position[u] = total + head
            head += 1
            if nodes[t, u, CAND] >= 0:
                order[tail] = nodes[t, u, LEFT]
                order[tail + 1] = nodes[t, u, RIGHT]
                tail += 2
        for i in range(tail):
            u = order[i]
            c = nodes[t, u, CAND]
            if c >= 0:
                feature[total] = <uint8_t>cand_feat[c]
                threshold[total] = cand_thr[c]
                child[total] = <uint16_t>position[nodes[t, u, LEFT]]
            else:
                feature[total] = <uint8_t>leaf_feature
                threshold[total] = 0
                child[total] = <uint16_t>n_leaves
                leaves[n_leaves, t % n_scores] = <int16_t>nodes[t, u, VALUE]
                n_leaves += 1
            total += 1
    return feature_buf[:total], threshold_buf[:total], child_buf[:total], roots_buf, leaves_buf[:n_leaves]
