"""The budget that chooses by accuracy and by time: the configuration of an online learner that will serve best on
the device, among those that fit a board's RAM and flash and keep up with a sample rate.

The candidates are the learner's search grid (``LearnerSpec.search_grid``: its ``search`` configurations, else
its budget ladder), with the parameters the user fixed applied to each. Each gets its exact budget
(:func:`edgestream.budget.configurations`) and, when the learner has a cost model for the board's core
(:mod:`edgestream.costs`, calibrated on emulator counts), its budget's instructions per sample: a prediction and a
learn call, both at their worst (every sample must be done before the next arrives), or with ``rate_mean`` on
average (a device that buffers the rows arriving during a long call). With ``rate`` (samples per second) a
candidate keeps up when those fit in ``board.clock_hz / rate`` cycles (one instruction per cycle, a Cortex-M's
best case: wait states slow it). Every candidate that fits and keeps up is trained as ``fit`` trains it (bin
edges from the first ``bins_rows`` rows, then test-then-train over the rows in file order).

**The score** weighs three things a deployed learner is asked for, each an accuracy from 0 to 1:

1. *what it learns now* (``accuracy``): prequential accuracy over the rows it learns, in file order;
2. *what it keeps* (``kept_accuracy``): the accuracy, at the end of the rows, of the learned model on a reserved
   sample of all of them (one row in ``RESERVE_EVERY`` of each class, spread over the rows, held out of the
   learning): a learner that forgot the first classes or concepts, or that fits only its last window, loses here;
3. *how it recovers* (``replay_accuracy``): test-then-train goes on past the rows with a replay of all of them
   twice, under two synthetic abrupt changes (:func:`with_changes`), and this is the accuracy over the replays.
   First every label becomes the next class (in sorted order, the last becoming the first): a new concept that
   contradicts the whole of the one just learned (it tests forgetting). Then the labels go back to the rows' own
   except where the feature least related to them (the one whose rows above and below its median hold the most
   alike class mix) is above its median: the concept changed in a part of the inputs it did not look at, so the
   learner must keep what still holds, forget what does not and find a boundary the first concept lacked (it
   tests capacity, which a stream's later concepts often need and its first rows may not show). Features with
   fewer than a quarter of the rows on one side of their median are passed over; with none left, every label
   goes back (a recurring concept). Each replay is as long as the rows: a shorter one would weigh the first rows
   after a change, where a small model that forgets fast always leads, above the longer stretch a stream holds
   between its changes, where a larger model that recovered does better.

**A regressor** is scored the same way, its parts **skills** instead of accuracies: ``1 - RMSE / sd``, the sd of
the rows' targets, so that 0 is what predicting the mean scores (the constant, as the majority class is for
classes) and ranking by a skill is ranking by RMSE. Its synthetic changes mirror the targets about their mean,
first all of them, then those in the changed part (found with the target's quartiles standing for classes);
nothing arrives as classes do, so its rows are of no change or of changes
(:func:`edgestream.stream_kinds.look_at_targets`).

**A detector** (the anomaly task, :func:`search_detector`) is ranked by one number, a ROC-AUC of its prequential
scores (each row scored, then learned, over the rows in order, started on the first ``bins_rows`` rows as ``fit``
starts it). With a 0/1 label column (``--label``), of the labels. Without labels (or with labels of one kind
only) the criterion is **the separation of injected synthetic outliers**: from row ``bins_rows`` on (at most half
the rows), one row in ``INJECT_EVERY`` (50) is replaced by a row drawn uniformly from the box of the rows'
per-feature ranges (a fixed seed: every run injects the same rows), and the candidate's ROC-AUC of those rows
against the others ranks it. A uniform row falls where normal rows are rare unless they fill their range evenly,
so the criterion rewards a detector that isolates sparse regions of the inputs; the injected rows are also
learned, a 2 % contamination that a detector meets on a real stream too. Scores before a candidate's first window
are 0 (ties), so a longer window pays for the rows it needs to start. Ties go to the smaller RAM, then to the
earlier candidate of the grid (``LearnerSpec.search``, e.g. hst's trees, height and window).

No single part can be trusted on every kind of stream: prequential accuracy rewards forgetting where classes
arrive one after another (predicting the class of the moment scores well on a class-sorted stream), the replay
rewards a small window that re-learns fast, and what is kept rewards holding on to a concept that has changed.
So the search first looks at the rows (:func:`edgestream.stream_kinds.look_at_rows`) and weighs the parts by what it
sees (``stream_kinds.WEIGHTS``):

* **class increments**: a class whose first row comes later, or whose last row comes earlier, than chance would
  allow for its share of the rows (probability below ``OUT_OF_TIME`` over all classes and both ends). What is kept weighs
  most, and the learners' options that keep earlier classes (``LearnerSpec.class_increments``, e.g. the Hoeffding
  trees' estimator propagation) are fixed unless the user fixed them;
* **no change**: the class mix within each quartile of every feature is the same in the first and the second
  half of the rows (a G-test of independence of half and class within the quartiles, its p-value at least
  ``CHANGE_P`` after a Bonferroni correction over the features). Without a change the rows stand for the longer
  stream to come, and the first rows of a stream favour the learners that start fast (a single naive Bayes leaf
  scores above a tree whose splits wait for evidence) over those that end best. So what is learned now counts over
  the **second half** of the rows only (``stream_kinds.NOW_FROM``: every learner starts once, what counts is where
  it heads), and the candidates learn the rows **twice** (``stream_kinds.PASSES``) before what is kept is measured:
  the second pass shows what a learner reaches with more of the same, and the reserved rows, never learned, cannot
  reward rows learned by heart. What is learned and what is kept weigh alike, the replay less, and only **up to the
  median** replay of the candidates:
  it still stops a learner that could never follow a change, but among those that can, recovering faster from a
  change the rows gave no sign of earns nothing more (a one-leaf learner restarts fastest, and would otherwise win
  every short head);
* **changes** otherwise: what is learned and how it recovers weigh most, what is kept (which mixes old and new
  concepts) less.

The highest score wins, ties to the smaller RAM, then to the earlier candidate. A candidate below a constant
prediction is never chosen while any other is above it (:func:`trivial`): one that keeps less than the **majority
class** scores on the reserved rows (what a single leaf predicts), or that recovers less than the majority class's
share of the rows (what a constant scores on the first replay). The report compares the choice with **repeating the last label**: where that does about as well on
the rows (within ``ABOUT_AS_WELL``), the rows are a recording of labels, sorted or in long runs, rather than a
stream any model learns from, and the report says what to check. Everything is deterministic, so ``fit --ram``
and ``budget --ram`` agree. ``benchmarks/bench_search.py`` measures the choices on streams of every kind with
seeds the defaults never saw, against the grid's best over the whole stream and against River's and MOA's
Hoeffding trees.

**The race** (``race=True``, the default; ``fit``/``budget --no-race`` turns it off) spends the replays, most of a
candidate's work, only on the candidates that may still win. The candidates learn the rows test-then-train and are
compared at L = 2 looks (``RACE_LOOKS``): halfway through the rows that count in what is learned now (from
``now_from`` on: with no change only the second half, so that starting fast earns nothing here either) and at their
end. At a look, for each pair of candidates *i* and *j* still going among the K of the search, over the counted rows
so far, *b* is the rows *j* predicted and *i* did not and *a* the reverse; *i* stops when some *j* has ``b - a >=
sqrt(2 (a + b) ln(L K (K - 1) / RACE_DELTA))``, ``RACE_DELTA`` = 0.01. This is McNemar's comparison with a Hoeffding
bound: were *i* at least as likely as *j* to be right on a row where exactly one of them is, the sum of *a + b* such
rows' +1/-1 differences would reach that margin with a chance of at most ``RACE_DELTA / (L K (K - 1))``, so over
both looks, every pair and both directions the race stops one that is no worse than another with a chance of at most
``RACE_DELTA``. The one right most often is never stopped (no other has a positive margin over it), and a candidate
that loses to any other is stopped, a cheaper one as well as the leader (the costly configurations of a grid stop as
soon as any other, often a smaller one, learns the rows clearly better). What the race assumes, and the search's
score does not guarantee, is that a learner clearly worse on the rows does not make it up in what it keeps and how
it recovers: ``benchmarks/bench_search.py --no-race`` measures the choices without it. The others continue where
they stopped (a learner's state is its device state: a pickled model goes on exactly, in whichever worker), so their
parts are those of a search without the race, bit for bit; a stopped one keeps its ``accuracy`` (what it learned
now, over the counted rows it learned), ``dropped`` is set and it has no score. With no change the replay counts up
to the median of every candidate's, and a stopped one's is not measured: the median lies between the one that counts
every stopped replay as 0 and the one that counts it as 1, and as the cap grows the difference of two scores moves
one way only, so where the choice among the finished candidates is the same at both ends, it is the one the full
search makes among them; where it is not, the stopped candidates continue too (from where they stopped) and the search is the full one. The
scores are weighed with the upper end (a stopped replay counted as 1), so a score may differ from the full search's
by its replay's cap, not the choice among them. With nothing stopped the search is the search without the race. Regressors
are not raced (their parts are skills, not rows right or wrong).

Candidates are trained on the compiled engine (whole streams in one call), in parallel worker processes
(``concurrent.futures``; each receives the rows once, when it starts) or on a Dask cluster when a scheduler address
is given (``pip install edgestream[dask]``). ``search_rows`` scores them on the first rows only (the chosen
configuration is then trained on all of them by ``fit``). ``learner="auto"`` searches the grid of every online
learner at once: the best scored candidate that fits wins, whichever learner it is; with a rate, a learner without a
cost model for the board's core cannot show that it keeps up, so its candidates are listed but not evaluated.
"""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from . import learners
from .budget import MEMORY_TERMS, Budget, configurations, not_fitting
from .costs import calibrated_cores
from .data import device_input
from .evaluate import prequential
from .online import BINS_ROWS, check_stream, start_online
from .ranges import Range
from .stream_kinds import (ABOUT_AS_WELL, CLASS_INCREMENTS, NO_CHANGE, Head, look_at_rows, look_at_targets, skill,
                           target_quartiles)
