"""HT+AE and IRF+AE: the C runtime (es_hoeffding.c) equals the Python specification bit for bit after every
learning step (class-incremental orders, full pools, forests); the shared float32 approximations; propagation
keeps old classes where the plain tree forgets them; memory bounds; bad input; the CLI and emulated devices."""

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_twin import EngineTwin
from edgestream.export import export_bundle
from edgestream.data import make_stream
from edgestream.learners.hoeffding import (ADAPT_VISITS, ATTEMPT_ARRAYS, DRIFT_DEFAULT, FREE, IDLE, KEPT_LEVELS, LEAF,
                                           ONE, PROPAGATED, REVISIT_ROWS, STATE, HoeffdingTreeClassifier,
                                           IncrementalRandomForest, erf_f32, log_f32)
from edgestream.modelfile import model_bytes, model_from_bytes
from edgestream.simulate import RuntimeLearner, load_bundle, runtime
from edgestream.state import runtime_header_path

ES_ERR_MODEL, ES_ERR_LABEL, ES_ERR_INPUT = 2, 3, 5
STATE_REGIONS = ("var_floor", "feature", "threshold", "child", "n_nodes", "n_leaves", "class_count", "est_count",
                 "mean", "m2", "low", "high", "since", "seen", "fast", "slow") + ATTEMPT_ARRAYS


def bits(values) -> np.ndarray:
    values = np.ascontiguousarray(values).reshape(-1)
    return values.view(np.uint32) if values.dtype == np.float32 else values


class Device(RuntimeLearner):
    """The compiled runtime on a learner's exported state (numpy regions), plus the class-only call."""

    def __init__(self, learner):
        super().__init__(learner)
        self.load_export(learner)
        self.out = self.ffi.new("uint8_t *")

    def proba_of(self, x) -> tuple[int, np.ndarray]:
        proba = np.zeros(self.n_classes, dtype=np.uint16)
        return self.predict_proba_status(x, proba), proba

    def predict(self, x) -> tuple[int, int]:
        row = np.ascontiguousarray(x, dtype=np.float32)
        work, proba = self.ffi.new("uint32_t[]", self.n_classes), self.ffi.new("uint16_t[]", self.n_classes)
        status = self.lib.es_hoeffding_predict(self.model, self.ffi.from_buffer("float[]", row), work, proba,
                                               self.out)
        return status, self.out[0]

    def snapshot(self) -> dict:
        return {name: self.regions[name].copy() for name in STATE_REGIONS} | self.counter_values()


def assert_same_state(learner, device, where=""):
    for name in STATE_REGIONS:
        assert np.array_equal(bits(getattr(learner, name)), bits(device.regions[name])), f"{name} differs {where}"
    assert device.counter_values() == {"n_learned": learner.n_learned, "random": learner.random.state}


# -- the float32 approximations shared by both sides -----------------------------------------------------------

@pytest.fixture(scope="module")
def lib():
    return runtime()[1]


def test_log_and_erf_are_the_same_bits_and_accurate(lib):
    rng = np.random.default_rng(0)
    positive = np.concatenate([rng.integers(1, 0x7F800000, 20_000, dtype=np.uint32).view(np.float32),
                               np.float32([1, 2, 0.5, 1.4142135, 1.4142137, 1e-45, 1.17549435e-38, 3e38])])
    got = np.array([lib.es_hoeffding_log(float(v)) for v in positive], dtype=np.float32)
    assert np.array_equal(bits(got), bits(log_f32(positive)))
    exact = np.log(positive.astype(np.float64))
    assert np.all(np.abs(got - exact) <= 2e-7 * np.maximum(1, np.abs(exact)))
    x = np.concatenate([np.linspace(-7, 7, 20_001, dtype=np.float32), np.float32([0, -0.0, 5, -5, 4.9999995])])
    got = np.array([lib.es_hoeffding_erf(float(v)) for v in x], dtype=np.float32)
    assert np.array_equal(bits(got), bits(erf_f32(x)))
    assert max(abs(float(g) - math.erf(float(v))) for g, v in zip(got, x)) < 2e-6


# -- the C equals Python after every step ----------------------------------------------------------------------

values = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 3.0, 1e-3, -7.25, 100.0, 1e6, -1e12])


@st.composite
def streams(draw):
    d = draw(st.integers(1, 4))
    n_classes = draw(st.integers(2, 4))
    n = draw(st.integers(1, 24))
    X = np.array(draw(st.lists(st.lists(st.one_of(values, st.floats(-50, 50, width=32)), min_size=d, max_size=d),
                               min_size=n, max_size=n)), np.float32)
    y = np.array(draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)))
    if draw(st.booleans()):  # class-incremental: one class after another
        order = np.argsort(y, kind="stable")
        X, y = X[order], y[order]
    params = dict(max_leaves=draw(st.integers(1, 5)), grace_period=draw(st.integers(1, 6)),
                  tie_threshold=draw(st.sampled_from([0.0, 0.05, 2.0, 50.0])),
                  split_steps=draw(st.sampled_from([2, 3, 10])), propagation=draw(st.booleans()),
                  max_classes=draw(st.sampled_from([None, n_classes + 2])),
                  delta=draw(st.sampled_from([0.01, 0.5])), work_per_call=draw(st.sampled_from([0, 1, 2, 5])))
    if draw(st.booleans()):
        params.update(n_trees=draw(st.integers(1, 3)), bagging_lambda=draw(st.sampled_from([0.5, 5.0])),
                      seed=draw(st.integers(0, 2**32 - 1)))
    return params, X, y, n_classes


