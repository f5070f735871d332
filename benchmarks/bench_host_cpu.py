"""Benchmark: one online learner's test-then-train samples per CPU second of the thread against River's Hoeffding
tree in the same process, on ``bench_host.py``'s streams (CPU time, so that other work on a shared machine does not
move the ratio as it moves wall-clock samples/s).

Run from the repository root (River is needed)::

    nice .venv/bin/python benchmarks/bench_host_cpu.py [--learner shrubs] [--rows 30000]

For each stream, the configuration ``bench_host.py`` takes (the search's at 32 KiB on the first 5,000 rows); River's
``HoeffdingTreeClassifier`` (River protocol, dict rows) and the learner's engine (``prequential``, the best of two
runs from the same start) test-then-train the rows after those 5,000. Prints JSON: samples per CPU second of both,
their ratio, the engine's CPU nanoseconds per counted operation (``bench_host.operations``) and its accuracy.
"""

from __future__ import annotations

import argparse
import json
import time

import bench_host as bh

from edgestream.data import device_input
from edgestream.evaluate import prequential


def cpu_row(stream: bh.Stream, learner: str) -> dict:
    rest = slice(bh.SEARCH_ROWS, None)
    dict_rows = [{f"x{j}": v for j, v in enumerate(r)} for r in stream.X[rest].tolist()]
    labels = stream.y[rest].tolist()
    cpu = time.thread_time()
    bh.river_protocol(bh.river_models()["River HT"](), dict_rows, labels)
    river = time.thread_time() - cpu
    found, _ = bh.timed_search(stream, learner, bh.SEARCH_ROWS)
    params, best = found.budget.params, float("inf")
    for _ in range(2):
        model = bh.started_learner(learner, params, stream)
        cpu = time.thread_time()
        evaluated = prequential(model, device_input(stream.X[rest], model.input_dtype), stream.y[rest])
        best = min(best, time.thread_time() - cpu)
    n = len(labels)
    return {"stream": stream.name, "config": bh.describe(found.budget), "per_cpu_s": n / best,
            "river_ht_per_cpu_s": n / river, "x_river_ht": river / best,
            "cpu_ns_per_op": 1e9 * best / (n * bh.operations(learner, params, stream)),
            "accuracy": evaluated.accuracy}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", default="shrubs")
    parser.add_argument("--rows", type=int, default=30_000, help="rows of every stream (default 30,000)")
    args = parser.parse_args(argv)
    print(json.dumps([cpu_row(stream, args.learner) for stream in bh.load_streams(args.rows)], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
