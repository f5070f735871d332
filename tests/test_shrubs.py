"""Shrub Ensembles: the algorithm's behaviour, bad input, memory bounds and learning bundles."""

from fractions import Fraction
from math import gcd

import cffi
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from edgestream import learners
from edgestream.data import make_stream
from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.learners.shrubs import STATE
from edgestream.simulate import header_cdef
from edgestream.state import runtime_header_path
from edgestream.export import export_bundle
from edgestream.modelfile import load_model, save_model
from edgestream.learners.shrubs import (SPREAD_VARIANT, ShrubEnsemble, fraction_key, job_pieces, most_units_per_call,
                                       simplex_q15)
from edgestream.simulate import RuntimeLearner, load_bundle
from edgestream.tree import LEAF_FEATURE, Q15_ONE


def ready(learner, X=None, classes=(0, 1), seed=0):
    """Bins fitted on X (or on 300 normal rows of 3 features) and the given classes."""
    X = np.random.default_rng(seed).normal(size=(300, 3)) if X is None else X
    return learner.fit_bins(X).set_classes(list(classes))


@given(st.lists(st.integers(-(2**17), 2**17), min_size=1, max_size=65))
def test_simplex_projection_is_exact_and_keeps_order(values):
    u = sorted(values, reverse=True)
    w = simplex_q15(u)
    assert sum(w) == Q15_ONE
    assert min(w) >= 0
    assert w == sorted(w, reverse=True)
    real = np.asarray(u, dtype=float) / Q15_ONE  # the real-valued projection, for comparison
    cumulative = np.cumsum(real)
    rho = max(j for j in range(1, len(u) + 1) if real[j - 1] + (1 - cumulative[j - 1]) / j > 0)
    expected = np.maximum(real + (1 - cumulative[rho - 1]) / rho, 0) * Q15_ONE
    assert np.abs(np.asarray(w) - expected).max() <= 1.0 + 1e-9


@given(st.integers(2, 2**22), st.integers(2, 2**22), st.integers(0, 2**12 - 1), st.booleans())
def test_split_keys_order_the_closest_fractions_exactly(den_a, den_b, whole, equal):
    """Gini scores are fractions below 2**13 with denominators up to 2**22: two different ones are at least
    1 / (den_a den_b) apart, as neighbours a/b, c/d with a d - b c = 1 are; equal ones get equal keys."""
    assume(gcd(den_a, den_b) == 1)
    num_a = pow(den_b, -1, den_a)  # num_a den_b - num_b den_a = 1
    num_b = (num_a * den_b - 1) // den_a
    if equal:
        num_b, den_b = num_a * 2, den_a * 2
    num_a, num_b = num_a + whole * den_a, num_b + whole * den_b
    keys = fraction_key(np.array([num_a, num_b]), np.array([den_a, den_b]))
    assert np.sign(keys[0] - keys[1]) == np.sign(Fraction(num_a, den_a) - Fraction(num_b, den_b))


def test_learns_a_drifting_concept_and_forgets_the_old_one():
    X, y = make_stream("sea", 4000, seed=3)
    learner = ready(ShrubEnsemble(window_size=64, max_shrubs=16, max_depth=4), X,
                    classes=np.unique(y))
    correct = []
    for x, label in zip(X, y):
        correct.append(learner.predict_one(x) == label)
        learner.learn_one(x, label)
    majority = np.mean(y == 0)  # about 0.62; the label noise caps accuracy at 0.9
    assert np.mean(correct) > majority + 0.12
    assert np.mean(correct[-500:]) > majority + 0.12  # after the last drift it has adapted


def test_ensemble_respects_max_shrubs_and_weights_sum_to_one():
    X, y = make_stream("hyperplane", 500, seed=1)
    learner = ready(ShrubEnsemble(window_size=16, max_shrubs=3), X, classes=np.unique(y))
    for x, label in zip(X, y):
        learner.learn_one(x, label)
        assert 1 <= learner.n_shrubs <= 3
        assert int(learner.weights[: learner.n_shrubs].astype(int).sum()) == Q15_ONE
        assert (learner.weights[: learner.n_shrubs] > 0).all()


