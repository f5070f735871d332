"""Tree models trained elsewhere (scikit-learn, LightGBM, XGBoost), frozen on the device: the Python model of what
:mod:`edgestream.importers` makes of them.

Their splits are not on edgestream's bins: every node holds its own raw edge (float32: ``x <= edge`` goes left)
and its own direction for a missing value (``nan_left``: NaN goes left, else right), which the importers compute
so that every float32 input takes the branch the source takes. The leaves are one of the tree format's kinds:
Q15 probability rows averaged with weight 1 (forests) or additive int16 scores with ``10 + score_shift`` fraction
bits (boosting) for a classifier; additive int16 codes of the target (:mod:`edgestream.task`) for a regressor;
additive int16 path lengths (Q10) for an isolation forest's detector (:class:`ImportedDetector`).
Export, simulation, budget and builds go through the frozen path (``es_infer``) like the other frozen models; the
bundle sets the NaN-left flags of the encoding only when some node needs them.

``fit`` is not offered: a model comes from :func:`edgestream.importers.convert`. The parameters record where it
came from (library, its version, estimator, objective), so the model file says so.
"""

from __future__ import annotations

import numpy as np

from ..encoding import additive_sums, apply_raw
from ..frozen import DeviceModel, device_context, device_tables
from ..fixedpoint import path_score_q15
from ..task import ANOMALY, FLAG, NEVER, TargetScale, split_output
from ..tree import LEAF_FEATURE, MAX_NODES, TreeEnsemble
from .base import LearnerSpec
from .detect import calibrated_threshold
from .skbase import BatchClassifier, BatchEstimator, BatchRegressor
from .tree import EnsemblePrediction


class ImportedTrees:
    """What the imported classifier and regressor share: the source's record, the raw-edge walk with NaN
    directions, the device tables and the model file's tables."""

    input_dtype = "float32"
    missing_rule = "NaN = missing, each node's direction from the source"

    def __init__(self, library: str = "", library_version: str = "", estimator: str = "", objective: str = ""):
        self.library = library
        self.library_version = library_version
        self.estimator = estimator
        self.objective = objective

    def fit(self, X, y):
        raise TypeError(f"an {type(self).__name__} is not trained here; convert a fitted model with "
                        "edgestream.convert")

    @classmethod
    def from_tables(cls, source: dict, ensemble: TreeEnsemble, node_edge: np.ndarray, nan_left: np.ndarray,
                    fitted: dict, tables: dict | None = None, feature_names=None):
        """The model of converted tables (checked like a model file's): ``fitted`` holds the attributes of the
        task set before the tables (``classes_``, or ``target_``), ``tables`` the task's further tables."""
        model = cls(**source)
        for name, value in fitted.items():
            setattr(model, name, value)
        if feature_names is not None:
            model.feature_names_in_ = np.asarray([str(name) for name in feature_names], dtype=object)
        model.restore_arrays({**ensemble.arrays(), "node_edge": node_edge, "nan_left": nan_left,
                              "n_features": np.asarray([ensemble.n_features], dtype=np.uint16), **(tables or {})})
        return model

    @property
    def n_features_(self) -> int:
        return self.ensemble_.n_features

    def leaves(self, X) -> np.ndarray:
        """Leaf row reached in every tree by the raw rule with the nodes' NaN directions."""
        return apply_raw(self.ensemble_.nodes, self.ensemble_.roots, self.node_edge_, X, self.nan_left_)

    @property
    def feature_importances_(self) -> np.ndarray:
        raise AttributeError("an imported model keeps no feature importances")

    def device_model(self) -> DeviceModel:
        """The device tables: the nodes with their own edges and NaN directions, identical leaf rows stored once."""
        self._check_fitted()
        source = self.ensemble_
        leaf_values, leaf_index = np.unique(source.leaf_values, axis=0, return_inverse=True)
        nodes = source.nodes.copy()
        is_leaf = nodes["feature"] == LEAF_FEATURE
        nodes["child"][is_leaf] = leaf_index.reshape(-1)[nodes["child"][is_leaf]]
        ensemble = TreeEnsemble(nodes, source.roots, source.weights, leaf_values.astype(source.leaf_values.dtype),
                                source.n_features, source.leaf_kind, source.base_score, source.score_shift)
        return DeviceModel("float32", np.zeros(0, dtype=np.float32), np.zeros(source.n_features + 1, dtype=np.uint16),
                           ensemble, self.node_edge_, self.nan_left_)

    def summary(self) -> str:
        self._check_fitted()
        trees = self.ensemble_.n_trees
        return (f"{len(self.ensemble_.nodes)} nodes in {trees} tree{'s' if trees > 1 else ''} from {self.estimator} "
                f"({self.library} {self.library_version})")

    def saved_arrays(self) -> dict:
        self._check_fitted()
        return {**self.ensemble_.arrays(), "node_edge": self.node_edge_, "nan_left": self.nan_left_,
                "n_features": np.asarray([self.ensemble_.n_features], dtype=np.uint16)}

    def restore_arrays(self, arrays: dict) -> None:
        """Take converted or saved tables, after ``classes_`` or ``target_`` is set; refuses inconsistent ones."""
        n_features = arrays["n_features"]
        if n_features.dtype != np.uint16 or n_features.shape != (1,):
            raise ValueError(f"n_features has dtype {n_features.dtype} and shape {n_features.shape}, expected "
                             "uint16 (1,)")
        ensemble = TreeEnsemble.from_arrays(arrays, int(n_features[0]))
        for name, dtype in (("node_edge", np.float32), ("nan_left", np.bool_)):
            if arrays[name].dtype != dtype or arrays[name].shape != (len(ensemble.nodes),):
                raise ValueError(f"table {name!r} has dtype {arrays[name].dtype} and shape {arrays[name].shape}, "
                                 f"expected {np.dtype(dtype)} ({len(ensemble.nodes)},)")
        if np.isnan(arrays["node_edge"]).any():
            raise ValueError("table 'node_edge' holds NaN")
        if len(ensemble.nodes) > MAX_NODES:
            raise ValueError(f"{len(ensemble.nodes)} nodes, the format holds at most {MAX_NODES}")
        self._check_output(ensemble, arrays)
        self.ensemble_, self.node_edge_, self.nan_left_ = ensemble, arrays["node_edge"], arrays["nan_left"]
        self.n_features_in_ = ensemble.n_features


