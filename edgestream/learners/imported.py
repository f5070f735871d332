"""Tree models trained elsewhere (scikit-learn, LightGBM, XGBoost), frozen on the device: the Python model of what
:mod:`edgestream.importers` makes of them.

Their splits are not on edgestream's bins: every node holds its own raw edge (float32: ``x <= edge`` goes left)
and its own direction for a missing value (``nan_left``: NaN goes left, else right), which the importers compute
so that every float32 input takes the branch the source takes. The leaves are one of the tree format's kinds:
Q15 probability rows averaged with weight 1 (forests) or additive int16 scores with ``10 + score_shift`` fraction
bits (boosting). Export, simulation, budget and builds go through the frozen path (``es_infer``) like the other
frozen models; the bundle sets the NaN-left flags of the encoding only when some node needs them.

``fit`` is not offered: a model comes from :func:`edgestream.importers.convert`. The parameters record where it
came from (library, its version, estimator, objective), so the model file says so.
"""

from __future__ import annotations

import numpy as np

from ..encoding import apply_raw
from ..frozen import DeviceModel, device_context, device_tables
from ..tree import LEAF_FEATURE, MAX_NODES, TreeEnsemble
from .base import LearnerSpec
from .skbase import BatchClassifier
from .tree import EnsemblePrediction


class ImportedClassifier(EnsemblePrediction, BatchClassifier):
    """A tree ensemble converted from another library (see :func:`edgestream.importers.convert`).

    Parameters
    ----------
    library, library_version, estimator, objective : where the model came from (recorded in the model file).
    """

    input_dtype = "float32"

    def __init__(self, library: str = "", library_version: str = "", estimator: str = "", objective: str = ""):
        self.library = library
        self.library_version = library_version
        self.estimator = estimator
        self.objective = objective

    def fit(self, X, y):
        raise TypeError("an ImportedClassifier is not trained here; convert a fitted model with edgestream.convert")

    @classmethod
    def from_tables(cls, source: dict, ensemble: TreeEnsemble, node_edge: np.ndarray, nan_left: np.ndarray,
                    classes, feature_names=None) -> "ImportedClassifier":
        """The model of converted tables (checked like a model file's)."""
        model = cls(**source)
        model.classes_ = np.asarray(classes)
        if feature_names is not None:
            model.feature_names_in_ = np.asarray([str(name) for name in feature_names], dtype=object)
        model.restore_arrays({**ensemble.arrays(), "node_edge": node_edge, "nan_left": nan_left,
                              "n_features": np.asarray([ensemble.n_features], dtype=np.uint16)})
        return model

    @property
    def n_features_(self) -> int:
        return self.ensemble_.n_features

    def predict_proba_q15(self, X) -> np.ndarray:
        """Class probabilities exactly as the device computes them (uint16, 32768 == 1.0)."""
        return self.ensemble_.combine_proba_q15(self.leaves(self._validate_X(X)))

    def predict_encoded(self, X) -> np.ndarray:
        return self.ensemble_.combine_classes(self.leaves(self._validate_X(X)))

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
        """Take converted or saved tables, after ``classes_`` is set; refuses inconsistent ones."""
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
        if ensemble.n_classes != len(self.classes_):
            raise ValueError(f"{len(self.classes_)} class labels, leaf table for {ensemble.n_classes} classes")
        if len(ensemble.nodes) > MAX_NODES:
            raise ValueError(f"{len(ensemble.nodes)} nodes, the format holds at most {MAX_NODES}")
        self.ensemble_, self.node_edge_, self.nan_left_ = ensemble, arrays["node_edge"], arrays["nan_left"]
        self.n_features_in_ = ensemble.n_features


def imported_context(model, name: str, optimize: str = "speed") -> dict:
    return device_context(model.device_model(), name, optimize)


def imported_tables(model, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                    optimize: str = "speed") -> list[tuple[str, int]]:
    return device_tables(model.device_model(), pointer_bytes, packed, optimize)


SPEC = LearnerSpec(
    name="imported", cls=ImportedClassifier, summary="a tree model trained elsewhere (edgestream import)",
    options=(), learning=False, online=False, runtime=("es_common", "es_fixed", "es_infer"), template="frozen.c.j2",
    context=imported_context, tables=imported_tables, trainable=False)
