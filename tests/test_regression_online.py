"""Regression on the online learners: the task seam of the compiled engine and the device C, with Online-BLS's
regressor (the ridge readout with one output learning the target code). Parity of the specification, the engine,
the compile-once runtime and a generated bundle after every learning step; memory; learning; the CLI end to end;
bad input."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_twin import assert_same_state
from edgestream import checkpoint, learners
from edgestream.cli import main
from edgestream.evaluate import prequential
from edgestream.export import export_bundle
from edgestream.learners import OnlineBLSClassifier, OnlineBLSRegressor
from edgestream.learners.bls import raw_output
from edgestream.modelfile import model_bytes, model_from_bytes
from edgestream.simulate import RuntimeLearner, load_bundle, runtime
from edgestream.task import CODE_MAX

ES_ERR_MODEL, ES_ERR_LABEL, ES_ERR_INPUT = 2, 3, 5


def friedman(n: int, seed: int = 0):
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n, noise=1.0, random_state=seed)
    return X.astype(np.float32), y


def bits(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32)


finite = st.floats(min_value=-1e4, max_value=1e4, width=32, allow_subnormal=False)


@st.composite
def regression_streams(draw, max_rows: int = 10):
    """A small stream: rows, targets (some far outside the range of the rows the scale is fitted on, so they
    saturate) and a small configuration."""
    d = draw(st.integers(1, 4))
    n = draw(st.integers(2, max_rows))
    X = np.array(draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=n, max_size=n)), np.float32)
    scale = draw(st.sampled_from([1e-3, 1.0, 1e6]))
    y = np.array(draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n))) * scale
    start = draw(st.integers(1, n))
    params = dict(feature_nodes=draw(st.integers(1, 4)), enhancement_nodes=draw(st.integers(0, 5)),
                  regularization=draw(st.sampled_from([1e-3, 1.0, 50.0])),
                  forgetting=draw(st.sampled_from([1.0, 0.99, 0.6])), seed=draw(st.integers(0, 2**32 - 1)))
    return params, X, y, start


def specification(params, X, y, start) -> OnlineBLSRegressor:
    learner = OnlineBLSRegressor(**params)
    learner.use_engine = False
    return learner.start(X[:start], y[:start])


class Device:
    """The compile-once C runtime on a regressor's exported state."""

    def __init__(self, learner):
        self.runtime = RuntimeLearner(learner).load_export(learner)

    def raw(self, x) -> tuple[int, int]:
        return self.runtime.predict_raw_status(np.asarray(x, dtype=np.float32))

    def learn(self, x, code: int) -> int:
        return self.runtime.learn(np.asarray(x, dtype=np.float32), code)


@settings(max_examples=60, deadline=None)
@given(regression_streams())
def test_engine_and_c_give_the_specifications_raw_output_after_every_step(stream):
    """Property: before and after every learning step the raw output of the Python specification, the compiled
    engine and the C runtime are one integer, and their states are the same bits (saturated targets included)."""
    params, X, y, start = stream
    spec = specification(params, X, y, start)
    engine = copy.deepcopy(spec)
    engine.use_engine = True
    device = Device(spec)
    for i, (x, target) in enumerate(zip(X, y)):
        expected = int(spec.predict_encoded(x[None])[0])
        assert engine.predict_raw(x[None])[0] == expected, f"row {i}: engine"
        assert device.raw(x) == (0, expected), f"row {i}: C"
        code = spec.encode_target(target)
        assert engine.target_ == spec.target_
        spec.learn_encoded(x, code)
        engine.learn_row(x, target)
        assert device.learn(x, code) == 0
        assert_same_state(engine, spec, f"row {i}")
        for name in ("factor", "weights"):
            assert np.array_equal(bits(getattr(spec, name)), bits(device.runtime.regions[name])), f"{name} row {i}"
    assert spec.saturated_ == engine.saturated_
    assert np.array_equal(engine.predict_raw(X), spec.predict_encoded(X))


@settings(max_examples=4, deadline=None)
@given(regression_streams(max_rows=8))
def test_a_bundle_learns_as_python_and_its_state_is_sizeof(tmp_path_factory, stream):
    """Property: a generated bundle compiled with cffi gives Python's raw output on every row of a
    test-then-train run from the exported state, and its state takes the bytes the state description says
    (sizeof through cffi)."""
    params, X, y, start = stream
    learner = OnlineBLSRegressor(**params).start(X[:start], y[:start])
    bundle = load_bundle(export_bundle(learner, tmp_path_factory.mktemp("bundle") / "b", name="blsr"))
    assert bundle.state_size() == learner.state_bytes()
    m = learner.n_nodes
    expected_floats = 2 * X.shape[1] + m * (m + 1) // 2 + m + X.shape[1] + 2 * m + m + 1  # weights m x 1, delta m
    assert learner.layout().size() == -(-(4 * (expected_floats + 1)) // 8) * 8 + 16  # scores: one int32
    raw = bundle.test_then_train_raw(X, y)
    assert np.array_equal(raw, learner.test_then_train(X, y))
    assert np.array_equal(bundle.predict_raw(X), learner.predict_raw(X))
    assert np.allclose(bundle.predict(X), learner.predict(X), rtol=0, atol=0)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=True, allow_infinity=True))