def test_update_every_adds_shrubs_only_that_often():
    learner = ready(ShrubEnsemble(update_every=5, max_shrubs=64))
    X = np.random.default_rng(1).normal(size=(23, 3))
    for i, x in enumerate(X):
        learner.learn_one(x, i % 2)
    assert learner.since_update == 3
    assert learner.n_shrubs <= 23 // 5


def test_empty_ensemble_predicts_uniform():
    learner = ready(ShrubEnsemble(), classes=(0, 1, 2))
    assert learner.predict_proba_q15(np.zeros((1, 3))).tolist() == [[Q15_ONE // 3] * 3]


@pytest.mark.parametrize("params, message", [
    ({"window_size": 0}, "window_size=0"), ({"max_shrubs": 0}, "max_shrubs=0"), ({"max_depth": 9}, "max_depth=9"),
    ({"step_size": 0}, "step_size=0"), ({"step_size": "fast"}, "step_size='fast'"), ({"burnin": 0}, "burnin=0"),
    ({"criterion": "mse"}, "criterion='mse'"),
])
def test_bad_settings_are_named(params, message):
    """A bad setting is named when the learner starts (fit, start, the registry's make), not when it is made or
    set (scikit-learn's rule)."""
    learner = ShrubEnsemble().set_params(**params)
    assert ShrubEnsemble(**params).get_params() == learner.get_params()
    X, y = make_stream("sea", 40, seed=0)
    for start in (lambda: learner.fit(X, y), lambda: ready(learner), lambda: learners.get("shrubs").make(**params)):
        with pytest.raises(ValueError, match=message):
            start()
    assert not hasattr(learner, "bins_")


def test_bad_stream_input_is_named():
    learner = ready(ShrubEnsemble())
    with pytest.raises(ValueError, match="label 7 is not one of the configured classes"):
        learner.learn_one(np.zeros(3), 7)
    with pytest.raises(ValueError, match="NaN"):
        learner.learn_one(np.array([0.0, np.nan, 1.0]), 1)
    with pytest.raises(ValueError, match="fitted on 3"):
        learner.learn_one(np.zeros(4), 1)
    with pytest.raises(RuntimeError, match="fit_bins"):
        ShrubEnsemble().learn_row(np.zeros(3), 1)  # (learn_one would buffer the row for a cold start)
    with pytest.raises(ValueError, match=r"a binned row has shape \(4,\), expected \(3,\)"):
        learner.learn_bins(np.zeros(4, dtype=np.uint8), 1)
    with pytest.raises(ValueError, match=r"label index 2 is outside 0\.\.1"):
        learner.learn_bins(np.zeros(3, dtype=np.uint8), 2)
    assert learner.count == 0  # nothing was learned from the rejected rows


def test_missing_values_allowed_on_request():
    learner = ready(ShrubEnsemble(allow_missing=True))
    learner.learn_one(np.array([0.0, np.nan, 1.0]), 1)
    assert learner.window_bins[0, 1] == 255


def test_budget_refusal_names_bytes_and_budget():
    board = load_board("stm32f411")
    learner = ShrubEnsemble(window_size=256, max_shrubs=32, max_depth=6)
    with pytest.raises(ValueError, match=r"fits 8,192 bytes of RAM .* the smallest needs [\d,]+ bytes of RAM"):
        plan("shrubs", board, 3, 2, ram=8192, **learner.get_params())
    with pytest.raises(ValueError, match="smallest needs .* bytes"):
        plan("shrubs", board, 8, 2, ram=100)
    for budget in (2048, 8192, 32768):
        chosen = plan("shrubs", board, 6, 2, ram=budget)
        assert ShrubEnsemble(**chosen.params).state_bytes(6, 2) < chosen.ram_bytes <= budget


def test_runtime_header_is_generated_from_the_state_description():
    assert runtime_header_path(STATE).read_text() == STATE.header()


@st.composite
def configs(draw):
    return ShrubEnsemble(window_size=draw(st.integers(1, 300)), max_shrubs=draw(st.integers(1, 64)),
                         max_depth=draw(st.integers(0, 8))), draw(st.integers(1, 40)), draw(st.integers(2, 20))


@settings(max_examples=200)
@given(configs())
def test_layout_equals_sizeof_of_the_generated_state_struct(config):
    learner, n_features, n_classes = config
    ffi = cffi.FFI()
    layout = learner.layout(n_features, n_classes)
    ffi.cdef(header_cdef(["es_shrubs_state.h"]) + layout.state_struct("m"))
    assert ffi.sizeof("m_state") == learner.state_bytes(n_features, n_classes)
    offsets, size = layout.offsets()
    assert all(ffi.offsetof("m_state", name) == offset for name, offset in offsets.items())


@settings(max_examples=100)
@given(st.integers(1, 24), st.integers(1, 6), st.integers(0, 5), st.integers(0, 2**31), st.integers(2, 5))
def test_nothing_leaves_its_pool(window_size, max_shrubs, max_depth, seed, n_classes):
    learner = ready(ShrubEnsemble(window_size=window_size, max_shrubs=max_shrubs, max_depth=max_depth),
                    classes=range(n_classes), seed=seed % 1000)
    rng = np.random.default_rng(seed)
    S, L = learner.nodes_per_shrub, learner.leaves_per_shrub
    for _ in range(60):
        learner.learn_one(rng.normal(size=3), int(rng.integers(0, n_classes)))
        assert learner.n_shrubs <= max_shrubs and learner.count <= window_size
        for root in learner.roots[: learner.n_shrubs].astype(int):
            slot, stack = root // S, [root]
            while stack:
                node = learner.nodes[stack.pop()]
                if node["feature"] == LEAF_FEATURE:
                    assert slot * L <= node["child"] < (slot + 1) * L
                else:
                    assert slot * S < node["child"] < (slot + 1) * S - 1
                    stack += [int(node["child"]), int(node["child"]) + 1]


def test_device_rejects_bad_labels_and_keeps_its_state():
    learner = ready(ShrubEnsemble(window_size=8, max_shrubs=2))
    device = RuntimeLearner(learner)
    bins = learner.bins_.transform(np.random.default_rng(2).normal(size=(10, 3)))
    for i, row in enumerate(bins):
        assert device.learn(row, i % 2) == 0
    before = {name: region.copy() for name, region in device.regions.items()}
    counters = device.counter_values()
    assert device.learn(bins[0], 2) == 3  # ES_ERR_LABEL
    assert device.learn(bins[0], 255) == 3
    assert counters == device.counter_values()
    assert all(np.array_equal(before[name], device.regions[name]) for name in before)


def test_model_file_keeps_the_learning_state(tmp_path):
    X, y = make_stream("hyperplane", 300, seed=4)
    learner = ready(ShrubEnsemble(window_size=16, max_shrubs=4), X, classes=np.unique(y))
    for x, label in zip(X[:200], y[:200]):
        learner.learn_one(x, label)
    copy = load_model(save_model(learner, tmp_path / "se.esm"))
    for x, label in zip(X[200:], y[200:]):
        assert copy.predict_one(x) == learner.predict_one(x)
        copy.learn_one(x, label)
        learner.learn_one(x, label)
    assert np.array_equal(copy.nodes, learner.nodes) and np.array_equal(copy.weights, learner.weights)


def test_bundle_continues_learning_from_the_exported_state(tmp_path):
    X, y = make_stream("sea", 700, seed=5)
    learner = ready(ShrubEnsemble(window_size=24, max_shrubs=6, max_depth=3, criterion="entropy"),
                    X, classes=np.unique(y))
    for x, label in zip(X[:200], y[:200]):
        learner.learn_one(x, label)
    bundle = load_bundle(export_bundle(learner, tmp_path / "bundle", name="learner"))
    assert bundle.state_size() == learner.state_bytes()
    for x, label in zip(X[200:], y[200:]):
        assert np.array_equal(bundle.predict_proba_q15(x[None]), learner.predict_proba_q15(x[None]))
        bundle.learn_one(x, label)
        learner.learn_one(x, label)
    assert bundle.learn_encoded(X[0], 2) == 3  # labels beyond the classes are refused on the device


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2**31), st.integers(1, 64))
def test_two_class_leaves_are_complementary_and_restores_require_it(seed, window_size):
    """Learned 2-class leaves sum to 32768 (the runtime's one-product Gram terms rely on it); a restored state
    whose shrubs reach a leaf that does not is refused (the device's validation agrees: test_checkpoint's
    test_host_and_device_accept_the_same_images)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(150, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=150) > 0).astype(int)
    learner = ready(ShrubEnsemble(window_size=window_size, max_shrubs=4, max_depth=3), X)
    learner.partial_fit(X, y)
    arrays = learner.saved_arrays()
    n = learner.n_shrubs
    nodes = arrays["nodes"][learner.roots[:n].astype(int)]  # the active shrubs' roots
    reached = [int(child) for feature, child in zip(nodes["feature"], nodes["child"]) if feature == LEAF_FEATURE]
    assert (learner.leaf_values.astype(int).sum(axis=1)[learner.leaf_values.any(axis=1)] == Q15_ONE).all()
    if not reached:  # every root split: a leaf further down (the first one of the first shrub's slot)
        reached = [int(learner.roots[0]) // learner.nodes_per_shrub << learner.max_depth]
    arrays["leaf_values"] = arrays["leaf_values"].copy()
    arrays["leaf_values"][reached[0]] = (Q15_ONE // 2, Q15_ONE // 2 - 1)
    with pytest.raises(ValueError, match="sum to 32768"):
        ShrubEnsemble(window_size=window_size, max_shrubs=4, max_depth=3).fit_bins(X).set_classes([0, 1]) \
            .restore_arrays(arrays)


# -- bounded work per call ------------------------------------------------------------------------------------

FOLLOWED = [r.name for r in STATE.regions if r.group not in ("scratch", "queue")]  # regions of the learned state


@st.composite
def spread_pairs(draw):
    """The same shrub ensemble unspread (work_per_call=0) and spread (the automatic, the least or a larger U),
    on the specification, and a stream."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_features, n_classes = draw(st.integers(1, 4)), draw(st.integers(2, 4))
    params = dict(window_size=draw(st.integers(1, 24)), max_shrubs=draw(st.integers(1, 5)),
                  max_depth=draw(st.integers(0, 4)), burnin=draw(st.integers(1, 3)),
                  update_every=draw(st.integers(2, 5)), criterion=draw(st.sampled_from(["gini", "entropy"])),
                  max_bins=draw(st.sampled_from([4, 16])))
    least = ShrubEnsemble(**params).min_work_per_call(n_features, n_classes)
    work = draw(st.sampled_from([None, least, least + draw(st.integers(1, 300))]))
    X = rng.normal(size=(120, n_features))
    y = ((X[:, 0] > 0) ^ (np.arange(120) > 60)).astype(int) % n_classes
    pair = []
    for u in (0, work):
        learner = ready(ShrubEnsemble(**params, work_per_call=u), X, range(n_classes))
        learner.use_engine = False
        pair.append(learner)
    return *pair, learner.bins_.transform(X), y


