"""RISC-V microcontrollers (ESP32-C3, GD32VF103, FE310 profiles) under qemu-system-riscv32: every learner predicts
and learns there as in Python, its budget equals the linked RISC-V ELF to the byte, and every call is counted.

The toolchain (gcc-riscv64-unknown-elf, picolibc-riscv64-unknown-elf) and QEMU (qemu-system-misc) come from
scripts/setup.sh; nothing here is skipped when they are missing. Streams are short: the long runs belong in
benchmarks/bench_device.py.
"""

import json

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier
from test_cli import run, write_csv

from edgestream import convert, learners, targets
from edgestream.boards import boards_dir, load_board
from edgestream.budget import of_model
from edgestream.data import make_stream
from edgestream.export import export_bundle
from edgestream.modelfile import load_model, save_model
from edgestream.parity import compare_sizes

BOARDS = ("esp32c3", "gd32vf103", "fe310")  # virt (RV32IMC), virt (RV32IMAC), sifive_e (RV32IMAC)
CLASSIFIERS = [name for name, spec in learners.REGISTRY.items() if spec.cls is not None]
FROZEN = {"tree": {"max_depth": 4}, "forest": {"n_trees": 3, "max_depth": 4},
          "gbdt": {"n_estimators": 4, "max_leaves": 4}}
SIZES = ("state_ram", "tables_ram", "tables_flash", "image_flash", "code_flash", "stack")


@pytest.fixture(scope="module")
def sea(tmp_path_factory):
    X, y = make_stream("sea", 120, seed=5)
    return X, y, write_csv(tmp_path_factory.mktemp("data") / "sea.csv", X, y)


def fitted(learner: str, board: str, X, y, path, out, capsys):
    """A small model of ``learner``: a frozen one fitted in Python, a learning one planned by the CLI for 2 KiB of
    the board's RAM."""
    if learner == "imported":
        return convert(DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y))
    if learner in FROZEN:
        return learners.get(learner).make(**FROZEN[learner]).fit(X, y)
    assert run(capsys, "fit", path, "--label", "label", "--learner", learner, "--ram", "2KiB", "--board", board,
               "-o", out / "m.esm")[0] == 0
    return load_model(out / "m.esm")


@pytest.mark.parametrize("learner", CLASSIFIERS)
def test_every_learner_runs_on_risc_v_as_in_python_within_its_budget(capsys, tmp_path, sea, learner):
    """Each learner on one of the three boards in turn (soft float, 32-bit int): every class and Q15 probability
    equals Python's, test-then-train for a learning model; and its budget (state, tables, state image, code, stack)
    equals the ELF's to the byte."""
    X, y, path = sea
    board = BOARDS[CLASSIFIERS.index(learner) % len(BOARDS)]
    model = fitted(learner, board, X, y, path, tmp_path, capsys)
    bundle = export_bundle(model, tmp_path / "b", name="rv")
    spec = learners.REGISTRY[learner]
    code, out, _ = run(capsys, "simulate", bundle, path, "--label", "label", "--target", "qemu", "--board", board,
                       "--json", *(["--learn"] if spec.learning else []))
    report = json.loads(out)
    assert code == 0 and report["board"] == board and report["n"] == len(X) and report["mismatches"] == 0
    assert report.get("proba_mismatches", 0) == 0
    sizes = compare_sizes(of_model(model, load_board(board)), targets.build(bundle, board))
    assert {key: sizes[key]["predicted"] for key in SIZES} == {key: sizes[key]["measured"] for key in SIZES}
    assert sizes["code_flash"]["measured"] > 0 and sizes["stack"]["measured"] > 0


