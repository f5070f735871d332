"""Benchmark: prequential accuracy under concept drift, every online learner of edgestream at 8, 32 and 128 KiB of
RAM beside River and MOA, on the same rows in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_quality.py [--rows N] [--streams NAME ...] [--quick] [--no-moa]
                                                 [--no-river] [--learners NAME ...] [--out FILE] [--plots DIR]
                                                 [--workers N] [--seed-offset K]

Streams (``STREAMS``; seeds chosen here, not in the tests): SEA with three abrupt changes, Agrawal function 0 -> 2
(MOA's -f 1 -> -f 3) changing abruptly at the middle, STAGGER with five abrupt changes that bring every concept back,
LED whose seven segments move to irrelevant columns at the middle, the rotating hyperplane and RandomRBF with 50
moving centroids (gradual drift), Gaussian blobs whose five classes arrive one after another (class increments), all
``edgestream.data.make_stream`` streams of ``--rows`` rows (default 20,000), and ``elec.csv`` from ``../shared/data``
(label ``class``, all 45,312 rows; skipped if absent). ``--seed-offset K`` adds K to every generated stream's seed:
the same kinds of change on streams the defaults never saw.

edgestream: each learner is trained as ``edgestream fit --learner NAME --ram R --search-rows S --board stm32f411``
trains it (:func:`edgestream.train.train`): the search scores its candidates that fit R on the first S rows
(a tenth of the stream, at least the 1,000 rows that set the bin edges) and the chosen one learns the whole stream
test-then-train on the compiled engine. "auto 32K" is ``--learner auto --ram 32KiB``: the search over every online
learner's grid at once. A learner with nothing that fits a budget shows "-".

River (``river``): ``HoeffdingTreeClassifier()``, ``HoeffdingAdaptiveTreeClassifier(seed=1)`` and
``ARFClassifier(n_models=10, seed=1)``, through ``edgestream.evaluate.prequential`` (one Python call per row).

MOA (``capymoa``, Java 17): ``HoeffdingTree`` with a 32 KiB limit (``-m 32768``; the limit is checked every 1,000
rows, ``-e 1000``, since at MOA's default of every 1,000,000 rows a stream this short would never meet it, and
MOA measures memory through its ``sizeofag`` Java agent, which the script puts on the JVM's command line),
``HoeffdingAdaptiveTree``, ``AdaptiveRandomForest`` with 10 trees and ``StreamingGradientBoostedTrees``, all at
CapyMOA's defaults otherwise. Each stream is written to a temporary ARFF file and MOA's own prequential loop
(``EfficientEvaluationLoops.PrequentialEvaluation``, which CapyMOA's ``prequential_evaluation`` calls for a MOA
learner on an ``ARFFStream``) reads it, so no row passes through Python. A folder named ``moa`` in the working
directory hides MOA's Java package from CapyMOA: run from the repository root.

Every learner sees the same rows in the same order; accuracy is test-then-train over all rows. Recovery (Agrawal
and SEA): for each abrupt change, the rows after it until the accuracy of the last ``RECOVERY_WINDOW`` rows is back
within ``RECOVERY_TOLERANCE`` of a reference level (so 500 is the least, "never" if it is not back before the next
change or the end; a change with fewer rows on either side is not measured). Two references, two tables:

* **before**: the learner's accuracy over the ``RECOVERY_WINDOW`` rows before the change;
* **reachable**: the lower of that and the level the new concept allows the same learner: a learner of the same
  configuration (each edgestream learner the one its search chose, bins from the concept's own first rows; River
  and MOA as above) learns the rows of the new concept alone, from scratch, test-then-train, and its accuracy
  over the concept's last ``RECOVERY_WINDOW`` rows is that level. A harder concept (Agrawal's function 3 after
  function 1, SEA's threshold 9.5 after 7) can leave a learner below its old level for good; "before" then reads
  "never" for a learner that has adapted fully, "reachable" does not (it still reads "never" for one that stays
  below what it would reach if it forgot the old concept at once).

The accuracy-over-time plot of each stream
(window of ``WINDOW`` rows; each edgestream learner at 32 KiB, auto and the peers; changes as dotted lines) goes to
``--plots``, the tables to stdout and, as markdown with the command and the machine, to ``--out``. ``--quick`` is a
smoke run of 2,000 rows of SEA, Agrawal and elec (cut to as many) that writes no files unless asked to.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from edgestream.boards import load_board
from edgestream.data import concept_of_rows, load_csv, make_stream
from edgestream.evaluate import PrequentialResult, RiverAdapter, no_prediction, plot_curves, prequential
from edgestream.online import BINS_ROWS
from edgestream.search import AUTO, online_learners
from edgestream.train import train

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BOARD = "stm32f411"
BUDGETS_KIB = (8, 32, 128)
AUTO_KIB = 32
MOA_HT_BYTES = 32 * 1024
WINDOW = 500  # rows per point of the plotted accuracy curves
RECOVERY_WINDOW = 500
RECOVERY_TOLERANCE = 0.02
RECOVERY_STREAMS = ("agrawal", "sea")
QUICK_ROWS = 2000
QUICK_STREAMS = ("sea", "agrawal", "elec")  # a change, a recovery, a file


@dataclass
class Stream:
    title: str
    generator: str | None  # a make_stream name, or None for a data file
    seed: int = 0
    options: dict = field(default_factory=dict)
    concepts: int = 1  # equal blocks of the generated stream; the changes are at their boundaries


STREAMS = {
    "sea": Stream("SEA, 3 abrupt changes", "sea", 11, concepts=4),
    "agrawal": Stream("Agrawal F1 -> F3, abrupt at the middle", "agrawal", 12, {"functions": (0, 2)}, 2),
    "stagger": Stream("STAGGER, 5 abrupt recurring changes", "stagger", 13, concepts=6),
    "led": Stream("LED, 7 segments moved at the middle", "led", 14, concepts=2),
    "hyperplane": Stream("Hyperplane, gradual", "hyperplane", 15),
    "rbf": Stream("RandomRBF, 50 moving centroids", "rbf", 16),
    "blobs": Stream("Blobs, 5 classes arriving one by one", "blobs", 17,
                    {"incremental": True, "n_classes": 5, "n_features": 6, "distance": 2.0}, 4),
    "elec": Stream("Electricity (elec.csv)", None),
}


def load(name: str, rows: int, file_rows: int | None, seed_offset: int = 0):
    """``(X, y, change rows)`` of a stream (a generated one with its seed plus ``seed_offset``), or None when its
    file is absent."""
    stream = STREAMS[name]
    if stream.generator is None:
        path = DATA / "elec.csv"
        if not path.is_file():
            print(f"note: {path} is absent, {name} skipped", file=sys.stderr)
            return None
        X, y, _ = load_csv(path, "class")
        return X[:file_rows], y[:file_rows], []
    X, y = make_stream(stream.generator, rows, stream.seed + seed_offset, **stream.options)
    changes = np.flatnonzero(np.diff(concept_of_rows(rows, stream.concepts))) + 1
    return X, y, changes.tolist()


def edgestream_runs(X, y, names, board, workers, bar) -> tuple[dict, dict, dict]:
    """Prequential results of the learners ``names`` at every budget (auto at its own), trained as ``fit --ram``
    trains them; also the configuration each search chose, ``(learner, params)`` by label, and what auto chose."""
    search_rows = max(len(y) // 10, min(BINS_ROWS, len(y)))
    runs, configs, chosen = {}, {}, {}
    jobs = [(name, kib) for name in names for kib in ((AUTO_KIB,) if name == AUTO else BUDGETS_KIB)]
    for name, kib in jobs:
        bar.set_postfix_str(f"{name} {kib}K")
        try:
            trained = train(name, X, y, {}, board, ram=kib * 1024, search_rows=search_rows, workers=workers)
        except ValueError:  # nothing of this learner fits the budget
            runs[f"{name} {kib}K"] = None
        else:
            runs[f"{name} {kib}K"] = trained.prequential
            configs[f"{name} {kib}K"] = (trained.search.learner, trained.search.budget.params)
            if name == AUTO:
                chosen = {"learner": trained.search.learner, **trained.search.budget.config}
        bar.update()
    return runs, configs, chosen


def fresh_levels(X, y, spans, configs: dict, river: bool, moa: bool, bar) -> dict:
    """Per run label, per span: the accuracy over the span's last ``RECOVERY_WINDOW`` rows of the same learner
    trained from scratch on the span's rows alone (the module docstring's "reachable" level)."""
    levels: dict = {}
    for change, end in spans:
        Xs, ys = X[change:end], y[change:end]
        bar.set_postfix_str(f"from scratch after row {change:,}")
        runs = {label: train(learner, Xs, ys, params).prequential for label, (learner, params) in configs.items()}
        if river:
            runs.update(river_runs(Xs, ys, None))
        if moa:
            runs.update(moa_runs(Xs, ys, None))
        for label, result in runs.items():
            levels.setdefault(label, []).append(float(hits_of(result, ys)[-RECOVERY_WINDOW:].mean()))
    return levels


def river_models() -> dict:
    from river import forest, tree

    return {"River HT": lambda: tree.HoeffdingTreeClassifier(),
            "River HAT": lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=1),
            "River ARF10": lambda: forest.ARFClassifier(n_models=10, seed=1)}


def river_runs(X, y, bar) -> dict:
    names = [f"x{j}" for j in range(X.shape[1])]
    runs = {}
    for label, make in river_models().items():
        if bar:
            bar.set_postfix_str(label)
        runs[label] = prequential(RiverAdapter(make(), names), X, y, window=WINDOW)
        if bar:
            bar.update()
    return runs


def moa_learners(schema) -> dict:
    from capymoa.classifier import (AdaptiveRandomForestClassifier, HoeffdingAdaptiveTree, HoeffdingTree,
                                    StreamingGradientBoostedTrees)

    return {"MOA HT 32K": HoeffdingTree(schema, max_byte_size=MOA_HT_BYTES, memory_estimate_period=1000),
            "MOA HAT": HoeffdingAdaptiveTree(schema),
            "MOA ARF10": AdaptiveRandomForestClassifier(schema, ensemble_size=10),
            "MOA SGBT": StreamingGradientBoostedTrees(schema)}


N_MOA = 4


def start_moa() -> None:
    """Start CapyMOA's JVM with MOA's memory meter, the ``sizeofag`` Java agent (without it MOA measures every model
    as 0 bytes and a memory limit never binds). CapyMOA's moa.jar holds the agent's classes but no agent manifest, so
    they are copied into a jar of their own that names them."""
    import importlib.util
    import zipfile

    moa_jar = Path(importlib.util.find_spec("capymoa").submodule_search_locations[0]) / "jar" / "moa.jar"
    agent = Path(tempfile.gettempdir()) / f"edgestream-sizeofag-{os.getuid()}.jar"
    with zipfile.ZipFile(moa_jar) as source, zipfile.ZipFile(agent, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nPremain-Class: sizeof.agent.SizeOfAgent\n\n")
        for name in source.namelist():
            if name.startswith("sizeof/agent/") and name.endswith(".class"):
                jar.writestr(name, source.read(name))
    os.environ["CAPYMOA_JVM_ARGS"] = f"{os.environ.get('CAPYMOA_JVM_ARGS', '-Xmx8g -Xss10M')} -javaagent:{agent}"
    import capymoa  # noqa: F401  (starts the JVM with these arguments)


def moa_runs(X, y, bar) -> dict:
    """MOA's own prequential loop over the stream written as ARFF (class values are the label indices)."""
    from capymoa.evaluation import prequential_evaluation
    from capymoa.stream import ARFFStream

    classes, index = np.unique(y, return_inverse=True)
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stream.arff"
        write_arff(path, X, index, len(classes))
        stream = ARFFStream(path)
        for label, learner in moa_learners(stream.get_schema()).items():
            if bar:
                bar.set_postfix_str(label)
            start = time.perf_counter()
            result = prequential_evaluation(stream, learner, window_size=WINDOW, store_predictions=True)
            predictions = np.asarray(result.predictions(), dtype=np.int64)  # class indices, -1 for none
            labels = np.where(predictions >= 0, classes[np.maximum(predictions, 0)], no_prediction(y.dtype))
            runs[label] = as_result(predictions == index, labels, time.perf_counter() - start)
            if bar:
                bar.update()
    return runs


