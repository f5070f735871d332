"""Training any registered learner on a table of rows, within a board's budget, as ``edgestream fit`` does.

Batch learners (``online=False``) fit all rows at once. Online learners learn the rows in file order, one at a
time (test-then-train), as the device would: their bin edges come from the first ``bins_rows`` rows and their
classes from the whole table. With a RAM or flash budget, the budget manager chooses the configuration
(:func:`edgestream.search.search` for online learners: the most accurate that fits; :func:`edgestream.budget.plan`
for batch learners: the largest), so ``fit --ram`` and ``budget --ram`` give the same answer on the same board.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import learners
from .budget import Budget, of_model, plan
from .data import device_input
from .evaluate import PrequentialResult, prequential
from .learners import model_input
from .online import BINS_ROWS, check_stream, start_online
from .search import AUTO, search
from .task import (ANOMALY, CLASSIFICATION, REGRESSION, check_anomaly_labels, check_target, check_task, infer_task,
                   split_output, task_of)

__all__ = ["BINS_ROWS", "Trained", "check_stream", "configured", "evaluate_online", "parse_row_numbers",
           "start_online", "train", "update"]


@dataclass
class Trained:
    model: object
    budget: Budget | None  # the fitted model's exact budget, when a budget was given
    prequential: PrequentialResult | None  # online learners: the test-then-train pass over the rows
    bins_rows: int | None = None
    search: object | None = None  # the edgestream.search.Search that chose the configuration (online learners)


def configured(learner: str, params: dict, n_features: int, n_classes: int, board=None, ram=None, flash=None,
               task: str = CLASSIFICATION):
    """The estimator of ``task`` to train: as given, or the largest that fits the budget (then also its plan)."""
    spec = learners.get(learner, task)
    if ram is None and flash is None:
        return spec.make(task, **params), None
    if board is None:
        raise ValueError("a RAM or flash budget needs a board")
    budget = plan(learner, board, n_features, n_classes, ram=ram, flash=flash, task=task, **params)
    return spec.make(task, **budget.params), budget


def train(learner: str, X, y, params: dict, board=None, ram=None, flash=None, bins_rows: int = BINS_ROWS,
          progress: bool = False, rate=None, workers=None, scheduler=None, search_rows: int | None = None,
          rate_mean: bool = False, classes=None, task: str | None = None, race: bool = True) -> Trained:
    """Train ``learner`` on the rows. With a budget (``ram``, ``flash`` or, online learners, ``rate``), an online
    learner takes the best scored configuration that fits (:func:`edgestream.search.search`, scored on the first
    ``search_rows`` rows; ``learner="auto"``: of every online learner; ``rate_mean``: the rate on the mean calls,
    not the worst), a batch learner the largest (:func:`edgestream.budget.plan`). ``classes``: the labels the
    stream may carry (default: the rows' own). ``task``: classification or regression (:mod:`edgestream.task`;
    default: what the labels look like); a regressor's online learners start on the first ``bins_rows`` rows'
    targets too (its target scale)."""
    task = check_task(task) if task is not None else infer_task(y)
    if task == ANOMALY:
        return _train_detector(learner, X, y, params, classes, board, ram, flash, rate, bins_rows, search_rows)
    if task != REGRESSION and np.asarray(y).dtype.kind == "f" and infer_task(y) == REGRESSION:
        raise ValueError(f"--task classification: the label column holds {len(np.unique(y))} distinct numbers with "
                         "fractions, not class labels; predict them with --task regression")
    budgeted = ram is not None or flash is not None or rate is not None
    if learner == AUTO and not budgeted:
        raise ValueError("--learner auto chooses by accuracy within a budget: give --ram, --flash or --rate")
    spec = learners.get(learner, task) if learner != AUTO else None
    given_classes = classes
    if task == REGRESSION:
        if classes is not None:
            raise ValueError("--classes lists the labels of a classifier; a regression target has none")
        if len(X) < 2:
            raise ValueError(f"the data has {len(X)} row(s); training needs at least 2")
        y = check_target(y, len(X))
    else:
        classes = check_stream(X, y, classes)
    found = None
    if (spec is None or spec.online) and budgeted:
        if board is None:
            raise ValueError("a RAM, flash or rate budget needs a board")
        found = search(learner, board, X, y, ram, flash, rate, params, bins_rows=bins_rows, workers=workers,
                       scheduler=scheduler, progress=progress, search_rows=search_rows, rate_mean=rate_mean,
                       classes=classes, task=task, race=race)
        spec = learners.get(found.learner, task)
        model, planned = spec.make(task, **found.budget.params), found.budget
    elif rate is not None:
        raise ValueError(f"--rate applies to online learners; {learner} learns in batch")
    elif search_rows is not None:
        raise ValueError("--search-rows scores the candidates of a search: give an online learner and a budget")
    else:
        if given_classes is not None and not spec.online:
            raise ValueError(f"--classes gives the labels an online learner may meet later; {learner} learns in "
                             f"batch the classes of its rows")
        n_outputs = 1 if task == REGRESSION else len(classes)
        model, planned = configured(learner, params, X.shape[1], n_outputs, board, ram, flash, task=task)
    X = device_input(X, model.input_dtype)
    result = None
    if spec.online:
        start_online(model, X, y if task == REGRESSION else classes, bins_rows)
        result = prequential(model, X, y, progress=progress, desc="learning")
    else:
        model.fit(X, y)
    budget = of_model(model, board, planned.ram_budget, planned.flash_budget) if planned else None
    if budget is not None and not budget.fits:
        raise ValueError(f"the trained model does not fit the budget:\n{budget.to_text()}")
    if found is not None:
        found.trained(budget)
    return Trained(model, budget, result, min(bins_rows, len(X)) if spec.online else None, found)


def _train_detector(learner: str, X, y, params: dict, classes, board, ram, flash, rate, bins_rows: int,
                    search_rows: int | None = None) -> Trained:
    """An anomaly detector learning every row in file order (``y``: None, or 0/1 labels that only score it),
    started on the first ``bins_rows`` rows (its work range); its threshold calibrated on its prequential scores of
    the rows after its first window (they are 0 before), for its target false-alarm rate. With a RAM or flash
    budget: the configuration of its search grid that fits and ranks first (:func:`edgestream.search.search_detector`:
    by ROC-AUC of the labels, else of injected synthetic outliers)."""
    if classes is not None:
        raise ValueError("--classes lists the labels of a classifier; a detector learns unlabelled rows")
    if rate is not None or learner == AUTO:
        raise ValueError("--rate and --learner auto choose among classifiers and regressors; a detector is chosen "
                         f"within --ram and --flash ({', '.join(learners.for_task(ANOMALY))})")
    if y is not None:
        check_anomaly_labels(y)
    found = None
    if ram is not None or flash is not None:
        if board is None:
            raise ValueError("a RAM or flash budget needs a board")
        found = search(learner, board, X, y, ram, flash, params=params, bins_rows=bins_rows, search_rows=search_rows,
                       task=ANOMALY)
        model, planned = learners.get(learner, ANOMALY).make(ANOMALY, **found.budget.params), found.budget
    else:
        if search_rows is not None:
            raise ValueError("--search-rows scores the candidates of a search: give a budget (--ram or --flash)")
        model, planned = configured(learner, params, X.shape[1], 1, task=ANOMALY)
    X = device_input(X, model.input_dtype)
    model.start(X[:bins_rows])
    result = prequential(model, X, y)
    model.calibrate(split_output(result.predictions)[0][model.window:])
    budget = of_model(model, board, planned.ram_budget, planned.flash_budget) if planned else None
    if budget is not None and not budget.fits:
        raise ValueError(f"the trained model does not fit the budget:\n{budget.to_text()}")
    return Trained(model, budget, result, min(bins_rows, len(X)), found)


def evaluate_online(model, X, y, window: int = 500, progress: bool = False) -> PrequentialResult:
    """Prequential evaluation of a saved online model over rows in file order, on the compiled engine: each row is
    predicted, scored, then learned (the model keeps what it learns). Rows of another width, labels the model was
    not started with, and frozen learners are refused."""
    spec = learners.of_model(model)
    if not spec.online:
        online = ", ".join(s.name for s in learners.REGISTRY.values() if s.online)
        raise ValueError(f"a {spec.name} model does not learn row by row; test-then-train needs an online learner "
                         f"({online})")
    if not learners.is_fitted(model):
        raise ValueError(f"this {spec.name} model has not started (no bin edges or classes)")
    n_features = model_input(model)[1]
    if X.shape[1] != n_features:
        raise ValueError(f"the data has {X.shape[1]} features, the model takes {n_features}")
    if task_of(model) == REGRESSION:
        return prequential(model, device_input(X, model.input_dtype), check_target(y, len(X)), window=window,
                           progress=progress, desc="test-then-train")
    if task_of(model) == ANOMALY:
        return prequential(model, device_input(X, model.input_dtype), y, window=window)
    unknown = sorted(set(np.unique(y).tolist()) - set(model.classes_.tolist()), key=str)
    if unknown:
        raise ValueError(f"label(s) {', '.join(map(repr, unknown[:5]))} are not among the model's classes "
                         f"{model.classes_.tolist()}")
    return prequential(model, device_input(X, model.input_dtype), y, window=window, progress=progress,
                       desc="test-then-train")


@dataclass
class Update:
    """What ``update`` did to a model: rows deleted and added (with their new row numbers), nodes retrained, and
    for a regressor the added rows whose target its scale saturated."""

    deleted: int
    added: np.ndarray
    retrained_nodes: int
    seconds: float
    saturated: int = 0


def parse_row_numbers(text: str) -> np.ndarray:
    """Row numbers from a file (integers separated by commas, spaces or new lines) or from a comma list."""
    path = Path(text)
    source = path.read_text() if path.is_file() else text
    tokens = [token for token in source.replace(",", " ").split() if token]
    if not tokens:
        raise ValueError(f"no row numbers in {text!r}")
    try:
        return np.asarray([int(token) for token in tokens], dtype=np.int64)
    except ValueError:
        bad = next(token for token in tokens if not token.lstrip("-").isdigit())
        raise ValueError(f"row numbers must be integers, got {bad!r} (in {text!r})") from None


def update(model, X=None, y=None, delete=None) -> Update:
    """Delete rows by number, then add rows ``X``, ``y``, in place, for a learner that supports it (``add`` and
    ``delete``). Every argument is checked before the model changes."""
    if not (hasattr(model, "add") and hasattr(model, "delete")):
        raise ValueError(f"a {type(model).__name__} cannot add or delete training rows in place")
    if X is None and delete is None:
        raise ValueError("nothing to update: give rows to add or row numbers to delete")
    retrained, seconds, deleted, added = 0, 0.0, 0, np.empty(0, dtype=np.int64)
    if delete is not None:
        rows = model.check_row_numbers(delete)
        if X is not None:
            model.check_rows(device_input(X, model.input_dtype), y)
        model.delete(rows)
        deleted = len(rows)
        retrained += model.last_update_["retrained_nodes"]
        seconds += model.last_update_["seconds"]
    saturated = getattr(model, "saturated_", 0)
    if X is not None:
        added = model.add(device_input(X, model.input_dtype), y)
        retrained += model.last_update_["retrained_nodes"]
        seconds += model.last_update_["seconds"]
    return Update(deleted, added, retrained, seconds, getattr(model, "saturated_", 0) - saturated)


def predictions(model, X, proba: bool = False) -> list[str]:
    """CSV lines of a model's predictions for the rows ``X``: a regressor's value (9 significant digits) or the
    class label of each row, or with ``proba`` a
    header of the class labels and each row's Q15 probabilities scaled to 1 (``q / 32768``, as the device computes
    them). A row count of columns other than the model's features is refused, naming both counts."""
    n_features = model_input(model)[1]
    if X.shape[1] != n_features:
        raise ValueError(f"the data has {X.shape[1]} feature columns, the model takes {n_features}")
    X = device_input(X, model_input(model)[0])
    if task_of(model) == REGRESSION:
        if proba:
            raise ValueError("--proba gives class probabilities; a regressor predicts one value per row")
        return [f"{value:.9g}" for value in model.predict(X).tolist()]
    if not proba:
        return [str(label) for label in model.predict(X).tolist()]
    q15 = model.predict_proba_q15(X)
    return [",".join(str(label) for label in np.asarray(model.classes_).tolist())] + \
        [",".join(f"{q / 32768:.6g}" for q in row) for row in q15.tolist()]
