import dataclasses
import hashlib
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import ForestClassifier, TreeClassifier
from edgestream import learners, modelfile
from edgestream.errors import ModelFileError
from edgestream.modelfile import MAGIC, load_model, model_bytes, model_from_bytes, save_model


def toy_data(n=120, n_features=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, (X[:, 0] > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 0.5)


def split_file(data: bytes):
    end = data.index(b"\n", len(MAGIC))
    return json.loads(data[len(MAGIC):end]), data[end + 1:]


def join_file(header: dict, payload: bytes, fix_checksum=True) -> bytes:
    if fix_checksum:
        header = {**header, "sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + json.dumps(header).encode() + b"\n" + payload


@pytest.fixture
def forest():
    X, y = toy_data()
    return ForestClassifier(n_trees=4, max_depth=4, random_state=3).fit(X, y), X


@pytest.mark.parametrize("labels", [[3, 7, 11], [0.0, 1.0, 2.0], ["cat", "dog", "eel"], [False, True]])
@pytest.mark.parametrize("learner", [TreeClassifier(max_depth=3), ForestClassifier(n_trees=3, max_depth=3)])
def test_round_trip_keeps_predictions_params_and_label_kind(tmp_path, labels, learner):
    X, y = toy_data()
    y = np.asarray(labels)[y % len(labels)]
    model = learner.fit(X, y)
    loaded = load_model(save_model(model, tmp_path / "m.esm"))
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    assert loaded.classes_.dtype.kind == model.classes_.dtype.kind
    assert loaded.classes_.tolist() == model.classes_.tolist()
    np.testing.assert_array_equal(loaded.predict_proba_q15(X), model.predict_proba_q15(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_round_trip_of_an_integer_input_model(tmp_path):
    X, y = toy_data()
    X = np.nan_to_num(X * 100).astype(np.int32)
    model = TreeClassifier(input_dtype="int32", binning="adaptive", max_bins=16).fit(X, y)
    loaded = load_model(save_model(model, tmp_path / "m.esm"))
    assert loaded.bins_.dtype == "int32" and loaded.bins_.edges_[0].dtype == np.int32
    np.testing.assert_array_equal(loaded.predict_proba_q15(X), model.predict_proba_q15(X))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 80), n_features=st.integers(1, 6),
       n_classes=st.integers(2, 5), forest=st.booleans(), max_depth=st.integers(0, 6),
       binning=st.sampled_from(["quantile", "adaptive"]), max_bins=st.integers(2, 255))
def test_saved_then_loaded_model_predicts_identically(seed, n, n_features, n_classes, forest, max_depth, binning,
                                                      max_bins):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).round(rng.integers(0, 3))
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    params = dict(max_depth=max_depth, binning=binning, max_bins=max_bins)
    model = (ForestClassifier(n_trees=3, random_state=seed, **params) if forest else TreeClassifier(**params)).fit(X, y)
    data = model_bytes(model)
    loaded = model_from_bytes(data)
    probe = np.vstack([X, rng.normal(scale=3, size=(20, n_features)), np.full((1, n_features), np.nan)])
    np.testing.assert_array_equal(loaded.predict_proba_q15(probe), model.predict_proba_q15(probe))
    assert model_bytes(loaded) == data  # the file is a deterministic function of the model


def test_file_layout(forest, tmp_path):
    model, _ = forest
    data = save_model(model, tmp_path / "m.esm").read_bytes()
    header, payload = split_file(data)
    assert data.startswith(b"EDGESTREAM-MODEL\n")
    assert header["format_version"] == 2 and header["learner"] == "ForestClassifier"
    assert header["params"] == model.get_params() and header["classes"] == [0, 1, 2]
    assert header["binning"] == {"max_bins": 255, "strategy": "quantile", "dtype": "float32"}
    assert header["n_features"] == 4 and header["feature_names"] is None and header["sha256"] == hashlib.sha256(payload).hexdigest()
    with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
        assert set(arrays.files) == {"nodes", "roots", "weights", "leaf_values", "bin_edges", "bin_offsets",
                                    "feature_importances"}


def test_flipped_payload_byte_is_a_checksum_error(forest, tmp_path):
    path = save_model(forest[0], tmp_path / "m.esm")
    data = bytearray(path.read_bytes())
    data[-40] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=r"corrupt model file .*m\.esm.*checksum mismatch"):
        load_model(path)


@pytest.mark.parametrize("keep", [0, 5, len(MAGIC), len(MAGIC) + 30, -1, -500])
def test_truncated_file(forest, tmp_path, keep):
    path = save_model(forest[0], tmp_path / "m.esm")
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    with pytest.raises(ModelFileError, match="m.esm"):
        load_model(path)


