"""The in-place online GBDT's regression form: squared loss on the fixed-point target, add and delete in place
against the from-scratch reference, the exported bundle's raw output equal to Python's after every update, the
accuracy of scikit-learn's boosting on Friedman #1, exact undo, model files and the CLI."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import learners
from edgestream.cli import main
from edgestream.encoding import encode
from edgestream.frozen import DeviceModel
from edgestream.learners import OnlineGBDTRegressor
from edgestream.modelfile import load_model, model_bytes, model_from_bytes
from edgestream.simulate import runtime_forest_raw
from edgestream.task import CODE_MAX

from gbdt_reference import replay_against_reference
from test_gbdt import assert_same_state, state


def friedman(n: int, seed: int = 0):
    from sklearn.datasets import make_friedman1

    return make_friedman1(n, noise=1.0, random_state=seed)


def data(seed, n=60, n_features=3, dtype="float32", scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * 4
    y = (np.sin(X[:, 0]) * 3 + X[:, -1] + rng.normal(size=n)) * scale + shift
    if dtype != "float32":
        X = np.round(X * 100).astype(np.int64)
    return X, y


def small(**params):
    return OnlineGBDTRegressor(**{"n_estimators": 3, "max_leaves": 5, "max_depth": 3, "split_sample_rate": 0.5,
                                  **params})


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([0.0, 0.1, 0.5]), st.sampled_from([1, 4]),
       st.sampled_from([0.1, 1.0]), st.lists(st.tuples(st.booleans(), st.integers(1, 12)), min_size=1, max_size=4))
def test_random_add_delete_equals_the_from_scratch_reference(seed, alpha, min_leaf, learning_rate, steps):
    """Property: after fit and every add or delete, trees, leaf codes, every node's sums and the kept rows' stored
    residuals equal a reference that recomputes every statistic from scratch."""
    X, y = data(seed, n=50)
    X_new, y_new = data(seed + 1, n=60, shift=3.0)  # partly outside the fitted range: saturated codes too
    model = small(alpha=alpha, min_samples_leaf=min_leaf, learning_rate=learning_rate).fit(X, y)
    replay_against_reference(model, X_new, y_new, steps, seed)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["float32", "int32", "int16"]),
       st.sampled_from([(1e-6, 0.0), (1.0, -5e3), (1e9, 1e12)]), st.sampled_from([0.1, 1.0, 8.0]),
       st.lists(st.tuples(st.booleans(), st.integers(1, 8)), min_size=1, max_size=3), st.sampled_from(["speed", "size"]))
def test_exported_raw_outputs_equal_python_after_every_update(seed, dtype, target, learning_rate, steps, optimize):
    """Property: the C runtime's int32 raw output of the exported tables equals the Python model's on every row
    (NaN, rows beyond the training range) after fit, after each add and after each delete; a large learning rate
    drives leaves to saturate at the int16 limits."""
    scale, shift = target
    X, y = data(seed, n=40, n_features=1 + seed % 4, dtype=dtype, scale=scale, shift=shift)
    X_new, y_new = data(seed + 5, n=30, n_features=X.shape[1], dtype=dtype, scale=scale * 2, shift=shift)
    model = small(learning_rate=learning_rate, input_dtype=dtype, alpha=0.2).fit(X, y)
    rng = np.random.default_rng(seed)
    probe = np.concatenate([X, X * 3 + 1]).astype(X.dtype)
    if dtype == "float32":
        probe[rng.random(probe.shape) < 0.05] = np.nan
    taken = 0
    for adding, count in [(True, 0)] + steps:
        if adding and count:
            model.add(X_new[taken:taken + count], y_new[taken:taken + count])
            taken += count
        elif not adding:
            kept = np.flatnonzero(model.rows_alive_[: model.n_rows_])
            model.delete(rng.choice(kept, size=min(count, len(kept) - 2), replace=False))
        raw = runtime_forest_raw(encode(DeviceModel.from_model(model), optimize), probe.astype(dtype))
        assert np.array_equal(raw, model.predict_raw(probe))


def test_learns_friedman_as_scikit_learn_boosting_does():
    """Example: on Friedman #1 (2,000 rows, noise 1) at scikit-learn's settings (100 iterations, 20 leaves, depth
    8, nu 0.1, every threshold a candidate), the test MSE is within 5% of HistGradientBoostingRegressor's and
    GradientBoostingRegressor's. Measured: ours 1.717, HistGradientBoosting 1.722, GradientBoosting 1.744 (a
    learner without boosting is near the target's variance, 24; the default candidate sample of 10% gives 2.67)."""
    from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    X, y = friedman(2000)
    X_test, y_test = friedman(1000, seed=1)
    settings_ = dict(learning_rate=0.1, max_depth=8)
    ours = OnlineGBDTRegressor(n_estimators=100, max_leaves=20, split_sample_rate=1.0, **settings_).fit(X, y)
    with threadpool_limits(1):  # its OpenMP threads crawl on a loaded machine
        hist = HistGradientBoostingRegressor(max_iter=100, max_leaf_nodes=20, min_samples_leaf=1,
                                             early_stopping=False, **settings_).fit(X, y)
    gb = GradientBoostingRegressor(n_estimators=100, max_leaf_nodes=20, random_state=0, **settings_).fit(X, y)
    mse = {name: float(np.mean((model.predict(X_test) - y_test) ** 2)) for name, model in
           (("ours", ours), ("hist", hist), ("gb", gb))}
    assert mse["ours"] < 1.05 * mse["hist"] and mse["ours"] < 1.05 * mse["gb"], mse
    assert ours.score(X_test, y_test) > 0.9


