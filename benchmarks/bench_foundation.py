"""Benchmark: edgestream's C bundles against emlearn and m2cgen on scikit-learn's digits.

Run from the repository root::

    .venv/bin/python benchmarks/bench_foundation.py [--out DIR] [--json]

Models: a depth-8 tree and a 10-tree depth-8 forest, trained once by edgestream (exported by edgestream's
generator) and once by scikit-learn (exported by every tree variant emlearn offers, and by m2cgen).
Data: ``load_digits``, ``train_test_split(test_size=0.3, random_state=42)``.

One harness for every row:

* the exporter's C code is written to ``<build>/<row>/``; a generated ``wrapper.c`` defines
  ``int bench_predict(const float *x)`` (class index, < 0 on error) on top of the exporter's own predict
  function, converting the float32 features to the exporter's input type (int16_t for emlearn's int16 variants,
  double for m2cgen) exactly as a firmware would;
* ``harness.c`` defines ``long long bench_run(X, n_rows, n_features, repeats, out)``, a C loop that predicts every
  row ``repeats`` times; ``gcc -O2 -fPIC -shared`` links harness + wrapper + the exporter's sources into one
  library, loaded with cffi (ABI mode). ``time.perf_counter_ns`` around one ``bench_run`` call, median of
  ``RUNS`` calls, divided by rows x repeats, gives ns/inference. The wrapper and the model are separate
  translation units (no LTO) for every row alike;
* accuracy and mismatches come from the classes ``bench_run`` wrote: mismatches are test rows where the C class
  differs from the class the exporting Python model predicts (``predict`` for scikit-learn,
  ``predict_encoded`` for edgestream).

Sizes are ``size`` text + data of the exporter's own sources compiled alone (no wrapper, no harness) to objects:
host ``gcc -O2 -fno-asynchronous-unwind-tables -c`` (unwind tables left out, they are not flashed) and, when
``arm-none-eabi-gcc`` is installed, ``-Os -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16``
(picolibc headers). Const tables land in ``.rodata``, which ``size`` counts as text.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import cffi
import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

import edgestream

MAX_DEPTH = 8
N_TREES = 10
RUNS = 5  # timed calls per row; the median is reported
TARGET_RUN_NS = 50_000_000  # repeats are chosen so that one timed call lasts about this long

HOST_CC = ["gcc"]
HOST_LIB_FLAGS = ["-O2", "-fPIC", "-shared"]
HOST_SIZE_FLAGS = ["-O2", "-fno-asynchronous-unwind-tables"]
ARM_CC = ["arm-none-eabi-gcc", "--specs=picolibc.specs"]
ARM_SIZE_FLAGS = ["-Os", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]

# emlearn 0.23 tree variants: method x feature dtype x leaf_bits (0: hard majority vote; 8: soft vote on 8-bit
# class proportions). method="loadable" only accepts int16_t; that row is kept so the table says so.
EMLEARN_VARIANTS = [
    (method, dtype, leaf_bits)
    for method in ("loadable", "inline")
    for dtype in ("int16_t", "float")
    for leaf_bits in (0, 8)
]

# Quoted by issue 2 ("measured here for reference").
REFERENCE_FIGURES = [
    "emlearn loadable int16 forest: 8,518 B text on Cortex-M4, 266 ns/inference on the host, 11 mismatches",
    "emlearn inline float tree:     1,436 B, 6 mismatches",
    "m2cgen forest:                 60,692 B, 0 mismatches",
]

HARNESS_C = """\
{out} bench_predict(const float *x);

long long bench_run(const float *X, int n_rows, int n_features, int repeats, {out} *out)
{{
    long long checksum = 0;
    for (int r = 0; r < repeats; r++) {{
        for (int i = 0; i < n_rows; i++) {{
            out[i] = bench_predict(X + (long)i * n_features);
            checksum += (long long)out[i];
        }}
    }}
    return checksum;
}}
"""  # {out}: int (a class index) or double (a regressor's value)

WRAPPER_C = """\
#include <stdint.h>
{prelude}

