"""What a learner does with a missing feature value (NaN), the same on the host and on the device.

The rule is the model's (:func:`edgestream.learners.missing_rule`, which the bundle header states too):

* frozen trees, forests and GBDT with float32 input: NaN is a missing value and goes right at every split (its bin
  lies above every threshold, :mod:`edgestream.binning`); imported models: each node's direction from the source;
* learners with ``allow_missing`` (shrubs, axgb): NaN is refused unless it is given (``--allow-missing``), and then
  it is a missing value in its own bin;
* every other learner: NaN is refused (``ES_ERR_INPUT`` on the device); integer inputs have no NaN.

:func:`check` applies the rule to a table before any work and names the first refused cell as the file counts it.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from . import learners
from .learners.base import ALLOW_MISSING
from .search import AUTO
from .task import CLASSIFICATION


def takes_missing(rule: str) -> bool:
    return rule.startswith("NaN = missing")


def has_flag(spec) -> bool:
    """The learner takes NaN only when asked to (an ``allow_missing`` parameter)."""
    return "allow_missing" in inspect.signature(spec.estimators[0]).parameters


def takers() -> str:
    """The trainable learners that take missing values, and how."""
    def rule_of(name, **params):
        return learners.missing_rule(learners.get(name).estimators[0](**params))

    frozen = [name for name in learners.TRAINABLE if takes_missing(rule_of(name)) and not has_flag(learners.get(name))]
    flagged = [name for name in learners.TRAINABLE if has_flag(learners.get(name))]
    return (f"{', '.join(frozen)} ({rule_of(frozen[0])}) or {' and '.join(flagged)} with {ALLOW_MISSING.flag} "
            f"({rule_of(flagged[0], allow_missing=True)})")


def check(learner: str, params: dict, X: np.ndarray, where: Callable[[int, int], str],
          task: str = CLASSIFICATION) -> str | None:
    """What ``learner`` with ``params`` (``"auto"``: a search of the online learners) does with the NaN cells of
    ``X``: a line saying how many there are and the rule, None without any; a learner that refuses them raises
    ``ValueError`` naming the first, ``where(row, feature)``, and the way to learn them."""
    if not np.isnan(X).any():
        return None
    if learner == AUTO:
        refuse(X, where, f"--learner {AUTO} searches learners that refuse missing values: give --learner {takers()}")
    spec = learners.get(learner, task)
    return check_model(spec.make(task, **params), X, where)


def check_model(model, X: np.ndarray, where: Callable[[int, int], str]) -> str | None:
    """:func:`check` for a model (fitted or not)."""
    missing = np.isnan(X)
    if not missing.any():
        return None
    rule = learners.missing_rule(model)
    if takes_missing(rule):
        cells, rows = int(missing.sum()), int(missing.any(axis=1).sum())
        return (f"{cells} missing value{'s' * (cells != 1)} in {rows} row{'s' * (rows != 1)}: {rule} (on the host "
                "and the device)")
    spec = learners.of_model(model)
    if not rule:
        reason = f"the model takes integer input ({model.input_dtype}), which has no missing value"
    elif has_flag(spec):
        reason = f"{spec.name} refuses missing values unless fit with {ALLOW_MISSING.flag} (then they have their own bin)"
    else:
        reason = (f"{spec.name} refuses missing values (the device too: ES_ERR_INPUT); learners that take them: "
                  f"{takers()}")
    refuse(X, where, reason)


def refuse(X: np.ndarray, where: Callable[[int, int], str], reason: str):
    row, feature = (int(index) for index in np.argwhere(np.isnan(X))[0])
    raise ValueError(f"{where(row, feature)}: a missing value (NaN); {reason}")

