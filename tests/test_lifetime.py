"""Months on the device: every learning learner's growing state, pushed to its limit (the stated bound of each
count, the lifetime counters at their wrap), then a drift to a new concept learned for 100,000 rows in the compiled
C runtime: the learner adapts (accuracy on the new concept within MARGIN of a fresh learner's) and the C equals the
Python specification after every step of the sampled stretches, the bound's rescaling included. The table of
growing fields (docs/lifetime.md) names every counter and saved region of every learning learner."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgestream import checkpoint, learners
from edgestream.data import make_stream
from edgestream.learners.bls import column_offsets
from edgestream.learners.hoeffding import COUNT_LIMIT, IncrementalRandomForest, Random
from edgestream.lifetime import device_of, device_rows, learn, python_of, stretch_mismatch

DRIFT_ROWS = 100_000
SCORED_ROWS = 20_000  # the last rows of the drift, predicted before they are learned
MARGIN = 0.05  # accuracy on the new concept at least the fresh learner's minus this
STRETCH = 150  # rows of each C == Python stretch
UINT64_WRAP = 2**64 - 3  # n_learned three rows before it wraps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from soak import CONFIGS  # noqa: E402  (the soak run's configurations)

# BLS without forgetting: the factor grows until its bound
LEARNERS = CONFIGS | {"bls": CONFIGS["bls"] | {"forgetting": 1.0}}


def concepts(n, seed):
    """Three Gaussian blobs; the new concept permutes the labels (the old statistics are exactly wrong)."""
    X, y = make_stream("blobs", n, seed=seed, n_classes=3, n_features=4)
    return X.astype(np.float32), y, (y + 1) % 3


def push_shrubs(device):
    config = device.config
    device.counters.since_update = config.update_every - 1
    device.counters.head = config.window_size - 1


def push_bls(device):
    """The factor's largest diagonal entry just below the halving bound (K scaled, W kept), n_learned at its wrap."""
    m = device.config.feature_nodes + device.config.enhancement_nodes
    diagonal = device.regions["factor"][column_offsets(m)]
    device.regions["factor"] *= np.float32(0.999 * device.config.diag_limit / diagonal.max())
    device.counters.n_learned = UINT64_WRAP


def push_hoeffding(device):
    """Every leaf's largest count just below COUNT_LIMIT (priors, estimator counts and M2 scaled alike), the
    grace counters one below their saturation, n_learned at its wrap."""
    C, d = device.n_classes, device.config.n_features
    counts = device.regions["class_count"].reshape(-1, C)
    est = device.regions["est_count"].reshape(-1, C)
    m2 = device.regions["m2"].reshape(-1, C * d)
    for slot in range(len(counts)):
        top = max(counts[slot].max(), est[slot].max())
        if top > 0:
            scale = np.float32((float(COUNT_LIMIT) - 1) / top)
            counts[slot] *= scale
            est[slot] = np.minimum(est[slot] * scale, COUNT_LIMIT - 1)
            m2[slot] *= scale
    device.regions["since"][...] = 2**32 - 2
    device.counters.n_learned = UINT64_WRAP


def push_axgb(device):
    device.regions["adwin"]["n_detections"] = 2**32 - 1


PUSH = {"shrubs": push_shrubs, "bls": push_bls, "hoeffding": push_hoeffding, "irf": push_hoeffding,
        "axgb": push_axgb}


def started(name, X, y):
    learner = learners.get(name).make(**LEARNERS[name])
    return learner.start(X[:500], np.arange(3))


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_pushed_to_its_limits_the_learner_follows_a_drift_like_a_fresh_one(name):
    X, old, new = concepts(2 * DRIFT_ROWS, seed=7)
    learner = started(name, X, old)
    rows = device_rows(learner, X)
    device = device_of(learner)
    learn(device, rows[:20_000], old[:20_000])  # the old concept
    PUSH[name](device)
    python_of(device, learner)  # the host takes the pushed state's image
    drift_rows, drift_labels = rows[DRIFT_ROWS:], new[DRIFT_ROWS:]
    # C == Python: at the drift (the bounds' rescaling, the counters' wrap), in the middle and at the end
    assert stretch_mismatch(device, learner, drift_rows[:STRETCH], drift_labels[:STRETCH]) is None
    middle = DRIFT_ROWS // 2
    learn(device, drift_rows[STRETCH:middle], drift_labels[STRETCH:middle])
    assert stretch_mismatch(device, learner, drift_rows[middle:middle + STRETCH],
                            drift_labels[middle:middle + STRETCH]) is None
    start = middle + STRETCH
    right = learn(device, drift_rows[start:], drift_labels[start:], score_from=DRIFT_ROWS - SCORED_ROWS - start)
    assert stretch_mismatch(device, learner, rows[:STRETCH], new[:STRETCH]) is None
    fresh = started(name, X[DRIFT_ROWS:], new[DRIFT_ROWS:])
    fresh_right = learn(device_of(fresh), drift_rows, drift_labels, score_from=DRIFT_ROWS - SCORED_ROWS)
    pushed, fresh_accuracy = right / SCORED_ROWS, fresh_right / SCORED_ROWS
    assert fresh_accuracy > 0.8, f"the fresh {name} learns the new concept: {fresh_accuracy:.3f}"
    assert pushed >= fresh_accuracy - MARGIN, f"{name}: {pushed:.3f} against a fresh learner's {fresh_accuracy:.3f}"
    if name in ("bls", "hoeffding", "irf"):
        assert device.counter_values()["n_learned"] == (UINT64_WRAP + DRIFT_ROWS + STRETCH) % 2**64



