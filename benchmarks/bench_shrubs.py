"""Benchmark: edgestream's ShrubEnsemble at fixed RAM budgets against River's online trees, prequentially.

Run from the repository root::

    .venv/bin/python benchmarks/bench_shrubs.py [--rows N] [--json] [--plot FILE] [--pareto FILE]
                                                [--synthetic sea] [--progress]

Streams: ``elec.csv`` (label ``class``) and ``weather.csv`` (label ``target``) from ``../shared/data`` (a missing
file is skipped with a note), and a built-in drifting stream (``make_stream(SYNTHETIC, 20000, seed=1)``, SEA
concepts with abrupt drift by default). ``--rows N`` keeps the first N rows of every stream.

Learners, all in one run over the same rows:

* the budget's choice by accuracy (:func:`edgestream.search.search` on an STM32F411, as ``budget --ram --data``
  does) for each budget in ``BUDGETS_KIB``: the configuration of the shrub search grid with the best prequential
  accuracy on the stream among those that fit the budget. One search at the largest budget evaluates every
  candidate that fits it; a smaller budget's choice is the best of those that fit it (what a search at that budget
  returns). Bin edges come from the first ``BIN_SAMPLE`` rows and the classes are all labels of the stream: what a
  device ships with. Those rows are then evaluated like every other row. The chosen configurations are then run
  again here, beside River, for the speed columns.
* River's ``HoeffdingTreeClassifier()``, ``HoeffdingAdaptiveTreeClassifier()`` and
  ``ARFClassifier(n_models=10, seed=1)``, defaults otherwise, fed through ``RiverAdapter`` (numpy row -> dict).

Columns: prequential (test-then-train) accuracy over every row; host samples/s, rows divided by the wall time of
all ``predict_one`` + ``learn_one`` calls (the adapter's row-to-dict conversion included), and as a multiple of
River HT's on the same stream in the same process ("x HT"); memory, the device state
bytes for shrubs (``state_bytes()``, fixed by the budget) and River's ``_raw_memory_usage`` of the model after the
stream for River; memory as a percentage of ARF's and the accuracy difference to ARF in points; the shrub
configuration the budget selected (window B, shrubs M, depth, a new shrub every U samples, burn-in, step size,
bins) with its Cortex-M4F instructions per learn step predicted by the calibrated cost model (mean; ``M4 /s``: learn
steps per second at the STM32F411's 100 MHz).

``--pareto FILE`` plots, per stream, the accuracy against memory of every shrub configuration the search evaluated
with its Pareto front, and River's models, as the seed paper's evaluation does. The checks printed at the end: a
larger budget is never less accurate than a smaller one (on the stream it was chosen on), and the 8 KiB choice
against River HT. Last, the configuration chosen at 8 KiB on the synthetic stream runs on drifting streams no search
has seen (``UNSEEN``: another SEA stream with other thresholds, a rotating hyperplane), against River HT.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# single-threaded BLAS (before numpy loads): idle OpenBLAS workers spin on the shared cores and skew the timings
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from river import forest, tree

from edgestream.boards import load_board
from edgestream.data import load_csv, make_stream
from edgestream.evaluate import PrequentialResult, RiverAdapter, plot_curves, prequential
from edgestream import learners
from edgestream.costs import call_cost
from edgestream.search import Search, search
from edgestream import ShrubEnsemble

BOARD = load_board("stm32f411")
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REAL_STREAMS = {"elec": ("elec.csv", "class"), "weather": ("weather.csv", "target")}
SYNTHETIC_ROWS = 20_000
BUDGETS_KIB = (2, 8, 32)
BIN_SAMPLE = 1000  # edgestream.train.BINS_ROWS, as the search trains
WINDOW = 500  # rows per point of the accuracy curves
REFERENCE = "river ARF"
SPEED_REFERENCE = "river HT"  # host learning speed is compared with River's Hoeffding tree
# Drifting streams no search has seen: the configuration chosen at UNSEEN_KIB on the synthetic stream runs on them
UNSEEN = {"sea (seed 7, other thresholds)": ("sea", {"seed": 7, "thresholds": (9.5, 7.0, 8.5, 8.0)}),
          "hyperplane (seed 3)": ("hyperplane", {"seed": 3})}
UNSEEN_KIB = 8


@dataclass
class Stream:
    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    search: Search | None = None


@dataclass(frozen=True)
class Learner:
    name: str
    build: Callable[[Stream], object]  # a fresh learner with predict_one, learn_one and state_bytes


@dataclass
class Row:
    stream: str
    learner: str
    accuracy: float
    samples_per_s: float
    memory_bytes: int
    config: str
    memory_vs_ref: float = float("nan")  # memory / ARF's memory
    accuracy_vs_ref: float = float("nan")  # (accuracy - ARF's accuracy) in points
    speed_vs_ht: float = float("nan")  # samples/s / River HT's samples/s


def load_streams(rows: int | None, synthetic: str) -> list[Stream]:
    streams = []
    for name, (file, label) in REAL_STREAMS.items():
        path = DATA / file
        if path.is_file():
            streams.append(Stream(name, *load_csv(path, label)))
        else:
            print(f"note: {path} is absent, stream {name!r} skipped", file=sys.stderr)
    X, y = make_stream(synthetic, SYNTHETIC_ROWS, seed=1)
    streams.append(Stream(synthetic, X, y, [f"x{j}" for j in range(X.shape[1])]))
    return [Stream(s.name, s.X[:rows], s.y[:rows], s.feature_names) for s in streams]


def choose(found: Search, budget_kib: int):
    """The search's choice for a smaller budget: the most accurate evaluated candidate that fits it (ties to the
    smaller RAM, then the earlier candidate, as the search breaks them)."""
    fitting = [(i, c) for i, c in enumerate(found.candidates)
               if c.accuracy is not None and c.budget.ram_bytes <= budget_kib * 1024]
    return min(fitting, key=lambda ic: (-ic[1].accuracy, ic[1].budget.ram_bytes, ic[0]))[1]


def shrubs(budget_kib: int) -> Learner:
    def build(stream: Stream) -> ShrubEnsemble:
        chosen = choose(stream.search, budget_kib)
        return ShrubEnsemble(**chosen.budget.params).fit_bins(stream.X[:BIN_SAMPLE]).set_classes(np.unique(stream.y))

    return Learner(f"shrubs {budget_kib} KiB", build)


def river_model(name: str, make_model: Callable[[], object]) -> Learner:
    return Learner(f"river {name}", lambda stream: RiverAdapter(make_model(), stream.feature_names))


LEARNERS = [
    *(shrubs(kib) for kib in BUDGETS_KIB),
    river_model("HT", tree.HoeffdingTreeClassifier),
    river_model("HAT", tree.HoeffdingAdaptiveTreeClassifier),
    river_model("ARF", lambda: forest.ARFClassifier(n_models=10, seed=1)),
]


def describe(learner, n_features: int, n_classes: int) -> str:
    if isinstance(learner, ShrubEnsemble):
        mean = call_cost(learners.get("shrubs"), learner.get_params(), n_features, n_classes, BOARD.arch).learn.mean
        return (f"B={learner.window_size} M={learner.max_shrubs} D={learner.max_depth} U={learner.update_every} "
                f"burnin={learner.burnin} step={learner.step_size} bins={learner.max_bins}; M4 {mean:,.0f} instr, "
                f"{BOARD.clock_hz / mean:,.0f}/s")
    return ""


def evaluate(stream: Stream, progress: bool) -> tuple[list[Row], dict[str, PrequentialResult]]:
    rows, results = [], {}
    for spec in LEARNERS:
        learner = spec.build(stream)
        result = prequential(learner, stream.X, stream.y, window=WINDOW, progress=progress,
                             desc=f"{stream.name} {spec.name}")
        results[spec.name] = result
        rows.append(Row(stream.name, spec.name, result.accuracy, result.samples_per_second, learner.state_bytes(),
                        describe(learner, stream.X.shape[1], len(np.unique(stream.y)))))
    reference = next(row for row in rows if row.learner == REFERENCE)
    ht = next(row for row in rows if row.learner == SPEED_REFERENCE)
    for row in rows:
        row.memory_vs_ref = row.memory_bytes / reference.memory_bytes
        row.accuracy_vs_ref = 100 * (row.accuracy - reference.accuracy)
        row.speed_vs_ht = row.samples_per_s / ht.samples_per_s
    return rows, results


COLUMNS = [  # header, Row attribute, format
    ("stream", "stream", "{}"),
    ("learner", "learner", "{}"),
    ("accuracy", "accuracy", "{:.4f}"),
    ("samples/s", "samples_per_s", "{:,.0f}"),
    ("x HT", "speed_vs_ht", "{:.2f}"),
    ("memory B", "memory_bytes", "{:,}"),
    ("mem vs ARF", "memory_vs_ref", "{:.2%}"),
    ("acc vs ARF", "accuracy_vs_ref", "{:+.2f} pt"),
    ("config", "config", "{}"),
]


def _cell(fmt: str, value) -> str:
    return "-" if isinstance(value, float) and np.isnan(value) else fmt.format(value)


def format_table(rows: list[Row]) -> str:
    cells = [[header for header, _, _ in COLUMNS]]
    cells += [[_cell(fmt, getattr(row, attribute)) for _, attribute, fmt in COLUMNS] for row in rows]
    widths = [max(len(line[j]) for line in cells) for j in range(len(COLUMNS))]
    text = ["  ".join(cell.ljust(width) if j < 2 or j == len(COLUMNS) - 1 else cell.rjust(width)
                      for j, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in cells]
    return "\n".join([text[0], "-" * len(text[0]), *text[1:]])


def curve_path(path: Path, stream: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f"{path.stem}-{stream}{path.suffix or '.png'}")


def pareto_plot(streams: list[Stream], rows: list[Row], path: Path) -> None:
    """Accuracy against memory per stream: every evaluated shrub configuration, their Pareto front, River's."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5 * len(streams), 4.2), layout="constrained")
    for k, stream in enumerate(streams):
        axes = figure.add_subplot(1, len(streams), k + 1)
        points = sorted(((c.budget.state_bytes, c.accuracy) for c in stream.search.candidates
                         if c.accuracy is not None), key=lambda p: (p[0], -p[1]))
        axes.scatter(*zip(*points), s=8, color="lightsteelblue", label="shrub configurations")
        front, best = [], -1.0
        for memory, accuracy in points:
            if accuracy > best:
                front.append((memory, accuracy))
                best = accuracy
        axes.step(*zip(*front), where="post", color="tab:blue", marker="o", markersize=3, label="shrubs Pareto front")
        for row in rows:
            if row.stream == stream.name and row.learner.startswith("river"):
                axes.scatter([row.memory_bytes], [row.accuracy], marker="s", s=40, label=row.learner)
        axes.set_xscale("log", base=2)
        axes.set(xlabel="memory (bytes)", ylabel="prequential accuracy", title=f"{stream.name}, {len(stream.y)} rows")
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=110)


