"""What a model is asked for: a class (``"classification"``), a number (``"regression"``) or how unusual a row is
(``"anomaly"``). Every layer that
once assumed classes reads the task here: the learners (their spec names an estimator per task), the stream
checks, the model files, the bundle's API and manifest, simulation, evaluation and the CLI.

**Numbers on the device.** A regressor never sees a float target on the device: the target is encoded in
fixed point by a :class:`TargetScale` fitted on the first rows, ``code = round((y - offset) / step)`` saturated to
``-CODE_MAX .. CODE_MAX`` (int16; a row outside the fitted range is saturated and counted, never wrapped). Leaves
hold codes, a model's output is an int32 sum of leaf codes (``raw``), and ``y = offset + raw * step / divisor``
decodes it (``divisor``: the trees a forest averages, 1 otherwise). The raw output is what C and Python give to
the bit; the decoded float is computed from it on the host in float64 (the bundle's ``NAME_decode`` does the
same in float32 on the device, for display).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLASSIFICATION, REGRESSION, ANOMALY = "classification", "regression", "anomaly"
TASKS = (CLASSIFICATION, REGRESSION, ANOMALY)
FLAG = 1 << 16  # an anomaly detector's output: the flag bit above the Q15 score
NEVER = 32768  # a detector's threshold that flags no score
CODE_MAX = 32767  # int16 codes, symmetric so that negating a code never overflows
# The fitted range is widened by this share of its width on each side: later rows a little outside the first
# rows' range still encode without saturating.
MARGIN = 0.25
SPREAD_FLOOR = 1e-9  # a spread below this fraction of the values is float noise: the target is taken as constant
# A numeric label column is a regression target when it holds a fraction, or more distinct values than this.
MAX_CLASS_LABELS = 32


def check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"task={task!r} must be one of {', '.join(TASKS)}")
    return task


def infer_task(y) -> str:
    """The task a label column asks for: regression for numbers with a fraction or with many distinct values
    (more than ``MAX_CLASS_LABELS``), classification otherwise (text, booleans, a few integers)."""
    y = np.asarray(y)
    if y.dtype.kind not in "iuf":
        return CLASSIFICATION
    finite = y[np.isfinite(y)] if y.dtype.kind == "f" else y
    if y.dtype.kind == "f" and (len(finite) < len(y) or (finite != np.round(finite)).any()):
        return REGRESSION
    return REGRESSION if len(np.unique(finite)) > MAX_CLASS_LABELS else CLASSIFICATION


def check_target(y, n_rows: int | None = None) -> np.ndarray:
    """A regression target: one finite number per row (float64); text, NaN and infinities are refused, naming
    the first bad row (counted from 0)."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"the target must be 1-dimensional, got shape {y.shape}")
    if n_rows is not None and len(y) != n_rows:
        raise ValueError(f"X has {n_rows} rows but the target has {len(y)} values")
    try:
        values = y.astype(np.float64)
    except (TypeError, ValueError):
        values = y.tolist()
        bad = next(i for i, v in enumerate(values) if not _is_number(v))
        raise ValueError(f"the target of row {bad} is {values[bad]!r}, not a number: a regressor needs numbers "
                         "(--task classification for labels)") from None
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"the target of row {bad[0]} is {float(values[bad[0]])}; a regressor needs finite numbers "
                         f"({len(bad)} row(s) are not)")
    return values


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class TargetScale:
    """The fixed-point encoding of a regression target (module docstring): ``offset`` and ``step`` in float64."""

    offset: float
    step: float

    @classmethod
    def fit(cls, y) -> "TargetScale":
        """The scale whose codes span the rows' range widened by ``MARGIN`` on each side (a constant target, or one
        whose spread is below ``SPREAD_FLOOR`` of its size, gets a step of one thousandth of its size, or of 1)."""
        y = check_target(y)
        low, high = float(y.min()), float(y.max())
        width = (high - low) * (1 + 2 * MARGIN)
        if not (width / (2 * CODE_MAX) > 0 and width > max(abs(low), abs(high)) * SPREAD_FLOOR):  # float noise
            width = max(abs(low), 1.0) * 1e-3 * 2 * CODE_MAX
        step = width / (2 * CODE_MAX)
        if not np.isfinite(step) or step <= 0:
            raise ValueError(f"the target spans {low} .. {high}; its range cannot be encoded")
        return cls((low + high) / 2, step)

    def encode(self, y) -> tuple[np.ndarray, int]:
        """(int16 codes, number of rows saturated at ``-CODE_MAX`` or ``CODE_MAX``)."""
        scaled = np.round((check_target(y) - self.offset) / self.step)
        saturated = int(np.count_nonzero(np.abs(scaled) > CODE_MAX))
        return np.clip(scaled, -CODE_MAX, CODE_MAX).astype(np.int16), saturated

    def decode(self, raw, divisor: int = 1) -> np.ndarray:
        """Targets from raw outputs (sums of codes over ``divisor`` trees), float64."""
        return self.offset + np.asarray(raw, dtype=np.float64) * (self.step / divisor)

    def to_json(self) -> dict:
        return {"offset": self.offset, "step": self.step}

    @classmethod
    def from_json(cls, data) -> "TargetScale":
        """A scale read from a model file or a manifest: two finite numbers, a positive step."""
        try:
            offset, step = float(data["offset"]), float(data["step"])
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"a target scale needs numbers 'offset' and 'step', got {data!r}") from None
        if not (np.isfinite(offset) and np.isfinite(step) and step > 0):
            raise ValueError(f"target scale offset={offset}, step={step}: both finite, the step positive")
        return cls(offset, step)