class ImportedClassifier(ImportedTrees, EnsemblePrediction, BatchClassifier):
    """A tree classifier converted from another library (see :func:`edgestream.importers.convert`).

    Parameters
    ----------
    library, library_version, estimator, objective : where the model came from (recorded in the model file).
    """

    def predict_proba_q15(self, X) -> np.ndarray:
        """Class probabilities exactly as the device computes them (uint16, 32768 == 1.0)."""
        return self.ensemble_.combine_proba_q15(self.leaves(self._validate_X(X)))

    def predict_encoded(self, X) -> np.ndarray:
        return self.ensemble_.combine_classes(self.leaves(self._validate_X(X)))

    def _check_output(self, ensemble: TreeEnsemble, arrays: dict) -> None:
        if ensemble.n_classes != len(self.classes_):
            raise ValueError(f"{len(self.classes_)} class labels, leaf table for {ensemble.n_classes} classes")


class ImportedRegressor(ImportedTrees, BatchRegressor):
    """A tree regressor converted from another library (see :func:`edgestream.importers.convert`): one int16 code
    per leaf, summed into the int32 raw output and decoded ``target_.offset + raw * target_.step /
    output_divisor`` (``output_divisor``: the trees an averaging forest divides by, 1 for boosting, whose base
    score is in the offset).

    ``rounding_bound_`` is the stated bound on ``|predict(X) - source.predict(X)|`` for every row: ``n_trees *
    step / 2`` for sums, ``step / 2`` for averages (each leaf rounded to its code, by at most half a step), plus the
    floating-point rounding of the source's own sum and of the decoding (``(n_trees + 8) * (u + 2**-53) * M``, u
    the unit roundoff of the source's arithmetic: ``2**-24`` for XGBoost's float32, ``2**-53`` for the others; M
    the largest magnitude a partial sum can reach).

    Parameters
    ----------
    library, library_version, estimator, objective : where the model came from (recorded in the model file).
    """

    @property
    def output_divisor(self) -> int:
        """What the raw output is divided by before it is decoded: the trees averaged, or 1 for a sum."""
        return self.output_divisor_

    def predict_raw(self, X) -> np.ndarray:
        """int32 raw outputs (base score and the leaf codes reached) exactly as the device computes them."""
        leaves = self.leaves(self._validate_X(X))
        return additive_sums(self.ensemble_.leaf_values, self.ensemble_.base_score, leaves)[:, 0].astype(np.int32)

    def predict(self, X) -> np.ndarray:
        return self.target_.decode(self.predict_raw(X), self.output_divisor)

    def saved_arrays(self) -> dict:
        return {**super().saved_arrays(), "output_divisor": np.asarray([self.output_divisor], dtype=np.uint16),
                "rounding_bound": np.asarray([self.rounding_bound_], dtype=np.float64)}

    def _check_output(self, ensemble: TreeEnsemble, arrays: dict) -> None:
        if not isinstance(self.target_, TargetScale):
            raise ValueError("a regressor needs its target scale before its tables")
        if ensemble.leaf_kind != "additive" or ensemble.leaf_values.shape[1] != 1:
            raise ValueError("a regressor's leaf table holds one int16 code per leaf and a base score")
        divisor, bound = arrays["output_divisor"], arrays["rounding_bound"]
        if divisor.dtype != np.uint16 or divisor.shape != (1,) or int(divisor[0]) not in (1, ensemble.n_trees):
            raise ValueError(f"output_divisor {divisor!r} must be one uint16: 1 (a sum) or {ensemble.n_trees} "
                             "(the trees averaged)")
        if bound.dtype != np.float64 or bound.shape != (1,) or not (np.isfinite(bound[0]) and bound[0] >= 0):
            raise ValueError(f"rounding_bound {bound!r} must be one finite float64 >= 0")
        self.output_divisor_, self.rounding_bound_ = int(divisor[0]), float(bound[0])


