"""Shrub Ensembles: the cached state (leaves per window row, sorted lists, Gram sums) against a recomputation, the
C's recomputation against the specification's, and C writes that stay inside their regions."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import ShrubEnsemble
from edgestream.data import make_stream
from edgestream.learners.shrubs import CACHE_ARRAYS, STATE, STATE_ARRAYS
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


def test_c_rebuild_and_learning_equal_the_specification_where_uint32_sums_wrap():
    """Leaf values of a restored state may make a row's Gram term wrap at 2**32 (20 classes at 30000 each):
    the C's rebuild and the learning steps after it wrap as the specification does."""
    rng = np.random.default_rng(5)
    learner = ShrubEnsemble(window_size=24, max_shrubs=4, max_depth=3, max_bins=16)
    learner.fit_bins(rng.normal(size=(300, 3))).set_classes(np.arange(20))
    for row in learner.transform(rng.normal(size=(40, 3))):
        learner.learn_bins(row, int(rng.integers(0, 20)))
    saved = learner.saved_arrays()
    saved["leaf_values"][:] = 30000
    learner.restore_arrays(saved)
    device = RuntimeLearner(learner).load_export(learner)
    for name in CACHE_ARRAYS:
        device.regions[name][...] = 0xA5  # stale bytes the rebuild must replace
    device.lib.es_shrubs_rebuild(device.model)
    assert int(learner.gram.max()) == learner.count * ((20 * 30000**2 % 2**32) >> 15)  # each row's term wrapped
    bins = learner.transform(rng.normal(size=(60, 3)))
    for step, row in enumerate(bins):
        for name in STATE_ARRAYS + CACHE_ARRAYS:
            assert np.array_equal(device.regions[name], getattr(learner, name).reshape(-1)), (step, name)
        label = int(rng.integers(0, 20))
        assert device.learn(row, label) == 0
        learner.learn_bins(row, label)
    assert np.array_equal(device.predict_proba(bins), learner.predict_proba_bins(bins))


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
