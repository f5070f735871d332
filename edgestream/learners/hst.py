"""Half-Space Trees (Tan, Ting & Liu, IJCAI 2011), the specification of ``csrc/es_hst.c``: an anomaly detector
that learns what is normal on the device, in a fixed memory, with integer arithmetic only.

``T`` complete binary trees of height ``h`` split a work range of the inputs in halves: each internal node a
random feature and the midpoint of its node's range on that feature. Every node counts the rows that reached it
in two windows of ``W`` rows: the *latest* window (being counted) and the *reference* window (the one before).
When the latest window is full it becomes the reference and counting starts again (the paper's Algorithm 1). A
row's score is the paper's mass-weighted depth: per tree, ``r * 2^k`` of the first node on its path whose
reference mass ``r`` is at most the size limit, or of its leaf (depth ``k = h``); summed over the trees. Few rows
in the reference window where a row falls make it anomalous.

Where it departs from the paper, for a fixed memory and exactness (the C follows every point to the bit):

* **Work range**: the paper assumes inputs scaled to [0, 1]. Here the range of every feature is fitted on the
  first rows of the stream (:meth:`HalfSpaceTrees.start`, at least two rows, every feature taking two values);
  the rows are read in those units, ``u = (x - low) / (high - low)``, and every tree takes the paper's random
  work range around ``s ~ U(0, 1)``: ``s -+ 2 max(s, 1 - s)`` per feature. A constant feature, a NaN or
  infinite value in the first rows, or fewer than two rows is refused: no range can be fitted.
* **Tables, not regeneration**: the trees are drawn on the host (numpy's PCG64 from ``seed``: per tree the ``d``
  values ``s``, then one feature per internal node in heap order) and shipped as tables: per internal node a
  feature (uint8) and the split point in the input's own units as a float32 (``x <= t`` goes left, compared in
  float32 as the tree learners' edges). The device never computes a split, so host and device agree by
  construction; a tree costs ``5 (2^h - 1)`` bytes.
* **Masses** are uint16 counts (a node counts at most ``W`` rows, ``W`` <= 32767): ``2 T (2^(h+1) - 1)`` of them.
  Every statistic is bounded by the window: nothing grows with the stream but the uint64 ``n_learned``.
* **Score**: the paper's score is larger for normal rows. The Q15 score here is
  ``32767 - floor(32767 raw / (T W 2^h))`` with ``raw`` the paper's sum (an integer, at most ``T W 2^h``), so
  higher is more anomalous; it is 0 until the first window is complete (no reference yet: nothing is flagged).
  The size limit is ``floor(W / 10)`` (the paper's ``0.1 psi``). River's implementation adds ``r 2^k`` of every
  node along the path instead; this one follows the paper.
* **NaN and infinity** are refused on the host (``ValueError``) and on the device (``ES_ERR_INPUT``) with the
  state unchanged: a row without a value on a feature has no half-space.
* **Threshold**: a row is flagged when its score is at or above ``threshold``, calibrated on the host and
  following a histogram of recent scores on the device, as every detector's (:mod:`edgestream.learners.detect`).
"""

from __future__ import annotations

import numpy as np

from ..costs import CostTerms
from ..state import Field, RegionSpec, StateSpec
from ..task import ANOMALY
from .base import LearnerSpec, Option, check_integer, state_context, state_tables
from .detect import (COUNTER_FIELDS, COUNTERS, F32, HISTOGRAM_BINS, HISTOGRAM_REGION, SCORE_MAX, WindowedDetector,
                     alarm_q16, finite_rows, window_cost_terms, work_range)

MAX_FEATURES = 255
MAX_TREES = 64
MAX_HEIGHT = 12
STATE_ARRAYS = ("split_point", "reference", "latest", "histogram", "split_feature")


def _internal(config: dict) -> int:
    return config["n_trees"] * ((1 << config["height"]) - 1)


def _nodes(config: dict) -> int:
    return config["n_trees"] * ((2 << config["height"]) - 1)


