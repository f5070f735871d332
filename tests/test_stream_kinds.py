"""What the search sees in the rows before scoring: classes arriving over time, a change of concept, the reserved
sample and the trivial baselines (edgestream.stream_kinds)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from edgestream.data import make_stream
from edgestream.stream_kinds import (CHANGES, CLASS_INCREMENTS, NO_CHANGE, RESERVE_EVERY, change_p, look_at_rows,
                                     out_of_time, reserved_rows)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=300))
def test_the_reserved_rows_are_one_in_ten_of_each_class_spread_over_its_rows(labels):
    y = np.array(labels)
    reserved = reserved_rows(y, np.unique(y))
    for k in np.unique(y):
        rows = np.flatnonzero(y == k)
        assert reserved[rows].tolist() == [i % RESERVE_EVERY == RESERVE_EVERY // 2 for i in range(len(rows))]


def test_classes_that_arrive_and_leave_are_told_from_a_shuffle():
    y = np.repeat(np.arange(5), 200)
    assert out_of_time(y, np.arange(5)) == ((1, 2, 3, 4), (0, 1, 2, 3))
    shuffled = np.random.default_rng(1).permutation(y)
    assert out_of_time(shuffled, np.arange(5)) == ((), ())
    # a rare class that happens to come late is not an increment: its first row is where chance may put it
    rare = np.zeros(1000, dtype=int)
    rare[[400, 700]] = 1
    assert out_of_time(rare, np.arange(2)) == ((), ())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_halves_test_sees_an_abrupt_change_and_not_a_stationary_stream(seed):
    X, y = make_stream("sea", 8000, seed=seed)  # four concepts of 2,000 rows
    assert change_p(X[:2000], y[:2000], np.array([0, 1])) >= 1e-3
    rng = np.random.default_rng(seed)
    X = rng.random((2000, 3))
    y = (X[:, 0] > 0.5).astype(int)
    y[1000:] = (X[1000:, 0] > 0.8).astype(int)  # the boundary moves at the middle
    assert change_p(X, y, np.array([0, 1])) < 1e-6


def test_the_kind_of_the_rows_and_their_baselines():
    X, y = make_stream("blobs", 2000, seed=5, n_classes=4, n_features=3)
    head, reserved = look_at_rows(X, y, np.unique(y))
    assert head.kind == NO_CHANGE and reserved.sum() == head.reserved == 200
    order = np.argsort(y, kind="stable")
    head, _ = look_at_rows(X[order], y[order], np.unique(y))
    assert head.kind == CLASS_INCREMENTS and head.last_label > 0.99
    assert head.weights[1] > max(head.weights[0], head.weights[2])  # what is kept weighs most
    X, y = make_stream("sea", 12000, seed=6)  # SEA's concept changes every 3,000 rows
    head, _ = look_at_rows(X[:6000], y[:6000], np.array([0, 1]))
    assert head.kind == CHANGES and head.change_p < 1e-3
    values, counts = np.unique(y[:6000][~_], return_counts=True)
    assert head.majority_share == counts.max() / counts.sum()
