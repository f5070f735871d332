"""Shrub Ensembles for a number: the regression form of :mod:`edgestream.learners.shrubs` (the specification of
``es_shrubs_learn_target`` and ``es_shrubs_predict_raw`` in ``csrc/es_shrubs.c``).

Everything not named here is the classifier's, to the bit: the window, the queue and the bounded work per call,
the sorted lists, the pool of shrubs, the Gram and label sums kept incrementally, the Jacobi gradient steps, the
hard-L0 prox and the integer simplex projection. The state is the classifier's with one value per leaf
(``n_classes`` 1).

* **Targets**: the int16 codes of a :class:`~edgestream.task.TargetScale` fitted on the first rows (saturated
  outside its range and counted in ``saturated_``), ``-32767 .. 32767``; the window and the queue hold each as two
  bytes, low byte first, in ``window_labels`` and ``queue_labels`` (2 B and 2 x queue bytes).
* **A new shrub** is a CART regression tree on the window's bins, breadth first, level by level as the
  classifier's: a node of at least ``2 * min_samples_leaf`` rows may split; every threshold between two runs of its
  rows (rows of one bin) with ``min_samples_leaf`` rows on each side is a candidate, scored as the frozen
  :class:`~edgestream.TreeRegressor` scores it (variance reduction, the largest ``S_l^2 / n_l + S_r^2 / n_r``,
  ``S`` the sums of codes) in integers: ``floor(S_l^2 / n_l) + floor(S_r^2 / n_r)`` (``S^2 < 2^55``); the best,
  ties to the lowest feature then threshold, splits if it scores strictly above the parent's ``floor(S^2 / n)``
  (so a node of equal codes stays a leaf). A leaf holds its rows' mean code rounded half up,
  ``floor((2 S + n) / (2 n))``, stored in ``leaf_values`` as an int16 (two's complement in the uint16 region).
* **The loss** is the squared error of the ensemble's output against the target, codes read as Q15 fractions
  (a code ``h`` is ``h / 2^15`` in ``(-1, 1)``): the classifier's gradient with one column, where a Gram term is
  ``floor(h_a h_b / 2^15)`` and a label term ``floor(h y / 2^15)`` (floor of a signed product, an arithmetic
  shift here; the sums wrap at 2^32 and are read as int32, below ``2^27`` in magnitude). The new shrub's Gram
  diagonal entry and label sum are summed in its ``terms`` piece, with its column.
* **The raw output** is ``sum_k w_k h_k`` over the active shrubs (Q15 weights summing to 32768 after the
  projection, int16 leaf codes): an exact int32 (no rounding), decoded with divisor 32768,
  ``offset + raw * step / 32768``; an empty ensemble gives 0, the centre of the fitted range.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..task import CODE_MAX
from ..tree import Q15_ONE, TreeEnsemble
from .base import OnlineRegression
from . import shrubs
from .shrubs import Shrubs, choose_splits

NO_CODE = -32768  # never a target code nor a leaf code (codes are symmetric)


def signed(values: np.ndarray) -> np.ndarray:
    """int64 of int16 codes stored in uint16 (two's complement)."""
    return np.asarray(values).astype(np.int16).astype(np.int64)


def variance_splits(bins, codes, node_of, level_size: int, min_samples_leaf: int):
    """The feature and threshold of the split of every node of the level (feature -1: the node stays a leaf):
    the module docstring's rule, over the rows with ``node_of >= 0`` and their ``codes``."""
    playing = np.flatnonzero(node_of >= 0)
    n_features = bins.shape[1]
    nodes, codes = node_of[playing], codes[playing]
    n_total = np.bincount(nodes, minlength=level_size)
    s_total = np.zeros(level_size, dtype=np.int64)
    np.add.at(s_total, nodes, codes)
    group = np.arange(n_features) * level_size + nodes[:, None]  # [rows, features]: feature, node
    runs, inverse = np.unique((group * 256 + bins[playing]).ravel(), return_inverse=True)  # (feature, node, bin)
    run_n = np.bincount(inverse, minlength=len(runs))
    run_s = np.zeros(len(runs), dtype=np.int64)
    np.add.at(run_s, inverse, np.repeat(codes, n_features))
    run_group = runs // 256
    first = np.searchsorted(run_group, run_group)  # the first run of each run's group
    n_left = np.cumsum(run_n) - np.concatenate(([0], np.cumsum(run_n)))[first]
    s_left = np.cumsum(run_s) - np.concatenate(([0], np.cumsum(run_s)))[first]
    at = np.flatnonzero(run_group[:-1] == run_group[1:])  # a threshold after every run but a group's last
    node, feature, threshold = run_group[at] % level_size, run_group[at] // level_size, runs[at] % 256
    n_l, s_l = n_left[at], s_left[at]
    n_r, s_r = n_total[node] - n_l, s_total[node] - s_l
    allowed = (n_l >= min_samples_leaf) & (n_r >= min_samples_leaf)
    node, feature, threshold = node[allowed], feature[allowed], threshold[allowed]
    key = s_l[allowed] ** 2 // n_l[allowed] + s_r[allowed] ** 2 // n_r[allowed]
    return choose_splits(node, feature, threshold, key, s_total**2 // np.maximum(n_total, 1))


class ShrubRegressor(OnlineRegression, Shrubs):
    """Online ensemble of small regression trees on a sliding window, learning in fixed memory (module docstring).

    Parameters: those of :class:`~edgestream.learners.shrubs.Shrubs` but ``criterion`` (a regression
    tree reduces the squared error)."""

    output_divisor = Q15_ONE  # the raw output is a Q15-weighted sum of leaf codes
    fitted_attributes = ("bins_", "target_", "saturated_", "window_bins")
    labels_attribute = "target_"
    start_hint = "start(X_sample, y_sample)"
    _columns = 1

    def __init__(self, window_size: int = 64, max_shrubs: int = 16, max_depth: int = 4, step_size="adaptive",
                 burnin: int = 5, update_every: int = 1, min_samples_leaf: int = 1, max_bins: int = 64,
                 binning: str = "quantile", input_dtype: str = "float32", allow_missing: bool = False,
                 work_per_call: int | None = None):
        super().__init__(window_size=window_size, max_shrubs=max_shrubs, max_depth=max_depth, step_size=step_size,
                         burnin=burnin, update_every=update_every, min_samples_leaf=min_samples_leaf,
                         max_bins=max_bins, binning=binning, input_dtype=input_dtype, allow_missing=allow_missing,
                         work_per_call=work_per_call)

    def start(self, X_sample, y_sample) -> "ShrubRegressor":
        """The bins from a sample of the stream and the target scale from its targets; an empty state."""
        self.fit_bins(X_sample)
        self.set_target(y_sample)
        self.reset()
        return self

    def units(self, n_features: int, n_classes: int | None = None) -> dict:
        return super().units(n_features, 1)

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        """The classifier's configuration with one value per leaf (``n_classes`` 1)."""
        return super().device_config(n_features, 1)

    # -- the task's parts ------------------------------------------------------------------------------------

    @property
    def window_targets(self) -> np.ndarray:
        """The window rows' target codes (int16, a view of ``window_labels``)."""
        return self.window_labels.view("<i2")

    @property
    def queue_targets(self) -> np.ndarray:
        return self.queue_labels.view("<i2")

    def _check_code(self, code: int) -> None:
        if not -CODE_MAX <= code <= CODE_MAX:
            raise ValueError(f"target code {code} is outside -{CODE_MAX}..{CODE_MAX}")

    def _check_targets(self, targets: np.ndarray, where: str) -> None:
        if (targets == NO_CODE).any():
            raise ValueError(f"{where} target codes must be -{CODE_MAX}..{CODE_MAX}, not {NO_CODE}")

    def _ensemble(self, n: int | None = None) -> TreeEnsemble:
        n = self.n_shrubs if n is None else n
        return TreeEnsemble(self.nodes, self.roots[:n], self.weights[:n], self.leaf_values.view(np.int16),
                            self.n_features_, leaf_kind="additive", base_score=np.zeros(1, dtype=np.int32))

    def _check_leaves(self, leaves: np.ndarray) -> None:
        if (self.leaf_values[leaves].view(np.int16) == NO_CODE).any():
            raise ValueError(f"leaf codes must be -{CODE_MAX}..{CODE_MAX}, not {NO_CODE}")

    def _tag_labels(self, n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.int64)  # a row's tag is its node alone

    def _may_split(self, counts: np.ndarray) -> np.ndarray:
        return np.ones(len(counts), dtype=bool)  # equal codes never split: no split beats the parent

    def _best_splits(self, bins, labels, node_of, counts):
        codes = self.window_targets[: len(bins)].astype(np.int64)
        return variance_splits(bins, codes, node_of, len(counts), self.min_samples_leaf)

    @staticmethod
    def _pair_terms(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``floor(a * b / 2^15)`` of every pair of leaf codes ``a[..., i, 0]`` and ``b[..., j, 0]``."""
        return (signed(a) @ np.swapaxes(signed(b), -1, -2)) >> 15

    @staticmethod
    def _label_terms(h: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """``floor(h * y / 2^15)`` [rows, K] of rows with leaf codes ``h`` [rows, K, 1] and target codes ``y``."""
        return (signed(h[..., 0]) * np.asarray(targets, dtype=np.int64)[:, None]) >> 15

    def _grow_leaves(self, slot: int, counts: np.ndarray, leaves: np.ndarray, nodes: np.ndarray,
                     node_of: np.ndarray) -> None:
        """Leaves at the shrub's leaf rows ``leaves``: the mean code of the rows of the level's ``nodes``, rounded
        half up (their terms come with the new shrub's column)."""
        n = len(node_of)
        in_level = node_of >= 0
        sums = np.zeros(len(self.split_counts), dtype=np.int64)
        np.add.at(sums, node_of[in_level], self.window_targets[:n][in_level].astype(np.int64))
        total = counts[:, 0]
        means = (2 * sums[nodes] + total) // (2 * total)
        self.leaf_values[slot * self.leaves_per_shrub + leaves, 0] = means.astype(np.int16).view(np.uint16)

    def _new_shrub_column(self, slot: int, active: np.ndarray) -> None:
        """The new shrub's Gram row, column and diagonal entry, and its label sum."""
        super()._new_shrub_column(slot, active)
        h = self._cached_leaf_values(slice(0, self.count), np.array([slot]))
        self.gram[slot, slot] = int(self._pair_terms(h, h).sum()) & 0xFFFFFFFF
        self.label_sum[slot] = int(self._label_terms(h, self.window_targets[: self.count]).sum()) & 0xFFFFFFFF

    # -- learning and prediction -----------------------------------------------------------------------------

    def learn_encoded(self, x, code: int) -> None:
        """One learning step on a raw row and a target code (the device's ``es_shrubs_learn_target``)."""
        self.learn_bins(self.bin_rows(np.asarray(x).reshape(1, -1))[0], int(code))

    def predict_raw_bins(self, bins: np.ndarray) -> np.ndarray:
        """int32 raw outputs of binned rows, as the device computes them."""
        bins = np.ascontiguousarray(np.atleast_2d(bins), dtype=np.uint8)
        if self.n_shrubs == 0:
            return np.zeros(len(bins), dtype=np.int32)
        ensemble = self._ensemble()
        codes = ensemble.leaf_values[ensemble.apply(bins), 0].astype(np.int64)
        return (codes @ ensemble.weights.astype(np.int64)).astype(np.int32)

    def predict_encoded(self, X) -> np.ndarray:
        return self.predict_raw_bins(self.bin_rows(X))


# The shrubs' one registry entry, with its regression form.
SPEC = replace(shrubs.SPEC, regressor=ShrubRegressor)

__all__ = ["SPEC", "ShrubRegressor", "variance_splits"]