@given(streams())
@settings(max_examples=220)
def test_c_equals_python_after_every_step(stream):
    params, X, y, n_classes = stream
    cls = IncrementalRandomForest if "n_trees" in params else HoeffdingTreeClassifier
    learner = cls(**params).start(X[: max(1, len(X) // 3)], np.arange(n_classes))
    step_side_by_side(learner, X, y)


def step_side_by_side(learner, X, y):
    """Predict and learn every row in the specification, the device C and the engine twin, comparing the
    probabilities, classes and whole states after every step, and the pool's consistency."""
    device, twin = Device(learner), EngineTwin(learner)
    assert_same_state(learner, device, "at start")
    for i, (x, label) in enumerate(zip(X, y)):
        status, proba = device.proba_of(x)
        assert status == 0 and np.array_equal(proba, learner.predict_proba_q15(x[None])[0]), f"row {i}"
        expected = learner.predict_encoded(x[None])[0]
        assert device.predict(x) == (0, expected), f"row {i}"
        learner.learn_encoded(x, int(label))
        assert device.learn(x, int(label)) == 0
        assert_same_state(learner, device, f"after row {i}")
        twin.step(x, int(label), learner, expected, f"row {i}")
        assert_consistent_pool(learner)


def assert_consistent_pool(learner):
    for t in range(learner.n_trees):
        used = learner.feature[t, :learner.n_nodes[t]]
        assert learner.n_nodes[t] <= learner.max_nodes
        assert (used != FREE).sum() == 2 * learner.n_leaves[t] - 1
        slots = learner.child[t, :learner.n_nodes[t]][used == LEAF]
        assert sorted(slots.tolist()) == list(range(learner.n_leaves[t]))  # every slot in use once


detectors = st.one_of(st.just((0, 0, 0)), st.just((600, ONE, 0)),  # quiet; fires at the next row through it
                      st.tuples(st.sampled_from([512, 513, 0xFFFF]), st.integers(0, ONE), st.integers(0, ONE)))


@given(streams(), st.data())
@settings(max_examples=150)
def test_c_equals_python_through_drift(stream, data):
    """Detectors set to drawn states, labels established at every leaf: drifts fire, subtrees merge into leaves,
    slots move, free pairs are taken again; the C and the engine follow the specification every step."""
    params, X, y, n_classes = stream
    X, y = np.concatenate([X, X, X]), np.concatenate([y, (y + 1) % n_classes, y])  # the concept changes twice
    params["drift_threshold"] = data.draw(st.sampled_from([1, 2, DRIFT_DEFAULT]))
    cls = IncrementalRandomForest if "n_trees" in params else HoeffdingTreeClassifier
    learner = cls(**params).start(X[: max(1, len(X) // 3)], np.arange(n_classes))
    learner.use_engine = False
    grow = data.draw(st.integers(0, len(X) // 3))
    for x, label in zip(X[:grow], y[:grow]):
        learner.learn_encoded(x, int(label))
    for t in range(learner.n_trees):
        inner = np.flatnonzero(learner.feature[t, 1:learner.n_nodes[t]] < FREE) + 1
        if len(inner) and data.draw(st.booleans()):  # leave free pairs between used ones
            learner.attempt_node[t] = IDLE
            learner._merge_subtree(t, int(data.draw(st.sampled_from(inner.tolist()))))
        for node in range(learner.n_nodes[t]):
            learner.seen[t, node], learner.fast[t, node], learner.slow[t, node] = data.draw(detectors)
    learner.est_count[learner.est_count > 0] += np.float32(32.0)  # every seen label is established
    step_side_by_side(learner, X, y)


@given(streams(), st.data())
@settings(max_examples=120)
def test_c_equals_python_through_revisits(stream, data):
    """Drifts adapt inner nodes (deeper subtrees merged, leaves and detectors restarted) and their revisits, their
    snapshots filled to a drawn weight short of the end of the collection, collect the rows through the node,
    evaluate and decide (the split kept, or the subtree merged and split anew); the C and the engine follow the
    specification every step."""
    params, X, y, n_classes = stream
    X, y = np.concatenate([X, X, X]), np.concatenate([y, (y + 1) % n_classes, y])
    params["drift_threshold"] = data.draw(st.sampled_from([1, DRIFT_DEFAULT]))
    cls = IncrementalRandomForest if "n_trees" in params else HoeffdingTreeClassifier
    learner = cls(**params).start(X[: max(1, len(X) // 3)], np.arange(n_classes))
    learner.use_engine = False
    for x, label in zip(X[:len(X) // 3], y[:len(y) // 3]):
        learner.learn_encoded(x, int(label))
    for t in range(learner.n_trees):
        inner = np.flatnonzero(learner.feature[t, :learner.n_nodes[t]] < FREE)
        if len(inner) and data.draw(st.booleans()):
            learner._adapt(t, int(data.draw(st.sampled_from(inner.tolist()))))
            short = data.draw(st.integers(0, 64))
            while sum(learner.snap_count[t]) < REVISIT_ROWS - short - 1:  # rows the stream's own rows complete
                i = data.draw(st.integers(0, len(X) - 1))
                room = int(REVISIT_ROWS - short - sum(learner.snap_count[t]))
                learner._learn_stats(learner._snapshot(t), X[i], int(y[i]), min(room, 255))
    step_side_by_side(learner, X, y)


@given(streams(), st.integers(1, 6))
@settings(max_examples=60, deadline=None)
def test_a_spread_attempt_decides_as_the_whole_attempt_on_its_snapshot(stream, work):
    """Every decision of a spread attempt (at most ``work`` units per call and tree) takes the best candidate and
    Hoeffding test of the whole attempt evaluated at once on the same snapshot; with work enough for a whole
    attempt the learner is the unspread one (work_per_call=0), state for state."""
    params, X, y, n_classes = stream
    X, y = np.concatenate([X, X]), np.concatenate([y, y])
    cls = IncrementalRandomForest if "n_trees" in params else HoeffdingTreeClassifier
    spread, whole, ample = (cls(**dict(params, work_per_call=u)).start(X[: max(1, len(X) // 3)], np.arange(n_classes))
                            for u in (work, 0, 65535))

    def decide(t, spread=spread, own=spread._decide):
        at_once = copy.deepcopy(spread)
        at_once.best_feature[t], at_once.attempt_pos[t] = 255, 0
        at_once._evaluate(t, 0, at_once._candidates())
        assert (at_once.best_feature[t], bits(at_once.best_threshold[t]), bits(at_once.best_entropy[t])) == \
            (spread.best_feature[t], bits(spread.best_threshold[t]), bits(spread.best_entropy[t]))
        own(t)

    spread._decide = decide
    for learner in (spread, whole, ample):
        learner.use_engine = False
    for x, label in zip(X, y):
        for learner in (spread, whole, ample):
            learner.learn_encoded(x, int(label))
        assert spread.last_units_ <= work * spread.n_trees
        assert ample.last_units_ == whole.last_units_ and (whole.attempt_node == IDLE).all()
        for name in STATE_REGIONS:
            assert np.array_equal(bits(getattr(ample, name)), bits(getattr(whole, name))), name


def test_the_work_of_every_call_is_bounded_and_attempts_finish():
    X, y, _, _ = class_incremental(n_per_class=80, n_classes=4, d=5, seed=2)
    learner = IncrementalRandomForest(n_trees=3, max_leaves=8, grace_period=10, work_per_call=3)
    learner.start(X[:50], np.arange(4)).use_engine = False
    units = []
    for x, label in zip(X, y):
        learner.learn_encoded(x, int(label))
        units.append(learner.last_units_)
    per_attempt = learner.subspace(5) * (learner.split_steps - 1) + 1
    assert max(units) <= 3 * 3 and sum(units) >= 3 * per_attempt and (learner.n_leaves > 1).all()


def class_incremental(n_per_class=300, n_classes=5, d=6, seed=0, test=200):
    """Gaussian blobs, the training rows ordered class after class; a shuffled hold-out of every class."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(n_classes, d))

    def draw(n):
        y = np.repeat(np.arange(n_classes), n)
        return (centers[y] + rng.normal(size=(len(y), d))).astype(np.float32), y

    (X, y), (Xt, yt) = draw(n_per_class), draw(test // n_classes)
    return X, y, Xt, yt


@pytest.mark.parametrize("drift", [0, DRIFT_DEFAULT])
def test_propagation_keeps_old_classes_where_the_plain_tree_forgets(drift):
    X, y, Xt, yt = class_incremental()
    scores = {}
    for propagation in (True, False):
        learner = HoeffdingTreeClassifier(max_leaves=32, grace_period=50, propagation=propagation,
                                          drift_threshold=drift)
        learner.start(X[:100], np.arange(5)).partial_fit(X, y)
        assert learner.n_nodes[0] > 1 or learner.n_learned == len(X)
        scores[propagation] = learner.score(Xt, yt)
    assert scores[True] > 0.9 and scores[True] > scores[False] + 0.2


def test_full_pool_stops_growing_and_keeps_learning():
    X, y, Xt, yt = class_incremental(seed=1)
    learner = IncrementalRandomForest(n_trees=3, max_leaves=3, grace_period=20).start(X[:100], np.arange(5))
    learner.partial_fit(X[:900], y[:900])
    assert (learner.n_leaves == 3).all() and (learner.n_nodes == 5).all()
    nodes = (learner.feature.copy(), learner.threshold.copy(), learner.child.copy())
    counts = learner.class_count.sum()
    device = Device(learner)
    for x, label in zip(X[900:], y[900:]):
        learner.learn_encoded(x, int(label))
        assert device.learn(x, int(label)) == 0
    assert_same_state(learner, device, "after a full pool")
    for before, after in zip(nodes, (learner.feature, learner.threshold, learner.child)):
        assert np.array_equal(before, after)
    assert learner.class_count.sum() > counts  # the leaves still learn


def xor_stream(n, seed=0, flip=False):
    """Two features uniform in [0, 1), the label the XOR of their halves (inverted with ``flip``)."""
    X = np.random.default_rng(seed).random((n, 2)).astype(np.float32)
    return X, (((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)) != flip).astype(np.int64)


def test_a_pruned_subtree_frees_pairs_that_splits_take_again():
    X, y = xor_stream(3000)
    learner = HoeffdingTreeClassifier(max_leaves=8, grace_period=20, tie_threshold=0.2, drift_threshold=0,
                                      propagation=False, work_per_call=0).start(X[:100], [0, 1]).partial_fit(X[:1500], y[:1500])
    assert learner.n_leaves[0] == 8 and learner.feature[0, 4] < FREE  # a full pool, node 4 inner
    subtree = learner.child[0, 4]
    learner._merge_subtree(0, 4)
    assert learner.feature[0, 4] == LEAF and (learner.feature[0] == FREE).sum() == 6 and learner.n_nodes[0] == 15
    learner.use_engine = False
    device = Device(learner)
    for x, label in zip(X[1500:], y[1500:]):
        learner.learn_encoded(x, int(label))
        assert device.learn(x, int(label)) == 0
    assert_same_state(learner, device, "after the regrowth")
    assert learner.feature[0, 4] < FREE and learner.child[0, 4] == subtree  # regrown into the first free pair
    assert_consistent_pool(learner)


@pytest.mark.parametrize("cls", [HoeffdingTreeClassifier, IncrementalRandomForest])
def test_a_full_pool_adapts_to_an_abrupt_change(cls):
    X1, y1 = xor_stream(8000, seed=1)
    X2, y2 = xor_stream(8000, seed=2, flip=True)
    X, y = np.concatenate([X1, X2]), np.concatenate([y1, y2])
    accuracy = {}
    for drift in (0, DRIFT_DEFAULT):
        learner = cls(max_leaves=4, grace_period=50, drift_threshold=drift).start(X[:200], [0, 1])
        correct = learner.test_then_train(X, y) == y
        full = learner.n_leaves.min() == 4
        accuracy[drift] = correct[-4000:].mean()
    assert full and correct[6000:8000].mean() > 0.9  # the pool filled up on the first concept
    assert accuracy[DRIFT_DEFAULT] > 0.9 and accuracy[DRIFT_DEFAULT] > accuracy[0] + 0.2


def depths(learner, t: int = 0) -> dict:
    """The depth of every node in use in tree ``t``."""
    found, stack = {}, [(0, 0)]
    while stack:
        node, depth = stack.pop()
        found[node] = depth
        if learner.feature[t, node] != LEAF:
            c = int(learner.child[t, node])
            stack += [(c, depth + 1), (c + 1, depth + 1)]
    return found


def test_a_drift_at_an_inner_node_keeps_its_top_levels_and_restarts_the_rest():
    X, y = xor_stream(4000)
    learner = HoeffdingTreeClassifier(max_leaves=32, grace_period=20, tie_threshold=0.2, drift_threshold=0,
                                      work_per_call=0).start(X[:100], [0, 1]).partial_fit(X, y)
    assert max(depths(learner).values()) > KEPT_LEVELS + 1 and learner.n_leaves[0] > 8
    learner.seen[0], learner.fast[0], learner.slow[0] = 600, ONE // 2, ONE // 4
    learner._adapt(0, 0)
    assert learner._adapt_steps(0) > 0 and learner.adapt_pos[0] == IDLE  # work_per_call 0: to its end
    assert_consistent_pool(learner)
    kept = depths(learner)
    assert max(kept.values()) == KEPT_LEVELS and learner.n_leaves[0] <= 2 ** KEPT_LEVELS
    for node, depth in kept.items():
        assert learner.seen[0, node] == learner.fast[0, node] == learner.slow[0, node] == 0
        if learner.feature[0, node] == LEAF:  # propagated estimators and priors faded by depth
            assert learner.est_count[0, learner.child[0, node]].max() <= PROPAGATED / 2 ** depth
            assert learner.class_count[0, learner.child[0, node]].max() <= PROPAGATED / 2 ** depth
    assert learner.attempt_node[0] == 0 and learner.snap_count[0].sum() == 0  # the root's revisit collects


@given(st.integers(1, 4), st.integers(0, 2**31))
@settings(max_examples=20, deadline=None)
def test_a_spread_adaptation_ends_where_the_whole_one_does(work, seed):
    """An adaptation spread over calls of at most ``work`` units and ADAPT_VISITS node visits per unit, with no row
    between them, leaves the state the whole adaptation leaves, and every call keeps to its bound."""
    X, y = xor_stream(3000, seed=seed % 1000)
    grown = HoeffdingTreeClassifier(max_leaves=32, grace_period=20, tie_threshold=0.2, drift_threshold=0,
                                    work_per_call=0).start(X[:100], [0, 1])
    grown.use_engine = False
    for x, label in zip(X, y):
        grown.learn_encoded(x, int(label))
    inner = np.flatnonzero(grown.feature[0, :grown.n_nodes[0]] < FREE)
    node = int(inner[seed % len(inner)])
    whole, spread = copy.deepcopy(grown), copy.deepcopy(grown)
    spread.work_per_call = work
    for learner in (whole, spread):
        learner.attempt_node[0] = IDLE
        learner._adapt(0, node)
    whole._adapt_steps(0)
    calls = 0
    while spread.adapt_pos[0] != IDLE:
        before = int(spread.adapt_pos[0])
        assert spread._adapt_steps(0) <= work
        calls += 1
        assert spread.adapt_pos[0] != before or spread.adapt_pos[0] == IDLE
    assert calls > 1 or grown.n_nodes[0] - node <= ADAPT_VISITS * work
    spread.work_per_call = 0
    for name in STATE_REGIONS:
        assert np.array_equal(getattr(spread, name), getattr(whole, name)), name


def two_concepts(first, second, n=6000, seed=0):
    """Two features uniform in [0, 1), labels of ``first`` then of ``second`` (functions of the rows)."""
    X = np.random.default_rng(seed).random((2 * n, 2)).astype(np.float32)
    return X, np.concatenate([first(X[:n]), second(X[n:])]).astype(np.int64)


@pytest.mark.parametrize("propagation", [False, True])
def test_a_revisit_replaces_a_split_the_new_concept_does_not_use(propagation):
    X, y = two_concepts(lambda X: X[:, 0] > 0.5, lambda X: X[:, 1] > 0.5)
    learner = HoeffdingTreeClassifier(max_leaves=2, grace_period=50, propagation=propagation).start(X[:200], [0, 1])
    correct = learner.test_then_train(X[:6000], y[:6000]) == y[:6000]
    assert learner.feature[0, 0] == 0 and correct[-1000:].mean() > 0.95  # a full pool: one split, on x0
    correct = learner.test_then_train(X[6000:], y[6000:]) == y[6000:]
    assert learner.feature[0, 0] == 1 and abs(learner.threshold[0, 0] - 0.5) < 0.1  # split anew, on x1
    assert correct[1500:].mean() > 0.95


@pytest.mark.parametrize("propagation", [False, True])
def test_a_revisit_keeps_a_split_the_new_concept_still_uses(propagation):
    X, y = two_concepts(lambda X: X[:, 0] > 0.5, lambda X: X[:, 0] <= 0.5)  # the classes swap sides
    learner = HoeffdingTreeClassifier(max_leaves=2, grace_period=50, propagation=propagation).start(X[:200], [0, 1])
    learner.test_then_train(X[:6000], y[:6000])
    split = (learner.feature[0, 0], learner.threshold[0, 0])
    learner.use_engine = False  # the specification, to see the revisit
    revisits = []
    keep = learner._decide_revisit
    learner._decide_revisit = lambda t, node, n: revisits.append(node) or keep(t, node, n)
    learner.test_then_train(X[6000:7500], y[6000:7500])
    assert revisits == [0] and (learner.feature[0, 0], learner.threshold[0, 0]) == split
    learner.use_engine = True
    assert (learner.test_then_train(X[7500:], y[7500:]) == y[7500:]).mean() > 0.95


def recovery(correct: np.ndarray, change: int, window: int = 500) -> int | None:
    """Rows after ``change`` until the accuracy of the last ``window`` rows is back within 2 points of the
    ``window`` rows before it (benchmarks/bench_quality.py's measure)."""
    level = correct[change - window:change].mean()
    sums = np.concatenate([[0], np.cumsum(correct[change:])])
    back = np.flatnonzero((sums[window:] - sums[:-window]) / window >= level - 0.02)
    return int(back[0]) + window if len(back) else None


@pytest.mark.parametrize("propagation", [False, True])
def test_a_full_pool_keeps_the_partition_that_serves_after_an_abrupt_change(propagation):
    """Agrawal's loan functions 1 and 3 both split age at 40 and 60: a full 4-leaf tree keeps that partition and
    recovers, where pruning it to one leaf left the tree stuck on a point-mass split (recovery: never)."""
    X, y = make_stream("agrawal", 12000, 3, functions=(0, 2))
    X = X.astype(np.float32)
    learner = HoeffdingTreeClassifier(max_leaves=4, grace_period=100, propagation=propagation).start(X[:500], [0, 1])
    correct = learner.test_then_train(X, y) == y
    assert learner.n_leaves[0] == 4 and correct[5000:6000].mean() > 0.9
    assert recovery(correct, 6000) < 1500 and correct[8000:].mean() > 0.94


def test_a_revisit_in_a_state_is_restored_and_an_attempt_at_a_free_node_refused():
    X, y = xor_stream(2000)
    learner = HoeffdingTreeClassifier(max_leaves=8, grace_period=20, tie_threshold=0.2).start(X[:100], [0, 1])
    learner.partial_fit(X, y)
    learner.use_engine = False
    revisiting = copy.deepcopy(learner)
    revisiting._adapt(0, 0)
    restored = model_from_bytes(model_bytes(revisiting))
    device = Device(restored)
    assert restored.attempt_node[0] == 0 and device.lib.es_hoeffding_validate(device.model) == 0
    step_side_by_side(restored, X[:40], y[:40])
    for node in range(1, learner.n_nodes[0]):  # a merge that leaves a free pair between used ones
        merged = copy.deepcopy(learner)
        if merged.feature[0, node] < FREE:
            merged._merge_subtree(0, node)
            if (merged.feature[0, :merged.n_nodes[0]] == FREE).any():
                break
    free = int(np.flatnonzero(merged.feature[0, :merged.n_nodes[0]] == FREE)[0])
    with pytest.raises(ValueError, match=f"the split attempt is at node {free}, not a used node"):
        restored.restore_arrays(dict(merged.saved_arrays(), attempt_node=np.array([free], np.uint16)))
    device = Device(merged)
    device.regions["attempt_node"][0] = free
    assert device.lib.es_hoeffding_validate(device.model) != 0


def test_an_adaptation_in_a_state_is_restored_and_one_out_of_place_refused():
    """A state saved in the middle of a spread adaptation (marks in ``fast``) restores and steps as the
    specification on the device; an adaptation past the nodes in use or beyond its two passes, and a mark in a tree
    that does not adapt, are refused by both."""
    X, y = xor_stream(2000)
    learner = HoeffdingTreeClassifier(max_leaves=8, grace_period=20, tie_threshold=0.2,
                                      work_per_call=1).start(X[:100], [0, 1])
    learner.partial_fit(X, y)
    learner.use_engine = False
    learner._adapt(0, 0)
    learner._adapt_steps(0)
    assert learner.adapt_pos[0] != IDLE and (learner.fast[0] > ONE).any()
    restored = model_from_bytes(model_bytes(learner))
    assert Device(restored).lib.es_hoeffding_validate(Device(restored).model) == 0
    step_side_by_side(restored, X[:60], y[:60])
    used = int(learner.n_nodes[0])
    bad = {"adapt_pos": [np.array([learner.max_nodes + used], np.uint16), np.array([0xFFFE], np.uint16)],
           "fast": [np.where(np.arange(learner.max_nodes) == 0, ONE + 1, 0).astype(np.uint32)[None]]}
    for name, values in bad.items():
        for value in values:
            arrays = dict(learner.saved_arrays(), **{name: value})
            if name == "fast":
                arrays["adapt_pos"] = np.array([IDLE], np.uint16)
            with pytest.raises(ValueError, match="adaptation|mark outside"):
                copy.deepcopy(learner).restore_arrays(arrays)
            device = Device(learner)
            for region, array in arrays.items():
                if region in device.regions:
                    device.regions[region][:] = array.reshape(-1)
            assert device.lib.es_hoeffding_validate(device.model) != 0, (name, value)


# -- memory, model files, bad input ----------------------------------------------------------------------------

def test_header_layout_and_bundle_size(tmp_path):
    assert runtime_header_path(STATE).read_text() == STATE.header()
    ffi, _ = runtime()
    assert ffi.sizeof("es_hoeffding_config") == STATE.config_bytes()
    learner = IncrementalRandomForest(n_trees=2, max_leaves=4, max_classes=5).start(np.eye(3), [0, 1, 2])
    T, N, L, C, d = 2, 7, 4, 5, 3
    expected = {"var_floor": d, "feature": T * N, "threshold": T * N, "child": T * N, "seen": T * N, "fast": T * N,
                "slow": T * N, "n_nodes": T, "n_leaves": T,
                "class_count": T * L * C, "est_count": T * L * C, "mean": T * L * C * d, "m2": T * L * C * d,
                "low": T * L * d, "high": T * L * d, "since": T * L, "left": C, "right": C, "scores": C,
                "tree_proba": C, "sums": C, "terms": d, "attempt_node": T, "attempt_pos": T, "adapt_pos": T, "best_feature": T,
                "best_threshold": T, "best_entropy": T, "order": T * d, "snap_count": T * C, "snap_est": T * C,
                "snap_mean": T * C * d, "snap_m2": T * C * d, "snap_low": T * d, "snap_high": T * d,
                "leaf_n": 1, "leaf_sum": 1, "bin_n": 1, "bin_sum": 1, "leaf_linear": 1,  # the regressor's: placeholders
                "cached": 1, "cached_row": d, "cached_leaf": T, "cached_class": T}
    assert {r.name: r.count for r in learner.layout().regions} == expected
    bundle = load_bundle(export_bundle(learner, tmp_path / "b", name="irf"))
    assert bundle.state_size() == learner.state_bytes() == learner.layout().size()
    assert learner.state_bytes(packed=True) < learner.state_bytes()


def test_model_file_round_trip():
    X, y, Xt, _ = class_incremental(n_per_class=60)
    learner = IncrementalRandomForest(n_trees=2, max_leaves=4, grace_period=20, seed=7)
    learner.fit(X, np.array(["a", "b", "c", "d", "e"])[y])
    copy = model_from_bytes(model_bytes(learner))
    assert type(copy) is IncrementalRandomForest and copy.get_params() == learner.get_params()
    for name in STATE_REGIONS:
        assert np.array_equal(bits(getattr(copy, name)), bits(getattr(learner, name)))
    assert copy.random.state == learner.random.state and copy.n_learned == learner.n_learned
    assert np.array_equal(copy.predict_proba_q15(Xt), learner.predict_proba_q15(Xt))
    arrays = learner.saved_arrays()
    with pytest.raises(ValueError, match="node or leaf counts outside the pool"):
        copy.restore_arrays(dict(arrays, n_nodes=np.full_like(arrays["n_nodes"], 99)))


def test_classes_after_deployment():
    X, y, _, _ = class_incremental(n_per_class=40, n_classes=3)
    learner = HoeffdingTreeClassifier(max_classes=6).start(X[:40], [0])
    assert learner.classes_.tolist() == [0, 1, 2, 3, 4, 5]
    assert np.array_equal(learner.predict_proba_q15(X[:1]), [[5462, 5462, 5461, 5461, 5461, 5461]])
    device = Device(learner)
    for x, label in zip(X, y):  # classes 1 and 2 arrive after the export
        learner.learn_one(x, int(label))
        assert device.learn(x, int(label)) == 0
    assert_same_state(learner, device)
    proba = learner.predict_proba_q15(X)
    assert (proba[:, 3:] == 0).all() and learner.score(X, y) > 0.9
    with pytest.raises(ValueError, match="label 6 is not one of the 6 class slots"):
        learner.learn_one(X[0], 6)
    with pytest.raises(ValueError, match="label 7 is outside 0..5"):
        HoeffdingTreeClassifier(max_classes=6).start(X, [0, 7])
    with pytest.raises(ValueError, match="the data has 3 classes, more than max_classes=2"):
        HoeffdingTreeClassifier(max_classes=2).start(X, [0, 1, 2])
    strings = HoeffdingTreeClassifier(max_classes=4).start(X, ["x", "y"])
    assert strings.classes_.tolist() == ["x", "y", "<unseen 2>", "<unseen 3>"]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 2.0**51])
def test_bad_rows_and_labels_change_nothing(bad):
    X, y, _, _ = class_incremental(n_per_class=30, n_classes=3)
    learner = IncrementalRandomForest(n_trees=2, max_leaves=4, grace_period=10, max_classes=4).fit(X, y)
    device = Device(learner)
    before = device.snapshot()
    row = X[0].copy()
    row[2] = bad
    assert device.learn(row, 0) == ES_ERR_INPUT
    assert device.proba_of(row)[0] == ES_ERR_INPUT and device.predict(row)[0] == ES_ERR_INPUT
    assert device.learn(X[0], 4) == ES_ERR_LABEL and device.learn(X[0], 255) == ES_ERR_LABEL
    after = device.snapshot()
    assert all(np.array_equal(bits(before[k]), bits(after[k])) for k in STATE_REGIONS)
    assert before["n_learned"] == after["n_learned"] and before["random"] == after["random"]
    saved = learner.saved_arrays()
    with pytest.raises(ValueError, match="feature 2 of row 0 is .*finite features within"):
        learner.learn_one(row, 0)
    with pytest.raises(ValueError, match="label index 4 is at or beyond max_classes=4"):
        learner.learn_encoded(X[0], 4)
    with pytest.raises(ValueError, match="finite features"):
        learner.predict(row[None])
    assert all(np.array_equal(bits(v), bits(getattr(learner, k))) for k, v in saved.items() if k != "counters")
    assert learner.n_learned == len(X)


def test_a_learn_call_takes_the_cache_only_for_the_row_last_predicted():
    """A learn call of the row last predicted takes every tree's naive Bayes class from the cache (a forged cached
    class reaches the drift detectors); another row, or the same after es_hoeffding_rebuild (a restore), is
    scored again; every learn call forgets the row."""
    X, y = make_stream("hyperplane", 420, seed=3)
    X = X.astype(np.float32)
    learner = IncrementalRandomForest(n_trees=3, max_leaves=4, grace_period=20, seed=5).start(X[:100], [0, 1])
    for row, label in zip(X[:300], y[:300]):
        learner.learn_encoded(row, int(label))
    device = Device(learner)
    for i in range(300, 360):
        x, label = X[i], int(y[i])
        assert device.proba_of(X[i + 60] if i % 3 == 0 else x)[0] == 0
        assert device.regions["cached"][0] == 1
        if i % 3 == 1:
            device.lib.es_hoeffding_rebuild(device.model)
            assert device.regions["cached"][0] == 0
        learner.learn_encoded(x, label)
        assert device.learn(x, label) == 0
        assert_same_state(learner, device, f"after row {i}")
        assert device.regions["cached"][0] == 0

    def forged(predicted) -> bool:
        """Whether a learn call of X[400] after predicting ``predicted`` with every cached class flipped leaves
        other detectors than the specification's."""
        spec, twin = copy.deepcopy(learner), Device(learner)
        twin.proba_of(predicted)
        twin.regions["cached_class"][:] = 1 - twin.regions["cached_class"]
        spec.learn_encoded(X[400], int(y[400]))
        assert twin.learn(X[400], int(y[400])) == 0
        return any(not np.array_equal(getattr(spec, name), twin.regions[name].reshape(spec.fast.shape))
                   for name in ("fast", "slow"))
    assert forged(X[400]) and not forged(X[401])


def test_corrupt_node_table_is_refused_on_the_device():
    X, y, _, _ = class_incremental(n_per_class=30, n_classes=3)
    learner = HoeffdingTreeClassifier(max_leaves=4, grace_period=10).fit(X, y)
    device = Device(learner)
    assert device.proba_of(X[0])[0] == 0  # a corruption after a prediction is refused as well
    device.regions["child"][0] = 60000  # the root points outside the pool
    before = device.snapshot()
    assert device.learn(X[0], 0) == ES_ERR_MODEL and device.proba_of(X[0])[0] == ES_ERR_MODEL
    after = device.snapshot()
    assert all(np.array_equal(bits(before[k]), bits(after[k])) for k in STATE_REGIONS)


@pytest.mark.parametrize("params, message", [
    (dict(max_leaves=0), "max_leaves=0 must be an integer from 1 to 16384"),
    (dict(grace_period=0), "grace_period=0"),
    (dict(delta=1.5), r"delta=1.5 must be a number in \(0, 1\)"),
    (dict(split_steps=1), "split_steps=1"),
    (dict(max_classes=300), "max_classes=300 must be an integer from 2 to 255"),
    (dict(propagation="yes"), "propagation='yes' must be True or False"),
    (dict(work_per_call=65536), "work_per_call=65536 must be an integer from 0 to 65535"),
])
def test_bad_parameters(params, message):
    """Checked when the learner starts (scikit-learn's rule: the constructor only stores them), the state
    untouched."""
    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2
    model = HoeffdingTreeClassifier(**params)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y)
    assert not hasattr(model, "classes_")
    with pytest.raises(ValueError, match="n_trees=0"):
        IncrementalRandomForest(n_trees=0).partial_fit(X, y)


def test_budget_sizes_pool_and_refuses_a_ram_too_small_for_a_root():
    from edgestream.boards import load_board
    from edgestream.budget import plan

    board = load_board("stm32f411")
    budget = plan("hoeffding", board, 16, 10, ram=16 * 1024, max_classes=12)
    assert budget.params["max_leaves"] == 6 and budget.ram_bytes <= 16 * 1024 and budget.config["classes"] == 10
    assert plan("hoeffding", board, 16, 10, ram=16 * 1024).params["max_leaves"] == 8
    with pytest.raises(ValueError, match="no hoeffding configuration for 64 features and 10 classes fits 4,096 "
                                         "bytes of RAM"):
        plan("hoeffding", board, 64, 10, ram=4096)
    assert plan("irf", board, 16, 10, ram=64 * 1024).params["n_trees"] >= 3


# -- CLI and emulated devices ----------------------------------------------------------------------------------

def write_csv(path, X, y):
    header = ",".join([f"f{j}" for j in range(X.shape[1])] + ["label"])
    np.savetxt(path, np.column_stack([X, y]), fmt=["%.9g"] * X.shape[1] + ["%d"], delimiter=",", header=header,
               comments="")
    return path


def test_cli_fit_export_simulate(tmp_path, capsys):
    from edgestream.cli import main

    X, y, _, _ = class_incremental(n_per_class=60, n_classes=4, d=4)
    data = write_csv(tmp_path / "ci.csv", X, y)
    for args, text in ((["--learner", "hoeffding", "--no-propagation", "--max-leaves", "8"], "1 tree (no propagation)"),
                       (["--learner", "irf", "--n-trees", "3", "--max-classes", "6", "--grace-period", "40"],
                        "3 trees+AE")):
        model, bundle = tmp_path / f"{args[1]}.esm", tmp_path / args[1]
        assert main(["fit", str(data), "--label", "label", *args, "-o", str(model)]) == 0
        assert text in capsys.readouterr().out
        assert main(["export", str(model), "-o", str(bundle)]) == 0
        capsys.readouterr()
        assert main(["simulate", str(bundle), str(data), "--label", "label", "--learn", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["mismatches"] == 0 and report["n"] == len(X) and report["accuracy"] == report["python_accuracy"]
    assert main(["fit", str(data), "--label", "label", "--learner", "bls", "--no-propagation", "-o",
                 str(tmp_path / "x.esm")]) == 2
    assert "--[no-]propagation does not apply to --learner bls" in capsys.readouterr().err
    assert main(["budget", "--learner", "hoeffding", "--board", "stm32f411", "--ram", "8KiB", "--features", "4",
                 "--classes", "4"]) == 0
    assert capsys.readouterr().out.startswith("hoeffding on stm32f411: max_leaves=32, propagation=True, drift_threshold=5, grace_period=100, delta=0.01, features=4, classes=4")


@pytest.mark.parametrize("board", ["rp2040", "stm32f411"])
def test_emulated_device_learns_like_python(tmp_path, board):
    """Cortex-M0 (soft float) and Cortex-M4F under QEMU: from an exported early state, every class and Q15
    probability of a class-incremental test-then-train run equals Python's, splits on the device included."""
    from edgestream.targets import run

    X, y, _, _ = class_incremental(n_per_class=50, n_classes=4, d=4, seed=3)
    learner = IncrementalRandomForest(n_trees=2, max_leaves=6, grace_period=15, max_classes=5)
    learner.start(X[:20], np.arange(4)).partial_fit(X[:20], y[:20])
    bundle = export_bundle(learner, tmp_path / board, name="irf")
    result = run(bundle, board, X[20:], y[20:], learn=True)
    classes, proba = [], []
    for x, label in zip(X[20:], y[20:]):
        proba.append(learner.predict_proba_q15(x[None])[0])
        classes.append(learner.predict_encoded(x[None])[0])
        learner.learn_encoded(x, int(label))
    assert (learner.n_leaves > 2).all()
    assert np.array_equal(result.classes, classes) and np.array_equal(result.proba, proba)


def test_leaf_marker_is_the_runtime_one():
    assert LEAF == 255
