"""Fixed-point arithmetic of the *additive* leaf kind (boosting), the specification of ``csrc/es_fixed.c``.

Everything here is integer arithmetic (numpy int64 intermediates, every value non-negative wherever it is
shifted or divided), and the C computes the identical bits on x86, Cortex-M0 (no FPU, no divide instruction)
and Cortex-M4F.

Formats
-------
* **Leaf scores** are ``int16`` with ``SCORE_FRAC_BITS = 10`` fraction bits (``SCORE_ONE = 1024`` == 1.0), so a
  leaf holds a score in [-32, 32) with a resolution of 1/1024. The **base score** of each class has the same
  format.
* **Score sums** are ``int32``: ``sum_k = base_k + sum_t leaf_t[k]`` with the same 10 fraction bits. With at most
  ``MAX_TREES = 65535`` trees there are at most 65536 int16 terms, so ``-2**31 <= sum_k <= 65536 * 32767 < 2**31``:
  the sum cannot overflow int32. The functions below accept *any* int32 sums; nothing overflows for any input
  (differences of two sums are taken modulo 2**32 in uint32, where the true difference 0..2**32-1 fits).
* **Exponentials** ``E = exp(-d / 1024)`` of a score difference ``d >= 0`` are uint32 in Q23
  (``EXP_ONE = 2**23`` == 1.0; ``E(0) == 2**23`` exactly).
* **Probabilities** are Q15 ``uint16`` (32768 == 1.0), one per class; a model with ``n_outputs == 1`` score is
  binary (2 classes: ``p1 = sigmoid(s)``, ``p0 = 32768 - p1``), ``n_outputs = C >= 2`` scores give C classes.

The exponential ``exp_neg_q23(d)`` (all steps unsigned; ``>>`` is floor division by a power of two)
-----------------------------------------------------------------------------------------------------
1. ``d >= 32768`` (a difference of 32 or more) gives 0 (``e**-32 * 2**23 < 0.5``).
2. ``w = d * 94548 + (d * 473 >> 10)`` (``log2(e) * 2**16 = 94548 + 473/1024`` to a relative 3e-9), so
   ``w / 2**26 = d * log2(e) / 1024`` (``w < 2**32``).
3. ``n = w >> 26`` is the integer part of the base-2 exponent; ``n >= 25`` gives 0.
   ``f = w & (2**26 - 1)`` is its fraction (Q26), ``i = f >> 21`` its top 5 bits (table index 0..31) and
   ``r = (f >> 5) & 0xFFFF`` the rest in Q21 (``x = r / 2**21`` in [0, 1/32)).
4. ``eps`` (Q21) approximates ``1 - 2**-x`` by the cubic Taylor polynomial ``x*(c1 - x*(c2 - x*c3))``,
   ``c1 = ln2``, ``c2 = ln2**2/2``, ``c3 = ln2**3/6`` in Q16 (``K1 = 45426``, ``K2 = 15743``, ``K3 = 3638``):
   ``t = K2 - (r*K3 >> 21)``, ``t = K1 - (r*t >> 21)``, ``eps = r*t >> 16``.
5. ``M = T[i] - ((T[i] >> 14) * eps >> 7)`` (Q30) with ``T[i] = round(2**30 * 2**(-i/32))`` (``EXP2_TABLE``).
6. ``E = (M + 2**(s-1)) >> s`` with ``s = n + 7`` (round half up from Q30 to Q23 and divide by ``2**n``).

Every product fits uint32 (the C never needs 64 bits). ``E`` is non-increasing in ``d`` (checked over every
``d`` in the tests) and within 8 Q23 units (< 0.04 Q15 units) of ``2**23 * exp(-d/1024)`` for every ``d``.

Probabilities: softmax with exact largest-remainder rounding
-------------------------------------------------------------
For C scores ``s_k``: ``m`` = the first index of the largest score, ``E_k = exp_neg_q23(s_m - s_k)`` (so the
largest class has ``E_m = 2**23`` and every exponent is <= 0), ``S = sum_k E_k`` (< 255 * 2**23 + 1 < 2**31).
The exact shares ``t_k = 32768 * E_k / S`` are apportioned by the largest-remainder (Hamilton) rule:
``p_k = floor(t_k)`` (``(E_k << 15) // S``), then the ``32768 - sum_k p_k`` (< C) missing units go, one each,
to the classes with the largest remainders ``(E_k << 15) % S``, ties to the lower class index. Hence

* the probabilities sum to exactly 32768, and every ``p_k`` is within 1 unit (exclusive) of ``t_k``;
* order is kept: ``t_j > t_k`` implies ``p_j >= p_k``; equal scores give probabilities that differ by at most 1,
  the extra units going to the lower indices (as in the shrub weights);
* **the device's class is the argmax of the score sums** (the first index of the largest sum, ``m``), never
  of the probabilities. ``p_m`` is always *a* largest probability, but an earlier class whose score is lower
  can round up to the same value (e.g. shares 10.6 and 10.9 both become 11), so the first index of the largest
  probability may differ from ``m``, only ever on a tie of probabilities.

The C division ``(E << 15) // S`` is a 15-step restoring (shift-and-subtract) division in uint32 (no divide
instruction, no 64-bit arithmetic); ``E_k == S`` (all other classes underflowed) gives 32768, remainder 0.
The C keeps the exponentials, then the remainders, in a caller's ``work`` array of C uint32 and hands out the
missing units by repeated scans (at most ``(C - 1) * C`` comparisons: ~65k for 255 equal scores, C for most rows).

Binary models (``n_outputs == 1``): ``sigmoid_q15(s)`` is *defined* as ``softmax_q15([0, s])[1]``, computed in
closed form: with the larger class ``m = 1 if s > 0 else 0`` and ``u = |s|``, ``E = exp_neg_q23(u)``,
``S = 2**23 + E``, ``q, r = divmod(E << 15, S)``; the smaller class gets ``q + 1`` when ``2r > S`` or
(``2r == S`` and it is class 0), else ``q``; the larger class gets the rest. ``sigmoid_q15`` is non-decreasing,
``sigmoid_q15(0) == 16384``, ``sigmoid_q15(s) > 16384`` for ``s > 0`` (so the binary class ``s > 0`` always has
the strictly larger probability), and ``sigmoid_q15(s) + sigmoid_q15(-s) == 32768`` for every ``s > -2**31``.

The binary remainder tie ``2r == S`` never occurs for any int32 ``s`` (checked exhaustively in the tests), so
the sigmoid is plain round-to-nearest of ``32768 * E / S``; the tie rule only keeps it equal to the softmax.

Accuracy against float64 (``32768 / (1 + exp(-s/1024))`` and ``32768 * softmax(s/1024)``): the apportioning
is within 1 unit (exclusive) of the share of the integer exponentials, and the exponentials add < 0.05 units,
so every probability is within ``ACCURACY_Q15 = 1.05`` units. Measured: sigmoid at most 0.504 units over
every ``s`` in [-2**17, 2**17] (and exact 0 / 32768 at the int32 ends); softmax at most 0.77 units over random
rows of 2..255 classes (wide, narrow and full-int32 score ranges).
"""

