"""The budget that chooses by accuracy and by time: the most accurate configuration of an online learner, on the
given rows, among those that fit a board's RAM and flash and keep up with a sample rate.

The candidates are the learner's search grid (``LearnerSpec.search_grid``: its ``search`` configurations, else
its budget ladder), with the parameters the user fixed applied to each. Each gets its exact budget
(:func:`edgestream.budget.configurations`) and, when the learner has a cost model for the board's core
(``LearnerSpec.learn_cost``, calibrated on QEMU counts), its mean instructions per learn step (for shrubs, a step
that trains a new shrub amortized over ``update_every`` steps: the device keeps up on average and buffers the rows
that arrive during a training step). With ``rate`` (samples per second) a candidate keeps up when those fit in
``board.clock_hz / rate`` cycles (one instruction per cycle, a Cortex-M's best case: wait states slow it). Every
candidate that fits and keeps up is trained as ``fit`` trains it (bin edges from the first ``bins_rows`` rows,
then test-then-train over all rows in file order); the highest prequential accuracy wins, ties to the smaller
RAM, then to the earlier candidate. Everything is deterministic, so ``fit --ram`` and ``budget --ram`` agree.

The evaluations run in parallel worker processes (``concurrent.futures``), or on a Dask cluster when a scheduler
address is given (``pip install edgestream[dask]``).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from . import learners
from .budget import Budget, configurations, not_fitting
from .data import device_input
from .evaluate import prequential
from .online import BINS_ROWS, check_stream, start_online
from .ranges import Range

WORKERS = Range("workers", 1, 1024)  # local worker processes of a search
RATE = Range("rate", 0.0, None, float, above=True)  # samples per second the device must learn


CURVE_BUDGETS = tuple(kib * 1024 for kib in (2, 4, 8, 16, 32))


@dataclass
class Candidate:
    """One configuration: its budget, predicted time per learn step and (evaluated ones) accuracy."""

    budget: Budget
    instructions: float | None = None  # predicted per learn step on the board's core (None: no cost model)
    keeps_up: bool = True  # with a rate: instructions fit the cycles per sample
    accuracy: float | None = None  # prequential accuracy on the rows (None: not evaluated)
    samples_per_second: float | None = None  # host learning speed of the Python model

    @property
    def eligible(self) -> bool:
        return self.budget.fits and self.keeps_up

    def to_json(self) -> dict:
        return {"config": self.budget.config, "ram_bytes": self.budget.ram_bytes,
                "flash_bytes": self.budget.flash_bytes, "fits": self.budget.fits, "instructions": self.instructions,
                "keeps_up": self.keeps_up, "accuracy": self.accuracy, "samples_per_second": self.samples_per_second}


@dataclass
class Search:
    """The candidates of a search and the chosen one."""

    learner: str
    board: str
    clock_hz: int
    rate: float | None
    rows: int
    candidates: list[Candidate]
    chosen: int  # index into candidates
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> Candidate:
        return self.candidates[self.chosen]

    @property
    def budget(self) -> Budget:
        return self.best.budget

    def curve(self, budgets=CURVE_BUDGETS) -> dict[int, float]:
        """RAM budget -> the accuracy a search at that budget chooses (the best evaluated candidate that fits it),
        for the budgets up to this search's where some candidate fits."""
        evaluated = [c for c in self.candidates if c.accuracy is not None]
        curve = {}
        for ram in (ram for ram in budgets if ram <= self.budget.ram_budget):
            fitting = [c.accuracy for c in evaluated if c.budget.ram_bytes <= ram]
            if fitting:
                curve[ram] = max(fitting)
        return curve

    def to_json(self) -> dict:
        return {"rate": self.rate, "rows": self.rows, "clock_hz": self.clock_hz, "chosen": self.chosen,
                "candidates": [c.to_json() for c in self.candidates]}

    def to_text(self) -> str:
        evaluated = [c for c in self.candidates if c.accuracy is not None]
        best = self.best
        time = "" if best.instructions is None else (
            f", {best.instructions:,.0f} instructions per learn step predicted "
            f"({self.clock_hz / best.instructions:,.0f} samples/s at {self.clock_hz / 1e6:g} MHz)")
        rate = f" and keep up with {self.rate:g} samples/s" if self.rate else ""
        return (f"chosen by prequential accuracy on {self.rows} rows: {best.accuracy:.4f}{time}; "
                f"{len(evaluated)} of {len(self.candidates)} candidates fit{rate} and were evaluated")


def _accuracy(learner: str, params: dict, X, y, classes, bins_rows: int) -> tuple[float, float]:
    """Prequential accuracy and samples/s of one configuration, trained as ``fit`` trains it."""
    model = learners.get(learner).make(**params)
    X = device_input(X, model.input_dtype)
    start_online(model, X, classes, bins_rows)
    result = prequential(model, X, y)
    return result.accuracy, result.samples_per_second


