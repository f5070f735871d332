"""The compiled host engine learns and predicts exactly like the Python specification, for every learning
learner: the state after every step, every prediction, whole streams in one call, dict rows, and the same errors
for bad input with the state unchanged. (The specification against the device C compiled through cffi, and
under QEMU, is held by each learner's own parity tests; the engine is that C compiled into the package.)"""

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import data, learners
from engine_twin import assert_same_state
from edgestream.evaluate import prequential

LEARNING = [name for name, spec in learners.REGISTRY.items() if spec.state is not None and spec.cls is not None]

# Small configurations that reach their interesting steps within a short stream: new shrubs and a full pool,
# splits and a full node pool, boosting jobs (one spread over calls), forgetting with a refreshed diagonal.
SMALL = {
    "shrubs": [{"window_size": 12, "max_shrubs": 3, "max_depth": 2},
               {"window_size": 5, "max_shrubs": 2, "max_depth": 1, "update_every": 3, "criterion": "entropy",
                "allow_missing": True}],
    "bls": [{"feature_nodes": 4, "enhancement_nodes": 6}, {"feature_nodes": 3, "enhancement_nodes": 0,
                                                          "forgetting": 1.0}],
    "hoeffding": [{"max_leaves": 6, "grace_period": 15}, {"max_leaves": 3, "grace_period": 10,
                                                          "propagation": False, "max_classes": 4,
                                                          "work_per_call": 0}],
    "irf": [{"n_trees": 3, "max_leaves": 4, "grace_period": 15}, {"n_trees": 2, "max_leaves": 4, "grace_period": 8,
                                                                  "work_per_call": 1}],
    "axgb": [{"window_min": 8, "window_max": 32, "members": 3, "max_depth": 2},
             {"window_min": 16, "window_max": 32, "members": 2, "max_depth": 2, "strategy": "push",
              "work_per_call": 600, "drift_detection": False}],
}


def stream(seed: int, n_rows: int, n_classes: int, missing: bool):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 3)) * [1.0, 10.0, 0.1]
    drift = np.arange(n_rows) > n_rows // 2
    y = ((X[:, 0] + X[:, 2] * 10 > 0) ^ drift).astype(int) + (X[:, 1] > 8)
    y = y % n_classes
    if missing:
        X[rng.random(X.shape) < 0.1] = np.nan
    return X, y


def pair(name: str, variant: int, X, classes):
    """The same started learner twice: on the engine, and in the specification."""
    params = SMALL[name][variant % len(SMALL[name])]
    engine = learners.get(name).make(**params)
    start_rows = X[~np.isnan(X).any(axis=1)][:40] if not params.get("allow_missing") else X[:40]
    engine.start(start_rows, classes)
    spec = copy.deepcopy(engine)
    spec.use_engine = False
    return engine, spec


@pytest.mark.parametrize("name", LEARNING)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 90), n_classes=st.integers(2, 3),
       variant=st.integers(0, 1), missing=st.booleans())
def test_every_step_of_the_engine_equals_the_specification(name, seed, n_rows, n_classes, variant, missing):
    params = SMALL[name][variant % len(SMALL[name])]
    X, y = stream(seed, n_rows, n_classes, missing and params.get("allow_missing", False))
    engine, spec = pair(name, variant, X, np.arange(n_classes))
    for row, label in zip(X, y):
        assert engine.predict_one(row) == spec.predict_one(row)
        engine.learn_one(row, label)
        spec.learn_one(row, label)
        assert_same_state(engine, spec)
    assert np.array_equal(engine.predict_proba(X), spec.predict_proba(X))


