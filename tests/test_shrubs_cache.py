"""Shrub Ensembles: the cached state (leaves per window row, sorted lists, Gram sums) against a recomputation,
the compiled host fast path against the plain one, and C writes that stay inside their regions."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import ShrubEnsemble
from edgestream.data import make_stream
from edgestream.learners.shrubs import STATE
from edgestream.simulate import RuntimeLearner

GUARD = 64  # canary bytes after every region


def ready(learner, X, classes):
    return learner.fit_bins(X).set_classes(classes)


def active_caches(learner):
    slots = learner.max_shrubs + 1
    used = [int(r) // learner.nodes_per_shrub for r in learner.roots[: learner.n_shrubs]]
    rows = learner.count
    return {"sorted_rows": learner.sorted_rows.reshape(-1, learner.window_size)[:, :rows].copy(),
            "leaf_index": learner.leaf_index.reshape(-1, slots)[:rows][:, used].copy(),
            "gram": learner.gram.reshape(slots, slots)[np.ix_(used, used)].copy(),
            "label_sum": learner.label_sum[used].copy()}


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 8), st.integers(0, 5), st.integers(1, 3), st.integers(0, 2**31),
       st.sampled_from(["gini", "entropy"]))
def test_incremental_caches_equal_a_recomputation(window, shrubs, depth, every, seed, criterion):
    X, y = make_stream("sea", 150, seed=seed % 1000)
    learner = ready(ShrubEnsemble(window_size=window, max_shrubs=shrubs, max_depth=depth, update_every=every,
                                  criterion=criterion), X, np.unique(y))
    for x, label in zip(X, y):
        learner.learn_one(x, label)
    incremental = active_caches(learner)
    learner.rebuild_caches()
    rebuilt = active_caches(learner)
    for name in incremental:
        assert np.array_equal(incremental[name], rebuilt[name]), name
    keys = learner.window_bins[:learner.count].astype(np.int64) * 65536 + np.arange(learner.count)[:, None]
    assert np.array_equal(incremental["sorted_rows"], np.argsort(keys, axis=0).T)


def test_fast_host_path_learns_and_predicts_like_the_binned_path():
    X, y = make_stream("sea", 600, seed=7)
    X[::17, 1] = np.nan
    fast = ready(ShrubEnsemble(window_size=32, max_shrubs=6, allow_missing=True), X, np.unique(y))
    plain = ready(ShrubEnsemble(window_size=32, max_shrubs=6, allow_missing=True), X, np.unique(y))
    for x, label in zip(X, y):
        bins = plain.transform(x[None])
        assert fast.predict_one(x) == plain.classes_[np.argmax(plain.predict_proba_bins(bins)[0])]
        fast.learn_one(x, label)
        plain.learn_bins(bins[0], plain.encode_label(label))
    for name in ("nodes", "weights", "roots", "window_bins", "gram"):
        assert np.array_equal(getattr(fast, name), getattr(plain, name)), name
    strict = ready(ShrubEnsemble(window_size=8), X, np.unique(y))
    try:
        strict.learn_one(X[0], y[0])
        raise AssertionError("NaN accepted without allow_missing")
    except ValueError as error:
        assert "feature 1 of row 0 is NaN" in str(error)
    try:
        strict.learn_one(X[1], 7)
        raise AssertionError("unknown label accepted")
    except ValueError as error:
        assert "not one of the configured classes" in str(error)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.integers(1, 6), st.integers(0, 8), st.integers(2, 5), st.integers(0, 2**31),
       st.sampled_from(["gini", "entropy"]))
def test_c_runtime_writes_nothing_outside_its_regions(window, shrubs, depth, n_classes, seed, criterion):
    rng = np.random.default_rng(seed)
    learner = ShrubEnsemble(window_size=window, max_shrubs=shrubs, max_depth=depth, criterion=criterion,
                            max_bins=255)
    learner.fit_bins(rng.normal(size=(400, 4))).set_classes(np.arange(n_classes))
    device = RuntimeLearner(learner)
    guarded = {}
    for name, region in device.regions.items():  # the same regions, each followed by canary bytes
        raw = np.full(region.nbytes + GUARD, 0xA5, dtype=np.uint8)
        raw[: region.nbytes] = 0
        guarded[name] = raw
        setattr(device.model, name, device.ffi.cast(f"{STATE_TYPES[name]} *", device.ffi.from_buffer(raw)))
    X = rng.normal(size=(120, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    bins = learner.bins_.transform(X)
    for row in bins:
        assert device.learn(row, int(rng.integers(0, n_classes))) == 0
    for name, raw in guarded.items():
        assert (raw[-GUARD:] == 0xA5).all(), name
    assert guarded["window_bins"][:-GUARD].any() and not device.regions["window_bins"].any()  # ran on the copies


STATE_TYPES = {region.name: region.c_type for region in STATE.regions}
