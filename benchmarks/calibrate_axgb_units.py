"""Calibration of AXGB's work units: executed instructions per learn call against the work each call did.

Run from the repository root::

    .venv/bin/python benchmarks/calibrate_axgb_units.py [--rows N] [--classes 2 3] [--boards stm32f411 rp2040]

For each class count, AXGB_A[r] with the depth and bins of the 8 KiB plan on an STM32F411
(``benchmarks/bench_axgb.py``), ``window_max`` 64 and 8 members so that a short run holds many jobs, with
its training spread (``work_per_call`` the smallest that keeps up with ``window_min`` 16), learns in Python
until its ensemble is full and its window at ``window_max``, is exported there, and test-then-trains the next
rows under QEMU with instruction counts (``targets.run(..., instructions=True)``). Python learns the same rows
and records what every call did (``AdaptiveXGBoost.last_work_``: samples of the margins phase and their member
walks, histogram samples, scanned bins, decided nodes, partition steps; and ADWIN's cut tests, pass starts and
queued bits). A least-squares fit of the instructions on those counts gives the instructions of one piece of
work of each kind, per core, and divided by ``edgestream.learners.axgb.unit_weights`` the instructions of
one unit in each phase (the weights are chosen to make these about equal on the Cortex-M4F).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from edgestream import adwin as ad
from edgestream import data
from edgestream.budget import plan
from edgestream.boards import load_board
from edgestream.export import export_bundle
from edgestream.learners.axgb import AdaptiveXGBoost, unit_weights
from edgestream.targets import run

KINDS = ("grad", "walks", "hist", "scan", "node", "part", "cuts", "logs", "queued")


def stream(n_classes: int, rows: int):
    if n_classes == 2:
        X, y = data.make_stream("sea", rows, seed=1)
    else:
        X, y = data.make_stream("blobs", rows, seed=1, n_classes=n_classes)
    return X.astype(np.float32), y


def learner_for(X, y, work_per_call: int | None = None) -> AdaptiveXGBoost:
    """The 8 KiB plan's depth and bins with ``window_max`` 64 and 8 members (many jobs in a short run)."""
    classes = np.unique(y)
    params = plan("axgb", load_board("stm32f411"), X.shape[1], len(classes), ram=8 * 1024, strategy="replace",
                  drift_detection=True).params
    model = AdaptiveXGBoost(**dict(params, window_max=64, members=8))
    if work_per_call is None:
        work_per_call = model.min_work_per_call(X.shape[1], len(classes))
    model.set_params(work_per_call=work_per_call)
    return model.fit_bins(X[:1000]).set_classes(classes)


class Counting:
    """Counts ADWIN's cut tests, pass starts and insertions (its functions) while active."""

    def __init__(self):
        self.cuts = self.logs = self.inserts = 0
        self._cut, self._log, self._insert = ad.cut_holds, ad.ln_ln_q24, ad.ADWIN._insert

    def __enter__(self):
        def cut(*args):
            self.cuts += 1
            return self._cut(*args)

        def log(n):
            self.logs += 1
            return self._log(n)

        def insert(detector, value):
            self.inserts += 1
            return self._insert(detector, value)

        ad.cut_holds, ad.ln_ln_q24, ad.ADWIN._insert = cut, log, insert
        return self

    def __exit__(self, *exc):
        ad.cut_holds, ad.ln_ln_q24, ad.ADWIN._insert = self._cut, self._log, self._insert


def calls(n_classes: int, rows: int, boards: list[str]) -> tuple[np.ndarray, dict]:
    """(work of every device call: rows x KINDS, {board: instructions per call})."""
    X, y = stream(n_classes, 20_000)
    learner = learner_for(X, y)
    start = 0
    while not (learner.window == learner.window_max and learner.n_members == learner.members and learner.phase == 0):
        learner.learn_one(X[start], y[start])
        start += 1
    X, y = X[start:start + rows], y[start:start + rows]
    with tempfile.TemporaryDirectory() as tmp:
        bundle = export_bundle(learner, Path(tmp) / "b", name="axgb")
        counts = {board: run(bundle, board, X, y, learn=True, instructions=True, timeout=1800).instructions["learn"]
                  for board in boards}
    work = []
    with Counting() as adwin:
        for x, label in zip(X, y):
            a = learner.adwin_
            before = (adwin.cuts, adwin.logs, adwin.inserts, a.phase == ad.IDLE and a.queue_len == 0)
            learner.learn_one(x, label)
            queued = adwin.inserts - before[2] - before[3]  # inserted from the queue
            work.append([learner.last_work_[k] for k in KINDS[:6]] + [adwin.cuts - before[0], adwin.logs - before[1],
                                                                      queued])
    return np.asarray(work, dtype=float), counts


def fit(work: np.ndarray, instructions: np.ndarray) -> tuple[np.ndarray, float]:
    """Least squares with a constant: (coefficients per kind, constant); kinds that never occur get 0."""
    used = work.any(axis=0)
    A = np.column_stack([work[:, used], np.ones(len(work))])
    solution, *_ = np.linalg.lstsq(A, instructions.astype(float), rcond=None)
    coefficients = np.zeros(work.shape[1])
    coefficients[used] = solution[:-1]
    return coefficients, float(solution[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400, help="device rows per run")
    parser.add_argument("--classes", type=int, nargs="*", default=[2, 3])
    parser.add_argument("--boards", nargs="*", default=["stm32f411", "rp2040"])
    args = parser.parse_args(argv)
    for n_classes in args.classes:
        work, counts = calls(n_classes, args.rows, args.boards)
        for board, instructions in counts.items():
            coefficients, constant = fit(work, instructions)
            residual = instructions - (work @ coefficients + constant)
            weights = unit_weights(1 if n_classes == 2 else n_classes)
            per_unit = {k: c / weights[k if k != "walks" else "walk"] for k, c in zip(KINDS[:6], coefficients)}
            print(f"{n_classes} classes, {board}: constant {constant:,.0f}; per piece of work: "
                  + ", ".join(f"{k} {c:,.0f}" for k, c in zip(KINDS, coefficients))
                  + f"; residual max {np.abs(residual).max():,.0f}, learn mean {instructions.mean():,.0f}, "
                    f"worst {instructions.max():,}")
            print("    instructions per unit (unit_weights): "
                  + ", ".join(f"{k} {v:,.0f}" for k, v in per_unit.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
