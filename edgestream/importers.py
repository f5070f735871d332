"""Models trained elsewhere as edgestream models that predict what their source predicts.

:func:`convert` takes a fitted model object, :func:`load_source` a model file; :data:`SUPPORTED` is the one table of
what is taken:

| library      | models                                                                 | leaves              |
|--------------|------------------------------------------------------------------------|---------------------|
| scikit-learn | DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier  | Q15 probability rows, averaged |
| scikit-learn | DecisionTreeRegressor, RandomForestRegressor, ExtraTreesRegressor     | target codes, averaged |
| scikit-learn | GradientBoostingClassifier, HistGradientBoostingClassifier             | additive scores     |
| scikit-learn | GradientBoostingRegressor, HistGradientBoostingRegressor (loss squared_error) | target codes, summed |
| lightgbm     | Booster, LGBMClassifier, LGBMRegressor (objective binary, multiclass, multiclassova, regression); model text file | additive scores, target codes |
| xgboost      | Booster, XGBClassifier, XGBRegressor (binary:logistic, binary:logitraw, multi:softprob, multi:softmax, reg:squarederror); JSON or UBJSON file | additive scores, target codes |
| scikit-learn | IsolationForest (a frozen anomaly detector)                           | path lengths, summed |

Every source's trees are first read into :class:`SourceTree` (children, feature, threshold and NaN direction per
node, a value per leaf), then converted once, the same way for all.

**Thresholds.** The device compares a float32 input ``x`` with a float32 edge (``x <= edge`` goes left). Each
source's rule becomes the edge that sends every float32 ``x`` the same way:

* scikit-learn and LightGBM compare ``x <= t`` in double (the float32 ``x`` is exact in double): the edge is the
  largest float32 ``<= t`` (``float32(t)``, one step down when it rounded up; ``+inf`` stays);
* XGBoost compares ``x < t`` in float32: the edge is the float32 just below ``t`` (``nextafter(t, -inf)``).

**Missing values.** A NaN goes where the source sends it: scikit-learn's ``missing_go_to_left``, XGBoost's
``default_left``, LightGBM's ``default_left`` for ``missing_type`` NaN; LightGBM's ``None`` replaces NaN by 0.0 (so
NaN goes left iff ``0.0 <= t``); LightGBM's ``Zero`` (``zero_as_missing``) is refused (its missing values are an
interval, not one comparison). A node that sends NaN left is flagged (``nan_left``).

**Leaves.** Averaged forests keep a Q15 probability row per leaf (``floor(p * 32768 + 1/2)``), every tree of
weight 1, so the device averages as the source does. Boosted trees add their leaf values per class score; each
tree's values are centred on the midpoint of their range (the midpoints go into the int32 base scores) and all
are scaled by ``2**(10 + score_shift)``, with the largest ``score_shift`` (0..20) that keeps every leaf in int16
and every sum in int32: the fixed-point sums then differ from the source's double (or float32) sums by at most
``(n_trees + 1) / 2`` units of ``2**-(10 + score_shift)``, so the class differs only for rows whose source margin
is that close to a tie. A binary model has one score (class 1 when it is > 0), a multi-class one a score per class.

**Regressors** (:class:`edgestream.learners.imported.ImportedRegressor`) keep one int16 code per leaf of one
:class:`edgestream.task.TargetScale`: each tree's leaf values are centred on the midpoint of their range, the
step is the largest half range over the trees divided by ``CODE_MAX`` (so every code fits int16 and nothing
saturates), the code is ``floor((value - midpoint) / step + 1/2)``, and the offset carries the base score (or
init prediction) plus the midpoints (their mean for an averaging forest). The raw output is the int32 sum of the
codes reached, decoded ``offset + raw * step / divisor`` (divisor: the trees a forest averages, 1 for boosting).
Each leaf is off by at most ``step / 2``, so the prediction is within ``n_trees * step / 2`` of the source's for
sums and ``step / 2`` for averages (``rounding_bound_`` adds the floating-point rounding of both sides). The bound
grows with the number of trees and the widest tree's range, not with depth: a boosted model of T trees whose
widest tree spans ``2 * h`` is within ``T * h / 65534``.

**Isolation forests** (:class:`edgestream.learners.imported.ImportedDetector`) become frozen anomaly detectors whose
Q15 score (higher is more anomalous) is ``32768 * -score_samples``. Every leaf holds its path length ``depth +
c(n)`` (``n`` its training rows, ``c`` the average path length of an unsuccessful binary-search-tree search, as
scikit-learn computes it) as an int16 in Q10 (``floor(1024 h + 1/2)``; a path length of 32 or more is refused), the
trees map their features back through ``estimators_features_``, and the device sums the leaves reached into an
int32 ``raw`` (the additive walk). The score is ``2**(-E(h) / c(max_samples))``, computed in integers the same way
on both sides (:func:`edgestream.fixedpoint.path_score_q15`, ``es_path_score_q15``): the exponent in Q26 is
``(raw * multiplier) >> shift`` (``multiplier / 2**shift = 2**26 / (n_trees * 1024 * c(max_samples))``, the
multiplier of 32 bits), then the shared base-2 exponential of ``es_fixed`` rounds it to Q15 (1.0 is clipped to
32767). The rounding bound ``rounding_bound_`` (Q15 units) is ``32768 ln2 (1 / (2048 c(max_samples)) + 2**-26 +
e_max 2**-31) + 1.6`` (the leaves' half unit of the mean path length, the exponent's floor and multiplier, through
a slope of at most ln 2; then the rounding to Q15, the clip and the exponential's own error): 2.7 units for the
default ``max_samples=256``. The flag is ``score >= threshold`` with ``threshold = floor(-32768 offset_) + 1``
(scikit-learn's ``predict``: ``score_samples < offset_``), or one calibrated for a false-alarm rate
(``ImportedDetector.calibrate``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .fixedpoint import SCORE_FRAC_BITS
from .fixedpoint import PATH_FRAC_BITS
from .learners.imported import ImportedClassifier, ImportedDetector, ImportedRegressor
from .task import ANOMALY, CLASSIFICATION, CODE_MAX, NEVER, REGRESSION, TargetScale
from .tree import LEAF_FEATURE, MAX_CLASSES, MAX_FEATURES, MAX_NODES, MAX_SCORE_SHIFT, NODE_DTYPE, TreeEnsemble

INT16_MAX = 2**15 - 1
INT32_MAX = 2**31 - 1
Q15_ONE = 2**15


@dataclass
class SourceTree:
    """One tree as its source holds it: per node its children (-1 for a leaf), feature, threshold and whether NaN
    goes left; per leaf its value (a probability row for forests, one score for boosting)."""

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray  # float64 (scikit-learn, LightGBM: x <= t) or float32 (XGBoost: x < t)
    nan_left: np.ndarray
    value: np.ndarray  # [n_nodes, n_classes] (forests) or [n_nodes] (boosting); read at leaves only
    output: int = 0  # boosting: the class score this tree adds to


@dataclass
class SourceModel:
    """A source model read into plain arrays."""

    library: str
    library_version: str
    estimator: str
    objective: str
    kind: str  # "forest" | "boosting"
    rule: str  # "le64": x <= t in double; "lt32": x < t in float32
    trees: list[SourceTree]
    classes: np.ndarray
    n_features: int
    base: np.ndarray = field(default_factory=lambda: np.zeros(1))  # boosting: one margin per score
    feature_names: list[str] | None = None
    task: str = CLASSIFICATION  # a regressor has no classes and one output
    roundoff: float = 2.0**-53  # unit roundoff of the source's own sums: 2**-24 where it predicts in float32
    average_path: float = 0.0  # an isolation forest: c(max_samples), the path length its mean is divided by
    offset: float = -0.5  # an isolation forest: rows whose score_samples is below it are anomalies


@dataclass(frozen=True)
class Importer:
    """One row of the table of supported models: the library, the class names it takes, how it is read."""

    library: str
    module: str  # the top-level module its classes live in
    names: tuple[str, ...]
    read: Callable[[object], SourceModel]


# ------------------------------------------------------------------------------------------------ thresholds

def edge_below_or_at(t) -> np.ndarray:
    """The largest float32 ``<= t`` for double thresholds ``t`` (``x <= t`` iff ``x <= edge`` for float32 x)."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):  # beyond float32: +-inf, then one step down for +inf
        e = t.astype(np.float32)
        return np.where(e.astype(np.float64) > t, np.nextafter(e, np.float32(-np.inf)), e).astype(np.float32)


