"""Regression: the task seam, the tree and forest regressors, their fixed-point target and C parity."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import learners
from edgestream.cli import main
from edgestream.encoding import encode
from edgestream.frozen import DeviceModel
from edgestream.learners import ForestRegressor, TreeClassifier, TreeRegressor
from edgestream.modelfile import load_model, save_model
from edgestream.simulate import runtime_forest_raw
from edgestream.task import CODE_MAX, TargetScale, infer_task, regression_metrics
from edgestream.train import train


def friedman(n: int, seed: int = 0):
    from sklearn.datasets import make_friedman1

    return make_friedman1(n, noise=1.0, random_state=seed)


@st.composite
def regression_tables(draw):
    n_rows = draw(st.integers(2, 120))
    n_features = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)) * draw(st.sampled_from([1e-3, 1.0, 1e6]))
    X[rng.random(X.shape) < draw(st.sampled_from([0.0, 0.1]))] = np.nan
    scale = draw(st.sampled_from([1e-6, 1.0, 1e9]))
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=n_rows)) * scale + draw(st.sampled_from([0.0, -5e3, 1e12]))
    return X, y, seed


@settings(max_examples=30, deadline=None)
@given(regression_tables(), st.sampled_from(["tree", "forest"]), st.sampled_from(["speed", "size"]))
def test_regressor_raw_outputs_equal_the_c_runtime(table, learner, optimize):
    """Property: the C runtime's raw output equals the Python regressor's on every row, rows with NaN and rows
    outside the training range included, in every encoding."""
    X, y, seed = table
    params = {"max_depth": 5} if learner == "tree" else {"n_trees": 3, "max_depth": 4, "random_state": seed}
    model = learners.get(learner, "regression").make("regression", **params).fit(X, y)
    rows = np.concatenate([X, X * 3.0 + 1.0])
    encoded = encode(DeviceModel.from_model(model), optimize)
    assert np.array_equal(runtime_forest_raw(encoded, rows.astype(np.float32)), model.predict_raw(rows))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1e12, 1e12), min_size=1, max_size=50), st.floats(-1e13, 1e13))
def test_target_codes_stay_in_int16_and_saturate_counted(values, outside):
    """Property: every code is within ±CODE_MAX, the fitted rows never saturate, a value beyond the range does
    and is counted, and decoding a code is within half a step of the value it encodes."""
    scale = TargetScale.fit(values)
    codes, saturated = scale.encode(values)
    assert saturated == 0 and np.abs(codes.astype(np.int64)).max() <= CODE_MAX
    assert np.all(np.abs(scale.decode(codes) - np.asarray(values)) <= scale.step * 0.5 * (1 + 1e-9) + 1e-6 * np.abs(values))
    codes, saturated = scale.encode([outside])
    beyond = abs(outside - scale.offset) / scale.step > CODE_MAX + 0.5
    assert saturated == int(beyond) and abs(int(codes[0])) <= CODE_MAX


def test_infer_task_reads_the_label_column():
    assert infer_task(np.array(["a", "b", "a"])) == "classification"
    assert infer_task(np.arange(10) % 3) == "classification"
    assert infer_task(np.array([0.5, 1.0, 2.0])) == "regression"
    assert infer_task(np.arange(1000)) == "regression"  # many integer values: a count, not classes


def test_regressors_learn_friedman_as_scikit_learn_does():
    """Example: on Friedman #1 the binned fixed-point regressors reach scikit-learn's trees of the same limits
    (R² within 0.03), and the forest beats the single tree."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    X, y = friedman(3000)
    X_test, y_test = friedman(1000, seed=1)
    ours_tree = TreeRegressor(max_depth=6).fit(X, y).score(X_test, y_test)
    ours_forest = ForestRegressor(n_trees=10, max_depth=6).fit(X, y).score(X_test, y_test)
    sk_tree = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y).score(X_test, y_test)
    sk_forest = RandomForestRegressor(10, max_depth=6, random_state=0).fit(X, y).score(X_test, y_test)
    assert ours_tree > sk_tree - 0.03 and ours_forest > sk_forest - 0.03
    assert ours_forest > ours_tree


