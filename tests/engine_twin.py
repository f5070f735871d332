"""A learner's twin on the compiled host engine, stepped beside its Python specification in the parity
properties, so that each of them holds specification == engine == device C after every step."""

import copy

import numpy as np


def engine_state(learner):
    """The engine's regions and counters, read without handing the state back: scratch left out, and the caches
    the specification does not keep (the runtime's own, e.g. the Hoeffding trees' row last predicted)."""
    arrays, counters = learner.__dict__["_state_engine"].device_state()
    kept = type(learner).engine_state
    left_out = {r.name for r in learner.layout().regions
                if r.group == "scratch" or (r.group == "cache" and r.name not in kept)}
    return {name: values for name, values in arrays.items() if name not in left_out}, counters


def assert_same_state(engine, spec, where: str = ""):
    """The engine learner's state (held by its engine) is the specification learner's, bit for bit."""
    arrays, counters = engine_state(engine)
    expected_arrays, expected_counters = spec.device_state()
    assert counters == expected_counters, where
    for name, values in arrays.items():
        expected = np.ascontiguousarray(expected_arrays[name]).reshape(-1)
        assert np.array_equal(values.view(np.uint8), expected.view(np.uint8)), f"{name} {where}"


class EngineTwin:
    """A copy of a started learner that learns on the engine; ``step`` predicts and learns one raw row there and
    checks the class against the specification's (before) and the state against it (after the specification
    has learned the row too: call ``step`` after the specification's own step, with its prediction)."""

    def __init__(self, learner):
        self.learner = copy.deepcopy(learner)
        self.learner.use_engine = True

    def step(self, x, label: int, spec, spec_class: int, where: str = "") -> None:
        twin = self.learner
        assert twin.predict_row(np.asarray(x)) == twin.classes_[spec_class], f"class {where}"
        twin.learn_row(np.asarray(x), twin.classes_[label])
        assert_same_state(twin, spec, where)