def edge_below(t) -> np.ndarray:
    """The largest float32 ``< t`` for float32 thresholds ``t`` (``x < t`` iff ``x <= edge`` for float32 x)."""
    t = np.asarray(t, dtype=np.float32)
    if (t == -np.inf).any():
        raise ValueError("a split threshold is -inf: no float32 value is below it")
    with np.errstate(over="ignore"):
        return np.nextafter(t, np.float32(-np.inf)).astype(np.float32)


EDGES = {"le64": edge_below_or_at, "lt32": edge_below}


# ------------------------------------------------------------------------------------------------ conversion

def convert(model) -> ImportedClassifier | ImportedRegressor | ImportedDetector:
    """An edgestream model of a fitted scikit-learn, LightGBM or XGBoost classifier or regressor, or of a
    scikit-learn IsolationForest (see :data:`SUPPORTED`)."""
    return to_edgestream(read_source(model))


def read_source(model) -> SourceModel:
    """The source's trees in plain arrays, by the row of :data:`SUPPORTED` that takes the model."""
    kind = type(model)
    module = kind.__module__.split(".")[0]
    for importer in SUPPORTED:
        if module == importer.module and kind.__name__ in importer.names:
            return importer.read(model)
    raise ValueError(f"cannot import a {kind.__module__}.{kind.__name__}; supported: {supported_names()}")


def supported_names() -> str:
    return "; ".join(f"{importer.library} {', '.join(importer.names)}" for importer in SUPPORTED)


