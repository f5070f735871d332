"""Adaptive XGBoost's regression form: the integer specification of ``es_axgb_learn_target`` and
``es_axgb_predict_raw`` in ``csrc/es_axgb.c``.

The classifier's algorithm (:mod:`edgestream.learners.axgb`: tumbling windows doubling from ``W_min`` to
``W_max``, one boosting round per window, push or replace, the resumable training job and its work units, ADWIN)
with XGBoost's squared error, on the target's int16 code (:class:`~edgestream.task.TargetScale`, fitted on the
first rows; a target outside its range is saturated and counted). A regressor's state has one output
(``n_classes`` 1): the class regions (``window_labels``, ``proba``) are one placeholder element each, and two
regions of the same sizes hold the ring's target codes (``window_targets``) and the job's margins (``margins``).

* **Leaves and output.** Leaves hold int16 target codes (not the classifier's Q10 margins); the raw output is the
  int32 sum of the members' leaves (0, the middle of the fitted range, with no member), decoded on the host as
  every regressor's: ``offset + raw * step``.
* **Gradients.** In the GRAD phase a job sample's margin is the sum of the members before the job's target
  (the classifier's residual base), saturated to ``-32767 .. 32767`` (``margins``, int16: the sum of up to 255
  members could leave int16, and a target code never does). Per sample ``g = margin - code`` (the prediction
  minus the target, ``|g| <= 65534``), ``h = 32768`` (the hessian 1 in the classifier's Q15). The classifier's
  histograms, gains, ``lambda_q15``, ``gamma_q15`` and ``min_child_q15`` apply unchanged: ``min_child_weight``
  counts samples, and a node of fewer than ``max(2, 2 ceil(min_child_weight))`` samples is not searched
  (:func:`~edgestream.learners.axgb_job.split_samples`). Sums stay in int32: ``|G| <= 65534 W_max < 2^28``,
  ``H <= 32768 W_max = 2^27``.
* **Leaf weight.** ``w = trunc(-G eta_q16 / ((H + lambda_q15) 2))``: ``-G / (H / 32768 + lambda)`` times the
  learning rate, in codes (``-G 32768 eta_q16 / ((H + lambda_q15) 65536)``), saturated to int16.
* **Drift.** ADWIN takes bits: a sample's bit is 1 when the ensemble's prediction misses its code by more than
  ``ERROR_CODES = 4095`` (an eighth of ``CODE_MAX``: about 9% of the first rows' range, the code range being
  1.5 times it), computed before the sample is learned. A rise in the rate of such misses resets as the
  classifier's wrong classes do.
* **Validation** adds to the classifier's: every ring target code and every margin within ``+-32767``, and the
  histograms' ``sum |g| <= 65534 n``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..fixedpoint import Q15_ONE
from ..task import CODE_MAX
from .axgb import AXGB, SPEC
from .base import OnlineRegression

ERROR_CODES = CODE_MAX // 8  # a miss by more codes is an error bit for ADWIN


class AdaptiveXGBoostRegressor(OnlineRegression, AXGB):
    """Adaptive XGBoost for a number (squared error on the target code, see the module docstring): the
    classifier's windows, ensemble update, bounded training job and ADWIN, learning on the device. Parameters:
    those of :class:`~edgestream.learners.axgb.AXGB` (``min_child_weight`` counts samples)."""

    target_region = "window_targets"
    leaf_scale = 2
    g_most = 2 * CODE_MAX
    fitted_attributes = ("bins_", "target_", "saturated_", "window_bins")
    labels_attribute = "target_"
    start_hint = "start(X_sample, y_sample)"

    def _classes(self, n_classes: int | None) -> int:
        return 1

    @property
    def n_outputs(self) -> int:
        return 1

    def start(self, X_sample, y_sample) -> "AdaptiveXGBoostRegressor":
        """The bins from a sample of the stream, the target scale from its targets; an empty ensemble."""
        self.set_target(y_sample)
        return self.fit_bins(X_sample)

    # -- the device's steps ------------------------------------------------------------------------------------

    def learn_bins(self, bins: np.ndarray, code: int) -> None:
        """One learning step on a binned sample and a target code (the C ``es_axgb_learn_target``)."""
        self._check_ready()
        if not -CODE_MAX <= int(code) <= CODE_MAX:
            raise ValueError(f"target code {code} is outside -{CODE_MAX}..{CODE_MAX}")
        self._learn(bins, int(code))

    def learn_encoded(self, x, code: int) -> None:
        """One learning step on a raw row and a target code."""
        self.learn_bins(self.bin_rows(np.asarray(x).reshape(1, -1))[0], code)

    def _error_bit(self, bins: np.ndarray, code: int) -> int:
        return int(abs(code - int(self._score_sums(bins)[0, 0])) > ERROR_CODES)

    def _keep_margins(self, pos: int, sums: np.ndarray) -> None:
        self.margins[pos : pos + len(sums)] = np.clip(sums[:, 0], -CODE_MAX, CODE_MAX)

    def _gradients(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        codes = self.window_targets[(self.head + samples) % self._capacity].astype(np.int64)
        g = self.margins[samples].astype(np.int64) - codes
        return g[:, None], np.full((len(samples), 1), Q15_ONE, dtype=np.int64)

    def _check_window(self, refuse) -> None:
        if (np.abs(self.window_targets.astype(np.int64)) > CODE_MAX).any() or \
                (np.abs(self.margins.astype(np.int64)) > CODE_MAX).any():
            refuse(f"a window target code or a margin is outside -{CODE_MAX}..{CODE_MAX}")

    def predict_raw_bins(self, bins: np.ndarray) -> np.ndarray:
        """int32 raw outputs of binned rows: the sum of the members' leaf codes."""
        return self._score_sums(bins)[:, 0].astype(np.int32)

    def predict_encoded(self, X) -> np.ndarray:
        return self.predict_raw_bins(self.bin_rows(X))


# The registry's entry: the classifier's, with its regression form.
AXGB_SPEC = dataclasses.replace(SPEC, regressor=AdaptiveXGBoostRegressor)
