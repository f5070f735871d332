# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, language_level=3
"""Hot loops of the in-place online GBDT (:mod:`edgestream.learners.gbdt`).

All statistics are integers: a row's stored derivatives are int32 with ``DERIV_BITS`` fraction bits, and a node
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
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

cnp.import_array()

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


cdef inline double split_gain(int64_t GL, int64_t HL, int64_t G, int64_t H) noexcept nogil:
    """Gain of a split: GL^2/HL + GR^2/HR - G^2/H, in double from the exact integer sums."""
    cdef int64_t GR = G - GL
    cdef int64_t HR = H - HL
    cdef double gl = <double>GL, gr = <double>GR, g = <double>G
    return (gl * gl) / <double>HL + (gr * gr) / <double>HR - (g * g) / <double>H


cdef inline int16_t quantize_score(double v) noexcept nogil:
    """As :func:`edgestream.fixedpoint.quantize_scores`: round half away from zero to Q10, saturating."""
    cdef double q = floor(fabs(v) * SCORE_ONE + 0.5)
    if q > 32767.0:
        q = 32768.0 if v < 0 else 32767.0
    if v < 0:
        return <int16_t>(-q)
    return <int16_t>q


def derivatives(const int64_t[:, ::1] F, const uint8_t[::1] y, int n_classes):
    """Stored derivatives of rows with score sums ``F`` (Q10, one column per score): the residual
    ``r = [y == k] - p_k`` and hessian ``p_k (1 - p_k)`` of robust LogitBoost, as int32 with ``DERIV_BITS`` fraction
    bits (round half to even; a hessian is at least 1 unit so that every row weighs). One score (binary): ``p`` is
    the sigmoid of ``F``; otherwise the softmax over the scores."""
    cdef Py_ssize_t n = F.shape[0], S = F.shape[1], i, k
    g_out = np.empty((n, S), dtype=np.int32)
    h_out = np.empty((n, S), dtype=np.int32)
    cdef int32_t[:, ::1] g = g_out
    cdef int32_t[:, ::1] h = h_out
    cdef double mx, total, p, target, hq
    e_buf = np.empty(max(S, 1), dtype=np.float64)
    cdef double[::1] ev = e_buf
    for i in range(n):
        if S == 1:
            p = 1.0 / (1.0 + exp(-(<double>F[i, 0]) / SCORE_ONE))
            target = 1.0 if y[i] == 1 else 0.0
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
            target = 1.0 if y[i] == k else 0.0
            g[i, k] = <int32_t>nearbyint((target - p) * DERIV_ONE)
            hq = nearbyint(p * (1.0 - p) * DERIV_ONE)
            h[i, k] = <int32_t>(hq if hq >= 1.0 else 1.0)
    return g_out, h_out


def scores_before(const int64_t[:, :, ::1] nodes, const int16_t[:, ::1] leaf, const int64_t[::1] rows,
                  int n_trees, int n_scores):
    """Q10 score sums of ``rows`` over trees ``0..n_trees-1`` (tree ``t`` adds to score ``t % n_scores``) from the
    leaf each row reached in each tree and the leaves' current values."""
    cdef Py_ssize_t n = rows.shape[0], i, t
    out = np.zeros((n, n_scores), dtype=np.int64)
    cdef int64_t[:, ::1] F = out
    for t in range(n_trees):
        for i in range(n):
            F[i, t % n_scores] += nodes[t, leaf[t, rows[i]], VALUE]
    return out


def leaf_scores(const int64_t[:, :, ::1] nodes, const int16_t[:, ::1] leaf, int t, const int64_t[::1] rows):
    """Current value of the leaf each row reached in tree ``t``."""
    cdef Py_ssize_t n = rows.shape[0], i
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    for i in range(n):
        o[i] = nodes[t, leaf[t, rows[i]], VALUE]
    return out


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


def candidate_sums(const uint8_t[:, ::1] Xb, const int64_t[::1] rows, const int64_t[::1] gv,
                   const int64_t[::1] hv, const int64_t[::1] nv, const int32_t[::1] cand_start,
                   const uint8_t[::1] cand_thr):
    """Left sums [C, 3] of ``rows`` with per-row values (gv, hv, nv) at every candidate."""
    out = np.zeros((cand_thr.shape[0], 3), dtype=np.int64)
    hist = np.empty((Xb.shape[1], 256, 3), dtype=np.int64)
    cand_sums(Xb, rows, 0, rows.shape[0], gv, hv, nv, cand_start, cand_thr, out, hist)
    return out


