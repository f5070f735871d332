"""Models trained elsewhere (edgestream.importers): thresholds at every float32 neighbour, agreement with the
source's predict (NaN rows included; regressors within their stated rounding bound), C parity of both encodings
and of the bundle, model files, refused objectives and the CLI."""

from __future__ import annotations

import json

import lightgbm
import numpy as np
import pytest
import sklearn.base
import xgboost
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                              GradientBoostingRegressor, HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import edgestream
from edgestream import cli
from edgestream.encoding import encode
from edgestream.importers import edge_below, edge_below_or_at
from edgestream.modelfile import model_from_bytes, model_bytes
from edgestream.simulate import runtime_forest_predict

F32 = np.float32
NAN_FRIENDLY = (DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier, HistGradientBoostingClassifier,
                lightgbm.LGBMClassifier, xgboost.XGBClassifier, DecisionTreeRegressor, RandomForestRegressor,
                ExtraTreesRegressor, HistGradientBoostingRegressor, lightgbm.LGBMRegressor, xgboost.XGBRegressor)


def neighbours(value) -> np.ndarray:
    """A float32 value and the two float32 values beside it."""
    with np.errstate(over="ignore"):
        v = F32(value)
        return np.array([np.nextafter(v, F32(-np.inf)), v, np.nextafter(v, F32(np.inf))], dtype=F32)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, width=64))
@example(0.0)
@example(-0.0)
@example(np.inf)
@example(-np.inf)
@example(1e300)
@example(-1e300)
@example(5e-324)
@example(float(np.finfo(F32).max))
def test_double_threshold_edge_sends_every_float32_the_same_way(t):
    edge = edge_below_or_at(t)
    xs = np.concatenate([neighbours(edge), neighbours(t), [F32(np.inf), F32(-np.inf), F32(0.0), F32(-0.0)]])
    assert ((xs.astype(np.float64) <= t) == (xs <= edge)).all()
    assert edge.dtype == F32 and edge.astype(np.float64) <= t


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=True, width=32).filter(lambda t: t != -np.inf))
@example(0.0)
@example(-0.0)
@example(1.4e-45)
@example(np.inf)
def test_float32_strict_threshold_edge_sends_every_float32_the_same_way(t):
    edge = edge_below(t)
    xs = np.concatenate([neighbours(edge), neighbours(t), [F32(np.inf), F32(-np.inf), F32(0.0), F32(-0.0)]])
    assert ((xs < F32(t)) == (xs <= edge)).all()


def dataset(n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 5)).astype(F32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) if n_classes == 2 else \
        np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.6, 0.0, 0.6])
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values in training and held-out rows
    return X[:400], y[:400], X[400:]


def models():
    return [DecisionTreeClassifier(max_depth=6, random_state=0), RandomForestClassifier(8, max_depth=6, random_state=0),
            ExtraTreesClassifier(8, max_depth=6, random_state=0),
            GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0),
            HistGradientBoostingClassifier(max_iter=15), lightgbm.LGBMClassifier(n_estimators=15, verbose=-1),
            xgboost.XGBClassifier(n_estimators=15, max_depth=3)]


def fitted(model, X, y):
    if not isinstance(model, NAN_FRIENDLY):
        X = np.nan_to_num(X)
    return model.fit(X, y), X


def split_rows(model, imported, X) -> np.ndarray:
    """Rows whose features sit at the float32 neighbours of every edge of the model (and NaN), on a base row."""
    ensemble = imported.ensemble_
    inner = ensemble.nodes["feature"] != 255
    features, edges = ensemble.nodes["feature"][inner], imported.node_edge_[inner]
    rows = []
    for feature, edge in zip(features, edges):
        values = neighbours(edge)[np.isfinite(neighbours(edge))]  # the sources refuse infinities
        for value in [*values, F32(np.nan)] if isinstance(model, NAN_FRIENDLY) else values:
            row = np.nan_to_num(X[len(rows) % len(X)]).copy()
            row[feature] = value
            rows.append(row)
    return np.array(rows, dtype=F32)


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("index", range(7))
def test_imported_model_predicts_as_its_source_and_the_c_as_python(index, n_classes):
    source = models()[index]
    X, y, held_out = dataset(n_classes)
    source, X = fitted(source, X, y)
    held_out = held_out if isinstance(source, NAN_FRIENDLY) else np.nan_to_num(held_out)
    imported = edgestream.convert(source)
    assert list(imported.classes_) == list(source.classes_)
    for rows in (held_out, split_rows(source, imported, held_out)):
        assert (imported.predict(rows) == source.predict(rows)).all()
    if hasattr(source, "predict_proba"):  # within the Q15 and fixed-point softmax rounding
        assert np.abs(imported.predict_proba(held_out) - source.predict_proba(held_out)).max() < 2e-3
    device = imported.device_model()
    for optimize in ("speed", "size"):
        encoded = encode(device, optimize)
        classes, proba = runtime_forest_predict(encoded, held_out)
        assert (classes == imported.predict_encoded(held_out)).all()
        assert (proba == imported.predict_proba_q15(held_out)).all()


