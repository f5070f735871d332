"""The shared tree core: one compact integer-binned tree format, its exact prediction rule, and CART on bins.

The learners that grow these trees are in :mod:`edgestream.learners`.

Format (identical to ``es_node`` / ``es_ensemble`` in ``csrc/es_tree.h``):

* a node is 4 bytes: ``feature`` (uint8), ``threshold`` (uint8), ``child`` (uint16). An internal node sends a
  row left to node ``child`` when ``bin[feature] <= threshold`` and right to node ``child + 1`` otherwise. A leaf
  has ``feature == LEAF_FEATURE`` (255) and ``child`` is its row in the leaf table.
* leaf rows hold class probabilities in Q15: ``p_k = (c_k * 32768 + n // 2) // n`` (1.0 == 32768, uint16).
* an ensemble is all trees' nodes in one array, a root index per tree and an integer weight per tree.

Prediction (the specification the C runtime follows to the bit):
``acc_k = sum_t weight_t * leaf_t[k]`` (fits uint32 because the weights sum to at most 65535),
``proba_k = (acc_k + W // 2) // W`` with ``W = sum_t weight_t``, and the class is the first index of the largest
``proba_k``.

Leaf kinds (``TreeEnsemble.leaf_kind``, see :mod:`edgestream.encoding` for the rules):

* ``"proba"``: the Q15 class-probability rows above, combined by weighted vote (tree, forest, shrubs);
* ``"additive"``: signed int16 scores per class (one score for a binary model), summed over trees on top of an
  int32 ``base_score`` per score; the class is the argmax of the sums and the probabilities come from
  :func:`edgestream.encoding.additive_proba_q15` (boosting learners).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernels
from .binning import MISSING_BIN
from .ranges import Range
from .encoding import LEAF_KINDS, additive_classes, additive_proba_q15, additive_sums, check_additive
from .fixedpoint import shift_scores

LEAF_FEATURE = _kernels.LEAF_FEATURE
NODE_DTYPE = _kernels.NODE_DTYPE
Q15_ONE = _kernels.Q15_ONE
MAX_FEATURES = 255  # feature 255 marks a leaf
MAX_CLASSES = 255
FEATURES = Range("features", 1, MAX_FEATURES)  # per row, of any model
CLASSES = Range("classes", 2, MAX_CLASSES)  # of any classifier
MAX_NODES = 65535
MAX_TOTAL_WEIGHT = 65535
MAX_SCORE_SHIFT = 20  # additive scores have at most 10 + 20 fraction bits
CRITERIA = {"gini": _kernels.GINI, "entropy": _kernels.ENTROPY}


def tree_in_slot(nodes: np.ndarray, slot: int, per_tree: int, leaves_per_tree: int, n_features: int) -> bool:
    """The tree of pool slot ``slot`` (nodes ``slot * per_tree ...``, leaf rows ``slot * leaves_per_tree ...``) of a
    learner's node pool: every node reached from its root stays in the slot (children forward, features in range)
    and every leaf reached is one of the slot's leaf rows."""
    base = slot * per_tree
    own = nodes[base: base + per_tree]
    frontier = np.zeros(1, dtype=np.int64)
    while len(frontier):
        entry = own[frontier]
        leaf = entry["feature"] == LEAF_FEATURE
        child = entry["child"].astype(np.int64)
        if ((child[leaf] < slot * leaves_per_tree) | (child[leaf] >= (slot + 1) * leaves_per_tree)).any():
            return False
        split, child = frontier[~leaf], child[~leaf] - base
        if ((child <= split) | (child + 1 >= per_tree) | (entry["feature"][~leaf] >= n_features)).any():
            return False
        frontier = np.unique(np.concatenate([child, child + 1]))
    return True


