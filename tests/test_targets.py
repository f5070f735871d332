"""Real cross builds and emulated runs: the C under QEMU predicts and learns exactly like the Python model.

The toolchains and emulators come from scripts/setup.sh; a missing one fails with the message naming the
Debian package (nothing here is skipped).
"""

import dataclasses
import json
import shutil
import subprocess

import numpy as np
import pytest

from edgestream import ForestClassifier, TreeClassifier
from edgestream.boards import boards_dir, load_board
from edgestream.export import export_bundle, runtime_sources
from edgestream.learners.axgb import AdaptiveXGBoost
from edgestream import ShrubEnsemble
from edgestream.targets import (COMPILE_FLAGS, EmulatorTimeout, TargetError, ToolchainMissing, build,
                                api_calls, call_graph, compile_into, count_instructions, decode_results, describe_exit,
                                emulator_command, encode_rows, execute, instructions_by_function, read_elf,
                                render_harness, run, uart_results, worst_stack)


def stream(n_rows: int, n_features: int = 4, seed: int = 0):
    """Rows with a drift half way: the label rule flips."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    y = ((X[:, 0] + X[:, 1] > 0) ^ (np.arange(n_rows) > n_rows // 2)).astype(int) + (X[:, 2] > 1)
    return X, y


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    X, y = stream(300)
    model = ForestClassifier(n_trees=5, max_depth=5, random_state=0).fit(X, y)
    return model, export_bundle(model, tmp_path_factory.mktemp("forest"), name="forest"), X


@pytest.fixture(scope="module")
def shrubs(tmp_path_factory):
    """A shrub bundle exported before learning, the stream, and the Python learner's test-then-train results."""
    X, y = stream(300, n_features=3, seed=1)
    learner = ShrubEnsemble(window_size=16, max_shrubs=4, max_depth=3).fit_bins(X).set_classes(np.arange(3))
    bundle = export_bundle(learner, tmp_path_factory.mktemp("shrubs"), name="shrubs")
    classes, proba = [], []
    for x, label in zip(X, y):
        proba.append(learner.predict_proba_q15(x[None])[0])
        classes.append(learner.predict_encoded(x[None])[0])
        learner.learn_one(x, label)
    return learner, bundle, X, y, np.array(classes), np.array(proba)


@pytest.mark.parametrize("board", ["stm32f411", "rp2040", "rpi4"])
def test_forest_under_emulation_equals_python(forest, board):
    """Cortex-M4F (mps2-an386), Cortex-M0+ code on the micro:bit's Cortex-M0, and AArch64 Linux (qemu-aarch64)."""
    model, bundle, X = forest
    result = run(bundle, board, X)
    assert result.classes.dtype == np.uint8 and result.proba.dtype == np.uint16
    assert result.proba.shape == (len(X), model.ensemble_.n_classes)
    assert np.array_equal(result.classes, model.predict_encoded(X))
    assert np.array_equal(result.proba, model.predict_proba_q15(X))


@pytest.mark.parametrize("board", ["stm32f411", "rpi-zero"])
def test_shrubs_learning_under_emulation_equals_python(shrubs, board):
    """Test-then-train over 300 rows on a Cortex-M4F and on ARMv6 Linux (qemu-arm)."""
    _, bundle, X, y, classes, proba = shrubs
    result = run(bundle, board, X, y, learn=True)
    assert np.array_equal(result.proba, proba)
    assert np.array_equal(result.classes, classes)
    assert (classes == y).mean() > 0.6  # it did learn the stream


def test_stm32h743_runs_on_the_cortex_m7_machine(forest):
    model, bundle, X = forest
    assert np.array_equal(run(bundle, "stm32h743", X[:50]).proba, model.predict_proba_q15(X[:50]))


