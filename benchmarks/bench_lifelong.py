"""Benchmark: class-incremental lifelong learning (Korycki and Krawczyk, "Streaming Decision Trees for Lifelong
Learning", section 4): HT, HT+AE, IRF and IRF+AE of edgestream against River's Hoeffding tree and adaptive random
forest, in the same run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_lifelong.py [--trees T] [--plot FILE] [--json] [--no-arf]

Protocol (the paper's): the training rows are ordered class after class (each class once, file order within a
class, classes in label order); every learner learns them one at a time; after each class batch the hold-out
accuracy of every class seen so far is measured on the test rows, and their mean is the batch's accuracy (the
paper's Fig. 2); "avg" is the mean over the batches (the paper's Table 1), "final" the accuracy on the whole test set
after the last batch (all classes).

Streams: pendigits and optdigits (their train/test splits in ``../shared/data``, skipped if absent) and a
generated one, ``make_stream("blobs", ...)`` with 10 classes and 20 features (hold-out: fresh rows of the same
blobs).

Learners: edgestream's with the paper's settings (delta 0.01, tie threshold 0.05, split step 0.1, split wait 100,
bagging lambda 5): HT and HT+AE with a pool of 64 leaves, IRF and IRF+AE with ``--trees`` trees (default 20) of 32
leaves, and the configurations the budget manager plans for 16 KiB (HT+AE) and 64 KiB (IRF+AE) of RAM on
an STM32F411 ("HT+AE 16K", "IRF+AE 64K": a smaller pool, fewer trees); they run on the C runtime (``es_hoeffding.c`` through cffi, from the state the Python model exports),
and HT+AE is also run through the Python specification on every stream: "mismatches" counts the hold-out
predictions where the two differ (0 expected, they are bit-identical). River: ``HoeffdingTreeClassifier(
grace_period=100, delta=0.01, tau=0.05)`` and ``ARFClassifier(n_models=T, seed=1)``. Memory: edgestream's is the
device state in bytes (the C struct), River's its ``_raw_memory_usage`` at the end.

The paper's MNIST figures (Table 1: HT .628, HT+AE .840, IRF .866, IRF+AE .965; 40 trees, features 784 raw
pixels) are printed beside for orientation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from river import forest, tree

from edgestream import learners
from edgestream.boards import load_board
from edgestream.budget import plan
from edgestream.data import load_csv, make_stream
from edgestream.learners.hoeffding import HoeffdingTreeClassifier, IncrementalRandomForest
from edgestream.simulate import RuntimeLearner

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PAPER_MNIST = {"HT": 0.628, "HT+AE": 0.840, "IRF": 0.866, "IRF+AE": 0.965}
SETTINGS = dict(grace_period=100, delta=0.01, tie_threshold=0.05, split_steps=10)
START_ROWS = 1000
BOARD = "stm32f411"


def streams():
    out = []
    for name in ("pendigits", "optdigits"):
        train, test = DATA / f"{name}.train.csv", DATA / f"{name}.test.csv"
        if train.is_file() and test.is_file():
            X, y, _ = load_csv(train, 0, no_header=True)
            Xt, yt, _ = load_csv(test, 0, no_header=True)
            out.append((name, X, y, Xt, yt))
        else:
            print(f"note: {train} is absent, {name} skipped", file=sys.stderr)
    X, y = make_stream("blobs", 14_000, seed=3, n_classes=10, n_features=20, spread=2.0, distance=1.5)
    out.append(("blobs", X[:10_000], y[:10_000], X[10_000:], y[10_000:]))
    return [(name, np.asarray(X, np.float32), np.asarray(y), np.asarray(Xt, np.float32), np.asarray(yt))
            for name, X, y, Xt, yt in out]


def class_order(y: np.ndarray) -> np.ndarray:
    return np.argsort(y, kind="stable")


class Device:
    """A learner's exported state learning and predicting through the C runtime."""

    def __init__(self, learner):
        self.runtime = RuntimeLearner(learner).load_export(learner)
        self.classes = learner.classes_
        self.state_bytes = learner.state_bytes()

    def learn(self, x, label: int) -> None:
        status = self.runtime.learn(x, label)
        if status:
            raise RuntimeError(f"es_hoeffding_learn returned {status}")

    def predict(self, X) -> np.ndarray:
        return self.classes[np.argmax(self.runtime.predict_proba(X), axis=1)]


class River:
    def __init__(self, model, n_features):
        self.model = model
        self.names = [f"x{j}" for j in range(n_features)]

    def learn(self, x, label) -> None:
        self.model.learn_one(dict(zip(self.names, x.tolist())), label)

    def predict(self, X) -> np.ndarray:
        out = [self.model.predict_one(dict(zip(self.names, x.tolist()))) for x in X]
        return np.array([-1 if p is None else p for p in out])


def batch_accuracy(predicted, yt, seen) -> float:
    """Mean over the classes seen so far of their hold-out accuracy."""
    return float(np.mean([np.mean(predicted[yt == k] == k) for k in seen]))


def run_protocol(learner, X, y, Xt, yt, encode=None):
    """(accuracy after each class batch, final predictions on the test rows, seconds)."""
    order = class_order(y)
    X, y = X[order], y[order]
    curve, seen, start = [], [], time.perf_counter()
    for k in np.unique(y):
        for x, label in zip(X[y == k], y[y == k]):
            learner.learn(x, encode(label) if encode else label)
        seen.append(k)
        predicted = learner.predict(Xt)
        curve.append(batch_accuracy(predicted, yt, seen))
    return curve, predicted, time.perf_counter() - start


