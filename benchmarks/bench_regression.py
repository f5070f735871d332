"""Benchmark: prequential regression (MAE, RMSE, R², samples/s), every online regressor of edgestream at 8, 32 and
128 KiB of RAM and ``--learner auto`` at 32 KiB, beside River and MOA on the same rows in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_regression.py [--rows N] [--streams NAME ...] [--quick] [--no-moa]
                                                    [--no-river] [--learners NAME ...] [--out FILE]

Streams (``STREAMS``): River's generators, ``FriedmanDrift`` with a global abrupt change that recurs
(``friedman_abrupt``, drift type ``gra``) and with a slow global change (``friedman_gradual``, ``gsg``), both
changing at a third and two thirds of the rows, ``Planes2D`` and ``Mv`` (whose three text columns become category
codes, the same numbers for every learner), each of ``--rows`` rows (default 20,000); and River's bundled real sets
``TrumpApproval`` (1,001 rows, with its date column as a number) and ``ChickWeights`` (578 rows, 3 columns).

edgestream: each learner is trained as ``edgestream fit --learner NAME --ram R --search-rows S --board stm32f411
--task regression`` trains it (:func:`edgestream.train.train`): the search scores its candidates that fit R on the
first S rows (a tenth of the stream, at least the 1,000 rows that start the learners, at most all of them) by
their skills (``1 - RMSE / sd``, :mod:`edgestream.search`), and the chosen one learns the whole stream
test-then-train on the compiled engine; samples/s is that pass's.

River: ``HoeffdingTreeRegressor()``, ``HoeffdingAdaptiveTreeRegressor(seed=1)``, ``ARFRegressor(n_models=10,
seed=1)`` and ``AMRules()``, through ``edgestream.evaluate.prequential`` (one Python call per row). MOA (through
CapyMOA, Java 17): ``FIMTDD``, ``AdaptiveRandomForestRegressor`` (10 trees), ``SOKNL``,
``StreamingGradientBoostedRegression`` and ``ShrubsRegressor``, in MOA's own prequential loop on the rows
(``capymoa.stream.NumpyStream``). Every row is predicted before it is learned; a learner's first prediction,
before it learned anything, counts as 0 (River's answer).

Printed, and with ``--out`` written as markdown: per stream, R² of every learner (MAE and RMSE in the long table)
and samples/s; then the issue's targets: auto at 32 KiB against River's Hoeffding tree regressor and MOA's best,
RMSE against the target's standard deviation (never diverges), and the speed of each online regressor against
River's Hoeffding tree regressor in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quality import BOARD, BUDGETS_KIB, commit, markdown_page  # noqa: E402

from edgestream.boards import load_board  # noqa: E402
from edgestream.evaluate import RiverAdapter, prequential  # noqa: E402
from edgestream.search import AUTO, online_learners  # noqa: E402
from edgestream.task import REGRESSION, regression_metrics  # noqa: E402
from edgestream.train import train  # noqa: E402

STREAMS = ("friedman_abrupt", "friedman_gradual", "planes2d", "mv", "trump", "chickweights")
QUICK = {"rows": 2000, "streams": ("friedman_abrupt", "chickweights")}
AUTO_KIB = 32
ROOT = Path(__file__).resolve().parents[1]


def load(name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a stream (module docstring), float32 features, text columns as category codes."""
    from river import datasets
    from river.datasets import synth

    generators = {
        "friedman_abrupt": lambda: synth.FriedmanDrift("gra", (rows // 3, 2 * rows // 3), seed=42),
        "friedman_gradual": lambda: synth.FriedmanDrift("gsg", (rows // 3, 2 * rows // 3), rows // 10, seed=42),
        "planes2d": lambda: synth.Planes2D(seed=42), "mv": lambda: synth.Mv(seed=42),
        "trump": datasets.TrumpApproval, "chickweights": datasets.ChickWeights}
    pairs = [pair for _, pair in zip(range(rows), generators[name]())]
    keys = list(pairs[0][0])
    codes: dict = {}
    X = np.array([[x[k] if not isinstance(x[k], str) else codes.setdefault((k, x[k]), len(codes)) for k in keys]
                  for x, _ in pairs], dtype=np.float32)
    return X, np.array([target for _, target in pairs], dtype=np.float64)


def ours(X, y, learner: str, kib: int, board) -> dict:
    search_rows = min(len(y), max(len(y) // 10, 1000))
    start = time.perf_counter()
    trained = train(learner, X, y, {}, board, ram=kib * 1024, search_rows=search_rows, task=REGRESSION)
    result = trained.prequential
    return {**result.metrics, "samples_per_second": result.samples_per_second, "learner": trained.search.learner,
            "seconds": time.perf_counter() - start}


def river_models() -> dict:
    from river import forest, rules, tree

    return {"River HTR": tree.HoeffdingTreeRegressor, "River HATR": lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=1),
            "River ARF10": lambda: forest.ARFRegressor(n_models=10, seed=1), "River AMRules": rules.AMRules}


def river_run(X, y, make) -> dict:
    model = RiverAdapter(make(), [f"x{j}" for j in range(X.shape[1])])
    result = prequential(model, X.astype(np.float64), y)
    return {**result.metrics, "samples_per_second": result.samples_per_second}


def moa_models(schema) -> dict:
    from capymoa.regressor import (FIMTDD, SOKNL, AdaptiveRandomForestRegressor, ShrubsRegressor,
                                   StreamingGradientBoostedRegression)

    return {"MOA FIMT-DD": FIMTDD(schema), "MOA ARF-Reg10": AdaptiveRandomForestRegressor(schema, ensemble_size=10),
            "MOA SOKNL": SOKNL(schema), "MOA SGBR": StreamingGradientBoostedRegression(schema),
            "MOA Shrubs": ShrubsRegressor(schema)}


N_MOA = 5


def moa_runs(X, y, bar) -> dict:
    from capymoa.evaluation import prequential_evaluation
    from capymoa.stream import NumpyStream

    runs = {}
    for label in moa_models(NumpyStream(X, y, target_type="numeric").get_schema()):
        stream = NumpyStream(X.astype(np.float64), y, target_type="numeric")
        learner = moa_models(stream.get_schema())[label]
        start = time.perf_counter()
        try:
            result = prequential_evaluation(stream, learner, window_size=500, store_predictions=True)
        except Exception as error:  # a peer's own failure on a stream is reported, not fatal  # noqa: BLE001
            runs[label] = {"error": f"{type(error).__name__}: {error}"}
        else:
            predictions = np.nan_to_num(np.asarray(result.predictions(), dtype=np.float64))
            runs[label] = {**regression_metrics(y, predictions),
                           "samples_per_second": len(y) / (time.perf_counter() - start)}
        bar.update()
    return runs


def run_stream(name: str, args, board, bar) -> dict:
    X, y = load(name, args.rows)
    runs = {}
    for learner in args.learners:
        for kib in (AUTO_KIB,) if learner == AUTO else BUDGETS_KIB:
            bar.set_postfix_str(f"{name}: {learner} {kib}K")
            try:
                runs[f"{learner} {kib}K"] = ours(X, y, learner, kib, board)
            except ValueError as error:  # nothing of the learner fits the budget
                runs[f"{learner} {kib}K"] = {"error": str(error).splitlines()[0]}
            bar.update()
    if not args.no_river:
        for label, make in river_models().items():
            bar.set_postfix_str(f"{name}: {label}")
            runs[label] = river_run(X, y, make)
            bar.update()
    if not args.no_moa:
        runs |= moa_runs(X, y, bar)
    return {"rows": len(y), "sd": float(np.std(y)), "runs": runs}


def table(results: dict, key: str, fmt: str) -> str:
    labels = list(dict.fromkeys(label for r in results.values() for label in r["runs"]))
    lines = ["| stream (rows) | " + " | ".join(labels) + " |", "| --- |" + " ---: |" * len(labels)]
    for name, result in results.items():
        cells = [format(run[key], fmt) if key in run else "-" for run in (result["runs"].get(l, {}) for l in labels)]
        lines.append(f"| {name} ({result['rows']:,}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(results: dict) -> str:
    lines = []
    for name, result in results.items():
        runs, auto = result["runs"], result["runs"].get(f"{AUTO} {AUTO_KIB}K", {})
        if "r2" not in auto:
            continue
        moa = {label: run["r2"] for label, run in runs.items() if label.startswith("MOA") and "r2" in run}
        htr = runs.get("River HTR")
        best = max(moa.items(), key=lambda kv: kv[1]) if moa else None
        parts = [f"auto {AUTO_KIB}K ({auto['learner']}) R² {auto['r2']:.3f}",
                 f"RMSE {auto['rmse']:.4g} against sd {result['sd']:.4g} "
                 f"({'within' if auto['rmse'] <= result['sd'] else 'ABOVE'})"]
        if htr:
            parts.append(f"River HTR {htr['r2']:.3f} ({auto['r2'] - htr['r2']:+.3f})")
        if best:
            parts.append(f"MOA's best {best[0]} {best[1]:.3f} ({auto['r2'] - best[1]:+.3f})")
        if htr:
            speeds = [f"{label.split()[0]} {run['samples_per_second'] / htr['samples_per_second']:.1f}x"
                      for label, run in runs.items() if label.endswith(f" {AUTO_KIB}K")
                      and not label.startswith(AUTO) and "samples_per_second" in run]
            parts.append("speed at 32K against River HTR: " + ", ".join(speeds))
        lines.append(f"- {name}: " + "; ".join(parts))
    return "\n".join(lines)


def failures(results: dict) -> str:
    return "\n".join(f"- {name}, {label}: {run['error']}" for name, result in results.items()
                     for label, run in result["runs"].items() if "error" in run) or "none"


def report(results: dict) -> str:
    return "\n\n".join([
        "R² (prequential over every row; 1 is exact, 0 the mean, negative worse than the mean):",
        table(results, "r2", ".3f"), "RMSE:", table(results, "rmse", ".4g"), "MAE:", table(results, "mae", ".4g"),
        "Samples per second (the learning pass; ours on the compiled engine):",
        table(results, "samples_per_second", ",.0f"), "Targets:", targets(results),
        "Runs that failed (\"-\" in the tables):", failures(results)])


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="rows of every generated stream (default 20000; --quick 2000)")
    parser.add_argument("--streams", nargs="+", choices=STREAMS, metavar="NAME")
    parser.add_argument("--learners", nargs="+", choices=[*online_learners(REGRESSION), AUTO], metavar="NAME",
                        default=[*online_learners(REGRESSION), AUTO])
    parser.add_argument("--quick", action="store_true", help="a smoke run (module docstring: QUICK)")
    parser.add_argument("--no-moa", action="store_true", help="leave out MOA (CapyMOA)")
    parser.add_argument("--no-river", action="store_true", help="leave out River")
    parser.add_argument("--out", type=Path, help="markdown file for the tables")
    args = parser.parse_args(argv)
    args.rows = args.rows or (QUICK["rows"] if args.quick else 20_000)
    args.streams = args.streams or (list(QUICK["streams"]) if args.quick else list(STREAMS))
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    board = load_board(BOARD)
    per_stream = (sum(1 if name == AUTO else len(BUDGETS_KIB) for name in args.learners)
                  + (0 if args.no_river else len(river_models())) + (0 if args.no_moa else N_MOA))
    start, measured_commit = time.perf_counter(), commit()
    with tqdm(total=per_stream * len(args.streams), unit="run") as bar:
        results = {name: run_stream(name, args, board, bar) for name in args.streams}
    text = report(results)
    print(text)
    if args.out:
        args.out.write_text(markdown_page(text, argv, time.perf_counter() - start, measured_commit,
                                          "benchmarks/bench_regression.py"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
