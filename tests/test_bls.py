"""Online-BLS: the C runtime (es_bls.c) equals the Python specification bit for bit after every update; the
factor stays a Cholesky factor of the regularized, forgetting Gram matrix; memory and bad input."""

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_twin import EngineTwin
from engine_twin import assert_same_state as assert_same_engine_state
from edgestream import OnlineBLSClassifier
from edgestream.learners import OnlineBLSRegressor
from edgestream.export import export_bundle
from edgestream.learners.bls import STATE, column_offsets, tanh_approx, unpack_factor, xorshift_uniform
from edgestream.modelfile import model_from_bytes, model_bytes
from edgestream.simulate import RuntimeLearner, load_bundle, runtime
from edgestream.state import runtime_header_path

ES_ERR_LABEL, ES_ERR_INPUT = 3, 5


def bits(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32)


@pytest.fixture(scope="module")
def scalar_lib():
    """es_f32_sqrt and es_bls_tanh of the compiled runtime."""
    return runtime()[1]


class Device:
    """The compiled runtime on a learner's exported state (numpy regions), plus its predict call."""

    def __init__(self, learner):
        self.runtime = RuntimeLearner(learner)
        arrays, counters = learner.device_state()
        for name, values in arrays.items():
            self.runtime.regions[name][...] = values
        for name, value in counters.items():
            setattr(self.runtime.counters, name, value)
        self.out = self.runtime.ffi.new("uint8_t *")

    def region(self, name):
        return self.runtime.regions[name]

    def learn(self, x, label) -> int:
        return self.runtime.learn(np.asarray(x, dtype=np.float32), label)

    def proba(self, x) -> tuple[int, np.ndarray]:
        proba = np.zeros(self.runtime.n_classes, dtype=np.uint16)
        return self.runtime.predict_proba_status(np.asarray(x, dtype=np.float32), proba), proba

    def predict(self, x) -> tuple[int, int]:
        row = np.ascontiguousarray(x, dtype=np.float32)
        ffi, lib = self.runtime.ffi, self.runtime.lib
        status = lib.es_bls_predict(self.runtime.model, ffi.from_buffer("float[]", row), self.out)
        return status, self.out[0]


def assert_same_state(learner, device, where=""):
    for name in ("factor", "weights", "center", "scale"):
        assert np.array_equal(bits(getattr(learner, name)), bits(device.region(name))), f"{name} differs {where}"
    assert device.runtime.counter_values() == {"n_learned": learner.n_learned, "refresh": learner.refresh}


# -- arithmetic shared by both sides ---------------------------------------------------------------------------

def test_sqrt_is_correctly_rounded(scalar_lib):
    rng = np.random.default_rng(0)
    patterns = np.concatenate([rng.integers(1, 0x7F800000, 100_000, dtype=np.uint32),  # positive, subnormal too
                               np.arange(1, 3000, dtype=np.uint32), 0x7F7FFFFF - np.arange(3000, dtype=np.uint32),
                               0x00800000 + np.arange(-1500, 1500).astype(np.uint32)])
    values = patterns.view(np.float32)
    got = np.array([scalar_lib.es_f32_sqrt(float(v)) for v in values], dtype=np.float32)
    assert np.array_equal(bits(got), bits(np.sqrt(values)))
    for special in (0.0, -0.0, math.inf):
        assert bits([scalar_lib.es_f32_sqrt(special)]) == bits([np.sqrt(np.float32(special))])
    assert math.isnan(scalar_lib.es_f32_sqrt(-1.0)) and math.isnan(scalar_lib.es_f32_sqrt(math.nan))


@given(st.floats(min_value=0, max_value=float(np.finfo(np.float32).max), width=32, allow_subnormal=True))
@settings(max_examples=300)
def test_sqrt_property(scalar_lib, x):
    assert bits([scalar_lib.es_f32_sqrt(x)]) == bits([np.sqrt(np.float32(x))])


def test_tanh_approximation(scalar_lib):
    x = np.concatenate([np.linspace(-6, 6, 20001, dtype=np.float32), np.float32([3, -3, 2.9999998, 1e-30, -0.0])])
    got = np.array([scalar_lib.es_bls_tanh(float(v)) for v in x], dtype=np.float32)
    assert np.array_equal(bits(got), bits(tanh_approx(x)))
    assert np.abs(got.astype(np.float64) - np.tanh(x.astype(np.float64))).max() < 0.024
    assert np.diff(got[:20001]).min() >= -4e-7 and np.abs(got).max() <= 1 + 2**-23  # monotone up to rounding


