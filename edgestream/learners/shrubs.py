"""Shrub Ensembles (Buschjäger, Hess, Morik, AAAI 2022) in fixed point, the specification of ``csrc/es_shrubs.c``.

A sliding window of ``window_size`` (B) binned samples lives in a ring buffer. Every ``update_every`` samples a
new shrub (a CART tree of depth ``max_depth`` on the window) joins the ensemble with weight 0; ``burnin``
proximal gradient steps on the window's MSE loss follow, then the hard-L0 prox keeps the ``max_shrubs`` (M)
largest weights, the non-zero ones are projected onto the probability simplex, and shrubs whose weight ends at 0
are dropped. The state has a fixed size (:data:`STATE`). The whole step runs in ``_kernels.ShrubKernel`` (Cython),
which this docstring specifies; the C runtime follows it to the bit.

What is cached, so that a step costs O(d B depth + B M + burnin M^2) instead of retraining and re-evaluating
everything (the paper's memory term 2 B (M + 1)):

* ``leaf_index[row, slot]``: the leaf (0 .. 2**max_depth - 1, within its shrub: its leaf row is
  ``slot * 2**max_depth + leaf``) that the shrub in pool slot ``slot`` reaches for window row ``row``.
  A step evaluates the active shrubs on the new row and the new shrub on the window, nothing else. Entries of
  inactive slots and of rows not yet filled are stale and never read.
* ``sorted_rows[f, :count]``: the window rows ordered by (bin of feature f, row index), kept by insertion (O(d B)
  per step), so CART never sorts.
* ``gram[a, b] = sum_rows floor(sum_c h_a[c] h_b[c] / 2**15)`` for active slots a, b (Q15 leaf values, so each
  row's term is an exact integer below 2**16; the sums stay below 2**28) and ``label_sum[a] = sum_rows
  h_a[label]``. When a row leaves the window its terms are subtracted, when it enters they are added (O(M^2) per
  step); the new shrub's row and column are computed over the window (O(B M)). All sums are exact integers, so
  the incremental values equal a recomputation from scratch (``ShrubKernel.rebuild``, used after a restore).

Shrub training (CART on bins, breadth first, level by level): a level's nodes may split when they hold two
classes and at least ``2 * min_samples_leaf`` rows. For each feature in ascending order, one scan of
``sorted_rows`` passes every row to its node's running class counts. A *run* is a node's rows with one bin; the
threshold between two consecutive runs (the bin of the first) is a candidate unless both runs hold one and the
same class (Fayyad and Irani's boundary points: the best split of a concave criterion lies on one, so this
mostly drops thresholds that cannot win; it halves the candidates on the benchmark streams). A candidate needs
``min_samples_leaf`` rows on each side and replaces the best split only if strictly better, so ties go to the
lowest feature, then the lowest threshold; the first candidate must beat the parent. Scores are exact:

* gini: maximise ``L2 / nL + R2 / nR`` (``L2`` = sum of squared left class counts), compared by cross
  multiplication in 64-bit integers (``num * best_den > best_num * den``; below 2**58 for B <= 4096); the
  parent's score is ``P2 / n``;
* entropy: minimise ``sum_sides xlog2x(n_side) - sum_k xlog2x(count_k)`` with ``xlog2x(c) = c * log2_q16(c)``.

Leaves hold ``round(count_k * 32768 / n)`` (half up). Children are stored next to each other, nodes in
breadth-first order, leaves in the order their nodes are visited.

Gradient steps (Jacobi: every weight moves by the gradient at the previous weights). With candidates k (the
active shrubs in rank order, then the new one), weights ``w`` in Q15, ``n`` = rows in the window, ``C`` classes,
``A`` = ``round(step_size * 65536)`` or, with ``step_size="adaptive"``, ``65536 // (K + 1)`` for K candidates::

      scale = floor(A * 2**15 / (n * C))                                 (once per step)
      m[k]  = sum_j w[j] * gram[k, j] - 2**15 * label_sum[k]             (int64: gradient sum, Q30)
      w[k] -= trunc(trunc(m[k] / 2**15) * scale / 2**30)                 (2 alpha times the mean gradient, Q15)
      w[k]  = clip(w[k], -2**17, 2**17)

``trunc`` rounds toward zero like C99 division. Against the earlier per-row residual form this rounds each row's
product sum once (in ``gram``) and divides by ``n * C`` through ``scale``; products stay below 2**62.

* Hard-L0: shrubs are ranked by weight, descending, ties to the older position; the first ``max_shrubs`` stay.
* Simplex projection (Wang & Carreira-Perpiñán) of the non-zero kept weights ``u`` (in rank order) in integers:
  ``rho`` is the largest ``j`` with ``j * u_j + 32768 - sum_{i<=j} u_i > 0``,
  ``lam = floor((32768 - S_rho) / rho)``, ``w_j = max(u_j + lam, 0)``, and the remainder
  ``32768 - S_rho - rho * lam`` (< rho) adds 1 to the first weights, so the weights sum to exactly 32768.
* The ensemble keeps the rank order; prediction is the shared ensemble rule of :mod:`edgestream.tree`. An empty
  ensemble predicts ``32768 // C`` for every class (class 0).
* Shrub storage: ``max_shrubs + 1`` slots of ``2**(max_depth+1) - 1`` nodes and ``2**max_depth`` leaf rows; a
  new shrub takes the lowest slot no active shrub uses.
* Scratch (``node_of``, ``split_counts``, ``split_stats``, ``work_weights``, ``rank``, ``cand_slot``) carries
  nothing from one step to the next.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from .. import _kernels
from ..state import Field, RegionSpec, StateSpec
from ..tree import CRITERIA, Q15_ONE, TreeEnsemble
from .base import (TREE_OPTIONS, BinnedOnlineLearner, DeviceState, Estimator, LearnerSpec, Option, check_integer,
                   restore_regions, step_size)

STATE_ARRAYS = ("window_bins", "window_labels", "nodes", "leaf_values", "roots", "weights")
MAX_WINDOW = 4096
_FLOAT64 = np.dtype(np.float64)
MAX_SHRUBS = 64
MAX_DEPTH = 8
MAX_STEP = 256.0
WEIGHT_LIMIT = 2**17


def _nodes_per_shrub(config: dict) -> int:
    return 2 ** (config["max_depth"] + 1) - 1


def _slots(config: dict) -> int:
    return config["max_shrubs"] + 1


STATE = StateSpec(
    prefix="es_shrubs",
    title="Shrub Ensembles",
    config=(
        Field("n_features", "uint8_t"), Field("n_classes", "uint8_t"), Field("max_depth", "uint8_t"),
        Field("criterion", "uint8_t", "ES_GINI or ES_ENTROPY"), Field("window_size", "uint16_t", "B"),
        Field("max_shrubs", "uint16_t", "M; the pool has M + 1 slots"), Field("min_samples_leaf", "uint16_t"),
        Field("burnin", "uint16_t", "gradient steps per new shrub"), Field("update_every", "uint16_t"),
        Field("step_q16", "uint32_t", "gradient step in Q16; 0 = adaptive, 65536 / (shrubs + 1)"),
    ),
    counters=(
        Field("head", "uint16_t", "next window row to write"), Field("count", "uint16_t", "rows in the window"),
        Field("n_shrubs", "uint16_t", "active shrubs: roots[0..n_shrubs) and weights[0..n_shrubs)"),
        Field("since_update", "uint16_t", "samples since the last new shrub"),
    ),
    regions=(
        RegionSpec("window_bins", "window", "uint8_t", lambda c: c["window_size"] * c["n_features"], "B x features"),
        RegionSpec("window_labels", "window", "uint8_t", lambda c: c["window_size"], "B"),
        RegionSpec("sorted_rows", "window", "uint16_t", lambda c: c["n_features"] * c["window_size"],
                   "features x B: window rows by (bin, row)"),
        RegionSpec("nodes", "node pool", "es_node", lambda c: _slots(c) * _nodes_per_shrub(c),
                   "(M + 1) x (2^(depth+1) - 1)"),
        RegionSpec("leaf_values", "leaves", "uint16_t", lambda c: _slots(c) * 2 ** c["max_depth"] * c["n_classes"],
                   "(M + 1) x 2^depth x classes, Q15"),
        RegionSpec("roots", "weights", "uint16_t", _slots, "M + 1"),
        RegionSpec("weights", "weights", "uint16_t", _slots, "M + 1, Q15"),
        RegionSpec("leaf_index", "cache", "uint8_t", lambda c: c["window_size"] * _slots(c),
                   "B x (M + 1): leaf of each window row in each slot's shrub"),
        RegionSpec("gram", "cache", "uint32_t", lambda c: _slots(c) ** 2, "(M + 1) x (M + 1), Q15 sums"),
        RegionSpec("label_sum", "cache", "uint32_t", _slots, "M + 1, Q15 sums"),
        RegionSpec("node_of", "scratch", "uint16_t", lambda c: c["window_size"], "B"),
        RegionSpec("split_counts", "scratch", "uint16_t", lambda c: 2 ** c["max_depth"] * c["n_classes"],
                   "2^depth x classes: class totals of a level's nodes"),
        RegionSpec("split_stats", "scratch", "uint32_t",
                   lambda c: 2 ** max(c["max_depth"] - 1, 0) * (10 + c["n_classes"]),
                   "2^(depth-1) x (10 + classes): scan state of a level's nodes"),
        RegionSpec("work_weights", "scratch", "int32_t", lambda c: 2 * _slots(c), "2 x (M + 1)"),
        RegionSpec("rank", "scratch", "uint8_t", _slots, "M + 1"),
        RegionSpec("cand_slot", "scratch", "uint8_t", _slots, "M + 1"),
    ),
)

CACHE_ARRAYS = ("sorted_rows", "leaf_index", "gram", "label_sum")
SCRATCH_ARRAYS = tuple(r.name for r in STATE.regions if r.group == "scratch")


def simplex_q15(u: list[int]) -> list[int]:
    """Integer projection of weights ``u`` (sorted descending) onto {w >= 0, sum w = 32768}."""
    total = 0
    rho, total_rho = 1, u[0]
    for j, value in enumerate(u, start=1):
        total += value
        if j * value + Q15_ONE - total > 0:
            rho, total_rho = j, total
    lam = (Q15_ONE - total_rho) // rho  # Python's // is floor division
    remainder = Q15_ONE - total_rho - rho * lam
    projected = [max(value + lam, 0) for value in u]
    for j in range(remainder):
        projected[j] += 1
    return projected


class ShrubEnsemble(BinnedOnlineLearner, Estimator, DeviceState):
    """Online ensemble of small trees trained on a sliding window, learning in fixed memory.

    Parameters
    ----------
    window_size : samples in the sliding window (B), 1..4096.
    max_shrubs : ensemble size after the prox (M), 1..64.
    max_depth : depth of each shrub, 0..8.
    step_size : gradient step, a float in (0, 256) or ``"adaptive"`` (1 / (shrubs + 1)).
    burnin : gradient steps after each new shrub, 1..255.
    update_every : a new shrub every this many samples (1 as in the paper).
    criterion, min_samples_leaf : shrub training, see :class:`edgestream.TreeClassifier`.
    max_bins, binning, input_dtype : feature quantization, fitted once by :meth:`fit_bins` (the device ships
        with fixed edges).
    allow_missing : treat NaN features as missing values (their own bin) instead of refusing them.
    """

    state_spec = STATE
    engine_state = tuple(r.name for r in STATE.regions) + ("_counters", "_kernel")

    def __init__(self, window_size: int = 64, max_shrubs: int = 16, max_depth: int = 4, step_size="adaptive",
                 burnin: int = 5, update_every: int = 1, criterion: str = "gini", min_samples_leaf: int = 1,
                 max_bins: int = 64, binning: str = "quantile", input_dtype: str = "float32",
                 allow_missing: bool = False):
        self.window_size = window_size
        self.max_shrubs = max_shrubs
        self.max_depth = max_depth
        self.step_size = step_size
        self.burnin = burnin
        self.update_every = update_every
        self.criterion = criterion
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.binning = binning
        self.input_dtype = input_dtype
        self.allow_missing = allow_missing
        self._check_params()

    # -- parameters and layout ---------------------------------------------------------------------------------

    def _check_params(self):
        check_integer(self, "window_size", 1, MAX_WINDOW)
        check_integer(self, "max_shrubs", 1, MAX_SHRUBS)
        check_integer(self, "max_depth", 0, MAX_DEPTH)
        check_integer(self, "burnin", 1, 255)
        check_integer(self, "update_every", 1, 65535)
        check_integer(self, "min_samples_leaf", 1, MAX_WINDOW)
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion={self.criterion!r} must be one of {sorted(CRITERIA)}")
        if self.step_size != "adaptive" and not (isinstance(self.step_size, (int, float)) and
                                                 0 < self.step_size < MAX_STEP and round(self.step_size * 65536) > 0):
            raise ValueError(f"step_size={self.step_size!r} must be 'adaptive' or a number in (0, {MAX_STEP:g})")

    @property
    def nodes_per_shrub(self) -> int:
        return 2 ** (self.max_depth + 1) - 1

    @property
    def leaves_per_shrub(self) -> int:
        return 2**self.max_depth

    @property
    def step_q16(self) -> int:
        """The fixed step in Q16, or 0 for the adaptive step."""
        return 0 if self.step_size == "adaptive" else int(round(self.step_size * 65536))

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        """The values of the C ``es_shrubs_config`` (features and classes default to the fitted ones)."""
        return {
            "n_features": self.n_features_ if n_features is None else n_features,
            "n_classes": len(self.classes_) if n_classes is None else n_classes,
            "max_depth": self.max_depth, "criterion": CRITERIA[self.criterion], "window_size": self.window_size,
            "max_shrubs": self.max_shrubs, "min_samples_leaf": self.min_samples_leaf, "burnin": self.burnin,
            "update_every": self.update_every, "step_q16": self.step_q16,
        }

    def summary(self) -> str:
        """The configuration and its device state, in a few words."""
        return (f"window {self.window_size}, {self.max_shrubs} shrubs of depth {self.max_depth}, "
                f"{self.state_bytes()} state bytes")

    def device_state(self) -> tuple[dict, dict] | None:
        """The state a bundle exported now starts from: flat arrays of every region (scratch zero) and the
        counters; None before the bins and classes are set."""
        if not hasattr(self, "window_bins"):
            return None
        arrays = {name: zeros if name in SCRATCH_ARRAYS else getattr(self, name).reshape(-1)
                  for name, zeros in self.layout().zeros().items()}
        return arrays, {field.name: getattr(self, field.name) for field in STATE.counters}

    # -- setup -----------------------------------------------------------------------------------------------

    def reset(self) -> None:
        """Empty window and ensemble; the bins and classes stay."""
        self._drop_engine()
        d, c = self.n_features_, len(self.classes_)
        arrays = self.layout().zeros()
        arrays["window_bins"] = arrays["window_bins"].reshape(self.window_size, d)
        arrays["leaf_values"] = arrays["leaf_values"].reshape(-1, c)
        for name, array in arrays.items():
            setattr(self, name, array)
        self._counters = np.zeros(4, dtype=np.uint16)  # head, count, n_shrubs, since_update
        config = self.device_config()
        self._kernel = _kernels.ShrubKernel(arrays, self._counters, *(config[f.name] for f in STATE.config))
        self._proba = np.zeros(c, dtype=np.uint16)
        self._row_bins = np.zeros(d, dtype=np.uint8)
        self._row_shape = (d,)
        self._label_index = {label: i for i, label in enumerate(self.classes_.tolist())}
        self._fast_edges = None
        if self.bins_.dtype == "float32":
            edges, offsets = self.bins_.flat_edges()
            self._fast_edges = (np.ascontiguousarray(edges, dtype=np.float32), np.ascontiguousarray(offsets))
            self._kernel.set_edges(*self._fast_edges, self._row_bins, self.allow_missing)

    head = property(lambda self: int(self._counters[0]))
    count = property(lambda self: int(self._counters[1]))
    n_shrubs = property(lambda self: int(self._counters[2]))
    since_update = property(lambda self: int(self._counters[3]))

    def __getstate__(self):  # the kernel views the arrays; pickles carry the arrays and counters only
        state = super().__getstate__()
        state.pop("_kernel", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_counters" in state:
            arrays = {r.name: getattr(self, r.name) for r in STATE.regions}
            config = self.device_config()
            self._kernel = _kernels.ShrubKernel(arrays, self._counters, *(config[f.name] for f in STATE.config))
            if self._fast_edges is not None:
                self._kernel.set_edges(*self._fast_edges, self._row_bins, self.allow_missing)

    def saved_arrays(self) -> dict:
        """The whole learning state, as a model file stores it."""
        self._check_ready()
        counters = np.array([self.head, self.count, self.n_shrubs, self.since_update], dtype=np.uint16)
        return {name: getattr(self, name) for name in STATE_ARRAYS} | {"counters": counters}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (after ``bins_`` and ``classes_`` are set); refuses tables of the wrong layout."""
        self.reset()
        restore_regions(self, STATE_ARRAYS, arrays)
        head, count, n_shrubs, since_update = (int(v) for v in arrays["counters"])
        if not (head < self.window_size and count <= self.window_size and n_shrubs <= self.max_shrubs
                and since_update < self.update_every and (count == self.window_size or head == count)):
            raise ValueError(f"inconsistent counters head={head} count={count} shrubs={n_shrubs} "
                             f"since_update={since_update}")
        roots = self.roots[:n_shrubs].astype(np.int64)
        if (roots % self.nodes_per_shrub).any() or len(set(roots.tolist())) != n_shrubs:
            raise ValueError("shrub roots must be distinct slot starts")
        if (self.window_labels >= len(self.classes_)).any():
            raise ValueError("window labels out of range")
        if n_shrubs:
            TreeEnsemble(self.nodes, self.roots[:n_shrubs], self.weights[:n_shrubs], self.leaf_values,
                         self.n_features_).validate()
        self._counters[:] = (head, count, n_shrubs, since_update)
        self._kernel.rebuild()

    # -- learning --------------------------------------------------------------------------------------------

    def _bins_one(self, x) -> np.ndarray:
        """Bins of one raw row: a compiled fast path for float rows, else :meth:`transform`."""
        fast = getattr(self, "_fast_edges", None)
        if fast is not None and type(x) is np.ndarray and x.dtype is _FLOAT64 and x.shape == self._row_shape:
            nan_at = _kernels.bin_row_f32(x if x.flags.c_contiguous else np.ascontiguousarray(x), fast[0], fast[1],
                                          self._row_bins)
            if nan_at < 0 or self.allow_missing:
                return self._row_bins
        return self.transform(np.asarray(x).reshape(1, -1))[0]

    def learn_bins(self, bins: np.ndarray, label: int) -> None:
        """One learning step on an already binned sample with an encoded label."""
        if not 0 <= label < len(self.classes_):
            raise ValueError(f"label index {label} is outside 0..{len(self.classes_) - 1}")
        self._kernel.learn(np.ascontiguousarray(bins, dtype=np.uint8), label)

    # -- prediction ------------------------------------------------------------------------------------------

    def predict_proba_bins(self, bins: np.ndarray) -> np.ndarray:
        """Q15 probabilities of binned rows, as the device computes them."""
        bins = np.ascontiguousarray(np.atleast_2d(bins), dtype=np.uint8)
        proba = np.empty((len(bins), len(self.classes_)), dtype=np.uint16)
        if len(bins):
            self._kernel.predict_many(bins, proba)
        return proba


