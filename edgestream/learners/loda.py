"""Loda (Pevný, "Loda: Lightweight on-line detector of anomalies", Machine Learning 102, 2016), the specification of
``csrc/es_loda.c``: an anomaly detector of sparse random projections with one histogram each, learning what is
normal on the device, in a fixed memory, with integer arithmetic after one float32 step per feature.

``K`` sparse projections each add up ``m = ceil(sqrt(d))`` distinct features (the paper's sparsity) with weights
+1 or -1; every projection keeps a fixed-width histogram of its projected rows in two windows of ``W`` rows, the
*latest* (being counted) and the *reference* (the one before), which swap when the latest is full (the paper's
two alternating histograms of its on-line variant). A row's score is the paper's mean negative log density of its
bins over the projections: rows in bins few reference rows fell in are anomalous.

Where it departs from the paper, for a fixed memory and exactness (the C follows every point to the bit):

* **Quantized inputs**: the paper projects real values with Gaussian weights. Here every feature is first read as
  one of 16 levels: ``level = floor((x - offset) * scale)`` in float32, clamped to 0..15, with ``offset`` and
  ``scale`` fitted on the first rows of the stream (:meth:`Loda.start`) so that the levels cover the rows' range
  widened by a quarter of its width on each side (``offset = low - width / 4``, ``scale = 16 / (1.5 width)``, both
  float32; a constant feature, a NaN or infinite value in the first rows, or fewer than two rows is refused). A
  projection is then an integer sum of ``m`` levels with weights +-1, in ``-15 m .. 15 m``.
* **Fixed bins**: the paper sizes each histogram's bins from the data; here every projection has ``B`` bins of
  (nearly) the same width over its whole integer span: ``bin = ((p + 15 m) * s) >> 16`` with
  ``s = floor(65536 B / (30 m + 1))`` (a product and a shift, not a division, per projection). The projections
  (features and signs; numpy's PCG64 from ``seed``) are drawn on the host and shipped as tables.
* **Counts** are uint16 (a bin counts at most ``W`` rows, ``W`` <= 32767): ``2 K B`` of them, nothing grows with
  the stream but the uint64 ``n_learned``.
* **Score**: ``-log p`` of a bin is taken in base 2 on counts: per projection
  ``L(W + 1) - L(c + 1)`` with ``c`` the bin's count in the reference window and ``L`` the integer log2 in Q8
  (:func:`log2_q8`: the bit position and the next 8 bits of the mantissa, linear between powers of two). The
  reference window keeps these surprises, not the counts: they are computed once, at the swap, so a score only
  adds ``K`` of them. The Q15 score is ``floor(32767 sum / (K L(W + 1)))``: higher is more anomalous, 32767 for
  a row in empty bins on every projection, 0 until the first window is complete (no reference yet: nothing is
  flagged).
* **NaN and infinity** are refused on the host (``ValueError``) and on the device (``ES_ERR_INPUT``) with the
  state unchanged (the paper's Loda can skip missing features; a fixed projection here cannot).
* **Threshold**: calibrated on the host and following a histogram of recent scores on the device, as every
  detector's (:mod:`edgestream.learners.detect`).
"""

from __future__ import annotations

import math

import numpy as np

from ..costs import CostTerms
from ..state import Field, RegionSpec, StateSpec
from ..task import ANOMALY
from .base import LearnerSpec, Option, check_integer, state_context, state_tables
from .detect import (COUNTER_FIELDS, COUNTERS, F32, HISTOGRAM_BINS, HISTOGRAM_REGION, SCORE_MAX, WindowedDetector,
                     alarm_q16, finite_rows, window_cost_terms, work_range)

MAX_FEATURES = 255
MAX_PROJECTIONS = 255
MAX_BINS = 255
LEVELS = 16
STATE_ARRAYS = ("offset", "scale", "reference", "latest", "histogram", "feature", "negative")


def nonzero(n_features: int) -> int:
    """Features per projection: ``ceil(sqrt(d))`` (the paper's sparsity)."""
    return math.isqrt(n_features - 1) + 1


def log2_q8(n: int) -> int:
    """Integer log2 of ``n >= 1`` in Q8: 256 times the bit position of the top bit plus the next 8 bits."""
    k = n.bit_length() - 1
    fraction = (n >> (k - 8)) if k >= 8 else (n << (8 - k))
    return (k << 8) + (fraction & 0xFF)


def bin_scale(n_bins: int, m: int) -> int:
    """The bin of a shifted projection sum ``s`` (0 .. 30 m) is ``(s * bin_scale) >> 16``: below ``B``."""
    return (n_bins << 16) // (2 * (LEVELS - 1) * m + 1)


def _tables(config: dict) -> int:
    return config["n_projections"] * config["n_nonzero"]


def _counts(config: dict) -> int:
    return config["n_projections"] * config["n_bins"]