def test_random_stream_is_exact_and_uniform():
    u = xorshift_uniform(7, 20000)
    assert u.dtype == np.float32 and u.min() >= -1 and u.max() < 1 and abs(float(u.mean())) < 0.02
    assert np.array_equal(u[:10], xorshift_uniform(7, 10)) and not np.array_equal(u[:10], xorshift_uniform(8, 10))
    assert np.all((u.astype(np.float64) + 1) * 2**23 == np.round((u.astype(np.float64) + 1) * 2**23))


# -- the C equals Python after every update --------------------------------------------------------------------

finite = st.floats(min_value=-1e4, max_value=1e4, width=32, allow_subnormal=False)


@st.composite
def streams(draw):
    d = draw(st.integers(1, 4))
    n_classes = draw(st.integers(2, 4))
    n = draw(st.integers(1, 10))
    X = np.array(draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=n, max_size=n)), np.float32)
    y = draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n))
    params = dict(feature_nodes=draw(st.integers(1, 4)), enhancement_nodes=draw(st.integers(0, 5)),
                  regularization=draw(st.sampled_from([1e-3, 0.01, 1.0, 50.0])),
                  forgetting=draw(st.sampled_from([1.0, 0.99, 0.9, 0.6])), seed=draw(st.integers(0, 2**32 - 1)))
    sample = X[: draw(st.integers(1, n))]
    return params, sample, X, np.array(y), n_classes


@given(streams())
@settings(max_examples=250)
def test_c_equals_python_after_every_update(stream):
    params, sample, X, y, n_classes = stream
    learner = OnlineBLSClassifier(**params).start(sample, np.arange(n_classes))
    device, twin = Device(learner), EngineTwin(learner)
    assert_same_state(learner, device, "at start")
    for i, (x, label) in enumerate(zip(X, y)):
        status, proba = device.proba(x)
        assert status == 0 and np.array_equal(proba, learner.predict_proba_q15(x[None])[0]), f"row {i}"
        assert int(proba.sum()) == 32768
        expected = learner.predict_encoded(x[None])[0]
        assert device.predict(x) == (0, expected), f"row {i}"
        learner.learn_encoded(x, int(label))
        assert device.learn(x, int(label)) == 0
        assert_same_state(learner, device, f"after row {i}")
        twin.step(x, int(label), learner, expected, f"row {i}")
        assert (learner.factor[column_offsets(learner.n_nodes)] > 0).all()


