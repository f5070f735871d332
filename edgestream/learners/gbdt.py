"""In-place online GBDT (Lin et al., "Online Gradient Boosting Decision Tree: In-Place Updates for Efficient
Adding/Deleting Data"): boosted trees on integer bins whose training rows can be added and deleted in place,
learning on the host and exported for inference through the additive leaf kind (frozen on the device).

The method (``fit``, ``add`` and ``delete`` each run as one call into :mod:`edgestream._gbdt`)
---------------------------------------------------------------------------------------------
* **Discretization**: the paper's adaptive bin-width doubling (``binning="adaptive"``,
  :class:`edgestream.binning.BinMapper`), at most 255 value bins (the device's 8-bit thresholds; the paper uses up
  to 1024). The bins are fixed at ``fit``: added rows are binned with them.
* **Robust LogitBoost** (Li 2010, the paper's Algorithm 1): per iteration, K trees (one per class) on the residuals
  ``r = [y == k] - p_k`` weighted by the hessians ``p_k (1 - p_k)``, split gain
  ``GL^2/HL + GR^2/HR - G^2/H``, leaf value ``nu * (K - 1)/K * sum r / sum h``. A binary model has **one score**
  (one tree per iteration, ``p = sigmoid(F)``, leaf ``nu * sum r / sum h``): with K = 2 the two trees of robust
  LogitBoost are mirror images and ``F_1 - F_0`` grows by exactly this, so it is the same model at half the cost,
  and it exports as the additive kind's single score.
* **Squared loss** (:class:`OnlineGBDTRegressor`, the ``regression`` task): the target in int16 codes of a
  :class:`edgestream.task.TargetScale` fitted at ``fit`` (rows beyond its range saturated and counted); the scores
  start at the mean code of the ``fit`` rows (rounded half up, then fixed, as the bins are); one tree per iteration
  on the residuals ``r = code - F`` with hessian 1 (both exact integers), the same split gain (variance reduction),
  leaf value ``nu * sum r / n`` rounded to an int16 code. The score sum is the device's int32 raw output (divisor
  1), decoded ``offset + raw * step``. The loss is the one seam between the two (:class:`edgestream._gbdt.Loss`).
* **Trees**: best first up to ``max_leaves`` leaves and ``max_depth`` levels (the paper grows J-leaf trees).
* **Statistics**: per tree and row the stored derivatives (int32: 30 fraction bits for classes, whole codes for
  numbers); per node the sums of gradient, hessian and count, and per internal node the left sums at every split
  candidate (int64). Integer sums make add-then-delete exact and incremental sums equal sums recomputed from
  scratch.
* **Split-candidate sampling**: ``ceil(split_sample_rate * edges)`` thresholds of every feature, drawn once at
  ``fit`` from ``random_state``; every node of every tree evaluates only these.
* **Add / delete** (Algorithms 2 and 3): iteration by iteration, the rows' stored derivatives (computed for added
  rows from the current model, reused from storage for deleted ones) are added to or subtracted from the sums on
  their path in each tree; every node the rows pass is checked top down; a node keeps its split while the split
  is valid (``min_samples_leaf`` rows or more on each side) and among the top
  ``max(1, ceil(alpha * valid candidates))`` by gain (the robustness tolerance; strictly larger gains count, so
  ties keep the split); otherwise its subtree is retrained on the rows that reach it. Leaf values are recomputed
  from the sums.
* **Lazy derivatives** (Section 3.2): a row's stored derivatives of a tree are refreshed only when a retrain covers
  it (or when it is added); otherwise they stay those of the model it was last fitted under.

Where the paper is ambiguous, and what this implementation chose
----------------------------------------------------------------
* Candidate sampling: the paper samples "potential splits" without saying per node or per model; here one sample
  per model (fixed across updates, so the stored candidate sums stay valid), rounded up per feature.
* Tolerance: "among the top ceil(alpha * candidates)" counts the *valid* candidates of the node (each child with
  ``min_samples_leaf`` rows or more) and ranks by strictly larger gain; at least the best one is always allowed
  (alpha = 0 keeps only a best split, alpha = 1 never retrains a valid split). A split that became invalid (a side
  left with fewer than ``min_samples_leaf`` rows by deletes) is always retrained.
* Retraining a subtree: its derivatives are refreshed from the current model's scores before the tree (the sums of
  the node's ancestors follow, they are not checked again in this update); the new subtree may use the leaves the
  rest of the tree leaves free (``max_leaves`` minus the leaves outside it); node ids are reused lowest first.
* Hessians: rounded to at least one unit (2**-30) so every row weighs and no leaf divides by zero.
* Fixed point: a leaf value is quantized to the int16 Q10 score the device adds (``fixedpoint.quantize_scores``'s
  rule) as soon as it is computed, and the scores ``F`` that derivatives come from are the integer sums of these
  leaves. So the trained model *is* the quantized additive ensemble: ``predict``/``predict_proba`` use it and the
  export is exact by construction (a regressor's leaves are whole codes, its scores their sums from the base). The
  classes' derivatives are computed in float64 (then rounded to the stored int32); statistics, gains' inputs and
  leaf values are integers.
* Which nodes are checked: Algorithm 3 visits every internal node; a node no added or deleted row reaches keeps
  its sums (hence its ranking), so only the nodes on the rows' paths are checked: the same outcome.
* Added rows' derivatives at iteration ``m`` come from the model as already updated for iterations ``< m`` in this
  pass (Algorithm 2 walks the iterations in order); deleted rows subtract exactly what they had added.
* Exact undo: deleting rows right after adding them restores every bit of the model when the add retrained no
  subtree (sums are integers); a retrain refreshes other rows' derivatives, which the paper does not undo either.
* Defaults: the paper's default settings did not survive in its text; here 100 iterations, 20 leaves, depth 8,
  nu = 0.1, sampling rate 0.1 and alpha = 0.1.
* Deleted rows keep their storage (row numbers are never reused; the memory report counts them).

Limits: at most 65535 trees (``n_estimators`` x scores) and 65535 nodes in the exported ensemble, 255 classes,
255 features; row numbers fit int64 but derivative sums are exact in double only below 2**23 rows.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import _gbdt
from ..binning import BinMapper
from ..encoding import VALUE_BYTES
from ..frozen import WorstCase, tree_context, tree_tables, without_inline_tables
from ..task import CODE_MAX, TargetScale, check_target
from ..tree import LEAF_FEATURE, MAX_NODES, NODE_DTYPE, TreeEnsemble, encode_labels, impurity_importances
from .base import BINNING, INPUT_DTYPE, MAX_BINS, MAX_DEPTH, MIN_SAMPLES_LEAF, LearnerSpec, Option, check_integer
from .skbase import BatchClassifier, BatchRegressor
from .tree import EnsemblePrediction, RegressionPrediction

F = _gbdt.FIELDS
LEAF, FREE = _gbdt.LEAF, _gbdt.FREE
STATE_ARRAYS = {  # name -> (dtype, number of dimensions)
    "cand_feature": (np.int32, 1), "cand_threshold": (np.uint8, 1), "cand_start": (np.int32, 1),
    "tree_nodes": (np.int64, 3), "slots": (np.int64, 4), "slot_owner": (np.int64, 2),
    "rows_binned": (np.uint8, 2), "rows_label": (np.uint8, 1), "rows_alive": (np.uint8, 1),
    "rows_grad": (np.int32, 2), "rows_hess": (np.int32, 2), "rows_leaf": (np.int16, 2),
}
ROW_ARRAYS = ("rows_binned", "rows_label", "rows_alive")  # rows first
TREE_ROW_ARRAYS = ("rows_grad", "rows_hess", "rows_leaf")  # [tree, row]


class InPlaceGBDT:
    """Gradient-boosted trees whose training rows can be added and deleted in place: what the classifier and the
    regressor share (parameters, bins, split candidates, row storage, the compiled booster, add and delete, the
    exported ensemble, the model file's state). A task gives its loss (:class:`edgestream._gbdt.Loss`) and the
    labels it stores: ``_fit_labels``, ``_labels_of``, ``check_rows``, ``_loss``, ``_leaf_scale``,
    ``_base_scores``, ``_restore_task`` and ``STATE`` (the stored labels' dtype).

    Parameters
    ----------
    n_estimators : boosting iterations (each adds one tree per score: per class, one for a binary model or a
        regressor).
    learning_rate : shrinkage ``nu``.
    max_leaves : leaves per tree (2..255).
    max_depth : depth limit of each tree (1..32).
    min_samples_leaf : a split is valid when each side keeps at least this many rows.
    max_bins, binning : feature quantization (:class:`edgestream.binning.BinMapper`); ``"adaptive"`` is the paper's.
    split_sample_rate : fraction of each feature's thresholds that are split candidates (0 < rate <= 1).
    alpha : robustness tolerance, 0 (retrain whenever the best split changes) .. 1 (never retrain a valid split).
    input_dtype : device input type (``"float32"``, ``"int32"``, ``"int16"``).
    random_state : seed of the candidate sample.

    ``fit(X, y)`` numbers its rows 0..n-1; ``add(X, y)`` returns the numbers of the rows it adds (counting on, never
    reused); ``delete(rows)`` removes rows by number. See the module docstring for the method and its choices.
    """

    _fitted_attribute = "tree_nodes_"
    STATE = STATE_ARRAYS

    def __init__(self, n_estimators: int = 100, learning_rate: float = 0.1, max_leaves: int = 20,
                 max_depth: int = 8, min_samples_leaf: int = 1, max_bins: int = 255, binning: str = "adaptive",
                 split_sample_rate: float = 0.1, alpha: float = 0.1, input_dtype: str = "float32",
                 random_state: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_leaves = max_leaves
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.binning = binning
        self.split_sample_rate = split_sample_rate
        self.alpha = alpha
        self.input_dtype = input_dtype
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------- parameters
    def _check_params(self, n_scores: int | None = None) -> None:
        check_integer(self, "n_estimators", 1, 65535)
        check_integer(self, "max_leaves", 2, 255)
        check_integer(self, "max_depth", 1, 32)
        check_integer(self, "min_samples_leaf", 1, 2**31 - 1)
        for name, low, high, closed in (("learning_rate", 0.0, 32.0, False), ("split_sample_rate", 0.0, 1.0, False),
                                        ("alpha", 0.0, 1.0, True)):
            value = getattr(self, name)
            if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool) or \
                    not (low <= value <= high if closed else low < value <= high):
                raise ValueError(f"{name}={value!r} must be a number in {'[' if closed else '('}{low}, {high}]")
        if n_scores is not None:
            trees = self.n_estimators * n_scores
            nodes = trees * (2 * self.max_leaves - 1)
            if trees > 65535 or nodes > MAX_NODES:
                raise ValueError(f"n_estimators={self.n_estimators} x {n_scores} score(s) x max_leaves="
                                 f"{self.max_leaves} needs up to {nodes} nodes in {trees} trees; the exported format "
                                 f"holds at most {MAX_NODES} nodes and 65535 trees: lower n_estimators or max_leaves")

    # ------------------------------------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Train from scratch on ``X``, ``y``; the rows get the numbers 0..n-1."""
        X, y = self._validate_fit(X, y)
        fitted, labels = self._fit_labels(y)
        self._check_params(fitted["n_scores_"])
        bins = BinMapper(self.max_bins, self.binning, self.input_dtype).fit(X)
        for name in list(vars(self)):
            if name in ("n_features_in_", "feature_names_in_"):  # just recorded by _validate_fit
                continue
            if name.endswith("_") or name == "_ensemble":
                delattr(self, name)
        for name, value in fitted.items():
            setattr(self, name, value)
        self.bins_ = bins
        self._sample_candidates()
        n = len(X)
        T, P = self.n_estimators * self.n_scores_, 2 * self.max_leaves - 1
        self.tree_nodes_ = np.zeros((T, P, _gbdt.NODE_FIELDS), dtype=np.int64)
        self.slots_ = np.zeros((T, self.max_leaves - 1, len(self.cand_threshold_), 3), dtype=np.int64)
        self.slot_owner_ = np.full((T, self.max_leaves - 1), -1, dtype=np.int64)
        self._allocate_rows(n + headroom(n))
        self.n_rows_ = n
        self.rows_binned_[:n] = bins.transform(X)
        self.rows_label_[:n] = labels
        self.rows_alive_[:n] = 1
        self._booster().fit()
        self.last_update_ = {"action": "fit", "rows": n, "retrained_nodes": None}
        self.ensemble_  # built once here, not during a prediction
        return self

    def _sample_candidates(self) -> None:
        rng = np.random.default_rng(self.random_state)
        features, thresholds, start = [], [], [0]
        for j, edges in enumerate(self.bins_.edges_):
            n_edges = len(edges)
            count = min(n_edges, math.ceil(float(self.split_sample_rate) * n_edges))
            chosen = np.sort(rng.choice(n_edges, size=count, replace=False)) if count else np.empty(0, np.int64)
            thresholds.append(chosen)
            features.append(np.full(count, j))
            start.append(start[-1] + count)
        self.cand_feature_ = np.concatenate(features).astype(np.int32) if features else np.empty(0, np.int32)
        self.cand_threshold_ = np.concatenate(thresholds).astype(np.uint8) if thresholds else np.empty(0, np.uint8)
        self.cand_start_ = np.asarray(start, dtype=np.int32)

    def _allocate_rows(self, capacity: int) -> None:
        """Row storage for ``capacity`` rows (kept rows copied over)."""
        T, n_features = self.tree_nodes_.shape[0], self.bins_.n_features
        old = {name: getattr(self, name + "_", None) for name in self.STATE}
        new = {"rows_binned": np.zeros((capacity, n_features), np.uint8),
               "rows_label": np.zeros(capacity, self.STATE["rows_label"][0]),
               "rows_alive": np.zeros(capacity, np.uint8), "rows_grad": np.zeros((T, capacity), np.int32),
               "rows_hess": np.zeros((T, capacity), np.int32), "rows_leaf": np.zeros((T, capacity), np.int16)}
        for name, array in new.items():
            if old[name] is not None:
                n = getattr(self, "n_rows_", 0)
                if name in ROW_ARRAYS:
                    array[:n] = old[name][:n]
                else:
                    array[:, :n] = old[name][:, :n]
            setattr(self, name + "_", array)

    def _booster(self) -> _gbdt.Booster:
        """The compiled kernels over this model's arrays (made per call: the row tables grow)."""
        return _gbdt.Booster(self.tree_nodes_, self.slots_, self.slot_owner_, self.rows_binned_, self._loss(),
                             self.rows_alive_, self.rows_grad_, self.rows_hess_, self.rows_leaf_, self.cand_feature_,
                             self.cand_start_, self.cand_threshold_, self.n_rows_, self.n_scores_, self._leaf_scale,
                             float(self.alpha), self.max_leaves, self.max_depth, self.min_samples_leaf)

    # --------------------------------------------------------------------------------------- add and delete
    def add(self, X, y) -> np.ndarray:
        """Learn the rows ``X``, ``y`` in place; returns their row numbers (counting on from the last one given)."""
        X, y = self.check_rows(X, y)
        started = time.perf_counter()
        n, count = self.n_rows_, len(X)
        if n + count > self.rows_alive_.shape[0]:
            self._allocate_rows(n + count + headroom(n + count))
        rows = np.arange(n, n + count, dtype=np.int64)
        self.rows_binned_[n:n + count] = self.bins_.transform(X)
        self.rows_label_[n:n + count] = self._labels_of(y)
        self.rows_alive_[n:n + count] = 1
        self.n_rows_ = n + count
        retrained = self._booster().update(rows, 1)
        self._changed("add", count, retrained, started)
        return rows

    def delete(self, row_numbers) -> None:
        """Remove the rows with these numbers (as ``fit`` and ``add`` gave them) and their effect on the model."""
        self._check_fitted()
        rows = self.check_row_numbers(row_numbers)
        started = time.perf_counter()
        self.rows_alive_[rows] = 0
        retrained = self._booster().update(rows, -1)
        self._changed("delete", len(rows), retrained, started)

    def check_row_numbers(self, row_numbers) -> np.ndarray:
        """The row numbers as int64, after checking that each names a kept row, once, and that rows remain."""
        self._check_fitted()
        values = np.atleast_1d(np.asarray(row_numbers))
        if values.ndim != 1 or (values.size and not np.issubdtype(values.dtype, np.integer)):
            raise ValueError(f"row numbers must be a 1-D list of integers, got {values.dtype} of shape {values.shape}")
        if values.size == 0:
            raise ValueError("no row numbers given")
        rows = values.astype(np.int64)
        exists = (rows >= 0) & (rows < self.n_rows_)
        bad = ~exists
        bad[exists] = self.rows_alive_[rows[exists]] == 0
        if bad.any():
            first = int(np.argmax(bad))
            if not exists[first]:
                raise ValueError(f"row {rows[first]} does not exist: row numbers go from 0 to {self.n_rows_ - 1}")
            raise ValueError(f"row {rows[first]} was already deleted")
        unique, counts = np.unique(rows, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"row {unique[counts > 1][0]} is listed {counts.max()} times")
        left = self.n_kept_rows - len(rows)
        if left < 2:
            raise ValueError(f"deleting {len(rows)} of the {self.n_kept_rows} kept rows would leave {left}; "
                             "at least 2 must remain")
        return rows

    def _changed(self, action: str, count: int, retrained: int, started: float) -> None:
        self.__dict__["_ensemble"] = self._build_ensemble(validate=False)  # once here, not during a prediction
        self.last_update_ = {"action": action, "rows": count, "retrained_nodes": retrained,
                             "seconds": time.perf_counter() - started}

    # ------------------------------------------------------------------------------------ the exported model
    @property
    def n_kept_rows(self) -> int:
        return int(self.rows_alive_[: self.n_rows_].sum())

    @property
    def ensemble_(self) -> TreeEnsemble:
        """The additive ensemble the model predicts with and exports (int16 leaves, one score per class or one for
        a binary model or a regressor, tree ``t`` adding to score ``t % n_scores``)."""
        if "_ensemble" not in self.__dict__:
            if "tree_nodes_" not in self.__dict__:
                raise AttributeError("ensemble_ (the model is not fitted)")
            self.__dict__["_ensemble"] = self._build_ensemble()
        return self.__dict__["_ensemble"]

    def _build_ensemble(self, validate: bool = True) -> TreeEnsemble:
        """The ensemble of the tree pool, laid out breadth first (children after their parent, by construction);
        ``validate=False`` after an add or a delete, which change splits and leaves only: the tree count and the
        base scores, the rest of what :meth:`TreeEnsemble.validate` checks, stay as they were at ``fit``."""
        S = self.n_scores_
        feature, threshold, child, roots, leaves = _gbdt.ensemble_tables(self.tree_nodes_, self.cand_feature_,
                                                                         self.cand_threshold_, S, LEAF_FEATURE)
        nodes = np.empty(len(feature), dtype=NODE_DTYPE)
        nodes["feature"], nodes["threshold"], nodes["child"] = feature, threshold, child
        ensemble = TreeEnsemble(nodes, roots, np.ones(len(roots), dtype=np.uint16), leaves, self.bins_.n_features,
                                "additive", self._base_scores())
        if validate:
            ensemble.validate()
        return ensemble

    # ------------------------------------------------------------------------------------- memory and files
    def memory_bytes(self) -> int:
        """Host memory the learner holds: row storage (bins, labels, per-tree derivatives and leaves, with
        :func:`headroom` spare rows), the tree pools and the candidate sums."""
        self._check_fitted()
        return int(sum(getattr(self, name + "_").nbytes for name in self.STATE))

    def summary(self) -> str:
        self._check_fitted()
        ensemble = self.ensemble_
        deleted = self.n_rows_ - self.n_kept_rows
        return (f"{ensemble.n_trees} trees ({self.n_estimators} iterations x {self.n_scores_} score"
                f"{'s' if self.n_scores_ > 1 else ''}), {len(ensemble.nodes)} nodes, {len(self.cand_threshold_)} "
                f"split candidates; {self.n_kept_rows} rows kept ({deleted} deleted, next row number "
                f"{self.n_rows_}); host memory {self.memory_bytes() / 2**20:.1f} MiB")

    def saved_arrays(self) -> dict:
        """The learner's whole state (rows trimmed to those numbered) and the exported ensemble's tables."""
        self._check_fitted()
        n = self.n_rows_
        arrays = {}
        for name in self.STATE:
            array = getattr(self, name + "_")
            arrays[name] = array[:n] if name in ROW_ARRAYS else array[:, :n] if name in TREE_ROW_ARRAYS else array
        return {**arrays, **self.ensemble_.arrays()}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a model file's state (after ``bins_`` and the task's ``classes_`` or ``target_``); refuses
        inconsistent tables."""
        for name, (dtype, ndim) in self.STATE.items():
            table = arrays[name]
            if table.dtype != np.dtype(dtype) or table.ndim != ndim:
                raise ValueError(f"table {name!r} has dtype {table.dtype} and shape {table.shape}, expected a "
                                 f"{ndim}-D {np.dtype(dtype)} array")
        labels = self._restore_task(arrays)
        self._check_params(self.n_scores_)
        validate_state(arrays, self.n_estimators * self.n_scores_, self.max_leaves, self.bins_, labels)
        for name in self.STATE:
            setattr(self, name + "_", np.ascontiguousarray(arrays[name]).copy())
        self.n_rows_ = len(arrays["rows_label"])
        self.n_features_in_ = self.bins_.n_features
        self.last_update_ = {"action": "load", "rows": self.n_rows_, "retrained_nodes": None}
        stored = TreeEnsemble.from_arrays(arrays, self.bins_.n_features)
        if any(not np.array_equal(a, b) for a, b in zip(stored.arrays().values(), self.ensemble_.arrays().values())):
            raise ValueError("the stored ensemble does not match the stored trees")


class OnlineGBDTClassifier(EnsemblePrediction, InPlaceGBDT, BatchClassifier):
    """Gradient-boosted trees of classes (robust LogitBoost, the module docstring) whose training rows can be added
    and deleted in place; parameters and methods as :class:`InPlaceGBDT`."""

    def _fit_labels(self, y) -> tuple[dict, np.ndarray]:
        """(fitted attributes of the task, the stored label of every row): the classes and their indices."""
        classes, y_encoded = encode_labels(y, len(y))
        return {"classes_": classes, "n_scores_": 1 if len(classes) == 2 else len(classes)}, y_encoded

    def _labels_of(self, y) -> np.ndarray:
        return np.searchsorted(self.classes_, y)

    def check_rows(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        """``X`` and ``y`` as ``add`` takes them, after checking the feature count and that every label is a class."""
        X = self._validate_X(X)
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has shape {y.shape}; need one label per row")
        known = set(self.classes_.tolist())
        unseen = [label for label in np.unique(y).tolist() if label not in known]
        if unseen:
            raise ValueError(f"label {unseen[0]!r} is not a class of this model; its classes are "
                             f"{self.classes_.tolist()}")
        return X, y

    def _loss(self) -> _gbdt.Loss:
        return _gbdt.LogLoss(self.rows_label_, self.n_scores_)

    @property
    def _leaf_scale(self) -> float:
        """Leaf value = scale * sum r / sum h (robust LogitBoost's (K-1)/K; 1 for the single binary score)."""
        K = len(self.classes_)
        return float(self.learning_rate) * (1.0 if self.n_scores_ == 1 else (K - 1) / K)

    def _base_scores(self) -> np.ndarray:
        return np.zeros(self.n_scores_, dtype=np.int32)

    def _restore_task(self, arrays: dict) -> tuple[int, int]:
        """Sets ``n_scores_`` from the classes; returns the range of the stored labels."""
        K = len(self.classes_)
        self.n_scores_ = 1 if K == 2 else K
        return 0, K - 1

    @property
    def feature_importances_(self) -> np.ndarray:
        """Impurity decrease of the kept rows' labels over each feature's splits (see
        :func:`edgestream.tree.impurity_importances`), normalized to sum to 1."""
        self._check_fitted()
        kept = np.flatnonzero(self.rows_alive_[: self.n_rows_])
        return impurity_importances(self.ensemble_, self.rows_binned_[kept], self.rows_label_[kept].astype(np.int64),
                                    len(self.classes_))


class OnlineGBDTRegressor(RegressionPrediction, InPlaceGBDT, BatchRegressor):
    """Gradient-boosted trees of a number (squared loss) whose training rows can be added and deleted in place;
    parameters and methods as :class:`InPlaceGBDT`, and ``partial_fit``. The target is encoded by a
    :class:`edgestream.task.TargetScale` fitted at ``fit`` (``target_``; rows outside its range are saturated and
    counted in ``saturated_``, at ``fit`` and ``add``; a model file keeps the count); the boosting starts from the
    mean code of the ``fit`` rows (``base_score_``, fixed afterwards as the bins are); a leaf is
    ``learning_rate * mean residual`` in int16 codes; the raw output is the int32 sum of the base and the leaves
    (``predict_raw``), decoded by ``target_``."""

    STATE = {**STATE_ARRAYS, "rows_label": (np.int16, 1)}

    def _fit_labels(self, y) -> tuple[dict, np.ndarray]:
        """(fitted attributes, the stored label of every row): the target scale, its codes, their rounded mean."""
        target = TargetScale.fit(y)
        codes, saturated = target.encode(y)
        total, n = int(codes.astype(np.int64).sum()), len(codes)
        base = (2 * total + n) // (2 * n)  # the mean, rounded half up, in exact integers
        return {"target_": target, "saturated_": saturated, "base_score_": base, "n_scores_": 1}, codes

    def _labels_of(self, y) -> np.ndarray:
        codes, saturated = self.target_.encode(y)
        self.saturated_ += saturated
        return codes

    def check_rows(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        """``X`` and ``y`` as ``add`` takes them, after checking the feature count and the target's numbers."""
        X = self._validate_X(X)
        return X, check_target(y, len(X))

    def partial_fit(self, X, y):
        """``fit`` on the first call, then ``add`` of the rows (in place)."""
        if "tree_nodes_" not in vars(self):
            return self.fit(X, y)
        self.add(X, y)
        return self

    def _loss(self) -> _gbdt.Loss:
        return _gbdt.SquaredLoss(self.rows_label_, self.base_score_)

    @property
    def _leaf_scale(self) -> float:
        """Leaf value = learning_rate * sum r / sum h (h = 1: the mean residual)."""
        return float(self.learning_rate)

    def _base_scores(self) -> np.ndarray:
        return np.array([self.base_score_], dtype=np.int32)

    def _restore_task(self, arrays: dict) -> tuple[int, int]:
        """Sets ``n_scores_`` (1), ``base_score_`` from the stored ensemble and ``saturated_`` (0 until the model
        file's count is set); returns the range of the stored codes."""
        base = arrays["base_score"]
        if base.dtype != np.int32 or base.shape != (1,) or abs(int(base[0])) > CODE_MAX:
            raise ValueError(f"a regressor's base_score is one int32 code within ±{CODE_MAX}, got {base!r}")
        self.n_scores_, self.base_score_, self.saturated_ = 1, int(base[0]), 0
        return -CODE_MAX, CODE_MAX


def headroom(n: int) -> int:
    """Spare rows allocated beyond ``n`` (an eighth, at least 64), so that small adds do not copy the row tables."""
    return max(64, n // 8)


def validate_state(arrays: dict, n_trees: int, max_leaves: int, bins: BinMapper, labels: tuple[int, int]) -> None:
    """Shapes and every index the kernels follow, before anything indexes with them (``labels``: the range of the
    stored labels)."""
    P, S_slots = 2 * max_leaves - 1, max_leaves - 1
    start, feature, threshold = arrays["cand_start"], arrays["cand_feature"], arrays["cand_threshold"]
    C, n_features = len(threshold), bins.n_features
    if len(start) != n_features + 1 or start[0] != 0 or start[-1] != C or (np.diff(start) < 0).any() \
            or len(feature) != C:
        raise ValueError("split candidates do not partition the features")
    for j in range(n_features):
        chunk = slice(start[j], start[j + 1])
        if (feature[chunk] != j).any() or (np.diff(threshold[chunk].astype(int)) <= 0).any() or \
                (threshold[chunk] >= len(bins.edges_[j])).any():
            raise ValueError(f"split candidates of feature {j} are not increasing thresholds below its edges")
    nodes, slots, owner = arrays["tree_nodes"], arrays["slots"], arrays["slot_owner"]
    if nodes.shape != (n_trees, P, _gbdt.NODE_FIELDS) or slots.shape != (n_trees, S_slots, C, 3) or \
            owner.shape != (n_trees, S_slots):
        raise ValueError(f"tree tables of shape {nodes.shape}, {slots.shape}, expected {n_trees} trees of {P} nodes")
    n = len(arrays["rows_label"])
    if arrays["rows_binned"].shape != (n, n_features) or len(arrays["rows_alive"]) != n or \
            any(arrays[name].shape != (n_trees, n) for name in TREE_ROW_ARRAYS):
        raise ValueError(f"row tables do not all hold {n} rows")
    stored = arrays["rows_label"]
    if (stored < labels[0]).any() or (stored > labels[1]).any() or (arrays["rows_alive"] > 1).any():
        raise ValueError("row labels or alive flags out of range")
    cand = nodes[:, :, F["cand"]]
    if ((cand < FREE) | (cand >= C)).any() or (cand[:, 0] < LEAF).any() or (nodes[:, 0, F["parent"]] != -1).any():
        raise ValueError("corrupt tree tables: a split candidate is out of range or a root is missing")
    leaves_all = arrays["rows_leaf"]
    if leaves_all.size and ((leaves_all < 0) | (leaves_all >= P)).any():
        raise ValueError("corrupt row tables: a row's leaf is out of the node pool")
    if ((owner < -1) | (owner >= P)).any():
        raise ValueError("corrupt tree tables: a candidate slot's owner is out of the node pool")
    for t in range(n_trees):
        seen, stack = set(), [0]
        while stack:
            u = stack.pop()
            seen.add(u)
            if cand[t, u] >= 0:
                s, children = nodes[t, u, F["slot"]], nodes[t, u, [F["left"], F["right"]]]
                if not 0 <= s < S_slots or owner[t, s] != u or \
                        any(not 0 < c < P or c in seen or nodes[t, c, F["parent"]] != u or cand[t, c] == FREE
                            for c in children):
                    raise ValueError(f"corrupt tree tables: node {u} of tree {t} has bad children or slot")
                stack += [int(c) for c in children]
        if any(cand[t, u] != FREE for u in range(P) if u not in seen):
            raise ValueError(f"corrupt tree tables: tree {t} has unreachable nodes")
        if any(u >= 0 and (cand[t, u] < 0 or nodes[t, u, F["slot"]] != s) for s, u in enumerate(owner[t])):
            raise ValueError(f"corrupt tree tables: tree {t} has a candidate slot held by no split")
        leaves = arrays["rows_leaf"][t][arrays["rows_alive"] == 1]
        if leaves.size and (cand[t, leaves.astype(np.int64)] != LEAF).any():
            raise ValueError(f"corrupt row tables: a row's leaf in tree {t} is not a leaf")


def gbdt_tables(model, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                optimize: str = "speed") -> list[tuple[str, int]]:
    """Flash objects of the exported bundle: exact for a fitted model; for a configuration, the worst case of full
    trees of ``max_leaves`` leaves (every leaf a distinct row of int16 scores) in the fastest encoding."""
    if "tree_nodes_" in vars(model):
        return tree_tables(model, n_features, n_classes, pointer_bytes, packed, optimize)
    n_scores = 1 if n_classes == 2 else n_classes
    trees = model.n_estimators * n_scores
    internal, leaves = trees * (model.max_leaves - 1), trees * model.max_leaves
    per_tree = 2 * model.max_leaves - 1
    descriptor = 8 * pointer_bytes + 11
    tables = [("descriptor", descriptor if packed else -(-descriptor // pointer_bytes) * pointer_bytes),
              ("feature", internal), ("threshold", internal * VALUE_BYTES[model.input_dtype]),
              ("children", 2 * internal * (1 if per_tree < 256 else 2)), ("tree_base", 2 * (trees + 1)),
              ("leaves", 2 * n_scores * leaves), ("base_score", 4 * n_scores)]
    return without_inline_tables(tables, optimize, model.max_depth)


def gbdt_worst_case(model, n_features: int, n_classes: int) -> WorstCase | None:
    """The largest trees of an unfitted configuration: ``n_estimators`` x scores trees of ``max_leaves`` leaves
    within ``max_depth`` levels, each leaf adding one int16 score (tree ``t`` adds to score ``t % n_scores``)."""
    if "tree_nodes_" in vars(model):
        return None
    n_scores = 1 if n_classes == 2 else n_classes
    return WorstCase(model.n_estimators * n_scores, model.max_depth, min(model.max_leaves, 2 ** model.max_depth),
                     n_features, n_classes, "additive", 1, model.input_dtype)


LADDER = tuple({"n_estimators": n} for n in (500, 200, 100, 50, 20, 10, 5, 2, 1))

SPEC = LearnerSpec(
    name="gbdt", cls=OnlineGBDTClassifier, regressor=OnlineGBDTRegressor,
    summary="in-place online GBDT: add and delete training rows on the host (frozen on the device)",
    options=(Option("--n-estimators", "n_estimators", int, "boosting iterations", "M"),
             Option("--learning-rate", "learning_rate", float, "shrinkage", "NU"),
             Option("--max-leaves", "max_leaves", int, "leaves per tree (2..255)", "J"),
             MAX_DEPTH, MIN_SAMPLES_LEAF, MAX_BINS, BINNING, INPUT_DTYPE,
             Option("--split-sample-rate", "split_sample_rate", float,
                    "fraction of each feature's thresholds used as split candidates", "S"),
             Option("--alpha", "alpha", float, "robustness tolerance (0..1): keep a split while in the top alpha",
                    "A"),
             Option("--seed", "random_state", int, "random seed", "S")),
    learning=False, online=False, runtime=("es_common", "es_fixed", "es_infer"), template="frozen.c.j2",
    context=tree_context, tables=gbdt_tables, ladder=LADDER, worst_case=gbdt_worst_case)