def to_edgestream(source: SourceModel) -> ImportedClassifier | ImportedRegressor | ImportedDetector:
    """The converted model: nodes laid out as edgestream's tree format, edges, NaN directions and leaves."""
    n_classes = len(source.classes)
    if source.task == CLASSIFICATION and not 2 <= n_classes <= MAX_CLASSES:
        raise ValueError(f"{source.estimator} has {n_classes} classes; edgestream takes 2 to {MAX_CLASSES}")
    if not 1 <= source.n_features <= MAX_FEATURES:
        raise ValueError(f"{source.estimator} has {source.n_features} features; edgestream takes 1 to {MAX_FEATURES}")
    n_nodes = sum(len(tree.left) for tree in source.trees)
    if n_nodes > MAX_NODES:
        raise ValueError(f"{source.estimator} has {n_nodes} nodes in {len(source.trees)} trees; edgestream takes at "
                         f"most {MAX_NODES} (fewer or shallower trees)")
    if not 1 <= len(source.trees) <= MAX_NODES:
        raise ValueError(f"{source.estimator} has {len(source.trees)} trees; edgestream takes 1 to {MAX_NODES}")
    layouts = [layout_tree(tree) for tree in source.trees]
    nodes, roots, edges, nan_left, leaf_of = join_trees(layouts, source)
    info = {"library": source.library, "library_version": source.library_version, "estimator": source.estimator,
            "objective": source.objective}
    if source.task == REGRESSION:
        ensemble, fitted, tables = regression_ensemble(source, nodes, roots, leaf_of)
        return ImportedRegressor.from_tables(info, ensemble, edges, nan_left, fitted, tables, source.feature_names)
    if source.task == ANOMALY:
        ensemble, tables = path_ensemble(source, nodes, roots, leaf_of)
        return ImportedDetector.from_tables(info, ensemble, edges, nan_left, {}, tables, source.feature_names)
    if source.kind == "forest":
        rows = np.concatenate([q15_rows(tree.value[leaves]) for tree, (_, leaves) in zip(source.trees, leaf_of)])
        ensemble = TreeEnsemble(nodes, roots, np.ones(len(roots), dtype=np.uint16), rows, source.n_features)
    else:
        ensemble = additive_ensemble(source, nodes, roots, leaf_of)
    ensemble.validate()
    return ImportedClassifier.from_tables(info, ensemble, edges, nan_left, {"classes_": np.asarray(source.classes)},
                                          feature_names=source.feature_names)


def layout_tree(tree: SourceTree) -> tuple[list[int], list[int]]:
    """The tree's nodes in edgestream's order (breadth first, the two children of a node side by side): the source
    node at every position, and each position's first child (0 for a leaf)."""
    order, first_child = [0], []
    while len(first_child) < len(order):
        node = order[len(first_child)]
        if tree.left[node] < 0:
            first_child.append(0)
        else:
            first_child.append(len(order))
            order += [int(tree.left[node]), int(tree.right[node])]
    return order, first_child


def join_trees(layouts, source: SourceModel):
    """All trees' nodes in one table (leaves numbered in order), with each node's edge and NaN direction."""
    to_edge = EDGES[source.rule]
    nodes, roots, edges, nan_left, leaf_of = [], [], [], [], []
    offset = leaves_before = 0
    for tree, (order, first_child) in zip(source.trees, layouts):
        order = np.asarray(order, dtype=np.int64)
        leaf = tree.left[order] < 0
        table = np.zeros(len(order), dtype=NODE_DTYPE)
        table["feature"] = np.where(leaf, LEAF_FEATURE, tree.feature[order])
        leaf_number = np.cumsum(leaf) - 1 + leaves_before
        table["child"] = np.where(leaf, leaf_number, np.asarray(first_child) + offset)
        if (tree.feature[order][~leaf] >= source.n_features).any() or (tree.feature[order][~leaf] < 0).any():
            raise ValueError(f"{source.estimator}: a split on a feature outside 0..{source.n_features - 1}")
        edge = np.zeros(len(order), dtype=np.float32)
        edge[~leaf] = to_edge(tree.threshold[order][~leaf])
        nodes.append(table)
        roots.append(offset)
        edges.append(edge)
        nan_left.append(tree.nan_left[order].astype(bool) & ~leaf)
        leaf_of.append((tree, order[leaf]))
        offset += len(order)
        leaves_before += int(leaf.sum())
    return (np.concatenate(nodes), np.asarray(roots, dtype=np.uint16), np.concatenate(edges),
            np.concatenate(nan_left), [(tree, leaves) for tree, leaves in leaf_of])


def q15_rows(values: np.ndarray) -> np.ndarray:
    """Probability rows (each normalized to sum 1, as the sources' predict_proba does) in Q15."""
    values = np.asarray(values, dtype=np.float64)
    totals = values.sum(axis=1, keepdims=True)
    proba = np.divide(values, totals, out=np.zeros_like(values), where=totals > 0)
    return np.floor(proba * Q15_ONE + 0.5).astype(np.uint16)