def drifting_stream(n, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, size=(n, d)).astype(np.float32)
    y = ((X[:, 0] + X[:, 1] > 10) ^ (np.arange(n) > n // 2)).astype(int)
    return X, y


@pytest.mark.parametrize("feature_nodes, enhancement_nodes", [(40, 30), (100, 170)])
def test_engine_draws_long_weight_streams_like_the_specification(feature_nodes, enhancement_nodes):
    """The host engine draws the random weights in blocks of 4,096 (16 lanes of 256 joined by a jump) and keeps
    up to 16,384 of them in a table: 1,430 weights (one partial block, into the table) and 17,670 (beyond the
    table: four full blocks and a partial one every sample) give the specification's classes and state after
    every row."""
    X, y = drifting_stream(12)
    spec = OnlineBLSClassifier(feature_nodes=feature_nodes, enhancement_nodes=enhancement_nodes, forgetting=0.99)
    spec.start(X[:6], [0, 1])
    spec.use_engine = False
    twin = EngineTwin(spec)
    for i, (x, label) in enumerate(zip(X, y)):
        expected = spec.predict_encoded(x[None])[0]
        spec.learn_encoded(x, int(label))
        twin.step(x, int(label), spec, expected, f"row {i}")


def test_engine_reuses_the_broad_features_of_the_row_it_predicted_only():
    """The host engine keeps the broad features of the row last predicted for a learn call on it: learning a row
    other than the one predicted, the same row twice (the first learn call consumed them), and a row equal to the
    center (standardized to zeros, as the scratch starts) on a fresh engine all give the specification's state."""
    X, y = drifting_stream(8)
    spec = OnlineBLSClassifier(feature_nodes=6, enhancement_nodes=10, forgetting=0.99).start(X[:6], [0, 1])
    spec.use_engine = False
    engine = copy.deepcopy(spec)
    engine.use_engine = True
    center = spec.center.copy()
    steps = [("learn", center, 1), ("predict", X[0], None), ("learn", X[1], 0), ("predict", X[2], None),
             ("learn", X[2], int(y[2])), ("learn", X[2], int(y[2])), ("predict", center, None), ("learn", center, 0)]
    for i, (call, x, label) in enumerate(steps):
        if call == "predict":
            assert engine.predict_row(x) == spec.predict_row(x), f"step {i}"
        else:
            engine.learn_row(x, label)
            spec.learn_encoded(x, label)
            assert_same_engine_state(engine, spec, f"step {i}")


def test_engines_of_two_models_in_turn_learn_as_the_specification():
    """Two models of the same size and other seeds learning in turn on one thread (the host engine's table of
    weights changes hands at every call) learn as their specifications."""
    X, y = drifting_stream(10)
    pairs = []
    for seed in (1, 2):
        spec = OnlineBLSClassifier(feature_nodes=6, enhancement_nodes=10, seed=seed).start(X[:6], [0, 1])
        spec.use_engine = False
        pairs.append((EngineTwin(spec), spec))
    for i, (x, label) in enumerate(zip(X, y)):
        for twin, spec in pairs:
            expected = spec.predict_encoded(x[None])[0]
            spec.learn_encoded(x, int(label))
            twin.step(x, int(label), spec, expected, f"row {i}, seed {spec.seed}")


@pytest.mark.parametrize("forgetting", [1.0, 0.99])
def test_factor_stays_a_cholesky_factor_over_a_long_stream(forgetting):
    """``L L^T`` tracks the float64 recurrence of the regularized forgetting Gram matrix from the same broad
    features; the diagonal stays positive; the weights stay close to the float64 ridge solution."""
    X, y = drifting_stream(2000)
    learner = OnlineBLSClassifier(feature_nodes=6, enhancement_nodes=14, regularization=0.01,
                                  forgetting=forgetting).start(X[:200], [0, 1])
    m, config = learner.n_nodes, learner.device_config()
    mu, rho = float(config["sqrt_forget"]) ** 2, float(config["refresh_sqrt"]) ** 2
    K = np.eye(m) * float(np.float32(0.01))
    V = np.zeros((m, 2))
    for step, (x, label) in enumerate(zip(X, y)):
        a = learner.broad(x).astype(np.float64)
        j = learner.refresh
        K = mu * K + np.outer(a, a)
        K[j, j] += rho
        V = mu * V + np.outer(a, np.eye(2)[label])
        learner.learn_encoded(x, int(label))
        if step % 500 == 499 or step == len(X) - 1:
            L = unpack_factor(learner.factor, m).astype(np.float64)
            assert (np.diag(L) > 0).all() and np.isfinite(L).all()
            assert np.abs(L @ L.T - K).max() <= 1e-4 * np.abs(K).max()
            W = np.linalg.solve(K, V)
            assert np.abs(learner.weights - W).max() <= 1e-2 * max(1.0, np.abs(W).max())
    assert learner.n_learned == len(X)


def test_forgetting_follows_drift():
    X, y = drifting_stream(2000, seed=3)
    accuracy = {}
    for mu in (1.0, 0.99):
        learner = OnlineBLSClassifier(feature_nodes=6, enhancement_nodes=14, forgetting=mu).start(X[:500], [0, 1])
        tail = []
        for i, (x, label) in enumerate(zip(X, y)):
            if i >= 1500:
                tail.append(learner.predict_encoded(x[None])[0] == label)
            learner.learn_encoded(x, int(label))
        accuracy[mu] = np.mean(tail)
    assert accuracy[0.99] > 0.9 and accuracy[0.99] > accuracy[1.0] + 0.1


# -- memory, model files, bad input ----------------------------------------------------------------------------

def test_header_and_layout_match_the_c():
    assert runtime_header_path(STATE).read_text() == STATE.header()
    ffi, _ = runtime()
    assert ffi.sizeof("es_bls_config") == STATE.config_bytes()
    assert ffi.sizeof("es_bls_counters") == 16  # uint64 n_learned, uint16 refresh, padding
    learner = OnlineBLSClassifier(feature_nodes=5, enhancement_nodes=7).start(np.eye(3), [0, 1, 2])
    layout = learner.layout()
    m = 12
    expected = {"center": 3, "scale": 3, "factor": m * (m + 1) // 2, "weights": m * 3, "inputs": 3, "broad": m,
                "rotate": m, "delta": m * 3, "residual": 3, "scores": 3}
    assert {r.name: r.count for r in layout.regions} == expected
    assert layout.size() == -(-4 * sum(expected.values()) // 8) * 8 + 16
    assert layout.size(packed=True) == 4 * sum(expected.values()) + 10


def test_bundle_state_size_and_exported_state(tmp_path):
    X, y = drifting_stream(200)
    learner = OnlineBLSClassifier(feature_nodes=4, enhancement_nodes=6, forgetting=0.95).fit(X[:100], y[:100])
    bundle = load_bundle(export_bundle(learner, tmp_path / "b", name="bls"))
    assert bundle.state_size() == learner.state_bytes()
    header = (tmp_path / "b" / "src" / "bls.h").read_text()
    assert "(NaN refused with ES_ERR_INPUT)" in header and "NaN = missing" not in header
    text = (tmp_path / "b" / "src" / "bls.c").read_text()
    assert "static const es_bls_config bls_config = { 4u, 2u, 4u, 6u, 1u, 0x" in text
    for x, label in zip(X[100:], y[100:]):
        assert np.array_equal(bundle.predict_proba_q15(x[None]), learner.predict_proba_q15(x[None]))
        assert bundle.predict_encoded(x[None])[0] == learner.predict_encoded(x[None])[0]
        assert bundle.learn_encoded(x, int(label)) == 0
        learner.learn_encoded(x, int(label))
    assert bundle.learn_encoded(np.float32([np.nan, 0, 0, 0]), 0) == ES_ERR_INPUT
    assert bundle.learn_encoded(X[0], 2) == ES_ERR_LABEL


def test_model_file_round_trip():
    X, y = drifting_stream(150)
    learner = OnlineBLSClassifier(feature_nodes=3, enhancement_nodes=5, seed=9).fit(X, np.array(["a", "b"])[y])
    copy = model_from_bytes(model_bytes(learner))
    assert type(copy) is OnlineBLSClassifier and copy.get_params() == learner.get_params()
    for name in ("factor", "weights", "center", "scale"):
        assert np.array_equal(bits(getattr(copy, name)), bits(getattr(learner, name)))
    assert (copy.n_learned, copy.refresh) == (learner.n_learned, learner.refresh)
    assert np.array_equal(copy.predict_proba_q15(X), learner.predict_proba_q15(X))
    arrays = learner.saved_arrays()
    broken = dict(arrays, factor=arrays["factor"].copy())
    broken["factor"][column_offsets(learner.n_nodes)[2]] = 0
    with pytest.raises(ValueError, match="diagonal must be positive"):
        copy.restore_arrays(broken)
    with pytest.raises(ValueError, match="shape"):
        copy.restore_arrays(dict(arrays, weights=arrays["weights"][:-1]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_refused_and_nothing_changes(bad):
    X, y = drifting_stream(40)
    learner = OnlineBLSClassifier(feature_nodes=3, enhancement_nodes=4).fit(X[:20], y[:20])
    device = Device(learner)
    before = {name: device.region(name).copy() for name in ("factor", "weights")}
    counters = device.runtime.counter_values()
    row = X[20].copy()
    row[1] = bad
    assert device.learn(row, 0) == ES_ERR_INPUT
    assert device.proba(row)[0] == ES_ERR_INPUT and device.predict(row)[0] == ES_ERR_INPUT
    assert device.learn(X[20], 2) == ES_ERR_LABEL and device.learn(X[20], 255) == ES_ERR_LABEL
    for name, values in before.items():
        assert np.array_equal(bits(values), bits(device.region(name)))
    assert device.runtime.counter_values() == counters
    saved = {name: getattr(learner, name).copy() for name in ("factor", "weights")}
    with pytest.raises(ValueError, match="feature 1 of row 0 is .*refuses NaN and infinite"):
        learner.learn_one(row, 0)
    with pytest.raises(ValueError, match="refuses NaN"):
        learner.predict(row[None])
    with pytest.raises(ValueError, match="label 7 is not one of the configured classes"):
        learner.learn_one(X[20], 7)
    with pytest.raises(ValueError, match="label index 2 is outside 0..1"):
        learner.learn_encoded(X[20], 2)
    for name, values in saved.items():
        assert np.array_equal(values, getattr(learner, name))
    assert learner.n_learned == 20
    with pytest.raises(ValueError, match="X has 3 features, but OnlineBLSClassifier is expecting 4 features"):
        learner.predict(X[:2, :3])  # scikit-learn's check, fit having set n_features_in_
    with pytest.raises(ValueError, match="X has 3 features, the model has 4"):
        learner.predict_proba_q15(X[:2, :3])  # the specification's own


@pytest.mark.parametrize("params, message", [
    (dict(feature_nodes=0), "feature_nodes=0 must be an integer from 1 to 1024"),
    (dict(enhancement_nodes=2000), "enhancement_nodes=2000"),
    (dict(regularization=0.0), "regularization=0.0 must be a number"),
    (dict(forgetting=1.5), r"forgetting=1.5 must be a number in \(0.5, 1\]"),
    (dict(forgetting=0.51, feature_nodes=64, enhancement_nodes=64, regularization=1e-6), "could underflow"),
    (dict(seed=-1), "seed=-1"),
])
def test_bad_parameters(params, message):
    """Checked when the learner starts (scikit-learn's rule: the constructor only stores them), for both tasks."""
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=message):
        OnlineBLSClassifier(**params).fit(X, np.arange(20) % 2)
    with pytest.raises(ValueError, match=message):
        OnlineBLSRegressor(**params).fit(X, X[:, 0])


def test_start_refuses_bad_samples():
    with pytest.raises(ValueError, match="1 classes given, Online-BLS needs 2 to 255"):
        OnlineBLSClassifier().start(np.ones((3, 2)), [0])
    with pytest.raises(ValueError, match="refuses NaN"):
        OnlineBLSClassifier().start(np.float32([[0, np.nan]]), [0, 1])
    with pytest.raises(RuntimeError, match="call start"):
        OnlineBLSClassifier().learn_encoded(np.zeros(2), 0)


# -- CLI and emulated devices ----------------------------------------------------------------------------------

def write_csv(path, X, y):
    lines = [",".join([*(f"f{j}" for j in range(X.shape[1])), "label"])]
    lines += [",".join([*(repr(float(v)) for v in x), str(k)]) for x, k in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_fit_export_simulate(tmp_path, capsys):
    from edgestream.cli import main

    X, y = drifting_stream(600, seed=4)
    data = write_csv(tmp_path / "drift.csv", X, y)
    model, bundle = tmp_path / "bls.esm", tmp_path / "bundle"
    assert main(["fit", str(data), "--label", "label", "--learner", "bls", "--feature-nodes", "6",
                 "--enhancement-nodes", "10", "--forgetting", "0.98", "--regularization", "0.01",
                 "-o", str(model)]) == 0
    out = capsys.readouterr().out
    assert "learned bls on 600 rows (input scaling from all rows)" in out and "6 feature + 10 enhancement" in out
    assert main(["export", str(model), "-o", str(bundle)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(bundle), str(data), "--label", "label", "--learn", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mismatches"] == 0 and report["n"] == 600 and report["accuracy"] == report["python_accuracy"]
    assert report["accuracy"] > 0.8
    assert main(["budget", "--learner", "bls", "--board", "stm32f411", "--ram", "8KiB", "--features", "4",
                 "--classes", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bls on stm32f411: feature_nodes=12, enhancement_nodes=36")  # 16 + 48 needs 10 KB


@pytest.mark.parametrize("board", ["stm32f411", "rp2040"])
def test_emulated_device_learns_like_python(tmp_path, board):
    """Cortex-M4F (hardware float) and Cortex-M0 (soft float) under QEMU: every class and Q15 probability of
    a test-then-train run from the exported state equals Python's."""
    from edgestream.targets import run

    X, y = drifting_stream(120, seed=5)
    learner = OnlineBLSClassifier(feature_nodes=5, enhancement_nodes=11, forgetting=0.97).fit(X[:40], y[:40])
    bundle = export_bundle(learner, tmp_path / board, name="bls")
    result = run(bundle, board, X[40:], y[40:], learn=True)
    classes, proba = [], []
    for x, label in zip(X[40:], y[40:]):
        proba.append(learner.predict_proba_q15(x[None])[0])
        classes.append(learner.predict_encoded(x[None])[0])
        learner.learn_encoded(x, int(label))
    assert np.array_equal(result.classes, classes) and np.array_equal(result.proba, proba)
