"""In-place online GBDT: the fast learner against a from-scratch reference, exact add-then-delete, exact export,
model files and the CLI's update command."""

import hashlib
import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import OnlineGBDTClassifier, encoding, frozen, load_model, save_model
from edgestream.cli import main
from edgestream.data import make_stream
from edgestream.errors import ModelFileError
from edgestream.learners.gbdt import F
from edgestream.modelfile import model_bytes, model_from_bytes
from edgestream.simulate import runtime_forest_predict
from edgestream.tree import LEAF_FEATURE, NODE_DTYPE

from gbdt_reference import ReferenceGBDT, replay_against_reference


def data(seed, n=80, n_features=3, n_classes=3, dtype="float32"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * 4
    y = (np.floor(X[:, 0] + 0.5 * X[:, -1] + rng.normal(size=n)) % n_classes).astype(int)
    y[:n_classes] = np.arange(n_classes)[:n]
    if dtype != "float32":
        X = np.round(X * 100).astype(np.int64)
    return X, y


def small(**params):
    return OnlineGBDTClassifier(**{"n_estimators": 3, "max_leaves": 5, "max_depth": 3, "split_sample_rate": 0.5,
                                   **params})


def state(model):
    """Everything but the row storage's length: trees, sums, and the kept rows' derivatives and leaves."""
    n = model.n_rows_
    alive = np.flatnonzero(model.rows_alive_[:n])
    return {"nodes": model.tree_nodes_.copy(), "slots": model.slots_.copy(), "owner": model.slot_owner_.copy(),
            **{name: getattr(model, name)[:, alive].copy() for name in ("rows_grad_", "rows_hess_", "rows_leaf_")}}


def assert_same_state(a, b):
    for name in a:
        assert np.array_equal(a[name], b[name]), name


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([2, 3]), st.sampled_from([0.0, 0.1, 0.5]), st.sampled_from([1, 4]),
       st.lists(st.tuples(st.booleans(), st.integers(1, 12)), min_size=1, max_size=4))
def test_random_add_delete_equals_the_from_scratch_reference(seed, n_classes, alpha, min_leaf, steps):
    X, y = data(seed, n=50, n_classes=n_classes)
    X_new, y_new = data(seed + 1, n=60, n_classes=n_classes)
    model = small(alpha=alpha, min_samples_leaf=min_leaf).fit(X, y)
    replay_against_reference(model, X_new, y_new, steps, seed)


def test_retrains_happen_and_match_the_reference():
    """alpha = 0 with large changes: subtrees are retrained (derivatives refreshed), still equal to the reference."""
    X, y = data(5, n=60)
    model = small(alpha=0.0, n_estimators=4).fit(X, y)
    reference = ReferenceGBDT(model).fit()
    X_new, y_new = data(6, n=30)
    model.add(X_new, y_new)
    reference.add(X_new, y_new)
    assert model.last_update_["retrained_nodes"] > 0
    reference.assert_equals(model)
    model.delete(np.arange(0, 40, 2))
    reference.delete(np.arange(0, 40, 2))
    reference.assert_equals(model)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([2, 4]), st.integers(1, 6))
def test_deleting_just_added_rows_restores_the_model_when_nothing_was_retrained(seed, n_classes, count):
    X, y = data(seed, n=70, n_classes=n_classes)
    X_new, y_new = data(seed + 7, n=count, n_classes=n_classes)
    model = small(alpha=0.5).fit(X, y)
    before, proba = state(model), model.predict_proba_q15(X)
    rows = model.add(X_new, y_new)
    if model.last_update_["retrained_nodes"]:
        return  # a retrain refreshes other rows' derivatives: the paper promises no exact undo then
    model.delete(rows)
    assert model.last_update_["retrained_nodes"] == 0
    assert_same_state(before, state(model))
    assert np.array_equal(model.predict_proba_q15(X), proba)