int bench_predict(const float *x)
{{
{body}
}}
"""

CDEF = "long long bench_run(const float *X, int n_rows, int n_features, int repeats, {out} *out);"
OUT_DTYPES = {"int": np.intc, "double": np.float64}


@dataclass
class Dataset:
    X_train: np.ndarray
    X_test: np.ndarray  # float32, C-contiguous: what the C code is fed
    y_train: np.ndarray
    y_test: np.ndarray


@dataclass
class Variant:
    """One exporter's C code for one model, ready for the common harness."""

    model: str  # "tree" | "forest"
    trainer: str  # "edgestream" | "scikit-learn"
    exporter: str  # exporter and variant, as printed
    directory: Path
    sources: list[Path]  # the exporter's own C files: linked into the library and sized
    wrapper: str  # wrapper.c text defining bench_predict
    own_classes: np.ndarray  # class indices the exporting Python model predicts on the test set
    true_classes: np.ndarray  # class indices of the test labels
    out: str = "int"  # what bench_predict returns: "int" (a class index) or "double" (a regressor's value)


@dataclass
class Row:
    model: str
    trainer: str
    exporter: str
    accuracy: float | None = None
    mismatches: int | None = None
    ns_per_inference: float | None = None
    host_bytes: int | None = None
    m4_bytes: int | None = None
    notes: list[str] = field(default_factory=list)


class BuildError(RuntimeError):
    pass


# ----------------------------------------------------------------------------------------------- C helpers

def run(command: list[str], cwd: Path) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if "error" in line] or result.stderr.splitlines()
        raise BuildError(f"{command[0]} failed: {errors[0].strip() if errors else 'exit ' + str(result.returncode)}")
    return result.stdout


def include_flags(variant: Variant, extra: list[Path] = ()) -> list[str]:
    return [f"-I{d}" for d in [variant.directory, variant.directory / "src", *extra]]  # bundles: src/


def converting_body(ctype: str, n_features: int, call: str) -> str:
    """Copy the float32 features into a local ``in`` array of ``ctype``, then run ``call``."""
    return (f"    {ctype} in[{n_features}];\n"
            f"    for (int i = 0; i < {n_features}; i++) in[i] = ({ctype})x[i];\n{call}")


