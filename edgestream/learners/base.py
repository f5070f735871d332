"""What a learner declares to the rest of edgestream: its options, what runs on the device, how it grows.

Every learner module ends with one :class:`LearnerSpec`; :mod:`edgestream.learners` lists them in one table.
The CLI, model files, export, simulation, cross builds and the budget manager read only that table, so adding a
learner is one Python module, one ``csrc/es_<name>.c/.h`` pair, one template in ``codegen/`` and one entry.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils import Tags, TargetTags, TransformerTags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets

from ..binning import BinMapper
from ..engine import StateEngine
from ..ranges import Range
from ..state import StateSpec
from ..task import ANOMALY, CLASSIFICATION, REGRESSION, TargetScale, check_target, check_task, split_output
from ..tree import MAX_CLASSES, Q15_ONE, check_features
from .skbase import CheckedInput, CheckedTarget
from .stream import StreamLearner


def _sorted_lookup(classes: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each label's index in ``classes`` (the last of equal ones, as a dict of them holds) and whether it is one of
    them, by a binary search over the labels of a stream (thousands a call); None unless both are numbers of one
    kind or text of one kind, looked up one by one."""
    kind = classes.dtype.kind
    if kind not in "iufUS" or labels.dtype.kind != kind or not len(classes):
        return None
    order = np.argsort(classes, kind="stable")
    at = order[np.maximum(np.searchsorted(classes, labels, side="right", sorter=order) - 1, 0)]
    return at, classes[at] == labels


@dataclass(frozen=True)
class Option:
    """A learner parameter as a command-line option (``--max-depth`` -> ``max_depth``). An option of type
    ``bool`` is a pair of flags without a value, so that the parameter can be pinned either way
    (``--propagation`` / ``--no-propagation``)."""

    flag: str
    param: str
    type: Callable[[str], Any]
    help: str
    metavar: str | None = None
    choices: tuple | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def shown(self) -> str:
        """The flag as messages name it (``--[no-]propagation`` for a pair)."""
        return f"--[no-]{self.flag[2:]}" if self.type is bool else self.flag


def step_size(text: str):
    return text if text == "adaptive" else float(text)


# Options several learners share: one definition, so the CLI declares each flag once.
MAX_DEPTH = Option("--max-depth", "max_depth", int, "depth limit of each tree", "D")
CRITERION = Option("--criterion", "criterion", str, "split criterion", choices=("gini", "entropy"))
MIN_SAMPLES_LEAF = Option("--min-samples-leaf", "min_samples_leaf", int, "smallest number of samples in a leaf", "N")
MAX_BINS = Option("--max-bins", "max_bins", int, "bins per feature (2..255)", "N")
BINNING = Option("--binning", "binning", str, "how bin edges are placed", choices=("quantile", "adaptive"))
INPUT_DTYPE = Option("--input-dtype", "input_dtype", str,
                     "device input type; int32 and int16 take raw integer readings (no FPU needed)",
                     choices=("float32", "int32", "int16"))
TREE_OPTIONS = (MAX_DEPTH, CRITERION, MIN_SAMPLES_LEAF, MAX_BINS, BINNING, INPUT_DTYPE)
# Every learning learner bounds the work of one learn call the same way: an expensive step (a new member or shrub,
# a split attempt, a drift adaptation) is cut into units, and each call does at most this many of them, the rest in
# the next calls.
WORK_PER_CALL = Option("--work-per-call", "work_per_call", int,
                       "units of deferred work per learn call (0: an expensive step runs whole in one call)", "U")
ALLOW_MISSING = Option("--allow-missing", "allow_missing", bool,
                       "learn NaN features as missing values, in their own bin on the host and the device, instead "
                       "of refusing them")
LEAF_VALUES_OPTION = Option("--leaf-values", "leaf_values", str,
                     "leaf probabilities in Q15, rounded to 8 bits, or a hard vote (a class per leaf)",
                     choices=("q15", "q8", "vote"))


def model_input(model) -> tuple[str, int]:
    """(input dtype, number of features) of a fitted model: from its bin edges, or, for a learner that takes raw
    features (no ``bins_``), from its ``input_dtype`` and ``n_features_``."""
    bins = getattr(model, "bins_", None)
    if bins is not None:
        return bins.dtype, bins.n_features
    return model.input_dtype, model.n_features_


REFUSED = "NaN refused with ES_ERR_INPUT"
FROZEN_MISSING = "NaN = missing, goes right at every split"


def missing_rule(model) -> str:
    """What the host and the device do with a NaN feature (the bundle header states it; fitted or not): the
    model's ``missing_rule`` when it declares one, else the frozen trees' rule for float inputs (NaN is a missing
    value, in the bin above every threshold); integer inputs have none ("")."""
    rule = getattr(model, "missing_rule", None)
    if rule is not None:
        return rule
    bins = getattr(model, "bins_", None)
    return FROZEN_MISSING if (bins.dtype if bins is not None else model.input_dtype) == "float32" else ""


