"""The resumable training job of Adaptive XGBoost (:mod:`edgestream.learners.axgb`): one new member grown
breadth first on a window of the ring, in pieces of work spread over the learn calls; the specification of the
job in ``csrc/es_axgb.c``.

Bounded work per sample
    Training is a resumable job of pieces of work, each weighing a number of units
    (:func:`unit_weights`, calibrated so that a unit costs about the same number of instructions in every phase):
    the margins and probabilities of one window sample (``grad`` + ``walk`` per member it walks); adding one
    sample to the histogram of one (node, feature) or to the node totals (``hist``); scanning one histogram bin
    (``scan``); deciding one node (``node``); one step of a node's partition (``part``). With ``work_per_call = 0``
    the whole job runs in the ``learn`` call that fills the window (as in the paper); with ``work_per_call = U >
    0`` every ``learn`` call runs pieces while it has units left (the last piece may overrun ``U`` by less than its
    weight), so the job spreads over the following samples. ``U`` must keep up: a job of window ``W`` takes at
    most ``c(W) = ceil(J(W) / U)`` calls (``J`` = :func:`job_units`), and ``c(W) <= next(W) = min(2 W, W_max)``
    is required for every window size, so a job always ends before the next window is full
    (:meth:`~edgestream.learners.axgb.AXGB.min_work_per_call`). The samples keep arriving in a ring buffer of
    ``max_W (W + c(W) - 1)`` rows (``W_max`` with ``U = 0``). Both modes learn the same members; only when they
    join the ensemble differs. **The default is automatic** (``work_per_call=None``): ``U = ceil(5 J(W_max) / (4
    W_max))`` (``AUTO_SPREAD``; or the smallest that keeps up, if larger), so a job of ``W_max`` ends within 4/5 of
    the calls that fill the next window and no call trains more than 5/4 of the bound's share of a call in the
    steady state (one ``W_max`` job per ``W_max`` samples). The ring grows by ``c(W_max)``, ``4 W_max / 5`` rows
    (``W_max`` for the smallest ``U``); spreading less (2x the share) keeps the members a little fresher but
    makes the worst call about 4x the mean. ``J`` counts only the nodes that can split (:func:`split_samples`),
    so that it stays within about twice a real job. Measured (QEMU, the 8 KiB plans, 2000 rows learned in Python,
    then 512 calls; learn instructions mean / worst): SEA Cortex-M4F 5,389 / 15,026 (2.8x), Cortex-M0 10,598 /
    29,433 (2.8x); hyperplane (``W_max`` 128, 8 members, depth 4) M4F 11,750 / 32,091 (2.7x), M0 28,037 / 57,358
    (2.0x) (whole job: about 100x). The hyperplane worst calls are training alone (histograms and bin scans of 10
    features): only a smaller ``U``, so a larger ring, lowers them.
    With ``U > 0`` ADWIN's checks are spread too: at most ``DRIFT_CUTS`` cut tests' worth of ADWIN's steps per
    call (cut tests, a pass's logarithms, queued bits; :mod:`edgestream.adwin`, "Bounded work per update"), with
    the same detections, reported a few samples later;
    with ``U = 0`` ADWIN is the published one.

Node order and partition
    Node ``v``'s samples are ``order[start_v:stop_v]``; a split partitions them in
    place by the two-pointer rule (``i`` from the start, ``j`` from the end: a left sample advances ``i``, a right
    one is swapped with ``order[j - 1]`` and ``j`` moves down), one ``part`` piece per sample; the left child is
    ``[start, i)`` and the right ``[i, stop)``.
"""

from __future__ import annotations

import numpy as np

from ..fixedpoint import LEAF_MAX, LEAF_MIN, Q15_ONE
from ..task import REGRESSION, task_of
from ..tree import LEAF_FEATURE

IDLE, GRAD, HIST, SCAN, NODE, PART = range(6)  # job phases
NO_FEATURE = 255