cdef inline int best_candidate(const int64_t[:, ::1] sums, int64_t G, int64_t H, int64_t N, int64_t min_leaf,
                               double* best_gain) noexcept nogil:
    """First candidate of largest gain among the valid ones (``min_leaf`` rows or more on each side); -1 if
    none."""
    cdef Py_ssize_t c
    cdef int best = -1
    cdef double gain, top = 0.0
    for c in range(sums.shape[0]):
        if sums[c, 2] < min_leaf or N - sums[c, 2] < min_leaf:
            continue
        gain = split_gain(sums[c, 0], sums[c, 1], G, H)
        if best < 0 or gain > top:
            best = <int>c
            top = gain
    best_gain[0] = top
    return best


cdef void route_rows(int64_t[:, :, ::1] nodes, int64_t[:, :, :, ::1] slots, int t, const uint8_t[:, ::1] Xb,
                     const int32_t[:, ::1] g, const int32_t[:, ::1] h, int16_t[:, ::1] leaf,
                     const int64_t[::1] rows, int sign, const int32_t[::1] cand_feat, const int32_t[::1] cand_start,
                     const uint8_t[::1] cand_thr, uint8_t[::1] touched) noexcept nogil:
    cdef Py_ssize_t i, f, row, F = Xb.shape[1]
    cdef int64_t u, s, c, gr, hr
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
            for f in range(F):
                v = Xb[row, f]
                c = cand_start[f + 1] - 1
                while c >= cand_start[f] and cand_thr[c] >= v:
                    slots[t, s, c, 0] += gr
                    slots[t, s, c, 1] += hr
                    slots[t, s, c, 2] += sign
                    c -= 1
            c = nodes[t, u, CAND]
            u = nodes[t, u, LEFT] if Xb[row, cand_feat[c]] <= cand_thr[c] else nodes[t, u, RIGHT]
        if sign > 0:
            leaf[t, row] = <int16_t>u


cdef bint keeps(const int64_t[:, :, ::1] nodes, const int64_t[:, :, :, ::1] slots, int t, int64_t u,
                double alpha, int64_t min_leaf) noexcept nogil:
    cdef int64_t G = nodes[t, u, SUM_G], H = nodes[t, u, SUM_H], N = nodes[t, u, SUM_N]
    cdef int64_t s = nodes[t, u, SLOT], cur = nodes[t, u, CAND]
    cdef Py_ssize_t c, C = slots.shape[2]
    cdef int64_t valid = 0, above = 0
    cdef double gain, own, allowed
    if slots[t, s, cur, 2] < min_leaf or N - slots[t, s, cur, 2] < min_leaf:
        return False
    own = split_gain(slots[t, s, cur, 0], slots[t, s, cur, 1], G, H)
    for c in range(C):
        if slots[t, s, c, 2] < min_leaf or N - slots[t, s, c, 2] < min_leaf:
            continue
        valid += 1
        gain = split_gain(slots[t, s, c, 0], slots[t, s, c, 1], G, H)
        if gain > own:
            above += 1
    allowed = ceil(alpha * <double>valid)
    if allowed < 1.0:
        allowed = 1.0
    return <double>above < allowed


def keeps_split(const int64_t[:, :, ::1] nodes, const int64_t[:, :, :, ::1] slots, int t, int u, double alpha,
                int min_leaf):
    """The tolerance rule at internal node ``u``: its split stays while it is valid (``min_leaf`` rows or more
    on each side) and fewer than ``max(1, ceil(alpha * valid))`` valid candidates have a strictly larger gain."""
    return bool(keeps(nodes, slots, t, u, alpha, min_leaf))


def route_check(int64_t[:, :, ::1] nodes, int64_t[:, :, :, ::1] slots, int first, int stop,
                const uint8_t[:, ::1] Xb, const int32_t[:, ::1] g, const int32_t[:, ::1] h, int16_t[:, ::1] leaf,
                const int64_t[::1] rows, int sign, const int32_t[::1] cand_feat, const int32_t[::1] cand_start,
                const uint8_t[::1] cand_thr, double alpha, int min_leaf):
    """For trees ``first..stop-1``: add (sign +1, also recording each row's leaf) or remove (sign -1) the stored
    derivatives of ``rows`` in the sums on each row's path, then check the nodes the rows passed, top down
    (breadth first): a node whose split fails :func:`keeps_split` is returned as ``(tree, node)`` to retrain, and
    its subtree is not visited further."""
    cdef Py_ssize_t P = nodes.shape[1], head, tail
    touched_buf = np.zeros(P, dtype=np.uint8)
    cdef uint8_t[::1] touched = touched_buf
    queue_buf = np.zeros(P, dtype=np.int64)
    cdef int64_t[::1] queue = queue_buf
    cdef int64_t u
    cdef int t
    out = []
    for t in range(first, stop):
        touched[:] = 0
        route_rows(nodes, slots, t, Xb, g, h, leaf, rows, sign, cand_feat, cand_start, cand_thr, touched)
        head = 0
        tail = 1
        queue[0] = 0
        while head < tail:
            u = queue[head]
            head += 1
            if nodes[t, u, CAND] < 0 or not touched[u]:
                continue
            if keeps(nodes, slots, t, u, alpha, min_leaf):
                queue[tail] = nodes[t, u, LEFT]
                queue[tail + 1] = nodes[t, u, RIGHT]
                tail += 2
            else:
                out.append((t, <int>u))
    return out


