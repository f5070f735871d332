"""The C shrub ensemble learns exactly like the Python specification: state and predictions after every step."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import ShrubEnsemble
from edgestream.learners.shrubs import STATE as SPEC
from engine_twin import EngineTwin
from edgestream.simulate import RuntimeLearner

STATE = tuple(r.name for r in SPEC.regions if r.group != "scratch")


@st.composite
def shrub_streams(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_features = draw(st.integers(1, 5))
    n_classes = draw(st.integers(2, 4))
    n_rows = draw(st.integers(1, 250))
    learner = ShrubEnsemble(
        window_size=draw(st.integers(1, 40)),
        max_shrubs=draw(st.integers(1, 8)),
        max_depth=draw(st.integers(0, 4)),
        step_size=draw(st.one_of(st.just("adaptive"), st.floats(0.01, 200.0))),
        burnin=draw(st.integers(1, 6)),
        update_every=draw(st.integers(1, 4)),
        criterion=draw(st.sampled_from(["gini", "entropy"])),
        min_samples_leaf=draw(st.integers(1, 4)),
        max_bins=draw(st.sampled_from([2, 4, 16, 255])),
    )
    least = learner.min_work_per_call(n_features, n_classes)  # spread: the automatic, 0, the least, a little more
    learner.work_per_call = draw(st.sampled_from([None, 0, least, least + 7]))
    X = rng.normal(size=(n_rows, n_features))
    if draw(st.booleans()):  # missing values: bin 255 and thresholds up to 254
        X[rng.random(X.shape) < 0.2] = np.nan
    drift = np.arange(n_rows) > n_rows // 2
    y = ((np.nan_to_num(X[:, 0]) > 0) ^ drift).astype(int) % n_classes
    noise = rng.random(n_rows) < 0.2
    y[noise] = rng.integers(0, n_classes, noise.sum())
    calibration = rng.normal(size=(600, n_features))  # enough distinct values to fill all 255 bins
    learner.fit_bins(calibration).set_classes(np.arange(n_classes))
    return learner, X, y


def assert_same_state(learner, device):
    for name in STATE:
        python_state = getattr(learner, name).reshape(-1)
        assert np.array_equal(device.regions[name], python_state), name
    assert device.counter_values() == {f.name: getattr(learner, f.name) for f in SPEC.counters}


@settings(max_examples=200)
@given(shrub_streams())
def test_c_learns_and_predicts_exactly_like_python(stream):
    learner, X, y = stream
    device, twin = RuntimeLearner(learner), EngineTwin(learner)
    twin.learner.allow_missing = True  # the stream's NaN rows are learned as their missing bin, as here
    bins = learner.bins_.transform(X)
    for i, (row, label) in enumerate(zip(bins, y)):
        expected = int(np.argmax(learner.predict_proba_bins(row)[0]))
        assert device.learn(row, label) == 0
        learner.learn_bins(row, label)
        assert_same_state(learner, device)
        twin.step(X[i], int(label), learner, expected, f"row {i}")
        assert np.array_equal(device.predict_proba(bins[:5]), learner.predict_proba_bins(bins[:5]))
    assert np.array_equal(device.predict_proba(bins), learner.predict_proba_bins(bins))
