"""Fast exact inference (edgestream.encoding, csrc/es_infer.c): the raw-compare rule equals the bin rule, every
encoding and leaf kind predicts like the Python model, in Python and through the compile-once C runtime, and a
few generated bundles compile and agree end to end."""

import dataclasses
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import ForestClassifier, TreeClassifier
from edgestream.encoding import (COMPLETE_MAX_DEPTH, Q15_ONE, _leaf_depths, additive_classes, apply_raw, encode,
                                 node_edges, past_last, restrict_leaf_values)
from edgestream.export import export_bundle
from edgestream.frozen import DeviceModel
from edgestream.modelfile import model_from_bytes, model_bytes
from edgestream.tree import LEAF_FEATURE, NODE_DTYPE, TreeEnsemble
from edgestream.simulate import load_bundle, runtime, runtime_forest_predict

DTYPES = ("float32", "int32", "int16")
F32_SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.2e-38, -1.2e-38, 3.4e38,
                         -3.4e38], dtype=np.float32)


def random_data(rng, dtype, n_rows, n_features, n_classes):
    """Continuous, few-valued or extreme columns of the dtype; float columns with NaN and infinities."""
    if dtype == "float32":
        X = rng.normal(scale=10.0 ** rng.integers(-20, 20), size=(n_rows, n_features))
        X[:, ::3] = rng.integers(0, 5, size=X[:, ::3].shape)
        X[rng.random(X.shape) < 0.1] = np.nan
        X[rng.random(X.shape) < 0.03] = np.inf
        X[rng.random(X.shape) < 0.03] = -0.0
    else:
        info = np.iinfo(dtype)
        X = rng.integers(info.min, info.max, size=(n_rows, n_features), endpoint=True)
        X[:, ::2] = rng.integers(-5, 5, size=X[:, ::2].shape)
    y = rng.integers(0, n_classes, n_rows)
    informative = rng.integers(0, n_features)
    column = np.nan_to_num(X[:, informative].astype(np.float64))
    y = np.where(rng.random(n_rows) < 0.6, (column > np.median(column)).astype(int), y)
    y[:2] = [0, 1]
    return X, y


def probe_rows(X, edges, dtype, rng):
    """Training rows, resampled rows, and rows of every edge, its neighbours of the dtype and the extremes."""
    values = np.asarray(edges)
    if dtype == "float32":
        values = values.astype(np.float32)
        near = np.concatenate([values, np.nextafter(values, np.float32(np.inf)),
                               np.nextafter(values, np.float32(-np.inf)), F32_SPECIALS])
    else:
        info = np.iinfo(dtype)
        wide = values.astype(np.int64)
        near = np.concatenate([wide, wide + 1, wide - 1, [info.min, info.max, 0, -1, 1]]).clip(info.min, info.max)
    near = near.astype(dtype)
    fresh = X[rng.integers(0, len(X), len(X))].copy()
    n_features = X.shape[1]
    picks = near[rng.integers(0, len(near), size=(max(len(near), 8), n_features))] if len(near) else fresh[:0]
    if dtype == "float32":
        fresh[rng.random(fresh.shape) < 0.3] = np.nan
    return np.concatenate([X.astype(dtype) if dtype != "float32" else X, fresh, picks.astype(X.dtype)])


@st.composite
def fitted_models(draw, dtypes=DTYPES):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(dtypes))
    X, y = random_data(rng, dtype, draw(st.integers(2, 120)), draw(st.integers(1, 6)), draw(st.integers(2, 5)))
    common = dict(max_depth=draw(st.integers(0, 9)), min_samples_leaf=draw(st.integers(1, 4)),
                  max_bins=draw(st.sampled_from([2, 3, 16, 255])), binning=draw(st.sampled_from(["quantile", "adaptive"])),
                  input_dtype=dtype, leaf_values=draw(st.sampled_from(["q15", "q8", "vote"])))
    if draw(st.booleans()):
        model = TreeClassifier(**common)
    else:
        model = ForestClassifier(n_trees=draw(st.integers(1, 6)), random_state=draw(st.integers(0, 99)),
                                 max_features=draw(st.sampled_from(["sqrt", None])), **common)
    model.fit(X, y)
    edges = np.concatenate(model.bins_.edges_) if model.bins_.edges_ else np.zeros(0)
    return model, probe_rows(X, edges, dtype, rng)


ENCODING_FORMS = [(None, None), ("inline", None), ("index", None), (None, "folded"), ("inline", "complete")]


