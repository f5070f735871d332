"""The ``edgestream`` command: fit, export, simulate and an end-to-end demo.

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
from .forest import ForestClassifier
from .modelfile import load_model, save_model
from .tree import TreeClassifier

LEARNERS = {"tree": TreeClassifier, "forest": ForestClassifier}
FIT_OPTIONS = ("max_depth", "n_trees", "criterion", "min_samples_leaf", "max_bins", "binning", "input_dtype", "seed")
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
    fit.add_argument("--max-depth", type=int)
    fit.add_argument("--n-trees", type=int, help="forest only")
    fit.add_argument("--criterion", choices=["gini", "entropy"])
    fit.add_argument("--min-samples-leaf", type=int)
    fit.add_argument("--max-bins", type=int)
    fit.add_argument("--binning", choices=["quantile", "adaptive"])
    fit.add_argument("--seed", type=int, help="forest only: random_state")
    fit.add_argument("--input-dtype", choices=["float32", "int32"],
                     help="device input type; int32 takes raw integer readings (no FPU needed)")
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


def run_fit(args) -> int:
    X, y, _ = load_csv(args.data, args.label, no_header=args.no_header)
    model = LEARNERS[args.learner](**_learner_params(args))
    X = device_input(X, model.input_dtype)
    model.fit(X, y)
    save_model(model, args.output)
    print(f"trained {args.learner} on {len(X)} rows, {X.shape[1]} features, {len(model.classes_)} classes: "
          f"{len(model.ensemble_.nodes)} nodes, training accuracy {model.score(X, y):.4f} -> {args.output}")
    return 0


def _learner_params(args) -> dict:
    """Only the options given, so the learner's own defaults apply to the rest."""
    params = {}
    for option in FIT_OPTIONS:
        value = getattr(args, option)
        if value is None:
            continue
        if option in ("n_trees", "seed") and args.learner != "forest":
            raise ValueError(f"--{option.replace('_', '-')} applies to --learner forest only")
        params["random_state" if option == "seed" else option] = value
    return params


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
    report = {**compare(bundle, X, y), "bundle": str(args.bundle), "target": "host"}
    if args.json:
        print(json.dumps(report))
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