def write_arff(path: Path, X, labels, n_classes: int) -> None:
    with open(path, "w") as handle:
        handle.write("@relation stream\n")
        handle.writelines(f"@attribute x{j} numeric\n" for j in range(X.shape[1]))
        handle.write(f"@attribute class {{{','.join(map(str, range(n_classes)))}}}\n@data\n")
        np.savetxt(handle, np.column_stack([X, labels]), fmt=["%.17g"] * X.shape[1] + ["%d"], delimiter=",")


def as_result(hits: np.ndarray, predictions, seconds: float) -> PrequentialResult:
    curve = [float(hits[i:i + WINDOW].mean()) for i in range(0, len(hits), WINDOW)]
    return PrequentialResult(len(hits), int(hits.sum()), WINDOW, curve, predictions, seconds)


def hits_of(result: PrequentialResult, y) -> np.ndarray:
    return np.asarray(result.predictions == y, dtype=bool)


def recovery(hits: np.ndarray, change: int, end: int, reachable: float | None = None) -> int | None:
    """Rows after ``change`` until the moving accuracy is back near its level before it, or near ``reachable``
    if that is lower (see the module docstring); None if not before ``end``."""
    w = RECOVERY_WINDOW
    level = hits[change - w:change].mean()
    if reachable is not None:
        level = min(level, reachable)
    sums = np.concatenate([[0], np.cumsum(hits[change:end])])
    moving = (sums[w:] - sums[:-w]) / w  # moving[k]: accuracy of rows change + k .. change + k + w - 1
    back = np.flatnonzero(moving >= level - RECOVERY_TOLERANCE)
    return int(back[0]) + w if len(back) else None


