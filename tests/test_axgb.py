"""Adaptive XGBoost: the C runtime equals the Python specification after every learning step (both strategies,
drift resets, 2 and more classes, whole-job and spread training), memory bounds, bad input, CLI and QEMU."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_twin import EngineTwin
from edgestream import learners
from edgestream.adwin import ADWIN, ADWIN_DTYPE, adwin_from_record, adwin_record
from edgestream.export import export_bundle
from edgestream.learners.axgb import IDLE, STATE, AdaptiveXGBoost, job_units
from edgestream.modelfile import model_bytes, model_from_bytes
from edgestream.simulate import load_bundle, runtime
from edgestream.state import runtime_header_path

ES_ERR_LABEL, ES_ERR_INPUT = 3, 5
GUARD = 32  # bytes of sentinel before and after every region
SENTINEL = 0xA5


class Device:
    """The runtime's es_axgb on numpy regions surrounded by sentinel bytes, starting from the learner's state
    (or from ``state``: arrays and counters as ``device_state()`` gives them)."""

    def __init__(self, learner, state=None):
        self.ffi, self.lib = runtime()
        ffi = self.ffi
        layout = learner.layout()
        arrays, counters = state or learner.device_state()
        self.config = ffi.new("es_axgb_config *", layout.config)
        self.counters = ffi.new("es_axgb_counters *", {k: int(v) for k, v in counters.items()})
        self.buffers, self.regions, fields = {}, {}, {}
        for region in layout.regions:
            raw = np.full(region.bytes + 2 * GUARD, SENTINEL, dtype=np.uint8)
            view = raw[GUARD: GUARD + region.bytes].view(region.dtype)
            view.view(np.uint8)[...] = np.ascontiguousarray(arrays[region.name]).reshape(-1).view(np.uint8)
            self.buffers[region.name], self.regions[region.name] = raw, view
            fields[region.name] = ffi.from_buffer(f"{region.c_type}[]", view)
        self.model = ffi.new("es_axgb *", {"config": self.config, "counters": self.counters, **fields})
        self.work = ffi.new("uint32_t[]", max(len(getattr(learner, "classes_", ())), 1))  # a regressor: none
        self.layout = layout

    def learn(self, bins, label) -> int:
        return self.lib.es_axgb_learn(self.model, self.ffi.from_buffer("uint8_t[]", np.ascontiguousarray(bins)),
                                      label)

    def proba(self, bins, n_classes):
        out = np.zeros(n_classes, dtype=np.uint16)
        assert self.lib.es_axgb_predict_proba(self.model, self.ffi.from_buffer("uint8_t[]", np.ascontiguousarray(bins)),
                                              self.work, self.ffi.from_buffer("uint16_t[]", out)) == 0
        return out

    def predict(self, bins) -> int:
        out = self.ffi.new("uint8_t *")
        assert self.lib.es_axgb_predict(self.model, self.ffi.from_buffer("uint8_t[]", np.ascontiguousarray(bins)),
                                        out) == 0
        return out[0]

    def counter_values(self) -> dict:
        return {f.name: getattr(self.counters, f.name) for f in STATE.counters}

    def validate(self) -> int:
        return self.lib.es_axgb_validate(self.model)

    def guards_intact(self) -> bool:
        return all((raw[:GUARD] == SENTINEL).all() and (raw[-GUARD:] == SENTINEL).all()
                   for raw in self.buffers.values())


def state_differences(learner, device) -> list:
    """Regions (all but the per-call scratch) and counters where the C state differs from Python's."""
    arrays, counters = learner.device_state()
    bad = [r.name for r in device.layout.regions if r.group != "scratch" and
           np.asarray(arrays[r.name]).reshape(-1).tobytes() != device.regions[r.name].tobytes()]
    got = device.counter_values()
    return bad + [(k, int(v), got[k]) for k, v in counters.items() if int(v) != got[k]]


