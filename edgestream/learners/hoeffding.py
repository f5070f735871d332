"""Hoeffding trees that do not forget (HT+AE) and their incremental random forest (IRF+AE), after Korycki and
Krawczyk, "Streaming Decision Trees for Lifelong Learning": the float32 specification of ``csrc/es_hoeffding.c``.

A tree grows in a fixed pool of ``2 L - 1`` nodes (``L = max_leaves``). Every leaf keeps, per class, a prior count
``n_k`` and, per class and feature, a Gaussian estimator (count, mean, sum of squared deviations ``M2``, by
Welford), plus per feature the smallest and largest value it saw. Learning a row updates the estimators of its
class at its leaf; every ``grace_period`` (weighted) rows a leaf tries to split:

* **candidates**: for every feature with ``high > low``, the thresholds ``low + k (high - low) s`` for
  ``k = 1 .. split_steps - 1`` (``s = 1 / split_steps``, the paper's split step 0.1 by default);
* **class-conditional split** (eq. 6-7): ``lp_k = Phi_k(t)``, the Gaussian CDF ``0.5 (1 + erf((t - mean) /
  (std sqrt 2)))`` with ``std = sqrt(M2 / count)``, a step (``t >= mean``) when ``M2 == 0``; classes without an
  estimator (count 0) take no part;
* **entropy with priors** (eq. 3-5): ``l_k = lp_k p_k`` and ``r_k = (1 - lp_k) p_k`` with ``p_k = n_k / n``;
  ``E = wl H(l / wl) + wr H(r / wr)`` with ``wl = sum l_k``, ``wr = sum r_k`` and natural logarithms; the best
  candidate is the first smallest ``E`` (features in evaluation order, thresholds in increasing ``k``);
* **Hoeffding bound** (eq. 1-2) with ``R = ln C`` (``C`` the classes with a positive prior at the leaf, at least
  2): the leaf splits when the gain ``E0 - E`` is positive and ``gain^2 > eps^2`` or ``eps^2 < tau^2``
  (``tau`` the tie threshold), ``eps^2 = R^2 ln(1/delta) / (2 n)``. Comparing squares needs no square root and
  is the same test up to rounding. A positive gain is required (a pure leaf never splits on a tie).
* **split** (eq. 8, 11, 12): the children's priors are ``n l_k`` and ``n r_k``; with estimator propagation (AE)
  both children start from copies of the parent's estimators and ranges (the left child's ``high`` and the right
  child's ``low`` of the split feature become the threshold); without it (plain HT, ``propagation=False``) they
  start empty (the priors are still split by eq. 8, as in the authors' code).

Prediction at a leaf is naive Bayes with priors (eq. 9-10, 12) in the log domain: the score of class ``k`` is
``ln(n_k / n) - 0.5 sum_i ((x_i - mean)^2 / v + ln v)`` with ``v = M2 / count + floor_i``; classes with no prior
or no estimator at the leaf get probability 0 (when no class has an estimator, the prior alone scores the classes
with a prior; an empty leaf gives equal probabilities). The per-tree Q15 probabilities are the exact integer
softmax of :mod:`edgestream.fixedpoint` of the Q10 scores ``trunc(clamp(1024 score, +-2**29))`` (excluded classes
score ``-2**30``: exactly 0). A forest averages its trees' Q15 rows, ``(sum + T/2) // T``; the class is the first
index of the largest averaged probability (one tree: its own).

Decisions (the C runtime follows every one of them to the bit):

* **Arithmetic**: float32 only, with the operation order written in this module (``a * b + c`` is two rounded
  operations; the C is compiled with ``-ffp-contract=off``), sums in class or feature index order from 0.
  Division and square root are IEEE (the C uses ``es_f32_sqrt``, correctly rounded by integer arithmetic).
  ``ln`` (:func:`log_f32`) splits off the exponent (subnormals scaled by ``2**23`` first), reduces the mantissa to
  ``[sqrt(1/2), sqrt(2))`` and sums ``2 atanh t`` to ``t^9/9`` (within 2e-7 relative); ``erf``
  (:func:`erf_f32`) is Abramowitz-Stegun 7.1.28 ``1 - 1 / (1 + a1 x + ... + a6 x^6)^16`` in Horner form (1 for
  ``|x| >= 5``). The constants are float32 values, written in the C as hexadecimal literals.
* **Inputs**: raw float32 features, finite and within ``+-2**50`` (else ``ValueError`` here, ``ES_ERR_INPUT``
  on the device, nothing changes). The naive Bayes variance floor ``floor_i = var_smoothing * var_i`` (``var_i``
  the variance of feature ``i`` in the start sample, 1 where that is 0) is fixed at :meth:`start`.
* **Classes**: ``max_classes`` slots, fixed at deployment; a class not seen yet has zero counts and takes no
  part. With integer labels and ``max_classes`` above the labels seen, the classes are ``0 .. max_classes - 1``
  (the label is the class index); string labels get placeholders ``"<unseen k>"``. A label at or beyond the
  slots is refused (``ValueError``, ``ES_ERR_LABEL``).
* **Pool**: a split takes two nodes (one new leaf slot): the first free pair after the splitting node (children
  point forward), else the pair at ``n_nodes``. When there is none the tree is full: it stops growing (no split is
  tried), and its leaves keep learning their statistics and predicting, until a drift merges a subtree.
* **Drift** (``drift_threshold = z``, 0 = off; a fixed-memory cousin of the Hoeffding Adaptive Tree): every node
  has an error detector, two integer averages of its 0/1 errors in units of ``2**-24`` (``fast`` weighs a new row
  ``1/64``, ``slow`` ``1/512``; each a running mean until it holds 64 and 512 rows, ``seen`` counting them). A row
  is watched only when the leaf's estimator of its label holds at least ``ESTABLISHED = 32`` weight: the leaf's
  naive Bayes class (argmax of its scores) against the label gives the error, fed to the nodes on the row's path
  from the root down. A node signals a drift once it has seen more than 512 rows and ``(fast - slow)^2 * 127 >
  z^2 p (1 - p)`` with ``p = max(slow, 1/16)`` (the fast average's variance is ``p (1 - p) / 127``; comparing
  squares of integers needs no square root). The first node that signals answers, then the row is learned at its
  leaf (routed again):

  - a **leaf** restarts (below) with its detector; an attempt at it ends (its snapshot holds the old concept),
    one elsewhere in the tree goes on;
  - an **inner node** *adapts* its subtree and *revisits* its own split. The splits down to ``KEPT_LEVELS = 3``
    levels below it stay; each subtree rooted deeper merges into one leaf. Every leaf under the node restarts
    with the limit ``PROPAGATED / 2**k`` at ``k`` levels below it (together about what one merged leaf keeps), and
    every detector under it restarts. The adaptation runs in two passes over the node pool (``adapt_pos``), spread
    as below: a *marking* pass forward from the node to the last node in use sets each node's ``fast`` to
    ``KEPT + k`` (``k`` capped at ``MERGED_DEPTH = 4``: deeper, to merge; children come after their parents),
    then a *merging* pass back to the node handles each marked node after its descendants: a leaf at ``k <= 3``
    restarts; an inner node at ``k >= 3`` *merges* its two children, leaves by then (the right slot into the left:
    priors added, estimators by Chan et al.'s pairwise update, ranges joined; the right slot released, the last
    slot in use moving into it; the pair freed, ``feature = 254``), and at ``k = 3`` the merged leaf restarts;
    every marked node's detector restarts (a merged node's when its parent frees it). At its end ``n_nodes``
    drops past free pairs at its end. While a tree adapts, its detectors watch no row (their ``fast`` holds the
    marks) and its rows are learned where they route. The tree's attempt (one under way ends) becomes the revisit
    at the signal, before the passes: its snapshot starts
    empty and learns every row through the node, as a leaf there would, until it holds ``max(grace_period,
    REVISIT_ROWS = 512)`` of weight (at most ``COUNT_LIMIT``); then the features are drawn and the candidates
    evaluated as in a split attempt (below), and the decision takes the entropy of the node's own split on the
    snapshot: when it exceeds the best candidate's by ``g > 0`` with ``g^2 > eps^2`` (the split test's bound,
    without the tie rule: a tie keeps the split), the node's subtree merges into one leaf that splits on the best
    candidate (a split as below, from the merged live counts); else the split stays.

  Why (measured with ``benchmarks/bench_quality.py``'s streams): pruning the node that signals to one leaf, as
  this tree did, threw away a partition that often still serves. On Agrawal F1 -> F3 both concepts split age at
  40 and 60; the root signalled 16 rows after the change, and the re-grown root split at 50 rows on hvalue, a
  feature with a point mass (88 % of rows at 135,000): the 22 rows of one class all sat there (``M2 = 0``, a
  step) while the other class's Gaussian put half its weight below its mean where 3 of its 28 rows were. The
  tree then stayed at 0.81 accuracy, its error steady, so no detector fired again (recovery: never). Keeping
  the top splits and restarting the leaves lets the naive Bayes leaves learn the new concept within the old
  partition; the revisit replaces a split the new concept does not use (STAGGER's concepts use other features);
  its 512 rows of evidence keep point masses from deciding it (on ``grace_period`` rows, 50, the hvalue split won
  again: up to 8 points lost on Agrawal). Over every configuration of the search grids (the ``HT_VARIANTS`` at 2
  to 32 leaves, IRF 2 x 2 to 10 x 16 trees x leaves) on the 8 streams at two seeds: Agrawal +3.3 points on
  average, the other streams +0.04 (elec without propagation -0.6, STAGGER -0.3); one kept level +1.0 on
  Agrawal, two, three and all levels within 0.1 of each other elsewhere, three the fastest to recover on Agrawal;
  the deeper levels merged free pool room for the new concept's splits.

* **Propagation and drift together**: a row of a class new to a leaf is never watched (its estimator is not
  established), so class increments, which AE handles by propagating estimators, do not read as drift. A
  restarted leaf with the limit ``m`` (``PROPAGATED = 64`` for a leaf that signals; a split's estimators copied to
  both children are faded to 64 alike) keeps its class-conditional estimators with every count above ``m``
  halved (with its ``M2``) until at most ``m``, and its priors halved until no class count exceeds ``m``: the old
  concept's means and variances survive as a weak start that about ``m`` new rows per class outweigh, so old
  classes are still recognised while the new concept takes over. Without propagation a restarted leaf starts
  empty.
* **Grace**: per leaf the weight learned since its last attempt (uint32, saturating); an attempt when it reaches
  ``grace_period`` resets it, whether or not the leaf splits (or the pool is full). While its tree has an attempt
  under way a leaf does not start one: its weight keeps counting and it starts at its first row after.
* **Bounded work per call** (``work_per_call = U``; the unit is one candidate split, ``C`` Gaussian CDFs and
  ``2 C`` logarithms for ``C`` class slots, about 1,000 instructions on a Cortex-M4F and 20,000 on a Cortex-M0
  at 2 classes): an attempt starts where the grace check is (its features drawn from the random stream there,
  as above) by copying the leaf's priors, estimators and ranges into its tree's snapshot (the ``attempt``
  regions, one leaf's worth per tree). At the end of every learn call each tree with an attempt under way
  evaluates its next candidates on the snapshot, in the order above, keeping the running first smallest entropy:
  at most ``U`` of them per call and tree, or all with ``U = 0``; when none is left and a unit remains, the
  decision (one more unit) applies the Hoeffding test with the snapshot's ``n``, ``E0`` and classes, so the split
  chosen is the one the whole attempt would choose at its start. Rows keep being learned at the live leaf
  meanwhile, and a split splits the live leaf: its children start from the live priors and estimators (the rows
  learned during the attempt are kept), priors divided by eq. 8 at the chosen threshold with the live ``n``. With
  ``U = 0``, or ``U`` at least the candidates + 1, the attempt ends in the call that starts it and the tree is the
  unspread one. An adaptation ends its tree's attempt (its leaf may have merged or moved slots). A revisit's
  candidates and decision are spread alike (the decision one unit, its own split's entropy included). An
  adaptation's passes go on at the end of every learn call before anything else of its tree (its revisit
  collects meanwhile, and decides only after them): at most ``U`` units (a leaf restarted, or two leaves merged
  and restarted) and ``ADAPT_VISITS = 16`` node visits per unit, or all with ``U = 0``; a revisit's own merge at
  its decision (at most the kept levels' 8 leaves) runs in the decision's unit.
  ``WORK_DEFAULT`` keeps the worst learn call within 3 times the mean at the 8 KiB plans (measured under QEMU on
  a Cortex-M4F and a Cortex-M0, SEA and hyperplane streams); the rows an attempt takes are
  ``(subspace (split_steps - 1) + 1) / U`` (15 for one tree on 3 features at the defaults).
* **Counts that live for months** (float32 counts stop counting at ``2**24``): when a learning step leaves the
  learned class's prior count ``n_k`` or estimator count at ``COUNT_LIMIT = 2**14`` or above, every prior count,
  estimator count and ``M2`` of that leaf is halved (multiplied by 0.5, exact in float32), before the grace
  check. Means, ranges, variances ``M2 / count`` and the priors' ratios stay as they were; every count stays below
  ``2**14 + 255``, where adding a weight (an integer up to 255) is exact, so the counts keep growing by every
  row's weight at any age and IRF's Poisson weights stay unbiased. A leaf so remembers, per class, about its last
  ``2**13 .. 2**14`` weighted rows (old evidence decays by halves, which also lets a full tree's leaves follow a
  drift within tens of thousands of rows; a larger bound would keep more evidence and follow a drift more
  slowly); a class not seen for about 150 halvings of its leaf underflows to a count of 0 and leaves the naive
  Bayes there. A state with a count that is negative, not finite or at ``2 COUNT_LIMIT`` or beyond is refused
  (``ValueError`` here, ``ES_ERR_IMAGE`` on the device): the learning steps never leave one (a split's child
  counts are at most its parent's, up to a rounding); a count from the bound up to that is halved with its leaf
  when its class is next learned there.
* **The row last predicted** (the device's ``cache`` regions, never in a state image): a prediction keeps the row
  and each tree's leaf node and naive Bayes class; the learn call that follows on a row of the same bits takes
  them instead of walking and scoring each tree again (no tree changed in between; the call's checks still walk
  every tree), so a test-then-train step scores each leaf once. Every learn call forgets the row, as a restore
  does (``es_hoeffding_rebuild``). Nothing here keeps it: the results are the same either way.
* **Lifetime counter**: ``n_learned`` is uint64 (never wraps); the xorshift ``random`` state is a uint32 that
  cycles by design.
* **Forest** (IRF): online bagging, each tree learns a row ``w ~ Poisson(lambda)`` times (Knuth's product of
  uniforms against ``exp(-lambda)`` in float32, at most 255; ``w = 0`` skips the tree); each split attempt draws
  ``floor(sqrt(d)) + 1`` distinct features by a partial Fisher-Yates shuffle of ``0 .. d-1`` (``r mod (d - j)``),
  evaluated in the drawn order; every leaf keeps statistics of every feature (so AE can propagate them). The
  random numbers are one xorshift32 stream (as in :mod:`edgestream.learners.bls`) for the whole forest, in the
  state: per row, for tree 0, 1, ...: its Poisson draw, then the draws of its split attempt if it makes one;
  uniforms are ``((s >> 8) + 1) 2**-24`` in (0, 1]. A single tree (``n_trees = 1``, ``lambda = 0``) uses no
  random numbers.
"""