from __future__ import annotations

import numpy as np

SCORE_FRAC_BITS = 10
SCORE_ONE = 1 << SCORE_FRAC_BITS  # 1.0 in a leaf score / score sum
LEAF_MIN, LEAF_MAX = -(1 << 15), (1 << 15) - 1  # int16 leaf and base scores
SUM_MIN, SUM_MAX = -(1 << 31), (1 << 31) - 1  # int32 score sums
MAX_TREES = 65535  # at most this many trees (+ the base score) keep every score sum inside int32
MAX_OUTPUTS = 255  # score outputs per model (uint8); 1 means binary
Q15_ONE = 1 << 15
EXP_FRAC_BITS = 23
EXP_ONE = 1 << EXP_FRAC_BITS
EXP_CUTOFF = 1 << 15  # differences >= this (>= 32.0) have exp == 0
LOG2E_Q16 = 94548  # floor(log2(e) * 2**16)
LOG2E_LOW = 473  # round(frac(log2(e) * 2**16) * 2**10): log2(e) = (94548 + 473/1024) / 2**16 to 3e-9
K1, K2, K3 = 45426, 15743, 3638  # ln2, ln2**2/2, ln2**3/6 in Q16
EXP2_TABLE = np.array([  # round(2**30 * 2**(-i/32)), i = 0..31
    1073741824, 1050733751, 1028218693, 1006186087, 984625594, 963527098, 942880699, 922676710,
    902905651, 883558244, 864625413, 846098274, 827968132, 810226483, 792865000, 775875538,
    759250125, 742980960, 727060411, 711481005, 696235434, 681316545, 666717336, 652430958,
    638450708, 624770026, 611382493, 598281827, 585461881, 572916640, 560640218, 548626854], dtype=np.int64)
