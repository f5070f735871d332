"""Training any registered learner on a table of rows, within a board's budget, as ``edgestream fit`` does.

Batch learners (``online=False``) fit all rows at once. Online learners learn the rows in file order, one at a
time (test-then-train), as the device would: their bin edges come from the first ``bins_rows`` rows and their
classes from the whole table. With a RAM or flash budget, the budget manager chooses the configuration
(:func:`edgestream.budget.plan`), so ``fit --ram`` and ``budget --ram`` give the same answer on the same board.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import learners
from .budget import Budget, of_model, plan
from .data import device_input
from .evaluate import PrequentialResult, prequential

BINS_ROWS = 1000
CURVE_BUDGETS = tuple(kib * 1024 for kib in (2, 4, 8, 16, 32))


@dataclass
class Trained:
    model: object
    budget: Budget | None  # the fitted model's exact budget, when a budget was given
    prequential: PrequentialResult | None  # online learners: the test-then-train pass over the rows
    bins_rows: int | None = None


def check_stream(X, y) -> np.ndarray:
    """The classes of a labelled table; one row or one class is refused."""
    classes = np.unique(y)
    if len(X) < 2:
        raise ValueError(f"the data has {len(X)} row(s); training needs at least 2")
    if len(classes) < 2:
        raise ValueError(f"the data has a single class ({classes[0]!r}); a classifier needs at least 2")
    return classes


def configured(learner: str, params: dict, n_features: int, n_classes: int, board=None, ram=None, flash=None):
    """The estimator to train: as given, or the largest that fits the budget (then also its plan)."""
    spec = learners.get(learner)
    if ram is None and flash is None:
        return spec.make(**params), None
    if board is None:
        raise ValueError("a RAM or flash budget needs a board")
    budget = plan(learner, board, n_features, n_classes, ram=ram, flash=flash, **params)
    return spec.make(**budget.params), budget


def start_online(model, X, classes, bins_rows: int = BINS_ROWS):
    """Bin edges (or, for a learner with ``start``, its input setup) from the first rows and the classes, before
    the first learning step."""
    if bins_rows < 1:
        raise ValueError(f"bins_rows={bins_rows} must be at least 1")
    sample = X[: min(bins_rows, len(X))]
    if hasattr(model, "start"):
        return model.start(sample, classes)
    return model.fit_bins(sample).set_classes(classes)


def train(learner: str, X, y, params: dict, board=None, ram=None, flash=None, bins_rows: int = BINS_ROWS,
          progress: bool = False) -> Trained:
    spec = learners.get(learner)
    classes = check_stream(X, y)
    model, planned = configured(learner, params, X.shape[1], len(classes), board, ram, flash)
    X = device_input(X, model.input_dtype)
    result = None
    if spec.online:
        start_online(model, X, classes, bins_rows)
        result = prequential(model, X, y, progress=progress, desc="learning")
    else:
        model.fit(X, y)
    budget = of_model(model, board, planned.ram_budget, planned.flash_budget) if planned else None
    if budget is not None and not budget.fits:
        raise ValueError(f"the trained model does not fit the budget:\n{budget.to_text()}")
    return Trained(model, budget, result, min(bins_rows, len(X)) if spec.online else None)


def accuracy_curve(learner: str, board, X, y, flash=None, params=None, progress: bool = False) -> dict[int, float]:
    """RAM budget -> prequential accuracy of the online learner planned for it (budgets the board has and where
    some configuration fits)."""
    classes = check_stream(X, y)
    curve = {}
    for ram in (ram for ram in CURVE_BUDGETS if ram <= board.ram_bytes):
        try:
            model, _ = configured(learner, params or {}, X.shape[1], len(classes), board, ram, flash)
        except ValueError:  # nothing fits this budget (the options themselves were checked by the main plan)
            continue
        X_device = device_input(X, model.input_dtype)
        start_online(model, X_device, classes)
        curve[ram] = prequential(model, X_device, y, progress=progress, desc=f"{ram // 1024} KiB").accuracy
    return curve
