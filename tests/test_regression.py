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


@pytest.mark.parametrize("values", [[0.0, 5e-324], [1.0, 1.0 + 2e-16], [-3.5, -3.5]])
def test_a_spread_too_small_for_a_step_is_encoded_as_a_constant(values):
    """A target that is constant, or whose spread is below what a step can resolve (a subnormal), gets the
    constant target's scale: every row encodes without saturating, within half a step."""
    scale = TargetScale.fit(values)
    codes, saturated = scale.encode(values)
    assert scale.step > 0 and saturated == 0 and np.all(np.abs(scale.decode(codes) - values) <= scale.step / 2)


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
    assert learners.for_task("regression") == ["tree", "forest", "gbdt", "shrubs", "bls", "hoeffding", "irf", "axgb"]


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


def far_rows(n: int, seed: int):
    """Friedman rows whose targets are mostly beyond the range a scale fitted on ``friedman`` spans."""
    X, y = friedman(n, seed)
    return X, 4 * y + 20


@pytest.mark.parametrize("name, params", [
    ("gbdt", {"n_estimators": 5, "max_leaves": 4}), ("bls", {"feature_nodes": 4, "enhancement_nodes": 8}),
    ("hoeffding", {"max_leaves": 4}), ("irf", {"n_trees": 2, "max_leaves": 4})])
def test_model_file_keeps_the_saturated_count_and_counting_goes_on(name, params):
    """Format 2: a regressor's ``saturated_`` (targets learned outside its range) is in the model file, and the
    loaded model adds to it; a file of format 1 (no count) reads as 0; a count that is not one is refused."""
    from edgestream.errors import ModelFileError
    from edgestream.modelfile import MAGIC, model_bytes, model_from_bytes

    X, y = friedman(120)
    X_far, y_far = far_rows(30, 1)
    model = learners.get(name).make("regression", **params).fit(X, y)
    (model.add if name == "gbdt" else model.partial_fit)(X_far[:20], y_far[:20])
    expected = model.target_.encode(y_far[:20])[1]
    assert expected > 10 and model.saturated_ == expected
    data = model_bytes(model)
    loaded = model_from_bytes(data)
    assert loaded.saturated_ == expected and model_bytes(loaded) == data
    (loaded.add if name == "gbdt" else loaded.partial_fit)(X_far[20:], y_far[20:])
    assert loaded.saturated_ == expected + model.target_.encode(y_far[20:])[1]
    end = data.index(b"\n", len(MAGIC))
    header, payload = json.loads(data[len(MAGIC):end]), data[end:]
    old = {key: value for key, value in header.items() if key != "saturated"} | {"format_version": 1}
    assert model_from_bytes(MAGIC + json.dumps(old).encode() + payload).saturated_ == 0
    for bad in (-1, 2.5, "3"):
        with pytest.raises(ModelFileError, match=f"saturated={bad!r} must be a count of rows"):
            model_from_bytes(MAGIC + json.dumps(header | {"saturated": bad}).encode() + payload)


def test_cli_reports_the_saturated_rows_and_images_keep_the_count(capsys, tmp_path):
    """``evaluate`` and ``simulate`` (frozen and ``--learn``) report in ``--json`` the rows whose target is outside
    the model's range; a model continued from a state image keeps its model file's count."""
    X, y = friedman(300)
    X_far, y_far = far_rows(40, 2)
    train_csv, far_csv = tmp_path / "train.csv", tmp_path / "far.csv"
    for path, (rows, target) in ((train_csv, (X, y)), (far_csv, (X_far, y_far))):
        np.savetxt(path, np.column_stack([rows, target]), delimiter=",", comments="",
                   header=",".join([f"x{i}" for i in range(X.shape[1])] + ["y"]))
    model, bundle = tmp_path / "m.esm", tmp_path / "bundle"
    assert edgestream(capsys, "fit", train_csv, "--label", "y", "--learner", "hoeffding", "--max-leaves", 4,
                      "-o", model)[0] == 0
    fitted = load_model(model)
    outside = fitted.target_.encode(y_far)[1]
    assert outside > 20
    code, out = edgestream(capsys, "evaluate", model, far_csv, "--label", "y", "--json")
    assert code == 0 and json.loads(out)["saturated"] == outside
    assert edgestream(capsys, "export", model, "-o", bundle, "--name", "soft")[0] == 0
    for learn in ((), ("--learn",)):
        code, out = edgestream(capsys, "simulate", bundle, far_csv, "--label", "y", *learn, "--json")
        report = json.loads(out)
        assert code == 0 and report["saturated"] == outside and report["mismatches"] == 0
    code, out = edgestream(capsys, "simulate", bundle, far_csv, "--label", "y")
    assert code == 0 and f"{outside} targets saturated, 0 raw output mismatches" in out
    fitted.partial_fit(X_far, y_far)
    learned = tmp_path / "learned.esm"
    save_model(fitted, learned)
    image, continued = tmp_path / "state.img", tmp_path / "continued.esm"
    assert edgestream(capsys, "image", learned, "--to", image)[0] == 0
    assert edgestream(capsys, "image", learned, "--from", image, "-o", continued)[0] == 0
    assert load_model(learned).saturated_ == load_model(continued).saturated_ == outside
    # the image holds the device's state, which has no count (the host encodes the targets): the model's stays
    assert edgestream(capsys, "image", model, "--from", image, "-o", continued)[0] == 0
    assert load_model(continued).saturated_ == 0 and load_model(continued).n_learned == fitted.n_learned
