"""The ``edgestream`` command: fit, export, simulate, plan for a board, cross-build, and the end-to-end demo.

``fit --learner shrubs`` learns the file row by row (test-then-train) within an optional RAM budget;
``simulate --learn`` does the same on a learning bundle's C code and on its Python model, and compares them, on
the host (cffi) or under a board's emulator (``--target qemu``). ``budget`` plans a learner for a board's RAM and
flash, ``build`` reports what the board's linker made of a bundle, and ``demo`` runs all of it on a built-in stream.

User errors (bad data, bad model files, bad options, unknown boards, missing toolchains) end with
``edgestream: error: <message>`` on stderr and exit status 2, like argparse's own usage errors; a demo whose
bundle disagrees with Python exits with 1.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

import numpy as np

from . import __version__, targets
from .boards import load_board, list_boards
from .budget import BUNDLE_KIND, html_report, plan
from .data import STREAMS, load_csv, make_stream
from .errors import DataError
from .evaluate import compare_predictions, prequential
from .forest import ForestClassifier
from .modelfile import load_model, save_model
from .shrubs import ShrubEnsemble
from .targets import TargetError, ToolchainMissing
from .tree import TreeClassifier
from .units import parse_bytes

LEARNERS = {"tree": TreeClassifier, "forest": ForestClassifier, "shrubs": ShrubEnsemble}
FIT_OPTIONS = ("max_depth", "criterion", "min_samples_leaf", "max_bins", "binning", "input_dtype",
               "leaf_values", "n_trees", "seed", "window", "shrubs", "step_size", "burnin", "update_every")
PLAN_OPTIONS = ("window", "shrubs", "max_depth", "n_trees", "max_bins")
ONLY_FOR = {"leaf_values": ("tree", "forest"), "n_trees": "forest", "seed": "forest", "window": "shrubs", "shrubs": "shrubs", "step_size": "shrubs",
            "burnin": "shrubs", "update_every": "shrubs", "ram": "shrubs", "bins_rows": "shrubs"}
PARAM_NAMES = {"seed": "random_state", "window": "window_size", "shrubs": "max_shrubs"}
SIZE_PARAMS = {"window_size", "max_shrubs", "max_depth"}  # what --ram chooses unless any of them is given
SHRUB_CONFIG = ("window_size", "max_shrubs", "max_depth", "max_bins")  # a budget's config -> ShrubEnsemble
BINS_ROWS = 1000
CURVE_BUDGETS = tuple(kib * 1024 for kib in (2, 4, 8, 16, 32))
COMPARED = {"state_ram": "static state RAM", "tables_flash": "tables flash", "code_flash": "code flash"}
DEMO_STREAMS = ("sea", "hyperplane")
DEMO_WINDOW = 500
EXIT_MISMATCH = 1
EXIT_USAGE = 2


def main(argv=None) -> int:
    """Run one subcommand; returns the exit status (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError, ImportError, TargetError, ToolchainMissing) as error:
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
    fit.add_argument("--input-dtype", choices=["float32", "int32", "int16"],
                     help="device input type; int32 and int16 (tree and forest) take raw integer readings (no FPU "
                          "needed)")
    fit.add_argument("--leaf-values", choices=["q15", "q8", "vote"],
                     help="tree and forest: leaf probabilities in Q15 (default), rounded to 8 bits, or a hard vote")
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
    export.add_argument("--optimize", choices=["speed", "size"], default="speed",
                        help="frozen models: the fastest full-precision encoding (default) or the smallest exact one")
    export.set_defaults(run=run_export)

    simulate = commands.add_parser("simulate", help="run a bundle's C code on the host or an emulated board")
    simulate.add_argument("bundle", metavar="BUNDLE_DIR")
    simulate.add_argument("data", metavar="DATA.csv")
    _add_label_options(simulate)
    simulate.add_argument("--learn", action="store_true",
                          help="test-then-train (learning bundles): predict each row, then learn it, in C and Python")
    simulate.add_argument("--window", type=int, default=500, metavar="N",
                          help="with --learn: rows per point of the accuracy curve (default 500)")
    simulate.add_argument("--target", choices=["host", "qemu"], default="host",
                          help="host: compiled for this machine with cffi (default); qemu: cross-compiled for "
                               "--board and run under its emulator")
    simulate.add_argument("--board", metavar="BOARD", help="with --target qemu: a board name or board .toml file")
    simulate.add_argument("--timeout", type=float, default=60, metavar="S",
                          help="with --target qemu: seconds before the emulator is stopped (default 60)")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.set_defaults(run=run_simulate)

    boards = commands.add_parser("boards", help="list the built-in board profiles")
    boards.add_argument("--json", action="store_true", help="print the full profiles as one JSON array")
    boards.set_defaults(run=run_boards)

    budget = commands.add_parser("budget", help="the largest configuration of a learner that fits a board")
    budget.add_argument("--learner", choices=sorted(LEARNERS), required=True)
    _add_board_option(budget)
    budget.add_argument("--ram", dest="ram_budget", type=byte_size, metavar="SIZE",  # --ram of fit is shrubs only
                        help="RAM budget, e.g. 8KiB (default: the board's RAM)")
    budget.add_argument("--flash", type=byte_size, metavar="SIZE", help="flash budget (default: the board's flash)")
    budget.add_argument("--features", type=int, metavar="D", help="features per row (or taken from --data)")
    budget.add_argument("--classes", type=int, metavar="C", help="number of classes (or taken from --data)")
    config = budget.add_argument_group("configuration (what is not given is the largest that fits)")
    config.add_argument("--window", type=int, metavar="N", help="shrubs: samples in the sliding window")
    config.add_argument("--shrubs", type=int, metavar="M", help="shrubs: shrubs kept in the ensemble")
    config.add_argument("--max-depth", type=int, metavar="D")
    config.add_argument("--n-trees", type=int, metavar="T", help="forest only (default 10)")
    config.add_argument("--max-bins", type=int, metavar="N")
    budget.add_argument("--json", action="store_true", help="print one JSON object")
    budget.add_argument("--html", metavar="FILE", help="write a report with plots (needs matplotlib)")
    stream = budget.add_argument_group("accuracy against RAM budget (shrubs)")
    stream.add_argument("--data", metavar="DATA.csv",
                        help="a stream: its features and classes, and for shrubs the prequential accuracy of the "
                             f"planned ensemble at {', '.join(str(b // 1024) for b in CURVE_BUDGETS)} KiB of RAM")
    _add_label_options(stream, required=False)
    budget.add_argument("--bundle", metavar="BUNDLE_DIR",
                        help="an exported bundle of the planned model: build it for the board and show predicted "
                             "against measured sizes")
    budget.set_defaults(run=run_budget)

    build = commands.add_parser("build", help="cross-compile a bundle for a board and report sizes and stack")
    build.add_argument("bundle", metavar="BUNDLE_DIR")
    _add_board_option(build)
    build.add_argument("--json", action="store_true", help="print one JSON object")
    build.set_defaults(run=run_build)

    demo = commands.add_parser("demo", help="the main job: plan, learn, export, check parity on host and QEMU, report")
    demo.add_argument("--out", default="edgestream-demo", metavar="DIR")
    demo.add_argument("--n-samples", type=int, default=6000, metavar="N", help="rows of the stream (default 6000)")
    demo.add_argument("--stream", choices=DEMO_STREAMS, default="sea", help="built-in drifting stream (default sea)")
    demo.add_argument("--board", default="stm32f411", help="default stm32f411 (Cortex-M4F)")
    demo.add_argument("--ram", type=byte_size, default=8 * 1024, metavar="SIZE", help="RAM budget (default 8KiB)")
    demo.add_argument("--qemu-rows", type=int, default=500, metavar="N",
                      help="rows learned under QEMU (default 500)")
    demo.set_defaults(run=run_demo)
    return parser


