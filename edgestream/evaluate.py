"""Prequential (test-then-train) evaluation of any online learner, and plots of its accuracy curves.

A learner is anything with ``predict_one(x)`` and ``learn_one(x, y)``, where ``x`` is one row of features as a
1-D numpy array: an edgestream learner, a simulated C bundle, or a River model wrapped in ``RiverAdapter``.
Every row is first predicted, the prediction scored against its label, and only then learned, so each prediction
is made by a model that has never seen that row. A started edgestream learner runs whole chunks of rows in one
call of its compiled engine (``test_then_train``), with the same predictions; the rows of a cold start's warm-up
go one at a time.

A learner may answer ``None`` before it has learned anything (River does). Such a row counts as wrong, and its
prediction is stored as ``no_prediction(dtype)``: NaN for float labels, the smallest value of the dtype for
signed integers, the largest for unsigned integers, ``""`` for string labels. For any other label dtype
(bool, object) the predictions are an object array holding ``None`` itself.

A regressor (:mod:`edgestream.task`) is scored by MAE, RMSE and R² (``metrics``) instead of accuracy, its curve
is the RMSE of each window and its predictions are the values (float64) it gave; an edgestream regressor's
compiled chunks give raw outputs, decoded as the learner decodes them. A regressor answering ``None`` is scored
as predicting 0.0 (what River's regressors answer before they learn).

A detector (an anomaly task) learns unlabelled rows; a 0/1 label column, where given, only scores it:
:func:`edgestream.task.anomaly_metrics` of its outputs (ROC-AUC of the scores, precision and false alarms per
1,000 normal rows of the flags) in ``metrics``; its curve is the share of rows flagged in each window, its
predictions its int32 outputs (Q15 score and flag). A detector is started (its input setup) before it is scored.
"""

from __future__ import annotations

import gc
import sys
import time
import types
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from .learners.stream import is_fitted
from .ranges import Range
from .task import (ANOMALY, CLASSIFICATION, REGRESSION, anomaly_metrics, check_target, regression_metrics,
                   split_output, task_of)

WINDOW = Range("window", 1)  # rows per point of an accuracy curve
CHUNK = 8192  # rows per compiled test-then-train call (and per progress bar update)


@dataclass
class PrequentialResult:
    """The outcome of one test-then-train pass over a stream."""

    n: int
    correct: int
    window: int
    curve: list[float]  # accuracy of each window of ``window`` rows; the last one may be shorter
    predictions: np.ndarray  # one per row, see the module docstring for rows without a prediction
    seconds: float  # wall time of the predict + learn calls (adapter conversions included)
    metrics: dict | None = None  # a regressor's mae, rmse and r2 (its curve: the RMSE of each window)

    @property
    def accuracy(self) -> float:
        if self.metrics is not None:
            raise ValueError("a regressor's prequential result has mae, rmse and r2, not an accuracy")
        return self.correct / self.n

    @property
    def samples_per_second(self) -> float:
        return self.n / self.seconds if self.seconds > 0 else float("inf")

    def to_json(self) -> dict:
        """The scores as plain JSON types; predictions are left out (compare them with ``compare_predictions``)."""
        if self.metrics is not None:
            return {"n": self.n, **self.metrics, "window": self.window, "curve": self.curve, "seconds": self.seconds,
                    "samples_per_second": self.samples_per_second}
        return {"n": self.n, "accuracy": self.accuracy, "correct": self.correct, "window": self.window,
                "curve": self.curve, "seconds": self.seconds, "samples_per_second": self.samples_per_second}


