"""Long runs of a learning learner in the compiled C runtime, held against the Python specification in stretches.

A device learns for months; the Python specification is too slow to follow it row by row for that long, so a long
run goes through the C runtime (:class:`edgestream.simulate.RuntimeLearner` on numpy state arrays) and is compared
with Python on sampled stretches: at the start of a stretch Python takes the C's state through a state image
(:func:`python_of`, the path a device's image takes to the host), both learn the same rows, and after every step
their images must be the same bytes (an image holds every region and counter that outlives a call). Used by the
lifetime tests and by ``scripts/soak.sh``.
"""

from __future__ import annotations

import numpy as np

from . import checkpoint
from .simulate import RuntimeLearner


def device_rows(learner, X) -> np.ndarray:
    """What the runtime's learn and predict take for raw rows: the bins of a binned learner, else float32."""
    return learner.bin_rows(X) if hasattr(learner, "bins_") else np.ascontiguousarray(X, dtype=np.float32)


def python_learn(learner, row, label: int) -> None:
    """One learning step of the specification on a device row."""
    if hasattr(learner, "bins_"):
        learner.learn_bins(row, label)
    else:
        learner.learn_encoded(row, label)


def device_image(device: RuntimeLearner, learner, sequence: int = 1) -> bytes:
    """The state image of the C state (as the bundle's ``NAME_save`` writes it for that state)."""
    layout = checkpoint.image_layout(learner.layout())
    counters = device.counter_values()
    body = bytearray(layout.payload_bytes)
    for slot in layout.slots:
        values = np.asarray(counters[slot.name] if slot.counter else device.regions[slot.name])
        data = values.astype(slot.dtype).reshape(-1).tobytes()
        body[slot.offset:slot.offset + slot.bytes] = data
    return checkpoint.seal(checkpoint.model_hash(learner), sequence, bytes(body))


def python_of(device: RuntimeLearner, learner):
    """A copy of ``learner`` (the specification) holding the C state, read through its image."""
    return checkpoint.read_image(learner, device_image(device, learner))


def device_of(learner) -> RuntimeLearner:
    """The compiled runtime on a copy of ``learner``'s current state."""
    return RuntimeLearner(learner).load_export(learner)


def predict(device: RuntimeLearner, row, proba: np.ndarray) -> int:
    """The C's class of one device row (the first largest probability)."""
    status = device.predict_proba_status(row, proba)
    if status:
        raise RuntimeError(f"predict_proba returned status {status}")
    return int(np.argmax(proba))


def learn(device: RuntimeLearner, rows: np.ndarray, labels: np.ndarray, score_from: int | None = None) -> int:
    """Learn the rows in C, in order; from row ``score_from`` on, predict each row first (test-then-train).
    Returns the rows predicted right."""
    proba = np.zeros(device.n_classes, dtype=np.uint16)
    right = 0
    start = len(rows) if score_from is None else score_from
    for i, (row, label) in enumerate(zip(rows, labels)):
        if i >= start:
            right += predict(device, row, proba) == label
        status = device.learn(row, int(label))
        if status:
            raise RuntimeError(f"learn returned status {status} at row {i}")
    return right


def stretch_mismatch(device: RuntimeLearner, learner, rows: np.ndarray, labels: np.ndarray) -> str | None:
    """Learn the rows in C and in the specification from the C's current state, comparing both after every
    step (predictions and state images); what differed first, or None."""
    spec = python_of(device, learner)
    proba = np.zeros(device.n_classes, dtype=np.uint16)
    for i, (row, label) in enumerate(zip(rows, labels)):
        predict(device, row, proba)
        expected = learner_proba(spec, row)
        if not np.array_equal(proba, expected):
            return f"row {i}: C probabilities {proba.tolist()}, Python {expected.tolist()}"
        python_learn(spec, row, int(label))
        device.learn(row, int(label))
        if device_image(device, learner) != checkpoint.write_image(spec):
            return f"row {i}: the C state differs from Python's after learning it"
    return None


def learner_proba(learner, row) -> np.ndarray:
    """The specification's Q15 probabilities of one device row."""
    if hasattr(learner, "bins_"):
        return learner.predict_proba_bins(np.asarray(row)[None])[0]
    return learner.predict_proba_q15(np.asarray(row)[None])[0]
