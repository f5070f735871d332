"""The board commands end to end: boards, budget, build, simulate under QEMU and the demo.

The cross toolchains and QEMU come from scripts/setup.sh; nothing here is skipped when they are missing.
"""

import json
import re
import subprocess

import edgestream

import pytest
from test_cli import assert_user_error, run, write_csv

from edgestream import ForestClassifier, ShrubEnsemble, TreeClassifier, checkpoint, simulate, targets
from edgestream.boards import board_names, load_board
from edgestream.data import make_stream
from edgestream.budget import of_model
from edgestream.cli import main
from edgestream.export import export_bundle
from edgestream.modelfile import load_model
from edgestream.parity import compare_sizes

HOST_KEYS = {"n", "accuracy", "mismatches", "proba_mismatches", "bundle", "target"}
HOST_LEARN_KEYS = {"n", "accuracy", "python_accuracy", "mismatches", "window", "curve", "state_bytes", "bundle",
                   "target"}


@pytest.fixture(scope="module")
def sea(tmp_path_factory):
    X, y = make_stream("sea", 400, seed=3)
    return X, y, write_csv(tmp_path_factory.mktemp("data") / "sea.csv", X, y)


@pytest.fixture(scope="module")
def bundles(sea, tmp_path_factory):
    """A small tree, forest and shrub bundle (that has learned 40 rows) of the sea stream."""
    X, y, _ = sea
    out = tmp_path_factory.mktemp("bundles")
    shrubs = ShrubEnsemble(window_size=16, max_shrubs=4, max_depth=3).fit_bins(X).set_classes(y)
    for x, label in zip(X[:40], y[:40]):
        shrubs.learn_one(x, label)
    return {"tree": export_bundle(TreeClassifier(max_depth=4).fit(X, y), out / "tree", name="tree"),
            "forest": export_bundle(ForestClassifier(n_trees=3, max_depth=4, random_state=0).fit(X, y),
                                    out / "forest", name="forest"),
            "shrubs": export_bundle(shrubs, out / "shrubs", name="shrubs")}


