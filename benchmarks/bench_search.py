"""Benchmark: the configuration the accuracy-driven search chooses on a stream's first rows against the best of its
grid over the whole stream, for the search's score and for the score of its first synthetic change alone.

Run from the repository root::

    .venv/bin/python benchmarks/bench_search.py [--streams NAME ...] [--seed-offset K] [--rows N] [--workers N]
                                                [--out FILE]

The streams are ``benchmarks/bench_quality.py``'s (its seeds plus ``--seed-offset``; ``elec.csv`` when present).
Per stream, every configuration of every online learner that fits 32 KiB of RAM on the stm32f411 (the candidates
of ``fit --learner auto --ram 32KiB``) is

* scored as :mod:`edgestream.search` scores it on the stream's first tenth (as ``bench_quality.py``'s search
  rows): one test-then-train run over the rows and their two replays (:func:`edgestream.search.with_changes`);
  the same run gives the score of the earlier rule, the rows and the first replay alone (a run is causal, so
  the first two thirds are exactly that rule's run);
* trained test-then-train over the whole stream, as ``fit`` trains the chosen one.

Each rule chooses as the search does (the highest score, ties to the smaller RAM, then to the earlier candidate).
Printed: the grid's best whole-stream accuracy, the learner and whole-stream accuracy each rule chooses, and each
rule's shortfall; at the end the mean shortfall over the streams. The whole-stream run is what the device would
see; the search never sees it.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quality import AUTO_KIB, BOARD, ROOT, STREAMS, commit, load, markdown_page  # noqa: E402

from edgestream import learners  # noqa: E402
from edgestream.boards import load_board  # noqa: E402
from edgestream.budget import configurations  # noqa: E402
from edgestream.data import device_input  # noqa: E402
from edgestream.evaluate import prequential  # noqa: E402
from edgestream.online import BINS_ROWS, check_stream, start_online  # noqa: E402
from edgestream.search import online_learners, with_changes  # noqa: E402

RULES = ("first change", "both changes")


def hits(learner: str, params: dict, X, y, classes) -> np.ndarray:
    model = learners.get(learner).make(**params)
    X = device_input(X, model.input_dtype)
    start_online(model, X, classes, BINS_ROWS)
    return prequential(model, X, y).predictions == y


def measure(job) -> tuple[dict, float]:
    """A candidate's score under each rule on the search rows, and its whole-stream accuracy."""
    learner, params, X_search, y_search, X, y, classes = job
    rows, labels = with_changes(X_search, y_search, classes)
    n = len(y_search)
    run = hits(learner, params, rows, labels, classes)
    on_rows, first, second = run[:n].mean(), run[n:2 * n].mean(), run[2 * n:].mean()
    scores = {"first change": (on_rows + first) / 2, "both changes": (on_rows + (first + second) / 2) / 2}
    return scores, float(hits(learner, params, X, y, classes).mean())


def stream_row(name: str, args, board, bar) -> dict | None:
    loaded = load(name, args.rows, None, args.seed_offset)
    if loaded is None:
        return None
    X, y, _ = loaded
    classes = check_stream(X, y)
    n = max(len(y) // 10, min(BINS_ROWS, len(y)))
    candidates = [(learner, budget) for learner in online_learners()
                  for budget in configurations(learner, board, X.shape[1], len(classes), AUTO_KIB * 1024, None,
                                               "speed", learners.get(learner).search_grid) if budget.fits]
    jobs = [(learner, budget.params, X[:n], y[:n], X, y, classes) for learner, budget in candidates]
    bar.set_postfix_str(f"{name}: {len(jobs)} candidates")
    with ProcessPoolExecutor(args.workers) as pool:
        measured = list(pool.map(measure, jobs))
    bar.update()
    row = {"stream": name, "candidates": len(jobs), "best": max(acc for _, acc in measured)}
    for rule in RULES:
        order = sorted(range(len(jobs)), key=lambda i: (-measured[i][0][rule], candidates[i][1].ram_bytes, i))
        row[rule] = (candidates[order[0]][0], measured[order[0]][1])
    return row


def table(rows: list[dict]) -> str:
    lines = ["| stream | candidates | best of the grid | " + " | ".join(f"{r}: chosen | {r}: short" for r in RULES)
             + " |", "| --- | ---: | ---: | " + " | ".join("--- | ---:" for _ in RULES) + " |"]
    for row in rows:
        cells = [row["stream"], str(row["candidates"]), f"{row['best']:.3f}"]
        for rule in RULES:
            learner, accuracy = row[rule]
            cells += [f"{learner} {accuracy:.3f}", f"{100 * (row['best'] - accuracy):.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    means = [f"{100 * np.mean([row['best'] - row[rule][1] for row in rows]):.2f}" for rule in RULES]
    lines.append("| mean shortfall (points) | | | " + " | ".join(f"| {m}" for m in means) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", nargs="+", choices=list(STREAMS), default=list(STREAMS), metavar="NAME")
    parser.add_argument("--seed-offset", type=int, default=0, help="add this to every generated stream's seed")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of every generated stream (default 20000)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", type=Path, help="markdown file for the table")
    args = parser.parse_args(argv)
    start, measured_commit, board = time.perf_counter(), commit(), load_board(BOARD)
    with tqdm(total=len(args.streams), unit="stream") as bar:
        rows = [row for name in args.streams if (row := stream_row(name, args, board, bar)) is not None]
    text = table(rows)
    print(text)
    if args.out:
        args.out.write_text(markdown_page(text, argv, time.perf_counter() - start, measured_commit,
                                          "benchmarks/bench_search.py"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