class Estimator:
    """Parameters as scikit-learn has them: ``get_params`` reads the constructor's arguments back, ``set_params``
    changes them by name, and the repr shows them."""

    def get_params(self, deep: bool = True) -> dict:
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params):
        valid = self.get_params()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"unknown parameter {name!r} for {type(self).__name__}; valid: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __sklearn_tags__(self) -> Tags:
        """scikit-learn's default tags (as ``BaseEstimator`` has them), which its mixins build on."""
        return Tags(estimator_type=None, target_tags=TargetTags(required=False), transformer_tags=None,
                    regressor_tags=None, classifier_tags=None)


def class_index(classes: np.ndarray, label) -> int:
    """Index of ``label`` among the sorted ``classes``; a label that is none of them gets an error listing them."""
    index = int(np.searchsorted(classes, label))
    if index >= len(classes) or classes[index] != label:
        raise ValueError(f"label {label!r} is not one of the configured classes {classes.tolist()}")
    return index


def check_integer(owner, name: str, low: int, high: int) -> None:
    """``owner.<name>`` must be an integer (not a bool) from ``low`` to ``high``; the error names both."""
    Range(name, low, high).check(getattr(owner, name))


class DeviceState:
    """Base of the learners that keep a state on the device: ``state_spec`` (their :class:`StateSpec`) and
    ``device_config(n_features, n_classes)`` give the layout of any configuration."""

    state_spec: StateSpec

    def layout(self, n_features: int | None = None, n_classes: int | None = None):
        """The device state of this configuration (:class:`edgestream.state.StateLayout`); features and classes
        default to the fitted ones."""
        return self.state_spec.layout(self.device_config(n_features, n_classes))

    def state_bytes(self, n_features: int | None = None, n_classes: int | None = None, packed=False) -> int:
        """Bytes of RAM the device state takes (sizeof of the generated struct, or packed as on AVR)."""
        return self.layout(n_features, n_classes).size(packed)


