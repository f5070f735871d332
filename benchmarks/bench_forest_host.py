"""Benchmark: host nanoseconds per prediction of a 10-tree depth-8 scikit-learn forest imported by edgestream,
against emlearn's inline float export of the same forest, in the same runs.

Run from the repository root::

    .venv/bin/python benchmarks/bench_forest_host.py [--runs 7] [--trees 10] [--depth 8] [--json]

The forest of ``bench_foundation.py`` (digits, ``RandomForestClassifier(10, max_depth=8, random_state=0)``, the
same split; ``--trees 20 --depth 10``: ``bench_import.py``'s) exported by ``edgestream import`` + ``export --optimize speed`` (``bench_import.edgestream_variant``) and
by emlearn's inline float variants (hard and 8-bit soft vote). Every library is built once by the harness of
``bench_foundation.py`` (gcc -O2); each run times every library once with its ``time_library`` (median of its timed
C loops, timed in CPU time of the thread: other work on a shared machine moves it less than wall time), one after
the other, so that the load falls on all of them alike; the summary is the median over runs of each library's time
and of its ratio to emlearn's hard vote in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_foundation as harness  # noqa: E402  (the shared C harness)
import bench_import  # noqa: E402

REFERENCE = "emlearn inline float hard vote"


def variants(root: Path, n_trees: int, depth: int) -> list[harness.Variant]:
    data = harness.load_data()
    forest = RandomForestClassifier(n_trees, max_depth=depth, random_state=0)
    forest.fit(data.X_train, data.y_train)
    found = [bench_import.edgestream_variant("forest", forest, data, root, "speed")]
    return found + [v for v in bench_import.emlearn_variants("forest", forest, data, root)
                    if isinstance(v, harness.Variant)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timings of every library, alternating")
    parser.add_argument("--trees", type=int, default=harness.N_TREES)
    parser.add_argument("--depth", type=int, default=harness.MAX_DEPTH)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    X = harness.load_data().X_test
    includes = [Path(__import__("emlearn").includedir)]
    with tempfile.TemporaryDirectory(prefix="es-bench-forest-") as temp:
        found = variants(Path(temp), args.trees, args.depth)
        libraries = {v.exporter: harness.build_library(v, includes) for v in found}
        mismatches = {}
        for v in found:
            classes, _ = harness.time_library(libraries[v.exporter], X)
            mismatches[v.exporter] = int(np.sum(classes != v.own_classes))
        runs = [{name: harness.time_library(library, X, clock=time.thread_time_ns)[1]
                 for name, library in libraries.items()}
                for _ in range(args.runs)]
    summary = {name: {"ns_median": statistics.median(run[name] for run in runs),
                      "ratio_median": statistics.median(run[name] / run[REFERENCE] for run in runs),
                      "mismatches": mismatches[name]} for name in libraries}
    if args.json:
        print(json.dumps({"runs": runs, "summary": summary}, indent=2))
        return 0
    print(f"digits, {len(X)} held-out rows, {args.trees} trees of depth {args.depth}; CPU ns per prediction, host gcc "
          f"-O2, {args.runs} runs\n")
    for name, row in summary.items():
        times = " ".join(f"{run[name]:6.1f}" for run in runs)
        print(f"{name:52s} median {row['ns_median']:6.1f} ns, {row['ratio_median']:.2f}x emlearn hard vote, "
              f"{row['mismatches']} mismatches  runs: {times}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
