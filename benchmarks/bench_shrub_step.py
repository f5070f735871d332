"""Benchmark: host time of one shrub learning step (window 64, 16 shrubs, depth 4, a new shrub every sample) in
the compiled engine (the device runtime of csrc/es_shrubs.c) and in the specification, in the same run.

Run from the repository root::

    nice .venv/bin/python benchmarks/bench_shrub_step.py [--rows N] [--spec-rows N]

For SEA (3 features) and the rotating hyperplane (10 features), ``make_stream(name, ..., seed=1)``: bin edges from
the first 1,000 rows, then the window fills and the ensemble grows on the first 96 rows (learned by the engine),
and the clock runs over the next ``--rows`` rows, learned in one ``partial_fit`` call (the engine's compiled
learn-only loop: no Python per row); best of three runs from the same start. The specification
(``use_engine = False``) learns the first ``--spec-rows`` of them from the same start, the peer of the same run.
The instructions of the same step on Cortex-M cores: ``benchmarks/bench_device.py`` (table 2).
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from edgestream import ShrubEnsemble
from edgestream.data import make_stream

PARAMS = {"window_size": 64, "max_shrubs": 16, "max_depth": 4, "update_every": 1}
WARMUP = 96


def started(X, y) -> ShrubEnsemble:
    model = ShrubEnsemble(**PARAMS).fit_bins(X[:1000]).set_classes(np.unique(y))
    model.partial_fit(X[:WARMUP], y[:WARMUP])
    return model


def ns_per_step(model: ShrubEnsemble, X, y, engine: bool, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        learner = copy.deepcopy(model)
        learner.use_engine = engine
        start = time.perf_counter()
        learner.partial_fit(X, y)
        best = min(best, time.perf_counter() - start)
    return 1e9 * best / len(X)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000, help="rows the engine learns per run")
    parser.add_argument("--spec-rows", type=int, default=2000, help="rows the specification learns")
    args = parser.parse_args(argv)
    print(f"{'stream':<11} {'engine ns/step':>15} {'spec ns/step':>13} {'x spec':>7}")
    for stream in ("sea", "hyperplane"):
        X, y = make_stream(stream, WARMUP + args.rows, seed=1)
        model = started(X, y)
        rows = slice(WARMUP, WARMUP + args.rows)
        engine = ns_per_step(model, X[rows], y[rows], True, 3)
        spec_rows = slice(WARMUP, WARMUP + args.spec_rows)
        spec = ns_per_step(model, X[spec_rows], y[spec_rows], False, 1)
        print(f"{stream:<11} {engine:>15,.0f} {spec:>13,.0f} {spec / engine:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