def additive_ensemble(source: SourceModel, nodes, roots, leaf_of) -> TreeEnsemble:
    """int16 leaf scores and int32 base scores at the finest scale that fits (see the module docstring)."""
    n_scores = len(source.base)
    values = [tree.value[leaves].astype(np.float64) for tree, leaves in leaf_of]
    middles = np.array([(v.max() + v.min()) / 2 for v in values])
    half_ranges = np.array([(v.max() - v.min()) / 2 for v in values])
    base = np.asarray(source.base, dtype=np.float64).copy()
    for (tree, _), middle in zip(leaf_of, middles):
        base[tree.output] += middle
    shift = score_shift(float(half_ranges.max()), float(np.abs(base).max()), len(roots), source.estimator)
    scale = 2.0 ** (SCORE_FRAC_BITS + shift)
    rows = []
    for (tree, _), v, middle in zip(leaf_of, values, middles):
        row = np.zeros((len(v), n_scores), dtype=np.int16)
        row[:, tree.output] = np.floor((v - middle) * scale + 0.5)
        rows.append(row)
    base_score = np.floor(base * scale + 0.5).astype(np.int32)
    return TreeEnsemble(nodes, roots, np.ones(len(roots), dtype=np.uint16), np.concatenate(rows), source.n_features,
                        "additive", base_score, shift)


def score_shift(half_range: float, base: float, n_trees: int, estimator: str) -> int:
    """The largest shift that keeps every centred leaf in int16 and base plus any int16 leaves in int32."""
    for shift in range(MAX_SCORE_SHIFT, -1, -1):
        scale = 2.0 ** (SCORE_FRAC_BITS + shift)
        if half_range * scale + 0.5 <= INT16_MAX and base * scale + 0.5 <= INT32_MAX - n_trees * 32768:
            return shift
    raise ValueError(f"{estimator}: leaf values spread over +-{half_range:.4g} (base {base:.4g}); edgestream's scores "
                     f"hold at most +-{INT16_MAX / 2**SCORE_FRAC_BITS:.4g} per tree")


def regression_ensemble(source: SourceModel, nodes, roots, leaf_of) -> tuple[TreeEnsemble, dict, dict]:
    """A regressor's int16 leaf codes, its target scale, divisor and rounding bound (the module docstring's
    Regressors): (ensemble, fitted attributes, further tables) of :meth:`ImportedRegressor.from_tables`."""
    values = [tree.value[leaves].astype(np.float64) for tree, leaves in leaf_of]
    base = float(source.base[0]) if source.kind == "boosting" else 0.0
    if not (np.isfinite(base) and all(np.isfinite(v).all() for v in values)):
        raise ValueError(f"{source.estimator}: a leaf value or the base score is not a finite number")
    lows, highs = np.array([v.min() for v in values]), np.array([v.max() for v in values])
    middles = lows / 2 + highs / 2  # halved first: no overflow
    n_trees = len(roots)
    divisor = n_trees if source.kind == "forest" else 1
    offset = base + float(np.sum(middles)) / divisor
    deviations = np.concatenate([v - middle for v, middle in zip(values, middles)])
    if not (np.isfinite(offset) and np.isfinite(deviations).all()):
        raise ValueError(f"{source.estimator}: its leaf values span more than float64 holds")
    step = float(np.abs(deviations).max()) / CODE_MAX  # the half ranges, as the float64 differences give them
    if not step > 0:  # every tree is constant: every code is 0, any step decodes it exactly
        step = max(abs(offset), 1.0) * 2.0**-30
    codes = np.floor(deviations / step + 0.5)
    if np.abs(codes).max() > CODE_MAX:  # by the choice of step it cannot be: never wrap a code
        raise ValueError(f"{source.estimator}: a leaf code leaves int16")
    reach = abs(base) + float(np.maximum(np.abs(lows), np.abs(highs)).sum()) / divisor  # the largest magnitude a partial sum can reach
    bound = n_trees * step / (2 * divisor) + (n_trees + 8) * (source.roundoff + 2.0**-53) * reach
    ensemble = TreeEnsemble(nodes, roots, np.ones(n_trees, dtype=np.uint16), codes.astype(np.int16).reshape(-1, 1),
                            source.n_features, "additive", np.zeros(1, dtype=np.int32))
    ensemble.validate()
    return ensemble, {"target_": TargetScale(offset, step)}, {
        "output_divisor": np.asarray([divisor], dtype=np.uint16), "rounding_bound": np.asarray([bound])}


PATH_MAX = CODE_MAX / 2**PATH_FRAC_BITS  # the longest leaf path length an int16 in Q10 holds
EXPONENT_BITS = 26  # the score's exponent E(h) / c(max_samples) in Q26 (edgestream.fixedpoint.path_score_q15)