def search(learner: str, board, X, y, ram: int | None = None, flash: int | None = None, rate: float | None = None,
           params: dict | None = None, optimize: str = "speed", bins_rows: int = BINS_ROWS, workers: int | None = None,
           scheduler: str | None = None, progress: bool = False) -> Search:
    """The most accurate configuration of the online ``learner`` on rows ``X``, ``y`` that fits ``ram`` and
    ``flash`` on ``board`` (the board's by default) and, with ``rate``, learns that many samples per second."""
    spec = learners.get(learner)
    if not spec.online:
        raise ValueError(f"choosing by accuracy needs an online learner; {learner} learns in batch")
    X, y = np.asarray(X), np.asarray(y)
    classes = check_stream(X, y)
    n_features, n_classes = X.shape[1], len(classes)
    if rate is not None:
        RATE.check(rate)
    if workers is not None:
        WORKERS.check(workers)
    budgets = configurations(learner, board, n_features, n_classes, ram, flash, optimize, spec.search_grid,
                             **(params or {}))
    candidates = [Candidate(budget) for budget in budgets]
    if not any(c.budget.fits for c in candidates):
        raise not_fitting(learner, board, n_features, n_classes, budgets)
    _predict_time(spec, board, candidates, n_features, n_classes, rate)
    eligible = [c for c in candidates if c.eligible]
    scores = _run(learner, [c.budget.params for c in eligible], X, y, classes, bins_rows, workers, scheduler,
                  progress)
    for candidate, (accuracy, speed) in zip(eligible, scores):
        candidate.accuracy, candidate.samples_per_second = accuracy, speed
    order = sorted(range(len(candidates)), key=lambda i: (
        candidates[i].accuracy is None, -(candidates[i].accuracy or 0.0), candidates[i].budget.ram_bytes, i))
    return Search(learner, board.name, board.clock_hz, rate, len(X), candidates, order[0])


def _predict_time(spec, board, candidates: list[Candidate], n_features: int, n_classes: int, rate) -> None:
    """Instructions per learn step of every candidate (when the learner has a cost model for the board's core),
    and with ``rate`` whether it keeps up; a rate no fitting candidate meets is refused."""
    if spec.learn_cost is not None:
        for c in candidates:
            c.instructions = spec.learn_cost(c.budget.params, n_features, n_classes, board.arch)
    if rate is None:
        return
    if spec.learn_cost is None:
        with_model = [s.name for s in learners.REGISTRY.values() if s.learn_cost is not None]
        raise ValueError(f"--rate needs a learn-step cost model; {spec.name} has none (learners with one: "
                         f"{', '.join(with_model) or 'none'})")
    if candidates[0].instructions is None:
        raise ValueError(f"--rate: {spec.name}'s learn-step cost model is not calibrated for {board.name}'s core "
                         f"({board.arch}, {board.cpu})")
    cycles = board.clock_hz / rate
    for c in candidates:
        c.keeps_up = c.instructions <= cycles
    fitting = [c for c in candidates if c.budget.fits]
    if not any(c.keeps_up for c in fitting):
        fastest = min(fitting, key=lambda c: c.instructions)
        raise ValueError(
            f"--rate {rate:g}: no {spec.name} configuration that fits the budget learns {rate:g} samples/s on "
            f"{board.name} ({board.clock_hz / 1e6:g} MHz: {cycles:,.0f} instructions per sample); the fastest "
            f"needs {fastest.instructions:,.0f} instructions per learn step, {board.clock_hz / fastest.instructions:,.0f}"
            f" samples/s ({', '.join(f'{k}={v}' for k, v in fastest.budget.config.items())})")


def _run(learner: str, configs: list[dict], X, y, classes, bins_rows: int, workers, scheduler, progress) -> list:
    """(accuracy, samples/s) of each configuration, in order: worker processes, or a Dask cluster."""
    bar = tqdm(total=len(configs), desc="search", unit="config", disable=not progress)
    results: list = [None] * len(configs)
    try:
        if scheduler is not None:
            try:
                from dask.distributed import Client, as_completed as dask_completed
            except ImportError:
                raise ImportError("--scheduler needs dask.distributed: pip install 'edgestream[dask]'") from None
            with Client(scheduler) as client:
                data = client.scatter([X, y, classes], broadcast=True)
                futures = {client.submit(_accuracy, learner, config, *data, bins_rows, pure=False): i
                           for i, config in enumerate(configs)}
                for future in dask_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update()
        elif (workers or os.cpu_count() or 1) <= 1 or len(configs) <= 1:
            for i, config in enumerate(configs):
                results[i] = _accuracy(learner, config, X, y, classes, bins_rows)
                bar.update()
        else:
            with ProcessPoolExecutor(min(workers or os.cpu_count(), len(configs)), initializer=_exit_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                futures = {pool.submit(_accuracy, learner, config, X, y, classes, bins_rows): i
                           for i, config in enumerate(configs)}
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update()
    finally:
        bar.close()
    return results


def _exit_with_parent(parent: int) -> None:
    """A worker's watch: it ends when the process that started it has ended (a killed ``fit`` or ``budget``
    leaves no workers behind, waiting forever for work: they hold the work queue open themselves)."""
    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="edgestream-parent-watch").start()


__all__ = ["Candidate", "Search", "search"]