@settings(max_examples=200)
@given(fitted_models(), st.sampled_from(["speed", "size"]), st.sampled_from(ENCODING_FORMS))
def test_every_encoding_predicts_like_the_python_model(fitted, optimize, form):
    """The main parity property: Python model == encoded tables (Python) == es_forest_predict_* (C), bit for bit,
    for every threshold form and tree layout (the complete layout's padding included: NaN rows go right there)."""
    model, rows = fitted
    thresholds, tree = form
    encoded = encode(DeviceModel.from_model(model), optimize, thresholds, tree)
    if tree is not None:
        assert encoded.encoding.tree == tree
    expected_proba, expected = model.predict_proba_q15(rows), model.predict_encoded(rows)
    assert np.array_equal(encoded.predict_proba_q15(rows), expected_proba)
    classes, proba = runtime_forest_predict(encoded, rows)
    assert np.array_equal(proba, expected_proba)
    assert np.array_equal(classes, expected)
    if model.leaf_values == "vote":
        assert encoded.encoding.leaves == "class"


@settings(max_examples=60)
@given(fitted_models())
def test_raw_compare_rule_equals_the_bin_rule(fitted):
    """x <= edge (past-last edge: +inf / the type's max; NaN right) reaches the leaf the bins reach."""
    model, rows = fitted
    ensemble = model.ensemble_
    edges = node_edges(model.bins_.edges_, ensemble.nodes, model.bins_.dtype)
    raw = apply_raw(ensemble.nodes, ensemble.roots, edges, rows)
    assert np.array_equal(raw, ensemble.apply(model.bins_.transform(rows)))


def unbalanced_forest(dtype="float32", leaf_values="q15", depth=4):
    """A forest whose trees have leaves at many depths (so the complete layout pads), on NaN-rich data."""
    rng = np.random.default_rng(5)
    X, y = random_data(rng, dtype, 300, 4, 3)
    model = ForestClassifier(n_trees=5, max_depth=depth, min_samples_leaf=8, input_dtype=dtype,
                             leaf_values=leaf_values, random_state=2).fit(X, y)
    return model, probe_rows(X, np.concatenate(model.bins_.edges_), dtype, rng)


def test_complete_layout_pads_leaves_to_one_slot_and_speed_picks_it():
    model, rows = unbalanced_forest()
    encoded = encode(DeviceModel.from_model(model), "speed")
    enc = encoded.encoding
    assert enc.tree == "complete" and enc.thresholds == "inline" and enc.layout & 8
    n_nodes = 2**enc.depth - 1
    assert len(encoded.feature) == len(encoded.threshold) == encoded.n_trees * n_nodes
    assert len(encoded.children) == encoded.n_trees * (n_nodes + 1)
    depths = [len(d) for d in _leaf_depths(model.ensemble_)]
    assert max(depths) < 2**enc.depth  # some leaves are shallower: their slot fills the bottom positions below
    assert np.array_equal(encoded.predict_proba_q15(rows), model.predict_proba_q15(rows))
    assert encode(DeviceModel.from_model(model), "size").encoding.tree == "folded"
    with pytest.raises(ValueError, match="inline"):
        encode(DeviceModel.from_model(model), "speed", "index", "complete")


def test_speed_keeps_the_folded_layout_for_deep_or_lopsided_trees():
    X = np.arange(64.0).reshape(-1, 1)
    chain = TreeClassifier(max_depth=12).fit(X, np.arange(64) % 2 * (X[:, 0] > 40))  # one long path
    assert encode(DeviceModel.from_model(chain), "speed").encoding.tree == "folded"
    deep = TreeClassifier(max_depth=11).fit(X, np.arange(64) % 3)
    assert max(d.max() for d in _leaf_depths(deep.ensemble_)) > COMPLETE_MAX_DEPTH
    assert encode(DeviceModel.from_model(deep), "speed").encoding.tree == "folded"
    with pytest.raises(ValueError, match="depth"):
        encode(DeviceModel.from_model(deep), "speed", tree="complete")


def test_runtime_refuses_a_complete_model_deeper_than_it_unrolls():
    model, rows = unbalanced_forest(depth=3)
    encoded = encode(DeviceModel.from_model(model), "speed", tree="complete")
    encoded.encoding = dataclasses.replace(encoded.encoding, depth=COMPLETE_MAX_DEPTH + 1)
    with pytest.raises(Exception, match="es_forest_predict"):
        runtime_forest_predict(encoded, rows[:1])


