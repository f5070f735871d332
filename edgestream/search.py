"""The budget that chooses by accuracy and by time: the most accurate configuration of an online learner, on the
given rows and after a change of concept, among those that fit a board's RAM and flash and keep up with a sample
rate.

The candidates are the learner's search grid (``LearnerSpec.search_grid``: its ``search`` configurations, else
its budget ladder), with the parameters the user fixed applied to each. Each gets its exact budget
(:func:`edgestream.budget.configurations`) and, when the learner has a cost model for the board's core
(:mod:`edgestream.costs`, calibrated on emulator counts), its budget's instructions per sample: a prediction and a
learn call, both at their worst (every sample must be done before the next arrives), or with ``rate_mean`` on
average (a device that buffers the rows arriving during a long call). With ``rate`` (samples per second) a
candidate keeps up when those fit in ``board.clock_hz / rate`` cycles (one instruction per cycle, a Cortex-M's
best case: wait states slow it). Every
candidate that fits and keeps up is trained as ``fit`` trains it (bin edges from the first ``bins_rows`` rows,
then test-then-train over all rows in file order).

The score does not reward a configuration for fitting one concept. A recording often holds one concept, and a
learner that cannot forget it wins there and fails on the device at the next change. So test-then-train goes on
past the rows with a **replay** of all of them twice, under two synthetic abrupt changes (:func:`with_changes`):

1. every label becomes the next class (in sorted order, the last becoming the first): a new concept on the same
   inputs that contradicts the whole of the one just learned (it tests forgetting);
2. from there, the labels go back to the rows' own except where the feature least related to them (the one whose
   rows above and below its median hold the most alike class mix) is above its median: the concept changed in a
   part of the inputs it did not look at, so the learner must keep what still holds, forget what does not and
   find a boundary the first concept lacked (it tests capacity, which a stream's later concepts often need and
   its first rows may not show). Features with fewer than a quarter of the rows on one side of their median are
   passed over; with none left, every label goes back (a recurring concept).

The score is the mean of the prequential accuracy on the rows (``accuracy``) and of the mean accuracy over the two
replays (``replay_accuracy``): half for learning the concept at hand, half for learning its successors, each
replay over as many rows as given. A replay of only part of the rows would weigh the first rows after a change,
where a small model that forgets fast always leads, above the longer stretch a stream holds between its changes,
where a larger model that recovered does better. On ``benchmarks/bench_quality.py``'s eight streams, scored on
their first tenth, the configuration this chooses among everything that fits 32 KiB is on average 0.45 point below
the grid's best over the whole stream (0.79 with the generated streams' seeds + 100), against 1.04 (1.25) with the
first change alone: it no longer picks a model too small for the concepts that come later (STAGGER, Agrawal,
Electricity), at the price of noisy streams where a larger tree does slightly worse (SEA with other seeds, the
rotating hyperplane); ``benchmarks/bench_search.py`` measures it. The highest score wins,
ties to the smaller RAM, then to the earlier candidate. Everything is deterministic, so ``fit --ram`` and
``budget --ram`` agree.

Candidates are trained on the compiled engine (whole streams in one call), in parallel worker processes
(``concurrent.futures``) or on a Dask cluster when a scheduler address is given (``pip install
edgestream[dask]``). ``search_rows`` scores them on the first rows only (the chosen configuration is then
trained on all of them by ``fit``). ``learner="auto"`` searches the grid of every online learner at once: the most
accurate candidate that fits wins, whichever learner it is; with a rate, a learner without a cost model for the
board's core cannot show that it keeps up, so its candidates are listed but not evaluated.
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
from .costs import calibrated_cores
from .data import device_input
from .evaluate import prequential
from .online import BINS_ROWS, check_stream, start_online
from .ranges import Range

WORKERS = Range("workers", 1, 1024)  # local worker processes of a search
SEARCH_ROWS = Range("search_rows", 2)  # rows the candidates are scored on
RATE = Range("rate", 0.0, None, float, above=True)  # samples per second the device must learn
AUTO = "auto"  # every online learner's grid


CURVE_BUDGETS = tuple(kib * 1024 for kib in (2, 4, 8, 16, 32))


@dataclass
class Candidate:
    """One configuration: its budget, predicted time per learn step and (evaluated ones) accuracy."""

    budget: Budget
    instructions: float | None = None  # predicted per sample on the board's core (None: no cost model)
    keeps_up: bool | None = True  # with a rate: instructions fit the cycles per sample (None: no cost model)
    accuracy: float | None = None  # prequential accuracy on the rows (None: not evaluated)
    replay_accuracy: float | None = None  # over the replays after the synthetic changes (module docstring)
    samples_per_second: float | None = None  # host learning speed (the compiled engine)

    @property
    def eligible(self) -> bool:
        return self.budget.fits and self.keeps_up is True

    @property
    def learner(self) -> str:
        return self.budget.learner

    @property
    def score(self) -> float | None:
        """What the search ranks by: the mean of the accuracy on the rows and after the synthetic changes."""
        return None if self.accuracy is None else (self.accuracy + self.replay_accuracy) / 2

    def to_json(self) -> dict:
        return {"learner": self.learner, "config": self.budget.config, "ram_bytes": self.budget.ram_bytes,
                "flash_bytes": self.budget.flash_bytes, "fits": self.budget.fits, "instructions": self.instructions,
                "keeps_up": self.keeps_up, "accuracy": self.accuracy, "replay_accuracy": self.replay_accuracy,
                "score": self.score, "samples_per_second": self.samples_per_second}


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

    def best_of_each_learner(self) -> dict[str, Candidate]:
        """Per learner searched, its most accurate evaluated candidate (else its smallest that fits, else its
        smallest)."""
        best = {}
        for candidate in self.candidates:
            held = best.get(candidate.learner)
            if held is None or _rank(candidate) < _rank(held):
                best[candidate.learner] = candidate
        return best

    @property
    def budget(self) -> Budget:
        return self.best.budget

    def curve(self, budgets=CURVE_BUDGETS) -> dict[int, float]:
        """RAM budget -> the accuracy of what a search at that budget chooses (the best scored candidate that fits
        it), for the budgets up to this search's where some candidate fits."""
        evaluated = [c for c in self.candidates if c.accuracy is not None]
        curve = {}
        for ram in (ram for ram in budgets if ram <= self.budget.ram_budget):
            fitting = [c for c in evaluated if c.budget.ram_bytes <= ram]
            if fitting:
                curve[ram] = min(fitting, key=_rank).accuracy
        return curve

    def to_json(self) -> dict:
        return {"rate": self.rate, "rows": self.rows, "clock_hz": self.clock_hz, "chosen": self.chosen,
                "candidates": [c.to_json() for c in self.candidates]}

    def to_text(self) -> str:
        evaluated = [c for c in self.candidates if c.accuracy is not None]
        best = self.best
        time = "" if best.instructions is None else (
            f", {best.instructions:,.0f} instructions per sample predicted "
            f"({self.clock_hz / best.instructions:,.0f} samples/s at {self.clock_hz / 1e6:g} MHz)")
        rate = f" and keep up with {self.rate:g} samples/s" if self.rate else ""
        text = (f"chosen by prequential accuracy on {self.rows} rows and after two synthetic changes: "
                f"{best.learner} {best.accuracy:.4f} on the rows, {best.replay_accuracy:.4f} after the changes{time}; "
                f"{len(evaluated)} of {len(self.candidates)} candidates fit{rate} and were evaluated")
        if len({c.learner for c in self.candidates}) > 1:
            text += "\n" + self.learners_table()
        return text + "".join(f"\nnote: {note}" for note in self.notes)

    def learners_table(self) -> str:
        """The best candidate of each learner: accuracy, bytes, predicted instructions per prediction and per learn
        call (mean / worst), the sample rate the board sustains at worst and the energy per sample (estimate)."""
        lines = [f"  {'learner':<10}{'accuracy':>9}{'replay':>8}{'RAM':>9}{'flash':>9}{'predict':>16}{'learn':>18}"
                 f"{'samples/s':>11}{'µJ/sample':>11}  configuration"]
        for name, c in self.best_of_each_learner().items():
            accuracy, replay = (f"{c.accuracy:.4f}", f"{c.replay_accuracy:.4f}") if c.accuracy is not None else "--"
            mark = "*" if c is self.best else " "
            config = ", ".join(f"{k}={v}" for k, v in c.budget.config.items())
            lines.append(f"{mark} {name:<10}{accuracy:>9}{replay:>8}{c.budget.ram_bytes:>9,}"
                         f"{c.budget.flash_bytes:>9,}{_time_cells(c.budget.time)}  {config}")
        return "\n".join(lines)