def average_path_length(n) -> np.ndarray:
    """``c(n)``: the average path length of an unsuccessful search in a binary search tree of ``n`` keys (0 for
    ``n <= 1``, 1 for 2, ``2 (ln(n - 1) + Euler's constant) - 2 (n - 1) / n`` above), as scikit-learn computes it."""
    n = np.asarray(n, dtype=np.float64)
    big = np.maximum(n, 3.0)
    c = 2.0 * (np.log(big - 1.0) + np.euler_gamma) - 2.0 * (big - 1.0) / big
    return np.where(n <= 1, 0.0, np.where(n <= 2, 1.0, c))


def path_ensemble(source: SourceModel, nodes, roots, leaf_of) -> tuple[TreeEnsemble, dict]:
    """An isolation forest's int16 leaf path lengths in Q10, the score's multiplier and shift, the threshold of
    its offset and the rounding bound (the module docstring's Isolation forests)."""
    values = np.concatenate([tree.value[leaves].astype(np.float64) for tree, leaves in leaf_of])
    if values.max() >= PATH_MAX:
        raise ValueError(f"{source.estimator}: a leaf's path length is {values.max():.2f}; edgestream holds at most "
                         f"{PATH_MAX:.2f} (max_samples up to about 10,000)")
    if not source.average_path > 0:
        raise ValueError(f"{source.estimator} with max_samples=1: every path length is 0, no score can be computed")
    codes = np.floor(values * 2**PATH_FRAC_BITS + 0.5).astype(np.int16).reshape(-1, 1)
    n_trees = len(roots)
    exponent_per_raw = 2.0**EXPONENT_BITS / (n_trees * 2**PATH_FRAC_BITS * source.average_path)
    shift = next(s for s in range(63, -1, -1) if np.floor(exponent_per_raw * 2.0**s + 0.5) < 2**32)
    multiplier = int(np.floor(exponent_per_raw * 2.0**shift + 0.5))
    largest_exponent = PATH_MAX / source.average_path
    # Q15 units: the leaves' rounding (half a Q10 unit of the mean path), the multiplier's (relative 2**-31) and
    # the exponent's floor (2**-26), through a slope of at most ln 2; then the exponential (< 0.05), the rounding
    # to Q15 (0.5), 1.0 clipped to 32767 (1) and the source's own float64 sum (< 0.05).
    exponent_error = 0.5 / (2**PATH_FRAC_BITS * source.average_path) + largest_exponent * 2.0**-31 + 2.0**-26
    bound = 32768 * np.log(2) * exponent_error + 1.6
    threshold = int(np.clip(np.floor(-source.offset * 32768) + 1, 0, NEVER))
    ensemble = TreeEnsemble(nodes, roots, np.ones(n_trees, dtype=np.uint16), codes, source.n_features, "additive",
                            np.zeros(1, dtype=np.int32))
    ensemble.validate()
    return ensemble, {"path_multiplier": np.asarray([multiplier], dtype=np.uint32),
                      "path_shift": np.asarray([shift], dtype=np.uint8),
                      "threshold": np.asarray([threshold], dtype=np.uint16),
                      "rounding_bound": np.asarray([bound], dtype=np.float64)}


# ------------------------------------------------------------------------------------------------ scikit-learn

def _sklearn_version() -> str:
    import sklearn

    return sklearn.__version__


def _sklearn_tree(tree, value: np.ndarray, output: int = 0) -> SourceTree:
    nan_left = getattr(tree, "missing_go_to_left", np.zeros(tree.node_count, dtype=np.uint8))
    return SourceTree(tree.children_left, tree.children_right, tree.feature, tree.threshold.astype(np.float64),
                      np.asarray(nan_left).astype(bool), value, output)


def _sklearn_check(model) -> bool:
    """Refuse an unfitted or multi-output model; True for a regressor."""
    from sklearn.base import is_regressor

    if not hasattr(model, "n_features_in_"):
        raise ValueError(f"this {type(model).__name__} is not fitted; fit it before importing")
    if getattr(model, "n_outputs_", 1) != 1:
        raise ValueError(f"{type(model).__name__} has {model.n_outputs_} outputs; edgestream imports one")
    return is_regressor(model)


def _sklearn_feature_names(model) -> list[str] | None:
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(name) for name in names]


def _sklearn_model(model, kind: str, trees, objective: str, regressor: bool, base=None) -> SourceModel:
    """The SourceModel of a scikit-learn estimator (a regressor has no classes)."""
    classes = np.zeros(0) if regressor else np.asarray(model.classes_)
    return SourceModel("scikit-learn", _sklearn_version(), type(model).__name__, objective, kind, "le64", trees,
                       classes, int(model.n_features_in_), np.zeros(1) if base is None else base,
                       _sklearn_feature_names(model), REGRESSION if regressor else CLASSIFICATION)


SKLEARN_REGRESSION_LOSSES = ("squared_error",)


def _sklearn_loss(model, regressor: bool) -> str:
    """The boosting's loss; a regressor's must have the identity link of ``SKLEARN_REGRESSION_LOSSES``."""
    loss = str(model.loss)
    if regressor and loss not in SKLEARN_REGRESSION_LOSSES:
        raise ValueError(f"{type(model).__name__} loss {loss!r}: edgestream imports regressors of loss "
                         f"{', '.join(SKLEARN_REGRESSION_LOSSES)}")
    return loss


