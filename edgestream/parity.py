"""Run a bundle's C code next to its Python model and compare them: on the host (cffi) or under a board's
emulator (QEMU or simavr), for frozen models (every class and Q15 probability, or a regressor's int32 raw output)
and for learning ones (test-then-train from the exported state, both sides learning every row).

A *target* is where the C runs: :class:`HostTarget` (a bundle compiled for this machine) or
:class:`EmulatedTarget` (cross-compiled for a board, all rows in one emulator run). :func:`compare` and
:func:`compare_learning` return the scores the CLI prints; :func:`compare_sizes` holds a budget against the sizes
the board's linker produced.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import numpy as np

from . import targets
from .boards import load_board
from .evaluate import compare_predictions, prequential
from .export import load_bundle_model, read_manifest
from .report import COMPARED
from .task import ANOMALY, REGRESSION, anomaly_metrics, check_target, regression_metrics, split_output, task_of


class HostTarget:
    """A bundle compiled for this machine through cffi, driven row by row."""

    def __init__(self, bundle):
        self.bundle = bundle
        self.model = bundle.model
        self.report_fields = {"target": "host"}
        self.where = str(bundle.directory)

    @property
    def directory(self) -> Path:
        return self.bundle.directory

    @property
    def learning(self) -> bool:
        return self.bundle.learning

    def python_copy(self):
        """The exported Python model, fresh: the bundle's own stays untouched."""
        return load_bundle_model(self.bundle.manifest)

    def outputs(self, X) -> tuple[np.ndarray, np.ndarray]:
        return self.bundle.predict_encoded(X), self.bundle.predict_proba_q15(X)

    def raw_outputs(self, X) -> np.ndarray:
        return self.bundle.predict_raw(X)

    def test_then_train_raw(self, X, y) -> np.ndarray:
        return self.bundle.test_then_train_raw(X, y)

    def test_then_train(self, X, y, window: int):
        return prequential(self.bundle, X, y, window, sys.stderr.isatty(), desc="C bundle")

    def state_bytes(self) -> int:
        return self.bundle.state_size()


class EmulatedTarget:
    """A bundle cross-compiled for a board and run under its emulator, all rows in one run; with ``instructions``
    every API call is counted (``counts`` after a run, in ``targets.count_unit(board)``)."""

    def __init__(self, directory, board, timeout: float = 60, instructions: bool = False):
        self.board = load_board(board)
        targets.check_runnable(self.board)
        self.instructions = instructions
        self.counts: dict[str, np.ndarray] | None = None
        self.timeout = targets.TIMEOUT.check(timeout)
        self.directory = Path(directory).resolve()
        self.manifest = read_manifest(self.directory)
        self.model = self.python_copy()
        self.learning = self.manifest["learning"]
        self.report_fields = {"target": "qemu", "board": self.board.name}
        self.emulator = emulator_name(self.board)
        self.where = f"{directory} on {self.board.name} under {self.emulator}"

    def python_copy(self):
        return load_bundle_model(self.manifest)

    def outputs(self, X) -> tuple[np.ndarray, np.ndarray]:
        result = self._run(X)
        return result.classes, result.proba

    def test_then_train(self, X, y, window: int):
        result = self._run(X, y, learn=True)
        return prequential(Replay(self.model.classes_[result.classes]), X, y, window)

    def raw_outputs(self, X) -> np.ndarray:
        return self._run(X).raw

    def test_then_train_raw(self, X, y) -> np.ndarray:
        return self._run(X, y, learn=True).raw

    def _run(self, X, y=None, learn: bool = False) -> targets.RunResult:
        result = targets.run(self.directory, self.board, X, y, learn=learn, timeout=self.timeout,
                             instructions=self.instructions)
        self.counts = result.instructions
        return result

    def state_bytes(self) -> int:
        """Size of the state object in the board's ELF."""
        return targets.build(self.directory, self.board).state_bytes


