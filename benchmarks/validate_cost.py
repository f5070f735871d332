"""The cost models (:mod:`edgestream.costs`) checked on streams and configurations held out of their calibration.

Run from the repository root::

    .venv/bin/python benchmarks/validate_cost.py [--learners NAME ...] [--cores ARCH ...] [--kib N ...] [--steps N]
                                                 [--counts FILE] [--out benchmarks/results/cost_holdout.md]
    .venv/bin/python benchmarks/validate_cost.py --from FILE [--out ...]

For each learner with a cost model, each core (as ``calibrate_cost.CORES``) and each RAM budget of ``BUDGETS_KIB``
within the core's calibrated RAM, the configuration a user gets: the search of ``fit --ram`` on the first
``SEARCH_ROWS`` rows of each ``HELD_OUT`` stream, none of them one of ``calibrate_cost.STREAMS`` (other feature and
class counts, an abrupt change; the regression form on a Friedman stream with an abrupt change, for the learners
whose regressors share their runtime and model; the detectors on anomaly streams). Each configuration is counted
as the calibration counts (:func:`calibrate_cost.count_run`: the emulator test-then-trains rows after Python's
warm-up) and its mean and worst prediction and learn call are predicted by the shipped coefficients, with the
regime the counted rows had (as the calibration fits them), and by the budget's plan (the learner's defaults, what
``fit --ram`` reports). The table shows counted against predicted with the error, and the largest error of each
learner and core; a configuration beyond its model's calibrated range is marked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_cost  # noqa: E402
from bench_anomaly import collective, points  # noqa: E402
from calibrate_cost import CORES, STEPS, count_run, stream_rows  # noqa: E402

from edgestream import learners  # noqa: E402
from edgestream.boards import load_board  # noqa: E402
from edgestream.costs import QUANTITIES, STATED_ERROR, beyond_calibration, call_cost, coefficients  # noqa: E402
from edgestream.search import search  # noqa: E402
from edgestream.task import ANOMALY, CLASSIFICATION, REGRESSION  # noqa: E402

BUDGETS_KIB = (4, 8, 16)
SEARCH_ROWS = 2000


def friedman(n: int, rng, change: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Friedman #1 (ten features uniform in [0, 1], five of them used, Gaussian noise) with an abrupt change at
    ``change`` of the rows: from there the other five features carry the target."""
    X = rng.random((n, 10))
    after = np.arange(n) >= int(change * n)
    used = np.where(after[:, None], X[:, 5:], X[:, :5])
    y = (10 * np.sin(np.pi * used[:, 0] * used[:, 1]) + 20 * (used[:, 2] - 0.5) ** 2 + 10 * used[:, 3]
         + 5 * used[:, 4] + rng.normal(size=n))
    return X, y


calibrate_cost.SOURCES.update({"friedman": friedman, "points": points, "collective": collective})
# per task, streams none of the calibration's (sea: 3 features, hyperplane: 10, blobs: 6 features and 4 classes)
HELD_OUT = {CLASSIFICATION: (("rbf", {"n_features": 5, "n_classes": 3}), ("agrawal", {})),
            REGRESSION: (("friedman", {}),),
            ANOMALY: (("points", {}), ("collective", {}))}


def validated_tasks(name: str) -> list[str]:
    """The forms of a learner the validation counts: its first, and regression where its regressor shares the
    runtime (and so the cost model)."""
    spec = learners.get(name)
    return [spec.tasks[0]] + [REGRESSION for task in spec.tasks[1:] if task == REGRESSION]


