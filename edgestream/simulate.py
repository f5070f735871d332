"""Run the device C on the host through cffi, so what is tested is what gets flashed.

Two entry points:

* :func:`load_bundle` compiles a generated bundle directory (its runtime copy and its generated tables) and
  predicts with it row by row, exactly as firmware would call it;
* :func:`runtime` compiles the runtime in csrc/ once and feeds it tables from numpy arrays, so property
  tests can check thousands of models against one compiled library.

Compiled libraries are cached by a hash of their sources in the cache folder (see :mod:`edgestream.cache`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

import cffi
import numpy as np

from . import learners
from .emit import C_TYPES
from .encoding import LEAF_CODES
from .export import load_bundle_model, read_manifest, runtime_sources
from .scratch import scratch_dir
from .frozen import scratch_size
from .state import C_TYPES as STATE_C_TYPES
from .task import ANOMALY, CLASSIFICATION, FLAG, REGRESSION, split_output, task_of

INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"', re.M)
INTEGER_DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(\d+)u?\s*$")


def header_cdef(headers, directory: Path | None = None) -> str:
    """cffi declarations read from C headers themselves (and the headers they include from ``directory``, the
    runtime's by default), each once, included ones first: comments and preprocessor lines dropped, integer
    constants kept, ``#ifdef __cplusplus`` blocks and one-line ``static inline`` definitions (helpers private to
    the C, such as es_flash.h's readers) dropped. So the host sees exactly the declarations the device code
    compiles against."""
    directory = Path(directory) if directory else runtime_sources()[0].parent
    ordered: list[str] = []

    def visit(name: str) -> None:
        path = directory / name
        if name in ordered or not path.is_file():
            return
        text = path.read_text()
        for included in INCLUDE.findall(text):
            visit(included)
        ordered.append(name)

    for header in headers:
        visit(header)
    lines = []
    for name in ordered:
        text = re.sub(r"/\*.*?\*/", "", (directory / name).read_text(), flags=re.S)
        text = re.sub(r"#ifdef __cplusplus.*?#endif", "", text, flags=re.S)  # C++ linkage blocks
        for line in text.splitlines():
            if match := INTEGER_DEFINE.match(line):
                lines.append(f"#define {match[1]} {match[2]}")
            elif not line.lstrip().startswith(("#", "static inline ")):
                lines.append(line)
    return "\n".join(line for line in lines if line.strip()) + "\n"


# The device's float arithmetic must not be contracted into fused multiply-adds (float learners check the C
# against Python bit for bit); it changes nothing for integer code.
COMPILE_ARGS = ("-O2", "-std=c99", "-ffp-contract=off")


class DeviceError(RuntimeError):
    """The C code returned a status other than ES_OK."""


def cache_dir() -> Path:
    from .cache import cache_dir as folder  # platformdirs, $EDGESTREAM_CACHE, size limit: see edgestream.cache

    return folder()


def compiler_identity() -> str:
    """The C compiler cffi runs (``$CC`` or ``cc``), its version line and ``$CFLAGS``, for the cache key."""
    return identify_compiler(os.environ.get("CC", "cc"), os.environ.get("CFLAGS", ""))


@functools.lru_cache(maxsize=8)
def identify_compiler(compiler: str, cflags: str) -> str:
    """The compiler's command, its version line and the flags."""
    import subprocess

    try:
        done = subprocess.run([*compiler.split(), "--version"], capture_output=True, text=True, timeout=30)
        version = done.stdout.splitlines()[0] if done.stdout else done.stderr
    except (OSError, subprocess.SubprocessError) as error:
        version = f"unavailable ({error})"
    return f"{compiler}: {version} CFLAGS={cflags}"


def library_key(cdef: str, header: str, sources: list[Path], include_dir: Path) -> str:
    """SHA-256 of every input of a compiled library: declarations, the C source and flags, the compiler, cffi and
    Python versions, the sources and every header of the include directory and of the sources' directories."""
    digest = hashlib.sha256()
    for part in (cdef, header, cffi.__version__, sys.version, " ".join(COMPILE_ARGS), compiler_identity()):
        digest.update(part.encode() + b"\0")
    headers = {p for d in {Path(include_dir), *(Path(s).parent for s in sources)} for p in Path(d).glob("*.h")}
    for path in sorted(set(map(Path, sources)) | headers, key=lambda p: (p.name, str(p))):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def publish_library(cdef: str, header: str, sources: list[Path], include_dir: Path, module: str, build: Path) -> Path:
    """Compile in a private temporary directory, then move the finished library into ``build`` with one rename:
    a compile killed at any moment leaves no partial library where the cache looks."""
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(module, header, sources=[str(s) for s in sources], include_dirs=[str(include_dir)],
                   extra_compile_args=list(COMPILE_ARGS))
    with scratch_dir(".compiling-", build) as work:  # a killed compile's folder goes with the next compile
        library = Path(ffi.compile(tmpdir=str(work)))
        final = build / library.name
        os.replace(library, final)
    return final


def compile_library(cdef: str, header: str, sources: list[Path], include_dir: Path, private: bool = False):
    """Compile (or reuse from the cache) a cffi extension of ``sources``; returns (ffi, lib).

    A process loads one library file once, so its static variables are shared; ``private`` loads a copy of
    the file instead, giving the caller its own static state (a learning bundle's model).
    """
    module = f"_es_{library_key(cdef, header, sources, include_dir)[:20]}"
    build = cache_dir() / "cffi" / module
    built = list(build.glob(f"{module}*.so")) + list(build.glob(f"{module}*.pyd"))
    if not built:
        built = [publish_library(cdef, header, sources, include_dir, module, build)]
    library = built[0]
    if not private:
        return _load(module, library)
    with scratch_dir("edgestream-bundle-") as scratch:  # the private copy is removed once loaded
        copy = scratch / library.name
        shutil.copyfile(library, copy)
        return _load(module, copy)


def _load(module: str, library: Path):
    spec = importlib.util.spec_from_file_location(module, library)
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    return extension.ffi, extension.lib


def check(status: int, what: str) -> None:
    if status != 0:
        raise DeviceError(f"{what} returned status {status}")


class Bundle:
    """A generated bundle compiled for the host; predictions come from its C code."""

    def __init__(self, directory):
        self.directory = Path(directory).resolve()  # cffi compiles elsewhere: includes must be absolute
        self.manifest = read_manifest(self.directory)
        self.name = self.manifest["name"]
        self.input_dtype = self.manifest["input_dtype"]
        self.n_features = self.manifest["n_features"]
        self.n_classes = self.manifest["n_classes"]
        self.model = load_bundle_model(self.manifest)
        self.task = task_of(self.model)
        self.learning = self.manifest["learning"]
        include = Path(self.manifest["include_directory"])
        cdef = header_cdef([f"{self.name}.h"], include)
        sources = [self.directory / s for s in self.manifest["sources"]]
        self.ffi, self.lib = compile_library(cdef, f'#include "{self.name}.h"', sources, include,
                                             private=self.learning)

    def _rows(self, X):
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (rows, {self.n_features}), got {X.shape}")
        return np.ascontiguousarray(X, dtype=self.input_dtype)

    def _scalar_outputs(self, X, call: str, c_type: str, dtype) -> np.ndarray:
        """One value per row from the bundle's ``<name>_<call>(features, &out)``."""
        rows = self._rows(X)
        function = getattr(self.lib, f"{self.name}_{call}")
        out = self.ffi.new(f"{c_type} *")
        values = np.empty(len(rows), dtype=dtype)
        for i, row in enumerate(rows):
            check(function(self.ffi.from_buffer(f"{C_TYPES[self.input_dtype]}[]", row), out), call)
            values[i] = out[0]
        return values

    def predict_encoded(self, X) -> np.ndarray:
        return self._scalar_outputs(X, "predict", "uint8_t", np.uint8)

    def predict_proba_q15(self, X) -> np.ndarray:
        rows = self._rows(X)
        predict_proba = getattr(self.lib, f"{self.name}_predict_proba")
        proba = np.empty((len(rows), self.n_classes), dtype=np.uint16)
        for i, row in enumerate(rows):
            out = self.ffi.from_buffer("uint16_t[]", proba[i])
            check(predict_proba(self.ffi.from_buffer(f"{C_TYPES[self.input_dtype]}[]", row), out), "predict_proba")
        return proba

    def predict_raw(self, X) -> np.ndarray:
        """A regressor's int32 raw outputs from its C code (``<name>_predict_raw``); a detector's outputs (Q15
        score and flag, :func:`edgestream.task.split_output`) from its ``<name>_score``."""
        if self.task != ANOMALY:
            return self._scalar_outputs(X, "predict_raw", "int32_t", np.int32)
        rows, score = self._rows(X), getattr(self.lib, f"{self.name}_score")
        out, flag = self.ffi.new("uint16_t *"), self.ffi.new("uint8_t *")
        values = np.empty(len(rows), dtype=np.int32)
        for i, row in enumerate(rows):
            check(score(self.ffi.from_buffer(f"{C_TYPES[self.input_dtype]}[]", row), out, flag), "score")
            values[i] = out[0] | (FLAG if flag[0] else 0)
        return values

    def predict(self, X) -> np.ndarray:
        """Class labels, or a regressor's values (its raw outputs decoded on the host as the model decodes them)."""
        if task_of(self.model) == REGRESSION:
            return self.model.target_.decode(self.predict_raw(X), self.model.output_divisor)
        if task_of(self.model) == ANOMALY:
            return split_output(self.predict_raw(X))[1].astype(np.int32)
        return self.model.classes_[self.predict_encoded(X)]

    def predict_one(self, x):
        return self.predict(np.asarray(x).reshape(1, -1))[0]

    def learn_encoded(self, x, label: int) -> int:
        """es_status of the bundle's learn function for one row and a class index or a regressor's target code
        (no checks on the host)."""
        row = self._rows(np.asarray(x).reshape(1, -1))[0]
        target = () if self.task == ANOMALY else (label,)  # a detector learns rows alone
        return getattr(self.lib, f"{self.name}_learn")(self.ffi.from_buffer(f"{C_TYPES[self.input_dtype]}[]", row),
                                                       *target)

    def learn_one(self, x, y=None) -> "Bundle":
        """Learn one row on the device code; the label must be one of the model's classes (a regressor's target
        is encoded by the model's target scale, as the host's model encodes it)."""
        if not self.learning:
            raise ValueError(f"bundle {self.directory} holds a frozen {self.manifest['learner']} model; it cannot learn")
        encoded = (self.model.encode_target(y) if self.task == REGRESSION else
                   None if self.task == ANOMALY else self.model.encode_label(y))
        check(self.learn_encoded(x, encoded), "learn")
        return self

    def test_then_train_raw(self, X, y=None) -> np.ndarray:
        """A learning regressor's raw output (a detector's score and flag) of every row before it learns the row,
        from its C code."""
        raw = np.empty(len(X), dtype=np.int32)
        for i, (row, target) in enumerate(zip(self._rows(X), np.zeros(len(X)) if y is None else y)):
            raw[i] = self.predict_raw(row[None])[0]
            self.learn_one(row, target)
        return raw

    def state_size(self) -> int:
        return int(getattr(self.lib, f"{self.name}_state_size")())


def load_bundle(directory) -> Bundle:
    return Bundle(directory)


@functools.lru_cache(maxsize=1)
def runtime():
    """The runtime in csrc/ compiled once: (ffi, lib) with everything its headers declare."""
    sources = [p for p in runtime_sources() if p.suffix == ".c"]
    header = "".join(f'#include "{p.name}"\n' for p in runtime_sources() if p.suffix == ".h")
    return compile_library(header_cdef([p.name for p in runtime_sources() if p.suffix == ".h"]), header, sources,
                           sources[0].parent)


def runtime_quantize(X, edges: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Bins of every row of X computed by the C quantizer (float32 or int32 edges, as given)."""
    ffi, lib = runtime()
    dtype = edges.dtype
    quantize = lib.es_quantize_f32 if dtype == np.float32 else lib.es_quantize_i32
    ctype = C_TYPES[dtype.name]
    rows = np.ascontiguousarray(X, dtype=dtype)
    edges_buffer = ffi.from_buffer(f"{ctype}[]", np.ascontiguousarray(edges) if len(edges) else np.zeros(1, dtype))
    offsets_buffer = ffi.from_buffer("uint16_t[]", np.ascontiguousarray(offsets, dtype=np.uint16))
    bins = np.empty(rows.shape, dtype=np.uint8)
    for i, row in enumerate(rows):
        check(quantize(ffi.from_buffer(f"{ctype}[]", row), edges_buffer, offsets_buffer, rows.shape[1],
                       ffi.from_buffer("uint8_t[]", bins[i])), "quantize")
    return bins


def runtime_predict_proba(device, X) -> np.ndarray:
    """Q15 probabilities of every row computed by the C runtime from the device tables of ``device``."""
    ffi, lib = runtime()
    ensemble = device.ensemble
    bins = runtime_quantize(X, device.edges, device.offsets)
    keep = [ensemble.nodes, ensemble.roots, ensemble.weights, np.ascontiguousarray(ensemble.leaf_values)]
    model = ffi.new("es_ensemble *", {
        "nodes": ffi.from_buffer("es_node[]", keep[0]),
        "roots": ffi.from_buffer("uint16_t[]", keep[1]),
        "weights": ffi.from_buffer("uint16_t[]", keep[2]),
        "leaf_values": ffi.from_buffer("uint16_t[]", keep[3]),
        "n_trees": ensemble.n_trees, "n_features": device.n_features, "n_classes": device.n_classes,
    })
    acc = ffi.new("uint32_t[]", device.n_classes)
    proba = np.empty((len(bins), device.n_classes), dtype=np.uint16)
    for i, row in enumerate(bins):
        check(lib.es_ensemble_predict_proba(model, ffi.from_buffer("uint8_t[]", row), acc,
                                            ffi.from_buffer("uint16_t[]", proba[i])), "predict_proba")
    return proba


def runtime_forest_predict(encoded, X, library=None) -> tuple[np.ndarray, np.ndarray]:
    """(classes, Q15 probabilities) of every row computed by ``es_forest_predict_*`` from the tables of an
    :class:`edgestream.encoding.EncodedModel` (the compile-once runtime); the classes come from a call without
    probabilities (the device's class-only path), the probabilities from a call without a class. ``library``:
    another (ffi, lib) declaring ``header_cdef(["es_infer.h"])`` (e.g. es_infer.c compiled with other options)."""
    ffi, lib = library or runtime()
    model, predict, keep = _forest(ffi, lib, encoded)
    rows = np.ascontiguousarray(X, dtype=encoded.encoding.input_dtype)
    scratch = ffi.new("int32_t[]", scratch_size(encoded))
    classes = np.empty(len(rows), dtype=np.uint8)
    proba = np.empty((len(rows), encoded.n_classes), dtype=np.uint16)
    out = ffi.new("uint8_t *")
    for i, row in enumerate(rows):
        x = ffi.from_buffer(f"{C_TYPES[encoded.encoding.input_dtype]}[]", row)
        check(predict(model, x, scratch, ffi.from_buffer("uint16_t[]", proba[i]), ffi.NULL), "es_forest_predict")
        check(predict(model, x, scratch, ffi.NULL, out), "es_forest_predict")  # the class-only path
        classes[i] = out[0]
    return classes, proba


def runtime_forest_raw(encoded, X) -> np.ndarray:
    """int32 raw outputs of a regressor's tables (additive, one score) computed by ``es_forest_predict_*``: the
    scratch's sum after a call without probabilities, as a bundle's ``<name>_predict_raw`` reads it."""
    ffi, lib = runtime()
    model, predict, keep = _forest(ffi, lib, encoded)
    rows = np.ascontiguousarray(X, dtype=encoded.encoding.input_dtype)
    scratch = ffi.new("int32_t[]", scratch_size(encoded))
    out = ffi.new("uint8_t *")
    raw = np.empty(len(rows), dtype=np.int32)
    for i, row in enumerate(rows):
        check(predict(model, ffi.from_buffer(f"{C_TYPES[encoded.encoding.input_dtype]}[]", row), scratch, ffi.NULL,
                      out), "es_forest_predict")
        raw[i] = scratch[0]
    return raw


def _forest(ffi, lib, encoded):
    """(es_forest descriptor of an EncodedModel's tables, the predict function of its input type, the buffers
    the descriptor points into: keep them alive while it is used)."""
    enc = encoded.encoding
    predict = {"float32": lib.es_forest_predict_f32, "int32": lib.es_forest_predict_i32,
               "int16": lib.es_forest_predict_i16}[enc.input_dtype]

    def buffer(array):
        array = np.ascontiguousarray(array)
        return array, (ffi.from_buffer(array) if array.size else ffi.NULL)

    tables = {name: buffer(getattr(encoded, name)) for name in
              ("feature", "threshold", "edges", "children", "tree_base", "weights", "leaves", "base_score")}
    fields = {name: ffi.cast("void *", pointer) for name, (_, pointer) in tables.items()}
    if not enc.weights:
        fields["weights"] = ffi.NULL
    model = ffi.new("es_forest *", {
        **fields, "total_weight": encoded.total_weight, "n_trees": encoded.n_trees,
        "n_features": encoded.n_features, "n_classes": encoded.n_classes, "n_scores": encoded.n_scores,
        "layout": enc.layout, "leaf_kind": LEAF_CODES[enc.leaves], "depth": enc.depth,
        "score_shift": encoded.score_shift})
    return model, predict, tables


NUMPY_TYPES = {"uint8_t": np.uint8, "uint16_t": np.uint16, "int32_t": np.int32, "uint32_t": np.uint32}


class RuntimeLearner:
    """A learner's device state in numpy arrays, learning and predicting through the compiled C runtime.

    The arrays are the regions of the learner's state layout, so after any step they can be compared with the
    Python learner's state directly; ``counter_values()`` gives the counters.
    """

    def __init__(self, learner):
        spec = learners.of_model(learner)
        if spec.state is None:
            raise ValueError(f"learner {spec.name!r} keeps no state on the device")
        self.ffi, self.lib = runtime()
        self.state = spec.state
        self.task = task_of(learner)
        self.n_classes = len(learner.classes_) if self.task == CLASSIFICATION else 1
        layout = learner.layout()
        self.config = self.ffi.new(f"{self.state.config_type} *", layout.config)
        self.regions = layout.zeros()
        fields = {name: self.ffi.from_buffer(f"{region.c_type}[]", self.regions[name])
                  for name, region in zip(self.regions, layout.regions)}
        self.counters = self.ffi.new(f"{self.state.counters_type} *")
        self.model = self.ffi.new(f"{self.state.prefix} *", {"config": self.config, "counters": self.counters,
                                                              **fields})
        self._learn = getattr(self.lib, self.state.call(self.task, 0))
        self._predict_proba = getattr(self.lib, f"{self.state.prefix}_predict_proba", None)  # classifiers
        self._acc = self.ffi.new("uint32_t[]", self.n_classes)
        self._row_type = f"{self.state.input_type}[]"
        self._row_dtype = STATE_C_TYPES[self.state.input_type][2]

    def load_export(self, learner) -> "RuntimeLearner":
        """Take the state ``learner`` exports (its ``device_state()``: regions and counters), as a bundle of it
        starts from."""
        arrays, counters = learner.device_state()
        for name, values in arrays.items():
            self.regions[name][...] = values
        for name, value in counters.items():
            setattr(self.counters, name, value)
        return self

    def learn(self, row: np.ndarray, label: int) -> int:
        """Status of the runtime's learn call (0 = ES_OK) on one row: bins or raw features, as the runtime takes
        them (the state description's ``input_type``), and its class index or target code (a regressor's)."""
        row = np.ascontiguousarray(row, dtype=self._row_dtype)
        target = () if self.state.target_type(self.task) is None else (label,)  # a detector learns rows alone
        return self._learn(self.model, self.ffi.from_buffer(self._row_type, row), *target)

    def predict_proba_status(self, row: np.ndarray, proba: np.ndarray) -> int:
        """Status of the runtime's predict_proba call on one row, writing ``proba`` (uint16, n_classes)."""
        row = np.ascontiguousarray(row, dtype=self._row_dtype)
        return self._predict_proba(self.model, self.ffi.from_buffer(self._row_type, row), self._acc,
                                   self.ffi.from_buffer("uint16_t[]", proba))

    def predict_proba(self, rows: np.ndarray) -> np.ndarray:
        rows = np.ascontiguousarray(np.atleast_2d(rows), dtype=self._row_dtype)
        proba = np.empty((len(rows), self.n_classes), dtype=np.uint16)
        for i, row in enumerate(rows):
            check(self.predict_proba_status(row, proba[i]), "predict_proba")
        return proba

    def predict_raw_status(self, row: np.ndarray) -> tuple[int, int]:
        """A regressor's or detector's (status, int32 output) of one row from the runtime's predict_raw (score)
        call."""
        row = np.ascontiguousarray(row, dtype=self._row_dtype)
        out = self.ffi.new("int32_t *")
        status = getattr(self.lib, self.state.call(self.task, 1))(self.model, self.ffi.from_buffer(self._row_type, row),
                                                                  out)
        return status, int(out[0])

    def counter_values(self) -> dict:
        return {field.name: getattr(self.counters, field.name) for field in self.state.counters}
