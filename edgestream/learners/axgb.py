"""Adaptive XGBoost, AXGB (Montiel et al. 2020), in integer fixed point: the specification of ``csrc/es_axgb.c``.

The paper's algorithm (section III): samples are buffered; every full *tumbling* window trains one new ensemble
member (one boosting round), fitted to the residuals of the members before it; the window size doubles from
``W_min`` to ``W_max`` (eq. 5, ``W(i) = min(W_min 2^i, W_max)``); the ensemble keeps ``K`` members, updated by the
**push** strategy (a queue: the oldest member leaves when a new one joins a full ensemble, AXGB[p]) or the
**replace** strategy (a cyclic index: the new member takes the place of the one at the index, AXGB[r]).
AXGB_A feeds the 0/1 error of each prediction to ADWIN (:mod:`edgestream.adwin`); on a detected change the
window size goes back to ``W_min`` and, for replace, the index to 0 (section III-D).

Decisions where the paper (or its scikit-multiflow code) leaves a choice, all followed bit for bit by the C:

* **Residual base.** Replace: the member trained for index ``i`` fits the residuals of members ``0..i-1`` (the
  paper: "new models are trained without considering the residuals of old models"). Push: the new member fits
  the residuals of *all* current members, then the oldest leaves if the ensemble is full (as scikit-multiflow's
  ``_train_booster(X, y, len(ensemble))``). The base score is 0 (XGBoost's 0.5 probability).
* **Prequential error.** In ``learn(x, y)`` the class of ``x`` is predicted by the current ensemble *before*
  ``x`` is learnt; the error bit ``pred != y`` goes to ADWIN. On a change to a higher error rate (ADWIN's
  ``RISE``: the newer part of its first cut errs more; a change to a lower rate is the ensemble learning, not a
  drift, and changes nothing): the ensemble is emptied (its members learned the old concept: kept, as in the
  paper, they outvote the new members for about ``K`` windows, and on Agrawal F1 -> F3 the recovery took 3,837
  rows instead of 1,556 at the defaults), window size = ``W_min``, replace index = 0, every buffered sample is
  dropped (they straddle the change), and a training job still under way is abandoned (its tree slot stays
  free); until the first new member joins, ``W_min`` samples later, the base score predicts. Only spread training (``work_per_call > 0``) has a job under way then,
  on a window from before the change; finishing it would have the new ``W_min`` windows fill behind a job of up
  to ``W_max`` samples, and the ring would need room for them.
* **When the window size changes.** A training job takes ``W = current window``; the window size doubles (up to
  ``W_max``) when the job *starts*; for replace the index advances when the job starts.
* **Trees.** XGBoost's exact greedy algorithm on the shared bins, grown breadth first to ``max_depth``. Loss:
  logistic for 2 classes (one score output, ``p = sigmoid_q15(margin)``), softmax for more. **Multi-class uses
  multi-output leaves** (one tree per round whose leaves hold one score per class, XGBoost's
  ``multi_strategy="multi_output_tree"``): the split gain is the sum of the per-class gains, the hessian
  condition ``min_child_weight`` holds on the sum over classes. This keeps one node pool layout for any number
  of classes (one tree per class per round would need ``C`` times the nodes).
* **Fixed point.** Margins are the shared int32 Q10 score sums of the additive leaf kind; probabilities the
  Q15 ``sigmoid_q15`` / ``softmax_q15`` of :mod:`edgestream.fixedpoint`. Per sample and output ``k`` (Q15):
  ``g = p_k - 32768 [y == k]`` (binary: ``k`` is class 1), ``h = (p_k (32768 - p_k)) >> 15`` for binary (XGBoost's
  ``p(1 - p)``) and ``>> 14`` for softmax (XGBoost's ``2 p (1 - p)``). Histograms hold int32 sums ``G, H``.
  ``score(G, H) = floor(G^2 / (H + lambda_q15))`` (uint64); a split at bin threshold ``t`` (``bin <= t`` goes
  left; the missing bin 255 always goes right) has ``gain = sum_k score(G_L) + score(G_R) - score(G)``; it is
  taken when ``gain > 2 gamma_q15`` (XGBoost's ``0.5 [...] - gamma > 0``), both children have
  ``sum_k H >= min_child_weight_q15``, and it beats every earlier candidate strictly (features in order, bins
  ascending). A leaf gets ``w_k = trunc(-G_k eta_q16 / ((H_k + lambda_q15) 64))`` (Q10, ``-G/(H + lambda)``
  times the learning rate), saturated to int16; ``trunc`` rounds toward zero like C99 division.
* **Storage.** ``K + 1`` tree slots of ``2^(D+1) - 1`` nodes and ``2^D`` leaf rows (the spare slot receives the
  member being trained while the old ones keep predicting); ``roots`` lists the members in ensemble order.
  Prediction is the shared additive rule (score sums of every member, class = argmax or ``sum > 0``).
* **Bounded work per sample.** Training is a resumable job of pieces of work, spread over the learn calls:
  :mod:`edgestream.learners.axgb_job` (the pieces, their weights, the bound of a job and the node order).
* **Memory.** The state (``STATE``) holds the ring of binned rows (above), ``K + 1`` tree slots, the
  ``es_adwin`` struct (584 bytes on every target, present even with drift detection off), the job's
  per-sample probabilities and order (``W_max`` each), one feature histogram of ``max_bins + 1`` rows of (G, H)
  per output, and per-node sample ranges. The budget ladder sizes ``W_max``,
  ``K`` and the depth, preferring depth to window size (depth 5 beats a window of 512 on the drifting streams).

Validation (state images, model files: :func:`check_state`, the C ``es_axgb_validate``)
    A restored state is accepted only if no later ``learn``/``predict`` can read or write out of bounds and the
    arithmetic stays that of this specification (no int32 overflow, no hessian sum below 0). With ``K`` members,
    ``P`` nodes and ``Lv`` leaves per tree slot, ``F`` features and ``W`` = ``job_window``:

    * ADWIN: :func:`edgestream.adwin.check_record`, and its ``log_term_q24``, ``clock`` and ``max_cuts`` are
      this model's (config ``drift_log_q24``, ``drift_clock``, ``drift_cuts``). ``head < capacity``, ``count <= capacity``, ``W_min <= window <=
      W_max``, ``n_members <= K``, ``replace_index < K`` (push: 0), ``phase <= 5``; every ring label is a class,
      every ``proba`` entry ``<= 32768``.
    * Members: ``roots[0..n_members)`` are starts of distinct slots ``<= K``; from each root, every reachable node
      stays in its slot (split: feature ``< F``, child ``c`` with ``v < c`` and ``c + 1 < P``) and every reachable
      leaf is a leaf row of the slot.
    * Idle and GRAD: the node counters as an install leaves them (``pos_end = node = n_nodes = n_leaves = feature
      = 0``, ``best_gain = -1``, ``best_feature = 255``, ``best_bin = 0``) and an all-zero histogram. Idle also:
      ``pos = job_window = job_slot = job_target = 0``, ``replace_index <= n_members``.
    * A job: ``W_min <= W <= min(W_max, count)``; ``job_slot <= K`` and no member's slot; push: ``job_target =
      n_members``; replace: ``job_target <= n_members``, ``job_target < K`` and ``replace_index <= max(n_members,
      job_target + 1)``. GRAD: ``pos < W``, ``order[i] = i`` for ``i < pos``.
    * Tree phases (HIST..PART): ``order[0..W) < W``; ``node < n_nodes <= P``, ``node_depth[0] = 0``; the decided
      nodes (``0..node - 1``, and ``node`` in PART) in order: each ``v >= 1`` already a child; a leaf refers to
      the slot's next leaf row; a split has feature ``< F``, depth ``< max_depth``, children at the next two node
      indices (``<= P``) of depth + 1; then ``n_nodes`` and ``n_leaves`` are what the decided nodes made. The
      current and the pending nodes (but PART's two new children) have ``start <= stop <= W``.
      ``best_gain >= 2 gamma_q15``, and ``best_feature = 255`` means ``best_gain = 2 gamma_q15``, ``best_bin = 0``.
      HIST: ``start <= pos <= stop``; a splittable node (depth ``< max_depth``, :func:`~edgestream.learners.axgb_job.split_samples` samples or
      more) has ``feature < F`` and ``best_feature`` 255 or ``< feature``, another ``feature = F`` and
      ``best_feature = 255``; per output, ``node_g/node_h`` are the sums of g/h over ``order[start:pos)`` (feature
      0 or ``F``) or ``[start:stop)``, and the histogram (feature ``< F``) holds h >= 0, sums equal to those over
      ``[start:pos)`` and ``sum |g| <= 32768 (pos - start)``, else is 0. SCAN: splittable, ``feature < F``,
      ``pos < hist_bins``, ``best_feature`` 255 or ``<= feature``, node totals over ``[start:stop)``, bins below
      ``pos`` 0, ``left_h >= 0`` and h >= 0, ``left + sum of bins from pos`` = node totals, ``|left_g| + sum |g|
      <= 32768 (stop - start)``. NODE: ``feature = F``, histogram 0, node totals over ``[start:stop)``,
      ``best_feature`` 255 or ``< F`` for a splittable node. PART: ``feature = F``, histogram 0, the node a split
      of (``best_feature``, ``best_bin``), ``start <= pos <= pos_end <= stop``.

    Every state this module reaches passes (the ring never fills: a job starts when ``count`` reaches the window
    and ends within ``c(W)`` calls, before the next window is full). A crafted state may have a full ring: then a sample is not buffered,
    and the job still advances, so ``learn`` never stalls.
"""