def shrubs_context(learner: ShrubEnsemble, name: str, optimize: str = "speed") -> dict:
    """A learning bundle keeps every bin edge (new shrubs may split anywhere) and starts from the current state."""
    from ..emit import c_array

    if not hasattr(learner, "window_bins"):
        raise ValueError("the shrub ensemble has no bins or classes yet; call fit_bins() and set_classes() first")
    edges, offsets = learner.bins_.flat_edges()
    layout = learner.layout()
    arrays, counters = learner.device_state()
    return {"edges": edges, "offsets": offsets, "layout": layout,
            "config_initializer": layout.config_initializer(name), "state_struct": layout.state_struct(name),
            "state_initializer": layout.initializer(name, arrays, counters, c_array),
            "state_binding": layout.binding(name), "state_bytes": layout.size()}


def shrubs_tables(learner: ShrubEnsemble, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                  optimize: str = "speed"):
    """Flash objects: every bin edge (the fitted ones, else max_bins - 1 per feature), offsets, config, pointers."""
    fitted = hasattr(learner, "bins_")
    n_edges = len(learner.bins_.flat_edges()[0]) if fitted else n_features * (learner.max_bins - 1)
    return [("edges", max(n_edges, 1) * 4), ("offsets", 2 * (n_features + 1)), ("config", STATE.config_bytes(packed)),
            ("model", (len(STATE.regions) + 2) * pointer_bytes)]