@pytest.mark.parametrize("name", LEARNING)
def test_a_whole_stream_in_one_call_equals_the_specification_row_by_row(name):
    X, y = stream(7, 400, 3, False)
    engine, spec = pair(name, 0, X, np.arange(3))
    predicted = engine.test_then_train(X, y)
    expected = []
    for row, label in zip(X, y):
        expected.append(spec.predict_one(row))
        spec.learn_one(row, label)
    assert np.array_equal(predicted, np.array(expected))
    assert_same_state(engine, spec)
    learned, reference = pair(name, 0, X, np.arange(3))
    learned.partial_fit(X, y)
    reference.partial_fit(X, y)
    for ours, theirs in zip(learned.saved_arrays().values(), reference.saved_arrays().values()):
        assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("name", LEARNING)
def test_dict_rows_and_a_cold_start_on_the_engine_equal_the_specification(name):
    X, y = data.make_stream("sea", 300, seed=2)
    rows = [dict(zip(["a", "b", "c"], row)) for row in X.tolist()]
    engine, spec = learners.get(name).make(**SMALL[name][0]), learners.get(name).make(**SMALL[name][0])
    spec.use_engine = False
    for row, label in zip(rows, y.tolist()):
        assert engine.predict_one(row) == spec.predict_one(row)
        engine.learn_one(row, label)
        spec.learn_one(row, label)
    assert engine.predict_proba_one(rows[0]) == spec.predict_proba_one(rows[0])
    assert prequential(copy.deepcopy(engine), X, y).correct == prequential(copy.deepcopy(spec), X, y).correct


@pytest.mark.parametrize("name", LEARNING)
def test_the_specification_continues_from_the_engine_and_back(name):
    """Reading a state attribute hands the engine's state back; model files and copies carry it."""
    X, y = stream(3, 300, 2, False)
    engine, spec = pair(name, 0, X, np.arange(2))
    engine.partial_fit(X[:150], y[:150])
    spec.partial_fit(X[:150], y[:150])
    assert "_state_engine" in engine.__dict__
    saved = engine.saved_arrays()  # reads the state: the engine hands it back
    assert "_state_engine" not in engine.__dict__ and engine.summary() == spec.summary()
    assert all(np.array_equal(a, b) for a, b in zip(saved.values(), spec.saved_arrays().values()))
    clone = copy.deepcopy(engine)
    engine.use_engine = False  # the specification continues from the engine's state
    engine.partial_fit(X[150:], y[150:])
    clone.partial_fit(X[150:], y[150:])  # the engine continues from the handed-back state
    spec.partial_fit(X[150:], y[150:])
    for a, b, c in zip(engine.saved_arrays().values(), clone.saved_arrays().values(), spec.saved_arrays().values()):
        assert np.array_equal(a, c) and np.array_equal(b, c)


@pytest.mark.parametrize("name", LEARNING)
def test_bad_rows_and_labels_get_the_specifications_errors_and_change_nothing(name):
    X, y = stream(5, 120, 2, False)
    engine, spec = pair(name, 0, X, np.arange(2))
    engine.partial_fit(X[:60], y[:60])
    spec.partial_fit(X[:60], y[:60])
    before = {name_: values.copy() for name_, values in engine.saved_arrays().items()}
    bad_rows = {"width": X[:1, :2], "nan": np.array([[np.nan, 0.0, 0.0]])}
    for what, row in bad_rows.items():
        with pytest.raises(ValueError) as expected:
            spec.partial_fit(row, [0])
        for call in (lambda: engine.partial_fit(row, [0]), lambda: engine.learn_one(row[0], 0),
                     lambda: engine.predict(row), lambda: engine.test_then_train(row, [0])):
            with pytest.raises(ValueError) as raised:
                call()
            assert str(raised.value) == str(expected.value), what
    with pytest.raises(ValueError) as expected:
        spec.learn_one(X[60], 9)
    for call in (lambda: engine.learn_one(X[60], 9), lambda: engine.partial_fit(X[60:62], [0, 9]),
                 lambda: engine.test_then_train(X[60:62], [0, 9])):
        with pytest.raises(ValueError) as raised:
            call()
        assert str(raised.value) == str(expected.value)
    for name_, values in engine.saved_arrays().items():
        assert np.array_equal(values, before[name_]), name_
