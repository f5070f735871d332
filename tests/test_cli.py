import json
import re
import subprocess
import sys

import numpy as np
import pytest

import edgestream
from edgestream import ShrubEnsemble, learners, parity, simulate
from edgestream.boards import load_board
from edgestream.cli import main
from edgestream.data import make_stream
from edgestream.evaluate import prequential
from edgestream.export import BUNDLE_FORMAT_VERSION
from edgestream.modelfile import load_model
from edgestream.search import search


def write_csv(path, X, y, header=True):
    lines = [",".join([*(f"f{j}" for j in range(X.shape[1])), "label"])] if header else []
    lines += [",".join([*(repr(float(v)) for v in x), str(k)]) for x, k in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def blobs_csv(tmp_path):
    X, y = make_stream("blobs", 400, seed=5)
    return write_csv(tmp_path / "blobs.csv", X, np.array(["red", "green", "blue"])[y])


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code, err, message):
    assert code == 2 and err.startswith("edgestream: error: ") and message in err and "Traceback" not in err


def test_fit_tree_prints_summary_and_saves(capsys, tmp_path, blobs_csv):
    code, out, _ = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "tree", "--max-depth", 3,
                       "--criterion", "entropy", "--min-samples-leaf", 2, "--max-bins", 32, "--binning", "adaptive",
                       "-o", tmp_path / "m.esm")
    model = load_model(tmp_path / "m.esm")
    assert code == 0 and "400 rows" in out and "3 classes" in out and f"{len(model.ensemble_.nodes)} nodes" in out
    assert "training accuracy" in out and len(out.splitlines()) == 2
    assert out.splitlines()[1].startswith("a frozen model: tree predicts on the device but does not learn there; "
                                          "for a model that keeps learning give a RAM budget (--ram 8KiB")
    assert (model.max_depth, model.criterion, model.min_samples_leaf, model.max_bins, model.binning) == \
        (3, "entropy", 2, 32, "adaptive")
    assert model.bins_.strategy == "adaptive" and model.classes_.tolist() == ["blue", "green", "red"]


def test_stream_writes_a_file_that_a_learning_model_learns(capsys, tmp_path):
    """The first model of getting started: a built-in stream as a CSV, a shrub ensemble that learns it (no frozen
    note), its bundle learning it in C with no mismatch."""
    code, out, _ = run(capsys, "stream", "sea", "--n-samples", 600, "--seed", 3, "-o", tmp_path / "sea.csv")
    X, y = make_stream("sea", 600, seed=3)
    assert code == 0 and out.endswith(f"600 rows, 3 features x0..x2, label y (2 classes) -> {tmp_path / 'sea.csv'}\n")
    assert (tmp_path / "sea.csv").read_text().splitlines()[:2] == [
        "x0,x1,x2,y", ",".join([*(f"{value:.6g}" for value in X[0]), str(y[0])])]
    code, out, _ = run(capsys, "fit", tmp_path / "sea.csv", "--label", "y", "--learner", "shrubs", "-o",
                       tmp_path / "m.esm")
    assert code == 0 and out.startswith("learned shrubs on 600 rows") and "frozen" not in out
    assert run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "b")[0] == 0
    code, out, _ = run(capsys, "simulate", tmp_path / "b", tmp_path / "sea.csv", "--label", "y", "--learn", "--json")
    assert code == 0 and json.loads(out)["mismatches"] == 0