def test_boards(capsys):
    code, out, _ = run(capsys, "boards", "--json")
    boards = {board["name"]: board for board in json.loads(out)}
    assert code == 0 and sorted(boards) == board_names()
    assert {"rp2040", "stm32f411", "nrf52840", "stm32h743", "atmega328p", "rpi-zero", "rpi4"} <= boards.keys()
    assert boards["stm32f411"]["fpu"] and boards["stm32f411"]["emulator"]["machine"] == "mps2-an386"
    code, out, _ = run(capsys, "boards")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["board", "cpu", "RAM", "flash", "FPU", "emulator"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["stm32f411"] == ["cortex-m4", "128", "KiB", "512", "KiB", "yes", "qemu-system-arm", "mps2-an386"]
    assert rows["rpi4"] == ["cortex-a72", "1", "GiB", "-", "yes", "qemu-aarch64"]
    assert rows["atmega328p"][-2:] == ["no", "simavr"] and len(rows) == len(boards)


def test_budget_text_json_and_html(capsys, tmp_path, sea):
    argv = ["budget", "--learner", "shrubs", "--board", "stm32f411", "--ram", "8KiB", "--features", 3, "--classes", 2]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.startswith("shrubs on stm32f411: window_size=64, max_shrubs=16, max_depth=4")
    assert "RAM at peak: 7,360 of 8,192 bytes" in out and "\n  fits\n" in out  # an upper bound (tests/test_budget.py)
    code, out, _ = run(capsys, *argv, "--window", 32, "--json")
    report = json.loads(out)
    assert code == 0 and report["fits"] and report["config"]["window_size"] == 32 and report["ram_budget"] == 8192
    assert "curve" not in report and "measured" not in report
    _, _, path = sea
    code, out, _ = run(capsys, "budget", "--learner", "shrubs", "--board", "stm32f411", "--data", path,
                       "--label", "label", "--html", tmp_path / "report.html", "--json")
    report = json.loads(out)
    assert code == 0 and list(report["curve"]) == [str(kib * 1024) for kib in (2, 4, 8, 16, 32)]
    assert all(0.5 < score <= 1 for score in report["curve"].values())
    assert list(report["curve"].values()) == sorted(report["curve"].values())  # a larger budget is never worse
    assert report["config"]["features"] == 3 and report["config"]["classes"] == 2
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3  # region breakdown, accuracy against budget, candidates
    assert "<h2>Provenance</h2>" in page and f"<th>edgestream</th><td>{edgestream.__version__}</td>" in page
    assert str(path) in page and "UTC</td>" in page and "rows)" in page
    code, out, _ = run(capsys, "budget", "--learner", "forest", "--board", "rpi4", "--features", 8, "--classes", 3,
                       "--n-trees", 4, "--html", tmp_path / "forest.html")
    assert code == 0 and "forest on rpi4: max_depth=12, n_trees=4" in out and f"report: {tmp_path}" in out
    assert (tmp_path / "forest.html").read_text().count("data:image/png;base64,") == 1


def test_a_missing_report_dependency_stops_budget_before_any_work(capsys, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    code, _, err = run(capsys, "budget", "--learner", "shrubs", "--board", "stm32f411", "--data", tmp_path / "absent.csv",
                       "--label", "label", "--html", tmp_path / "r.html")
    assert code != 0 and "pip install 'edgestream[report]'" in err and "absent.csv" not in err


@pytest.mark.parametrize("argv, message", [
    (["--board", "uno", "--features", 3, "--classes", 2], "unknown board 'uno'; known boards: atmega2560, atmega328p, esp32c3"),
    (["--board", "stm32f411", "--ram", 64, "--features", 3, "--classes", 2],
     "no shrubs configuration for 3 features and 2 classes fits 64 bytes of RAM"),
    (["--board", "atmega328p", "--ram", "4KiB", "--features", 3, "--classes", 2],
     "a RAM budget of 4,096 bytes exceeds atmega328p's 2,048 bytes"),
    (["--board", "stm32f411", "--features", 3], "--classes needed (or --data and --label"),
    (["--board", "stm32f411", "--features", 3, "--classes", 2, "--n-trees", 3],
     "--n-trees does not apply to --learner shrubs; its options are --[no-]allow-missing, --binning"),
])
def test_budget_user_errors(capsys, argv, message):
    code, _, err = run(capsys, "budget", "--learner", "shrubs", *argv)
    assert_user_error(code, err, message)


def test_budget_nothing_fits_and_bad_size(capsys):
    code, _, err = run(capsys, "budget", "--learner", "tree", "--board", "atmega328p", "--features", 30,
                       "--classes", 10, "--max-depth", 12)
    assert_user_error(code, err, "no tree configuration for 30 features and 10 classes fits 2,048 bytes of RAM and "
                                 "32,768 bytes of flash on atmega328p")
    with pytest.raises(SystemExit) as exit_info:
        run(capsys, "budget", "--learner", "tree", "--board", "stm32f411", "--flash", "8 KBs")
    assert exit_info.value.code == 2 and "argument --flash: '8 KBs' is not a byte size" in capsys.readouterr().err


def test_budget_predicted_against_measured(capsys, tmp_path, bundles):
    argv = ["budget", "--learner", "shrubs", "--board", "stm32f411", "--features", 3, "--classes", 2,
            "--window", 16, "--shrubs", 4, "--max-depth", 3, "--bundle", bundles["shrubs"]]
    code, out, _ = run(capsys, *argv, "--json")
    measured = json.loads(out)["measured"]
    assert code == 0 and measured["board"] == "stm32f411" and measured["elf"].endswith("firmware.elf")
    state = measured["state_ram"]
    assert state["predicted"] == state["measured"] == ShrubEnsemble(window_size=16, max_shrubs=4, max_depth=3) \
        .state_bytes(3, 2)
    for exact in ("tables_flash", "image_flash"):  # every byte the ELF holds for the model is predicted
        assert measured[exact]["predicted"] == measured[exact]["measured"] > 0
    assert measured["code_flash"]["measured"] > 0
    code, out, _ = run(capsys, *argv, "--html", tmp_path / "r.html")
    assert code == 0 and f"static state RAM  {state['predicted']:>10,}{state['measured']:>10,}" in out
    assert "<td>static state RAM</td>" in (tmp_path / "r.html").read_text()
    code, _, err = run(capsys, *argv[:9], "--bundle", bundles["shrubs"])
    assert_user_error(code, err, "does not hold the planned model: it has window_size 16 (planned ")


def test_build(capsys, bundles):
    code, out, _ = run(capsys, "build", bundles["tree"], "--board", "stm32f411", "--json")
    report = json.loads(out)
    assert code == 0 and report["board"] == "stm32f411" and report["bundle"] == "tree"
    assert {"text", "data", "bss", "objects", "state_bytes", "stack", "stack_max", "flash_used", "ram_peak",
            "tables_bytes", "code_bytes", "fits"} <= report.keys()
    assert report["state_bytes"] is None and report["text"] > report["code_bytes"] > 0 and report["fits"]
    assert "tree_forest" in report["objects"] and "tree_feature" not in report["objects"]  # speed: inline code
    assert {"main", "tree_predict", "tree_predict_proba"} == report["stack_max"].keys()
    code, out, _ = run(capsys, "build", bundles["shrubs"], "--board", "stm32f411")
    assert code == 0 and out.startswith("shrubs for stm32f411: ") and "state: none" not in out
    assert "shrubs_learn" in out and "the model in it: code " in out and out.rstrip().endswith("fits")


def test_simulate_forest_under_qemu(capsys, sea, bundles):
    _, _, path = sea
    code, out, _ = run(capsys, "simulate", bundles["forest"], path, "--label", "label", "--json")
    host = json.loads(out)
    code, out, _ = run(capsys, "simulate", bundles["forest"], path, "--label", "label", "--target", "qemu",
                       "--board", "stm32f411", "--json")
    report = json.loads(out)
    assert code == 0 and set(report) == HOST_KEYS | {"board"} and report["target"] == "qemu"
    assert report["board"] == "stm32f411" and report["n"] == 400
    assert report["mismatches"] == report["proba_mismatches"] == 0 and report["accuracy"] == host["accuracy"]


def test_simulate_shrubs_learning_under_qemu(capsys, sea, bundles):
    _, _, path = sea
    argv = ["simulate", bundles["shrubs"], path, "--label", "label", "--learn", "--window", 100]
    host = json.loads(run(capsys, *argv, "--json")[1])
    code, out, _ = run(capsys, *argv, "--target", "qemu", "--board", "stm32f411", "--json")
    report = json.loads(out)
    assert code == 0 and set(report) == HOST_LEARN_KEYS | {"board"} and report["mismatches"] == 0
    assert report["accuracy"] == report["python_accuracy"] == host["accuracy"] and report["curve"] == host["curve"]
    assert report["state_bytes"] == host["state_bytes"] and len(report["curve"]) == 4
    code, out, _ = run(capsys, *argv, "--target", "qemu", "--board", "stm32f411")
    assert code == 0 and "0 prediction mismatches" in out and "on stm32f411 under qemu-system-arm mps2-an386" in out


@pytest.mark.parametrize("board, unit, where, line", [
    ("stm32f411", "instructions", "under qemu-system-arm mps2-an386", "instructions per call, counted by the emulator"),
    # simavr traces no instructions: the firmware measures CPU cycles (Timer1)
    ("atmega2560", "cycles", "under simavr", "CPU cycles per call, measured by Timer1 under simavr"),
])
def test_simulate_counts_every_call_on_the_emulator(capsys, tmp_path, sea, bundles, board, unit, where, line):
    """30 rows test-then-train on a shrub bundle: mean and worst per call, those of the per-call counts."""
    X, y, _ = sea
    path = write_csv(tmp_path / "rows.csv", X[:30], y[:30])
    argv = ["simulate", bundles["shrubs"], path, "--label", "label", "--target", "qemu", "--board", board,
            "--instructions"]
    code, out, _ = run(capsys, *argv, "--learn", "--json")
    report = json.loads(out)
    assert code == 0 and report["unit"] == unit and report["mismatches"] == 0
    per_call = targets.run(bundles["shrubs"], board, X[:30], y[:30], learn=True, instructions=True).instructions
    assert set(report["instructions"]) == set(per_call) == {"predict_proba", "predict", "learn"}
    for call, figures in report["instructions"].items():
        assert 0 < figures["mean"] <= figures["worst"]
        assert figures == {"mean": per_call[call].mean(), "worst": per_call[call].max()}
    code, out, _ = run(capsys, *argv)  # predictions only: no learn calls to count
    last = out.splitlines()[-1]
    assert code == 0 and where in out.splitlines()[0] and last.startswith(f"{line}: predict_proba mean ")
    assert "; predict mean " in last and "learn" not in last


def test_simulate_emulator_timeout(capsys, sea, bundles):
    _, _, path = sea
    code, _, err = run(capsys, "simulate", bundles["forest"], path, "--label", "label", "--target", "qemu",
                       "--board", "stm32f411", "--timeout", 0.001)
    assert code == 1 and err.startswith("edgestream: error: ") and "did not finish within 0.001 s" in err  # a failure


def test_demo(capsys, tmp_path):
    code, out, err = run(capsys, "demo", "--out", tmp_path, "--n-samples", 1500)
    assert code == 0 and "1500 rows" in out and "test-then-train: 100%" in err  # the progress bar
    assert "host C parity: 1500 rows test-then-train from the exported state, 0 mismatches" in out
    assert "QEMU parity (qemu-system-arm mps2-an386): the first 500 rows test-then-train from the exported state, " \
           "0 mismatches" in out
    assert "static state RAM" in out and f"memory report: {tmp_path / 'memory-report.html'}" in out
    page = (tmp_path / "memory-report.html").read_text()
    assert "Predicted against measured" in page and "data:image/png;base64," in page
    assert "NAME_" not in page and "demo_reset, when an application calls it" in page and "<th>toolchain</th>" in page
    assert "; RAM at peak " in next(line for line in out.splitlines() if line.startswith("plan: "))
    assert (tmp_path / "bundle" / "src" / "demo.h").is_file()


def missing_toolchain(tool, packages, board):
    raise targets.ToolchainMissing(f"{tool} is not installed; install the Debian package(s) {' '.join(packages)}")


class OneWrongPrediction:
    """A compiled bundle whose first test-then-train prediction is another class."""

    def __init__(self, bundle):
        self.bundle, self.rows = bundle, 0

    def __getattr__(self, name):
        return getattr(self.bundle, name)

    def predict_one(self, x):
        self.rows += 1
        predicted = self.bundle.predict_one(x)
        return predicted if self.rows > 1 else next(c for c in self.bundle.model.classes_ if c != predicted)


def test_demo_without_toolchain_skips_only_qemu(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(targets, "require", missing_toolchain)
    code, out, _ = run(capsys, "demo", "--out", tmp_path, "--n-samples", 300)
    assert code == 0 and "0 mismatches" in out and "QEMU parity" not in out
    assert "skipped the cross build and the QEMU run: arm-none-eabi-gcc is not installed; install the Debian " \
           "package(s) gcc-arm-none-eabi binutils-arm-none-eabi picolibc-arm-none-eabi" in out
    assert "Predicted against measured" not in (tmp_path / "memory-report.html").read_text()


def test_demo_fails_on_mismatch(capsys, tmp_path, monkeypatch):
    load_bundle = simulate.load_bundle
    monkeypatch.setattr(simulate, "load_bundle", lambda directory: OneWrongPrediction(load_bundle(directory)))
    monkeypatch.setattr(targets, "require", missing_toolchain)
    code, out, _ = run(capsys, "demo", "--out", tmp_path, "--n-samples", 300)
    assert code == 1 and "300 rows test-then-train from the exported state, 1 mismatches" in out


@pytest.mark.parametrize("kind, board", [("tree", "stm32f411"), ("forest", "atmega328p"), ("shrubs", "atmega328p")])
def test_every_model_byte_of_the_elf_is_predicted(bundles, kind, board):
    """The budget of an exported model predicts its constant tables (in flash; on AVR only the state's config and
    pointer struct also in RAM), its state, the state's initial image in flash, the code its calls reach and their
    deepest stack to the byte, on an aligned (ARM) and a packed (AVR) target."""
    model = load_model(bundles[kind] / "model.esm")
    budget = of_model(model, load_board(board))
    sizes = compare_sizes(budget, targets.build(bundles[kind], board))
    for key in ("state_ram", "tables_ram", "tables_flash", "image_flash", "code_flash", "stack"):
        assert sizes[key]["predicted"] == sizes[key]["measured"], key
    assert (sizes["tables_ram"]["measured"] > 0) == (kind == "shrubs")  # a frozen model's RAM is its stack alone
    assert (sizes["image_flash"]["measured"] > 0) == (kind == "shrubs")  # the shrubs have learned 40 rows


@pytest.mark.parametrize("learner", [name for name, spec in edgestream.learners.REGISTRY.items()
                                     if spec.learning and spec.cls is not None])  # classifiers (accuracy)
def test_every_learning_learner_learns_on_avr_as_in_python(capsys, tmp_path, sea, learner):
    """Planned for the Arduino Uno's ATmega328P (16-bit int, soft float, tables in flash), fitted, exported and run
    test-then-train under simavr: every prediction equals the Python model's (a 16-bit int promotion in the C
    would show here)."""
    _, _, path = sea
    model, bundle, board = tmp_path / "m.esm", tmp_path / "b", "atmega328p"
    assert run(capsys, "fit", path, "--label", "label", "--learner", learner, "--ram", "1900", "--board", board,
               "-o", model)[0] == 0  # 148 of the 2,048 bytes left to the harness
    assert run(capsys, "export", model, "-o", bundle, "--name", "avr")[0] == 0
    code, out, _ = run(capsys, "simulate", bundle, path, "--label", "label", "--learn", "--target", "qemu",
                       "--board", board, "--json")
    report = json.loads(out)
    assert code == 0 and report["n"] == 400 and report["mismatches"] == 0
    assert report["accuracy"] == report["python_accuracy"]


def test_the_runtime_tables_a_bundle_reads_are_predicted_as_code(capsys, tmp_path, sea):
    """Hoeffding trees read the runtime's own constant tables (the erf series): the budget of an exported
    model counts them with the code its calls reach, as the ELF does."""
    _, _, path = sea
    assert run(capsys, "fit", path, "--label", "label", "--learner", "hoeffding", "-o", tmp_path / "h.esm")[0] == 0
    bundle = export_bundle(load_model(tmp_path / "h.esm"), tmp_path / "b", name="ht")
    build = targets.build(bundle, "rp2040")
    sizes = compare_sizes(of_model(load_model(tmp_path / "h.esm"), load_board("rp2040")), build)
    assert sizes["code_flash"]["predicted"] == sizes["code_flash"]["measured"]
    assert sizes["stack"]["predicted"] == sizes["stack"]["measured"]
    _, symbols = targets.read_elf(build.elf)
    assert symbols["es_erf_coeffs"][0] == "OBJECT"  # linked, and counted on both sides


# -- regressors on the emulated boards ------------------------------------------------------------------------

REGRESSION_KEYS = {"n", "mae", "rmse", "r2", "saturated", "mismatches", "bundle", "target", "board"}


@pytest.fixture(scope="module")
def friedman(tmp_path_factory):
    """40 rows of Friedman #1 (5 features) and a forest, a BLS, a shrubs, an AXGB and a Hoeffding regressor (linear
    leaves) fitted and exported through the CLI."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(40, n_features=5, noise=1.0, random_state=4)
    out = tmp_path_factory.mktemp("friedman")
    path = write_csv(out / "friedman.csv", X, y)
    bundles = {}
    for learner, options in (("forest", ["--n-trees", 3, "--max-depth", 4]),
                             ("bls", ["--task", "regression", "--feature-nodes", 4, "--enhancement-nodes", 6]),
                             ("shrubs", ["--task", "regression", "--window", 12, "--shrubs", 4, "--max-depth", 3]),
                             ("axgb", ["--task", "regression", "--members", 3, "--window-min", 4, "--window-max", 8,
                                       "--max-depth", 2, "--max-bins", 8]),
                             ("hoeffding", ["--task", "regression", "--max-leaves", 3, "--grace-period", 10,
                                            "--leaf-model", "linear"])):
        model = out / f"{learner}.esm"
        assert main([str(arg) for arg in ("fit", path, "--label", "label", "--learner", learner, *options, "-o",
                                          model)]) == 0
        assert main(["export", str(model), "-o", str(out / learner), "--name", learner]) == 0
        bundles[learner] = out / learner
    assert load_model(out / "axgb.esm").n_members > 0  # the exported AXGB state has members
    return X, y, path, bundles


@pytest.mark.parametrize("board, where", [("stm32f411", "qemu-system-arm mps2-an386"),
                                          ("rp2040", "qemu-system-arm microbit"), ("atmega2560", "simavr")])
def test_simulate_a_forest_regressor_on_the_boards(capsys, friedman, board, where):
    """Cortex-M4F, Cortex-M0 and AVR: every raw output of the C equals Python's (0 mismatches), and the metrics
    of the decoded values are the host's."""
    _, _, path, bundles = friedman
    host = json.loads(run(capsys, "simulate", bundles["forest"], path, "--label", "label", "--json")[1])
    argv = ["simulate", bundles["forest"], path, "--label", "label", "--target", "qemu", "--board", board]
    code, out, _ = run(capsys, *argv, "--json")
    report = json.loads(out)
    assert code == 0 and set(report) == REGRESSION_KEYS and report["board"] == board and report["n"] == 40
    assert report["mismatches"] == 0 and {k: report[k] for k in ("mae", "rmse", "r2")} == {
        k: host[k] for k in ("mae", "rmse", "r2")}
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "0 raw output mismatches between C and Python" in out and f"under {where}" in out


@pytest.mark.parametrize("board", ["stm32f411", "rp2040", "atmega2560"])
@pytest.mark.parametrize("learner", ["bls", "shrubs", "axgb"])
def test_simulate_a_learning_regressor_on_the_boards(capsys, friedman, board, learner):
    """Test-then-train from the exported state on Cortex-M4F (FPU), Cortex-M0 and AVR (soft float32 for BLS;
    shrubs in integers, growing new shrubs on the device; AXGB buffers rows and trains members on its windows,
    spread over the calls): the C learns every row's int16 target code and predicts Python's raw output on every
    row."""
    _, _, path, bundles = friedman
    argv = ["simulate", bundles[learner], path, "--label", "label", "--learn", "--json"]
    host = json.loads(run(capsys, *argv)[1])
    evaluated = json.loads(run(capsys, "evaluate", bundles[learner] / "model.esm", path, "--label", "label",
                               "--json")[1])
    assert host["r2"] == evaluated["r2"]  # the values decoded as the model decodes them (a shrubs' divisor)
    code, out, _ = run(capsys, *argv, "--target", "qemu", "--board", board)
    report = json.loads(out)
    assert code == 0 and report["mismatches"] == 0 and report["n"] == 40
    assert report["r2"] == report["python_r2"] == host["r2"] and report["rmse"] == host["rmse"]
    assert report["saturated"] == host["saturated"] and report["state_bytes"] > 0


def test_simulate_a_hoeffding_regressor_with_linear_leaves_learning_under_qemu(capsys, friedman):
    """Cortex-M4F: test-then-train from the exported state, the linear leaves' integer steps and float32 inputs
    give Python's raw output on every row."""
    _, _, path, bundles = friedman
    argv = ["simulate", bundles["hoeffding"], path, "--label", "label", "--learn", "--json"]
    host = json.loads(run(capsys, *argv)[1])
    code, out, _ = run(capsys, *argv, "--target", "qemu", "--board", "stm32f411")
    report = json.loads(out)
    assert code == 0 and report["mismatches"] == 0 and report["n"] == 40
    assert report["r2"] == report["python_r2"] == host["r2"] and report["state_bytes"] == host["state_bytes"]


@pytest.mark.parametrize("board, unit", [("stm32f411", "instructions"), ("atmega2560", "cycles")])
def test_simulate_counts_a_regressors_calls(capsys, friedman, board, unit):
    """--instructions on a learning regressor counts its predict_raw and learn calls (predictions only: no
    learn), as targets.run does."""
    X, y, path, bundles = friedman
    argv = ["simulate", bundles["bls"], path, "--label", "label", "--target", "qemu", "--board", board,
            "--instructions"]
    counted = targets.run(bundles["bls"], board, X, y, learn=True, instructions=True).instructions
    assert_counts_every_call(capsys, argv, unit, counted, "predict_raw")


def assert_counts_every_call(capsys, argv, unit, counted, prediction: str) -> None:
    """simulate --instructions (``argv``) with --learn reports the mean and worst of ``counted`` (targets.run's
    counts of the same rows) for the prediction and the learn call; without --learn, the prediction only."""
    code, out, _ = run(capsys, *argv, "--learn", "--json")
    report = json.loads(out)
    assert code == 0 and report["unit"] == unit and report["mismatches"] == 0
    assert set(report["instructions"]) == set(counted) == {prediction, "learn"}
    for call, figures in report["instructions"].items():
        assert 0 < figures["mean"] <= figures["worst"]
        assert figures == {"mean": counted[call].mean(), "worst": counted[call].max()}
    code, out, _ = run(capsys, *argv)
    last = out.splitlines()[-1]
    assert code == 0 and f"{prediction} mean " in last and "learn" not in last


FIGURES_LINE = re.compile(r"^memory on stm32f411 \(exact, of the trained model's bundle\): "
                          r"RAM at peak (?P<ram>[\d,]+) = (?P<ram_parts>[^;]+); "
                          r"flash (?P<flash>[\d,]+) = (?P<flash_parts>.+)$", re.MULTILINE)


def _parts(text: str) -> dict[str, int]:
    return {name: int(size.replace(",", "")) for name, size in
            (part.rsplit(" ", 1) for part in text.split(" + "))}


def test_one_name_and_one_figure_for_each_memory_amount(capsys, tmp_path, sea):
    """fit's line, the search table's chosen row, fit --json, the bundle's build and simulate name the figures
    alike, and a figure two outputs give under one name is one number: the chosen row shows the trained model's
    exact figures (it showed its untrained configuration's bound), RAM at peak and flash add up their parts, and
    the model state, tables and code of the fit are those the linked firmware holds."""
    X, y, path = sea
    argv = ["fit", path, "--label", "label", "--ram", "4KiB", "--board", "stm32f411", "-o", tmp_path / "m.esm"]
    code, out, _ = run(capsys, *argv)
    line = FIGURES_LINE.search(out)
    assert code == 0 and line, out
    ram, flash = (int(line[key].replace(",", "")) for key in ("ram", "flash"))
    ram_parts, flash_parts = _parts(line["ram_parts"]), _parts(line["flash_parts"])
    assert sum(ram_parts.values()) == ram and sum(flash_parts.values()) == flash
    chosen = next(row.split() for row in out.splitlines() if row.startswith("* "))
    assert [int(cell.replace(",", "")) for cell in chosen[6:8]] == [ram, flash]
    assert "RAM at peak and flash (docs/tutorials/plan-the-memory.md#the-memory-figures): * exact" in out
    code, out, _ = run(capsys, *argv, "--json")
    budget = json.loads(out)["budget"]
    assert budget["ram_at_peak_bytes"] == ram and budget["flash_bytes"] == flash and budget["basis"].startswith("exact")
    assert budget["ram_at_peak_parts"] == ram_parts and budget["flash_parts"] == flash_parts
    state = budget["model_state_bytes"]
    assert state == ram_parts["model state"] == load_model(tmp_path / "m.esm").state_bytes()
    assert run(capsys, "export", tmp_path / "m.esm", "-o", tmp_path / "b", "--name", "m")[0] == 0
    code, out, _ = run(capsys, "build", tmp_path / "b", "--board", "stm32f411", "--json")
    built = json.loads(out)
    assert built["model_state_bytes"] == state and built["code_bytes"] == flash_parts["code"]
    assert built["tables_bytes"] == flash_parts["tables"] and built["state_image_bytes"] == flash_parts["state image"]
    assert built["firmware_ram_at_peak_bytes"] == built["ram_peak"] > ram
    code, out, _ = run(capsys, "build", tmp_path / "b", "--board", "stm32f411")
    assert f"firmware, the whole linked program with its harness" in out
    assert f"RAM at peak {built['ram_peak']:,} of 131,072 = data {built['data']:,} + bss " in out
    assert f"  model state {state:,} bytes (m_memory)" in out


def test_the_memory_report_to_sign_off(capsys, tmp_path, sea, bundles):
    """The report of a planned model with its bundle and the emulator's counts: time per sample in cycles and µs at
    the clock with the flash wait states, the counted instructions beside the predicted ones, the checkpoint slots
    in the part's sectors, .data and .bss, the provenance (toolchain, flags, commit, data) and the bundle's name in
    place of NAME_."""
    X, y, _ = sea
    rows = write_csv(tmp_path / "rows.csv", X[:20], y[:20])
    code, out, _ = run(capsys, "simulate", bundles["shrubs"], rows, "--label", "label", "--learn", "--target", "qemu",
                       "--board", "stm32f411", "--instructions", "--json")
    (tmp_path / "counts.json").write_text(out)
    counts = json.loads(out)["instructions"]
    argv = ["budget", "--learner", "shrubs", "--board", "stm32f411", "--features", 3, "--classes", 2, "--window", 16,
            "--shrubs", 4, "--max-depth", 3, "--bundle", bundles["shrubs"], "--measured", tmp_path / "counts.json"]
    code, out, _ = run(capsys, *argv, "--html", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert code == 0 and "NAME_" not in page + out and "shrubs_reset, when an application calls it" in page
    learn = counts["learn"]
    assert f"<td>learn</td><td>" in page and f"{learn['mean']:,.0f} / {learn['worst']:,}</td>" in page
    assert f"counted {learn['mean']:,.0f} / {learn['worst']:,}" in out
    report = json.loads(run(capsys, *argv, "--json")[1])
    cycles, micro = report["cycles_per_sample"], report["microseconds_per_sample"]
    assert report["flash_wait_states"] == 3 and cycles["every_fetch_waiting"]["worst"] == 4 * cycles["fastest"]["worst"]
    assert micro["fastest"]["worst"] == pytest.approx(cycles["fastest"]["worst"] / 100)  # 100 MHz
    assert f"{cycles['fastest']['worst']:,.0f}</td>" in page and "3 flash wait states at 100 MHz (STM32F411" in page
    image = ShrubEnsemble(window_size=16, max_shrubs=4, max_depth=3).layout(3, 2)
    slot = report["checkpoint"]
    assert slot["sector_bytes"] == 16384 and slot["sectors_per_slot"] == 1 and slot["flash_bytes"] == 32768
    assert slot["image_bytes"] == checkpoint.image_layout(image).image_bytes
    assert f"<strong>32,768 bytes of flash</strong>" in page
    measured = report["measured"]
    assert report["sections"] == {".data": measured["image_flash"]["measured"], ".bss": 4}
    assert "<td>.data</td><td>1,176</td>" in page
    toolchain = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True,
                               text=True).stdout.splitlines()[0]
    assert f"<th>toolchain</th><td>{toolchain}</td>" in page and "-mcpu=cortex-m4 -mthumb" in page
    assert re.search(r"<th>commit</th><td>[0-9a-f]{40}", page)



# -- detectors on the emulated boards -------------------------------------------------------------------------


DETECTOR_OPTIONS = {"hst": ["--n-trees", 4, "--height", 4], "loda": ["--n-projections", 8, "--n-bins", 16]}


@pytest.fixture(scope="module", params=sorted(DETECTOR_OPTIONS))
def detector(request, tmp_path_factory):
    """140 rows of three clusters with point anomalies (in 10% of the rows after the first 40) and a 0/1 label
    column; each detector (Half-Space Trees, Loda) with windows of 20 rows that swap within the run, fitted and
    exported through the CLI."""
    from test_anomaly import point_anomalies

    X, y = (part[260:] for part in point_anomalies(400, 5, rate=0.1))
    out = tmp_path_factory.mktemp("detector")
    path = write_csv(out / "points.csv", X, y.astype(int))
    model = out / "detector.esm"
    assert main([str(arg) for arg in ("fit", path, "--label", "label", "--learner", request.param,
                                      *DETECTOR_OPTIONS[request.param], "--window", 20, "--false-alarms", 0.2,
                                      "-o", model)]) == 0
    assert main(["export", str(model), "-o", str(out / "bundle"), "--name", "det"]) == 0
    return X, y, path, out / "bundle"


@pytest.mark.parametrize("board", ["stm32f411", "rp2040", "atmega2560"])
def test_simulate_a_detector_scoring_and_learning_on_the_boards(capsys, detector, board):
    """Cortex-M4F, Cortex-M0 and AVR: test-then-train from the exported state (windows swap, the device's
    threshold moves) and scoring alone give Python's score and flag on every row, and the host's metrics."""
    _, _, path, bundle = detector
    for extra in (["--learn"], []):
        argv = ["simulate", bundle, path, "--label", "label", "--json", *extra]
        host = json.loads(run(capsys, *argv)[1])
        code, out, _ = run(capsys, *argv, "--target", "qemu", "--board", board)
        report = json.loads(out)
        assert code == 0 and report["n"] == 140 and report["board"] == board
        assert report["mismatches"] == 0 and report["flag_mismatches"] == 0
        assert {k: report[k] for k in ("roc_auc", "flagged", "false_alarms_per_1000")} == {
            k: host[k] for k in ("roc_auc", "flagged", "false_alarms_per_1000")}
        assert report["roc_auc"] > 0.8 and report["flagged"] > 0


@pytest.mark.parametrize("board, unit", [("stm32f411", "instructions"), ("atmega2560", "cycles")])
def test_simulate_counts_a_detectors_score_and_learn_calls(capsys, detector, board, unit):
    """--instructions on a detector counts its score and (learning) learn calls, as targets.run does."""
    X, _, path, bundle = detector
    argv = ["simulate", bundle, path, "--label", "label", "--target", "qemu", "--board", board, "--instructions"]
    counted = targets.run(bundle, board, X, learn=True, instructions=True).instructions
    assert_counts_every_call(capsys, argv, unit, counted, "score")