def prequential(learner, X, y, window: int = 500, progress: bool = False, desc: str | None = None) -> PrequentialResult:
    """Test-then-train over the rows of ``X`` in order: ``predict_one(X[i])``, score it, ``learn_one(X[i], y[i])``.

    ``window`` is the number of rows per point of the accuracy curve; ``progress`` shows a tqdm bar titled ``desc``.
    A detector's ``y`` may be None (no labels: no ROC-AUC).
    """
    if task_of(learner) == ANOMALY:
        return _prequential_detector(learner, np.asarray(X), y, window)
    X, y = np.asarray(X), np.asarray(y)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"need X of shape (n, d) and y of shape (n,); got {X.shape} and {y.shape}")
    if len(y) == 0:
        raise ValueError("the stream is empty: prequential evaluation needs at least one row")
    WINDOW.check(window)
    if task_of(learner) == REGRESSION:
        y = check_target(y)
        outputs, seconds = _test_then_train(learner, X, y, progress, desc, regression=True)
        values = np.array([0.0 if value is None else value for value in outputs], dtype=np.float64)
        curve = [regression_metrics(y[i:i + window], values[i:i + window])["rmse"] for i in range(0, len(y), window)]
        return PrequentialResult(n=len(y), correct=0, window=int(window), curve=curve, predictions=values,
                                 seconds=seconds, metrics=regression_metrics(y, values))
    outputs, seconds = _test_then_train(learner, X, y, progress, desc, regression=False)
    predictions = _prediction_array(outputs, y.dtype)
    hits = _hits(outputs, predictions, y)
    curve = [float(hits[i:i + window].mean()) for i in range(0, len(y), window)]
    return PrequentialResult(n=len(y), correct=int(hits.sum()), window=int(window), curve=curve,
                             predictions=predictions, seconds=seconds)


def _hits(outputs: list, predictions: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether each row's prediction (None: none) equals its label: compared as arrays when the predictions are
    numbers in the labels' dtype (a row without one holds the dtype's sentinel: looked at alone), else one by one."""
    if predictions.dtype != y.dtype or y.dtype.kind not in "iuf":
        return np.array([p is not None and bool(p == label) for p, label in zip(outputs, y.tolist())], dtype=bool)
    hits = predictions == y
    for row in np.flatnonzero(hits & (predictions == no_prediction(y.dtype))):
        hits[row] = outputs[row] is not None
    return hits


def _prequential_detector(learner, X, y, window: int) -> PrequentialResult:
    """A started detector's test-then-train (module docstring), in compiled chunks."""
    if X.ndim != 2 or len(X) == 0 or (y is not None and len(y) != len(X)):
        raise ValueError(f"need X of shape (n, d), n > 0, and labels of shape (n,); got {X.shape} and "
                         f"{None if y is None else np.shape(y)}")
    WINDOW.check(window)
    start = time.perf_counter()
    outputs = np.concatenate([learner.test_then_train(X[i:i + CHUNK]) for i in range(0, len(X), CHUNK)])
    seconds = time.perf_counter() - start
    flags = split_output(outputs)[1]
    metrics = anomaly_metrics(y, outputs) if y is not None else {"flagged": int(flags.sum()), "rows": len(X)}
    curve = [float(flags[i:i + window].mean()) for i in range(0, len(X), window)]
    return PrequentialResult(n=len(X), correct=0, window=int(window), curve=curve, predictions=outputs,
                             seconds=seconds, metrics=metrics)


def _test_then_train(learner, X, y, progress: bool, desc, regression: bool) -> tuple[list, float]:
    """Every row's prediction, made before the row is learned (by compiled chunks once the learner has started:
    a regressor's raw outputs decoded), and the seconds the predict and learn calls took."""
    outputs = []
    compiled = getattr(learner, "test_then_train", None)
    start = time.perf_counter()
    with tqdm(total=len(y), desc=desc, disable=not progress, unit="rows") as bar:
        i = 0
        while i < len(y):
            if compiled is not None and is_fitted(learner):
                stop = min(len(y), i + CHUNK)
                chunk = compiled(X[i:stop], y[i:stop])
                if regression:
                    chunk = learner.target_.decode(chunk, learner.output_divisor)
                outputs.extend(chunk.tolist())
            else:
                stop = i + 1
                outputs.append(learner.predict_one(X[i]))
                learner.learn_one(X[i], float(y[i]) if regression else y[i])
            bar.update(stop - i)
            i = stop
    return outputs, time.perf_counter() - start