def finish(int64_t[:, :, ::1] nodes, int first, int stop, double scale, const int16_t[:, ::1] leaf,
           const int64_t[::1] rows, int64_t[:, ::1] scores):
    """Set the leaf values of trees ``first..stop-1`` (:func:`set_leaf_values`) and add each tree's leaf value to
    ``scores[:, t % n_scores]`` of ``rows`` (unless ``scores`` has no rows)."""
    cdef int t
    cdef Py_ssize_t i, S = scores.shape[1]
    for t in range(first, stop):
        leaf_values(nodes, t, scale)
        if scores.shape[0]:
            for i in range(rows.shape[0]):
                scores[i, t % S] += nodes[t, leaf[t, rows[i]], VALUE]


cdef void leaf_values(int64_t[:, :, ::1] nodes, int t, double scale) noexcept nogil:
    cdef Py_ssize_t u
    for u in range(nodes.shape[1]):
        if nodes[t, u, CAND] == IS_LEAF:
            if nodes[t, u, SUM_H] > 0:
                nodes[t, u, VALUE] = quantize_score(scale * (<double>nodes[t, u, SUM_G] / <double>nodes[t, u, SUM_H]))
            else:
                nodes[t, u, VALUE] = 0


def set_leaf_values(int64_t[:, :, ::1] nodes, int t, double scale):
    """Every leaf's Q10 score ``quantize(scale * G / H)`` (0 for an empty leaf)."""
    leaf_values(nodes, t, scale)


def subtree_rows(const int64_t[:, :, ::1] nodes, const int16_t[:, ::1] leaf, int t, int v,
                 const uint8_t[::1] alive):
    """Alive rows whose leaf in tree ``t`` lies in the subtree of ``v``, ascending."""
    cdef Py_ssize_t P = nodes.shape[1], i, n = alive.shape[0]
    inside_buf = np.zeros(P, dtype=np.uint8)
    cdef uint8_t[::1] inside = inside_buf
    cdef int64_t u, a
    for u in range(P):
        if nodes[t, u, CAND] == IS_FREE:
            continue
        a = u
        while a >= 0 and a != v:
            a = nodes[t, a, PARENT]
        inside[u] = a == v
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef Py_ssize_t k = 0
    for i in range(n):
        if alive[i] and inside[leaf[t, i]]:
            o[k] = i
            k += 1
    return out[:k]


