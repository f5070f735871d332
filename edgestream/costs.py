"""Instructions per call on a device core, predicted from a learner's configuration: the one owner of time figures.

Each online learner names the work terms of its calls (``LearnerSpec.cost_terms(params, n_features, n_classes)``,
a :class:`CostTerms`: products of its sizes, such as features x classes for a naive Bayes leaf). Four linear
models per learner and core (``Board.arch``) weigh them: the mean and the worst prediction, on the ``predict``
terms, and the mean and the worst learn call, on the ``learn_mean`` and ``learn_worst`` terms (a step that trains
a new member weighs in the mean amortized over the calls between two such steps, in the worst whole, or as much
of it as ``work_per_call`` lets one call do). The coefficients, in ``cost_models.json`` beside this module, are
fitted by non-negative least squares to exact emulator counts of many configurations
(``benchmarks/calibrate_cost.py``, which also prints predicted against measured on configurations it was not
fitted on; learners that run the same C code share one model). A term may depend on what a run did beyond its
configuration (a Hoeffding tree's full node pool attempts no split): the calibration fits what its counted
calls did, and a prediction takes the learner's default, the costlier case. The calibration also stores the
largest value of each term it counted (``largest_terms``): a configuration with a term beyond it is an
extrapolation, which :func:`beyond_calibration` names (the budget's report says so). ``STATED_ERROR`` is the
error the models are held to on configurations and streams held out of their fit. On AVR the counts are CPU cycles
(the harness's Timer1 under simavr), which is what a sample rate needs. An AVR5 core (ATmega328P) takes the AVR6 core's model: it runs the same instructions, its calls and returns
one cycle faster (2-byte return addresses), so the AVR6 figures bound it from above. The RISC-V cores have no
FPU (soft float, as Cortex-M0); an RV32IMAC core takes the RV32IMC model, whose code it runs unchanged. A core without a
calibration gets no prediction, never a guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

COEFFICIENTS_FILE = Path(__file__).with_name("cost_models.json")
QUANTITIES = ("predict_mean", "predict_worst", "learn_mean", "learn_worst")
# A core without its own calibration whose counts another core's model gives: an AVR5 core's it bounds from above;
# an RV32IMAC core runs the very instructions compiled for RV32IMC (the runtime uses no atomics), so equal counts
BOUNDED_BY = {"avr5": "avr6", "rv32imac": "rv32imc"}
STATED_ERROR = 0.20  # of the counted mean and worst calls, on configurations and streams held out of the fit


class CostTerms(NamedTuple):
    """The work terms of one configuration's calls (each a list of numbers, the first usually 1: a constant); the
    worst prediction weighs the ``predict`` terms unless a run's regime gives it its own (``predict_worst``: a
    calibration run whose model was smaller for a while, as an AXGB ensemble emptied by a drift)."""

    predict: list[float]
    learn_mean: list[float]
    learn_worst: list[float]
    predict_worst: list[float] | None = None

    def of(self, quantity: str) -> list[float]:
        """The terms a quantity's model weighs (``QUANTITIES``)."""
        if quantity == "predict_worst" and self.predict_worst is not None:
            return self.predict_worst
        return self.predict if quantity.startswith("predict") else getattr(self, quantity)


class MeanWorst(NamedTuple):
    """Instructions of one kind of call: on average and at worst."""

    mean: float
    worst: float


@dataclass(frozen=True)
class CallCost:
    """Predicted instructions of a prediction and of a learn call on one core."""

    predict: MeanWorst
    learn: MeanWorst

    def per_sample(self, worst: bool) -> float:
        """A test-then-train sample is predicted, then learned: their sum, on average or at worst."""
        return self.predict.worst + self.learn.worst if worst else self.predict.mean + self.learn.mean

    def to_json(self) -> dict:
        return {"learn_instructions": self.learn._asdict(), "predict_instructions": self.predict._asdict()}


@cache
def coefficients() -> dict:
    """learner -> core -> quantity -> coefficients, as the calibration wrote them."""
    if not COEFFICIENTS_FILE.exists():
        return {}
    return json.loads(COEFFICIENTS_FILE.read_text())


def predicted(terms: CostTerms, fitted: dict) -> CallCost:
    """The four quantities of ``terms`` under one core's ``fitted`` coefficients. The worst is never below the mean
    (two models fitted apart may cross on a configuration far from the calibration's)."""
    value = {q: float(np.dot(fitted[q], terms.of(q))) for q in QUANTITIES}
    return CallCost(MeanWorst(value["predict_mean"], max(value["predict_worst"], value["predict_mean"])),
                    MeanWorst(value["learn_mean"], max(value["learn_worst"], value["learn_mean"])))


def _fitted(spec, arch: str) -> dict | None:
    """The coefficients of ``spec``'s model on core ``arch`` (or on the core that bounds it), None without them."""
    cores = coefficients().get(spec.name, {})
    fitted = cores.get(arch, cores.get(BOUNDED_BY.get(arch)))
    return None if spec.cost_terms is None else fitted


def call_cost(spec, params: dict, n_features: int, n_classes: int, arch: str, **regime) -> CallCost | None:
    """Predicted instructions of ``spec``'s calls with ``params`` on the core ``arch`` (``regime``: what the rows
    did that the configuration does not decide, for the learner's ``cost_terms``; by default its planning
    assumptions); None without a calibration for that learner and core."""
    fitted = _fitted(spec, arch)
    if fitted is None:
        return None
    return predicted(spec.cost_terms(params, n_features, n_classes, **regime), fitted)


def beyond_calibration(spec, params: dict, n_features: int, n_classes: int, arch: str, **regime) -> list[str]:
    """The terms of a configuration's mean calls (as :func:`call_cost` takes it) above the largest its model's
    calibration counted on ``arch``, one line each: where a prediction extrapolates. Empty within the
    calibration."""
    fitted = _fitted(spec, arch)
    if fitted is None or "largest_terms" not in fitted:
        return []
    terms = spec.cost_terms(params, n_features, n_classes, **regime)
    return [f"{quantity} term {k} is {value:,.6g}, counted up to {largest:,.6g}"
            for quantity in ("predict_mean", "learn_mean")
            for k, (value, largest) in enumerate(zip(terms.of(quantity), fitted["largest_terms"][quantity]))
            if value > largest]


def calibrated_cores(learner: str) -> list[str]:
    """The cores (``Board.arch``) a learner's cost model predicts."""
    cores = coefficients().get(learner, {})
    return sorted([*cores, *(arch for arch, bound in BOUNDED_BY.items() if bound in cores)])