def measurable(changes: list[int], n: int) -> list[tuple[int, int]]:
    """(change, end of its concept) of the changes with a window of rows before and after them."""
    spans = zip(changes, [*changes[1:], n])
    return [(change, end) for change, end in spans if change >= RECOVERY_WINDOW and end - change >= RECOVERY_WINDOW]


def recoveries(result: PrequentialResult | None, y, spans: list[tuple[int, int]],
               reachable: list[float] | None = None) -> list[int | None] | None:
    if result is None:
        return None
    hits = hits_of(result, y)
    levels = reachable or [None] * len(spans)
    return [recovery(hits, change, end, level) for (change, end), level in zip(spans, levels)]


def run_stream(name, args, board, bar) -> dict | None:
    loaded = load(name, args.rows, args.file_rows, args.seed_offset)
    if loaded is None:
        return None
    X, y, changes = loaded
    bar.set_description(name)
    runs, configs, chosen = edgestream_runs(X, y, args.learners, board, args.workers, bar)
    if not args.no_river:
        runs.update(river_runs(X, y, bar))
    if not args.no_moa:
        runs.update(moa_runs(X, y, bar))
    if args.plots:
        plot(name, runs, changes, args.plots)
    spans = measurable(changes, len(y)) if name in RECOVERY_STREAMS else []
    recovered, reachable, levels = {}, {}, {}
    if spans:
        levels = fresh_levels(X, y, spans, configs, not args.no_river, not args.no_moa, bar)
        recovered = {label: recoveries(result, y, spans) for label, result in runs.items()}
        reachable = {label: recoveries(result, y, spans, levels.get(label)) for label, result in runs.items()}
    return {"rows": len(y), "spans": spans, "runs": runs, "auto": chosen, "recovery": recovered,
            "reachable": reachable, "levels": levels}