def _time_cells(time) -> str:
    """predict and learn instructions (mean / worst), samples/s at worst and µJ per sample, or "no cost model"."""
    if time is None:
        return f"{'no cost model':>16}{'':>18}{'':>11}{'':>11}"
    predict, learn, energy = time.cost.predict, time.cost.learn, time.microjoules()
    microjoules = "--" if energy is None else f"{energy['mean']:.3g}"
    return (f"{f'{predict.mean:,.0f} / {predict.worst:,.0f}':>16}{f'{learn.mean:,.0f} / {learn.worst:,.0f}':>18}"
            f"{time.rates()['worst']:>11,.0f}{microjoules:>11}")


def _rank(candidate: Candidate) -> tuple:
    """Order of the candidates: evaluated ones by score (ties to the smaller RAM), then fitting ones."""
    return (candidate.accuracy is None, -(candidate.score or 0.0), not candidate.budget.fits,
            candidate.budget.ram_bytes)


def changed_part(X, y, classes) -> np.ndarray:
    """The rows whose label the second synthetic change moves (module docstring): those above the median of the
    feature whose two sides hold the most alike class mix (total variation distance of their class shares; ties
    to the lower feature), among the features with at least a quarter of the finite rows on each side."""
    X = np.asarray(X, dtype=np.float64)
    best, part = None, np.zeros(len(y), dtype=bool)
    for column in X.T:
        finite = np.isfinite(column)
        if not finite.any():
            continue
        above = finite & (column > np.median(column[finite]))
        share = above.sum() / finite.sum()
        if not 0.25 <= share <= 0.75:
            continue
        below = finite & ~above
        distance = sum(abs(np.mean(y[above] == k) - np.mean(y[below] == k)) for k in classes)
        if best is None or distance < best:
            best, part = distance, above
    return part


