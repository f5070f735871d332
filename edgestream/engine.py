"""The compiled host engine of the learning learners: their device state in numpy arrays, their steps in the C
runtime of ``csrc/`` (compiled once into the package as ``edgestream._engine``).

A :class:`StateEngine` starts from the state a learner exports (``device_state()``: what a bundle of it starts
from) and lays it out as its state description says: config and counters as one-record arrays with the C
structs' layout, regions as arrays of their C types. It learns and predicts rows through the runtime, one at a
time or whole streams in one call, and hands its state back (``device_state()``) in the same form, so a learner
can continue in its Python specification from it and the parity tests can compare every region after any step.
"""

from __future__ import annotations

import numpy as np

from . import _engine
from .state import C_TYPES
from .task import task_of

MODES = {"float32": _engine.BINS_F32, "int32": _engine.BINS_I32, "int16": _engine.BINS_I32}
ROW_DTYPES = {_engine.RAW: np.float32, _engine.BINS_F32: np.float32, _engine.BINS_I32: np.int32}


def struct_dtype(fields) -> np.dtype:
    """A numpy record with the layout of a C struct of these scalar fields (natural alignment)."""
    return np.dtype([(f.name, C_TYPES[f.c_type][2]) for f in fields], align=True)


def struct_record(fields, values: dict) -> np.ndarray:
    record = np.zeros(1, dtype=struct_dtype(fields))
    for field in fields:
        record[field.name] = values[field.name]
    return record


class StateEngine:
    """One learner's state run by the compiled runtime (see the module docstring).

    ``learner`` gives ``state_spec``, ``layout()`` and ``device_state()``; a learner on bins (``input_type``
    uint8_t) also ``bins_`` and ``allow_missing``. Its task (:func:`edgestream.task.task_of`) picks the runtime's
    calls: targets are int32 class indices or target codes, the one output an int32 class or raw output."""

    def __init__(self, learner):
        spec = learner.state_spec
        layout = learner.layout()
        arrays, counters = learner.device_state()
        self.spec = spec
        self.regions = {}
        for region in layout.regions:
            values = np.ascontiguousarray(arrays[region.name]).reshape(-1)
            if values.dtype != region.dtype or len(values) != region.count:
                raise ValueError(f"state region {region.name!r}: {values.dtype} x {len(values)}, the layout has "
                                 f"{region.dtype} x {region.count}")
            self.regions[region.name] = values.copy()
        self.config = struct_record(spec.config, layout.config)
        self.counters = struct_record(spec.counters, counters)
        n_features, n_classes = layout.config["n_features"], layout.config["n_classes"]
        setup = {"mode": _engine.RAW}
        if spec.input_type == "uint8_t":
            edges, offsets = learner.bins_.flat_edges()
            setup = {"mode": MODES[learner.bins_.dtype], "edges": np.ascontiguousarray(edges, dtype=ROW_DTYPES[
                MODES[learner.bins_.dtype]]), "offsets": np.ascontiguousarray(offsets, dtype=np.uint16),
                "refuse_missing": learner.bins_.dtype == "float32" and not learner.allow_missing}
        self.row_dtype = ROW_DTYPES[setup["mode"]]
        self.n_features, self.n_classes = n_features, n_classes
        self.task = task_of(learner)
        self._engine = _engine.Engine(spec.prefix, self.task, self.config, self.counters, list(self.regions.values()),
                                      n_features, n_classes, **setup)

    def device_state(self) -> tuple[dict, dict]:
        """Copies of every region and the counters, as ``learner.device_state()`` gives them."""
        arrays = {name: values.copy() for name, values in self.regions.items()}
        return arrays, {field.name: int(self.counters[field.name][0]) for field in self.spec.counters}

    def rows(self, X) -> np.ndarray:
        """Checked rows (the learner's checks) as the engine takes them: C-contiguous, float32 or int32."""
        return np.ascontiguousarray(X, dtype=self.row_dtype)

    def learn(self, row: np.ndarray, target: int) -> int:
        """Status of one learn call (0: ES_OK) on one row of ``row_dtype`` and its target (a class index or a
        target code; the runtime's own checks only)."""
        return self._engine.learn(row, target)

    def predict_one(self, row: np.ndarray) -> tuple[int, int]:
        """(status, output) of one row of ``row_dtype``: its class index or raw output."""
        return self._engine.predict_one(row)

    def learn_rows(self, X: np.ndarray, targets: np.ndarray) -> tuple[int, int]:
        """(status, rows learned): every row in order, up to the first refused call."""
        return self._engine.learn_rows(self.rows(X), np.ascontiguousarray(targets, dtype=np.int32))

    def test_then_train(self, X: np.ndarray, targets: np.ndarray) -> tuple[int, int, np.ndarray]:
        """(status, rows done, int32 output predicted for each row before it was learned)."""
        predicted = np.zeros(len(targets), dtype=np.int32)
        status, done = self._engine.test_then_train(self.rows(X), np.ascontiguousarray(targets, dtype=np.int32),
                                                    predicted)
        return status, done, predicted

    def predict(self, X: np.ndarray, proba: bool = False) -> tuple[int, np.ndarray, np.ndarray | None]:
        """(status, int32 outputs, a classifier's Q15 probabilities or None) of checked rows."""
        rows = self.rows(X)
        outputs = np.zeros(len(rows), dtype=np.int32)
        q15 = np.zeros((len(rows), self.n_classes), dtype=np.uint16) if proba else None
        status, _ = self._engine.predict(rows, outputs, q15)
        return status, outputs, q15
