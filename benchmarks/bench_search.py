"""Benchmark: the configuration ``fit --learner L --ram R`` chooses on a stream's head, scored on the rest.

On streams the project never tuned on (new seeds), how often and by how much does what ``edgestream fit`` chooses
fall below the best of the same grid in hindsight, River's Hoeffding tree and MOA's Hoeffding tree at 32 KiB?

Run from the repository root::

    .venv/bin/python benchmarks/bench_search.py [--seeds N] [--seed-offset K] [--rows N] [--ram KIB ...]
                                                [--kinds KIND ...] [--streams NAME ...] [--learners NAME ...]
                                                [--no-grid] [--no-moa] [--quick] [--workers N] [--out FILE]

Streams (``CASES``), each with the ``--seeds N`` seeds K, K+1, ... (``--seed-offset K``; defaults 3 and 1000), each
cut to its first ``--rows`` rows (default 20,000) after shuffling or generation:

* **stationary**: ``pendigits.train.csv`` and ``optdigits.train.csv`` (label in the first column, no header) and
  ``weather.csv`` (label ``target``) from ``../shared/data`` (a missing file is skipped with a note), and
  scikit-learn's breast cancer, wine, digits and iris sets, their rows shuffled with the seed;
* **abrupt**: ``bench_quality.py``'s SEA (three changes) and Agrawal F1 -> F3; **gradual**: its rotating
  hyperplane and RandomRBF; **recurring**: its STAGGER; generated with its seed plus the seed (its ``load`` with
  ``seed_offset``);
* **increment** (classes arrive over time): pendigits, optdigits, digits, wine and iris, their rows split 70/30 at
  random with the seed and the 70 % sorted by class (stable); and ``make_stream("blobs", incremental=True,
  n_classes=5 | 8, n_features=6, distance=2.0)`` with the seed, 30 % of its rows held out at random and the rest
  kept in stream order (each class arrives after the previous ones).

Each stream is cut in two. Stationary and drift streams: the **head** is the first tenth of the rows, at least
1,000 (half of them for a set of fewer than 2,000 rows), the **rest** follows it. Increment streams: the head is
the whole training part (sorted or in stream order), the rest the held-out part. Scores are accuracies on the rest:
test-then-train over its rows in order (``edgestream.train.evaluate_online``, what ``edgestream evaluate`` does)
on stationary and drift streams, and predictions without learning on the held-out rows of increment streams.

* **chosen**: ``train(L, X_head, y_head, {}, board, ram=R)`` on the stm32f411, exactly ``edgestream fit --learner
  L --ram R`` on the head (the search scores every candidate of L's grid that fits R on the whole head, the chosen
  one learns the head test-then-train), for every online learner at each ``--ram`` (default 8 and 32 KiB) and for
  ``auto`` at 32 KiB (every online learner's grid); the trained model is then scored on the rest.
* **grid best**: every configuration of the same grid that fits the same RAM (``edgestream.budget.configurations``
  with the learner's ``search_grid``; for auto every learner's), trained on the head as ``fit`` trains the chosen
  one and scored on the rest the same way; the highest score. It is the best choice in hindsight; the chosen one
  is among the candidates, so the shortfall is never negative. ``--no-grid`` skips it (the expensive part).
* **River HT**: River's ``HoeffdingTreeClassifier()`` learns the head test-then-train (through
  ``edgestream.evaluate.prequential``) and is scored on the rest the same way, the same model going on.
* **MOA HT 32K**: MOA's ``HoeffdingTree`` as ``bench_quality.py`` configures it (32 KiB limit, checked every 1,000
  rows), through CapyMOA: on stationary and drift streams MOA's own prequential loop over head + rest from an ARFF
  file, its accuracy over the rest's rows; on increment streams it learns the head row by row and predicts the
  held-out rows. ``--no-moa``, or CapyMOA or Java missing (a note is printed), leaves the column empty.

Printed, and with ``--out`` written as markdown: a row per stream, seed and learner@RAM (the chosen configuration
in short: each parameter's initials); then per kind and learner@RAM, for each reference, in how many of the
streams x seeds the chosen score is below it (strictly), the mean and the worst shortfall in points (reference
minus chosen: negative is ahead); and per kind auto at 32 KiB against MOA HT 32K at its worst stream and seed. A
learner with nothing that fits a budget shows "-" and is left out of the counts. ``--quick`` is a smoke run: one
seed, 3,000 rows, five streams (iris, SEA, STAGGER, wine sorted by class, 5 blobs), grid included.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quality import (AUTO_KIB, BOARD, DATA, WINDOW, commit, load, markdown_page, moa_learners,  # noqa: E402
                           river_models, start_moa, write_arff)

from edgestream import learners  # noqa: E402
from edgestream.boards import load_board  # noqa: E402
from edgestream.budget import configurations  # noqa: E402
from edgestream.data import device_input, load_csv, make_stream  # noqa: E402
from edgestream.evaluate import RiverAdapter, prequential  # noqa: E402
from edgestream.online import BINS_ROWS, check_stream, start_online  # noqa: E402
from edgestream.search import AUTO, online_learners  # noqa: E402
from edgestream.train import evaluate_online, train  # noqa: E402

KINDS = ("stationary", "abrupt", "gradual", "recurring", "increment")
FILES = {"pendigits": ("pendigits.train.csv", 0), "optdigits": ("optdigits.train.csv", 0),
         "weather": ("weather.csv", "target")}  # file and label column, in ../shared/data
SKLEARN = ("breast_cancer", "wine", "digits", "iris")
CASES = ([("stationary", name) for name in [*FILES, *SKLEARN]]
         + [("abrupt", "sea"), ("abrupt", "agrawal"), ("gradual", "hyperplane"), ("gradual", "rbf"),
            ("recurring", "stagger")]
         + [("increment", name) for name in ("pendigits", "optdigits", "digits", "wine", "iris", "blobs5", "blobs8")])
BUDGETS_KIB = (8, 32)
TRAIN_SHARE = 0.7  # of an increment stream's rows; the rest is held out
QUICK = {"rows": 3000, "seeds": 1, "cases": [("stationary", "iris"), ("abrupt", "sea"), ("recurring", "stagger"),
                                             ("increment", "wine"), ("increment", "blobs5")]}
REFERENCES = ("grid best", "River HT", "MOA HT 32K")


@dataclass
class Split:
    """A stream cut in two: the head that ``fit`` sees and the rest it is scored on (``online``: test-then-train,
    else predictions of the held-out rows)."""

    X_head: np.ndarray
    y_head: np.ndarray
    X_rest: np.ndarray
    y_rest: np.ndarray
    online: bool


def real_set(name: str):
    """``(X, y)`` of a data file or a scikit-learn set, or None when the file is absent."""
    if name in FILES:
        file, label = FILES[name]
        if not (DATA / file).is_file():
            print(f"note: {DATA / file} is absent, {name} skipped", file=sys.stderr)
            return None
        X, y, _ = load_csv(DATA / file, label, no_header=label == 0)
        return X, y
    import sklearn.datasets

    return getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)


def split(kind: str, name: str, seed: int, rows: int) -> Split | None:
    """The head and the rest of a stream at a seed (module docstring), or None when its file is absent."""
    rng = np.random.default_rng(seed)
    if name.startswith("blobs"):
        X, y = make_stream("blobs", rows, seed, incremental=True, n_classes=int(name[5:]), n_features=6,
                           distance=2.0)
        held = np.zeros(len(y), dtype=bool)
        held[rng.permutation(len(y))[:len(y) - int(TRAIN_SHARE * len(y))]] = True
        return Split(X[~held], y[~held], X[held], y[held], online=False)
    if kind in ("stationary", "increment"):
        loaded = real_set(name)
        if loaded is None:
            return None
        order = rng.permutation(len(loaded[1]))[:rows]
        X, y = loaded[0][order], loaded[1][order]
    else:
        X, y, _ = load(name, rows, None, seed)
    if kind == "increment":
        n = int(TRAIN_SHARE * len(y))
        by_class = np.argsort(y[:n], kind="stable")
        return Split(X[:n][by_class], y[:n][by_class], X[n:], y[n:], online=False)
    n = max(len(y) // 10, min(BINS_ROWS, len(y) // 2))
    return Split(X[:n], y[:n], X[n:], y[n:], online=True)


def score(model, data: Split) -> float:
    """A trained edgestream model's accuracy on the rest (test-then-train, or predictions of held-out rows)."""
    if data.online:
        return evaluate_online(model, data.X_rest, data.y_rest).accuracy
    return float(np.mean(model.predict(device_input(data.X_rest, model.input_dtype)) == data.y_rest))