def write_sources(directory: Path, files: dict[str, str]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        (directory / name).write_text(text)
        paths.append(directory / name)
    return paths


def object_size(variant: Variant, cc: list[str], flags: list[str], size_tool: str, includes: list[Path]) -> int:
    """text + data of the variant's sources, each compiled alone to an object."""
    objects = []
    for source in variant.sources:
        obj = source.with_suffix(f".{size_tool}.o")
        run([*cc, *flags, *include_flags(variant, includes), "-c", str(source), "-o", str(obj)], variant.directory)
        objects.append(str(obj))
    total = 0
    for line in run([size_tool, *objects], variant.directory).splitlines()[1:]:
        text, data = line.split()[:2]
        total += int(text) + int(data)
    return total


def build_library(variant: Variant, includes: list[Path]) -> Path:
    harness, wrapper = write_sources(variant.directory, {"harness.c": HARNESS_C.format(out=variant.out),
                                                         "wrapper.c": variant.wrapper})
    library = variant.directory / "libbench.so"
    sources = [str(p) for p in (harness, wrapper, *variant.sources)]
    run([*HOST_CC, *HOST_LIB_FLAGS, *include_flags(variant, includes), *sources, "-o", str(library), "-lm"],
        variant.directory)
    return library


def time_library(library: Path, X: np.ndarray, out_type: str = "int",
                 clock=time.perf_counter_ns) -> tuple[np.ndarray, float]:
    """(classes, or values, predicted by the C code, median ns per inference); ``clock``: wall time, or e.g.
    ``time.thread_time_ns`` (the CPU time of the thread, which other work on a shared machine moves less)."""
    ffi = cffi.FFI()
    ffi.cdef(CDEF.format(out=out_type))
    lib = ffi.dlopen(str(library))
    n_rows, n_features = X.shape
    out = np.full(n_rows, -1, dtype=OUT_DTYPES[out_type])
    X_buffer, out_buffer = ffi.from_buffer("float[]", X), ffi.from_buffer(f"{out_type}[]", out)

    def timed(repeats: int) -> int:
        start = clock()
        lib.bench_run(X_buffer, n_rows, n_features, repeats, out_buffer)
        return clock() - start

    repeats = max(1, TARGET_RUN_NS // max(1, timed(1)))
    median_ns = statistics.median(timed(repeats) for _ in range(RUNS))
    outputs = out.astype(np.int64) if out_type == "int" else out.copy()
    ffi.dlclose(lib)
    return outputs, median_ns / (repeats * n_rows)


def measure(variant: Variant, X: np.ndarray, includes: list[Path], arm: bool) -> Row:
    row = Row(variant.model, variant.trainer, variant.exporter)
    try:
        classes, row.ns_per_inference = time_library(build_library(variant, includes), X)
        row.accuracy = float(np.mean(classes == variant.true_classes))
        row.mismatches = int(np.sum(classes != variant.own_classes))
        row.host_bytes = object_size(variant, HOST_CC, HOST_SIZE_FLAGS, "size", includes)
        if arm:
            row.m4_bytes = object_size(variant, ARM_CC, ARM_SIZE_FLAGS, "arm-none-eabi-size", includes)
    except BuildError as error:
        row.notes.append(str(error))
    return row


# ----------------------------------------------------------------------------------------------- exporters

def emlearn_variants(model: str, estimator, data: Dataset, root: Path) -> list[Variant | Row]:
    """One variant per emlearn tree option; an option emlearn refuses becomes a row that says why."""
    import emlearn

    own, true = sklearn_classes(estimator, data)
    n_features = data.X_test.shape[1]
    results: list[Variant | Row] = []
    for method, dtype, leaf_bits in EMLEARN_VARIANTS:
        vote = "soft vote 8-bit" if leaf_bits else "hard vote"
        label = f"emlearn {method} {dtype.replace('_t', '')} {vote}"
        try:
            converted = emlearn.convert(estimator, method=method, dtype=dtype, leaf_bits=leaf_bits)
            code = converted.save(name="eml_model", include_proba=False)
        except (ValueError, AssertionError) as error:
            results.append(Row(model, "scikit-learn", label, notes=[f"emlearn refuses: {error}"]))
            continue
        call = f"    return (int)eml_model_predict({'x' if dtype == 'float' else 'in'}, {n_features});"
        body = call if dtype == "float" else converting_body(dtype, n_features, call)
        prelude = f"int32_t eml_model_predict(const {dtype} *features, int32_t features_length);"
        directory = root / f"{model}-emlearn-{method}-{dtype}-{leaf_bits}"
        results.append(Variant(model, "scikit-learn", label, directory,
                               write_sources(directory, {"model.c": code}),
                               WRAPPER_C.format(prelude=prelude, body=body), own, true))
    return results


def m2cgen_variant(model: str, estimator, data: Dataset, root: Path) -> Variant:
    import m2cgen

    own, true = sklearn_classes(estimator, data)
    n_features, n_classes = data.X_test.shape[1], len(estimator.classes_)
    argmax = (f"    double out[{n_classes}];\n    score(in, out);\n    int best = 0;\n"
              f"    for (int k = 1; k < {n_classes}; k++) if (out[k] > out[best]) best = k;\n    return best;")
    directory = root / f"{model}-m2cgen"
    return Variant(model, "scikit-learn", "m2cgen export_to_c double", directory,
                   write_sources(directory, {"model.c": m2cgen.export_to_c(estimator)}),
                   WRAPPER_C.format(prelude="void score(double *input, double *output);",
                                    body=converting_body("double", n_features, argmax)), own, true)


# edgestream exports measured for each model: (leaf_values at fit time, export --optimize)
EDGESTREAM_EXPORTS = [("q15", "speed"), ("q15", "size"), ("q8", "size"), ("vote", "speed"), ("vote", "size")]


def edgestream_label(leaf_values: str, optimize: str) -> str:
    return f"edgestream {leaf_values} --optimize {optimize}"


def layout_label(label: str, directory: Path) -> str:
    """The row label with the tree layout the bundle's encoding took (``complete d8``: padded to depth 8)."""
    encoding = json.loads((directory / "edgestream.json").read_text())["encoding"]
    tree = encoding.get("tree", "folded")
    return f"{label} ({tree}{' d' + str(encoding['depth']) if tree == 'complete' else ''})"


def edgestream_variant(model: str, estimator, data: Dataset, root: Path, optimize: str = "speed") -> Variant:
    from edgestream.export import export_bundle

    directory = export_bundle(estimator, root / f"{model}-edgestream-{estimator.leaf_values}-{optimize}",
                              name="model", optimize=optimize)
    label = layout_label(edgestream_label(estimator.leaf_values, optimize), directory)
    manifest = directory / "edgestream.json"
    if manifest.exists():
        names = json.loads(manifest.read_text())["sources"]
    else:
        names = sorted(p.name for p in directory.glob("*.c") if p.name != "main.c")
    body = "    uint8_t c;\n    return model_predict(x, &c) == ES_OK ? (int)c : -1;"
    own = estimator.predict_encoded(data.X_test).astype(np.int64)
    true = np.searchsorted(estimator.classes_, data.y_test)
    return Variant(model, "edgestream", label, directory, [directory / name for name in names],
                   WRAPPER_C.format(prelude='#include "model.h"', body=body), own, true)


def edgestream_leaf_models(kind: str, estimator, data: Dataset):
    """The edgestream model refitted with each leaf_values option (same trees, leaves restricted at fit time)."""
    for leaf_values in dict.fromkeys(lv for lv, _ in EDGESTREAM_EXPORTS):
        yield leaf_values, (estimator if estimator.leaf_values == leaf_values else
                            type(estimator)(**{**estimator.get_params(), "leaf_values": leaf_values})
                            .fit(data.X_train, data.y_train))


def sklearn_classes(estimator, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    own = np.searchsorted(estimator.classes_, estimator.predict(data.X_test))
    return own, np.searchsorted(estimator.classes_, data.y_test)


# ----------------------------------------------------------------------------------------------- main

def load_data() -> Dataset:
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=42)
    return Dataset(X_train, np.ascontiguousarray(X_test, dtype=np.float32), y_train, y_test)


def models(data: Dataset):
    """(model kind, trainer, fitted estimator) for the four trained models."""
    fitted = [
        ("tree", "edgestream", edgestream.TreeClassifier(max_depth=MAX_DEPTH)),
        ("tree", "scikit-learn", DecisionTreeClassifier(max_depth=MAX_DEPTH, random_state=0)),
        ("forest", "edgestream", edgestream.ForestClassifier(n_trees=N_TREES, max_depth=MAX_DEPTH, random_state=0)),
        ("forest", "scikit-learn", RandomForestClassifier(n_estimators=N_TREES, max_depth=MAX_DEPTH, random_state=0)),
    ]
    for kind, trainer, estimator in fitted:
        yield kind, trainer, estimator.fit(data.X_train, data.y_train)


def variants(data: Dataset, root: Path) -> list[Variant | Row]:
    found: list[Variant | Row] = []
    for kind, trainer, estimator in models(data):
        if trainer == "edgestream":
            fitted = dict(edgestream_leaf_models(kind, estimator, data))
            for leaf_values, optimize in EDGESTREAM_EXPORTS:
                found.append(edgestream_variant(kind, fitted[leaf_values], data, root, optimize))
        else:
            found += emlearn_variants(kind, estimator, data, root)
            found.append(m2cgen_variant(kind, estimator, data, root))
    return found


def format_table(rows: list[Row]) -> str:
    def number(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    header = ["model", "trained by", "exporter / variant", "accuracy", "mismatch", "ns/inf", "host B", "M4 B"]
    cells = [[r.model, r.trainer, r.exporter, number(r.accuracy, ".4f"), number(r.mismatches, "d"),
              number(r.ns_per_inference, ",.0f"), number(r.host_bytes, ",d"), number(r.m4_bytes, ",d")]
             for r in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    numeric = set(range(3, len(header)))

    def line(values):
        return "  ".join(v.rjust(w) if i in numeric else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths)))

    out = [line(header), "  ".join("-" * w for w in widths), *map(line, cells)]
    notes = [f"  [{r.model} / {r.exporter}] {note}" for r in rows for note in r.notes]
    return "\n".join(out + (["", "problems:", *notes] if notes else []))


FOOTNOTES = [
    "accuracy: C classes vs the test labels; mismatch: C classes vs the exporting Python model's predict.",
    "ns/inf: C loop over the test rows inside the library, median of {runs} timed calls (host, gcc -O2).",
    "host B / M4 B: size text+data of the exporter's sources alone (no wrapper, no harness); host gcc -O2 "
    "(no unwind tables), M4 arm-none-eabi-gcc -Os -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16.",
    "edgestream B: every .c file of the bundle except the example main.c (the runtime es_infer.c compiled for "
    "the bundle's one encoding, predict and predict_proba wrappers, the model tables), since all of it is flashed.",
    "edgestream rows: leaf values chosen at fit time (q15 as trained, q8 = rounded to 1/128, vote = majority class "
    "per leaf; the Python model predicts with them, so mismatch counts the export), then export --optimize "
    "speed (inline: the trees as nested ifs with hex float edges, the leaves' terms added in code) or size "
    "(folded, the smallest exact encoding).",
    "emlearn B: the generated file with include_proba=False; for 'loadable' that file includes eml_trees.h, "
    "whose non-static functions (predict, predict_proba, regress) are all in the object.",
    "emlearn compares with '<' (scikit-learn: '<='), and its int16 variants write thresholds as int(t), so "
    "0.5 becomes 0: on digits (integers 0..16, fed unscaled as emlearn's own wrapper does) every x == floor(t) "
    "takes the wrong branch. emlearn's own Python predict() gives the same mismatch counts as this harness.",
    "m2cgen B: the generated score() (trees as nested ifs, leaf probabilities as double literals).",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep the generated and compiled files in this directory")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    args = parser.parse_args(argv)

    data = load_data()
    arm = shutil.which(ARM_CC[0]) is not None
    includes = [Path(__import__("emlearn").includedir)]
    with tempfile.TemporaryDirectory(prefix="es-bench-") as temp:
        root = args.out or Path(temp)
        rows = [v if isinstance(v, Row) else measure(v, data.X_test, includes, arm) for v in variants(data, root)]

    if args.json:
        print(json.dumps({"rows": [dataclasses.asdict(r) for r in rows], "reference_figures": REFERENCE_FIGURES,
                          "arm_toolchain": arm}, indent=2))
        return 0
    print(f"digits: {len(data.X_train)} train / {len(data.X_test)} test rows, "
          f"{data.X_test.shape[1]} features; depth {MAX_DEPTH}, forest of {N_TREES} trees\n")
    print(format_table(rows))
    print()
    print("\n".join("* " + note.format(runs=RUNS) for note in FOOTNOTES))
    if not arm:
        print("* M4 B is n/a: arm-none-eabi-gcc is not installed.")
    print("\nreference figures from the issue:")
    print("\n".join("  " + figure for figure in REFERENCE_FIGURES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
