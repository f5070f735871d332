"""Benchmark: streaming anomaly detection (ROC-AUC over the whole stream, samples/s), every edgestream detector at
4, 16 and 64 KiB of RAM beside River's and MOA's (CapyMOA's) detectors on the same rows in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_anomaly.py [--rows N] [--streams NAME ...] [--quick] [--no-moa]
                                                 [--no-river] [--slow-rows N] [--out FILE]

Every detector scores a row first, then learns it; ROC-AUC of those scores against the 0/1 anomaly labels over
every row (the labels are never learned), and samples/s of that pass.

Streams (``STREAMS``), each of at most ``--rows`` rows (default 20,000; the first rows when a set is longer):

* ``shuttle``: River's bundled ``Shuttle`` (49,097 rows, 9 features, 7 % anomalies). River's ``CreditCard``,
  ``HTTP`` and ``SMTP`` download their files at first use; they are not available offline and are left out.
* ``optdigits``, ``pendigits``: one-class splits of ``../shared/data``'s digit sets (train and test files
  together): every row of digit 0 is normal, and 3 % of the stream are rows of other digits drawn at random,
  shuffled in (seed 0). Pixel columns that are constant over the first 1,000 rows are dropped for every detector
  (no work range can be fitted on them).
* ``points``: three Gaussian clusters in 6 dimensions, 2 % point anomalies drawn uniformly from a box twice as wide,
  after the first 1,000 rows.
* ``collective``: the same clusters; 1.5 % of rows are anomalies in bursts of 40 consecutive rows from a small
  cluster between the normal ones (each value inside the normal range).
* ``drift``: the clusters' centres move linearly by 4 standard deviations over the stream (a drifting normal),
  2 % point anomalies.

edgestream: ``edgestream fit --task anomaly --learner NAME --ram R --board stm32f411`` (:func:`edgestream.train.train`:
the largest configuration of the learner's ladder that fits R, started on the first 1,000 rows) learns the whole
stream test-then-train on the compiled engine. River: ``HalfSpaceTrees(n_trees=10, height=8, window_size=250)``
behind a ``MinMaxScaler`` (River's recommendation), one Python call per row. CapyMOA 0.15: MOA's
``HalfSpaceTrees`` (Java) and CapyMOA's ``OnlineIsolationForest``, ``RobustRandomCutForest`` and ``Loda`` (these
three are written in Python), each with its defaults, instance by instance; the three Python ones run on the first
``--slow-rows`` rows only (default 1,000; they run at 3 to hundreds of rows per second), marked with the rows.
The generated streams hold no anomaly in their first 1,000 rows, so those runs have no ROC-AUC there (``nan``).

Printed, and with ``--out`` written as markdown: ROC-AUC and samples/s per stream and detector, then the issue's
targets per detector within 32 KiB (its 16 KiB plan): ROC-AUC against the best peer and River's HST, speed
against River's HST.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quality import BOARD, commit, markdown_page  # noqa: E402

from edgestream import learners  # noqa: E402
from edgestream.boards import load_board  # noqa: E402
from edgestream.task import ANOMALY, roc_auc  # noqa: E402
from edgestream.train import train  # noqa: E402

STREAMS = ("shuttle", "optdigits", "pendigits", "points", "collective", "drift")
QUICK = {"rows": 3000, "slow_rows": 300, "streams": ("shuttle", "pendigits", "collective")}
BUDGETS_KIB = (4, 16, 64)
TARGET_KIB = 16  # the plan within the 32 KiB
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared/data beside the repository
ANOMALY_SHARE = 0.03
CLEAN_ROWS = 1000


def digits(name: str, rng) -> tuple[np.ndarray, np.ndarray]:
    rows = np.concatenate([np.loadtxt(DATA / f"{name}.{part}.csv", delimiter=",") for part in ("train", "test")])
    X, digit = rows[:, :-1], rows[:, -1].astype(int)
    normal, other = np.flatnonzero(digit == 0), np.flatnonzero(digit != 0)
    n_anomalies = int(round(len(normal) * ANOMALY_SHARE / (1 - ANOMALY_SHARE)))
    chosen = np.concatenate([normal, rng.choice(other, n_anomalies, replace=False)])
    rng.shuffle(chosen)
    return X[chosen], digit[chosen] != 0


def clusters(n: int, rng, d: int = 6, drift: float = 0.0) -> np.ndarray:
    centres = rng.uniform(-3, 3, size=(3, d))
    moved = centres[rng.integers(3, size=n)] + drift * np.linspace(0, 1, n)[:, None]
    return moved + rng.normal(scale=0.5, size=(n, d))


def points(n: int, rng, drift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    X = clusters(n, rng, drift=drift)
    y = rng.random(n) < 0.02
    y[:CLEAN_ROWS] = False
    low, high = X.min(axis=0), X.max(axis=0)
    middle, half = (low + high) / 2, high - low
    X[y] = rng.uniform(middle - half, middle + half, size=(int(y.sum()), X.shape[1]))
    return X, y


def collective(n: int, rng, burst: int = 40) -> tuple[np.ndarray, np.ndarray]:
    X = clusters(n, rng)
    y = np.zeros(n, dtype=bool)
    starts = rng.choice(np.arange(CLEAN_ROWS, n - burst, burst), max(1, int(n * 0.015) // burst), replace=False)
    centre = (X.min(axis=0) + X.max(axis=0)) / 2  # between the clusters, inside the normal range
    for s in starts:
        y[s:s + burst] = True
        X[s:s + burst] = centre + rng.normal(scale=0.2, size=(burst, X.shape[1]))
    return X, y


def load(name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a stream (module docstring): float64 features, True for an anomaly."""
    rng = np.random.default_rng(0)
    if name == "shuttle":
        from river import datasets

        data = [(list(x.values()), y) for x, y in datasets.Shuttle().take(rows)]
        X, y = np.array([x for x, _ in data], dtype=np.float64), np.array([y for _, y in data], dtype=bool)
    elif name in ("optdigits", "pendigits"):
        X, y = digits(name, rng)
    elif name == "collective":
        X, y = collective(rows, rng)
    else:
        X, y = points(rows, rng, drift=4.0 if name == "drift" else 0.0)
    X, y = X[:rows], y[:rows]
    varying = X[:CLEAN_ROWS].max(axis=0) > X[:CLEAN_ROWS].min(axis=0)
    return X[:, varying], y


