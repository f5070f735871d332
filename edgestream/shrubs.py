"""Shrub Ensembles (Buschjäger, Hess, Morik, AAAI 2022) in fixed point, the specification of ``csrc/es_shrubs.c``.

A sliding window of ``window_size`` binned samples lives in a ring buffer. Every ``update_every`` samples a
new shrub (a CART tree of depth ``max_depth`` on the window, see :func:`edgestream.tree.grow_tree`) joins the
ensemble with weight 0; ``burnin`` proximal gradient steps on the window's MSE loss follow, then the hard-L0
prox keeps the ``max_shrubs`` largest weights, the non-zero ones are projected onto the probability simplex,
and shrubs whose weight ends at 0 are dropped. The state has a fixed size (see :meth:`ShrubEnsemble.layout`).

Fixed-point decisions (the C runtime follows them to the bit):

* Shrub outputs ``h`` are the Q15 leaf probabilities; weights are Q15 (32768 == 1.0).
* One gradient step over the ``n`` window samples and ``K`` shrubs, ``C`` classes::

      f30[s, c] = sum_k w[k] * h[k, s, c]                               (Q30, int64)
      r15[s, c] = trunc((f30[s, c] - 2**30 * [y_s == c]) / 2**15)      (Q15 residual)
      g[k]      = sum_{s, c} r15[s, c] * h[k, s, c]
      mean[k]   = trunc(g[k] / (n * C))
      w[k]     -= trunc(mean[k] * alpha_q16 / 2**30)                    (alpha * 2 * mean gradient)
      w[k]      = clip(w[k], -2**17, 2**17)                             (keeps int64 products bounded)

  ``trunc`` rounds toward zero like C99 integer division (the steps run in ``_kernels.shrub_gradient_steps``). ``alpha_q16 = round(step_size * 65536)``, or with
  ``step_size="adaptive"`` ``65536 // (K + 1)`` (the reference implementation's ``1 / (n_estimators + 1)``).
* Hard-L0: shrubs are ranked by weight, descending, ties to the older position; the first ``max_shrubs`` stay.
* Simplex projection (Wang & Carreira-Perpiñán) of the non-zero kept weights ``u`` (in rank order) in integers:
  ``rho`` is the largest ``j`` with ``j * u_j + 32768 - sum_{i<=j} u_i > 0``,
  ``lam = floor((32768 - S_rho) / rho)``, ``w_j = max(u_j + lam, 0)``, and the remainder
  ``32768 - S_rho - rho * lam`` (< rho) adds 1 to the first weights, so the weights sum to exactly 32768.
* The ensemble keeps the rank order; prediction is the shared ensemble rule of :mod:`edgestream.tree`. An empty
  ensemble predicts ``32768 // C`` for every class (class 0).
* Shrub storage: ``max_shrubs + 1`` slots of ``2**(max_depth+1) - 1`` nodes and ``2**max_depth`` leaf rows; a
  new shrub takes the lowest slot no active shrub uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernels
from .binning import BinMapper
from .export import wrapper_stack_bytes
from .tree import (CRITERIA, LEAF_FEATURE, MAX_CLASSES, NODE_DTYPE, Q15_ONE, TreeEnsemble, check_features,
                   grow_tree)

STATE_ARRAYS = ("window_bins", "window_labels", "nodes", "leaf_values", "roots", "weights")
MAX_WINDOW = 4096
MAX_SHRUBS = 64
MAX_DEPTH = 8
MAX_STEP = 256.0
WEIGHT_LIMIT = 2**17
C_ALIGN = {"uint8_t": 1, "uint16_t": 2, "es_node": 2, "int32_t": 4, "uint32_t": 4, "es_shrubs_counters": 2}
C_SIZE = {"uint8_t": 1, "uint16_t": 2, "es_node": 4, "int32_t": 4, "uint32_t": 4, "es_shrubs_counters": 8}


@dataclass(frozen=True)
class Region:
    """One member of the device state struct."""

    name: str
    group: str  # window, node pool, leaves, weights, scratch, counters
    c_type: str
    count: int

    @property
    def bytes(self) -> int:
        return C_SIZE[self.c_type] * self.count


def struct_size(regions, packed: bool = False) -> int:
    """sizeof() of a C struct with these members in order (natural alignment, or none when packed)."""
    offset = 0
    for region in regions:
        align = 1 if packed else C_ALIGN[region.c_type]
        offset = -(-offset // align) * align + region.bytes
    align = 1 if packed else max(C_ALIGN[r.c_type] for r in regions)
    return -(-offset // align) * align


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


class ShrubEnsemble:
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

    def get_params(self, deep: bool = True) -> dict:
        names = ("window_size", "max_shrubs", "max_depth", "step_size", "burnin", "update_every", "criterion",
                 "min_samples_leaf", "max_bins", "binning", "input_dtype", "allow_missing")
        return {name: getattr(self, name) for name in names}

    def _check_params(self):
        def integer(name, low, high):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{name}={value!r} must be an integer from {low} to {high}")

        integer("window_size", 1, MAX_WINDOW)
        integer("max_shrubs", 1, MAX_SHRUBS)
        integer("max_depth", 0, MAX_DEPTH)
        integer("burnin", 1, 255)
        integer("update_every", 1, 65535)
        integer("min_samples_leaf", 1, MAX_WINDOW)
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

    def layout(self, n_features: int | None = None, n_classes: int | None = None) -> list[Region]:
        """The members of the device state struct, in order."""
        d = self.n_features_ if n_features is None else n_features
        c = len(self.classes_) if n_classes is None else n_classes
        B, slots, S = self.window_size, self.max_shrubs + 1, self.nodes_per_shrub
        return [
            Region("window_bins", "window", "uint8_t", B * d),
            Region("window_labels", "window", "uint8_t", B),
            Region("nodes", "node pool", "es_node", slots * S),
            Region("leaf_values", "leaves", "uint16_t", slots * self.leaves_per_shrub * c),
            Region("roots", "weights", "uint16_t", slots),
            Region("weights", "weights", "uint16_t", slots),
            Region("leaf_index", "scratch", "uint16_t", B * slots),
            Region("residual", "scratch", "int32_t", B * c),
            Region("work_weights", "scratch", "int32_t", slots),
            Region("order", "scratch", "uint16_t", B),
            Region("node_start", "scratch", "uint16_t", S),
            Region("node_stop", "scratch", "uint16_t", S),
            Region("node_depth", "scratch", "uint8_t", S),
            Region("rank", "scratch", "uint8_t", slots),
            Region("class_counts", "scratch", "uint32_t", c),
            Region("left_counts", "scratch", "uint32_t", c),
            Region("counters", "counters", "es_shrubs_counters", 1),
        ]

    def state_bytes(self, n_features: int | None = None, n_classes: int | None = None, packed=False) -> int:
        """Bytes of RAM the device state takes (sizeof of the generated struct)."""
        return struct_size(self.layout(n_features, n_classes), packed)

    def ram_bytes(self, n_features: int | None = None, n_classes: int | None = None, packed=False) -> int:
        """The state plus the locals of one call of the generated wrappers: what a RAM budget must hold."""
        d = self.n_features_ if n_features is None else n_features
        c = len(self.classes_) if n_classes is None else n_classes
        return self.state_bytes(d, c, packed) + wrapper_stack_bytes(d, c)

    @classmethod
    def for_budget(cls, ram_bytes: int, n_features: int, n_classes: int, **params) -> "ShrubEnsemble":
        """The largest configuration of a fixed ladder whose RAM (state and call locals) fits ``ram_bytes``."""
        ladder = [(256, 32, 6), (128, 32, 5), (128, 16, 5), (64, 16, 4), (64, 8, 4), (32, 8, 4), (32, 8, 3),
                  (32, 4, 3), (16, 4, 3), (16, 4, 2), (8, 2, 2), (8, 2, 1), (4, 1, 1)]
        smallest = None
        for window_size, max_shrubs, max_depth in ladder:
            config = dict(window_size=window_size, max_shrubs=max_shrubs, max_depth=max_depth) | params
            learner = cls(**config)
            needed = learner.ram_bytes(n_features, n_classes)
            if needed <= ram_bytes:
                return learner
            smallest = needed if smallest is None else min(smallest, needed)
        raise ValueError(f"no shrub ensemble for {n_features} features and {n_classes} classes fits in "
                         f"{ram_bytes} bytes of RAM: the smallest needs {smallest} bytes")

    def check_budget(self, ram_bytes: int) -> None:
        needed = self.ram_bytes()
        if needed > ram_bytes:
            raise ValueError(f"this shrub ensemble needs {needed} bytes of RAM, the budget is {ram_bytes} bytes")

    # -- setup -----------------------------------------------------------------------------------------------

    def fit_bins(self, X_sample) -> "ShrubEnsemble":
        """Fix the quantization edges from a sample of the stream (the device ships with these edges)."""
        if self.input_dtype not in ("float32", "int32"):
            raise ValueError(f"input_dtype={self.input_dtype!r}: shrubs quantize on the device from float32 or int32")
        self.bins_ = BinMapper(self.max_bins, self.binning, self.input_dtype).fit(
            check_features(X_sample, dtype=self.input_dtype))
        self._reset_if_ready()
        return self

    def set_classes(self, classes) -> "ShrubEnsemble":
        """Fix the class labels the stream may carry (sorted; 2..255 of them)."""
        classes = np.unique(np.asarray(classes))
        if not 2 <= len(classes) <= MAX_CLASSES:
            raise ValueError(f"{len(classes)} classes given, a shrub ensemble needs 2 to {MAX_CLASSES}")
        self.classes_ = classes
        self._reset_if_ready()
        return self

    @property
    def n_features_(self) -> int:
        return self.bins_.n_features

    def _reset_if_ready(self):
        if hasattr(self, "bins_") and hasattr(self, "classes_"):
            self.reset()

    def reset(self) -> None:
        """Empty window and ensemble; the bins and classes stay."""
        d, c, slots = self.n_features_, len(self.classes_), self.max_shrubs + 1
        self.window_bins = np.zeros((self.window_size, d), dtype=np.uint8)
        self.window_labels = np.zeros(self.window_size, dtype=np.uint8)
        self.nodes = np.zeros(slots * self.nodes_per_shrub, dtype=NODE_DTYPE)
        self.leaf_values = np.zeros((slots * self.leaves_per_shrub, c), dtype=np.uint16)
        self.roots = np.zeros(slots, dtype=np.uint16)
        self.weights = np.zeros(slots, dtype=np.uint16)
        self.head = self.count = self.n_shrubs = self.since_update = 0

    def _check_ready(self):
        if not hasattr(self, "window_bins"):
            raise RuntimeError("call fit_bins(X_sample) and set_classes(classes) (or partial_fit) before learning")

    def saved_arrays(self) -> dict:
        """The whole learning state, as a model file stores it."""
        self._check_ready()
        counters = np.array([self.head, self.count, self.n_shrubs, self.since_update], dtype=np.uint16)
        return {name: getattr(self, name) for name in STATE_ARRAYS} | {"counters": counters}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (after ``bins_`` and ``classes_`` are set); refuses tables of the wrong layout."""
        self.reset()
        for name in STATE_ARRAYS:
            expected = getattr(self, name)
            if arrays[name].dtype != expected.dtype or arrays[name].shape != expected.shape:
                raise ValueError(f"state {name!r} has dtype {arrays[name].dtype} and shape {arrays[name].shape}, "
                                 f"this configuration needs {expected.dtype} {expected.shape}")
            expected[...] = arrays[name]
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
        self.head, self.count, self.n_shrubs, self.since_update = head, count, n_shrubs, since_update

    # -- learning --------------------------------------------------------------------------------------------

    def encode_label(self, label) -> int:
        self._check_ready()
        index = int(np.searchsorted(self.classes_, label))
        if index >= len(self.classes_) or self.classes_[index] != label:
            raise ValueError(f"label {label!r} is not one of the configured classes {self.classes_.tolist()}")
        return index

    def transform(self, X) -> np.ndarray:
        """Bins of raw rows; NaN is refused unless ``allow_missing``."""
        self._check_ready()
        X = check_features(X, self.n_features_, self.input_dtype)
        if not self.allow_missing and X.dtype.kind == "f" and np.isnan(X).any():
            row, feature = np.argwhere(np.isnan(X))[0]
            raise ValueError(f"feature {feature} of row {row} is NaN; pass allow_missing=True to learn from "
                             "missing values")
        return self.bins_.transform(X)

    def learn_one(self, x, y) -> "ShrubEnsemble":
        label = self.encode_label(y)
        self.learn_bins(self.transform(np.asarray(x).reshape(1, -1))[0], label)
        return self

    def partial_fit(self, X, y, classes=None) -> "ShrubEnsemble":
        """Learn rows in order; the first call fits the bins on X and takes ``classes`` (or y's labels)."""
        X = check_features(X, dtype=self.input_dtype)
        if not hasattr(self, "bins_"):
            self.fit_bins(X)
        if not hasattr(self, "classes_"):
            self.set_classes(np.unique(y) if classes is None else classes)
        labels = [self.encode_label(label) for label in np.asarray(y)]
        for row, label in zip(self.transform(X), labels):
            self.learn_bins(row, label)
        return self

    def fit(self, X, y, classes=None) -> "ShrubEnsemble":
        for attribute in ("bins_", "classes_", "window_bins"):
            self.__dict__.pop(attribute, None)
        return self.partial_fit(X, y, classes)

    def learn_bins(self, bins: np.ndarray, label: int) -> None:
        """One learning step on an already binned sample with an encoded label."""
        if not 0 <= label < len(self.classes_):
            raise ValueError(f"label index {label} is outside 0..{len(self.classes_) - 1}")
        self.window_bins[self.head] = bins
        self.window_labels[self.head] = label
        self.head = (self.head + 1) % self.window_size
        self.count = min(self.count + 1, self.window_size)
        self.since_update += 1
        if self.since_update < self.update_every:
            return
        self.since_update = 0
        slot = self._free_slot()
        self._train_shrub(slot)
        self.roots[self.n_shrubs] = slot * self.nodes_per_shrub  # the new shrub joins as the last candidate
        candidates = [int(r) for r in self.roots[: self.n_shrubs + 1]]
        weights = self._gradient_steps(candidates, self.weights[: self.n_shrubs].astype(np.int64).tolist() + [0])
        self._prox(candidates, weights)

    def _free_slot(self) -> int:
        used = {int(r) // self.nodes_per_shrub for r in self.roots[: self.n_shrubs]}
        return min(set(range(self.max_shrubs + 1)) - used)

    def _train_shrub(self, slot: int) -> None:
        n = self.count
        nodes, leaves = grow_tree(self.window_bins[:n], self.window_labels[:n], np.ones(n, dtype=np.uint32),
                                  len(self.classes_), criterion=CRITERIA[self.criterion], max_depth=self.max_depth,
                                  min_samples_leaf=self.min_samples_leaf, max_nodes=self.nodes_per_shrub)
        is_leaf = nodes["feature"] == LEAF_FEATURE
        nodes["child"] += np.where(is_leaf, slot * self.leaves_per_shrub, slot * self.nodes_per_shrub).astype(np.uint16)
        first_node, first_leaf = slot * self.nodes_per_shrub, slot * self.leaves_per_shrub
        self.nodes[first_node : first_node + len(nodes)] = nodes
        self.leaf_values[first_leaf : first_leaf + len(leaves)] = leaves

    def _gradient_steps(self, roots: list[int], weights: list[int]) -> np.ndarray:
        n = self.count
        leaves = _kernels.apply(self.nodes, np.asarray(roots, dtype=np.uint16), self.window_bins[:n])
        w = np.asarray(weights, dtype=np.int64)
        alpha = self.step_q16 or 65536 // (len(roots) + 1)
        _kernels.shrub_gradient_steps(self.leaf_values, leaves, self.window_labels[:n], w, alpha, self.burnin,
                                      WEIGHT_LIMIT)
        return w

    def _prox(self, roots: list[int], weights: np.ndarray) -> None:
        ranked = sorted(range(len(roots)), key=lambda k: (-int(weights[k]), k))[: self.max_shrubs]
        support = [k for k in ranked if weights[k] != 0]
        projected = simplex_q15([int(weights[k]) for k in support]) if support else []
        survivors = [(roots[k], w) for k, w in zip(support, projected) if w > 0]
        self.n_shrubs = len(survivors)
        for i, (root, weight) in enumerate(survivors):
            self.roots[i], self.weights[i] = root, weight

    # -- prediction ------------------------------------------------------------------------------------------

    def predict_proba_bins(self, bins: np.ndarray) -> np.ndarray:
        """Q15 probabilities of binned rows, as the device computes them."""
        bins = np.ascontiguousarray(np.atleast_2d(bins), dtype=np.uint8)
        c = len(self.classes_)
        if self.n_shrubs == 0:
            return np.full((len(bins), c), Q15_ONE // c, dtype=np.uint16)
        active = TreeEnsemble(self.nodes, self.roots[: self.n_shrubs], self.weights[: self.n_shrubs],
                              self.leaf_values, self.n_features_)
        return active.predict_proba_q15(bins)

    def predict_proba_q15(self, X) -> np.ndarray:
        return self.predict_proba_bins(self.transform(X))

    def predict_proba(self, X) -> np.ndarray:
        return self.predict_proba_q15(X) / Q15_ONE

    def predict_encoded(self, X) -> np.ndarray:
        return np.argmax(self.predict_proba_q15(X), axis=1).astype(np.uint8)

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_encoded(X)]

    def predict_proba_one(self, x) -> dict:
        proba = self.predict_proba(np.asarray(x).reshape(1, -1))[0]
        return dict(zip(self.classes_.tolist(), proba.tolist()))

    def predict_one(self, x):
        return self.predict(np.asarray(x).reshape(1, -1))[0]


def config_values(learner: ShrubEnsemble) -> dict:
    """The fields of the C ``es_shrubs_config`` of a learner with fixed bins and classes."""
    return {
        "n_features": learner.n_features_, "n_classes": len(learner.classes_), "max_depth": learner.max_depth,
        "criterion": CRITERIA[learner.criterion], "window_size": learner.window_size,
        "max_shrubs": learner.max_shrubs, "min_samples_leaf": learner.min_samples_leaf, "burnin": learner.burnin,
        "update_every": learner.update_every, "step_q16": learner.step_q16,
    }