def test_the_bundle_header_names_the_features_in_order(capsys, tmp_path):
    """fit records the file's feature columns (the label taken out), export puts them in the header as a C
    initializer in the order of the input rows, and the header compiles strictly."""
    X, y = make_stream("sea", 200, seed=1)
    data = tmp_path / "pump.csv"
    data.write_text('temperature,label,current,say "hi"\n' +
                    "".join(f"{a:.3f},{c},{b:.3f},{d:.3f}\n" for (a, b, d), c in zip(X, y)))
    assert run(capsys, "fit", data, "--label", "label", "--learner", "tree", "-o", tmp_path / "m.esm")[0] == 0
    assert load_model(tmp_path / "m.esm").columns_ == ["temperature", "current", 'say "hi"']
    assert run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "b", "--name", "pump")[0] == 0
    header = (tmp_path / "b" / "src" / "pump.h").read_text()
    assert '#define PUMP_FEATURE_NAMES {"temperature", "current", "say \\"hi\\""}' in header
    assert json.loads((tmp_path / "b" / "edgestream.json").read_text())["feature_names"] == [
        "temperature", "current", 'say "hi"']
    (tmp_path / "use.c").write_text('#include "pump.h"\nstatic const char *const names[] = PUMP_FEATURE_NAMES;\n'
                                   "const char *first(void) { return names[0]; }\n")
    done = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only",
                           "-I", str(tmp_path / "b" / "src"), str(tmp_path / "use.c")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_help_shows_an_example_and_every_option_once_with_its_defaults(capsys):
    """Top-level help: plain text and an example whose commands parse; fit's help: each learner option once, with
    the default of every learner that takes it, and no note said twice."""
    from edgestream.cli import EXAMPLE, build_parser

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text and "edgestream stream sea -o sea.csv" in text
    commands = [line.split()[1:] for line in EXAMPLE.splitlines() if line.startswith("  edgestream ")]
    assert len(commands) == 4
    for argv in commands:
        build_parser().parse_args(argv)
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    fit = build_parser()._subparsers._group_actions[0].choices["fit"]
    for spec in learners.REGISTRY.values():
        for option in spec.options:
            found = [action for action in fit._actions if option.flag in action.option_strings]
            assert len(found) == 1 and len(re.findall(rf" {re.escape(option.flag)}[ ,]", text)) == 1, option.flag
            assert found[0].help.count("(default ") == 1 and found[0].help.count("default") == 1, found[0].help
    assert "(gbdt) (gbdt)" not in text
    assert "--max-depth D depth limit of each tree (default tree, forest, gbdt 8; shrubs, axgb 4)" in text


def test_fit_forest_options(capsys, tmp_path, blobs_csv):
    code, _, _ = run(capsys, "fit", blobs_csv, "--label", 4, "--learner", "forest", "--n-trees", 4, "--seed", 9,
                     "-o", tmp_path / "f.esm")
    model = load_model(tmp_path / "f.esm")
    assert code == 0 and type(model).__name__ == "ForestClassifier"
    assert model.n_trees == 4 and model.random_state == 9 and model.ensemble_.n_trees == 4


def test_int32_model_end_to_end(capsys, tmp_path):
    X, y = make_stream("blobs", 300, seed=2)
    path = write_csv(tmp_path / "raw.csv", np.round(X * 1000), y)
    code, _, _ = run(capsys, "fit", path, "--label", "label", "--input-dtype", "int32", "-o", tmp_path / "m.esm")
    assert code == 0 and load_model(tmp_path / "m.esm").bins_.dtype == "int32"
    assert run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "bundle")[0] == 0
    code, out, _ = run(capsys, "simulate", tmp_path / "bundle", path, "--label", "label", "--json")
    assert code == 0 and json.loads(out)["mismatches"] == 0 and json.loads(out)["proba_mismatches"] == 0
    code, _, err = run(capsys, "simulate", tmp_path / "bundle", write_csv(tmp_path / "f.csv", X, y), "--label", "label")
    assert_user_error(code, err, "int32 needs whole-number features")


def test_fit_without_header(capsys, tmp_path):
    X, y = make_stream("sea", 200, seed=1)
    path = write_csv(tmp_path / "sea.csv", X, y, header=False)
    code, out, _ = run(capsys, "fit", path, "--label", 3, "--no-header", "-o", tmp_path / "m.esm")
    assert code == 0 and "200 rows, 3 features, 2 classes" in out