def test_lightgbm_missing_type_none_sends_nan_where_zero_goes():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0.3).astype(int)
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "num_leaves": 4}, lightgbm.Dataset(X, y), 5)
    assert "missing_type\": \"None" in json.dumps(booster.dump_model())
    imported = edgestream.convert(booster)
    rows = np.array([[np.nan, 0.0], [0.0, 0.0], [np.nan, np.nan], [1.0, np.nan]], dtype=F32)
    assert (imported.predict(rows) == (booster.predict(rows) > 0.5)).all()


def test_boosted_scores_keep_fraction_bits_beyond_q10():
    X, y, _ = dataset(2)
    source, X = fitted(xgboost.XGBClassifier(n_estimators=40, max_depth=3, learning_rate=0.05), X, y)
    ensemble = edgestream.convert(source).ensemble_
    assert ensemble.leaf_kind == "additive" and ensemble.score_shift > 6


def test_model_file_keeps_the_source_and_feature_names():
    import pandas as pd

    X, y, held_out = dataset(4)
    frame = pd.DataFrame(X, columns=[f"s{j}" for j in range(5)])
    imported = edgestream.convert(HistGradientBoostingClassifier(max_iter=5).fit(frame, y))
    again = model_from_bytes(model_bytes(imported))
    header = json.loads(model_bytes(imported).split(b"\n")[1])
    assert header["params"]["library"] == "scikit-learn" and header["params"]["estimator"] == \
        "HistGradientBoostingClassifier"
    assert header["feature_names"] == [f"s{j}" for j in range(5)] and list(again.feature_names_in_) == header[
        "feature_names"]
    rows = pd.DataFrame(held_out, columns=frame.columns)
    assert (again.predict_proba_q15(rows) == imported.predict_proba_q15(rows)).all()