def test_model_file_keeps_the_target_scale(tmp_path):
    X, y = friedman(300)
    model = ForestRegressor(n_trees=3, max_depth=4).fit(X, y)
    loaded = load_model(save_model(model, tmp_path / "m.esm"))
    assert isinstance(loaded, ForestRegressor) and loaded.target_ == model.target_
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_regression_metrics_by_hand():
    metrics = regression_metrics([1.0, 2.0, 3.0], [1.0, 2.0, 5.0])
    assert metrics["mae"] == pytest.approx(2 / 3) and metrics["rmse"] == pytest.approx(np.sqrt(4 / 3))
    assert metrics["r2"] == pytest.approx(1 - 4 / 2)


@pytest.mark.parametrize("y, message", [
    (np.array([1.0, np.nan, 3.0]), "the target of row 1 is nan"),
    (np.array([1.0, np.inf, 3.0]), "the target of row 1 is inf"),
    (np.array(["1.5", "x", "2"], dtype=object), "the target of row 1 is 'x', not a number"),
])
def test_a_bad_target_is_refused_naming_the_row(y, message):
    with pytest.raises(ValueError, match=message):
        TreeRegressor().fit(np.zeros((3, 1)), y)


def test_classification_asked_of_many_fractions_is_refused():
    X, y = friedman(300)
    with pytest.raises(ValueError, match="--task classification: .* --task regression"):
        train("tree", X, y, {}, task="classification")


def test_a_learner_without_a_regression_form_names_those_with_one():
    X, y = friedman(100)
    with_one = learners.for_task("regression")
    without = next(name for name in learners.TRAINABLE if name not in with_one)
    with pytest.raises(ValueError, match=f"'{without}' has no regression form yet; the learners with one: "
                                         f"{', '.join(with_one)}"):
        train(without, X, y, {})


def test_classifier_and_regressor_share_one_registry_entry():
    assert learners.of_model(TreeRegressor()) is learners.of_model(TreeClassifier()) is learners.get("tree")
    assert learners.for_task("regression") == ["tree", "forest", "gbdt", "bls", "hoeffding", "irf", "axgb"]


def edgestream(capsys, *argv):
    code = main([str(arg) for arg in argv])
    return code, capsys.readouterr().out


def test_cli_fit_export_simulate_predict_a_regressor(capsys, tmp_path):
    """End to end: fit infers regression from a numeric label, the bundle's C gives the Python raw outputs on
    every row (0 mismatches), and predict writes one decoded value per row."""
    X, y = friedman(400)
    data = tmp_path / "soft.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", comments="",
               header=",".join([f"x{i}" for i in range(X.shape[1])] + ["y"]))
    model, bundle = tmp_path / "m.esm", tmp_path / "bundle"
    code, out = edgestream(capsys, "fit", data, "--label", "y", "--learner", "forest", "--n-trees", 4, "-o", model,
                           "--json")
    report = json.loads(out)
    assert code == 0 and report["task"] == "regression" and report["target"]["divisor"] == 4
    assert report["training"]["r2"] > 0.8
    assert edgestream(capsys, "export", model, "-o", bundle, "--name", "soft")[0] == 0
    code, out = edgestream(capsys, "simulate", bundle, data, "--label", "y", "--json")
    scores = json.loads(out)
    assert code == 0 and scores["mismatches"] == 0 and scores["n"] == 400
    assert scores["r2"] == pytest.approx(report["training"]["r2"])
    code, out = edgestream(capsys, "predict", model, data, "--label", "y")
    values = np.array(out.split(), dtype=float)
    assert code == 0 and len(values) == 400 and np.allclose(values, load_model(model).predict(X), rtol=1e-8)
