"""The ``edgestream`` command: fit, export, simulate, plan for a board, cross-build, and the end-to-end demo.

The commands are generic over the learner registry (:mod:`edgestream.learners`): each learner's options are
declared there once. ``fit`` of an online learner learns the file row by row (test-then-train) as the device would;
``simulate --learn`` does the same on a learning bundle's C code and on its Python model and compares them, on the
host (cffi) or under a board's emulator (``--target qemu``). ``budget`` plans a learner for a board's RAM and
flash, ``build`` reports what the board's linker made of a bundle, and ``demo`` runs all of it on a built-in stream.
The work is done by library modules (train, budget, parity, targets, report); this module only parses and prints.

Every error ends with one line ``edgestream: error: <message>`` on stderr (a budget that nothing fits adds the
smallest configuration's table below it) and no traceback:

* exit status 2, a usage error, like argparse's own: an option out of its range (the ranges are declared once, by
  the modules that own them, see :mod:`edgestream.ranges`), and any input that is wrong: a data, model, bundle,
  image or board file that is missing, unreadable or invalid, a budget nothing fits (``ValueError`` and its kinds);
* exit status 1, a failure: the command was right but the work failed: files that cannot be written (``OSError``),
  a compiler, emulator or optional package that is missing, a build or an emulator run that fails or times out, a
  demo whose bundle disagrees with Python, and any unexpected error (one line naming it; the traceback only with
  ``--debug`` or ``EDGESTREAM_DEBUG=1``).

``docs/bad-input.md`` is the table of bad inputs and their answers (generated from ``tests/bad_inputs.py``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import traceback
from pathlib import Path

import numpy as np

from . import __version__, learners, missing, parity, targets
from .boards import list_boards, load_board
from .budget import MEMORY_TERMS, of_model, plan
from .checkpoint import SEQUENCE
from .data import N_SAMPLES, STREAMS, device_input, load_table, make_stream, write_csv
from .encoding import OPTIMIZE
from .evaluate import WINDOW, prequential
from .export import MANIFEST, MODEL_COPY, load_bundle_model, read_manifest
from .modelfile import load_model, save_model
from .parity import compare, compare_learning, compare_sizes, emulator_name, sizes_text
from .report import check_dependencies, html_report, provenance
from .online import BINS_ROWS_RANGE
from .ranges import Range
from .targets import TIMEOUT, ToolchainMissing
from .search import AUTO, RATE, SEARCH_ROWS, WORKERS, search
from .task import (ANOMALY, CLASSIFICATION, CODE_MAX, MAX_CLASS_LABELS, REGRESSION, TASKS, check_false_alarms,
                   infer_task, output_context, regression_metrics, task_of)
from .train import BINS_ROWS, evaluate_online, parse_row_numbers, predictions, start_online, train, update
from .tree import CLASSES, FEATURES
from .units import parse_bytes

DEFAULT_BOARD = "stm32f411"
DEMO_LEARNER = "shrubs"
DEMO_STREAMS = ("sea", "hyperplane")
DEMO_WINDOW = 500
QEMU_ROWS = Range("qemu_rows", 1)
SEED = Range("seed", 0)
EXIT_FAILURE = 1
EXIT_MISMATCH = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


DESCRIPTION = """Train, budget, export and run learning models on microcontrollers: fit a model on a
CSV file, plan it for a board's RAM and flash, export it as C, and check the C
against Python on the host or an emulated board, learning as the device would."""
EXAMPLE = """a first model that keeps learning on the device, on a built-in stream:
  edgestream stream sea -o sea.csv
  edgestream fit sea.csv --label y --learner shrubs --ram 8KiB -o sea.esm
  edgestream export sea.esm -o sea_bundle --name sea
  edgestream simulate sea_bundle sea.csv --label y --learn --target qemu --board stm32f411

