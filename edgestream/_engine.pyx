# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled host engine: the device runtime in csrc/, built once into the package, run over numpy state.

An :class:`Engine` binds one learner's state to its runtime through the table of ``_engine_learners.h``
(generated from the state descriptions): the config and counters are one-record structured arrays with the C
structs' layout, the regions numpy arrays in the description's order, and the runtime's pointer struct points
into them. Rows then go through the runtime one at a time (River's protocol) or as whole streams in one call
(test-then-train, learn only, batch prediction) with no Python call per row and the GIL released.

The task is one seam: a learner's targets reach the runtime as int32 (a class index, or a regressor's int16
target code) and its one output comes back as int32 (the class, or the regressor's raw output); only
classifiers have Q15 probabilities.

Rows arrive checked and converted by the learner (its specification's own checks, vectorized): C-contiguous rows
of ``n_features`` values in the runtime's input type, float32 (or int32 for integer bins). A learner that learns
on bins has each row quantized here by the runtime's quantizer; ``refuse_missing`` makes a NaN row a refused
call (``ES_ERR_INPUT``, nothing changed), as the specification refuses it.
"""

cimport numpy as cnp
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport strcmp

import numpy as np

cnp.import_array()

cdef extern from "_engine_learners.h" nogil:
    ctypedef enum es_status:
        ES_OK
        ES_ERR_INPUT
        ES_ERR_SIZE
    ctypedef es_status (*es_engine_learn_fn)(const void *model, const void *row, int32_t target)
    ctypedef es_status (*es_engine_proba_fn)(const void *model, const void *row, uint32_t *work, uint16_t *proba)
    ctypedef es_status (*es_engine_output_fn)(const void *model, const void *row, uint32_t *work,
                                              uint16_t *proba, int32_t *out)
    ctypedef struct es_engine_learner:
        const char *prefix
        const char *task
        size_t model_bytes, config_bytes, counters_bytes
        es_engine_learn_fn learn
        es_engine_proba_fn predict_proba
        es_engine_output_fn predict
    const es_engine_learner es_engine_learners[]
    int ES_ENGINE_N_LEARNERS

cdef extern from "es_binning.h" nogil:
    es_status es_quantize_f32(const float *features, const float *edges, const uint16_t *offsets,
                              uint8_t n_features, uint8_t *bins)
    es_status es_quantize_i32(const int32_t *features, const int32_t *edges, const uint16_t *offsets,
                              uint8_t n_features, uint8_t *bins)

cpdef enum:  # how a row reaches the runtime
    RAW = 0
    BINS_F32 = 1
    BINS_I32 = 2


cdef const es_engine_learner *find_learner(bytes prefix, bytes task) except NULL:
    cdef int i
    for i in range(ES_ENGINE_N_LEARNERS):
        if strcmp(es_engine_learners[i].prefix, prefix) == 0 and strcmp(es_engine_learners[i].task, task) == 0:
            return &es_engine_learners[i]
    raise ValueError(f"no runtime {prefix.decode()!r} for {task.decode()} in the compiled engine")


cdef void *data_of(cnp.ndarray array, Py_ssize_t nbytes, str what) except NULL:
    """The data of a C-contiguous array of exactly ``nbytes`` bytes (a size-0 array: a valid dummy pointer)."""
    if not cnp.PyArray_IS_C_CONTIGUOUS(array) or cnp.PyArray_NBYTES(array) != nbytes:
        raise ValueError(f"{what}: need a C-contiguous array of {nbytes} bytes, got {array.nbytes} "
                         f"({array.dtype}, shape {(<object>array).shape})")
    return cnp.PyArray_DATA(array)


cdef class Engine:
    cdef const es_engine_learner *entry
    cdef void **model
    cdef list keep
    cdef int mode
    cdef bint refuse_missing
    cdef uint8_t n_features
    cdef Py_ssize_t row_bytes
    cdef const void *edges
    cdef const uint16_t *offsets
    cdef uint8_t[::1] bins
    cdef uint32_t[::1] work
    cdef uint16_t[::1] proba

    def __cinit__(self, str prefix, str task, cnp.ndarray config, cnp.ndarray counters, list regions, int n_features,
                  int n_classes, int mode=RAW, cnp.ndarray edges=None, cnp.ndarray offsets=None,
                  bint refuse_missing=False):
        cdef Py_ssize_t i, pointers = len(regions) + 2
        self.entry = find_learner(prefix.encode(), task.encode())
        if self.entry.model_bytes != pointers * sizeof(void *):
            raise ValueError(f"{prefix}: the pointer struct has {self.entry.model_bytes} bytes, the description "
                             f"{pointers} pointers")
        if not 1 <= n_features <= 255 or not 1 <= n_classes <= 255:
            raise ValueError(f"{n_features} features and {n_classes} classes: the runtime takes 1..255 of each")
        self.model = <void **>malloc(pointers * sizeof(void *))
        if self.model == NULL:
            raise MemoryError()
        self.model[0] = data_of(config, self.entry.config_bytes, f"{prefix} config")
        for i, region in enumerate(regions):
            self.model[i + 1] = data_of(region, region.nbytes, f"{prefix} region {i}")
        self.model[pointers - 1] = data_of(counters, self.entry.counters_bytes, f"{prefix} counters")
        self.keep = [config, counters, *regions]
        self.mode, self.refuse_missing, self.n_features = mode, refuse_missing, n_features
        self.row_bytes = n_features * 4  # float32 or int32 values
        self.bins = np.zeros(n_features, dtype=np.uint8)
        self.work = np.zeros(n_classes, dtype=np.uint32)
        self.proba = np.zeros(n_classes, dtype=np.uint16)
        if mode != RAW:
            self.keep += [edges, offsets]
            self.offsets = <const uint16_t *>data_of(offsets, 2 * (n_features + 1), "bin offsets")
            self.edges = data_of(edges, edges.nbytes, "bin edges") if edges.size else self.offsets
            if offsets[n_features] != edges.size:
                raise ValueError(f"bin offsets end at {offsets[n_features]}, there are {edges.size} edges")

    def __dealloc__(self):
        free(self.model)

    cdef const void *input(self, const uint8_t *row) noexcept nogil:
        """What the runtime takes for one row: the row itself or its bins; NULL for a refused missing value."""
        cdef int j
        cdef const float *values
        if self.mode == RAW:
            return row
        if self.mode == BINS_I32:
            es_quantize_i32(<const int32_t *>row, <const int32_t *>self.edges, self.offsets, self.n_features,
                            &self.bins[0])
            return &self.bins[0]
        values = <const float *>row
        if self.refuse_missing:
            for j in range(self.n_features):
                if values[j] != values[j]:  # NaN
                    return NULL
        es_quantize_f32(values, <const float *>self.edges, self.offsets, self.n_features, &self.bins[0])
        return &self.bins[0]

    cdef inline es_status learn_at(self, const uint8_t *row, int32_t target) noexcept nogil:
        cdef const void *given = self.input(row)
        if given == NULL:
            return ES_ERR_INPUT
        return self.entry.learn(self.model, given, target)

    cdef inline es_status output_at(self, const uint8_t *row, int32_t *out) noexcept nogil:
        cdef const void *given = self.input(row)
        if given == NULL:
            return ES_ERR_INPUT
        return self.entry.predict(self.model, given, &self.work[0], &self.proba[0], out)

    cdef const uint8_t *rows(self, cnp.ndarray X, Py_ssize_t n) except NULL:
        return <const uint8_t *>data_of(X, n * self.row_bytes, "rows")

    def learn(self, cnp.ndarray row, int32_t target) -> int:
        """Status of one learn call (0: ES_OK)."""
        return self.learn_at(self.rows(row, 1), target)

    def predict_one(self, cnp.ndarray row) -> tuple:
        """(status, the output of one row: its class or raw output)."""
        cdef int32_t out = 0
        cdef es_status status = self.output_at(self.rows(row, 1), &out)
        return int(status), int(out)

    def learn_rows(self, cnp.ndarray X, const int32_t[::1] targets) -> tuple:
        """Learn every row in order: (status, rows learned), stopping at the first refused row."""
        cdef Py_ssize_t i, done = 0, n = targets.shape[0]
        cdef const uint8_t *data = self.rows(X, n)
        cdef es_status status = ES_OK
        with nogil:
            for i in range(n):
                status = self.learn_at(data + i * self.row_bytes, targets[i])
                if status != ES_OK:
                    break
                done = i + 1
        return int(status), int(done)

    def test_then_train(self, cnp.ndarray X, const int32_t[::1] targets, int32_t[::1] predicted) -> tuple:
        """Predict then learn every row in order (``predicted`` gets each row's output before it is learned):
        (status, rows done), stopping at the first refused call."""
        cdef Py_ssize_t i = 0, done = 0, n = targets.shape[0]
        cdef const uint8_t *data = self.rows(X, n)
        cdef const uint8_t *row
        cdef es_status status = ES_OK
        if predicted.shape[0] != n:
            raise ValueError(f"{predicted.shape[0]} prediction slots for {n} rows")
        with nogil:
            for i in range(n):
                row = data + i * self.row_bytes
                status = self.output_at(row, &predicted[i])
                if status == ES_OK:
                    status = self.learn_at(row, targets[i])
                if status != ES_OK:
                    break
                done = i + 1
        return int(status), int(done)

    def predict(self, cnp.ndarray X, int32_t[::1] outputs, uint16_t[:, ::1] proba=None) -> tuple:
        """Outputs (and, given ``proba``, a classifier's Q15 probabilities) of every row: (status, rows done)."""
        cdef Py_ssize_t i, done = 0, n = outputs.shape[0]
        cdef const uint8_t *data = self.rows(X, n)
        cdef const void *given
        cdef es_status status = ES_OK
        cdef bint want_proba = proba is not None
        if want_proba and (proba.shape[0] != n or proba.shape[1] != self.proba.shape[0]):
            raise ValueError(f"proba must have shape ({n}, {self.proba.shape[0]})")
        if want_proba and self.entry.predict_proba == NULL:
            raise ValueError(f"the {self.entry.task.decode()} runtime has no probabilities")
        with nogil:
            for i in range(n):
                status = self.output_at(data + i * self.row_bytes, &outputs[i])
                if status == ES_OK and want_proba:
                    given = self.input(data + i * self.row_bytes)
                    status = self.entry.predict_proba(self.model, given, &self.work[0], &proba[i, 0])
                if status != ES_OK:
                    break
                done = i + 1
        return int(status), int(done)
