"""Bagged forest of binned CART trees with soft voting (all tree weights 1)."""

from __future__ import annotations

import numpy as np

from ..frozen import tree_context, tree_tables, tree_worst_case
from ..tree import TreeEnsemble, grow_regression_tree, grow_tree
from .base import LEAF_VALUES_OPTION, TREE_OPTIONS, LearnerSpec, Option, check_integer
from .tree import DEPTH_LADDER, BinnedClassifier, BinnedRegressor, tree_settings

class ForestClassifier(BinnedClassifier):
    """Random forest on 8-bit bins: bootstrap samples, a random feature subset at every split, soft voting.

    Parameters
    ----------
    n_trees : number of trees (1..255).
    max_features : features tried per split: ``"sqrt"``, ``"log2"``, ``None`` (all), an int or a fraction.
    bootstrap : draw each tree's sample multiplicities with replacement (otherwise every sample once).
    random_state : seed; the same seed gives the same forest.
    The tree parameters (and ``leaf_values``) are those of :class:`edgestream.TreeClassifier`.
    """

    def __init__(self, n_trees: int = 10, max_depth: int = 8, min_samples_leaf: int = 1,
                 max_nodes: int | None = None, criterion: str = "gini", max_features="sqrt",
                 bootstrap: bool = True, max_bins: int = 255, binning: str = "quantile",
                 input_dtype: str = "float32", random_state: int = 0, leaf_values: str = "q15"):
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_nodes = max_nodes
        self.criterion = criterion
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.max_bins = max_bins
        self.binning = binning
        self.input_dtype = input_dtype
        self.random_state = random_state
        self.leaf_values = leaf_values

    def _check_params(self) -> None:
        check_integer(self, "n_trees", 1, 255)
        super()._check_params()

    def _fit_ensemble(self, X_binned, y, n_classes) -> TreeEnsemble:
        settings = self._tree_settings()
        max_features = features_per_split(self.max_features, X_binned.shape[1])
        trees = [grow_tree(X_binned, y, weight, n_classes, max_features=max_features, seed=seed, **settings)
                 for weight, seed in bagged(self, X_binned, y)]
        return TreeEnsemble.from_trees(trees, [1] * self.n_trees, X_binned.shape[1], n_classes)


def bagged(forest, X_binned, y):
    """Per tree of ``forest``: (sample multiplicities, seed of its split features), drawn from ``random_state``."""
    rng = np.random.default_rng(forest.random_state)
    for _ in range(forest.n_trees):
        if forest.bootstrap:
            weight = np.bincount(rng.integers(0, len(y), len(y)), minlength=len(y)).astype(np.uint32)
        else:
            weight = np.ones(len(y), dtype=np.uint32)
        yield weight, int(rng.integers(1, 2**32))


class ForestRegressor(BinnedRegressor):
    """Random forest of binned CART regression trees: bootstrap samples, a random feature subset at every split,
    the mean of the trees' leaf codes (sum over the trees, divided at decoding).

    Parameters are :class:`ForestClassifier`'s but ``criterion`` and ``leaf_values`` (squared error, int16
    codes); ``max_features`` defaults to 1.0 (every feature, as scikit-learn's regressor forest)."""

    def __init__(self, n_trees: int = 10, max_depth: int = 8, min_samples_leaf: int = 1,
                 max_nodes: int | None = None, max_features=1.0, bootstrap: bool = True, max_bins: int = 255,
                 binning: str = "quantile", input_dtype: str = "float32", random_state: int = 0):
        self.n_trees = n_trees
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_nodes = max_nodes
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.max_bins = max_bins
        self.binning = binning
        self.input_dtype = input_dtype
        self.random_state = random_state

    def _check_params(self) -> None:
        check_integer(self, "n_trees", 1, 255)
        super()._check_params()

    def _grow(self, X_binned, codes) -> list:
        max_features = features_per_split(self.max_features, X_binned.shape[1])
        return [grow_regression_tree(X_binned, codes, weight, max_features=max_features, seed=seed,
                                     **tree_settings(self))
                for weight, seed in bagged(self, X_binned, codes)]


def features_per_split(max_features, n_features: int) -> int:
    if max_features is None:
        return n_features
    if max_features == "sqrt":
        return max(1, int(np.sqrt(n_features)))
    if max_features == "log2":
        return max(1, int(np.log2(n_features)))
    if isinstance(max_features, (int, np.integer)) and not isinstance(max_features, bool) and 1 <= max_features <= n_features:
        return int(max_features)
    if isinstance(max_features, float) and 0.0 < max_features <= 1.0:
        return max(1, int(max_features * n_features))
    raise ValueError(f"max_features={max_features!r} must be 'sqrt', 'log2', None, an int in 1..{n_features} "
                     "or a fraction in (0, 1]")


SPEC = LearnerSpec(
    name="forest", cls=ForestClassifier, regressor=ForestRegressor, regressor_runtime=("es_fixed",), summary="a bagged forest of CART trees, soft voting (frozen)",
    options=TREE_OPTIONS + (LEAF_VALUES_OPTION, Option("--n-trees", "n_trees", int, "number of trees (1..255)", "T"),
                            Option("--seed", "random_state", int, "random seed", "S")),
    learning=False, online=False, runtime=("es_common", "es_infer"), template="frozen.c.j2",
    context=tree_context, tables=tree_tables, ladder=DEPTH_LADDER, worst_case=tree_worst_case)