from __future__ import annotations

import math

import numpy as np

from ..costs import CostTerms
from ..fixedpoint import softmax_q15
from ..state import Field, RegionSpec, StateSpec
from ..task import CLASSIFICATION, REGRESSION
from .bls import xorshift32
from .base import WORK_PER_CALL, LearnerSpec, OnlineClassification, OnlineStateLearner, Option, check_integer, restore_regions, state_context, \
    state_tables

F32 = np.float32
MAX_FEATURES = 254  # feature 255 marks a leaf, 254 a free node
MAX_CLASSES = 255
MAX_LEAVES = 16384
MAX_TREES = 255
LEAF = 255
FREE = 254
FLT_MAX = F32(np.finfo(np.float32).max)
FEATURE_LIMIT = F32(2.0**50)
SEED_MIX = 0x6D2B79F5
SCORE_LIMIT = F32(2.0**29)
EXCLUDED = -(2**30)
Q10 = F32(1024.0)
WEIGHT_CAP = 255
COUNT_LIMIT = F32(2.0**14)  # a leaf's counts halve when one reaches it (module docstring)
VALID_COUNT = 2 * COUNT_LIMIT  # a restored state's counts are below it
ONE = 1 << 24  # an error rate of 1 in the detectors' fixed point
FAST_SHIFT, SLOW_SHIFT = 6, 9  # the detectors' averages weigh a new row 1/64 and 1/512
FAST_VARIANCE = 127  # 1 / the fast average's variance factor alpha / (2 - alpha), alpha = 1/64
RATE_FLOOR = ONE >> 4  # the error rate the test assumes at least (1/16): a node that never erred is not alarmed
# by a few slips
ESTABLISHED = F32(32.0)  # a label counts for drift at a leaf once its estimator holds this weight
MAX_DRIFT = 15
DRIFT_DEFAULT = 5
KEPT_LEVELS = 3  # a drift keeps this many levels of splits under the node that signals it (at most 8 leaves)
REVISIT_ROWS = 1 << SLOW_SHIFT  # a revisit collects at least this weight (the slow detectors' window)
KEPT = ONE + 1  # detector values no average reaches, KEPT + depth, mark the nodes of a subtree being adapted
MERGED_DEPTH = KEPT_LEVELS + 1  # the mark's depth of the nodes deeper than the kept levels (merged)
ADAPT_VISITS = 16  # node visits per unit of an adaptation's passes (a visit is about a fiftieth of a unit's work)
PROPAGATED = F32(64.0)  # estimators handed on (a split's, a drift's merge) keep at most this weight per class
IDLE = 0xFFFF  # attempt_node of a tree with no split attempt under way
NO_FEATURE = 255  # best_feature before an attempt has a candidate
WORK_DEFAULT = 2  # candidates per learn call and tree (module docstring: the worst call within 3x the mean)

LN2 = F32(0.6931471805599453)
SQRT2 = F32(1.4142135623730951)
INV_SQRT2 = F32(0.7071067811865476)
LOG_SERIES = tuple(F32(1.0 / n) for n in (9, 7, 5, 3))  # Horner, highest order first, then + 1
ERF_COEFFS = tuple(F32(a) for a in (0.0000430638, 0.0002765672, 0.0001520143, 0.0092705272, 0.0422820123,
                                    0.0705230784))  # a6 .. a1
ERF_LIMIT = F32(5.0)

ATTEMPT_ARRAYS = ("attempt_node", "attempt_pos", "adapt_pos", "best_feature", "best_threshold", "best_entropy", "order",
                  "snap_count", "snap_est", "snap_mean", "snap_m2", "snap_low", "snap_high")
STATE_ARRAYS = ("feature", "threshold", "child", "n_nodes", "n_leaves", "class_count", "est_count", "mean", "m2",
                "low", "high", "since", "seen", "fast", "slow", "var_floor") + ATTEMPT_ARRAYS
LEAF_ARRAYS = ("class_count", "est_count", "mean", "m2", "low", "high", "since")


def _nodes(c: dict) -> int:
    return c["n_trees"] * c["max_nodes"]


def _trees(c: dict) -> int:
    return c["n_trees"]


def _slots(c: dict) -> int:
    return c["n_trees"] * c["max_leaves"]


def _bins(c: dict) -> int:
    return _slots(c) * c["n_features"] * c["split_steps"]


def _classifier(count):
    """A region only the classifier uses: one placeholder element in a regressor's state (one output, n_classes
    1; a classifier has at least 2 class slots)."""
    return lambda c: count(c) if c["n_classes"] > 1 else 1


def _regressor(count):
    """A region only the regressor uses (edgestream.learners.hoeffding_regression): one placeholder element in a
    classifier's state."""
    return lambda c: count(c) if c["n_classes"] == 1 else 1