class CompiledSteps(DeviceState):
    """The learning learners' steps on the compiled host engine (:mod:`edgestream.engine`: the device runtime of
    csrc/ built into the package), with their Python specification beside it as the reference.

    While ``use_engine`` is true (the default), ``learn_one``, ``predict_one``, ``predict_proba_one``,
    ``partial_fit``, ``fit``, ``predict``, ``predict_proba``, ``score`` and :meth:`test_then_train` run on the
    engine, whole arrays in one call. The engine then holds the learning state: the attributes named in
    ``engine_state`` leave the instance, and the first read of any of them hands the state back
    (:meth:`load_device_state`), so the specification's methods (``learn_encoded``, ``learn_bins``,
    ``predict_proba_q15`` ...), model files, exports and state images all see the state the engine reached.
    ``reset`` (hence ``start``, ``restore_arrays``) drops the engine: it restarts from the new state. Set
    ``use_engine = False`` on an instance to run every step in the specification (the parity tests' reference).

    A subclass gives ``engine_rows(X)``: the rows checked as its specification checks them (the same errors),
    converted to the engine's input (float32, or int32 for integer bins)."""

    use_engine = True
    engine_state: tuple[str, ...] = ()
    fitted_attributes: tuple[str, ...] = ()  # what ``fit`` drops to start over
    ready_attribute: str = ""

    def __getattr__(self, name):
        engine = self.__dict__.get("_state_engine")
        if engine is not None and name in type(self).engine_state:
            self._release_engine()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):  # pickles and copies carry the state in the attributes, not the engine
        self._release_engine()
        return self.__dict__.copy()

    def _started(self) -> bool:
        return "_state_engine" in self.__dict__ or self.ready_attribute in self.__dict__

    def _take_engine(self) -> StateEngine:
        """The engine, holding the learning state from now on."""
        engine = self.__dict__.get("_state_engine")
        if engine is None:
            if not self._started():
                self._check_ready()  # the learner's own "start first" error
                raise RuntimeError(f"this {type(self).__name__} has not started: call start or partial_fit first")
            engine = StateEngine(self)
            for name in self.engine_state:
                self.__dict__.pop(name, None)
            self.__dict__["_state_engine"] = engine
        return engine

    def _release_engine(self) -> None:
        """Hand the engine's state back to the attributes: the specification continues from it."""
        engine = self.__dict__.pop("_state_engine", None)
        if engine is not None:
            self.load_device_state(*engine.device_state())

    def _drop_engine(self) -> None:
        """Forget the engine (its state is replaced by the attributes'): ``reset`` calls it."""
        self.__dict__.pop("_state_engine", None)

    def _forget(self) -> None:
        """Drop the engine and what the learner learned (``fitted_attributes``): a new ``fit`` starts over."""
        self._drop_engine()
        for attribute in self.fitted_attributes:
            self.__dict__.pop(attribute, None)

    def load_device_state(self, arrays: dict, counters: dict) -> None:
        """Continue from a device state (regions and counters as ``device_state()`` gives them, e.g. read from a
        state image), handed to ``restore_arrays`` in the shapes of ``saved_arrays()``: its checks apply."""
        self.reset()
        saved = {}
        for name, current in self.saved_arrays().items():
            if name == "counters":
                saved[name] = np.array([counters[f.name] for f in self.state_spec.counters], dtype=current.dtype)
            elif name not in arrays:  # host-side only (no region): as it is
                saved[name] = np.array(current)
            else:
                saved[name] = np.asarray(arrays[name]).reshape(np.shape(current)).astype(current.dtype)
        self.restore_arrays(saved)
        for region in self.layout().regions:  # caches the runtime kept (an image holds none): as they were
            if region.group == "cache" and region.name in arrays and region.name in self.__dict__:
                getattr(self, region.name).reshape(-1)[...] = arrays[region.name]

    def _label_indices(self, y) -> np.ndarray:
        """Class index of every label (uint8); an unknown label gets the specification's error. Labels of the
        classes' own kind (integers, floats or strings) are found by one sorted search, others one by one."""
        cached = self.__dict__.get("_label_lookup")
        if cached is None or cached[0] is not self.classes_:
            cached = self._label_lookup = (self.classes_, {v: i for i, v in enumerate(self.classes_.tolist())})
        labels = np.asarray(y).reshape(-1)
        found = _sorted_lookup(self.classes_, labels)
        if found is not None and found[1].all():
            return found[0].astype(np.uint8)
        labels = labels.tolist()
        indices = [cached[1].get(label) for label in labels]
        if None in indices:
            bad = labels[indices.index(None)]
            self.encode_label(bad)  # raises the learner's own message
            raise ValueError(f"label {bad!r} is not one of the classes {self.classes_.tolist()}")
        return np.array(indices, dtype=np.uint8)

    # The task's seam (a classifier's here; :class:`OnlineRegression` has the regressor's): the engine's target of
    # labels, and what test_then_train returns of the engine's int32 outputs.

    def engine_target(self, y) -> int:
        """The engine's target of one label: its class index."""
        cached = self.__dict__.get("_label_lookup")
        index = cached[1].get(y) if cached is not None and cached[0] is self.classes_ else None
        return int(self._label_indices([y])[0]) if index is None else index

    def engine_targets(self, y) -> np.ndarray:
        return self._label_indices(y)

    def tested(self, outputs: np.ndarray) -> np.ndarray:
        """test_then_train's answer for the int32 outputs: the labels predicted."""
        return self.classes_[outputs]

    def _checked(self, status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"the runtime refused {what} with status {status} (the state is unchanged)")

    def _engine_row(self, engine: StateEngine, x) -> np.ndarray:
        row = np.ascontiguousarray(x, dtype=engine.row_dtype)
        if row.shape != (engine.n_features,) or engine.row_dtype is not np.float32:
            row = self.engine_rows(row.reshape(1, -1) if row.ndim == 1 else row)[0]
        return row

    def _engine_learn_row(self, x, y) -> None:
        """One row on the engine: the runtime checks the row (a refused one gets the specification's error)."""
        engine = self.__dict__.get("_state_engine") or self._take_engine()
        status = engine.learn(self._engine_row(engine, x), self.engine_target(y))
        if status != 0:
            self.engine_rows(np.asarray(x).reshape(1, -1))  # the specification's error for a refused row
            self._checked(status, "the row")

    def _engine_output_row(self, x) -> int:
        """The engine's output of one row: its class index or raw output."""
        engine = self.__dict__.get("_state_engine") or self._take_engine()
        status, output = engine.predict_one(self._engine_row(engine, x))
        if status != 0:
            self.engine_rows(np.asarray(x).reshape(1, -1))
            self._checked(status, "the row")
        return output

    def _engine_learn(self, X, y) -> None:
        rows, targets = self.engine_rows(X), self.engine_targets(y)
        if len(targets) != len(rows):
            raise ValueError(f"X has {len(rows)} rows but y has {len(targets)} labels")
        status, done = self._take_engine().learn_rows(rows, targets)
        self._checked(status, f"row {done}")

    def _engine_predict(self, X, proba: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """(int32 outputs: class indices or raw outputs, a classifier's Q15 probabilities or None)."""
        status, outputs, q15 = self._take_engine().predict(self.engine_rows(X), proba)
        self._checked(status, "a prediction")
        return outputs, q15

    def test_then_train(self, X, y) -> np.ndarray:
        """Predict every row, then learn it, in order, in one call on the engine (the specification's
        ``predict_encoded`` then ``learn_row`` per row when ``use_engine`` is false): the labels predicted (a
        regressor's int32 raw outputs). Every row and target is checked first; a refused one raises before
        anything is learned."""
        if not self._started():
            raise RuntimeError("start the learner (start, partial_fit or its warm-up) before test_then_train")
        if not self.use_engine:
            outputs = []
            for row, target in zip(np.asarray(X), np.asarray(y)):
                outputs.append(self.predict_encoded(np.asarray(row).reshape(1, -1))[0])
                self.learn_row(row, target)
            return self.tested(np.array(outputs, dtype=np.int32))
        rows, targets = self.engine_rows(X), self.engine_targets(y)
        if len(targets) != len(rows):
            raise ValueError(f"X has {len(rows)} rows but y has {len(targets)} labels")
        status, done, predicted = self._take_engine().test_then_train(rows, targets)
        self._checked(status, f"row {done}")
        return self.tested(predicted)


class OnlineStateLearner(StreamLearner, Estimator, CompiledSteps):
    """Base of the online learners whose whole state lives on the device (raw features in, the state's regions
    as numpy arrays). A subclass gives ``start(X_sample, classes)``, ``learn_encoded(x, label)``,
    ``predict_proba_q15(X)``, ``predict_encoded(X)``, ``encode_label(y)``, ``_rows(X)``, ``state_arrays`` (the
    regions it keeps as attributes), ``ready_attribute`` (set once started), ``fitted_attributes`` (dropped by
    ``fit``) and ``device_counters()``; the rest follows here once for all of them."""

    state_arrays: tuple[str, ...] = ()
    missing_rule = REFUSED  # see missing_rule()
    ready_attribute: str = ""

    def device_state(self) -> tuple[dict, dict] | None:
        """Flat arrays of every region (scratch zero) and the counters; None before ``start``."""
        if not hasattr(self, self.ready_attribute):
            return None
        arrays = {name: getattr(self, name).reshape(-1) if name in self.state_arrays else zeros
                  for name, zeros in self.layout().zeros().items()}
        return arrays, self.device_counters()

    def engine_rows(self, X) -> np.ndarray:
        return self._rows(X)

    def _input_rows(self, X) -> np.ndarray:
        """Rows as ``partial_fit`` takes them before the learner has started."""
        return self._rows(X)

    def learn_row(self, x, y):  # learn_one (dict rows, cold start): StreamLearner
        if self.use_engine:
            self._engine_learn_row(x, y)
        else:
            self.learn_encoded(x, self.encode_label(y))
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn rows in order; the first call starts on X and takes ``classes`` (or y's labels)."""
        X = self._input_rows(X)
        if not self._started():
            self.start(X, np.unique(y) if classes is None else classes)
        if self.use_engine:
            self._engine_learn(X, y)
            return self
        labels = [self.encode_label(label) for label in np.asarray(y)]
        for row, label in zip(X, labels):
            self.learn_encoded(row, label)
        return self

    def fit(self, X, y, classes=None):
        self._forget()
        return self.partial_fit(X, y, classes)

    def predict_proba(self, X) -> np.ndarray:
        if self.use_engine:
            return self._engine_predict(X, proba=True)[1] / 32768
        return self.predict_proba_q15(X) / 32768

    def predict(self, X) -> np.ndarray:
        if self.use_engine:
            return self.classes_[self._engine_predict(X)[0]]
        return self.classes_[self.predict_encoded(X)]

    def predict_row(self, x):
        if self.use_engine:
            return self.classes_[self._engine_output_row(x)]
        return self.predict(np.asarray(x).reshape(1, -1))[0]

    def predict_proba_row(self, x) -> dict:
        proba = self.predict_proba(np.asarray(x).reshape(1, -1))[0]
        return dict(zip(self.classes_.tolist(), proba.tolist()))

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


class OnlineClassification(ClassifierMixin, CheckedInput):
    """scikit-learn's classifier protocol for an online learner whose whole state lives on the device, mixed in
    before its shared base (:class:`OnlineStateLearner`, which learns and predicts): the input checks of ``fit``,
    ``partial_fit``, ``predict`` and ``predict_proba`` (:class:`~edgestream.learners.skbase.CheckedInput`;
    ``n_features_in_``, feature names), class labels only (a continuous target is refused), ``score`` is
    accuracy."""

    _fitted_attribute = "classes_"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = missing_rule(self) != REFUSED
        tags.classifier_tags.multi_class = True
        return tags

    def _validate_fit(self, X, y, reset: bool = True) -> tuple[np.ndarray, np.ndarray]:
        X, y = self._validate_rows(X, y, reset)
        check_classification_targets(y)
        return X, y

    def partial_fit(self, X, y, classes=None):
        X, y = self._validate_fit(X, y, reset=not self._started())
        return super().partial_fit(X, y, classes)

    def fit(self, X, y, classes=None):
        X, y = self._validate_fit(X, y)
        self._forget()
        return super().partial_fit(X, y, classes)

    def predict(self, X) -> np.ndarray:
        return super().predict(self._validate_X(X))

    def predict_proba(self, X) -> np.ndarray:
        return super().predict_proba(self._validate_X(X))


class OnlineRegression(RegressorMixin, CheckedTarget):
    """The regression task of an online learner (:mod:`edgestream.task`), mixed in before the learner's shared
    base: the target in the int16 codes of a :class:`~edgestream.task.TargetScale` fitted on the first rows when
    the learner starts (``target_``; ``saturated_`` counts the targets learned outside its range, saturated, never
    wrapped), the engine and the device learning codes and giving int32 raw outputs (``predict_raw``), decoded on
    the host (``predict``). River's regressor protocol (``learn_one(x, y: float)``, ``predict_one(x) -> float``)
    comes from :class:`~edgestream.learners.stream.StreamLearner`; scikit-learn's (``score`` is R², the input
    checks of ``fit``, ``partial_fit`` and ``predict``, ``n_features_in_``; ``check_estimator`` passes) from
    ``RegressorMixin`` and :class:`~edgestream.learners.skbase.CheckedTarget`. A regressor has no class
    probabilities: ``predict_proba`` is not there (``hasattr`` is False).

    The learner gives ``start(X_sample, y_sample)`` (which checks the parameters and calls :meth:`set_target`),
    ``learn_encoded(x, code)`` and ``predict_encoded(X)`` (int32 raw outputs): its specification."""

    task = REGRESSION
    output_divisor = 1  # the raw output is the target code itself
    _output_attribute = "target_"
    _fitted_attribute = "target_"
    predict_proba = available_if(lambda model: False)(OnlineStateLearner.predict_proba)
    predict_proba_row = available_if(lambda model: False)(OnlineStateLearner.predict_proba_row)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = missing_rule(self) != REFUSED
        return tags

    def set_target(self, y_sample) -> None:
        """The target scale from the first rows' targets (:meth:`TargetScale.fit`); nothing saturated yet."""
        self.target_ = TargetScale.fit(y_sample)
        self.saturated_ = 0

    def encode_target(self, y) -> int:
        """The int16 code of one target (a saturated one is counted)."""
        if not self._started():
            self._check_ready()
        return self.engine_target(y)

    def engine_target(self, y) -> int:
        return int(self.engine_targets([y])[0])

    def engine_targets(self, y) -> np.ndarray:
        codes, saturated = self.target_.encode(np.asarray(y).reshape(-1))
        self.saturated_ = self.__dict__.get("saturated_", 0) + saturated  # counted since start (or a model file)
        return codes

    def tested(self, outputs: np.ndarray) -> np.ndarray:
        return outputs.astype(np.int32)  # raw outputs: decode them with target_.decode

    def learn_row(self, x, y):
        if self.use_engine:
            self._engine_learn_row(x, y)
        else:
            self.learn_encoded(x, self.encode_target(y))
        return self

    def partial_fit(self, X, y):
        """Learn rows in order; the first call starts on X and y (the input setup and the target scale)."""
        X, y = self._validate_fit(X, y, reset=not self._started())
        return self._learn_rows(self._input_rows(X), y)

    def _learn_rows(self, X: np.ndarray, y: np.ndarray):
        if not self._started():
            self.start(X, y)
        if self.use_engine:
            self._engine_learn(X, y)
            return self
        for row, code in zip(X, self.engine_targets(y)):
            self.learn_encoded(row, int(code))
        return self

    def fit(self, X, y):
        X, y = self._validate_fit(X, y)
        self._forget()
        return self._learn_rows(self._input_rows(X), y)

    def predict_raw(self, X) -> np.ndarray:
        """int32 raw outputs, exactly as the device computes them."""
        if self.use_engine:
            return self._engine_predict(X)[0]
        return self.predict_encoded(X)

    def predict(self, X) -> np.ndarray:
        raw = self.predict_raw(self._validate_X(X))
        return self.target_.decode(raw, self.output_divisor)

    def predict_row(self, x) -> float:
        raw = self._engine_output_row(x) if self.use_engine else self.predict_encoded(np.asarray(x).reshape(1, -1))[0]
        return float(self.target_.decode(raw, self.output_divisor))


class OnlineAnomaly:
    """The anomaly task of an online learner (:mod:`edgestream.task`), mixed in before the learner's shared base:
    it learns unlabelled rows (a label given is ignored: labels only evaluate a detector), the engine and the
    device give one int32 output per row, its Q15 score and flag (``predict_raw``; :func:`split_output`).
    River's anomaly detector protocol: ``learn_one(x)`` (a cold start on the first ``warm_up`` rows) and
    ``score_one(x)`` (the score in [0, 1)).

    The learner gives ``start(X_sample)``, ``learn_encoded(x)`` and ``predict_encoded(X)`` (int32 outputs)."""

    task = ANOMALY
    _supervised = False

    def engine_target(self, y) -> int:
        return 0

    def engine_targets(self, y) -> np.ndarray:
        return np.zeros(len(y), dtype=np.int32)

    def tested(self, outputs: np.ndarray) -> np.ndarray:
        return outputs.astype(np.int32)

    def learn_row(self, x, y=None):
        if self.use_engine:
            self._engine_learn_row(x, 0)
        else:
            self.learn_encoded(x)
        return self

    def partial_fit(self, X, y=None):
        """Learn rows in order; the first call starts on X."""
        X = self._input_rows(X)
        if not self._started():
            self.start(X)
        if self.use_engine:
            self._engine_learn(X, np.zeros(len(X), dtype=np.int32))
            return self
        for row in X:
            self.learn_encoded(row)
        return self

    def fit(self, X, y=None):
        self._forget()
        return self.partial_fit(X)

    def test_then_train(self, X, y=None) -> np.ndarray:
        """Score every row, then learn it, in order: the int32 outputs (scores and flags) before learning."""
        return CompiledSteps.test_then_train(self, X, np.zeros(len(X), dtype=np.int32))

    def predict_raw(self, X) -> np.ndarray:
        """int32 outputs (Q15 score and flag) of rows, exactly as the device computes them; nothing learned."""
        if self.use_engine:
            return self._engine_predict(X)[0]
        return self.predict_encoded(X)

    def score_samples(self, X) -> np.ndarray:
        """Q15 scores of rows (higher is more anomalous)."""
        return split_output(self.predict_raw(X))[0]

    def predict(self, X) -> np.ndarray:
        """The flags of rows: 1 for an anomaly, 0 for a normal row."""
        return split_output(self.predict_raw(X))[1].astype(np.int32)

    def predict_row(self, x) -> int:
        output = self._engine_output_row(x) if self.use_engine else self.predict_encoded(np.asarray(x).reshape(1, -1))[0]
        return int(split_output([output])[1][0])

    def learn_one(self, x, y=None, **kwargs):
        row = self._stream_row(x)
        if self._started():
            return self.learn_row(row)
        rows = self.__dict__.setdefault("_warm_rows", [])
        rows.append(row)
        if len(rows) >= self.warm_up:
            del self._warm_rows
            self.partial_fit(np.asarray(rows))
        return self

    def score_one(self, x) -> float:
        """River's score of one row in [0, 1): the Q15 score / 32768 (0 before the detector has started)."""
        if not self._started():
            return 0.0
        return float(self.score_samples(self._stream_row(x)[None])[0]) / 32768


def restore_regions(owner, names, arrays: dict) -> None:
    """Copy saved ``arrays`` into ``owner``'s region attributes ``names`` (already allocated for the
    configuration), refusing any of another dtype or shape."""
    for name in names:
        expected = getattr(owner, name)
        if arrays[name].dtype != expected.dtype or arrays[name].shape != expected.shape:
            raise ValueError(f"state {name!r} has dtype {arrays[name].dtype} and shape {arrays[name].shape}, "
                             f"this configuration needs {expected.dtype} {expected.shape}")
        expected[...] = arrays[name]


def state_context(learner, name: str, optimize: str = "speed") -> dict:
    """The template context of a learner that exports its device state: the bundle starts from it."""
    from ..emit import c_array

    state = learner.device_state()
    if state is None:
        raise ValueError(f"this {type(learner).__name__} has not started (no input setup or classes yet); "
                         f"call start() first")
    layout = learner.layout()
    return {"layout": layout, "config_initializer": layout.config_initializer(name),
            "state_struct": layout.state_struct(name), "state_initializer": layout.initializer(name, *state, c_array),
            "state_binding": layout.binding(name), "state_bytes": layout.size()}


def state_tables(spec: StateSpec) -> Callable:
    """The flash objects of a learner whose model is all state: its config and the pointer struct."""
    def tables(learner, n_features: int, n_classes: int, pointer_bytes: int, packed: bool, optimize: str = "speed"):
        return [("config", spec.config_bytes(packed)), ("model", (len(spec.regions) + 2) * pointer_bytes)]

    return tables


class BinnedOnlineLearner(StreamLearner, CompiledSteps):
    """Base of the online learners that quantize on the device: bin edges fixed from a sample of the stream
    (:meth:`fit_bins`, the device ships with them), classes fixed up front (:meth:`set_classes`; both at once:
    :meth:`start`), then ``learn_bins(bins, label)`` per row. River's protocol (dict rows, cold start) comes from
    :class:`~edgestream.learners.stream.StreamLearner`. A subclass has ``max_bins``, ``binning``, ``input_dtype`` and
    ``allow_missing``, keeps a ``window_bins`` region and implements ``reset`` and ``learn_bins``."""

    fitted_attributes = ("bins_", "classes_", "window_bins")
    labels_attribute = "classes_"  # set, with the bins, once the learner can start (a regressor: its target_)
    start_hint = "fit_bins(X_sample) and set_classes(classes)"

    ready_attribute = "window_bins"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags(preserves_dtype=[])  # transform: raw rows -> uint8 bins
        return tags

    @property
    def _all_finite(self):
        """scikit-learn's methods refuse infinities when NaN is refused (its ``allow_nan`` tag covers both); the
        stream methods and the device take them as values (the bins beyond the edges)."""
        return "allow-nan" if self.missing_rule == REFUSED else False

    @property
    def missing_rule(self) -> str:
        """NaN in its own bin with ``allow_missing``, else refused (see :func:`missing_rule`)."""
        if self.input_dtype != "float32":
            return ""
        return "NaN = missing, its own bin" if self.allow_missing else REFUSED

    def fit_bins(self, X_sample) -> "BinnedOnlineLearner":
        """Fix the quantization edges from a sample of the stream (the device ships with these edges); the
        parameters are checked first (when the learner starts, as scikit-learn's are)."""
        self._check_params()
        if self.input_dtype not in ("float32", "int32"):
            raise ValueError(f"input_dtype={self.input_dtype!r}: {type(self).__name__} quantizes on the device from "
                             "float32 or int32")
        self.bins_ = BinMapper(self.max_bins, self.binning, self.input_dtype).fit(
            check_features(X_sample, dtype=self.input_dtype))
        self._reset_if_ready()
        return self

    def set_classes(self, classes) -> "BinnedOnlineLearner":
        """Fix the class labels the stream may carry (sorted; 2..255 of them)."""
        classes = np.unique(np.asarray(classes))
        if not 2 <= len(classes) <= MAX_CLASSES:
            raise ValueError(f"{len(classes)} classes given, {type(self).__name__} needs 2 to {MAX_CLASSES}")
        self.classes_ = classes
        self._reset_if_ready()
        return self

    @property
    def n_features_(self) -> int:
        return self.bins_.n_features

    def _reset_if_ready(self):
        if hasattr(self, "bins_") and hasattr(self, self.labels_attribute):
            self.reset()

    def _check_ready(self):
        if not self._started():
            raise RuntimeError(f"call {self.start_hint} (or partial_fit) before learning")

    def encode_label(self, label) -> int:
        self._check_ready()
        return class_index(self.classes_, label)

    def _checked_rows(self, X) -> np.ndarray:
        self._check_ready()
        X = check_features(X, self.n_features_, self.input_dtype)
        if not self.allow_missing and X.dtype.kind == "f" and np.isnan(X).any():
            row, feature = np.argwhere(np.isnan(X))[0]
            raise ValueError(f"feature {feature} of row {row} is NaN; pass allow_missing=True to learn from "
                             "missing values")
        return X

    def transform(self, X) -> np.ndarray:
        """Bins of raw rows, with scikit-learn's input checks (``n_features_in_``, feature names); NaN is refused
        unless ``allow_missing``."""
        return self.bin_rows(self._validate_X(X))

    def fit_transform(self, X, y) -> np.ndarray:
        """``fit``, then the bins of X (scikit-learn's transformer protocol, which ``transform`` brings)."""
        return self.fit(X, y).transform(X)

    def bin_rows(self, X) -> np.ndarray:
        """Bins of raw rows as the device computes them (the learning steps' own, without scikit-learn's
        checks)."""
        return self.bins_.transform(self._checked_rows(X))

    def engine_rows(self, X) -> np.ndarray:
        """Raw rows checked as :meth:`transform` checks them, as the device takes them (float32 or int32)."""
        return self.bins_.as_input(self._checked_rows(X))

    def _input_rows(self, X) -> np.ndarray:
        """Rows as ``partial_fit`` takes them before the bins are fitted."""
        return check_features(X, dtype=self.input_dtype)

    def partial_fit(self, X, y, classes=None) -> "BinnedOnlineLearner":
        """Learn rows in order; the first call fits the bins on X and takes ``classes`` (or y's labels)."""
        X = self._input_rows(X)
        if not hasattr(self, "bins_"):
            self.fit_bins(X)
        if not hasattr(self, "classes_"):
            self.set_classes(np.unique(y) if classes is None else classes)
        if self.use_engine:
            self._engine_learn(X, y)
            return self
        labels = [self.encode_label(label) for label in np.asarray(y)]
        for row, label in zip(self.bin_rows(X), labels):
            self.learn_bins(row, label)
        return self

    def fit(self, X, y, classes=None) -> "BinnedOnlineLearner":
        self._forget()
        return self.partial_fit(X, y, classes)

    def start(self, X_sample, classes) -> "BinnedOnlineLearner":
        """Both at once: the bins from a sample of the stream and the classes."""
        return self.fit_bins(X_sample).set_classes(classes)

    def learn_row(self, x, y) -> "BinnedOnlineLearner":
        if self.use_engine:
            self._engine_learn_row(x, y)
            return self
        label = self.encode_label(y)
        self.learn_bins(self.bin_rows(np.asarray(x).reshape(1, -1))[0], label)
        return self

    def predict_proba_q15(self, X) -> np.ndarray:
        """Q15 probabilities of raw rows, as the device computes them."""
        return self.predict_proba_bins(self.bin_rows(X))

    def predict_proba(self, X) -> np.ndarray:
        if self.use_engine:
            return self._engine_predict(X, proba=True)[1] / Q15_ONE
        return self.predict_proba_q15(X) / Q15_ONE

    def predict_encoded(self, X) -> np.ndarray:
        return np.argmax(self.predict_proba_q15(X), axis=1).astype(np.uint8)

    def predict(self, X) -> np.ndarray:
        if self.use_engine:
            return self.classes_[self._engine_predict(X)[0]]
        return self.classes_[self.predict_encoded(X)]

    def predict_proba_row(self, x) -> dict:
        proba = self.predict_proba(np.asarray(x).reshape(1, -1))[0]
        return dict(zip(self.classes_.tolist(), proba.tolist()))

    def predict_row(self, x):
        if self.use_engine:
            return self.classes_[self._engine_output_row(x)]
        return self.predict(np.asarray(x).reshape(1, -1))[0]


@dataclass(frozen=True)
class LearnerSpec:
    """One learner, declared once.

    * ``cls``: the estimator (``get_params``, ``bins_``, ``classes_``, ``saved_arrays``, ``restore_arrays``,
      ``predict_encoded``, ``predict_proba_q15``; online learners also ``learn_one``, ``fit_bins``, ``set_classes``,
      ``encode_label``). A learner that takes raw features instead of bins has no ``bins_``; it gives
      ``input_dtype`` and ``n_features_`` (see :func:`model_input`), and an online one ``start(X_sample, classes)``
      instead of ``fit_bins`` and ``set_classes``.
    * ``learning``: the exported C keeps learning on the device (``<name>_learn``); ``online``: ``fit`` learns the
      rows in file order, one at a time, as the device would.
    * ``runtime``: the ``csrc/`` modules a bundle needs; ``template``: the ``codegen/`` template of ``<name>.c``.
    * ``state``: the device state description (learning learners, whose estimators also give
      ``device_config(n_features, n_classes)``, the values of the state's config fields, and ``device_state()``,
      the arrays and counters an export starts from, or None before the bins and classes are set).
    * ``context(model, name, optimize)``: the learner's part of the template context of a fitted model, in the
      encoding ``optimize`` (speed or size) picks where the learner has several; it may add ``extra_files``
      (generated headers: file name -> template) and ``manifest`` fields.
    * ``tables(model, n_features, n_classes, pointer_bytes, packed, optimize)``: (name, bytes) of every constant object the bundle
      puts in flash; exact for a fitted model, the worst case for an unfitted one (its configuration only).
    * ``ladder``: configurations from the largest to the smallest; the budget takes the first that fits. The
      parameters it sets are those the budget chooses unless the user fixes any of them.
    * ``search``: online learners, the configurations the budget tries on data (:mod:`edgestream.search`: the best
      scored of those that fit wins); default the ladder.
    * ``class_increments``: online learners, the parameters the search fixes (unless the user fixed them) where
      classes arrive over time, those that keep the earlier classes.
    * ``cost_terms(params, n_features, n_classes, **regime)``: online learners, the work terms of a prediction and
      of a learn call (:class:`edgestream.costs.CostTerms`), which :mod:`edgestream.costs` weighs by coefficients
      calibrated on emulator counts per core. ``regime``: keywords for what a run did that the configuration does
      not decide (the calibration replays its counted rows to tell); predictions take their defaults.
    * ``variants``: parameters added to (or replacing those of) the smallest rung for further small test models (a
      mode the rung leaves off, on a stream of 3 features and 2 classes): the checkpoint tests run each, the fuzz target takes the first.
    * ``worst_case(model, n_features, n_classes)``: frozen learners whose bundles for speed walk the trees in inline
      code: the :class:`edgestream.frozen.WorstCase` of an unfitted model's configuration (the largest trees it can
      export), from which the budget bounds that code.
    * ``regressor``: the estimator of the regression task (:mod:`edgestream.task`), where the learner has one:
      ``make(task, ...)`` and ``estimator(task)`` pick by task; ``regressor_runtime``: the further ``csrc/``
      modules its bundles need.
    * ``detector``: the estimator of the anomaly task; a learner with only that task has ``cls`` None.
    * ``trainable``: False for models that only come from elsewhere (:mod:`edgestream.importers`): ``fit`` and
      ``budget`` do not offer them.
    """

    name: str
    cls: type | None
    summary: str
    options: tuple[Option, ...]
    learning: bool
    online: bool
    runtime: tuple[str, ...]
    template: str
    context: Callable
    tables: Callable
    ladder: tuple[dict, ...] = ()
    state: StateSpec | None = None
    checkpoints: bool = True  # a learning bundle offers state images (its C module has <prefix>_validate)
    search: tuple[dict, ...] = ()
    class_increments: dict = field(default_factory=dict)
    cost_terms: Callable | None = None
    worst_case: Callable | None = None
    variants: tuple[dict, ...] = ()
    trainable: bool = True  # False: models come from elsewhere (edgestream import), not from fit or budget
    regressor: type | None = None
    regressor_runtime: tuple[str, ...] = ()  # csrc/ modules the regression form needs beyond ``runtime``
    detector: type | None = None

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks this learner has an estimator for (:mod:`edgestream.task`)."""
        return tuple(task for task, cls in self.forms().items() if cls is not None)

    def forms(self) -> dict:
        """The estimator class of every task (None where the learner has no form for it)."""
        return {CLASSIFICATION: self.cls, REGRESSION: self.regressor, ANOMALY: self.detector}

    @property
    def estimators(self) -> tuple[type, ...]:
        return tuple(cls for cls in self.forms().values() if cls is not None)

    def estimator(self, task: str = CLASSIFICATION) -> type:
        """The estimator class of ``task``; a task the learner has no form for gets an error naming those it has."""
        cls = self.forms()[check_task(task)]
        if cls is None:
            raise ValueError(f"learner {self.name!r} has no {task} form yet; it has: {', '.join(self.tasks)}")
        return cls

    @property
    def ladder_params(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(key for rung in self.ladder + self.search for key in rung))

    @property
    def search_grid(self) -> tuple[dict, ...]:
        return self.search or self.ladder

    def task_grid(self, task: str = CLASSIFICATION) -> tuple[dict, ...]:
        """The search grid of ``task``'s form: the parameters of each configuration that the form takes (a
        classifier's own options dropped for a regressor), each distinct configuration once, in order."""
        known = set(self.estimator(task)().get_params())
        kept = dict.fromkeys(tuple((k, v) for k, v in config.items() if k in known) for config in self.search_grid)
        return tuple(dict(items) for items in kept)

    def option(self, param: str) -> Option | None:
        return next((o for o in self.options if o.param == param), None)

    def make(self, task: str = CLASSIFICATION, **params):
        """The estimator of ``task`` with these parameters, checked (``_check_params`` of estimators that check only
        at fit time, as scikit-learn's do); unknown ones get an error listing the learner's."""
        cls = self.estimator(task)
        known = set(cls().get_params())
        unknown = sorted(set(params) - known)
        if unknown:
            form = f" ({task})" if task != CLASSIFICATION else ""
            raise ValueError(f"learner {self.name!r}{form} has no parameter(s) {', '.join(unknown)}; "
                             f"its parameters: {', '.join(sorted(known))}")
        model = cls(**params)
        check = getattr(model, "_check_params", None)
        if check is not None:
            check()
        return model