def test_the_readout_rounds_alike_in_c_and_python(readout):
    """Property: es_bls_raw and raw_output agree on every float32, NaN, infinities and halves included."""
    assert runtime()[1].es_bls_raw(readout) == int(raw_output(np.float32([readout]))[0])


def test_rounding_is_half_away_from_zero_and_saturates():
    values = np.float32([0.5, -0.5, 1.49, -1.5, 2.5, np.nan, np.inf, -np.inf, 3e9, -0.0])
    assert raw_output(values).tolist() == [1, -1, 1, -2, 3, 0, 2**30, -2**30, 2**30, 0]


def test_online_bls_learns_friedman_beside_river():
    """Example: prequentially on Friedman #1 (3000 rows, noise 1) the regressor explains most of the variance
    (R² above 0.6), and is not below River's HoeffdingTreeRegressor by more than 0.03 when River is installed."""
    X, y = friedman(3000)
    ours = prequential(OnlineBLSRegressor(), X, y).metrics
    assert ours["r2"] > 0.6
    tree = pytest.importorskip("river.tree")
    from edgestream.evaluate import RiverAdapter

    theirs = prequential(RiverAdapter(tree.HoeffdingTreeRegressor(), [f"x{j}" for j in range(10)]), X, y)
    assert theirs.metrics is not None and ours["r2"] > theirs.metrics["r2"] - 0.03


def test_forgetting_follows_a_changed_target():
    """Drift: after the target's relation flips sign, forgetting (mu = 0.99) recovers where mu = 1 cannot."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(4000, 3)).astype(np.float32)
    y = np.where(np.arange(4000) < 2000, 1.0, -1.0) * (2 * X[:, 0] + X[:, 1])
    tail = {}
    for mu in (1.0, 0.99):
        learner = OnlineBLSRegressor(feature_nodes=6, enhancement_nodes=6, forgetting=mu).start(X[:500], y[:500])
        values = learner.target_.decode(learner.test_then_train(X, y))
        tail[mu] = float(np.sqrt(np.mean((values[3000:] - y[3000:]) ** 2)))
    assert tail[0.99] < 0.2 and tail[0.99] < tail[1.0] / 3


def test_river_protocol_cold_start_and_scikit_learn_score():
    """River's protocol: dict rows, a cold start predicting the mean of the targets seen (0.0 before any), then
    floats; scikit-learn's score is R²; the regressor is a River regressor when River is installed."""
    X, y = friedman(400)
    model = OnlineBLSRegressor(feature_nodes=8, enhancement_nodes=8)
    model.warm_up = 50
    rows = [{f"x{j}": float(v) for j, v in enumerate(x)} for x in X]
    assert model.predict_one(rows[0]) == 0.0
    model.learn_one(rows[0], y[0])
    assert model.predict_one(rows[1]) == pytest.approx(y[0])
    for row, target in zip(rows[1:], y[1:]):
        model.learn_one(row, float(target))
    assert isinstance(model.predict_one(rows[0]), float) and model.n_learned == 400
    assert model.score(X, y) == pytest.approx(1 - np.sum((model.predict(X) - y) ** 2) / np.sum((y - y.mean()) ** 2))
    base = pytest.importorskip("river.base")
    assert isinstance(model, base.Regressor) and not isinstance(OnlineBLSClassifier(), base.Regressor)


def test_model_file_and_registry():
    X, y = friedman(300)
    learner = OnlineBLSRegressor(feature_nodes=3, enhancement_nodes=5, seed=9).fit(X, y)
    copy_ = model_from_bytes(model_bytes(learner))
    assert type(copy_) is OnlineBLSRegressor and copy_.target_ == learner.target_
    assert np.array_equal(copy_.predict_raw(X), learner.predict_raw(X))
    assert np.array_equal(copy_.test_then_train(X[:50], y[:50]), learner.test_then_train(X[:50], y[:50]))
    assert learners.get("bls", "regression").regressor is OnlineBLSRegressor
    image = checkpoint.write_image(learner)  # a state image: its model hash holds the target scale
    restored = checkpoint.read_image(copy_, image)
    assert np.array_equal(restored.predict_raw(X), learner.predict_raw(X))
    other = OnlineBLSRegressor(feature_nodes=3, enhancement_nodes=5, seed=9).fit(X, y * 2)
    assert checkpoint.model_hash(other) != checkpoint.model_hash(learner)
    assert learners.of_model(learner) is learners.get("bls")