def ours(X, y, learner: str, kib: int, board) -> dict:
    trained = train(learner, X, y.astype(np.int64), {}, board, ram=kib * 1024, task=ANOMALY)
    result = trained.prequential
    return {"roc_auc": result.metrics["roc_auc"], "samples_per_second": result.samples_per_second,
            "plan": trained.model.summary().split(",")[0]}


def river_run(X, y) -> dict:
    from river import anomaly, compose, preprocessing

    model = compose.Pipeline(preprocessing.MinMaxScaler(),
                             anomaly.HalfSpaceTrees(n_trees=10, height=8, window_size=250, seed=1))
    rows = [dict(enumerate(x)) for x in X.tolist()]
    scores = np.empty(len(rows))
    start = time.perf_counter()
    for i, x in enumerate(rows):
        scores[i] = model.score_one(x)
        model.learn_one(x)
    return {"roc_auc": roc_auc(y, scores), "samples_per_second": len(rows) / (time.perf_counter() - start)}


MOA = ("MOA HST", "CapyMOA OIF", "CapyMOA RRCF", "CapyMOA Loda")
SLOW = MOA[1:]


def moa_detector(label: str, schema):
    from capymoa import anomaly

    return {"MOA HST": anomaly.HalfSpaceTrees, "CapyMOA OIF": anomaly.OnlineIsolationForest,
            "CapyMOA RRCF": anomaly.RobustRandomCutForest, "CapyMOA Loda": anomaly.Loda}[label](schema)


def moa_run(X, y, label: str) -> dict:
    from capymoa.stream import NumpyStream

    stream = NumpyStream(X, y.astype(np.int64), target_type="categorical")
    detector = moa_detector(label, stream.get_schema())
    scores = np.empty(len(y))
    start = time.perf_counter()
    for i in range(len(y)):
        instance = stream.next_instance()
        scores[i] = detector.score_instance(instance)
        detector.train(instance)
    return {"roc_auc": roc_auc(y, np.nan_to_num(scores)), "samples_per_second": len(y) / (time.perf_counter() - start)}


def run_stream(name: str, args, board, bar) -> dict:
    X, y = load(name, args.rows)
    runs = {}
    for learner in learners.for_task(ANOMALY):
        for kib in BUDGETS_KIB:
            bar.set_postfix_str(f"{name}: {learner} {kib}K")
            try:
                runs[f"{learner} {kib}K"] = ours(X, y, learner, kib, board)
            except ValueError as error:  # nothing of the learner fits the budget
                runs[f"{learner} {kib}K"] = {"error": str(error).splitlines()[0]}
            bar.update()
    if not args.no_river:
        bar.set_postfix_str(f"{name}: River HST")
        runs["River HST"] = river_run(X, y)
        bar.update()
    for label in () if args.no_moa else MOA:
        bar.set_postfix_str(f"{name}: {label}")
        rows = min(len(y), args.slow_rows) if label in SLOW else len(y)
        try:
            runs[label] = moa_run(X[:rows], y[:rows], label) | {"rows": rows}
        except Exception as error:  # a peer's own failure on a stream is reported, not fatal  # noqa: BLE001
            runs[label] = {"error": f"{type(error).__name__}: {error}"}
        bar.update()
    return {"rows": len(y), "features": X.shape[1], "anomalies": int(y.sum()), "runs": runs}


