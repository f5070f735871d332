"""Binning: the fitted edges, the bin rule, and bit-identity of the C quantizer on adversarial values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from edgestream.binning import MISSING_BIN, BinMapper
from edgestream.simulate import runtime_quantize


def test_bin_rule_on_edges_nan_and_infinities():
    mapper = BinMapper.from_flat_edges(np.array([1.0, 2.0, 3.0]), np.array([0, 3]), 255, "quantile", "float32")
    values = np.array([[-np.inf], [0.5], [1.0], [1.5], [2.0], [3.0], [3.5], [np.inf], [np.nan]])
    assert mapper.transform(values)[:, 0].tolist() == [0, 0, 0, 1, 1, 2, 3, 3, MISSING_BIN]


@pytest.mark.parametrize("strategy", ["quantile", "adaptive"])
def test_at_most_max_bins_and_distinct_values_separated(strategy):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=5000), rng.integers(0, 7, 5000), rng.exponential(size=5000)])
    for max_bins in (2, 16, 255):
        mapper = BinMapper(max_bins=max_bins, strategy=strategy).fit(X)
        bins = mapper.transform(X)
        for j, edges in enumerate(mapper.edges_):
            assert len(edges) <= max_bins - 1
            assert np.all(np.diff(edges) > 0)
            assert len(np.unique(bins[:, j])) <= max_bins
    # Few distinct values: every value gets a bin of its own.
    mapper = BinMapper(strategy=strategy).fit(X)
    assert len(np.unique(mapper.transform(X)[:, 1])) == 7


def test_quantile_bins_are_balanced():
    X = np.random.default_rng(1).exponential(size=(10000, 1))
    counts = np.bincount(BinMapper(max_bins=10).fit_transform(X)[:, 0])
    assert counts.min() > 900 and counts.max() < 1100


def test_adaptive_width_doubles_until_bins_fit():
    X = np.arange(1000, dtype=float).reshape(-1, 1)
    edges = BinMapper(max_bins=100, strategy="adaptive").fit(X).edges_[0]
    widths = np.diff(edges)
    assert len(edges) < 100
    assert widths.max() - widths.min() <= 1  # equal-width bins hold equally many grid points, +-1


def test_integer_edges_and_bad_input():
    X = np.array([[-5], [0], [7], [100]], dtype=np.int32)
    mapper = BinMapper(dtype="int32").fit(X)
    assert mapper.transform(X)[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="integer input"):
        mapper.transform(X.astype(float))
    with pytest.raises(ValueError, match="max_bins=300"):
        BinMapper(max_bins=300).fit(X)
    with pytest.raises(ValueError, match="strategy='median'"):
        BinMapper(strategy="median").fit(X)
    with pytest.raises(ValueError, match="2 features"):
        mapper.transform(np.zeros((1, 2), dtype=np.int32))


def adversarial_floats(edges: np.ndarray) -> np.ndarray:
    """Every edge, its float32 neighbours, signed zeros, subnormals, extremes, infinities and NaN."""
    edges = edges.astype(np.float32)
    specials = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, 1.17549435e-38, 3.4028235e38, -3.4028235e38,
                         np.inf, -np.inf, np.nan], dtype=np.float32)
    with np.errstate(over="ignore"):
        up = np.nextafter(edges, np.float32(np.inf))
        down = np.nextafter(edges, np.float32(-np.inf))
    return np.concatenate([edges, up, down, specials])


float32s = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)


@settings(max_examples=250)
@given(st.lists(st.lists(float32s, max_size=30), min_size=1, max_size=4), st.data())
def test_c_quantizer_matches_python_on_adversarial_floats(edge_lists, data):
    edges_per_feature = [np.unique(np.array(e, dtype=np.float32))[:254] for e in edge_lists]
    flat = np.concatenate(edges_per_feature).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in edges_per_feature])]).astype(np.uint16)
    mapper = BinMapper.from_flat_edges(flat, offsets, 255, "quantile", "float32")
    columns = [adversarial_floats(e) for e in edges_per_feature]
    extra = data.draw(hnp.arrays(np.float32, 20, elements=st.floats(width=32)))
    length = max(len(c) for c in columns) + len(extra)
    X = np.column_stack([np.resize(np.concatenate([c, extra]), length) for c in columns])
    assert np.array_equal(runtime_quantize(X, flat, offsets), mapper.transform(X))


int32s = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=200)
@given(st.lists(st.lists(int32s, max_size=30), min_size=1, max_size=4), st.lists(int32s, min_size=1, max_size=20))
def test_c_integer_quantizer_matches_python(edge_lists, extra):
    edges_per_feature = [np.unique(np.array(e, dtype=np.int64)).astype(np.int32)[:254] for e in edge_lists]
    flat = np.concatenate(edges_per_feature).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in edges_per_feature])]).astype(np.uint16)
    mapper = BinMapper.from_flat_edges(flat, offsets, 255, "quantile", "int32")
    columns = []
    for e in edges_per_feature:
        near = np.concatenate([e.astype(np.int64) + d for d in (-1, 0, 1)] + [[-(2**31), 2**31 - 1], extra])
        columns.append(np.clip(near, -(2**31), 2**31 - 1))
    length = max(len(c) for c in columns)
    X = np.column_stack([np.resize(c, length) for c in columns]).astype(np.int32)
    assert np.array_equal(runtime_quantize(X, flat, offsets), mapper.transform(X))