from __future__ import annotations

import numpy as np

from .. import _kernels
from ..adwin import ADWIN, ADWIN_DTYPE, RISE, adwin_from_record, adwin_record, check_record, log_term_q24
from ..costs import CostTerms
from ..fixedpoint import Q15_ONE, additive_predict, additive_proba_q15, sigmoid_q15, softmax_q15
from ..state import Field, RegionSpec, StateSpec
from ..task import CLASSIFICATION, REGRESSION
from ..tree import LEAF_FEATURE, tree_in_slot
from .base import ALLOW_MISSING, BINNING, INPUT_DTYPE, MAX_BINS, WORK_PER_CALL
from .base import MAX_DEPTH as MAX_DEPTH_OPTION
from .base import (BinnedOnlineLearner, DeviceState, Estimator, LearnerSpec, OnlineClassification, Option,
                   check_integer, restore_regions)
from .axgb_job import (GRAD, HIST, IDLE, NO_FEATURE, NODE, PART, SCAN, TrainingJob, job_pieces, job_units,
                       unit_weights)
from .shrubs import shrubs_context, shrubs_tables

PUSH, REPLACE = 0, 1
STRATEGIES = {"push": PUSH, "replace": REPLACE}
MAX_WINDOW = 4096
MAX_MEMBERS = 255
MAX_DEPTH = 8
DRIFT_CUTS = 3  # ADWIN cut tests per learn call when training is spread (work_per_call > 0)
AUTO_SPREAD = (5, 4)  # automatic work_per_call: num/den times a steady call's share of a W_max job


def _nodes_per_tree(config: dict) -> int:
    return 2 ** (config["max_depth"] + 1) - 1


def _slots(config: dict) -> int:
    return config["members"] + 1


def _outputs(config: dict) -> int:
    return 1 if config["n_classes"] == 2 else config["n_classes"]