def read_sklearn_forest(model) -> SourceModel:
    """DecisionTree-, RandomForest-, ExtraTreesClassifier (per-tree class probabilities) and -Regressor (per-tree
    leaf values), averaged."""
    regressor = _sklearn_check(model)
    estimators = getattr(model, "estimators_", [model])
    trees = [_sklearn_tree(e.tree_, e.tree_.value[:, 0, 0] if regressor else e.tree_.value[:, 0, :])
             for e in estimators]
    return _sklearn_model(model, "forest", trees, str(model.criterion) if regressor else "", regressor)


def read_sklearn_gradient_boosting(model) -> SourceModel:
    """GradientBoostingClassifier and -Regressor: init + learning_rate * tree values per score."""
    regressor = _sklearn_check(model)
    loss = _sklearn_loss(model, regressor)
    init = model.init_
    if not (init == "zero" or type(init).__name__ in ("DummyClassifier", "DummyRegressor")):
        raise ValueError(f"{type(model).__name__} with init={type(init).__name__}: edgestream takes the default "
                         "(prior) or 'zero' init")
    base = np.asarray(model._raw_predict_init(np.zeros((1, model.n_features_in_), dtype=np.float32)))[0]
    trees = [_sklearn_tree(e.tree_, model.learning_rate * e.tree_.value[:, 0, 0], k)
             for stage in model.estimators_ for k, e in enumerate(stage)]
    return _sklearn_model(model, "boosting", trees, loss, regressor, base)


def read_sklearn_hist_gradient_boosting(model) -> SourceModel:
    """HistGradientBoostingClassifier and -Regressor: baseline + leaf values per score (numerical splits only)."""
    regressor = _sklearn_check(model)
    name = type(model).__name__
    if getattr(model, "_preprocessor", None) is not None or getattr(model, "is_categorical_", None) is not None \
            and np.any(model.is_categorical_):
        raise ValueError(f"{name} with categorical features: edgestream imports numerical splits only")
    loss = _sklearn_loss(model, regressor)
    trees = []
    for iteration in model._predictors:
        for k, predictor in enumerate(iteration):
            n = predictor.nodes
            if n["is_categorical"].any():
                raise ValueError(f"{name} with categorical splits: edgestream imports numerical splits only")
            leaf = n["is_leaf"].astype(bool)
            left = np.where(leaf, -1, n["left"].astype(np.int64))
            right = np.where(leaf, -1, n["right"].astype(np.int64))
            trees.append(SourceTree(left, right, n["feature_idx"].astype(np.int64), n["num_threshold"],
                                    n["missing_go_to_left"].astype(bool), n["value"].astype(np.float64), k))
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    return _sklearn_model(model, "boosting", trees, loss, regressor, base)


def read_sklearn_isolation_forest(model) -> SourceModel:
    """IsolationForest: every node's path length ``depth + c(n_node_samples)`` (read at the leaves), the trees'
    features mapped back through ``estimators_features_``."""
    if not hasattr(model, "estimators_"):
        raise ValueError(f"this {type(model).__name__} is not fitted; fit it before importing")
    trees = []
    for estimator, features in zip(model.estimators_, model.estimators_features_):
        tree = estimator.tree_
        depth = np.zeros(tree.node_count, dtype=np.int64)
        for node in range(tree.node_count):  # children come after their parent
            for child in (tree.children_left[node], tree.children_right[node]):
                if child >= 0:
                    depth[child] = depth[node] + 1
        lengths = depth + average_path_length(tree.n_node_samples)
        source = _sklearn_tree(tree, lengths)
        split = source.feature >= 0
        source.feature = np.where(split, np.asarray(features)[np.where(split, source.feature, 0)], source.feature)
        trees.append(source)
    return SourceModel("scikit-learn", _sklearn_version(), type(model).__name__, "", "forest", "le64", trees,
                       np.zeros(0), int(model.n_features_in_), feature_names=_sklearn_feature_names(model),
                       task=ANOMALY, average_path=float(average_path_length(model.max_samples_)),
                       offset=float(model.offset_))


# ------------------------------------------------------------------------------------------------ LightGBM

LIGHTGBM_OBJECTIVES = ("binary", "multiclass", "multiclassova")
LIGHTGBM_REGRESSION = "regression"  # L2: the prediction is the sum of the leaves (not with reg_sqrt)


