"""What the streaming anomaly detectors share, the specification of ``csrc/es_detect.c``: float32 rows refused with
NaN or infinity, and the threshold, from the host's calibration and on the device from a histogram of recent scores.

A row is flagged when its Q15 score is at or above ``threshold`` (32768 flags nothing, the value before any
calibration). :func:`calibrated_threshold` sets it on the host from scores of normal rows for the target false-alarm
rate (the smallest threshold that flags at most that share of them). On the device it follows the stream: every
learned row's score (once the detector has a reference) is counted in a 128-bin histogram of the Q15 range (bins
of 256); at every window swap the threshold becomes the smallest bin edge ``t`` such that
``count(score >= t) * 65536 <= round(65536 rate) * total`` and the histogram is halved (integer shift), so it weighs
the last window 1, the one before 1/2 and so on: about two windows of recent scores, at most ``2 W`` per bin (no
saturation).
"""

from __future__ import annotations

import numpy as np

from ..costs import CostTerms
from ..task import FLAG, NEVER, check_false_alarms
from ..state import Field, RegionSpec
from .base import OnlineAnomaly, OnlineStateLearner, check_integer, restore_regions

F32 = np.float32
MAX_WINDOW = 32767
HISTOGRAM_BINS = 128
BIN_SHIFT = 8  # Q15 scores >> 8: the histogram's bin
SCORE_MAX = 32767


def alarm_q16(rate: float) -> int:
    """The false-alarm rate as the device holds it: ``round(65536 rate)``, at least 1."""
    return max(1, int(round(check_false_alarms(rate) * 65536)))


def histogram_threshold(histogram: np.ndarray, alarm: int, current: int) -> int:
    """The device's threshold from its histogram of recent scores (module docstring); ``current`` when empty."""
    total = int(histogram.sum(dtype=np.int64))
    if total == 0:
        return current
    above = 0
    for b in range(HISTOGRAM_BINS - 1, -1, -1):
        above += int(histogram[b])
        if above * 65536 > alarm * total:
            return (b + 1) << BIN_SHIFT
    return 0


def count_score(histogram: np.ndarray, score: int) -> None:
    """Count one learned row's score in the histogram (a full bin stays full)."""
    b = score >> BIN_SHIFT
    histogram[b] = min(int(histogram[b]) + 1, 0xFFFF)


def swap_threshold(histogram: np.ndarray, rate: float, current: int) -> int:
    """The threshold at a window swap (:func:`histogram_threshold`); the histogram is halved."""
    threshold = histogram_threshold(histogram, alarm_q16(rate), current)
    histogram >>= np.uint16(1)
    return threshold


def calibrated_threshold(scores, rate: float) -> int:
    """The smallest Q15 threshold that flags at most ``round(65536 rate)`` / 65536 of ``scores`` (the host's
    calibration, exact: ``count(score >= t) * 65536 <= alarm * n``); 32768 for no scores."""
    scores = np.sort(np.asarray(scores, dtype=np.int64))[::-1]
    allowed = alarm_q16(rate) * len(scores) // 65536
    if len(scores) == 0:
        return NEVER
    return 0 if allowed >= len(scores) else int(scores[allowed]) + 1


def finite_rows(X, n_features: int | None, title: str, max_features: int) -> np.ndarray:
    """Rows as float32, (rows, features); NaN and infinity refused, naming the row and the feature."""
    X = np.asarray(X, dtype=np.float64) if not isinstance(X, np.ndarray) or X.dtype.kind != "f" else X
    if X.ndim != 2:
        raise ValueError(f"X must have shape (rows, features), got {X.shape}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model has {n_features}")
    if not 1 <= X.shape[1] <= max_features:
        raise ValueError(f"X has {X.shape[1]} features; {title} take 1 to {max_features}")
    X32 = X.astype(F32)
    bad = ~np.isfinite(X32)
    if bad.any():
        row, feature = np.argwhere(bad)[0]
        value = float(X[row, feature])
        shown = value if not np.isfinite(value) else f"{value!r} (float32: {float(X32[row, feature])})"
        raise ValueError(f"feature {feature} of row {row} is {shown}; {title} refuse NaN and infinite features")
    return X32