def plot(name: str, runs: dict, changes: list[int], folder: Path) -> None:
    ours = tuple(f"{name} " for name in [*online_learners(), AUTO])
    shown = {label: result for label, result in runs.items()
             if result is not None and (not label.startswith(ours) or label.endswith(f" {AUTO_KIB}K"))}
    folder.mkdir(parents=True, exist_ok=True)
    plot_curves(shown, folder / f"{name}.png", title=f"{STREAMS[name].title}: accuracy per {WINDOW} rows",
                changes=changes)


def columns(results: dict) -> list[str]:
    labels = []
    for measured in results.values():
        labels += [label for label in measured["runs"] if label not in labels]
    return labels


def accuracy_table(results: dict) -> str:
    labels = columns(results)
    lines = [row(["stream (rows)", *labels]), row(["---"] + ["---:"] * len(labels))]
    for name, measured in results.items():
        cells = [f"{m.accuracy:.3f}" if m is not None else "-" for m in
                 (measured["runs"].get(label) for label in labels)]
        lines.append(row([f"{name} ({measured['rows']:,})", *cells]))
    return "\n".join(lines)


def auto_lines(results: dict) -> str:
    return "\n".join(f"- {name}: {measured['auto'].get('learner', '-')} ("
                     + ", ".join(f"{k}={v}" for k, v in measured["auto"].items() if k != "learner") + ")"
                     for name, measured in results.items())