@settings(max_examples=25, deadline=None)
@given(spread_pairs())
def test_spread_learning_is_the_unspread_one_only_later(pair):
    """Every call runs at most U units, one with work left more than U - w (w: the largest piece), the queue
    never fills, and whenever it is empty with no job under way the spread state is the unspread one."""
    whole, spread, bins, y = pair
    budget, largest = spread.units_per_call_, max(spread._units.values())
    drained = 0
    for row, label in zip(bins, y):
        whole.learn_bins(row, int(label))
        spread.learn_bins(row, int(label))
        assert whole.pending == whole.phase == 0 and len(whole.queue_labels) == 1
        if budget == 0:
            continue
        assert spread.last_units_ <= budget and spread.pending < len(spread.queue_labels)
        if spread.pending or spread.phase:
            assert spread.last_units_ > budget - largest
            continue
        drained += 1
        for name in FOLLOWED:
            assert np.array_equal(getattr(spread, name), getattr(whole, name)), name
        assert [getattr(spread, f.name) for f in STATE.counters if f.name != "queue_head"] == \
               [getattr(whole, f.name) for f in STATE.counters if f.name != "queue_head"]
    assert budget == 0 or drained > 0


def test_work_per_call_default_and_refusal():
    """The automatic U spreads only with update_every > 1, and keeps up with the least queue; a U that does not
    keep up is refused, naming the least."""
    assert ready(ShrubEnsemble()).units_per_call_ == 0
    assert ready(ShrubEnsemble(**SPREAD_VARIANT)).units_per_call_ > 0  # the checkpoint and fuzz tests' variant
    bench = ready(ShrubEnsemble(window_size=64, max_shrubs=16, max_depth=4, update_every=4, burnin=1))
    units = bench._units
    least = bench.min_work_per_call(3)
    assert bench.units_per_call_ == least < units["row"] + 4 * units["train"] + units["terms"] + units["weights"]
    assert 4 * (least - max(units.values()) + 1) >= 4 * units["row"] + 4 * units["train"] + units["terms"] + \
        units["weights"]
    with pytest.raises(ValueError, match=f"work_per_call={least - 1} must be 0 or at least {least}: smaller, the "
                                         "rows pending while a new shrub trains may pile up"):
        ready(ShrubEnsemble(window_size=64, max_shrubs=16, max_depth=4, update_every=4, burnin=1,
                            work_per_call=least - 1))
    with pytest.raises(ValueError, match="work_per_call=-1 must be an integer from 0 to 4294967295"):
        ready(ShrubEnsemble(work_per_call=-1))