_DATA: Split | None = None  # a grid worker's stream


def _set_data(data: Split) -> None:
    global _DATA
    _DATA = data


def grid_score(candidate: tuple[str, str]) -> float:
    """The score of one configuration (learner, JSON parameters) trained on the head as ``fit`` trains the chosen
    one: bins from the first rows, then test-then-train over the head (run in a worker holding the stream)."""
    learner, params = candidate
    model = learners.get(learner).make(**json.loads(params))
    X = device_input(_DATA.X_head, model.input_dtype)
    start_online(model, X, check_stream(X, _DATA.y_head), BINS_ROWS)
    prequential(model, X, _DATA.y_head)
    return score(model, _DATA)


def fitting(learner: str, kib: int, board, data: Split) -> list[tuple[str, str]]:
    """(learner, JSON parameters) of every configuration of the learner's grid (auto: of every online learner's)
    that fits ``kib`` KiB, as the search lists its candidates."""
    names = online_learners() if learner == AUTO else [learner]
    n_classes = len(check_stream(data.X_head, data.y_head))
    return [(name, json.dumps(budget.params, sort_keys=True)) for name in names
            for budget in configurations(name, board, data.X_head.shape[1], n_classes, kib * 1024, None, "speed",
                                         learners.get(name).search_grid) if budget.fits]