def test_adding_then_deleting_rows_returns_to_the_model_trained_without_them():
    """The paper's property: with no subtree retrained (alpha = 1 keeps every valid split), deleting the added rows
    gives back every bit of the model fitted on the other rows alone, and its predictions."""
    X, y = friedman(600)
    params = dict(n_estimators=20, alpha=1.0)
    model = OnlineGBDTRegressor(**params).fit(X[:500], y[:500])
    alone = OnlineGBDTRegressor(**params).fit(X[:500], y[:500])
    rows = model.add(X[500:], y[500:])
    assert model.last_update_["retrained_nodes"] == 0
    assert not np.array_equal(model.predict_raw(X), alone.predict_raw(X))
    model.delete(rows)
    assert model.last_update_["retrained_nodes"] == 0
    assert_same_state(state(alone), state(model))
    assert np.array_equal(model.predict_raw(X), alone.predict_raw(X))


def test_initial_score_leaves_and_saturation():
    """The boosting starts from the mean code; a leaf is nu times its rows' mean residual in codes; rows added
    beyond the fitted range are saturated at ±CODE_MAX and counted, never wrapped."""
    X, y = data(3, n=80)
    model = OnlineGBDTRegressor(n_estimators=1, max_leaves=2, max_depth=1, learning_rate=0.5).fit(X, y)
    codes = model.rows_label_[:80].astype(np.int64)
    assert model.base_score_ == round(codes.mean()) and model.ensemble_.base_score.tolist() == [model.base_score_]
    leaf = model.rows_leaf_[0, :80]
    for u in np.unique(leaf):
        residual = (codes[leaf == u] - model.base_score_).mean()
        assert model.tree_nodes_[0, u, learners.gbdt.F["value"]] == np.round(0.5 * residual)
    assert model.saturated_ == 0
    model.add(X[:3], [1e9, -1e9, float(y[0])])
    assert model.saturated_ == 2 and model.rows_label_[80:83].tolist() == [CODE_MAX, -CODE_MAX,
                                                                            model.rows_label_[0]]


def test_partial_fit_fits_then_adds():
    X, y = data(4, n=120)
    model = small().partial_fit(X[:100], y[:100])
    assert model.n_rows_ == 100 and model.last_update_["action"] == "fit"
    assert model.partial_fit(X[100:], y[100:]) is model
    assert model.n_rows_ == 120 and model.last_update_["action"] == "add"