from .task import ANOMALY, CLASSIFICATION, REGRESSION, check_anomaly_labels, check_target, roc_auc, split_output

WORKERS = Range("workers", 1, 1024)  # local worker processes of a search
SEARCH_ROWS = Range("search_rows", 2)  # rows the candidates are scored on
RATE = Range("rate", 0.0, None, float, above=True)  # samples per second the device must learn
AUTO = "auto"  # every online learner's grid
RACE_DELTA = 0.01  # the race's chance of dropping a candidate that is no worse, over all its comparisons
RACE_LOOKS = (0.5, 1.0)  # the race compares the candidates after these shares of the rows that count


CURVE_BUDGETS = tuple(kib * 1024 for kib in (2, 4, 8, 16, 32))


@dataclass
class Candidate:
    """One configuration: its budget, predicted time per learn step and (evaluated ones) its score's parts: each
    an accuracy for a classifier, a skill (``1 - RMSE / sd``, :mod:`edgestream.stream_kinds`) for a regressor."""

    budget: Budget
    instructions: float | None = None  # predicted per sample on the board's core (None: no cost model)
    keeps_up: bool | None = True  # with a rate: instructions fit the cycles per sample (None: no cost model)
    accuracy: float | None = None  # prequential accuracy on the rows learned (None: not evaluated)
    kept_accuracy: float | None = None  # on the reserved rows at the end (None: not evaluated or none reserved)
    replay_accuracy: float | None = None  # over the replays after the synthetic changes (module docstring)
    samples_per_second: float | None = None  # host learning speed (the compiled engine)
    score: float | None = None  # the parts weighed by the kind of the rows (module docstring)
    dropped: bool = False  # stopped by the race (only ``accuracy`` measured, on the rows it learned)

    @property
    def eligible(self) -> bool:
        return self.budget.fits and self.keeps_up is True

    @property
    def learner(self) -> str:
        return self.budget.learner

    def weigh(self, weights: tuple[float, float, float], replay_cap: float = 1.0) -> None:
        """The score: the parts weighed, the replay counted up to ``replay_cap``; without reserved rows, what is
        kept weighs as what is learned."""
        now, kept, recover = weights
        kept_accuracy = self.accuracy if self.kept_accuracy is None else self.kept_accuracy
        replay = min(self.replay_accuracy, replay_cap)
        self.score = now * self.accuracy + kept * kept_accuracy + recover * replay

    def to_json(self) -> dict:
        return {"learner": self.learner, "config": self.budget.config, "ram_at_peak_bytes": self.budget.ram_bytes,
                "flash_bytes": self.budget.flash_bytes, "basis": self.budget.basis, "fits": self.budget.fits,
                "instructions": self.instructions,
                "keeps_up": self.keeps_up, "accuracy": self.accuracy, "kept_accuracy": self.kept_accuracy,
                "replay_accuracy": self.replay_accuracy, "score": self.score,
                "samples_per_second": self.samples_per_second, "dropped": self.dropped}


