"""CART on bins and the forest: limits, tie-breaking, the exact criteria, accuracy and bad input."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from edgestream import ForestClassifier, TreeClassifier
from edgestream._kernels import apply, log2_q16
from edgestream.tree import LEAF_FEATURE, Q15_ONE


def depth_of_every_leaf(ensemble, root=0):
    nodes, depths, stack = ensemble.nodes, [], [(root, 0)]
    while stack:
        i, depth = stack.pop()
        if nodes[i]["feature"] == LEAF_FEATURE:
            depths.append(depth)
        else:
            stack += [(int(nodes[i]["child"]), depth + 1), (int(nodes[i]["child"]) + 1, depth + 1)]
    return depths


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=42)


def test_limits_hold(digits):
    X_train, _, y_train, _ = digits
    for depth in (0, 1, 3, 6):
        tree = TreeClassifier(max_depth=depth).fit(X_train, y_train)
        assert max(depth_of_every_leaf(tree.ensemble_)) <= depth
    tree = TreeClassifier(max_depth=20, max_nodes=31).fit(X_train, y_train)
    assert len(tree.ensemble_.nodes) <= 31
    tree = TreeClassifier(max_depth=20, min_samples_leaf=25).fit(X_train, y_train)
    leaves = apply(tree.ensemble_.nodes, tree.ensemble_.roots, tree.bins_.transform(X_train))[:, 0]
    counts = np.bincount(leaves)
    assert counts[counts > 0].min() >= 25


def test_leaves_hold_q15_class_frequencies():
    X = np.array([[0.0], [0.0], [0.0], [1.0], [1.0], [1.0]])
    y = np.array([0, 0, 1, 1, 1, 2])
    tree = TreeClassifier(max_depth=1).fit(X, y)
    proba = tree.predict_proba_q15(np.array([[0.0], [1.0]]))
    expected = [[(2 * Q15_ONE + 1) // 3, (Q15_ONE + 1) // 3, 0], [0, (2 * Q15_ONE + 1) // 3, (Q15_ONE + 1) // 3]]
    assert proba.tolist() == expected


def test_ties_go_to_lowest_feature_then_lowest_threshold():
    # Features 1 and 2 are identical perfect splitters; feature 0 is noise. The lowest one, 1, must win.
    X = np.array([[5, 0, 0], [3, 0, 0], [5, 1, 1], [3, 1, 1]], dtype=float)
    y = np.array([0, 0, 1, 1])
    tree = TreeClassifier(max_depth=1).fit(X, y)
    assert tree.ensemble_.nodes[0]["feature"] == 1
    # One feature, two equally good thresholds: the lower one wins.
    X = np.array([[0], [1], [2], [3]], dtype=float)
    tree = TreeClassifier(max_depth=1).fit(X, np.array([0, 1, 1, 0]))
    root = tree.ensemble_.nodes[0]
    assert (root["feature"], root["threshold"]) == (0, 0)


def test_integer_log2_is_floor_exact():
    for x in [1, 2, 3, 5, 10, 1000, 65535, 2**31 - 1, 12345678901]:
        exact = math.log2(x) * 65536
        assert math.floor(exact) - 1 <= log2_q16(x) <= math.floor(exact)


def test_criteria_pick_the_informative_split():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))  # fewer distinct values than bins: the split can be exact
    y = (X[:, 2] > 0.3).astype(int)
    for criterion in ("gini", "entropy"):
        tree = TreeClassifier(max_depth=1, criterion=criterion).fit(X, y)
        assert tree.ensemble_.nodes[0]["feature"] == 2
        assert tree.score(X, y) == 1.0


def test_accuracy_matches_scikit_learn_on_digits(digits):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    X_train, X_test, y_train, y_test = digits
    ours = TreeClassifier(max_depth=8).fit(X_train, y_train).score(X_test, y_test)
    theirs = DecisionTreeClassifier(max_depth=8, random_state=0).fit(X_train, y_train).score(X_test, y_test)
    assert ours >= theirs - 0.03
    forest = ForestClassifier(n_trees=10, max_depth=8).fit(X_train, y_train).score(X_test, y_test)
    reference = RandomForestClassifier(10, max_depth=8, random_state=0).fit(X_train, y_train).score(X_test, y_test)
    assert forest >= reference - 0.03
    assert forest > ours


def test_forest_is_deterministic_per_seed(digits):
    X_train, X_test, y_train, _ = digits
    a = ForestClassifier(n_trees=3, random_state=7).fit(X_train, y_train).predict_proba_q15(X_test)
    b = ForestClassifier(n_trees=3, random_state=7).fit(X_train, y_train).predict_proba_q15(X_test)
    c = ForestClassifier(n_trees=3, random_state=8).fit(X_train, y_train).predict_proba_q15(X_test)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_labels_keep_their_kind():
    X = np.arange(6, dtype=float).reshape(-1, 1)
    tree = TreeClassifier().fit(X, np.array(["down", "down", "down", "up", "up", "up"]))
    assert tree.predict(X).tolist() == ["down"] * 3 + ["up"] * 3
    assert tree.get_params()["max_depth"] == 8
    assert tree.set_params(max_depth=3).max_depth == 3


def test_missing_values_get_their_own_branch():
    X = np.array([[1.0], [2.0], [np.nan], [np.nan]])
    tree = TreeClassifier(max_depth=2).fit(X, np.array([0, 0, 1, 1]))
    assert tree.predict(np.array([[np.nan], [1.5], [-np.inf], [np.inf]])).tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.zeros((0, 2)), np.zeros(0), "0 sample"),
        (np.zeros(4), np.zeros(4), "Expected 2D array"),
        (np.zeros((4, 2)), np.zeros(3), r"inconsistent numbers of samples: \[4, 3\]"),
        (np.zeros((4, 2)), np.array([0, 1, np.nan, 1]), "y contains NaN"),
        (np.zeros((4, 2)), np.ones(4), "one class"),
        (np.zeros((300, 1)), np.arange(300), "300 classes"),
        (np.zeros((4, 300)), np.array([0, 1, 0, 1]), "300 features"),
        (np.array([["a", "b"]] * 4), np.array([0, 1, 0, 1]), "could not convert string to float"),
    ],
)
def test_bad_training_input_is_named(X, y, message):
    with pytest.raises(ValueError, match=message):
        TreeClassifier().fit(X, y)


def test_bad_settings_are_named():
    X, y = np.arange(8.0).reshape(-1, 1), np.array([0, 1] * 4)
    for params, message in [({"max_depth": -1}, "max_depth=-1"), ({"criterion": "mse"}, "criterion='mse'"),
                            ({"min_samples_leaf": 0}, "min_samples_leaf=0"), ({"max_nodes": 70000}, "max_nodes=70000")]:
        with pytest.raises(ValueError, match=message):
            TreeClassifier(**params).fit(X, y)
    with pytest.raises(ValueError, match="n_trees=0"):
        ForestClassifier(n_trees=0).fit(X, y)
    with pytest.raises(ValueError, match="max_features='half'"):
        ForestClassifier(max_features="half").fit(X, y)
    with pytest.raises(RuntimeError, match="not fitted"):
        TreeClassifier().predict(X)
    with pytest.raises(ValueError, match="X has 3 features, but TreeClassifier is expecting 1"):
        TreeClassifier().fit(X, y).predict(np.zeros((2, 3)))
