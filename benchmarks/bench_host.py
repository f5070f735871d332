"""Benchmark: the compiled host engine of every online learner against River's HT, HAT and ARF, and the wall time
of the budget's accuracy search, all measured in one run (the machine is shared: compare the ratios).

Run from the repository root (River is needed: ``pip install 'edgestream[river]'``)::

    nice .venv/bin/python benchmarks/bench_host.py [--rows N] [--quick] [--json]

``--rows N`` (default 100,000) is the length of every stream; ``--quick`` is a small run (12,000 rows, the
specification on 500 rows); ``--json`` prints everything as JSON instead of tables.

Streams, generated: ``hyperplane``, the rotating hyperplane (10 features, gradual drift, 5 % label noise,
``make_stream("hyperplane", N, seed=1)``); ``rbf-drift``, River's ``RandomRBFDrift`` (10 features, 3 classes, 50
moving centroids, speed 0.001, seeds 1); ``sea``, SEA concepts with three abrupt drifts
(``make_stream("sea", N, seed=1)``), which has **3 features**, not 10.

For each stream and online learner, the configuration is the one ``edgestream fit --ram 32KiB`` chooses for an
STM32F411 on the first 5,000 rows (``search(name, board, X[:5000], y[:5000], ram=32 KiB)``, its
``.budget.params``); the rows after those 5,000 are the benchmark's rows.

Table 1, speed and accuracy (one row per learner; River's models on the same rows, in the same run):

* ``evaluate/s``: samples/s of ``prequential`` (what ``edgestream evaluate`` runs: compiled chunks) over the
  benchmark's rows, the learner started by ``start_online`` (bin edges or input scaling from the stream's first
  1,000 rows, the classes from the stream) as ``fit`` starts it; ``accuracy``: its prequential accuracy.
* ``River protocol/s``: samples/s of ``predict_one`` then ``learn_one`` per row, rows as dicts
  (``{"x0": ..., ...}``, made before the clock starts) and labels as Python ints, from a fresh model (cold
  start included: edgestream's warm-up of 100 rows); ``River accuracy``: its accuracy. River's models run only
  this way.
* ``x River HT``: the figure before it divided by River's ``HoeffdingTreeClassifier`` River protocol/s.
* ``spec/s``: samples/s of the Python specification (``use_engine = False``), test-then-train on the first
  ``--spec-rows`` (2,000) benchmark rows from the same start; ``engine/s``: the engine on the same rows (best of
  three runs: it takes milliseconds); ``x spec``: engine/s over spec/s; ``mismatches``: the rows of those where
  the engine's prediction differs from the specification's (0 expected: the engine is the device runtime, bit
  for bit the specification).

Table 2, the roofline: how far each learner's engine is from the machine's limit. ``ops/sample``: the operations
a test-then-train sample does, as the learner's algorithm counts them: the sum of the work terms of a prediction
and of a mean learn call (``LearnerSpec.cost_terms``, the terms the device cost models weigh: rows visited,
candidates scored, rotations, node visits, products of the sizes); ``CPU ns/op``: the engine's evaluate run in
CPU time of its thread (``time.thread_time``, so other work on a shared machine does not count) per operation;
``limit ns/op``: one operation per clock cycle of the CPU (its ``cpu MHz``); ``achieved / limit``: the limit over
the achieved ns per operation (1 would be one counted operation per cycle). The same, in instructions per
operation on Cortex-M4F: ``benchmarks/profile_device.py``.

Table 3, search time: ``search(...)`` timed as one call (worker processes started, every candidate of the
grid raced on the engine, as ``fit --ram 32KiB`` and ``fit --learner auto`` do) for each learner and ``auto``
on the first 5,000 rows of each stream, and on all ``--rows`` rows of the two 10-feature streams (``hyperplane``
and ``rbf-drift``): seconds of wall time, seconds of CPU (the search's process and its workers: on a shared
machine the wall time also counts other work) and the load average at its end, the target (10 s for a single
learner and for ``auto`` on 5,000 rows, 60 s for a single learner on 100,000), the configuration chosen and its
prequential accuracy on those rows.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import numpy as np

from edgestream import learners
from edgestream.boards import load_board
from edgestream.data import device_input, make_stream
from edgestream.evaluate import prequential
from edgestream.online import BINS_ROWS, start_online
from edgestream.search import AUTO, online_learners, search

ROWS = 100_000
QUICK_ROWS = 12_000
SEARCH_ROWS = 5_000
SPEC_ROWS = 2_000
QUICK_SPEC_ROWS = 500
RAM = 32 * 1024
BOARD = "stm32f411"
TARGET_EVALUATE = 10.0  # x River HT
TARGET_PROTOCOL = 2.0
TARGET_SEARCH_SECONDS = {SEARCH_ROWS: 10.0, ROWS: 60.0}  # a single learner's search
TARGET_AUTO_SECONDS = {SEARCH_ROWS: 10.0}
FULL_SEARCH_STREAMS = ("hyperplane", "rbf-drift")  # the 10-feature streams


@dataclass
class Stream:
    name: str
    X: np.ndarray
    y: np.ndarray

    @property
    def features(self) -> int:
        return self.X.shape[1]


@dataclass
class SpeedRow:
    stream: str
    learner: str
    config: str
    accuracy: float | None  # prequential, evaluate
    evaluate_per_s: float | None
    evaluate_x_ht: float | None
    protocol_accuracy: float
    protocol_per_s: float
    protocol_x_ht: float
    ops_per_sample: float | None = None  # the roofline (module docstring, table 2)
    cpu_ns_per_op: float | None = None
    limit_ratio: float | None = None
    spec_per_s: float | None = None
    engine_per_s: float | None = None
    engine_x_spec: float | None = None
    mismatches: int | None = None


@dataclass
class SearchRow:
    stream: str
    learner: str
    rows: int
    seconds: float
    cpu_seconds: float  # of the search's process and its workers: the machine is shared
    load: float  # the 1-minute load average at the end
    target: float | None
    chosen: str
    accuracy: float


def rbf_drift(rows: int) -> tuple[np.ndarray, np.ndarray]:
    from river.datasets import synth

    generator = synth.RandomRBFDrift(seed_model=1, seed_sample=1, n_classes=3, n_features=10, n_centroids=50,
                                     change_speed=0.001, n_drift_centroids=50)
    X, y = [], []
    for x, label in generator.take(rows):
        X.append(list(x.values()))
        y.append(int(label))
    return np.array(X, dtype=np.float64), np.array(y)


def load_streams(rows: int) -> list[Stream]:
    return [Stream("hyperplane", *make_stream("hyperplane", rows, seed=1)), Stream("rbf-drift", *rbf_drift(rows)),
            Stream("sea", *make_stream("sea", rows, seed=1))]


def describe(budget) -> str:
    return ", ".join(f"{k}={v}" for k, v in budget.config.items())


def cpu_seconds() -> float:
    """CPU time of this process and of its ended children (the search's workers, the compilers it ran)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed_search(stream: Stream, learner: str, rows: int):
    started, cpu = time.perf_counter(), cpu_seconds()
    found = search(learner, load_board(BOARD), stream.X[:rows], stream.y[:rows], ram=RAM)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    targets = TARGET_AUTO_SECONDS if learner == AUTO else TARGET_SEARCH_SECONDS
    chosen = describe(found.budget) if learner != AUTO else f"{found.learner}: {describe(found.budget)}"
    return found, SearchRow(stream.name, learner, len(stream.X[:rows]), seconds, cpu, os.getloadavg()[0],
                            targets.get(rows), chosen, found.best.accuracy)


def started_learner(name: str, params: dict, stream: Stream, engine: bool = True):
    model = learners.get(name).make(**params)
    model.use_engine = engine
    start_online(model, device_input(stream.X, model.input_dtype), np.unique(stream.y), BINS_ROWS)
    return model


def river_protocol(model, rows: list[dict], labels: list) -> tuple[float, float]:
    """(accuracy, samples/s) of predict_one then learn_one on every row."""
    hits = 0
    started = time.perf_counter()
    for x, label in zip(rows, labels):
        hits += model.predict_one(x) == label
        model.learn_one(x, label)
    return hits / len(labels), len(labels) / (time.perf_counter() - started)


def river_models() -> dict:
    from river import forest, tree

    return {"River HT": tree.HoeffdingTreeClassifier, "River HAT": tree.HoeffdingAdaptiveTreeClassifier,
            "River ARF": lambda: forest.ARFClassifier(n_models=10, seed=1)}


def clock_ghz() -> float | None:
    """The CPU's clock from /proc/cpuinfo (None where it is not given)."""
    try:
        with open("/proc/cpuinfo") as info:
            return next(float(line.split(":", 1)[1]) for line in info if line.startswith("cpu MHz")) / 1000
    except (OSError, StopIteration, ValueError):
        return None


def operations(name: str, params: dict, stream: Stream) -> float:
    """The operations of one test-then-train sample as the algorithm counts them: its cost terms, a prediction's
    and a mean learn call's (module docstring, table 2)."""
    terms = learners.get(name).cost_terms(params, stream.features, len(np.unique(stream.y)))
    return float(sum(terms.predict) + sum(terms.learn_mean))


def roofline(name: str, params: dict, stream: Stream, samples: int, cpu_seconds: float) -> dict:
    ops = operations(name, params, stream)
    ns_per_op = 1e9 * cpu_seconds / (samples * ops)
    ghz = clock_ghz()
    return {"ops_per_sample": ops, "cpu_ns_per_op": ns_per_op,
            "limit_ratio": None if ghz is None else (1 / ghz) / ns_per_op}


def specification_check(name: str, params: dict, stream: Stream, rows: slice) -> dict:
    """The specification and the engine test-then-train the same rows from the same start."""
    X, y = stream.X[rows], stream.y[rows]
    spec = prequential(started_learner(name, params, stream, engine=False), X, y)
    engine = [prequential(started_learner(name, params, stream), X, y) for _ in range(3)]
    engine_per_s = max(run.samples_per_second for run in engine)
    return {"spec_per_s": spec.samples_per_second, "engine_per_s": engine_per_s,
            "engine_x_spec": engine_per_s / spec.samples_per_second,
            "mismatches": int((spec.predictions != engine[0].predictions).sum())}


def speed(stream: Stream, spec_rows: int) -> tuple[list[SpeedRow], list[SearchRow]]:
    """Table 1's rows of one stream, and the 5,000-row searches that chose the configurations."""
    rest = slice(SEARCH_ROWS, None)
    dict_rows = [{f"x{j}": value for j, value in enumerate(row)} for row in stream.X[rest].tolist()]
    labels = stream.y[rest].tolist()
    ht_accuracy, ht_per_s = river_protocol(river_models()["River HT"](), dict_rows, labels)
    out, searches = [], []
    for name in online_learners():
        found, timing = timed_search(stream, name, SEARCH_ROWS)
        searches.append(timing)
        params = found.budget.params
        model = started_learner(name, params, stream)
        cpu = time.thread_time()
        evaluated = prequential(model, device_input(stream.X[rest], model.input_dtype), stream.y[rest])
        cpu = time.thread_time() - cpu
        accuracy, per_s = river_protocol(learners.get(name).make(**params), dict_rows, labels)
        check = specification_check(name, params, stream, slice(SEARCH_ROWS, SEARCH_ROWS + spec_rows))
        out.append(SpeedRow(stream.name, name, describe(found.budget), evaluated.accuracy,
                            evaluated.samples_per_second, evaluated.samples_per_second / ht_per_s, accuracy, per_s,
                            per_s / ht_per_s, **roofline(name, params, stream, evaluated.n, cpu), **check))
    for label, make in river_models().items():
        accuracy, per_s = (ht_accuracy, ht_per_s) if label == "River HT" else river_protocol(make(), dict_rows,
                                                                                              labels)
        out.append(SpeedRow(stream.name, label, "defaults", None, None, None, accuracy, per_s, per_s / ht_per_s))
    return out, searches


def full_searches(stream: Stream) -> list[SearchRow]:
    """Every learner's and auto's search on all rows, and auto's on the first 5,000."""
    rows = [timed_search(stream, AUTO, SEARCH_ROWS)[1]]
    return rows + [timed_search(stream, name, len(stream.X))[1] for name in [*online_learners(), AUTO]]


def machine() -> dict:
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as info:
            model = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": model, "clock_ghz": clock_ghz(), "cores": os.cpu_count(), "load_average": os.getloadavg(),
            "python": platform.python_version(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([os.path.relpath(sys.executable), *sys.argv])}


def cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


SPEED_COLUMNS = [("stream", "stream", ""), ("learner", "learner", ""), ("accuracy", "accuracy", ".4f"),
                 ("evaluate/s", "evaluate_per_s", ",.0f"), ("x River HT", "evaluate_x_ht", ".1f"),
                 ("River protocol/s", "protocol_per_s", ",.0f"), ("x River HT", "protocol_x_ht", ".1f"),
                 ("River accuracy", "protocol_accuracy", ".4f"), ("spec/s", "spec_per_s", ",.0f"),
                 ("engine/s", "engine_per_s", ",.0f"), ("x spec", "engine_x_spec", ".0f"),
                 ("mismatches", "mismatches", "d"), ("configuration (32 KiB)", "config", "")]
ROOFLINE_COLUMNS = [("stream", "stream", ""), ("learner", "learner", ""), ("evaluate/s", "evaluate_per_s", ",.0f"),
                    ("x River HT", "evaluate_x_ht", ".1f"), ("ops/sample", "ops_per_sample", ",.0f"),
                    ("CPU ns/op", "cpu_ns_per_op", ".2f"), ("achieved / limit", "limit_ratio", ".3f"),
                    ("configuration (32 KiB)", "config", "")]
SEARCH_COLUMNS = [("stream", "stream", ""), ("learner", "learner", ""), ("rows", "rows", ","),
                  ("seconds", "seconds", ".1f"), ("CPU s", "cpu_seconds", ".1f"), ("load", "load", ".1f"),
                  ("target s", "target", ".0f"), ("accuracy", "accuracy", ".4f"),
                  ("chosen", "chosen", "")]


def markdown_table(rows: list[dict], columns) -> str:
    lines = ["| " + " | ".join(header for header, _, _ in columns) + " |",
             "|" + "|".join("---" if fmt == "" else "---:" for _, _, fmt in columns) + "|"]
    lines += ["| " + " | ".join(cell(row[key], fmt) for _, key, fmt in columns) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help=f"rows of every stream (default {ROWS:,})")
    parser.add_argument("--spec-rows", type=int, default=None,
                        help=f"rows the specification test-then-trains (default {SPEC_ROWS:,})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows, the specification on "
                                                             f"{QUICK_SPEC_ROWS} rows")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args(argv)
    rows = args.rows or (QUICK_ROWS if args.quick else ROWS)
    spec_rows = args.spec_rows or (QUICK_SPEC_ROWS if args.quick else SPEC_ROWS)
    if rows <= SEARCH_ROWS + spec_rows:
        parser.error(f"--rows {rows} leaves nothing after the {SEARCH_ROWS:,} search rows and {spec_rows:,} "
                     f"specification rows: give more than {SEARCH_ROWS + spec_rows:,}")
    about = machine()
    speeds, searches = [], []
    for stream in load_streams(rows):
        found, chosen_by = speed(stream, spec_rows)
        speeds += found
        searches += chosen_by + (full_searches(stream) if stream.name in FULL_SEARCH_STREAMS else [])
    speeds = [asdict(row) for row in speeds]
    searches = sorted((asdict(row) for row in searches), key=lambda r: (r["stream"], r["rows"], r["learner"] == AUTO))
    if args.json:
        print(json.dumps({"machine": about, "rows": rows, "spec_rows": spec_rows, "speed": speeds,
                          "search": searches}, indent=1))
        return 0
    print(f"{about['date']}  {about['cpu']}, {about['cores']} cores, load average "
          f"{', '.join(f'{v:.1f}' for v in about['load_average'])} at the start, Python {about['python']}")
    print(f"command: {about['command']}\n")
    print(f"1. samples/s on rows {SEARCH_ROWS:,}..{rows:,} of each stream (spec and engine on the first "
          f"{spec_rows:,} of them); configurations chosen by the search at {RAM // 1024} KiB on {BOARD}\n")
    print(markdown_table(speeds, SPEED_COLUMNS))
    clock = about["clock_ghz"]
    print(f"\n2. roofline: operations per sample (cost terms), CPU ns per operation, against one operation per "
          f"cycle ({'unknown clock' if clock is None else f'{1 / clock:.3f} ns at {clock:.2f} GHz'})\n")
    print(markdown_table([row for row in speeds if row["ops_per_sample"] is not None], ROOFLINE_COLUMNS))
    print(f"\n3. search time at {RAM // 1024} KiB on {BOARD}\n")
    print(markdown_table(searches, SEARCH_COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