def test_add_then_delete_is_exact_on_a_real_sized_model():
    X, y = data(1, n=400, n_features=6, n_classes=4)
    model = OnlineGBDTClassifier(n_estimators=10, alpha=1.0).fit(X, y)
    before = state(model)
    rows = model.add(X[:5] + 0.25, y[:5])
    assert model.last_update_["retrained_nodes"] == 0
    model.delete(rows)
    assert_same_state(before, state(model))
    assert list(model.add(X[:1], y[:1])) == [405]  # numbers are never reused


def breadth_first_tables(model):
    """The exported layout built in plain Python from the tree pool: each tree breadth first (the two children of a
    node side by side), a leaf's row holding its value at score ``t % n_scores``."""
    S, nodes, leaves, roots = model.n_scores_, [], [], []
    for t, pool in enumerate(model.tree_nodes_):
        roots.append(len(nodes))
        order = [0]
        for u in order:
            if pool[u, F["cand"]] >= 0:
                order += [int(pool[u, F["left"]]), int(pool[u, F["right"]])]
        position = {u: len(nodes) + i for i, u in enumerate(order)}
        for u in order:
            c = pool[u, F["cand"]]
            if c >= 0:
                nodes.append((model.cand_feature_[c], model.cand_threshold_[c], position[int(pool[u, F["left"]])]))
            else:
                row = [0] * S
                row[t % S] = pool[u, F["value"]]
                nodes.append((LEAF_FEATURE, 0, len(leaves)))
                leaves.append(row)
    return np.array(nodes, dtype=NODE_DTYPE), np.array(roots, np.uint16), np.array(leaves, np.int16).reshape(-1, S)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([2, 3, 4]), st.sampled_from([0.0, 0.5]),
       st.lists(st.tuples(st.booleans(), st.integers(1, 10)), min_size=1, max_size=3))
def test_exported_tables_are_the_trees_breadth_first_after_any_update(seed, n_classes, alpha, steps):
    X, y = data(seed, n=60, n_classes=n_classes)
    model = small(alpha=alpha, n_estimators=4).fit(X, y)
    rng = np.random.default_rng(seed)
    for adding, count in [(True, 0)] + steps:
        if adding and count:
            model.add(X[:count] + rng.normal(size=(count, X.shape[1])), y[:count])
        elif not adding:
            model.delete(rng.choice(np.flatnonzero(model.rows_alive_[: model.n_rows_]), count, replace=False))
        nodes, roots, leaves = breadth_first_tables(model)
        ensemble = model.ensemble_
        assert np.array_equal(ensemble.nodes, nodes)
        assert np.array_equal(ensemble.roots, roots)
        assert np.array_equal(ensemble.leaf_values, leaves)