ACCURACY_Q15 = 1.05  # Q15 units from float64 sigmoid / softmax: < 1 (apportioning) + < 0.05 (exp); measured 0.77

__all__ = ["SCORE_FRAC_BITS", "SCORE_ONE", "MAX_TREES", "MAX_OUTPUTS", "Q15_ONE", "EXP_FRAC_BITS",
           "exp_neg_q23", "exp2_neg_q15", "path_score_q15", "PATH_FRAC_BITS", "sigmoid_q15", "softmax_q15", "additive_proba_q15", "additive_predict",
           "quantize_scores", "shift_scores"]


def _int_array(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers (Q{SCORE_FRAC_BITS} fixed point), got dtype {array.dtype}")
    if array.dtype.kind == "u" and array.size and array.max() > SUM_MAX:
        raise ValueError(f"{name} holds {array.max()}, outside int32 [{SUM_MIN}, {SUM_MAX}]")
    array = array.astype(np.int64)
    if array.size and (array.min() < SUM_MIN or array.max() > SUM_MAX):
        bad = array.min() if array.min() < SUM_MIN else array.max()
        raise ValueError(f"{name} holds {bad}, outside int32 [{SUM_MIN}, {SUM_MAX}]")
    return array


def exp_neg_q23(d) -> np.ndarray:
    """``exp(-d / 1024)`` in Q23 for integer differences ``d >= 0`` (any shape; int64 result)."""
    d = np.asarray(d, dtype=np.int64)
    if d.size and d.min() < 0:
        raise ValueError(f"exp_neg_q23 takes differences >= 0, got {d.min()}")
    live = d < EXP_CUTOFF
    u = np.where(live, d, 0)
    return _exp2_neg(u * LOG2E_Q16 + ((u * LOG2E_LOW) >> 10), EXP_FRAC_BITS, live)


def exp2_neg_q15(w) -> np.ndarray:
    """``2**(-w / 2**26)`` in Q15 for uint32 exponents ``w`` (steps 3 to 6 of ``exp_neg_q23`` rounded to Q15
    instead of Q23: 0 from ``w >= 17 * 2**26``, where the value is below 1/4 unit)."""
    w = np.asarray(w, dtype=np.int64)
    if w.size and (w.min() < 0 or w.max() > 0xFFFFFFFF):
        raise ValueError(f"exp2_neg_q15 takes uint32 exponents, got {w.min()} .. {w.max()}")
    return _exp2_neg(w, 15, np.ones(w.shape, dtype=bool))


PATH_FRAC_BITS = 10  # an isolation forest's leaf path lengths: int16, 1024 == 1.0 (so below 32)


def path_score_q15(raw, multiplier: int, shift: int) -> np.ndarray:
    """An isolation forest's Q15 score (higher is more anomalous) of int32 sums ``raw >= 0`` of leaf path lengths
    (``PATH_FRAC_BITS``): ``w = (raw * multiplier) >> shift`` (a 64-bit product, saturated to uint32), the exponent
    ``E(h) / c(psi)`` in Q26, then ``min(exp2_neg_q15(w), 32767)``."""
    raw = np.asarray(raw, dtype=np.int64)
    if raw.size and raw.min() < 0:
        raise ValueError(f"path length sums are >= 0, got {raw.min()}")
    w = (raw.astype(np.uint64) * np.uint64(multiplier)) >> np.uint64(shift)
    w = np.minimum(w, np.uint64(0xFFFFFFFF)).astype(np.int64)
    return np.minimum(exp2_neg_q15(w), Q15_ONE - 1)


def _exp2_neg(w: np.ndarray, bits: int, live: np.ndarray) -> np.ndarray:
    """``2**(-w / 2**26)`` rounded half up to ``bits`` fraction bits (steps 3 to 6 of ``exp_neg_q23``); 0 where
    not ``live`` or where the shift would pass 31 bits."""
    n = w >> 26
    f = w & ((1 << 26) - 1)
    i = f >> 21
    r = (f >> 5) & 0xFFFF
    t = K2 - ((r * K3) >> 21)
    t = K1 - ((r * t) >> 21)
    eps = (r * t) >> 16
    table = EXP2_TABLE[i]
    m = table - (((table >> 14) * eps) >> 7)
    live = live & (n + 30 - bits <= 31)
    s = np.where(live, n + 30 - bits, 30 - bits)
    return np.where(live, (m + (np.int64(1) << (s - 1))) >> s, 0)


def _sigmoid(s: np.ndarray) -> np.ndarray:
    """p1 (int64) of int64 score sums ``s`` (any shape)."""
    larger = s > 0  # the larger class is 1
    e = exp_neg_q23(np.abs(s))
    total = EXP_ONE + e
    q, r = np.divmod(e << 15, total)
    small = q + ((2 * r > total) | ((2 * r == total) & larger))
    return np.where(larger, Q15_ONE - small, small)


def sigmoid_q15(score_sum) -> np.ndarray:
    """Q15 probability of class 1 of a binary model from its int32 score sum(s) (uint16, same shape)."""
    return _sigmoid(_int_array(score_sum, "score_sum")).astype(np.uint16)


def _softmax(s: np.ndarray) -> np.ndarray:
    """Largest-remainder Q15 softmax of int64 score rows ``s`` (n, C); int64 result."""
    n_rows, n_classes = s.shape
    rows = np.arange(n_rows)
    top = s[rows, np.argmax(s, axis=1)]
    e = exp_neg_q23(top[:, None] - s)
    total = e.sum(axis=1, keepdims=True)
    p, rem = np.divmod(e << 15, total)
    missing = Q15_ONE - p.sum(axis=1)
    order = np.argsort(-rem, axis=1, kind="stable")  # largest remainder first, ties to the lower index
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n_classes), order.shape), axis=1)
    return p + (rank < missing[:, None])