STATE = StateSpec(
    prefix="es_hoeffding",
    title="Hoeffding trees with class-conditional estimator propagation (HT+AE) and their forest (IRF+AE)",
    input_type="float",
    tasks=(CLASSIFICATION, REGRESSION),
    config=(
        Field("n_features", "uint8_t"), Field("n_classes", "uint8_t", "class slots (max_classes)"),
        Field("n_trees", "uint8_t"), Field("propagate", "uint8_t", "1: children copy the parent's estimators"),
        Field("max_nodes", "uint16_t", "per tree, 2 max_leaves - 1"), Field("max_leaves", "uint16_t", "per tree"),
        Field("grace", "uint16_t", "weight between split attempts"),
        Field("split_steps", "uint8_t", "thresholds low + k (high - low) / split_steps"),
        Field("subspace", "uint8_t", "features per split attempt (n_features: all, no random draw)"),
        Field("seed", "uint32_t", "xorshift32 start of the forest's random stream"),
        Field("split_step", "float", "1 / split_steps"),
        Field("log_inv_delta", "float", "ln(1 / delta)"),
        Field("tie", "float", "tie threshold tau"),
        Field("exp_neg_lambda", "float", "exp(-lambda) of the Poisson weights; 0 = every tree learns every row"),
        Field("drift", "uint8_t", "drift threshold in standard deviations; 0 = no drift handling"),
        Field("work_per_call", "uint16_t", "units (candidates, adapted leaves) per learn call and tree; 0: whole"),
        Field("linear", "uint8_t", "regression: 1 = linear leaves (leaf_linear), 0 = mean leaves"),
    ),
    counters=(
        Field("n_learned", "uint64_t", "rows learned"),
        Field("random", "uint32_t", "xorshift32 state"),
    ),
    regions=(
        RegionSpec("var_floor", "input", "float", _classifier(lambda c: c["n_features"]), "d, naive Bayes variance floor"),
        RegionSpec("feature", "node pool", "uint8_t", _nodes, "trees x nodes; 255 = leaf"),
        RegionSpec("threshold", "node pool", "float", _nodes, "trees x nodes; x <= t goes left"),
        RegionSpec("child", "node pool", "uint16_t", _nodes, "trees x nodes; left child (right = +1) or leaf slot"),
        RegionSpec("seen", "node pool", "uint16_t", _nodes, "trees x nodes, rows in the drift detector (saturating)"),
        RegionSpec("fast", "node pool", "uint32_t", _nodes, "trees x nodes, fast error average (1 = 2**24)"),
        RegionSpec("slow", "node pool", "uint32_t", _nodes, "trees x nodes, slow error average (1 = 2**24)"),
        RegionSpec("n_nodes", "node pool", "uint16_t", _trees, "nodes used per tree (free pairs included)"),
        RegionSpec("n_leaves", "node pool", "uint16_t", _trees, "leaf slots used per tree"),
        RegionSpec("class_count", "leaves", "float", _classifier(lambda c: _slots(c) * c["n_classes"]), "slots x classes, priors"),
        RegionSpec("est_count", "leaves", "float", _classifier(lambda c: _slots(c) * c["n_classes"]), "slots x classes"),
        RegionSpec("mean", "leaves", "float", _classifier(lambda c: _slots(c) * c["n_classes"] * c["n_features"]),
                   "slots x classes x d"),
        RegionSpec("m2", "leaves", "float", _classifier(lambda c: _slots(c) * c["n_classes"] * c["n_features"]),
                   "slots x classes x d, sum of squared deviations"),
        RegionSpec("low", "leaves", "float", lambda c: _slots(c) * c["n_features"], "slots x d, smallest value"),
        RegionSpec("high", "leaves", "float", lambda c: _slots(c) * c["n_features"], "slots x d, largest value"),
        RegionSpec("since", "leaves", "uint32_t", _slots, "slots, weight since the last split attempt"),
        RegionSpec("left", "scratch", "float", _classifier(lambda c: c["n_classes"]), "classes"),
        RegionSpec("right", "scratch", "float", _classifier(lambda c: c["n_classes"]), "classes"),
        RegionSpec("scores", "scratch", "int32_t", _classifier(lambda c: c["n_classes"]), "classes, Q10"),
        RegionSpec("tree_proba", "scratch", "uint16_t", _classifier(lambda c: c["n_classes"]), "classes, Q15"),
        RegionSpec("sums", "scratch", "uint32_t", _classifier(lambda c: c["n_classes"]), "classes, Q15 sums over trees"),
        RegionSpec("terms", "scratch", "float", _classifier(lambda c: c["n_features"]), "d, a class's naive Bayes terms"),
        RegionSpec("attempt_node", "attempt", "uint16_t", _classifier(_trees), "per tree, leaf node of the attempt under way; "
                   "0xFFFF none"),
        RegionSpec("attempt_pos", "attempt", "uint16_t", _classifier(_trees), "per tree, candidates evaluated"),
        RegionSpec("adapt_pos", "attempt", "uint16_t", _classifier(_trees), "per tree, the drift adaptation under way: marking "
                   "at node p < max_nodes, merging at max_nodes + p; 0xFFFF none"),
        RegionSpec("best_feature", "attempt", "uint8_t", _classifier(_trees), "per tree, best candidate's feature; 255 none yet"),
        RegionSpec("best_threshold", "attempt", "float", _classifier(_trees), "per tree, best candidate's threshold"),
        RegionSpec("best_entropy", "attempt", "float", _classifier(_trees), "per tree, best candidate's entropy"),
        RegionSpec("order", "attempt", "uint8_t", lambda c: c["n_trees"] * c["n_features"],
                   "trees x d, the attempt's features (drawn at its start)"),
        RegionSpec("snap_count", "attempt", "float", _classifier(lambda c: c["n_trees"] * c["n_classes"]),
                   "trees x classes, the leaf's priors at the attempt's start"),
        RegionSpec("snap_est", "attempt", "float", _classifier(lambda c: c["n_trees"] * c["n_classes"]), "trees x classes"),
        RegionSpec("snap_mean", "attempt", "float", _classifier(lambda c: c["n_trees"] * c["n_classes"] * c["n_features"]),
                   "trees x classes x d"),
        RegionSpec("snap_m2", "attempt", "float", _classifier(lambda c: c["n_trees"] * c["n_classes"] * c["n_features"]),
                   "trees x classes x d"),
        RegionSpec("snap_low", "attempt", "float", _classifier(lambda c: c["n_trees"] * c["n_features"]), "trees x d"),
        RegionSpec("snap_high", "attempt", "float", _classifier(lambda c: c["n_trees"] * c["n_features"]), "trees x d"),
        RegionSpec("leaf_n", "leaves", "uint32_t", _regressor(_slots), "slots, regression: rows (weighted)"),
        RegionSpec("leaf_sum", "leaves", "int32_t", _regressor(_slots), "slots, regression: sum of target codes"),
        RegionSpec("bin_n", "leaves", "uint32_t", _regressor(_bins), "slots x d x split_steps, regression: rows"),
        RegionSpec("bin_sum", "leaves", "int32_t", _regressor(_bins), "slots x d x split_steps, regression: codes"),
        RegionSpec("leaf_linear", "leaves", "int32_t",
                   lambda c: _slots(c) * (c["n_features"] + 2) if c["n_classes"] == 1 and c["linear"] else 1,
                   "slots x (d + 2), linear leaves: d weights, the mean's and the linear model's running error"),
        RegionSpec("cached", "cache", "uint8_t", lambda c: 1, "1: the cached_ regions hold the last prediction's row"),
        RegionSpec("cached_row", "cache", "float", lambda c: c["n_features"], "d, the row of the last prediction"),
        RegionSpec("cached_leaf", "cache", "uint16_t", _trees, "per tree, the leaf node of that row"),
        RegionSpec("cached_class", "cache", "uint8_t", _classifier(_trees), "per tree, its leaf's naive Bayes class"),
    ),
)


# -- float32 arithmetic shared with the C ----------------------------------------------------------------------

def horner_f32(coeffs, x: np.ndarray) -> np.ndarray:
    """``((c0 x + c1) x + ... + c_last) x + 1``, one rounded operation at a time (``es_hoeffding``'s horner)."""
    p = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        p = p * x + c
    return p * x + F32(1.0)


def log_f32(x) -> np.ndarray:
    """Natural logarithm of positive finite float32 values, elementwise, as ``es_hoeffding_log`` computes it."""
    x = np.atleast_1d(np.asarray(x, dtype=F32))
    subnormal = x.view(np.uint32) < 0x00800000
    with np.errstate(over="ignore"):  # only the subnormal products are kept
        x = np.where(subnormal, x * F32(2.0**23), x).astype(F32)
    bits = x.view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.int32) - 127 - np.where(subnormal, 23, 0).astype(np.int32)
    m = ((bits & 0x007FFFFF) | 0x3F800000).astype(np.uint32).view(F32)
    big = m > SQRT2
    m = np.where(big, m * F32(0.5), m).astype(F32)
    exponent = exponent + big
    t = (m - F32(1.0)) / (m + F32(1.0))
    r = t * horner_f32(LOG_SERIES, t * t)
    r = r + r
    return (exponent.astype(F32) * LN2 + r).astype(F32)


def erf_f32(x) -> np.ndarray:
    """The error function (Abramowitz-Stegun 7.1.28) of float32 values, elementwise, as ``es_hoeffding_erf``."""
    x = np.atleast_1d(np.asarray(x, dtype=F32))
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):  # |x| >= 5 overflows, and is replaced below
        p = horner_f32(ERF_COEFFS, a)
        p = p * p
        p = p * p
        p = p * p
        p = p * p
        r = F32(1.0) - F32(1.0) / p
    r = np.where(a >= ERF_LIMIT, F32(1.0), r).astype(F32)
    return np.where(x < 0, -r, r).astype(F32)


def gaussian_cdf(t, mean, m2, count) -> np.ndarray:
    """``P(x <= t)`` of the Gaussian estimators (broadcast), a step at the mean when ``m2 == 0``."""
    t, mean, m2, count = (np.asarray(v, dtype=F32) for v in (t, mean, m2, count))
    with np.errstate(divide="ignore", invalid="ignore"):
        std = np.sqrt(m2 / count, dtype=F32)
        z = (t - mean) / std
        smooth = F32(0.5) * (F32(1.0) + erf_f32(z * INV_SQRT2))
    step = np.where(t >= mean, F32(1.0), F32(0.0))
    return np.where(m2 == 0, step, smooth).astype(F32)