@dataclass
class Search:
    """The candidates of a search, the chosen one and what the search saw in the rows."""

    learner: str
    board: str
    clock_hz: int
    rate: float | None
    rows: int
    candidates: list[Candidate]
    chosen: int  # index into candidates
    head: Head
    notes: list[str] = field(default_factory=list)
    replay_cap: float = 1.0  # the replay counts up to this in the score (module docstring)

    @property
    def best(self) -> Candidate:
        return self.candidates[self.chosen]

    def best_of_each_learner(self) -> dict[str, Candidate]:
        """Per learner searched, the candidate the search would choose among its own (else its smallest that fits,
        else its smallest)."""
        best = {}
        for name in dict.fromkeys(c.learner for c in self.candidates):
            own = [c for c in self.candidates if c.learner == name]
            best[name] = choose(own, self.head) or min(own, key=lambda c: (not c.budget.fits, c.budget.ram_bytes))
        return best

    @property
    def budget(self) -> Budget:
        return self.best.budget

    def trained(self, budget: Budget) -> None:
        """The chosen configuration trained: its exact budget (its bundle's figures) in place of the bound."""
        if budget.config != self.best.budget.config or budget.learner != self.best.learner:
            raise ValueError(f"the trained {budget.learner} ({budget.config}) is not the chosen configuration")
        self.best.budget = budget

    def curve(self, budgets=CURVE_BUDGETS) -> dict[int, float]:
        """RAM budget -> the score of what a search at that budget chooses (:func:`choose` among the candidates that
        fit it), for the budgets up to this search's where some candidate fits."""
        evaluated = [c for c in self.candidates if c.score is not None]
        curve = {}
        for ram in (ram for ram in budgets if ram <= self.budget.ram_budget):
            fitting = [c for c in evaluated if c.budget.ram_bytes <= ram]
            if fitting:
                curve[ram] = choose(fitting, self.head).score
        return curve

    @property
    def warnings(self) -> list[str]:
        """What the user must check before trusting the choice: rows that repeating the last label learns about
        as well as the chosen model (module docstring)."""
        best, head = self.best, self.head
        if best.accuracy is None or head.last_label < best.accuracy - ABOUT_AS_WELL:
            return []
        if head.target_sd is not None:
            return [f"repeating the last target scores a skill of {head.last_label:.4f} on these rows, about as well "
                    f"as the chosen model's {best.accuracy:.4f}: the target moves slowly from row to row (or the "
                    f"rows are sorted by it), so the previous value predicts it. Check the row order (sorted by the "
                    f"target or by a column?); on a real stream this baseline is the one the device must beat, and "
                    f"the last value itself may be a feature worth giving the model"]
        return [f"repeating the last label scores {head.last_label:.4f} on these rows, about as well as the chosen "
                f"model's {best.accuracy:.4f}: the rows look sorted by label or hold long runs of one label, a "
                f"recording of labels rather than a stream to learn from. Check the row order (sorted by class or "
                f"by a column? a time column to order by?); rows that are not in time order should be shuffled "
                f"before fit, and on a real stream this baseline is the one the device must beat"]

    def to_json(self) -> dict:
        return {"rate": self.rate, "rows": self.rows, "clock_hz": self.clock_hz, "chosen": self.chosen,
                "replay_cap": self.replay_cap,
                "head": self.head.to_json(), "warnings": self.warnings,
                "candidates": [c.to_json() for c in self.candidates]}

    def to_text(self) -> str:
        evaluated = [c for c in self.candidates if c.accuracy is not None]
        best, head = self.best, self.head
        time = "" if best.instructions is None else (
            f"; {best.instructions:,.0f} instructions per sample predicted "
            f"({self.clock_hz / best.instructions:,.0f} samples/s at {self.clock_hz / 1e6:g} MHz)")
        rate = f" and keep up with {self.rate:g} samples/s" if self.rate else ""
        now, kept, recover = head.weights
        sd = head.target_sd
        part = (lambda value: f"{value:.4f}") if sd is None else (
            lambda value: f"{value:.4f} (RMSE {(1 - value) * sd:.4g})")
        kept_text = "--" if best.kept_accuracy is None else part(best.kept_accuracy)
        passes = f", after {head.passes} passes over the rows" if head.passes > 1 else ""
        counted = f"the last {1 - head.now_from:.0%} of " if head.now_from else ""
        stopped = sum(c.dropped for c in evaluated)
        cap = f"; counted up to the candidates' median, {self.replay_cap:.4f}" if self.replay_cap < 1 else ""
        if stopped and head.kind == NO_CHANGE:
            cap = (f"; counted up to the candidates' median, at most {self.replay_cap:.4f} (a replay the race did not "
                   f"measure counted as 1)")
        dropped = f", {stopped} of them stopped by the race" if stopped else ""
        baselines = (f"the majority class keeps {head.majority:.4f} of the reserved rows, repeating the last label "
                     f"scores {head.last_label:.4f} on the rows" if sd is None else
                     f"scores are skills, 1 - RMSE / {sd:.4g} (the target's standard deviation): the learned rows' "
                     f"mean scores {part(head.majority)} on the reserved rows, repeating the last target "
                     f"{part(head.last_label)} on the rows")
        text = (f"the rows: {head.describe()}; baselines: {baselines}\n"
                f"chosen: {best.learner}, score {best.score:.4f} = {now:g} x learned now {part(best.accuracy)} "
                f"(prequential on {counted}{self.rows - head.reserved} rows) + {kept:g} x kept {kept_text} (on "
                f"{head.reserved} reserved rows{passes}) + {recover:g} x recovered {part(best.replay_accuracy)} (after two "
                f"synthetic changes{cap}){time}; {len(evaluated)} of {len(self.candidates)} candidates fit{rate} and "
                f"were evaluated{dropped}")
        if len({c.learner for c in self.candidates}) > 1:
            text += "\n" + self.learners_table()
        return text + "".join(f"\nnote: {note}" for note in self.notes) + \
            "".join(f"\nwarning: {warning}" for warning in self.warnings)

    def learners_table(self) -> str:
        """The best candidate of each learner: the parts of its score, bytes, predicted instructions per
        prediction and per learn call (mean / worst), the sample rate the board sustains at worst and the energy
        per sample (estimate)."""
        lines = [f"  {'learner':<10}{'score':>8}{'now':>8}{'kept':>8}{'replay':>8}{'RAM peak':>9}{'flash':>9}"
                 f"{'predict':>16}{'learn':>18}{'samples/s':>11}{'µJ/sample':>11}  configuration"]
        for name, c in self.best_of_each_learner().items():
            parts = (c.score, c.accuracy, c.kept_accuracy, c.replay_accuracy)
            cells = "".join("      --" if p is None else f"{p:>8.4f}" for p in parts)
            mark = "*" if c is self.best else " "
            config = ", ".join(f"{k}={v}" for k, v in c.budget.config.items())
            lines.append(f"{mark} {name:<10}{cells}{c.budget.ram_bytes:>9,}"
                         f"{c.budget.flash_bytes:>9,}{_time_cells(c.budget.time)}  {config}")
        others = dict.fromkeys(c.budget.basis for c in self.best_of_each_learner().values() if c is not self.best)
        others.pop(self.best.budget.basis, None)
        lines.append(f"  RAM at peak and flash ({MEMORY_TERMS}): * {self.best.budget.basis}"
                     + "".join(f", the others {basis}" for basis in others))
        return "\n".join(lines)


