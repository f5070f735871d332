"""Benchmark: models trained elsewhere, exported by edgestream import, emlearn and m2cgen, in one run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_import.py [--datasets digits,pendigits] [--out DIR] [--json]

Models (per dataset): scikit-learn DecisionTree (depth 10), RandomForest and ExtraTrees (20 trees, depth 10),
GradientBoosting (30 rounds, depth 3), HistGradientBoosting (30 iterations), LightGBM (30 rounds, 15 leaves) and
XGBoost (30 rounds, depth 4). Each is exported by ``edgestream import`` + ``export --optimize speed`` and
``--optimize size``, by emlearn's inline float variants (hard and 8-bit soft vote; its loadable method takes int16
features only) and by m2cgen, and measured by the harness of ``bench_foundation.py`` (same C loop, same compiler flags, same run):

* agreement: held-out rows (fed as float32, what a device reads, to the source's own ``predict`` too) where the
  exported C code predicts the class the source model predicts;
* ns/inf: host, gcc -O2; M4 B: text + data of the exporter's sources for Cortex-M4 (arm-none-eabi-gcc -Os).

Data: digits (scikit-learn, 30% held out, random_state 42) and pendigits (``../shared/data``: train / test files).

Regressors (``--regression-datasets diabetes,friedman``, "" for none): scikit-learn DecisionTree (depth 10),
RandomForest and ExtraTrees (20 trees, depth 10), GradientBoosting (100 rounds, depth 3), HistGradientBoosting
(100 iterations), LightGBM (100 rounds, 15 leaves; and 500 rounds, the growth of the bound) and XGBoost (100
rounds, depth 4), each exported by edgestream (both encodings), emlearn's inline float trees and m2cgen where
they take it. Per row: max |C prediction - source predict| over the held-out rows (edgestream: the C raw output
decoded on the host in float64, as ``simulate`` does) beside edgestream's stated bound (``rounding_bound_``).
Data: diabetes (scikit-learn, 30% held out, random_state 42) and Friedman #1 (2,000 training and 1,000 held-out
rows, noise 1).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes, load_digits, make_friedman1
from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                              GradientBoostingRegressor, HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_foundation as harness  # noqa: E402  (the shared C harness)

import edgestream  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load(name: str) -> harness.Dataset:
    """A data set by name: digits, pendigits (classes); diabetes, friedman (regression)."""
    if name in ("digits", "diabetes"):
        X, y = (load_digits if name == "digits" else load_diabetes)(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=42)
    elif name == "friedman":
        X_train, y_train = make_friedman1(2000, noise=1.0, random_state=0)
        X_test, y_test = make_friedman1(1000, noise=1.0, random_state=1)
    else:
        train, test = (np.loadtxt(DATA / f"{name}.{part}.csv", delimiter=",") for part in ("train", "test"))
        X_train, y_train, X_test, y_test = train[:, 1:], train[:, 0].astype(int), test[:, 1:], test[:, 0].astype(int)
    return harness.Dataset(X_train.astype(np.float32), np.ascontiguousarray(X_test, dtype=np.float32), y_train,
                           y_test)


def sources():
    import lightgbm
    import xgboost

    return [DecisionTreeClassifier(max_depth=10, random_state=0),
            RandomForestClassifier(20, max_depth=10, random_state=0),
            ExtraTreesClassifier(20, max_depth=10, random_state=0),
            GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0),
            HistGradientBoostingClassifier(max_iter=30, random_state=0),
            lightgbm.LGBMClassifier(n_estimators=30, num_leaves=15, verbose=-1),
            xgboost.XGBClassifier(n_estimators=30, max_depth=4)]


def edgestream_variant(name: str, source, data: harness.Dataset, root: Path, optimize: str) -> harness.Variant:
    from edgestream.export import export_bundle

    model = edgestream.convert(source)
    directory = export_bundle(model, root / f"{name}-edgestream-{optimize}", name="model", optimize=optimize)
    label = harness.layout_label(f"edgestream import --optimize {optimize}", directory)
    names = json.loads((directory / "edgestream.json").read_text())["sources"]
    body = "    uint8_t c;\n    return model_predict(x, &c) == ES_OK ? (int)c : -1;"
    own, true = harness.sklearn_classes(source, data)
    return harness.Variant(name, type(source).__name__, label, directory, [directory / n for n in names],
                           harness.WRAPPER_C.format(prelude='#include "model.h"', body=body), own, true)


def emlearn_variants(name: str, source, data: harness.Dataset, root: Path):
    found = harness.emlearn_variants(name, source, data, root)
    return [v for v in found if "inline float" in v.exporter]  # emlearn's loadable method takes int16 only


def m2cgen_variant(name: str, source, data: harness.Dataset, root: Path):
    try:
        return harness.m2cgen_variant(name, source, data, root)
    except Exception as error:  # m2cgen refuses some models or library versions
        return harness.Row(name, type(source).__name__, "m2cgen export_to_c double",
                           notes=[f"m2cgen refuses: {str(error).splitlines()[0][:120]}"])


def rows_for(dataset: str, root: Path, includes, arm: bool) -> list[harness.Row]:
    data = load(dataset)
    rows = []
    for source in sources():
        source.fit(data.X_train, data.y_train)
        name = f"{dataset}"
        found = [edgestream_variant(name, source, data, root, optimize) for optimize in ("speed", "size")]
        try:
            found += emlearn_variants(name, source, data, root)
        except Exception as error:
            found.append(harness.Row(name, type(source).__name__, "emlearn",
                                     notes=[f"emlearn refuses: {str(error).splitlines()[0][:120]}"]))
        found.append(m2cgen_variant(name, source, data, root))
        for variant in found:
            variant.trainer = type(source).__name__
        rows += [v if isinstance(v, harness.Row) else harness.measure(v, data.X_test, includes, arm) for v in found]
    return rows


# ------------------------------------------------------------------------------------------------ regressors

VALUE_WRAPPER_C = """\
#include <math.h>
#include <stdint.h>
{prelude}