def budgets_kib(arch: str) -> list[int]:
    """The budgets of ``BUDGETS_KIB`` within the RAM the calibration counts on the core (``FIT_RAM``, at most
    three quarters of its board's: the rest for the harness and the C library)."""
    ram = min(calibrate_cost.FIT_RAM, load_board(CORES[arch]).ram_bytes * 3 // 4)
    return [kib for kib in BUDGETS_KIB if kib * 1024 <= ram]


def chosen_params(name: str, task: str, arch: str, kib: int, stream: str, options: dict, fixed: dict) -> dict:
    """The configuration ``fit --ram`` chooses on the first ``SEARCH_ROWS`` rows of the stream (with the learner
    options ``fixed``)."""
    X, y = stream_rows(stream, SEARCH_ROWS, options)
    found = search(name, load_board(CORES[arch]), X, None if task == ANOMALY else y, ram=kib * 1024, workers=1,
                   task=task, params=fixed or None)
    return found.budget.params


def jobs(names: list[str], cores: list[str], kibs: list[int], streams: list[str] | None) -> list[tuple]:
    """(learner, task, core, KiB, stream, options) of every run to count (on ``streams`` only, if given)."""
    return [(name, task, arch, kib, stream, options) for name in names for task in validated_tasks(name)
            for arch in cores for kib in budgets_kib(arch) if kib in kibs for stream, options in HELD_OUT[task]
            if streams is None or stream in streams]


def validate(name: str, task: str, arch: str, kib: int, stream: str, options: dict, steps: int | None,
             done: list[dict], fixed: dict) -> dict | None:
    """The counts of the configuration chosen for one budget on one stream (those of a run ``done`` already
    where a smaller budget chose the same), None when its state does not fit the emulated machine."""
    params = chosen_params(name, task, arch, kib, stream, options, fixed)
    same = [r for r in done if (r["learner"], r["task"], r["arch"], r["stream"], r["params"], r["steps"])
            == (name, task, arch, stream, params, steps or STEPS[name])]
    counted = same[0] if same else count_run(name, stream, options, params, arch, steps or STEPS[name], task)
    if counted is None:
        return None
    return {**counted, "learner": name, "task": task, "kib": kib}


def predictions(row: dict) -> dict:
    """Per quantity the model's prediction with the run's regime (``model``) and the plan's (``plan``), and the
    terms beyond the calibration (``beyond``)."""
    spec, arch = learners.get(row["learner"]), row["arch"]
    shape = (spec, row["params"], row["n_features"], row["n_classes"], arch)
    model, plan = call_cost(*shape, **row["regime"]), call_cost(*shape)
    return {"model": as_quantities(model), "plan": as_quantities(plan),
            "beyond": beyond_calibration(*shape, **row["regime"])}


def as_quantities(cost) -> dict:
    return {"predict_mean": cost.predict.mean, "predict_worst": cost.predict.worst,
            "learn_mean": cost.learn.mean, "learn_worst": cost.learn.worst}


def errors(row: dict, which: str = "model") -> dict:
    """Relative error of each quantity's prediction (``which``: the model's with the run's regime, or the plan's)."""
    guess = predictions(row)[which]
    return {q: guess[q] / row[q] - 1 for q in QUANTITIES}


def label(row: dict) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(row["params"].items()) if k in SHOWN.get(row["learner"], ()))
    return f"{row['stream']} ({row['n_features']}x{row['n_classes']}) {row['kib']} KiB: {params}"


SHOWN = {"shrubs": ("window_size", "max_shrubs", "max_depth", "update_every", "burnin"),
         "bls": ("feature_nodes", "enhancement_nodes", "forgetting"),
         "hoeffding": ("max_leaves", "grace_period", "propagation"),
         "irf": ("n_trees", "max_leaves", "grace_period", "propagation"),
         "axgb": ("members", "max_depth", "window_max", "strategy"),
         "hst": ("n_trees", "height", "window"), "loda": ("n_projections", "n_bins", "window")}


def table(rows: list[dict]) -> str:
    """Every counted run: counted, predicted and error per quantity, the plan's errors of the learn calls."""
    lines = ["| learner | task | core | configuration | " + " | ".join(QUANTITIES) + " | plan learn mean, worst |",
             "|---" * (5 + len(QUANTITIES)) + "|"]
    for r in sorted(rows, key=lambda r: (r["learner"], r["task"], r["arch"], r["kib"], r["stream"])):
        guess, model, plan = predictions(r), errors(r), errors(r, "plan")
        cells = [f"{r[q]:,.0f} / {guess['model'][q]:,.0f} ({100 * model[q]:+.0f}%)" for q in QUANTITIES]
        mark = " (beyond calibration)" if guess["beyond"] else ""
        lines.append(f"| {r['learner']} | {r['task']} | {r['arch']} | {label(r)}{mark} | " + " | ".join(cells)
                     + f" | {100 * plan['learn_mean']:+.0f}%, {100 * plan['learn_worst']:+.0f}% |")
    return "\n".join(lines)