def softmax_q15(scores) -> np.ndarray:
    """Q15 softmax of int32 score rows (n, C) or one row (C,), C = 1..255; uint16 of the same shape."""
    s = _int_array(scores, "scores")
    if s.ndim not in (1, 2) or s.shape[-1] < 1 or s.shape[-1] > MAX_OUTPUTS:
        raise ValueError(f"scores must have shape (rows, C) or (C,) with 1 <= C <= {MAX_OUTPUTS}, got {s.shape}")
    out = _softmax(s.reshape(-1, s.shape[-1]))
    return out.reshape(s.shape).astype(np.uint16)


def _score_sums(score_sums) -> np.ndarray:
    s = _int_array(score_sums, "score_sums")
    if s.ndim != 2 or not 1 <= s.shape[1] <= MAX_OUTPUTS:
        raise ValueError(f"score_sums must have shape (rows, n_outputs) with 1 <= n_outputs <= {MAX_OUTPUTS}, "
                         f"got {s.shape}")
    return s


def additive_proba_q15(score_sums) -> np.ndarray:
    """Q15 class probabilities (rows, n_classes) uint16 from int32 score sums (rows, n_outputs).

    ``n_outputs == 1`` is binary: ``[32768 - sigmoid_q15(s), sigmoid_q15(s)]``; otherwise the softmax.
    """
    s = _score_sums(score_sums)
    if s.shape[1] == 1:
        p1 = _sigmoid(s[:, 0])
        return np.stack([Q15_ONE - p1, p1], axis=1).astype(np.uint16)
    return _softmax(s).astype(np.uint16)


def additive_predict(score_sums) -> np.ndarray:
    """Class indices (uint8): binary ``1 if s > 0 else 0``; else the first index of the largest score sum."""
    s = _score_sums(score_sums)
    if s.shape[1] == 1:
        return (s[:, 0] > 0).astype(np.uint8)
    return np.argmax(s, axis=1).astype(np.uint8)


def shift_scores(score_sums, shift: int) -> np.ndarray:
    """Score sums with ``10 + shift`` fraction bits brought to Q10: ``floor((s + 2**(shift-1)) / 2**shift)``
    (round half up; int64 in, int64 out; ``shift`` 0 returns the sums). The C computes it in uint32 on the
    offset value ``s + 2**31``, which is exact and cannot overflow."""
    s = np.asarray(score_sums, dtype=np.int64)
    if shift == 0:
        return s
    return (s + (1 << (shift - 1))) >> shift


def quantize_scores(values) -> np.ndarray:
    """Float leaf or base scores to int16 Q10: round half away from zero, saturating at the int16 limits."""
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError("scores must be finite")
    q = np.sign(v) * np.floor(np.abs(v) * SCORE_ONE + 0.5)
    return np.clip(q, LEAF_MIN, LEAF_MAX).astype(np.int16)