def python_calls(call) -> int:
    """Python-level function calls made while running ``call()``."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event == "call"

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return count


def test_updates_make_as_many_python_calls_for_any_number_of_rows_iterations_and_retrains():
    """add and delete run in one compiled pass: no Python call per iteration, tree, node or row."""
    X, y = data(3, n=300, n_features=4, n_classes=4)
    calls = set()
    for n_estimators, count in ((2, 1), (12, 1), (12, 25)):
        model = small(n_estimators=n_estimators, max_leaves=8, alpha=0.0).fit(X[:200], y[:200])
        calls.add(python_calls(lambda: model.add(X[200:200 + count], y[200:200 + count])))
        assert model.last_update_["retrained_nodes"] > 0 or count == 1
        calls.add(python_calls(lambda: model.delete(np.arange(count))))
    assert len(calls) <= 2, calls  # add and delete: each its own fixed number


@st.composite
def fitted_models(draw):
    dtype = draw(st.sampled_from(["float32", "int32", "int16"]))
    n_classes = draw(st.sampled_from([2, 3, 5]))
    seed = draw(st.integers(0, 2**31))
    X, y = data(seed, n=draw(st.integers(20, 60)), n_features=draw(st.integers(1, 4)), n_classes=n_classes,
                dtype=dtype)
    model = OnlineGBDTClassifier(n_estimators=draw(st.integers(1, 4)), max_leaves=draw(st.integers(2, 8)),
                                 max_depth=draw(st.integers(1, 4)),
                                 learning_rate=draw(st.sampled_from([0.1, 1.0, 8.0])),
                                 split_sample_rate=draw(st.sampled_from([0.2, 1.0])), input_dtype=dtype,
                                 alpha=draw(st.sampled_from([0.0, 0.2]))).fit(X, y)
    if draw(st.booleans()):
        model.add(X[:5], y[:5])
        model.delete([0, 1, 2])
    rng = np.random.default_rng(seed)
    probe = np.concatenate([X, X + rng.integers(-2, 3, size=X.shape)]).astype(X.dtype)
    if dtype == "float32":
        probe[rng.random(probe.shape) < 0.05] = np.nan
    return model, probe


@settings(max_examples=200, deadline=None)
@given(fitted_models())
def test_exported_tables_predict_exactly_like_python(fitted):
    model, X = fitted
    encoded = encoding.encode(frozen.DeviceModel.from_model(model), "speed")
    classes, proba = runtime_forest_predict(encoded, X.astype(model.input_dtype))
    assert np.array_equal(classes, model.predict_encoded(X))
    assert np.array_equal(proba, model.predict_proba_q15(X))
    assert np.array_equal(model.predict(X), model.classes_[classes])


def test_learns_and_is_a_scikit_learn_style_estimator():
    X, y = make_stream("blobs", 300, seed=3)
    model = OnlineGBDTClassifier(n_estimators=20)
    assert model.get_params()["alpha"] == 0.1 and "OnlineGBDTClassifier(" in repr(model)
    model.set_params(max_leaves=8).fit(X, y)
    assert model.score(X, y) > 0.8
    proba = model.predict_proba(X)
    assert proba.shape == (300, 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert model.ensemble_.leaf_kind == "additive" and model.ensemble_.leaf_values.dtype == np.int16
    assert "host memory" in model.summary() and model.memory_bytes() > model.rows_grad_.nbytes
    binary = OnlineGBDTClassifier(n_estimators=5).fit(X, y == 1)
    assert binary.ensemble_.leaf_values.shape[1] == 1 and binary.ensemble_.n_trees == 5


def test_model_file_round_trip_then_updates_continue_identically():
    X, y = data(4, n=120)
    model = small(alpha=0.0).fit(X, y)
    loaded = model_from_bytes(model_bytes(model))
    assert model_bytes(loaded) == model_bytes(model)
    for m in (model, loaded):
        m.add(X[:10] * 1.1, y[:10])
        m.delete([3, 4, 5])
    assert_same_state(state(model), state(loaded))


@pytest.mark.parametrize("name, index, value, message", [
    ("tree_nodes", (0, 0, 1), 99, "corrupt tree tables"),  # the root's left child out of the pool
    ("tree_nodes", (0, 0, 3), 2, "corrupt tree tables"),  # the root has a parent
    ("slot_owner", (0, -1), 3, "corrupt tree tables"),  # a slot held by no split
    ("rows_leaf", (0, 0), 300, "corrupt row tables"),
    ("cand_threshold", (0,), 250, "split candidates of feature 0"),
    ("rows_label", (0,), 9, "row labels"),
])
def test_corrupt_state_is_refused(name, index, value, message):
    X, y = data(4, n=120)
    model = small(alpha=0.0).fit(X, y)
    arrays = {key: array.copy() for key, array in model.saved_arrays().items()}
    arrays[name][index] = value
    with pytest.raises(ValueError, match=message):
        _blank(model).restore_arrays(arrays)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["tree_nodes", "slot_owner", "rows_leaf", "rows_alive", "slots",
                                               "rows_grad", "rows_hess", "cand_feature", "cand_start"]))
def test_random_corruption_is_refused_or_harmless(seed, name):
    """A flipped entry of any state table is refused on load, or the model still predicts, adds and deletes."""
    X, y = data(4, n=60)
    model = small(alpha=0.0).fit(X, y)
    model.delete([1, 2])
    arrays = {key: array.copy() for key, array in model.saved_arrays().items()}
    rng = np.random.default_rng(seed)
    flat = arrays[name].reshape(-1)
    flat[rng.integers(len(flat))] = rng.choice([-3, -2, -1, 0, 1, 2, 5, 60, 127, 255, 40000]).astype(flat.dtype)
    blank = _blank(model)
    try:
        blank.restore_arrays(arrays)
    except ValueError:
        return
    blank.predict(X)
    blank.add(X[:5], y[:5])
    blank.delete([0, 3])


def _blank(model):
    blank = OnlineGBDTClassifier(**model.get_params())
    blank.classes_, blank.bins_ = model.classes_, model.bins_
    return blank


@pytest.mark.parametrize("call, message", [
    (lambda m, X, y: m.delete([500]), "row 500 does not exist: row numbers go from 0 to 59"),
    (lambda m, X, y: (m.delete([7]), m.delete([7])), "row 7 was already deleted"),
    (lambda m, X, y: m.delete([1, 1]), "row 1 is listed 2 times"),
    (lambda m, X, y: m.delete([1.5]), "row numbers must be a 1-D list of integers"),
    (lambda m, X, y: m.add(X[:, :2], y), "X has 2 features, but OnlineGBDTClassifier is expecting 3"),
    (lambda m, X, y: m.add(X[:2], [0, 9]), "label 9 is not a class of this model"),
    (lambda m, X, y: m.delete(np.arange(59)), "at least 2 must remain"),
])
def test_bad_input_names_the_value_and_the_limit(call, message):
    X, y = data(8, n=60)
    model = small().fit(X, y)
    with pytest.raises(ValueError, match=message):
        call(model, X, y)


@pytest.mark.parametrize("params, message", [
    ({"alpha": 1.5}, r"alpha=1.5 must be a number in \[0.0, 1.0\]"),
    ({"split_sample_rate": 0}, r"split_sample_rate=0 must be a number in \(0.0, 1.0\]"),
    ({"max_leaves": 1}, "max_leaves=1 must be an integer from 2 to 255"),
    ({"n_estimators": 2000, "max_leaves": 20}, "the exported format holds at most 65535 nodes"),
])
def test_bad_parameters(params, message):
    X, y = data(8, n=60)
    with pytest.raises(ValueError, match=message):
        OnlineGBDTClassifier(**params).fit(X, y)


def write_csv(path, X, y):
    path.write_text("\n".join(",".join([str(v) for v in row] + [str(label)]) for row, label in zip(X, y)) + "\n")


def test_cli_fit_update_export_simulate(capsys, tmp_path):
    X, y = data(9, n=200, n_features=4)
    write_csv(tmp_path / "train.csv", X[:150], y[:150])
    write_csv(tmp_path / "more.csv", X[150:], y[150:])
    write_csv(tmp_path / "narrow.csv", X[:5, :3], y[:5])
    write_csv(tmp_path / "unseen.csv", X[:5], np.full(5, 7))
    model_path = tmp_path / "m.es"
    assert main(["fit", str(tmp_path / "train.csv"), "--label", "4", "--no-header", "--learner", "gbdt",
                 "--n-estimators", "5", "--max-leaves", "6", "--alpha", "0.2", "-o", str(model_path)]) == 0
    assert "host memory" in capsys.readouterr().out
    assert main(["update", str(model_path), "--add", str(tmp_path / "more.csv"), "--label", "4", "--no-header"]) == 0
    assert "added 50 rows (row numbers 150..199)" in capsys.readouterr().out
    (tmp_path / "rows.txt").write_text("3\n4, 5\n")
    assert main(["update", str(model_path), "--delete", str(tmp_path / "rows.txt")]) == 0
    assert main(["update", str(model_path), "--delete", "10,11"]) == 0
    assert "deleted 2 rows" in capsys.readouterr().out
    good = hashlib.sha256(model_path.read_bytes()).hexdigest()
    for argv, message in ((["--delete", "4"], "row 4 was already deleted"),
                          (["--delete", "200"], "row 200 does not exist: row numbers go from 0 to 199"),
                          (["--delete", "x,1"], "row numbers must be integers, got 'x'"),
                          (["--add", str(tmp_path / "narrow.csv"), "--label", "3", "--no-header"],
                           "X has 3 features, but OnlineGBDTClassifier is expecting 4"),
                          (["--add", str(tmp_path / "unseen.csv"), "--label", "4", "--no-header"],
                           "label 7 is not a class of this model"),
                          ([], "nothing to do")):
        assert main(["update", str(model_path), *argv]) == 2
        assert message in capsys.readouterr().err
        assert hashlib.sha256(model_path.read_bytes()).hexdigest() == good
    model = load_model(model_path)
    assert model.n_rows_ == 200 and model.n_kept_rows == 195
    assert main(["export", str(model_path), "-o", str(tmp_path / "bundle")]) == 0
    capsys.readouterr()
    assert main(["simulate", str(tmp_path / "bundle"), str(tmp_path / "train.csv"), "--label", "4", "--no-header",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mismatches"] == 0 and report["proba_mismatches"] == 0 and report["n"] == 150


def test_update_refuses_a_model_that_cannot_update(capsys, tmp_path):
    from edgestream import TreeClassifier

    X, y = data(2, n=40)
    save_model(TreeClassifier(max_depth=2).fit(X, y), tmp_path / "tree.es")
    assert main(["update", str(tmp_path / "tree.es"), "--delete", "1"]) == 2
    assert "cannot add or delete training rows in place" in capsys.readouterr().err


def test_model_file_errors_are_model_file_errors(tmp_path):
    X, y = data(2, n=40)
    data_bytes = bytearray(model_bytes(small().fit(X, y)))
    data_bytes[-100] ^= 1
    with pytest.raises(ModelFileError, match="checksum"):
        model_from_bytes(bytes(data_bytes))


def test_updated_bundle_is_exact_under_qemu_on_a_cortex_m0(capsys, tmp_path):
    """The exported additive model on an FPU-less Cortex-M0+ (rp2040 under QEMU): 0 mismatches after updates."""
    X, y = make_stream("blobs", 120, seed=4)
    write_csv(tmp_path / "blobs.csv", X, y)
    model = small(n_estimators=4, max_leaves=6).fit(X[:100], y[:100])
    model.add(X[100:], y[100:])
    model.delete([0, 5, 9])
    save_model(model, tmp_path / "m.es")
    assert main(["export", str(tmp_path / "m.es"), "-o", str(tmp_path / "bundle")]) == 0
    capsys.readouterr()
    assert main(["simulate", str(tmp_path / "bundle"), str(tmp_path / "blobs.csv"), "--label", "4", "--no-header",
                 "--target", "qemu", "--board", "rp2040", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 120 and report["mismatches"] == 0 and report["proba_mismatches"] == 0


@pytest.mark.parametrize("n_classes", [2, 4])
def test_flash_worst_case_bounds_the_fitted_tables(n_classes):
    from edgestream.learners.gbdt import gbdt_tables

    X, y = data(11, n=200, n_features=5, n_classes=n_classes)
    params = dict(n_estimators=6, max_leaves=7, split_sample_rate=1.0)
    fitted = OnlineGBDTClassifier(**params).fit(X, y)
    exact = dict(gbdt_tables(fitted, 5, n_classes, 4, False, "size"))  # tables (speed walks the trees in code)
    worst = dict(gbdt_tables(OnlineGBDTClassifier(**params), 5, n_classes, 4, False, "size"))
    assert exact["leaves"] <= worst["leaves"] and sum(exact.values()) <= sum(worst.values())
    assert exact["tree_base"] == worst["tree_base"]


def test_budget_plans_the_number_of_iterations(capsys):
    assert main(["budget", "--learner", "gbdt", "--board", "stm32f411", "--features", "16", "--classes", "10",
                 "--flash", "128KiB", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fits"] and report["config"]["n_estimators"] == 20  # 50 needs 277,992 bytes