STATE = StateSpec(
    prefix="es_axgb",
    title="Adaptive XGBoost",
    predict_scratch=False,
    config=(
        Field("n_features", "uint8_t"), Field("n_classes", "uint8_t"),
        Field("n_outputs", "uint8_t", "scores per leaf: 1 for 2 classes, else n_classes"),
        Field("max_depth", "uint8_t"), Field("strategy", "uint8_t", "0 push, 1 replace"),
        Field("drift", "uint8_t", "1: ADWIN on the error stream"),
        Field("hist_bins", "uint16_t", "max_bins + 1 (the last row holds the missing bin)"),
        Field("window_min", "uint16_t"), Field("window_max", "uint16_t"),
        Field("capacity", "uint16_t", "ring rows: window_max + calls a job may take - 1"),
        Field("members", "uint16_t", "K"), Field("work_per_call", "uint32_t", "units per learn call, 0 = all"),
        Field("lambda_q15", "uint32_t"), Field("gamma_q15", "uint32_t"), Field("min_child_q15", "uint32_t"),
        Field("eta_q16", "uint32_t", "learning rate in Q16"),
        Field("drift_log_q24", "uint32_t", "ADWIN's ln(2/delta) in Q24 (a restored detector must have it)"),
        Field("drift_cuts", "uint32_t", "ADWIN's cut tests per update (0: a whole check at once)"),
        Field("drift_clock", "uint16_t", "ADWIN's check period"),
        Field("unit_grad", "uint16_t", "units of a sample's margins (unit_weights)"),
        Field("unit_walk", "uint16_t", "units per member walked"), Field("unit_hist", "uint16_t"),
        Field("unit_scan", "uint16_t", "per bin visited"), Field("unit_gain", "uint16_t", "per split gain"),
        Field("unit_node", "uint16_t"), Field("unit_part", "uint16_t"),
    ),
    tasks=(CLASSIFICATION, REGRESSION),
    counters=(
        Field("best_gain", "int64_t", "best split gain of the current node so far"),
        Field("head", "uint16_t", "ring row of the oldest sample"), Field("count", "uint16_t", "rows in the ring"),
        Field("window", "uint16_t", "size of the next window, W(i)"),
        Field("n_members", "uint16_t", "members: roots[0..n_members)"),
        Field("replace_index", "uint16_t", "replace: position of the next member"),
        Field("job_window", "uint16_t", "samples of the window being trained"),
        Field("job_slot", "uint16_t", "tree slot receiving the new member"),
        Field("job_target", "uint16_t", "members before it (its residual base); replace: its position"),
        Field("node", "uint16_t", "node of the new tree being grown"), Field("n_nodes", "uint16_t"),
        Field("n_leaves", "uint16_t"), Field("pos", "uint16_t", "cursor of the phase"),
        Field("pos_end", "uint16_t", "partition: right cursor"), Field("phase", "uint8_t", "0 idle"),
        Field("feature", "uint8_t", "feature of the histogram; n_features = totals only"),
        Field("best_feature", "uint8_t", "255: no split found"), Field("best_bin", "uint8_t"),
    ),
    regions=(
        RegionSpec("window_bins", "window", "uint8_t", lambda c: c["capacity"] * c["n_features"], "ring x features"),
        RegionSpec("window_labels", "window", "uint8_t", lambda c: c["capacity"] if c["n_classes"] > 1 else 1,
                   "ring (a regressor: 1)"),
        RegionSpec("window_targets", "window", "int16_t", lambda c: c["capacity"] if c["n_classes"] == 1 else 1,
                   "ring of target codes (a classifier: 1)"),
        RegionSpec("nodes", "node pool", "es_node", lambda c: _slots(c) * _nodes_per_tree(c),
                   "(K + 1) x (2^(depth+1) - 1)"),
        RegionSpec("leaf_values", "leaves", "int16_t", lambda c: _slots(c) * 2 ** c["max_depth"] * _outputs(c),
                   "(K + 1) x 2^depth x outputs, Q10"),
        RegionSpec("roots", "ensemble", "uint16_t", _slots, "K + 1"),
        RegionSpec("adwin", "drift", "es_adwin", lambda c: 1, "error-stream change detector"),
        RegionSpec("proba", "training", "uint16_t", lambda c: c["window_max"] * _outputs(c) if c["n_classes"] > 1
                   else 1, "W_max x outputs, Q15 (a regressor: 1)"),
        RegionSpec("margins", "training", "int16_t", lambda c: c["window_max"] if c["n_classes"] == 1 else 1,
                   "W_max target codes (a classifier: 1)"),
        RegionSpec("order", "training", "uint16_t", lambda c: c["window_max"], "W_max"),
        RegionSpec("node_start", "training", "uint16_t", _nodes_per_tree, "nodes per tree"),
        RegionSpec("node_stop", "training", "uint16_t", _nodes_per_tree, "nodes per tree"),
        RegionSpec("node_depth", "training", "uint8_t", _nodes_per_tree, "nodes per tree"),
        RegionSpec("hist_g", "training", "int32_t", lambda c: c["hist_bins"] * _outputs(c), "bins x outputs"),
        RegionSpec("hist_h", "training", "int32_t", lambda c: c["hist_bins"] * _outputs(c), "bins x outputs"),
        RegionSpec("node_g", "training", "int32_t", _outputs, "outputs"),
        RegionSpec("node_h", "training", "int32_t", _outputs, "outputs"),
        RegionSpec("left_g", "training", "int32_t", _outputs, "outputs"),
        RegionSpec("left_h", "training", "int32_t", _outputs, "outputs"),
        RegionSpec("scores", "scratch", "int32_t", _outputs, "outputs"),
        RegionSpec("work", "scratch", "uint32_t", _outputs, "outputs (softmax)"),
    ),
)
STATE_ARRAYS = tuple(r.name for r in STATE.regions if r.name != "adwin")
SAVED_ARRAYS = tuple(r.name for r in STATE.regions if r.name != "adwin" and r.group != "scratch")  # images, files
COUNTERS = tuple(f.name for f in STATE.counters)


def quantize_q(value: float, one: int, name: str, low: float, high: float) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name}={value!r} must be a number from {low:g} to {high:g}")
    return int(round(value * one))