@pytest.mark.parametrize("text, argv, message", [
    ("a,b\n1,2\n", ["--label", "c"], "label column 'c' does not exist"),
    ("a,b\n1,0\n2,0\n", ["--label", "b"], "one class"),
    ("", ["--label", "0"], "is empty"),
    ("a,b,c\n1,2,3\n1,2\n", ["--label", "c"], "line 3: 2 columns, expected 3"),
    ("a,b\n1,0\n2,1\n", ["--label", "b", "--n-trees", "3"], "--n-trees does not apply to --learner tree; its options are --binning"),
    ("a,b\n1,0\n2,1\n", ["--label", "b", "--max-depth", "99"], "max_depth=99"),
    ("a,b\n1,0\n2,1\n", ["--label", "b", "--window", "8"], "--window does not apply to --learner tree"),
    ("a,b\n1,0\n2,1\n", ["--label", "b", "--learner", "forest", "--flash", "100"], "no forest configuration"),
    ("a,b\n1,0\n2,1\n", ["--label", "b", "--learner", "shrubs", "--max-depth", "9"], "max_depth=9"),
])
def test_fit_user_errors(capsys, tmp_path, text, argv, message):
    path = tmp_path / "d.csv"
    path.write_text(text)
    code, _, err = run(capsys, "fit", path, *argv, "-o", tmp_path / "m.esm")
    assert_user_error(code, err, message)
    assert not (tmp_path / "m.esm").exists()


def test_export_of_corrupt_model_is_a_user_error(capsys, tmp_path, blobs_csv):
    run(capsys, "fit", blobs_csv, "--label", "label", "-o", tmp_path / "m.esm")
    data = bytearray((tmp_path / "m.esm").read_bytes())
    data[-10] ^= 0xFF
    (tmp_path / "m.esm").write_bytes(bytes(data))
    code, _, err = run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "bundle")
    assert_user_error(code, err, "checksum mismatch")
    code, _, err = run(capsys, "export", tmp_path / "absent.esm", "-o", tmp_path / "bundle")
    assert_user_error(code, err, "cannot read model file")


def test_fit_export_simulate_end_to_end(capsys, tmp_path, blobs_csv):
    assert run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "forest", "--n-trees", 3,
               "-o", tmp_path / "m.esm")[0] == 0
    code, out, _ = run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "bundle", "--name", "blobs")
    assert code == 0 and (tmp_path / "bundle" / "src" / "blobs.h").is_file() and (tmp_path / "bundle" / "model.esm").is_file()
    code, out, _ = run(capsys, "simulate", tmp_path / "bundle", blobs_csv, "--label", "label", "--json")
    report = json.loads(out)
    model = load_model(tmp_path / "m.esm")
    X, y = make_stream("blobs", 400, seed=5)
    assert code == 0 and report["n"] == 400 and report["mismatches"] == 0 and report["proba_mismatches"] == 0
    assert report["accuracy"] == pytest.approx(model.score(X, np.array(["red", "green", "blue"])[y]))
    assert report["bundle"] == str(tmp_path / "bundle") and report["target"] == "host"
    code, out, _ = run(capsys, "simulate", tmp_path / "bundle", blobs_csv, "--label", "label")
    assert code == 0 and "400 rows" in out and "0 class mismatches" in out


def test_simulate_user_errors(capsys, tmp_path, blobs_csv):
    code, _, err = run(capsys, "simulate", tmp_path, blobs_csv, "--label", "label")
    assert_user_error(code, err, "not an edgestream bundle")
    code, _, err = run(capsys, "simulate", tmp_path, blobs_csv, "--label", "nope")
    assert_user_error(code, err, "label column 'nope' does not exist")
    code, _, err = run(capsys, "simulate", tmp_path, blobs_csv, "--label", "label", "--target", "qemu")
    assert_user_error(code, err, "--target qemu needs --board")
    code, _, err = run(capsys, "simulate", tmp_path, blobs_csv, "--label", "label", "--board", "stm32f411")
    assert_user_error(code, err, "--board applies to --target qemu only")
    code, _, err = run(capsys, "simulate", tmp_path, blobs_csv, "--label", "label", "--target", "qemu",
                       "--board", "stm32f411")
    assert_user_error(code, err, "not an edgestream bundle")


