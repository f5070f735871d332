"""Benchmark: instructions per call on emulated Cortex-M and RISC-V cores, and the budget's memory prediction against
the ELF.

Run from the repository root::

    .venv/bin/python benchmarks/bench_device.py [--json] [--rows N] [--learn-steps N] [--chunk N] [--out DIR]
        [--learners NAME ...] [--boards BOARD ...]

``--learners`` runs Table 2 (and Table 3's rows of those learners) alone, for the online learners named;
``--boards`` runs Tables 1 and 2 on the boards named alone (e.g. ``--boards esp32c3``: the RISC-V columns).

**Table 1, executed instructions per call.** QEMU runs each firmware with ``-singlestep -d exec,nochain`` and
:func:`edgestream.targets.count_instructions` attributes every logged instruction to the API call it belongs to
(from the entry of the call's function to the return into the harness, callees included): the counts are exact
and deterministic. Three cores: Cortex-M4F (board ``stm32f411``, run on QEMU's mps2-an386), Cortex-M0 (board
``rp2040``: ARMv6-M code built for the Cortex-M0+, run on QEMU's micro:bit, a Cortex-M0) and RISC-V RV32IMC
(board ``esp32c3``, run on QEMU's virt; the RV32IMAC boards ``gd32vf103`` and ``fe310`` run the same instructions).

* edgestream's depth-8 tree and 10-tree depth-8 forest, trained on scikit-learn's digits as in
  ``bench_foundation.py`` (same models, same split); the first ``--rows`` test rows go through ``targets.run``.
* emlearn's export of the same benchmark's scikit-learn ``RandomForestClassifier(10, max_depth=8)``, variants
  ``loadable int16`` and ``inline float`` with hard vote (``bench_foundation.emlearn_variants``). Each variant
  gets a firmware of emlearn's C and a harness that reads the same rows file as edgestream's
  (``targets.encode_rows``), built by the same compiler commands (``targets.compile_commands``, without
  ``-Werror`` for the third-party code) and run by the same QEMU command; only ``eml_model_predict`` is counted.
  The harness's ``step`` converts the float32 row to int16 for the int16 variant outside the count: every model
  is counted from its own input type (edgestream's count includes quantizing float32 features to bins).

**Table 2, every online learner learning on the device.** Each online learner (the classifiers and the windowed
detectors HST and LODA) as the budget manager plans it for 8 KiB of RAM on ``stm32f411``, ``rp2040``, ``esp32c3`` and
``atmega2560`` (each board its own plan), on the built-in SEA stream (``make_stream("sea", STREAM_ROWS, seed=1)``, a
classifier started on its first rows as the CLI does, a detector learning the rows without their labels; its
prediction is its score call, its mismatches the rows whose int32 score and flag differ). Python learns the rows
the calibration learns (``calibrate_cost.warmup_rows``: windows and ensembles full, trees grown), then the device test-then-trains the next rows
(``calibrate_cost.STEPS`` per learner, enough for several of its expensive steps, or ``--learn-steps``) in chunks
of ``--chunk`` rows, each from a bundle exported with the Python state at its first row, so chunks run in
parallel; every device class is checked against Python's test-then-train. Per learner and core: mean and worst
instructions per learn call and per prediction, beside the cost model's prediction (:mod:`edgestream.costs`), and
the learn calls' worst/mean ratio. The Hoeffding learners' predictions take the regime of the counted rows, as
the calibration's do (``calibrate_cost.hoeffding_regime``: whether a split attempt ran, the share of rows the
detectors watched), and so do the windowed detectors' (``calibrate_cost.window_regime``: the window swaps and the
bins their threshold scans visited); the budget plans on a tree with room to split, every row watched. The shrubs run a second
time as the budget's search chooses them at 8 KiB on SEA (a new shrub every 4 samples, 1 burn-in step, its
training spread at the automatic ``work_per_call``). The Hoeffding learners run a second time on Agrawal,
function 0 then 2 (``make_stream("agrawal", ..., seed=1, functions=(0, 2), changes=[6000])``), planned on that
stream, the device counting ``DRIFT_STEPS`` rows from ``DRIFT_BEFORE`` rows before the change: their detectors
signal the change and the adaptation of the signalling subtree (spread over the calls at the plan's
``work_per_call``) is among the counted calls. On AVR (simavr) the counts are CPU cycles, measured by the
harness with Timer1 (``targets.count_unit``).

Flash bytes: the model's part of the linked ELF as :class:`edgestream.targets.BuildReport` measures it,
``code_bytes + tables_bytes``: functions compiled from the model's sources that survive ``--gc-sections`` plus
its constant objects (``<name>_*``; emlearn's are ``eml_model*``). Compiler helpers and C library routines the
code calls (soft float, 64-bit multiply and divide, memset) are not counted, for either exporter.

Mismatch: rows where the device's class differs from the exporting Python model's (emlearn: scikit-learn's).

**Table 3, predicted against measured memory**, for the tree, forest and every online learner's bundle built for
``stm32f411`` and a shrub bundle planned for ``atmega328p`` (2 KiB, packed layout; AVR is built, not run):

* state RAM: the budget's state regions (plus alignment padding) against the size of ``<name>_memory``;
* tables: the budget's table items computed for the exact exported model (the kept bin edges, the nodes and the
  deduplicated leaf rows of the trained trees, not the worst case) against the ELF's model objects;
* code: the budget's code items (each runtime file compiled alone) against ``BuildReport.code_bytes``;
* state image: the bytes of ``.data`` that hold the initial learning state (flash, copied to RAM at start-up),
  predicted by the budget from the exported state;
* stack: the budget's "call locals" item against the deepest call chain of predict and of learn
  (``-fstack-usage`` frames, ``BuildReport.stack_max``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import emlearn
import numpy as np

from calibrate_cost import (PREDICTION_CALL, STEPS, WARMUP, hoeffding_regime, task_of_learner, window_regime,
                             warmup_rows, windowed)
from bench_foundation import (EDGESTREAM_EXPORTS, edgestream_label, edgestream_leaf_models, emlearn_variants,
                              layout_label, load_data, models)
from edgestream import convert, learners, targets
from edgestream.boards import load_board
from edgestream.budget import Budget, of_model, plan
from edgestream.data import make_stream
from edgestream.export import export_bundle
from edgestream.costs import call_cost, coefficients
from edgestream.parity import compare_sizes
from edgestream.task import ANOMALY, task_of
from edgestream.train import start_online

CORES = {"stm32f411": "Cortex-M4F", "rp2040": "Cortex-M0", "esp32c3": "RV32IMC"}  # board -> the core it runs
MEMORY_BOARD, SMALL_BOARD = "stm32f411", "atmega328p"
# Half of the Uno's 2 KiB and 16 bins: avr-gcc copies the const tables to RAM too (the budget counts them), and
# the harness and the C library need the rest.
SMALL_PLAN = {"ram": 1024, "max_bins": 16}
ROWS = 50  # digits test rows per predict-only run
EMLEARN = ("emlearn loadable int16 hard vote", "emlearn inline float hard vote")
EMLEARN_NAME = "eml_model"  # emlearn.convert(...).save(name=...) in bench_foundation: eml_model_predict
LEARN_RAM = 8 * 1024
LEARN_BOARDS = {"stm32f411": "Cortex-M4F", "rp2040": "Cortex-M0", "esp32c3": "RV32IMC",
                "atmega2560": "AVR"}  # board -> its core
# the online classifiers and detectors (a detector's prediction is its score call; its mismatches compare the int32
# score and flag with Python's)
ONLINE = [spec.name for spec in learners.REGISTRY.values() if spec.online and spec.cost_terms is not None]
# besides every learner's plan as is: the shrubs as the budget's search chooses them on SEA (a new shrub every 4
# samples, 1 burn-in step: the learn step's cost is amortized, and spread over the calls at the automatic
# work_per_call)
LEARN_VARIANTS = [("shrubs", "edgestream every=4 burnin=1", {"update_every": 4, "burnin": 1})]
STREAM, STREAM_ROWS = "sea", 6000  # rows enough for every warm-up and its steps
# the Hoeffding learners again on Agrawal, function 0 then 2, from DRIFT_BEFORE rows before the change on: the calls
# that adapt a subtree to the change (spread at the plan's work_per_call) among the counted ones
DRIFT_LEARNERS, DRIFT_EXPORTER = ("hoeffding", "irf"), "edgestream agrawal 0->2"
DRIFT_CHANGE, DRIFT_BEFORE, DRIFT_STEPS = 6000, 50, 600
# predicted in the regime of the counted rows, as the calibration does (split attempts or a full pool, the rows
# the detectors watch); the budget plans on a tree with room to split and every row watched
REGIME_LEARNERS = ("hoeffding", "irf")
CHUNK = 100
WORKERS = 2
TIMEOUT = 900  # seconds for one emulator run


@dataclass(frozen=True)
class Job:
    """One emulator run: rows through an edgestream bundle (``targets.run``) or through a prebuilt firmware."""

    model: str
    exporter: str
    board: str
    X: np.ndarray
    expected: np.ndarray  # the exporting Python model's class index for each row
    y: np.ndarray | None = None  # labels to learn (test-then-train)
    bundle: Path | None = None
    firmware: targets.Firmware | None = None


@dataclass
class Measured:
    job: Job
    classes: np.ndarray  # a classifier's class indices, a detector's int32 outputs
    instructions: dict[str, np.ndarray]


def column(header: str, fmt: str = "{:,}", json_only: bool = False, **options):
    """A dataclass field printed under ``header`` with ``fmt`` (None prints as "-")."""
    return field(metadata={"header": header, "format": fmt, "json_only": json_only}, **options)


@dataclass
class CountRow:
    model: str = column("model", "{}")
    exporter: str = column("exporter", "{}")
    core: str = column("core", "{}")
    rows: int = column("rows")
    predict_mean: float = column("predict mean", "{:,.1f}")
    predict_max: int = column("predict max")
    flash_bytes: int = column("flash B")
    mismatches: int = column("mismatch")
    proba_mean: float | None = column("predict_proba mean", "{:,.1f}", json_only=True)
    board: str = column("board", "{}", json_only=True)


@dataclass
class LearnRow:
    learner: str = column("learner", "{}")
    exporter: str = column("exporter", "{}")
    core: str = column("core", "{}")
    steps: int = column("steps")
    learn_mean: float = column("learn mean", "{:,.0f}")
    learn_mean_predicted: float | None = column("pred", "{:,.0f}")
    learn_worst: int = column("learn worst")
    learn_worst_predicted: float | None = column("pred", "{:,.0f}")
    ratio: float = column("worst/mean", "{:.2f}")
    predict_mean: float = column("predict mean", "{:,.0f}")
    predict_mean_predicted: float | None = column("pred", "{:,.0f}")
    predict_worst: int = column("predict worst")
    predict_worst_predicted: float | None = column("pred", "{:,.0f}")
    mismatches: int = column("mismatch")
    board: str = column("board", "{}", json_only=True)
    config: dict = column("config", json_only=True, default_factory=dict)


@dataclass
class MemoryRow:
    model: str = column("model", "{}")
    board: str = column("board", "{}")
    state_predicted: int = column("state pred")
    state_measured: int = column("state ELF")
    tables_predicted: int = column("tables pred")
    tables_measured: int = column("tables ELF")
    code_predicted: int = column("code pred")
    code_measured: int = column("code ELF")
    image_predicted: int = column("image pred")
    state_image: int = column("image ELF")
    stack_predicted: int = column("stack pred")
    stack_predict: int = column("stack predict")
    stack_learn: int | None = column("stack learn")
    config: dict = column("config", json_only=True, default_factory=dict)
    objects: dict[str, int] = column("ELF objects", json_only=True, default_factory=dict)
    notes: list[str] = column("notes", json_only=True, default_factory=list)


def format_table(rows: list) -> str:
    columns = [f for f in dataclasses.fields(rows[0]) if not f.metadata["json_only"]]
    cells = [[f.metadata["header"] for f in columns]]
    for row in rows:
        values = [getattr(row, f.name) for f in columns]
        cells.append(["-" if v is None else f.metadata["format"].format(v) for f, v in zip(columns, values)])
    widths = [max(len(line[j]) for line in cells) for j in range(len(columns))]
    text = ["  ".join(cell.ljust(width) if f.metadata["format"] == "{}" else cell.rjust(width)
                      for f, cell, width in zip(columns, line, widths)) for line in cells]
    return "\n".join([text[0], "-" * len(text[0]), *text[1:]])


# ------------------------------------------------------------------------------------------ emlearn firmware

EMLEARN_MAIN_C = """
/* Reads {input} as targets.encode_rows writes it (mode byte 0, float32 rows); one uint8 class per row to {output}. */
#include <stdio.h>