def cell(run: dict, key: str, fmt: str, rows: int) -> str:
    if key not in run or run[key] is None:
        return "-"
    partial = f" ({run['rows']:,} rows)" if run.get("rows", rows) < rows else ""
    return format(run[key], fmt) + partial


def table(results: dict, key: str, fmt: str) -> str:
    labels = list(dict.fromkeys(label for r in results.values() for label in r["runs"]))
    lines = ["| stream (rows, features, anomalies) | " + " | ".join(labels) + " |",
             "| --- |" + " ---: |" * len(labels)]
    for name, r in results.items():
        cells = [cell(r["runs"].get(label, {}), key, fmt, r["rows"]) for label in labels]
        lines.append(f"| {name} ({r['rows']:,}, {r['features']}, {r['anomalies']:,}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(results: dict) -> str:
    lines = []
    for learner in learners.for_task(ANOMALY):
        for name, r in results.items():
            runs, ours_run = r["runs"], r["runs"].get(f"{learner} {TARGET_KIB}K", {})
            if ours_run.get("roc_auc") is None:
                continue
            peers = {label: run["roc_auc"] for label, run in runs.items()
                     if (label.startswith(("MOA", "CapyMOA", "River"))) and run.get("roc_auc") is not None}
            parts = [f"{learner} {TARGET_KIB}K ({ours_run['plan']}) ROC-AUC {ours_run['roc_auc']:.3f}"]
            if peers:
                best = max(peers.items(), key=lambda kv: kv[1])
                gap = ours_run["roc_auc"] - best[1]
                parts.append(f"best peer {best[0]} {best[1]:.3f} ({gap:+.3f}, {'met' if gap >= -0.01 else 'MISSED'})")
            river = runs.get("River HST", {})
            if river.get("roc_auc") is not None:
                above = ours_run["roc_auc"] > river["roc_auc"]
                parts.append(f"River HST {river['roc_auc']:.3f} ({'above' if above else 'NOT above'})")
                speed = ours_run["samples_per_second"] / river["samples_per_second"]
                parts.append(f"speed {speed:.0f}x River HST ({'met' if speed >= 10 else 'MISSED'})")
            lines.append(f"- {name}: " + "; ".join(parts))
    return "\n".join(lines)


def failures(results: dict) -> str:
    return "\n".join(f"- {name}, {label}: {run['error']}" for name, r in results.items()
                     for label, run in r["runs"].items() if "error" in run) or "none"


def report(results: dict, args) -> str:
    return "\n\n".join([
        "ROC-AUC (score first, then learn; over every row; the CapyMOA Python detectors over the rows shown):",
        table(results, "roc_auc", ".3f"),
        "Samples per second (score and learn; ours on the compiled engine):",
        table(results, "samples_per_second", ",.0f"),
        "Plans (the largest of each ladder within the budget, on stm32f411):",
        table(results, "plan", "s"),
        f"Targets (ours at {TARGET_KIB} KiB, the plan within 32 KiB; peers at their defaults):", targets(results),
        "Runs that failed (\"-\" in the tables):", failures(results),
        "Missing peers: River's CreditCard, HTTP and SMTP (downloaded at first use, not available offline)."])


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="rows of every stream at most (default 20000; --quick 3000)")
    parser.add_argument("--slow-rows", type=int, help="rows of CapyMOA's Python detectors (default 1000)")
    parser.add_argument("--streams", nargs="+", choices=STREAMS, metavar="NAME")
    parser.add_argument("--quick", action="store_true", help="a smoke run (module docstring: QUICK)")
    parser.add_argument("--no-moa", action="store_true", help="leave out MOA (CapyMOA)")
    parser.add_argument("--no-river", action="store_true", help="leave out River")
    parser.add_argument("--out", type=Path, help="markdown file for the tables")
    args = parser.parse_args(argv)
    args.rows = args.rows or (QUICK["rows"] if args.quick else 20_000)
    args.slow_rows = args.slow_rows or (QUICK["slow_rows"] if args.quick else 1000)
    args.streams = args.streams or (list(QUICK["streams"]) if args.quick else list(STREAMS))
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    board = load_board(BOARD)
    per_stream = (len(learners.for_task(ANOMALY)) * len(BUDGETS_KIB) + (0 if args.no_river else 1)
                  + (0 if args.no_moa else len(MOA)))
    start, measured_commit = time.perf_counter(), commit()
    with tqdm(total=per_stream * len(args.streams), unit="run") as bar:
        results = {name: run_stream(name, args, board, bar) for name in args.streams}
    text = report(results, args)
    print(text)
    if args.out:
        args.out.write_text(markdown_page(text, argv, time.perf_counter() - start, measured_commit,
                                          "benchmarks/bench_anomaly.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