def test_shrubs_fit_export_simulate_learn(capsys, tmp_path, blobs_csv):
    code, out, _ = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "shrubs", "--ram", "8KiB",
                       "-o", tmp_path / "s.esm")
    model = load_model(tmp_path / "s.esm")
    assert code == 0 and type(model).__name__ == "ShrubEnsemble" and model.state_bytes() <= 8192
    assert "400 rows (bin edges from all rows)" in out and "3 classes" in out and "prequential accuracy" in out
    assert f"window {model.window_size}, {model.max_shrubs} shrubs of depth {model.max_depth}, " \
           f"model state {model.state_bytes():,} bytes" in out
    assert run(capsys, "export", tmp_path / "s.esm", "-o", tmp_path / "bundle")[0] == 0
    code, out, _ = run(capsys, "simulate", tmp_path / "bundle", blobs_csv, "--label", "label", "--json")
    report = json.loads(out)
    assert code == 0 and set(report) == {"n", "accuracy", "mismatches", "proba_mismatches", "bundle", "target"}
    assert report["mismatches"] == report["proba_mismatches"] == 0
    code, out, _ = run(capsys, "simulate", tmp_path / "bundle", blobs_csv, "--label", "label", "--learn", "--json",
                       "--window", 150)
    report = json.loads(out)
    X, y = make_stream("blobs", 400, seed=5)
    expected = prequential(model, X, np.array(["red", "green", "blue"])[y], window=150)
    assert code == 0 and report["n"] == 400 and report["mismatches"] == 0 and report["target"] == "host"
    assert report["accuracy"] == report["python_accuracy"] == expected.accuracy
    assert report["curve"] == expected.curve and len(report["curve"]) == 3
    assert report["state_bytes"] == model.state_bytes()
    # A second run of the same bundle in this process starts again from the exported state.
    code, out, _ = run(capsys, "simulate", tmp_path / "bundle", blobs_csv, "--label", "label", "--learn")
    assert code == 0 and "400 rows test-then-train" in out and "0 prediction mismatches" in out


def test_fit_shrubs_options(capsys, tmp_path, blobs_csv):
    code, out, _ = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "shrubs", "--window", 16,
                       "--shrubs", 4, "--step-size", 0.25, "--burnin", 3, "--update-every", 2, "--bins-rows", 50,
                       "--ram", "8KiB", "-o", tmp_path / "s.esm")
    model = load_model(tmp_path / "s.esm")
    assert code == 0 and "bin edges from the first 50 rows" in out
    X, y = make_stream("blobs", 400, seed=5)
    fixed = {"window_size": 16, "max_shrubs": 4, "step_size": 0.25, "burnin": 3, "update_every": 2}
    chosen = search("shrubs", load_board("stm32f411"), X, np.array(["red", "green", "blue"])[y], ram=8192,
                    params=fixed, bins_rows=50, workers=1).budget.config
    assert (model.window_size, model.max_shrubs, model.max_depth, model.step_size, model.burnin,
            model.update_every, model.max_bins) == (16, 4, chosen["max_depth"], 0.25, 3, 2, chosen["max_bins"])
    assert "(prequential on the last 50% of 360 rows)" in out
    first_rows = ShrubEnsemble(max_bins=model.max_bins).fit_bins(X[:50])
    assert np.array_equal(model.bins_.flat_edges()[0], first_rows.bins_.flat_edges()[0])


@pytest.mark.parametrize("argv, message", [
    (["--ram", 64], "no shrubs configuration for 4 features and 3 classes fits 64 bytes of RAM"),
    (["--ram", "1KiB", "--window", 256], "fits 1,024 bytes of RAM and 524,288 bytes of flash on stm32f411; the "
                                         "smallest needs"),
])
def test_fit_shrubs_over_budget(capsys, tmp_path, blobs_csv, argv, message):
    code, _, err = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "shrubs", *argv,
                       "-o", tmp_path / "s.esm")
    assert_user_error(code, err, message)
    assert not (tmp_path / "s.esm").exists()


@pytest.mark.parametrize("learner, board, ram", [("shrubs", "stm32f411", "8KiB"), ("shrubs", "atmega328p", "2KiB"),
                                                ("tree", "atmega328p", "1KiB")])