def read_lightgbm(model) -> SourceModel:
    """LightGBM Booster, LGBMClassifier or LGBMRegressor: additive leaf values (the average is folded into the
    first trees)."""
    import lightgbm

    booster = model.booster_ if hasattr(model, "booster_") else model
    dump = booster.dump_model()
    objective = str(dump.get("objective", "")).split()
    name = objective[0] if objective else ""
    regression = objective == [LIGHTGBM_REGRESSION]
    if name not in LIGHTGBM_OBJECTIVES and not regression:
        raise ValueError(f"LightGBM objective {' '.join(objective) or 'none'!r}: edgestream imports "
                         f"{', '.join(LIGHTGBM_OBJECTIVES + (LIGHTGBM_REGRESSION,))}")
    if dump.get("average_output"):
        raise ValueError("LightGBM random forest mode (boosting=rf): edgestream imports boosted trees")
    sigmoid = next((float(part.split(":")[1]) for part in objective if part.startswith("sigmoid:")), 1.0)
    n_scores = int(dump["num_tree_per_iteration"])
    factor = sigmoid if name == "binary" else 1.0
    trees = [_lightgbm_tree(info, info["tree_index"] % n_scores, factor) for info in dump["tree_info"]]
    classes = np.zeros(0) if regression else np.asarray(model.classes_) if hasattr(model, "classes_") else \
        np.arange(max(n_scores, 2))
    names = [str(n) for n in dump.get("feature_names", [])]
    default = [f"Column_{j}" for j in range(len(names))]
    return SourceModel("lightgbm", lightgbm.__version__, type(model).__name__, " ".join(objective), "boosting",
                       "le64", trees, classes, int(dump["max_feature_idx"]) + 1, np.zeros(n_scores),
                       None if names == default else names, REGRESSION if regression else CLASSIFICATION)


def _lightgbm_tree(info: dict, output: int, factor: float) -> SourceTree:
    """A dumped tree (nested dicts) as arrays, numbering nodes depth first."""
    if info.get("num_cat", 0):
        raise ValueError("LightGBM model with categorical splits: edgestream imports numerical splits only")
    left, right, feature, threshold, nan_left, value = [], [], [], [], [], []
    stack = [(info["tree_structure"], None, False)]
    while stack:
        node, parent, is_right = stack.pop()
        index = len(left)
        if parent is not None:
            (right if is_right else left)[parent] = index
        for column in (left, right, feature, threshold, nan_left, value):
            column.append(-1 if column is left or column is right else 0)
        if "leaf_value" in node:
            if "leaf_coeff" in node:
                raise ValueError("LightGBM model with linear trees: edgestream imports constant leaves only")
            value[index] = float(node["leaf_value"]) * factor
            continue
        if node.get("decision_type") != "<=":
            raise ValueError("LightGBM model with categorical splits: edgestream imports numerical splits only")
        missing = node.get("missing_type", "None")
        if missing == "Zero":
            raise ValueError("LightGBM model with missing_type Zero (zero_as_missing): edgestream imports missing "
                             "types None and NaN")
        feature[index], threshold[index] = int(node["split_feature"]), float(node["threshold"])
        nan_left[index] = bool(node["default_left"]) if missing == "NaN" else 0.0 <= threshold[index]
        stack += [(node["right_child"], index, True), (node["left_child"], index, False)]
    return SourceTree(np.asarray(left), np.asarray(right), np.asarray(feature), np.asarray(threshold, dtype=np.float64),
                      np.asarray(nan_left, dtype=bool), np.asarray(value, dtype=np.float64), output)


# ------------------------------------------------------------------------------------------------ XGBoost

XGBOOST_OBJECTIVES = ("binary:logistic", "binary:logitraw", "multi:softprob", "multi:softmax")
XGBOOST_REGRESSION = "reg:squarederror"  # the identity link: the prediction is base_score plus the leaves


def read_xgboost(model) -> SourceModel:
    """XGBoost Booster, XGBClassifier or XGBRegressor (gbtree): float32 ``x < t`` splits, default directions, base
    margins."""
    import xgboost

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    learner = json.loads(booster.save_raw("json"))["learner"]
    objective = learner["objective"]["name"]
    if objective not in XGBOOST_OBJECTIVES + (XGBOOST_REGRESSION,):
        raise ValueError(f"XGBoost objective {objective!r}: edgestream imports "
                         f"{', '.join(XGBOOST_OBJECTIVES + (XGBOOST_REGRESSION,))}")
    gbm = learner["gradient_booster"]
    if gbm["name"] != "gbtree":
        raise ValueError(f"XGBoost booster {gbm['name']!r}: edgestream imports gbtree")
    params = learner["learner_model_param"]
    n_features, n_classes = int(params["num_feature"]), int(params["num_class"])
    trees = [_xgboost_tree(tree, int(k)) for tree, k in zip(gbm["model"]["trees"], gbm["model"]["tree_info"])]
    if objective == XGBOOST_REGRESSION:
        if int(params.get("num_target", "1")) != 1:
            raise ValueError(f"XGBoost model with {params['num_target']} targets: edgestream imports one")
        return SourceModel("xgboost", xgboost.__version__, type(model).__name__, objective, "boosting", "lt32",
                           trees, np.zeros(0), n_features, _xgboost_base_score(params), booster.feature_names,
                           REGRESSION, roundoff=2.0**-24)
    n_scores = max(n_classes, 1)
    base = _xgboost_base(booster, trees, n_features, n_scores)
    classes = np.asarray(model.classes_) if hasattr(model, "classes_") else np.arange(max(n_classes, 2))
    return SourceModel("xgboost", xgboost.__version__, type(model).__name__, objective, "boosting", "lt32", trees,
                       classes, n_features, base, booster.feature_names)


