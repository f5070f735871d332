"""A slow reference of the in-place online GBDT: the same method, but every statistic (node totals and candidate
left sums) is recomputed from scratch from the kept rows and their stored derivatives whenever it is used, and
trees are grown in plain Python. It shares with the fast learner only the bins, the candidate sample, the classes
or the target scale, and the classifier's derivative function (the float part; a regressor's integer derivatives are
computed here); the paper says the statistics must be identical, and here they are compared bit for bit."""

from __future__ import annotations

import math

import numpy as np

from edgestream import _gbdt
from edgestream.learners.gbdt import InPlaceGBDT
from edgestream.task import REGRESSION, task_of

LEAF, FREE = -1, -2


class ReferenceGBDT:
    def __init__(self, model: InPlaceGBDT):
        """Take the fitted ``model``'s parameters, bins, candidates and rows (a from-scratch fit is then compared)."""
        self.p = model.get_params()
        self.regression = task_of(model) == REGRESSION
        self.S = model.n_scores_
        self.scale = model._leaf_scale
        self.unit = 1.0 if self.regression else 1024.0
        self.base = model._base_scores().astype(np.int64)
        self.encode = (lambda y: model.target_.encode(y)[0]) if self.regression else \
            (lambda y: np.searchsorted(model.classes_, y))
        self.cf, self.ct = model.cand_feature_.astype(int), model.cand_threshold_.astype(int)
        n = model.n_rows_
        self.Xb = model.rows_binned_[:n].astype(int).copy()
        self.y = model.rows_label_[:n].astype(int).copy()
        self.alive = model.rows_alive_[:n].astype(bool).copy()
        self.T = self.p["n_estimators"] * self.S
        self.P = 2 * self.p["max_leaves"] - 1
        self.bins = model.bins_

    # ------------------------------------------------------------------ from-scratch statistics
    def in_subtree(self, t, u):
        inside = set()
        for w in range(self.P):
            a = w
            while a >= 0 and a != u and self.cand[t][w] != FREE:
                a = self.parent[t][a]
            if a == u and self.cand[t][w] != FREE:
                inside.add(w)
        return inside

    def rows_of(self, t, u):
        inside = self.in_subtree(t, u)
        return np.array([i for i in range(len(self.y)) if self.alive[i] and self.leaf[t][i] in inside], dtype=int)

    def stats(self, t, rows):
        g, h = self.g[t][rows].astype(object), self.h[t][rows].astype(object)
        G, H, N = int(sum(g)), int(sum(h)), len(rows)
        left = []
        for c in range(len(self.ct)):
            mask = self.Xb[rows, self.cf[c]] <= self.ct[c]
            left.append((int(sum(g[mask])), int(sum(h[mask])), int(mask.sum())))
        return G, H, N, left

    @staticmethod
    def gain(GL, HL, G, H):
        GR, HR = G - GL, H - HL
        gl, gr, g = float(GL), float(GR), float(G)
        return (gl * gl) / float(HL) + (gr * gr) / float(HR) - (g * g) / float(H)

    def best(self, G, H, N, left):
        best, top = -1, 0.0
        for c, (GL, HL, NL) in enumerate(left):
            if NL < self.p["min_samples_leaf"] or N - NL < self.p["min_samples_leaf"]:
                continue
            gain = self.gain(GL, HL, G, H)
            if best < 0 or gain > top:
                best, top = c, gain
        return best, top

    def keeps(self, t, u):
        G, H, N, left = self.stats(t, self.rows_of(t, u))
        cur, m = self.cand[t][u], self.p["min_samples_leaf"]
        if left[cur][2] < m or N - left[cur][2] < m:
            return False
        own = self.gain(left[cur][0], left[cur][1], G, H)
        valid = [c for c, s in enumerate(left) if s[2] >= m and N - s[2] >= m]
        above = sum(self.gain(left[c][0], left[c][1], G, H) > own for c in valid)
        return above < max(1.0, math.ceil(self.p["alpha"] * len(valid)))

    # ------------------------------------------------------------------ trees
    def grow(self, t, v, rows):
        cand, parent, depth = self.cand[t], self.parent[t], self.depth[t]
        stack = [v]
        while stack:
            u = stack.pop()
            if cand[u] >= 0:
                stack += [self.left[t][u], self.right[t][u]]
            if u != v:
                cand[u] = FREE
        cand[v], self.left[t][v], self.right[t][v] = LEAF, -1, -1
        leaves = sum(c == LEAF for c in cand)
        segment, frontier = {v: rows}, {}

        def consider(u):
            r = segment[u]
            if depth[u] < self.p["max_depth"] and len(r) >= 2 * self.p["min_samples_leaf"] and len(self.ct):
                c, gain = self.best(*self.stats(t, r))
                if c >= 0 and gain > 0.0:
                    frontier[u] = (gain, c)

        consider(v)
        while leaves < self.p["max_leaves"] and frontier:
            u = None
            for w in sorted(frontier):
                if u is None or frontier[w][0] > frontier[u][0]:
                    u = w
            _, c = frontier.pop(u)
            free = [w for w in range(self.P) if cand[w] == FREE][:2]
            cand[u], self.left[t][u], self.right[t][u] = c, free[0], free[1]
            r = segment[u]
            go_left = self.Xb[r, self.cf[c]] <= self.ct[c]
            for w, part in zip(free, (r[go_left], r[~go_left])):
                cand[w], parent[w], depth[w] = LEAF, u, depth[u] + 1
                self.left[t][w] = self.right[t][w] = -1
                segment[w] = part
                self.leaf[t][part] = w
                consider(w)
            leaves += 1
        if v in segment and cand[v] == LEAF:
            self.leaf[t][rows] = v

    def set_values(self, t):
        for u in range(self.P):
            if self.cand[t][u] == LEAF:
                G, H, _, _ = self.stats(t, self.rows_of(t, u))
                if H > 0:
                    v = self.scale * (float(G) / float(H))
                    q = min(math.floor(abs(v) * self.unit + 0.5), 32768 if v < 0 else 32767)
                    self.value[t][u] = -q if v < 0 else q
                else:
                    self.value[t][u] = 0

    def scores(self, rows, n_trees):
        F = np.tile(self.base, (len(rows), 1))
        for t in range(n_trees):
            F[:, t % self.S] += self.value[t][self.leaf[t][rows]]
        return F

    def derivatives(self, rows, n_trees):
        F = self.scores(rows, n_trees)
        if self.regression:  # squared loss: the residual in codes (saturated to int32), hessian 1
            limit = 2**31 - 1
            return np.clip(self.y[rows, None] - F, -limit, limit), np.ones_like(F)
        loss = _gbdt.LogLoss(np.ascontiguousarray(self.y.astype(np.uint8)), self.S)
        return loss.derivatives(np.ascontiguousarray(F), np.ascontiguousarray(rows, dtype=np.int64))

    # ------------------------------------------------------------------ fit, add, delete
    def fit(self):
        n, T, P = len(self.y), self.T, self.P
        self.cand = [[FREE] * P for _ in range(T)]
        self.left = [[-1] * P for _ in range(T)]
        self.right = [[-1] * P for _ in range(T)]
        self.parent = [[-1] * P for _ in range(T)]
        self.depth = [[0] * P for _ in range(T)]
        self.value = [np.zeros(P, dtype=np.int64) for _ in range(T)]
        self.g = [np.zeros(n, dtype=np.int64) for _ in range(T)]
        self.h = [np.zeros(n, dtype=np.int64) for _ in range(T)]
        self.leaf = [np.zeros(n, dtype=np.int64) for _ in range(T)]
        rows = np.flatnonzero(self.alive)
        for m in range(self.p["n_estimators"]):
            grad, hess = self.derivatives(rows, m * self.S)
            for k in range(self.S):
                t = m * self.S + k
                self.g[t][rows], self.h[t][rows] = grad[:, k], hess[:, k]
                self.cand[t][0] = LEAF
                self.grow(t, 0, rows)
                self.set_values(t)
        return self

    def route(self, t, row):
        u, path = 0, []
        while True:
            path.append(u)
            c = self.cand[t][u]
            if c < 0:
                return u, path
            u = self.left[t][u] if self.Xb[row, self.cf[c]] <= self.ct[c] else self.right[t][u]

    def _pass(self, rows, adding):
        for m in range(self.p["n_estimators"]):
            if adding:
                grad, hess = self.derivatives(rows, m * self.S)
            retrain = []
            for k in range(self.S):
                t = m * self.S + k
                touched = set()
                for i, row in enumerate(rows):
                    if adding:
                        self.g[t][row], self.h[t][row] = grad[i, k], hess[i, k]
                    leaf, path = self.route(t, row)
                    touched.update(path)
                    if adding:
                        self.leaf[t][row] = leaf
                queue = [0]
                while queue:
                    u = queue.pop(0)
                    if self.cand[t][u] < 0 or u not in touched:
                        continue
                    if self.keeps(t, u):
                        queue += [self.left[t][u], self.right[t][u]]
                    else:
                        retrain.append((t, u))
            for t, v in retrain:
                inside = self.rows_of(t, v)
                grad_all, hess_all = self.derivatives(inside, m * self.S)
                self.g[t][inside], self.h[t][inside] = grad_all[:, t % self.S], hess_all[:, t % self.S]
                self.grow(t, v, inside)
            for k in range(self.S):
                self.set_values(m * self.S + k)

    def add(self, X, y):
        n = len(self.y)
        Xb = self.bins.transform(X).astype(int)
        self.Xb = np.vstack([self.Xb, Xb])
        self.y = np.concatenate([self.y, self.encode(y)])
        self.alive = np.concatenate([self.alive, np.ones(len(X), dtype=bool)])
        for t in range(self.T):
            for name in ("g", "h", "leaf"):
                getattr(self, name)[t] = np.concatenate([getattr(self, name)[t], np.zeros(len(X), dtype=np.int64)])
        rows = np.arange(n, n + len(X))
        self._pass(rows, True)
        return rows

    def delete(self, rows):
        rows = np.asarray(rows)
        self.alive[rows] = False
        self._pass(rows, False)

    # ------------------------------------------------------------------ comparison
    def assert_equals(self, model: InPlaceGBDT):
        """Trees, leaf values, kept rows' derivatives and leaves, and every node's statistics equal the model's."""
        from edgestream.learners.gbdt import F

        nodes = model.tree_nodes_
        alive = np.flatnonzero(self.alive)
        assert np.array_equal(model.rows_alive_[: len(self.y)].astype(bool), self.alive)
        for t in range(self.T):
            used = [u for u in range(self.P) if self.cand[t][u] != FREE]
            leaves = [u for u in range(self.P) if self.cand[t][u] == LEAF]
            for name, ours, where in (("cand", self.cand[t], used), ("parent", self.parent[t], used),
                                      ("value", self.value[t], leaves)):
                assert np.array_equal(nodes[t, where, F[name]], np.asarray(ours)[where]), (t, name)
            for u in (u for u in range(self.P) if self.cand[t][u] >= 0):
                assert (nodes[t, u, F["left"]], nodes[t, u, F["right"]]) == (self.left[t][u], self.right[t][u])
            assert np.array_equal(model.rows_grad_[t, alive], self.g[t][alive]), t
            assert np.array_equal(model.rows_hess_[t, alive], self.h[t][alive]), t
            assert np.array_equal(model.rows_leaf_[t, alive], self.leaf[t][alive]), t
            for u in range(self.P):
                if self.cand[t][u] == FREE:
                    continue
                G, H, N, left = self.stats(t, self.rows_of(t, u))
                assert tuple(nodes[t, u, [F["G"], F["H"], F["N"]]]) == (G, H, N), (t, u)
                if self.cand[t][u] >= 0:
                    assert model.slots_[t, nodes[t, u, F["slot"]]].tolist() == [list(s) for s in left], (t, u)


def replay_against_reference(model: InPlaceGBDT, X_new, y_new, steps, seed: int) -> None:
    """Compare ``model`` with a from-scratch reference after its fit and after each step: ``(True, count)`` adds
    the next ``count`` rows of ``X_new``, ``y_new``; ``(False, count)`` deletes ``count`` random kept rows (at
    least 2 stay)."""
    reference = ReferenceGBDT(model).fit()
    reference.assert_equals(model)
    rng = np.random.default_rng(seed)
    taken = 0
    for adding, count in steps:
        if adding:
            rows = model.add(X_new[taken:taken + count], y_new[taken:taken + count])
            assert np.array_equal(rows, reference.add(X_new[taken:taken + count], y_new[taken:taken + count]))
            taken += count
        else:
            kept = np.flatnonzero(model.rows_alive_[: model.n_rows_])
            rows = rng.choice(kept, size=min(count, len(kept) - 2), replace=False)
            model.delete(rows)
            reference.delete(rows)
        reference.assert_equals(model)