def _time_cells(time) -> str:
    """predict and learn instructions (mean / worst), samples/s at worst and µJ per sample, or "no cost model"."""
    if time is None:
        return f"{'no cost model':>16}{'':>18}{'':>11}{'':>11}"
    predict, learn, energy = time.cost.predict, time.cost.learn, time.microjoules()
    microjoules = "--" if energy is None else f"{energy['mean']:.3g}"
    return (f"{f'{predict.mean:,.0f} / {predict.worst:,.0f}':>16}{f'{learn.mean:,.0f} / {learn.worst:,.0f}':>18}"
            f"{time.rates()['worst']:>11,.0f}{microjoules:>11}")


def trivial(candidate: Candidate, head: Head) -> bool:
    """Below a constant prediction: keeps less than the majority class scores on the reserved rows, or recovers
    less than the majority class's share of the rows learned (what a constant scores on the first replay)."""
    return ((candidate.kept_accuracy is not None and candidate.kept_accuracy < head.majority)
            or candidate.replay_accuracy < head.majority_share)


def choose(candidates: list[Candidate], head: Head) -> Candidate | None:
    """The evaluated candidate the search chooses (module docstring), None if none was evaluated: the highest
    score among those above the trivial baselines (among all if none is), ties to the smaller RAM, then to the
    earlier candidate."""
    evaluated = [c for c in candidates if c.score is not None]
    passing = [c for c in evaluated if not trivial(c, head)] or evaluated
    return max(passing, key=lambda c: (c.score, -c.budget.ram_bytes), default=None)


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


def with_target_changes(X, y) -> tuple[np.ndarray, np.ndarray]:
    """:func:`with_changes` for a regression target: the first change mirrors every target about the rows' mean
    (what was high becomes low), the second mirrors those of :func:`changed_part` only, the target's quartiles
    standing for classes."""
    mirrored = 2 * np.mean(y) - y
    part = changed_part(X, target_quartiles(y), np.arange(4))
    return np.concatenate([X, X, X]), np.concatenate([y, mirrored, np.where(part, mirrored, y)])


