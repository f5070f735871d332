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
from sklearn.datasets import load_digits
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier, HistGradientBoostingClassifier,
                              RandomForestClassifier)
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_foundation as harness  # noqa: E402  (the shared C harness)

import edgestream  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load(name: str) -> harness.Dataset:
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=42)
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


def format_table(rows: list[harness.Row], n_rows: dict[str, int]) -> str:
    def number(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    header = ["data", "source model", "exporter / variant", "agreement", "mismatch", "ns/inf", "M4 B"]
    cells = [[r.model, r.trainer, r.exporter,
              number(None if r.mismatches is None else 1 - r.mismatches / n_rows[r.model], ".4%"),
              number(r.mismatches, "d"), number(r.ns_per_inference, ",.0f"), number(r.m4_bytes, ",d")]
             for r in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]

    def line(values):
        return "  ".join(v.rjust(w) if i >= 3 else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths)))

    notes = [f"  [{r.model} / {r.trainer} / {r.exporter}] {note}" for r in rows for note in r.notes]
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, cells)]
                     + (["", "refused or failed:", *notes] if notes else []))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="digits,pendigits")
    parser.add_argument("--out", type=Path, help="keep the generated and compiled files in this directory")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    arm = shutil.which(harness.ARM_CC[0]) is not None
    includes = [Path(__import__("emlearn").includedir)]
    datasets = args.datasets.split(",")
    with tempfile.TemporaryDirectory(prefix="es-bench-import-") as temp:
        root = args.out or Path(temp)
        rows = [row for dataset in datasets for row in rows_for(dataset, root, includes, arm)]
    n_rows = {dataset: len(load(dataset).X_test) for dataset in datasets}
    if args.json:
        print(json.dumps({"rows": [dataclasses.asdict(r) for r in rows], "held_out_rows": n_rows}, indent=2))
        return 0
    print(", ".join(f"{d}: {n} held-out rows" for d, n in n_rows.items()) + "\n")
    print(format_table(rows, n_rows))
    print("\n* agreement / mismatch: C class vs the source model's predict on the held-out rows (float32).")
    print(f"* ns/inf: host gcc -O2, median of {harness.RUNS} timed C loops; M4 B: arm-none-eabi-gcc -Os "
          "-mcpu=cortex-m4 text+data of the exporter's sources (edgestream: the whole bundle but main.c).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