class ImportedDetector(ImportedTrees, BatchEstimator):
    """An isolation forest converted from scikit-learn (see :func:`edgestream.importers.convert`): a frozen
    anomaly detector whose Q15 score (higher is more anomalous) is ``32768 * -score_samples`` of the source within
    ``rounding_bound_`` units, on every row.

    Each leaf holds its path length ``depth + c(n)`` (``n`` the training rows that reached it, ``c`` the average
    path length of an unsuccessful search in a binary search tree of ``n`` keys) as an int16 in Q10; the leaves
    reached are summed into the int32 ``raw`` (the device's additive sum) and
    :func:`edgestream.fixedpoint.path_score_q15` turns it into ``2**(-E(h) / c(max_samples))`` in Q15 with the
    model's ``path_multiplier_`` and ``path_shift_`` (``multiplier / 2**shift = 2**26 / (n_trees * 1024 *
    c(max_samples))``). A row is flagged when its score is at or above ``threshold_`` (from the source's
    ``offset_``, or :meth:`calibrate`).

    Parameters
    ----------
    library, library_version, estimator, objective : where the model came from (recorded in the model file).
    """

    task = ANOMALY
    missing_rule = "NaN goes right at every split; the source refuses NaN"

    def predict_raw(self, X) -> np.ndarray:
        """int32 outputs of rows, each its Q15 score and flag (:func:`edgestream.task.split_output`), exactly as the
        device computes them."""
        leaves = self.leaves(self._validate_X(X))
        raw = additive_sums(self.ensemble_.leaf_values, self.ensemble_.base_score, leaves)[:, 0]
        scores = path_score_q15(raw, self.path_multiplier_, self.path_shift_)
        return (scores | np.where(scores >= self.threshold_, FLAG, 0)).astype(np.int32)

    def score_samples(self, X) -> np.ndarray:
        """Q15 scores of rows (higher is more anomalous)."""
        return split_output(self.predict_raw(X))[0]

    def predict(self, X) -> np.ndarray:
        """The flags of rows: 1 for an anomaly, 0 for a normal row."""
        return split_output(self.predict_raw(X))[1].astype(np.int32)

    def calibrate(self, scores, rate: float):
        """Set the threshold from Q15 scores of normal rows for the target false-alarm rate
        (:func:`edgestream.learners.detect.calibrated_threshold`)."""
        self._check_fitted()
        self.threshold_ = calibrated_threshold(scores, rate)
        return self

    def saved_arrays(self) -> dict:
        return {**super().saved_arrays(),
                "path_multiplier": np.asarray([self.path_multiplier_], dtype=np.uint32),
                "path_shift": np.asarray([self.path_shift_], dtype=np.uint8),
                "threshold": np.asarray([self.threshold_], dtype=np.uint16),
                "rounding_bound": np.asarray([self.rounding_bound_], dtype=np.float64)}

    def _check_output(self, ensemble: TreeEnsemble, arrays: dict) -> None:
        if ensemble.leaf_kind != "additive" or ensemble.leaf_values.shape[1] != 1 or ensemble.leaf_values.min() < 0 \
                or np.asarray(ensemble.base_score).tolist() != [0]:
            raise ValueError("a detector's leaf table holds one int16 path length >= 0 per leaf, base score 0")
        expected = {"path_multiplier": np.uint32, "path_shift": np.uint8, "threshold": np.uint16,
                    "rounding_bound": np.float64}
        for name, dtype in expected.items():
            if arrays[name].dtype != dtype or arrays[name].shape != (1,):
                raise ValueError(f"{name} has dtype {arrays[name].dtype} and shape {arrays[name].shape}, expected "
                                 f"{np.dtype(dtype)} (1,)")
        multiplier, shift, threshold, bound = (arrays[name][0] for name in expected)
        if multiplier == 0 or shift > 63 or threshold > NEVER or not (np.isfinite(bound) and bound >= 0):
            raise ValueError(f"path_multiplier {multiplier} (> 0), path_shift {shift} (<= 63), threshold {threshold} "
                             f"(<= {NEVER}) or rounding_bound {bound} (finite, >= 0) out of range")
        self.path_multiplier_, self.path_shift_ = int(multiplier), int(shift)
        self.threshold_, self.rounding_bound_ = int(threshold), float(bound)


def imported_context(model, name: str, optimize: str = "speed") -> dict:
    context = device_context(model.device_model(), name, optimize)
    if isinstance(model, ImportedDetector):
        context.update(path_multiplier=model.path_multiplier_, path_shift=model.path_shift_,
                       flag_threshold=model.threshold_)
    return context


def imported_tables(model, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                    optimize: str = "speed") -> list[tuple[str, int]]:
    return device_tables(model.device_model(), pointer_bytes, packed, optimize)


SPEC = LearnerSpec(
    name="imported", cls=ImportedClassifier, regressor=ImportedRegressor, detector=ImportedDetector,
    summary="a tree model trained elsewhere (edgestream import)",
    options=(), learning=False, online=False, runtime=("es_common", "es_fixed", "es_infer"), template="frozen.c.j2",
    context=imported_context, tables=imported_tables, trainable=False)