@dataclass(frozen=True)
class Rows:
    """What every candidate of a search is scored on, made once and sent once to each worker: the rows, their
    labels (targets for a regressor: ``target_sd`` set), the ``reserved`` ones, the labels of the two replays
    (:func:`with_changes` of the learned rows, the same for every candidate) and how the parts are measured
    (``passes``, ``now_from``)."""

    X: np.ndarray
    y: np.ndarray
    classes: np.ndarray | None
    bins_rows: int
    reserved: np.ndarray
    passes: int = 1
    now_from: float = 0.0
    target_sd: float | None = None
    replayed: np.ndarray = field(init=False)

    def __post_init__(self):
        learned, labels = self.X[~self.reserved], self.y[~self.reserved]
        moved = (with_changes(learned, labels, self.classes) if self.target_sd is None
                 else with_target_changes(learned, labels))[1]
        object.__setattr__(self, "replayed", moved[len(labels):])

    @property
    def task(self) -> str:
        return CLASSIFICATION if self.target_sd is None else REGRESSION

    @property
    def labels(self) -> np.ndarray:
        """The labels (targets) of the rows learned."""
        return self.y[~self.reserved]

    @property
    def counted(self) -> int:
        """The first learned row that counts in what is learned now."""
        return int(self.now_from * len(self.labels))

    def learned_rows(self, model) -> np.ndarray:
        return device_input(self.X, model.input_dtype)[~self.reserved]

    def score(self, truth, predicted) -> float:
        """An accuracy, or a regressor's skill (:func:`edgestream.stream_kinds.skill`)."""
        return float(np.mean(predicted == truth)) if self.target_sd is None else skill(truth, predicted,
                                                                                      self.target_sd)

    def learned_now(self, predictions) -> float:
        """What is learned now: the score of the predictions of the first learned rows (all, but for a candidate
        the race stopped), from ``counted`` on."""
        return self.score(self.labels[self.counted:len(predictions)], predictions[self.counted:])


def _learn(data: Rows, learner: str, params: dict, model, start: int, stop: int) -> tuple:
    """(model, predictions, seconds): test-then-train over the learned rows ``start`` to ``stop``, ``model`` made and
    started as ``fit`` starts it when None, else continued where it stopped (a pickled model continues exactly: its
    state is the device state)."""
    if model is None:
        model = learners.get(learner, data.task).make(data.task, **params)
        start_online(model, data.learned_rows(model), data.classes if data.target_sd is None else data.labels,
                     data.bins_rows)
    rows, labels = data.learned_rows(model)[start:stop], data.labels[start:stop]
    now = prequential(model, rows, labels)
    return model, now.predictions, now.seconds


def _finish(data: Rows, model) -> tuple:
    """(kept, recovered) of a model that learned the rows once: the other ``passes``, what it keeps of the reserved
    rows (None without any), then the replays (module docstring)."""
    rows, labels, reserved = data.learned_rows(model), data.labels, data.reserved
    for _ in range(data.passes - 1):
        model.partial_fit(rows, labels)
    X = device_input(data.X, model.input_dtype)
    kept = data.score(data.y[reserved], model.predict(X[reserved])) if reserved.any() else None
    replay = prequential(model, np.concatenate([rows, rows]), data.replayed)
    return kept, data.score(data.replayed, replay.predictions)


def _scores(data: Rows, learner: str, params: dict) -> tuple:
    """(learned now, kept, recovered, samples/s) of one configuration trained as ``fit`` trains it on the rows but
    the reserved ones (module docstring): learned now counts from the share ``now_from`` of the rows on, and what
    is kept is measured after ``passes`` over them; kept is None without reserved rows. With ``target_sd`` the
    learner is a regressor and the parts are skills (:func:`edgestream.stream_kinds.skill`), else accuracies."""
    model, predictions, seconds = _learn(data, learner, params, None, 0, len(data.labels))
    return (data.learned_now(predictions), *_finish(data, model), _speed(len(predictions), seconds))


@dataclass
class _Run:
    """A candidate's way through the race: its model (None before it starts), the predictions of the rows it
    learned now so far and the seconds it took."""

    candidate: Candidate
    model: object = None
    predictions: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def learned(self) -> int:
        return sum(len(p) for p in self.predictions)


def _raced(candidates: list[Candidate], data: Rows, work: _Workers, head: Head) -> None:
    """The candidates scored with the race (module docstring): they learn the rows in ``RACE_LOOKS`` stretches,
    those :func:`_race` stops after one are marked dropped (what they learned now so far kept), the others continue
    where they stopped, to the end. Where the replay's cap could change the choice among them
    (:func:`_cap_decides`), the stopped ones continue too, and the search is the full one."""
    runs = [_Run(c) for c in candidates]
    n, counted = len(data.labels), data.counted
    looks = sorted({counted + math.ceil(share * (n - counted)) for share in RACE_LOOKS})
    for stop in looks:
        going = [run for run in runs if not run.candidate.dropped]
        _learned(going, stop, data, work)
        hits = [np.concatenate(run.predictions)[counted:] == data.labels[counted:stop] for run in going]
        for run, on in zip(going, _race(hits, len(looks) * len(runs) * (len(runs) - 1))):
            run.candidate.dropped = not on
    _finished([run for run in runs if not run.candidate.dropped], data, work)
    if _cap_decides(candidates, head):
        _finished([run for run in runs if run.candidate.dropped], data, work)


def _learned(runs: list[_Run], stop: int, data: Rows, work: _Workers) -> None:
    """The runs continued test-then-train to learned row ``stop``; their candidates' ``accuracy`` (what they learned
    now, over the counted rows so far) and samples/s."""
    for run, (model, predictions, seconds) in zip(runs, work.map(_learn, [
            (run.candidate.learner, run.candidate.budget.params, run.model, run.learned, stop) for run in runs])):
        run.model, run.seconds = model, run.seconds + seconds
        run.predictions.append(predictions)
        every = np.concatenate(run.predictions)
        run.candidate.accuracy = data.learned_now(every)
        run.candidate.samples_per_second = _speed(len(every), run.seconds)