@dataclass
class TreeEnsemble:
    """Trees (nodes, roots), their integer weights and the Q15 leaf table, as the device stores them."""

    nodes: np.ndarray  # NODE_DTYPE [n_nodes]
    roots: np.ndarray  # uint16 [n_trees]
    weights: np.ndarray  # uint16 [n_trees]
    leaf_values: np.ndarray  # uint16 [n_leaves, n_classes] (proba) or int16 [n_leaves, n_scores] (additive)
    n_features: int
    leaf_kind: str = "proba"  # "proba" | "additive"
    base_score: np.ndarray | None = None  # additive: int32 [n_scores]
    score_shift: int = 0  # additive: fraction bits of the scores beyond Q10 (see edgestream.fixedpoint.shift_scores)

    @property
    def n_classes(self) -> int:
        if self.leaf_kind == "additive" and self.leaf_values.shape[1] == 1:
            return 2  # one score for a binary model
        return self.leaf_values.shape[1]

    @property
    def n_trees(self) -> int:
        return len(self.roots)

    @classmethod
    def from_trees(cls, trees, weights, n_features: int, n_classes: int, base_score=None) -> "TreeEnsemble":
        """Concatenate per-tree (nodes, leaf_values) pairs, shifting child indices into the joint arrays: Q15
        probability rows, or with ``base_score`` (int32, one per score) additive int16 rows of ``n_classes``
        scores (a regressor's: one score, its leaf codes)."""
        nodes, leaves, roots = [], [], []
        node_offset = leaf_offset = 0
        for tree_nodes, tree_leaves in trees:
            shifted = tree_nodes.copy()
            is_leaf = shifted["feature"] == LEAF_FEATURE
            child = shifted["child"].astype(np.int64) + np.where(is_leaf, leaf_offset, node_offset)
            if child.size and child.max() > MAX_NODES:
                raise ValueError(f"the ensemble needs more than {MAX_NODES} nodes or leaves; lower max_depth or n_trees")
            shifted["child"] = child
            roots.append(node_offset)
            nodes.append(shifted)
            leaves.append(tree_leaves)
            node_offset += len(tree_nodes)
            leaf_offset += len(tree_leaves)
        if node_offset > MAX_NODES:
            raise ValueError(f"the ensemble has {node_offset} nodes, the format holds at most {MAX_NODES}")
        ensemble = cls(
            nodes=np.concatenate(nodes),
            roots=np.asarray(roots, dtype=np.uint16),
            weights=np.asarray(weights, dtype=np.uint16),
            leaf_values=np.concatenate(leaves).reshape(-1, n_classes).astype(np.uint16 if base_score is None else np.int16),
            n_features=n_features, leaf_kind="proba" if base_score is None else "additive",
            base_score=None if base_score is None else np.asarray(base_score, dtype=np.int32),
        )
        ensemble.validate()
        return ensemble

    @classmethod
    def from_arrays(cls, arrays: dict, n_features: int) -> "TreeEnsemble":
        """The ensemble of a model file's tables (:meth:`arrays`), checked: additive when they hold a ``base_score``."""
        additive = "base_score" in arrays
        shift = arrays.get("score_shift", np.zeros(1, dtype=np.uint8))
        if shift.dtype != np.uint8 or shift.shape != (1,):
            raise ValueError(f"score_shift has dtype {shift.dtype} and shape {shift.shape}, expected uint8 (1,)")
        ensemble = cls(arrays["nodes"], arrays["roots"], arrays["weights"], arrays["leaf_values"], n_features,
                       "additive" if additive else "proba", arrays["base_score"] if additive else None, int(shift[0]))
        ensemble.validate()
        return ensemble

    def validate(self) -> np.ndarray:
        """Refuse tables the device could loop or read out of bounds on (children must point forward). Returns the
        leaf rows reachable from the roots."""
        nodes = self.nodes
        if self.leaf_kind not in LEAF_KINDS:
            raise ValueError(f"leaf_kind={self.leaf_kind!r} must be one of {LEAF_KINDS}")
        additive = self.leaf_kind == "additive"
        expected = {"nodes": (NODE_DTYPE, 1), "roots": (np.uint16, 1), "weights": (np.uint16, 1),
                    "leaf_values": (np.int16 if additive else np.uint16, 2)}
        for name, (dtype, ndim) in expected.items():
            table = getattr(self, name)
            if table.dtype != np.dtype(dtype) or table.ndim != ndim:
                raise ValueError(f"table {name!r} has dtype {table.dtype} and shape {table.shape}, "
                                 f"expected a {ndim}-D {np.dtype(dtype)} array")
        if len(self.roots) == 0 or len(self.roots) != len(self.weights):
            raise ValueError(f"{len(self.roots)} roots and {len(self.weights)} weights: need one weight per tree, at least one tree")
        total = int(self.weights.astype(np.int64).sum())
        if not 0 < total <= MAX_TOTAL_WEIGHT:
            raise ValueError(f"tree weights sum to {total}, must be 1..{MAX_TOTAL_WEIGHT}")
        if not 1 <= self.n_classes <= MAX_CLASSES or not 1 <= self.n_features <= MAX_FEATURES:
            raise ValueError(f"{self.n_classes} classes / {self.n_features} features out of range")
        if (self.roots.astype(np.int64) >= len(nodes)).any():
            raise ValueError("corrupt tree tables: a root index is out of range")
        frontier = np.unique(self.roots.astype(np.int64))
        reached = []
        while len(frontier):  # only reachable nodes are ever read; children must point forward, so this ends
            node = nodes[frontier]
            leaf = node["feature"] == LEAF_FEATURE
            child = node["child"].astype(np.int64)
            if (child[leaf] >= len(self.leaf_values)).any():
                raise ValueError("corrupt tree tables: a leaf index is out of range")
            reached.append(child[leaf])
            split, child = frontier[~leaf], child[~leaf]
            if ((child <= split) | (child + 1 >= len(nodes)) | (node["feature"][~leaf] >= self.n_features)).any():
                raise ValueError("corrupt tree tables: a child or feature index is out of range")
            frontier = np.stack([child, child + 1], axis=1).ravel()
            if (np.diff(frontier) <= 0).any():  # shared children (possible in a file from elsewhere): dedupe
                frontier = np.unique(frontier)
        if additive:
            check_additive(self.leaf_values, self.base_score, self.n_trees)
            if not 0 <= self.score_shift <= MAX_SCORE_SHIFT:
                raise ValueError(f"score_shift {self.score_shift} must be 0..{MAX_SCORE_SHIFT}")
        elif (self.leaf_values > Q15_ONE).any():
            raise ValueError(f"leaf probabilities must be Q15 values <= {Q15_ONE}")
        return np.unique(np.concatenate(reached))

    def apply(self, X_binned: np.ndarray) -> np.ndarray:
        """Leaf row reached in every tree: uint16 [n_rows, n_trees]."""
        return _kernels.apply(self.nodes, self.roots, np.ascontiguousarray(X_binned, dtype=np.uint8))

    def combine_proba_q15(self, leaves: np.ndarray) -> np.ndarray:
        """Q15 probabilities from the leaf rows reached (``apply``), by the rule of the leaf kind."""
        if self.leaf_kind == "additive":
            return additive_proba_q15(shift_scores(additive_sums(self.leaf_values, self.base_score, leaves),
                                                   self.score_shift))
        acc = np.einsum("rtc,t->rc", self.leaf_values[leaves].astype(np.uint64), self.weights.astype(np.uint64))
        total = np.uint64(int(self.weights.astype(np.int64).sum()))
        return ((acc + total // np.uint64(2)) // total).astype(np.uint16)

    def combine_classes(self, leaves: np.ndarray) -> np.ndarray:
        """Class indices from the leaf rows reached: argmax of the score sums or of the Q15 probabilities."""
        if self.leaf_kind == "additive":
            return additive_classes(additive_sums(self.leaf_values, self.base_score, leaves))
        return np.argmax(self.combine_proba_q15(leaves), axis=1).astype(np.uint8)

    def predict_proba_q15(self, X_binned: np.ndarray) -> np.ndarray:
        return self.combine_proba_q15(self.apply(X_binned))

    def predict_sums(self, X_binned: np.ndarray) -> np.ndarray:
        """Additive leaves: the int32 score sums, base score plus every tree's leaf [n_rows, n_scores] (a
        regressor's raw output is column 0)."""
        return additive_sums(self.leaf_values, self.base_score, self.apply(X_binned)).astype(np.int32)

    def predict(self, X_binned: np.ndarray) -> np.ndarray:
        return self.combine_classes(self.apply(X_binned))

    def arrays(self) -> dict:
        arrays = {"nodes": self.nodes, "roots": self.roots, "weights": self.weights, "leaf_values": self.leaf_values}
        if self.leaf_kind == "additive":
            arrays["base_score"] = self.base_score
            if self.score_shift:
                arrays["score_shift"] = np.asarray([self.score_shift], dtype=np.uint8)
        return arrays


def impurity_importances(ensemble: TreeEnsemble, X_binned: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """Per feature, the decrease of the Gini impurity of the labels ``y`` (class indices) over the splits on it,
    each weighted by the rows of ``X_binned`` that reach it, summed over the trees; normalized to sum to 1 (all
    zeros when no split separates any row). Works for every leaf kind: only the routing is used."""
    nodes = ensemble.nodes
    feature, threshold = nodes["feature"].astype(np.int64), nodes["threshold"]
    child = nodes["child"].astype(np.int64)
    counts = np.zeros((len(nodes), n_classes), dtype=np.float64)
    rows = np.arange(len(y))
    X_binned = np.asarray(X_binned)
    for root in ensemble.roots.astype(np.int64):
        at, live = np.full(len(y), root), rows
        while len(live):
            np.add.at(counts, (at, y[live]), 1.0)
            split = feature[at] != LEAF_FEATURE
            at, live = at[split], live[split]
            at = child[at] + (X_binned[live, feature[at]] > threshold[at])
    total = counts.sum(axis=1)
    gini = total - np.divide((counts ** 2).sum(axis=1), total, out=np.zeros_like(total), where=total > 0)
    importances = np.zeros(ensemble.n_features)
    internal = np.flatnonzero(feature != LEAF_FEATURE)
    decrease = gini[internal] - gini[child[internal]] - gini[child[internal] + 1]
    np.add.at(importances, feature[internal], np.maximum(decrease, 0.0))
    return importances / importances.sum() if importances.sum() > 0 else importances


def grow_tree(X_binned, y, weight, n_classes, *, criterion, max_depth, min_samples_leaf, max_nodes,
              max_features=None, seed=0):
    """One tree on binned data (see ``_kernels.build_tree``): returns (nodes, leaf_values)."""
    n_features = X_binned.shape[1]
    return _kernels.build_tree(
        np.ascontiguousarray(X_binned, dtype=np.uint8), np.ascontiguousarray(y, dtype=np.uint8),
        np.ascontiguousarray(weight, dtype=np.uint32), n_classes, criterion, max_depth, min_samples_leaf,
        max_nodes, n_features if max_features is None else max_features, seed)


def grow_regression_tree(X_binned, codes, weight, *, max_depth, min_samples_leaf, max_nodes, max_features=None,
                         seed=0):
    """One regression tree on binned data, breadth first in the node format of :func:`grow_tree`: the split of
    each node is the one that most reduces the weighted squared error of the int16 target ``codes`` (variance
    reduction: the largest ``S_l^2 / n_l + S_r^2 / n_r``, S the sums of codes, n the weights, in float64; the
    first best in feature then bin order), among ``max_features`` features drawn per node with ``seed``. A node
    stays a leaf where ``grow_tree`` stops, when its codes are all equal, or when no split lowers the error by
    more than a billionth. Returns (nodes, int16 leaf codes [n_leaves, 1]): each leaf the weighted mean code,
    rounded half up."""
    X_binned = np.ascontiguousarray(X_binned, dtype=np.uint8)
    n_features = X_binned.shape[1]
    codes, weight = np.asarray(codes, dtype=np.int64), np.asarray(weight, dtype=np.int64)
    draws = n_features if max_features is None else min(int(max_features), n_features)
    rng = np.random.default_rng(seed)
    nodes = np.zeros(max_nodes, dtype=NODE_DTYPE)
    members, depths, leaves = [np.flatnonzero(weight)], [0], []
    node = 0
    while node < len(members):
        rows = members[node]
        w, c = weight[rows], codes[rows]
        total, s = int(w.sum()), int((w * c).sum())
        best = None
        if (depths[node] < max_depth and len(members) + 2 <= max_nodes and total >= 2 * min_samples_leaf
                and c.min() != c.max()):
            best = _best_variance_split(X_binned[rows], w, c, total, s, rng, draws, min_samples_leaf)
        if best is None:
            nodes[node] = (LEAF_FEATURE, 0, len(leaves))
            leaves.append((2 * s + total) // (2 * total))  # the mean, rounded half up (floor division)
        else:
            feature, threshold = best
            left = X_binned[rows, feature] <= threshold
            nodes[node] = (feature, threshold, len(members))
            members += [rows[left], rows[~left]]
            depths += [depths[node] + 1] * 2
        node += 1
    return nodes[:len(members)].copy(), np.asarray(leaves, dtype=np.int16).reshape(-1, 1)


def _best_variance_split(X, w, c, total: int, s: int, rng, draws: int, min_samples_leaf: int):
    """(feature, bin threshold) of the split of one node's rows that most reduces the squared error, or None."""
    n_features = X.shape[1]
    features = np.sort(rng.permutation(n_features)[:draws]) if draws < n_features else range(n_features)
    parent = s * s / total
    best, best_gain = None, 1e-9 * max(float((w * c * c).sum()) - parent, 1.0)
    for feature in features:
        n_left = np.cumsum(np.bincount(X[:, feature], weights=w, minlength=256))[:255]
        s_left = np.cumsum(np.bincount(X[:, feature], weights=w * c, minlength=256))[:255]
        n_right, s_right = total - n_left, s - s_left
        allowed = (n_left >= min_samples_leaf) & (n_right >= min_samples_leaf)
        if not allowed.any():
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where(allowed, s_left**2 / n_left + s_right**2 / n_right - parent, -np.inf)
        threshold = int(np.argmax(gain))
        if gain[threshold] > best_gain:
            best, best_gain = (int(feature), threshold), float(gain[threshold])
    return best


def check_features(X, n_features: int | None = None, dtype: str = "float32") -> np.ndarray:
    """A 2-D array with 1..255 features and at least one row: float (NaN = missing) or, for integer bins, integer."""
    integer = dtype in ("int32", "int16")
    try:
        X = np.asarray(X) if integer else np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"features must be numeric: {error}") from None
    if integer and not np.issubdtype(X.dtype, np.integer):
        raise ValueError(f"input_dtype={dtype!r} needs integer features, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (samples, features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError("X has no rows")
    if not 1 <= X.shape[1] <= MAX_FEATURES:
        raise ValueError(f"X has {X.shape[1]} features, edgestream supports 1 to {MAX_FEATURES}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model was fitted on {n_features}")
    return X


def encode_labels(y, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class labels and the uint8 class index of every row."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
    if len(y) != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {len(y)} labels")
    if y.dtype.kind == "f" and np.isnan(y).any():
        raise ValueError(f"y has {int(np.isnan(y).sum())} missing (NaN) labels")
    if y.dtype == object and any(label is None for label in y):
        raise ValueError("y has missing (None) labels")
    classes, encoded = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y has one class ({classes[0]!r}); a classifier needs at least 2")
    if len(classes) > MAX_CLASSES:
        raise ValueError(f"y has {len(classes)} classes, edgestream supports at most {MAX_CLASSES}")
    return classes, encoded.astype(np.uint8)


__all__ = ["TreeEnsemble", "check_features", "encode_labels", "grow_regression_tree", "grow_tree", "impurity_importances",
           "MISSING_BIN"]
