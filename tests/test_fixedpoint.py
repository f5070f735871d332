"""The additive leaf kind's fixed-point sigmoid/softmax: C (csrc/es_fixed.c) == Python spec, bit for bit,
plus the properties and the accuracy bound the specification states."""

import functools
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgestream import fixedpoint as fp
from edgestream.export import runtime_sources
from edgestream.simulate import compile_library, header_cdef

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
EXTREMES = [INT32_MIN, INT32_MIN + 1, -(2**30), -65536 * 32768, -32769, -32768, -32767, -1025, -1024, -1, 0, 1,
            1024, 32767, 32768, 65536 * 32767, 2**30, INT32_MAX - 1, INT32_MAX]

CDEF = header_cdef(["es_fixed.h"])


@functools.lru_cache(maxsize=1)
def c_fixed():
    sources = [p for p in runtime_sources() if p.name == "es_fixed.c"]
    return compile_library(CDEF, '#include "es_fixed.h"\n', sources, sources[0].parent)


@functools.lru_cache(maxsize=1)
def c_fixed_steps():
    """es_fixed.c as microcontrollers build it (the restoring division's steps, ES_FIXED_HOST_DIVIDE 0), on the
    host."""
    source = Path(tempfile.gettempdir()) / "es_fixed_steps.c"
    source.write_text('#define ES_FIXED_HOST_DIVIDE 0\n#include "es_fixed.c"\n')
    return compile_library(CDEF, '#include "es_fixed.h"\n', [source], runtime_sources()[0].parent)


def c_proba(scores, library=c_fixed):
    ffi, lib = library()
    scores = np.ascontiguousarray(scores, dtype=np.int32)
    n_classes = max(2, len(scores))
    proba = np.zeros(n_classes, dtype=np.uint16)
    work = np.zeros(len(scores), dtype=np.uint32)
    status = lib.es_additive_proba(ffi.from_buffer("int32_t[]", scores), len(scores),
                                   ffi.from_buffer("uint32_t[]", work), ffi.from_buffer("uint16_t[]", proba))
    assert status == 0
    return proba, int(lib.es_additive_argmax(ffi.from_buffer("int32_t[]", scores), len(scores)))


@st.composite
def score_rows(draw):
    """One row of int32 score sums, n_outputs 1..255: random, clustered, one far ahead, equal, or extremes."""
    n = draw(st.one_of(st.integers(1, 4), st.integers(1, 255)))
    kind = draw(st.sampled_from(["random", "near", "far", "equal", "extreme", "mixed"]))
    int32 = st.integers(INT32_MIN, INT32_MAX)
    if kind == "random":
        row = draw(st.lists(int32, min_size=n, max_size=n))
    elif kind in ("near", "far"):
        base = draw(st.integers(-(2**30), 2**30))
        spread = draw(st.sampled_from([1, 64, 1024, 8192, 40000]))
        row = [base + d for d in draw(st.lists(st.integers(-spread, spread), min_size=n, max_size=n))]
        if kind == "far":
            row[draw(st.integers(0, n - 1))] = base + draw(st.integers(spread, INT32_MAX - base))  # stays int32
    elif kind == "equal":
        row = [draw(int32)] * n
    elif kind == "extreme":
        row = draw(st.lists(st.sampled_from(EXTREMES), min_size=n, max_size=n))
    else:
        row = draw(st.lists(st.one_of(st.sampled_from(EXTREMES), int32), min_size=n, max_size=n))
    return np.array(row, dtype=np.int64)


# ---- C == Python -------------------------------------------------------------------------------------------


def test_exp_c_matches_python_for_every_live_difference_and_is_monotone():
    _, lib = c_fixed()
    d = np.concatenate([np.arange(0, 40000), [2**16, 2**20, 2**31 - 1, 2**31, 2**32 - 1]])
    py = fp.exp_neg_q23(d)
    c = np.array([lib.es_exp_neg_q23(int(v)) for v in d], dtype=np.int64)
    assert np.array_equal(c, py)
    assert py[0] == fp.EXP_ONE
    assert np.all(np.diff(py[:40000]) <= 0)
    assert np.all(py[fp.EXP_CUTOFF:] == 0)
    exact = np.exp(-d[:40000] / 1024.0) * fp.EXP_ONE
    assert np.max(np.abs(py[:40000] - exact)) < 8  # Q23 units (< 0.04 Q15 units)


