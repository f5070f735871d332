"""scikit-learn's IsolationForest imported as a frozen detector: its Q15 score within the stated rounding of
``-score_samples`` on every row, the C bundle's scores and flags those of Python, model files, bad sources and the
command line from import to simulate."""

import json

import joblib
import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

import edgestream
import edgestream.learners.detect
from edgestream import importers
from edgestream.cli import main
from edgestream.export import export_bundle
from edgestream.modelfile import load_model, save_model
from edgestream.simulate import load_bundle
from edgestream.task import split_output

CONFIGS = [dict(n_estimators=40), dict(n_estimators=15, max_samples=64, max_features=0.6),
           dict(n_estimators=9, contamination=0.05, bootstrap=True), dict(n_estimators=3, max_samples=2)]


def rows(n=300, seed=0):
    """Normal rows with a few far ones among them, float32."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[: n // 20] *= 5
    return X


@pytest.fixture(scope="module")
def fitted():
    X = rows()
    return X, [IsolationForest(random_state=0, **config).fit(X) for config in CONFIGS]


def test_scores_are_within_the_stated_rounding_of_score_samples_on_every_row(fitted):
    X, forests = fitted
    held_out = rows(300, seed=1)
    decided_rows = 0
    for forest in forests:
        model = edgestream.convert(forest)
        scores, flags = split_output(model.predict_raw(held_out))
        expected = -forest.score_samples(held_out) * 32768
        assert np.abs(scores - expected).max() <= model.rounding_bound_, forest.get_params()
        # the flags are the source's predict wherever the score is not within the rounding of the threshold
        decided = np.abs(expected - (model.threshold_ - 0.5)) > model.rounding_bound_
        assert (flags[decided] == (forest.predict(held_out)[decided] == -1)).all()
        decided_rows += int(decided.sum())
    assert decided_rows > 0.7 * len(held_out) * len(forests)  # (max_samples=2 scores every row 0.5 or so)


def test_the_stated_rounding_is_a_few_q15_units():
    """Leaves rounded to 1/1024 of a path length cost half a unit divided by c(max_samples), at most a few units."""
    model = edgestream.convert(IsolationForest(n_estimators=20, random_state=0).fit(rows()))
    assert model.rounding_bound_ < 3
    assert edgestream.convert(IsolationForest(n_estimators=3, max_samples=2, random_state=0).fit(rows())
                              ).rounding_bound_ < 13


def test_the_threshold_comes_from_the_offset_and_from_a_false_alarm_rate(fitted):
    X, forests = fitted
    model = edgestream.convert(forests[0])
    assert model.threshold_ == 16385  # contamination "auto": offset -0.5, a score above 0.5 is an anomaly
    assert edgestream.convert(forests[2]).threshold_ == int(np.floor(-forests[2].offset_ * 32768)) + 1
    scores = model.score_samples(X)
    model.calibrate(scores, 0.02)
    assert np.mean(scores >= model.threshold_) <= 0.02
    assert np.mean(scores >= model.threshold_ - 1) > 0.02 or model.threshold_ == 0


@pytest.mark.parametrize("optimize", ["speed", "size"])
def test_the_c_bundle_gives_the_python_scores_and_flags(fitted, tmp_path, optimize):
    X, forests = fitted
    model = edgestream.convert(forests[1])
    special = np.array([[np.nan, 0, 0, 0, 0], [np.inf, -np.inf, 1e38, -1e38, 0], [0, 0, 0, 0, 0]], dtype=np.float32)
    test = np.vstack([rows(300, seed=2), special])
    bundle = load_bundle(export_bundle(model, tmp_path / "b", name="iso", optimize=optimize))
    outputs = np.asarray(bundle.predict_raw(test))
    assert (outputs == model.predict_raw(test)).all()
    assert split_output(outputs)[1].any() and not split_output(outputs)[1].all()
    assert int(bundle.lib.iso_threshold()) == model.threshold_


def test_the_model_file_keeps_the_detector(fitted, tmp_path):
    X, forests = fitted
    model = edgestream.convert(forests[2])
    save_model(model, tmp_path / "m.esm")
    loaded = load_model(tmp_path / "m.esm")
    assert (loaded.predict_raw(X) == model.predict_raw(X)).all()
    assert (loaded.threshold_, loaded.rounding_bound_) == (model.threshold_, model.rounding_bound_)


def test_damaged_tables_are_refused(fitted):
    model = edgestream.convert(fitted[1][0])
    arrays = model.saved_arrays()
    for name, value in (("threshold", np.asarray([40000], dtype=np.uint16)),
                        ("path_shift", np.asarray([64], dtype=np.uint8)),
                        ("path_multiplier", np.asarray([1], dtype=np.uint16))):
        with pytest.raises(ValueError, match="path_multiplier|threshold|path_shift"):
            type(model)().restore_arrays({**arrays, name: value})


def test_path_lengths_beyond_int16_are_refused_naming_the_limit(fitted):
    source = importers.read_source(fitted[1][0])
    for tree in source.trees:
        tree.value = tree.value * 3  # path lengths near 60
    with pytest.raises(ValueError, match=r"path length is .*; edgestream holds at most 32\.00"):
        importers.to_edgestream(source)


def test_the_command_line_imports_exports_and_simulates(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    X = rows()
    labels = np.zeros(len(X), dtype=int)
    labels[: len(X) // 20] = 1
    np.savetxt("data.csv", np.column_stack([X, labels]), delimiter=",", header="f0,f1,f2,f3,f4,anomaly",
               comments="", fmt=["%.9g"] * 5 + ["%d"])
    forest = IsolationForest(n_estimators=25, random_state=0).fit(X)
    joblib.dump(forest, "iforest.pkl")
    assert main(["import", "iforest.pkl", "-o", "m.esm", "--trust-pickle"]) == 0
    assert "a detector within" in capsys.readouterr().out
    assert main(["export", "m.esm", "-o", "bundle"]) == 0
    capsys.readouterr()
    assert main(["simulate", "bundle", "data.csv", "--label", "anomaly", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mismatches"] == 0 and report["flag_mismatches"] == 0 and report["roc_auc"] > 0.95
    assert main(["predict", "m.esm", "data.csv", "--label", "anomaly"]) == 0
    flags = np.array(capsys.readouterr().out.split(), dtype=int)
    assert (flags == (forest.predict(X) == -1)).mean() > 0.97
    normal = np.column_stack([X[labels == 0], labels[labels == 0]])
    np.savetxt("normal.csv", normal, delimiter=",", header="f0,f1,f2,f3,f4,anomaly", comments="",
               fmt=["%.9g"] * 5 + ["%d"])
    assert main(["import", "iforest.pkl", "-o", "c.esm", "--trust-pickle", "--false-alarms", "0.02",
                 "--calibrate", "normal.csv", "--label", "anomaly"]) == 0
    calibrated = load_model("c.esm")
    scores = calibrated.score_samples(X[labels == 0])
    assert calibrated.threshold_ == edgestream.learners.detect.calibrated_threshold(scores, 0.02)
    assert 0 < np.mean(scores >= calibrated.threshold_) <= 0.02


def test_the_bundle_scores_and_flags_as_python_under_qemu_without_an_fpu(tmp_path):
    """Cortex-M0+: integer keys for the float comparisons, the 64-bit product of the exponent in software."""
    from edgestream import parity

    X = rows(200)
    model = edgestream.convert(IsolationForest(n_estimators=10, max_samples=64, random_state=0).fit(X))
    bundle = export_bundle(model, tmp_path / "b", name="iso", optimize="speed")
    report = parity.compare(parity.target(bundle, "qemu", "rp2040", 120), X[:80], (np.arange(80) < 8).astype(int))
    assert report["mismatches"] == 0 and report["flag_mismatches"] == 0 and report["flagged"] > 0
