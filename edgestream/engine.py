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

    ``learner`` gives ``state_spec``, ``layout()``, ``device_state()`` and ``classes_``; a learner on bins
    (``input_type`` uint8_t) also ``bins_`` and ``allow_missing``."""

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
        self._engine = _engine.Engine(spec.prefix, self.config, self.counters, list(self.regions.values()),
                                      n_features, n_classes, **setup)

    def device_state(self) -> tuple[dict, dict]:
        """Copies of every region and the counters, as ``learner.device_state()`` gives them."""
        arrays = {name: values.copy() for name, values in self.regions.items()}
        return arrays, {field.name: int(self.counters[field.name][0]) for field in self.spec.counters}

    def rows(self, X) -> np.ndarray:
        """Checked rows (the learner's checks) as the engine takes them: C-contiguous, float32 or int32."""
        return np.ascontiguousarray(X, dtype=self.row_dtype)

    def learn(self, row: np.ndarray, label: int) -> int:
        """Status of one learn call (0: ES_OK) on one row of ``row_dtype`` (the runtime's own checks only)."""
        return self._engine.learn(row, label)

    def predict_class(self, row: np.ndarray) -> int:
        """The class index of one row of ``row_dtype``, or minus the status of a refused call."""
        return self._engine.predict_class(row)

    def learn_rows(self, X: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
        """(status, rows learned): every row in order, up to the first refused call."""
        return self._engine.learn_rows(self.rows(X), np.ascontiguousarray(labels, dtype=np.uint8))

    def test_then_train(self, X: np.ndarray, labels: np.ndarray) -> tuple[int, int, np.ndarray]:
        """(status, rows done, class index predicted for each row before it was learned)."""
        predicted = np.zeros(len(labels), dtype=np.uint8)
        status, done = self._engine.test_then_train(self.rows(X), np.ascontiguousarray(labels, dtype=np.uint8),
                                                    predicted)
        return status, done, predicted

    def predict(self, X: np.ndarray, proba: bool = False) -> tuple[int, np.ndarray, np.ndarray | None]:
        """(status, class indices, Q15 probabilities or None) of checked rows."""
        rows = self.rows(X)
        classes = np.zeros(len(rows), dtype=np.uint8)
        q15 = np.zeros((len(rows), self.n_classes), dtype=np.uint16) if proba else None
        status, _ = self._engine.predict(rows, classes, q15)
        return status, classes, q15