def test_the_pushed_learners_run_clean_under_the_sanitizers():
    """The same lifetime runs with the device C built with AddressSanitizer and UndefinedBehaviorSanitizer: any
    out-of-bounds access or undefined operation stops the run (scripts/sanitize.sh)."""
    assert shutil.which("clang"), "scripts/setup.sh installs clang"
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run(["bash", "scripts/sanitize.sh", "-q", "tests/test_lifetime.py", "-k",
                          "pushed_to_its_limits"],
                         cwd=root, capture_output=True, text=True)
    assert run.returncode == 0 and "5 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]


def test_irf_weights_land_at_any_count():
    """A one-leaf IRF tree learning one class for 300,000 rows from a count one below the bound: its count is
    exactly the sum of the Poisson weights drawn, halved at every crossing of the bound (weights of 1 included;
    a float32 count without the bound would stop at 2**24, and at 2**24 would take no weight of 1)."""
    X = np.zeros((10, 2), np.float32)
    learner = IncrementalRandomForest(n_trees=1, max_leaves=1, bagging_lambda=1.0, seed=5).start(X + [[0, 1]], [0, 1])
    device = device_of(learner)
    device.regions["class_count"][0] = device.regions["est_count"][0] = COUNT_LIMIT - 1
    draws = Random(device.counters.random)
    limit = learner.device_config()["exp_neg_lambda"]
    expected, halvings = float(COUNT_LIMIT - 1), 0
    for _ in range(300_000):
        expected += draws.poisson(limit)
        if expected >= COUNT_LIMIT:
            expected, halvings = expected / 2, halvings + 1
    learn(device, np.zeros((300_000, 2), np.float32), np.zeros(300_000, int))
    assert halvings > 20
    assert device.regions["class_count"][0] == expected == device.regions["est_count"][0]
    assert float(np.float32(2**24) + np.float32(1)) == 2**24  # what the bound avoids


def test_hoeffding_halving_keeps_means_variances_and_priors():
    X, y, _ = concepts(3000, seed=1)
    learner = started("hoeffding", X, y)
    for x, label in zip(X[:1000], y[:1000]):
        learner.learn_encoded(x, int(label))
    s = int(learner.child[0, learner._leaf_node(0, X[0])])
    for name in ("class_count", "est_count", "m2"):
        getattr(learner, name)[0, s] *= np.float32(8)
    label = int(np.argmax(learner.class_count[0, s]))
    learner.class_count[0, s, label] = COUNT_LIMIT - 1
    before = {name: getattr(learner, name)[0, s].copy() for name in ("class_count", "est_count", "m2", "mean")}
    learner._learn_tree(0, learner.mean[0, s, label].copy(), label, 1)  # a row at the class's mean
    assert learner.class_count[0, s, label] == COUNT_LIMIT / 2
    others = np.arange(3) != label
    assert np.array_equal(learner.class_count[0, s, others], before["class_count"][others] / 2)
    assert np.array_equal(learner.m2[0, s, others], before["m2"][others] / 2)
    assert np.array_equal(learner.mean[0, s, others], before["mean"][others])


def test_states_past_the_bounds_are_refused_or_rescaled_alike():
    """A Hoeffding count at twice the bound is refused on the host and on the device; a BLS factor past its
    bound is accepted and halved by the next step, the same in C and Python."""
    X, y, _ = concepts(2000, seed=2)
    tree = started("hoeffding", X, y)
    device = device_of(tree)
    learn(device, X[:300], y[:300])
    device.regions["class_count"][0] = 2 * COUNT_LIMIT
    with pytest.raises(ValueError, match="leaf count is 32768.0"):
        python_of(device, tree)
    assert device.lib.es_hoeffding_validate(device.model) != 0
    bls = started("bls", X, y)
    device = device_of(bls)
    learn(device, X[:300], y[:300])
    device.regions["factor"] *= np.float32(64 * device.config.diag_limit)
    assert stretch_mismatch(device, bls, X[300:340], y[300:340]) is None
    m = device.config.feature_nodes + device.config.enhancement_nodes
    assert device.regions["factor"][column_offsets(m)].max() < device.config.diag_limit


def test_images_of_the_previous_format_are_refused():
    X, y, _ = concepts(600, seed=3)
    learner = started("hoeffding", X, y)
    image = bytearray(checkpoint.write_image(learner))
    image[4] = 1
    with pytest.raises(ValueError, match="format version 1"):
        checkpoint.read_image(learner, bytes(image))


def test_the_lifetime_table_names_every_growing_field():
    """docs/lifetime.md lists, per learning learner, every counter and every region an image saves."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "lifetime.md").read_text()
    rows = {(line.split("|")[1].strip(), field) for line in text.splitlines() if line.startswith("| ")
            for field in re.findall(r"`(\w+)`", line.split("|")[2])}
    for name in ("shrubs", "bls", "hoeffding", "axgb"):  # irf has hoeffding's state description
        state = learners.get(name).state
        saved = [r.name for r in state.regions if r.group not in checkpoint.UNSAVED_GROUPS]
        for field in [f.name for f in state.counters] + saved:
            assert (name, field) in rows, f"docs/lifetime.md has no row for {name} {field}"