def test_a_learning_regressor_on_risc_v(tmp_path):
    """BLS regression test-then-train on the ESP32-C3's core: every int32 raw output equals Python's."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(40, n_features=5, noise=1.0, random_state=4)
    model = learners.get("bls", "regression").make("regression", feature_nodes=4, enhancement_nodes=6).fit(X, y)
    bundle = export_bundle(model, tmp_path / "b", name="reg")
    expected = model.test_then_train(X, y)
    result = targets.run(bundle, "esp32c3", X, y, learn=True)
    assert np.array_equal(result.raw, expected)


def test_instructions_are_counted_alike_on_every_risc_v_machine(tmp_path, sea):
    """QEMU's instruction log counts every call exactly: the same counts on virt and sifive_e, for code compiled
    for RV32IMC and RV32IMAC (the runtime uses no atomics: the same instructions), deterministic, and each call's
    count the sum of its functions'."""
    X, y, _ = sea
    shrubs = learners.get("shrubs").make(window_size=16, max_shrubs=3, max_depth=3).fit_bins(X).set_classes(y)
    bundle = export_bundle(shrubs, tmp_path / "b", name="sh")
    counted = {board: targets.run(bundle, board, X[:20], y[:20], learn=True, instructions=True, by_function=True)
               for board in BOARDS}
    first = counted["esp32c3"]
    assert set(first.instructions) == {"predict_proba", "predict", "learn"}
    for result in counted.values():
        assert all(np.array_equal(result.instructions[call], first.instructions[call]) for call in first.instructions)
    for call, counts in first.instructions.items():
        assert len(counts) == 20 and (counts > 20).all()
        assert sum(first.functions[call].values()) == pytest.approx(counts.mean())
    assert any(name.startswith("__") for name in first.functions["learn"])  # soft float from libgcc: no FPU


def test_the_linker_holds_the_profile_s_ram(tmp_path, sea):
    """virt has 128 MiB, the GD32VF103 32 KiB: a model whose state exceeds the profile's RAM does not link."""
    X, y, _ = sea
    shrubs = learners.get("shrubs").make(window_size=512, max_shrubs=32, max_depth=6).fit_bins(X).set_classes(y)
    bundle = export_bundle(shrubs, tmp_path / "b", name="big")
    with pytest.raises(targets.TargetError, match="building for gd32vf103 failed"):
        targets.run(bundle, "gd32vf103", X[:2], y[:2], learn=True)
    assert targets.run(bundle, "esp32c3", X[:2], y[:2], learn=True).classes.shape == (2,)


@pytest.mark.parametrize("key, value, package", [("cc", "riscv64-unknown-elf-gcc", "gcc-riscv64-unknown-elf"),
                                                 ("command", "qemu-system-riscv32", "qemu-system-misc")])
def test_a_missing_toolchain_or_qemu_names_the_package(tmp_path, sea, key, value, package):
    X, _, _ = sea
    bundle = export_bundle(learners.get("tree").make(max_depth=2).fit(X, sea[1]), tmp_path / "b", name="t")
    board = tmp_path / "gone.toml"
    board.write_text((boards_dir() / "esp32c3.toml").read_text().replace(f'{key} = "{value}"', f'{key} = "no-{value}"'))
    with pytest.raises(targets.ToolchainMissing, match=f"no-{value} .*not installed; install the Debian package.*"
                                                       f"{package}"):
        targets.run(bundle, board, X[:2])


def test_the_call_graph_keeps_local_labels_within_their_function():
    """RISC-V objects keep the local labels their branches are relocated against: the calls after one belong to
    the enclosing function (else the budget misses the code and the stack they reach)."""
    disassembly = "\n".join([
        "00000000 <m_walk>:", "   0:\tadd\tsp,sp,-32", "  26:\tauipc\tra,0x0", "\t\t\t26: R_RISCV_CALL_PLT\t__lesf2",
        "  36:\tblez\ta0,6e <.L4>", "\t\t\t36: R_RISCV_BRANCH\t.L4", "", "0000006e <.L4>:", "  6e:\tauipc\tra,0x0",
        "\t\t\t6e: R_RISCV_CALL_PLT\tes_fixed_mul", "", "00000080 <es_fixed_mul>:", "  80:\tret"])
    assert targets.call_graph(disassembly) == {"m_walk": {"__lesf2", "es_fixed_mul"}, "es_fixed_mul": set()}