def test_model_file_round_trip_then_updates_continue_identically():
    X, y = data(4, n=120)
    model = small(alpha=0.0).fit(X, y)
    loaded = model_from_bytes(model_bytes(model))
    assert isinstance(loaded, OnlineGBDTRegressor) and loaded.target_ == model.target_
    assert loaded.base_score_ == model.base_score_ and model_bytes(loaded) == model_bytes(model)
    for m in (model, loaded):
        m.add(X[:10] * 1.1, y[:10] + 1)
        m.delete([3, 4, 5])
    assert_same_state(state(model), state(loaded))
    assert np.array_equal(model.predict_raw(X), loaded.predict_raw(X))


@pytest.mark.parametrize("name, value, message", [
    ("rows_label", np.array([-32768], np.int16), "row labels or alive flags out of range"),
    ("base_score", np.array([40000], np.int32), "a regressor's base_score is one int32 code within"),
])
def test_corrupt_regression_state_is_refused(name, value, message):
    X, y = data(4, n=60)
    model = small().fit(X, y)
    arrays = {key: array.copy() for key, array in model.saved_arrays().items()}
    arrays[name][: len(value)] = value
    blank = OnlineGBDTRegressor(**model.get_params())
    blank.target_, blank.bins_ = model.target_, model.bins_
    with pytest.raises(ValueError, match=message):
        blank.restore_arrays(arrays)


@pytest.mark.parametrize("call, message", [
    (lambda m, X, y: m.add(X[:2], [1.0, np.nan]), "the target of row 1 is nan"),
    (lambda m, X, y: m.add(X[:2], ["1", "x"]), "the target of row 1 is 'x', not a number"),
    (lambda m, X, y: m.add(X[:2], [1.0]), "X has 2 rows but the target has 1 values"),
    (lambda m, X, y: m.add(X[:, :2], y), "X has 2 features, but OnlineGBDTRegressor is expecting 3"),
    (lambda m, X, y: m.delete(np.arange(59)), "at least 2 must remain"),
])
def test_bad_input_names_the_value_and_the_limit(call, message):
    X, y = data(8, n=60)
    model = small().fit(X, y)
    before = state(model)
    with pytest.raises(ValueError, match=message):
        call(model, X, y)
    assert_same_state(before, state(model))


def test_cli_fit_update_export_simulate_predict(capsys, tmp_path):
    """End to end: fit --task regression, update (add with saturated targets, delete), export; the bundle's C
    gives the Python raw outputs on every row (0 mismatches) and predict writes the decoded values."""
    X, y = friedman(300)
    header = ",".join([f"x{i}" for i in range(X.shape[1])] + ["y"])
    for name, rows, target in (("train", slice(0, 250), y[:250]), ("more", slice(250, 300), y[250:] * 3)):
        np.savetxt(tmp_path / f"{name}.csv", np.column_stack([X[rows], target]), delimiter=",", comments="",
                   header=header)
    model_path, bundle = tmp_path / "m.esm", tmp_path / "bundle"
    assert main(["fit", str(tmp_path / "train.csv"), "--label", "y", "--learner", "gbdt", "--task", "regression",
                 "--n-estimators", "20", "-o", str(model_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["task"] == "regression" and report["target"]["divisor"] == 1 and report["training"]["r2"] > 0.8
    assert main(["update", str(model_path), "--add", str(tmp_path / "more.csv"), "--label", "y"]) == 0
    saturated = load_model(model_path).target_.encode(y[250:] * 3)[1]
    assert saturated > 0
    assert (f"added 50 rows (row numbers 250..299) ({saturated} targets outside the model's range"
            in capsys.readouterr().out)
    assert main(["update", str(model_path), "--delete", "0,1,2"]) == 0
    assert main(["export", str(model_path), "-o", str(bundle), "--name", "boost"]) == 0
    capsys.readouterr()
    assert main(["simulate", str(bundle), str(tmp_path / "train.csv"), "--label", "y", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["mismatches"] == 0 and scores["n"] == 250
    assert main(["predict", str(model_path), str(tmp_path / "train.csv"), "--label", "y"]) == 0
    values = np.array(capsys.readouterr().out.split(), dtype=float)
    model = load_model(model_path)
    assert isinstance(model, OnlineGBDTRegressor) and model.n_kept_rows == 297
    assert np.allclose(values, model.predict(X[:250]), rtol=1e-8)