def regression_metrics(y_true, y_pred) -> dict:
    """``mae``, ``rmse`` and ``r2`` (1 - squared error / the target's variance; 0 for a constant target predicted
    exactly, and negative when worse than predicting the mean)."""
    y_true, y_pred = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    error = y_pred - y_true
    sse = float(np.sum(error**2))
    sst = float(np.sum((y_true - y_true.mean()) ** 2)) if len(y_true) else 0.0
    r2 = 1 - sse / sst if sst > 0 else (0.0 if sse == 0 else -np.inf)
    return {"mae": float(np.mean(np.abs(error))), "rmse": float(np.sqrt(sse / len(y_true))), "r2": float(r2)}


def split_output(outputs) -> tuple[np.ndarray, np.ndarray]:
    """(Q15 scores as int32, flags as bool) of a detector's int32 outputs."""
    outputs = np.asarray(outputs, dtype=np.int32)
    return outputs & (FLAG - 1), (outputs & FLAG) != 0


def check_false_alarms(rate) -> float:
    """A target false-alarm rate: a number in (0, 0.5) (the share of normal rows a threshold may flag)."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating)) or not 0 < rate < 0.5:
        raise ValueError(f"false-alarm rate {rate!r} is outside (0, 0.5)")
    return float(rate)


def check_anomaly_labels(y) -> np.ndarray:
    """An evaluation column of a detector: 0 (normal) or 1 (anomaly) per row, as bool; anything else is refused,
    naming the first bad row."""
    values = np.asarray(y).reshape(-1).tolist()
    bad = next((i for i, v in enumerate(values) if not _is_number(v) or float(v) not in (0.0, 1.0)), None)
    if bad is not None:
        raise ValueError(f"the anomaly label of row {bad} is {values[bad]!r}; a detector's --label column holds "
                         "0 (normal) or 1 (anomaly)")
    return np.array([float(v) == 1.0 for v in values], dtype=bool)


def roc_auc(labels, scores) -> float:
    """The area under the ROC curve of ``scores`` for the bool ``labels`` (ties count one half): the chance that
    a random anomaly scores above a random normal row; NaN without both kinds."""
    labels, scores = np.asarray(labels, dtype=bool), np.asarray(scores, dtype=np.float64)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]  # average ranks, 1-based
    return float((ranks[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def anomaly_metrics(labels, outputs) -> dict:
    """A detector's ``roc_auc`` of its scores (None without both normal rows and anomalies), ``precision`` of its
    flags (None when nothing is flagged), ``false_alarms_per_1000`` (flags per 1,000 normal rows; None without
    normal rows), ``flagged`` and ``rows``."""
    labels = check_anomaly_labels(labels)
    scores, flags = split_output(outputs)
    normal, flagged = int((~labels).sum()), int(flags.sum())
    auc = roc_auc(labels, scores)
    return {"roc_auc": None if np.isnan(auc) else auc,
            "precision": float((flags & labels).sum() / flagged) if flagged else None,
            "false_alarms_per_1000": float(1000.0 * (flags & ~labels).sum() / normal) if normal else None,
            "flagged": flagged, "rows": int(len(labels))}


def output_context(model) -> dict:
    """What a bundle and its manifest say about a fitted model's output: ``task``, ``n_classes`` and the class
    labels (``class_names``), and for a regressor ``target`` (``offset``, ``step`` and ``divisor``; one output,
    no classes)."""
    if task_of(model) == ANOMALY:
        return {"task": ANOMALY, "n_classes": 1, "class_names": [], "target": None}
    if task_of(model) == REGRESSION:
        return {"task": REGRESSION, "n_classes": 1, "class_names": [],
                "target": {**model.target_.to_json(), "divisor": int(model.output_divisor)}}
    return {"task": CLASSIFICATION, "n_classes": len(model.classes_), "target": None,
            "class_names": [str(label) for label in np.asarray(model.classes_).tolist()]}


def task_of(model) -> str:
    """The task of an estimator or estimator class (or of a bundle, a wrapped River model): its ``task``
    attribute (classifiers have none)."""
    return getattr(model, "task", CLASSIFICATION)


__all__ = ["ANOMALY", "CLASSIFICATION", "CODE_MAX", "FLAG", "NEVER", "REGRESSION", "TASKS", "TargetScale",
           "anomaly_metrics", "check_anomaly_labels", "check_false_alarms", "check_target", "check_task",
           "infer_task", "output_context", "regression_metrics", "roc_auc", "split_output", "task_of"]