def test_cli_import_export_simulate_predict(tmp_path, capsys):
    X, y, held_out = dataset(4)
    booster = lightgbm.LGBMClassifier(n_estimators=10, verbose=-1).fit(X, y).booster_
    booster.save_model(tmp_path / "lgb.txt")
    xgboost.XGBClassifier(n_estimators=10).fit(X, y).save_model(tmp_path / "xgb.ubj")
    data = tmp_path / "held.csv"
    data.write_text("\n".join(",".join("" if np.isnan(v) else repr(float(v)) for v in row) + ",0"
                              for row in held_out) + "\n")
    for source in ("lgb.txt", "xgb.ubj"):
        model = tmp_path / f"{source}.esm"
        assert cli.main(["import", str(tmp_path / source), "-o", str(model)]) == 0
        bundle = tmp_path / f"{source}_b"
        assert cli.main(["export", str(model), "-o", str(bundle), "--optimize", "size"]) == 0
        capsys.readouterr()
        assert cli.main(["simulate", str(bundle), str(data), "--label", "5", "--no-header", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["mismatches"] == 0
    out = tmp_path / "pred.txt"
    assert cli.main(["predict", str(tmp_path / "lgb.txt.esm"), str(data), "--label", "5", "--no-header",
                     "-o", str(out)]) == 0
    assert out.read_text().split() == [str(c) for c in booster.predict(held_out).argmax(axis=1)]
    assert cli.main(["predict", str(tmp_path / "lgb.txt.esm"), str(data), "--label", "5", "--no-header",
                     "--proba"]) == 0
    lines = capsys.readouterr().out.split()
    assert lines[0] == "0,1,2,3" and len(lines) == len(held_out) + 1
    assert abs(sum(float(p) for p in lines[1].split(",")) - 1) < 1e-3


@pytest.mark.parametrize("source, trust", [("forest.joblib", False), ("quantile.joblib", True),
                                           ("lgb_huber.txt", False), ("torn.json", False)])
def test_refused_import_writes_no_model(tmp_path, capsys, source, trust):
    import joblib
    from sklearn.ensemble import GradientBoostingRegressor

    X, y, _ = dataset(2)
    X = np.nan_to_num(X)
    joblib.dump(RandomForestClassifier(2, max_depth=2).fit(X, y), tmp_path / "forest.joblib")
    joblib.dump(GradientBoostingRegressor(loss="quantile", n_estimators=2).fit(X, y), tmp_path / "quantile.joblib")
    lightgbm.train({"objective": "huber", "verbose": -1}, lightgbm.Dataset(X, y), 2).save_model(
        tmp_path / "lgb_huber.txt")
    (tmp_path / "torn.json").write_text('{"learner": {"attributes"')
    output = tmp_path / "out.esm"
    code = cli.main(["import", str(tmp_path / source), "-o", str(output)] + (["--trust-pickle"] if trust else []))
    assert code == 2 and not output.exists()
    assert capsys.readouterr().err.count("edgestream: error:") == 1


@pytest.mark.parametrize("board", ["rp2040", "stm32f411"])
def test_inline_speed_bundle_of_an_imported_model_under_qemu(tmp_path, board):
    """--optimize speed: trees as inline code, integer keys on the Cortex-M0+ (no FPU), the FPU on the M4; NaN-left
    nodes and additive scores with fraction bits beyond Q10."""
    from edgestream import parity
    from edgestream.export import export_bundle

    X, y, held_out = dataset(4)
    imported = edgestream.convert(xgboost.XGBClassifier(n_estimators=8, max_depth=3).fit(X, y))
    assert imported.nan_left_.any() and imported.ensemble_.score_shift > 0
    bundle = export_bundle(imported, tmp_path / "b", name="xgb", optimize="speed")
    assert "xgb_walk" in (bundle / "src" / "xgb.c").read_text()
    report = parity.compare(parity.target(bundle, "qemu", board, 120), held_out[:80], np.zeros(80, dtype=int))
    assert report["mismatches"] == 0 and report["proba_mismatches"] == 0


# ------------------------------------------------------------------------------------------------ regressors

def regressors(size: int = 8, depth: int = 4):
    """One regressor of every supported source, ``size`` trees (or rounds) of depth ``depth``."""
    return [DecisionTreeRegressor(max_depth=depth, random_state=0),
            RandomForestRegressor(size, max_depth=depth, random_state=0),
            ExtraTreesRegressor(size, max_depth=depth, random_state=0),
            GradientBoostingRegressor(n_estimators=size, max_depth=depth, random_state=0),
            HistGradientBoostingRegressor(max_iter=size, max_depth=depth),
            lightgbm.LGBMRegressor(n_estimators=size, max_depth=depth, num_leaves=2**depth, min_child_samples=2,
                                   verbose=-1),
            xgboost.XGBRegressor(n_estimators=size, max_depth=depth)]


REGRESSOR_NAMES = [type(model).__name__ for model in regressors()]


def regression_data(seed: int, n_rows: int = 300, n_features: int = 4, scale: float = 1.0, offset: float = 0.0,
                    missing: float = 0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows + 100, n_features)).astype(F32)
    y = (2 * X[:, 0] + np.sin(3 * X[:, -1]) + 0.3 * rng.normal(size=len(X))) * scale + offset
    X[rng.random(X.shape) < missing] = np.nan
    return X[:n_rows], y[:n_rows], X[n_rows:]


def assert_within_bound(imported, source, rows):
    """Every row's prediction is within the stated rounding bound of the source's."""
    difference = np.abs(imported.predict(rows) - source.predict(rows).astype(np.float64))
    assert difference.max() <= imported.rounding_bound_, (difference.max(), imported.rounding_bound_)


@pytest.mark.parametrize("name", REGRESSOR_NAMES)
def test_imported_regressor_predicts_as_its_source_and_the_bundle_as_python(name, tmp_path):
    """Example: on held-out rows with NaN and on rows at the float32 neighbours of every edge the imported
    prediction is within the stated bound of the source's; the bound is the rounding of one leaf per tree (a sum)
    or of one leaf (an average), plus float rounding; the bundle's C (compiled with cffi) and both encodings of
    the runtime give the Python raw output to the bit."""
    from edgestream.export import export_bundle
    from edgestream.simulate import load_bundle, runtime_forest_raw
    from edgestream.task import CODE_MAX

    source = regressors(12, 5)[REGRESSOR_NAMES.index(name)]
    X, y, held_out = regression_data(0, offset=250.0)
    source, X = fitted(source, X, y)
    held_out = held_out if isinstance(source, NAN_FRIENDLY) else np.nan_to_num(held_out)
    imported = edgestream.convert(source)
    rows = np.concatenate([X, held_out, split_rows(source, imported, held_out)])
    assert_within_bound(imported, source, rows)
    n_trees, step, divisor = imported.ensemble_.n_trees, imported.target_.step, imported.output_divisor
    assert divisor == (n_trees if "Forest" in name or "Trees" in name or "DecisionTree" in name else 1)
    assert np.abs(imported.ensemble_.leaf_values).max() == CODE_MAX  # the widest tree uses the whole int16 range
    leaf_rounding = n_trees * step / (2 * divisor)
    assert leaf_rounding <= imported.rounding_bound_
    if name != "XGBRegressor":  # float64 sums: the float rounding is negligible beside the leaves' (not float32's)
        assert imported.rounding_bound_ <= 1.01 * leaf_rounding
    raw = imported.predict_raw(rows)
    bundle = load_bundle(export_bundle(imported, tmp_path / "b", name="reg", optimize="speed"))
    assert np.array_equal(bundle.predict_raw(rows), raw)
    assert np.array_equal(runtime_forest_raw(encode(imported.device_model(), "size"), rows), raw)


@st.composite
def regression_settings(draw):
    return dict(seed=draw(st.integers(0, 2**16)), n_rows=draw(st.integers(20, 120)),
                n_features=draw(st.integers(1, 4)), scale=draw(st.sampled_from([0.0, 1e-4, 1.0, 1e5])),
                offset=draw(st.sampled_from([0.0, -3e3, 1e9])), missing=draw(st.sampled_from([0.0, 0.1])),
                size=draw(st.integers(1, 10)), depth=draw(st.integers(1, 6)))


@pytest.mark.parametrize("name", REGRESSOR_NAMES)
@settings(max_examples=4, deadline=None)
@given(regression_settings())
def test_imported_regressor_within_its_bound_on_random_data(name, case):
    """Property: on small random data of any scale and offset (a constant target included), with missing
    values, for any size and depth, every row's imported prediction is within the stated bound of the source's,
    and a model file gives the same predictions."""
    source = regressors(case.pop("size"), case.pop("depth"))[REGRESSOR_NAMES.index(name)]
    X, y, held_out = regression_data(**case)
    source, X = fitted(source, X, y)
    held_out = held_out if isinstance(source, NAN_FRIENDLY) else np.nan_to_num(held_out)
    imported = edgestream.convert(source)
    rows = np.concatenate([X, held_out])
    assert_within_bound(imported, source, rows)
    again = model_from_bytes(model_bytes(imported))
    assert np.array_equal(again.predict(rows), imported.predict(rows))
    assert (again.target_, again.output_divisor, again.rounding_bound_) == (
        imported.target_, imported.output_divisor, imported.rounding_bound_)


@pytest.mark.parametrize("source, objective, supported", [
    (lightgbm.LGBMRegressor(objective="huber"), "LightGBM objective 'huber'", "regression"),
    (lightgbm.LGBMRegressor(objective="quantile"), "LightGBM objective 'quantile'", "regression"),
    (lightgbm.LGBMRegressor(objective="poisson"), "LightGBM objective 'poisson'", "regression"),
    (lightgbm.LGBMRegressor(reg_sqrt=True), "LightGBM objective 'regression sqrt'", "regression"),
    (xgboost.XGBRegressor(objective="reg:logistic"), "XGBoost objective 'reg:logistic'", "reg:squarederror"),
    (xgboost.XGBRegressor(objective="count:poisson"), "XGBoost objective 'count:poisson'", "reg:squarederror"),
    (GradientBoostingRegressor(loss="quantile"), "GradientBoostingRegressor loss 'quantile'", "squared_error"),
    (HistGradientBoostingRegressor(loss="poisson"), "HistGradientBoostingRegressor loss 'poisson'", "squared_error"),
], ids=lambda value: value if isinstance(value, str) and "'" not in value and ":" not in value else None)
def test_a_regression_objective_without_the_identity_sum_is_refused(source, objective, supported):
    """A regressor whose prediction is not the sum of its leaves (a link, a square) or that another loss fitted
    is refused with one line naming its objective and the supported ones."""
    X, y, _ = regression_data(1, missing=0.0)
    rounds = "max_iter" if isinstance(source, HistGradientBoostingRegressor) else "n_estimators"
    model = sklearn.base.clone(source).set_params(**{rounds: 3}).fit(X, np.abs(y) / np.abs(y).max())
    with pytest.raises(ValueError) as error:
        edgestream.convert(model)
    message = str(error.value)
    assert message.startswith(objective + ": edgestream imports") and "\n" not in message
    assert supported in message.split(": edgestream imports", 1)[1]


def test_a_model_file_with_a_wrong_divisor_is_refused(tmp_path):
    from edgestream.errors import ModelFileError
    from edgestream.modelfile import load_model, save_model

    X, y, _ = regression_data(2)
    imported = edgestream.convert(RandomForestRegressor(3, max_depth=3).fit(X, y))
    imported.output_divisor_ = 2  # neither 1 nor the 3 trees
    with pytest.raises(ModelFileError, match="output_divisor .* must be one uint16: 1 \\(a sum\\) or 3"):
        load_model(save_model(imported, tmp_path / "m.esm"))


def test_cli_import_export_simulate_predict_a_regressor(tmp_path, capsys):
    """End to end: a pickled scikit-learn regressor, a LightGBM model text file and an XGBoost JSON imported,
    exported and simulated with 0 raw-output mismatches; predict writes values within the bound of the
    source's."""
    import joblib

    X, y, held_out = regression_data(3, offset=40.0)
    joblib.dump(RandomForestRegressor(6, max_depth=5, random_state=0).fit(X, y), tmp_path / "rf.joblib")
    lightgbm.LGBMRegressor(n_estimators=10, verbose=-1).fit(X, y).booster_.save_model(tmp_path / "lgb.txt")
    xgboost.XGBRegressor(n_estimators=10, max_depth=3).fit(X, y).save_model(tmp_path / "xgb.json")
    data = tmp_path / "held.csv"
    targets = 2 * np.nan_to_num(held_out[:, 0]).astype(np.float64) + 40.0
    data.write_text("\n".join(",".join("" if np.isnan(v) else repr(float(v)) for v in row) + f",{float(t)!r}"
                              for row, t in zip(held_out, targets)) + "\n")
    for source in ("rf.joblib", "lgb.txt", "xgb.json"):
        model = tmp_path / f"{source}.esm"
        assert cli.main(["import", str(tmp_path / source), "-o", str(model), "--trust-pickle"]) == 0
        assert "a regressor within" in capsys.readouterr().out
        bundle = tmp_path / f"{source}_b"
        assert cli.main(["export", str(model), "-o", str(bundle)]) == 0
        capsys.readouterr()
        assert cli.main(["simulate", str(bundle), str(data), "--label", "4", "--no-header", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["mismatches"] == 0 and report["n"] == len(held_out) and report["r2"] > 0.5
    out = tmp_path / "pred.txt"
    assert cli.main(["predict", str(tmp_path / "rf.joblib.esm"), str(data), "--label", "4", "--no-header",
                     "-o", str(out)]) == 0
    imported = edgestream.convert(joblib.load(tmp_path / "rf.joblib"))
    source = joblib.load(tmp_path / "rf.joblib")
    values = np.array(out.read_text().split(), dtype=float)
    assert np.abs(values - source.predict(held_out)).max() <= imported.rounding_bound_
