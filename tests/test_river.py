"""The online learners in River: dict rows, a cold start from a warm-up buffer, progressive_val_score unchanged."""

import itertools

import numpy as np
import pytest
from river import base, datasets, evaluate, metrics

import edgestream
from edgestream import HoeffdingTreeClassifier, IncrementalRandomForest, OnlineBLSClassifier, ShrubEnsemble

ONLINE = [ShrubEnsemble(), OnlineBLSClassifier(feature_nodes=6, enhancement_nodes=12), HoeffdingTreeClassifier(),
          IncrementalRandomForest(n_trees=2)]


@pytest.mark.parametrize("model", ONLINE, ids=lambda m: type(m).__name__)
def test_progressive_val_score_takes_them_unchanged(model):
    assert isinstance(model, base.Classifier) and getattr(edgestream, type(model).__name__) is type(model)
    model = model.clone() if hasattr(model, "clone") else type(model)(**model.get_params())
    accuracy = evaluate.progressive_val_score(itertools.islice(datasets.Phishing(), 300), model, metrics.Accuracy())
    assert accuracy.get() > 0.65  # the warm-up rows count too
    assert list(model.feature_names_in_) == list(next(iter(datasets.Phishing()))[0])


def stream(n=250, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where(X[:, 0] + X[:, 1] > 0, "up", "down")


@pytest.mark.parametrize("cls", [ShrubEnsemble, HoeffdingTreeClassifier])
def test_cold_start_learns_the_warm_up_like_start_then_rows(cls):
    X, y = stream()
    names = ["a", "b", "c"]
    cold = cls()
    cold.warm_up = 50
    for row, label in zip(X, y):
        assert cold.predict_one(dict(zip(names, row))) in (None, "up", "down")
        cold.learn_one(dict(reversed(list(zip(names, row)))) if label == "up" else dict(zip(names, row)), label)
    first_reversed = y[0] == "up"
    columns = [2, 1, 0] if first_reversed else [0, 1, 2]
    warm = cls().start(X[:50][:, columns], np.unique(y))
    for row, label in zip(X[:, columns], y):
        warm.learn_one(row, label)
    assert list(cold.feature_names_in_) == [names[j] for j in columns]
    assert np.array_equal(cold.predict_proba(X[:, columns]), warm.predict_proba(X[:, columns]))
    probe = dict(zip(names, X[0]))
    assert cold.predict_one(probe) == warm.predict_one(X[0, columns])
    assert cold.predict_proba_one(probe) == warm.predict_proba_one(X[0, columns])
    with pytest.raises(ValueError, match="feature 'd' is not one of the 3 features"):
        cold.learn_one({"a": 1.0, "d": 2.0}, "up")


def test_warm_up_predicts_the_most_frequent_label_and_waits_for_two_classes():
    model = ShrubEnsemble()
    model.warm_up = 3
    assert model.predict_one({"x": 1.0}) is None and model.predict_proba_one({"x": 1.0}) == {}
    for value in range(5):
        model.learn_one({"x": float(value)}, 1)
    assert not hasattr(model, "classes_") and model.predict_one({"x": 0.0}) == 1  # one class so far: still waiting
    model.learn_one({"x": 9.0}, 0)
    assert model.classes_.tolist() == [0, 1] and model.count == 6
