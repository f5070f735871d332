"""Decision trees on 8-bit bins (CART, exact integer split search), exported as frozen models."""

from __future__ import annotations

import numpy as np

from ..binning import BinMapper
from ..frozen import tree_context, tree_tables, tree_worst_case
from ..encoding import LEAF_VALUES, restrict_leaf_values
from ..task import TargetScale
from ..tree import (CRITERIA, MAX_NODES, TreeEnsemble, encode_labels, grow_regression_tree, grow_tree,
                    impurity_importances)
from .base import LEAF_VALUES_OPTION, TREE_OPTIONS, LearnerSpec
from .skbase import BatchClassifier, BatchRegressor


class EnsemblePrediction:
    """Prediction of a :class:`BatchClassifier` that holds ``bins_`` and a :class:`TreeEnsemble` ``ensemble_``:
    exactly what the exported bundle computes."""

    def predict_proba_q15(self, X) -> np.ndarray:
        """Class probabilities exactly as the device computes them (uint16, 32768 == 1.0)."""
        X = self._validate_X(X)
        return self.ensemble_.predict_proba_q15(self.bins_.transform(X))

    def predict_proba(self, X) -> np.ndarray:
        """The device's Q15 probabilities, each row scaled to sum to 1 (Q15 rounding leaves the sum within a
        few 1/32768 of one); the largest is the predicted class's."""
        q15 = self.predict_proba_q15(X).astype(np.float64)
        return q15 / q15.sum(axis=1, keepdims=True)

    def predict_encoded(self, X) -> np.ndarray:
        """Class indices (0..n_classes-1) as the device returns them."""
        X = self._validate_X(X)
        return self.ensemble_.predict(self.bins_.transform(X))

    def predict(self, X) -> np.ndarray:
        encoded = self.predict_encoded(X)  # checks fitted first
        return self.classes_[encoded]

    @property
    def feature_importances_(self) -> np.ndarray:
        """Mean decrease of the Gini impurity of the training labels over the splits on each feature, weighted by
        the rows that reach them, summed over the trees and normalized to sum to 1 (zeros without splits)."""
        self._check_fitted()
        return self.__dict__["_importances"]


class BinnedClassifier(EnsemblePrediction, BatchClassifier):
    """Common base of the tree learners: input checks, label encoding, binning and prediction.

    Subclasses implement ``_fit_ensemble(X_binned, y_encoded, n_classes) -> TreeEnsemble``.
    """

    def fit(self, X, y):
        self._check_params()
        X, y = self._validate_fit(X, y)
        self.classes_, y_encoded = encode_labels(y, len(X))
        self.bins_ = BinMapper(self.max_bins, self.binning, self.input_dtype).fit(X)
        X_binned = self.bins_.transform(X)
        self.ensemble_ = self._fit_ensemble(X_binned, y_encoded, len(self.classes_))
        self.ensemble_.leaf_values = restrict_leaf_values(self.ensemble_.leaf_values, self.leaf_values)
        self._importances = impurity_importances(self.ensemble_, X_binned, y_encoded, len(self.classes_))
        return self

    def summary(self) -> str:
        """What the fitted model holds, in a few words."""
        self._check_fitted()
        trees = self.ensemble_.n_trees
        return f"{len(self.ensemble_.nodes)} nodes in {trees} tree{'s' if trees > 1 else ''}"

    def saved_arrays(self) -> dict:
        """The tables a model file stores (see :mod:`edgestream.modelfile`)."""
        self._check_fitted()
        return {**self.ensemble_.arrays(), "feature_importances": self._importances}

    def restore_arrays(self, arrays: dict) -> None:
        """Take the tables of a model file, after ``bins_`` and ``classes_`` are set; refuses inconsistent ones."""
        ensemble = TreeEnsemble.from_arrays(arrays, self.bins_.n_features)
        if not np.array_equal(restrict_leaf_values(ensemble.leaf_values, self.leaf_values), ensemble.leaf_values):
            raise ValueError(f"the leaf table does not hold leaf_values={self.leaf_values!r} rows")
        if ensemble.n_classes != len(self.classes_):
            raise ValueError(f"{len(self.classes_)} class labels, leaf table for {ensemble.n_classes} classes")
        importances = arrays.get("feature_importances", np.zeros(ensemble.n_features))
        if importances.dtype != np.float64 or importances.shape != (ensemble.n_features,):
            raise ValueError(f"feature_importances has dtype {importances.dtype} and shape {importances.shape}, "
                             f"expected float64 ({ensemble.n_features},)")
        self.ensemble_, self._importances = ensemble, importances
        self.n_features_in_ = ensemble.n_features

    def _check_params(self) -> None:
        """Every parameter, before any work (``fit``, and ``LearnerSpec.make`` for the budget and model files)."""
        if self.leaf_values not in LEAF_VALUES:
            raise ValueError(f"leaf_values={self.leaf_values!r} must be one of {LEAF_VALUES}")
        BinMapper(self.max_bins, self.binning, self.input_dtype)._check_params()
        self._tree_settings()

    def _tree_settings(self) -> dict:
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion={self.criterion!r} must be one of {sorted(CRITERIA)}")
        return dict(criterion=CRITERIA[self.criterion], **tree_settings(self))