def _add_label_options(parser, required: bool = True) -> None:
    parser.add_argument("--label", required=required, metavar="COL", help="label column: name or 0-based index")
    parser.add_argument("--no-header", action="store_true", help="the first row is data, not column names")


def _add_board_option(parser) -> None:
    parser.add_argument("--board", required=True, help="a board name (see edgestream boards) or a board .toml file")


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


def _learner_params(args, options=FIT_OPTIONS) -> dict:
    """Only the options given, so the learner's own defaults apply to the rest."""
    for option, learner in ONLY_FOR.items():
        allowed = (learner,) if isinstance(learner, str) else learner
        if getattr(args, option, None) is not None and args.learner not in allowed:
            raise ValueError(f"--{option.replace('_', '-')} applies to --learner {' and '.join(allowed)} only")
    return {PARAM_NAMES.get(option, option): getattr(args, option) for option in options
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
    out = export_bundle(model, args.output, name=args.name, optimize=args.optimize)
    print(f"exported {type(model).__name__} as bundle {args.name!r} -> {out}")
    return 0


def run_simulate(args) -> int:
    X, y, _ = load_csv(args.data, args.label, no_header=args.no_header)  # data errors before compiling
    target = simulation_target(args)
    X = device_input(X, target.model.input_dtype)
    scores = compare_learning(target, X, y, args.window) if args.learn else compare(target, X, y)
    report = {**scores, "bundle": str(args.bundle), **target.report_fields}
    where = args.bundle if args.target == "host" else f"{args.bundle} on {target.board.name} under {target.emulator}"
    if args.json:
        print(json.dumps(report))
    elif args.learn:
        print(f"{report['n']} rows test-then-train, accuracy {report['accuracy']:.4f} in C and "
              f"{report['python_accuracy']:.4f} in Python, {report['mismatches']} prediction mismatches, "
              f"{report['state_bytes']} state bytes ({where})")
    else:
        print(f"{report['n']} rows, accuracy {report['accuracy']:.4f}, {report['mismatches']} class mismatches "
              f"and {report['proba_mismatches']} probability mismatches between C and Python ({where})")
    return 0


def simulation_target(args):
    if args.target == "host":
        if args.board is not None:
            raise ValueError("--board applies to --target qemu only")
        from .simulate import load_bundle

        return HostTarget(load_bundle(Path(args.bundle).resolve()))
    if args.board is None:
        raise ValueError("--target qemu needs --board (see edgestream boards)")
    return EmulatedTarget(args.bundle, args.board, args.timeout)


class HostTarget:
    """A bundle compiled for this machine through cffi, driven row by row."""

    def __init__(self, bundle):
        self.bundle = bundle
        self.model = bundle.model
        self.report_fields = {"target": "host"}

    @property
    def directory(self) -> Path:
        return self.bundle.directory

    @property
    def learning(self) -> bool:
        return self.bundle.learning

    def python_copy(self):
        """The exported Python model, fresh: the bundle's own stays untouched."""
        return load_model(self.directory / self.bundle.manifest["model"])

    def outputs(self, X) -> tuple[np.ndarray, np.ndarray]:
        return self.bundle.predict_encoded(X), self.bundle.predict_proba_q15(X)

    def test_then_train(self, X, y, window: int):
        return prequential(self.bundle, X, y, window, sys.stderr.isatty(), desc="C bundle")

    def state_bytes(self) -> int:
        return self.bundle.state_size()


class EmulatedTarget:
    """A bundle cross-compiled for a board and run under its emulator, all rows in one run."""

    def __init__(self, directory, board, timeout: float):
        self.directory = Path(directory).resolve()
        self.manifest = targets.read_manifest(self.directory)
        self.board = load_board(board)
        self.timeout = timeout
        self.model = self.python_copy()
        self.learning = self.manifest["learner"] == "shrubs"
        self.report_fields = {"target": "qemu", "board": self.board.name}
        self.emulator = emulator_name(self.board)

    def python_copy(self):
        return load_model(self.directory / self.manifest["model"])

    def outputs(self, X) -> tuple[np.ndarray, np.ndarray]:
        result = targets.run(self.directory, self.board, X, timeout=self.timeout)
        return result.classes, result.proba

    def test_then_train(self, X, y, window: int):
        result = targets.run(self.directory, self.board, X, y, learn=True, timeout=self.timeout)
        return prequential(Replay(self.model.classes_[result.classes]), X, y, window)

    def state_bytes(self) -> int:
        """Size of the state object in the board's ELF."""
        return targets.build(self.directory, self.board).state_bytes


class Replay:
    """Predictions made elsewhere (in one emulator run), replayed row by row for ``prequential`` to score."""

    def __init__(self, predictions):
        self._predictions = iter(predictions)

    def predict_one(self, x):
        return next(self._predictions)

    def learn_one(self, x, y) -> None:
        pass


def device_input(X: np.ndarray, dtype: str) -> np.ndarray:
    """CSV features as the model takes them: int32 models read whole numbers and have no missing bin."""
    if dtype not in ("int32", "int16"):
        return X
    if not np.isfinite(X).all() or (X != np.round(X)).any():
        raise DataError(f"input dtype {dtype} needs whole-number features; the data has missing or fractional values")
    info = np.iinfo(dtype)
    if X.size and (X.min() < info.min or X.max() > info.max):
        raise DataError(f"input dtype {dtype} holds {info.min}..{info.max}; the data has {X.min():g}..{X.max():g}")
    return X.astype(np.int64)


def compare(target, X, y) -> dict:
    """Accuracy of the C predictions against ``y`` and their disagreements with the Python model."""
    model = target.model
    expected = model.predict_encoded(X)  # the Python model checks the feature count first
    predicted, proba = (np.asarray(values) for values in target.outputs(X))
    proba_differs = (proba != model.predict_proba_q15(X)).any(axis=1)
    return {"n": len(X), "accuracy": float(np.mean(predicted == encode_known(model.classes_, y))),
            "mismatches": int((predicted != expected).sum()), "proba_mismatches": int(proba_differs.sum())}


def compare_learning(target, X, y, window: int) -> dict:
    """Test-then-train on the bundle's C code and on its Python model, both from the exported state."""
    if not target.learning:
        raise ValueError(f"--learn needs a learning bundle (--learner shrubs); {target.directory} holds a frozen "
                         f"{type(target.model).__name__}")
    python = target.python_copy()
    device = target.test_then_train(X, y, window)
    host = prequential(python, X, y, window, sys.stderr.isatty(), desc="Python")
    return {"n": device.n, "accuracy": device.accuracy, "python_accuracy": host.accuracy,
            "mismatches": compare_predictions(device, host), "window": device.window, "curve": device.curve,
            "state_bytes": target.state_bytes()}


def encode_known(classes, y) -> np.ndarray:
    """Class index of every label; -1 (never predicted) for labels the model does not know."""
    index = {label: i for i, label in enumerate(np.asarray(classes).tolist())}
    return np.array([index.get(label, -1) for label in np.asarray(y).tolist()], dtype=np.int64)


def run_boards(args) -> int:
    boards = list_boards()
    if args.json:
        print(json.dumps([board.to_dict() for board in boards], indent=2))
        return 0
    rows = [("board", "cpu", "RAM", "flash", "FPU", "emulator")]
    for board in boards:
        emulator = emulator_name(board)
        rows.append((board.name, board.cpu, human_bytes(board.ram_bytes), human_bytes(board.flash_bytes),
                     "yes" if board.fpu else "no",
                     f"{emulator} (builds only)" if emulator and board.io == "none" else emulator or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def emulator_name(board) -> str:
    """``qemu-system-arm mps2-an386``, ``qemu-aarch64``, or empty for a board without one."""
    emulator = board.emulator
    return " ".join(filter(None, [emulator.command, emulator.machine])) if emulator else ""


def human_bytes(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"


def run_budget(args) -> int:
    board = load_board(args.board)
    if (args.data is None) != (args.label is None):
        raise ValueError("--data and --label go together")
    X, y = load_csv(args.data, args.label, no_header=args.no_header)[:2] if args.data else (None, None)
    n_features, n_classes = budget_shape(args, X, y)
    params = _learner_params(args, PLAN_OPTIONS)
    budget = plan(args.learner, board, n_features, n_classes, ram=args.ram_budget, flash=args.flash, **params)
    curve = accuracy_curve(board, X, y, args.flash, params) if X is not None and args.learner == "shrubs" else {}
    sizes = compare_sizes(budget, build_bundle_of(budget, args.bundle, board)) if args.bundle else None
    if args.html:
        write_report(budget, args.html, curve, sizes)
    if args.json:
        print(json.dumps({**budget.to_json(), **({"curve": curve} if curve else {}),
                          **({"measured": sizes} if sizes else {})}))
        return 0
    print(budget.to_text())
    if curve:
        print("prequential accuracy against RAM budget: "
              + ", ".join(f"{ram // 1024} KiB {accuracy:.4f}" for ram, accuracy in curve.items()))
    if sizes:
        print(sizes_text(sizes))
    if args.html:
        print(f"report: {args.html}")
    return 0


def budget_shape(args, X, y) -> tuple[int, int]:
    """Features and classes: as given, or the stream's (which must agree with what is given)."""
    given = {"features": args.features, "classes": args.classes}
    if X is None:
        missing = [f"--{key}" for key, value in given.items() if value is None]
        if missing:
            raise ValueError(f"{' and '.join(missing)} needed (or --data and --label to take them from a stream)")
        return args.features, args.classes
    found = {"features": X.shape[1], "classes": len(np.unique(y))}
    for key, value in given.items():
        if value is not None and value != found[key]:
            raise ValueError(f"--{key} {value} disagrees with {args.data}, which has {found[key]} {key}")
    return found["features"], found["classes"]


def planned_shrubs(budget, X, y) -> ShrubEnsemble:
    """The budget's shrub ensemble, bin edges from the first rows of the stream and classes from all of it."""
    learner = ShrubEnsemble(**{key: budget.config[key] for key in SHRUB_CONFIG})
    return learner.fit_bins(X[:BINS_ROWS]).set_classes(np.unique(y))


def accuracy_curve(board, X, y, flash, params) -> dict[int, float]:
    """RAM budget -> prequential accuracy of the shrub ensemble planned for it (budgets the board has and where
    some ensemble fits)."""
    curve = {}
    for ram in (ram for ram in CURVE_BUDGETS if ram <= board.ram_bytes):
        try:
            budget = plan("shrubs", board, X.shape[1], len(np.unique(y)), ram=ram, flash=flash, **params)
        except ValueError:  # nothing fits this budget (the options themselves were checked by the main plan)
            continue
        learner = planned_shrubs(budget, X, y)
        curve[ram] = prequential(learner, X, y, progress=sys.stderr.isatty(), desc=f"{ram // 1024} KiB").accuracy
    return curve


def build_bundle_of(budget, bundle_dir, board):
    """Cross-build a bundle after checking that it holds the planned model, so the sizes can be compared."""
    manifest = targets.read_manifest(bundle_dir)
    held = {"learner": manifest["learner"], "features": manifest["n_features"], "classes": manifest["n_classes"]}
    planned = {"learner": BUNDLE_KIND[budget.learner], "features": budget.config["features"],
               "classes": budget.config["classes"]}
    if manifest["learner"] == "shrubs":
        model = load_model(Path(bundle_dir) / manifest["model"])
        held |= {key: getattr(model, key) for key in SHRUB_CONFIG}
        planned |= {key: budget.config.get(key) for key in SHRUB_CONFIG}
    differ = [f"{key} {held[key]} (planned {planned[key]})" for key in held if held[key] != planned[key]]
    if differ:
        raise ValueError(f"bundle {bundle_dir} does not hold the planned model: it has {', '.join(differ)}")
    return targets.build(bundle_dir, board)


def compare_sizes(budget, build) -> dict:
    """Predicted (the budget) against measured (the ELF) bytes of the model state, its tables and the code."""
    predicted = {"state_ram": budget.state_bytes,
                 "tables_flash": sum(item.bytes for item in budget.flash if item.group == "tables"),
                 "code_flash": sum(item.bytes for item in budget.flash if item.group == "code")}
    measured = {"state_ram": build.state_bytes or 0, "tables_flash": build.tables_bytes,
                "code_flash": build.code_bytes}
    return {"elf": build.elf, "board": build.board,
            **{key: {"predicted": predicted[key], "measured": measured[key]} for key in COMPARED}}


def sizes_text(sizes: dict) -> str:
    lines = [f"predicted vs measured (the {sizes['board']} build):",
             f"  {'bytes':<18}{'predicted':>10}{'measured':>10}"]
    lines += [f"  {label:<18}{sizes[key]['predicted']:>10,}{sizes[key]['measured']:>10,}"
              for key, label in COMPARED.items()]
    return "\n".join(lines)


def write_report(budget, path, curve=None, sizes=None) -> Path:
    """The budget's HTML report, with the predicted-against-measured table when a build was measured."""
    path = html_report(budget, path, curve)
    if sizes:
        rows = "".join(f"<tr><th>{label}</th><td>{sizes[key]['predicted']:,}</td><td>{sizes[key]['measured']:,}</td>"
                       f"</tr>" for key, label in COMPARED.items())
        table = (f"<h2>Predicted against measured ({html.escape(sizes['board'])} ELF)</h2><table border='1'>"
                 f"<tr><th>bytes</th><th>predicted</th><th>measured</th></tr>{rows}</table>")
        path.write_text(path.read_text().replace("</body>", table + "</body>"))
    return path


def run_build(args) -> int:
    report = targets.build(args.bundle, args.board)
    print(report.to_json() if args.json else build_text(report))
    return 0


def build_text(r) -> str:
    state_name = f"{r.bundle}_memory"
    tables = ", ".join(f"{name} {size.bytes:,}" for name, size in r.objects.items() if name != state_name)
    flash = f"of {r.flash_bytes:,}" if r.flash_bytes else "(no flash limit)"
    return "\n".join([
        f"{r.bundle} for {r.board}: {r.elf}",
        f"  text {r.text:,}, data {r.data:,}, bss {r.bss:,} bytes ({r.stack_reserved:,} of bss reserved for the stack)",
        f"  flash {r.flash_used:,} {flash}; RAM at peak {r.ram_peak:,} of {r.ram_bytes:,} (static data and bss, "
        f"deepest stack in place of the reservation)",
        f"  code {r.code_bytes:,} bytes; model tables {r.tables_bytes:,} bytes: {tables}"
        + (f" ({r.tables_in_ram:,} of them copied to RAM)" if r.tables_in_ram else ""),
        f"  state {r.state_bytes:,} bytes ({state_name})" if r.state_bytes is not None
        else "  state: none (a frozen model)",
        "  stack of each API function (deepest call chain): "
        + ", ".join(f"{function} {size:,}" for function, size in r.stack_max.items()),
        "  fits" if r.fits else "  DOES NOT FIT"])


def run_demo(args) -> int:
    """Plan, learn, export, check parity on the host and under QEMU, and write the memory report."""
    from .export import export_bundle
    from .simulate import load_bundle

    board = load_board(args.board)
    X, y = make_stream(args.stream, args.n_samples, seed=0)
    budget = plan("shrubs", board, X.shape[1], len(np.unique(y)), ram=args.ram)
    learner = planned_shrubs(budget, X, y)
    print(f"demo: {STREAMS[args.stream].__doc__.splitlines()[0].rstrip('.')}; {len(X)} rows, {X.shape[1]} "
          f"features; a shrub ensemble for {board.name} ({board.cpu}, FPU {'yes' if board.fpu else 'no'}) "
          f"in {args.ram:,} bytes of RAM")
    print(f"plan: window {learner.window_size}, {learner.max_shrubs} shrubs of depth {learner.max_depth}; "
          f"{budget.ram_bytes:,} bytes of RAM, {budget.flash_bytes:,} bytes of flash")
    learned = prequential(learner, X, y, DEMO_WINDOW, progress=True, desc="test-then-train")
    print(f"test-then-train in Python: accuracy {learned.accuracy:.4f} over {learned.n} rows "
          f"(bin edges from the first {min(BINS_ROWS, len(X))}), {learned.samples_per_second:,.0f} rows/s")
    out = Path(args.out).resolve()
    bundle_dir = export_bundle(learner, out / "bundle", name="demo")
    host = compare_learning(HostTarget(load_bundle(bundle_dir)), X, y, DEMO_WINDOW)
    print(f"host C parity: {host['n']} rows test-then-train from the exported state, {host['mismatches']} "
          f"mismatches (accuracy {host['accuracy']:.4f} in C, {host['python_accuracy']:.4f} in Python) -> {bundle_dir}")
    mismatches, sizes = host["mismatches"], None
    rows = min(args.qemu_rows, len(X))
    try:
        sizes = compare_sizes(budget, targets.build(bundle_dir, board))
        emulated_target = EmulatedTarget(bundle_dir, board, timeout=60)
        emulated = compare_learning(emulated_target, X[:rows], y[:rows], DEMO_WINDOW)
        mismatches += emulated["mismatches"]
        print(f"QEMU parity ({emulated_target.emulator}): the first {rows} rows test-then-train from the exported "
              f"state, {emulated['mismatches']} mismatches (accuracy {emulated['accuracy']:.4f} on the emulated "
              f"{board.cpu}, {emulated['python_accuracy']:.4f} in Python)")
    except ToolchainMissing as missing:
        print(f"skipped {'the QEMU run' if sizes else 'the cross build and the QEMU run'}: {missing}")
    if sizes:
        print(sizes_text(sizes))
    report = write_report(budget, out / "memory-report.html", sizes=sizes)
    print(f"memory report: {report}")
    return EXIT_MISMATCH if mismatches else 0


def _message(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
