"""Models trained elsewhere (edgestream.importers): thresholds at every float32 neighbour, agreement with the
source's predict (NaN rows included), C parity of both encodings, model files and the CLI."""

from __future__ import annotations

import json

import lightgbm
import numpy as np
import pytest
import xgboost
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier, HistGradientBoostingClassifier,
                              RandomForestClassifier)
from sklearn.tree import DecisionTreeClassifier

import edgestream
from edgestream import cli
from edgestream.encoding import encode
from edgestream.importers import edge_below, edge_below_or_at
from edgestream.modelfile import model_from_bytes, model_bytes
from edgestream.simulate import runtime_forest_predict

F32 = np.float32
NAN_FRIENDLY = (DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier, HistGradientBoostingClassifier,
                lightgbm.LGBMClassifier, xgboost.XGBClassifier)


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