def tree_settings(model) -> dict:
    """The growth limits every tree learner shares (``max_depth``, ``min_samples_leaf``, ``max_nodes``), checked."""
    if not isinstance(model.max_depth, (int, np.integer)) or not 0 <= model.max_depth <= 32:
        raise ValueError(f"max_depth={model.max_depth!r} must be an integer from 0 to 32")
    if not isinstance(model.min_samples_leaf, (int, np.integer)) or model.min_samples_leaf < 1:
        raise ValueError(f"min_samples_leaf={model.min_samples_leaf!r} must be an integer >= 1")
    max_nodes = model.max_nodes if model.max_nodes is not None else min(MAX_NODES, 2 ** (model.max_depth + 1) - 1)
    if not isinstance(max_nodes, (int, np.integer)) or not 1 <= max_nodes <= MAX_NODES:
        raise ValueError(f"max_nodes={max_nodes!r} must be an integer from 1 to {MAX_NODES}")
    return dict(max_depth=int(model.max_depth), min_samples_leaf=int(model.min_samples_leaf), max_nodes=int(max_nodes))


class RegressionPrediction:
    """Prediction of a :class:`BatchRegressor` that holds ``bins_``, ``target_`` and an additive
    :class:`TreeEnsemble` ``ensemble_`` of one score: exactly what the exported bundle computes."""

    output_divisor = 1  # what the raw output is divided by before it is decoded

    def predict_raw(self, X) -> np.ndarray:
        """int32 raw outputs (the base score plus the leaf codes reached) exactly as the device computes them."""
        X = self._validate_X(X)
        return self.ensemble_.predict_sums(self.bins_.transform(X))[:, 0]

    def predict(self, X) -> np.ndarray:
        raw = self.predict_raw(X)  # checks fitted first
        return self.target_.decode(raw, self.output_divisor)


class BinnedRegressor(RegressionPrediction, BatchRegressor):
    """Common base of the tree regressors: the target in fixed point (:class:`edgestream.task.TargetScale`,
    fitted on the rows; ``saturated_`` counts the rows outside its range), binning, additive leaves of int16
    codes, and prediction exactly as the exported bundle computes it (:meth:`predict_raw`).

    Subclasses implement ``_grow(X_binned, codes) -> list of (nodes, leaf codes)``; the prediction is the mean of
    the trees' leaves, ``raw / n_trees`` decoded."""

    def fit(self, X, y):
        self._check_params()
        X, y = self._validate_fit(X, y)
        self.target_ = TargetScale.fit(y)
        codes, self.saturated_ = self.target_.encode(y)
        self.bins_ = BinMapper(self.max_bins, self.binning, self.input_dtype).fit(X)
        X_binned = self.bins_.transform(X)
        trees = self._grow(X_binned, codes)
        self.ensemble_ = TreeEnsemble.from_trees(trees, [1] * len(trees), X_binned.shape[1], 1,
                                                 base_score=np.zeros(1, dtype=np.int32))
        return self

    @property
    def output_divisor(self) -> int:
        """What the raw output is divided by before it is decoded: the number of trees averaged."""
        return self.ensemble_.n_trees

    summary = BinnedClassifier.summary

    def saved_arrays(self) -> dict:
        """The tables a model file stores (see :mod:`edgestream.modelfile`)."""
        self._check_fitted()
        return self.ensemble_.arrays()

    def restore_arrays(self, arrays: dict) -> None:
        """Take the tables of a model file, after ``bins_`` and ``target_`` are set; refuses inconsistent ones."""
        ensemble = TreeEnsemble.from_arrays(arrays, self.bins_.n_features)
        if ensemble.leaf_kind != "additive" or ensemble.leaf_values.shape[1] != 1:
            raise ValueError("a regressor's leaf table holds one int16 code per leaf and a base score")
        self.ensemble_, self.saturated_ = ensemble, 0
        self.n_features_in_ = ensemble.n_features

    def _check_params(self) -> None:
        BinMapper(self.max_bins, self.binning, self.input_dtype)._check_params()
        tree_settings(self)