def grow(int64_t[:, :, ::1] nodes, int64_t[:, :, :, ::1] slots, int64_t[:, ::1] slot_owner, int t, int v,
         const uint8_t[:, ::1] Xb, const int32_t[:, ::1] g, const int32_t[:, ::1] h, int16_t[:, ::1] leaf,
         int64_t[::1] rows, const int32_t[::1] cand_feat, const int32_t[::1] cand_start,
         const uint8_t[::1] cand_thr, int max_leaves, int max_depth, int min_leaf):
    """(Re)grow the subtree of node ``v`` of tree ``t`` on ``rows`` (their stored derivatives), best first.

    The subtree's nodes but ``v`` are freed (and their candidate slots); ``v`` becomes a leaf with the rows' sums;
    then, while the tree has fewer than ``max_leaves`` leaves, the leaf of the subtree with the largest positive
    gain (ties: the lowest node id) and depth below ``max_depth`` is split at its best candidate (ties: the first
    candidate), its children taking the two lowest free node ids (left first) and it the lowest free slot. The
    smaller child's sums come from its rows, the larger one's by subtraction (exact in integers). Leaf values are
    set separately (:func:`set_leaf_values`). ``rows`` is reordered in place."""
    cdef Py_ssize_t P = nodes.shape[1], S = slots.shape[1], C = slots.shape[2], F = Xb.shape[1]
    cdef Py_ssize_t n = rows.shape[0], i, u, w, c, k, lo, hi, mid
    cdef int64_t a
    # free the subtree below v
    stack = [v]
    while stack:
        u = stack.pop()
        if nodes[t, u, CAND] >= 0:
            stack.append(nodes[t, u, LEFT])
            stack.append(nodes[t, u, RIGHT])
            slot_owner[t, nodes[t, u, SLOT]] = -1
        if u != v:
            nodes[t, u, CAND] = IS_FREE
    for k in range(N_FIELDS):
        if k not in (PARENT, DEPTH):
            nodes[t, v, k] = 0
    nodes[t, v, CAND] = IS_LEAF
    nodes[t, v, LEFT] = -1
    nodes[t, v, RIGHT] = -1
    nodes[t, v, SLOT] = -1
    cdef int leaves = 0
    for u in range(P):
        if nodes[t, u, CAND] == IS_LEAF:
            leaves += 1
    # per-row values and the frontier's scratch
    gv_buf = np.empty(n, dtype=np.int64)
    hv_buf = np.empty(n, dtype=np.int64)
    nv_buf = np.ones(n, dtype=np.int64)
    cdef int64_t[::1] gv = gv_buf, hv = hv_buf, nv = nv_buf
    for i in range(n):
        gv[i] = g[t, rows[i]]
        hv[i] = h[t, rows[i]]
        nodes[t, v, SUM_G] += gv[i]
        nodes[t, v, SUM_H] += hv[i]
    nodes[t, v, SUM_N] = n
    fr_buf = np.zeros((P, C, 3), dtype=np.int64)
    cdef int64_t[:, :, ::1] fr = fr_buf
    hist_buf = np.empty((F, 256, 3), dtype=np.int64)
    cdef int64_t[:, :, ::1] hist = hist_buf
    seg_buf = np.zeros((P, 2), dtype=np.int64)
    cdef int64_t[:, ::1] seg = seg_buf
    best_buf = np.full(P, -1, dtype=np.int64)
    cdef int64_t[::1] best = best_buf
    gain_buf = np.zeros(P, dtype=np.float64)
    cdef double[::1] gains = gain_buf
    frontier_buf = np.zeros(P, dtype=np.uint8)
    cdef uint8_t[::1] frontier = frontier_buf
    tmp_buf = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] tmp = tmp_buf
    tg_buf = np.empty(n, dtype=np.int64)
    th_buf = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] tg = tg_buf, th = th_buf
    cdef double gain
    cdef int64_t small, large, l_id, r_id, s_id, feat, thr, nl, nr
    seg[v, 0] = 0
    seg[v, 1] = n
    if C > 0 and nodes[t, v, DEPTH] < max_depth and n >= 2 * min_leaf:
        cand_sums(Xb, rows, 0, n, gv, hv, nv, cand_start, cand_thr, fr[v], hist)
        best[v] = best_candidate(fr[v], nodes[t, v, SUM_G], nodes[t, v, SUM_H], n, min_leaf, &gain)
        gains[v] = gain
        frontier[v] = best[v] >= 0 and gain > 0.0
    while leaves < max_leaves:
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
        for k in range(S):
            if slot_owner[t, k] < 0:
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
        slot_owner[t, s_id] = u
        slots[t, s_id, :, :] = fr[u]
        nodes[t, u, CAND] = c
        nodes[t, u, SLOT] = s_id
        nodes[t, u, LEFT] = l_id
        nodes[t, u, RIGHT] = r_id
        # stable partition of u's rows: left (bin <= threshold) first
        lo = seg[u, 0]
        hi = seg[u, 1]
        feat = cand_feat[c]
        thr = cand_thr[c]
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
        for w in (l_id, r_id):
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
        if nodes[t, u, DEPTH] + 1 < max_depth:
            nl = mid - lo
            nr = hi - mid
            small, large = (l_id, r_id) if nl <= nr else (r_id, l_id)
            cand_sums(Xb, rows, seg[small, 0], seg[small, 1], gv, hv, nv, cand_start, cand_thr, fr[small], hist)
            for k in range(C):
                fr[large, k, 0] = fr[u, k, 0] - fr[small, k, 0]
                fr[large, k, 1] = fr[u, k, 1] - fr[small, k, 1]
                fr[large, k, 2] = fr[u, k, 2] - fr[small, k, 2]
            for w in (l_id, r_id):
                if nodes[t, w, SUM_N] >= 2 * min_leaf:
                    best[w] = best_candidate(fr[w], nodes[t, w, SUM_G], nodes[t, w, SUM_H],
                                             nodes[t, w, SUM_N], min_leaf, &gain)
                    gains[w] = gain
                    frontier[w] = best[w] >= 0 and gain > 0.0
    # leaf of every row
    for u in range(P):
        if nodes[t, u, CAND] == IS_LEAF and seg[u, 1] > seg[u, 0]:
            a = u
            while a >= 0 and a != v:
                a = nodes[t, a, PARENT]
            if a == v:
                for i in range(seg[u, 0], seg[u, 1]):
                    leaf[t, rows[i]] = <int16_t>u