def trunc_div(a: int, b: int) -> int:
    """a / b rounded toward zero (C99) for b > 0."""
    return -((-a) // b) if a < 0 else a // b


def unit_weights(outputs: int) -> dict[str, int]:
    """Units of each piece of a training job's work, for ``outputs`` scores per leaf, so that a unit costs about
    25 instructions on a Cortex-M4F and 30 on a Cortex-M0 whatever the piece: the margins of one sample (``grad``,
    plus ``walk`` per member it walks), one sample added to a histogram or to the node totals (``hist``), one
    histogram bin visited (``scan``) and, if it is not empty and both sides can be children, its split gain
    evaluated (``gain``: two 64-bit divisions per output), one node decided (``node``: a 64-bit division per
    output for a leaf), one partition step (``part``). From least squares on QEMU instruction counts per learn
    call against the pieces each call ran (512 calls of the automatic spread on SEA at the 8 KiB plan, with ADWIN's
    steps and a cost per phase entered as further terms), per piece for 2 classes, Cortex-M4F / Cortex-M0:
    grad 258 / 289, walk 71 / 85, hist 78 / 107, scan 44 / 67, gain 174 / 958, leaf division 155 / 789, part 24 /
    30. The gain is the one piece whose cost differs between the cores (no 64-bit division in hardware, and the
    M0 not even a 32-bit one); its weight sits between them, so a call heavy in gains costs about 0.4x (M4F) and
    1.6x (M0) a unit's instructions. Outputs scale the per-output work (3 classes measured with the weights of an
    earlier calibration: hist about 110 instructions per sample and output)."""
    return {"grad": 10 * outputs, "walk": outputs + 2, "hist": 4 * outputs - 1, "scan": 2 * outputs,
            "gain": 20 * outputs, "node": 2 + 12 * outputs, "part": 1}


def split_samples(outputs: int, min_child_q15: int, regression: bool = False) -> int:
    """The fewest samples of a node that can split: each child needs a hessian sum of ``min_child_q15`` and one
    sample's is at most 8192 (binary: ``p (1 - p)`` in Q15), 16384 per output (softmax: ``2 p (1 - p)``) or 32768
    (squared error: 1); at least 2. A smaller node can only be a leaf, so it is not searched."""
    most = Q15_ONE if regression else 8192 if outputs == 1 else 16384 * outputs
    return max(2, 2 * -(-min_child_q15 // most))


def job_units(window: int, n_features: int, hist_bins: int, max_depth: int, members: int, outputs: int = 1,
              min_child_q15: int = 0, regression: bool = False) -> int:
    """An upper bound of the units a training job on ``window`` samples takes (weights of
    :func:`unit_weights`): the margins (a sample walks at most ``members`` members), then per level at most
    ``window`` samples (internal levels: a histogram pass per feature and a partition; the last level: a totals
    pass); per internal level ``d`` at most ``k <= min(2^d, window // s)`` splittable nodes (``s`` =
    :func:`split_samples`), each visiting every bin of every feature, and per feature at most
    ``min(k (hist_bins - 2), window - k e)`` gains (a gain needs a non-empty bin, the last two bins have none,
    and with ``min_child_q15 > 0`` a node of ``n`` samples has at most ``n - e``, ``e = s - 1``: each side
    keeps ``s / 2`` samples); every node decided."""
    return sum(job_pieces(window, n_features, hist_bins, max_depth, members, outputs, min_child_q15,
                          regression).values())


def job_pieces(window: int, n_features: int, hist_bins: int, max_depth: int, members: int, outputs: int = 1,
               min_child_q15: int = 0, regression: bool = False) -> dict[str, int]:
    """:func:`job_units` by kind of work: the margins (``margins``, ``members`` walked per sample), the passes
    over samples (``samples``: histograms, totals, partitions), the work per node (``nodes``: bins scanned,
    decisions) and the split gains (``gains``: at most one per non-empty bin; features of few distinct values
    fill fewer bins, so a job evaluates fewer)."""
    w = unit_weights(outputs)
    s = split_samples(outputs, min_child_q15, regression)
    e = s - 1 if min_child_q15 > 0 else 0
    nodes = [min(2**d, window // s) for d in range(max_depth)]
    gains = sum(max(min(k * (hist_bins - 2), window - k * e) for k in range(n + 1)) for n in nodes)
    return {"margins": window * (w["grad"] + w["walk"] * members),
            "samples": max_depth * window * (n_features * w["hist"] + w["part"]) + window * w["hist"],
            "nodes": n_features * sum(nodes) * hist_bins * w["scan"] + (2 ** (max_depth + 1) - 1) * w["node"],
            "gains": n_features * gains * w["gain"]}


class TrainingJob:
    """The job's steps on an AXGB model's state (a mixin of :class:`~edgestream.learners.axgb.AXGB`: the ring,
    the tree slots and the job's counters and regions are its ``STATE``)."""

    def _work(self, budget: int) -> None:
        """Run up to ``budget`` units (-1: until the job is done and no new one can start); the units run are
        kept in ``last_units_``, the work done per phase in ``last_work_`` (host only, for tests and reports:
        samples of GRAD, the member walks among them, samples of HIST, bins of SCAN, gains evaluated, nodes decided, partition
        steps)."""
        self.last_work_ = dict.fromkeys(("grad", "walks", "hist", "scan", "gain", "node", "part"), 0)
        start = budget
        while budget != 0:
            if self.phase == IDLE:
                if self.count < self.window:
                    break
                self._start_job()
            budget = self._run_phase(budget)
        self.last_units_ = start - budget

    def _start_job(self) -> None:
        self.job_window = self.window
        self.window = min(2 * self.window, self.window_max)
        used = {int(r) // self.nodes_per_tree for r in self.roots[: self.n_members]}
        self.job_slot = min(set(range(self.members + 1)) - used)
        if self.strategy == "replace":
            self.job_target = self.replace_index
            self.replace_index = (self.replace_index + 1) % self.members
        else:
            self.job_target = self.n_members
        self.phase, self.pos = GRAD, 0

    def _run_phase(self, budget: int) -> int:
        """Some units of the current phase; returns the budget left (negative: unlimited)."""
        phase = self.phase
        if phase == GRAD:
            return self._grad(budget)
        if phase == HIST:
            return self._hist(budget)
        if phase == SCAN:
            return self._scan(budget)
        if phase == NODE:
            self._node()
            return self._spend(budget, 1, self.units["node"])[1]
        return self._partition(budget)

    @staticmethod
    def _spend(budget: int, remaining: int, weight: int) -> tuple[int, int]:
        """(pieces of ``weight`` units to run of the ``remaining`` ones, the budget left): while budget is left
        (the last piece may overrun it, then 0 is left); all of them for a negative (unlimited) budget."""
        if budget < 0:
            return remaining, budget - remaining * weight
        n = min(remaining, -(-budget // weight))
        return n, max(budget - n * weight, 0)

    @property
    def units(self) -> dict:
        """Units of each piece of the job's work (:func:`unit_weights` of this model's outputs)."""
        return unit_weights(self.n_outputs)

    def _grad(self, budget: int) -> int:
        units = self.units  # a sample walks job_target members
        n, left = self._spend(budget, self.job_window - self.pos, units["grad"] + units["walk"] * self.job_target)
        i = np.arange(self.pos, self.pos + n)
        sums = self._score_sums(self.window_bins[(self.head + i) % self._capacity], self.job_target)
        self._keep_margins(self.pos, sums)
        self.order[self.pos : self.pos + n] = i
        self.last_work_["grad"] += n
        self.last_work_["walks"] += n * self.job_target
        self.pos += n
        if self.pos == self.job_window:
            self.node_start[0], self.node_stop[0], self.node_depth[0] = 0, self.job_window, 0
            self.node, self.n_nodes, self.n_leaves = 0, 1, 0
            self._begin_node()
        return left

    def _splittable(self) -> bool:
        v = self.node
        return (self.node_depth[v] < self.max_depth
                and self.node_stop[v] - self.node_start[v] >= split_samples(self.n_outputs, self.min_child_q15,
                                                                            task_of(self) == REGRESSION))

    def _begin_node(self) -> None:
        self.node_g[:] = 0
        self.node_h[:] = 0
        self.best_gain, self.best_feature, self.best_bin = 2 * self.gamma_q15, NO_FEATURE, 0
        self.feature = 0 if self._splittable() else self.n_features_
        self.phase, self.pos = HIST, int(self.node_start[self.node])

    def _gradients(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """int64 (g, h) of window samples (indices into the job's window), shape (n, outputs)."""
        out = self.n_outputs  # (a regressor's: AdaptiveXGBoostRegressor._gradients)
        p = self.proba.reshape(-1, out)[samples].astype(np.int64)
        labels = self.window_labels[(self.head + samples) % self._capacity].astype(np.int64)
        target = (labels == 1)[:, None] if out == 1 else labels[:, None] == np.arange(out)[None, :]
        g = p - Q15_ONE * target
        h = (p * (Q15_ONE - p)) >> (15 if out == 1 else 14)
        return g, h

    def _hist(self, budget: int) -> int:
        stop = int(self.node_stop[self.node])
        n, left = self._spend(budget, stop - self.pos, self.units["hist"])
        samples = self.order[self.pos : self.pos + n].astype(np.int64)
        g, h = self._gradients(samples)
        if self.feature == 0 or self.feature == self.n_features_:
            self.node_g += g.sum(axis=0).astype(np.int32)
            self.node_h += h.sum(axis=0).astype(np.int32)
        if self.feature < self.n_features_:
            out = self.n_outputs
            b = self.window_bins[(self.head + samples) % self._capacity, self.feature].astype(np.int64)
            b = np.minimum(b, self.max_bins)
            hist_g, hist_h = self.hist_g.reshape(-1, out), self.hist_h.reshape(-1, out)
            np.add.at(hist_g, b, g.astype(np.int32))
            np.add.at(hist_h, b, h.astype(np.int32))
        self.last_work_["hist"] += n
        self.pos += n
        if self.pos == stop:
            if self.feature == self.n_features_:
                self.phase = NODE
            else:
                self.phase, self.pos = SCAN, 0
                self.left_g[:] = 0
                self.left_h[:] = 0
        return left

    @staticmethod
    def _score(G: int, H: int, lam: int) -> int:
        return (G * G) // (H + lam)

    def _scan(self, budget: int) -> int:
        out, bins = self.n_outputs, self.hist_bins
        lam, least = self.lambda_q15, self.min_child_q15
        hist_g, hist_h = self.hist_g.reshape(-1, out), self.hist_h.reshape(-1, out)
        node_g = [int(v) for v in self.node_g]
        node_h = [int(v) for v in self.node_h]
        parent = sum(self._score(G, H, lam) for G, H in zip(node_g, node_h))
        units = self.units
        while self.pos < bins and budget != 0:
            b = self.pos
            cost = units["scan"]
            if hist_g[b].any() or hist_h[b].any():  # an empty bin leaves the left sums, so the gain, unchanged
                self.left_g += hist_g[b]
                self.left_h += hist_h[b]
                hist_g[b] = 0
                hist_h[b] = 0
                left_g = [int(v) for v in self.left_g]
                left_h = [int(v) for v in self.left_h]
                hl, hr = sum(left_h), sum(node_h) - sum(left_h)
                if b <= self.max_bins - 2 and hl >= least and hr >= least:
                    cost += units["gain"]
                    self.last_work_["gain"] += 1
                    gain = sum(self._score(gl, h_, lam) + self._score(G - gl, H - h_, lam)
                               for gl, h_, G, H in zip(left_g, left_h, node_g, node_h)) - parent
                    if gain > self.best_gain:
                        self.best_gain, self.best_feature, self.best_bin = gain, self.feature, b
            budget = budget - cost if budget < 0 else max(budget - cost, 0)
            self.pos += 1
            self.last_work_["scan"] += 1
        if self.pos == bins:
            self.feature += 1
            if self.feature < self.n_features_:
                self.phase, self.pos = HIST, int(self.node_start[self.node])
            else:
                self.phase = NODE
        return budget

    def _node(self) -> None:
        """Decide the current node: a split (then partition its samples) or a leaf."""
        base_node = self.job_slot * self.nodes_per_tree
        v = self.node
        self.last_work_["node"] += 1
        if self.best_feature != NO_FEATURE:
            child = self.n_nodes
            self.nodes[base_node + v] = (self.best_feature, self.best_bin, base_node + child)
            self.node_depth[child] = self.node_depth[child + 1] = self.node_depth[v] + 1
            self.n_nodes += 2
            self.phase, self.pos, self.pos_end = PART, int(self.node_start[v]), int(self.node_stop[v])
            return
        leaf = self.job_slot * self.leaves_per_tree + self.n_leaves
        eta, lam = self.eta_q16, self.lambda_q15
        for k in range(self.n_outputs):
            w = trunc_div(-int(self.node_g[k]) * eta, (int(self.node_h[k]) + lam) * self.leaf_scale)
            self.leaf_values[leaf, k] = min(max(w, LEAF_MIN), LEAF_MAX)
        self.nodes[base_node + v] = (LEAF_FEATURE, 0, leaf)
        self.n_leaves += 1
        self._next_node()

    def _partition(self, budget: int) -> int:
        v = self.node
        node = self.nodes[self.job_slot * self.nodes_per_tree + v]
        feature, threshold = int(node["feature"]), int(node["threshold"])
        order, head, cap, bins = self.order, self.head, self._capacity, self.window_bins
        i, j = self.pos, self.pos_end
        n, left = self._spend(budget, j - i, self.units["part"])
        for _ in range(n):
            if bins[(head + int(order[i])) % cap, feature] <= threshold:
                i += 1
            else:
                j -= 1
                order[i], order[j] = order[j], order[i]
            self.last_work_["part"] += 1
        self.pos, self.pos_end = i, j
        if i == j:
            child = int(node["child"]) - self.job_slot * self.nodes_per_tree
            self.node_start[child], self.node_stop[child] = self.node_start[v], i
            self.node_start[child + 1], self.node_stop[child + 1] = i, self.node_stop[v]
            self._next_node()
        return left

    def _next_node(self) -> None:
        self.node += 1
        if self.node < self.n_nodes:
            self._begin_node()
        else:
            self._install()

    def _install(self) -> None:
        root = self.job_slot * self.nodes_per_tree
        if self.strategy == "replace":
            self.roots[self.job_target] = root
            self.n_members = max(self.n_members, self.job_target + 1)
        else:
            if self.n_members == self.members:
                self.roots[: self.members - 1] = self.roots[1 : self.members].copy()
                self.n_members -= 1
            self.roots[self.n_members] = root
            self.n_members += 1
        self.head = (self.head + self.job_window) % self._capacity
        self.count -= self.job_window
        self._idle()

    def _idle(self) -> None:
        """No job: the counters as validation expects them when idle."""
        self.phase = IDLE
        self.pos = self.pos_end = self.node = self.n_nodes = self.n_leaves = self.feature = 0
        self.job_window = self.job_slot = self.job_target = 0
        self.best_gain, self.best_feature, self.best_bin = -1, NO_FEATURE, 0