def test_the_device_refuses_bad_targets_and_rows_unchanged():
    """The C refuses code -32768 (ES_ERR_LABEL), a NaN feature (ES_ERR_INPUT) and a regression call on a
    classifier's state (ES_ERR_MODEL), changing nothing; Python refuses the same with a message."""
    X, y = friedman(60)
    learner = OnlineBLSRegressor(feature_nodes=3, enhancement_nodes=4).fit(X[:40], y[:40])
    device = Device(learner)
    before = {name: device.runtime.regions[name].copy() for name in ("factor", "weights")}
    counters = device.runtime.counter_values()
    row = X[40].copy()
    row[2] = np.nan
    assert device.learn(X[40], -CODE_MAX - 1) == ES_ERR_LABEL
    assert device.learn(row, 0) == ES_ERR_INPUT and device.raw(row)[0] == ES_ERR_INPUT
    for name, values in before.items():
        assert np.array_equal(bits(values), bits(device.runtime.regions[name]))
    assert device.runtime.counter_values() == counters
    classifier = OnlineBLSClassifier(feature_nodes=3, enhancement_nodes=4).fit(X[:40], y[:40] > 14)
    ffi, lib = runtime()
    state = RuntimeLearner(classifier).load_export(classifier)
    out = ffi.new("int32_t *")
    x = ffi.from_buffer("float[]", np.ascontiguousarray(X[40]))
    assert lib.es_bls_predict_raw(state.model, x, out) == ES_ERR_MODEL
    assert lib.es_bls_learn_target(state.model, x, 5) == ES_ERR_MODEL
    with pytest.raises(ValueError, match=r"target code -32768 is outside -32767..32767"):
        learner.learn_encoded(X[40], -32768)
    with pytest.raises(ValueError, match="the target of row 1 is nan"):
        learner.partial_fit(X[40:43], np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match="refuses NaN"):
        learner.learn_one(row, 1.0)
    assert learner.n_learned == 40


def edgestream(capsys, *argv):
    code = main([str(arg) for arg in argv])
    return code, capsys.readouterr().out


def test_cli_fit_export_simulate_evaluate(capsys, tmp_path):
    """End to end: fit a bls regressor (prequential MAE/RMSE/R²), export it, and the bundle's C learns the rows
    with Python's raw output on every one (0 mismatches), frozen and learning; evaluate speaks MAE/RMSE/R²."""
    X, y = friedman(800)
    data = tmp_path / "friedman.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", comments="",
               header=",".join([f"x{j}" for j in range(X.shape[1])] + ["y"]))
    model, bundle = tmp_path / "m.esm", tmp_path / "bundle"
    code, out = edgestream(capsys, "fit", data, "--label", "y", "--learner", "bls", "--task", "regression",
                           "--feature-nodes", 8, "--enhancement-nodes", 16, "-o", model, "--json")
    report = json.loads(out)
    assert code == 0 and report["task"] == "regression" and report["target"]["divisor"] == 1
    assert set(report["prequential"]) >= {"mae", "rmse", "r2"} and report["prequential"]["r2"] > 0.5
    assert edgestream(capsys, "export", model, "-o", bundle, "--name", "soft")[0] == 0
    header = (bundle / "src" / "soft.h").read_text()
    assert "es_status soft_learn(const float *features, int16_t target);" in header
    code, out = edgestream(capsys, "simulate", bundle, data, "--label", "y", "--learn", "--json")
    learned = json.loads(out)
    assert code == 0 and learned["mismatches"] == 0 and learned["n"] == 800
    assert learned["r2"] == learned["python_r2"] and learned["state_bytes"] == OnlineBLSRegressor(
        feature_nodes=8, enhancement_nodes=16).start(X[:10], y[:10]).state_bytes()
    code, out = edgestream(capsys, "simulate", bundle, data, "--label", "y", "--json")
    assert code == 0 and json.loads(out)["mismatches"] == 0
    code, out = edgestream(capsys, "evaluate", model, data, "--label", "y", "--json")
    assert code == 0 and json.loads(out)["r2"] == pytest.approx(learned["r2"])


def test_cli_fit_within_a_ram_budget(capsys, tmp_path):
    """``fit --ram``: the best scored configuration of the search grid whose budget fits (the search ranks
    regressors by their skill, 1 - RMSE / sd), reported with the budget and the search."""
    X, y = friedman(300)
    data = tmp_path / "friedman.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", comments="",
               header=",".join([f"x{j}" for j in range(X.shape[1])] + ["y"]))
    code, out = edgestream(capsys, "fit", data, "--label", "y", "--learner", "bls", "--ram", "6KiB", "--board",
                           "stm32f411", "-o", tmp_path / "m.esm", "--json")
    report = json.loads(out)
    budget = report["budget"]
    assert code == 0 and budget["fits"] and budget["ram_at_peak_bytes"] <= 6 * 1024
    chosen = (report["params"]["feature_nodes"], report["params"]["enhancement_nodes"])
    assert chosen < (16, 48)  # the default does not fit
    assert budget["config"]["classes"] == 1
    search = report["search"]
    assert search["head"]["target_sd"] == pytest.approx(np.std(y)) and search["candidates"][search["chosen"]]["fits"]