SHRUB_LADDER = tuple({"window_size": b, "max_shrubs": m, "max_depth": d} for b, m, d in (
    (256, 32, 6), (256, 32, 5), (128, 32, 5), (128, 16, 5), (64, 16, 4), (64, 8, 4), (32, 8, 4), (32, 8, 3), (32, 4, 3),
    (16, 4, 3), (16, 4, 2), (8, 2, 2), (8, 2, 1), (4, 1, 1)))

def learn_cost_terms(params: dict, n_features: int, n_classes: int) -> tuple[list[int], list[int]]:
    """The work terms of a learn step (window and ensemble full): every step's (constant; quantizing the row,
    d log2 bins; the sorted lists' insertion, d B; the new row's leaves, M depth; the Gram update of the leaving and
    entering rows, M^2 C), and those of a step that also trains a shrub (constant; CART's scans, d B depth, and
    split scoring, d min(B, bins) depth; the new shrub on the window, B depth; its Gram column, B M C; the
    gradient steps, burnin M^2)."""
    b, m, depth = params["window_size"], params["max_shrubs"], params["max_depth"]
    d, c, bins = n_features, n_classes, params["max_bins"]
    step = [1, d * int(bins).bit_length(), d * b, m * depth, m * m * c]
    train = [1, d * b * depth, d * min(b, bins) * depth, b * depth, b * m * c, params["burnin"] * m * m]
    return step, train