def drifting(n, n_features, n_classes, seed, change=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    score = X[:, 0] + (0.5 * X[:, 1] if n_features > 1 else 0)
    y = np.digitize(score, np.linspace(-1, 1, n_classes - 1)) if n_classes > 2 else (score > 0).astype(int)
    cut = int(n * change)
    y[cut:] = (n_classes - 1) - y[cut:]
    return X, y


def min_work(n_features, n_classes, **params) -> int:
    """The smallest work_per_call that keeps up, for these parameters."""
    return AdaptiveXGBoost(**params).min_work_per_call(n_features, n_classes)


def make(n_features, n_classes, X, **params):
    learner = AdaptiveXGBoost(**params)
    learner.fit_bins(X).set_classes(np.arange(n_classes))
    return learner


def run_parity(learner, X, y, every_proba=True):
    """The specification, the device C (cffi) and the engine learn every row alike."""
    device, twin = Device(learner), EngineTwin(learner)
    bins = learner.transform(X)
    c = len(learner.classes_)
    for i, (row, label) in enumerate(zip(bins, y)):
        expected = learner.predict_encoded_bins(row)[0]
        learner.learn_bins(row, int(label))
        assert device.learn(row, int(label)) == 0
        assert state_differences(learner, device) == [], f"after step {i}"
        twin.step(X[i], int(label), learner, expected, f"step {i}")
        if every_proba:
            assert np.array_equal(device.proba(row, c), learner.predict_proba_bins(row)[0])
            assert device.predict(row) == learner.predict_encoded_bins(row)[0]
    assert device.guards_intact()
    return device


# -- parity ----------------------------------------------------------------------------------------------------

@st.composite
def configurations(draw):
    n_features = draw(st.integers(1, 3))
    n_classes = draw(st.sampled_from([2, 2, 3, 4]))
    window_min = draw(st.integers(1, 8))
    window_max = draw(st.integers(window_min, 24))
    params = dict(members=draw(st.integers(1, 4)), window_min=window_min, window_max=window_max,
                  strategy=draw(st.sampled_from(["push", "replace"])), drift_detection=draw(st.booleans()),
                  max_depth=draw(st.integers(1, 3)), max_bins=draw(st.integers(2, 8)),
                  learning_rate=draw(st.sampled_from([0.05, 0.3, 1.0])),
                  reg_lambda=draw(st.sampled_from([1 / 32, 1.0, 4.0])), gamma=draw(st.sampled_from([0.0, 0.1])),
                  min_child_weight=draw(st.sampled_from([0.0, 0.5, 1.0])),
                  delta=draw(st.sampled_from([0.3, 0.05])), clock=draw(st.sampled_from([1, 4])))
    mode = draw(st.sampled_from(["whole", "automatic", "least"]))
    if mode == "whole":
        params["work_per_call"] = 0
    elif mode == "least":  # spread training: the smallest work per call that keeps up, or a bit more
        params["work_per_call"] = min_work(n_features, n_classes, **params) + draw(st.integers(0, 40))
    n = draw(st.integers(20, 90))
    return n_features, n_classes, params, n, draw(st.integers(0, 2**16))


@settings(max_examples=200)
@given(configurations())
def test_c_state_and_predictions_equal_python_after_every_step(config):
    n_features, n_classes, params, n, seed = config
    X, y = drifting(n, n_features, n_classes, seed, change=0.4)
    run_parity(make(n_features, n_classes, X, **params), X, y)


@pytest.mark.parametrize("strategy", ["push", "replace"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_parity_through_drift_resets_and_spread_jobs(strategy, n_classes):
    X, y = drifting(700, 3, n_classes, seed=0)
    params = dict(strategy=strategy, members=4, window_min=8, window_max=32, max_depth=3, delta=0.3, clock=4,
                  max_bins=16, min_child_weight=0.25)  # a child of one sample: deeper trees, so longer jobs
    learner = make(3, n_classes, X, **params, work_per_call=min_work(3, n_classes, **params) + 10)
    abandoned, resets, regrown = [], [], []
    learn = learner.learn_bins

    def learn_bins(row, label):  # count the resets (a rise of the error empties the ensemble) and the jobs they end
        before = learner.phase, learner.n_members
        learn(row, label)
        reset = learner.n_members == 0 and before[1] > 0
        resets.append(reset)
        abandoned.append(reset and before[0] != IDLE)
        regrown.append(any(resets) and learner.n_members > 0)

    learner.learn_bins = learn_bins
    run_parity(learner, X, y, every_proba=False)
    assert sum(resets) >= 2 and sum(abandoned) >= 1  # the resets and an abandoned job
    assert any(regrown)  # new members join after a reset


def test_spread_training_learns_the_same_members_and_bounds_the_work():
    X, y = drifting(600, 3, 2, seed=3)
    params = dict(members=5, window_min=16, window_max=64, max_depth=3, drift_detection=False)
    burst = make(3, 2, X, **params, work_per_call=0)
    work = min_work(3, 2, **params)
    spreads = [make(3, 2, X, **params, work_per_call=work), make(3, 2, X, **params)]  # the least, automatic
    bound = job_units(64, 3, 33, 3, 5, 1, spreads[1].min_child_q15)
    assert spreads[1].units_per_call_ == max(work, -(-5 * bound // (4 * 64)))
    bins = burst.transform(X)
    compared, burst_units = [0, 0], []
    for row, label in zip(bins, y):
        burst.learn_bins(row, int(label))
        burst_units.append(burst.last_units_)
        for k, spread in enumerate(spreads):
            spread.learn_bins(row, int(label))
            assert spread.last_units_ < spread.units_per_call_ + 4 + 5  # the last piece (9 units) may overrun
            if spread.phase == IDLE and spread.n_members == burst.n_members:
                members = burst.roots[: burst.n_members]
                assert np.array_equal(spread.roots[: spread.n_members], members)
                assert np.array_equal(spread.nodes, burst.nodes)
                assert np.array_equal(spread.leaf_values, burst.leaf_values)
                compared[k] += 1
            assert spread.count <= spread._capacity
    assert min(compared) > 100
    assert max(burst_units) > 10 * work  # a whole member in one call is far above the spread bound
    assert max(burst_units) <= bound


@settings(max_examples=200)
@given(st.sampled_from([1, 3]), st.integers(2, 12), st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.0, 0.1]),
       st.integers(0, 2**16), st.integers(1, 400))
def test_scan_skips_empty_bins_and_finds_the_split_of_every_bin(outputs, max_bins, min_child, gamma, seed, budget):
    """The scan evaluates only bins that hold gradient (an empty bin has the gain of the bin before it, which never
    beats the best strictly): the same split as the gain of every bin, in pieces of any budget."""
    n_classes = 2 if outputs == 1 else outputs
    X, _ = drifting(50, 2, n_classes, seed=0)
    learner = make(2, n_classes, X, max_bins=max_bins, min_child_weight=min_child, gamma=gamma, work_per_call=0)
    rng = np.random.default_rng(seed)
    rows = learner.hist_bins * outputs
    filled = np.repeat(rng.random(learner.hist_bins) < 0.5, outputs)
    hist_g = np.where(filled, rng.integers(-40000, 40000, rows), 0).astype(np.int32)
    hist_h = np.where(filled, rng.integers(0, 20000, rows), 0).astype(np.int32)
    learner.hist_g[:], learner.hist_h[:] = hist_g, hist_h
    learner.node_g[:] = hist_g.reshape(-1, outputs).sum(axis=0)
    learner.node_h[:] = hist_h.reshape(-1, outputs).sum(axis=0)
    learner.left_g[:] = 0
    learner.left_h[:] = 0
    learner.phase, learner.pos, learner.feature, learner.node = 3, 0, 1, 0
    learner.node_start[0], learner.node_stop[0] = 0, 0
    learner.best_gain, learner.best_feature, learner.best_bin = 2 * learner.gamma_q15, 255, 0
    learner.last_work_ = dict.fromkeys(("scan", "gain"), 0)
    while learner.phase == 3:
        learner._scan(budget)
    G, H = hist_g.reshape(-1, outputs).astype(np.int64), hist_h.reshape(-1, outputs).astype(np.int64)
    lam = learner.lambda_q15
    parent = sum(learner._score(int(g), int(h), lam) for g, h in zip(G.sum(axis=0), H.sum(axis=0)))
    best = (2 * learner.gamma_q15, 255, 0)
    for b in range(max_bins - 1):  # every bin, empty or not (the rule before the skip)
        left_g, left_h = G[: b + 1].sum(axis=0), H[: b + 1].sum(axis=0)
        if left_h.sum() >= learner.min_child_q15 and H.sum() - left_h.sum() >= learner.min_child_q15:
            gain = sum(learner._score(int(gl), int(hl), lam) + learner._score(int(g - gl), int(h - hl), lam)
                       for gl, hl, g, h in zip(left_g, left_h, G.sum(axis=0), H.sum(axis=0))) - parent
            if gain > best[0]:
                best = (gain, 1, b)
    assert (learner.best_gain, learner.best_feature, learner.best_bin) == best
    assert not learner.hist_g.any() and not learner.hist_h.any()


def test_members_follow_the_strategies():
    X, y = drifting(400, 2, 2, seed=1)
    push = make(2, 2, X, strategy="push", members=3, window_min=4, window_max=16, drift_detection=False)
    replace = make(2, 2, X, strategy="replace", members=3, window_min=4, window_max=16, drift_detection=False)
    push_roots, replace_roots = [], []
    for row, label in zip(push.transform(X), y):
        for learner, log in ((push, push_roots), (replace, replace_roots)):
            before = learner.n_members, learner.roots.copy()
            learner.learn_bins(row, int(label))
            if learner.phase == IDLE and (learner.n_members, learner.roots.tolist()) != (before[0], before[1].tolist()):
                log.append(learner.roots[: learner.n_members].tolist())
    assert [len(r) for r in push_roots[:4]] == [1, 2, 3, 3]
    assert push_roots[3][:2] == push_roots[2][1:]  # the oldest left, the others moved up
    assert [len(r) for r in replace_roots[:4]] == [1, 2, 3, 3]
    assert replace_roots[3][1:] == replace_roots[2][1:] and replace_roots[3][0] != replace_roots[2][0]
    assert replace_roots[4][0] == replace_roots[3][0] and replace_roots[4][1] != replace_roots[3][1]


def test_window_doubles_and_resets_on_drift():
    X, y = drifting(3000, 2, 2, seed=2)
    learner = make(2, 2, X, window_min=8, window_max=64, members=10, delta=0.05)
    sizes, replace_after_reset, kept = [], [], 0
    for row, label in zip(learner.transform(X), y):
        detections, members = learner.adwin_.n_detections, learner.n_members
        learner.learn_bins(row, int(label))
        sizes.append(learner.window)
        if learner.adwin_.n_detections > detections:
            if learner.n_members == 0:  # a rise of the error: the ensemble starts again
                replace_after_reset.append(learner.replace_index)
            else:  # a fall: nothing changes
                kept += learner.n_members == members
    assert sizes[:8] == [8] * 7 + [16] and max(sizes) == 64
    assert replace_after_reset and set(replace_after_reset) <= {0, 1}  # reset to 0 (1 if a job started at once)
    assert kept
    assert 8 in sizes[1500:] or 16 in sizes[1500:]


def test_multiclass_uses_multi_output_leaves():
    X, y = drifting(300, 3, 4, seed=5, change=1.0)
    learner = make(3, 4, X, window_min=32, window_max=64, max_depth=2, drift_detection=False)
    for row, label in zip(learner.transform(X), y):
        learner.learn_bins(row, int(label))
    assert learner.leaf_values.shape[1] == 4 and learner.n_members >= 3
    accuracy = np.mean(learner.predict_encoded_bins(learner.transform(X[-100:])) == y[-100:])
    assert accuracy > 0.6


# -- memory, model files, bad input ----------------------------------------------------------------------------

def test_header_and_layout_match_the_c():
    assert runtime_header_path(STATE).read_text() == STATE.header()
    ffi, _ = runtime()
    assert ffi.sizeof("es_axgb_config") == STATE.config_bytes()
    assert ffi.sizeof("es_axgb_counters") == 40
    assert ffi.sizeof("es_adwin") == ADWIN_DTYPE.itemsize
    X, _ = drifting(50, 3, 3, seed=0)
    params = dict(members=4, window_min=8, window_max=32, max_depth=2, max_bins=8)
    layout = make(3, 3, X, **params, work_per_call=0).layout()
    counts = {r.name: r.count for r in layout.regions}
    assert counts["nodes"] == 5 * 7 and counts["leaf_values"] == 5 * 4 * 3 and counts["window_bins"] == 32 * 3
    assert counts["hist_g"] == 9 * 3 and counts["proba"] == 32 * 3
    auto = make(3, 3, X, **params)  # a job's window and the rows that arrive while it trains
    units, windows = auto.units_per_call_, (8, 16, 32)
    calls = {w: -(-job_units(w, 3, 9, 2, 4, 3, auto.min_child_q15) // units) for w in windows}
    assert all(calls[w] <= min(2 * w, 32) for w in windows)
    assert auto.layout().config["capacity"] == max(w + calls[w] - 1 for w in windows)


def test_bundle_state_size_and_long_stream_memory_bounds(tmp_path):
    X, y = drifting(3000, 4, 3, seed=7)
    params = dict(members=6, window_min=8, window_max=64, max_depth=3, delta=0.1)
    learner = make(4, 3, X, **params, work_per_call=min_work(4, 3, **params))
    device = run_parity(learner, X, y, every_proba=False)
    assert device.guards_intact() and learner.adwin_.n_detections > 0
    bundle = load_bundle(export_bundle(learner, tmp_path / "b", name="axgb"))
    assert bundle.state_size() == learner.state_bytes() == learner.layout().size()
    for x, label in zip(X[:200], y[:200]):
        assert np.array_equal(bundle.predict_proba_q15(x[None]), learner.predict_proba_q15(x[None]))
        assert bundle.learn_encoded(x, int(label)) == 0
        learner.learn_one(x, int(label))
    assert bundle.learn_encoded(X[0], 3) == ES_ERR_LABEL


def test_bad_labels_are_refused_and_nothing_changes():
    X, y = drifting(100, 2, 2, seed=4)
    learner = make(2, 2, X, window_min=4, window_max=8)
    device = Device(learner)
    for row, label in zip(learner.transform(X[:30]), y[:30]):
        learner.learn_bins(row, int(label))
        device.learn(row, int(label))
    before = {name: region.copy() for name, region in device.regions.items()}, device.counter_values()
    row = learner.transform(X[30:31])[0]
    for label in (2, 3, 255):
        assert device.learn(row, label) == ES_ERR_LABEL
        with pytest.raises(ValueError, match="outside 0..1"):
            learner.learn_bins(row, label)
    assert all(np.array_equal(before[0][n], r) for n, r in device.regions.items())
    assert device.counter_values() == before[1] and state_differences(learner, device) == []
    with pytest.raises(ValueError, match="not one of the configured classes"):
        learner.learn_one(X[0], 7)


@pytest.mark.parametrize("params, message", [
    (dict(window_min=64, window_max=32), "window_min=64 must not exceed window_max=32"),
    (dict(window_max=5000), "window_max=5000 must be an integer from 1 to 4096"),
    (dict(members=0), "members=0"),
    (dict(strategy="shift"), "strategy='shift'"),
    (dict(max_depth=0), "max_depth=0"),
    (dict(reg_lambda=0.0), "reg_lambda=0.0"),
    (dict(learning_rate=2.0), "learning_rate=2.0"),
    (dict(drift_detection="yes"), "drift_detection='yes'"),
    (dict(delta=2.0), "delta"),
    (dict(work_per_call=-1), "work_per_call=-1 must be an integer from 0 to 4294967295"),
])
def test_bad_parameters(params, message):
    """A bad parameter is named when the learner starts (fit, fit_bins, the registry's make), not when it is made
    or set (scikit-learn's rule); the fixed-point forms follow the parameters."""
    learner = AdaptiveXGBoost().set_params(**params)
    X, y = drifting(40, 2, 2, seed=0)
    for start in (lambda: learner.fit(X, y), lambda: learner.fit_bins(X), lambda: learners.get("axgb").make(**params)):
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            start()
    assert not hasattr(learner, "bins_")
    assert "eta_q16" not in vars(learner) and learner.set_params(learning_rate=0.5).eta_q16 == 32768


def test_spread_that_cannot_keep_up_is_refused():
    X, _ = drifting(50, 3, 2, seed=0)
    least = min_work(3, 2, window_min=8, window_max=64)
    with pytest.raises(ValueError, match=f"work_per_call=10 must be 0 or at least {least}: smaller, a job of "
                                         r"window_max=64 \(window_min=8\) may not end before the next window is full"):
        make(3, 2, X, window_min=8, window_max=64, work_per_call=10)
    for work in (0, least, None):
        make(3, 2, X, window_min=8, window_max=64, work_per_call=work)


def test_window_that_does_not_fit_the_budget():
    from edgestream.boards import load_board
    from edgestream.budget import plan

    board = load_board("stm32f411")
    budget = plan("axgb", board, 6, 2, ram=8 * 1024)
    assert budget.fits and budget.params["window_max"] <= 512
    with pytest.raises(ValueError, match="no axgb configuration for 6 features and 2 classes fits 8,192 bytes"):
        plan("axgb", board, 6, 2, ram=8 * 1024, window_max=4096)


def test_model_file_round_trip():
    X, y = drifting(500, 3, 3, seed=8)
    learner = make(3, 3, X, members=4, window_min=8, window_max=32,
                   work_per_call=min_work(3, 3, members=4, window_min=8, window_max=32))
    learner.partial_fit(X[:333], y[:333])
    copy = model_from_bytes(model_bytes(learner))
    assert copy.get_params() == learner.get_params()
    for name in ("nodes", "leaf_values", "roots", "window_bins", "order", "proba"):
        assert np.array_equal(getattr(copy, name), getattr(learner, name))
    assert np.array_equal(adwin_record(copy.adwin_), adwin_record(learner.adwin_))
    for x, label in zip(X[333:], y[333:]):  # both continue identically, a job under way included
        copy.learn_one(x, label)
        learner.learn_one(x, label)
    assert np.array_equal(copy.predict_proba_q15(X), learner.predict_proba_q15(X))
    arrays = learner.saved_arrays()
    with pytest.raises(ValueError, match="shape"):
        copy.restore_arrays(dict(arrays, roots=arrays["roots"][:-1]))


def test_adwin_record_round_trip_and_c_layout():
    adwin = ADWIN(0.01, clock=4)
    rng = np.random.default_rng(0)
    for bit in (rng.random(500) < 0.3).astype(int):
        adwin.update(int(bit))
    record = adwin_record(adwin)
    again = adwin_from_record(record, 0.01)
    assert (again.rows, again.width, again.total, again.tick) == (adwin.rows, adwin.width, adwin.total, adwin.tick)
    with pytest.raises(ValueError, match="log_term_q24"):
        adwin_from_record(record, 0.2)


def test_nan_is_refused_unless_missing_values_are_allowed(tmp_path):
    """Without allow_missing the host refuses NaN (ValueError) and the device too (ES_ERR_INPUT from learn,
    predict and predict_proba, the state unchanged, in the middle of a spread job); with it both learn NaN as the
    missing bin."""
    from edgestream import checkpoint

    X, y = drifting(100, 2, 2, seed=4)
    learner = make(2, 2, X, window_min=8, window_max=16, work_per_call=min_work(2, 2, window_min=8, window_max=16))
    with pytest.raises(ValueError, match="feature 1 of row 0 is NaN"):
        learner.learn_one(np.array([0.0, np.nan]), 0)
    for x, label in zip(X, y):  # up to a state in the middle of a job
        learner.learn_one(x, label)
        if learner.phase != IDLE and learner.n_members > 0:
            break
    bundle = load_bundle(export_bundle(learner, tmp_path / "strict", name="axgb"))
    ffi, lib = bundle.ffi, bundle.lib
    size, length = lib.axgb_image_size(), ffi.new("uint32_t *")
    image = ffi.new("uint8_t[]", size)

    def state():
        assert lib.axgb_save(image, size, length) == 0
        return bytes(ffi.buffer(image, size))[24:]

    before = state()
    row, proba, out = np.array([0.5, np.nan], dtype=np.float32), ffi.new("uint16_t[]", 2), ffi.new("uint8_t *")
    assert bundle.learn_encoded(row, 1) == ES_ERR_INPUT
    assert lib.axgb_predict(ffi.from_buffer("float[]", row), out) == ES_ERR_INPUT
    assert lib.axgb_predict_proba(ffi.from_buffer("float[]", row), proba) == ES_ERR_INPUT
    assert state() == before
    assert bundle.learn_encoded(np.array([0.5, np.inf], dtype=np.float32), 1) == 0  # inf is a value, as on the host
    assert "NaN refused with ES_ERR_INPUT" in (tmp_path / "strict" / "src" / "axgb.h").read_text()
    learner = make(2, 2, X, allow_missing=True, window_min=4, window_max=8)
    X[::3, 1] = np.nan
    run_parity(learner, X, y)
    bundle = load_bundle(export_bundle(learner, tmp_path / "missing", name="axgb"))
    assert np.array_equal(bundle.predict_proba_q15(X[:20]), learner.predict_proba_q15(X[:20]))
    assert bundle.learn_encoded(row, 1) == 0


# -- state validation (images) -----------------------------------------------------------------------------

COUNTER_MAX = {f.name: 2 ** (8 * {"uint8_t": 1, "uint16_t": 2}.get(f.c_type, 0)) - 1 for f in STATE.counters}


def host_accepts(learner, arrays, counters):
    """A copy of ``learner`` restored from the state, or None if the host refuses it."""
    import copy

    clone = copy.copy(learner)  # restore_arrays gives the copy regions of its own
    saved = {name: np.asarray(arrays[name]).reshape(np.shape(value)).astype(value.dtype)
             for name, value in learner.saved_arrays().items() if name != "counters"}
    saved["counters"] = np.array([counters[f.name] for f in STATE.counters], dtype=np.int64)
    try:
        clone.restore_arrays(saved)
    except ValueError:
        return None
    return clone


REGIONS = ("order", "node_start", "node_stop", "node_depth", "hist_g", "hist_h", "node_g", "node_h", "left_g", "left_h",
           "roots", "proba", "window_labels", "nodes", "leaf_values", "adwin")


def mutations(learner, rng, n, regions=REGIONS):
    """States of ``learner`` with one change: every counter set to each of 0, its value -1 and +1 and its largest
    value, then ``n`` random region elements set to boundary or random bytes."""
    arrays, counters = learner.device_state()
    for name in sorted(counters):
        v, top = int(counters[name]), COUNTER_MAX[name] if COUNTER_MAX[name] > 0 else 2**40
        for value in sorted({0, v - 1, v + 1, top} - {v}):
            if -(2**40) <= value <= top and (value >= 0 or name == "best_gain"):
                yield name, arrays, dict(counters, **{name: value})
    for _ in range(n):
        name = str(rng.choice(regions))
        changed = dict(arrays, **{name: np.array(arrays[name], copy=True)})
        flat = changed[name].reshape(-1).view(np.uint8)
        flat[int(rng.integers(len(flat)))] = int(rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, rng.integers(256)]))
        yield name, changed, counters


def test_state_validation_host_equals_device_and_accepted_states_stay_in_bounds():
    """States of every job phase with one counter or region element changed: es_axgb_validate accepts exactly
    the states the host's check_state accepts, and accepted states continue on both identically (C == Python
    after every step) without writing outside any region."""
    X, y = drifting(600, 3, 3, seed=16)
    params = dict(members=3, window_min=16, window_max=24, max_depth=3, max_bins=8, delta=0.3, clock=4)
    learner = make(3, 3, X, **params, work_per_call=min_work(3, 3, **params))
    bins = learner.transform(X)
    rng = np.random.default_rng(1)
    phases, accepted, refused, continued = [0] * 6, 0, 0, 0
    for i, (row, label) in enumerate(zip(bins, y)):
        learner.learn_bins(row, int(label))
        if i < 40 or (phases[learner.phase] >= 3 and i % 40):
            continue
        phases[learner.phase] += 1
        assert Device(learner).validate() == 0 and host_accepts(learner, *learner.device_state()) is not None
        for k, (name, arrays, counters) in enumerate(mutations(learner, rng, 10)):
            device = Device(learner, (arrays, counters))
            host = host_accepts(learner, arrays, counters)
            assert (device.validate() == 0) == (host is not None), (i, learner.phase, name)
            if host is None:
                refused += 1
                continue
            accepted += 1
            if k % 3:
                continue
            continued += 1
            for row2, label2 in zip(bins[i + 1: i + 25], y[i + 1: i + 25]):
                host.learn_bins(row2, int(label2))
                assert device.learn(row2, int(label2)) == 0
                assert state_differences(host, device) == [], (i, name)
            assert device.guards_intact()
    assert min(phases) >= 3 and continued > 100 and refused > 1000, (phases, accepted, refused, continued)


def test_images_saved_during_a_spread_job_continue_on_host_and_device(tmp_path):
    """The bundle saves an image in every phase of a spread training job; the host reads it and continues as the
    device does, and the device restores the host's image of the continued state."""
    from edgestream import checkpoint

    X, y = drifting(400, 3, 2, seed=12)
    learner = make(3, 2, X, members=3, window_min=8, window_max=32, max_depth=2, max_bins=8,
                   work_per_call=job_units(32, 3, 9, 2, 3) // 8 + 1)
    learner.partial_fit(X[:50], y[:50])
    bundle = load_bundle(export_bundle(learner, tmp_path / "b", name="axgb"))
    lib, ffi, size = bundle.lib, bundle.ffi, bundle.lib.axgb_image_size()
    buffer = ffi.new("uint32_t[]", size // 4 + 1)
    length = ffi.new("uint32_t *")
    seen = set()
    for i in range(50, 330):
        assert bundle.learn_encoded(X[i], int(y[i])) == 0
        learner.learn_one(X[i], y[i])
        if learner.phase in seen:
            continue
        seen.add(learner.phase)
        assert lib.axgb_save(ffi.cast("uint8_t *", buffer), size, length) == 0
        image = bytes(ffi.buffer(ffi.cast("uint8_t *", buffer), size))
        host = checkpoint.read_image(learner, image)
        assert (host.phase, host.pos) == (learner.phase, learner.pos)
        for j in range(i + 1, i + 40):
            assert bundle.learn_encoded(X[j], int(y[j])) == 0
            host.learn_one(X[j], y[j])
        assert np.array_equal(bundle.predict_proba_q15(X[:50]), host.predict_proba_q15(X[:50]))
        again = checkpoint.write_image(host, sequence=7)
        ffi.memmove(ffi.cast("uint8_t *", buffer), again, len(again))
        assert lib.axgb_restore(ffi.cast("uint8_t *", buffer), size) == 0
        assert lib.axgb_restore(ffi.cast("uint8_t *", buffer), size) == 0
        assert np.array_equal(bundle.predict_proba_q15(X[:50]), host.predict_proba_q15(X[:50]))
        assert lib.axgb_reset() is None or True
        bundle = load_bundle(export_bundle(learner, tmp_path / f"b{i}", name="axgb"))  # back on the learner's path
        lib, ffi = bundle.lib, bundle.ffi
    assert seen == {0, 1, 2, 3, 4, 5}


# -- CLI and the emulated device -------------------------------------------------------------------------------

def write_csv(path, X, y):
    lines = [",".join([f"x{j}" for j in range(X.shape[1])] + ["label"])]
    lines += [",".join([*(repr(float(v)) for v in x), str(k)]) for x, k in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_fit_export_simulate_budget(tmp_path, capsys):
    from edgestream.cli import main

    X, y = drifting(800, 3, 2, seed=4)
    data = write_csv(tmp_path / "drift.csv", X, y)
    model, bundle = tmp_path / "axgb.esm", tmp_path / "bundle"
    assert main(["fit", str(data), "--label", "label", "--learner", "axgb", "--strategy", "push",
                 "--no-drift-detection", "--window-min", "8", "--window-max", "64", "--members", "5",
                 "-o", str(model)]) == 0
    out = capsys.readouterr().out
    assert "learned axgb on 800 rows" in out and "AXGB[p]: 5 members of depth 4, windows 8..64" in out
    fitted = model_from_bytes(model.read_bytes())
    assert (fitted.strategy, fitted.drift_detection, fitted.members) == ("push", False, 5)
    assert main(["export", str(model), "-o", str(bundle)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(bundle), str(data), "--label", "label", "--learn", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mismatches"] == 0 and report["n"] == 800 and report["accuracy"] == report["python_accuracy"]
    assert main(["budget", "--learner", "axgb", "--board", "stm32f411", "--ram", "8KiB", "--features", "3",
                 "--classes", "2", "--strategy", "replace"]) == 0
    assert capsys.readouterr().out.startswith("axgb on stm32f411: window_max=")
    assert main(["fit", str(data), "--label", "label", "--learner", "axgb", "--window-min", "65",
                 "--window-max", "64", "-o", str(model)]) != 0
    assert "window_min=65 must not exceed window_max=64" in capsys.readouterr().err


@pytest.mark.parametrize("n_classes", [2, 3])
def test_emulated_cortex_m4_learns_like_python(tmp_path, n_classes):
    """Cortex-M4F under QEMU: every class and Q15 probability of a test-then-train run from the exported state,
    through drift resets (binary) and spread training jobs, equals Python's."""
    from edgestream.targets import run

    X, y = drifting(300, 3, n_classes, seed=5)
    params = dict(members=4, window_min=8, window_max=32, max_depth=3, delta=0.3, clock=4)
    learner = make(3, n_classes, X, **params, work_per_call=min_work(3, n_classes, **params))
    learner.partial_fit(X[:60], y[:60])
    bundle = export_bundle(learner, tmp_path / "m4", name="axgb")
    result = run(bundle, "stm32f411", X[60:], y[60:], learn=True)
    classes, proba = [], []
    for x, label in zip(X[60:], y[60:]):
        proba.append(learner.predict_proba_q15(x[None])[0])
        classes.append(learner.predict_encoded(x[None])[0])
        learner.learn_one(x, label)
    assert np.array_equal(result.classes, classes) and np.array_equal(result.proba, proba)
    assert learner.adwin_.n_detections > 0 or n_classes > 2
