"""What the rows of a stream look like before anything learns them: whether classes arrive over time, whether the
concept changes, and the trivial baselines a learned model must beat. :mod:`edgestream.search` weighs its score by
what this finds and reports it (its module docstring says why).

A regression target (:func:`look_at_targets`) is looked at through its quartiles, which stand for classes in the
halves test; its scores are **skills**, ``1 - RMSE / sd`` (``sd``: the standard deviation of the rows' targets),
so that they read as accuracies do: higher is better, 1 is exact, and 0 is what predicting the rows' mean
scores (the regression form of the majority class)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

RESERVE_EVERY = 10  # one row in this many of each class is held out of the search's learning: what is kept
OUT_OF_TIME = 1e-3  # a class arrives late (leaves early) when chance would show it sooner with this probability
CHANGE_P = 1e-3  # the halves test's level, after the Bonferroni correction over the features
ABOUT_AS_WELL = 0.02  # accuracy points within which the last label does "about as well" as a model

CLASS_INCREMENTS, NO_CHANGE, CHANGES = "class increments", "no change", "changes"
# (what it learns now, what it keeps, how it recovers): search.py's module docstring
WEIGHTS = {CLASS_INCREMENTS: (0.2, 0.6, 0.2), NO_CHANGE: (0.4, 0.4, 0.2), CHANGES: (0.4, 0.2, 0.4)}
# Without a change the rows stand for the longer stream to come (search.py's module docstring): what is learned now
# counts from this share of the rows on, and what is kept is measured after this many passes over them.
NOW_FROM = {CLASS_INCREMENTS: 0.0, NO_CHANGE: 0.5, CHANGES: 0.0}
PASSES = {CLASS_INCREMENTS: 1, NO_CHANGE: 2, CHANGES: 1}


@dataclass(frozen=True)
class Head:
    """What :func:`look_at_rows` found."""

    kind: str  # CLASS_INCREMENTS, NO_CHANGE or CHANGES
    arriving: tuple  # classes whose first row comes later than chance allows
    leaving: tuple  # classes whose last row comes earlier than chance allows
    change_p: float  # the halves test's p-value, Bonferroni-corrected (1.0: nothing to test)
    last_label: float  # accuracy of repeating the last label over the rows (the first row counts as missed)
    majority: float  # accuracy of the majority class of the learned rows on the reserved rows (nan: none reserved)
    majority_share: float  # the majority class's share of the rows learned
    rows: int
    reserved: int  # rows held out for what is kept
    target_sd: float | None = None  # a regression target's standard deviation (its scores are skills); None: classes

    @property
    def weights(self) -> tuple[float, float, float]:
        return WEIGHTS[self.kind]

    @property
    def passes(self) -> int:
        return PASSES[self.kind]

    @property
    def now_from(self) -> float:
        return NOW_FROM[self.kind]

    def describe(self) -> str:
        if self.kind == CLASS_INCREMENTS:
            seen = [f"class(es) {', '.join(map(str, self.arriving))} arrive late" if self.arriving else "",
                    f"class(es) {', '.join(map(str, self.leaving))} stop early" if self.leaving else ""]
            return f"class increments ({'; '.join(s for s in seen if s)})"
        return f"{self.kind} (halves test p = {self.change_p:.2g})"

    def to_json(self) -> dict:
        return {"kind": self.kind, "arriving": [_plain(c) for c in self.arriving],
                "leaving": [_plain(c) for c in self.leaving], "change_p": self.change_p,
                "weights": dict(zip(("now", "kept", "recover"), self.weights)), "passes": self.passes,
                "now_from": self.now_from,
                "last_label": self.last_label,
                "majority": None if math.isnan(self.majority) else self.majority,
                "majority_share": self.majority_share, "rows": self.rows, "reserved": self.reserved,
                "target_sd": self.target_sd}


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def reserved_rows(y, classes) -> np.ndarray:
    """The rows held out of learning: of each class, its rows ``RESERVE_EVERY // 2``, then every
    ``RESERVE_EVERY``-th after it, so the sample spreads over the class's rows and a class of fewer rows has none."""
    y = np.asarray(y)
    reserved = np.zeros(len(y), dtype=bool)
    for k in classes:
        rows = np.flatnonzero(y == k)
        reserved[rows[RESERVE_EVERY // 2::RESERVE_EVERY]] = True
    return reserved


def out_of_time(y, classes) -> tuple[tuple, tuple]:
    """(arriving, leaving): the classes with no row among the first (last) rows where chance would have shown one
    with probability above 1 - ``OUT_OF_TIME`` / (2 classes): a class of share ``p`` misses ``m`` rows with
    probability ``(1 - p)^m``."""
    y, n = np.asarray(y), len(y)
    level = math.log(OUT_OF_TIME / (2 * len(classes)))
    arriving, leaving = [], []
    for k in classes:
        rows = np.flatnonzero(y == k)
        if len(rows) == 0 or len(rows) == n:
            continue
        log_miss = math.log1p(-len(rows) / n)  # log of the chance that one row is not of this class
        if rows[0] * log_miss < level:
            arriving.append(k)
        if (n - 1 - rows[-1]) * log_miss < level:
            leaving.append(k)
    return tuple(arriving), tuple(leaving)


def change_p(X, y, classes) -> float:
    """The p-value that the class mix within each quartile of a feature is the same in the first and the second
    half of the rows (G-test of independence of half and class, summed over the quartiles), the smallest over the
    features times their number (Bonferroni); 1.0 when no feature has two quartiles with rows of two classes."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    label, half = np.searchsorted(classes, y), np.arange(len(y)) >= len(y) // 2
    smallest = 1.0
    for column in X.T:
        finite = np.isfinite(column)
        if finite.sum() < 8:
            continue
        quartile = np.searchsorted(np.quantile(column[finite], [0.25, 0.5, 0.75]), column[finite], side="right")
        counts = np.zeros((4, 2, len(classes)))
        np.add.at(counts, (quartile, half[finite].astype(int), label[finite]), 1)
        g, dof = 0.0, 0
        for table in counts:
            table = table[:, table.sum(axis=0) > 0]
            if table.shape[1] < 2 or (table.sum(axis=1) == 0).any():
                continue
            expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
            seen = table > 0
            g += 2 * float((table[seen] * np.log(table[seen] / expected[seen])).sum())
            dof += table.shape[1] - 1
        if dof:
            smallest = min(smallest, float(chi2.sf(g, dof)))
    return min(1.0, smallest * X.shape[1])


def skill(y_true, y_pred, sd: float) -> float:
    """``1 - RMSE / sd`` of predictions of a regression target (module docstring)."""
    error = np.asarray(y_pred, dtype=np.float64) - np.asarray(y_true, dtype=np.float64)
    return float(1 - np.sqrt(np.mean(error**2)) / sd)


def target_quartiles(y) -> np.ndarray:
    """The quartile (0..3) of each target among the rows': the classes a regression target stands for."""
    y = np.asarray(y, dtype=np.float64)
    return np.searchsorted(np.quantile(y, [0.25, 0.5, 0.75]), y, side="right")


def look_at_targets(X, y) -> tuple[Head, np.ndarray]:
    """:func:`look_at_rows` for a regression target: no classes to arrive, the change test on its quartiles,
    the reserved rows every ``RESERVE_EVERY``-th from the ``RESERVE_EVERY // 2``-th, and the baselines as skills:
    the learned rows' mean on the reserved rows (``majority``; on the replays, ``majority_share``, 0: their targets
    keep the rows' spread) and repeating the last target over the rows (``last_label``, the first row predicted
    by itself)."""
    y = np.asarray(y, dtype=np.float64)
    reserved = np.zeros(len(y), dtype=bool)
    reserved[RESERVE_EVERY // 2::RESERVE_EVERY] = True
    sd = float(np.std(y)) or 1.0
    p = change_p(X, target_quartiles(y), np.arange(4))
    kind = NO_CHANGE if p >= CHANGE_P else CHANGES
    mean = float(np.mean(y[~reserved]))
    majority = skill(y[reserved], np.full(reserved.sum(), mean), sd) if reserved.any() else math.nan
    last = skill(y, np.concatenate([y[:1], y[:-1]]), sd)
    return Head(kind, (), (), p, last, majority, 0.0, len(y), int(reserved.sum()), sd), reserved


def look_at_rows(X, y, classes) -> tuple[Head, np.ndarray]:
    """The kind of the rows and their baselines (:class:`Head`), and the mask of the reserved rows."""
    y = np.asarray(y)
    reserved = reserved_rows(y, classes)
    arriving, leaving = out_of_time(y, classes)
    p = change_p(X, y, classes)
    kind = CLASS_INCREMENTS if arriving or leaving else NO_CHANGE if p >= CHANGE_P else CHANGES
    last_label = float(np.mean(y[1:] == y[:-1]) * (len(y) - 1) / len(y)) if len(y) > 1 else 0.0
    learned = y[~reserved]
    values, counts = np.unique(learned, return_counts=True)
    majority = float(np.mean(y[reserved] == values[np.argmax(counts)])) if reserved.any() else math.nan
    return Head(kind, arriving, leaving, p, last_label, majority, float(counts.max() / len(learned)), len(y),
                int(reserved.sum())), reserved


__all__ = ["ABOUT_AS_WELL", "CHANGES", "CLASS_INCREMENTS", "Head", "NO_CHANGE", "NOW_FROM", "PASSES",
           "WEIGHTS", "change_p",
           "look_at_rows", "look_at_targets", "out_of_time", "reserved_rows", "skill", "target_quartiles"]
