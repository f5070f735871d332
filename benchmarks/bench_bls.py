"""Benchmark: Online-BLS (edgestream, learning in float32 as the device does) against River's Hoeffding tree and
adaptive random forest: online cumulative accuracy (test-then-train) and samples per second.

Run from the repository root::

    .venv/bin/python benchmarks/bench_bls.py [--rows N] [--json] [--no-arf] [--device-rows N] [--no-device]
                                             [--no-accuracy]

Streams: ``elec.csv`` (label ``class``) from ``../shared/data`` (skipped if absent), the built-in SEA (abrupt
drift, 10 % label noise) and rotating hyperplane (gradual drift) streams, ``make_stream(name, SYNTHETIC_ROWS,
seed=1)``, and two River generators that were NOT used to choose the defaults (held out): ``RandomRBFDrift``
(3 classes, 10 features, 50 moving centroids, speed 0.001) and ``ConceptDriftStream`` of ``Agrawal`` functions
0 -> 2 at the middle (width 1000, 5 % perturbation; raw features in the thousands, so the input scaling is
tested too). ``--rows`` keeps the first N rows of each.

Learners: Online-BLS with its defaults (16 feature + 48 enhancement nodes, lambda 1, forgetting 0.998; input
scaling from the first 1000 rows, as ``edgestream fit`` does), the same with the paper's forgetting 0.99 and
without forgetting, and the configuration the budget manager plans for 8 KiB of RAM on ``stm32f411``; River
``HoeffdingTreeClassifier()`` and ``ARFClassifier(n_models=10, seed=1)``. "py/s" is the Python specification's
speed (numpy float32 step by step); "C/s" is the C runtime's on this host through cffi, run on the same stream
from the same start, and "mismatches" counts its predictions that differ from Python's (0 expected: the two are
bit-identical).

The paper's figures (Lei et al., Online-BLS, Tables 4 to 6: Online-BLS with forgetting factor, OCA %, and the HT
figure they cite) are printed beside for orientation; the paper uses 100 feature and 1000 enhancement nodes in
float64, edgestream a device-sized model in float32.

**Instructions per call on the device** (second table): for m = F + E nodes in ``DEVICE_NODES`` (F = m / 4, the
default's ratio), Python learns the first ``DEVICE_WARMUP`` rows of the SEA stream, the bundle is exported from
that state, and QEMU (``targets.run(..., learn=True, instructions=True)``) test-then-trains the next
``--device-rows`` rows on Cortex-M4F (board ``stm32f411``) and Cortex-M0 (board ``rp2040``, soft float), counting
every executed instruction of ``predict`` and ``learn`` (callees included). The state has a fixed size, so the
cost does not depend on how much of the stream was learned: one more run starts after ``LATE_WARMUP`` rows (the
"late" rows) to show it (the counts vary by a few % with the values, soft float more). ``learn / m^2`` falls
towards a constant as m grows (about 50 on the M4F, 1,000 on the M0 from m = 48): the update (rotations and two
triangular solves) is O(m^2) plus O(m (d + F)) for the broad features; the prediction is O(m (d + F + C)).
Device classes are checked against Python's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from river import forest, tree

from edgestream import OnlineBLSClassifier
from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.data import load_csv, make_stream
from edgestream.evaluate import RiverAdapter, prequential
from edgestream.export import export_bundle
from edgestream.simulate import RuntimeLearner

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SYNTHETIC_ROWS = 20_000
SCALE_ROWS = 1000
DEVICE_NODES = (16, 32, 48, 64)
DEVICE_WARMUP = 1000
LATE_WARMUP = 10_000
LATE_NODES = 48
CORES = {"stm32f411": "Cortex-M4F", "rp2040": "Cortex-M0"}  # board -> the core its emulator runs
# Lei et al., Tables 4 to 6 (100k-row streams, 100 + 1000 nodes, float64): Online-BLS (Ada.) and the HT they cite.
PAPER = {"elec": {"Online-BLS (paper)": 86.8, "HT (paper)": 77.0},
         "sea": {"Online-BLS (paper)": 85.2, "HT (paper)": 81.1},
         "hyperplane": {"Online-BLS (paper)": 92.6, "HT (paper)": 85.1}}
HELD_OUT = ("rbf-drift", "agrawal-drift")


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
    for name in HELD_OUT:
        out.append((name, *river_stream(name, SYNTHETIC_ROWS)))
    return [(name, np.asarray(X, dtype=np.float32)[:rows], np.asarray(y)[:rows]) for name, X, y in out]


def river_stream(name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The held-out River generators as arrays (features in the generator's order)."""
    from river.datasets import synth

    if name == "rbf-drift":
        gen = synth.RandomRBFDrift(seed_model=1, seed_sample=1, n_classes=3, n_features=10, n_centroids=50,
                                   change_speed=0.001, n_drift_centroids=50)
    else:
        gen = synth.ConceptDriftStream(stream=synth.Agrawal(classification_function=0, seed=1, perturbation=0.05),
                                       drift_stream=synth.Agrawal(classification_function=2, seed=2,
                                                                  perturbation=0.05),
                                       position=rows // 2, width=1000, seed=1)
    X, y = [], []
    for x, label in gen.take(rows):
        X.append(list(x.values()))
        y.append(int(label))
    return np.array(X, dtype=np.float64), np.array(y)


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
    return [("Online-BLS default (16+48, lambda 1, mu 0.998)", {}),
            ("Online-BLS 16+48 mu 0.99 (paper's)", {"forgetting": 0.99}),
            ("Online-BLS 16+48 mu 1", {"forgetting": 1.0}),
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


# -- instructions per call under QEMU ----------------------------------------------------------------------------

def device_job(args):
    """One QEMU run: (nodes, warm-up, board) -> instructions per predict and learn, and the class mismatches."""
    from edgestream.targets import run as run_device

    m, warmup, board, rows = args
    X, y = make_stream("sea", warmup + rows, seed=1)
    X = np.asarray(X, dtype=np.float32)
    learner = learner_at(m, X, y, warmup)
    with tempfile.TemporaryDirectory(prefix="bench-bls-") as work:
        bundle = export_bundle(learner, Path(work) / "bundle", name="bls")
        result = run_device(bundle, board, X[warmup:], y[warmup:], learn=True, instructions=True, timeout=3600)
    expected = []
    for x, label in zip(X[warmup:], y[warmup:]):
        expected.append(learner.predict_encoded(x[None])[0])
        learner.learn_one(x, label)
    counts = result.instructions
    return {"nodes": m, "warmup": warmup, "board": board, "core": CORES[board], "rows": rows,
            "predict": float(counts["predict"].mean()), "learn": float(counts["learn"].mean()),
            "learn_min": int(counts["learn"].min()), "learn_max": int(counts["learn"].max()),
            "mismatches": int((np.asarray(result.classes) != np.asarray(expected)).sum())}


def device_params(m: int) -> dict:
    return {"feature_nodes": m // 4, "enhancement_nodes": m - m // 4}


def learner_at(m, X, y, warmup) -> OnlineBLSClassifier:
    """The learner after Python learned the first ``warmup`` rows (the bundle's starting state)."""
    learner = OnlineBLSClassifier(**device_params(m)).start(X[:SCALE_ROWS], np.unique(y))
    for x, label in zip(X[:warmup], y[:warmup]):
        learner.learn_one(x, label)
    return learner


def device_counts(rows: int, workers: int = 2) -> list[dict]:
    jobs = [(m, DEVICE_WARMUP, board, rows) for m in DEVICE_NODES for board in CORES]
    jobs += [(LATE_NODES, LATE_WARMUP, board, rows) for board in CORES]
    jobs.sort(key=lambda job: (job[2] != "rp2040", -job[0]))  # the longest runs first
    with ProcessPoolExecutor(workers) as pool:
        out = list(pool.map(device_job, jobs))
    return sorted(out, key=lambda r: (r["core"] != "Cortex-M4F", r["warmup"], r["nodes"]))


def device_table(counts) -> str:
    lines = ["| core | nodes m (F+E) | after rows | predict | learn | learn min..max | learn / m^2 | mismatches |",
             "|---|---|---:|---:|---:|---|---:|---:|"]
    for r in counts:
        p = device_params(r["nodes"])
        lines.append(f"| {r['core']} | {r['nodes']} ({p['feature_nodes']}+{p['enhancement_nodes']}) | "
                     f"{r['warmup']:,} | {r['predict']:,.0f} | {r['learn']:,.0f} | "
                     f"{r['learn_min']:,}..{r['learn_max']:,} | {r['learn'] / r['nodes'] ** 2:,.0f} | "
                     f"{r['mismatches']}/{r['rows']} |")
    return "\n".join(lines)


def table(results, rows_used):
    def cell(value, fmt):
        return "-" if value is None else format(value, fmt)

    lines = ["| stream | learner | OCA % | py/s | C/s | mismatches | state bytes |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        held = " held out" if r["stream"] in HELD_OUT else ""
        lines.append(f"| {r['stream']} ({rows_used[r['stream']]}{held}) | {r['learner']} | {r['accuracy']:.1f} | "
                     f"{cell(r['py_per_s'], ',.0f')} | {cell(r['c_per_s'], ',.0f')} | {cell(r['mismatches'], 'd')} | "
                     f"{cell(r['state_bytes'], ',d')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="first N rows of each stream")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-arf", action="store_true", help="leave out River's ARF (the slowest)")
    parser.add_argument("--device-rows", type=int, default=4, help="rows test-then-trained under QEMU per run")
    parser.add_argument("--no-device", action="store_true", help="leave out the QEMU instruction counts")
    parser.add_argument("--no-accuracy", action="store_true", help="only the QEMU instruction counts")
    args = parser.parse_args(argv)
    results = [] if args.no_accuracy else run(args.rows, not args.no_arf)
    counts = [] if args.no_device else device_counts(args.device_rows)
    if args.json:
        print(json.dumps({"accuracy": results, "instructions": counts}))
        return 0
    if results:
        rows_used = {name: len(y) for name, _, y in streams(args.rows)}
        print(table(results, rows_used))
    if counts:
        print(f"\nExecuted instructions per call under QEMU (SEA stream, {args.device_rows} rows per run, means)\n")
        print(device_table(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