def _finished(runs: list[_Run], data: Rows, work: _Workers) -> None:
    """The runs taken to the end of the rows learned now, then through the rest of the score's parts."""
    _learned([run for run in runs if run.learned < len(data.labels)], len(data.labels), data, work)
    for run, (kept, replay) in zip(runs, work.map(_finish, [(run.model,) for run in runs])):
        run.candidate.kept_accuracy, run.candidate.replay_accuracy, run.candidate.dropped = kept, replay, False


def _replay_cap(candidates: list[Candidate], head: Head, stopped_replay: float = 1.0) -> float:
    """What the replay counts up to in the score (module docstring): with no change the median of the candidates'
    replays, a stopped one's counted as ``stopped_replay``; else 1 (all of it)."""
    if head.kind != NO_CHANGE:
        return 1.0
    return float(np.median([stopped_replay if c.dropped else c.replay_accuracy for c in candidates]))


def _chosen(candidates: list[Candidate], head: Head, cap: float) -> Candidate | None:
    """The choice (:func:`choose`) once the finished candidates are weighed with ``cap``."""
    for candidate in candidates:
        if candidate.replay_accuracy is not None:
            candidate.weigh(head.weights, cap)
    return choose(candidates, head)


def _cap_decides(candidates: list[Candidate], head: Head) -> bool:
    """Whether the replay's cap, unknown where the race stopped candidates (their replays are not measured), could
    change the choice among those that finished: the median lies between the one that counts every stopped replay
    as 0 and the one that counts it as 1, and a score difference moves one way only as the cap grows, so a choice
    the same at both ends is the choice at the true median."""
    if head.kind != NO_CHANGE or not any(c.dropped for c in candidates):
        return False
    return _chosen(candidates, head, _replay_cap(candidates, head, 0.0)) is not \
        _chosen(candidates, head, _replay_cap(candidates, head, 1.0))


def _race(hits: list[np.ndarray], comparisons: int | None = None, delta: float = RACE_DELTA) -> list[bool]:
    """Which candidates go on at a look of the race, from whether each predicted each counted row so far: one stops
    when another was right on enough more of the rows where exactly one of the two was, ``b - a >= sqrt(2 (a + b)
    ln(comparisons / delta))``, ``comparisons`` (default K (K - 1) among these K) those the race may make in all
    (module docstring). The one right most often always goes on."""
    k = len(hits)
    right = np.array(hits, dtype=np.float64)
    wins = right @ (1 - right).T  # [i, j]: rows i predicted and j did not
    discordant = wins + wins.T
    bound = np.sqrt(2 * discordant * np.log(max(comparisons or k * (k - 1), 1) / delta))
    beaten = (discordant > 0) & (wins.T - wins >= bound)  # [i, j]: j beat i
    return [not row.any() for row in beaten]


def _speed(rows: int, seconds: float) -> float:
    return rows / seconds if seconds > 0 else float("inf")


def online_learners(task: str = CLASSIFICATION) -> list[str]:
    return [spec.name for spec in learners.REGISTRY.values() if spec.online and task in spec.tasks]


def search(learner: str, board, X, y, ram: int | None = None, flash: int | None = None, rate: float | None = None,
           params: dict | None = None, optimize: str = "speed", bins_rows: int = BINS_ROWS, workers: int | None = None,
           scheduler: str | None = None, progress: bool = False, search_rows: int | None = None,
           grid: tuple[dict, ...] | None = None, rate_mean: bool = False, classes=None,
           task: str = CLASSIFICATION, race: bool = True) -> Search:
    """The best scored configuration (module docstring) of the online ``learner`` (or, with ``"auto"``, of every
    online learner with a form for ``task``) on rows ``X``, ``y`` (the first ``search_rows`` of them) that fits
    ``ram`` and ``flash`` on ``board`` (the board's by default) and, with ``rate``, learns that many samples per
    second. ``grid`` replaces the learner's search grid; ``rate_mean`` plans the rate on the mean calls instead of
    the worst; ``classes`` (default: the labels of the rows) are the labels the stream may carry; a regressor
    (``task``) has none. A detector's search is :func:`search_detector` (``y``: None or 0/1 labels)."""
    if task == ANOMALY:
        if learner == AUTO or rate is not None:
            raise ValueError("--learner auto and --rate choose among classifiers and regressors; give a detector "
                             f"({', '.join(online_learners(ANOMALY))}) and --ram or --flash")
        if search_rows is not None:
            SEARCH_ROWS.check(search_rows)
        return search_detector(learner, board, X[:search_rows], None if y is None else np.asarray(y)[:search_rows],
                               ram, flash, params, optimize, bins_rows, grid)
    names = online_learners(task) if learner == AUTO else [learner]
    if learner == AUTO and (params or grid):
        raise ValueError(f"learner options ({', '.join(sorted(params or {'grid': 0}))}) need a --learner: auto "
                         f"searches every online learner's grid")
    if not learners.get(names[0], task).online:
        raise ValueError(f"choosing by accuracy needs an online learner; {learner} learns in batch")
    X, y = np.asarray(X), np.asarray(y)
    if task == REGRESSION:
        if len(X) < 2:
            raise ValueError(f"the data has {len(X)} row(s); training needs at least 2")
        y, classes = check_target(y, len(X)), None
    else:
        classes = check_stream(X, y, classes)
    if search_rows is not None:
        SEARCH_ROWS.check(search_rows)
        needed = min(bins_rows, len(X))
        if search_rows < needed:
            raise ValueError(f"--search-rows {search_rows} is below the {needed} rows the learners start on "
                             f"(--bins-rows {bins_rows}): score on at least {needed} rows")
        X, y = X[:search_rows], y[:search_rows]
    n_features, n_classes = X.shape[1], 1 if task == REGRESSION else len(classes)
    if rate is not None:
        RATE.check(rate)
    if workers is not None:
        WORKERS.check(workers)
    head, reserved = look_at_targets(X, y) if task == REGRESSION else look_at_rows(X, y, classes)
    candidates, notes = [], []
    for name in names:
        spec = learners.get(name, task)
        fixed = (spec.class_increments if head.kind == CLASS_INCREMENTS else {}) | (params or {})
        budgets = configurations(name, board, n_features, n_classes, ram, flash, optimize,
                                 grid or spec.task_grid(task), task=task, **fixed)
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
    data = Rows(X, y, classes, bins_rows, reserved, head.passes, head.now_from, head.target_sd)
    race = race and task == CLASSIFICATION and len(eligible) > 1
    with _Workers(data, len(eligible), workers, scheduler, progress) as work:
        if race:
            _raced(eligible, data, work, head)
        else:
            for candidate, parts in zip(eligible, work.map(_scores, [(c.learner, c.budget.params) for c in eligible])):
                candidate.accuracy, candidate.kept_accuracy, candidate.replay_accuracy, candidate.samples_per_second \
                    = parts
    cap = _replay_cap(eligible, head)
    best = _chosen(candidates, head, cap)
    if trivial(best, head):
        constant = (f"a constant class (the majority class keeps {head.majority:.4f} of the reserved rows; its share "
                    f"of the rows is {head.majority_share:.4f})" if task == CLASSIFICATION else
                    f"predicting the mean (a skill of {head.majority:.4f} on the reserved rows, 0 on the replays)")
        notes.append(f"no candidate does better than {constant}: the rows may be too few, or a larger budget may be "
                     f"needed")
    return Search(best.learner, board.name, board.clock_hz, rate, len(X), candidates, candidates.index(best), head,
                  notes, cap)


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