class TreeClassifier(BinnedClassifier):
    """A CART classification tree grown on 8-bit feature bins.

    Parameters
    ----------
    max_depth : depth limit (a root-only tree has depth 0).
    min_samples_leaf : smallest number of samples a leaf may hold.
    max_nodes : node budget (internal nodes and leaves); by default the full binary tree of ``max_depth``,
        capped at 65535. Growth is breadth first, so a small budget keeps the upper levels.
    criterion : ``"gini"`` or ``"entropy"`` (both evaluated in exact integer arithmetic, see ``_kernels``).
    max_bins, binning : feature quantization, see :class:`edgestream.binning.BinMapper`.
    input_dtype : ``"float32"`` (device input is float), ``"int32"`` or ``"int16"`` (raw integer readings, no FPU
        needed).
    leaf_values : ``"q15"`` (class probabilities in Q15), ``"q8"`` (probabilities rounded to 1/128 at fit time:
        8-bit leaves on the device) or ``"vote"`` (each leaf holds its majority class: a hard vote). Applied at fit
        time, so predict, predict_proba, the model file and the export agree (see
        :func:`edgestream.encoding.restrict_leaf_values`).
    """

    def __init__(self, max_depth: int = 8, min_samples_leaf: int = 1, max_nodes: int | None = None,
                 criterion: str = "gini", max_bins: int = 255, binning: str = "quantile",
                 input_dtype: str = "float32", leaf_values: str = "q15"):
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_nodes = max_nodes
        self.criterion = criterion
        self.max_bins = max_bins
        self.binning = binning
        self.input_dtype = input_dtype
        self.leaf_values = leaf_values

    def _fit_ensemble(self, X_binned, y, n_classes) -> TreeEnsemble:
        settings = self._tree_settings()
        tree = grow_tree(X_binned, y, np.ones(len(y), dtype=np.uint32), n_classes, **settings)
        return TreeEnsemble.from_trees([tree], [1], X_binned.shape[1], n_classes)


class TreeRegressor(BinnedRegressor):
    """A CART regression tree grown on 8-bit feature bins: splits that most reduce the squared error, leaves
    holding the mean target in fixed point (:func:`edgestream.tree.grow_regression_tree`).

    Parameters are :class:`TreeClassifier`'s growth and input parameters (``max_depth``, ``min_samples_leaf``,
    ``max_nodes``, ``max_bins``, ``binning``, ``input_dtype``)."""

    def __init__(self, max_depth: int = 8, min_samples_leaf: int = 1, max_nodes: int | None = None,
                 max_bins: int = 255, binning: str = "quantile", input_dtype: str = "float32"):
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_nodes = max_nodes
        self.max_bins = max_bins
        self.binning = binning
        self.input_dtype = input_dtype

    def _grow(self, X_binned, codes) -> list:
        return [grow_regression_tree(X_binned, codes, np.ones(len(codes), dtype=np.uint32), **tree_settings(self))]


DEPTH_LADDER = tuple({"max_depth": depth} for depth in range(12, -1, -1))

SPEC = LearnerSpec(
    name="tree", cls=TreeClassifier, regressor=TreeRegressor, regressor_runtime=("es_fixed",), summary="one CART tree (frozen on the device)",
    options=TREE_OPTIONS + (LEAF_VALUES_OPTION,), learning=False, online=False, runtime=("es_common", "es_infer"), template="frozen.c.j2",
    context=tree_context, tables=tree_tables, ladder=DEPTH_LADDER, worst_case=tree_worst_case)