def entropy_f32(v: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``-sum p ln p`` over the classes (first axis) with ``p = v / total``, entries ``v <= 0`` left out."""
    h = np.zeros(np.shape(total), dtype=F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for vk in v:
            p = vk / total
            term = p * log_f32(np.where(vk > 0, p, F32(1.0))).reshape(np.shape(p))
            h = np.where(vk > 0, h - term, h).astype(F32)
    return h


def sum_f32(v: np.ndarray) -> np.ndarray:
    """Sum over the first axis in index order, from 0."""
    total = np.zeros(v.shape[1:], dtype=F32)
    for vk in v:
        total = total + vk
    return total


def empty_statistics(count, est, mean, m2, low, high) -> None:
    """Empty one leaf's (or the snapshot's) statistics in place: priors, estimators and ranges."""
    for part in (count, est, mean, m2):
        part[...] = 0
    low[...], high[...] = FLT_MAX, -FLT_MAX


def split_entropy(stats: tuple, features: np.ndarray, thresholds: np.ndarray, n: np.float32) -> tuple:
    """Entropy after each split at (``features[i]``, ``thresholds[i]``) of a leaf's statistics ``(priors,
    estimator counts, means, M2)`` with ``n`` the sum of its priors, and the ``l_k``, ``r_k`` of eq. 8 (classes x
    candidates)."""
    counts, est, mean, m2 = stats
    left = np.zeros((len(counts), len(thresholds)), F32)
    right = np.zeros_like(left)
    for k in np.flatnonzero(est != 0):
        lp = gaussian_cdf(thresholds, mean[k, features], m2[k, features], est[k])
        prior = counts[k] / n
        left[k] = lp * prior
        right[k] = (F32(1.0) - lp) * prior
    wl, wr = sum_f32(left), sum_f32(right)
    return wl * entropy_f32(left, wl) + wr * entropy_f32(right, wr), left, right


class Random:
    """The xorshift32 stream of the forest (the state's ``random`` counter)."""

    def __init__(self, state: int):
        self.state = int(state)

    def next(self) -> int:
        self.state = xorshift32(self.state)
        return self.state

    def uniform(self) -> np.float32:
        return F32((self.next() >> 8) + 1) * F32(2.0**-24)

    def poisson(self, limit: np.float32) -> int:
        w, p = 0, self.uniform()
        while p > limit and w < WEIGHT_CAP:
            w += 1
            p = p * self.uniform()
        return w


def average(mean: int, value: int, n: int, shift: int) -> int:
    """A detector's average after its ``n``-th value: the running mean while ``n <= 2**shift``, then the
    exponential average of weight ``2**-shift`` (integers, truncated)."""
    if n <= 1 << shift:
        return (mean * (n - 1) + value) // n
    return mean - (mean >> shift) + (value >> shift)


def start_seed(seed: int) -> int:
    return (int(seed) ^ SEED_MIX) & 0xFFFFFFFF or SEED_MIX


class NodePool:
    """The node pool that the Hoeffding trees of both tasks share (the module docstring's "Pool"): routing, the
    pair of children a split takes, the slots of the leaves, the features an attempt draws. A subclass has the
    ``feature``, ``threshold``, ``child``, ``n_nodes`` and ``n_leaves`` regions, ``leaf_arrays`` (the regions
    indexed by leaf slot), ``max_leaves``, ``n_features_``, ``subspace`` and ``random``."""

    leaf_arrays: tuple[str, ...] = ()

    @property
    def max_nodes(self) -> int:
        return 2 * self.max_leaves - 1

    def _rows(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64) if not isinstance(X, np.ndarray) or X.dtype.kind != "f" else X
        if X.ndim != 2:
            raise ValueError(f"X must have shape (rows, features), got {X.shape}")
        if hasattr(self, "var_floor_") and X.shape[1] != self.n_features_:
            raise ValueError(f"X has {X.shape[1]} features, the model has {self.n_features_}")
        if not 1 <= X.shape[1] <= MAX_FEATURES:
            raise ValueError(f"X has {X.shape[1]} features; the Hoeffding tree takes 1 to {MAX_FEATURES}")
        X32 = X.astype(F32)
        bad = ~(np.abs(X32) <= FEATURE_LIMIT)
        if bad.any():
            row, feature = np.argwhere(bad)[0]
            raise ValueError(f"feature {feature} of row {row} is {float(X[row, feature])}; the Hoeffding tree takes "
                             f"finite features within +-2**50 (no NaN)")
        return X32

    def _leaf_node(self, t: int, x: np.ndarray) -> int:
        feature, threshold, child = self.feature[t], self.threshold[t], self.child[t]
        node = 0
        while feature[node] != LEAF:
            node = int(child[node]) + (0 if x[feature[node]] <= threshold[node] else 1)
        return node

    def _check_nodes(self) -> None:
        """Refuse node tables that point outside the pool (children must point forward, to nodes in use)."""
        if (self.n_nodes < 1).any() or (self.n_nodes > self.max_nodes).any() or (self.n_leaves < 1).any() \
                or (self.n_leaves > self.max_leaves).any():
            raise ValueError("node or leaf counts outside the pool")
        for t, (used, leaves) in enumerate(zip(self.n_nodes.tolist(), self.n_leaves.tolist())):
            feature, child = self.feature[t, :used].astype(np.int64), self.child[t, :used].astype(np.int64)
            leaf, free, node = feature == LEAF, feature == FREE, np.arange(used)
            inner = ~leaf & ~free
            if used % 2 == 0 or free[0] or (free[1::2] != free[2::2]).any():
                raise ValueError(f"tree {t}: {used} used nodes, or a free node outside a free pair")
            if (child[leaf] >= leaves).any() or (feature[inner] >= self.n_features_).any() \
                    or (child[inner] <= node[inner]).any() or (child[inner] + 1 >= used).any() \
                    or free[np.minimum(child[inner], used - 1)].any():
                raise ValueError(f"tree {t}: a node points outside its used nodes or leaves (children must point "
                                 f"forward, to nodes in use)")
    def _route(self, t: int, X: np.ndarray) -> np.ndarray:
        """Leaf node of every row in tree ``t``."""
        nodes = np.zeros(len(X), dtype=np.int64)
        feature, threshold, child = self.feature[t], self.threshold[t], self.child[t]
        rows = np.arange(len(X))
        while True:
            inner = feature[nodes] != LEAF
            if not inner.any():
                return nodes
            f = feature[nodes[inner]].astype(np.int64)
            go_right = X[rows[inner], f] > threshold[nodes[inner]]
            nodes[inner] = child[nodes[inner]].astype(np.int64) + go_right

    def _watch_path(self, t: int, x: np.ndarray, value: int) -> int:
        """Feed the row's error (``value``) to the detectors from the root down (``_detect``); the first node that
        signals a drift, else -1."""
        node = 0
        while True:
            if self._detect(t, node, value):
                return node
            if self.feature[t, node] == LEAF:
                return -1
            node = int(self.child[t, node]) + (0 if x[self.feature[t, node]] <= self.threshold[t, node] else 1)

    def _drop_free_pairs(self, t: int) -> None:
        """``n_nodes`` drops past the free pairs at its end."""
        while self.n_nodes[t] > 1 and self.feature[t, self.n_nodes[t] - 1] == FREE:
            self.n_nodes[t] -= 2

    def _release_slot(self, t: int, s: int) -> None:
        """Free leaf slot ``s``: the last slot in use moves into it (its leaf node follows)."""
        last = int(self.n_leaves[t]) - 1
        if s != last:
            for name in self.leaf_arrays:
                getattr(self, name)[t, s] = getattr(self, name)[t, last]
            used = int(self.n_nodes[t])
            owners = np.flatnonzero((self.feature[t, :used] == LEAF) & (self.child[t, :used] == last))
            self.child[t, owners[:1]] = s
        self.n_leaves[t] -= 1

    def _free_pair(self, t: int, node: int) -> int:
        """The first free pair after ``node`` (children point forward), else the next pair of the pool, else -1."""
        used = int(self.n_nodes[t])
        for a in range(node + 1 + node % 2, used, 2):
            if self.feature[t, a] == FREE:
                return a
        return used if used + 2 <= self.max_nodes else -1

    def _features(self, d: int) -> np.ndarray:
        """``0 .. d-1``, its first ``subspace(d)`` entries drawn by a partial Fisher-Yates shuffle."""
        m = self.subspace(d)
        order = np.arange(d)
        if m >= d:
            return order
        for j in range(m):
            r = self.random.next() % (d - j)
            order[j], order[j + r] = order[j + r], order[j]
        return order



class HoeffdingTreeClassifier(OnlineClassification, NodePool, OnlineStateLearner):
    """Hoeffding tree with class-conditional estimator propagation (HT+AE), learning on the device in a fixed node
    pool (see the module docstring); ``propagation=False`` is the plain Hoeffding tree.

    Parameters
    ----------
    max_leaves : leaves per tree (the pool holds ``2 max_leaves - 1`` nodes), 1..16384.
    grace_period : weight a leaf learns between split attempts (the paper's split wait), 1..65535.
    delta : Hoeffding bound confidence, in (0, 1).
    tie_threshold : split anyway when the bound falls below it, >= 0.
    split_steps : candidate thresholds per feature + 1 (the split step s = 1 / split_steps), 2..64.
    propagation : children copy the parent's class-conditional estimators (AE); False = plain HT.
    max_classes : class slots on the device (None: the classes of the data); labels beyond are refused.
    var_smoothing : naive Bayes variance floor as a fraction of each feature's variance in the start sample.
    drift_threshold : standard deviations by which a node's recent error must exceed its long-run error for a
        drift (the node's subtree then adapts, module docstring), 1..15; 0 = no drift handling.
    work_per_call : split candidates a learn call evaluates per tree, 1..65535 (the attempt spreads over the
        following calls), or 0: a split attempt runs whole in the call that starts it (module docstring).
    """

    input_dtype = "float32"
    state_spec = STATE
    state_arrays = STATE_ARRAYS
    ready_attribute = "feature"
    engine_state = STATE_ARRAYS + ("n_learned", "random")
    fitted_attributes = ("var_floor_", "classes_", "feature", "_config")
    forest = False
    leaf_arrays = LEAF_ARRAYS

    def __init__(self, max_leaves: int = 32, grace_period: int = 100, delta: float = 0.01,
                 tie_threshold: float = 0.05, split_steps: int = 10, propagation: bool = True,
                 max_classes: int | None = None, var_smoothing: float = 0.01, drift_threshold: int = DRIFT_DEFAULT,
                 work_per_call: int = WORK_DEFAULT):
        self.max_leaves = max_leaves
        self.grace_period = grace_period
        self.delta = delta
        self.tie_threshold = tie_threshold
        self.split_steps = split_steps
        self.propagation = propagation
        self.max_classes = max_classes
        self.var_smoothing = var_smoothing
        self.drift_threshold = drift_threshold
        self.work_per_call = work_per_call

    # -- parameters and layout ---------------------------------------------------------------------------------

    n_trees = 1
    bagging_lambda = 0.0
    seed = 1

    def _check_params(self):
        check_integer(self, "max_leaves", 1, MAX_LEAVES)
        check_integer(self, "grace_period", 1, 65535)
        check_integer(self, "split_steps", 2, 64)
        check_integer(self, "drift_threshold", 0, MAX_DRIFT)
        check_integer(self, "work_per_call", 0, 65535)
        if self.max_classes is not None:
            check_integer(self, "max_classes", 2, MAX_CLASSES)
        if not isinstance(self.propagation, (bool, np.bool_)):
            raise ValueError(f"propagation={self.propagation!r} must be True or False")
        for name, low, high in (("delta", 0.0, 1.0), ("var_smoothing", 0.0, 1e6)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not low < value < high:
                raise ValueError(f"{name}={value!r} must be a number in ({low:g}, {high:g})")
        tie = self.tie_threshold
        if not isinstance(tie, (int, float)) or isinstance(tie, bool) or not 0 <= tie <= 1e3:
            raise ValueError(f"tie_threshold={tie!r} must be a number from 0 to 1000")

    def n_slots(self, n_classes: int | None = None) -> int:
        return max(self.max_classes or 0, n_classes or 0)

    def subspace(self, n_features: int) -> int:
        return n_features

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        """The values of the C ``es_hoeffding_config`` (features and classes default to the fitted ones)."""
        d = self.n_features_ if n_features is None else n_features
        c = len(self.classes_) if n_classes is None else self.n_slots(n_classes)
        lam = float(self.bagging_lambda)
        return {
            "n_features": d, "n_classes": c, "n_trees": self.n_trees, "propagate": int(bool(self.propagation)),
            "max_nodes": self.max_nodes, "max_leaves": self.max_leaves, "grace": self.grace_period,
            "split_steps": self.split_steps, "subspace": self.subspace(d), "seed": int(self.seed),
            "split_step": F32(1.0 / self.split_steps), "log_inv_delta": F32(math.log(1.0 / self.delta)),
            "tie": F32(self.tie_threshold), "exp_neg_lambda": F32(math.exp(-lam)) if lam > 0 else F32(0.0),
            "drift": self.drift_threshold, "work_per_call": self.work_per_call, "linear": 0,
        }

    def summary(self) -> str:
        grown = ", ".join(str(int(n)) for n in self.n_leaves) if hasattr(self, "n_leaves") else "-"
        kind = "+AE" if self.propagation else " (no propagation)"
        trees = f"{self.n_trees} trees" if self.forest else "1 tree"
        return (f"{trees}{kind}, {self.max_leaves} leaves each (grown: {grown}), {len(self.classes_)} class slots, "
                f"model state {self.state_bytes():,} bytes")

    def device_counters(self) -> dict:
        return {"n_learned": self.n_learned, "random": self.random.state}

    # -- setup -----------------------------------------------------------------------------------------------

    def start(self, X_sample, classes) -> "HoeffdingTreeClassifier":
        """Fix the variance floor from a sample of the stream and the class slots (see the module docstring), and
        reset to a single empty leaf per tree; the parameters are checked first (when the learner starts, as
        scikit-learn's are)."""
        self._check_params()
        X = self._rows(X_sample)
        if len(X) == 0:
            raise ValueError("the start sample is empty")
        self.classes_ = self._class_slots(np.unique(np.asarray(classes)))
        var = X.astype(np.float64).var(axis=0)
        floor = self.var_smoothing * np.where(var > 0, var, 1.0)
        self.var_floor_ = np.maximum(floor, 1e-30).astype(F32)
        self.reset()
        return self

    def _class_slots(self, classes: np.ndarray) -> np.ndarray:
        slots = self.max_classes or len(classes)
        if len(classes) > slots:
            raise ValueError(f"the data has {len(classes)} classes, more than max_classes={slots}")
        if slots < 2 and self.max_classes is None:
            raise ValueError(f"{len(classes)} classes given, a classifier needs 2 to {MAX_CLASSES}")
        if slots > MAX_CLASSES:
            raise ValueError(f"{slots} classes: the device takes at most {MAX_CLASSES}")
        if len(classes) == slots:
            return classes
        if classes.dtype.kind in "iu":
            if classes.min() < 0 or classes.max() >= slots:
                bad = classes.min() if classes.min() < 0 else classes.max()
                raise ValueError(f"label {bad} is outside 0..{slots - 1}: with max_classes={slots} integer labels "
                                 f"are the class indices")
            return np.arange(slots)
        if classes.dtype.kind in "US":
            return np.array(list(classes) + [f"<unseen {k}>" for k in range(len(classes), slots)])
        raise ValueError(f"max_classes above the classes of the data needs integer or string labels, not "
                         f"{classes.dtype}")

    @property
    def n_features_(self) -> int:
        return len(self.var_floor_)

    def reset(self) -> None:
        """One empty leaf per tree; the variance floor and classes stay."""
        self._drop_engine()
        T, N, L = self.n_trees, self.max_nodes, self.max_leaves
        C, d = len(self.classes_), self.n_features_
        self.__dict__.pop("_config", None)
        self.var_floor = np.array(self.var_floor_, dtype=F32)
        self.feature = np.zeros((T, N), np.uint8)
        self.threshold = np.zeros((T, N), F32)
        self.child = np.zeros((T, N), np.uint16)
        self.feature[:, 0] = LEAF
        self.n_nodes = np.ones(T, np.uint16)
        self.n_leaves = np.ones(T, np.uint16)
        self.class_count = np.zeros((T, L, C), F32)
        self.est_count = np.zeros((T, L, C), F32)
        self.mean = np.zeros((T, L, C, d), F32)
        self.m2 = np.zeros((T, L, C, d), F32)
        self.low = np.zeros((T, L, d), F32)
        self.high = np.zeros((T, L, d), F32)
        self.low[:, 0] = FLT_MAX
        self.high[:, 0] = -FLT_MAX
        self.since = np.zeros((T, L), np.uint32)
        self.seen = np.zeros((T, N), np.uint16)
        self.fast = np.zeros((T, N), np.uint32)
        self.slow = np.zeros((T, N), np.uint32)
        self.attempt_node = np.full(T, IDLE, np.uint16)
        self.attempt_pos = np.zeros(T, np.uint16)
        self.adapt_pos = np.full(T, IDLE, np.uint16)
        self.best_feature = np.full(T, NO_FEATURE, np.uint8)
        self.best_threshold = np.zeros(T, F32)
        self.best_entropy = np.zeros(T, F32)
        self.order = np.zeros((T, d), np.uint8)
        self.snap_count = np.zeros((T, C), F32)
        self.snap_est = np.zeros((T, C), F32)
        self.snap_mean = np.zeros((T, C, d), F32)
        self.snap_m2 = np.zeros((T, C, d), F32)
        self.snap_low = np.zeros((T, d), F32)
        self.snap_high = np.zeros((T, d), F32)
        self.n_learned = 0
        self.random = Random(start_seed(self.seed))

    def _check_ready(self):
        if not hasattr(self, "feature"):
            raise RuntimeError("call start(X_sample, classes) (or partial_fit) before learning")

    @property
    def _constants(self) -> dict:
        if "_config" not in self.__dict__:
            self._config = self.device_config()
        return self._config

    def saved_arrays(self) -> dict:
        self._check_ready()
        counters = np.array([self.n_learned, self.random.state], dtype=np.uint64)
        return {name: getattr(self, name) for name in STATE_ARRAYS} | {"counters": counters}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (after ``classes_`` is set); refuses arrays of the wrong layout and node tables that
        point outside the pool."""
        floor = arrays["var_floor"]
        if floor.dtype != F32 or floor.ndim != 1 or not 1 <= len(floor) <= MAX_FEATURES:
            raise ValueError(f"state 'var_floor' must be a float32 vector of 1..{MAX_FEATURES} features")
        if not (np.isfinite(floor).all() and (floor > 0).all()):
            raise ValueError("state 'var_floor' must be positive and finite")
        self.var_floor_ = floor.copy()
        self.reset()
        restore_regions(self, STATE_ARRAYS, arrays)
        self._check_nodes()
        marked = (self.fast >= KEPT) & (self.fast <= KEPT + MERGED_DEPTH) & (self.adapt_pos != IDLE)[:, None]
        for name, values in (("fast", np.where(marked, 0, self.fast)), ("slow", self.slow)):
            if (values > ONE).any():
                raise ValueError(f"state {name!r} holds an error average above 1 ({ONE}) (or, in 'fast', a mark "
                                 f"outside an adaptation)")
        self._check_attempts()
        counts = np.concatenate([self.class_count.reshape(-1), self.est_count.reshape(-1),
                                 self.snap_count.reshape(-1), self.snap_est.reshape(-1)])
        valid = (counts >= 0) & (counts < VALID_COUNT)
        if not valid.all():
            raise ValueError(f"a leaf count is {float(counts[~valid][0])!r}: counts must be from 0 to below "
                             f"{int(VALID_COUNT)} (the learning steps halve a leaf's counts at {int(COUNT_LIMIT)})")
        n_learned, random = (int(v) for v in arrays["counters"])
        if random > 0xFFFFFFFF:
            raise ValueError(f"random state {random} is beyond uint32")
        self.n_learned, self.random = n_learned, Random(random)

    def _candidates(self) -> int:
        """Candidates of a split attempt: its features times ``split_steps - 1`` thresholds."""
        return self.subspace(self.n_features_) * (self.split_steps - 1)

    def _check_attempts(self) -> None:
        """Refuse attempts that are not under way at a used node (a leaf, or an inner node for a revisit) or past
        their candidates, and features outside the row."""
        total = self._candidates()
        for t, node in enumerate(self.attempt_node.tolist()):
            if node != IDLE and (node >= self.n_nodes[t] or self.feature[t, node] == FREE):
                raise ValueError(f"tree {t}: the split attempt is at node {node}, not a used node")
        for t, pos in enumerate(self.adapt_pos.tolist()):
            node, at = int(self.attempt_node[t]), pos % self.max_nodes
            if pos != IDLE and (pos >= 2 * self.max_nodes or node == IDLE or self.feature[t, node] >= FREE
                                or not node <= at < self.n_nodes[t]):
                raise ValueError(f"tree {t}: the adaptation at {pos} is not between its node (the attempt's, an "
                                 f"inner node) and the last node in use")
        if (self.attempt_pos > total).any():
            raise ValueError(f"a split attempt has evaluated more than its {total} candidates")
        if (self.order >= self.n_features_).any() or ((self.best_feature >= self.n_features_)
                                                      & (self.best_feature != NO_FEATURE)).any():
            raise ValueError(f"a split attempt names a feature outside 0..{self.n_features_ - 1}")

    # -- the device's steps ------------------------------------------------------------------------------------

    def _weights(self) -> list[int]:
        """The weight of the current row in every tree (draws the forest's random numbers for the row's
        Poisson weights lazily, tree by tree: see :meth:`learn_encoded`)."""
        return [1] * self.n_trees

    def learn_encoded(self, x, label: int) -> None:
        """One learning step on a float32 row and a class index (the device's ``es_hoeffding_learn``); the units of
        split attempts it ran are kept in ``last_units_`` (host only, for tests and reports)."""
        self._check_ready()
        if not 0 <= int(label) < len(self.classes_):
            raise ValueError(f"label index {label} is at or beyond max_classes={len(self.classes_)} "
                             f"(0..{len(self.classes_) - 1})")
        x = self._rows(np.asarray(x).reshape(1, -1))[0]
        limit = self._constants["exp_neg_lambda"]
        for t in range(self.n_trees):
            w = self.random.poisson(limit) if limit > 0 else 1
            if w:
                self._learn_tree(t, x, int(label), w)
        self.last_units_ = sum(self._advance(t) for t in range(self.n_trees))
        self.n_learned = (self.n_learned + 1) & 0xFFFFFFFFFFFFFFFF

    def _learn_tree(self, t: int, x: np.ndarray, k: int, w: int) -> None:
        node = self._leaf_node(t, x)
        s = int(self.child[t, node])
        if self.drift_threshold and self.adapt_pos[t] == IDLE and self.est_count[t, s, k] >= ESTABLISHED:
            scores = self._leaf_scores(t, s, x[None])[0]
            fired = self._watch_path(t, x, ONE if int(np.argmax(scores)) != k else 0)
            if fired >= 0:
                (self._restart_signalled if self.feature[t, fired] == LEAF else self._adapt)(t, fired)
                node = self._leaf_node(t, x)
                s = int(self.child[t, node])
        count = self._learn_stats(self._leaf(t, s), x, k, w)
        if self.class_count[t, s, k] >= COUNT_LIMIT or count >= COUNT_LIMIT:
            self._halve(t, s)
        if self._collecting(t) and self._passes(t, x, int(self.attempt_node[t])):
            self._learn_stats(self._snapshot(t), x, k, w)
            if not self._collecting(t):
                self.order[t] = self._features(self.n_features_)
        self.since[t, s] = min(int(self.since[t, s]) + w, 0xFFFFFFFF)
        if self.since[t, s] >= self.grace_period and self.attempt_node[t] == IDLE:
            self.since[t, s] = 0
            if self._free_pair(t, node) >= 0:
                self._start_attempt(t, node, s)

    def _leaf(self, t: int, s: int) -> tuple:
        """Views of leaf slot ``s``'s priors, estimator counts, means, M2, lows and highs."""
        return tuple(getattr(self, name)[t, s] for name in ("class_count", "est_count", "mean", "m2", "low", "high"))

    def _snapshot(self, t: int) -> tuple:
        """Views of tree ``t``'s attempt snapshot, in the order of :meth:`_leaf`."""
        return tuple(getattr(self, "snap_" + name)[t] for name in ("count", "est", "mean", "m2", "low", "high"))

    @staticmethod
    def _learn_stats(stats: tuple, x: np.ndarray, k: int, w: int) -> np.float32:
        """Learn a row of class ``k`` with weight ``w`` into a leaf's statistics (Welford); its estimator count."""
        counts, est, mean, m2, low, high = stats
        wf = F32(w)
        counts[k] = counts[k] + wf
        count = est[k] + wf
        est[k] = count
        d = x - mean[k]
        new_mean = mean[k] + (wf / count) * d
        m2k = m2[k] + (wf * d) * (x - new_mean)
        m2[k] = np.where(m2k < 0, F32(0.0), m2k)  # rounding never makes it negative
        mean[k] = new_mean
        low[:] = np.where(x < low, x, low)
        high[:] = np.where(x > high, x, high)
        return count

    def _passes(self, t: int, x: np.ndarray, target: int) -> bool:
        """Whether the row's path in tree ``t`` goes through node ``target``."""
        feature, threshold, child = self.feature[t], self.threshold[t], self.child[t]
        node = 0
        while node != target and feature[node] != LEAF:
            node = int(child[node]) + (0 if x[feature[node]] <= threshold[node] else 1)
        return node == target

    # -- drift: a detector on every node, pruning, the free pairs of the pool ----------------------------------

    def _detect(self, t: int, node: int, value: int) -> bool:
        """Update a node's error averages (running means until they hold 64 and 512 rows) and test them."""
        n = min(int(self.seen[t, node]) + 1, 0xFFFF)
        self.seen[t, node] = n
        fast = average(int(self.fast[t, node]), value, n, FAST_SHIFT)
        slow = average(int(self.slow[t, node]), value, n, SLOW_SHIFT)
        self.fast[t, node], self.slow[t, node] = fast, slow
        if n <= 1 << SLOW_SHIFT or fast <= slow:
            return False
        p = max(slow, RATE_FLOOR)
        return (fast - slow) ** 2 * FAST_VARIANCE > self.drift_threshold ** 2 * p * (ONE - p)

    def _restart(self, t: int, node: int) -> None:
        self.seen[t, node] = self.fast[t, node] = self.slow[t, node] = 0

    def _adapt(self, t: int, node: int) -> None:
        """The inner ``node`` signalled a drift: its adaptation starts (marked, then merged and restarted by
        :meth:`_adapt_steps`) and the tree's attempt becomes the revisit of its split (module docstring)."""
        self.fast[t, node] = KEPT
        self.adapt_pos[t] = node
        self._start_revisit(t, node)

    def _adapt_steps(self, t: int) -> int:
        """Tree ``t``'s adaptation goes on for at most ``work_per_call`` units and ``ADAPT_VISITS`` node visits per
        unit (0: to its end); returns the units done."""
        budget = self.work_per_call
        units = visits = 0
        while self.adapt_pos[t] != IDLE and (not budget or (units < budget and visits < ADAPT_VISITS * budget)):
            units += self._adapt_visit(t)
            visits += 1
        return units

    def _adapt_visit(self, t: int) -> int:
        """One node of the adaptation: the marking pass goes forward from the node that signalled to the last node
        in use, then the merging pass back to it; returns the units done (1 for a leaf restarted or two merged)."""
        pos, first = int(self.adapt_pos[t]), int(self.attempt_node[t])
        if pos < self.max_nodes:
            self._mark_children(t, pos)
            last = int(self.n_nodes[t]) - 1
            self.adapt_pos[t] = pos + 1 if pos < last else self.max_nodes + last
            return 0
        i = pos - self.max_nodes
        units = self._adapt_node(t, i)
        if i > first:
            self.adapt_pos[t] = pos - 1
            return units
        self.adapt_pos[t] = IDLE
        self._drop_free_pairs(t)
        return units

    def _mark(self, t: int, i: int) -> int:
        """The depth below the adapted node that node ``i``'s mark holds, else -1."""
        depth = int(self.fast[t, i]) - KEPT
        return depth if 0 <= depth <= MERGED_DEPTH else -1

    def _mark_children(self, t: int, i: int) -> None:
        """Mark the children of a marked inner node one level deeper (the merged depth at most)."""
        depth = self._mark(t, i)
        if depth >= 0 and self.feature[t, i] < FREE:
            c = int(self.child[t, i])
            self.fast[t, c] = self.fast[t, c + 1] = KEPT + min(depth + 1, MERGED_DEPTH)

    def _adapt_node(self, t: int, i: int) -> int:
        """Node ``i`` in the merging pass (its descendants done): a kept leaf restarts with the limit halved per
        level; an inner node at the kept depth or deeper merges its two leaves (right into left) and becomes a
        leaf, restarted at the kept depth; every node's detector restarts; returns the units done."""
        depth = self._mark(t, i)
        if depth < 0:
            return 0
        units = 0
        if self.feature[t, i] < FREE and depth >= KEPT_LEVELS:
            units = self._merge_children(t, i)
        if self.feature[t, i] == LEAF and depth <= KEPT_LEVELS:
            self._restart_leaf(t, int(self.child[t, i]), PROPAGATED / F32(1 << depth))
            units = 1
        if depth <= KEPT_LEVELS or self.feature[t, i] != LEAF:
            self._restart(t, i)
        return units

    def _merge_children(self, t: int, i: int) -> int:
        """Make inner node ``i`` a leaf of its two leaf children's slots merged (the right slot released, the pair
        freed); a child that is not a leaf, two children of one slot or a slot not in use (only a crafted state has
        them) leave it as it is."""
        c = int(self.child[t, i])
        left, right = int(self.child[t, c]), int(self.child[t, c + 1])
        if self.feature[t, c] != LEAF or self.feature[t, c + 1] != LEAF or left == right \
                or max(left, right) >= self.n_leaves[t]:
            return 0
        self._merge_slot(t, left, right)
        self.feature[t, i], self.threshold[t, i], self.child[t, i] = LEAF, 0, left
        for pair in (c, c + 1):
            self.feature[t, pair], self.threshold[t, pair], self.child[t, pair] = FREE, 0, 0
            self._restart(t, pair)
        self._release_slot(t, right)
        return 1

    def _restart_signalled(self, t: int, node: int) -> None:
        """A leaf that signals a drift restarts with its detector; an attempt at it ends (its snapshot holds the old
        concept), an attempt elsewhere goes on."""
        if self.attempt_node[t] == node:
            self.attempt_node[t] = IDLE
        self._restart(t, node)
        self._restart_leaf(t, int(self.child[t, node]), PROPAGATED)

    def _merge_subtree(self, t: int, node: int) -> None:
        """Make the inner ``node`` a leaf of its subtree's leaves merged: the adaptation's two passes, run whole,
        with every node at the merged depth; the node's detector restarts."""
        self.fast[t, node] = KEPT + MERGED_DEPTH
        for i in range(node, int(self.n_nodes[t])):
            self._mark_children(t, i)
        for i in range(int(self.n_nodes[t]) - 1, node - 1, -1):
            self._adapt_node(t, i)
        self._restart(t, node)
        self._drop_free_pairs(t)

    def _restart_leaf(self, t: int, s: int, limit: np.float32) -> None:
        """A leaf after a drift: with propagation it keeps its class-conditional estimators and priors, faded to
        ``limit``; without it starts empty."""
        self.since[t, s] = 0
        if self.propagation:
            self._fade_estimators(t, s, limit)
            while self.class_count[t, s].max() > limit:
                self.class_count[t, s] *= F32(0.5)
            return
        empty_statistics(self.class_count[t, s], self.est_count[t, s], self.mean[t, s], self.m2[t, s],
                         self.low[t, s], self.high[t, s])

    def _merge_slot(self, t: int, s: int, other: int) -> None:
        """Add leaf slot ``other``'s priors, estimators (Chan et al.'s pairwise update) and ranges to slot ``s``."""
        self.class_count[t, s] = self.class_count[t, s] + self.class_count[t, other]
        for k in range(self.est_count.shape[2]):
            na, nb = self.est_count[t, s, k], self.est_count[t, other, k]
            if nb == 0:
                continue
            n = na + nb
            delta = self.mean[t, other, k] - self.mean[t, s, k]
            self.mean[t, s, k] = self.mean[t, s, k] + delta * (nb / n)
            self.m2[t, s, k] = (self.m2[t, s, k] + self.m2[t, other, k]) + (delta * delta) * ((na * nb) / n)
            self.est_count[t, s, k] = n
        low, high = self.low[t, other], self.high[t, other]
        self.low[t, s] = np.where(low < self.low[t, s], low, self.low[t, s])
        self.high[t, s] = np.where(high > self.high[t, s], high, self.high[t, s])

    def _fade_estimators(self, t: int, s: int, limit: np.float32) -> None:
        """Halve each class's estimator count and ``M2`` until the count is at most ``limit`` (exact)."""
        for k in range(self.est_count.shape[2]):
            while self.est_count[t, s, k] > limit:
                self.est_count[t, s, k] *= F32(0.5)
                self.m2[t, s, k] *= F32(0.5)

    def _halve(self, t: int, s: int) -> None:
        """Halve every count and ``M2`` of leaf slot ``s`` (the bound of the module docstring)."""
        for name in ("class_count", "est_count", "m2"):
            getattr(self, name)[t, s] *= F32(0.5)

    def _start_attempt(self, t: int, node: int, s: int) -> None:
        """Draw the attempt's features and copy the leaf's statistics that its candidates read."""
        self.order[t] = self._features(self.n_features_)
        for name, live in (("count", "class_count"), ("est", "est_count"), ("mean", "mean"), ("m2", "m2"),
                           ("low", "low"), ("high", "high")):
            getattr(self, "snap_" + name)[t] = getattr(self, live)[t, s]
        self.attempt_node[t], self.attempt_pos[t] = node, 0
        self.best_feature[t], self.best_threshold[t], self.best_entropy[t] = NO_FEATURE, 0, 0

    def _start_revisit(self, t: int, node: int) -> None:
        """Tree ``t``'s attempt becomes the revisit of the inner ``node``'s split: an empty snapshot that collects
        the rows through ``node`` (module docstring)."""
        self.attempt_node[t], self.attempt_pos[t] = node, 0
        self.best_feature[t], self.best_threshold[t], self.best_entropy[t] = NO_FEATURE, 0, 0
        empty_statistics(self.snap_count[t], self.snap_est[t], self.snap_mean[t], self.snap_m2[t],
                         self.snap_low[t], self.snap_high[t])

    def _collecting(self, t: int) -> bool:
        """Whether tree ``t``'s attempt is a revisit whose snapshot holds less than the larger of its grace period
        and ``REVISIT_ROWS`` (at most ``COUNT_LIMIT``) of weight."""
        node = int(self.attempt_node[t])
        if node == IDLE or self.feature[t, node] == LEAF:
            return False
        return sum_f32(self.snap_count[t][:, None])[0] < min(F32(max(self.grace_period, REVISIT_ROWS)), COUNT_LIMIT)

    def _advance(self, t: int) -> int:
        """Tree ``t``'s adaptation, else its attempt, goes on for at most ``work_per_call`` units (0: to its end):
        an attempt's candidate each, then its decision; returns the units done."""
        if self.adapt_pos[t] != IDLE:
            return self._adapt_steps(t)
        if self.attempt_node[t] == IDLE or self._collecting(t):
            return 0
        budget = self.work_per_call or self._candidates() + 1
        pos = int(self.attempt_pos[t])
        n = min(budget, self._candidates() - pos)
        self._evaluate(t, pos, n)
        self.attempt_pos[t] = pos + n
        if n == budget:
            return n
        self._decide(t)
        return n + 1

    def _evaluate(self, t: int, pos: int, n: int) -> None:
        """Candidates ``pos .. pos+n-1`` (feature ``pos // (split_steps - 1)`` of the attempt's order, threshold
        ``k = pos % (split_steps - 1) + 1``) on the snapshot; the first smallest entropy stays the best (a
        feature without range has no candidates, its units still count)."""
        steps = self.split_steps - 1
        index = np.arange(pos, pos + n)
        features = self.order[t, index // steps].astype(np.int64)
        low, high = self.snap_low[t, features], self.snap_high[t, features]
        with np.errstate(over="ignore", invalid="ignore"):
            step = (high - low) * self._constants["split_step"]
            thresholds = low + (index % steps + 1).astype(F32) * step
        snapshot = self.snap_count[t], self.snap_est[t], self.snap_mean[t], self.snap_m2[t]
        ent = split_entropy(snapshot, features, thresholds, sum_f32(self.snap_count[t][:, None])[0])[0]
        valid = np.flatnonzero(high > low)
        if len(valid) == 0:
            return
        i = valid[np.argmin(ent[valid])]
        if self.best_feature[t] == NO_FEATURE or ent[i] < self.best_entropy[t]:
            self.best_feature[t], self.best_threshold[t], self.best_entropy[t] = features[i], thresholds[i], ent[i]

    def _decide(self, t: int) -> None:
        """The Hoeffding test on the snapshot's counts: a split of the live leaf when it passes, or at a revisit a
        new split of the node when the best candidate beats its split (module docstring)."""
        node = int(self.attempt_node[t])
        self.attempt_node[t] = IDLE
        counts = self.snap_count[t]
        n = sum_f32(counts[:, None])[0]
        if self.feature[t, node] != LEAF:
            self._decide_revisit(t, node, n)
            return
        gain = entropy_f32(counts[:, None], np.array([n], F32))[0] - self.best_entropy[t]
        if self.best_feature[t] == NO_FEATURE or not gain > 0 or self._free_pair(t, node) < 0 \
                or self.n_leaves[t] >= self.max_leaves:  # a pool is full only in a crafted state
            return
        eps2 = self._bound2(counts, n)
        tie = self._constants["tie"]
        if gain * gain > eps2 or eps2 < tie * tie:
            self._split(t, node, int(self.child[t, node]), int(self.best_feature[t]), self.best_threshold[t])

    def _decide_revisit(self, t: int, node: int, n: np.float32) -> None:
        """The inner ``node``'s split stands unless the best candidate's entropy on the collected rows is below
        its own by more than the Hoeffding bound; then its subtree merges into a leaf that splits on the best."""
        own = split_entropy(self._snapshot(t)[:4], np.array([self.feature[t, node]]),
                            np.array([self.threshold[t, node]], F32), n)[0][0]
        better = own - self.best_entropy[t]
        if self.best_feature[t] == NO_FEATURE or not better > 0 or not better * better > self._bound2(
                self.snap_count[t], n):
            return
        self._merge_subtree(t, node)
        self._split(t, node, int(self.child[t, node]), int(self.best_feature[t]), self.best_threshold[t])

    def _bound2(self, counts: np.ndarray, n: np.float32) -> np.float32:
        """The squared Hoeffding bound ``R^2 ln(1/delta) / (2 n)``, ``R = ln C`` of the classes with a positive
        prior (at least 2)."""
        r = log_f32(F32(max(2, int((counts > 0).sum()))))[0]
        return (r * r) * self._constants["log_inv_delta"] / (n + n)

    def _split(self, t: int, node: int, s: int, f: int, threshold: np.float32) -> None:
        """Split leaf slot ``s`` as it is now (the rows learned during a spread attempt included)."""
        live = tuple(getattr(self, name)[t, s].copy() for name in ("class_count", "est_count", "mean", "m2"))
        n = sum_f32(live[0][:, None])[0]
        _, left, right = split_entropy(live, np.array([f]), np.array([threshold], F32), n)
        a, s2 = self._free_pair(t, node), int(self.n_leaves[t])
        self.feature[t, node], self.threshold[t, node], self.child[t, node] = f, threshold, a
        self.feature[t, a], self.threshold[t, a], self.child[t, a] = LEAF, 0, s
        self.feature[t, a + 1], self.threshold[t, a + 1], self.child[t, a + 1] = LEAF, 0, s2
        self.n_nodes[t] = max(int(self.n_nodes[t]), a + 2)
        self.n_leaves[t] += 1
        if self.propagation:
            self._fade_estimators(t, s, PROPAGATED)
            for name in ("est_count", "mean", "m2", "low", "high"):
                getattr(self, name)[t, s2] = getattr(self, name)[t, s]
            self.high[t, s, f] = threshold
            self.low[t, s2, f] = threshold
        else:
            for slot in (s, s2):
                for name in ("est_count", "mean", "m2"):
                    getattr(self, name)[t, slot] = 0
                self.low[t, slot], self.high[t, slot] = FLT_MAX, -FLT_MAX
        self.class_count[t, s] = n * left[:, 0]
        self.class_count[t, s2] = n * right[:, 0]
        self.since[t, s] = self.since[t, s2] = 0

    def encode_label(self, label) -> int:
        self._check_ready()
        index = {value: i for i, value in enumerate(self.classes_.tolist())}.get(
            label.item() if isinstance(label, np.generic) else label)
        if index is None:
            raise ValueError(f"label {label!r} is not one of the {len(self.classes_)} class slots "
                             f"(max_classes={len(self.classes_)}): {self.classes_.tolist()}")
        return index

    # -- prediction ------------------------------------------------------------------------------------------

    def tree_scores(self, t: int, X: np.ndarray) -> np.ndarray:
        """Q10 int32 scores (rows, classes) of tree ``t``: ``EXCLUDED`` for classes out of the naive Bayes."""
        slots = self.child[t, self._route(t, X)].astype(np.int64)
        out = np.full((len(X), len(self.classes_)), EXCLUDED, dtype=np.int32)
        for s in np.unique(slots):
            rows = np.flatnonzero(slots == s)
            out[rows] = self._leaf_scores(t, int(s), X[rows])
        return out

    def _leaf_scores(self, t: int, s: int, X: np.ndarray) -> np.ndarray:
        counts, est = self.class_count[t, s], self.est_count[t, s]
        n = sum_f32(counts[:, None])[0]
        out = np.full((len(X), len(counts)), EXCLUDED, dtype=np.int32)
        if not n > 0:
            return out
        nb = (counts > 0) & (est > 0)
        included = nb if nb.any() else counts > 0
        with np.errstate(over="ignore", invalid="ignore"):  # float32 overflows to infinities, as on the device
            for k in np.flatnonzero(included):
                score = np.full(len(X), log_f32(counts[k] / n)[0], dtype=F32)
                if nb.any():
                    acc = np.zeros(len(X), F32)
                    for j in range(self.n_features_):
                        var = self.m2[t, s, k, j] / est[k]
                        var = var + self.var_floor[j]
                        dd = X[:, j] - self.mean[t, s, k, j]
                        q = (dd * dd) / var
                        q = q + log_f32(var)[0]
                        acc = acc + q
                    score = score - acc * F32(0.5)
                q10 = score * Q10  # NaN (a state overflowed to infinities) scores lowest, as on the device
                q10 = np.clip(np.where(np.isnan(q10), -SCORE_LIMIT, q10), -SCORE_LIMIT, SCORE_LIMIT)
                out[:, k] = np.trunc(q10).astype(np.int32)
        return out

    def predict_proba_q15(self, X) -> np.ndarray:
        self._check_ready()
        rows = self._rows(X)
        sums = np.zeros((len(rows), len(self.classes_)), dtype=np.int64)
        for t in range(self.n_trees):
            sums += softmax_q15(self.tree_scores(t, rows).reshape(len(rows), -1)).astype(np.int64)
        T = self.n_trees
        return ((sums + T // 2) // T).astype(np.uint16)

    def predict_encoded(self, X) -> np.ndarray:
        return np.argmax(self.predict_proba_q15(X), axis=1).astype(np.uint8)


class IncrementalRandomForest(HoeffdingTreeClassifier):
    """Incremental random forest of HT+AE trees (IRF+AE; ``propagation=False``: IRF): online bagging with
    Poisson(``bagging_lambda``) weights, ``floor(sqrt(d)) + 1`` random features per split attempt, statistics of
    every feature at the leaves, a drift detector on every node of every tree (see the module docstring).

    Parameters: those of :class:`HoeffdingTreeClassifier`, and
    n_trees : trees, 1..255.
    bagging_lambda : the Poisson mean of the bagging weights, in (0, 50].
    seed : start of the random stream (uint32).
    """

    forest = True

    def __init__(self, n_trees: int = 10, max_leaves: int = 16, grace_period: int = 100, delta: float = 0.01,
                 tie_threshold: float = 0.05, split_steps: int = 10, propagation: bool = True,
                 max_classes: int | None = None, var_smoothing: float = 0.01, bagging_lambda: float = 5.0,
                 seed: int = 1, drift_threshold: int = DRIFT_DEFAULT, work_per_call: int = WORK_DEFAULT):
        self.n_trees = n_trees
        self.bagging_lambda = bagging_lambda
        self.seed = seed
        super().__init__(max_leaves, grace_period, delta, tie_threshold, split_steps, propagation, max_classes,
                         var_smoothing, drift_threshold, work_per_call)

    def _check_params(self):
        super()._check_params()
        check_integer(self, "n_trees", 1, MAX_TREES)
        check_integer(self, "seed", 0, 2**32 - 1)
        lam = self.bagging_lambda
        if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not 0 < lam <= 50:
            raise ValueError(f"bagging_lambda={lam!r} must be a number in (0, 50]")

    def subspace(self, n_features: int) -> int:
        return min(n_features, math.isqrt(n_features) + 1)


# -- the registry's view ---------------------------------------------------------------------------------------

LEAVES = Option("--max-leaves", "max_leaves", int, "leaves per tree: the node pool holds 2 N - 1 nodes", "N")
OPTIONS = (
    LEAVES,
    Option("--grace-period", "grace_period", int, "weight a leaf learns between split attempts", "N"),
    Option("--delta", "delta", float, "Hoeffding bound confidence", "X"),
    Option("--tie-threshold", "tie_threshold", float, "split anyway when the bound falls below it", "X"),
    Option("--split-steps", "split_steps", int, "candidate thresholds per feature + 1 (split step 1/N)", "N"),
    Option("--propagation", "propagation", bool, "children start with their parent's class-conditional "
           "estimators (HT+AE); --no-propagation: a plain Hoeffding tree"),
    Option("--max-classes", "max_classes", int, "class slots on the device (labels 0..N-1)", "N"),
    Option("--var-smoothing", "var_smoothing", float, "naive Bayes variance floor (fraction of the variance)", "X"),
    Option("--drift-threshold", "drift_threshold", int, "standard deviations of a node's error rise that adapt its "
           f"subtree (1..{MAX_DRIFT}; 0: no drift handling)", "Z"),
    WORK_PER_CALL,
    Option("--leaf-model", "leaf_model", str, "regression: a leaf's linear model once it errs less than its mean, or "
           "the mean only", "MODEL", choices=("linear", "mean")),
)

HT_LADDER = tuple({"max_leaves": n} for n in (256, 128, 96, 64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1))
IRF_LADDER = tuple({"n_trees": t, "max_leaves": n} for t, n in (
    (40, 32), (20, 32), (20, 16), (10, 16), (10, 8), (8, 8), (5, 8), (5, 4), (3, 4), (3, 2), (2, 2), (1, 2),
    (1, 1)))

# The search's grids: the sizes crossed with the structural options that decide how a tree follows a change of
# concept (propagation, detector threshold, grace period, split confidence); the ladder stays the sizes alone.
HT_VARIANTS = (
    {"propagation": True, "drift_threshold": DRIFT_DEFAULT, "grace_period": 100, "delta": 0.01},
    {"propagation": False, "drift_threshold": DRIFT_DEFAULT, "grace_period": 100, "delta": 0.01},
    {"propagation": True, "drift_threshold": 3, "grace_period": 50, "delta": 0.001},
    {"propagation": False, "drift_threshold": 3, "grace_period": 50, "delta": 0.001},
    {"propagation": True, "drift_threshold": 8, "grace_period": 200, "delta": 0.01},
    {"propagation": False, "drift_threshold": 8, "grace_period": 200, "delta": 0.0001},
)
HT_SEARCH = tuple({"max_leaves": n, **variant} for n in (256, 128, 64, 32, 16, 8, 4, 2, 1) for variant in HT_VARIANTS)
# Where classes arrive over time, children keep their parent's class-conditional estimators (the point of HT+AE).
KEEP_CLASSES = {"propagation": True}
IRF_SEARCH = tuple({**rung, **variant} for rung in IRF_LADDER for variant in HT_VARIANTS[:4])

RUNTIME = ("es_common", "es_f32", "es_fixed", "es_hoeffding")
# Test models with room to split and one candidate per call: images and fuzzing meet attempts under way.
SPREAD_VARIANT = {"max_leaves": 4, "grace_period": 10, "work_per_call": 1}

# A split attempt's work in one learn call, per class: candidates scored, decisions taken (the parent's entropy and
# the bound) and splits made (the children's priors from one more candidate, their statistics copied or emptied).
# Weighed in candidates (Cortex-M0+ counts of a 3-class tree: a candidate about 10,800 instructions per class, a
# decision and its split about 13,700), they tell which call of an attempt costs the most.
ATTEMPT_WORK = (1.0, 0.4, 0.9)


def attempt_call_work(work) -> float:
    """A call's attempt work (candidates, decisions, splits; per class) in candidates of ``ATTEMPT_WORK``."""
    return float(np.dot(ATTEMPT_WORK, work))


def worst_attempt_call(units: int, per_call: int, c: int) -> list[float]:
    """The attempt work (per class, as :func:`attempt_call_work` weighs it) of the costliest call of one tree's
    split attempt of ``units`` units (its candidates, then the decision) at ``per_call`` units a call: a call of
    ``per_call`` candidates, or the last one, its remaining candidates, the decision and the split."""
    last = (units - 1) % per_call + 1  # the units of the call that decides
    calls = [[(last - 1) * c, c, c]] + [[per_call * c, 0, 0]] * (units > per_call)
    return max(calls, key=attempt_call_work)


def cost_terms(params: dict, n_features: int, n_classes: int, attempts: bool = True,
               watched: float = 1.0, attempt_rate: float | None = None, splits: bool = True,
               worst_call: list[float] | None = None, attempt_work: float | None = None) -> CostTerms:
    """The work terms of a prediction (constant; per tree: the walk, log2 L, and naive Bayes at the leaf, d C and
    C) and of a learn call (per tree, IRF's Poisson draw; per tree that learns the row, with IRF's positive
    weight, ``1 - exp(-lambda)`` of them on average: the walk and its detectors, log2 L, the estimators of the
    row's class, d, and, when its leaf watches the row's class, the detectors' test on the path, log2 L (the
    leaf's naive Bayes class is the one the row's prediction found: a learn call after the prediction of its
    row, as test-then-train runs and the calibration counts; a learn call alone scores the leaf again, d C), apart
    with and without propagation: without it a split's children start empty, and a row of a class not yet
    established at its leaf is not watched (a one-leaf tree never splits); then a split attempt's units, C each, and its snapshot
    and split, d C: in the mean a whole attempt every ``grace_period`` weight at a leaf, its candidates, decision
    and split weighed as :func:`attempt_call_work`; in the worst, every tree
    learning, the costliest call of an attempt in every growing tree (:func:`worst_attempt_call`: ``work_per_call``
    candidates, or the last ones with the decision and the split, C each: a split's copies of d C statistics
    cost little beside its logarithms). ``attempts``: the trees have
    room to split (a one-leaf tree never has); a full pool attempts nothing until a drift merges a subtree, so its
    calls are the row's alone. ``watched``: the share of the rows a tree learns whose class its leaf's detector
    watches, in the mean (by default all; leaves that start empty watch fewer for a while). ``attempt_rate``:
    the split attempts (and revisits) that start per call, by default each growing tree's one per grace period of
    weight. ``worst_call``: the attempt work of the costliest counted call, summed over the trees (candidates
    scored times the snapshot's classes with an estimator, decisions times C, splits times C; few calibration
    runs split within their counted rows, and a candidate of a feature without range or a class without an
    estimator costs little), by default a split in every growing tree; ``attempt_work``: the same work per call
    on average, by default an attempt's (with its split) at ``attempt_rate``. The calibration replays its counts
    to tell all five. The Hoeffding tree and IRF share one model: the same runtime.

    A regressor (``n_classes`` 1, one output) does other work in that runtime (:func:`regression_terms`); its
    terms take columns of their own, zero in a classifier's terms and a classifier's zero in its, so one fit
    weighs both forms apart."""
    forest = "n_trees" in params
    trees, weight = params.get("n_trees", 1), params.get("bagging_lambda", 1.0)
    d, c, depth = n_features, n_classes, math.log2(params["max_leaves"]) + 1
    shared = {key: value for key, value in params.items() if key != "leaf_model"}  # the subspace is the forms' same
    model = (IncrementalRandomForest if forest else HoeffdingTreeClassifier)(**shared)
    units = model.subspace(d) * (params["split_steps"] - 1) + 1
    per_call = min(units, params.get("work_per_call", 0) or units)  # a regressor's attempts run whole
    grows = trees * (params["max_leaves"] > 1 and attempts)
    watch = depth * (params["drift_threshold"] > 0)
    resets = params["max_leaves"] > 1 and not params.get("propagation", False)  # one leaf never splits: never starts empty
    propagated = [watch * (not resets), watch * resets]
    walk = [1, trees, trees * depth, trees * d * c, trees * c]

    def row(n: float, share: float) -> list[float]:  # the row's work in n trees that learn it, share watched
        return [1, trees * forest, n * depth, n * d] + [n * share * w for w in propagated]
    learning = trees * (1 - math.exp(-weight)) if forest else 1
    attempted = grows * weight / params["grace_period"] if attempt_rate is None else attempt_rate
    worst = grows * attempt_call_work(worst_attempt_call(units, per_call, c)) if worst_call is None \
        else attempt_call_work(worst_call)
    whole = attempt_call_work([(units - 1) * c, c, c])  # an attempt's candidates, its decision and a split
    scoring = attempted * whole if attempt_work is None else attempt_work
    classify = CostTerms(predict=walk, learn_mean=row(learning, watched) + [scoring, attempted * d * c],
                         learn_worst=row(trees, 1.0) + [worst])
    regress = regression_terms(params, d, trees, forest, learning, grows, attempted, units, splits)
    if n_classes == 1:
        return CostTerms(*([0] * len(own) + new for own, new in zip(classify[:3], regress)))
    return CostTerms(*(own + [0] * len(new) for own, new in zip(classify[:3], regress)))


def regression_terms(params: dict, d: int, trees: int, forest: bool, learning: float, grows: int,
                     attempted: float, units: int, splits: bool) -> CostTerms:
    """The work terms of a regressor's prediction (constant; per tree the walk, log2 L, and with linear leaves
    the leaf's model on the row's d inputs, each normalised to the leaf's range in float32) and learn call (per
    tree that learns the row: the walk and, with drift detection, Page-Hinkley on the path, log2 L; the linear
    leaf's step, d inputs normalised twice and a 64-bit division each; the row's bin of each feature among the
    ``split_steps - 1`` thresholds, d (S - 1); then a split attempt's candidates, ``units``, every
    ``grace_period`` weight at a growing leaf in the mean, in every growing tree in the worst: a regression
    attempt runs whole, and with ``splits`` its split, which empties both children's d S bins). For a regressor
    the calibration's replay tells ``attempts`` (an attempt ran in the counted rows: its worst call holds one),
    ``attempt_rate`` and ``splits`` (one of them split)."""
    depth = math.log2(params["max_leaves"]) + 1
    linear = d * (params.get("leaf_model", "linear") == "linear")
    drift = depth * (params["drift_threshold"] > 0)
    bins = d * (params["split_steps"] - 1)

    def row(n: float) -> list[float]:
        return [1, trees * forest, n * depth, n * drift, n * linear, n * bins]
    return CostTerms(predict=[1, trees, trees * depth, trees * linear], learn_mean=row(learning) + [attempted * units],
                     learn_worst=row(trees) + [grows * units, grows * splits * (bins + d)])


SPEC = LearnerSpec(
    name="hoeffding", cls=HoeffdingTreeClassifier,
    summary="Hoeffding tree with class-conditional estimator propagation (HT+AE), learning in a fixed node pool",
    options=OPTIONS, learning=True, online=True, runtime=RUNTIME, template="hoeffding.c.j2",
    context=state_context, tables=state_tables(STATE), ladder=HT_LADDER, search=HT_SEARCH, state=STATE,
    class_increments=KEEP_CLASSES, variants=(SPREAD_VARIANT,), cost_terms=cost_terms)

IRF_SPEC = LearnerSpec(
    name="irf", cls=IncrementalRandomForest,
    summary="incremental random forest of HT+AE trees (online bagging, random features per split)",
    options=OPTIONS + (Option("--n-trees", "n_trees", int, "number of trees (1..255)", "T"),
                       Option("--bagging-lambda", "bagging_lambda", float, "Poisson mean of online bagging", "X"),
                       Option("--seed", "seed", int, "seed of the random stream", "N")),
    learning=True, online=True, runtime=RUNTIME, template="hoeffding.c.j2",
    context=state_context, tables=state_tables(STATE), ladder=IRF_LADDER, search=IRF_SEARCH, state=STATE,
    class_increments=KEEP_CLASSES, variants=(SPREAD_VARIANT,), cost_terms=cost_terms)
