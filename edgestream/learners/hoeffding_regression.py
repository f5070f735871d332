"""The Hoeffding tree's and the incremental random forest's regression forms (FIMT-DD-like, after Ikonomovska et
al. and River's ``HoeffdingTreeRegressor``): the integer specification of ``es_hoeffding_learn_target`` and
``es_hoeffding_predict_raw`` in ``csrc/es_hoeffding.c``.

The trees grow in the classifier's node pool (:class:`~edgestream.learners.hoeffding.NodePool`: the same node
tables, pairs of children, leaf slots and random stream) and learn the target's int16 code
(:class:`~edgestream.task.TargetScale`, fitted on the first rows). A regressor's state has one output
(``n_classes`` 1): the class-conditional regions are one placeholder element each, and four regions hold the
regression statistics.

* **Leaf statistics**: per leaf slot the rows ``n`` (uint32) and the sum of their codes ``s`` (int32); per slot,
  feature and bin the same two numbers of the rows that fell in the bin. A leaf's bins are fixed when the leaf is
  born: ``split_steps`` bins of its range ``[low, high]`` of each feature, separated at the thresholds
  ``t_k = low + k (high - low) s`` (``k = 1 .. split_steps - 1``, ``s = 1 / split_steps``; the classifier's
  candidates): the bin of ``x`` is the largest ``k`` with ``x > t_k`` (0 if none), so values outside the range
  fall in the end bins. The root's range is the start sample's smallest and largest value of every feature; a
  split narrows its feature's range to ``[low, t]`` and ``[t, high]`` in the children.
* **Split criterion**: the variance reduction (as River's ``VarianceReduction``) of a candidate ``t_k`` is, up to
  the factor ``1 / n``, ``sL^2 / nL + sR^2 / nR - s^2 / n`` with the sums taken over the bins left and right of
  ``t_k`` (the sums of squares cancel, so the bins need none); sums are first centred on ``m = s / n``
  (truncated; the reduction does not change, the float32 terms lose less): ``c = sum - count * m`` in integers,
  then ``T(c, n) = (float(c) * float(c)) / float(n)`` in float32 and the merit
  ``(T(cL, nL) + T(cR, nR)) - T(c, n)``; a candidate needs a row on each side. Per feature the first largest
  merit (in increasing ``k``) is its best; the best feature is the first largest of those, in evaluation order.
* **Hoeffding test** on the ratio of the best two features' merits ``r = b2 / b1`` (``b2 = 0`` with one
  feature), as River and FIMT-DD: the leaf splits when ``b1 > 0`` and ``r < 1 - eps`` or ``eps < tau``, with the
  range 1 of the ratio: ``eps^2 = ln(1/delta) / (2 n)``. In float32: ``u = 1 - b2 / b1`` and the test
  ``eps^2 < u * u or eps^2 < tau * tau`` (squares: no square root).
* **Split**: a leaf tries every ``grace_period`` rows of weight (``since``, as the classifier), in the learn call
  that reaches the grace (a regression attempt is ``d (split_steps - 1)`` candidates of a few integer and float
  operations each: ``work_per_call`` does not apply), when the pool has a free pair. The children start with the
  rows of their side (``n`` and ``s`` of the bins of the split feature), empty bins and the narrowed ranges; their
  detectors start empty.
* **Linear leaves** (``leaf_model="linear"``; after FIMT-DD's perceptron leaves and River's linear leaf model,
  in integers so that they cannot diverge on unscaled inputs): per leaf slot ``d`` int32 weights ``w`` and two
  running absolute errors (``leaf_linear``). A row's inputs in the leaf are its features normalised to the leaf's
  range in Q15, ``u_j = trunc(clamp((x_j - mid_j) / half_j, -1, 1) * 32767)`` with ``mid = (low + high) * 0.5``
  and ``half = (high - low) * 0.5`` in float32 (``u_j = 0`` where ``half_j`` is not above 0). The linear
  prediction is the leaf's mean code plus ``trunc(sum_j w_j u_j / 32768)`` (int64), clamped to
  ``-32767..32767``. When a row reaches a leaf that has rows, after the drift step and before its statistics
  take the row: ``e_mean += |code - mean| - (e_mean >> 5)`` and the same of the linear prediction's error in
  ``e_lin`` (each at most ``32 * 65534 + 31``), then the normalised least-mean-squares step
  ``w_j += trunc(err w u_j / (d 2**(15 + LINEAR_SHIFT)))`` (``err`` the linear prediction's error, ``w`` the
  row's weight), each weight clamped to ``+-2**20``. A leaf predicts its linear model when ``e_lin < e_mean``,
  its mean otherwise (FIMT-DD's and River's adaptive leaf), so a new leaf predicts its mean. A split's children,
  a restarted or merged leaf start with zero weights and errors; a slot that moves takes them along.
  Measured on 3,000 rows (prequential, scale from the first 100): Friedman #1 R² 0.687 against 0.477 with mean
  leaves and River's HoeffdingTreeRegressor 0.660; Planes2D 0.886 against 0.789 and 0.893: the default.
* **Prediction**: a leaf's mean code is ``s / n`` rounded half away from zero in integers (``(2 |s| + n)
  // (2 n)`` with the sign of ``s``), 0 for an empty leaf; a leaf predicts it, or its linear model's output (linear
  leaves, above). The raw output of a tree is its leaf's prediction; of a forest, the sum of its trees'
  (``divisor`` = the trees, as :class:`~edgestream.learners.ForestRegressor`).
* **Counts**: when a learning step leaves a leaf's ``n`` at ``COUNT_LIMIT = 2**15`` or above, its ``n`` and ``s``
  and all its bins are halved (counts by a right shift, sums truncated toward zero, as C's ``/ 2``): counts stay
  below ``2**15 + 255`` and sums within ``+-(2**16) 32767``, inside int32, and a leaf remembers about its last
  ``2**14 .. 2**15`` rows. A restored state with a count at ``2**16`` or beyond, or a sum beyond
  ``count * 32767`` in magnitude, is refused (``ValueError``, ``ES_ERR_IMAGE``).
* **Drift** (``drift_threshold = z``, 0 = off): Page-Hinkley on the absolute error, as FIMT-DD, on every node of
  the row's path. A row is watched when its leaf holds at least ``ESTABLISHED = 32`` rows: its error
  ``e = |code - leaf mean|`` (before the row is learned) goes to the detectors from the root down. A node's
  detector keeps ``seen`` (rows, saturating at 65535), ``fast``: the mean error (the classifier's
  :func:`~edgestream.learners.hoeffding.average` with the slow window: a running mean of the first 512 rows, then
  weight 1/512) and ``slow``: the Page-Hinkley gap ``g = max(0, g + e - m - m / 8)`` (``m`` the mean including
  ``e``, tolerance ``m / 8``, capped at ``2**30``). A node signals when it has seen more than ``PH_ROWS = 64`` rows
  and ``g > 8 z max(m, 1)``: the errors rose by ``8 z`` times their mean in sum. The first node that signals
  (from the root) *collapses*: a leaf keeps its mean on a weight of at most ``RESTART = 16`` rows (``n`` and ``s``
  halved until ``n <= 16``) and empties its bins; an inner node becomes such a leaf of its subtree's leaves merged
  (rows and sums added, then faded alike; its range the union of theirs) in the slot of the subtree's last leaf
  in node order, its descendants' nodes and the other slots freed as the classifier frees them (a freed slot
  takes the last slot in use). Its descendants are marked in ``fast`` first (``MARK``, which no mean error
  reaches), forward from the node, as children come after their parents. Its detector restarts, and the row is
  learned where it routes then. This is the classifier's adaptation kept simple: the whole subtree goes (no kept
  levels, no revisit), since a regression leaf's bins cannot be merged across different ranges.
* **Forest** (IRF): the classifier's online bagging (Poisson(``bagging_lambda``) weights from the one xorshift32
  stream, tree by tree) and feature subspaces (``floor(sqrt(d)) + 1`` features drawn per attempt by the partial
  Fisher-Yates shuffle, into the tree's ``order``, drawn right after the tree's Poisson draw when it attempts).
  A row of weight ``w`` adds ``w`` to the counts and ``w code`` to the sums.
* **Inputs**: the classifier's: raw float32 features, finite and within ``+-2**50``; a target code from -32767 to
  32767 (``ES_ERR_LABEL`` for -32768).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .base import OnlineRegression, OnlineStateLearner, check_integer, restore_regions
from .hoeffding import (DRIFT_DEFAULT, F32, FREE, IRF_SPEC, LEAF, MAX_DRIFT, MAX_LEAVES, MAX_TREES, SPEC,
                        STATE, SLOW_SHIFT, NodePool, Random, average, start_seed)
from ..task import CODE_MAX

COUNT_LIMIT = 1 << 15  # a leaf's counts halve when its rows reach it
VALID_COUNT = 1 << 16  # a restored state's counts are below it
ESTABLISHED = 32  # a leaf's rows before its errors are watched
PH_ROWS = 64  # rows a detector sees before it may signal
PH_SCALE = 8  # the gap that signals, in mean errors per unit of drift_threshold
GAP_CAP = 1 << 30
ERROR_MAX = 2 * CODE_MAX  # the largest absolute error of a code
RESTART = 16  # the weight a collapsed leaf's mean keeps
MARK = 0xFFFFFFFF  # in ``fast``: a node of the subtree being collapsed (no mean error reaches it)
LEAF_MODELS = ("mean", "linear")
LINEAR_SHIFT = 1  # the linear leaves' learning rate 2**-LINEAR_SHIFT / d (measured: 1 of 1..4 learns best)
WEIGHT_LIMIT = 1 << 20  # a linear leaf's weights stay within +-WEIGHT_LIMIT
ERROR_DECAY = 5  # the running errors forget 1/32 per row
RUNNING_ERROR_MAX = (ERROR_MAX << ERROR_DECAY) + (1 << ERROR_DECAY) - 1  # where e - (e >> 5) + ERROR_MAX stays

TREE_ARRAYS = ("feature", "threshold", "child", "n_nodes", "n_leaves", "seen", "fast", "slow", "order")
LEAF_ARRAYS = ("leaf_n", "leaf_sum", "bin_n", "bin_sum", "low", "high", "since")
STATE_ARRAYS = TREE_ARRAYS + LEAF_ARRAYS + ("leaf_linear",)


def halved(values):
    """Integers halved and truncated toward zero, as C's ``/ 2``."""
    values = np.asarray(values, dtype=np.int64)
    return np.where(values < 0, -((-values) // 2), values // 2)


def truncated(a: int, b: int) -> int:
    """``a / b`` truncated toward zero (C's integer division), ``b > 0``."""
    return -((-a) // b) if a < 0 else a // b


def mean_code(n: int, s: int) -> int:
    """A leaf's prediction: ``s / n`` rounded half away from zero, 0 when ``n`` is 0."""
    if n == 0:
        return 0
    q = (2 * abs(s) + n) // (2 * n)
    return -q if s < 0 else q


def spread_term(c: int, n: int) -> np.float32:
    """``c^2 / n`` in float32 of a centred sum ``c`` over ``n`` rows."""
    f = F32(c)
    return (f * f) / F32(n)


class HoeffdingTreeRegressor(OnlineRegression, NodePool, OnlineStateLearner):
    """Hoeffding tree for a number (FIMT-DD-like, see the module docstring), learning on the device in a fixed node
    pool: binned leaf statistics of the target code, variance reduction under the Hoeffding bound on the ratio of
    the best two features, mean-code leaves, Page-Hinkley drift detection on every node.

    Parameters
    ----------
    max_leaves : leaves per tree (the pool holds ``2 max_leaves - 1`` nodes), 1..16384.
    grace_period : rows a leaf learns between split attempts, 1..65535.
    delta : Hoeffding bound confidence, in (0, 1).
    tie_threshold : split anyway when the bound falls below it, 0..1000.
    split_steps : bins per feature at a leaf (candidate thresholds + 1), 2..64.
    drift_threshold : the Page-Hinkley threshold in units of 8 mean errors, 1..15; 0 = no drift handling.
    leaf_model : "linear" (a leaf predicts its linear model once it errs less than its mean, module docstring)
        or "mean".
    """

    input_dtype = "float32"
    state_spec = STATE
    state_arrays = STATE_ARRAYS
    ready_attribute = "feature"
    engine_state = STATE_ARRAYS + ("n_learned", "random")
    fitted_attributes = ("range_low_", "range_high_", "target_", "saturated_", "feature", "_config")
    forest = False
    n_trees = 1
    bagging_lambda = 0.0
    seed = 1

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a leaf learns grace_period (100) rows before it may split: on check_estimator's 200 rows a tree has a few
        # leaves, below the R² of 0.5 the check asks of a regressor
        tags.regressor_tags.poor_score = True
        return tags

    def __init__(self, max_leaves: int = 32, grace_period: int = 100, delta: float = 0.01,
                 tie_threshold: float = 0.05, split_steps: int = 10, drift_threshold: int = DRIFT_DEFAULT,
                 leaf_model: str = "linear"):
        self.max_leaves = max_leaves
        self.grace_period = grace_period
        self.delta = delta
        self.tie_threshold = tie_threshold
        self.split_steps = split_steps
        self.drift_threshold = drift_threshold
        self.leaf_model = leaf_model

    @property
    def leaf_arrays(self) -> tuple[str, ...]:
        """The regions of a leaf slot (a slot that moves takes them along); a mean leaf has no linear model."""
        return LEAF_ARRAYS + (("leaf_linear",) if self.leaf_model == "linear" else ())

    def _check_params(self):
        if self.leaf_model not in LEAF_MODELS:
            raise ValueError(f"leaf_model={self.leaf_model!r} must be one of {', '.join(LEAF_MODELS)}")
        check_integer(self, "max_leaves", 1, MAX_LEAVES)
        check_integer(self, "grace_period", 1, 65535)
        check_integer(self, "split_steps", 2, 64)
        check_integer(self, "drift_threshold", 0, MAX_DRIFT)
        delta, tie = self.delta, self.tie_threshold
        if not isinstance(delta, (int, float)) or isinstance(delta, bool) or not 0 < delta < 1:
            raise ValueError(f"delta={delta!r} must be a number in (0, 1)")
        if not isinstance(tie, (int, float)) or isinstance(tie, bool) or not 0 <= tie <= 1e3:
            raise ValueError(f"tie_threshold={tie!r} must be a number from 0 to 1000")

    def subspace(self, n_features: int) -> int:
        return n_features

    @property
    def output_divisor(self) -> int:
        return self.n_trees

    @property
    def n_features_(self) -> int:
        return len(self.range_low_)

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        """The values of the C ``es_hoeffding_config`` of a regressor (one output; ``n_classes`` is ignored)."""
        d = self.n_features_ if n_features is None else n_features
        lam = float(self.bagging_lambda)
        return {
            "n_features": d, "n_classes": 1, "n_trees": self.n_trees, "propagate": 0,
            "max_nodes": self.max_nodes, "max_leaves": self.max_leaves, "grace": self.grace_period,
            "split_steps": self.split_steps, "subspace": self.subspace(d), "seed": int(self.seed),
            "split_step": F32(1.0 / self.split_steps), "log_inv_delta": F32(math.log(1.0 / self.delta)),
            "tie": F32(self.tie_threshold), "exp_neg_lambda": F32(math.exp(-lam)) if lam > 0 else F32(0.0),
            "drift": self.drift_threshold, "work_per_call": 0, "linear": int(self.leaf_model == "linear"),
        }

    @property
    def _constants(self) -> dict:
        if "_config" not in self.__dict__:
            self._config = self.device_config()
        return self._config

    def summary(self) -> str:
        grown = ", ".join(str(int(n)) for n in self.n_leaves) if hasattr(self, "n_leaves") else "-"
        trees = f"{self.n_trees} trees" if self.forest else "1 tree"
        return f"{trees}, {self.max_leaves} leaves each (grown: {grown}), model state {self.state_bytes():,} bytes"

    def device_counters(self) -> dict:
        return {"n_learned": self.n_learned, "random": self.random.state}

    # -- setup -----------------------------------------------------------------------------------------------

    def start(self, X_sample, y_sample) -> "HoeffdingTreeRegressor":
        """The root's range from a sample of the stream, the target scale from its targets; one empty leaf per
        tree; the parameters are checked first (when the learner starts, as scikit-learn's are)."""
        self._check_params()
        X = self._rows(X_sample)
        if len(X) == 0:
            raise ValueError("the start sample is empty")
        self.range_low_, self.range_high_ = X.min(axis=0), X.max(axis=0)
        self.set_target(y_sample)
        self.reset()
        return self

    def reset(self) -> None:
        """One empty leaf per tree over the start range; the range and the target scale stay."""
        self._drop_engine()
        T, N, L, d, S = self.n_trees, self.max_nodes, self.max_leaves, self.n_features_, self.split_steps
        self.__dict__.pop("_config", None)
        self.feature = np.zeros((T, N), np.uint8)
        self.feature[:, 0] = LEAF
        self.threshold = np.zeros((T, N), F32)
        self.child = np.zeros((T, N), np.uint16)
        self.n_nodes = np.ones(T, np.uint16)
        self.n_leaves = np.ones(T, np.uint16)
        self.seen = np.zeros((T, N), np.uint16)
        self.fast = np.zeros((T, N), np.uint32)
        self.slow = np.zeros((T, N), np.uint32)
        self.order = np.zeros((T, d), np.uint8)
        self.leaf_n = np.zeros((T, L), np.uint32)
        self.leaf_sum = np.zeros((T, L), np.int32)
        self.bin_n = np.zeros((T, L, d, S), np.uint32)
        self.bin_sum = np.zeros((T, L, d, S), np.int32)
        self.low = np.zeros((T, L, d), F32)
        self.high = np.zeros((T, L, d), F32)
        self.low[:, 0], self.high[:, 0] = self.range_low_, self.range_high_
        self.since = np.zeros((T, L), np.uint32)
        self.leaf_linear = np.zeros((T, L, d + 2) if self.leaf_model == "linear" else 1, np.int32)
        self.n_learned = 0
        self.random = Random(start_seed(self.seed))

    def _check_ready(self):
        if not hasattr(self, "feature"):
            raise RuntimeError("call start(X_sample, y_sample) (or partial_fit) before learning")

    def saved_arrays(self) -> dict:
        self._check_ready()
        counters = np.array([self.n_learned, self.random.state], dtype=np.uint64)
        return {name: getattr(self, name) for name in STATE_ARRAYS} | {"counters": counters}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (after ``target_`` is set); refuses arrays of the wrong layout, node tables that
        point outside the pool and counts, sums or detectors out of their bounds (module docstring)."""
        low = arrays["low"]
        if low.dtype != F32 or low.ndim != 3 or not 1 <= low.shape[2] <= 254:
            raise ValueError("state 'low' must be float32 (trees, leaves, 1..254 features)")
        self.range_low_, self.range_high_ = low[0, 0].copy(), arrays["high"][0, 0].astype(F32)
        self.reset()
        restore_regions(self, [name for name in STATE_ARRAYS if name in arrays or name != "leaf_linear"], arrays)
        self._check_nodes()
        if (self.order >= self.n_features_).any():
            raise ValueError(f"state 'order' names a feature outside 0..{self.n_features_ - 1}")
        for n, s in ((self.leaf_n, self.leaf_sum), (self.bin_n, self.bin_sum)):
            if (n >= VALID_COUNT).any() or (np.abs(s.astype(np.int64)) > n.astype(np.int64) * CODE_MAX).any():
                raise ValueError(f"a leaf count at {VALID_COUNT} or beyond, or a sum beyond count x {CODE_MAX}")
        if (self.fast > ERROR_MAX).any() or (self.slow > GAP_CAP).any():
            raise ValueError(f"a detector's mean error above {ERROR_MAX} or gap above {GAP_CAP}")
        if self.leaf_model == "linear":
            weights, errors = self.leaf_linear[..., :-2], self.leaf_linear[..., -2:]
            if (np.abs(weights) > WEIGHT_LIMIT).any() or (errors < 0).any() or (errors > RUNNING_ERROR_MAX).any():
                raise ValueError(f"a linear leaf's weight beyond +-{WEIGHT_LIMIT} or running error outside "
                                 f"0..{RUNNING_ERROR_MAX}")
        n_learned, random = (int(v) for v in arrays["counters"])
        if random > 0xFFFFFFFF:
            raise ValueError(f"random state {random} is beyond uint32")
        self.n_learned, self.random = n_learned, Random(random)

    # -- the device's steps ------------------------------------------------------------------------------------

    def learn_encoded(self, x, code: int) -> None:
        """One learning step on a float32 row and a target code (the device's ``es_hoeffding_learn_target``)."""
        self._check_ready()
        if not -CODE_MAX <= int(code) <= CODE_MAX:
            raise ValueError(f"target code {code} is outside -{CODE_MAX}..{CODE_MAX}")
        x = self._rows(np.asarray(x).reshape(1, -1))[0]
        limit = self._constants["exp_neg_lambda"]
        for t in range(self.n_trees):
            w = self.random.poisson(limit) if limit > 0 else 1
            if w:
                self._learn_tree(t, x, int(code), w)
        self.n_learned = (self.n_learned + 1) & 0xFFFFFFFFFFFFFFFF

    def _learn_tree(self, t: int, x: np.ndarray, code: int, w: int) -> None:
        node = self._leaf_node(t, x)
        s = int(self.child[t, node])
        if self.drift_threshold and self.leaf_n[t, s] >= ESTABLISHED:
            error = abs(code - mean_code(int(self.leaf_n[t, s]), int(self.leaf_sum[t, s])))
            fired = self._watch_path(t, x, error)
            if fired >= 0:
                self._collapse(t, fired)
                node = self._leaf_node(t, x)
                s = int(self.child[t, node])
        if self.leaf_model == "linear" and self.leaf_n[t, s] > 0:
            self._learn_linear(t, s, x, code, w)
        self.leaf_n[t, s] += w
        self.leaf_sum[t, s] += w * code
        bins = self._bins(t, s, x)
        features = np.arange(self.n_features_)
        self.bin_n[t, s, features, bins] += np.uint32(w)
        self.bin_sum[t, s, features, bins] += np.int32(w * code)
        if self.leaf_n[t, s] >= COUNT_LIMIT:
            self._halve(t, s)
        self.since[t, s] = min(int(self.since[t, s]) + w, 0xFFFFFFFF)
        if self.since[t, s] >= self.grace_period:
            self.since[t, s] = 0
            if self._free_pair(t, node) >= 0:
                self._attempt(t, node, s)

    def _inputs(self, t: int, s: int, x: np.ndarray) -> np.ndarray:
        """The row's Q15 inputs at leaf slot ``s``: its features normalised to the leaf's range (int64)."""
        low, high = self.low[t, s], self.high[t, s]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            mid, half = (low + high) * F32(0.5), (high - low) * F32(0.5)
            v = np.clip((x - mid) / np.where(half > 0, half, F32(1)), F32(-1), F32(1)).astype(F32)
            return np.where(half > 0, np.trunc(v * F32(32767)), 0).astype(np.int64)

    def _linear(self, t: int, s: int, u: np.ndarray) -> int:
        """The linear prediction of slot ``s`` for Q15 inputs ``u``: the mean code plus the weighted inputs."""
        mean = mean_code(int(self.leaf_n[t, s]), int(self.leaf_sum[t, s]))
        total = int((self.leaf_linear[t, s, :-2].astype(np.int64) * u).sum())
        return max(-CODE_MAX, min(CODE_MAX, mean + truncated(total, 32768)))

    def _learn_linear(self, t: int, s: int, x: np.ndarray, code: int, w: int) -> None:
        """One step of slot ``s``'s linear leaf (module docstring): the running errors, then the weights."""
        u = self._inputs(t, s, x)
        state = self.leaf_linear[t, s].astype(np.int64)
        err = code - self._linear(t, s, u)
        for i, e in ((-2, code - mean_code(int(self.leaf_n[t, s]), int(self.leaf_sum[t, s]))), (-1, err)):
            state[i] += abs(e) - (state[i] >> ERROR_DECAY)
        scale = self.n_features_ << (15 + LINEAR_SHIFT)
        steps = [truncated(err * w * int(v), scale) for v in u]
        state[:-2] = np.clip(state[:-2] + steps, -WEIGHT_LIMIT, WEIGHT_LIMIT)
        self.leaf_linear[t, s] = state

    def _leaf_output(self, t: int, s: int, x: np.ndarray) -> int:
        """A leaf's prediction: its linear model's when that errs less than its mean, else its mean code."""
        if self.leaf_model == "linear" and self.leaf_linear[t, s, -1] < self.leaf_linear[t, s, -2]:
            return self._linear(t, s, self._inputs(t, s, x))
        return mean_code(int(self.leaf_n[t, s]), int(self.leaf_sum[t, s]))

    def _thresholds(self, t: int, s: int) -> np.ndarray:
        """The candidate thresholds of leaf slot ``s`` (features, split_steps - 1)."""
        low, high = self.low[t, s][:, None], self.high[t, s][:, None]
        k = np.arange(1, self.split_steps, dtype=F32)[None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            step = (high - low) * self._constants["split_step"]
            return (low + k * step).astype(F32)

    def _bins(self, t: int, s: int, x: np.ndarray) -> np.ndarray:
        """The bin of every feature of ``x`` at leaf slot ``s``: the largest ``k`` with ``x > t_k``, else 0."""
        above = x[:, None] > self._thresholds(t, s)
        k = np.arange(1, self.split_steps)[None, :]
        return np.where(above, k, 0).max(axis=1)

    def _halve(self, t: int, s: int) -> None:
        self.leaf_n[t, s] >>= 1
        self.bin_n[t, s] >>= 1
        self.leaf_sum[t, s] = halved(self.leaf_sum[t, s])
        self.bin_sum[t, s] = halved(self.bin_sum[t, s])

    def _attempt(self, t: int, node: int, s: int) -> None:
        """A split attempt at leaf slot ``s``: every candidate of the drawn features, then the Hoeffding test."""
        self.order[t] = self._features(self.n_features_)
        merits = []  # (merit, feature, k) of each feature's best candidate, in evaluation order
        for f in self.order[t, : self.subspace(self.n_features_)].tolist():
            best = self._best_candidate(t, s, f)
            if best is not None:
                merits.append(best + (f,))
        if not merits:
            return
        first = max(range(len(merits)), key=lambda i: (merits[i][0], -i))
        b1, k, f = merits[first]
        b2 = max([F32(0.0)] + [m[0] for i, m in enumerate(merits) if i != first])
        if not b1 > 0:
            return
        u = F32(1.0) - b2 / b1
        n = F32(int(self.leaf_n[t, s]))
        eps2 = self._constants["log_inv_delta"] / (n + n)
        tie = self._constants["tie"]
        if eps2 < u * u or eps2 < tie * tie:
            self._split(t, node, s, f, k)

    def _best_candidate(self, t: int, s: int, f: int) -> tuple | None:
        """(merit, k) of the first largest merit of feature ``f``'s candidates, None when none has rows on both
        sides."""
        counts = self.bin_n[t, s, f].astype(np.int64).tolist()
        sums = self.bin_sum[t, s, f].astype(np.int64).tolist()
        n, total = sum(counts), sum(sums)
        if n == 0:
            return None
        m = truncated(total, n)
        centred = [sums[i] - counts[i] * m for i in range(len(counts))]
        whole = spread_term(total - n * m, n)
        best = None
        n_left = c_left = 0
        for k in range(1, self.split_steps):
            n_left += counts[k - 1]
            c_left += centred[k - 1]
            n_right, c_right = n - n_left, (total - n * m) - c_left
            if n_left == 0 or n_right == 0:
                continue
            merit = (spread_term(c_left, n_left) + spread_term(c_right, n_right)) - whole
            if best is None or merit > best[0]:
                best = (merit, k)
        return best

    def _split(self, t: int, node: int, s: int, f: int, k: int) -> None:
        """Split leaf slot ``s`` at candidate ``k`` of feature ``f``: the children start from the rows of their
        side, empty bins, narrowed ranges and empty detectors."""
        threshold = self._thresholds(t, s)[f, k - 1]
        n_left, s_left = int(self.bin_n[t, s, f, :k].astype(np.int64).sum()), int(self.bin_sum[t, s, f, :k].astype(np.int64).sum())
        n_right, s_right = int(self.bin_n[t, s, f, k:].astype(np.int64).sum()), int(self.bin_sum[t, s, f, k:].astype(np.int64).sum())
        a, s2 = self._free_pair(t, node), int(self.n_leaves[t])
        self.feature[t, node], self.threshold[t, node], self.child[t, node] = f, threshold, a
        for i, slot in ((a, s), (a + 1, s2)):
            self.feature[t, i], self.threshold[t, i], self.child[t, i] = LEAF, 0, slot
            self.seen[t, i] = self.fast[t, i] = self.slow[t, i] = 0
        self.n_nodes[t] = max(int(self.n_nodes[t]), a + 2)
        self.n_leaves[t] += 1
        self.low[t, s2], self.high[t, s2] = self.low[t, s], self.high[t, s]
        self.high[t, s, f], self.low[t, s2, f] = threshold, threshold
        for slot, n, total in ((s, n_left, s_left), (s2, n_right, s_right)):
            self.leaf_n[t, slot], self.leaf_sum[t, slot] = n, total
            self.bin_n[t, slot], self.bin_sum[t, slot], self.since[t, slot] = 0, 0, 0
            self._clear_linear(t, slot)

    # -- drift -------------------------------------------------------------------------------------------------

    def _detect(self, t: int, node: int, error: int) -> bool:
        """Page-Hinkley: the mean error and the gap of a node (module docstring), then the test."""
        n = min(int(self.seen[t, node]) + 1, 0xFFFF)
        self.seen[t, node] = n
        mean = average(int(self.fast[t, node]), error, n, SLOW_SHIFT)
        gap = int(self.slow[t, node]) + error
        allowance = mean + (mean >> 3)
        gap = min(gap - allowance if gap > allowance else 0, GAP_CAP)
        self.fast[t, node], self.slow[t, node] = mean, gap
        return n > PH_ROWS and gap > PH_SCALE * self.drift_threshold * max(mean, 1)

    def _collapse(self, t: int, node: int) -> None:
        """The node that signalled becomes a leaf (module docstring): a leaf keeps its faded mean; an inner node's
        subtree merges into one."""
        self.seen[t, node] = self.fast[t, node] = self.slow[t, node] = 0
        if self.feature[t, node] == LEAF:
            s = int(self.child[t, node])
            n, total = self._faded(int(self.leaf_n[t, s]), int(self.leaf_sum[t, s]))
            self._restart_slot(t, s, n, total)
            return
        self.fast[t, node] = MARK
        for i in range(node, int(self.n_nodes[t])):
            if self.fast[t, i] == MARK and self.feature[t, i] < FREE:
                c = int(self.child[t, i])
                self.fast[t, c] = self.fast[t, c + 1] = MARK
        marked = [i for i in range(int(self.n_nodes[t]) - 1, node, -1) if self.fast[t, i] == MARK]
        slots = [int(self.child[t, i]) for i in marked if self.feature[t, i] == LEAF]
        keep = slots[0]  # the last leaf in node order keeps its slot: the others' rows, sums and ranges join it
        n = sum(int(self.leaf_n[t, s]) for s in slots)
        total = sum(int(self.leaf_sum[t, s]) for s in slots)
        for s in slots[1:]:
            self.low[t, keep] = np.where(self.low[t, s] < self.low[t, keep], self.low[t, s], self.low[t, keep])
            self.high[t, keep] = np.where(self.high[t, s] > self.high[t, keep], self.high[t, s], self.high[t, keep])
        for i in marked:
            if self.feature[t, i] == LEAF and self.child[t, i] != keep:
                slot = int(self.child[t, i])
                self.feature[t, i] = FREE
                if keep == int(self.n_leaves[t]) - 1:
                    keep = slot  # the last slot moves into the released one
                self._release_slot(t, slot)
            self.feature[t, i], self.threshold[t, i], self.child[t, i] = FREE, 0, 0
            self.seen[t, i] = self.fast[t, i] = self.slow[t, i] = 0
        self.feature[t, node], self.threshold[t, node], self.child[t, node] = LEAF, 0, keep
        self.fast[t, node] = 0
        self._restart_slot(t, keep, *self._faded(n, total))
        self._drop_free_pairs(t)

    @staticmethod
    def _faded(n: int, total: int) -> tuple[int, int]:
        while n > RESTART:
            n, total = n >> 1, int(halved(total))
        return n, total

    def _restart_slot(self, t: int, s: int, n: int, total: int) -> None:
        """Slot ``s`` restarts from ``n`` rows of sum ``total`` (already faded) with empty bins; its range stays."""
        self.leaf_n[t, s], self.leaf_sum[t, s] = n, total
        self.bin_n[t, s], self.bin_sum[t, s], self.since[t, s] = 0, 0, 0
        self._clear_linear(t, s)

    def _clear_linear(self, t: int, s: int) -> None:
        if self.leaf_model == "linear":
            self.leaf_linear[t, s] = 0

    # -- prediction ------------------------------------------------------------------------------------------

    def predict_encoded(self, X) -> np.ndarray:
        """int32 raw outputs: the sum over the trees of the leaf's output (its mean code, or its linear model's)."""
        self._check_ready()
        rows = self._rows(X)
        raw = np.zeros(len(rows), np.int64)
        for t in range(self.n_trees):
            slots = self.child[t, self._route(t, rows)]
            raw += np.array([self._leaf_output(t, int(s), x) for s, x in zip(slots, rows)], np.int64)
        return raw.astype(np.int32)


class IncrementalRandomForestRegressor(HoeffdingTreeRegressor):
    """Incremental random forest of Hoeffding regression trees: online bagging with Poisson(``bagging_lambda``)
    weights and ``floor(sqrt(d)) + 1`` random features per split attempt (module docstring); the raw output is the
    sum of the trees' mean codes, decoded over ``n_trees``.

    Parameters: those of :class:`HoeffdingTreeRegressor`, and
    n_trees : trees, 1..255.
    bagging_lambda : the Poisson mean of the bagging weights, in (0, 50].
    seed : start of the random stream (uint32).
    """

    forest = True

    def __init__(self, n_trees: int = 10, max_leaves: int = 16, grace_period: int = 100, delta: float = 0.01,
                 tie_threshold: float = 0.05, split_steps: int = 10, drift_threshold: int = DRIFT_DEFAULT,
                 bagging_lambda: float = 5.0, seed: int = 1, leaf_model: str = "linear"):
        self.n_trees = n_trees
        self.bagging_lambda = bagging_lambda
        self.seed = seed
        super().__init__(max_leaves, grace_period, delta, tie_threshold, split_steps, drift_threshold, leaf_model)

    def _check_params(self):
        super()._check_params()
        check_integer(self, "n_trees", 1, MAX_TREES)
        check_integer(self, "seed", 0, 2**32 - 1)
        lam = self.bagging_lambda
        if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not 0 < lam <= 50:
            raise ValueError(f"bagging_lambda={lam!r} must be a number in (0, 50]")

    def subspace(self, n_features: int) -> int:
        return min(n_features, math.isqrt(n_features) + 1)


# The registry's entries: the classifier's, with their regression forms.
HT_SPEC = dataclasses.replace(SPEC, regressor=HoeffdingTreeRegressor)
FOREST_SPEC = dataclasses.replace(IRF_SPEC, regressor=IncrementalRandomForestRegressor)
