"""Every learning learner recovers from an abrupt change of concept at its defaults: on a stream whose labels are
permuted half-way (every class renamed, the inputs' distribution unchanged), the moving accuracy is back within
two points of its level before the change within RECOVERY_ROWS rows. The class-incremental side (new classes are
not a drift) is in tests/test_hoeffding.py."""

import numpy as np
import pytest

from edgestream import learners
from edgestream.data import make_stream
from edgestream.online import start_online
from edgestream.search import online_learners

ROWS = 16_000
WINDOW = 500  # rows of the moving accuracy
RECOVERY_ROWS = 3_000  # AXGB's replacement of its members after ADWIN fires is the slowest (1,500-2,500 here)


def abrupt_stream(seed: int):
    """Three Gaussian blobs; from the middle on every label moves to another class."""
    X, y = make_stream("blobs", ROWS, seed=seed, n_classes=3, n_features=4)
    y = y.copy()
    y[ROWS // 2:] = (y[ROWS // 2:] + 1) % 3
    return X.astype(np.float32), y


def rows_to_recover(correct: np.ndarray, change: int, before_rows: int = 2000) -> int | None:
    """Rows after ``change`` until the moving accuracy is back within 0.02 of the ``before_rows`` rows before it."""
    before = correct[change - before_rows:change].mean()
    moving = np.convolve(correct[change:], np.ones(WINDOW) / WINDOW, mode="valid")
    back = np.flatnonzero(moving >= before - 0.02)
    return int(back[0]) + WINDOW if len(back) else None


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", online_learners())
def test_every_learner_recovers_from_an_abrupt_change(name, seed):
    X, y = abrupt_stream(seed)
    model = start_online(learners.get(name).make(), X, np.unique(y))
    correct = model.test_then_train(X, y) == y
    assert correct[ROWS // 2 - 2000:ROWS // 2].mean() > 0.85, "the first concept is learned"
    assert correct[ROWS // 2:ROWS // 2 + 20].mean() < 0.5, "the change is a change"
    recovered = rows_to_recover(correct, ROWS // 2)
    assert recovered is not None and recovered <= RECOVERY_ROWS, f"{name}: {recovered} rows"


def test_without_drift_handling_the_hoeffding_tree_does_not_recover():
    """The same stream for the tree without its detectors: the test above can tell."""
    X, y = abrupt_stream(1)
    model = start_online(learners.get("hoeffding").make(drift_threshold=0), X, np.unique(y))
    recovered = rows_to_recover(model.test_then_train(X, y) == y, ROWS // 2)
    assert recovered is None or recovered > RECOVERY_ROWS


@pytest.mark.parametrize("seed", [1, 2])
def test_adaptive_xgboost_recovers_from_agrawal_f1_to_f3_within_2000_rows(seed):
    """A rise of its error empties the ensemble (the members of the old concept no longer outvote the new ones):
    back within two points of the 500 rows before the change in at most 2,000 rows, at the defaults."""
    X, y = make_stream("agrawal", 10_000, seed, functions=(0, 2))
    X = X.astype(np.float32)
    model = start_online(learners.get("axgb").make(), X, np.unique(y))
    correct = model.test_then_train(X, y) == y
    assert correct[4500:5000].mean() > 0.9, "the first concept is learned"
    recovered = rows_to_recover(correct, 5000, before_rows=500)
    assert recovered is not None and recovered <= 2000, recovered