class _Workers:
    """Where a search's work runs, the rows sent once: worker processes (each receives them when it starts), a Dask
    cluster (scattered once), or this process (one worker, or one task). :meth:`map` runs ``fn(rows, *args)`` for
    each of a list of arguments, the results in order; the workers live until the ``with`` block ends, so the
    race's stages (:func:`_raced`) reuse them."""

    def __init__(self, data: Rows, tasks: int, workers, scheduler, progress: bool):
        self.data, self.tasks, self.workers, self.scheduler = data, tasks, workers, scheduler
        self.bar = tqdm(total=0, desc="search", unit="config", disable=not progress)
        self.pool = self.client = self.shared = None

    def __enter__(self) -> "_Workers":
        if self.scheduler is not None:
            try:
                from dask.distributed import Client
            except ImportError:
                raise ImportError("--scheduler needs dask.distributed: pip install 'edgestream[dask]'") from None
            self.client = Client(self.scheduler)
            [self.shared] = self.client.scatter([self.data], broadcast=True)
        elif (self.workers or os.cpu_count() or 1) > 1 and self.tasks > 1:
            self.pool = ProcessPoolExecutor(min(self.workers or os.cpu_count(), self.tasks),
                                            initializer=_start_worker, initargs=(os.getpid(), self.data))
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        if self.client is not None:
            self.client.close()

    def map(self, fn, arguments: list[tuple]) -> list:
        results: list = [None] * len(arguments)
        self.bar.total += len(arguments)
        self.bar.refresh()
        if self.client is not None:
            from dask.distributed import as_completed as dask_completed

            futures = {self.client.submit(fn, self.shared, *args, pure=False): i for i, args in enumerate(arguments)}
            done = dask_completed(futures)
        elif self.pool is not None:
            futures = {self.pool.submit(_in_worker, fn, *args): i for i, args in enumerate(arguments)}
            done = as_completed(futures)
        else:
            futures, done = {}, ()
            for i, args in enumerate(arguments):
                results[i] = fn(self.data, *args)
                self.bar.update()
        for future in done:
            results[futures[future]] = future.result()
            self.bar.update()
        return results


_WORKER_ROWS: list[Rows] = []  # a worker's rows, received once (:func:`_start_worker`)


def _start_worker(parent: int, data: Rows) -> None:
    """A worker's start: it keeps the search's rows for every candidate it scores, and ends when the process that
    started it has ended (a killed ``fit`` or ``budget`` leaves no workers behind, waiting forever for work: they
    hold the work queue open themselves)."""
    _WORKER_ROWS[:] = [data]

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="edgestream-parent-watch").start()


def _in_worker(fn, *args):
    return fn(_WORKER_ROWS[0], *args)


__all__ = ["AUTO", "Candidate", "Search", "online_learners", "changed_part", "search", "with_changes"]


# -- detectors ---------------------------------------------------------------------------------------------------

INJECT_EVERY = 50  # label-free ranking: one row in this many, after the work-range rows, becomes an outlier
INJECT_SEED = 0


@dataclass
class DetectorCandidate:
    """One configuration of a detector: its budget and (evaluated ones) the ROC-AUC that ranks it."""

    budget: Budget
    roc_auc: float | None = None
    samples_per_second: float | None = None

    def to_json(self) -> dict:
        return {"learner": self.budget.learner, "config": self.budget.config, "ram_at_peak_bytes": self.budget.ram_bytes,
                "flash_bytes": self.budget.flash_bytes, "fits": self.budget.fits, "roc_auc": self.roc_auc,
                "samples_per_second": self.samples_per_second}