@pytest.mark.parametrize("config", [{"window_size": 16, "max_shrubs": 4, "max_depth": 3, "update_every": 3},
                                    {"window_size": 64, "max_shrubs": 16, "max_depth": 4, "update_every": 4,
                                     "burnin": 1},
                                    {"window_size": 32, "max_shrubs": 8, "max_depth": 3, "update_every": 16,
                                     "burnin": 1}])
def test_most_units_per_call_is_the_steady_schedules_largest_call(config):
    """Random labels grow every shrub to full depth: once the schedule repeats, the largest call runs the units
    most_units_per_call (the cost model's worst share) tells, below U (whole pieces rarely fill it)."""
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(400, 3)), rng.integers(0, 2, 400)
    learner = ready(ShrubEnsemble(**config), X)
    learner.use_engine = False
    runs = []
    for row, label in zip(learner.bins_.transform(X), y):
        learner.learn_bins(row, int(label))
        runs.append(learner.last_units_)
    units, budget = learner._units, learner.units_per_call_
    most = most_units_per_call(units["row"], job_pieces(units, config["max_depth"]), config["update_every"], budget)
    assert max(runs[200:]) == most < budget

def test_spread_state_saved_mid_job_restores_and_continues(tmp_path):
    """A state saved while a shrub is half grown (its caches replayed on restore) continues
    exactly as the learner it was saved from: restored on the specification and, through a model file, on the
    engine."""
    X, y = make_stream("sea", 400, seed=2)
    params = dict(window_size=32, max_shrubs=6, max_depth=3, update_every=3)
    learner = ready(ShrubEnsemble(**params), X, (0, 1))
    learner.use_engine = False
    bins = learner.bins_.transform(X)
    i = 0
    while not (learner.phase == 1 and learner.job_level > 0):
        learner.learn_bins(bins[i], int(y[i]))
        i += 1
    restored = ready(ShrubEnsemble(**params), X, (0, 1))
    restored.restore_arrays(learner.saved_arrays())
    restored.use_engine = False
    for region in STATE.regions:
        if region.group != "scratch":
            assert np.array_equal(getattr(restored, region.name), getattr(learner, region.name)), region.name
    save_model(learner, tmp_path / "m.esm")
    on_engine = load_model(tmp_path / "m.esm")
    for row, label in zip(bins[i:i + 40], y[i:i + 40]):
        learner.learn_bins(row, int(label))
        restored.learn_bins(row, int(label))
    on_engine.partial_fit(X[i:i + 40], y[i:i + 40])
    for other in (restored, on_engine):
        saved = other.saved_arrays()
        assert all(np.array_equal(saved[name], values) for name, values in learner.saved_arrays().items())