def _xgboost_tree(tree: dict, output: int) -> SourceTree:
    if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise ValueError("XGBoost multi-output trees (multi_strategy=multi_output_tree): edgestream imports one "
                         "output per tree")
    if any(tree["split_type"]) or tree.get("categories_nodes"):
        raise ValueError("XGBoost model with categorical splits: edgestream imports numerical splits only")
    conditions = np.asarray(tree["split_conditions"], dtype=np.float32)
    return SourceTree(np.asarray(tree["left_children"]), np.asarray(tree["right_children"]),
                      np.asarray(tree["split_indices"]), conditions, np.asarray(tree["default_left"], dtype=bool),
                      conditions.astype(np.float64), output)


def _xgboost_base_score(params: dict) -> np.ndarray:
    """A regression's base score, the float32 of the model file (``"[5E-1]"`` since XGBoost 3, ``"5E-1"`` before)."""
    text = str(params.get("base_score", "0")).strip("[] ")
    try:
        return np.asarray([np.float32(text)], dtype=np.float64)
    except ValueError:
        raise ValueError(f"XGBoost base_score {params.get('base_score')!r} is not one number") from None


def _xgboost_base(booster, trees, n_features: int, n_scores: int) -> np.ndarray:
    """The base margin of every score: XGBoost's margin of an all-zero row less its trees' leaves there."""
    import xgboost

    row = np.zeros((1, n_features), dtype=np.float32)
    margin = np.asarray(booster.predict(xgboost.DMatrix(row), output_margin=True), dtype=np.float64).reshape(-1)
    for tree in trees:
        node = 0
        while tree.left[node] >= 0:
            node = tree.left[node] if np.float32(0.0) < tree.threshold[node] else tree.right[node]
        margin[tree.output] -= tree.value[node]
    return margin[:n_scores]


SUPPORTED = (
    Importer("scikit-learn", "sklearn", ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                                         "DecisionTreeRegressor", "RandomForestRegressor", "ExtraTreesRegressor"),
             read_sklearn_forest),
    Importer("scikit-learn", "sklearn", ("GradientBoostingClassifier", "GradientBoostingRegressor"),
             read_sklearn_gradient_boosting),
    Importer("scikit-learn", "sklearn", ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor"),
             read_sklearn_hist_gradient_boosting),
    Importer("scikit-learn", "sklearn", ("IsolationForest",), read_sklearn_isolation_forest),
    Importer("lightgbm", "lightgbm", ("Booster", "LGBMClassifier", "LGBMRegressor"), read_lightgbm),
    Importer("xgboost", "xgboost", ("Booster", "XGBClassifier", "XGBRegressor"), read_xgboost),
)


# ------------------------------------------------------------------------------------------------ model files

PICKLE_MAGICS = (b"\x80", b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x04\x22\x4d\x18", b"x\x9c", b"x\x01", b"x\xda")


def load_source(path, trust_pickle: bool = False):
    """The model object in a file: a LightGBM model text file, an XGBoost JSON or UBJSON model, or (only with
    ``trust_pickle``: loading one runs code from it) a pickle or joblib file."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    if head.startswith(b"tree\n") or head.startswith(b"tree\r\n"):
        lightgbm = _optional("lightgbm")
        return _library_load(lambda: lightgbm.Booster(model_file=str(path)), path, "a LightGBM model")
    if head.startswith(b"{") and (b"learner" in head or head.lstrip(b"{ \r\n\t").startswith((b'"', b"L", b"i", b"U"))):
        xgboost = _optional("xgboost")
        booster = xgboost.Booster()
        return _library_load(lambda: booster.load_model(bytearray(path.read_bytes())) or booster, path,
                             "an XGBoost model")
    if head.startswith(PICKLE_MAGICS):
        if not trust_pickle:
            raise ValueError(f"{path} is a pickle or joblib file, and loading one runs code from it; give "
                             "--trust-pickle if you trust where it came from")
        import joblib

        return _library_load(lambda: joblib.load(path), path, "a pickle or joblib file")
    raise ValueError(f"{path} is not a model file edgestream imports (a LightGBM model text file, an XGBoost JSON or "
                     "UBJSON model, or with --trust-pickle a pickle or joblib file)")


def _optional(name: str):
    try:
        return __import__(name)
    except ImportError:
        raise ImportError(f"importing a {name} model needs {name}: pip install 'edgestream[import]'") from None


def _library_load(load: Callable, path: Path, what: str):
    try:
        return load()
    except Exception as error:  # each library raises its own kinds for a damaged file
        raise ValueError(f"{path} looks like {what} but cannot be read: {str(error).strip().splitlines()[0]}") \
            from None


__all__ = ["SUPPORTED", "convert", "edge_below", "edge_below_or_at", "load_source", "read_source", "to_edgestream"]