def test_instruction_counts_per_call(shrubs):
    _, bundle, X, y, classes, _ = shrubs
    first = run(bundle, "stm32f411", X[:20], y[:20], learn=True, instructions=True)
    assert np.array_equal(first.classes, classes[:20])
    assert set(first.instructions) == {"predict_proba", "predict", "learn"}
    assert all(len(counts) == 20 and (counts > 20).all() for counts in first.instructions.values())
    again = run(bundle, "stm32f411", X[:20], y[:20], learn=True, instructions=True, by_function=True)
    assert all(np.array_equal(first.instructions[k], again.instructions[k]) for k in first.instructions)
    for call, counts in first.instructions.items():  # every instruction of a call goes to one function
        assert sum(again.functions[call].values()) == pytest.approx(counts.mean())
        assert f"shrubs_{call}" in again.functions[call]
    assert any(name.startswith("es_") for name in again.functions["learn"])
    with pytest.raises(ValueError, match="instructions=True"):
        run(bundle, "stm32f411", X[:2], by_function=True)


def test_count_instructions_attributes_runs_to_api_calls(tmp_path):
    lines = ["main", "fread", "fread", "m_predict_proba", "es_quantize_f32", "__aeabi_fcmple", "m_predict_proba",
             "main", "m_predict", "es_argmax", "step", "m_learn", "m_learn", "main", "fwrite"]
    trace = tmp_path / "trace.log"
    trace.write_text("".join(f"Trace 0: 0x7f00 [00000000/{i:08x}/0/0] {s}\n" for i, s in enumerate(lines)))
    counts = count_instructions(trace, "m")
    assert {k: v.tolist() for k, v in counts.items()} == {"predict_proba": [4], "predict": [2], "learn": [2]}
    assert instructions_by_function(trace, "m") == {
        "predict_proba": {"m_predict_proba": 2, "es_quantize_f32": 1, "__aeabi_fcmple": 1},
        "predict": {"m_predict": 1, "es_argmax": 1}, "learn": {"m_learn": 2}}


def test_cortex_m4_build_report(shrubs):
    learner, bundle, *_ = shrubs
    report = build(bundle, "stm32f411")
    assert report.state_bytes == learner.state_bytes()  # the predicted state is what the linker placed
    assert report.objects["shrubs_memory"].memory == "ram"
    assert {"shrubs_edges", "shrubs_offsets", "shrubs_config"} <= set(report.objects)
    assert all(report.objects[name].memory == "flash" for name in ("shrubs_edges", "shrubs_config"))
    assert report.text > report.code_bytes > 0 and report.bss >= report.state_bytes
    assert report.stack_reserved > 0 and report.fits
    functions = {usage.function for usage in report.stack}
    assert {"shrubs_learn", "es_shrubs_learn", "main"} <= functions
    assert report.stack_max["shrubs_learn"] >= report.stack_max["shrubs_predict_proba"] > 0
    data = json.loads(report.to_json())
    assert data["flash_used"] == report.text + report.data and data["ram_used"] == report.data + report.bss
    assert data["board"] == "stm32f411" and data["objects"]["shrubs_memory"]["bytes"] == learner.state_bytes()


def test_avr_build_of_a_small_tree(tmp_path):
    """The tables of an AVR bundle stay in flash (PROGMEM through es_flash.h): no .data, nothing in RAM but the
    stack."""
    X, y = stream(200)
    bundle = export_bundle(TreeClassifier(max_depth=4).fit(X, y), tmp_path / "tree", name="tree")
    report = build(bundle, "atmega328p", out_dir=tmp_path / "avr")
    assert (tmp_path / "avr" / "firmware.elf").is_file()
    assert report.tables_bytes > 0 and report.tables_in_ram == 0 and report.data == 0
    assert all(size.memory == "flash" for size in report.objects.values())
    assert report.stack_reserved == 0 and report.ram_peak == report.ram_used + report.stack_max["main"]
    assert report.fits and report.ram_peak < 2048 and report.flash_used < 32 * 1024
    assert report.stack_max["tree_predict"] > 0