# Coefficients of learn_cost_terms per core (Board.arch), fitted to QEMU counts by benchmarks/calibrate_shrub_cost.py.
LEARN_COST: dict[str, dict[str, list[float]]] = {
    "armv7e-m": {"step": [829.866, 0.0, 16.065, 7.031, 0.193],
                 "train": [8400.839, 34.5, 13.162, 0.0, 15.508, 3.588]},
    "armv6-m": {"step": [1214.464, 21.709, 23.036, 11.039, 0.656],
                "train": [8861.082, 81.006, 1.044, 36.44, 21.123, 40.774]},
}


def learn_instructions(params: dict, n_features: int, n_classes: int, arch: str) -> tuple[float, float] | None:
    """Predicted instructions of a learn step on a core: (mean per sample, a new shrub's training amortized over
    ``update_every`` steps; the worst step, the one that trains), or None for a core without a calibration."""
    coefficients = LEARN_COST.get(arch)
    if coefficients is None:
        return None
    step, train = learn_cost_terms(params, n_features, n_classes)
    plain = float(np.dot(coefficients["step"], step))
    training = float(np.dot(coefficients["train"], train))
    return plain + training / params["update_every"], plain + training


def learn_cost(params: dict, n_features: int, n_classes: int, arch: str) -> float | None:
    """Mean instructions per learn step (``LearnerSpec.learn_cost``)."""
    predicted = learn_instructions(params, n_features, n_classes, arch)
    return None if predicted is None else predicted[0]