def target(bundle_dir, where: str = "host", board=None, timeout: float = 60, learn: bool = False,
           n_features: int | None = None, instructions: bool = False):
    """The target of a bundle: ``host`` (cffi) or ``qemu`` (the board's emulator, counting instructions, or CPU
    cycles on AVR, with ``instructions``). ``learn`` (test-then-train) and ``n_features`` (of the rows to come) are
    checked against the bundle before anything is compiled."""
    if where == "host" and board is not None:
        raise ValueError("--board applies to --target qemu only")
    if where == "host" and instructions:
        raise ValueError("--instructions counts what an emulator executes: give --target qemu and a --board")
    if where != "host" and board is None:
        raise ValueError("--target qemu needs --board (see edgestream boards)")
    manifest = read_manifest(bundle_dir)
    if learn and not manifest["learning"]:
        raise ValueError(f"--learn needs a learning bundle; {bundle_dir} holds a frozen {manifest['learner']} model")
    if n_features is not None and n_features != manifest["n_features"]:
        raise ValueError(f"the data has {n_features} features, bundle {bundle_dir} takes {manifest['n_features']}")
    if where == "host":
        from .simulate import load_bundle

        return HostTarget(load_bundle(Path(bundle_dir).resolve()))
    return EmulatedTarget(bundle_dir, board, timeout, instructions)


class Replay:
    """Predictions made elsewhere (in one emulator run), replayed row by row for ``prequential`` to score."""

    def __init__(self, predictions):
        self._predictions = iter(predictions)

    def predict_one(self, x):
        return next(self._predictions)

    def learn_one(self, x, y) -> None:
        pass


def emulator_name(board) -> str:
    """``qemu-system-arm mps2-an386``, ``qemu-aarch64``, or empty for a board without one."""
    emulator = board.emulator
    return " ".join(filter(None, [emulator.command, emulator.machine])) if emulator else ""


def compare(target, X, y) -> dict:
    """Accuracy of the C predictions against ``y`` and their disagreements with the Python model; for a
    regressor, its metrics and the rows whose raw output differs (:func:`compare_regression`)."""
    model = target.model
    if task_of(model) == REGRESSION:
        return compare_regression(target, X, y)
    if task_of(model) == ANOMALY:
        return compare_detector(target, X, y, model.predict_raw(X), np.asarray(target.raw_outputs(X)))
    expected = model.predict_encoded(X)  # the Python model checks the feature count first
    predicted, proba = (np.asarray(values) for values in target.outputs(X))
    proba_differs = (proba != model.predict_proba_q15(X)).any(axis=1)
    return {"n": len(X), "accuracy": float(np.mean(predicted == encode_known(model.classes_, y))),
            "mismatches": int((predicted != expected).sum()), "proba_mismatches": int(proba_differs.sum())}


def compare_regression(target, X, y) -> dict:
    """A regressor's MAE, RMSE and R² of the C predictions against ``y`` (decoded from the C's raw outputs),
    ``saturated``: the rows whose target is outside the model's range, and ``mismatches``: the rows whose raw
    output differs between C and Python."""
    model = target.model
    y = check_target(y, len(X))  # before an emulator runs
    expected = model.predict_raw(X)  # the Python model checks the feature count first
    raw = np.asarray(target.raw_outputs(X))
    values = model.target_.decode(raw, model.output_divisor)
    return {"n": len(X), **regression_metrics(y, values), "saturated": model.target_.encode(y)[1],
            "mismatches": int((raw != expected).sum())}