def test_forest_on_the_arduino_mega_under_simavr_equals_python(forest):
    """The ATmega2560 (avr6: 3-byte program counter) runs the same harness."""
    model, bundle, X = forest
    result = run(bundle, "atmega2560", X[:60])
    assert result.emulator == "simavr" and np.array_equal(result.proba, model.predict_proba_q15(X[:60]))


def test_forest_on_avr_under_simavr_equals_python(forest):
    """ATmega328P under simavr: the rows in flash, the results over the UART; tables read with pgm_read_*."""
    model, bundle, X = forest
    result = run(bundle, "atmega328p", X[:120])
    assert result.emulator == "simavr"
    assert np.array_equal(result.classes, model.predict_encoded(X[:120]))
    assert np.array_equal(result.proba, model.predict_proba_q15(X[:120]))
    with pytest.raises(ValueError, match=r"board atmega328p carries its input in flash: at most 16,384 bytes"):
        run(bundle, "atmega328p", np.zeros((1100, 4), np.float32))


def test_shrubs_learning_on_avr_under_simavr_equals_python(shrubs):
    _, bundle, X, y, classes, proba = shrubs
    result = run(bundle, "atmega328p", X[:100], y[:100], learn=True)
    assert np.array_equal(result.proba, proba[:100]) and np.array_equal(result.classes, classes[:100])


def test_multiclass_axgb_learning_on_avr_under_simavr_equals_python(tmp_path):
    """AXGB with 4 classes on the ATmega2560: a node's splittability bound (16384 per output, times 4 outputs) must
    not wrap in AVR's 16-bit unsigned int (it did: no node could split, every member was a single leaf)."""
    X, _ = stream(120, seed=2)
    y = (X[:, 0] + X[:, 1] > 0) + 2 * (X[:, 3] > 0)  # 4 classes
    learner = AdaptiveXGBoost(members=2, window_min=16, window_max=16, max_depth=2).fit_bins(X).set_classes(
        np.arange(4))
    bundle = export_bundle(learner, tmp_path / "axgb", name="axgb")
    proba = []
    for x, label in zip(X, y):
        proba.append(learner.predict_proba_q15(x[None])[0])
        learner.learn_one(x, label)
    result = run(bundle, "atmega2560", X, y, learn=True)
    assert np.array_equal(result.proba, np.array(proba))


def test_cycle_counts_per_call_on_avr(shrubs):
    """simavr traces no instructions: the AVR harness measures the cycles of every call with Timer1, the same on
    every run, without changing a result."""
    _, bundle, X, y, classes, proba = shrubs
    first = run(bundle, "atmega2560", X[:20], y[:20], learn=True, instructions=True)
    assert np.array_equal(first.classes, classes[:20]) and np.array_equal(first.proba, proba[:20])
    assert set(first.instructions) == {"predict_proba", "predict", "learn"}
    assert all(len(counts) == 20 and (counts > 100).all() for counts in first.instructions.values())
    again = run(bundle, "atmega2560", X[:20], y[:20], learn=True, instructions=True)
    assert all(np.array_equal(first.instructions[k], again.instructions[k]) for k in first.instructions)
    assert set(run(bundle, "atmega2560", X[:5], instructions=True).instructions) == {"predict_proba", "predict"}
    assert run(bundle, "atmega2560", X[:5]).instructions is None


def test_a_deeper_tree_costs_more_cycles_on_avr(tmp_path):
    X, y = stream(300)
    cycles = [run(export_bundle(TreeClassifier(max_depth=depth).fit(X, y), tmp_path / f"d{depth}", name="t"),
                  "atmega2560", X[:30], instructions=True).instructions["predict"].mean() for depth in (2, 8)]
    assert cycles[0] < cycles[1]