int main(void)
{{
    float row[{n_features}];
    unsigned char mode = 0, predicted;
    FILE *in = fopen("{input}", "rb");
    FILE *out = fopen("{output}", "wb");

    if (in == NULL || out == NULL) {{
        return 2;
    }}
    if (fread(&mode, 1, 1, in) != 1 || mode != 0) {{
        return 3;
    }}
    while (fread(row, sizeof row, 1, in) == 1) {{
        predicted = (unsigned char)step(row);
        if (fwrite(&predicted, 1, 1, out) != 1) {{
            return 2;
        }}
    }}
    fclose(in);
    return fclose(out) != 0 ? 2 : 0;
}}
"""


def emlearn_firmware(variant, board: str, n_features: int, out: Path) -> targets.Firmware:
    """emlearn's model.c and a file harness, compiled and linked like an edgestream bundle for the emulator.

    The harness is bench_foundation's wrapper with its function named ``step``, one of the harness functions
    ``count_instructions`` ends a call at, so that only emlearn's own predict is counted."""
    board_profile = load_board(board)
    # report() takes objects named <name>_* as the model's: "eml" catches emlearn's eml_model and eml_model_*.
    manifest = {"name": "eml", "directory": str(variant.directory), "include_directory": str(variant.directory),
                "sources": [s.name for s in variant.sources]}
    out.mkdir(parents=True, exist_ok=True)
    main_c = EMLEARN_MAIN_C.format(n_features=n_features, input=targets.INPUT_FILE, output=targets.OUTPUT_FILE)
    (out / targets.HARNESS).write_text(variant.wrapper.replace("int bench_predict(", "int step(") + main_c)
    for command in targets.compile_commands(manifest, board_profile, emulated=True, out=out):
        command = [arg for arg in command if arg != "-Werror"] + ["-I", emlearn.includedir]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise targets.TargetError(f"emlearn firmware for {board} failed:\n{result.stderr}")
    return targets.Firmware(board_profile, manifest, out)