def targets_table(results: dict) -> str:
    """auto at 32 KiB against MOA's Hoeffding tree at 32 KiB and MOA's best ensemble (the issue's targets)."""
    lines = [row(["stream", "auto 32K", "MOA HT 32K", "auto - HT", "MOA best ensemble", "auto - best"]),
             row(["---"] + ["---:"] * 5)]
    for name, measured in results.items():
        runs = measured["runs"]
        auto, ht = runs.get(f"{AUTO} {AUTO_KIB}K"), runs.get("MOA HT 32K")
        ensembles = {label: runs[label] for label in ("MOA ARF10", "MOA SGBT") if runs.get(label) is not None}
        if auto is None or ht is None or not ensembles:
            continue
        best = max(ensembles, key=lambda label: ensembles[label].accuracy)
        lines.append(row([name, f"{auto.accuracy:.3f}", f"{ht.accuracy:.3f}",
                          f"{100 * (auto.accuracy - ht.accuracy):+.1f}", f"{best[4:]} {ensembles[best].accuracy:.3f}",
                          f"{100 * (auto.accuracy - ensembles[best].accuracy):+.1f}"]))
    return "\n".join(lines) if len(lines) > 2 else ""


def recovery_table(results: dict, key: str = "recovery") -> str:
    """Rows to recover per change and run; with ``key="reachable"`` each cell also gives the level the same
    learner reaches on the new concept from scratch."""
    measured = {name: m for name, m in results.items() if m["recovery"]}
    if not measured:
        return ""
    labels = columns(measured)
    lines = [row(["stream", "change at row", *labels]), row(["---", "---:"] + ["---:"] * len(labels))]
    for name, m in measured.items():
        for i, (change, _) in enumerate(m["spans"]):
            cells = [rows_text(m[key].get(label), i) + level_text(m["levels"].get(label) if key == "reachable"
                                                                   else None, i) for label in labels]
            lines.append(row([name, f"{change:,}", *cells]))
    return "\n".join(lines)


def rows_text(found, i: int) -> str:
    if found is None:
        return "-"
    return "never" if found[i] is None else f"{found[i]:,}"


def level_text(levels, i: int) -> str:
    return f" ({levels[i]:.3f})" if levels else ""