def compare_learning(target, X, y, window: int) -> dict:
    """Test-then-train on the bundle's C code and on its Python model, both from the exported state."""
    if not target.learning:
        raise ValueError(f"--learn needs a learning bundle; {target.directory} holds a frozen "
                         f"{type(target.model).__name__}")
    if task_of(target.model) == REGRESSION:
        return compare_learning_regression(target, X, y)
    if task_of(target.model) == ANOMALY:
        outputs = target.test_then_train_raw(X, None)
        return {**compare_detector(target, X, y, target.python_copy().test_then_train(X), outputs),
                "state_bytes": target.state_bytes()}
    python = target.python_copy()
    device = target.test_then_train(X, y, window)
    host = prequential(python, X, y, window, sys.stderr.isatty(), desc="Python")
    return {"n": device.n, "accuracy": device.accuracy, "python_accuracy": host.accuracy,
            "mismatches": compare_predictions(device, host), "window": device.window, "curve": device.curve,
            "state_bytes": target.state_bytes()}


def compare_learning_regression(target, X, y) -> dict:
    """Test-then-train of a learning regressor on the bundle's C code and on its Python model, both from the
    exported state: the metrics of the C's values, Python's R², ``saturated``: the rows whose target is outside the
    model's range (learned saturated), and ``mismatches``, the rows whose raw output differs between C and
    Python."""
    y = check_target(y, len(X))
    python = target.python_copy()
    raw = target.test_then_train_raw(X, y)
    expected = python.test_then_train(X, y)
    decode = partial(python.target_.decode, divisor=python.output_divisor)
    return {"n": len(X), **regression_metrics(y, decode(raw)), "python_r2": regression_metrics(y, decode(expected))["r2"],
            "saturated": python.target_.encode(y)[1], "mismatches": int((raw != expected).sum()),
            "state_bytes": target.state_bytes()}


def compare_detector(target, X, y, expected: np.ndarray, outputs: np.ndarray) -> dict:
    """A detector's outputs from C against Python's: ``mismatches`` counts the rows whose score differs,
    ``flag_mismatches`` those whose flag does; with 0/1 labels (``y`` not None) the C outputs' anomaly metrics."""
    scores, flags = split_output(outputs)
    python_scores, python_flags = split_output(expected)
    metrics = anomaly_metrics(y, outputs) if y is not None else {"flagged": int(flags.sum()), "rows": len(X)}
    return {"n": len(X), **metrics, "mismatches": int((scores != python_scores).sum()),
            "flag_mismatches": int((flags != python_flags).sum())}


def encode_known(classes, y) -> np.ndarray:
    """Class index of every label; -1 (never predicted) for labels the model does not know."""
    index = {label: i for i, label in enumerate(np.asarray(classes).tolist())}
    return np.array([index.get(label, -1) for label in np.asarray(y).tolist()], dtype=np.int64)


def compare_sizes(budget, build) -> dict:
    """Predicted (the budget) against measured (the ELF) bytes of the model state, its constant objects (in RAM:
    on AVR the state's config and pointer struct; in flash: all of them), the state's initial image and the
    code, and the stack of the deepest API call (the harness's main left out)."""
    def group(items, name):
        return sum(item.bytes for item in items if item.group == name)

    predicted = {"state_ram": budget.state_bytes, "tables_ram": group(budget.ram, "tables"),
                 "tables_flash": group(budget.flash, "tables"),
                 "image_flash": group(budget.flash, "state image"), "code_flash": group(budget.flash, "code"),
                 "stack": group(budget.ram, "stack")}
    measured = {"state_ram": build.state_bytes or 0, "tables_ram": build.tables_in_ram,
                "tables_flash": build.tables_bytes,
                "image_flash": build.state_image_bytes, "code_flash": build.code_bytes,
                "stack": max((size for function, size in build.stack_max.items() if function != "main"), default=0)}
    return {"elf": build.elf, "board": build.board,
            **{key: {"predicted": predicted[key], "measured": measured[key]} for key in COMPARED}}


def sizes_text(sizes: dict) -> str:
    lines = [f"predicted vs measured (the {sizes['board']} build):",
             f"  {'bytes':<18}{'predicted':>10}{'measured':>10}"]
    lines += [f"  {label:<18}{sizes[key]['predicted']:>10,}{sizes[key]['measured']:>10,}"
              for key, label in COMPARED.items()]
    return "\n".join(lines)