def test_fit_and_budget_give_the_same_answer(capsys, tmp_path, blobs_csv, learner, board, ram):
    code, out, _ = run(capsys, "budget", "--learner", learner, "--board", board, "--ram", ram, "--data", blobs_csv,
                       "--label", "label", "--json")
    config = json.loads(out)["config"]
    assert code == 0
    code, out, _ = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", learner, "--board", board,
                       "--ram", ram, "-o", tmp_path / "m.esm")
    params = load_model(tmp_path / "m.esm").get_params()
    assert code == 0 and {key: params[key] for key in config if key in params} == \
        {key: value for key, value in config.items() if key in params}


def test_fit_bad_ram_string(capsys, tmp_path, blobs_csv):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", str(blobs_csv), "--label", "label", "--learner", "shrubs", "--ram", "8 KBs", "-o", "x.esm"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "argument --ram: '8 KBs' is not a byte size" in err and "8KiB" in err


def test_simulate_learn_on_frozen_bundle(capsys, tmp_path, blobs_csv):
    run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "forest", "--n-trees", 2, "-o", tmp_path / "f.esm")
    run(capsys, "export", tmp_path / "f.esm", "-o", tmp_path / "bundle")
    code, _, err = run(capsys, "simulate", tmp_path / "bundle", blobs_csv, "--label", "label", "--learn")
    assert_user_error(code, err, "--learn needs a learning bundle")
    assert "holds a frozen forest model" in err


class FakeBundle:
    """Stands in for a compiled bundle: the Python model, with chosen rows' C outputs altered."""

    def __init__(self, model, directory, wrong_rows=()):
        self.model = model
        self.directory = directory
        self.wrong_rows = list(wrong_rows)

    def predict_encoded(self, X):
        predicted = self.model.predict_encoded(X)
        predicted[self.wrong_rows] = (predicted[self.wrong_rows] + 1) % len(self.model.classes_)
        return predicted

    def predict_proba_q15(self, X):
        proba = self.model.predict_proba_q15(X)
        proba[self.wrong_rows, 0] ^= 1
        return proba


def test_simulate_counts_mismatches_and_unknown_labels(capsys, tmp_path, monkeypatch):
    X = np.arange(40, dtype=float).reshape(20, 2)
    y = (X[:, 0] > 20).astype(int)
    model = edgestream.TreeClassifier(max_depth=2).fit(X, y)
    labels = y.copy()
    labels[:3] = 7  # a label the model never saw counts as wrong
    path = write_csv(tmp_path / "d.csv", X, labels)
    monkeypatch.setattr(simulate, "load_bundle", lambda directory: FakeBundle(model, directory, wrong_rows=[5, 6]))
    monkeypatch.setattr(parity, "read_manifest", lambda directory: {"learning": False, "n_features": 2})
    code, out, _ = run(capsys, "simulate", tmp_path, path, "--label", "label", "--json")
    assert code == 0 and json.loads(out) == {"n": 20, "accuracy": 15 / 20, "mismatches": 2, "proba_mismatches": 2,
                                             "bundle": str(tmp_path), "target": "host"}


def test_version_and_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.strip() == f"edgestream {edgestream.__version__}"
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