def no_prediction(dtype):
    """The value stored for a row the learner did not predict (``None`` if the dtype has no spare value)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if dtype.kind == "i" else info.max
    if dtype.kind in "US":
        return dtype.type()
    return None


def _prediction_array(predictions: list, dtype) -> np.ndarray:
    """The predictions in the labels' dtype when every one fits it, else as objects."""
    sentinel = no_prediction(dtype)
    if sentinel is not None:
        try:
            return np.array([sentinel if p is None else p for p in predictions] if None in predictions
                            else predictions, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            pass
    array = np.empty(len(predictions), dtype=object)
    array[:] = predictions
    return array


def compare_predictions(a: PrequentialResult, b: PrequentialResult) -> int:
    """Rows where two runs over the same stream predicted differently (two missing predictions agree)."""
    if a.n != b.n:
        raise ValueError(f"the runs cover different streams: {a.n} rows against {b.n}")
    same = a.predictions == b.predictions
    if a.predictions.dtype.kind == "f" and b.predictions.dtype.kind == "f":
        same |= np.isnan(a.predictions) & np.isnan(b.predictions)
    return int(a.n - np.count_nonzero(same))


class RiverAdapter:
    """A River classifier behind the numpy-row interface: each row becomes ``{feature_name: float}``.

    Labels go to River as Python scalars, so its predictions come back as the same Python types.
    """

    def __init__(self, model, feature_names):
        self.model = model
        self.feature_names = list(feature_names)

    def _features(self, x) -> dict:
        return dict(zip(self.feature_names, x.tolist()))

    def predict_one(self, x):
        return self.model.predict_one(self._features(x))

    def learn_one(self, x, y) -> None:
        self.model.learn_one(self._features(x), y.item() if isinstance(y, np.generic) else y)

    @property
    def task(self) -> str:
        """A River regressor's task is regression (:func:`edgestream.task.task_of`)."""
        from river import base

        return REGRESSION if isinstance(self.model, base.Regressor) else CLASSIFICATION

    def state_bytes(self) -> int:
        """River's own measure of the model's memory (``_raw_memory_usage``), else a deep ``sys.getsizeof``."""
        size = getattr(self.model, "_raw_memory_usage", None)
        return int(size) if size is not None else deep_sizeof(self.model)


SHARED_OBJECTS = (type, types.ModuleType, types.FunctionType)  # not part of any one model


def deep_sizeof(obj) -> int:
    """``sys.getsizeof`` summed over every object reachable from ``obj`` through ``gc.get_referents``,
    classes, modules and functions excepted."""
    seen, stack, total = set(), [obj], 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, SHARED_OBJECTS):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        stack.extend(gc.get_referents(item))
    return total


def plot_curves(results: dict[str, PrequentialResult], path, title: str | None = None, changes=()) -> None:
    """Write a PNG of the windowed accuracy curves, one line per named result (needs matplotlib); ``changes``,
    rows where the stream's concept changes, are marked by vertical lines."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("plot_curves needs matplotlib: pip install matplotlib "
                          "(or install edgestream's bench extra)") from error
    from matplotlib import colormaps

    figure = Figure(figsize=(9, 5), layout="constrained")
    axes = figure.add_subplot()
    if len(results) > len(colormaps["tab10"].colors):  # distinct colours for every line
        axes.set_prop_cycle(color=colormaps["tab20"].colors)
    for name, result in results.items():
        ends = np.minimum(np.arange(1, len(result.curve) + 1) * result.window, result.n)
        axes.plot(ends, result.curve, label=f"{name} ({result.accuracy:.3f})", linewidth=1)
    for row in changes:
        axes.axvline(row, color="black", linestyle=":", linewidth=1)
    axes.set(xlabel="rows seen", ylabel="window accuracy", title=title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    figure.savefig(path, format="png", dpi=120)


__all__ = ["PrequentialResult", "RiverAdapter", "compare_predictions", "deep_sizeof", "no_prediction",
           "plot_curves", "prequential"]