STATE = StateSpec(
    prefix="es_hst",
    title="Half-Space Trees",
    input_type="float",
    predict_scratch=False,
    tasks=(ANOMALY,),
    config=(
        Field("n_features", "uint8_t"), Field("n_classes", "uint8_t", "1: one output"),
        Field("n_trees", "uint8_t", "T"), Field("height", "uint8_t", "h: 2^h leaves per tree"),
        Field("window", "uint16_t", "W: rows per window"),
        Field("size_limit", "uint16_t", "floor(W / 10): a node with no more reference mass ends the walk"),
        Field("alarm_q16", "uint16_t", "target false-alarm rate * 65536"),
    ),
    counters=COUNTER_FIELDS,
    regions=(
        RegionSpec("split_point", "trees", "float", _internal, "T x (2^h - 1) split points, x <= t goes left"),
        RegionSpec("reference", "masses", "uint16_t", _nodes, "T x (2^(h+1) - 1), the window before"),
        RegionSpec("latest", "masses", "uint16_t", _nodes, "T x (2^(h+1) - 1), the window being counted"),
        HISTOGRAM_REGION,
        RegionSpec("split_feature", "trees", "uint8_t", _internal, "T x (2^h - 1) split features"),
    ),
)


class HalfSpaceTrees(WindowedDetector):
    """Half-Space Trees: an anomaly detector learning normal on the device (see the module docstring).

    Parameters
    ----------
    n_trees : trees T, 1..64 (River's default 10; the paper's 25).
    height : tree height h, 1..12 (River's default 8; the paper's 15 needs 2^16 nodes per tree).
    window : rows per window W, 10..32767 (River's and the paper's 250).
    false_alarms : the target false-alarm rate in (0, 0.5): the share of normal rows the threshold may flag.
    seed : the trees' seed (uint32).
    """

    state_spec = STATE
    state_arrays = STATE_ARRAYS
    engine_state = STATE_ARRAYS + COUNTERS
    fitted_attributes = ("low_", "width_", "reference", "trees_")

    def __init__(self, n_trees: int = 10, height: int = 8, window: int = 250, false_alarms: float = 0.01,
                 seed: int = 1):
        self.n_trees = n_trees
        self.height = height
        self.window = window
        self.false_alarms = false_alarms
        self.seed = seed
        self._check_params()

    def _check_params(self):
        check_integer(self, "n_trees", 1, MAX_TREES)
        check_integer(self, "height", 1, MAX_HEIGHT)
        self._check_window_params()

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        return {"n_features": self.n_features_ if n_features is None else n_features, "n_classes": 1,
                "n_trees": self.n_trees, "height": self.height, "window": self.window,
                "size_limit": self.window // 10, "alarm_q16": alarm_q16(self.false_alarms)}

    def summary(self) -> str:
        return (f"{self.n_trees} half-space trees of height {self.height}, window {self.window}, "
                f"model state {self.state_bytes():,} bytes")

    @property
    def n_features_(self) -> int:
        return len(self.low_)

    # -- setup -----------------------------------------------------------------------------------------------

    def start(self, X_sample, y=None) -> "HalfSpaceTrees":
        """Fit the work range on the first rows and draw the trees (module docstring); reset the masses."""
        self.low_, self.width_ = work_range(self._rows(X_sample))
        self._draw_trees()
        self.reset()
        return self

    def _draw_trees(self) -> None:
        d, internal = self.n_features_, (1 << self.height) - 1
        rng = np.random.Generator(np.random.PCG64(self.seed))
        feature = np.zeros((self.n_trees, internal), dtype=np.uint8)
        threshold = np.zeros((self.n_trees, internal), dtype=F32)
        for t in range(self.n_trees):
            s = rng.random(d)
            reach = 2 * np.maximum(s, 1 - s)
            low, high = np.empty((2 * internal + 1, d)), np.empty((2 * internal + 1, d))
            low[0], high[0] = s - reach, s + reach
            for node in range(internal):
                q = int(rng.integers(d))
                middle = (low[node, q] + high[node, q]) / 2
                feature[t, node] = q
                threshold[t, node] = F32(self.low_[q] + middle * self.width_[q])
                for child, side in ((2 * node + 1, high), (2 * node + 2, low)):
                    low[child], high[child] = low[node], high[node]
                    side[child, q] = middle
        self.trees_ = (feature, threshold)

    def reset(self) -> None:
        """Empty windows and histogram, no threshold yet; the work range and the trees stay."""
        self.reset_windows((self.n_trees, (2 << self.height) - 1))
        self.split_feature, self.split_point = (array.copy() for array in self.trees_)

    def saved_arrays(self) -> dict:
        return super().saved_arrays() | {"low": self.low_, "width": self.width_}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (its trees define the configuration); refuses arrays of another layout, a feature
        index outside the inputs, masses above the window and counters out of range."""
        low, width = np.asarray(arrays["low"], dtype=np.float64), np.asarray(arrays["width"], dtype=np.float64)
        if low.ndim != 1 or low.shape != width.shape or not 1 <= len(low) <= MAX_FEATURES or not (width > 0).all():
            raise ValueError(f"the work range must be 1..{MAX_FEATURES} features of positive width")
        feature, point = arrays["split_feature"], arrays["split_point"]
        internal = (1 << self.height) - 1
        if feature.size != self.n_trees * internal or point.size != feature.size:
            raise ValueError(f"state trees have {feature.size} split nodes, this configuration needs "
                             f"{self.n_trees * internal}")
        if not np.isfinite(point).all():
            raise ValueError("state 'split_point' holds NaN or infinite split points")
        if int(feature.max()) >= len(low):
            raise ValueError(f"a split feature {int(feature.max())} is outside the {len(low)} features")
        self.low_, self.width_ = low, width
        self.trees_ = (feature.astype(np.uint8).reshape(self.n_trees, internal),
                       point.astype(F32).reshape(self.n_trees, internal))
        self.reset()
        self.restore_windows(arrays)

    # -- the device's steps ------------------------------------------------------------------------------------

    def _rows(self, X) -> np.ndarray:
        return finite_rows(X, self.n_features_ if "low_" in self.__dict__ else None, "Half-Space Trees", MAX_FEATURES)

    def locate(self, x: np.ndarray) -> np.ndarray:
        """The node of every tree at every depth 0..h on the path of one float32 row (T x (h + 1))."""
        trees = np.arange(self.n_trees)
        path = np.zeros((self.n_trees, self.height + 1), dtype=np.int64)
        for k in range(self.height):
            node = path[:, k]
            left = x[self.split_feature[trees, node]] <= self.split_point[trees, node]
            path[:, k + 1] = 2 * node + np.where(left, 1, 2)
        return path

    def score_located(self, path: np.ndarray) -> int:
        """The Q15 score of a row from its path (module docstring): 0 before the first reference window."""
        if not self.ready:
            return 0
        mass = self.reference[np.arange(self.n_trees)[:, None], path].astype(np.int64)
        small = mass <= self.window // 10
        small[:, -1] = True
        depth = np.argmax(small, axis=1)
        raw = int((mass[np.arange(self.n_trees), depth] << depth).sum())
        return SCORE_MAX - raw * SCORE_MAX // ((self.n_trees * self.window) << self.height)


def cost_terms(params: dict, n_features: int, n_classes: int = 1, swap_rate: float | None = None,
               scanned: float = HISTOGRAM_BINS, scanned_worst: float = HISTOGRAM_BINS) -> CostTerms:
    """The work terms of a score (constant: the call, the 64-bit scaling to Q15; the input check, d; a tree, T; a
    node on a path, T (h + 1)) and of a learn call (:func:`~edgestream.learners.detect.window_cost_terms`: a
    window swap copies the T (2^(h+1) - 1) masses)."""
    model = HalfSpaceTrees(**params)
    t, h = model.n_trees, model.height
    score = [1, n_features, t, t * (h + 1)]
    return window_cost_terms(score, t * ((2 << h) - 1), model.window, swap_rate, scanned, scanned_worst)


HST_LADDER = tuple({"n_trees": t, "height": h} for t, h in (
    (25, 8), (16, 8), (10, 8), (10, 7), (10, 6), (8, 6), (8, 5), (6, 5), (4, 5), (4, 4), (3, 4), (2, 4), (2, 3),
    (1, 3), (1, 2)))

# The search's grid: every other rung crossed with windows of 100 to 1,000 rows (a shorter window follows a drifting
# normal sooner, a longer one counts more rows per node: the data decides).
HST_WINDOWS = (100, 250, 1000)
HST_SEARCH = tuple(rung | {"window": w} for rung in HST_LADDER[::2] for w in HST_WINDOWS)


SPEC = LearnerSpec(
    name="hst", cls=None, detector=HalfSpaceTrees,
    summary="Half-Space Trees: anomaly scores from masses of random half-spaces in two windows, on the device",
    options=(
        Option("--n-trees", "n_trees", int, "number of trees", "N"),
        Option("--height", "height", int, "tree height (2^h leaves)", "H"),
        Option("--window", "window", int, "rows per window", "W"),
        Option("--false-alarms", "false_alarms", float, "target false-alarm rate in (0, 0.5)", "RATE"),
        Option("--seed", "seed", int, "seed of the random trees", "N")),
    learning=True, online=True, runtime=("es_common", "es_detect", "es_hst"), template="hst.c.j2",
    context=state_context, tables=state_tables(STATE), ladder=HST_LADDER, search=HST_SEARCH, state=STATE,
    cost_terms=cost_terms,
    variants=({"window": 10},))