class Python:
    """The Python specification behind the same interface."""

    def __init__(self, learner):
        self.learner = learner

    def learn(self, x, label: int) -> None:
        self.learner.learn_encoded(x, label)

    def predict(self, X) -> np.ndarray:
        return self.learner.predict(X)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=20, help="trees of IRF, IRF+AE and River's ARF (default 20)")
    parser.add_argument("--plot", default="benchmarks/bench_lifelong.png", help="the Fig. 2 style plot (PNG)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-arf", action="store_true", help="leave out River's ARF (the slowest)")
    parser.add_argument("--no-python", action="store_true", help="skip the Python replica of HT+AE")
    args = parser.parse_args(argv)

    results = {}
    for name, X, y, Xt, yt in streams():
        classes = np.unique(y)
        start = X[class_order(y)][:START_ROWS]  # what the device sees first: the first class
        ours = {"HT": HoeffdingTreeClassifier(max_leaves=64, propagation=False, **SETTINGS),
                "HT+AE": HoeffdingTreeClassifier(max_leaves=64, **SETTINGS),
                "IRF": IncrementalRandomForest(n_trees=args.trees, max_leaves=32, propagation=False, **SETTINGS),
                "IRF+AE": IncrementalRandomForest(n_trees=args.trees, max_leaves=32, **SETTINGS)}
        board = load_board(BOARD)
        for label, learner, ram in (("HT+AE 16K", "hoeffding", 16), ("IRF+AE 64K", "irf", 64)):
            planned = plan(learner, board, X.shape[1], len(classes), ram=ram * 1024, **SETTINGS)
            ours[label] = learners.get(learner).make(**planned.params)
        rows = {}
        for label, learner in ours.items():
            learner.start(start, classes)
            device = Device(learner)
            curve, predicted, seconds = run_protocol(device, X, y, Xt, yt, learner.encode_label)
            rows[label] = {"curve": curve, "avg": float(np.mean(curve)), "final": float(np.mean(predicted == yt)),
                           "memory": device.state_bytes, "seconds": seconds, "predicted": predicted}
            if label == "HT+AE" and not args.no_python:
                replica = HoeffdingTreeClassifier(max_leaves=64, **SETTINGS).start(start, classes)
                _, python_predicted, _ = run_protocol(Python(replica), X, y, Xt, yt, replica.encode_label)
                rows[label]["mismatches"] = int((python_predicted != predicted).sum())
        rivers = {"River HT": lambda: tree.HoeffdingTreeClassifier(grace_period=100, delta=0.01, tau=0.05)}
        if not args.no_arf:
            rivers["River ARF"] = lambda: forest.ARFClassifier(n_models=args.trees, seed=1)
        for label, make in rivers.items():
            model = River(make(), X.shape[1])
            curve, predicted, seconds = run_protocol(model, X, y, Xt, yt)
            rows[label] = {"curve": curve, "avg": float(np.mean(curve)), "final": float(np.mean(predicted == yt)),
                           "memory": int(model.model._raw_memory_usage), "seconds": seconds}
        for row in rows.values():
            row.pop("predicted", None)
        results[name] = rows
        if not args.json:
            print_table(name, rows, len(X), len(Xt), X.shape[1], len(classes))
    if args.json:
        print(json.dumps({"paper_mnist": PAPER_MNIST, "results": results}))
    if args.plot:
        plot(results, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr if args.json else sys.stdout)
    return 0


def print_table(name, rows, n_train, n_test, d, c):
    print(f"\n{name}: {n_train} training rows in {c} class batches, {n_test} hold-out rows, {d} features")
    print(f"  {'learner':<11} {'avg':>6} {'final':>6} {'paper MNIST':>11} {'memory':>12} {'seconds':>8}  "
          f"{'mismatches':>10}  accuracy after each batch")
    for label, row in rows.items():
        paper = PAPER_MNIST.get(label)
        print(f"  {label:<11} {row['avg']:6.3f} {row['final']:6.3f} {'' if paper is None else f'{paper:.3f}':>11} "
              f"{row['memory']:>12,} {row['seconds']:8.1f}  {row.get('mismatches', ''):>10}  "
              + " ".join(f"{v:.2f}" for v in row["curve"]))


STYLE = {"HT+AE 16K": ("^", "tab:cyan", "-."), "IRF+AE 64K": ("o", "tab:orange", "-."), "HT": ("^", "tab:blue", ":"), "HT+AE": ("^", "tab:blue", "-"), "IRF": ("o", "tab:red", ":"),
         "IRF+AE": ("o", "tab:red", "-"), "River HT": ("v", "tab:gray", "--"), "River ARF": ("s", "tab:green", "--")}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.6), squeeze=False)
    for ax, (name, rows) in zip(axes[0], results.items()):
        for label, row in rows.items():
            marker, color, line = STYLE[label]
            ax.plot(range(1, len(row["curve"]) + 1), row["curve"], marker=marker, color=color, linestyle=line,
                    label=label, markersize=4)
        ax.set_title(name)
        ax.set_xlabel("class batch")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("average class accuracy")
    axes[0][-1].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
