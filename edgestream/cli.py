"""The ``edgestream`` command: fit, export, simulate and an end-to-end demo.

``fit --learner shrubs`` learns the file row by row (test-then-train) within an optional RAM budget;
``simulate --learn`` does the same on a learning bundle's C code and on its Python model, and compares them.

User errors (bad data, bad model files, bad options) end with ``edgestream: error: <message>`` on stderr and
exit status 2, like argparse's own usage errors; a demo whose bundle disagrees with Python exits with 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from . import __version__
from .data import load_csv, make_stream
from .errors import DataError
from .evaluate import compare_predictions, prequential
from .forest import ForestClassifier
from .modelfile import load_model, save_model
from .shrubs import ShrubEnsemble
from .tree import TreeClassifier
from .units import parse_bytes

LEARNERS = {"tree": TreeClassifier, "forest": ForestClassifier, "shrubs": ShrubEnsemble}
FIT_OPTIONS = ("max_depth", "criterion", "min_samples_leaf", "max_bins", "binning", "input_dtype",
               "n_trees", "seed", "window", "shrubs", "step_size", "burnin", "update_every")
ONLY_FOR = {"n_trees": "forest", "seed": "forest", "window": "shrubs", "shrubs": "shrubs", "step_size": "shrubs",
            "burnin": "shrubs", "update_every": "shrubs", "ram": "shrubs", "bins_rows": "shrubs"}
PARAM_NAMES = {"seed": "random_state", "window": "window_size", "shrubs": "max_shrubs"}
SIZE_PARAMS = {"window_size", "max_shrubs", "max_depth"}  # what --ram chooses unless any of them is given
BINS_ROWS = 1000
EXIT_MISMATCH = 1
EXIT_USAGE = 2


def main(argv=None) -> int:
    """Run one subcommand; returns the exit status (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError) as error:
        print(f"edgestream: error: {_message(error)}", file=sys.stderr)
        return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edgestream", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"edgestream {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    fit = commands.add_parser("fit", help="train a model on a CSV file and save it")
    fit.add_argument("data", metavar="DATA.csv")
    _add_label_options(fit)
    fit.add_argument("--learner", choices=sorted(LEARNERS), default="tree")
    fit.add_argument("--max-depth", type=int, help="default: the learner's own (tree and forest 8, shrubs 4)")
    fit.add_argument("--n-trees", type=int, help="forest only")
    fit.add_argument("--criterion", choices=["gini", "entropy"])
    fit.add_argument("--min-samples-leaf", type=int)
    fit.add_argument("--max-bins", type=int)
    fit.add_argument("--binning", choices=["quantile", "adaptive"])
    fit.add_argument("--seed", type=int, help="forest only: random_state")
    fit.add_argument("--input-dtype", choices=["float32", "int32"],
                     help="device input type; int32 takes raw integer readings (no FPU needed)")
    shrubs = fit.add_argument_group("shrubs only")
    shrubs.add_argument("--ram", type=byte_size, metavar="SIZE",
                        help="device RAM budget, e.g. 8KiB; sizes the ensemble unless --window, --shrubs or "
                             "--max-depth is given, else checks that they fit")
    shrubs.add_argument("--window", type=int, metavar="N", help="samples in the sliding window")
    shrubs.add_argument("--shrubs", type=int, metavar="M", help="shrubs kept in the ensemble")
    shrubs.add_argument("--step-size", type=step_size, metavar="X|adaptive", help="gradient step (default adaptive)")
    shrubs.add_argument("--burnin", type=int, metavar="N", help="gradient steps after each new shrub")
    shrubs.add_argument("--update-every", type=int, metavar="N", help="a new shrub every N samples")
    shrubs.add_argument("--bins-rows", type=int, metavar="N",
                        help=f"fit the bin edges on the first N rows (default {BINS_ROWS}, or all if fewer)")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL")
    fit.set_defaults(run=run_fit)

    export = commands.add_parser("export", help="write a C bundle for a saved model")
    export.add_argument("model", metavar="MODEL")
    export.add_argument("-o", "--output", required=True, metavar="BUNDLE_DIR")
    export.add_argument("--name", default="model", help="C prefix of the generated functions (default: model)")
    export.set_defaults(run=run_export)

    simulate = commands.add_parser("simulate", help="run a bundle's C code on the host over a CSV file")
    simulate.add_argument("bundle", metavar="BUNDLE_DIR")
    simulate.add_argument("data", metavar="DATA.csv")
    _add_label_options(simulate)
    simulate.add_argument("--learn", action="store_true",
                          help="test-then-train (learning bundles): predict each row, then learn it, in C and Python")
    simulate.add_argument("--window", type=int, default=500, metavar="N",
                          help="with --learn: rows per point of the accuracy curve (default 500)")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.set_defaults(run=run_simulate)

    demo = commands.add_parser("demo", help="train, export and simulate on a built-in stream")
    demo.add_argument("--out", default="edgestream-demo", metavar="DIR")
    demo.add_argument("--n-samples", type=int, default=5000)
    demo.set_defaults(run=run_demo)
    return parser


def _add_label_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--label", required=True, metavar="COL", help="label column: name or 0-based index")
    parser.add_argument("--no-header", action="store_true", help="the first row is data, not column names")


def byte_size(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def step_size(text: str):
    return text if text == "adaptive" else float(text)


def run_fit(args) -> int:
    X, y, _ = load_csv(args.data, args.label, no_header=args.no_header)
    params = _learner_params(args)
    if args.learner == "shrubs":
        return fit_shrubs(args, X, y, params)
    model = LEARNERS[args.learner](**params)
    X = device_input(X, model.input_dtype)
    model.fit(X, y)
    save_model(model, args.output)
    print(f"trained {args.learner} on {len(X)} rows, {X.shape[1]} features, {len(model.classes_)} classes: "
          f"{len(model.ensemble_.nodes)} nodes, training accuracy {model.score(X, y):.4f} -> {args.output}")
    return 0


def _learner_params(args) -> dict:
    """Only the options given, so the learner's own defaults apply to the rest."""
    for option, learner in ONLY_FOR.items():
        if getattr(args, option) is not None and args.learner != learner:
            raise ValueError(f"--{option.replace('_', '-')} applies to --learner {learner} only")
    return {PARAM_NAMES.get(option, option): getattr(args, option) for option in FIT_OPTIONS
            if getattr(args, option) is not None}


def fit_shrubs(args, X, y, params) -> int:
    """Bin edges from the first rows, classes from the whole file, then test-then-train over every row."""
    bins_rows = min(BINS_ROWS if args.bins_rows is None else args.bins_rows, len(X))
    if bins_rows < 1:
        raise ValueError(f"--bins-rows {args.bins_rows} must be at least 1")
    classes = np.unique(y)
    if args.ram is not None and not SIZE_PARAMS & params.keys():
        learner = ShrubEnsemble.for_budget(args.ram, X.shape[1], len(classes), **params)
    else:
        learner = ShrubEnsemble(**params)
    X = device_input(X, learner.input_dtype)
    learner.fit_bins(X[:bins_rows]).set_classes(classes)
    if args.ram is not None:
        learner.check_budget(args.ram)
    result = prequential(learner, X, y, progress=sys.stderr.isatty(), desc="learning")
    save_model(learner, args.output)
    edges_from = "all rows" if bins_rows == len(X) else f"the first {bins_rows} rows"
    print(f"learned shrubs on {len(X)} rows (bin edges from {edges_from}), {X.shape[1]} features, "
          f"{len(classes)} classes: window {learner.window_size}, {learner.max_shrubs} shrubs of depth "
          f"{learner.max_depth}, {learner.state_bytes()} state bytes, prequential accuracy {result.accuracy:.4f} "
          f"-> {args.output}")
    return 0


def run_export(args) -> int:
    from .export import export_bundle

    model = load_model(args.model)
    out = export_bundle(model, args.output, name=args.name)
    print(f"exported {type(model).__name__} as bundle {args.name!r} -> {out}")
    return 0


def run_simulate(args) -> int:
    from .simulate import load_bundle

    X, y, _ = load_csv(args.data, args.label, no_header=args.no_header)  # data errors before compiling
    bundle = load_bundle(Path(args.bundle).resolve())
    X = device_input(X, bundle.model.input_dtype)
    scores = compare_learning(bundle, X, y, args.window) if args.learn else compare(bundle, X, y)
    report = {**scores, "bundle": str(args.bundle), "target": "host"}
    if args.json:
        print(json.dumps(report))
    elif args.learn:
        print(f"{report['n']} rows test-then-train, accuracy {report['accuracy']:.4f} in C and "
              f"{report['python_accuracy']:.4f} in Python, {report['mismatches']} prediction mismatches, "
              f"{report['state_bytes']} state bytes ({args.bundle})")
    else:
        print(f"{report['n']} rows, accuracy {report['accuracy']:.4f}, {report['mismatches']} class mismatches "
              f"and {report['proba_mismatches']} probability mismatches between C and Python ({args.bundle})")
    return 0


def device_input(X: np.ndarray, dtype: str) -> np.ndarray:
    """CSV features as the model takes them: int32 models read whole numbers and have no missing bin."""
    if dtype != "int32":
        return X
    if not np.isfinite(X).all() or (X != np.round(X)).any():
        raise DataError("input dtype int32 needs whole-number features; the data has missing or fractional values")
    return X.astype(np.int64)


def compare(bundle, X, y) -> dict:
    """Accuracy of the C predictions against ``y`` and their disagreements with the Python model."""
    expected = bundle.model.predict_encoded(X)  # the Python model checks the feature count first
    predicted = np.asarray(bundle.predict_encoded(X))
    proba_differs = (np.asarray(bundle.predict_proba_q15(X)) != bundle.model.predict_proba_q15(X)).any(axis=1)
    return {"n": len(X), "accuracy": float(np.mean(predicted == encode_known(bundle.model.classes_, y))),
            "mismatches": int((predicted != expected).sum()), "proba_mismatches": int(proba_differs.sum())}


def compare_learning(bundle, X, y, window: int) -> dict:
    """Test-then-train on the bundle's C code and on its Python model, both from the exported state."""
    if not bundle.learning:
        raise ValueError(f"--learn needs a learning bundle (--learner shrubs); {bundle.directory} holds a frozen "
                         f"{type(bundle.model).__name__}")
    python = load_model(bundle.directory / bundle.manifest["model"])  # a fresh copy: the bundle's stays untouched
    progress = sys.stderr.isatty()
    device = prequential(bundle, X, y, window, progress, desc="C bundle")
    host = prequential(python, X, y, window, progress, desc="Python")
    return {"n": device.n, "accuracy": device.accuracy, "python_accuracy": host.accuracy,
            "mismatches": compare_predictions(device, host), "window": device.window, "curve": device.curve,
            "state_bytes": bundle.state_size()}


def encode_known(classes, y) -> np.ndarray:
    """Class index of every label; -1 (never predicted) for labels the model does not know."""
    index = {label: i for i, label in enumerate(np.asarray(classes).tolist())}
    return np.array([index.get(label, -1) for label in np.asarray(y).tolist()], dtype=np.int64)


def run_demo(args) -> int:
    from .export import export_bundle
    from .simulate import load_bundle

    X, y = make_stream("hyperplane", args.n_samples, seed=0)
    split = max(1, int(0.7 * len(X)))  # train on the older 70% of the stream, test on the newer rest
    test = slice(split, None) if split < len(X) else slice(None)
    model = ForestClassifier(n_trees=10, max_depth=8, random_state=0).fit(X[:split], y[:split])
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    save_model(model, out / "model.esm")
    bundle = load_bundle(export_bundle(model, out / "bundle", name="demo"))
    report = compare(bundle, X[test], y[test])
    print(f"demo: forest of {model.n_trees} trees on the rotating-hyperplane stream, {split} training rows")
    print(f"bundle {out / 'bundle'}: test accuracy {report['accuracy']:.4f} on {report['n']} rows, "
          f"{report['mismatches']} class mismatches, {report['proba_mismatches']} probability mismatches")
    return EXIT_MISMATCH if report["mismatches"] or report["proba_mismatches"] else 0


def _message(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