def test_wrong_magic(tmp_path):
    path = tmp_path / "m.esm"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ModelFileError, match="not an edgestream model file"):
        load_model(path)


def test_future_format_version_names_both_versions(forest):
    header, payload = split_file(model_bytes(forest[0]))
    with pytest.raises(ModelFileError, match=r"format_version 3; this edgestream supports format_version 1 and 2; upgrade"):
        model_from_bytes(join_file({**header, "format_version": 3}, payload))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ModelFileError, match="cannot read model file"):
        load_model(tmp_path / "absent.esm")
    with pytest.raises(ModelFileError, match="cannot write model file"):
        save_model(TreeClassifier().fit(*toy_data()), tmp_path / "no" / "such" / "dir.esm")


def test_header_that_is_not_json(forest):
    _, payload = split_file(model_bytes(forest[0]))
    with pytest.raises(ModelFileError, match="not valid JSON"):
        model_from_bytes(MAGIC + b"{not json\n" + payload)


def test_consistent_checksum_but_broken_tables_is_rejected(forest):
    model, _ = forest
    model.ensemble_.nodes["child"][0] = 60000  # points past the node table
    with pytest.raises(ModelFileError, match="invalid model file"):
        model_from_bytes(model_bytes(model))


def test_unknown_learner_and_bad_classes(forest):
    header, payload = split_file(model_bytes(forest[0]))
    with pytest.raises(ModelFileError, match="unknown learner 'Mystery'"):
        model_from_bytes(join_file({**header, "learner": "Mystery"}, payload))
    with pytest.raises(ModelFileError, match="one kind"):
        model_from_bytes(join_file({**header, "classes": [0, "a", 2]}, payload))
    with pytest.raises(ModelFileError, match="4 class labels, leaf table for 3 classes"):
        model_from_bytes(join_file({**header, "classes": [0, 1, 2, 3]}, payload))


def test_a_state_without_a_region_of_this_version_is_refused():
    """A learning state written before a region existed (here the Hoeffding tree's ``adapt_pos``) is refused,
    naming the entry."""
    X, y = toy_data()
    X = np.nan_to_num(X)  # the Hoeffding tree takes finite features
    model = learners.get("hoeffding").make(max_leaves=4).start(X[:50], np.unique(y)).partial_fit(X, y)
    header, payload = split_file(model_bytes(model))
    with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
        kept = {name: arrays[name] for name in arrays.files if name != "adapt_pos"}
    older = io.BytesIO()
    np.savez(older, **kept)
    with pytest.raises(ModelFileError, match="has no entry 'adapt_pos': written by an edgestream whose state"):
        model_from_bytes(join_file(header, older.getvalue()))


def test_payload_needing_pickle_is_refused(forest):
    header, _ = split_file(model_bytes(forest[0]))
    buffer = io.BytesIO()
    np.savez(buffer, nodes=np.array([object()], dtype=object))
    with pytest.raises(ModelFileError, match="invalid model file"):
        model_from_bytes(join_file(header, buffer.getvalue()))


def test_failed_write_leaves_no_file(forest, tmp_path, monkeypatch):
    path = save_model(forest[0], tmp_path / "m.esm")
    before = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(modelfile.os, "replace", broken_replace)
    with pytest.raises(ModelFileError, match="No space left"):
        save_model(TreeClassifier(max_depth=1).fit(*toy_data()), path)
    assert [p.name for p in tmp_path.iterdir()] == ["m.esm"] and path.read_bytes() == before


def test_unfitted_and_unregistered_models_are_refused(tmp_path):
    with pytest.raises(ModelFileError, match="unfitted TreeClassifier"):
        save_model(TreeClassifier(), tmp_path / "m.esm")

    class Shrub(TreeClassifier):
        pass

    with pytest.raises(ModelFileError, match="not a registered learner"):
        save_model(Shrub().fit(*toy_data()), tmp_path / "m.esm")
    assert not (tmp_path / "m.esm").exists()


def test_registered_learner_round_trips(tmp_path, monkeypatch):
    class Sapling(TreeClassifier):
        pass

    monkeypatch.setitem(learners.REGISTRY, "sapling", dataclasses.replace(learners.get("tree"), name="sapling",
                                                                         cls=Sapling))
    X, y = toy_data()
    loaded = load_model(save_model(Sapling(max_depth=2).fit(X, y), tmp_path / "m.esm"))
    assert type(loaded) is Sapling and loaded.max_depth == 2
