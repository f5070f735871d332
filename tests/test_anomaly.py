"""Anomaly detection on the device: Half-Space Trees on the task seam. Parity of the specification, the compiled
engine and the compile-once C runtime after every step; the memory bound; the threshold; bad input; ROC-AUC and
speed beside River's HalfSpaceTrees; the CLI end to end."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_twin import assert_same_state
from edgestream import learners
from edgestream.learners import HalfSpaceTrees
from edgestream.learners.hst import HISTOGRAM_BINS, calibrated_threshold, histogram_threshold
from edgestream.simulate import RuntimeLearner
from edgestream.task import ANOMALY, FLAG, NEVER, anomaly_metrics, roc_auc, split_output

ES_ERR_INPUT = 5
finite = st.floats(min_value=-1e4, max_value=1e4, width=32, allow_subnormal=False)


@st.composite
def streams(draw, max_rows: int = 60):
    """Rows (some far outside the first rows' range), the rows the work range is fitted on, a small configuration
    whose windows swap within the stream."""
    d = draw(st.integers(1, 3))
    n = draw(st.integers(2, max_rows))
    X = np.array(draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=n, max_size=n)), np.float32)
    X[0] = X[0] + 1  # the first two rows differ on every feature: a work range can be fitted
    X[1] = X[0] - np.float32(2)
    params = dict(n_trees=draw(st.integers(1, 4)), height=draw(st.integers(1, 4)), window=draw(st.integers(10, 14)),
                  false_alarms=draw(st.sampled_from([0.01, 0.2, 0.49])), seed=draw(st.integers(0, 2**32 - 1)))
    return params, X, draw(st.integers(2, n))


def specification(params, X, start) -> HalfSpaceTrees:
    learner = HalfSpaceTrees(**params)
    learner.use_engine = False
    return learner.start(X[:start])


@settings(max_examples=40, deadline=None)
@given(streams())
def test_engine_and_c_give_the_specifications_score_and_state_after_every_step(stream):
    """Property: before and after every learning step the output (score and flag) of the Python specification,
    the compiled engine and the C runtime are one integer, and their states are the same bits."""
    params, X, start = stream
    spec = specification(params, X, start)
    engine = copy.deepcopy(spec)
    engine.use_engine = True
    device = RuntimeLearner(spec).load_export(spec)
    for i, x in enumerate(X):
        expected = int(spec.predict_encoded(x[None])[0])
        assert engine.predict_raw(x[None])[0] == expected, f"row {i}: engine"
        assert device.predict_raw_status(x) == (0, expected), f"row {i}: C"
        spec.learn_encoded(x)
        engine.learn_row(x)
        assert device.learn(x, 0) == 0
        assert_same_state(engine, spec, f"row {i}")
        arrays, counters = spec.device_state()
        assert device.counter_values() == counters, f"counters row {i}"
        for name in ("reference", "latest", "histogram"):
            assert np.array_equal(arrays[name], device.regions[name]), f"{name} row {i}"


@settings(max_examples=30, deadline=None)
@given(streams(max_rows=40))
def test_the_state_is_bounded_by_the_configuration_whatever_the_stream(stream):
    """Property (memory): the state's bytes follow from the configuration alone, and no mass ever exceeds the
    window, however long the stream runs."""
    params, X, start = stream
    learner = HalfSpaceTrees(**params).start(X[:start])
    t, h, d = params["n_trees"], params["height"], X.shape[1]
    internal, nodes = t * (2**h - 1), t * (2 ** (h + 1) - 1)
    regions = 4 * internal + 2 * 2 * nodes + 2 * HISTOGRAM_BINS + internal
    assert learner.state_bytes() == -(-regions // 8) * 8 + 16  # then the counters: uint64 + 2 uint16 + uint8
    for _ in range(3):
        learner.partial_fit(X)
    arrays, counters = learner.device_state()
    assert learner.state_bytes() == HalfSpaceTrees(**params).start(X[:start]).state_bytes()
    assert max(arrays["reference"].max(), arrays["latest"].max()) <= params["window"]
    assert counters["filled"] < params["window"] and counters["n_learned"] == 3 * len(X)


@settings(max_examples=4, deadline=None)
@given(streams(max_rows=40))
def test_a_bundle_scores_as_python_and_its_state_is_sizeof(tmp_path_factory, stream):
    """Property: a generated bundle compiled with cffi gives Python's score and flag on every row of a
    test-then-train run from the exported state, and its state takes the bytes the description says."""
    from edgestream.export import export_bundle
    from edgestream.simulate import load_bundle

    params, X, start = stream
    learner = HalfSpaceTrees(**params).start(X[:start])
    learner.partial_fit(X[: len(X) // 2])
    learner.calibrate(learner.score_samples(X))
    bundle = load_bundle(export_bundle(learner, tmp_path_factory.mktemp("bundle") / "b", name="hstb"))
    assert bundle.state_size() == learner.state_bytes()
    assert int(bundle.lib.hstb_threshold()) == learner.threshold
    outputs = bundle.test_then_train_raw(X)
    assert np.array_equal(outputs, learner.test_then_train(X))
    assert np.array_equal(bundle.predict_raw(X), learner.predict_raw(X))