edgestream COMMAND --help shows the options of a command."""


def main(argv=None) -> int:
    """Run one subcommand; returns the exit status (the console script passes it to ``sys.exit``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = args.debug or os.environ.get("EDGESTREAM_DEBUG", "") not in ("", "0")
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("edgestream: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # the last resort: each known kind of bad input is answered where it arises
        if debug:
            traceback.print_exc()
        print(f"edgestream: error: {_message(error)}", file=sys.stderr)
        return exit_status(error)


def exit_status(error: Exception) -> int:
    """2 for a usage error (``ValueError``: an option or an input that is wrong), 1 for a failure."""
    return EXIT_USAGE if isinstance(error, ValueError) else EXIT_FAILURE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edgestream", description=DESCRIPTION, epilog=EXAMPLE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"edgestream {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an unexpected error (also EDGESTREAM_DEBUG=1)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = learners.TRAINABLE

    fit = commands.add_parser("fit", help="train a model on a CSV file and save it")
    fit.add_argument("data", metavar="DATA.csv")
    _add_label_options(fit, required=False)  # required but for a detector (run_fit)
    frozen = [name for name in names if not learners.get(name).learning]
    fit.add_argument("--learner", choices=[*names, AUTO], metavar="LEARNER",
                     help=f"{', '.join(frozen)} (frozen on the device), "
                          f"{', '.join(name for name in names if name not in frozen)} "
                          f"(learning on the device; their options below), or {AUTO}: the most accurate learning "
                          "model within the budget (the default with --ram, --flash or --rate; tree otherwise)")
    _add_learner_options(fit)
    budget_options = fit.add_argument_group("budget (the budget manager chooses the learner's size)")
    budget_options.add_argument("--ram", type=byte_size, metavar="SIZE", help="RAM budget, e.g. 8KiB")
    budget_options.add_argument("--flash", type=byte_size, metavar="SIZE", help="flash budget, e.g. 64KiB")
    budget_options.add_argument("--board", default=DEFAULT_BOARD,
                                help=f"the board the budget is for (default {DEFAULT_BOARD})")
    _add_search_options(budget_options)
    fit.add_argument("--bins-rows", type=BINS_ROWS_RANGE, default=BINS_ROWS, metavar="N",
                     help=f"online learners: fit the bin edges on the first N rows (default {BINS_ROWS})")
    fit.add_argument("--classes", metavar="A,B,...",
                     help="online learners: every label the stream may carry, comma-separated (default: the labels "
                          "of the rows), for rows that do not yet hold all of them")
    fit.add_argument("--task", choices=TASKS,
                     help="what the label is: a class or a number (default: regression for a numeric label with "
                          f"fractions or more than {MAX_CLASS_LABELS} values; regressors: "
                          f"{', '.join(learners.for_task(REGRESSION))}); anomaly: learn normal from unlabelled "
                          "rows, a 0/1 --label column only scores the detector (detectors: "
                          f"{', '.join(learners.for_task(ANOMALY))})")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    fit.set_defaults(run=run_fit)

    update = commands.add_parser("update", help="add or delete training rows of a saved model in place (learners "
                                 "that support it) and rewrite the model file atomically")
    update.add_argument("model", metavar="MODEL")
    update.add_argument("--add", metavar="DATA.csv", help="rows to learn (their row numbers are printed)")
    _add_label_options(update, required=False)
    update.add_argument("--delete", metavar="ROWS",
                        help="row numbers to remove: a comma list or a file of numbers (deleted before --add)")
    update.set_defaults(run=run_update)

    evaluate = commands.add_parser("evaluate", help="test-then-train a saved online model (its Python "
                                   "implementation) over a CSV in file order")
    evaluate.add_argument("model", metavar="MODEL")
    evaluate.add_argument("data", metavar="DATA.csv")
    _add_label_options(evaluate)
    evaluate.add_argument("--window", type=WINDOW, default=500, metavar="N",
                          help="rows per point of the accuracy curve (default 500)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(run=run_evaluate)

    importer = commands.add_parser("import", help="convert a classifier or regressor trained with scikit-learn, "
                                   "LightGBM or XGBoost, or a scikit-learn IsolationForest, into a model file that "
                                   "predicts what it predicts")
    importer.add_argument("source", metavar="SOURCE",
                          help="a LightGBM model text file, an XGBoost JSON or UBJSON model file, or (with "
                               "--trust-pickle) a pickle or joblib file of a fitted scikit-learn, LightGBM or XGBoost "
                               "classifier or regressor or scikit-learn IsolationForest")
    importer.add_argument("-o", "--output", required=True, metavar="MODEL")
    importer.add_argument("--trust-pickle", action="store_true",
                          help="load a pickle or joblib file: loading one RUNS CODE from it, give this only for a "
                               "file whose origin you trust")
    importer.add_argument("--false-alarms", type=float, metavar="RATE",
                          help="an IsolationForest: flag from the threshold that flags at most this share (in (0, "
                               "0.5)) of the rows of --calibrate (default: from scikit-learn's offset_)")
    importer.add_argument("--calibrate", metavar="DATA.csv",
                          help="normal rows whose scores set the threshold of --false-alarms (a --label column is "
                               "dropped)")
    _add_label_options(importer, required=False)
    importer.set_defaults(run=run_import)

    predict = commands.add_parser("predict", help="write a model's prediction for every row of a data file")
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("data", metavar="DATA.csv")
    _add_label_options(predict, required=False)
    predict.add_argument("--proba", action="store_true",
                         help="the class probabilities (the device's Q15 values scaled to 1), a column per class")
    predict.add_argument("-o", "--output", metavar="OUT", help="write to this file (default: standard output)")
    predict.set_defaults(run=run_predict)

    export = commands.add_parser("export", help="write a C bundle for a saved model")
    export.add_argument("model", metavar="MODEL")
    export.add_argument("-o", "--output", required=True, metavar="BUNDLE_DIR")
    export.add_argument("--name", default="model", help="C prefix of the generated functions (default: model)")
    export.add_argument("--optimize", choices=OPTIMIZE, default="speed",
                        help="frozen models: speed, the fastest full-precision encoding (default), or size, the "
                             "smallest exact one")
    export.set_defaults(run=run_export)

    image = commands.add_parser("image", help="a learning model and device state images (checkpoints): continue "
                                "from a device's image, or write the model's state as an image")
    image.add_argument("model", metavar="MODEL")
    image.add_argument("--from", dest="source", metavar="IMAGE", help="a state image saved by the device (NAME_save)")
    image.add_argument("-o", "--output", metavar="MODEL2", help="with --from: the model continuing from the image")
    image.add_argument("--to", metavar="IMAGE", help="write the state of MODEL (or of MODEL2) as an image for "
                       "NAME_restore")
    image.add_argument("--sequence", type=SEQUENCE, default=1, metavar="N",
                       help="sequence number of --to (default 1)")
    image.set_defaults(run=run_image)

    simulate = commands.add_parser("simulate", help="run a bundle's C code on the host or an emulated board")
    simulate.add_argument("bundle", metavar="BUNDLE_DIR")
    simulate.add_argument("data", metavar="DATA.csv")
    _add_label_options(simulate)
    simulate.add_argument("--learn", action="store_true",
                          help="test-then-train (learning bundles): predict each row, then learn it, in C and Python")
    simulate.add_argument("--window", type=WINDOW, default=500, metavar="N",
                          help="with --learn: rows per point of the accuracy curve (default 500)")
    simulate.add_argument("--target", choices=["host", "qemu"], default="host",
                          help="host: compiled for this machine with cffi (default); qemu: cross-compiled for "
                               "--board and run under its emulator (a regressor's raw outputs and a detector's scores "
                               "and flags are compared with Python's)")
    simulate.add_argument("--board", metavar="BOARD", help="with --target qemu: a board name or board .toml file")
    simulate.add_argument("--timeout", type=TIMEOUT, default=60.0, metavar="S",
                          help="with --target qemu: seconds before the emulator is stopped (default 60)")
    simulate.add_argument("--instructions", action="store_true",
                          help="with --target qemu: count every predict (a regressor's predict_raw, a detector's "
                               "score) and learn call: executed instructions, exactly, under QEMU (it logs each one: slow, keep the "
                               "stream short); CPU cycles on AVR boards, measured by the firmware with Timer1 under "
                               "simavr")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.set_defaults(run=run_simulate)

    stream = commands.add_parser("stream", help="write a built-in drifting stream as a CSV file (features x0, x1, "
                                 "..., label y): data to try every command on")
    stream.add_argument("name", choices=sorted(STREAMS), metavar="STREAM",
                        help=f"one of {', '.join(sorted(STREAMS))} (edgestream.data.make_stream)")
    stream.add_argument("--n-samples", type=N_SAMPLES, default=3000, metavar="N", help="rows (default 3000)")
    stream.add_argument("--seed", type=SEED, default=1, metavar="N", help="random seed (default 1)")
    stream.add_argument("-o", "--output", required=True, metavar="DATA.csv")
    stream.set_defaults(run=run_stream)

    boards = commands.add_parser("boards", help="list the built-in board profiles")
    boards.add_argument("--json", action="store_true", help="print the full profiles as one JSON array")
    boards.set_defaults(run=run_boards)

    budget = commands.add_parser("budget", help="the largest configuration of a learner that fits a board")
    budget.add_argument("--learner", choices=[*names, AUTO], default=AUTO, metavar="LEARNER",
                        help=f"one of {', '.join(names)}, or {AUTO} (the default: the most accurate online learner "
                             "on --data)")
    _add_board_option(budget)
    budget.add_argument("--ram", type=byte_size, metavar="SIZE", help="RAM budget, e.g. 8KiB (default: the board's RAM)")
    budget.add_argument("--flash", type=byte_size, metavar="SIZE", help="flash budget (default: the board's flash)")
    budget.add_argument("--optimize", choices=OPTIMIZE, default="speed",
                        help="the encoding the model will be exported with (frozen models; default speed)")
    budget.add_argument("--features", type=FEATURES, metavar="D", help="features per row (or taken from --data)")
    budget.add_argument("--classes", type=CLASSES, metavar="C", help="number of classes (or taken from --data)")
    _add_learner_options(budget, "options of several learners (what is not given is the largest that fits)",
                         defaults=False)
    budget.add_argument("--json", action="store_true", help="print one JSON object")
    budget.add_argument("--html", metavar="FILE",
                        help="write a report with plots (needs matplotlib: the report extra; checked before any work)")
    stream = budget.add_argument_group("choosing by accuracy and time (online learners)")
    stream.add_argument("--data", metavar="DATA.csv",
                        help="a stream: its features and classes; an online learner's configuration is the one with "
                             "the best prequential accuracy on its rows among those that fit")
    _add_label_options(stream, required=False)
    stream.add_argument("--bins-rows", type=BINS_ROWS_RANGE, default=BINS_ROWS, metavar="N",
                        help=f"bin edges from the first N rows, as fit does (default {BINS_ROWS})")
    _add_search_options(stream)
    budget.add_argument("--bundle", metavar="BUNDLE_DIR",
                        help="an exported bundle of the planned model: build it for the board and show predicted "
                             "against measured sizes")
    budget.add_argument("--measured", metavar="COUNTS.json",
                        help="the JSON of simulate --instructions --json on the planned model's bundle: its counted "
                             "instructions (QEMU) or cycles (simavr) per call beside the predicted ones")
    budget.set_defaults(run=run_budget)

    build = commands.add_parser("build", help="cross-compile a bundle for a board and report sizes and stack")
    build.add_argument("bundle", metavar="BUNDLE_DIR")
    _add_board_option(build)
    build.add_argument("--json", action="store_true", help="print one JSON object")
    build.set_defaults(run=run_build)

    demo = commands.add_parser("demo", help="the main job: plan, learn, export, check parity on host and QEMU, report")
    demo.add_argument("--out", default="edgestream-demo", metavar="DIR")
    demo.add_argument("--n-samples", type=N_SAMPLES, default=6000, metavar="N", help="rows of the stream (default 6000)")
    demo.add_argument("--stream", choices=DEMO_STREAMS, default="sea", help="built-in drifting stream (default sea)")
    demo.add_argument("--learner", default=DEMO_LEARNER,
                      choices=[spec.name for spec in learners.REGISTRY.values() if spec.learning and spec.online],
                      help=f"a learner that keeps learning on the device (default {DEMO_LEARNER})")
    demo.add_argument("--board", default=DEFAULT_BOARD, help=f"default {DEFAULT_BOARD} (Cortex-M4F)")
    demo.add_argument("--ram", type=byte_size, default=8 * 1024, metavar="SIZE", help="RAM budget (default 8KiB)")
    demo.add_argument("--qemu-rows", type=QEMU_ROWS, default=500, metavar="N",
                      help="rows learned under QEMU (default 500)")
    demo.set_defaults(run=run_demo)

    cache = commands.add_parser("cache", help="where the cache of compiled code is and how big; 'clear' empties it")
    cache.add_argument("action", nargs="?", choices=("info", "clear"), default="info")
    cache.set_defaults(run=run_cache)
    return parser


def _add_learner_options(parser, title: str = "options of several learners", defaults: bool = True) -> None:
    """Every option of every learner, once, with its default for each learner that takes it (``defaults``): the
    options of one learner, or of the same few learners (three options or more), in a group of their own, the
    others in one group whose options name their learners."""
    declared = {}
    for spec in learners.REGISTRY.values():
        for option in spec.options:
            declared.setdefault(option.flag, (option, []))[1].append((spec, option.param))
    by_owners: dict[tuple, list] = {}
    for option, owners in declared.values():
        by_owners.setdefault(tuple(spec.name for spec, _ in owners), []).append((option, owners))
    shared = parser.add_argument_group(title)
    for names, options in by_owners.items():
        group = shared
        if len(names) == 1:
            group = parser.add_argument_group(f"{names[0]} options ({learners.get(names[0]).summary})")
        elif len(options) >= 3:
            group = parser.add_argument_group(f"{', '.join(names[:-1])} and {names[-1]} options")
        for option, owners in options:
            text = option.help + option_defaults(owners, defaults, named=group is shared)
            if option.type is bool:
                group.add_argument(option.flag, dest=option.dest, action=argparse.BooleanOptionalAction, help=text)
            else:
                group.add_argument(option.flag, dest=option.dest, type=option.type, choices=option.choices,
                                   metavar=option.metavar, help=text)


def option_defaults(owners: list, defaults: bool, named: bool) -> str:
    """The default of an option for each learner that takes it (``owners``: each learner and its parameter), as
    `` (default 8)`` or `` (default tree, forest 8; shrubs 4)``; ``named``: always with the learners (without
    ``defaults``: the learners only)."""
    if not defaults:
        return f" ({', '.join(spec.name for spec, _ in owners)})" if named else ""
    by_value: dict[str, list[str]] = {}
    for spec, param in owners:
        value = next(parameters[param].default for parameters in (inspect.signature(cls).parameters
                                                                  for cls in spec.estimators) if param in parameters)
        shown = "automatic" if value is None else ("on" if value else "off") if isinstance(value, bool) else value
        by_value.setdefault(str(shown), []).append(spec.name)
    if len(by_value) == 1 and not named:
        return f" (default {next(iter(by_value))})"
    return " (default " + "; ".join(f"{', '.join(names)} {value}" for value, names in by_value.items()) + ")"


def learner_params(args) -> dict:
    """The chosen learner's options that were given (its own defaults apply to the rest); an option of another
    learner is refused with the list of this one's, and any option with ``--learner auto``."""
    if args.learner == AUTO:
        given = sorted({o.shown for s in learners.REGISTRY.values() for o in s.options
                        if getattr(args, o.dest, None) is not None})
        if given:
            raise ValueError(f"{', '.join(given)} need(s) a --learner: {AUTO} searches every online learner's grid")
        return {}
    spec = learners.get(args.learner)
    mine = {option.shown for option in spec.options}
    for spec_ in learners.REGISTRY.values():
        for option in spec_.options:
            if option.shown not in mine and getattr(args, option.dest, None) is not None:
                raise ValueError(f"{option.shown} does not apply to --learner {spec.name}; its options are "
                                 f"{', '.join(sorted(mine))}")
    return {option.param: getattr(args, option.dest) for option in spec.options
            if getattr(args, option.dest) is not None}


def _add_search_options(group) -> None:
    group.add_argument("--rate", type=RATE, metavar="HZ",
                       help="online learners: samples per second the device must predict and learn (instructions of "
                            "the worst prediction and learn call predicted for the board's core, against its clock)")
    group.add_argument("--rate-mean", action="store_true",
                       help="with --rate: plan on the mean calls, not the worst (a device that buffers the samples "
                            "arriving during a long call)")
    group.add_argument("--search-rows", type=SEARCH_ROWS, metavar="N",
                       help="score the candidates on the first N rows (default: all)")
    group.add_argument("--no-race", dest="race", action="store_false",
                       help="score every candidate to the end (by default the race stops, as they learn the rows, "
                            "the candidates another learns clearly better: no recovery replay for them)")
    group.add_argument("--workers", type=WORKERS, metavar="N",
                       help="worker processes of the search (default: all cores)")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="run the search on a Dask cluster (needs edgestream[dask])")


def _add_label_options(parser, required: bool = True) -> None:
    parser.add_argument("--label", required=required, metavar="COL", help="label column: name or 0-based index")
    header = parser.add_mutually_exclusive_group()
    header.add_argument("--header", action="store_true",
                        help="the first row is column names (needed only when they are numbers and --label is an "
                             "index or a number; a --label name found in the first row makes it a header)")
    header.add_argument("--no-header", action="store_true", help="the first row is data, not column names")
    parser.add_argument("--delimiter", default=",", metavar="CHAR",
                        help="CSV cell separator (default ','; 'tab' or '\\t' for tabs); Parquet files are read "
                             "as such (pip install 'edgestream[parquet]')")


def load_data(args, path, with_cells: bool = False):
    """``(X, y, feature_names)`` of a CSV or Parquet data file given on the command line (``with_cells``: and
    ``where(row, feature)``, the name of a cell as the file counts it)."""
    delimiter = {"tab": "\t", "\\t": "\t"}.get(args.delimiter, args.delimiter)
    return load_table(path, args.label, no_header=args.no_header, delimiter=delimiter, header=args.header,
                      with_cells=with_cells)


def _add_board_option(parser) -> None:
    parser.add_argument("--board", required=True, help="a board name (see edgestream boards) or a board .toml file")


def byte_size(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def check_rate_mean(args) -> None:
    if args.rate_mean and args.rate is None:
        raise ValueError("--rate-mean plans a --rate on the mean calls: give --rate")


def run_fit(args) -> int:
    check_rate_mean(args)
    budgeted = args.ram is not None or args.flash is not None or args.rate is not None
    if args.label is None and args.task != ANOMALY:
        raise ValueError("fit needs --label COL (only a detector, --task anomaly, learns from unlabelled rows)")
    args.learner = args.learner or ("hst" if args.task == ANOMALY else AUTO if budgeted else "tree")
    if args.task is None and args.learner != AUTO and learners.get(args.learner).tasks == (ANOMALY,):
        args.task = ANOMALY  # a learner that only detects anomalies
    params = learner_params(args)
    X, y, columns, where = load_data(args, args.data, with_cells=True)
    missing_values = missing.check(args.learner, params, X, where, args.task or infer_task(y))
    board = load_board(args.board) if budgeted else None
    trained = train(args.learner, X, y, params, board, args.ram, args.flash, args.bins_rows,
                    progress=sys.stderr.isatty(), rate=args.rate, workers=args.workers, scheduler=args.scheduler,
                    search_rows=args.search_rows, rate_mean=args.rate_mean, classes=label_list(args.classes, y),
                    task=args.task, race=args.race)
    model = trained.model
    model.columns_ = columns  # the bundle header names the features in order
    spec = learners.of_model(model)
    save_model(model, args.output)
    metrics = training_metrics(model, X, y) if task_of(model) == REGRESSION else None
    if args.json:
        print(json.dumps({**fit_report(trained, args.output), **({"training": metrics} if metrics else {}),
                          **({"missing": missing_values} if missing_values else {})}))
        return 0
    if metrics is not None:
        print(regressor_text(trained, metrics, X, args.output))
    elif task_of(model) == ANOMALY:
        print(detector_text(trained, X, args.output))
    else:
        shape = f"{X.shape[1]} features, {len(model.classes_)} classes: {model.summary()}"
        if spec.online:
            edges_from = "all rows" if trained.bins_rows == len(X) else f"the first {trained.bins_rows} rows"
            fitted = "bin edges" if getattr(model, "bins_", None) is not None else "input scaling"
            print(f"learned {spec.name} on {len(X)} rows ({fitted} from {edges_from}), {shape}, prequential accuracy "
                  f"{trained.prequential.accuracy:.4f} -> {args.output}")
        else:
            accuracy = model.score(device_input(X, model.input_dtype), y)
            print(f"trained {spec.name} on {len(X)} rows, {shape}, training accuracy {accuracy:.4f} -> {args.output}")
    if missing_values:
        print(missing_values)
    if not spec.learning:
        print(frozen_note(spec, task_of(model)))
    if trained.budget is not None:
        print(f"memory on {trained.budget.board} ({trained.budget.basis}): {trained.budget.figures()}")
    if trained.search is not None:
        print(trained.search.to_text())
    return 0


def frozen_note(spec, task: str) -> str:
    """What a model that does not learn on the device is, and how to make one that does."""
    online = ", ".join(name for name in learners.for_task(task) if learners.get(name, task).learning)
    return (f"a frozen model: {spec.name} predicts on the device but does not learn there; for a model that keeps "
            f"learning give a RAM budget (--ram 8KiB: the most accurate learning model that fits) or --learner one "
            f"of {online}")


def regressor_text(trained, metrics: dict, X, output) -> str:
    """``fit``'s line for a regressor: its prequential metrics (online) or those on its training rows."""
    model = trained.model
    name = learners.of_model(model).name
    saturated = f"({metrics['saturated']} targets saturated) -> {output}"
    if trained.prequential is not None:
        return (f"learned a {name} regressor on {len(X)} rows (input scaling and target scale from the first "
                f"{trained.bins_rows} rows), {X.shape[1]} features: {model.summary()}; prequential "
                f"{metrics_text(trained.prequential.metrics)} {saturated}")
    return (f"trained a {name} regressor on {len(X)} rows, {X.shape[1]} features: {model.summary()}; "
            f"{metrics_text(metrics)} on the training rows {saturated}")


def detector_text(trained, X, output) -> str:
    """``fit``'s line for a detector: what it learned, its threshold, and with labels its prequential scores."""
    model, result = trained.model, trained.prequential
    scored = (f", prequential {anomaly_text(result.metrics)}" if "roc_auc" in result.metrics
              else f", {result.metrics['flagged']} rows flagged while learning")
    return (f"learned {learners.of_model(model).name} on {len(X)} rows (work range from the first "
            f"{trained.bins_rows} rows), {X.shape[1]} features: {model.summary()}; threshold {model.threshold} "
            f"(Q15, for {model.false_alarms:g} false alarms){scored} -> {output}")


def anomaly_text(metrics: dict) -> str:
    def shown(value, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    return (f"ROC-AUC {shown(metrics['roc_auc'], 4)}, precision {shown(metrics['precision'], 4)}, "
            f"{shown(metrics['false_alarms_per_1000'], 2)} false alarms per 1,000 normal rows")


def label_list(text: str | None, y: np.ndarray):
    """The labels of ``--classes`` in the labels' type (None without the option)."""
    if text is None:
        return None
    tokens = [token.strip() for token in text.split(",") if token.strip()]
    try:
        return np.asarray(tokens).astype(y.dtype)
    except ValueError:
        raise ValueError(f"--classes {text!r}: the labels of the data are {y.dtype.name} values "
                         f"(e.g. {y[0]!r}), not {tokens!r}") from None


def training_metrics(model, X, y) -> dict:
    """A regressor's metrics on its training rows, with the rows its target scale saturated."""
    return {**regression_metrics(y.astype(np.float64), model.predict(device_input(X, model.input_dtype))),
            "saturated": model.saturated_}


def metrics_text(metrics: dict) -> str:
    return f"MAE {metrics['mae']:.4g}, RMSE {metrics['rmse']:.4g}, R² {metrics['r2']:.4f}"


def fit_report(trained, output) -> dict:
    """``fit --json``: the learner, its configuration, the prequential run, the budget and the search; a
    regressor's target scale and training metrics instead of classes."""
    model = trained.model
    report = {"learner": learners.of_model(model).name, "output": str(output), "params": model.get_params(),
              "task": task_of(model)}
    if task_of(model) == REGRESSION:
        report["target"] = output_context(model)["target"]
    elif task_of(model) == ANOMALY:
        report["threshold"] = model.threshold
    else:
        report["classes"] = np.asarray(model.classes_).tolist()
    if trained.prequential is not None:
        report["prequential"] = {k: v for k, v in trained.prequential.to_json().items() if k != "correct"}
    if trained.budget is not None:
        report["budget"] = trained.budget.to_json()
    if trained.search is not None:
        report["search"] = trained.search.to_json()
    return report


def run_update(args) -> int:
    if (args.add is None) != (args.label is None):
        raise ValueError("--add and --label go together")
    if args.add is None and args.delete is None:
        raise ValueError("nothing to do: give --add DATA.csv --label COL and/or --delete ROWS")
    X, y = load_data(args, args.add)[:2] if args.add else (None, None)
    rows = parse_row_numbers(args.delete) if args.delete is not None else None
    model = read_model(args.model)
    done = update(model, X, y, rows)
    save_model(model, args.model)
    added = f"added {len(done.added)} rows (row numbers {done.added[0]}..{done.added[-1]})" if len(done.added) else ""
    deleted = f"deleted {done.deleted} rows" if done.deleted else ""
    if done.saturated:
        low, high = model.target_.decode([-CODE_MAX, CODE_MAX])
        added += f" ({done.saturated} targets outside the model's range {low:.6g} .. {high:.6g}, saturated)"
    print(f"{', '.join(part for part in (deleted, added) if part)}, {done.retrained_nodes} nodes retrained in "
          f"{done.seconds:.3f} s; {model.summary()} -> {args.model}")
    return 0


def run_import(args) -> int:
    from .importers import convert, load_source

    model = convert(load_source(args.source, args.trust_pickle))
    if args.false_alarms is not None or args.calibrate is not None:
        calibrate_imported(args, model)
    save_model(model, args.output)
    output = (f"a regressor within {model.rounding_bound_:.3g} of its source" if task_of(model) == REGRESSION
              else f"a detector within {model.rounding_bound_:.3g} Q15 units of -score_samples, threshold "
                   f"{model.threshold_}" if task_of(model) == ANOMALY else f"{len(model.classes_)} classes")
    print(f"imported {model.n_features_} features, {output}: {model.summary()} -> {args.output}")
    return 0


def calibrate_imported(args, model) -> None:
    """An imported detector's threshold for ``--false-alarms`` from its scores of the ``--calibrate`` rows."""
    if task_of(model) != ANOMALY:
        raise ValueError(f"--false-alarms and --calibrate set a detector's threshold; a {model.estimator} is not a "
                         "detector")
    if args.false_alarms is None or args.calibrate is None:
        raise ValueError("--false-alarms RATE and --calibrate DATA.csv go together: the threshold that flags at most "
                         "RATE of the normal rows of DATA.csv")
    check_false_alarms(args.false_alarms)
    X, _, _ = load_data(args, args.calibrate)
    model.calibrate(model.score_samples(X), args.false_alarms)


def read_model(path):
    """A model file given on the command line; a bundle given for one gets how to use it."""
    if (Path(path) / MANIFEST).is_file():
        raise ValueError(f"{path} is a C bundle, not a model file: its model file is {Path(path) / MODEL_COPY}; to "
                         f"run the bundle's C code on a data file: edgestream simulate {path} DATA.csv --label COL")
    return load_model(path)


def run_predict(args) -> int:
    X, _, _, where = load_data(args, args.data, with_cells=True)
    model = read_model(args.model)
    missing.check_model(model, X, where)
    lines = predictions(model, X, args.proba)
    text = "\n".join(lines) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def run_evaluate(args) -> int:
    X, y, _, where = load_data(args, args.data, with_cells=True)
    model = read_model(args.model)
    missing.check_model(model, X, where)
    result = evaluate_online(model, X, y, args.window, progress=sys.stderr.isatty())
    report = {key: value for key, value in result.to_json().items() if key != "correct"}
    if task_of(model) == REGRESSION:
        report["saturated"] = model.target_.encode(y)[1]  # these rows' targets outside the model's range
    if args.json:
        print(json.dumps({**report, "model": str(args.model)}))
        return 0
    if task_of(model) == ANOMALY:
        print(f"n {result.n}, {anomaly_text(result.metrics)}, samples_per_second {result.samples_per_second:,.0f} "
              f"(score and learn calls of {type(model).__name__})")
        return 0
    if result.metrics is not None:
        print(f"n {result.n}, {metrics_text(result.metrics)}, {report['saturated']} targets saturated, "
              f"samples_per_second {result.samples_per_second:,.0f} (predict and learn calls of {type(model).__name__})")
        print(f"RMSE curve ({result.window} rows per point): " + " ".join(f"{a:.4g}" for a in result.curve))
        return 0
    print(f"n {result.n}, accuracy {result.accuracy:.4f}, samples_per_second {result.samples_per_second:,.0f} "
          f"(predict and learn calls of {type(model).__name__})")
    print(f"accuracy curve ({result.window} rows per point): " + " ".join(f"{a:.3f}" for a in result.curve))
    return 0


def run_export(args) -> int:
    from .export import export_bundle

    model = read_model(args.model)
    out = export_bundle(model, args.output, name=args.name, optimize=args.optimize)
    print(f"exported {type(model).__name__} as bundle {args.name!r} -> {out}")
    return 0


def run_image(args) -> int:
    from . import checkpoint

    if args.source is None and args.to is None:
        raise ValueError("nothing to do: give --from IMAGE -o MODEL2 and/or --to IMAGE")
    if (args.source is None) != (args.output is None):
        raise ValueError("--from IMAGE and -o MODEL2 go together")
    model = read_model(args.model)
    if args.source is not None:
        model, data = checkpoint.load_image(model, args.source)
        save_model(model, args.output)
        print(f"{args.source}: image {checkpoint.sequence_of(data)} of {type(model).__name__}, "
              f"{len(data)} bytes -> {args.output}")
    if args.to is not None:
        data = checkpoint.save_image(model, args.to, args.sequence)
        print(f"state image {args.sequence} of {len(data)} bytes (model hash {checkpoint.model_hash(model):#010x}) "
              f"-> {args.to}")
    return 0


def run_simulate(args) -> int:
    X, y, _, where = load_data(args, args.data, with_cells=True)  # data errors before compiling
    target = parity.target(args.bundle, args.target, args.board, args.timeout, args.learn, X.shape[1],
                           args.instructions)
    missing.check_model(target.model, X, where)
    X = device_input(X, target.model.input_dtype)
    scores = compare_learning(target, X, y, args.window) if args.learn else compare(target, X, y)
    report = {**scores, "bundle": str(args.bundle), **target.report_fields}
    if args.instructions:
        report["instructions"] = targets.instruction_summary(target.counts)
        report["unit"] = targets.count_unit(target.board)
    if args.json:
        print(json.dumps(report))
        return 0
    if "r2" in report:
        print(f"{report['n']} rows, {metrics_text(report)}, {report['saturated']} targets saturated, "
              f"{report['mismatches']} raw output mismatches between C and Python ({target.where})")
    elif "flag_mismatches" in report:
        scored = anomaly_text(report) if "roc_auc" in report else f"{report['flagged']} rows flagged"
        print(f"{report['n']} rows{' test-then-train' if args.learn else ''}, {scored}, "
              f"{report['mismatches']} score and {report['flag_mismatches']} flag mismatches between C and Python "
              f"({target.where})")
    elif args.learn:
        print(f"{report['n']} rows test-then-train, accuracy {report['accuracy']:.4f} in C and "
              f"{report['python_accuracy']:.4f} in Python, {report['mismatches']} prediction mismatches, "
              f"model state {report['state_bytes']:,} bytes ({target.where})")
    else:
        print(f"{report['n']} rows, accuracy {report['accuracy']:.4f}, {report['mismatches']} class mismatches "
              f"and {report['proba_mismatches']} probability mismatches between C and Python ({target.where})")
    if args.instructions:
        print(instructions_text(report["instructions"], report["unit"]))
    return 0


COUNTED = {"instructions": "instructions per call, counted by the emulator",
           "cycles": "CPU cycles per call, measured by Timer1 under simavr"}


def instructions_text(summary: dict, unit: str) -> str:
    """One line: mean and worst count (executed instructions or CPU cycles) of every API call counted."""
    return COUNTED[unit] + ": " + "; ".join(
        f"{call} mean {figures['mean']:,.1f}, worst {figures['worst']:,}" for call, figures in summary.items())


def run_cache(args) -> int:
    from . import cache

    root = cache.cache_dir()
    if args.action == "clear":
        print(f"cache {root}: removed {cache.clear(root):,} bytes")
    else:
        print(f"cache {root}: {len(cache.entries(root))} entries, {cache.size(root):,} bytes "
              f"(limit {cache.limit():,}; set EDGESTREAM_CACHE_LIMIT to change it)")
    return 0


def run_stream(args) -> int:
    X, y = make_stream(args.name, args.n_samples, seed=args.seed)
    write_csv(args.output, X, y)
    print(f"{args.name}: {STREAMS[args.name].__doc__.splitlines()[0].rstrip('.')}; {len(X)} rows, {X.shape[1]} "
          f"features x0..x{X.shape[1] - 1}, label y ({len(np.unique(y))} classes) -> {args.output}")
    return 0


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



def human_bytes(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"



def run_budget(args) -> int:
    check_rate_mean(args)
    if args.html:
        check_dependencies()  # before any work
    board = load_board(args.board)
    detector_only = args.learner != AUTO and learners.get(args.learner).tasks == (ANOMALY,)
    if (args.data is None) != (args.label is None) and not (detector_only and args.data):
        raise ValueError("--data and --label go together (only a detector ranks its candidates without labels)")
    if args.bundle:
        read_manifest(args.bundle)  # a bad bundle before any work
    counted = measured_counts(args.measured, board) if args.measured else None
    X, y = load_data(args, args.data)[:2] if args.data else (None, None)
    task = ANOMALY if detector_only else infer_task(y) if y is not None else CLASSIFICATION
    n_features, n_classes = budget_shape(args, X, y, task)
    params = learner_params(args)
    found = None
    if args.learner == AUTO and X is None:
        raise ValueError(f"--learner {AUTO} chooses by accuracy on data: give --data and --label, or a --learner")
    if X is not None and (args.learner == AUTO or learners.get(args.learner).online):
        found = search(args.learner, board, X, y, args.ram, args.flash, args.rate, params, args.optimize,
                       args.bins_rows, args.workers, args.scheduler, sys.stderr.isatty(), args.search_rows,
                       rate_mean=args.rate_mean, task=task, race=args.race)
        budget = found.budget
    elif args.rate is not None:
        raise ValueError("--rate chooses among configurations by their accuracy on data: give an online learner and "
                         "--data with --label")
    else:
        budget = plan(args.learner, board, n_features, n_classes, ram=args.ram, flash=args.flash,
                      optimize=args.optimize, task=task, **params)
    sizes = None
    if args.bundle:
        model, optimize = bundle_model(budget, args.bundle)
        sizes = compare_sizes(of_model(model, board, budget.ram_budget, budget.flash_budget, optimize),
                              targets.build(args.bundle, board))
        budget = budget.named(read_manifest(args.bundle)["name"])
    curve = found.curve() if found else {}
    detector = detector_figures(args, found, X, y) if task == ANOMALY and found else None
    if args.html:
        html_report(budget, args.html, curve, sizes, provenance(args.data, len(X) if X is not None else None, board),
                    search=found, counted=counted, detector=detector)
    if args.json:
        print(json.dumps({**budget.to_json(), **({"search": found.to_json(), "curve": curve} if found else {}),
                          **({"measured": sizes} if sizes else {}), **({"counted": counted} if counted else {}),
                          **({"detector": detector} if detector else {})}))
        return 0
    print(budget.to_text())
    if detector:
        print(f"chosen detector trained on the rows: threshold {detector['threshold']} (Q15, for "
              f"{detector['false_alarms']:g} false alarms), {detector['flagged']} rows flagged"
              + (f", {anomaly_text(detector)}" if "roc_auc" in detector else ""))
    if found:
        print(found.to_text())
        if curve:
            print("score of the choice at each RAM budget: "
                  + ", ".join(f"{ram // 1024} KiB {score:.4f}" for ram, score in curve.items()))
    if sizes:
        print(sizes_text(sizes))
    if counted:
        print(counted_text(budget, counted))
    if args.html:
        print(f"report: {args.html}")
    return 0


def measured_counts(path, board) -> dict:
    """The counts per call of a ``simulate --instructions --json`` run on ``board``'s emulator."""
    try:
        run = json.loads(Path(path).read_text())
        counts, unit = run["instructions"], run["unit"]
    except OSError as error:
        raise ValueError(f"--measured {path}: cannot read it: {error.strerror or error}") from None
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"--measured {path}: not the JSON of simulate --instructions --json (no instructions "
                         f"counted)") from None
    if run.get("board") not in (None, board.name):
        raise ValueError(f"--measured {path}: counted on {run['board']}, not on {board.name}")
    return {"unit": unit, "rows": run.get("n"), "calls": counts}


def counted_text(budget, counted: dict) -> str:
    """Predicted against counted per call: mean and worst."""
    lines = [f"predicted instructions vs {counted['unit']} counted by the emulator ({counted['rows']} rows):"]
    for call, figures in counted["calls"].items():
        cost = budget.time.cost if budget.time else None
        predicted = None if cost is None else cost.learn if call == "learn" else cost.predict
        shown = "no cost model" if predicted is None else f"{predicted.mean:,.0f} / {predicted.worst:,.0f}"
        lines.append(f"  {call:<14} predicted {shown:>17}  counted {figures['mean']:,.0f} / {figures['worst']:,}")
    return "\n".join(lines)


def detector_figures(args, found, X, y) -> dict:
    """The chosen detector trained on the rows as ``fit`` trains it: its calibrated threshold and prequential
    figures (:func:`edgestream.task.anomaly_metrics` with labels, else the rows flagged)."""
    trained = train(found.learner, X, y, found.budget.params, bins_rows=args.bins_rows, task=ANOMALY)
    return {"threshold": trained.model.threshold, "false_alarms": trained.model.false_alarms,
            **trained.prequential.metrics}


def budget_shape(args, X, y, task: str) -> tuple[int, int]:
    """Features and classes: as given, or the stream's (which must agree with what is given; a regression
    target has one output)."""
    if task == ANOMALY and args.classes is not None:
        raise ValueError(f"--classes {args.classes}: a detector ({args.learner}) scores one number and has no classes")
    given = {"features": args.features, "classes": 1 if task == ANOMALY else args.classes}  # one output
    if X is None:
        missing = [f"--{key}" for key, value in given.items() if value is None]
        if missing:
            raise ValueError(f"{' and '.join(missing)} needed (or --data and --label to take them from a stream)")
        return given["features"], given["classes"]
    found = {"features": X.shape[1], "classes": len(np.unique(y)) if task == CLASSIFICATION else 1}
    for key, value in given.items():
        if value is not None and value != found[key]:
            raise ValueError(f"--{key} {value} disagrees with {args.data}, which has {found[key]} {key}")
    return found["features"], found["classes"]



def bundle_model(budget, bundle_dir):
    """The model of a bundle and its encoding option, after checking that it is the planned model (so the sizes
    can be compared)."""
    manifest = read_manifest(bundle_dir)
    model = load_bundle_model(manifest)
    held = {"learner": manifest["learner"], "features": manifest["n_features"], "classes": manifest["n_classes"],
            **{key: value for key, value in model.get_params().items() if key in budget.config}}
    differ = [f"{key} {value} (planned {budget.config.get(key, budget.learner)})" for key, value in held.items()
              if value != budget.config.get(key, budget.learner)]
    if differ:
        raise ValueError(f"bundle {bundle_dir} does not hold the planned model: it has {', '.join(differ)}")
    return model, manifest.get("optimize", "speed")


def run_build(args) -> int:
    report = targets.build(args.bundle, args.board)
    print(report.to_json() if args.json else build_text(report))
    return 0


def build_text(r) -> str:
    state_name = f"{r.bundle}_memory"
    tables = ", ".join(f"{name} {size.bytes:,}" for name, size in r.objects.items() if name != state_name)
    flash = f"of {r.flash_bytes:,}" if r.flash_bytes else "(no flash limit)"
    stack = r.stack_max.get("main", 0)
    return "\n".join([
        f"{r.bundle} for {r.board}: {r.elf}",
        f"  text {r.text:,}, data {r.data:,}, bss {r.bss:,} bytes ({r.stack_reserved:,} of bss reserved for the stack)",
        f"  firmware, the whole linked program with its harness ({MEMORY_TERMS}): flash {r.flash_used:,} {flash} = "
        f"text {r.text:,} + data {r.data:,}; RAM at peak {r.ram_peak:,} of {r.ram_bytes:,} = data {r.data:,} + bss "
        f"{r.bss - r.stack_reserved:,} + stack {stack:,} (the deepest chain from main, in place of the reservation)",
        f"  the model in it: code {r.code_bytes:,} bytes; tables {r.tables_bytes:,} bytes: {tables}"
        + (f" ({r.tables_in_ram:,} of them copied to RAM)" if r.tables_in_ram else ""),
        f"  model state {r.state_bytes:,} bytes ({state_name})" if r.state_bytes is not None
        else "  model state: none (a frozen model)",
        "  stack of each API function (deepest call chain): "
        + ", ".join(f"{function} {size:,}" for function, size in r.stack_max.items()),
        "  fits" if r.fits else "  DOES NOT FIT"])



def run_demo(args) -> int:
    """Plan, learn, export, check parity on the host and under QEMU, and write the memory report."""
    from .export import export_bundle

    check_dependencies()  # before any work: the demo ends with the memory report
    board = load_board(args.board)
    X, y = make_stream(args.stream, args.n_samples, seed=0)
    budget = plan(args.learner, board, X.shape[1], len(np.unique(y)), ram=args.ram)
    learner = start_online(learners.get(args.learner).make(**budget.params), X, np.unique(y))
    print(f"demo: {STREAMS[args.stream].__doc__.splitlines()[0].rstrip('.')}; {len(X)} rows, {X.shape[1]} "
          f"features; {args.learner} for {board.name} ({board.cpu}, FPU {'yes' if board.fpu else 'no'}) "
          f"in {args.ram:,} bytes of RAM")
    print(f"plan: {learner.summary()}; {budget.figures()} ({budget.basis})")
    learned = prequential(learner, X, y, DEMO_WINDOW, progress=True, desc="test-then-train")
    print(f"test-then-train in Python: accuracy {learned.accuracy:.4f} over {learned.n} rows "
          f"(bin edges from the first {min(BINS_ROWS, len(X))}), {learned.samples_per_second:,.0f} rows/s")
    out = Path(args.out).resolve()
    bundle_dir = export_bundle(learner, out / "bundle", name="demo")
    host = compare_learning(parity.target(bundle_dir), X, y, DEMO_WINDOW)
    print(f"host C parity: {host['n']} rows test-then-train from the exported state, {host['mismatches']} "
          f"mismatches (accuracy {host['accuracy']:.4f} in C, {host['python_accuracy']:.4f} in Python) -> {bundle_dir}")
    mismatches, sizes = host["mismatches"], None
    rows = min(args.qemu_rows, len(X))
    exported = of_model(learner, board, budget.ram_budget, budget.flash_budget)
    try:
        sizes = compare_sizes(exported, targets.build(bundle_dir, board))
        emulated_target = parity.target(bundle_dir, "qemu", board, timeout=60)
        emulated = compare_learning(emulated_target, X[:rows], y[:rows], DEMO_WINDOW)
        mismatches += emulated["mismatches"]
        print(f"QEMU parity ({emulated_target.emulator}): the first {rows} rows test-then-train from the exported "
              f"state, {emulated['mismatches']} mismatches (accuracy {emulated['accuracy']:.4f} on the emulated "
              f"{board.cpu}, {emulated['python_accuracy']:.4f} in Python)")
    except ToolchainMissing as missing:
        print(f"skipped {'the QEMU run' if sizes else 'the cross build and the QEMU run'}: {missing}")
    if sizes:
        print(sizes_text(sizes))
    report = html_report(exported.named("demo"), out / "memory-report.html", sizes=sizes,
                         origin=provenance(board=board))
    print(f"memory report: {report}")
    return EXIT_MISMATCH if mismatches else 0


EXPECTED = (ValueError, OSError, ImportError, RuntimeError)  # bad input, I/O, missing packages, tools that failed


def _message(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    if not isinstance(error, EXPECTED):
        return (f"unexpected {type(error).__name__}: {error} (an edgestream bug; run with --debug or "
                f"EDGESTREAM_DEBUG=1 for the traceback, and please report it)")
    return str(error) or type(error).__name__



if __name__ == "__main__":
    sys.exit(main())
