"""Benchmark: Online-BLS (edgestream, learning in float32 as the device does) against River's Hoeffding tree and
adaptive random forest: online cumulative accuracy (test-then-train) and samples per second.

Run from the repository root::

    .venv/bin/python benchmarks/bench_bls.py [--rows N] [--json] [--no-arf]

Streams: ``elec.csv`` (label ``class``) from ``../shared/data`` (skipped if absent), and the built-in SEA (abrupt
drift) and rotating hyperplane (gradual drift) streams, ``make_stream(name, SYNTHETIC_ROWS, seed=1)``; ``--rows``
keeps the first N rows of each.

Learners: Online-BLS with its defaults (16 feature + 48 enhancement nodes, lambda 0.01, forgetting 0.99; input
scaling from the first 1000 rows, as ``edgestream fit`` does), the same without forgetting, and the configuration the
budget manager plans for 8 KiB of RAM on ``stm32f411``; River ``HoeffdingTreeClassifier()`` and
``ARFClassifier(n_models=10, seed=1)``. "py/s" is the Python specification's speed (numpy float32 step by step);
"C/s" is the C runtime's on this host through cffi, run on the same stream from the same start, and "mismatches"
counts its predictions that differ from Python's (0 expected: the two are bit-identical).

The paper's figures (Lei et al., Online-BLS, Tables 4 to 6: Online-BLS with forgetting factor, OCA %, and the HT
figure they cite) are printed beside for orientation; the paper uses 100 feature and 1000 enhancement nodes in
float64, edgestream a device-sized model in float32.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from river import forest, tree

from edgestream import OnlineBLSClassifier
from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.data import load_csv, make_stream
from edgestream.evaluate import RiverAdapter, prequential
from edgestream.simulate import RuntimeLearner

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SYNTHETIC_ROWS = 20_000
SCALE_ROWS = 1000
PAPER = {"elec": {"Online-BLS (paper)": 86.8, "HT (paper)": None}, "sea": {"Online-BLS (paper)": 85.2, "HT (paper)": 81.1},
         "hyperplane": {"Online-BLS (paper)": None, "HT (paper)": None}}


def streams(rows):
    out = []
    if (DATA / "elec.csv").is_file():
        X, y, _ = load_csv(DATA / "elec.csv", "class")
        out.append(("elec", X, y))
    else:
        print(f"note: {DATA / 'elec.csv'} is absent, elec skipped", file=sys.stderr)
    for name in ("sea", "hyperplane"):
        X, y = make_stream(name, SYNTHETIC_ROWS, seed=1)
        out.append((name, X, y))
    return [(name, np.asarray(X, dtype=np.float32)[:rows], np.asarray(y)[:rows]) for name, X, y in out]


class DeviceBLS:
    """The C runtime (cffi) learning from the same start as a Python learner."""

    def __init__(self, learner: OnlineBLSClassifier):
        self.runtime = RuntimeLearner(learner)
        arrays, _ = learner.device_state()
        for name, values in arrays.items():
            self.runtime.regions[name][...] = values
        self.classes = learner.classes_
        self.out = self.runtime.ffi.new("uint8_t *")

    def predict_one(self, x):
        ffi, lib = self.runtime.ffi, self.runtime.lib
        lib.es_bls_predict(self.runtime.model, ffi.from_buffer("float[]", x), self.out)
        return self.classes[self.out[0]]

    def learn_one(self, x, y):
        self.runtime.learn(x, int(np.searchsorted(self.classes, y)))


def bls_configs(n_features, n_classes):
    planned = plan("bls", load_board("stm32f411"), n_features, n_classes, ram=8 * 1024).params
    return [("Online-BLS 16+48 mu=0.99", {}), ("Online-BLS 16+48 mu=1", {"forgetting": 1.0}),
            (f"Online-BLS 8 KiB ({planned['feature_nodes']}+{planned['enhancement_nodes']})", planned)]


def run(rows, with_arf):
    results = []
    for stream, X, y in streams(rows):
        classes = np.unique(y)
        names = [f"x{j}" for j in range(X.shape[1])]
        for label, params in bls_configs(X.shape[1], len(classes)):
            learner = OnlineBLSClassifier(**params).start(X[:SCALE_ROWS], classes)
            device = DeviceBLS(learner)
            python = prequential(learner, X, y)
            c = prequential(device, X, y)
            results.append({"stream": stream, "learner": label, "accuracy": 100 * python.accuracy,
                            "py_per_s": len(y) / python.seconds, "c_per_s": len(y) / c.seconds,
                            "mismatches": int((python.predictions != c.predictions).sum()),
                            "state_bytes": learner.state_bytes()})
        rivers = [("river HT", tree.HoeffdingTreeClassifier)]
        if with_arf:
            rivers.append(("river ARF", lambda: forest.ARFClassifier(n_models=10, seed=1)))
        for label, make in rivers:
            result = prequential(RiverAdapter(make(), names), X, y)
            results.append({"stream": stream, "learner": label, "accuracy": 100 * result.accuracy,
                            "py_per_s": len(y) / result.seconds, "c_per_s": None, "mismatches": None,
                            "state_bytes": None})
        for label, value in PAPER.get(stream, {}).items():
            if value is not None:
                results.append({"stream": stream, "learner": label, "accuracy": value, "py_per_s": None,
                                "c_per_s": None, "mismatches": None, "state_bytes": None})
    return results


def table(results, rows_used):
    def cell(value, fmt):
        return "-" if value is None else format(value, fmt)

    lines = ["| stream | learner | OCA % | py/s | C/s | mismatches | state bytes |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['stream']} ({rows_used[r['stream']]}) | {r['learner']} | {r['accuracy']:.1f} | "
                     f"{cell(r['py_per_s'], ',.0f')} | {cell(r['c_per_s'], ',.0f')} | {cell(r['mismatches'], 'd')} | "
                     f"{cell(r['state_bytes'], ',d')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="first N rows of each stream")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-arf", action="store_true", help="leave out River's ARF (the slowest)")
    args = parser.parse_args(argv)
    results = run(args.rows, not args.no_arf)
    rows_used = {name: len(y) for name, _, y in streams(args.rows)}
    print(json.dumps(results) if args.json else table(results, rows_used))
    return 0


if __name__ == "__main__":
    sys.exit(main())
