"""Calibration of every online learner's cost model (:mod:`edgestream.costs`) on exact emulator counts.

Run from the repository root::

    .venv/bin/python benchmarks/calibrate_cost.py [--learners NAME ...] [--cores ARCH ...] [--configs N] [--steps N] [--counts FILE] [--write]
    .venv/bin/python benchmarks/calibrate_cost.py --from FILE [--write]

For each learner with ``cost_terms`` and each core, ``CONFIGS_PER_LEARNER`` configurations spread evenly over
those of its search grid (sizes and structural options) whose budget fits the core's board within ``FIT_RAM``
(the 16 KiB of the emulated Cortex-M0; 6 KiB of the ATmega2560's 8 KiB), each on one of ``STREAMS`` in turn (3 to 10
features, 2 to 4 classes), and the ``COVERAGE`` sizes with every learning variant of the search on every stream
(the budget's largest plans, which an even spread of the configurations fitting 16 KiB can miss; for the
Hoeffding tree a size with room to split after the warm-up, whose splits the worst learn call holds), and for the
learners whose regressor does other work than their classifier in the same runtime (``REGRESSION_FORMS``) the
regressor's configurations on ``REGRESSION_STREAMS`` (piecewise linear targets of 4 and 12 features): Python
learns ``WARMUP`` rows (bin edges or input scaling from the first ones, as ``fit``; AXGB also the windows that
fill its ensemble, :func:`warmup_rows`), the model is exported and the emulator test-then-trains the next
``--steps`` rows (``STEPS`` per learner by default: enough for a few of its expensive steps, and whole periods of
shrubs' ``update_every``) on Cortex-M4F (``stm32f411``, QEMU's mps2-an386), Cortex-M0 (``rp2040``'s code on QEMU's
micro:bit), AVR6 (``atmega2560`` under simavr) and RISC-V RV32IMC (``esp32c3``'s code on QEMU's virt; the RV32IMAC
boards run the same instructions), counting every predict and learn call
(``targets.run(..., instructions=True)``: instructions from QEMU's log, CPU cycles from the AVR harness's Timer1).

Where a run's work depends on more than its configuration, the counted rows are replayed in the specification
(:func:`regime`) and the count keeps what they did for the learner's ``cost_terms`` (a Hoeffding tree whose pool is
full attempts no split, its trees start fewer attempts than one per grace period of weight, and a leaf that starts
empty watches no class for a while; an AXGB ensemble emptied by a
drift walks fewer members, and a count of a few windows meets more or less than their share of the training
jobs spread over its calls); the cost models predict the steady state of a full model. Per learner, core and
quantity (mean and worst prediction, mean and worst learn call), non-negative least squares fits the learner's
terms (of the learners of one runtime together, ``SHARED``) to the configurations whose index is not a multiple
of ``HOLD_OUT``; the table then shows predicted against measured for every configuration, those held out
marked, and the largest error of each quantity on the held-out ones. ``--write`` stores the coefficients in
``edgestream/cost_models.json`` (the ones the budget and the search use); ``--counts FILE`` saves the counts,
``--from FILE`` refits saved counts.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from scipy.optimize import nnls
from tqdm import tqdm

from edgestream import learners, targets
from edgestream.boards import load_board
from edgestream.budget import configurations
from edgestream.costs import COEFFICIENTS_FILE, QUANTITIES, predicted
from edgestream.data import make_stream
from edgestream.export import export_bundle
from edgestream.learners.axgb import IDLE, AdaptiveXGBoost
from edgestream.learners.detect import HISTOGRAM_BINS, WindowedDetector
from edgestream.learners.hoeffding import LEAF, attempt_call_work
from edgestream.online import start_online
from edgestream.task import ANOMALY, REGRESSION

CORES = {"armv7e-m": "stm32f411", "armv6-m": "rp2040", "avr6": "atmega2560", "rv32imc": "esp32c3"}
STREAMS = (("sea", {}), ("hyperplane", {}), ("blobs", {"n_features": 6, "n_classes": 4}))
CONFIGS_PER_LEARNER = 20
# Beyond the evenly spread configurations: sizes the budget plans whose terms the spread leaves far outside its own
# (the emulated Cortex-M0's 16 KiB hold few large ensembles, and the spread met none with 16 shrubs there), each
# with every point of the learner's search grid of that size on every stream (the streams in turn, then again from
# the next one, ...), within the board's RAM up to FIT_RAM (the ATmega2560's whole 8 KiB, as bench_device's plans),
# counted at indices from COVERAGE_INDEX (held out by the same rule)
COVERAGE = {"shrubs": ({"window_size": 64, "max_shrubs": 16, "max_depth": 4},),
            "loda": ({"n_projections": 100, "n_bins": 32},),  # the Cortex-M4F's 16 KiB plan
            # a tree with room to split after the warm-up, splitting within the counted rows on SEA and blobs (the
            # worst learn call: the split attempt's last candidates, its decision and the split)
            "hoeffding": ({"max_leaves": 16, "propagation": False, "grace_period": 100},)}
COVERAGE_INDEX = 100
# The regressors that do other work than their classifier in the same runtime (the Hoeffding tree's bins and linear
# leaves, the shrubs' variance scans; IRF's regressor shares its model, SHARED), REGRESSION_CONFIGS of their search
# grid counted on REGRESSION_STREAMS at indices from REGRESSION_INDEX (held out by the same rule); their terms are
# columns of their own. BLS's and AXGB's regressors run their classifier's steps with one output: their classifiers'
# models hold (benchmarks/validate_cost.py)
REGRESSION_FORMS = ("hoeffding", "shrubs")
REGRESSION_STREAMS = (("planes", {"n_features": 4}), ("planes", {"n_features": 12}))
REGRESSION_CONFIGS = 12
REGRESSION_INDEX = 200
HOLD_OUT = 4  # configurations 0, 4, 8, ... are predicted without being fitted on
FIT_RAM = 16 * 1024  # the emulated Cortex-M0's RAM
WARMUP = 2000
# enough for a few expensive steps (bls: every call alike; irf: its trees' Poisson weights reach the grace often)
# the windowed detectors (hst, loda): rows enough that a window swap (their worst learn call) is counted
STEPS = {"shrubs": 48, "bls": 4, "hoeffding": 400, "irf": 30, "axgb": 700, "hst": 260, "loda": 260}
# learners that run the same C code, whose terms weigh the same work: one model for both (IRF's forest is HT+AE trees)
SHARED = {"irf": "hoeffding"}
MEASURED = {"predict_mean": ("predict", np.mean), "predict_worst": ("predict", np.max),
            "learn_mean": ("learn", np.mean), "learn_worst": ("learn", np.max)}
# the prediction call of a detector and of a regressor (targets.CALLS)
PREDICTION_CALL = {ANOMALY: "score", REGRESSION: "predict_raw"}


def task_of_learner(name: str) -> str:
    """The task a learner is calibrated in: its first form (a detector's, for a learner that only detects)."""
    return learners.get(name).tasks[0]


@functools.cache
def calibration_configs(name: str, arch: str, n: int = CONFIGS_PER_LEARNER,
                        task: str | None = None) -> list[tuple[str, dict, dict]]:
    """(stream, stream options, parameters) of the configurations counted for a learner on a core: those of its
    search grid whose budget fits the core's board within ``FIT_RAM``, ``n`` of them evenly spread, each on the
    next stream in turn (of ``REGRESSION_STREAMS`` for the regression ``task``)."""
    task = task or task_of_learner(name)
    streams = REGRESSION_STREAMS if task == REGRESSION else STREAMS
    ram = min(FIT_RAM, load_board(CORES[arch]).ram_bytes * 3 // 4)  # the rest for the harness and the C library
    configs = []
    for i in range(n):
        stream, options = streams[i % len(streams)]
        fitting = fitting_params(name, arch, stream, ram, learners.get(name, task).task_grid(task), options, task)
        configs.append((stream, options, fitting[round(i * (len(fitting) - 1) / (n - 1))]))
    return configs


@functools.cache
def coverage_configs(name: str, arch: str) -> list[tuple[str, dict, dict]]:
    """(stream, stream options, parameters) of the ``COVERAGE`` configurations of a learner on a core, those whose
    budget fits the core's board within its RAM, at most ``FIT_RAM``."""
    ram = min(FIT_RAM, load_board(CORES[arch]).ram_bytes)
    points = [point for size in COVERAGE.get(name, ()) for point in learners.get(name).search_grid
              if size.items() <= point.items()]
    configs = []
    for i, point in enumerate(points * len(STREAMS)):
        stream, options = STREAMS[(i + i // len(points)) % len(STREAMS)]
        configs += [(stream, options, params) for params in fitting_params(name, arch, stream, ram, (point,))]
    return configs


def fitting_params(name: str, arch: str, stream: str, ram: int, grid: tuple[dict, ...], options: dict | None = None,
                   task: str | None = None) -> list[dict]:
    """The parameters of the configurations of ``grid`` whose budget for ``stream`` (with ``options``, by default
    its ``STREAMS`` ones) fits the core's board within ``ram``, in the grid's order."""
    X, y = stream_rows(stream, 200, dict(STREAMS)[stream] if options is None else options)
    task = task or task_of_learner(name)
    n_classes = 1 if task in (ANOMALY, REGRESSION) else len(np.unique(y))
    return [b.params for b in configurations(name, load_board(CORES[arch]), X.shape[1], n_classes, ram=ram,
                                             grid=grid, task=task) if b.fits]


def config_at(name: str, index: int, arch: str, n: int) -> tuple[str, dict, dict]:
    """The configuration counted at ``index``: one of the ``n`` evenly spread, of the coverage ones or of the
    regression form's."""
    if index >= REGRESSION_INDEX:
        return calibration_configs(name, arch, REGRESSION_CONFIGS, REGRESSION)[index - REGRESSION_INDEX]
    if index >= COVERAGE_INDEX:
        return coverage_configs(name, arch)[index - COVERAGE_INDEX]
    return calibration_configs(name, arch, n)[index]


def warmup_rows(name: str, params: dict) -> int:
    """Rows Python learns before the device counts: ``WARMUP`` (for a windowed detector up to where its latest
    window is half full), and for AXGB also the windows that fill its ensemble (a prediction and a job's margins walk every member: a model counted with fewer members than ``K``
    costs less than it will once it has learned that much)."""
    if windowed(name):  # the latest window half full when the count starts: a window swap falls within it
        window = learners.get(name).make(ANOMALY, **params).window
        return WARMUP + max(0, window - WARMUP % window - STEPS[name] // 2)
    if name != "axgb":
        return WARMUP
    model = learners.get(name).make(**params)
    windows = model._windows()
    return WARMUP + sum(windows) + max(0, params["members"] - len(windows)) * params["window_max"]


def stream_rows(stream: str, n: int, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` rows of a counted stream: a built-in one (:func:`edgestream.data.make_stream`), or one of
    ``SOURCES`` (streams a validation adds: regression targets, anomalies), always from seed 1."""
    if stream in SOURCES:
        return SOURCES[stream](n, np.random.default_rng(1), **options)
    return make_stream(stream, n, seed=1, **options)


def planes(n: int, rng, n_features: int = 4, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """A piecewise linear target (as Planes2D): features uniform in [-1, 1], the target one random plane of them
    where the first feature is positive and another elsewhere, with Gaussian noise."""
    X = rng.uniform(-1.0, 1.0, (n, n_features))
    planes = rng.normal(size=(2, n_features))
    return X, np.where(X[:, 0] > 0, X @ planes[0], X @ planes[1]) + noise * rng.normal(size=n)


# stream name -> rows(n, rng, **options): the streams beyond make_stream's (benchmarks/validate_cost.py adds its own)
SOURCES: dict = {"planes": planes}


def counted_model(name: str, stream: str, options: dict, params: dict, steps: int, learned: int | None = None,
                  task: str | None = None):
    """The model as the emulator receives it (Python has learned the warm-up rows) and the rows it counts; or,
    with ``learned``, after that many rows, with the rows that follow. ``task``: the learner's form (by default
    the one it is calibrated in)."""
    warmup = warmup_rows(name, params)
    learned = warmup if learned is None else learned
    X, y = stream_rows(stream, warmup + steps, options)
    task = task or task_of_learner(name)
    model = learners.get(name).make(task, **params)
    if task == ANOMALY:  # learns rows alone, its work range from the first ones
        model.partial_fit(X[:learned])
        return model, X[learned:], y[learned:], warmup
    model = start_online(model, X, y if task == REGRESSION else np.unique(y))  # a target scale, or classes
    model.partial_fit(X[:learned], y[:learned])
    return model, X[learned:], y[learned:], warmup


def regime(name: str, stream: str, options: dict, params: dict, steps: int, task: str | None = None) -> dict:
    """What the counted rows did that the configuration does not decide, replayed in the specification, for the
    learner's ``cost_terms``: for the Hoeffding learners whether a split attempt ran (a tree whose pool is full
    attempts none until a drift prunes it; the prediction, for trees with room, counts attempts), the share of
    the rows a tree learned whose class its leaf's detector watched (:func:`watched_share`) and the attempt work
    of the costliest call (:func:`attempt_work`); for AXGB what
    :func:`axgb_regime` tells; for a windowed detector what :func:`window_regime` tells."""
    regressor = (task or task_of_learner(name)) == REGRESSION
    if regressor and name not in ("hoeffding", "irf"):  # the terms' defaults: those regressors are not replayed
        return {}
    if name == "axgb":
        return axgb_regime(stream, options, params, steps)
    if name not in ("hoeffding", "irf") and not windowed(name):
        return {}
    model, X, y, _ = counted_model(name, stream, options, params, steps, task=task)
    if regressor:
        return hoeffding_regression_regime(model, X, y)
    return window_regime(model, X) if windowed(name) else hoeffding_regime(model, X, y)


def windowed(name: str) -> bool:
    """Whether a learner is a windowed detector (hst, loda), whose learn calls swap windows now and then."""
    detector = learners.get(name).detector
    return detector is not None and issubclass(detector, WindowedDetector)


def window_regime(model, X) -> dict:
    """A windowed detector's :func:`regime` over the rows ``X`` from the model's state now (replayed on a copy): the
    window swaps per call (``swap_rate``) and the histogram bins the swaps' threshold scans visited from the top,
    on average and at most (``scanned``, ``scanned_worst``; read from the threshold each scan returned)."""
    replay = copy.deepcopy(model)
    replay.use_engine = False
    scans, swaps = [], 0
    for row in X:
        swapping, scanning = replay.filled == replay.window - 1, replay.ready
        replay.learn_encoded(row)
        swaps += swapping
        if swapping and scanning:  # the scan stopped at bin b and returned (b + 1) * 256, or 0 after all bins
            scans.append(HISTOGRAM_BINS if replay.threshold == 0 else HISTOGRAM_BINS + 1 - (replay.threshold >> 8))
    return {"swap_rate": swaps / len(X), "scanned": float(np.mean(scans)) if scans else 0.0,
            "scanned_worst": max(scans, default=0)}


def hoeffding_regime(model, X, y) -> dict:
    """A Hoeffding learner's :func:`regime` over the rows ``X, y`` from its state now (replayed on a copy): also
    the split attempts and revisits that started per call (``attempt_rate``; trees that fill their pool, wait for
    a revisit or learn rows of lower weight start fewer than the plan's one per grace period of weight), and the
    attempt work of the costliest call (``worst_call``, :func:`attempt_work`) and per call (``attempt_work``)."""
    replay = copy.deepcopy(model)
    replay.use_engine = False
    learned, watched = watched_share(replay)
    started = [0]
    for method in ("_start_attempt", "_start_revisit"):
        setattr(replay, method, counted(getattr(replay, method), started))
    work = attempt_work(replay)
    attempts, worst, total = False, [0.0, 0.0, 0.0], 0.0
    for row, label in zip(X, y):
        work[:] = [0.0, 0.0, 0.0]
        replay.partial_fit(row[None], [label])
        attempts |= replay.last_units_ > 0
        worst = max(worst, list(work), key=attempt_call_work)
        total += attempt_call_work(work)
    return {"attempts": bool(attempts), "watched": watched[0] / learned[0] if learned[0] else 1.0,
            "attempt_rate": started[0] / len(X), "worst_call": worst, "attempt_work": total / len(X)}


def attempt_work(tree) -> list[float]:
    """The attempt work of a Hoeffding learner's calls as they run (the cost terms' ``worst_call``): its
    ``_evaluate``, ``_decide`` and ``_split`` add the candidates scored times the snapshot's classes with an
    estimator (a feature without range scores none; a revisit's decision scores its own split too), the
    decisions and the splits times the class slots; the caller zeroes it before each call."""
    work = [0.0, 0.0, 0.0]
    evaluate, decide, split = tree._evaluate, tree._decide, tree._split
    classes = tree.snap_est.shape[-1]

    def scored(t: int) -> int:
        return int((tree.snap_est[t] != 0).sum())

    def evaluating(t: int, pos: int, n: int) -> None:
        steps = tree.split_steps - 1
        features = tree.order[t, np.arange(pos, pos + n) // steps].astype(np.int64)
        work[0] += int((tree.snap_high[t, features] > tree.snap_low[t, features]).sum()) * scored(t)
        evaluate(t, pos, n)

    def deciding(t: int) -> None:
        work[0] += scored(t) * int(tree.feature[t, tree.attempt_node[t]] != LEAF)
        work[1] += classes
        decide(t)

    def splitting(*args) -> None:
        work[2] += classes
        split(*args)
    tree._evaluate, tree._decide, tree._split = evaluating, deciding, splitting
    return work


def hoeffding_regression_regime(model, X, y) -> dict:
    """A Hoeffding regressor's :func:`regime` over the rows ``X, y`` from its state now (replayed on a copy): the
    split attempts per call (``attempt_rate``), whether any ran (``attempts``) and whether one split
    (``splits``)."""
    replay = copy.deepcopy(model)
    replay.use_engine = False
    attempts, splits = [0], [0]
    replay._attempt, replay._split = counted(replay._attempt, attempts), counted(replay._split, splits)
    replay.partial_fit(X, y)
    return {"attempts": attempts[0] > 0, "attempt_rate": attempts[0] / len(X), "splits": splits[0] > 0}


def counted(method, calls: list[int]):
    """``method``, adding one to ``calls[0]`` at every call."""
    def wrapper(*args):
        calls[0] += 1
        return method(*args)
    return wrapper


def watched_share(tree) -> tuple[list[int], list[int]]:
    """Counters of a Hoeffding learner's rows learned by a tree and of those its detectors watched (the leaf's
    naive Bayes prediction of a row whose class the leaf has established; a leaf that starts empty after a split
    without propagation watches none for a while): its ``_learn_tree`` and ``_watch_path`` count as they run."""
    learned, watched = [0], [0]
    tree._learn_tree, tree._watch_path = counted(tree._learn_tree, learned), counted(tree._watch_path, watched)
    return learned, watched


class JobLedger(AdaptiveXGBoost):
    """The specification, keeping where each training job starts and ends in the run's units (``units_``) and
    its window, target and split gains evaluated (``jobs_``: [first unit, end, window, target, gains])."""

    def _start_job(self) -> None:
        super()._start_job()
        self.jobs_.append([self.units_, None, self.job_window, self.job_target, 0])

    def _run_phase(self, budget: int) -> int:
        gains = self.last_work_["gain"]
        left = super()._run_phase(budget)
        self.units_ += budget - left  # as last_units_ counts them
        if self.jobs_:  # a phase runs within the job started last (one from before the replay is not kept)
            self.jobs_[-1][4] += self.last_work_["gain"] - gains
        return left

    def _idle(self) -> None:  # a job installed, or abandoned at a drift
        if self.jobs_ and self.jobs_[-1][1] is None:
            self.jobs_[-1][1] = self.units_
        super()._idle()


def axgb_regime(stream: str, options: dict, params: dict, steps: int) -> dict:
    """An AXGB count's members walked per prediction, on average and at most (a drift empties the ensemble); the
    rows of windows its calls trained, per row (each job weighs its window times the share of its units the
    counted calls ran; one in the steady state, but a count of a few windows meets more or less than their share
    of the jobs spread over it); the members the trained samples walked for their margins, on average (the
    replace strategy's targets run 0 to K - 1); and the split gains its jobs evaluated per trained sample. The rows before the count that a job under way at its start may
    have begun on are replayed too, and the last job is run to its end."""
    warmup = warmup_rows("axgb", params)
    lead = min(warmup, 2 * params["window_max"] + 64)  # a job ends within W_max calls of its start
    model, X, y, _ = counted_model("axgb", stream, options, params, steps, warmup - lead)
    ledger = copy.deepcopy(model)
    ledger.__class__, ledger.use_engine, ledger.units_, ledger.jobs_ = JobLedger, False, 0, []
    members = []
    for i, (row, label) in enumerate(zip(X, y)):
        if i == lead:
            first = ledger.units_
        if i >= lead:
            members.append(int(ledger.n_members))
        ledger.partial_fit(row[None], [label])
    last = ledger.units_
    while ledger.phase != IDLE:
        ledger._work(ledger.units_per_call_)
    trained = walked = gained = 0.0
    for start, end, window, target, gains in ledger.jobs_:
        share = max(0, min(end, last) - max(start, first)) / (end - start)
        trained += share * window
        walked += share * window * target
        gained += share * gains
    return {"members": float(np.mean(members)), "members_max": max(members), "trained": trained / steps,
            "targets": walked / trained if trained else 0.0, "gains": gained / trained if trained else 0.0}


def regime_of(row: dict) -> dict:
    """:func:`regime` of a saved count, replayed (the counts are deterministic: same stream, seed and rows)."""
    if row["index"] >= REGRESSION_INDEX:  # the stream of the row's feature count
        options = next(o for _, o in REGRESSION_STREAMS if o["n_features"] == row["n_features"])
        return regime(row["learner"], row["stream"], options, row["params"], row["steps"], REGRESSION)
    options = dict(next(o for s, o in STREAMS if s == row["stream"]))
    return regime(row["learner"], row["stream"], options, row["params"], row["steps"])


def count(name: str, index: int, arch: str, steps: int, n: int) -> dict | None:
    """Exact counts of one configuration of ``n`` on one core (None when it does not fit the emulated machine)."""
    stream, options, params = config_at(name, index, arch, n)
    counted = count_run(name, stream, options, params, arch, steps, REGRESSION if index >= REGRESSION_INDEX else None)
    return None if counted is None else {"learner": name, "index": index, **counted}


def count_run(name: str, stream: str, options: dict, params: dict, arch: str, steps: int,
              task: str | None = None) -> dict | None:
    """Exact counts (``MEASURED``) of a configuration on a stream, test-then-training ``steps`` rows on one core
    after the warm-up, with the run's :func:`regime` (None when the state does not fit the emulated machine)."""
    task = task or task_of_learner(name)
    model, X, y, warmup = counted_model(name, stream, options, params, steps, task=task)
    with tempfile.TemporaryDirectory(prefix="es-cost-") as tmp:
        bundle = export_bundle(model, Path(tmp) / "b", name="m")
        try:
            result = targets.run(bundle, CORES[arch], X, y, learn=True, timeout=3600, instructions=True)
        except targets.TargetError as error:  # the state does not fit the emulated machine's RAM
            print(f"{name} {params} on {CORES[arch]}: {error}", file=sys.stderr)
            return None
    measured = {q: float(reduce(result.instructions[PREDICTION_CALL.get(task, call) if call == "predict" else call]))
                for q, (call, reduce) in MEASURED.items()}
    return {"stream": stream, "arch": arch, "params": params, "n_features": X.shape[1],
            "n_classes": 1 if task in (ANOMALY, REGRESSION) else len(model.classes_), "steps": steps,
            "warmup": warmup, "regime": regime(name, stream, options, params, steps, task), **measured}


def terms_of(row: dict):
    return learners.get(row["learner"]).cost_terms(row["params"], row["n_features"], row["n_classes"],
                                                   **row.get("regime", {}))


def fit(rows: list[dict]) -> dict:
    """learner -> core -> quantity -> coefficients, fitted on the rows not held out; learners of one runtime
    (``SHARED``) fitted together, on the counts of both, and each gets the model of every core either was counted
    on (they run the same code)."""
    fitted: dict = {}
    for model, arch in sorted({(SHARED.get(r["learner"], r["learner"]), r["arch"]) for r in rows}):
        train = [r for r in rows if SHARED.get(r["learner"], r["learner"]) == model and r["arch"] == arch
                 and r["index"] % HOLD_OUT]
        if not train:
            continue
        coefficients = {}
        for quantity in QUANTITIES:
            terms = np.array([terms_of(r).of(quantity) for r in train], dtype=float)
            measured = np.array([r[quantity] for r in train])
            scale = measured  # relative least squares: every configuration weighs alike, small or large
            weights, _ = nnls(terms / scale[:, None], np.ones(len(train)))
            coefficients[quantity] = [round(float(c), 4) for c in weights]
        # the calibrated range: the largest value of each term the fit saw (rounded up)
        largest = {q: np.max([terms_of(r).of(q) for r in train], axis=0) for q in QUANTITIES}
        coefficients["largest_terms"] = {q: [float(np.ceil(v * 1e4) / 1e4) for v in largest[q]] for q in QUANTITIES}
        for name in sorted({r["learner"] for r in train} | {n for n, shared in SHARED.items() if shared == model}
                           | ({model} if model in SHARED.values() else set())):
            fitted.setdefault(name, {})[arch] = coefficients
    return fitted


def report(rows: list[dict], fitted: dict) -> None:
    print(f"{'learner':<10}{'core':<10}{'#':>3} {'stream':<11}"
          + "".join(f"{q + ' meas/pred':>30}" for q in QUANTITIES))
    worst_error: dict = {}
    for r in sorted(rows, key=lambda r: (r["learner"], r["arch"], r["index"])):
        coefficients = fitted.get(r["learner"], {}).get(r["arch"])
        if coefficients is None:
            continue
        cost = predicted(terms_of(r), coefficients)
        guess = {"predict_mean": cost.predict.mean, "predict_worst": cost.predict.worst,
                 "learn_mean": cost.learn.mean, "learn_worst": cost.learn.worst}
        held_out = r["index"] % HOLD_OUT == 0
        cells = []
        for q in QUANTITIES:
            error = guess[q] / r[q] - 1
            if held_out:
                key = (r["learner"], r["arch"], q)
                worst_error[key] = max(worst_error.get(key, 0.0), abs(error))
            cells.append(f"{r[q]:>12,.0f} {guess[q]:>10,.0f} {100 * error:+5.0f}%")
        print(f"{r['learner']:<10}{r['arch']:<10}{r['index']:>3}{'*' if held_out else ' '}{r['stream']:<11}"
              + "".join(f"{c:>30}" for c in cells))
    print("\n* held out (not fitted on). Largest error on the held-out configurations:")
    for (name, arch, q), error in sorted(worst_error.items()):
        print(f"  {name:<10}{arch:<10}{q:<15}{100 * error:5.1f}%")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", nargs="+", help="default: every learner with a cost model's terms")
    parser.add_argument("--steps", type=int, help="emulated learn steps per configuration (default: STEPS)")
    parser.add_argument("--configs", type=int, default=CONFIGS_PER_LEARNER,
                        help=f"configurations per learner and core (default {CONFIGS_PER_LEARNER})")
    parser.add_argument("--cores", nargs="+", choices=list(CORES), default=list(CORES), help="default: all")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--counts", type=Path, help="save the counts to this JSON file (as they come; the runs it "
                        "already holds are not counted again)")
    parser.add_argument("--from", dest="saved", type=Path, nargs="+", help="refit saved counts instead of counting")
    parser.add_argument("--write", action="store_true", help=f"store the coefficients in {COEFFICIENTS_FILE.name}")
    args = parser.parse_args(argv)
    names = args.learners or [s.name for s in learners.REGISTRY.values() if s.cost_terms is not None]
    if args.saved:
        rows = [r for path in args.saved for r in json.loads(path.read_text()) if r["learner"] in names]
    else:
        rows = json.loads(args.counts.read_text()) if args.counts and args.counts.exists() else []
        done = {(r["learner"], r["index"], r["arch"]) for r in rows}
        indices = {(name, arch): [*range(args.configs), *range(COVERAGE_INDEX, COVERAGE_INDEX
                                                                   + len(coverage_configs(name, arch))),
                                  *range(REGRESSION_INDEX, REGRESSION_INDEX
                                         + REGRESSION_CONFIGS * (name in REGRESSION_FORMS))]
                   for name in names for arch in args.cores}
        jobs = [(name, i, arch, args.steps or STEPS[name], args.configs) for (name, arch), each in indices.items()
                for i in each if (name, i, arch) not in done]
        with ProcessPoolExecutor(args.workers) as pool:
            futures = [pool.submit(count, *job) for job in jobs]
            for future in tqdm(as_completed(futures), total=len(futures), desc="counting", unit="run"):
                rows += [future.result()] if future.result() else []
                if args.counts:  # as they come: a long calibration keeps what it counted
                    args.counts.write_text(json.dumps(rows, indent=1) + "\n")
    fitted = fit(rows)
    report(rows, fitted)
    if args.write:
        stored = json.loads(COEFFICIENTS_FILE.read_text()) if COEFFICIENTS_FILE.exists() else {}
        for name, cores in fitted.items():  # the cores not counted now keep their coefficients
            stored.setdefault(name, {}).update(cores)
        COEFFICIENTS_FILE.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {COEFFICIENTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