def test_timer1_counts_cycles_exactly_under_simavr(tmp_path):
    """The harness's measurement against calls of known cost (no bundle: the API is three functions that wait a
    fixed number of cycles with avr-gcc's __builtin_avr_delay_cycles). Waiting 1,000 cycles counts exactly 1,000
    more than an empty call (which counts its call and return); 300,000 cycles, which cross 4 or 5 overflows of
    Timer1, count 300,000 more and about 40 cycles per overflow interrupt, the residual the docs state."""
    for header in runtime_sources(["es_common", "es_flash"]):
        shutil.copy(header, tmp_path)
    (tmp_path / "m.h").write_text('#include "es_common.h"\n#define M_N_FEATURES 1\n#define M_N_CLASSES 1\n'
                                  "es_status m_predict_proba(const float *row, uint16_t *proba);\n"
                                  "es_status m_predict(const float *row, uint8_t *class_out);\n"
                                  "es_status m_learn(const float *row, uint8_t label);\n")
    (tmp_path / "m.c").write_text(
        '#include "m.h"\n'
        "es_status m_predict_proba(const float *row, uint16_t *proba) { (void)row; (void)proba; return ES_OK; }\n"
        "es_status m_predict(const float *row, uint8_t *class_out)\n"
        "{ (void)row; (void)class_out; __builtin_avr_delay_cycles(1000); return ES_OK; }\n"
        "es_status m_learn(const float *row, uint8_t label)\n"
        "{ (void)row; (void)label; __builtin_avr_delay_cycles(300000); return ES_OK; }\n")
    manifest = {"name": "m", "directory": str(tmp_path), "include_directory": str(tmp_path), "sources": ["m.c"],
                "input_dtype": "float32", "n_features": 1, "n_classes": 1, "learning": True}
    board = load_board("atmega2560")
    rows = encode_rows(manifest, np.zeros((6, 1), np.float32), np.zeros(6, np.uint8))
    compile_into(tmp_path, manifest, board, True, render_harness(manifest, board, rows, count=True))
    execute(emulator_command(board, tmp_path / "firmware.elf"), tmp_path, 20, "simavr")
    text = (tmp_path / "emulator.out").read_text() + (tmp_path / "emulator.err").read_text()
    counts = decode_results(manifest, uart_results(text, board), 6, board, api_calls(manifest))[1]
    empty = counts["predict_proba"]
    assert (empty == 19).all() and (counts["predict"] - empty == 1000).all()
    interrupts = counts["learn"] - empty - 300000
    assert ((interrupts >= 4 * 40) & (interrupts <= 5 * 41)).all()


def test_avr_keeps_every_constant_table_of_a_learning_bundle_in_flash(tmp_path):
    """Compiled for AVR (before the linker drops what the harness does not call), a learning bundle's only
    constant objects in RAM are the state's config and pointer struct: the bin edges, offsets and the exported
    state's image (for NAME_reset) are in program memory, and so are the runtime's own tables."""
    X, y = stream(200, n_features=3)
    learner = ShrubEnsemble(window_size=8, max_shrubs=2, max_depth=2).fit_bins(X).set_classes(np.arange(3))
    for x, label in zip(X[:20], y[:20]):
        learner.learn_one(x, label)
    bundle = export_bundle(learner, tmp_path / "bundle", name="shrubs")
    board = load_board("atmega328p")
    objects = {}
    for source in ("shrubs.c", "es_image.c"):
        obj = tmp_path / (source + ".o")
        subprocess.run([board.toolchain.cc, *board.toolchain.cflags, *COMPILE_FLAGS, "-I", bundle / "src", "-c",
                        bundle / "src" / source, "-o", obj], check=True, capture_output=True)
        sections, symbols = read_elf(obj)
        objects |= {name: sections[index] for name, (kind, _, index) in symbols.items() if kind == "OBJECT"}
    in_flash = {name for name, section in objects.items() if section.name.startswith(".progmem")}
    assert in_flash == {"shrubs_edges", "shrubs_offsets", "shrubs_exported", "es_crc_nibbles"}
    assert objects.keys() - in_flash == {"shrubs_config", "shrubs_model", "shrubs_memory", "shrubs_sequence"}


