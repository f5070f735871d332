"""Calibration of the shrub learn-step cost model: instructions per learn step counted under QEMU, fitted.

Run from the repository root::

    .venv/bin/python benchmarks/calibrate_shrub_cost.py [--steps N] [--update-every U ...] [--json FILE]
    .venv/bin/python benchmarks/calibrate_shrub_cost.py --from FILE [FILE ...]
    .venv/bin/python benchmarks/calibrate_shrub_cost.py --configs 0 11 --update-every 1 --steps 32

``--configs`` counts only the configurations of ``CONFIGS`` at those indices (0: SEA at B=64, M=16, depth 4;
11: the hyperplane stream at the same sizes) and prints, per core, the mean and worst learn step measured.

For each configuration of ``CONFIGS`` (window B, shrubs M, depth, burn-in, bins, on a stream with d features and
C classes) and each ``--update-every`` (default 1 and 16) Python learns ``window + 2 M`` rows (the window is full
and the ensemble at M shrubs, or as many as it has made), the model is
exported and the device test-then-trains the next ``--steps`` rows on Cortex-M4F (``stm32f411``) and Cortex-M0
(``rp2040``; configurations whose state does not fit the emulated micro:bit's 16 KiB are skipped), counting the instructions of every learn call (``targets.run(..., instructions=True)``). Per core, by
non-negative least squares: the every-step terms of :func:`edgestream.learners.shrubs.learn_cost_terms` are fitted
to the median step of the ``update_every=16`` runs (steps that train no shrub), then the training terms to the
mean step of the ``update_every=1`` runs (every step trains) less the fitted every-step cost. The coefficients
printed are those :data:`edgestream.learners.shrubs.LEARN_COST` holds; the table shows predicted against measured
for every run (``--from FILE ...`` refits saved counts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from scipy.optimize import nnls

from edgestream import ShrubEnsemble, targets
from edgestream.data import make_stream
from edgestream.export import export_bundle
from edgestream.learners.shrubs import LEARN_COST, learn_cost_terms, learn_instructions

CORES = {"armv7e-m": "stm32f411", "armv6-m": "rp2040"}
STEPS = 8
BASE = {"window_size": 64, "max_shrubs": 16, "max_depth": 4, "burnin": 5, "max_bins": 64}
CONFIGS = [  # (stream, changes to BASE)
    ("sea", {}), ("sea", {"window_size": 32}), ("sea", {"window_size": 128}),
    ("sea", {"window_size": 256, "max_shrubs": 8, "max_depth": 3}), ("sea", {"max_shrubs": 4}),
    ("sea", {"max_shrubs": 32}), ("sea", {"max_depth": 2}), ("sea", {"max_depth": 6}), ("sea", {"burnin": 1}),
    ("sea", {"burnin": 10}), ("sea", {"max_bins": 16}), ("hyperplane", {}),
    ("hyperplane", {"window_size": 32, "max_shrubs": 8, "max_depth": 3}), ("blobs", {}),
    ("blobs", {"window_size": 16, "max_shrubs": 4, "max_depth": 3, "max_bins": 16}),
    ("sea", {"window_size": 128, "max_shrubs": 32, "max_depth": 5}),
]


def job(index: int, update_every: int, steps: int) -> list[dict]:
    stream, changes = CONFIGS[index]
    params = {**BASE, **changes, "update_every": update_every}
    X, y = make_stream(stream, 3000, seed=1)
    model = ShrubEnsemble(**params).fit_bins(X[:1000]).set_classes(np.unique(y))
    warmup = params["window_size"] + 2 * params["max_shrubs"]
    model.partial_fit(X[:warmup], y[:warmup])
    rows = slice(warmup, warmup + steps)
    out = []
    with tempfile.TemporaryDirectory(prefix="es-shrub-cost-") as tmp:
        bundle = export_bundle(model, Path(tmp) / "b", name="shrubs")
        for arch, board in CORES.items():
            try:
                result = targets.run(bundle, board, X[rows], y[rows], learn=True, timeout=900, instructions=True)
            except targets.TargetError:  # the state does not fit the emulated machine's RAM (micro:bit: 16 KiB)
                continue
            learn = result.instructions["learn"]
            out.append({"stream": stream, "arch": arch, "params": params, "n_features": X.shape[1],
                        "n_classes": len(np.unique(y)), "mean": float(learn.mean()), "max": int(learn.max()),
                        "median": float(np.median(learn))})
    return out


def _nnls(A, b) -> list[float]:
    A = np.asarray(A, dtype=float)
    scale = np.maximum(A.max(axis=0), 1)
    solution, _ = nnls(A / scale, np.asarray(b, dtype=float))
    return [round(float(v), 3) for v in solution / scale]


def fit(rows: list[dict]) -> dict[str, dict[str, list[float]]]:
    coefficients = {}
    for arch in CORES:
        plain = [r for r in rows if r["arch"] == arch and r["params"]["update_every"] > 1]
        every = [r for r in rows if r["arch"] == arch and r["params"]["update_every"] == 1]
        if not plain or not every:
            continue
        step = _nnls([learn_cost_terms(r["params"], r["n_features"], r["n_classes"])[0] for r in plain],
                     [r["median"] for r in plain])
        terms = [learn_cost_terms(r["params"], r["n_features"], r["n_classes"]) for r in every]
        train = _nnls([t[1] for t in terms], [r["mean"] - float(np.dot(step, t[0])) for r, t in zip(every, terms)])
        coefficients[arch] = {"step": step, "train": train}
    return coefficients


def print_measured(rows: list[dict]) -> None:
    print(f"{'core':<9} {'stream':<10} {'config':<52} {'mean':>9} {'worst':>9}")
    for r in rows:
        p = r["params"]
        config = (f"B={p['window_size']} M={p['max_shrubs']} D={p['max_depth']} burnin={p['burnin']} "
                  f"bins={p['max_bins']} update_every={p['update_every']}")
        print(f"{r['arch']:<9} {r['stream']:<10} {config:<52} {r['mean']:>9,.0f} {r['max']:>9,}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=STEPS, help="learn steps counted per configuration")
    parser.add_argument("--update-every", type=int, nargs="+", default=[1, 16], metavar="U")
    parser.add_argument("--json", type=Path, help="save the counts to FILE")
    parser.add_argument("--from", dest="sources", type=Path, nargs="+", help="refit counts saved with --json")
    parser.add_argument("--configs", type=int, nargs="+", metavar="I", help="only CONFIGS[I] (no refit)")
    args = parser.parse_args(argv)
    if args.sources:
        rows = [r for source in args.sources for r in json.loads(source.read_text())]
    else:
        jobs = [(i, u) for u in args.update_every for i in (args.configs or range(len(CONFIGS)))]
        with ProcessPoolExecutor(2) as pool:
            rows = [r for part in pool.map(job, *zip(*jobs), [args.steps] * len(jobs)) for r in part]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.configs:
        print_measured(rows)
        return 0
    fitted = fit(rows)
    print("fitted LEARN_COST =", json.dumps(fitted))
    print(f"\n{'core':<9} {'stream':<10} {'config':<45} {'measured':>9} {'predicted':>10} {'error':>7}")
    for r in rows:
        p = r["params"]
        predicted = learn_instructions(p, r["n_features"], r["n_classes"], r["arch"])
        plain = p["update_every"] > 1
        measured = r["median"] if plain else r["mean"]  # a step without training, or the mean training step
        if predicted is not None:
            predicted = predicted[1] - (predicted[1] - predicted[0]) * p["update_every"] / (p["update_every"] - 1) \
                if plain else predicted[1]
        config = (f"B={p['window_size']} M={p['max_shrubs']} D={p['max_depth']} burnin={p['burnin']} "
                  f"bins={p['max_bins']} " + ("plain step" if plain else "training"))
        error = "-" if predicted is None else f"{100 * (predicted - measured) / measured:+.1f}%"
        print(f"{r['arch']:<9} {r['stream']:<10} {config:<45} {measured:>9,.0f} "
              f"{'-' if predicted is None else f'{predicted:,.0f}':>10} {error:>7}")
    print(f"\nLEARN_COST in edgestream.learners.shrubs (the predictions above): {json.dumps(LEARN_COST)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