def with_changes(X, y, classes) -> tuple[np.ndarray, np.ndarray]:
    """The rows, then all of them again with every label moved to the next of ``classes`` (sorted; the last to the
    first), then all of them again with the labels moved only in :func:`changed_part`: the search's two synthetic
    abrupt changes (module docstring)."""
    shifted = classes[(np.searchsorted(classes, y) + 1) % len(classes)]
    return np.concatenate([X, X, X]), np.concatenate([y, shifted, np.where(changed_part(X, y, classes), shifted, y)])


def _accuracy(learner: str, params: dict, X, y, classes, bins_rows: int) -> tuple[float, float, float]:
    """Prequential accuracy on the rows and over the replays after the synthetic changes, and samples/s, of one
    configuration trained as ``fit`` trains it (the rows' part is exactly ``fit``'s prequential run)."""
    model = learners.get(learner).make(**params)
    X = device_input(X, model.input_dtype)
    start_online(model, X, classes, bins_rows)
    rows, labels = with_changes(X, y, classes)
    result = prequential(model, rows, labels)
    hits = result.predictions == labels
    return float(hits[:len(y)].mean()), float(hits[len(y):].mean()), result.samples_per_second


def online_learners() -> list[str]:
    return [spec.name for spec in learners.REGISTRY.values() if spec.online]


def search(learner: str, board, X, y, ram: int | None = None, flash: int | None = None, rate: float | None = None,
           params: dict | None = None, optimize: str = "speed", bins_rows: int = BINS_ROWS, workers: int | None = None,
           scheduler: str | None = None, progress: bool = False, search_rows: int | None = None,
           grid: tuple[dict, ...] | None = None, rate_mean: bool = False) -> Search:
    """The best scored configuration (module docstring) of the online ``learner`` (or, with ``"auto"``, of every
    online learner) on rows ``X``, ``y`` (the first ``search_rows`` of them) that fits ``ram`` and ``flash`` on
    ``board`` (the board's by default) and, with ``rate``, learns that many samples per second. ``grid`` replaces
    the learner's search grid; ``rate_mean`` plans the rate on the mean calls instead of the worst."""
    names = online_learners() if learner == AUTO else [learner]
    if learner == AUTO and (params or grid):
        raise ValueError(f"learner options ({', '.join(sorted(params or {'grid': 0}))}) need a --learner: auto "
                         f"searches every online learner's grid")
    if not learners.get(names[0]).online:
        raise ValueError(f"choosing by accuracy needs an online learner; {learner} learns in batch")
    X, y = np.asarray(X), np.asarray(y)
    classes = check_stream(X, y)
    if search_rows is not None:
        SEARCH_ROWS.check(search_rows)
        needed = min(bins_rows, len(X))
        if search_rows < needed:
            raise ValueError(f"--search-rows {search_rows} is below the {needed} rows the learners start on "
                             f"(--bins-rows {bins_rows}): score on at least {needed} rows")
        X, y = X[:search_rows], y[:search_rows]
    n_features, n_classes = X.shape[1], len(classes)
    if rate is not None:
        RATE.check(rate)
    if workers is not None:
        WORKERS.check(workers)
    candidates, notes = [], []
    for name in names:
        budgets = configurations(name, board, n_features, n_classes, ram, flash, optimize,
                                 grid or learners.get(name).search_grid, **(params or {}))
        own = [Candidate(budget) for budget in budgets]
        if learner != AUTO and not any(c.budget.fits for c in own):
            raise not_fitting(name, board, n_features, n_classes, budgets)
        note = _predict_time(learners.get(name), board, own, rate, rate_mean, alone=learner != AUTO)
        notes += [note] if note else []
        candidates += own
    if not any(c.budget.fits for c in candidates):
        smallest = {name: min((c for c in candidates if c.learner == name), key=lambda c: c.budget.ram_bytes)
                    for name in names}
        raise ValueError(f"no configuration of any online learner fits {board.name} with "
                         f"{_limits(ram, flash)}; the smallest of each: " + "; ".join(
                             f"{name} {c.budget.ram_bytes:,} B RAM, {c.budget.flash_bytes:,} B flash"
                             for name, c in smallest.items()))
    eligible = [c for c in candidates if c.eligible]
    if not eligible:
        raise ValueError(_too_slow(rate, board, [c for c in candidates if c.budget.fits], rate_mean, "candidate"))
    scores = _run([(c.learner, c.budget.params) for c in eligible], X, y, classes, bins_rows, workers, scheduler,
                  progress)
    for candidate, (accuracy, replay, speed) in zip(eligible, scores):
        candidate.accuracy, candidate.replay_accuracy, candidate.samples_per_second = accuracy, replay, speed
    order = sorted(range(len(candidates)), key=lambda i: (*_rank(candidates[i]), i))
    chosen = candidates[order[0]].learner
    return Search(chosen, board.name, board.clock_hz, rate, len(X), candidates, order[0], notes)