def row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def report(results: dict) -> str:
    parts = ["Prequential accuracy (test-then-train over all rows):", accuracy_table(results)]
    if any(measured["auto"] for measured in results.values()):  # auto was among the learners run
        parts += ["auto at 32 KiB chose:", auto_lines(results)]
    targets = targets_table(results)
    if targets:
        parts += ["Targets: auto at 32 KiB against MOA's Hoeffding tree at 32 KiB and MOA's best ensemble "
                  "(points):", targets]
    recovered = recovery_table(results)
    if recovered:
        parts += [f"Rows after each abrupt change until the accuracy of the last {RECOVERY_WINDOW} rows is back "
                  f"within {100 * RECOVERY_TOLERANCE:g} points of the {RECOVERY_WINDOW} rows before it:", recovered,
                  f"The same, against the lower of that level and the reachable one (in brackets: the accuracy "
                  f"over the new concept's last {RECOVERY_WINDOW} rows of the same learner trained on that concept "
                  f"alone, from scratch):", recovery_table(results, "reachable")]
    return "\n\n".join(parts)


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def markdown_page(text: str, argv: list[str], seconds: float, measured_commit: str,
                  script: str = "benchmarks/bench_quality.py") -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join([f".venv/bin/python {script}", *argv])
    return (f"# {script}\n\nMeasured {date} on {os.cpu_count()} cores (load average {load:.1f} "
            f"at the end), Python {platform.python_version()}, at commit {measured_commit} (HEAD at the start); the "
            f"run took {seconds:,.0f} s. Command:\n\n"
            f"```sh\n{command}\n```\n\n{text}\n")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="rows of every generated stream (default 20000; --quick 2000)")
    parser.add_argument("--file-rows", type=int, help="keep the first N rows of a data file (default all; --quick: "
                                                      "as --rows)")
    parser.add_argument("--streams", nargs="+", choices=list(STREAMS), metavar="NAME",
                        help=f"streams to run (default all: {' '.join(STREAMS)}; --quick: {' '.join(QUICK_STREAMS)})")
    parser.add_argument("--learners", nargs="+", choices=[*online_learners(), AUTO], metavar="NAME",
                        default=[*online_learners(), AUTO], help="edgestream learners to run (default all and auto)")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run of {QUICK_ROWS} rows per stream")
    parser.add_argument("--no-moa", action="store_true", help="leave out MOA (CapyMOA)")
    parser.add_argument("--no-river", action="store_true", help="leave out River")
    parser.add_argument("--out", type=Path, help="markdown file for the tables (default "
                                                 "benchmarks/results_quality.md; --quick: none)")
    parser.add_argument("--plots", type=Path, help="folder for one PNG per stream (default "
                                                   "benchmarks/results/quality; --quick: none)")
    parser.add_argument("--seed-offset", type=int, default=0, help="add this to every generated stream's seed: "
                        "the same kinds of change on streams the defaults never saw (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes of each search (default 1)")
    args = parser.parse_args(argv)
    if args.rows is None:
        args.rows = QUICK_ROWS if args.quick else 20_000
    if args.quick:
        args.file_rows = args.file_rows or args.rows
        args.streams = args.streams or list(QUICK_STREAMS)
    else:
        args.out = args.out or ROOT / "benchmarks" / "results_quality.md"
        args.plots = args.plots or ROOT / "benchmarks" / "results" / "quality"
    args.streams = args.streams or list(STREAMS)
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if not args.no_moa:
        if Path("moa").is_dir():
            print("warning: a folder named moa here hides MOA's Java package from CapyMOA", file=sys.stderr)
        start_moa()
    board = load_board(BOARD)
    ours = sum(1 if name == AUTO else len(BUDGETS_KIB) for name in args.learners)
    per_stream = ours + (0 if args.no_river else len(river_models())) + (0 if args.no_moa else N_MOA)
    start, measured_commit = time.perf_counter(), commit()
    results = {}
    with tqdm(total=per_stream * len(args.streams), unit="run") as bar:
        for name in args.streams:
            measured = run_stream(name, args, board, bar)
            if measured is not None:
                results[name] = measured
    text = report(results)
    print(text)
    if args.out:
        args.out.write_text(markdown_page(text, argv, time.perf_counter() - start, measured_commit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