def checks(rows: list[Row]) -> list[str]:
    lines = []
    for stream in dict.fromkeys(row.stream for row in rows):
        mine = {row.learner: row.accuracy for row in rows if row.stream == stream}
        ladder = [mine[f"shrubs {kib} KiB"] for kib in BUDGETS_KIB]
        monotone = all(a <= b for a, b in zip(ladder, ladder[1:]))
        at8 = mine["shrubs 8 KiB"] - mine[SPEED_REFERENCE]
        lines.append(f"{stream}: larger budgets never less accurate: {'yes' if monotone else 'NO'}; "
                     f"8 KiB vs River HT {100 * at8:+.2f} pt")
    return lines


def unseen_rows(chosen_on: Stream, progress: bool) -> list[Row]:
    """The configuration chosen on ``chosen_on`` at UNSEEN_KIB, and River HT, on the UNSEEN streams."""
    params = choose(chosen_on.search, UNSEEN_KIB).budget.params
    rows = []
    for name, (generator, options) in UNSEEN.items():
        X, y = make_stream(generator, SYNTHETIC_ROWS, **options)
        stream = Stream(name, X, y, [f"x{j}" for j in range(X.shape[1])])
        learners_ = [Learner(f"shrubs {UNSEEN_KIB} KiB (chosen on {chosen_on.name})", lambda s: ShrubEnsemble(
            **params).fit_bins(s.X[:BIN_SAMPLE]).set_classes(np.unique(s.y))),
                     next(spec for spec in LEARNERS if spec.name == SPEED_REFERENCE)]
        for spec in learners_:
            learner = spec.build(stream)
            result = prequential(learner, X, y, progress=progress, desc=f"{name} {spec.name}")
            rows.append(Row(name, spec.name, result.accuracy, result.samples_per_second, learner.state_bytes(),
                            describe(learner, X.shape[1], len(np.unique(y)))))
        rows[-2].speed_vs_ht, rows[-1].speed_vs_ht = rows[-2].samples_per_s / rows[-1].samples_per_s, 1.0
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="keep the first ROWS rows of every stream")
    parser.add_argument("--synthetic", default="sea", choices=["sea", "hyperplane"], help="drifting stream")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="write FILE-<stream>.png accuracy curves")
    parser.add_argument("--pareto", type=Path, metavar="FILE", help="write the accuracy-memory Pareto plot")
    parser.add_argument("--progress", action="store_true", help="a progress bar per run")
    args = parser.parse_args(argv)
    rows = []
    streams = load_streams(args.rows, args.synthetic)
    for stream in streams:
        stream.search = search("shrubs", BOARD, stream.X, stream.y, ram=max(BUDGETS_KIB) * 1024,
                               bins_rows=BIN_SAMPLE, progress=args.progress)
        stream_rows, results = evaluate(stream, args.progress)
        rows += stream_rows
        if args.plot:
            plot_curves(results, curve_path(args.plot, stream.name), title=f"{stream.name}, {len(stream.y)} rows")
    if args.pareto:
        pareto_plot(streams, rows, args.pareto)
    print(json.dumps([dataclasses.asdict(row) for row in rows], indent=1) if args.json else format_table(rows))
    if not args.json:
        evaluated = sum(c.accuracy is not None for c in streams[0].search.candidates)
        print(f"\nsearch: {evaluated} of {len(streams[0].search.candidates)} shrub configurations fit "
              f"{max(BUDGETS_KIB)} KiB on {BOARD.name} and were evaluated per stream")
        print("\n".join(checks(rows)))
    unseen = unseen_rows(streams[-1], args.progress)
    print(f"\nunseen drifting streams ({SYNTHETIC_ROWS} rows each):")
    print(format_table(unseen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