def worst_errors(rows: list[dict]) -> dict:
    """(learner, core) -> quantity -> the largest |error| of the model's predictions over the runs."""
    worst: dict = defaultdict(lambda: dict.fromkeys(QUANTITIES, 0.0))
    for r in rows:
        for q, error in errors(r).items():
            worst[r["learner"], r["arch"]][q] = max(worst[r["learner"], r["arch"]][q], abs(error))
    return worst


def summary(rows: list[dict]) -> str:
    """The held-out table: per learner and core the largest |error| of each quantity, and whether it is within
    ``STATED_ERROR``."""
    lines = ["| learner | core | runs | " + " | ".join(QUANTITIES) + f" | within ±{STATED_ERROR:.0%} |",
             "|---" * (4 + len(QUANTITIES)) + "|"]
    counts = defaultdict(int)
    for r in rows:
        counts[r["learner"], r["arch"]] += 1
    for (name, arch), worst in sorted(worst_errors(rows).items()):
        held = all(e <= STATED_ERROR for e in worst.values())
        lines.append(f"| {name} | {arch} | {counts[name, arch]} | "
                     + " | ".join(f"{100 * worst[q]:.1f}%" for q in QUANTITIES) + f" | {'yes' if held else 'no'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", nargs="+", help="default: every learner with a cost model")
    parser.add_argument("--cores", nargs="+", choices=list(CORES), default=["armv7e-m", "armv6-m", "avr6"])
    parser.add_argument("--kib", nargs="+", type=int, default=list(BUDGETS_KIB), help="RAM budgets in KiB")
    parser.add_argument("--streams", nargs="+", help="of HELD_OUT (default: all)")
    parser.add_argument("--params", type=json.loads, default={}, help="learner options the search keeps, as JSON "
                        "(as fit's options with --ram), e.g. '{\"window_size\": 64}'")
    parser.add_argument("--steps", type=int, help="emulated learn steps per run (default: calibrate_cost.STEPS)")
    parser.add_argument("--counts", type=Path, help="save the counts to this JSON file as they come (the runs it "
                        "holds are not counted again)")
    parser.add_argument("--from", dest="saved", type=Path, nargs="+", help="report saved counts")
    parser.add_argument("--out", type=Path, help="write the tables as markdown to this file")
    args = parser.parse_args(argv)
    names = args.learners or [n for n in coefficients() if learners.get(n).cost_terms is not None]
    if args.saved:
        rows = [r for path in args.saved for r in json.loads(path.read_text()) if r["learner"] in names]
    else:
        rows = json.loads(args.counts.read_text()) if args.counts and args.counts.exists() else []
        done = {(r["learner"], r["task"], r["arch"], r["kib"], r["stream"]) for r in rows}
        todo = [job for job in jobs(names, args.cores, args.kib, args.streams) if job[:5] not in done]
        for job in tqdm(todo, desc="counting", unit="run"):
            counted = validate(*job, args.steps, rows, args.params)
            rows += [counted] if counted else []
            if args.counts:
                args.counts.write_text(json.dumps(rows, indent=1) + "\n")
    detail, held = table(rows), summary(rows)
    print(detail + "\n\nLargest |error| per learner and core (the model with each run's regime):\n" + held)
    if args.out:
        args.out.write_text(report(detail, held, args))
    return 0


def report(detail: str, held: str, args) -> str:
    return (f"# Cost models on held-out streams and configurations\n\n"
            f"`benchmarks/validate_cost.py {' '.join(sys.argv[1:])}`\n\n"
            f"Each run: the configuration `fit --ram` chooses for the board on the first {SEARCH_ROWS:,} rows of a "
            f"stream the calibration never counted, counted under the core's emulator (instructions; AVR: CPU "
            f"cycles) after the warm-up, against the shipped model's prediction. Cells are counted / predicted "
            f"(error); the last column is the error of the plan's prediction (the learner's default regime, "
            f"what the budget reports) of the mean and worst learn call.\n\n"
            f"## Largest |error| per learner and core\n\n{held}\n\n## Every run\n\n{detail}\n")


if __name__ == "__main__":
    raise SystemExit(main())