double bench_predict(const float *x)
{{
{body}
}}
"""


@dataclasses.dataclass
class RegressionRow:
    data: str
    source: str
    exporter: str
    max_difference: float | None = None  # max |C prediction - source predict| over the held-out rows
    bound: float | None = None  # edgestream's stated bound (rounding_bound_)
    ns_per_inference: float | None = None
    m4_bytes: int | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


def regression_sources():
    import lightgbm
    import xgboost

    return [DecisionTreeRegressor(max_depth=10, random_state=0),
            RandomForestRegressor(20, max_depth=10, random_state=0),
            ExtraTreesRegressor(20, max_depth=10, random_state=0),
            GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=0),
            HistGradientBoostingRegressor(max_iter=100, random_state=0),
            lightgbm.LGBMRegressor(n_estimators=100, num_leaves=15, verbose=-1),
            lightgbm.LGBMRegressor(n_estimators=500, num_leaves=15, verbose=-1),
            xgboost.XGBRegressor(n_estimators=100, max_depth=4)]


def source_label(source) -> str:
    rounds = getattr(source, "n_estimators", None) or getattr(source, "max_iter", None)
    return f"{type(source).__name__}" + (f" ({rounds})" if rounds else "")


def value_variant(name: str, source, exporter: str, directory: Path, sources, prelude: str, body: str):
    return harness.Variant(name, source_label(source), exporter, directory, sources,
                           VALUE_WRAPPER_C.format(prelude=prelude, body=body), np.zeros(0), np.zeros(0), "double")


def regression_variants(name: str, source, data: harness.Dataset, root: Path):
    """(variant, decode of its C outputs, stated bound) of every exporter that takes the regressor; a refusal is
    a row that says why."""
    import emlearn
    import m2cgen

    from edgestream.export import export_bundle

    model = edgestream.convert(source)
    n_features = data.X_test.shape[1]
    found = []
    for optimize in ("speed", "size"):
        directory = export_bundle(model, root / f"{name}-{id(source)}-edgestream-{optimize}", name="model",
                                  optimize=optimize)
        names = json.loads((directory / "edgestream.json").read_text())["sources"]
        label = harness.layout_label(f"edgestream import --optimize {optimize}", directory)
        body = "    int32_t raw;\n    return model_predict_raw(x, &raw) == ES_OK ? (double)raw : NAN;"
        found.append((value_variant(name, source, label, directory, [directory / n for n in names],
                                    '#include "model.h"', body),
                      lambda raw: model.target_.decode(raw, model.output_divisor), model.rounding_bound_))
    exporters = (("emlearn inline float", "float eml_model_predict(const float *features, int32_t length);",
                  f"    return (double)eml_model_predict(x, {n_features});",
                  lambda: emlearn.convert(source, method="inline", dtype="float").save(name="eml_model")),
                 ("m2cgen export_to_c double", "double score(double *input);",
                  harness.converting_body("double", n_features, "    return score(in);"),
                  lambda: m2cgen.export_to_c(source)))
    for label, prelude, body, export in exporters:
        try:
            code = export()
        except Exception as error:  # each exporter refuses some models in its own way
            found.append(RegressionRow(name, source_label(source), label,
                                       notes=[f"refuses: {str(error).splitlines()[0][:100]}"]))
            continue
        directory = root / f"{name}-{id(source)}-{label.split()[0]}"
        found.append((value_variant(name, source, label, directory,
                                    harness.write_sources(directory, {"model.c": code}), prelude, body),
                      lambda values: values, None))
    return found


def measure_values(found, source_values: np.ndarray, X: np.ndarray, includes, arm: bool) -> RegressionRow:
    variant, decode, bound = found
    row = RegressionRow(variant.model, variant.trainer, variant.exporter, bound=bound)
    try:
        outputs, row.ns_per_inference = harness.time_library(harness.build_library(variant, includes), X, "double")
        row.max_difference = float(np.abs(decode(outputs) - source_values).max())
        if arm:
            row.m4_bytes = harness.object_size(variant, harness.ARM_CC, harness.ARM_SIZE_FLAGS, "arm-none-eabi-size",
                                               includes)
    except harness.BuildError as error:
        row.notes.append(str(error))
    return row


def regression_rows(dataset: str, root: Path, includes, arm: bool) -> list[RegressionRow]:
    data = load(dataset)
    rows = []
    for source in regression_sources():
        source.fit(data.X_train, data.y_train)
        expected = source.predict(data.X_test).astype(np.float64)
        for found in regression_variants(dataset, source, data, root):
            rows.append(found if isinstance(found, RegressionRow) else
                        measure_values(found, expected, data.X_test, includes, arm))
    return rows


def format_regression_table(rows: list[RegressionRow]) -> str:
    def number(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    header = ["data", "source model", "exporter / variant", "max |diff|", "stated bound", "ns/inf", "M4 B"]
    cells = [[r.data, r.source, r.exporter, number(r.max_difference, ".3g"), number(r.bound, ".3g"),
              number(r.ns_per_inference, ",.0f"), number(r.m4_bytes, ",d")] for r in rows]
    notes = [f"  [{r.data} / {r.source} / {r.exporter}] {note}" for r in rows for note in r.notes]
    return text_table(header, cells) + ("\n\nrefused or failed:\n" + "\n".join(notes) if notes else "")


def text_table(header: list[str], cells: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first three left-aligned, the figures right-aligned."""
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]

    def line(values):
        return "  ".join(v.rjust(w) if i >= 3 else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, cells)])