def test_past_last_edges_send_everything_but_nan_left():
    assert past_last("float32") == np.inf and past_last("int16") == 32767 and past_last("int32") == 2**31 - 1


@settings(max_examples=300)
@given(st.floats(width=32, allow_nan=True), st.floats(width=32, allow_nan=False))
def test_float_compare_on_bit_patterns_is_exact(x, e):
    """The compare for cores without an FPU: sign-magnitude integers, NaN false, -0 == +0."""
    _, lib = runtime()
    assert bool(lib.es_f32_le_bits(x, e)) == bool(np.float32(x) <= np.float32(e))


def test_float_compare_on_bit_patterns_at_the_corners():
    _, lib = runtime()
    for x in F32_SPECIALS:
        for e in F32_SPECIALS[~np.isnan(F32_SPECIALS)]:
            assert bool(lib.es_f32_le_bits(float(x), float(e))) == bool(x <= e), (x, e)


@st.composite
def additive_models(draw):
    """A fitted tree or forest turned into a random additive ensemble: int16 scores, int32 base scores."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    n_classes = draw(st.integers(2, 5))
    X, y = random_data(rng, dtype, draw(st.integers(2, 100)), draw(st.integers(1, 5)), n_classes)
    model = ForestClassifier(n_trees=draw(st.integers(1, 8)), max_depth=draw(st.integers(0, 6)), input_dtype=dtype,
                             random_state=1).fit(X, y)
    ensemble = model.ensemble_
    n_scores = 1 if len(model.classes_) == 2 and draw(st.booleans()) else len(model.classes_)
    scale = draw(st.sampled_from([3, 300, 32767]))
    ensemble.leaf_values = rng.integers(-scale, scale, size=(len(ensemble.leaf_values), n_scores),
                                        endpoint=True).astype(np.int16)
    ensemble.leaf_kind = "additive"
    ensemble.base_score = rng.integers(-2**20, 2**20, size=n_scores).astype(np.int32)
    ensemble.validate()
    edges = np.concatenate(model.bins_.edges_) if model.bins_.edges_ else np.zeros(0)
    return model, probe_rows(X, edges, dtype, rng)


@settings(max_examples=80)
@given(additive_models(), st.sampled_from(["speed", "size"]), st.sampled_from([None, "folded", "complete"]))
def test_additive_leaves_sum_and_argmax_like_python(fitted, optimize, tree):
    model, rows = fitted
    ensemble = model.ensemble_
    bins = model.bins_.transform(rows)
    leaves = ensemble.apply(bins)
    sums = ensemble.base_score.astype(np.int64) + ensemble.leaf_values[leaves].astype(np.int64).sum(axis=1)
    expected = additive_classes(sums)
    assert np.array_equal(ensemble.predict(bins), expected)
    encoded = encode(DeviceModel.from_model(model), optimize, tree=tree)
    assert encoded.encoding.leaves == "additive"
    assert np.array_equal(encoded.predict(rows), expected)
    classes, proba = runtime_forest_predict(encoded, rows)
    assert np.array_equal(classes, expected)
    assert np.array_equal(proba, ensemble.predict_proba_q15(bins))


def test_binary_additive_uses_one_score_and_positive_means_class_1():
    assert additive_classes(np.array([[5], [0], [-3]])).tolist() == [1, 0, 0]
    assert additive_classes(np.array([[1, 1, 0], [0, 2, 2]])).tolist() == [0, 1]


def one_leaf_forest(rows, weights) -> DeviceModel:
    """Trees of one leaf each (tree t: leaf row t, weight t): every row of input reaches the same sums."""
    n_trees = len(rows)
    nodes = np.array([(LEAF_FEATURE, 0, t) for t in range(n_trees)], dtype=NODE_DTYPE)
    ensemble = TreeEnsemble(nodes, np.arange(n_trees, dtype=np.uint16), np.asarray(weights, dtype=np.uint16),
                            np.asarray(rows, dtype=np.uint16), 1)
    return DeviceModel("float32", np.zeros(0, dtype=np.float32), np.zeros(2, dtype=np.uint16), ensemble)


def class_alone_agrees(device: DeviceModel) -> int:
    """The class of the runtime's class-only call (and of its call with probabilities) is Python's first largest
    rounded probability; returns it."""
    encoded = encode(device, "speed")
    x = np.zeros((1, 1), dtype=np.float32)
    expected_proba = encoded.predict_proba_q15(x)
    classes, proba = runtime_forest_predict(encoded, x)
    assert np.array_equal(proba, expected_proba)
    assert classes[0] == encoded.predict(x)[0] == np.argmax(expected_proba[0])
    return int(classes[0])


@pytest.mark.parametrize("sums, weights, expected", [
    ([16383, 16384], [1, 1], 0),  # the larger sum rounds to the earlier class's probability: the earlier class
    ([16384, 16385], [1, 1], 1),  # within the total weight but a larger probability
    ([16382, 16384], [1, 1], 1),  # the total weight apart: no division needed
    ([9, 7, 9, 31, 32], [1, 1], 3),  # the largest sum rises twice, the last time within the weight: the rise before
])
def test_class_alone_breaks_rounded_ties_like_python(sums, weights, expected):
    rows = [sums, [0] * len(sums)][:len(weights)]
    assert class_alone_agrees(one_leaf_forest(rows, weights)) == expected


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 256]))
def test_class_alone_on_near_ties_is_the_first_largest_probability(seed, step):
    """Leaf rows one unit (or q8 step) apart on 2 to 4 weighted trees: a class before the first largest sum is
    often within the total weight of it (in about 3 draws of 10 the classes of the largest sum and of the largest
    probability differ); the class-only call skips its division only where that cannot change the class."""
    rng = np.random.default_rng(seed)
    n_trees, n_classes = rng.integers(2, 5), rng.integers(2, 7)
    rows = (rng.integers(0, 32700) // step + rng.integers(-1, 2, size=(n_trees, n_classes))) * step
    class_alone_agrees(one_leaf_forest(rows.clip(0, Q15_ONE), rng.integers(1, 10, size=n_trees)))


def test_leaf_value_rules():
    rows = np.array([[32768, 0, 0], [10923, 10923, 10922], [100, 32000, 668]], dtype=np.uint16)
    q8 = restrict_leaf_values(rows, "q8")
    assert not (q8 & 0xFF).any() and q8[0, 0] == 32768 and q8[1].tolist() == [43 << 8, 43 << 8, 43 << 8]
    vote = restrict_leaf_values(rows, "vote")
    assert vote.tolist() == [[Q15_ONE, 0, 0], [Q15_ONE, 0, 0], [0, Q15_ONE, 0]]
    for mode in ("q8", "vote"):
        once = restrict_leaf_values(rows, mode)
        assert np.array_equal(restrict_leaf_values(once, mode), once)
    with pytest.raises(ValueError, match="leaf_values"):
        TreeClassifier(leaf_values="q4").fit(np.arange(4.0).reshape(-1, 1), [0, 1, 0, 1])


@pytest.mark.parametrize("leaf_values", ["q8", "vote"])
def test_leaf_values_survive_the_model_file(leaf_values):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] + rng.normal(scale=0.5, size=200) > 0).astype(int) + (X[:, 1] > 1)
    model = ForestClassifier(n_trees=4, max_depth=4, leaf_values=leaf_values).fit(X, y)
    loaded = model_from_bytes(model_bytes(model))
    assert loaded.leaf_values == leaf_values
    assert np.array_equal(loaded.predict_proba_q15(X), model.predict_proba_q15(X))
    with pytest.raises(Exception, match="leaf_values"):
        model_from_bytes(model_bytes(ForestClassifier(n_trees=4, max_depth=4).fit(X, y)).replace(
            b'"leaf_values": "q15"', f'"leaf_values": "{leaf_values}"'.encode()))


def test_int16_edges_are_int16_midpoints():
    X = np.array([[-32768], [-32767], [0], [1], [32766], [32767]], dtype=np.int16)
    model = TreeClassifier(input_dtype="int16").fit(X, [0, 1, 0, 1, 0, 1])
    edges = model.bins_.edges_[0]
    assert edges.dtype == np.int16 and edges.tolist() == [-32768, -16384, 0, 16383, 32766]
    with pytest.raises(ValueError, match="int16"):
        model.predict(np.array([[40000]]))


BUNDLES = [  # (learner, input dtype, leaf values, optimize): every leaf storage, both threshold forms, each input
    ("forest", "float32", "q15", "speed"),
    ("forest", "float32", "q8", "size"),
    ("forest", "float32", "vote", "size"),
    ("tree", "int16", "q15", "size"),
    ("forest", "int32", "vote", "speed"),
    ("tree", "int16", "q8", "speed"),
]


@pytest.mark.parametrize("learner, dtype, leaf_values, optimize", BUNDLES)
def test_generated_bundles_match_python(tmp_path, learner, dtype, leaf_values, optimize):
    rng = np.random.default_rng(11)
    X, y = random_data(rng, dtype, 300, 5, 3)
    cls = TreeClassifier if learner == "tree" else ForestClassifier
    params = {} if learner == "tree" else {"n_trees": 5}
    model = cls(max_depth=6, input_dtype=dtype, leaf_values=leaf_values, **params).fit(X, y)
    bundle = load_bundle(export_bundle(model, tmp_path / "b", name="sensor", optimize=optimize))
    assert bundle.manifest["optimize"] == optimize and bundle.manifest["encoding"]["input_dtype"] == dtype
    assert bundle.manifest["encoding"]["tree"] == ("inline" if optimize == "speed" else "folded")
    edges = np.concatenate(model.bins_.edges_)
    rows = probe_rows(X, edges, dtype, rng)
    assert np.array_equal(bundle.predict_proba_q15(rows), model.predict_proba_q15(rows))
    assert np.array_equal(bundle.predict_encoded(rows), model.predict_encoded(rows))


@pytest.mark.parametrize("optimize", ["size", "speed"])
@pytest.mark.parametrize("cpu", ["-mcpu=cortex-m0plus", "-mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16"])
def test_bundles_cross_build_without_warnings(tmp_path, cpu, optimize):
    X = np.random.default_rng(0).normal(size=(100, 4))
    model = ForestClassifier(n_trees=3, leaf_values="q8").fit(X, (X[:, 0] > 0).astype(int))
    out = export_bundle(model, tmp_path / "bundle", optimize=optimize)
    flags = f"-std=c99 -Wall -Wextra -Werror -pedantic -Os -mthumb {cpu}"
    result = subprocess.run(["make", "-C", str(out), "libmodel.a", "CC=arm-none-eabi-gcc", "AR=arm-none-eabi-ar",
                             f"CFLAGS={flags}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_bit_pattern_walk_matches_python(tmp_path):
    """es_infer.c as built for cores without an FPU (ES_F32_COMPARE_BITS), compiled on the host: same results."""
    from edgestream.export import runtime_sources
    from edgestream.simulate import compile_library, header_cdef

    csrc = runtime_sources()[0].parent
    source = tmp_path / "es_infer_bits.c"
    # as built for cores without an FPU: bit-pattern compares, one tree at a time (ES_INFER_WAYS 1)
    source.write_text("#define ES_F32_COMPARE_BITS 1\n#define ES_INFER_WAYS 1\n" + (csrc / "es_infer.c").read_text())
    library = compile_library(header_cdef(["es_infer.h"]), '#include "es_infer.h"', [source, csrc / "es_fixed.c"], csrc)
    rng = np.random.default_rng(8)
    for leaf_values in ("q15", "vote"):
        X, y = random_data(rng, "float32", 300, 6, 4)
        model = ForestClassifier(n_trees=4, max_depth=6, leaf_values=leaf_values).fit(X, y)
        rows = probe_rows(X, np.concatenate(model.bins_.edges_), "float32", rng)
        for optimize in ("speed", "size"):
            classes, proba = runtime_forest_predict(encode(DeviceModel.from_model(model), optimize), rows, library)
            assert np.array_equal(proba, model.predict_proba_q15(rows))
            assert np.array_equal(classes, model.predict_encoded(rows))


def test_cli_fit_leaf_values_and_export_optimize(tmp_path):
    import json

    from edgestream.cli import main

    rng = np.random.default_rng(4)
    X = rng.integers(-300, 300, size=(120, 3))
    y = (X[:, 0] > X[:, 1]).astype(int)
    data = tmp_path / "d.csv"
    np.savetxt(data, np.column_stack([y, X]), fmt="%d", delimiter=",")
    model = tmp_path / "m.esm"
    assert main(["fit", str(data), "--label", "0", "--no-header", "--learner", "forest", "--n-trees", "3",
                 "--leaf-values", "vote", "--input-dtype", "int16", "-o", str(model)]) == 0
    assert main(["export", str(model), "-o", str(tmp_path / "b"), "--optimize", "size"]) == 0
    manifest = json.loads((tmp_path / "b" / "edgestream.json").read_text())
    assert manifest["optimize"] == "size" and manifest["encoding"]["leaves"] == "class"
    assert manifest["encoding"]["input_dtype"] == "int16"
    assert main(["fit", str(data), "--label", "0", "--no-header", "--learner", "shrubs", "--leaf-values", "q8",
                 "-o", str(model)]) == 2