STATE = StateSpec(
    prefix="es_loda",
    title="Loda",
    input_type="float",
    predict_scratch=False,
    tasks=(ANOMALY,),
    config=(
        Field("n_features", "uint8_t"), Field("n_classes", "uint8_t", "1: one output"),
        Field("n_projections", "uint8_t", "K"), Field("n_nonzero", "uint8_t", "m: features per projection"),
        Field("n_bins", "uint8_t", "B: bins per projection"),
        Field("bin_scale", "uint32_t", "floor(65536 B / (30 m + 1)): the bin of a sum s is (s * bin_scale) >> 16"),
        Field("window", "uint16_t", "W: rows per window"),
        Field("log_window", "uint16_t", "log2(W + 1) in Q8: the surprise of an empty bin"),
        Field("alarm_q16", "uint16_t", "target false-alarm rate * 65536"),
    ),
    counters=COUNTER_FIELDS,
    regions=(
        RegionSpec("offset", "levels", "float", lambda c: c["n_features"], "per feature: level 0 starts here"),
        RegionSpec("scale", "levels", "float", lambda c: c["n_features"], "per feature: levels per input unit"),
        RegionSpec("reference", "counts", "uint16_t", _counts,
                   "K x B, the window before: log2(W + 1) - log2(count + 1) in Q8"),
        RegionSpec("latest", "counts", "uint16_t", _counts, "K x B, the window being counted"),
        HISTOGRAM_REGION,
        RegionSpec("feature", "projections", "uint8_t", _tables, "K x m features"),
        RegionSpec("negative", "projections", "uint8_t", _tables, "K x m: 1 where the weight is -1"),
    ),
)