def river_score(data: Split) -> float:
    """River's plain Hoeffding tree: learns the head, scored on the rest as ours are."""
    model = RiverAdapter(river_models()["River HT"](), [f"x{j}" for j in range(data.X_head.shape[1])])
    prequential(model, data.X_head, data.y_head)
    if data.online:
        return prequential(model, data.X_rest, data.y_rest).accuracy
    return float(np.mean([model.predict_one(x) == label for x, label in zip(data.X_rest, data.y_rest)]))


def moa_score(data: Split) -> float:
    """MOA's Hoeffding tree at 32 KiB on head + rest written as ARFF (class values are label indices)."""
    from capymoa.evaluation import prequential_evaluation
    from capymoa.stream import ARFFStream

    n = len(data.y_head)
    classes, index = np.unique(np.concatenate([data.y_head, data.y_rest]), return_inverse=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stream.arff"
        write_arff(path, np.vstack([data.X_head, data.X_rest]), index, len(classes))
        stream = ARFFStream(path)
        learner = moa_learners(stream.get_schema())["MOA HT 32K"]
        if data.online:
            result = prequential_evaluation(stream, learner, window_size=WINDOW, store_predictions=True)
            predictions = np.asarray(result.predictions(), dtype=np.int64)
            return float(np.mean(predictions[n:] == index[n:]))
        for _ in range(n):
            learner.train(stream.next_instance())
        return float(np.mean([learner.predict(stream.next_instance()) == label for label in index[n:]]))


def short(learner: str, params: dict, label: str) -> str:
    """A configuration in short: each parameter's initials and value (the learner too for auto)."""
    text = " ".join(f"{''.join(word[0] for word in key.split('_'))}={value}" for key, value in params.items()
                    if key not in ("features", "classes"))
    return f"{learner} {text}" if label.startswith(AUTO) else text


def run_case(kind: str, name: str, seed: int, args, board, bar) -> list[dict]:
    """One row per learner@RAM for a stream at a seed."""
    data = split(kind, name, seed, args.rows)
    if data is None:
        return []
    jobs = [(learner, kib) for learner in args.learners for kib in ((AUTO_KIB,) if learner == AUTO else args.ram)]
    base = {"kind": kind, "stream": name, "seed": seed}
    bar.set_postfix_str(f"{name} {seed}: references")
    refs = {"River HT": river_score(data), "MOA HT 32K": moa_score(data) if args.moa else None}
    rows, grids = [], {}
    for learner, kib in jobs:
        bar.set_postfix_str(f"{name} {seed}: fit {learner} {kib}K")
        row = {**base, "label": f"{learner}@{kib}K", **refs, "chosen": None, "config": "-", "grid best": None}
        try:
            trained = train(learner, data.X_head, data.y_head, {}, board, ram=kib * 1024, workers=args.workers,
                            race=args.race)
        except ValueError as error:  # nothing of this learner fits the budget
            print(f"note: {name} seed {seed} {learner}@{kib}K: {str(error).splitlines()[0]}", file=sys.stderr)
        else:
            found = trained.search
            row.update(chosen=score(trained.model, data), config=short(found.learner, found.budget.config, learner),
                       key=(found.learner, json.dumps(found.budget.params, sort_keys=True)))
            grids[row["label"]] = fitting(learner, kib, board, data) if args.grid else []
        rows.append(row)
    candidates = list(dict.fromkeys(c for grid in grids.values() for c in grid))
    if candidates:
        bar.set_postfix_str(f"{name} {seed}: grid of {len(candidates)}")
        with ProcessPoolExecutor(args.workers, initializer=_set_data, initargs=(data,)) as pool:
            scores = dict(zip(candidates, pool.map(grid_score, candidates, chunksize=4)))
        for row in rows:
            if grids.get(row["label"]):
                row["grid best"] = max(scores[c] for c in grids[row["label"]])
                if row["key"] in scores and abs(scores[row["key"]] - row["chosen"]) > 1e-12:
                    print(f"warning: {name} seed {seed} {row['label']}: fit scored {row['chosen']:.4f}, the same "
                          f"configuration in the grid {scores[row['key']]:.4f}", file=sys.stderr)
    bar.update()
    return rows


def cell(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def rows_table(rows: list[dict]) -> str:
    lines = ["| kind | stream | seed | learner@RAM | chosen config | chosen | " + " | ".join(REFERENCES) + " |",
             "| --- | --- | ---: | --- | --- | ---: | " + " | ".join("---:" for _ in REFERENCES) + " |"]
    for r in rows:
        chosen = "-" if r["chosen"] is None else cell(r["chosen"])
        lines.append(f"| {r['kind']} | {r['stream']} | {r['seed']} | {r['label']} | {r['config']} | {chosen} | "
                     + " | ".join(cell(r[ref]) for ref in REFERENCES) + " |")
    return "\n".join(lines)


def shortfalls(rows: list[dict], ref: str) -> np.ndarray:
    """Reference minus chosen, in points, where both were measured."""
    return np.array([100 * (r[ref] - r["chosen"]) for r in rows if r["chosen"] is not None and r[ref] is not None])


def summary_table(rows: list[dict]) -> str:
    head = " | ".join(f"below {ref} | mean | worst" for ref in REFERENCES)
    lines = [f"| kind | learner@RAM | {head} |", "| --- | --- | " + " | ".join("---: | ---: | ---:" for _ in REFERENCES)
             + " |"]
    groups = dict.fromkeys((r["kind"], r["label"]) for r in rows)
    for kind, label in groups:
        group = [r for r in rows if (r["kind"], r["label"]) == (kind, label)]
        cells = []
        for ref in REFERENCES:
            short_of = shortfalls(group, ref)
            cells += [f"{(short_of > 0).sum()}/{len(short_of)}", f"{short_of.mean():+.1f}", f"{short_of.max():+.1f}"] \
                if len(short_of) else ["", "", ""]
        lines.append(f"| {kind} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def auto_lines(rows: list[dict]) -> str:
    """Per kind, auto at 32 KiB against MOA HT 32K at its worst stream and seed."""
    lines = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        group = [r for r in rows if r["kind"] == kind and r["label"] == f"{AUTO}@{AUTO_KIB}K"
                 and r["chosen"] is not None and r["MOA HT 32K"] is not None]
        if group:
            worst = max(group, key=lambda r: r["MOA HT 32K"] - r["chosen"])
            below = sum(r["chosen"] < r["MOA HT 32K"] for r in group)
            lines.append(f"- {kind}: auto@32K is below MOA HT 32K on {below}/{len(group)}; worst "
                         f"{100 * (worst['MOA HT 32K'] - worst['chosen']):+.1f} points ({worst['stream']}, seed "
                         f"{worst['seed']}: {worst['chosen']:.3f} against {worst['MOA HT 32K']:.3f})")
    return "\n".join(lines)


def report(rows: list[dict]) -> str:
    parts = ["Accuracy on the rest (test-then-train; increment: held-out rows) of what `fit` chose on the head, and "
             "of the references:", rows_table(rows),
             "Per kind and learner@RAM, over the streams x seeds: how often the choice is below each reference, and "
             "the mean and worst shortfall in points (reference minus chosen; negative: ahead):", summary_table(rows)]
    auto = auto_lines(rows)
    if auto:
        parts += ["auto at 32 KiB against MOA HT 32K, worst stream and seed per kind:", auto]
    return "\n\n".join(parts)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per stream (default 3)")
    parser.add_argument("--seed-offset", type=int, default=1000, help="the first seed (default 1000)")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of every stream at most (default 20000)")
    parser.add_argument("--ram", type=int, nargs="+", default=list(BUDGETS_KIB), metavar="KIB",
                        help="RAM budgets of each learner in KiB (default 8 32; auto: 32)")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), metavar="KIND")
    parser.add_argument("--streams", nargs="+", choices=sorted({name for _, name in CASES}), metavar="NAME")
    parser.add_argument("--learners", nargs="+", choices=[*online_learners(), AUTO], metavar="NAME",
                        default=[*online_learners(), AUTO])
    parser.add_argument("--no-grid", dest="grid", action="store_false", help="skip the grid's best")
    parser.add_argument("--no-moa", dest="moa", action="store_false", help="leave out MOA (CapyMOA)")
    parser.add_argument("--no-race", dest="race", action="store_false",
                        help="the search scores every candidate to the end (search(race=False))")
    parser.add_argument("--quick", action="store_true", help="a smoke run (module docstring)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", type=Path, help="markdown file for the tables")
    args = parser.parse_args(argv)
    cases = QUICK["cases"] if args.quick else CASES
    if args.quick:
        args.rows, args.seeds, args.ram = QUICK["rows"], QUICK["seeds"], list(BUDGETS_KIB)
    args.cases = [(kind, name) for kind, name in cases if kind in args.kinds
                  and (args.streams is None or name in args.streams)]
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if args.moa:
        try:
            if importlib.util.find_spec("capymoa") is None:
                raise ImportError("capymoa is not installed")
            start_moa()
        except Exception as error:  # noqa: BLE001 (no capymoa, no Java: the column stays empty)
            print(f"note: MOA is left out ({type(error).__name__}: {error})", file=sys.stderr)
            args.moa = False
    start, measured_commit, board = time.perf_counter(), commit(), load_board(BOARD)
    seeds = range(args.seed_offset, args.seed_offset + args.seeds)
    rows = []
    with tqdm(total=len(args.cases) * len(seeds), unit="stream") as bar:
        for kind, name in args.cases:
            for seed in seeds:
                rows += run_case(kind, name, seed, args, board, bar)
    text = report(rows)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(markdown_page(text, argv, time.perf_counter() - start, measured_commit,
                                          "benchmarks/bench_search.py"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
