"""The one table of learners. Everything generic (CLI, model files, export, simulation, targets, budget) reads it.

| name      | classifier              | regressor       | on the device                                   | runtime modules                       |
|-----------|-------------------------|-----------------|-------------------------------------------------|---------------------------------------|
| tree      | TreeClassifier          | TreeRegressor   | frozen                                          | es_infer                              |
| forest    | ForestClassifier        | ForestRegressor | frozen                                          | es_infer                              |
| gbdt      | OnlineGBDTClassifier    | OnlineGBDTRegressor | frozen (additive leaves; add/delete rows on the host) | es_fixed, es_infer          |
| shrubs    | ShrubEnsemble           | ShrubRegressor  | keeps learning (window)                         | es_binning, es_tree, es_cart, es_shrubs |
| bls       | OnlineBLSClassifier     | OnlineBLSRegressor | keeps learning (factor)                      | es_f32, es_fixed, es_bls            |
| hoeffding | HoeffdingTreeClassifier | HoeffdingTreeRegressor | keeps learning (node pool)                      | es_f32, es_fixed, es_hoeffding        |
| irf       | IncrementalRandomForest | IncrementalRandomForestRegressor | keeps learning (node pools)                     | es_f32, es_fixed, es_hoeffding        |
| axgb      | AdaptiveXGBoost         | AdaptiveXGBoostRegressor | keeps learning (tumbling windows, ADWIN)        | es_binning, es_tree, es_fixed, es_adwin, es_axgb |
| imported  | ImportedClassifier      | ImportedRegressor | frozen (trained elsewhere: edgestream import) | es_fixed, es_infer                    |
| hst       | (anomaly: HalfSpaceTrees) |               | keeps learning (two windows of masses)          | es_detect, es_hst                     |
| loda      | (anomaly: Loda)         |                 | keeps learning (two windows of histograms)      | es_detect, es_loda                    |

A regressor (:mod:`edgestream.task`) is the learner's form for the regression task, a detector its form for the
anomaly task, in the same entry (the regressors of shrubs and hoeffding/irf in their own
modules, :mod:`.shrubs_regressor` and :mod:`.hoeffding_regression`, which give the entries).
"""

from __future__ import annotations

from . import (axgb, axgb_regression, bls, forest, gbdt, hoeffding, hoeffding_regression, hst, imported, loda,
               shrubs_regressor, tree)
from .axgb import AdaptiveXGBoost
from .axgb_regression import AdaptiveXGBoostRegressor
from .base import LearnerSpec, Option, missing_rule, model_input
from .bls import OnlineBLSClassifier, OnlineBLSRegressor
from ..task import CLASSIFICATION, check_task
from .forest import ForestClassifier, ForestRegressor
from .gbdt import OnlineGBDTClassifier, OnlineGBDTRegressor
from .hoeffding_regression import HoeffdingTreeRegressor, IncrementalRandomForestRegressor
from .hoeffding import HoeffdingTreeClassifier, IncrementalRandomForest
from .hst import HalfSpaceTrees
from .imported import ImportedClassifier, ImportedRegressor
from .loda import Loda
from .shrubs import ShrubEnsemble
from .shrubs_regressor import ShrubRegressor
from .stream import is_fitted, register_with_river
from .tree import BinnedClassifier, TreeClassifier, TreeRegressor

REGISTRY: dict[str, LearnerSpec] = {spec.name: spec for spec in (
    tree.SPEC, forest.SPEC, gbdt.SPEC, shrubs_regressor.SPEC, bls.SPEC, hoeffding_regression.HT_SPEC,
    hoeffding_regression.FOREST_SPEC, axgb_regression.AXGB_SPEC, imported.SPEC, hst.SPEC, loda.SPEC)}
TRAINABLE = [name for name, spec in REGISTRY.items() if spec.trainable]
register_with_river([spec.cls for spec in REGISTRY.values() if spec.online and spec.cls is not None],
                    [spec.regressor for spec in REGISTRY.values() if spec.online and spec.regressor is not None],
                    [spec.detector for spec in REGISTRY.values() if spec.online and spec.detector is not None])


def get(name: str, task: str | None = None) -> LearnerSpec:
    """The learner called ``name`` with a form for ``task`` (None: any); an unknown name gets an error listing the
    learners there are, a learner without the task those that have it."""
    try:
        spec = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown learner {name!r}; the learners are: {', '.join(REGISTRY)}") from None
    if task is not None and task not in spec.tasks:
        raise ValueError(f"learner {name!r} has no {check_task(task)} form yet; the learners with one: "
                         f"{', '.join(for_task(task))}")
    return spec


def for_task(task: str) -> list[str]:
    """The trainable learners with a form for ``task``."""
    return [name for name, spec in REGISTRY.items() if task in spec.tasks and spec.trainable]


def of_model(model) -> LearnerSpec:
    """The learner of a model object (by its class, of either task)."""
    for spec in REGISTRY.values():
        if type(model) in spec.estimators:
            return spec
    raise ValueError(f"a {type(model).__name__} is not a registered learner ({names_of_classes()})")


def by_class_name(class_name: str) -> LearnerSpec:
    """The learner whose estimator class is called ``class_name`` (as model files name them)."""
    for spec in REGISTRY.values():
        if class_name in (cls.__name__ for cls in spec.estimators):
            return spec
    raise ValueError(f"unknown learner {class_name!r}; known: {names_of_classes()}")


def class_named(class_name: str) -> type:
    """The estimator class called ``class_name``, of either task."""
    return next(cls for cls in by_class_name(class_name).estimators if cls.__name__ == class_name)


def names_of_classes() -> str:
    return ", ".join(cls.__name__ for spec in REGISTRY.values() for cls in spec.estimators)


__all__ = ["REGISTRY", "TRAINABLE", "AdaptiveXGBoost", "AdaptiveXGBoostRegressor", "BinnedClassifier", "ForestClassifier",
           "HalfSpaceTrees", "HoeffdingTreeClassifier", "HoeffdingTreeRegressor", "ImportedClassifier",
           "ImportedRegressor", "IncrementalRandomForest", "Loda", "IncrementalRandomForestRegressor", "LearnerSpec",
           "OnlineBLSClassifier", "OnlineBLSRegressor", "OnlineGBDTClassifier", "OnlineGBDTRegressor", "Option",
           "ShrubEnsemble", "ShrubRegressor", "TreeClassifier", "ForestRegressor", "TreeRegressor", "by_class_name", "class_named",
           "for_task", "get", "is_fitted", "missing_rule", "model_input",
           "of_model"]
