"""Exact parity of the device C with the Python specification: every class and every Q15 probability.

The property tests drive the runtime compiled once (edgestream.simulate.runtime) with the very tables the
generator writes (DeviceModel); the end-to-end tests compile real generated bundles.
"""

import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import ForestClassifier, TreeClassifier
from edgestream.export import export_bundle
from edgestream.frozen import DeviceModel
from edgestream.simulate import load_bundle, runtime_predict_proba


@st.composite
def datasets(draw, integer=False):
    """Random small classification sets: continuous, few-valued, with missing values and infinities."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_rows = draw(st.integers(2, 150))
    n_features = draw(st.integers(1, 8))
    n_classes = draw(st.integers(2, 6))
    kind = draw(st.sampled_from(["continuous", "few_values", "missing"] if not integer else ["integer"]))
    if kind == "integer":
        X = rng.integers(-(2**31), 2**31 - 1, size=(n_rows, n_features), dtype=np.int64)
        X[:, ::2] = rng.integers(-5, 5, size=X[:, ::2].shape)
        X = X.astype(np.int32)
    elif kind == "few_values":
        X = rng.integers(0, 5, size=(n_rows, n_features)).astype(float)
    else:
        X = rng.normal(scale=10.0 ** rng.integers(-30, 30), size=(n_rows, n_features))
        if kind == "missing":
            X[rng.random(X.shape) < 0.2] = np.nan
            X[rng.random(X.shape) < 0.05] = np.inf
    y = rng.integers(0, n_classes, n_rows)
    informative = rng.integers(0, n_features)
    if kind != "missing":
        y = np.where(rng.random(n_rows) < 0.5, (X[:, informative] > np.median(X[:, informative])).astype(int), y)
    y[:2] = [0, 1]
    return X, y, rng


@st.composite
def learners(draw, input_dtype="float32"):
    common = dict(
        max_depth=draw(st.integers(0, 10)),
        min_samples_leaf=draw(st.integers(1, 5)),
        max_nodes=draw(st.one_of(st.none(), st.integers(1, 60))),
        criterion=draw(st.sampled_from(["gini", "entropy"])),
        max_bins=draw(st.sampled_from([2, 3, 16, 255])),
        binning=draw(st.sampled_from(["quantile", "adaptive"])),
        input_dtype=input_dtype,
    )
    if draw(st.booleans()):
        return TreeClassifier(**common)
    return ForestClassifier(n_trees=draw(st.integers(1, 6)), random_state=draw(st.integers(0, 1000)),
                            max_features=draw(st.sampled_from(["sqrt", None, 1])), **common)


def probe_rows(X, rng):
    """Training rows, fresh rows, and rows of extreme and missing values."""
    fresh = X[rng.integers(0, len(X), len(X))].copy()
    if X.dtype.kind == "f":
        fresh[rng.random(fresh.shape) < 0.3] = np.nan
        extremes = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, 3e38])
    else:
        extremes = np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0, -1])
    corner = np.resize(extremes, (len(extremes), X.shape[1])).astype(X.dtype)
    return np.concatenate([X, fresh, corner])


def assert_device_matches(model, X, rng):
    rows = probe_rows(X, rng)
    device = DeviceModel.from_model(model)
    c_proba = runtime_predict_proba(device, rows)
    python_proba = model.predict_proba_q15(rows)
    assert np.array_equal(c_proba, python_proba)
    assert np.array_equal(np.argmax(c_proba, axis=1), model.predict_encoded(rows))


@settings(max_examples=300)
@given(datasets(), learners())
def test_c_runtime_matches_python_on_float_input(data, model):
    X, y, rng = data
    assert_device_matches(model.fit(X, y), X, rng)


@settings(max_examples=200)
@given(datasets(integer=True), learners(input_dtype="int32"))
def test_c_runtime_matches_python_on_int32_input(data, model):
    X, y, rng = data
    assert_device_matches(model.fit(X, y), X, rng)


@pytest.mark.parametrize("model", [TreeClassifier(max_depth=6, criterion="entropy"),
                                   ForestClassifier(n_trees=4, max_depth=5, random_state=3)])
def test_generated_bundle_matches_python(tmp_path, model):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 3]) > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 1)
    model.fit(X, y)
    bundle = load_bundle(export_bundle(model, tmp_path / "bundle", name="sensor"))
    rows = probe_rows(X, rng)
    assert np.array_equal(bundle.predict_proba_q15(rows), model.predict_proba_q15(rows))
    assert np.array_equal(bundle.predict_encoded(rows), model.predict_encoded(rows))
    assert np.array_equal(bundle.predict(rows), model.predict(rows))


def test_integer_bundle_matches_python(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.integers(-2000, 2000, size=(200, 3)).astype(np.int32)
    y = (X[:, 0] > X[:, 1]).astype(int)
    model = TreeClassifier(max_depth=5, input_dtype="int32").fit(X, y)
    bundle = load_bundle(export_bundle(model, tmp_path / "bundle"))
    rows = probe_rows(X, rng)
    assert np.array_equal(bundle.predict_proba_q15(rows), model.predict_proba_q15(rows))


@pytest.mark.parametrize("compiler", ["cc", "arm-none-eabi-gcc"])
def test_bundle_builds_without_warnings(tmp_path, compiler):
    X = np.random.default_rng(0).normal(size=(100, 4))
    model = ForestClassifier(n_trees=3).fit(X, (X[:, 0] > 0).astype(int))
    out = export_bundle(model, tmp_path / "bundle")
    flags = "-std=c99 -Wall -Wextra -Werror -pedantic -Os"
    if compiler == "cc":
        result = subprocess.run(["make", "-C", str(out), "all", "example"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        printed = subprocess.run([str(out / "example")], capture_output=True, text=True, check=True).stdout
        expected = model.predict_encoded(np.zeros((1, 4)))[0]
        assert printed.startswith(f"class {expected}\n")
    else:
        result = subprocess.run(["make", "-C", str(out), "libmodel.a", f"CC={compiler}", "AR=arm-none-eabi-ar",
                                 f"CFLAGS={flags} -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""


def test_cmake_builds_the_bundle(tmp_path):
    X = np.random.default_rng(0).normal(size=(60, 2))
    out = export_bundle(TreeClassifier().fit(X, (X[:, 1] > 0).astype(int)), tmp_path / "bundle", name="tiny")
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(out), "-B", str(build)], check=True, capture_output=True)
    result = subprocess.run(["cmake", "--build", str(build), "--target", "all", "tiny_example"], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (build / "tiny_example").exists()


def test_export_refuses_bad_names_and_unfitted_models(tmp_path):
    X = np.arange(8.0).reshape(-1, 1)
    model = TreeClassifier().fit(X, np.array([0, 1] * 4))
    for name in ["Model", "main", "es_x", "9lives", "a-b"]:
        with pytest.raises(ValueError, match="bundle name"):
            export_bundle(model, tmp_path / "b", name=name)
    with pytest.raises(ValueError, match="not fitted"):
        export_bundle(TreeClassifier(), tmp_path / "b")
    assert not (tmp_path / "b").exists()