# The budget's search on data (edgestream.search): sizes (window, shrubs, depth) times how they learn (a new shrub
# every `update_every` samples, burn-in steps, step size, bins per feature). Memory depends on the size only.
SEARCH_SIZES = tuple(dict.fromkeys(
    tuple(rung.values()) for rung in SHRUB_LADDER[::-1])) + ((128, 8, 4), (256, 8, 4), (256, 16, 4))
SEARCH_VARIANTS = (
    {"update_every": 1, "burnin": 5, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 1, "burnin": 1, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 4, "burnin": 1, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 16, "burnin": 1, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 4, "burnin": 5, "step_size": "adaptive", "max_bins": 16},
    {"update_every": 4, "burnin": 1, "step_size": 0.25, "max_bins": 64},
)
SHRUB_SEARCH = tuple({"window_size": b, "max_shrubs": m, "max_depth": d, **variant}
                     for b, m, d in SEARCH_SIZES for variant in SEARCH_VARIANTS)

SPEC = LearnerSpec(
    name="shrubs", cls=ShrubEnsemble, summary="Shrub Ensembles: small trees on a sliding window, learning on the device",
    options=TREE_OPTIONS + (
             Option("--window", "window_size", int, "samples in the sliding window", "N"),
             Option("--shrubs", "max_shrubs", int, "shrubs kept in the ensemble", "M"),
             Option("--step-size", "step_size", step_size, "gradient step (default adaptive)", "X|adaptive"),
             Option("--burnin", "burnin", int, "gradient steps after each new shrub", "N"),
             Option("--update-every", "update_every", int, "a new shrub every N samples", "N")),
    learning=True, online=True, runtime=("es_common", "es_binning", "es_tree", "es_cart", "es_shrubs"),
    template="shrubs.c.j2", context=shrubs_context, tables=shrubs_tables, ladder=SHRUB_LADDER, state=STATE,
    search=SHRUB_SEARCH, learn_cost=learn_cost)