def work_range(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The low value and the width of every feature over the first rows: at least two rows, every feature taking
    two values (a constant feature is refused: no range can be fitted)."""
    X = X.astype(np.float64)
    if len(X) < 2:
        raise ValueError(f"{len(X)} row(s) given: a work range needs at least 2 rows")
    low, high = X.min(axis=0), X.max(axis=0)
    constant = np.flatnonzero(high <= low)
    if len(constant):
        j = int(constant[0])
        raise ValueError(f"feature {j} is constant ({float(low[j])!r}) over the {len(X)} rows given: a work range "
                         "needs at least 2 values per feature")
    return low, high - low


def window_cost_terms(score: list[float], cells: int, window: int, swap_rate: float | None, scanned: float,
                      scanned_worst: float) -> CostTerms:
    """The work terms of a windowed detector's calls from those of its ``score``: a learn call is a score (with a
    count per cell located) and now and then a window swap, which copies the ``cells`` counts of both windows
    (and whatever a detector does to each, once per window), sums the 128-bin histogram and halves it, and scans
    it from the top for the threshold. The worst call swaps; the mean one swaps ``swap_rate`` times per call
    (1 / W in the steady state). ``scanned``, ``scanned_worst``: the bins a threshold scan visits on average and
    at most, which the scores decide (a prediction assumes all 128, the costlier case; the calibration replays
    what its rows did)."""
    rate = 1 / window if swap_rate is None else swap_rate
    return CostTerms(predict=score, learn_mean=score + [cells * rate, rate, scanned * rate],
                     learn_worst=score + [cells, 1, scanned_worst])


COUNTERS = ("n_learned", "filled", "threshold", "ready")
# The counters of every windowed detector's state, and its histogram of recent scores (edgestream.state).
COUNTER_FIELDS = (
    Field("n_learned", "uint64_t", "rows learned"),
    Field("filled", "uint16_t", "rows in the latest window"),
    Field("threshold", "uint16_t", "Q15 score flagged from; 32768 flags nothing"),
    Field("ready", "uint8_t", "1 once a reference window exists"),
)
HISTOGRAM_REGION = RegionSpec("histogram", "threshold", "uint16_t", lambda c: HISTOGRAM_BINS,
                              "recent Q15 scores, bins of 256")


class WindowedDetector(OnlineAnomaly, OnlineStateLearner):
    """The steps shared by the detectors that count rows in a *latest* window and score them against the
    *reference* window before it (uint16 counts, the two swapping every ``window`` rows), with the threshold of
    this module. A detector gives ``locate(x)`` (the counted cell of every tree or projection, one row per each:
    an index array), ``score_located(cells)`` (the Q15 score from the reference), ``_rows(X)`` and ``reset()``
    (which calls :meth:`reset_windows`)."""

    input_dtype = "float32"
    ready_attribute = "reference"
    missing_rule = "NaN and infinity refused with ES_ERR_INPUT"

    def _check_window_params(self):
        check_integer(self, "window", 10, MAX_WINDOW)
        check_integer(self, "seed", 0, 2**32 - 1)
        check_false_alarms(self.false_alarms)

    def device_counters(self) -> dict:
        return {name: getattr(self, name) for name in COUNTERS}

    def reset_windows(self, cells: tuple[int, int]) -> None:
        """Empty windows of ``cells`` counts and histogram, no threshold yet."""
        self._drop_engine()
        self.reference = np.zeros(cells, dtype=np.uint16)
        self.latest = np.zeros(cells, dtype=np.uint16)
        self.histogram = np.zeros(HISTOGRAM_BINS, dtype=np.uint16)
        self.n_learned, self.filled, self.threshold, self.ready = 0, 0, NEVER, 0

    def _check_ready(self):
        if "reference" not in self.__dict__ and "_state_engine" not in self.__dict__:
            raise RuntimeError("call start(X_sample) (or partial_fit) before learning")

    def saved_arrays(self) -> dict:
        self._check_ready()
        counters = np.array([getattr(self, name) for name in COUNTERS], dtype=np.uint64)
        return {name: getattr(self, name) for name in self.state_arrays} | {"counters": counters}

    def restore_windows(self, arrays: dict) -> None:
        """Take the saved windows, histogram and counters (after ``reset``); refuses counts above the window and
        counters out of range."""
        restore_regions(self, ("reference", "latest", "histogram"), arrays)
        if int(self.latest.max()) > self.window or int(self.reference.max()) > self.reference_limit():
            raise ValueError(f"a count is above the window of {self.window} rows (a reference value above "
                             f"{self.reference_limit()})")
        n_learned, filled, threshold, ready = (int(v) for v in arrays["counters"])
        if filled >= self.window or threshold > NEVER or ready > 1:
            raise ValueError(f"counters filled={filled}, threshold={threshold}, ready={ready}: need filled < "
                             f"{self.window}, threshold <= {NEVER}, ready 0 or 1")
        self.n_learned, self.filled, self.threshold, self.ready = n_learned, filled, threshold, ready

    def output(self, score: int) -> int:
        """The int32 output of a score: the score and the flag (:func:`edgestream.task.split_output`)."""
        return score | (FLAG if score >= self.threshold else 0)

    def learn_encoded(self, x, target: int = 0) -> None:
        """One learning step on a float32 row (the device's learn call): count its cells in the latest window,
        its score in the histogram (once a reference exists), swap the windows when the latest is full."""
        self._check_ready()
        cells = self.locate(self._rows(np.asarray(x).reshape(1, -1))[0])
        if self.ready:
            count_score(self.histogram, self.score_located(cells))
        owners = np.arange(len(cells)).reshape(-1, *([1] * (cells.ndim - 1)))
        self.latest[owners, cells] += np.uint16(1)
        self.filled += 1
        self.n_learned = (self.n_learned + 1) & 0xFFFFFFFFFFFFFFFF
        if self.filled == self.window:
            self._swap()

    def reference_limit(self) -> int:
        """The largest value of the reference window's cells (a count: the window)."""
        return self.window

    def swapped(self) -> None:
        """After a window swap (the reference the latest counts): nothing to do unless a detector keeps its
        reference in another form."""

    def _swap(self) -> None:
        self.reference[...] = self.latest
        self.latest[...] = 0
        self.filled = 0
        if self.ready:
            self.threshold = swap_threshold(self.histogram, self.false_alarms, self.threshold)
        self.ready = 1
        self.swapped()

    def predict_encoded(self, X) -> np.ndarray:
        """int32 outputs of rows: each its Q15 score and flag, without learning."""
        self._check_ready()
        return np.array([self.output(self.score_located(self.locate(x))) for x in self._rows(X)], dtype=np.int32)

    def calibrate(self, scores):
        """Set the threshold from Q15 scores of normal rows for the target false-alarm rate (module docstring)."""
        self._check_ready()
        self._release_engine()
        self.threshold = calibrated_threshold(scores, self.false_alarms)
        return self