def test_worst_stack_follows_the_deepest_chain():
    disassembly = "\n".join([
        "00000100 <a>:", " 100:\tpush\t{lr}", " 102:\tbl\t200 <b>", " 104:\tbl\t300 <c>", " 106:\tbne.n\t100 <a+0x6>",
        "00000200 <b>:", " 200:\tbl\t300 <c>", "00000300 <c>:", " 300:\tbx\tlr",
    ])
    calls = call_graph(disassembly)
    assert calls == {"a": {"b", "c"}, "b": {"c"}, "c": set()}
    assert worst_stack(calls, {"a": 8, "b": 16, "c": 4}, ["a", "b", "missing"]) == {"a": 28, "b": 20}


def test_a_hanging_emulator_times_out(forest, tmp_path):
    """A board whose QEMU starts with the CPU stopped (-S) never finishes."""
    _, bundle, X = forest
    board = tmp_path / "frozen.toml"
    text = (boards_dir() / "stm32f411.toml").read_text().replace('name = "stm32f411"', 'name = "frozen"')
    board.write_text(text.replace('machine = "mps2-an386"', 'machine = "mps2-an386"\nargs = ["-S"]'))
    with pytest.raises(EmulatorTimeout, match=r"board frozen: qemu-system-arm mps2-an386 did not finish within 1 s"):
        run(bundle, board, X[:3], timeout=1)


def test_a_missing_toolchain_names_the_package(forest, tmp_path):
    _, bundle, _ = forest
    board = tmp_path / "nocc.toml"
    board.write_text((boards_dir() / "stm32f411.toml").read_text().replace(
        'cc = "arm-none-eabi-gcc"', 'cc = "no-such-gcc"'))
    with pytest.raises(ToolchainMissing, match="no-such-gcc .* not installed; install the Debian package.*"
                                               "gcc-arm-none-eabi"):
        build(bundle, board)


def test_bad_run_requests(forest, shrubs):
    _, bundle, X = forest
    with pytest.raises(ValueError, match=r"X must have shape \(rows, 4\), got \(3, 2\)"):
        run(bundle, "stm32f411", X[:3, :2])
    with pytest.raises(ValueError, match="holds a frozen forest model; it cannot learn"):
        run(bundle, "stm32f411", X[:3], [0, 1, 0], learn=True)
    _, shrub_bundle, Xs, ys, *_ = shrubs
    with pytest.raises(ValueError, match="one label per row: 3 rows, no labels"):
        run(shrub_bundle, "stm32f411", Xs[:3], learn=True)
    with pytest.raises(ValueError, match="label 7 is not one of the configured classes"):
        run(shrub_bundle, "stm32f411", Xs[:3], [0, 7, 1], learn=True)


def test_exit_status_meanings():
    assert describe_exit(2) == "a file could not be opened or written"
    assert describe_exit(48 + 3) == "learn returned es_status 3"
    assert "crashed" in describe_exit(-6)


def test_a_failing_compile_shows_the_command_and_the_packages(forest, tmp_path):
    _, bundle, _ = forest
    board = tmp_path / "badflags.toml"
    board.write_text((boards_dir() / "stm32f411.toml").read_text().replace('"-mcpu=cortex-m4",', '"-mcpu=nonsense",'))
    with pytest.raises(TargetError, match=r"(?s)building for stm32f411 failed:\n\$ .*-mcpu=nonsense.*"
                                          r"Debian packages gcc-arm-none-eabi"):
        build(bundle, board)


def test_firmware_whose_stack_would_overwrite_the_state_is_refused(forest):
    """No guard stops a microcontroller's stack at the state: a run that needs more RAM than the board has is
    refused with the figures, not reported as mismatches."""
    _, bundle, X = forest
    small = dataclasses.replace(load_board("atmega328p"), ram_bytes=64)
    with pytest.raises(TargetError, match=r"board atmega328p: the firmware needs [\d,]+ bytes of RAM \([\d,]+ static, "
                                          r"[\d,]+ of stack on its deepest call chain\) and the board has 64"):
        run(bundle, small, X[:5])
