"""Benchmark: Adaptive XGBoost (AXGB[p], AXGB[r], AXGB_A[p], AXGB_A[r]) at 8 KiB against River's online trees.

Run from the repository root::

    .venv/bin/python benchmarks/bench_axgb.py [--rows N] [--synthetic-rows N] [--json] [--no-device]

Streams: ``elec.csv`` (label ``class``) and ``weather.csv`` (label ``target``) from ``../shared/data`` (a missing
file is skipped with a note); ``sea``, SEA concepts with three abrupt drifts (``make_stream("sea", N, seed=1)``);
``agrawal``, River's Agrawal generator (``river.datasets.synth.Agrawal``, 6 nominal + 3 numeric features coded as
numbers, seed 1) whose classification function switches abruptly 0 -> 2 -> 5 -> 8 at each quarter of the
stream (three abrupt drifts, like the paper's AGR_a). ``--rows N`` keeps the first N rows of every stream;
``--synthetic-rows`` sets the length of the generated ones (default 20,000; the paper's have 1,000,000).

Learners, in one run over the same rows:

* the four AXGB variants, each the budget manager's plan for 8 KiB of RAM on an STM32F411
  (``budget.plan("axgb", ..., ram=8 KiB, strategy=..., drift_detection=...)``; the ladder sizes ``window_max``,
  ``members`` and ``max_depth``; ``window_min`` 16, learning rate 0.3, bins 32). Bin edges come from the first
  1000 rows and the classes from the whole stream, as ``edgestream fit`` does; those rows are evaluated too.
* River's ``HoeffdingTreeClassifier()``, ``HoeffdingAdaptiveTreeClassifier()`` and
  ``ARFClassifier(n_models=10, seed=1)``, defaults otherwise, through ``RiverAdapter``.

Columns: prequential (test-then-train) accuracy over every row; the paper's figure for the same variant and
stream (Montiel et al. 2020, Table III for AXGB, Table IV for HAT and ARF; their streams have 1M rows and their
AXGB has 30 members, windows 1..1000 and depth 6, unbounded memory); host samples/s (Python
specification for AXGB); memory: the device state bytes for AXGB, River's ``_raw_memory_usage`` after the stream.

Second table (unless ``--no-device``): executed instructions per ``learn`` call (mean and worst) of AXGB_A[r] at
8 KiB on the SEA stream, on Cortex-M4F (stm32f411, QEMU mps2-an386) and Cortex-M0 (rp2040, QEMU microbit),
counted by ``targets.run(..., instructions=True)``: Python learns the first rows until one window before a
``window_max`` job starts, the bundle exported there test-then-trains the next ``DEVICE_ROWS`` rows (which hold
one whole training job); with ``work_per_call=0`` (the job runs in the call that fills the window), with the
default (automatic: 5/4 of a call's share of a ``window_max`` job) and with the smallest ``work_per_call`` that
keeps up (every job ends before the next window is full; the largest ring). Every device class is checked
against Python's. The worst call is split into the calls where ADWIN works on a check (the call that ends a
``clock`` = 32 period; with a spread job also the calls of a check spread over 3 cut tests' worth per call) and the others; "worst training w/o check" is the worst of the calls that ran training units and no ADWIN check.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from river import forest, tree

import bench_shrubs
from bench_shrubs import Stream

from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.evaluate import RiverAdapter, prequential
from edgestream.learners.axgb import AdaptiveXGBoost

BOARD = load_board("stm32f411")
SYNTHETIC_ROWS = 20_000
RAM = 8 * 1024
BIN_SAMPLE = 1000
AGRAWAL_FUNCTIONS = (0, 2, 5, 8)
DEVICE_ROWS = 300
VARIANTS = {"AXGB[p]": ("push", False), "AXGB[r]": ("replace", False), "AXGB_A[p]": ("push", True),
            "AXGB_A[r]": ("replace", True)}
PAPER = {  # Montiel et al. 2020: Table III (AXGB variants), Table IV (HAT, ARF); AGR_a, SEA_a for the generators
    "elec": {"AXGB[p]": .718, "AXGB[r]": .739, "AXGB_A[p]": .740, "AXGB_A[r]": .747, "river HAT": .874,
             "river ARF": .855},
    "weather": {"AXGB[p]": .765, "AXGB[r]": .774, "AXGB_A[p]": .767, "AXGB_A[r]": .747, "river HAT": .693,
                "river ARF": .791},
    "sea": {"AXGB[p]": .865, "AXGB[r]": .875, "AXGB_A[p]": .866, "AXGB_A[r]": .874, "river HAT": .827,
            "river ARF": .897},
    "agrawal": {"AXGB[p]": .919, "AXGB[r]": .931, "AXGB_A[p]": .927, "AXGB_A[r]": .928, "river HAT": .807,
                "river ARF": .939},
}


@dataclass
class Row:
    stream: str
    learner: str
    accuracy: float
    paper: float
    samples_per_s: float
    memory_bytes: int
    config: str


def agrawal(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    from river.datasets import synth

    rows, labels = [], []
    blocks = np.array_split(np.arange(n), len(AGRAWAL_FUNCTIONS))
    for function, block in zip(AGRAWAL_FUNCTIONS, blocks):
        for x, label in synth.Agrawal(classification_function=function, seed=seed + function).take(len(block)):
            rows.append([float(v) for v in x.values()])
            labels.append(int(label))
    return np.asarray(rows, dtype=np.float32), np.asarray(labels)


def load_streams(rows: int | None, synthetic_rows: int) -> list[Stream]:
    """elec, weather and SEA as bench_shrubs loads them, plus the abrupt Agrawal stream."""
    bench_shrubs.SYNTHETIC_ROWS = synthetic_rows
    streams = bench_shrubs.load_streams(None, "sea")
    X, y = agrawal(synthetic_rows)
    streams.append(Stream("agrawal", X, y, [f"x{j}" for j in range(X.shape[1])]))
    return [Stream(s.name, s.X[:rows], s.y[:rows], s.feature_names) for s in streams]


def planned_axgb(stream: Stream, strategy: str, drift: bool, **params) -> AdaptiveXGBoost:
    classes = np.unique(stream.y)
    budget = plan("axgb", BOARD, stream.X.shape[1], len(classes), ram=RAM, strategy=strategy,
                  drift_detection=drift, **params)
    model = AdaptiveXGBoost(**budget.params)
    return model.fit_bins(stream.X[:BIN_SAMPLE]).set_classes(classes)


def evaluate(stream: Stream) -> list[Row]:
    rows = []
    learners = {name: (lambda s=strategy, d=drift: planned_axgb(stream, s, d)) for name, (strategy, drift) in
                VARIANTS.items()}
    learners |= {"river HT": lambda: RiverAdapter(tree.HoeffdingTreeClassifier(), stream.feature_names),
                 "river HAT": lambda: RiverAdapter(tree.HoeffdingAdaptiveTreeClassifier(), stream.feature_names),
                 "river ARF": lambda: RiverAdapter(forest.ARFClassifier(n_models=10, seed=1), stream.feature_names)}
    for name, build in learners.items():
        learner = build()
        result = prequential(learner, stream.X, stream.y)
        config = ""
        if isinstance(learner, AdaptiveXGBoost):
            config = (f"K={learner.members} W={learner.window_min}..{learner.window_max} depth={learner.max_depth}"
                      f" drifts={learner.adwin_.n_detections}")
        rows.append(Row(stream.name, name, result.accuracy, PAPER.get(stream.name, {}).get(name, float("nan")),
                        result.samples_per_second, learner.state_bytes(), config))
    return rows


def device_counts(stream: Stream) -> list[dict]:
    """Instructions per learn call of AXGB_A[r] at 8 KiB on the emulated cores, whole-job and spread."""
    from edgestream.export import export_bundle
    from edgestream.targets import run

    out = []
    least = planned_axgb(stream, "replace", True).min_work_per_call(stream.X.shape[1])
    modes = [("whole job", 0, 16), ("automatic (default)", None, 16), ("least that keeps up", least, 16)]
    for mode, work, window_min in modes:
        learner = planned_axgb(stream, "replace", True, work_per_call=work, window_min=window_min)
        start = 0
        while not (learner.window == learner.window_max and learner.phase == 0 and
                   learner.count == learner.window_max - 40 and learner.n_members == learner.members):
            learner.learn_one(stream.X[start], stream.y[start])
            start += 1
        X, y = stream.X[start:start + DEVICE_ROWS], stream.y[start:start + DEVICE_ROWS]
        with tempfile.TemporaryDirectory() as tmp:
            bundle = export_bundle(learner, Path(tmp) / "b", name="axgb")
            results = {board: run(bundle, board, X, y, learn=True, instructions=True, timeout=900)
                       for board in ("stm32f411", "rp2040")}
        expected, checks, training = [], [], []
        for x, label in zip(X, y):
            expected.append(learner.predict_encoded(x[None])[0])
            adwin = learner.adwin_
            # ADWIN checks in this call: its tick ends a clock period, or a spread check is under way or queued
            checks.append(adwin.tick + 1 == adwin.clock or adwin.phase != 0 or adwin.queue_len > 0)
            learner.learn_one(x, label)
            training.append(learner.last_units_ > 0)
        checks, training = np.asarray(checks), np.asarray(training)
        for board, result in results.items():
            learn = result.instructions["learn"]
            predict = result.instructions.get("predict", np.zeros(1))
            out.append({"board": board, "mode": mode, "work_per_call": learner.units_per_call_, "rows": len(X),
                        "learn_mean": float(learn.mean()), "learn_worst": int(learn.max()),
                        "worst_no_check": int(learn[~checks].max()), "worst_check": int(learn[checks].max()),
                        "worst_training": int(learn[training & ~checks].max()),
                        "predict_mean": float(predict.mean()),
                        "mismatches": int(np.sum(result.classes != np.asarray(expected)))})
    return out


def format_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    cells = [[header for header, _, _ in columns]]
    cells += [[fmt.format(row[key]) for _, key, fmt in columns] for row in rows]
    widths = [max(len(line[j]) for line in cells) for j in range(len(columns))]
    text = ["  ".join(cell.ljust(width) if j < 2 or j == len(columns) - 1 else cell.rjust(width)
                      for j, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in cells]
    return "\n".join([text[0], "-" * len(text[0]), *text[1:]])


ACCURACY_COLUMNS = [("stream", "stream", "{}"), ("learner", "learner", "{}"), ("accuracy", "accuracy", "{:.4f}"),
                    ("paper", "paper", "{:.3f}"), ("samples/s", "samples_per_s", "{:,.0f}"),
                    ("memory B", "memory_bytes", "{:,}"), ("config", "config", "{}")]
DEVICE_COLUMNS = [("board", "board", "{}"), ("mode", "mode", "{}"), ("work/call", "work_per_call", "{}"),
                  ("rows", "rows", "{}"), ("learn mean", "learn_mean", "{:,.0f}"),
                  ("learn worst", "learn_worst", "{:,}"), ("worst training w/o check", "worst_training", "{:,}"),
                  ("worst w/o ADWIN check", "worst_no_check", "{:,}"),
                  ("worst ADWIN check", "worst_check", "{:,}"), ("predict mean", "predict_mean", "{:,.0f}"),
                  ("mismatches", "mismatches", "{}")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="keep the first ROWS rows of every stream")
    parser.add_argument("--synthetic-rows", type=int, default=SYNTHETIC_ROWS, help="rows of sea and agrawal")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--no-device", action="store_true", help="skip the instruction counts under QEMU")
    args = parser.parse_args(argv)
    streams = load_streams(args.rows, args.synthetic_rows)
    started = time.perf_counter()
    rows = [dataclasses.asdict(row) for stream in streams for row in evaluate(stream)]
    device = [] if args.no_device else device_counts(next(s for s in streams if s.name == "sea"))
    if args.json:
        print(json.dumps({"accuracy": rows, "device": device}, indent=1))
    else:
        print(f"prequential accuracy at {RAM // 1024} KiB (AXGB planned for stm32f411), "
              f"{time.perf_counter() - started:.0f} s")
        print(format_table(rows, ACCURACY_COLUMNS))
        if device:
            print("\ninstructions per call, AXGB_A[r] at 8 KiB on sea (QEMU, exact counts)")
            print(format_table(device, DEVICE_COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