def run_firmware(fw: targets.Firmware, X: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Run a prebuilt firmware like ``targets.run`` does: classes and instructions per call of ``eml_model``."""
    payload = targets.encode_rows({"n_features": X.shape[1], "input_dtype": "float32"}, X, None)
    trace = ["-singlestep", "-d", "exec,nochain", "-D", targets.TRACE]
    with tempfile.TemporaryDirectory(prefix="es-bench-device-") as work:
        work = Path(work)
        (work / targets.INPUT_FILE).write_bytes(payload)
        targets.execute(targets.emulator_command(fw.board, fw.elf, trace), work, TIMEOUT, f"{fw.board.name} emlearn")
        classes = np.frombuffer((work / targets.OUTPUT_FILE).read_bytes(), dtype=np.uint8).copy()
        return classes, targets.count_instructions(work / targets.TRACE, EMLEARN_NAME)


def measure(job: Job) -> Measured:
    if job.firmware is not None:
        return Measured(job, *run_firmware(job.firmware, job.X))
    result = targets.run(job.bundle, job.board, job.X, job.y, learn=job.y is not None, timeout=TIMEOUT,
                         instructions=True)
    return Measured(job, result.raw if result.classes is None else result.classes, result.instructions)


# ------------------------------------------------------------------------------------------ models and jobs

@dataclass
class Prepared:
    jobs: list[Job]
    reports: dict[tuple[str, str, str], targets.BuildReport]  # (model, exporter, board) -> the build sized
    memory: list[MemoryRow]
    learners: dict[tuple[str, str, str], Budget] = field(default_factory=dict)  # an online learner's plan
    regimes: dict[tuple[str, str, str], dict] = field(default_factory=dict)  # what the counted rows did


def trees(root: Path, rows: int) -> Prepared:
    """edgestream's tree and forest and emlearn's forest on the digits test rows."""
    data = load_data()
    X = data.X_test[:rows]
    fitted = {(kind, trainer): estimator for kind, trainer, estimator in models(data)}
    prepared = Prepared([], {}, [])
    for kind in ("tree", "forest"):
        leaf_models = dict(edgestream_leaf_models(kind, fitted[kind, "edgestream"], data))
        for leaf_values, optimize in EDGESTREAM_EXPORTS:
            estimator = leaf_models[leaf_values]
            bundle = export_bundle(estimator, root / f"{kind}-{leaf_values}-{optimize}", name=kind, optimize=optimize)
            label = layout_label(edgestream_label(leaf_values, optimize), bundle)
            expected = estimator.predict_encoded(X)
            for board in CORES:
                prepared.jobs.append(Job(kind, label, board, X, expected, bundle=bundle))
                prepared.reports[kind, label, board] = targets.build(bundle, board)
            prepared.memory.append(tree_memory(kind, label, estimator, optimize,
                                               prepared.reports[kind, label, MEMORY_BOARD]))
    imported = convert(fitted["forest", "scikit-learn"])  # the very forest emlearn exports below
    for optimize in ("speed", "size"):
        bundle = export_bundle(imported, root / f"imported-{optimize}", name="forest", optimize=optimize)
        label = f"edgestream import --optimize {optimize}"
        for board in CORES:
            prepared.jobs.append(Job("forest", label, board, X, imported.predict_encoded(X), bundle=bundle))
            prepared.reports["forest", label, board] = targets.build(bundle, board)
    variants = [v for v in emlearn_variants("forest", fitted["forest", "scikit-learn"], data, root / "emlearn")
                if v.exporter in EMLEARN]
    for variant in variants:
        for board in CORES:
            fw = emlearn_firmware(variant, board, X.shape[1], variant.directory / board)
            prepared.jobs.append(Job("forest", variant.exporter, board, X, variant.own_classes[:rows], firmware=fw))
            prepared.reports["forest", variant.exporter, board] = targets.report(fw)
    return prepared


def online_plan(name: str, board: str, X, y, ram: int, **params) -> tuple[Budget, object]:
    """The budget manager's plan of an online learner for ``board``, a classifier started on the stream's first
    rows (as the CLI); a detector starts on the rows it first learns."""
    if task_of_learner(name) == ANOMALY:
        planned = plan(name, load_board(board), X.shape[1], 1, ram=ram, task=ANOMALY, **params)
        return planned, learners.get(name).make(ANOMALY, **planned.params)
    n_features, classes = X.shape[1], np.unique(y)
    planned = plan(name, load_board(board), n_features, len(classes), ram=ram, **params)
    return planned, start_online(learners.get(name).make(**planned.params), X, classes)


def learn_warmup(learner, X, y) -> None:
    """Python's warm-up rows: a detector learns the rows alone (its work range from them), a classifier rows and
    labels."""
    if task_of(learner) == ANOMALY:
        learner.partial_fit(X)
    else:
        learner.partial_fit(X, y)


def test_then_train(learner, x, label):
    """Python's output for a row (a classifier's class index, a detector's int32 score and flag), then the row
    learned."""
    if task_of(learner) == ANOMALY:
        output = learner.predict_raw(x[None])[0]
        learner.learn_one(x)
    else:
        output = learner.predict_encoded(x[None])[0]
        learner.learn_one(x, label)
    return output


def exact_budget(planned: Budget, model) -> Budget:
    """The budget of the model as exported now: the edges its bins kept, its state image."""
    return of_model(model, load_board(planned.board), planned.ram_budget, planned.flash_budget)


def learning(root: Path, steps: int | None, chunk: int, names=tuple(ONLINE)) -> Prepared:
    """Chunks of device test-then-train after a Python warm-up, for every online learner of ``names`` at its
    ``LEARN_RAM`` plan on each of ``LEARN_BOARDS`` (and their variants of ``LEARN_VARIANTS``), plus the AVR shrub
    bundle of the memory table."""
    sea = make_stream(STREAM, STREAM_ROWS, seed=1)
    agrawal = make_stream("agrawal", DRIFT_CHANGE + DRIFT_STEPS, seed=1, functions=(0, 2), changes=[DRIFT_CHANGE])
    prepared = Prepared([], {}, [])
    runs = [(n, "edgestream", {}) for n in names] + [variant for variant in LEARN_VARIANTS if variant[0] in names]
    runs += [(n, DRIFT_EXPORTER, {}) for n in DRIFT_LEARNERS if n in names]
    for name, exporter, params in runs:
        X, y = agrawal if exporter == DRIFT_EXPORTER else sea
        for board in LEARN_BOARDS:
            planned, learner = online_plan(name, board, X, y, ram=LEARN_RAM, **params)
            drift = exporter == DRIFT_EXPORTER
            warmup = DRIFT_CHANGE - DRIFT_BEFORE if drift else warmup_rows(name, planned.params)
            learn_warmup(learner, X[:warmup], y[:warmup])
            budget = exact_budget(planned, learner)  # of the state the first chunk's bundle starts from
            n = steps or (DRIFT_STEPS if drift else STEPS[name])
            if name in REGIME_LEARNERS:
                prepared.regimes[name, exporter, board] = hoeffding_regime(learner, X[warmup:warmup + n],
                                                                           y[warmup:warmup + n])
            elif windowed(name):
                prepared.regimes[name, exporter, board] = window_regime(learner, X[warmup:warmup + n])
            first = None
            for start in range(warmup, warmup + n, chunk):
                rows = slice(start, min(start + chunk, warmup + n))
                bundle = export_bundle(learner, root / f"{name}-{exporter}-{board}-{start}".replace(" ", "_"),
                                       name=name)
                first = first or bundle
                expected = [test_then_train(learner, x, label) for x, label in zip(X[rows], y[rows])]
                prepared.jobs.append(Job(name, exporter, board, X[rows], np.array(expected), y[rows], bundle))
            prepared.reports[name, exporter, board] = targets.build(first, board)
            prepared.learners[name, exporter, board] = planned
            if board == MEMORY_BOARD and exporter == "edgestream":
                prepared.memory.append(memory_row(name, budget, prepared.reports[name, exporter, board]))
    if "shrubs" in names:
        small_plan, small = online_plan("shrubs", SMALL_BOARD, X, y, **SMALL_PLAN)
        bundle = export_bundle(small, root / "shrubs-avr", name="shrubs")
        prepared.memory.append(memory_row("shrubs", exact_budget(small_plan, small),
                                          targets.build(bundle, SMALL_BOARD)))
    return prepared


# ------------------------------------------------------------------------------------------ memory table

def memory_row(model: str, budget: Budget, report: targets.BuildReport) -> MemoryRow:
    stack = report.stack_max
    sizes = compare_sizes(budget, report)
    notes = []
    extra = sizes["tables_flash"]["measured"] - sizes["tables_flash"]["predicted"]
    if extra:
        objects = ", ".join(f"{name} {size.bytes}" for name, size in report.objects.items()
                            if name != f"{report.bundle}_memory")
        notes.append(f"tables: the ELF has {extra:+,} bytes against the budget; its objects: {objects}")
    if report.tables_in_ram:
        notes.append(f"{report.tables_in_ram:,} bytes of const objects are in RAM (.data: on AVR the state's config and "
                     "pointer struct)")
    return MemoryRow(
        model=model, board=report.board, state_predicted=sizes["state_ram"]["predicted"],
        state_measured=sizes["state_ram"]["measured"], tables_predicted=sizes["tables_flash"]["predicted"],
        tables_measured=sizes["tables_flash"]["measured"], code_predicted=sizes["code_flash"]["predicted"],
        code_measured=sizes["code_flash"]["measured"], image_predicted=sizes["image_flash"]["predicted"],
        state_image=sizes["image_flash"]["measured"],
        stack_predicted=sum(item.bytes for item in budget.ram if item.group == "stack"),
        stack_predict=max(stack.get(f"{report.bundle}_{call}", 0) for call in ("predict", "predict_proba", "score")),
        stack_learn=stack.get(f"{report.bundle}_learn"), config=budget.config,
        objects={name: size.bytes for name, size in report.objects.items()}, notes=notes)


def tree_memory(kind: str, label: str, estimator, optimize: str, report: targets.BuildReport) -> MemoryRow:
    """The exact budget of the exported model in its encoding against the ELF."""
    budget = of_model(estimator, load_board(report.board), optimize=optimize)
    return dataclasses.replace(memory_row(kind, budget, report), model=f"{kind} {label[len('edgestream '):]}")


# ------------------------------------------------------------------------------------------ instruction table

def grouped(measured: list[Measured]) -> dict[tuple[str, str, str], tuple[dict[str, np.ndarray], int]]:
    """(model, exporter, board) -> the counts per call of its runs joined in order (a learning run's chunks), and
    its mismatches."""
    groups: dict[tuple[str, str, str], list[Measured]] = {}
    for item in measured:
        groups.setdefault((item.job.model, item.job.exporter, item.job.board), []).append(item)
    return {key: ({call: np.concatenate([m.instructions[call] for m in items])
                   for call in targets.API_CALLS if call in items[0].instructions},
                  sum(int(np.sum(m.classes != m.job.expected)) for m in items))
            for key, items in groups.items()}


def count_rows(groups: dict, reports) -> list[CountRow]:
    """Table 1: one row per frozen (model, exporter, board)."""
    rows = []
    for (model, exporter, board), (counts, mismatches) in groups.items():
        if model not in ("tree", "forest"):
            continue
        proba = counts.get("predict_proba")
        report = reports[model, exporter, board]
        rows.append(CountRow(
            model=model, exporter=exporter, core=CORES[board], rows=len(counts["predict"]),
            predict_mean=float(counts["predict"].mean()), predict_max=int(counts["predict"].max()),
            flash_bytes=report.code_bytes + report.tables_bytes, mismatches=mismatches,
            proba_mean=None if proba is None else float(proba.mean()), board=board))
    return sorted(rows, key=lambda r: (["tree", "forest"].index(r.model), r.exporter, r.core))


def learn_rows(groups: dict, plans: dict[tuple[str, str, str], Budget], regimes: dict) -> list[LearnRow]:
    """Table 2: one row per online (learner, exporter, board), the cost model's predictions beside the counts (the
    coefficients as they are when the runs end: a calibration may write them meanwhile)."""
    coefficients.cache_clear()
    rows = []
    for (model, exporter, board), (counts, mismatches) in groups.items():
        if model in ("tree", "forest"):
            continue
        planned = plans[model, exporter, board]
        cost = call_cost(learners.get(model), planned.params, planned.config["features"], planned.config["classes"],
                         load_board(board).arch, **regimes.get((model, exporter, board), {}))
        learn, predict = counts["learn"], counts[PREDICTION_CALL.get(task_of_learner(model), "predict")]
        rows.append(LearnRow(
            learner=model, exporter=exporter, core=LEARN_BOARDS[board], steps=len(learn),
            learn_mean=float(learn.mean()), learn_mean_predicted=cost and cost.learn.mean,
            learn_worst=int(learn.max()), learn_worst_predicted=cost and cost.learn.worst,
            ratio=float(learn.max() / learn.mean()), predict_mean=float(predict.mean()),
            predict_mean_predicted=cost and cost.predict.mean, predict_worst=int(predict.max()),
            predict_worst_predicted=cost and cost.predict.worst, mismatches=mismatches, board=board,
            config=planned.config))
    return sorted(rows, key=lambda r: (ONLINE.index(r.learner), r.exporter, list(LEARN_BOARDS).index(r.board)))


def run_jobs(jobs: list[Job]) -> list[Measured]:
    """Every emulator run on a pool of processes, the long learning runs (Cortex-M0 first) started first."""
    order = sorted(jobs, key=lambda job: (job.y is None, job.board != "rp2040"))
    with ProcessPoolExecutor(WORKERS) as pool:
        return list(pool.map(measure, order))


# ------------------------------------------------------------------------------------------ main

FOOTNOTES = [
    "Table 1: instructions per call executed under QEMU (-singlestep -d exec,nochain), callees included; predict "
    "is the class call (edgestream: the class-only path, one division). Cortex-M0 runs the rp2040 build "
    "(-mcpu=cortex-m0plus) on QEMU's micro:bit Cortex-M0 model.",
    "emlearn is counted from int16/float features already in memory (the float32 -> int16 conversion is outside "
    "the count); edgestream from float32 features (no quantization: each node compares the raw feature with its "
    "edge). edgestream rows: leaf values at fit time (q15/q8/vote), export --optimize speed|size; edgestream import: "
    "the scikit-learn forest emlearn exports, brought in by edgestream.convert (probability rows averaged as "
    "scikit-learn's predict does).",
    "Table 2: every online learner at the budget's {ram} KiB plan for each board: Python learns {warmup} rows of "
    "SEA (AXGB also the windows that fill its ensemble; HST and LODA up to where their latest window is half full), "
    "then the device test-then-trains the next rows (calibrate_cost.STEPS per learner) in chunks of {chunk}, "
    "each from a bundle exported with Python's state at its first row (the counts equal one long run's). pred: "
    "the cost model's prediction (edgestream.costs) for the board's core; worst/mean: of the learn calls. AVR: "
    "CPU cycles measured by the harness with Timer1 under simavr.",
    "flash B: code of the model's sources left after --gc-sections + its const objects (BuildReport.code_bytes + "
    "tables_bytes); libgcc/picolibc helpers (soft float, 64-bit multiply/divide) are not counted, nor the shrub "
    "state's initial image in .data (table 3).",
    "Table 3 (bytes): state = <name>_memory; tables = model objects of the ELF vs the budget's table items for the "
    "exported model; code = runtime files compiled alone (budget) vs linked functions of the bundle, generated "
    "wrappers included (ELF); image = the learning state's initial image stored in flash (.data), budget vs ELF; stack pred = "
    "budget's call locals, stack predict/learn = deepest -fstack-usage chain of the API call.",
]


def main(argv=None) -> int:
    global CORES, LEARN_BOARDS, MEMORY_BOARD  # --boards narrows them
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the tables")
    parser.add_argument("--rows", type=int, default=ROWS, help="digits test rows per predict-only run")
    parser.add_argument("--learn-steps", type=int, help="learn steps on the device per learner (default: "
                        "calibrate_cost.STEPS)")
    parser.add_argument("--chunk", type=int, default=CHUNK, help="learn steps per emulator run")
    parser.add_argument("--out", type=Path, help="keep bundles and firmware in this directory")
    parser.add_argument("--opt", choices=("Os", "O2"), default="Os",
                        help="optimization level of every firmware, edgestream's and emlearn's (default Os)")
    parser.add_argument("--learners", nargs="+", choices=ONLINE, help="Table 2 (and their memory rows) alone, for "
                        "these online learners")
    parser.add_argument("--boards", nargs="+", choices=list(CORES), help="Tables 1 and 2 on these boards alone, "
                        "Table 3 on the first of them (default: all, and AVR; Table 3 on stm32f411)")
    args = parser.parse_args(argv)
    if args.boards:  # before the worker pool forks, as the flags below
        CORES = {board: core for board, core in CORES.items() if board in args.boards}
        LEARN_BOARDS = {board: core for board, core in LEARN_BOARDS.items() if board in args.boards}
        MEMORY_BOARD = args.boards[0]
    # before the worker pool forks, so every build and run uses the same flags
    targets.COMPILE_FLAGS = tuple(f"-{args.opt}" if flag in ("-Os", "-O2") else flag for flag in targets.COMPILE_FLAGS)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="es-bench-device-") as temp:
        root = args.out or Path(temp)
        parts = ([] if args.learners else [trees(root, args.rows)]) + \
            [learning(root, args.learn_steps, args.chunk, args.learners or ONLINE)]
        reports = {key: report for part in parts for key, report in part.reports.items()}
        groups = grouped(run_jobs([job for part in parts for job in part.jobs]))
    counts = count_rows(groups, reports)
    learned = learn_rows(groups, {k: v for part in parts for k, v in part.learners.items()},
                         {k: v for part in parts for k, v in part.regimes.items()})
    memory = [row for part in parts for row in part.memory]
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"instructions": [dataclasses.asdict(r) for r in counts],
                          "learning": [dataclasses.asdict(r) for r in learned],
                          "memory": [dataclasses.asdict(r) for r in memory], "seconds": seconds}, indent=1))
        return 0
    if counts:
        print(f"Table 1: executed instructions per prediction (digits: {args.rows} test rows; -{args.opt})\n")
        print(format_table(counts))
    print(f"\nTable 2: instructions per learn call and per prediction of every online learner at its "
          f"{LEARN_RAM // 1024} KiB plan ({STREAM} stream; -{args.opt})\n")
    print(format_table(learned))
    print("\n".join(f"  {r.learner} {r.exporter} {r.board}: {', '.join(f'{k}={v}' for k, v in r.config.items())}"
                    for r in learned))
    print("\nTable 3: predicted (budget) vs measured (ELF) memory, bytes\n")
    print(format_table(memory))
    notes = [f"  [{row.model} {row.board}] {note}" for row in memory for note in row.notes]
    print("\n".join(["", *notes]) if notes else "")
    print("\n".join("* " + note.format(warmup=f"{WARMUP:,}", chunk=args.chunk, ram=LEARN_RAM // 1024)
                    for note in FOOTNOTES))
    print(f"\n{seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
