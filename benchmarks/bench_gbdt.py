"""Benchmark: in-place online GBDT (edgestream) adding and deleting training rows, against LightGBM and XGBoost
retrained from scratch on the same rows, with the same boosting rounds and leaves per tree.

Run from the repository root::

    .venv/bin/python benchmarks/bench_gbdt.py [--rounds 100] [--leaves 20] [--reps 3] [--cpu-time] [--json]
        [--datasets ...]

Datasets: pendigits and optdigits (``../shared/data``, label in the first column, the given train/test splits;
skipped if absent), a covtype-like synthetic set (scikit-learn ``make_classification``: 20,000 rows, 20
features, 7 classes, 75/25 split) and a small one shaped like UCI's image segmentation set ("small": 3,080 rows, 19
features, 7 classes; 2,310 training rows, 770 test rows), where a retrain is cheap and an update's fixed costs
show.

Protocol, per dataset and size (1 row, 0.1%, 0.5% and 1% of the training rows, at least 1):

* **add**: edgestream is fitted once on the training rows minus a pool of the last 1%; the first ``size`` rows of
  the pool are added in place (one ``add`` call) to a copy of that model. The peers are retrained from scratch on
  the base rows plus the added ones.
* **delete**: edgestream is fitted once on all training rows; ``size`` random rows are deleted in place (one
  ``delete`` call). The peers are retrained from scratch without them.

"ours s" is the in-place update (the fastest of ``--reps`` runs on fresh copies), "LGB s"/"XGB s" a retrain
(the fastest of ``--reps``; one thread each, as in the paper), "xLGB"/"xXGB" the speed-ups; wall seconds, or
CPU seconds with ``--cpu-time``. Test errors (%) are
edgestream's after the update, edgestream retrained from scratch on the same rows ("scratch"), LightGBM's and
XGBoost's. "retrained" counts the nodes whose subtree the update retrained. The paper's figures (Lin et al.,
Table 3: one thread, their C++ implementation and parameters) are printed beside: its update time and its
speed-ups over XGBoost and LightGBM.

Parameters: edgestream ``OnlineGBDTClassifier(n_estimators=rounds, max_leaves=leaves, learning_rate=0.1,
max_bins=255, split_sample_rate=0.1, alpha=0.1)``; LightGBM ``LGBMClassifier(n_estimators=rounds,
num_leaves=leaves, learning_rate=0.1, max_bin=255, n_jobs=1)``; XGBoost ``XGBClassifier(n_estimators=rounds,
max_leaves=leaves, grow_policy="lossguide", tree_method="hist", max_depth=0, learning_rate=0.1, max_bin=255,
n_jobs=1)``.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

from edgestream import OnlineGBDTClassifier

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATASETS = ("pendigits", "optdigits", "synthetic", "small")
SIZES = (("1", None), ("0.1%", 0.001), ("0.5%", 0.005), ("1%", 0.01))
# Lin et al., Table 3: (their update seconds, speed-up over XGBoost, over LightGBM)
PAPER = {
    "pendigits": {"add": {"1": (0.014, 41.0, 9.4), "0.1%": (0.026, 22.1, 5.0), "0.5%": (0.042, 13.7, 3.1),
                          "1%": (0.053, 10.8, 2.5)},
                  "delete": {"1": (0.015, 38.3, 8.7), "0.1%": (0.025, 23.0, 5.2), "0.5%": (0.041, 14.0, 3.2),
                             "1%": (0.057, 10.1, 2.3)}},
    "optdigits": {"add": {"1": (0.011, 68.4, 9.6), "0.1%": (0.015, 50.1, 7.1), "0.5%": (0.029, 25.9, 3.7),
                          "1%": (0.043, 17.5, 2.5)},
                  "delete": {"1": (0.010, 75.2, 10.6), "0.1%": (0.014, 53.7, 7.6), "0.5%": (0.029, 25.9, 3.7),
                             "1%": (0.046, 16.3, 2.3)}},
}


def datasets(names):
    out = []
    for name in ("pendigits", "optdigits"):
        if name not in names:
            continue
        if not (DATA / f"{name}.train.csv").is_file():
            print(f"note: {DATA / name}.*.csv absent, {name} skipped", file=sys.stderr)
            continue
        train = np.loadtxt(DATA / f"{name}.train.csv", delimiter=",")
        test = np.loadtxt(DATA / f"{name}.test.csv", delimiter=",")
        out.append((name, train[:, 1:], train[:, 0].astype(int), test[:, 1:], test[:, 0].astype(int)))
    from sklearn.datasets import make_classification

    for name, rows, features, cut in (("synthetic", 20_000, 20, 15_000), ("small", 3_080, 19, 2_310)):
        if name in names:
            X, y = make_classification(n_samples=rows, n_features=features, n_informative=12, n_redundant=4,
                                       n_classes=7, n_clusters_per_class=2, class_sep=1.5, random_state=0)
            out.append((name, X[:cut], y[:cut], X[cut:], y[cut:]))
    return out


def peers(rounds, leaves):
    import lightgbm
    import xgboost

    return {
        "LGB": lambda: lightgbm.LGBMClassifier(n_estimators=rounds, num_leaves=leaves, learning_rate=0.1, max_bin=255,
                                               n_jobs=1, verbose=-1),
        "XGB": lambda: xgboost.XGBClassifier(n_estimators=rounds, max_leaves=leaves, grow_policy="lossguide",
                                             tree_method="hist", max_depth=0, learning_rate=0.1, max_bin=255,
                                             n_jobs=1),
    }


def timed_fit(make, X, y, reps, clock):
    best, model = float("inf"), None
    for _ in range(reps):
        started = clock()
        model = make().fit(X, y)
        best = min(best, clock() - started)
    return best, model


def error(model, X, y) -> float:
    return 100.0 * float(np.mean(model.predict(X) != y))


def run(name, X, y, Xt, yt, args, ours_params):
    n = len(X)
    makers = peers(args.rounds, args.leaves)
    clock = time.process_time if args.cpu_time else time.perf_counter
    pool = max(1, round(0.01 * n))
    base = OnlineGBDTClassifier(**ours_params).fit(X[:-pool], y[:-pool])
    full_started = time.perf_counter()
    full = OnlineGBDTClassifier(**ours_params).fit(X, y)
    fit_seconds = time.perf_counter() - full_started
    print(f"{name}: {n} training rows, {len(Xt)} test rows; edgestream fit {fit_seconds:.2f} s, test error "
          f"{error(full, Xt, yt):.2f}%, {full.summary()}", file=sys.stderr)
    rng = np.random.default_rng(0)
    rows = []
    for op in ("add", "delete"):
        for label, fraction in SIZES:
            size = 1 if fraction is None else max(1, round(fraction * n))
            if op == "add":
                start, X_new, y_new = base, X[n - pool:n - pool + size], y[n - pool:n - pool + size]
                X_after = np.concatenate([X[:-pool], X_new])
                y_after = np.concatenate([y[:-pool], y_new])
            else:
                start = full
                gone = rng.choice(n, size=size, replace=False)
                keep = np.setdiff1d(np.arange(n), gone)
                X_after, y_after = X[keep], y[keep]
            ours, updated = float("inf"), None
            for _ in range(args.reps):
                model = copy.deepcopy(start)
                started = clock()
                model.add(X_new, y_new) if op == "add" else model.delete(gone)
                ours = min(ours, clock() - started)
                updated = model
            row = {"dataset": name, "op": op, "size": label, "rows": size, "ours_s": ours,
                   "retrained": updated.last_update_["retrained_nodes"], "ours_err": error(updated, Xt, yt),
                   "scratch_err": error(OnlineGBDTClassifier(**ours_params).fit(X_after, y_after), Xt, yt)}
            for peer, make in makers.items():
                seconds, model = timed_fit(make, X_after, y_after, args.reps, clock)
                row[f"{peer}_s"], row[f"{peer}_err"], row[f"x{peer}"] = seconds, error(model, Xt, yt), seconds / ours
            paper = PAPER.get(name, {}).get(op, {}).get(label)
            row["paper"] = None if paper is None else {"ours_s": paper[0], "xXGB": paper[1], "xLGB": paper[2]}
            rows.append(row)
            print(line(row), file=sys.stderr)
    return rows


HEADER = (f"{'dataset':<10} {'op':<6} {'size':>5} {'rows':>5} {'ours s':>8} {'LGB s':>7} {'XGB s':>7} {'xLGB':>7} "
          f"{'xXGB':>7} | {'paper s':>7} {'xLGB':>6} {'xXGB':>6} | {'err%':>5} {'scratch':>7} {'LGB':>5} {'XGB':>5} "
          f"{'retrained':>9}")


def line(r) -> str:
    paper = r["paper"]
    p = (f"{paper['ours_s']:>7.3f} {paper['xLGB']:>5.1f}x {paper['xXGB']:>5.1f}x" if paper else f"{'-':>7} {'-':>6} "
         f"{'-':>6}")
    return (f"{r['dataset']:<10} {r['op']:<6} {r['size']:>5} {r['rows']:>5} {r['ours_s']:>8.4f} {r['LGB_s']:>7.3f} "
            f"{r['XGB_s']:>7.3f} {r['xLGB']:>6.1f}x {r['xXGB']:>6.1f}x | {p} | {r['ours_err']:>5.2f} "
            f"{r['scratch_err']:>7.2f} {r['LGB_err']:>5.2f} {r['XGB_err']:>5.2f} {r['retrained']:>9}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--leaves", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with the process's CPU time (every fit runs on one thread), not wall time: on a "
                             "loaded machine wall time mostly measures the wait for a core")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    ours_params = dict(n_estimators=args.rounds, max_leaves=args.leaves, learning_rate=0.1, max_bins=255,
                       split_sample_rate=0.1, alpha=0.1)
    print(HEADER, file=sys.stderr)
    rows = [row for data in datasets(args.datasets) for row in run(*data, args, ours_params)]
    if args.json:
        print(json.dumps(rows))
    else:
        print(HEADER)
        for row in rows:
            print(line(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