class AXGB(TrainingJob, BinnedOnlineLearner, Estimator, DeviceState):
    """What Adaptive XGBoost's classifier (:class:`AdaptiveXGBoost`) and regressor share: AXGB and AXGB_A in fixed
    point, learning in fixed memory; see the module docstring. The parameters are checked when the learner starts
    (:meth:`fit_bins`), not when it is made, as scikit-learn's are; their fixed-point forms (``eta_q16``,
    ``lambda_q15``, ``gamma_q15``, ``min_child_q15``) are derived from them.

    Parameters
    ----------
    members : ensemble size K, 1..255.
    window_min, window_max : W_min <= W_max, 1..4096 (eq. 5).
    strategy : ``"push"`` (AXGB[p]) or ``"replace"`` (AXGB[r]).
    drift_detection : ADWIN on the error stream (AXGB_A) or not.
    max_depth : depth of each member, 1..8.
    learning_rate : eta in (0, 1]; reg_lambda in [1/32, 1024]; gamma in [0, 1024]; min_child_weight in [0, 1024].
    work_per_call : None (automatic: 5/4 of a call's share of a ``window_max`` job), 0 (train a member in
        the call that fills the window) or the units of training work per ``learn`` call (spreads a member over
        the following samples; see :func:`~edgestream.learners.axgb_job.job_units` and "Bounded work per sample").
    delta, clock : ADWIN's confidence and check period.
    max_bins, binning, input_dtype, allow_missing : feature quantization (fitted once by :meth:`fit_bins`).
    """

    state_spec = STATE
    engine_state = STATE_ARRAYS + COUNTERS + ("adwin_",)
    # The task's seam (AdaptiveXGBoostRegressor has the regressor's): the ring region of the targets, the leaf
    # weight's divisor (Q10 margins: -G/(H + lambda) eta_q16 / 64), the largest |g| of a sample.
    target_region = "window_labels"
    leaf_scale = 64
    g_most = Q15_ONE

    def __init__(self, members: int = 10, window_min: int = 16, window_max: int = 256, strategy: str = "replace",
                 drift_detection: bool = True, max_depth: int = 4, learning_rate: float = 0.3,
                 reg_lambda: float = 1.0, gamma: float = 0.0, min_child_weight: float = 1.0,
                 work_per_call: int | None = None, delta: float = 0.002, clock: int = 32, max_bins: int = 32,
                 binning: str = "quantile", input_dtype: str = "float32", allow_missing: bool = False):
        for name, value in list(locals().items()):
            if name != "self":
                setattr(self, name, value)

    # -- parameters and layout ---------------------------------------------------------------------------------

    def _check_params(self):
        check_integer(self, "members", 1, MAX_MEMBERS)
        check_integer(self, "window_min", 1, MAX_WINDOW)
        check_integer(self, "window_max", 1, MAX_WINDOW)
        check_integer(self, "max_depth", 1, MAX_DEPTH)
        if self.work_per_call is not None:
            check_integer(self, "work_per_call", 0, 2**32 - 1)
        check_integer(self, "clock", 1, 65535)
        check_integer(self, "max_bins", 2, 254)
        if self.window_min > self.window_max:
            raise ValueError(f"window_min={self.window_min} must not exceed window_max={self.window_max}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r} must be one of {sorted(STRATEGIES)}")
        if not isinstance(self.drift_detection, (bool, np.bool_)):
            raise ValueError(f"drift_detection={self.drift_detection!r} must be True or False")
        for fixed in ("eta_q16", "lambda_q15", "gamma_q15", "min_child_q15"):
            getattr(self, fixed)  # names a bad learning_rate, reg_lambda, gamma or min_child_weight
        self._adwin()  # names a bad delta

    @property
    def eta_q16(self) -> int:
        """The learning rate in Q16."""
        return quantize_q(self.learning_rate, 65536, "learning_rate", 2**-16, 1.0)

    @property
    def lambda_q15(self) -> int:
        return quantize_q(self.reg_lambda, Q15_ONE, "reg_lambda", 1 / 32, 1024.0)

    @property
    def gamma_q15(self) -> int:
        return quantize_q(self.gamma, Q15_ONE, "gamma", 0.0, 1024.0)

    @property
    def min_child_q15(self) -> int:
        return quantize_q(self.min_child_weight, Q15_ONE, "min_child_weight", 0.0, 1024.0)

    @property
    def drift_cuts(self) -> int:
        """ADWIN's cut tests per learn call: all of a check at once (0) when a member trains in one call, else
        ``DRIFT_CUTS`` (see :mod:`edgestream.adwin`)."""
        return 0 if self.work_per_call == 0 else DRIFT_CUTS

    def _adwin(self) -> ADWIN:
        return ADWIN(self.delta, clock=self.clock, max_cuts=self.drift_cuts)

    @property
    def hist_bins(self) -> int:
        return self.max_bins + 1

    def _windows(self) -> list[int]:
        """The window sizes W(i) = min(W_min 2^i, W_max), each once."""
        sizes = [self.window_min]
        while sizes[-1] < self.window_max:
            sizes.append(min(2 * sizes[-1], self.window_max))
        return sizes

    def job_bound(self, window: int, n_features: int, n_classes: int | None) -> int:
        """:func:`~edgestream.learners.axgb_job.job_units` of a job on ``window`` samples with this model's sizes (classes: the set ones, else
        ``n_classes``, else 2)."""
        c = self._classes(n_classes)
        return job_units(window, n_features, self.hist_bins, self.max_depth, self.members, 1 if c <= 2 else c,
                         self.min_child_q15, c == 1)

    def _classes(self, n_classes: int | None) -> int:
        """The classes of the state (a regressor's: 1): ``n_classes``, else the set ones, else 2."""
        return len(self.classes_) if n_classes is None and hasattr(self, "classes_") else (n_classes or 2)

    def min_work_per_call(self, n_features: int, n_classes: int | None = None) -> int:
        """The smallest ``work_per_call`` that keeps up: a job of every window size ``W`` ends within
        ``min(2 W, W_max)`` calls, before the next window is full (classes: the set ones, else ``n_classes``, else
        2)."""
        return max(-(-self.job_bound(w, n_features, n_classes) // min(2 * w, self.window_max))
                   for w in self._windows())

    def units_per_call(self, n_features: int, n_classes: int | None = None) -> int:
        """The units of training work per ``learn`` call: ``work_per_call``, or for ``None`` the automatic
        ``ceil(num J(W_max) / (den W_max))`` of ``AUTO_SPREAD`` (at least :meth:`min_work_per_call`); a
        ``work_per_call`` that does not keep up is refused."""
        least = self.min_work_per_call(n_features, n_classes)
        if self.work_per_call is None:
            num, den = AUTO_SPREAD
            share = -(-num * self.job_bound(self.window_max, n_features, n_classes) // (den * self.window_max))
            return max(share, least)
        if 0 < self.work_per_call < least:
            raise ValueError(f"work_per_call={self.work_per_call} must be 0 or at least {least}: smaller, a job of "
                             f"window_max={self.window_max} (window_min={self.window_min}) may not end before the "
                             "next window is full")
        return self.work_per_call

    def capacity(self, n_features: int, n_classes: int | None = None) -> int:
        """Ring rows: a job's window and the samples that arrive while it trains, ``max_W (W + c(W) - 1)``."""
        units = self.units_per_call(n_features, n_classes)
        if units == 0:
            return self.window_max
        return max(w + -(-self.job_bound(w, n_features, n_classes) // units) - 1 for w in self._windows())

    @property
    def nodes_per_tree(self) -> int:
        return 2 ** (self.max_depth + 1) - 1

    @property
    def leaves_per_tree(self) -> int:
        return 2**self.max_depth

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        """The values of the C ``es_axgb_config`` (features and classes default to the fitted ones)."""
        d = self.n_features_ if n_features is None else n_features
        c = self._classes(n_classes)
        capacity = self.capacity(d, c)
        if capacity > 65535:
            raise ValueError(f"the ring buffer needs {capacity} rows, at most 65535")
        return {"n_features": d, "n_classes": c, "n_outputs": 1 if c <= 2 else c, "max_depth": self.max_depth,
                "strategy": STRATEGIES[self.strategy], "drift": int(bool(self.drift_detection)),
                "hist_bins": self.hist_bins, "window_min": self.window_min, "window_max": self.window_max,
                "capacity": capacity, "members": self.members, "work_per_call": self.units_per_call(d, c),
                "lambda_q15": self.lambda_q15, "gamma_q15": self.gamma_q15, "min_child_q15": self.min_child_q15,
                "eta_q16": self.eta_q16, "drift_log_q24": log_term_q24(self.delta), "drift_cuts": self.drift_cuts,
                "drift_clock": self.clock, **{f"unit_{k}": v for k, v in unit_weights(1 if c <= 2 else c).items()}}

    def summary(self) -> str:
        name = "AXGB" + ("_A" if self.drift_detection else "") + ("[p]" if self.strategy == "push" else "[r]")
        return (f"{name}: {self.members} members of depth {self.max_depth}, windows {self.window_min}.."
                f"{self.window_max}, model state {self.state_bytes():,} bytes")

    def device_state(self) -> tuple[dict, dict] | None:
        """Every region (the training scratch too: a job may be under way) and the counters; None before the bins
        and classes are set."""
        if not hasattr(self, "window_bins"):
            return None
        arrays = {name: getattr(self, name).reshape(-1) for name in STATE_ARRAYS}
        arrays["adwin"] = adwin_record(self.adwin_)
        return arrays, {name: getattr(self, name) for name in COUNTERS}

    # -- setup -----------------------------------------------------------------------------------------------

    @property
    def n_outputs(self) -> int:
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def reset(self) -> None:
        """Empty ring and ensemble, fresh ADWIN; the bins and classes stay."""
        self._drop_engine()
        self._check_params()
        zeros = self.layout().zeros()
        for name in STATE_ARRAYS:
            setattr(self, name, zeros[name])
        self.leaf_values = self.leaf_values.reshape(-1, self.n_outputs)
        self.window_bins = self.window_bins.reshape(-1, self.n_features_)
        self.adwin_ = self._adwin()
        for name in COUNTERS:
            setattr(self, name, 0)
        self.window = self.window_min
        self.best_feature = NO_FEATURE
        self.best_gain = -1
        self.units_per_call_ = self.units_per_call(self.n_features_)

    def saved_arrays(self) -> dict:
        """The whole learning state, as a model file stores it."""
        self._check_ready()
        counters = self.device_state()[1]
        arrays = {name: getattr(self, name) for name in SAVED_ARRAYS}
        arrays["adwin"] = adwin_record(self.adwin_)  # one es_adwin record (restore_arrays also takes its bytes)
        arrays["counters"] = np.array([counters[name] for name in COUNTERS], dtype=np.int64)
        return arrays

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (after ``bins_`` and ``classes_`` are set); refuses tables of the wrong layout and any
        state :meth:`check_state` refuses (``ValueError``; the learner is then left reset)."""
        self.reset()
        restore_regions(self, SAVED_ARRAYS, arrays)
        values = [int(v) for v in arrays["counters"]]
        if len(values) != len(COUNTERS):
            raise ValueError(f"{len(values)} counters saved, this learner has {len(COUNTERS)}")
        for name, value in zip(COUNTERS, values):
            setattr(self, name, value)
        record = np.ascontiguousarray(arrays["adwin"]).reshape(-1).view(np.uint8)
        try:
            check_state(self, record)
            self.adwin_ = adwin_from_record(record, self.delta)
        except ValueError:
            self.reset()
            raise

    # -- learning --------------------------------------------------------------------------------------------

    @property
    def _capacity(self) -> int:
        return len(getattr(self, self.target_region))

    def learn_bins(self, bins: np.ndarray, label: int) -> None:
        """One learning step on a binned sample with an encoded label (the C ``es_axgb_learn``)."""
        self._check_ready()
        if not 0 <= label < len(self.classes_):
            raise ValueError(f"label index {label} is outside 0..{len(self.classes_) - 1}")
        self._learn(bins, label)

    def _learn(self, bins: np.ndarray, target: int) -> None:
        """One learning step on a checked target (a class index; a regressor's target code)."""
        bins = np.ascontiguousarray(bins, dtype=np.uint8).reshape(-1)
        if len(bins) != self.n_features_:
            raise ValueError(f"{len(bins)} bins given, the model has {self.n_features_} features")
        if self.drift_detection:
            if self.adwin_.update(self._error_bit(bins, target)) == RISE:
                self.window = self.window_min
                self.n_members = 0
                if self.strategy == "replace":
                    self.replace_index = 0
                self.count = 0
                if self.phase != IDLE:
                    self.hist_g[:] = 0
                    self.hist_h[:] = 0
                    self._idle()
        if self.count < self._capacity:  # always, but for a crafted state (see "Validation")
            row = (self.head + self.count) % self._capacity
            self.window_bins[row] = bins
            getattr(self, self.target_region)[row] = target
            self.count += 1
        self._work(self.units_per_call_ or -1)

    # -- prediction ------------------------------------------------------------------------------------------

    def _score_sums(self, bins: np.ndarray, n_members: int | None = None) -> np.ndarray:
        """int64 score sums (rows, outputs) of the first ``n_members`` members (all by default)."""
        bins = np.ascontiguousarray(np.atleast_2d(bins), dtype=np.uint8)
        n = self.n_members if n_members is None else n_members
        if n == 0:
            return np.zeros((len(bins), self.n_outputs), dtype=np.int64)
        leaves = _kernels.apply(self.nodes, np.ascontiguousarray(self.roots[:n]), bins)
        return self.leaf_values[leaves].astype(np.int64).sum(axis=1)

    def _error_bit(self, bins: np.ndarray, label: int) -> int:
        """ADWIN's bit of a sample: its class predicted wrong."""
        return int(additive_predict(self._score_sums(bins))[0] != label)

    def _check_window(self, refuse) -> None:
        """Validation of the ring's targets and the job's record of them (:func:`check_state`)."""
        if (self.window_labels >= len(self.classes_)).any() or (self.proba > Q15_ONE).any():
            refuse("a window label or a probability is out of range")

    def _keep_margins(self, pos: int, sums: np.ndarray) -> None:
        """The GRAD phase's record of job samples ``pos..``: their probabilities under the members before the
        target."""
        out = self.n_outputs
        proba = sigmoid_q15(sums[:, 0]).reshape(-1, 1) if out == 1 else softmax_q15(sums)
        self.proba.reshape(-1, out)[pos : pos + len(sums)] = proba

    def predict_proba_bins(self, bins: np.ndarray) -> np.ndarray:
        """Q15 probabilities of binned rows, as the device computes them (the shared additive rule)."""
        return additive_proba_q15(self._score_sums(bins))

    def predict_encoded_bins(self, bins: np.ndarray) -> np.ndarray:
        return additive_predict(self._score_sums(bins))

    def predict_encoded(self, X) -> np.ndarray:
        return self.predict_encoded_bins(self.bin_rows(X))


class AdaptiveXGBoost(OnlineClassification, AXGB):
    """Adaptive XGBoost (AXGB, AXGB_A) in fixed point, learning in fixed memory: the classifier, with scikit-learn's
    classifier protocol (:class:`~edgestream.learners.base.OnlineClassification`). Parameters: those of
    :class:`AXGB`."""


def _sums(m: AXGB, samples: np.ndarray) -> tuple[list[int], list[int]]:
    """Per output, the sums of g and h over job samples (indices into the job's window)."""
    if len(samples) == 0:
        return [0] * m.n_outputs, [0] * m.n_outputs
    g, h = m._gradients(samples.astype(np.int64))
    return [int(v) for v in g.sum(axis=0)], [int(v) for v in h.sum(axis=0)]


def check_state(m: AXGB, record: np.ndarray) -> None:
    """Refuse (``ValueError``) a state that ``es_axgb_validate`` refuses; the rules are the module docstring's
    "Validation". ``m`` holds the candidate's regions and counters, ``record`` the bytes of its ADWIN."""
    def refuse(what: str):
        raise ValueError(f"inconsistent AXGB state: {what}")

    check_record(record)
    adwin = record.view(ADWIN_DTYPE)[0]
    if (int(adwin["log_term_q24"]), int(adwin["clock"]), int(adwin["max_cuts"])) != \
            (log_term_q24(m.delta), m.clock, m.drift_cuts):
        refuse("the ADWIN's delta, clock or cuts per update are not this model's")
    K, per_tree, F, out = m.members, m.nodes_per_tree, m.n_features_, m.n_outputs
    capacity = m._capacity
    if not (m.head < capacity and m.count <= capacity and m.window_min <= m.window <= m.window_max
            and m.n_members <= K and m.replace_index < K and m.phase <= PART):
        refuse(f"head={m.head} count={m.count} window={m.window} n_members={m.n_members} "
               f"replace_index={m.replace_index} phase={m.phase}")
    if m.strategy == "push" and m.replace_index != 0:
        refuse("push keeps replace_index at 0")
    m._check_window(refuse)
    roots = m.roots[: m.n_members].astype(np.int64)
    slots = roots // per_tree
    if (roots % per_tree).any() or (slots > K).any() or len(set(slots.tolist())) != len(slots):
        refuse("member roots must be distinct tree slot starts")
    if not all(tree_in_slot(m.nodes, int(slot), per_tree, m.leaves_per_tree, m.n_features_) for slot in slots):
        refuse("a member's tree leaves its slot")
    hist_zero = not (m.hist_g.any() or m.hist_h.any())
    gamma2 = 2 * m.gamma_q15
    fresh = (m.pos_end, m.node, m.n_nodes, m.n_leaves, m.feature, m.best_gain, m.best_feature, m.best_bin) == \
        (0, 0, 0, 0, 0, -1, NO_FEATURE, 0)
    if m.phase == IDLE:
        if not (fresh and hist_zero and (m.pos, m.job_window, m.job_slot, m.job_target) == (0, 0, 0, 0)
                and m.replace_index <= m.n_members):
            refuse("idle counters")
        return
    W = m.job_window
    if not (m.window_min <= W <= min(m.window_max, m.count) and m.job_slot <= K and m.job_slot not in slots):
        refuse(f"job_window={W} job_slot={m.job_slot}")
    if m.strategy == "push":
        if m.job_target != m.n_members:
            refuse("push trains on every member")
    elif not (m.job_target <= m.n_members and m.job_target < K
              and m.replace_index <= max(m.n_members, m.job_target + 1)):
        refuse(f"job_target={m.job_target} replace_index={m.replace_index}")
    if m.phase == GRAD:
        if not (fresh and hist_zero and m.pos < W and np.array_equal(m.order[: m.pos], np.arange(m.pos))):
            refuse("gradient phase counters")
        return
    order = m.order[:W]
    if (order >= W).any():
        refuse("a sample index is out of the job's window")
    # the tree being grown: decided nodes (those before the current one; in the partition, that one too)
    base, depth = m.job_slot * per_tree, m.node_depth
    if not (m.node < m.n_nodes <= per_tree and depth[0] == 0):
        refuse(f"node={m.node} n_nodes={m.n_nodes}")
    following, leaves = 1, 0
    for v in range(m.node + (m.phase == PART)):
        entry = m.nodes[base + v]
        if v >= following:
            refuse(f"node {v} has no parent")
        if entry["feature"] == LEAF_FEATURE:
            if leaves >= m.leaves_per_tree or entry["child"] != m.job_slot * m.leaves_per_tree + leaves:
                refuse(f"leaf reference of node {v}")
            leaves += 1
            continue
        if (entry["feature"] >= F or depth[v] >= m.max_depth or entry["child"] != base + following
                or following + 2 > per_tree or depth[following] != depth[v] + 1
                or depth[following + 1] != depth[v] + 1):
            refuse(f"split of node {v}")
        following += 2
    if following != m.n_nodes or leaves != m.n_leaves:
        refuse(f"n_nodes={m.n_nodes} n_leaves={m.n_leaves}")
    pending = range(m.node, m.n_nodes - 2 if m.phase == PART else m.n_nodes)
    if any(not m.node_start[u] <= m.node_stop[u] <= W for u in pending):
        refuse("a node's sample range")
    start, stop, pos = int(m.node_start[m.node]), int(m.node_stop[m.node]), m.pos
    splittable = m._splittable()
    if m.best_gain < gamma2 or (m.best_feature == NO_FEATURE and (m.best_gain, m.best_bin) != (gamma2, 0)):
        refuse(f"best_gain={m.best_gain}")
    node_g, node_h = m.node_g.tolist(), m.node_h.tolist()
    hist_g, hist_h = m.hist_g.reshape(-1, out).astype(np.int64), m.hist_h.reshape(-1, out).astype(np.int64)
    if m.phase == HIST:
        if not start <= pos <= stop:
            refuse(f"pos={pos}")
        if not (m.feature < F and (m.best_feature == NO_FEATURE or m.best_feature < m.feature) if splittable
                else m.feature == F and m.best_feature == NO_FEATURE):
            refuse(f"feature={m.feature} best_feature={m.best_feature}")
        part = _sums(m, order[start:pos])
        if (node_g, node_h) != (part if m.feature in (0, F) else _sums(m, order[start:stop])):
            refuse("node totals")
        if m.feature == F:
            if not hist_zero:
                refuse("histogram")
        elif (hist_g.sum(axis=0).tolist(), hist_h.sum(axis=0).tolist()) != part or (hist_h < 0).any() \
                or (np.abs(hist_g).sum(axis=0) > m.g_most * (pos - start)).any():
            refuse("histogram")
    elif m.phase == SCAN:
        if not (splittable and m.feature < F and pos < m.hist_bins
                and (m.best_feature == NO_FEATURE or m.best_feature <= m.feature)):
            refuse(f"feature={m.feature} pos={pos}")
        if (node_g, node_h) != _sums(m, order[start:stop]):
            refuse("node totals")
        left_g, left_h = m.left_g.astype(np.int64), m.left_h.astype(np.int64)
        if (hist_g[:pos].any() or hist_h[:pos].any() or (hist_h < 0).any() or (left_h < 0).any()
                or (left_g + hist_g[pos:].sum(axis=0)).tolist() != node_g
                or (left_h + hist_h[pos:].sum(axis=0)).tolist() != node_h
                or (np.abs(left_g) + np.abs(hist_g[pos:]).sum(axis=0) > m.g_most * (stop - start)).any()):
            refuse("histogram")
    elif m.phase == NODE:
        if not (m.feature == F and hist_zero and (node_g, node_h) == _sums(m, order[start:stop])
                and (m.best_feature == NO_FEATURE or (m.best_feature < F and splittable))):
            refuse("node decision")
    else:
        entry = m.nodes[base + m.node]
        if not (m.feature == F and hist_zero and entry["feature"] != LEAF_FEATURE
                and (entry["feature"], entry["threshold"]) == (m.best_feature, m.best_bin)
                and start <= pos <= m.pos_end <= stop):
            refuse("partition")


def axgb_context(learner: AXGB, name: str, optimize: str = "speed") -> dict:
    """A learning bundle keeps every bin edge (new members may split anywhere) and starts from the current state
    (the shrub ensemble's context, which reads only the learner's layout and state, and refuses NaN as the host
    does)."""
    if not hasattr(learner, "window_bins"):
        raise ValueError("the AXGB model has no bins or classes yet; call fit_bins() and set_classes() first")
    return shrubs_context(learner, name, optimize)


def axgb_tables(learner: AXGB, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                optimize: str = "speed"):
    """Flash objects: the bin edges and offsets as for shrubs, this learner's config and pointer struct."""
    sizes = dict(shrubs_tables(learner, n_features, n_classes, pointer_bytes, packed, optimize))
    sizes |= {"config": STATE.config_bytes(packed), "model": (len(STATE.regions) + 2) * pointer_bytes}
    return list(sizes.items())


AXGB_LADDER = tuple({"window_max": w, "members": k, "max_depth": d} for w, k, d in (  # depth before window
    (1024, 30, 6), (512, 20, 6), (512, 16, 5), (256, 16, 5), (256, 12, 5), (256, 10, 5), (256, 8, 5), (256, 10, 4),
    (256, 8, 4), (128, 8, 4), (128, 8, 3), (64, 5, 3), (32, 4, 2), (16, 2, 1)))

# The test variant (checkpoint tests, fuzz target): the smallest rung on 3 features with its training spread over as
# many calls as it may take (window_min = 16), so that most states are saved during a training job.
SPREAD_VARIANT = {"work_per_call": -(-job_units(16, 3, 33, 1, 2) // 16)}

# The search's grid: the ladder crossed with the ensemble update and ADWIN's confidence (how soon a change resets).
AXGB_SEARCH = tuple({**rung, **variant} for rung in AXGB_LADDER for variant in (
    {"strategy": "replace", "delta": 0.002}, {"strategy": "push", "delta": 0.002}, {"strategy": "replace", "delta": 0.02}))

# The share of :func:`~edgestream.learners.axgb_job.job_pieces`' bound on split gains that a job evaluates (a gain
# needs a non-empty bin with enough hessian on both sides), classifier and regressor: 0.30 to 0.69, median 0.47, in
# the calibration's classifier jobs on Cortex-M4F (SEA, hyperplane, blobs; fewer at deeper levels, whose nodes hold
# fewer samples), 0.21 to 0.37 on Agrawal (features of few distinct values); 0.55 to 0.67 for regressors on the
# calibration's regression streams (planes of 4 and 12 features)
GAIN_SHARE = {False: 0.47, True: 0.65}


def cost_terms(params: dict, n_features: int, n_classes: int, members: float | None = None,
               members_max: int | None = None, trained: float = 1.0, targets: float | None = None,
               gains: float | None = None) -> CostTerms:
    """The work terms of a prediction (constant; quantizing, d log2 bins; the members' walks, K depth, and leaf rows,
    K outputs) and of a learn call (those, as the error fed to ADWIN needs the prediction, and ADWIN's checks, when
    it detects drift; then the training job (:func:`~edgestream.learners.axgb_job.job_pieces`), in the mean per row trained: in the steady state
    one ``W_max`` job per ``W_max`` rows, its margins (a sample walks the members before its target: all ``K`` for
    push, ``(K - 1) / 2`` on average for replace), its passes over samples, its work per node and its split gains
    (64-bit divisions: a core without a divider pays several times a Cortex-M4F's); in the worst as
    many units as a call runs, the automatic or given ``work_per_call``, or the whole job).

    A calibration run's regime, replayed in the specification (``benchmarks/calibrate_cost.py``), says what its
    counted rows did beyond the configuration: ``members`` walked per prediction on average and at most (fewer
    than ``K`` after a drift emptied the ensemble), ``trained`` rows of windows per row (a count of a few windows
    holds more or less than their share of the jobs spread over it), ``targets`` members walked per trained
    sample, ``gains`` split gains evaluated per trained sample (a gain needs a non-empty bin: features of few
    distinct values, as Agrawal's, fill fewer bins than the bound). The defaults are the steady state of a full
    ensemble, and the typical share of the bound's gains (``GAIN_SHARE``)."""
    outputs = 1 if n_classes <= 2 else n_classes
    k, depth, window = params["members"], params["max_depth"], params["window_max"]
    model = AXGB(**params)  # the sizes of either form (a regressor's state: n_classes 1)
    units = model.job_bound(window, n_features, n_classes)
    per_call = model.units_per_call(n_features, n_classes) or units
    pieces = job_pieces(window, n_features, model.hist_bins, depth, k, outputs, model.min_child_q15, n_classes == 1)
    walked = (k if params["strategy"] == "push" else (k - 1) / 2) if targets is None else targets
    grad = unit_weights(outputs)
    margins = grad["grad"] + grad["walk"] * walked

    def predict(m: float) -> list[float]:
        return [1, n_features * int(params["max_bins"]).bit_length(), m * depth, m * outputs]
    mean, most = predict(k if members is None else members), predict(k if members_max is None else members_max)
    drift = [int(params["drift_detection"])]
    gained = GAIN_SHARE[n_classes == 1] * pieces["gains"] / window if gains is None else gains * grad["gain"]
    job = [trained * margins, trained * pieces["samples"] / window, trained * (pieces["nodes"] / window + gained)]
    return CostTerms(predict=mean, predict_worst=most, learn_mean=mean + drift + job,
                     learn_worst=most + drift + [min(units, per_call)])


SPEC = LearnerSpec(
    name="axgb", cls=AdaptiveXGBoost,
    summary="Adaptive XGBoost: boosted trees on tumbling windows, push/replace, ADWIN, learning on the device",
    options=(MAX_BINS, BINNING, INPUT_DTYPE,
             MAX_DEPTH_OPTION,
             Option("--members", "members", int, "ensemble size K", "K"),
             Option("--window-min", "window_min", int, "first (and after a drift) window size", "N"),
             Option("--window-max", "window_max", int, "largest window size", "N"),
             Option("--strategy", "strategy", str, "ensemble update", choices=tuple(STRATEGIES)),
             Option("--drift-detection", "drift_detection", bool,
                    "ADWIN on the error stream resets the window on a change"),
             Option("--learning-rate", "learning_rate", float, "eta, scales every leaf", "X"),
             Option("--adwin-delta", "delta", float, "ADWIN's confidence: larger detects changes sooner", "X"),
             ALLOW_MISSING, WORK_PER_CALL),
    learning=True, online=True, runtime=("es_common", "es_binning", "es_tree", "es_fixed", "es_adwin", "es_axgb"),
    template="axgb.c.j2", context=axgb_context, tables=axgb_tables, ladder=AXGB_LADDER, search=AXGB_SEARCH,
    state=STATE, variants=(SPREAD_VARIANT,), cost_terms=cost_terms)