def test_exp2_c_matches_python_and_is_within_a_twentieth_of_a_unit():
    _, lib = c_fixed()
    w = np.concatenate([np.arange(0, 2**26 * 18, 2**26 // 997), [1, 2**26 - 1, 17 * 2**26 - 1, 2**32 - 1]])
    py = fp.exp2_neg_q15(w)
    c = np.array([lib.es_exp2_neg_q15(int(v)) for v in w], dtype=np.int64)
    assert np.array_equal(c, py)
    assert py[0] == 32768 and np.all(np.diff(py[:-4]) <= 0) and py[-1] == 0
    exact = 2.0 ** (-w / 2**26) * 32768
    assert np.max(np.abs(py - exact)) <= 0.5 + 0.05  # the rounding to Q15 and the exponential's own error


@settings(max_examples=60, deadline=None)
@given(st.integers(0, INT32_MAX), st.integers(1, 2**32 - 1), st.integers(0, 63))
def test_path_score_c_matches_python(raw, multiplier, shift):
    _, lib = c_fixed()
    assert int(lib.es_path_score_q15(raw, multiplier, shift)) == int(fp.path_score_q15([raw], multiplier, shift)[0])


def test_sigmoid_c_matches_python_on_a_dense_range():
    _, lib = c_fixed()
    s = np.concatenate([np.arange(-40000, 40001, 7), EXTREMES])
    c = np.array([lib.es_sigmoid_q15(int(v)) for v in s], dtype=np.uint16)
    assert np.array_equal(c, fp.sigmoid_q15(s))


@settings(max_examples=400)
@given(st.one_of(st.integers(INT32_MIN, INT32_MAX), st.integers(-40000, 40000), st.sampled_from(EXTREMES)))
def test_sigmoid_c_matches_python(s):
    _, lib = c_fixed()
    assert lib.es_sigmoid_q15(s) == int(fp.sigmoid_q15(s))


@settings(max_examples=400)
@given(score_rows())
def test_additive_proba_and_class_c_match_python(row):
    proba, cls = c_proba(row)
    expected = fp.additive_proba_q15(row[None, :])[0]
    assert np.array_equal(proba, expected)
    assert cls == int(fp.additive_predict(row[None, :])[0])


@settings(max_examples=300)
@given(score_rows())
def test_the_restoring_steps_and_the_host_divide_give_one_answer(row):
    assert all(np.array_equal(a, b) for a, b in zip(c_proba(row), c_proba(row, c_fixed_steps)))


@settings(max_examples=300)
@given(score_rows())
def test_softmax_properties(row):
    n = len(row)
    p = fp.softmax_q15(row).astype(np.int64)
    assert p.sum() == fp.Q15_ONE  # exact sum
    m = int(np.argmax(row))
    assert p[m] == p.max()  # the device's class always holds a largest probability
    # order: s_j >= s_k with j < k gives p_j >= p_k; equal scores differ by at most one unit
    for j in range(min(n, 40)):
        for k in range(j + 1, min(n, 40)):
            if row[j] >= row[k]:
                assert p[j] >= p[k]
            if row[j] == row[k]:
                assert p[j] - p[k] in (0, 1)
    # within one unit of the exact share of the integer exponentials
    e = fp.exp_neg_q23(row[m] - row)
    shares = (e << 15) / e.sum()
    assert np.all(np.abs(p - shares) < 1)
    if n == 1:
        assert p[0] == fp.Q15_ONE


# ---- properties and accuracy of the sigmoid ------------------------------------------------------------------


def test_sigmoid_monotone_symmetric_and_accurate():
    s = np.arange(-(2**17), 2**17 + 1)
    p = fp.sigmoid_q15(s).astype(np.int64)
    assert np.all(np.diff(p) >= 0)
    assert p[s == 0][0] == 16384
    assert np.all(p[s > 0] > 16384) and np.all(p[s < 0] < 16384)  # class (s > 0) == first largest probability
    assert np.array_equal(p + p[::-1], np.full_like(p, fp.Q15_ONE))  # p(s) + p(-s) == 32768
    error = np.abs(p - 32768.0 / (1.0 + np.exp(-s / 1024.0)))
    assert error.max() <= 0.51
    ends = fp.sigmoid_q15(np.array([INT32_MIN, INT32_MIN + 1, INT32_MAX]))
    assert ends.tolist() == [0, 0, 32768]


def test_binary_remainder_never_ties():
    """2r == S never happens, so the sigmoid is round-to-nearest and its tie rule is dead (an equivalent mutant)."""
    u = np.arange(0, fp.EXP_CUTOFF)  # beyond, E == 0 and r == 0
    e = fp.exp_neg_q23(u)
    total = fp.EXP_ONE + e
    _, r = np.divmod(e << 15, total)
    assert not np.any(2 * r == total)


def test_sigmoid_is_the_two_class_softmax_of_zero_and_s():
    s = np.concatenate([np.arange(-40000, 40001), EXTREMES])
    pair = np.stack([np.zeros_like(s), s], axis=1)
    assert np.array_equal(fp.softmax_q15(pair)[:, 1], fp.sigmoid_q15(s))
    binary = fp.additive_proba_q15(s[:, None])
    assert np.array_equal(binary, fp.softmax_q15(pair))
    assert np.array_equal(fp.additive_predict(s[:, None]), (s > 0).astype(np.uint8))


@pytest.mark.parametrize("n_classes", [2, 3, 5, 10, 50, 255])
def test_softmax_accuracy_against_float64(n_classes):
    rng = np.random.default_rng(n_classes)
    rows = [rng.integers(-20000, 20000, size=(400, n_classes)),
            rng.integers(-3000, 3000, size=(400, n_classes)),
            rng.integers(INT32_MIN, INT32_MAX, size=(100, n_classes), endpoint=True),
            rng.integers(0, 4, size=(400, n_classes)), rng.integers(0, 40, size=(400, n_classes))]
    scores = np.concatenate(rows)
    p = fp.additive_proba_q15(scores).astype(np.int64)
    x = scores / 1024.0
    e = np.exp(x - x.max(axis=1, keepdims=True))
    exact = 32768.0 * e / e.sum(axis=1, keepdims=True)
    assert np.abs(p - exact).max() <= fp.ACCURACY_Q15
    assert np.all(p.sum(axis=1) == fp.Q15_ONE)
    assert np.array_equal(fp.additive_predict(scores), np.argmax(scores, axis=1))


def test_equal_scores_share_the_units_from_the_first_class():
    p = fp.softmax_q15(np.full(255, 12345))
    assert p.sum() == 32768 and set(p[:128].tolist()) == {129} and set(p[128:].tolist()) == {128}
    assert fp.softmax_q15(np.array([7, 7, 7])).tolist() == [10923, 10923, 10922]


def test_probability_tie_can_precede_the_device_class():
    """The documented case where the first largest probability is not the class: rounding ties them."""
    row = np.array([1, 2, 3, 3, 0, 0, 3, 3, 0, 1, 3, 1, 1, 3, 1, 1, 2, 2, 0, 0, 3, 3, 3, 2, 3, 1, 1, 3, 0, 1, 0, 1,
                    3, 0, 1, 1, 3, 0, 2, 1])
    p = fp.softmax_q15(row)
    assert fp.additive_predict(row[None, :])[0] == 2  # first largest score
    assert p[1] == p[2] == p.max() and int(np.argmax(p)) == 1  # class 1 (score 2) rounds up to the same 820
    proba, cls = c_proba(row)
    assert np.array_equal(proba, p) and cls == 2


# ---- constants, bounds and bad input --------------------------------------------------------------------------


def test_constants_are_what_the_docstring_says():
    assert fp.EXP2_TABLE.tolist() == [round(2**30 * 2 ** (-i / 32)) for i in range(32)]
    assert fp.LOG2E_Q16 == math.floor(math.log2(math.e) * 2**16)
    assert abs(fp.LOG2E_Q16 + fp.LOG2E_LOW / 1024 - math.log2(math.e) * 2**16) < 1e-3
    ln2 = math.log(2)
    assert (fp.K1, fp.K2, fp.K3) == (round(ln2 * 2**16), round(ln2**2 / 2 * 2**16), round(ln2**3 / 6 * 2**16))
    assert (fp.EXP_CUTOFF - 1) * (fp.LOG2E_Q16 + 1) < 2**32  # the C's products fit uint32
    assert (fp.MAX_TREES + 1) * fp.LEAF_MIN >= fp.SUM_MIN and (fp.MAX_TREES + 1) * fp.LEAF_MAX <= fp.SUM_MAX
    assert fp.MAX_OUTPUTS * fp.EXP_ONE < 2**31  # the softmax denominator and 2 * remainder fit uint32


def test_quantize_scores_rounds_half_away_and_saturates():
    q = fp.quantize_scores([0.5 / 1024, -0.5 / 1024, 1.0, -1.0, 40.0, -40.0, 0.0])
    assert q.dtype == np.int16 and q.tolist() == [1, -1, 1024, -1024, 32767, -32768, 0]
    with pytest.raises(ValueError, match="finite"):
        fp.quantize_scores([np.nan])


def test_bad_input_is_rejected_clearly():
    with pytest.raises(TypeError, match="integers"):
        fp.additive_proba_q15(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="outside int32"):
        fp.additive_proba_q15(np.array([[2**31]]))
    with pytest.raises(ValueError, match="outside int32"):
        fp.additive_proba_q15(np.array([[2**63]], dtype=np.uint64))
    with pytest.raises(ValueError, match="n_outputs"):
        fp.additive_proba_q15(np.zeros((2, 256), dtype=np.int32))
    with pytest.raises(ValueError, match="n_outputs"):
        fp.additive_predict(np.zeros((2, 0), dtype=np.int32))
    with pytest.raises(ValueError, match=">= 0"):
        fp.exp_neg_q23([-1])


def test_c_status_codes():
    ffi, lib = c_fixed()
    scores = ffi.new("int32_t[3]", [1, 2, 3])
    work = ffi.new("uint32_t[3]")
    proba = ffi.new("uint16_t[3]")
    assert lib.es_additive_proba(ffi.NULL, 3, work, proba) == 1
    assert lib.es_additive_proba(scores, 3, work, ffi.NULL) == 1
    assert lib.es_additive_proba(scores, 3, ffi.NULL, proba) == 1
    assert lib.es_additive_proba(scores, 0, work, proba) == 2
    assert lib.es_softmax_q15(scores, 0, work, proba) == 2
    assert lib.es_additive_proba(scores, 1, ffi.NULL, proba) == 0  # binary needs no work area
    assert lib.es_additive_argmax(ffi.NULL, 3) == 0 and lib.es_additive_argmax(scores, 0) == 0
    assert lib.es_softmax_q15(scores, 1, work, proba) == 0 and proba[0] == 32768