def format_table(rows: list[harness.Row], n_rows: dict[str, int]) -> str:
    def number(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    header = ["data", "source model", "exporter / variant", "agreement", "mismatch", "ns/inf", "M4 B"]
    cells = [[r.model, r.trainer, r.exporter,
              number(None if r.mismatches is None else 1 - r.mismatches / n_rows[r.model], ".4%"),
              number(r.mismatches, "d"), number(r.ns_per_inference, ",.0f"), number(r.m4_bytes, ",d")]
             for r in rows]
    notes = [f"  [{r.model} / {r.trainer} / {r.exporter}] {note}" for r in rows for note in r.notes]
    return text_table(header, cells) + ("\n\nrefused or failed:\n" + "\n".join(notes) if notes else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="digits,pendigits", help="classification data sets (\"\" for none)")
    parser.add_argument("--regression-datasets", default="diabetes,friedman",
                        help="regression data sets (\"\" for none)")
    parser.add_argument("--out", type=Path, help="keep the generated and compiled files in this directory")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    arm = shutil.which(harness.ARM_CC[0]) is not None
    includes = [Path(__import__("emlearn").includedir)]
    datasets = [name for name in args.datasets.split(",") if name]
    regression_sets = [name for name in args.regression_datasets.split(",") if name]
    with tempfile.TemporaryDirectory(prefix="es-bench-import-") as temp:
        root = args.out or Path(temp)
        rows = [row for dataset in datasets for row in rows_for(dataset, root, includes, arm)]
        regression = [row for dataset in regression_sets for row in regression_rows(dataset, root, includes, arm)]
    n_rows = {dataset: len(load(dataset).X_test) for dataset in datasets}
    if args.json:
        print(json.dumps({"rows": [dataclasses.asdict(r) for r in rows], "held_out_rows": n_rows,
                          "regression_rows": [dataclasses.asdict(r) for r in regression]}, indent=2))
        return 0
    footer = (f"* ns/inf: host gcc -O2, median of {harness.RUNS} timed C loops; M4 B: arm-none-eabi-gcc -Os "
              "-mcpu=cortex-m4 text+data of the exporter's sources (edgestream: the whole bundle but main.c).")
    if datasets:
        print(", ".join(f"{d}: {n} held-out rows" for d, n in n_rows.items()) + "\n")
        print(format_table(rows, n_rows))
        print("\n* agreement / mismatch: C class vs the source model's predict on the held-out rows (float32).")
        print(footer)
    if regression:
        print("\nRegressors: " + ", ".join(f"{d}: {len(load(d).X_test)} held-out rows"
                                          for d in regression_sets) + "\n")
        print(format_regression_table(regression))
        print("\n* max |diff|: largest |C prediction - source predict| over the held-out rows (float32 inputs); "
              "edgestream's C raw output decoded in float64 on the host; stated bound: edgestream's "
              "rounding_bound_.")
        print(footer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
