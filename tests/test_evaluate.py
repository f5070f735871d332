import json
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from river import stream as river_stream
from river import tree as river_tree

from edgestream.data import make_stream
from edgestream.evaluate import (RiverAdapter, compare_predictions, deep_sizeof, no_prediction, plot_curves,
                                 prequential)


class LastLabel:
    """Predicts the label of the previous row; nothing before the first."""

    def __init__(self):
        self.last = None

    def predict_one(self, x):
        return self.last

    def learn_one(self, x, y):
        self.last = y


class Majority:
    """Predicts the most frequent label so far (the first seen on ties); nothing before the first."""

    def __init__(self):
        self.counts = Counter()

    def predict_one(self, x):
        return self.counts.most_common(1)[0][0] if self.counts else None

    def learn_one(self, x, y):
        self.counts[y] += 1


class Constant:
    def __init__(self, value):
        self.value = value

    def predict_one(self, x):
        return self.value

    def learn_one(self, x, y):
        pass


def rows(n):
    return np.zeros((n, 2))


def test_last_label_by_hand():
    y = np.array([0, 0, 1, 1, 1, 0])
    result = prequential(LastLabel(), rows(6), y, window=4)
    # predictions: None, 0, 0, 1, 1, 1 -> hits: no, yes, no, yes, yes, no
    assert (result.n, result.correct, result.accuracy) == (6, 3, 0.5)
    assert result.curve == [0.5, 0.5]  # 2 of the first 4, then 1 of the last (partial) 2
    assert result.predictions.dtype == y.dtype
    assert result.predictions.tolist() == [np.iinfo(np.int64).min, 0, 0, 1, 1, 1]


def test_majority_by_hand():
    y = np.array([1, 0, 0, 0, 1, 1, 1])
    result = prequential(Majority(), rows(7), y, window=3)
    # majority before each row (ties go to the label seen first): None, 1, 1, 0, 0, 0, 1
    assert result.predictions.tolist()[1:] == [1, 1, 0, 0, 0, 1]
    assert result.correct == 2  # rows 3 and 6
    assert result.curve == [0.0, 1 / 3, 1.0]


def test_learner_sees_each_row_after_predicting_it():
    seen = []

    class Spy(Constant):
        def predict_one(self, x):
            seen.append(("predict", x.tolist()))
            return 0

        def learn_one(self, x, y):
            seen.append(("learn", x.tolist(), y))

    X = np.arange(6.0).reshape(3, 2)
    prequential(Spy(0), X, np.array([5, 6, 7]))
    assert seen == [("predict", [0.0, 1.0]), ("learn", [0.0, 1.0], 5), ("predict", [2.0, 3.0]),
                    ("learn", [2.0, 3.0], 6), ("predict", [4.0, 5.0]), ("learn", [4.0, 5.0], 7)]


@pytest.mark.parametrize("y, sentinel", [
    (np.array([1.5, 2.5]), "nan"),
    (np.array([3, 4], dtype=np.uint8), 255),
    (np.array(["up", "down"]), ""),
])
def test_missing_predictions_use_the_dtype_sentinel(y, sentinel):
    result = prequential(LastLabel(), rows(2), y)
    assert result.predictions.dtype == y.dtype
    first = result.predictions[0]
    assert np.isnan(first) if sentinel == "nan" else first == sentinel
    assert result.correct == 0


def test_predictions_that_do_not_fit_the_label_dtype_become_objects():
    result = prequential(Constant("up"), rows(3), np.array([1, 2, 3]))
    assert result.predictions.dtype == object and result.predictions.tolist() == ["up"] * 3
    assert no_prediction(bool) is None


def test_compare_predictions():
    y = np.array([1, 0, 0, 0, 1, 1, 1])
    last, majority = prequential(LastLabel(), rows(7), y), prequential(Majority(), rows(7), y)
    assert compare_predictions(last, prequential(LastLabel(), rows(7), y)) == 0  # both miss row 0 alike
    # last: None 1 0 0 0 1 1 / majority: None 1 1 0 0 0 1
    assert compare_predictions(last, majority) == 2
    floats = prequential(LastLabel(), rows(7), y.astype(float))
    assert compare_predictions(floats, prequential(LastLabel(), rows(7), y.astype(float))) == 0
    with pytest.raises(ValueError, match="7 rows against 6"):
        compare_predictions(last, prequential(LastLabel(), rows(6), y[:6]))


@given(st.lists(st.integers(0, 2), min_size=1, max_size=60), st.integers(1, 20))
def test_scores_agree_with_each_other(labels, window):
    y = np.array(labels)
    result = prequential(LastLabel(), rows(len(y)), y, window=window)
    assert result.correct == int((y[1:] == y[:-1]).sum())
    assert len(result.curve) == -(-len(y) // window)
    sizes = [min(window, len(y) - start) for start in range(0, len(y), window)]
    assert sum(a * s for a, s in zip(result.curve, sizes)) == pytest.approx(result.correct)


@pytest.mark.parametrize("X, y, window, message", [
    (np.zeros((3, 2)), np.zeros(2), 10, "shape"),
    (np.zeros(3), np.zeros(3), 10, "shape"),
    (np.zeros((0, 2)), np.zeros(0), 10, "empty"),
    (np.zeros((3, 2)), np.zeros(3), 0, "window=0"),
])
def test_bad_input(X, y, window, message):
    with pytest.raises(ValueError, match=message):
        prequential(LastLabel(), X, y, window=window)


def test_to_json_and_progress(capsys):
    result = prequential(LastLabel(), rows(5), np.array([0, 0, 1, 1, 1]), window=2, progress=True, desc="toy")
    report = json.loads(json.dumps(result.to_json()))
    assert {k: report[k] for k in ("n", "correct", "accuracy", "window", "curve")} == {
        "n": 5, "correct": 3, "accuracy": 0.6, "window": 2, "curve": [0.5, 0.5, 1.0]}
    assert report["samples_per_second"] > 0
    assert "toy" in capsys.readouterr().err


def test_river_adapter_matches_river_on_dicts():
    X, y = make_stream("blobs", 300, seed=3)
    names = [f"f{j}" for j in range(X.shape[1])]
    adapter = RiverAdapter(river_tree.HoeffdingTreeClassifier(grace_period=50), names)
    result = prequential(adapter, X, y, window=100)

    model, expected = river_tree.HoeffdingTreeClassifier(grace_period=50), []
    for x, label in river_stream.iter_array(X, y.tolist(), feature_names=names):
        expected.append(model.predict_one(x))
        model.learn_one(x, label)
    assert expected[0] is None and result.predictions[0] == no_prediction(y.dtype)
    assert result.predictions[1:].tolist() == expected[1:]
    assert result.accuracy > 0.8
    assert adapter.state_bytes() == model._raw_memory_usage > 0


def test_deep_sizeof_is_the_fallback_memory_measure():
    adapter = RiverAdapter(Majority(), ["a"])
    small = adapter.state_bytes()
    for label in range(100):
        adapter.learn_one(np.zeros(1), label)
    assert adapter.state_bytes() == deep_sizeof(adapter.model) > small + 100 * sys.getsizeof(1000)


def test_plot_curves_writes_a_png(tmp_path):
    y = np.array([0, 1] * 50)
    results = {"last": prequential(LastLabel(), rows(100), y, window=10),
               "majority": prequential(Majority(), rows(100), y, window=7)}
    path = tmp_path / "curves.png"
    plot_curves(results, path, title="toy")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_curves_without_matplotlib(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    result = prequential(LastLabel(), rows(3), np.array([0, 1, 1]))
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_curves({"last": result}, tmp_path / "x.png")