def test_subprocess_round_trip(tmp_path, blobs_csv):
    cli = [sys.executable, "-m", "edgestream.cli"]
    done = subprocess.run([*cli, "fit", blobs_csv, "--label", "label", "-o", tmp_path / "m.esm"],
                          capture_output=True, text=True, check=True)
    assert "training accuracy" in done.stdout
    done = subprocess.run([*cli, "fit", blobs_csv, "--label", "missing", "-o", tmp_path / "x.esm"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("edgestream: error: label column 'missing'")
    assert "Traceback" not in done.stderr


def test_bundle_of_another_format_version_names_both(capsys, tmp_path, blobs_csv):
    run(capsys, "fit", blobs_csv, "--label", "label", "--max-depth", 2, "-o", tmp_path / "m.esm")
    run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "bundle")
    manifest_path = tmp_path / "bundle" / "edgestream.json"
    manifest = json.loads(manifest_path.read_text())
    manifest.pop("format_version")  # as bundles of format 1 were written
    manifest_path.write_text(json.dumps(manifest))
    for argv in (["simulate", tmp_path / "bundle", blobs_csv, "--label", "label"],
                 ["build", tmp_path / "bundle", "--board", "stm32f411"]):
        code, _, err = run(capsys, *argv)
        assert_user_error(code, err, f"has format_version 1; this edgestream reads format_version "
                                     f"{BUNDLE_FORMAT_VERSION}: export the model again")


def test_unknown_learners_and_parameters_list_what_exists():
    with pytest.raises(ValueError, match=f"unknown learner 'svm'; the learners are: {', '.join(learners.REGISTRY)}"):
        learners.get("svm")
    with pytest.raises(ValueError, match=r"learner 'forest' has no parameter\(s\) window_size; its parameters: "):
        learners.get("forest").make(window_size=3)
    with pytest.raises(SystemExit):
        main(["fit", "x.csv", "--label", "y", "--learner", "svm", "-o", "m.esm"])


def test_evaluate_test_then_trains_a_saved_model(capsys, tmp_path, blobs_csv):
    assert run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "shrubs", "--window", 16,
               "-o", tmp_path / "s.esm")[0] == 0
    X, y = make_stream("blobs", 400, seed=5)
    expected = prequential(load_model(tmp_path / "s.esm"), X, np.array(["red", "green", "blue"])[y], window=150)
    code, out, _ = run(capsys, "evaluate", tmp_path / "s.esm", blobs_csv, "--label", "label", "--json",
                       "--window", 150)
    report = json.loads(out)
    assert code == 0 and report["n"] == 400 and report["accuracy"] == expected.accuracy
    assert report["curve"] == expected.curve and report["samples_per_second"] > 0
    code, out, _ = run(capsys, "evaluate", tmp_path / "s.esm", blobs_csv, "--label", "label")
    assert code == 0 and out.startswith(f"n 400, accuracy {expected.accuracy:.4f}, samples_per_second ")
    assert "accuracy curve (500 rows per point): " in out


def test_evaluate_any_online_learner_and_refuses_bad_input(capsys, tmp_path, blobs_csv):
    assert run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "bls", "-o", tmp_path / "b.esm")[0] == 0
    code, out, _ = run(capsys, "evaluate", tmp_path / "b.esm", blobs_csv, "--label", "label", "--json")
    assert code == 0 and json.loads(out)["n"] == 400
    assert run(capsys, "fit", blobs_csv, "--label", "label", "-o", tmp_path / "t.esm")[0] == 0
    code, _, err = run(capsys, "evaluate", tmp_path / "t.esm", blobs_csv, "--label", "label")
    assert_user_error(code, err, "a tree model does not learn row by row")
    X, y = make_stream("blobs", 50, seed=1)
    code, _, err = run(capsys, "evaluate", tmp_path / "b.esm", write_csv(tmp_path / "o.csv", X, y), "--label", "label")
    assert_user_error(code, err, "label(s) 0, 1, 2 are not among the model's classes ['blue', 'green', 'red']")
    code, _, err = run(capsys, "evaluate", tmp_path / "b.esm", write_csv(tmp_path / "w.csv", X[:, :3], y),
                       "--label", "label")
    assert_user_error(code, err, "the data has 3 features, the model takes 4")


def test_fit_shrubs_work_per_call(capsys, tmp_path, blobs_csv):
    """--work-per-call reaches the shrub ensemble (its device config too); one that cannot keep up is a user error
    naming the least."""
    fixed = ["--window", 16, "--shrubs", 4, "--max-depth", 3, "--max-bins", 16, "--update-every", 4, "--burnin", 5,
             "--ram", "8KiB"]
    code, _, _ = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "shrubs", *fixed,
                     "--work-per-call", 5000, "-o", tmp_path / "s.esm")
    model = load_model(tmp_path / "s.esm")
    assert code == 0 and model.work_per_call == 5000 and model.device_config()["work_per_call"] == 5000
    least = ShrubEnsemble(window_size=16, max_shrubs=4, max_depth=3, update_every=4).min_work_per_call(4, 3)
    code, _, err = run(capsys, "fit", blobs_csv, "--label", "label", "--learner", "shrubs", *fixed,
                       "--work-per-call", 10, "-o", tmp_path / "t.esm")
    assert_user_error(code, err, f"work_per_call=10 must be 0 or at least {least}")