def _limits(ram, flash) -> str:
    parts = [f"{ram:,} bytes of RAM" if ram else "", f"{flash:,} bytes of flash" if flash else ""]
    return " and ".join(p for p in parts if p) or "its memory"


def _predict_time(spec, board, candidates: list[Candidate], rate, rate_mean: bool, alone: bool = True) -> str | None:
    """Instructions per sample of every candidate (its budget's, when the learner has a cost model for the board's
    core), and with ``rate`` whether it keeps up. A learner searched ``alone`` has a rate it cannot meet (or cannot
    check) refused with an error; among several, its candidates are marked and the reason is returned."""
    for c in candidates:
        timing = c.budget.time
        c.instructions = None if timing is None else timing.cost.per_sample(worst=not rate_mean)
    if rate is None:
        return None
    if candidates[0].instructions is None:
        problem = (f"--rate: {spec.name}'s cost model is not calibrated for {board.name}'s core "
                   f"({board.arch}, {board.cpu}; calibrated: {', '.join(calibrated_cores(spec.name)) or 'none'})")
        for c in candidates:
            c.keeps_up = None
        if alone:
            raise ValueError(problem)
        return f"{problem}: not evaluated"
    for c in candidates:
        c.keeps_up = c.instructions <= board.clock_hz / rate
    fitting = [c for c in candidates if c.budget.fits]
    if fitting and not any(c.keeps_up for c in fitting):
        problem = _too_slow(rate, board, fitting, rate_mean, f"{spec.name} configuration")
        if alone:
            raise ValueError(problem)
        return problem
    return None


def _too_slow(rate: float, board, fitting: list[Candidate], rate_mean: bool, what: str) -> str:
    """Why no fitting candidate keeps up with ``rate``: the fastest and the rate it sustains."""
    cycles = board.clock_hz / rate
    problem = (f"--rate {rate:g}: no {what} that fits the budget learns {rate:g} samples/s on {board.name} "
               f"({board.clock_hz / 1e6:g} MHz: {cycles:,.0f} instructions per sample)")
    timed = [c for c in fitting if c.instructions is not None]
    if not timed:
        return problem + "; none has a cost model for its core"
    fastest = min(timed, key=lambda c: c.instructions)
    calls = "on average" if rate_mean else "at worst (--rate-mean plans on the average)"
    config = ", ".join(f"{k}={v}" for k, v in fastest.budget.config.items())
    return (f"{problem}; the fastest, {fastest.learner} ({config}), needs {fastest.instructions:,.0f} instructions "
            f"per sample {calls}: {board.clock_hz / fastest.instructions:,.0f} samples/s")


def _run(configs: list[tuple[str, dict]], X, y, classes, bins_rows: int, workers, scheduler, progress) -> list:
    """(accuracy, replay accuracy, samples/s) of each (learner, parameters), in order: worker processes, or a Dask
    cluster."""
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
                           for i, (learner, config) in enumerate(configs)}
                for future in dask_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update()
        elif (workers or os.cpu_count() or 1) <= 1 or len(configs) <= 1:
            for i, (learner, config) in enumerate(configs):
                results[i] = _accuracy(learner, config, X, y, classes, bins_rows)
                bar.update()
        else:
            with ProcessPoolExecutor(min(workers or os.cpu_count(), len(configs)), initializer=_exit_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                futures = {pool.submit(_accuracy, learner, config, X, y, classes, bins_rows): i
                           for i, (learner, config) in enumerate(configs)}
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


__all__ = ["AUTO", "Candidate", "Search", "online_learners", "changed_part", "search", "with_changes"]