@dataclass
class DetectorSearch:
    """The candidates of a detector's search, the chosen one and how they were ranked (``criterion``: ``roc_auc``
    of the 0/1 labels, or ``injected_roc_auc`` of the synthetic outliers, module docstring)."""

    learner: str
    board: str
    rows: int
    criterion: str
    injected: int  # synthetic outliers (label-free ranking), else 0
    candidates: list[DetectorCandidate]
    chosen: int

    @property
    def best(self) -> DetectorCandidate:
        return self.candidates[self.chosen]

    @property
    def budget(self) -> Budget:
        return self.best.budget

    def curve(self, budgets=CURVE_BUDGETS) -> dict[int, float]:
        """RAM budget -> the ROC-AUC of what a search at that budget chooses, up to this search's budget."""
        evaluated = [c for c in self.candidates if c.roc_auc is not None]
        return {ram: max(c.roc_auc for c in evaluated if c.budget.ram_bytes <= ram) for ram in budgets
                if ram <= self.budget.ram_budget and any(c.budget.ram_bytes <= ram for c in evaluated)}

    def to_json(self) -> dict:
        return {"rows": self.rows, "criterion": self.criterion, "injected": self.injected, "chosen": self.chosen,
                "candidates": [c.to_json() for c in self.candidates]}

    def to_text(self) -> str:
        evaluated = sum(c.roc_auc is not None for c in self.candidates)
        ranked = ("the ROC-AUC of its prequential scores against the 0/1 labels" if self.criterion == "roc_auc" else
                  f"the ROC-AUC of its prequential scores of {self.injected} synthetic outliers (one row in "
                  f"{INJECT_EVERY} drawn uniformly from the rows' range) against the other rows")
        config = ", ".join(f"{k}={v}" for k, v in self.best.budget.config.items())
        return (f"chosen: {self.learner} ({config}), {self.criterion} {self.best.roc_auc:.4f}, ranked by {ranked} "
                f"over {self.rows} rows{self.time_text()}; {evaluated} of {len(self.candidates)} candidates fit and "
                "were evaluated")

    def time_text(self) -> str:
        """The chosen one's predicted instructions per sample (a score and a learn call: on average, and at worst
        a window swap), or nothing without a cost model for the board's core."""
        timing = self.budget.time
        if timing is None:
            return ""
        mean, worst = (timing.cost.per_sample(worst=w) for w in (False, True))
        return (f"; {mean:,.0f} instructions per sample predicted on average, {worst:,.0f} at worst "
                f"({timing.clock_hz / mean:,.0f} samples/s on average at {timing.clock_hz / 1e6:g} MHz)")


def with_outliers(X, start: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows with synthetic outliers (the label-free criterion, module docstring) and their bool labels: from
    row ``start`` on (after the rows the work range is fitted on), one row in ``INJECT_EVERY`` replaced by a row
    drawn uniformly from the box of the rows' per-feature ranges (seeded: the same rows every run)."""
    X = np.array(X, copy=True)
    at = np.arange(start + INJECT_EVERY // 2, len(X), INJECT_EVERY)
    if not len(at):
        raise ValueError(f"{len(X)} rows: ranking detectors without labels needs more than {start + INJECT_EVERY // 2} "
                         f"(synthetic outliers go after the first {start}); give more rows or a 0/1 --label column")
    rng = np.random.default_rng(INJECT_SEED)
    X[at] = rng.uniform(X.min(axis=0), X.max(axis=0), size=(len(at), X.shape[1]))
    labels = np.zeros(len(X), dtype=bool)
    labels[at] = True
    return X, labels


def _detector_roc_auc(learner: str, params: dict, X, labels, bins_rows: int) -> tuple[float, float]:
    """(ROC-AUC of a configuration's prequential scores, host samples per second), started as ``fit`` starts it."""
    model = learners.get(learner, ANOMALY).make(ANOMALY, **params)
    model.start(X[:bins_rows])
    started = time.perf_counter()
    scores = split_output(model.test_then_train(X))[0]
    return roc_auc(labels, scores), len(X) / max(time.perf_counter() - started, 1e-9)


def search_detector(learner: str, board, X, labels=None, ram: int | None = None, flash: int | None = None,
                    params: dict | None = None, optimize: str = "speed", bins_rows: int = BINS_ROWS,
                    grid: tuple[dict, ...] | None = None) -> DetectorSearch:
    """The detector configuration of ``learner``'s search grid that fits ``ram`` and ``flash`` on ``board`` and
    ranks first on rows ``X`` (module docstring): by ROC-AUC of the 0/1 ``labels``, or without them (or when they
    hold one kind only) by the ROC-AUC of injected synthetic outliers; ties to the smaller RAM, then the earlier."""
    spec = learners.get(learner, ANOMALY)
    X = device_input(np.asarray(X), spec.detector.input_dtype)
    labels = None if labels is None else check_anomaly_labels(labels)
    criterion, injected = "roc_auc", 0
    if labels is None or labels.all() or not labels.any():
        X, labels = with_outliers(X, min(bins_rows, len(X) // 2))
        criterion, injected = "injected_roc_auc", int(labels.sum())
    budgets = configurations(learner, board, X.shape[1], 1, ram, flash, optimize, grid or spec.task_grid(ANOMALY),
                             task=ANOMALY, **(params or {}))
    candidates = [DetectorCandidate(budget) for budget in budgets]
    if not any(c.budget.fits for c in candidates):
        raise not_fitting(learner, board, X.shape[1], 1, budgets)
    for candidate in (c for c in candidates if c.budget.fits):
        candidate.roc_auc, candidate.samples_per_second = _detector_roc_auc(learner, candidate.budget.params, X,
                                                                            labels, bins_rows)
    best = max((c for c in candidates if c.roc_auc is not None),
               key=lambda c: (c.roc_auc, -c.budget.ram_bytes, -candidates.index(c)))
    return DetectorSearch(learner, board.name, len(X), criterion, injected, candidates, candidates.index(best))