class Loda(WindowedDetector):
    """Loda: an anomaly detector of sparse random projections and histograms learning normal on the device (see
    the module docstring).

    Parameters
    ----------
    n_projections : projections K, 1..255 (the paper's default about 100).
    n_bins : bins per projection B, 2..255.
    window : rows per window W, 10..32767.
    false_alarms : the target false-alarm rate in (0, 0.5): the share of normal rows the threshold may flag.
    seed : the projections' seed (uint32).
    """

    state_spec = STATE
    state_arrays = STATE_ARRAYS
    engine_state = STATE_ARRAYS + COUNTERS
    fitted_attributes = ("offset_", "reference", "projections_")

    def __init__(self, n_projections: int = 64, n_bins: int = 32, window: int = 256, false_alarms: float = 0.01,
                 seed: int = 1):
        self.n_projections = n_projections
        self.n_bins = n_bins
        self.window = window
        self.false_alarms = false_alarms
        self.seed = seed
        self._check_params()

    def _check_params(self):
        check_integer(self, "n_projections", 1, MAX_PROJECTIONS)
        check_integer(self, "n_bins", 2, MAX_BINS)
        self._check_window_params()

    @property
    def n_features_(self) -> int:
        return len(self.offset_)

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        d = self.n_features_ if n_features is None else n_features
        return {"n_features": d, "n_classes": 1, "n_projections": self.n_projections, "n_nonzero": nonzero(d),
                "n_bins": self.n_bins, "bin_scale": bin_scale(self.n_bins, nonzero(d)), "window": self.window,
                "log_window": log2_q8(self.window + 1), "alarm_q16": alarm_q16(self.false_alarms)}

    def summary(self) -> str:
        return (f"{self.n_projections} projections of {self.n_bins} bins, window {self.window}, "
                f"model state {self.state_bytes():,} bytes")

    # -- setup -----------------------------------------------------------------------------------------------

    def start(self, X_sample, y=None) -> "Loda":
        """Fit the levels on the first rows and draw the projections (module docstring); reset the counts."""
        low, width = work_range(self._rows(X_sample))
        self.offset_ = (low - width / 4).astype(F32)
        with np.errstate(over="ignore"):  # a width too small for float32 is refused below
            self.scale_ = (LEVELS / (1.5 * width)).astype(F32)
        if not np.isfinite(self.scale_).all() or not (self.scale_ > 0).all():
            j = int(np.flatnonzero(~np.isfinite(self.scale_) | (self.scale_ <= 0))[0])
            raise ValueError(f"feature {j} has a width of {width[j]!r} over the rows given: its levels cannot be "
                             "held in float32")
        self._draw_projections()
        self.reset()
        return self

    def _draw_projections(self) -> None:
        d, m = self.n_features_, nonzero(self.n_features_)
        rng = np.random.Generator(np.random.PCG64(self.seed))
        feature = np.zeros((self.n_projections, m), dtype=np.uint8)
        negative = np.zeros((self.n_projections, m), dtype=np.uint8)
        for p in range(self.n_projections):
            feature[p] = np.sort(rng.permutation(d)[:m])
            negative[p] = rng.integers(0, 2, size=m)
        self.projections_ = (feature, negative)

    def reset(self) -> None:
        """Empty windows and histogram, no threshold yet; the levels and the projections stay."""
        self.reset_windows((self.n_projections, self.n_bins))
        self.offset, self.scale = self.offset_.copy(), self.scale_.copy()
        self.feature, self.negative = (array.copy() for array in self.projections_)

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (its levels and projections define the configuration); refuses arrays of another
        layout, levels that are not finite and positive, a feature index outside the inputs, counts above the
        window and counters out of range."""
        offset, scale = np.asarray(arrays["offset"], dtype=F32), np.asarray(arrays["scale"], dtype=F32)
        if offset.ndim != 1 or offset.shape != scale.shape or not 1 <= len(offset) <= MAX_FEATURES:
            raise ValueError(f"the levels must be 1..{MAX_FEATURES} features")
        if not (np.isfinite(offset).all() and np.isfinite(scale).all() and (scale > 0).all()):
            raise ValueError("state 'offset' or 'scale' holds a value that is not finite, or a scale not positive")
        m = nonzero(len(offset))
        feature, negative = arrays["feature"], arrays["negative"]
        if feature.size != self.n_projections * m or negative.size != feature.size:
            raise ValueError(f"state projections have {feature.size} weights, this configuration needs "
                             f"{self.n_projections * m}")
        if int(feature.max()) >= len(offset) or int(negative.max()) > 1:
            raise ValueError(f"a projection's feature is outside the {len(offset)} features or a sign is not 0/1")
        self.offset_, self.scale_ = offset, scale
        self.projections_ = (feature.astype(np.uint8).reshape(self.n_projections, m),
                             negative.astype(np.uint8).reshape(self.n_projections, m))
        self.reset()
        self.restore_windows(arrays)

    # -- the device's steps ------------------------------------------------------------------------------------

    def _rows(self, X) -> np.ndarray:
        return finite_rows(X, self.n_features_ if "offset_" in self.__dict__ else None, "Loda", MAX_FEATURES)

    def levels(self, x: np.ndarray) -> np.ndarray:
        """The 0..15 level of every feature of one float32 row (float32 arithmetic, as the device)."""
        return np.clip(np.floor((x - self.offset) * self.scale), 0, LEVELS - 1).astype(np.int64)

    def locate(self, x: np.ndarray) -> np.ndarray:
        """The bin of one float32 row on every projection."""
        m = self.feature.shape[1]
        level = self.levels(x)[self.feature]
        projected = np.where(self.negative == 1, -level, level).sum(axis=1) + (LEVELS - 1) * m
        return (projected * bin_scale(self.n_bins, m)) >> 16

    def score_located(self, bins: np.ndarray) -> int:
        """The Q15 score of a row from its bins (module docstring): 0 before the first reference window."""
        if not self.ready:
            return 0
        raw = int(self.reference[np.arange(self.n_projections), bins].sum(dtype=np.int64))
        return raw * SCORE_MAX // (self.n_projections * log2_q8(self.window + 1))

    def reference_limit(self) -> int:
        """The reference holds surprises, at most ``log2_q8(W + 1)``."""
        return log2_q8(self.window + 1)

    def swapped(self) -> None:
        """The reference's counts become their surprises ``L(W + 1) - L(c + 1)`` (module docstring), once per
        window, so that a score only adds them up."""
        top = log2_q8(self.window + 1)
        self.reference[...] = [[top - log2_q8(int(c) + 1) for c in row] for row in self.reference]


def cost_terms(params: dict, n_features: int, n_classes: int = 1, swap_rate: float | None = None,
               scanned: float = HISTOGRAM_BINS, scanned_worst: float = HISTOGRAM_BINS) -> CostTerms:
    """The work terms of a score (constant: the call, the 64-bit scaling to Q15; a feature's check and level, d; a
    projection's bin and reference surprise, K; a weight, K m) and of a learn call
    (:func:`~edgestream.learners.detect.window_cost_terms`: a window swap copies the K B counts and turns each of
    the reference's into its surprise, an integer log)."""
    model = Loda(**params)
    k = model.n_projections
    score = [1, n_features, k, k * nonzero(n_features)]
    return window_cost_terms(score, k * model.n_bins, model.window, swap_rate, scanned, scanned_worst)


LODA_LADDER = tuple({"n_projections": k, "n_bins": b} for k, b in (
    (255, 64), (200, 64), (160, 64), (128, 64), (100, 64), (100, 32), (64, 32), (48, 32), (32, 32), (24, 32),
    (16, 32), (12, 16), (8, 16), (4, 16), (2, 8)))


SPEC = LearnerSpec(
    name="loda", cls=None, detector=Loda,
    summary="Loda: anomaly scores from histograms of sparse random projections in two windows, on the device",
    options=(
        Option("--n-projections", "n_projections", int, "number of random projections", "K"),
        Option("--n-bins", "n_bins", int, "histogram bins per projection", "B"),
        Option("--window", "window", int, "rows per window", "W"),
        Option("--false-alarms", "false_alarms", float, "target false-alarm rate in (0, 0.5)", "RATE"),
        Option("--seed", "seed", int, "seed of the random projections", "N")),
    learning=True, online=True, runtime=("es_common", "es_detect", "es_loda"), template="loda.c.j2",
    context=state_context, tables=state_tables(STATE), ladder=LODA_LADDER, state=STATE,
    cost_terms=cost_terms, variants=({"window": 10},))
