"""Shrub Ensembles (Buschjäger, Hess, Morik, AAAI 2022) in fixed point, the specification of ``csrc/es_shrubs.c``.

A sliding window of ``window_size`` (B) binned samples lives in a ring buffer. Every ``update_every`` samples a
new shrub (a CART tree of depth ``max_depth`` on the window) joins the ensemble with weight 0; ``burnin``
proximal gradient steps on the window's MSE loss follow, then the hard-L0 prox keeps the ``max_shrubs`` (M)
largest weights, the non-zero ones are projected onto the probability simplex, and shrubs whose weight ends at 0
are dropped. The state has a fixed size (:data:`STATE`). The Python code of this module is the specification:
integer arithmetic on the state arrays (numpy where it is exact, masks where the C's uint32 wraps); the C runtime
follows it to the bit.

What is cached, so that a step costs O(d B depth + B M + burnin M^2) instead of retraining and re-evaluating
everything (the paper's memory term 2 B (M + 1)):

* ``leaf_index[row, slot]``: the leaf (0 .. 2**max_depth - 1, within its shrub: its leaf row is
  ``slot * 2**max_depth + leaf``) that the shrub in pool slot ``slot`` reaches for window row ``row``.
  A step evaluates the active shrubs on the new row and the new shrub on the window, nothing else. Entries of
  inactive slots and of rows not yet filled are stale and never read.
* ``sorted_rows[f, :count]``: the window rows ordered by (bin of feature f, row index), so CART never sorts (the
  device keeps the lists by insertion, O(d B) per step).
* ``gram[a, b] = sum_rows floor(sum_c h_a[c] h_b[c] / 2**15)`` for active slots a, b (Q15 leaf values, so each
  row's term is an exact integer below 2**16; the sums stay below 2**28) and ``label_sum[a] = sum_rows
  h_a[label]``, all in uint32 arithmetic (the leaf values of a restored state may make a sum wrap). When a row
  leaves the window its terms are subtracted, when it enters they are added (O(M^2) per step); the new shrub's
  row and column are computed over the window (O(B M)). All sums are exact integers, so the incremental values
  equal a recomputation from scratch (:meth:`ShrubEnsemble.rebuild_caches`, used after a restore).

Shrub training (CART on bins, breadth first, level by level): a level's nodes may split when they hold two
classes and at least ``2 * min_samples_leaf`` rows. Feature by feature, a *run* is a node's rows with one bin
(the device meets them in ``sorted_rows`` order). The threshold between two consecutive runs (the bin of
the first) is a candidate unless both runs hold one and the same class (Fayyad and Irani's boundary points: the
best split of a concave criterion lies on one, so this mostly drops thresholds that cannot win; it halves the
candidates on the benchmark streams). A candidate needs ``min_samples_leaf`` rows on each side; the split is the
best candidate, ties to the lowest feature, then the lowest threshold, and it must score strictly better than
the parent. Scores are exact:

* gini: maximise ``L2 / nL + R2 / nR`` (``L2`` = sum of squared left class counts), compared by cross
  multiplication in 64-bit integers (``num * best_den > best_num * den``; below 2**58 for B <= 4096); the
  parent's score is ``P2 / n``;
* entropy: minimise ``sum_sides xlog2x(n_side) - sum_k xlog2x(count_k)`` with ``xlog2x(c) = c * log2_q16(c)``.

Leaves hold ``round(count_k * 32768 / n)`` (half up). With 2 classes the two values sum to exactly 32768 (a
fraction ``count * 32768 / n`` with ``n <= 4096`` never ends in exactly one half), so a Gram term is
``floor(a_0 b_0 / 2**14) + 32768 - a_0 - b_0``, one product instead of two (the runtime's new-shrub column and
pair updates); a restored 2-class state must have such leaves (every leaf its shrubs reach). Children are stored
next to each other, nodes in breadth-first order, leaves in the order their nodes are visited.

Gradient steps (Jacobi: every weight moves by the gradient at the previous weights). With candidates k (the
active shrubs in rank order, then the new one), weights ``w`` in Q15, ``n`` = rows in the window, ``C`` classes,
``A`` = ``round(step_size * 65536)`` or, with ``step_size="adaptive"``, ``65536 // (K + 1)`` for K candidates::

      scale = floor(A * 2**15 / (n * C))                                 (once per step)
      m[k]  = sum_j w[j] * int32(gram[k, j]) - 2**15 * label_sum[k]      (int64: gradient sum, Q30)
      w[k] -= trunc(trunc(m[k] / 2**15) * scale / 2**30)                 (2 alpha times the mean gradient, Q15)
      w[k]  = clip(w[k], -2**17, 2**17)

``trunc`` rounds toward zero like C99 division. Against the earlier per-row residual form this rounds each row's
product sum once (in ``gram``) and divides by ``n * C`` through ``scale``; products stay below 2**62.

* Hard-L0: shrubs are ranked by weight, descending, ties to the older position; the first ``max_shrubs`` stay.
* Simplex projection (Wang & Carreira-Perpiñán) of the non-zero kept weights ``u`` (in rank order) in integers:
  ``rho`` is the largest ``j`` with ``j * u_j + 32768 - sum_{i<=j} u_i > 0``,
  ``lam = floor((32768 - S_rho) / rho)``, ``w_j = max(u_j + lam, 0)``, and the remainder
  ``32768 - S_rho - rho * lam`` (< rho) adds 1 to the first weights, so the weights sum to exactly 32768.
* The ensemble keeps the rank order; prediction is the shared ensemble rule of :mod:`edgestream.tree`. An empty
  ensemble predicts ``32768 // C`` for every class (class 0).
* Shrub storage: ``max_shrubs + 1`` slots of ``2**(max_depth+1) - 1`` nodes and ``2**max_depth`` leaf rows; a
  new shrub takes the lowest slot no active shrub uses. A step writes only the entries named here (the nodes
  and leaf rows a new shrub uses, the Gram entries of active slots, ...): the rest keep their stale values.
* Scratch (``split_stats``, ``work_weights``, ``rank``, ``cand_slot``) is the device's working memory within a
  step; it carries nothing from one step to the next and the specification does not use it. (``node_of`` and
  ``split_counts``, a shrub's rows and class totals while it grows, are caches: "Bounded work per call".)

Bounded work per call (``work_per_call = U``)
    A learn call appends its row to a queue of pending rows (``queue_bins``, ``queue_labels``, counters
    ``pending`` and ``queue_head``), then runs *pieces* of work while the next one fits in what is left of ``U``
    units (all of them with ``U = 0``): while a new-shrub job is under way (counter ``phase``) its next piece,
    else the oldest pending row's insertion into the window (everything the step above does before a new shrub:
    window, sorted lists, leaves, Gram and label sums, ``since_update``), which starts a job every
    ``update_every`` rows, in the lowest free pool slot (``job_slot``). A job's pieces: ``train``, one level of
    CART (the last, leaves-only level with the one before it; its leaves' values, their rows' leaf in
    ``leaf_index``, their terms in the slot's Gram diagonal entry and label sum; between pieces the level in the counters ``job_level``,
    ``level_first``, ``level_size``, ``n_nodes``, ``n_leaves``, every row's node in ``node_of`` as ``node << 8 |
    label`` (``0xFFFF`` once in a leaf; the last level's rows keep theirs) and the level's class totals in
    ``split_counts``); ``terms``, the Gram row and column (with 2 classes the runtime leaves the rows' class-0
    values of the new shrub in ``node_of``, and so does this module); ``weights``, the gradient steps and the
    prox. No row enters the window while a job runs, so every piece sees the window and the ensemble the job
    started from, and the pieces and insertions run in the order of the unspread step: once the queue is empty
    and no job is under way, the state is the one ``U = 0`` reaches after the same rows, field for field (the
    queue aside); only later. Predictions use the ensemble as it is, which lags the pending rows. ``node_of`` and
    ``split_counts`` are caches: a restore (``rebuild_caches``, ``es_shrubs_rebuild``) runs the job's pieces
    again from its start up to where it was.

    Units (:func:`piece_units`, from the configuration's sizes, not the data: a full window and ensemble; ``d``
    features, ``B`` rows, ``M`` shrubs, ``g`` = 1 leaf value a Gram term reads with 2 classes, else ``C``), about
    15 Cortex-M4F instructions each at 2 classes (measured): a row's insertion ``r = d B + M depth + M^2 g``; a
    ``train`` piece ``3 (d + 1) B`` (``max(depth, 1)`` of them); ``terms`` ``B M g / 2``; ``weights``
    ``burnin (M + 1)^2``. ``J`` is a whole job's units and ``w`` the largest piece. A piece is indivisible and a
    call runs it only when it fits, so a call runs at most ``U`` units (``last_units_``, host only), and one
    with work left runs more than ``U - w``. ``U`` keeps up when ``U >= w`` and ``k (U - w + 1) >= k r + J``
    for ``k = update_every`` (a row's insertion every call and a job every ``k`` calls fit in ``k`` calls'
    budgets): then the work left after a call stays below ``J + r - (U - w + 1)`` units, so the queue of
    ``(J + r - (U - w + 1)) // r + 1`` rows never overflows (a crafted state with a full queue drops the row). A
    smaller ``U`` is refused, naming the smallest that keeps up (:meth:`ShrubEnsemble.min_work_per_call`).
    **The default is automatic** (``None``): the smallest ``U`` that keeps up when it is below an unspread
    call's worst (``r + J``), else 0. So ``update_every = 1`` (every call trains a shrub: no call is cheaper to
    lend work to) stays unspread, and with ``update_every = k > 1`` no call runs more than ``r + J / k + w``
    units about, against the mean ``r + J / k``. Measured (QEMU, the 8 KiB plan on SEA with ``update_every =
    4, burnin = 1``: window 64, 16 shrubs of depth 4, 3 features; 1,500 rows learned in Python, then 80 calls;
    learn instructions mean / worst): at the automatic ``U`` = 2,248 units (a queue of 6 rows) Cortex-M4F
    20,201 / 31,335 (1.55x), Cortex-M0 37,352 / 55,295 (1.48x); with ``U = 0`` 20,241 / 62,817 (3.10x) and
    37,438 / 120,170 (3.21x). The worst calls grow two levels and insert a row or compute the Gram column
    (2,048 units: 15 Cortex-M4F and 27 Cortex-M0 instructions a unit).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..costs import CostTerms
from ..state import Field, RegionSpec, StateSpec
from ..task import CLASSIFICATION, REGRESSION
from ..tree import CRITERIA, LEAF_FEATURE, Q15_ONE, TreeEnsemble, tree_in_slot
from .base import (ALLOW_MISSING, TREE_OPTIONS, WORK_PER_CALL, BinnedOnlineLearner, DeviceState, Estimator,
                   LearnerSpec, OnlineClassification, Option, check_integer, restore_regions, step_size)

STATE_ARRAYS = ("window_bins", "window_labels", "queue_bins", "queue_labels", "nodes", "leaf_values", "roots",
                "weights")
MAX_WINDOW = 4096
MAX_SHRUBS = 64
MAX_DEPTH = 8
MAX_STEP = 256.0
WEIGHT_LIMIT = 2**17
UINT32 = 0xFFFFFFFF  # mask of the C's uint32 sums


IDLE, TRAIN, TERMS, WEIGHTS = range(4)  # the new-shrub job's next piece (counter ``phase``)
PIECES = (None, "train", "terms", "weights")  # the piece each phase runs next
NO_NODE = 0xFFFF  # node_of of a row in a leaf of the shrub being grown


def piece_units(window_size: int, max_shrubs: int, max_depth: int, burnin: int, n_features: int,
                n_classes: int) -> dict:
    """Units of each piece of work ("Bounded work per call"), about 15 Cortex-M4F instructions each (measured at 2
    classes): inserting a pending row (its place in every feature's sorted list, ``d B``, the active shrubs'
    walks, ``M depth``, and its Gram terms, ``M^2 g``); a level of CART (``d`` feature scans and the routing of
    the window's rows, ``3 (d + 1) B``); the new shrub's Gram column, ``B M g / 2``; the gradient steps and the
    prox, ``burnin (M + 1)^2``. The sizes are the configuration's (full window, full ensemble), so the units
    bound the work and do not depend on the data."""
    b, m, g = window_size, max_shrubs, 1 if n_classes == 2 else n_classes
    return {"row": n_features * b + m * max_depth + m * m * g, "train": 3 * (n_features + 1) * b,
            "terms": max(b * m * g // 2, 1), "weights": burnin * (m + 1) ** 2}


def job_pieces(units: dict, max_depth: int) -> tuple[int, ...]:
    """Units of a new-shrub job's pieces in order: its ``train`` pieces (one per level, the last two levels in
    one), its ``terms`` and ``weights``."""
    return (units["train"],) * max(max_depth, 1) + (units["terms"], units["weights"])


def job_units(units: dict, max_depth: int) -> int:
    """Units of a whole new-shrub job (:func:`job_pieces`)."""
    return sum(job_pieces(units, max_depth))


@cache
def most_units_per_call(row: int, job: tuple[int, ...], update_every: int, budget: int) -> int:
    """The most units a spread learn call (``budget`` U > 0) runs once its schedule repeats: every call queues a
    row, then runs whole pieces, the job's (units ``job``, in order) before a pending row's (``row``), while the
    next one fits in what is left of U, and every ``update_every`` rows a job starts. Whole pieces rarely fill U:
    the most is often well below it."""
    pending, done, since = 0, len(job), 0  # rows queued, pieces of the job run, rows since the last job
    first_call, runs = {}, []
    while (pending, done, since) not in first_call:  # the state before a call repeats: the schedule's period
        first_call[pending, done, since] = len(runs)
        pending, run = pending + 1, 0
        while done < len(job) or pending:
            piece = job[done] if done < len(job) else row
            if run + piece > budget:
                break
            run += piece
            if done < len(job):
                done += 1
            else:
                pending, since = pending - 1, since + 1
                if since == update_every:
                    done, since = 0, 0
        runs.append(run)
    return max(runs[first_call[pending, done, since]:])


def _nodes_per_shrub(config: dict) -> int:
    return 2 ** (config["max_depth"] + 1) - 1


def _slots(config: dict) -> int:
    return config["max_shrubs"] + 1


def _target_bytes(config: dict) -> int:
    """Bytes of a row's target: a label, or a regressor's (one value per leaf) int16 code."""
    return 2 if config["n_classes"] == 1 else 1


STATE = StateSpec(
    prefix="es_shrubs",
    title="Shrub Ensembles",
    tasks=(CLASSIFICATION, REGRESSION),
    config=(
        Field("n_features", "uint8_t"), Field("n_classes", "uint8_t", "values per leaf: the classes, 1 for a regressor"),
        Field("max_depth", "uint8_t"), Field("criterion", "uint8_t", "ES_GINI or ES_ENTROPY (a regressor: unused)"), Field("window_size", "uint16_t", "B"),
        Field("max_shrubs", "uint16_t", "M; the pool has M + 1 slots"), Field("min_samples_leaf", "uint16_t"),
        Field("burnin", "uint16_t", "gradient steps per new shrub"), Field("update_every", "uint16_t"),
        Field("step_q16", "uint32_t", "gradient step in Q16; 0 = adaptive, 65536 / (shrubs + 1)"),
        Field("work_per_call", "uint32_t", "units of work per learn call; 0 = all of it"),
        Field("queue_size", "uint16_t", "rows the queue of pending rows holds"),
        Field("unit_row", "uint32_t", "units of inserting one pending row"),
        Field("unit_train", "uint32_t", "units of training a new shrub (CART)"),
        Field("unit_terms", "uint32_t", "units of the new shrub's Gram column"),
        Field("unit_weights", "uint32_t", "units of the gradient steps and the prox"),
    ),
    counters=(
        Field("head", "uint16_t", "next window row to write"), Field("count", "uint16_t", "rows in the window"),
        Field("n_shrubs", "uint16_t", "active shrubs: roots[0..n_shrubs) and weights[0..n_shrubs)"),
        Field("since_update", "uint16_t", "samples since the last new shrub"),
        Field("pending", "uint16_t", "rows in the queue, not yet learned"),
        Field("queue_head", "uint16_t", "the oldest pending row's place in the queue"),
        Field("phase", "uint16_t", "the new-shrub job's next piece: 0 none, 1 train, 2 terms, 3 weights"),
        Field("job_slot", "uint16_t", "the new shrub's pool slot while its job runs (0 without a job)"),
        Field("job_level", "uint16_t", "levels of the new shrub grown"),
        Field("level_first", "uint16_t", "the new shrub's first node of the level being grown"),
        Field("level_size", "uint16_t", "nodes of the level being grown"),
        Field("n_nodes", "uint16_t", "nodes of the new shrub so far"),
        Field("n_leaves", "uint16_t", "leaves of the new shrub so far"),
    ),
    regions=(
        RegionSpec("window_bins", "window", "uint8_t", lambda c: c["window_size"] * c["n_features"], "B x features"),
        RegionSpec("window_labels", "window", "uint8_t", lambda c: c["window_size"] * _target_bytes(c),
                   "B (a regressor: 2 B, int16 target codes, low byte first)"),
        RegionSpec("queue_bins", "queue", "uint8_t", lambda c: c["queue_size"] * c["n_features"],
                   "queue x features: rows waiting to be learned"),
        RegionSpec("queue_labels", "queue", "uint8_t", lambda c: c["queue_size"] * _target_bytes(c),
                   "queue (a regressor: 2 x queue)"),
        RegionSpec("sorted_rows", "window", "uint16_t", lambda c: c["n_features"] * c["window_size"],
                   "features x B: window rows by (bin, row)"),
        RegionSpec("nodes", "node pool", "es_node", lambda c: _slots(c) * _nodes_per_shrub(c),
                   "(M + 1) x (2^(depth+1) - 1)"),
        RegionSpec("leaf_values", "leaves", "uint16_t", lambda c: _slots(c) * 2 ** c["max_depth"] * c["n_classes"],
                   "(M + 1) x 2^depth x classes, Q15"),
        RegionSpec("roots", "weights", "uint16_t", _slots, "M + 1"),
        RegionSpec("weights", "weights", "uint16_t", _slots, "M + 1, Q15"),
        RegionSpec("leaf_index", "cache", "uint8_t", lambda c: c["window_size"] * _slots(c),
                   "B x (M + 1): leaf of each window row in each slot's shrub"),
        RegionSpec("gram", "cache", "uint32_t", lambda c: _slots(c) ** 2, "(M + 1) x (M + 1), Q15 sums"),
        RegionSpec("label_sum", "cache", "uint32_t", _slots, "M + 1, Q15 sums"),
        RegionSpec("node_of", "cache", "uint16_t", lambda c: c["window_size"],
                   "B: rows' nodes while CART runs, then (2 classes) the new shrub's class-0 values"),
        RegionSpec("split_counts", "cache", "uint16_t", lambda c: 2 ** c["max_depth"] * c["n_classes"],
                   "2^depth x classes: class totals of a level's nodes"),
        RegionSpec("split_stats", "scratch", "uint32_t",
                   lambda c: 2 ** max(c["max_depth"] - 1, 0) * (10 + c["n_classes"]),
                   "2^(depth-1) x (10 + classes): scan state of a level's nodes"),
        RegionSpec("work_weights", "scratch", "int32_t", lambda c: 2 * _slots(c), "2 x (M + 1)"),
        RegionSpec("rank", "scratch", "uint8_t", _slots, "M + 1"),
        RegionSpec("cand_slot", "scratch", "uint8_t", _slots, "M + 1"),
    ),
)

CACHE_ARRAYS = tuple(r.name for r in STATE.regions if r.group == "cache")
COUNTER = {field.name: i for i, field in enumerate(STATE.counters)}  # a counter's place in ``_counters``
SCRATCH_ARRAYS = tuple(r.name for r in STATE.regions if r.group == "scratch")


# -- exact integer arithmetic --------------------------------------------------------------------------------------

def log2_q16(x: int) -> int:
    """log2(x) in Q16 for an integer x >= 1: the exponent, then 16 squarings of the Q30 mantissa (es_log2_q16)."""
    exponent = x.bit_length() - 1
    y = x << (30 - exponent) if exponent <= 30 else x >> (exponent - 30)  # mantissa in [1, 2), Q30
    result = exponent << 16
    for bit in range(15, -1, -1):
        y = (y * y) >> 30
        if y >= 2 << 30:
            y >>= 1
            result += 1 << bit
    return result


@cache
def xlog2x_table() -> np.ndarray:
    """``xlog2x(c) = c * log2_q16(c)`` (0 for c <= 1) of every count of a window, int64."""
    return np.array([c * log2_q16(c) if c > 1 else 0 for c in range(MAX_WINDOW + 1)], dtype=np.int64)


def pair_terms(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``floor(sum_c a[..., i, c] * b[..., j, c] / 2**15)`` for every pair of Q15 leaf rows ``a[..., i, :]`` and
    ``b[..., j, :]``, the sum wrapping at 2**32 as the C's uint32 does."""
    products = a.astype(np.int64) @ np.swapaxes(b, -1, -2).astype(np.int64)
    return (products & UINT32) >> 15


def window_pair_sums(h: np.ndarray, others: np.ndarray, terms=pair_terms) -> np.ndarray:
    """Gram entries of one shrub with others over the window: ``sum_rows terms(h[row], others[row, j])``
    (uint32), for leaf rows ``h`` [rows, C] and ``others`` [rows, K, C]."""
    return terms(h[:, None, :], others)[:, 0, :].sum(axis=0) & UINT32


# -- shrub training: CART on the window's bins ------------------------------------------------------------------

def node_class_counts(node_of: np.ndarray, labels: np.ndarray, level_size: int, n_classes: int) -> np.ndarray:
    """Class counts [level_size, C] of the level's nodes (rows with node -1 are in leaves already)."""
    playing = node_of >= 0
    keys = node_of[playing] * n_classes + labels[playing]
    return np.bincount(keys, minlength=level_size * n_classes).reshape(level_size, n_classes)


def split_candidates(bins, labels, node_of, level_size: int, n_classes: int):
    """The level's candidate splits: for every feature and node, the thresholds between two consecutive runs of
    the node's rows (rows of one bin), except between two runs of one and the same class. Returns the arrays
    node, feature, threshold and left class counts [candidates, C], ordered by feature, node, threshold."""
    playing = np.flatnonzero(node_of >= 0)
    group = np.arange(bins.shape[1]) * level_size + node_of[playing][:, None]  # [rows, features]: feature, node
    keys, counts = np.unique(((group * 256 + bins[playing]) * n_classes + labels[playing][:, None]).ravel(),
                             return_counts=True)  # the class counts of every (feature, node, bin), in that order
    run_of_key = keys // n_classes  # a run: (feature, node, bin)
    new_run = run_of_key[1:] != run_of_key[:-1]
    first_of_run = np.flatnonzero(np.concatenate(([True], new_run)))
    last_of_run = np.flatnonzero(np.concatenate((new_run, [True])))
    run_keys = run_of_key[first_of_run]
    run_counts = np.zeros((len(run_keys), n_classes), dtype=np.int64)
    run_counts[np.searchsorted(run_keys, run_of_key), keys % n_classes] = counts
    run_class = np.where(first_of_run == last_of_run, keys[first_of_run] % n_classes, -1)  # -1: mixed
    run_group = run_keys // 256
    counts_before = np.zeros((len(run_keys) + 1, n_classes), dtype=np.int64)  # of the runs before, then all
    np.cumsum(run_counts, axis=0, out=counts_before[1:])
    left = counts_before[1:] - counts_before[np.searchsorted(run_group, run_group)]  # the group's runs up to each
    boundary = (run_group[:-1] == run_group[1:]) & ((run_class[:-1] < 0) | (run_class[:-1] != run_class[1:]))
    at = np.flatnonzero(boundary)
    return run_group[at] % level_size, run_group[at] // level_size, run_keys[at] % 256, left[at]


def fraction_key(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``floor(num / den * 2**45)`` of fractions ``0 <= num / den < 2**17`` with ``0 < den <= 2**22``, by long
    division in int64. Two different such fractions differ by at least ``1 / (den_1 den_2) >= 2**-44``, so
    their keys differ: the keys order the fractions exactly, as the C's cross multiplication does."""
    quotient, remainder = np.divmod(num, den)
    high, remainder = np.divmod(remainder << 23, den)
    return (quotient << 45) + (high << 22) + (remainder << 22) // den


def split_keys(left: np.ndarray, right: np.ndarray, criterion: str) -> np.ndarray:
    """Exact scores (larger is better, int64) of the candidates with class counts ``left`` and ``right``
    [candidates, C]: gini ``L2 / nL + R2 / nR`` (:func:`fraction_key`), or minus the entropy cost."""
    n_left, n_right = left.sum(axis=1), right.sum(axis=1)
    if criterion == "gini":
        return fraction_key((left**2).sum(axis=1) * n_right + (right**2).sum(axis=1) * n_left, n_left * n_right)
    xlog2x = xlog2x_table()
    return xlog2x[left].sum(axis=1) + xlog2x[right].sum(axis=1) - xlog2x[n_left] - xlog2x[n_right]


def node_keys(counts: np.ndarray, criterion: str) -> np.ndarray:
    """Exact scores of unsplit nodes with class counts ``counts`` [nodes, C], comparable to :func:`split_keys`:
    gini ``P2 / n``, or minus the entropy cost."""
    total = counts.sum(axis=1)
    if criterion == "gini":
        return fraction_key((counts**2).sum(axis=1), total)
    xlog2x = xlog2x_table()
    return xlog2x[counts].sum(axis=1) - xlog2x[total]


def best_splits(bins, labels, node_of, counts, criterion: str, min_samples_leaf: int):
    """The feature and threshold of the split of every node of the level (feature -1: the node stays a leaf)."""
    node, feature, threshold, left = split_candidates(bins, labels, node_of, *counts.shape)
    right = counts[node] - left
    allowed = (left.sum(axis=1) >= min_samples_leaf) & (right.sum(axis=1) >= min_samples_leaf)
    node, feature, threshold = node[allowed], feature[allowed], threshold[allowed]
    key = split_keys(left[allowed], right[allowed], criterion)
    return choose_splits(node, feature, threshold, key, node_keys(counts, criterion))


def choose_splits(node, feature, threshold, key, parent_key):
    """Every node's best candidate (``key``: larger is better; ties to the first, the lowest feature then
    threshold, in the candidates' order), kept if strictly better than its parent's ``parent_key``: the feature
    and threshold of the split of every node (feature -1: the node stays a leaf)."""
    by_node = np.lexsort((-key, node))  # stable: among equal scores the lowest feature, then threshold first
    best = by_node[np.unique(node[by_node], return_index=True)[1]]  # every node's first of its sorted list
    best = best[key[best] > parent_key[node[best]]]  # strictly better than the parent
    split_feature = np.full(len(parent_key), -1)
    split_threshold = np.zeros(len(parent_key), dtype=np.int64)
    split_feature[node[best]] = feature[best]
    split_threshold[node[best]] = threshold[best]
    return split_feature, split_threshold


def leaf_values(counts: np.ndarray) -> np.ndarray:
    """Q15 class probabilities of nodes with class counts ``counts`` [nodes, C] (none empty), rounded half up."""
    total = counts.sum(axis=1, keepdims=True)
    return (counts * Q15_ONE + total // 2) // total


def route_rows(bins, node_of, feature, threshold, first_child) -> np.ndarray:
    """Every row's node in the next level (-1 for the rows whose node became a leaf)."""
    playing = np.flatnonzero(node_of >= 0)
    node = node_of[playing]
    right = bins[playing, np.maximum(feature[node], 0)] > threshold[node]
    routed = np.full_like(node_of, -1)
    routed[playing] = np.where(first_child[node] >= 0, first_child[node] + right, -1)
    return routed


# -- the ensemble's weights ------------------------------------------------------------------------------------

def gradient_steps(weights, gram, label_sum, alpha_q16: int, n_rows: int, n_classes: int, burnin: int):
    """``burnin`` Jacobi steps on the window's MSE (module docstring) from the candidates' Q15 ``weights``,
    with their ``gram`` [K, K] and ``label_sum`` [K] (uint32); int64 weights."""
    gram = gram.astype(np.int32).astype(np.int64)  # the C reads the Gram and label sums as int32
    target = label_sum.astype(np.int32).astype(np.int64) << 15
    scale = (alpha_q16 << 15) // (n_rows * n_classes)
    w = np.asarray(weights, dtype=np.int64)
    for _ in range(burnin):
        gradient = gram.dot(w) - target
        step = ((np.abs(gradient) >> 15) * scale) >> 30  # both divisions round toward zero, as in C99
        w = np.minimum(np.maximum(w - np.where(gradient < 0, -step, step), -WEIGHT_LIMIT), WEIGHT_LIMIT)
    return w


def simplex_q15(u: list[int]) -> list[int]:
    """Integer projection of weights ``u`` (sorted descending) onto {w >= 0, sum w = 32768}."""
    total = 0
    rho, total_rho = 1, u[0]
    for j, value in enumerate(u, start=1):
        total += value
        if j * value + Q15_ONE - total > 0:
            rho, total_rho = j, total
    lam = (Q15_ONE - total_rho) // rho  # Python's // is floor division
    remainder = Q15_ONE - total_rho - rho * lam
    projected = [max(value + lam, 0) for value in u]
    for j in range(remainder):
        projected[j] += 1
    return projected


def prox(weights: list[int], max_shrubs: int) -> list[tuple[int, int]]:
    """Hard-L0 and simplex projection: (candidate, Q15 weight) of the shrubs kept, in rank order."""
    rank = sorted(range(len(weights)), key=lambda k: -weights[k])  # a stable sort: ties to the older position
    support = [k for k in rank[:max_shrubs] if weights[k] != 0]
    if not support:
        return []
    projected = simplex_q15([weights[k] for k in support])
    return [(k, w) for k, w in zip(support, projected) if w > 0]


def _counter(name: str) -> property:
    return property(lambda self: int(self._counters[COUNTER[name]]))


class Shrubs(BinnedOnlineLearner, Estimator, DeviceState):
    """What the shrubs' classifier (:class:`ShrubEnsemble`) and regressor share: an online ensemble of small trees
    trained on a sliding window, learning in fixed memory. The parameters are checked when the learner starts
    (:meth:`fit_bins`), not when it is made, as scikit-learn's are.

    Parameters
    ----------
    window_size : samples in the sliding window (B), 1..4096.
    max_shrubs : ensemble size after the prox (M), 1..64.
    max_depth : depth of each shrub, 0..8.
    step_size : gradient step, a float in (0, 256) or ``"adaptive"`` (1 / (shrubs + 1)).
    burnin : gradient steps after each new shrub, 1..255.
    update_every : a new shrub every this many samples (1 as in the paper).
    criterion, min_samples_leaf : shrub training, see :class:`edgestream.TreeClassifier`.
    max_bins, binning, input_dtype : feature quantization, fitted once by :meth:`fit_bins` (the device ships
        with fixed edges).
    allow_missing : treat NaN features as missing values (their own bin) instead of refusing them.
    work_per_call : None (automatic), 0 (every call learns its row and trains whole) or the units of work per
        ``learn`` call (see "Bounded work per call" in the module docstring).
    """

    state_spec = STATE
    engine_state = tuple(r.name for r in STATE.regions) + ("_counters",)

    def __init__(self, window_size: int = 64, max_shrubs: int = 16, max_depth: int = 4, step_size="adaptive",
                 burnin: int = 5, update_every: int = 1, criterion: str = "gini", min_samples_leaf: int = 1,
                 max_bins: int = 64, binning: str = "quantile", input_dtype: str = "float32",
                 allow_missing: bool = False, work_per_call: int | None = None):
        self.window_size = window_size
        self.max_shrubs = max_shrubs
        self.max_depth = max_depth
        self.step_size = step_size
        self.burnin = burnin
        self.update_every = update_every
        self.criterion = criterion
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.binning = binning
        self.input_dtype = input_dtype
        self.allow_missing = allow_missing
        self.work_per_call = work_per_call

    # -- parameters and layout ---------------------------------------------------------------------------------

    def _check_params(self):
        check_integer(self, "window_size", 1, MAX_WINDOW)
        check_integer(self, "max_shrubs", 1, MAX_SHRUBS)
        check_integer(self, "max_depth", 0, MAX_DEPTH)
        check_integer(self, "burnin", 1, 255)
        check_integer(self, "update_every", 1, 65535)
        check_integer(self, "min_samples_leaf", 1, MAX_WINDOW)
        if self.work_per_call is not None:
            check_integer(self, "work_per_call", 0, 2**32 - 1)
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion={self.criterion!r} must be one of {sorted(CRITERIA)}")
        if self.step_size != "adaptive" and not (isinstance(self.step_size, (int, float)) and
                                                 0 < self.step_size < MAX_STEP and round(self.step_size * 65536) > 0):
            raise ValueError(f"step_size={self.step_size!r} must be 'adaptive' or a number in (0, {MAX_STEP:g})")

    @property
    def nodes_per_shrub(self) -> int:
        return 2 ** (self.max_depth + 1) - 1

    @property
    def leaves_per_shrub(self) -> int:
        return 2**self.max_depth

    @property
    def step_q16(self) -> int:
        """The fixed step in Q16, or 0 for the adaptive step."""
        return 0 if self.step_size == "adaptive" else int(round(self.step_size * 65536))

    def units(self, n_features: int, n_classes: int | None = None) -> dict:
        """:func:`piece_units` of this configuration (classes: the set ones, else ``n_classes``, else 2)."""
        c = self._columns if n_classes is None and hasattr(self, self._output_attribute) else (n_classes or 2)
        return piece_units(self.window_size, self.max_shrubs, self.max_depth, self.burnin, n_features, c)

    def min_work_per_call(self, n_features: int, n_classes: int | None = None) -> int:
        """The smallest ``work_per_call`` that keeps up (``U >= w`` and ``k (U - w + 1) >= k r + J``: see
        "Bounded work per call")."""
        units = self.units(n_features, n_classes)
        job = job_units(units, self.max_depth)
        return -(-job // self.update_every) + units["row"] + max(units.values()) - 1

    def units_per_call(self, n_features: int, n_classes: int | None = None) -> int:
        """The units of work per ``learn`` call: ``work_per_call``, or for ``None`` the smallest that keeps up
        when that is below an unspread call's worst (a row and a whole job), else 0; a ``work_per_call`` that
        does not keep up is refused."""
        least = self.min_work_per_call(n_features, n_classes)
        if self.work_per_call is None:
            units = self.units(n_features, n_classes)
            return least if least < units["row"] + job_units(units, self.max_depth) else 0
        if 0 < self.work_per_call < least:
            raise ValueError(f"work_per_call={self.work_per_call} must be 0 or at least {least}: smaller, the rows "
                             f"pending while a new shrub trains may pile up (update_every={self.update_every})")
        return self.work_per_call

    def queue_size(self, n_features: int, n_classes: int | None = None) -> int:
        """Rows of the queue: those pending after a call, at most ``(J + r - (U - w + 1)) / r``, and the next
        call's row (1 with ``U = 0``: every call learns its row)."""
        work = self.units_per_call(n_features, n_classes)
        if work == 0:
            return 1
        units = self.units(n_features, n_classes)
        job = job_units(units, self.max_depth)
        return max(job + units["row"] - (work - max(units.values()) + 1), 0) // units["row"] + 1

    def device_config(self, n_features: int | None = None, n_classes: int | None = None) -> dict:
        """The values of the C ``es_shrubs_config`` (features and classes default to the fitted ones)."""
        d = self.n_features_ if n_features is None else n_features
        c = self._columns if n_classes is None else n_classes
        queue = self.queue_size(d, c)
        if queue > 65535:
            raise ValueError(f"the queue of pending rows needs {queue} rows, at most 65535")
        return {
            "n_features": d, "n_classes": c,
            "max_depth": self.max_depth, "criterion": CRITERIA[self.criterion], "window_size": self.window_size,
            "max_shrubs": self.max_shrubs, "min_samples_leaf": self.min_samples_leaf, "burnin": self.burnin,
            "update_every": self.update_every, "step_q16": self.step_q16,
            "work_per_call": self.units_per_call(d, c), "queue_size": queue,
            **{f"unit_{k}": v for k, v in self.units(d, c).items()},
        }

    def summary(self) -> str:
        """The configuration and its device state, in a few words."""
        return (f"window {self.window_size}, {self.max_shrubs} shrubs of depth {self.max_depth}, "
                f"model state {self.state_bytes():,} bytes")

    def device_state(self) -> tuple[dict, dict] | None:
        """The state a bundle exported now starts from: flat arrays of every region (scratch zero) and the
        counters; None before the bins and classes are set."""
        if not hasattr(self, "window_bins"):
            return None
        arrays = {name: zeros if name in SCRATCH_ARRAYS else getattr(self, name).reshape(-1)
                  for name, zeros in self.layout().zeros().items()}
        return arrays, {field.name: getattr(self, field.name) for field in STATE.counters}

    # -- setup -----------------------------------------------------------------------------------------------

    def reset(self) -> None:
        """Empty window and ensemble; the bins and classes stay. The regions are attributes (scratch included,
        for the layout), the tables 2-D: window_bins [B, d], sorted_rows [d, B], leaf_values [leaf rows, C],
        leaf_index [B, M + 1], gram [M + 1, M + 1]."""
        self._drop_engine()
        self._check_params()
        d, c, slots = self.n_features_, self._columns, self.max_shrubs + 1
        arrays = self.layout().zeros()
        shapes = {"window_bins": (self.window_size, d), "sorted_rows": (d, self.window_size),
                  "leaf_values": (-1, c), "leaf_index": (self.window_size, slots), "gram": (slots, slots)}
        for name, array in arrays.items():
            setattr(self, name, array.reshape(shapes.get(name, -1)))
        self.queue_bins = self.queue_bins.reshape(-1, d)
        self._counters = np.zeros(len(STATE.counters), dtype=np.uint16)  # in the order of STATE.counters
        self.units_per_call_ = self.units_per_call(d)
        self._units = self.units(d)

    head, count, n_shrubs, since_update = _counter("head"), _counter("count"), _counter("n_shrubs"), \
        _counter("since_update")
    pending, queue_head, phase, job_slot = _counter("pending"), _counter("queue_head"), _counter("phase"), \
        _counter("job_slot")
    job_level = _counter("job_level")
    level_first, level_size, n_nodes, n_leaves = _counter("level_first"), _counter("level_size"), \
        _counter("n_nodes"), _counter("n_leaves")

    def _set(self, **counters) -> None:
        for name, value in counters.items():
            self._counters[COUNTER[name]] = value

    def saved_arrays(self) -> dict:
        """The whole learning state, as a model file stores it."""
        self._check_ready()
        return {name: getattr(self, name) for name in STATE_ARRAYS} | {"counters": self._counters.copy()}

    def restore_arrays(self, arrays: dict) -> None:
        """Take a saved state (after ``bins_`` and ``classes_`` are set); refuses tables of the wrong layout
        (an older one too: without the queue, its counters and regions)."""
        self.reset()
        missing = [name for name in STATE_ARRAYS if name not in arrays]
        if missing or len(arrays["counters"]) != len(STATE.counters):
            raise ValueError(f"the saved state has {len(arrays['counters'])} counters and lacks {missing}: this "
                             f"learner keeps {len(STATE.counters)} counters and every region of {STATE_ARRAYS} "
                             "(a state of an older layout)")
        restore_regions(self, STATE_ARRAYS, arrays)
        head, count, n_shrubs, since_update, pending, queue_head, phase, job_slot, job_level = \
            (int(v) for v in arrays["counters"][:9])
        if not (head < self.window_size and count <= self.window_size and n_shrubs <= self.max_shrubs
                and since_update < self.update_every and (count == self.window_size or head == count)):
            raise ValueError(f"inconsistent counters head={head} count={count} shrubs={n_shrubs} "
                             f"since_update={since_update}")
        queue = len(self.queue_targets)
        if not (pending < queue and queue_head < queue and phase <= WEIGHTS
                and (phase == IDLE or count > 0)
                and job_level < (max(self.max_depth, 1) if phase == TRAIN else 1)):
            raise ValueError(f"inconsistent counters pending={pending} queue_head={queue_head} phase={phase} "
                             f"job_level={job_level} (queue of {queue} rows, count={count}, "
                             f"since_update={since_update})")
        active = (self.roots[:n_shrubs].astype(np.int64) // self.nodes_per_shrub).tolist()
        if job_slot != 0 if phase == IDLE else job_slot > self.max_shrubs or job_slot in active:
            raise ValueError(f"job_slot={job_slot} must be {'0 without a job' if phase == IDLE else 'a free slot'}")
        self._check_targets(self.queue_targets, "queue")
        roots = self.roots[:n_shrubs].astype(np.int64)
        slots = roots // self.nodes_per_shrub
        if ((roots % self.nodes_per_shrub).any() or len(set(roots.tolist())) != n_shrubs
                or (slots > self.max_shrubs).any()):
            raise ValueError("shrub roots must be distinct slot starts")
        if not all(tree_in_slot(self.nodes, int(slot), self.nodes_per_shrub, self.leaves_per_shrub, self.n_features_)
                   for slot in slots):
            raise ValueError("an active shrub's nodes or leaves leave its pool slot")
        self._check_targets(self.window_targets, "window")
        if n_shrubs:
            self._check_leaves(self._ensemble(n_shrubs).validate())
        self._counters[:] = arrays["counters"]
        self.rebuild_caches()

    # -- the task's parts (a classifier's here; ShrubRegressor has a regressor's) ------------------------------

    @property
    def _columns(self) -> int:
        """Values per leaf (C): the classes."""
        return len(self.classes_)

    @property
    def window_targets(self) -> np.ndarray:
        """The window rows' targets: their labels."""
        return self.window_labels

    @property
    def queue_targets(self) -> np.ndarray:
        return self.queue_labels

    def _check_code(self, label: int) -> None:
        if not 0 <= label < len(self.classes_):
            raise ValueError(f"label index {label} is outside 0..{len(self.classes_) - 1}")

    def _check_targets(self, targets: np.ndarray, where: str) -> None:
        if (targets >= len(self.classes_)).any():
            raise ValueError(f"{where} labels out of range")

    def _ensemble(self, n: int | None = None) -> TreeEnsemble:
        """The first ``n`` shrubs (default: the active ones) as a tree ensemble."""
        n = self.n_shrubs if n is None else n
        return TreeEnsemble(self.nodes, self.roots[:n], self.weights[:n], self.leaf_values, self.n_features_)

    def _check_leaves(self, leaves: np.ndarray) -> None:
        """The leaf rows the active shrubs reach: 2-class leaves complementary, as learned ones are."""
        if self._columns == 2 and (self.leaf_values[leaves].astype(np.int64).sum(axis=1) != Q15_ONE).any():
            raise ValueError(f"the two class probabilities of a leaf must sum to {Q15_ONE}, as learned leaves do")

    def _tag_labels(self, n: int) -> np.ndarray:
        """What a row's node_of tag carries beside its node while a shrub grows: its label."""
        return self.window_labels[:n].astype(np.int64)

    def _may_split(self, counts: np.ndarray) -> np.ndarray:
        """The level's nodes (class counts [nodes, C]) that may split: those of two classes or more."""
        return (counts > 0).sum(axis=1) > 1

    def _best_splits(self, bins, labels, node_of, counts):
        return best_splits(bins, labels, node_of, counts, self.criterion, self.min_samples_leaf)

    @staticmethod
    def _pair_terms(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return pair_terms(a, b)

    @staticmethod
    def _label_terms(h: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Label terms [rows, K] of rows with leaf values ``h`` [rows, K, C]: each leaf's value of the row's label."""
        return h[np.arange(len(h)), :, np.asarray(labels, dtype=np.int64)].astype(np.int64)

    # -- the state's parts -----------------------------------------------------------------------------------

    def _active_slots(self) -> np.ndarray:
        """Pool slots of the active shrubs, in rank order."""
        return self.roots[: self.n_shrubs].astype(np.int64) // self.nodes_per_shrub

    def _leaves(self, rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Leaf row [rows, slots] that the shrub of every slot reaches for every binned row (the tree rule)."""
        roots = (slots * self.nodes_per_shrub).astype(np.uint16)
        shrubs = TreeEnsemble(self.nodes, roots, np.ones_like(roots), self.leaf_values, self.n_features_)
        return shrubs.apply(rows).astype(np.int64)

    def _cached_leaf_values(self, rows, slots: np.ndarray) -> np.ndarray:
        """Leaf values [rows, slots, C] of window rows in the shrubs of ``slots``, from ``leaf_index``."""
        return self.leaf_values[(slots << self.max_depth) + self.leaf_index[rows][..., slots]]

    def _sort_window_rows(self) -> None:
        """``sorted_rows[f, :count]``: the window's rows by (bin of feature f, row)."""
        n = self.count
        self.sorted_rows[:, :n] = np.argsort(self.window_bins[:n], axis=0, kind="stable").T

    def _move_pair_terms(self, row: int, slots: np.ndarray, replaced) -> None:
        """Window row ``row`` was written: its terms in the Gram sums and label sums of the active ``slots`` move
        from the row it replaced (``(leaf values [K, C], label)``, None when the window was not full)."""
        h = self._cached_leaf_values(row, slots)
        gram_change = self._pair_terms(h, h)
        label_change = self._label_terms(h[None], self.window_targets[row:row + 1])[0]
        if replaced is not None:
            old, old_target = replaced
            gram_change -= self._pair_terms(old, old)
            label_change -= self._label_terms(old[None], np.array([old_target]))[0]
        block = np.ix_(slots, slots)
        self.gram[block] = (self.gram[block] + gram_change) & UINT32
        self.label_sum[slots] = (self.label_sum[slots] + label_change) & UINT32

    def _free_slot(self, active: np.ndarray) -> int:
        """The lowest pool slot no active shrub uses (the pool has one more slot than shrubs)."""
        return min(set(range(self.max_shrubs + 1)) - set(active.tolist()))

    def _train_piece(self, slot: int) -> None:
        """A level of the new shrub, and the last level too when it comes next (its nodes are all leaves)."""
        self._train_level(slot)
        if self.phase == TRAIN and self.job_level == self.max_depth:
            self._train_level(slot)

    def _train_level(self, slot: int) -> None:
        """One level of the new shrub (CART on the window, breadth first) in pool slot ``slot``: the level's nodes,
        its leaves (their values, their rows' leaf in ``leaf_index``, their rows' Gram diagonal and label terms),
        then the next level's rows in ``node_of`` (``node << 8 | label``, :data:`NO_NODE` in a leaf; the rows of
        the last level keep theirs) and class totals in ``split_counts``; the shrub done, the job goes on."""
        n, c = self.count, self._columns
        bins, labels = self.window_bins[:n], self._tag_labels(n)
        if self.job_level == 0:
            self.node_of[:n] = labels
            self.split_counts[:c] = np.bincount(labels, minlength=c)
            self._set(level_first=0, level_size=1, n_nodes=1, n_leaves=0)
            self.label_sum[slot] = self.gram[slot, slot] = 0
        size, first = self.level_size, self.level_first
        tags = self.node_of[:n].astype(np.int64)
        node_of = np.where(tags == NO_NODE, -1, tags >> 8)
        counts = self.split_counts[: size * c].reshape(size, c).astype(np.int64)
        feature, threshold = np.full(size, -1), np.zeros(size, dtype=np.int64)
        may_split = self._may_split(counts) & (counts.sum(axis=1) >= 2 * self.min_samples_leaf)
        last = self.job_level == self.max_depth
        if not last and may_split.any():
            playing = np.where((node_of >= 0) & may_split[np.maximum(node_of, 0)], node_of, -1)
            feature, threshold = self._best_splits(bins, labels, playing, counts)
        is_split = feature >= 0
        first_child = np.where(is_split, 2 * np.cumsum(is_split) - 2, -1)  # within the next level
        leaf = self.n_leaves + np.cumsum(~is_split) - 1  # of the nodes that stay leaves
        node_base, leaf_base = slot * self.nodes_per_shrub, slot * self.leaves_per_shrub
        for v in range(size):
            self.nodes[node_base + first + v] = ((int(feature[v]), int(threshold[v]),
                                                  node_base + self.n_nodes + int(first_child[v])) if is_split[v]
                                                 else (LEAF_FEATURE, 0, leaf_base + int(leaf[v])))
        self._grow_leaves(slot, counts[~is_split], leaf[~is_split], np.flatnonzero(~is_split), node_of)
        in_leaf = (node_of >= 0) & ~is_split[np.maximum(node_of, 0)]
        self.leaf_index[:n, slot][in_leaf] = leaf[node_of[in_leaf]]
        splits = int(is_split.sum())
        if not last:
            routed = route_rows(bins, node_of, feature, threshold, first_child)
            self.node_of[:n] = np.where(routed >= 0, routed * 256 + labels, np.where(node_of >= 0, NO_NODE, tags))
            self.split_counts[: 2 * splits * c] = node_class_counts(routed, labels, 2 * splits, c).reshape(-1)
        self._set(level_first=first + size, level_size=2 * splits, n_nodes=self.n_nodes + 2 * splits,
                  n_leaves=self.n_leaves + size - splits, job_level=self.job_level + 1)
        if splits == 0:  # the shrub is done
            self._set(phase=TERMS, job_level=0, level_first=0, level_size=0, n_nodes=0, n_leaves=0)

    def _grow_leaves(self, slot: int, counts: np.ndarray, leaves: np.ndarray, nodes: np.ndarray,
                     node_of: np.ndarray) -> None:
        """Leaves with class counts ``counts`` [L, C] at the shrub's leaf rows ``leaves`` (the level's ``nodes``,
        which hold the rows of ``node_of``): their values, and their rows' terms added to the new shrub's Gram
        diagonal entry and label sum."""
        values = leaf_values(counts)
        self.leaf_values[slot * self.leaves_per_shrub + leaves] = values
        own = (((values.astype(np.int64) ** 2).sum(axis=1) & UINT32) >> 15) * counts.sum(axis=1)
        self.gram[slot, slot] = (int(self.gram[slot, slot]) + int(own.sum())) & UINT32
        self.label_sum[slot] = (int(self.label_sum[slot]) + int((counts * values).sum())) & UINT32

    def _new_shrub_column(self, slot: int, active: np.ndarray) -> None:
        """The new shrub's Gram row and column against the active shrubs."""
        window = slice(0, self.count)
        h = self._cached_leaf_values(window, np.array([slot]))[:, 0]
        column = window_pair_sums(h, self._cached_leaf_values(window, active), self._pair_terms)
        self.gram[slot, active] = column
        self.gram[active, slot] = column
        if self._columns == 2:  # the runtime keeps the rows' class-0 values in node_of, free after CART
            self.node_of[window] = h[:, 0]

    def _update_weights(self, candidates: np.ndarray) -> None:
        """Gradient steps on the candidates (the active shrubs, then the new one), then the prox: the new
        ensemble's roots, weights and size."""
        weights = np.append(self.weights[: self.n_shrubs].astype(np.int64), 0)
        alpha = self.step_q16 or 65536 // (len(candidates) + 1)
        weights = gradient_steps(weights, self.gram[np.ix_(candidates, candidates)], self.label_sum[candidates],
                                 alpha, self.count, self._columns, self.burnin)
        kept = prox(weights.tolist(), self.max_shrubs)
        for i, (k, weight) in enumerate(kept):
            self.roots[i] = candidates[k] * self.nodes_per_shrub
            self.weights[i] = weight
        self._set(n_shrubs=len(kept))

    def rebuild_caches(self) -> None:
        """Recompute the caches (sorted lists, leaves, Gram and label sums) from the window and the shrubs, the
        rest of them zero, as ``es_shrubs_rebuild`` does after a restore."""
        for name in CACHE_ARRAYS:
            getattr(self, name)[...] = 0
        n, active = self.count, self._active_slots()
        self._sort_window_rows()
        self.leaf_index[:n, active] = self._leaves(self.window_bins[:n], active) - (active << self.max_depth)
        h = self._cached_leaf_values(slice(0, n), active)
        for i, slot in enumerate(active):
            self.gram[slot, active] = window_pair_sums(h[:, i], h, self._pair_terms)
        self.label_sum[active] = self._label_terms(h, self.window_targets[:n]).sum(axis=0) & UINT32
        self._replay_job()

    def _replay_job(self) -> None:
        """A job under way: its pieces run again from its start, up to where it was (the window and the ensemble
        are those it started from), so that the caches are what they computed."""
        phase, levels = self.phase, self.job_level
        if phase == IDLE:
            return
        self._set(phase=TRAIN, job_level=0)
        while self.phase == TRAIN and (phase > TRAIN or self.job_level < levels):
            self._run_piece("train")
        if phase == WEIGHTS and self.phase == TERMS:
            self._run_piece("terms")

    # -- learning --------------------------------------------------------------------------------------------

    def learn_bins(self, bins: np.ndarray, label: int) -> None:
        """One learning step on an already binned sample with an encoded label: the row joins the queue, then up
        to ``work_per_call`` units of pending work run (all of it with 0); the units run are kept in
        ``last_units_`` (host only, for tests and reports)."""
        self._check_ready()
        self._check_code(label)
        bins = np.asarray(bins, dtype=np.uint8)
        if bins.shape != (self.n_features_,):
            raise ValueError(f"a binned row has shape {bins.shape}, expected ({self.n_features_},)")
        self._enqueue(bins, label)
        budget, done = self.units_per_call_, 0
        while True:
            piece = PIECES[self.phase] or ("row" if self.pending else None)
            if piece is None or (budget and done + self._units[piece] > budget):
                break
            self._run_piece(piece)
            done += self._units[piece]
        self.last_units_ = done

    def _enqueue(self, bins: np.ndarray, label: int) -> None:
        """The row waits at the queue's end (a queue kept full, which only a crafted state can hold, drops it)."""
        size = len(self.queue_targets)
        if self.pending == size:
            return
        at = (self.queue_head + self.pending) % size
        self.queue_bins[at] = bins
        self.queue_targets[at] = label
        self._set(pending=self.pending + 1)

    def _run_piece(self, piece: str) -> None:
        """One piece of work: the oldest pending row's insertion, or the new-shrub job's next piece."""
        active = self._active_slots()
        if piece == "row":
            self._learn_oldest(active)
            return
        slot = self.job_slot
        if piece == "train":
            self._train_piece(slot)
        elif piece == "terms":
            self._new_shrub_column(slot, active)
            self._set(phase=WEIGHTS)
        else:
            self._update_weights(np.append(active, slot))
            self._set(phase=IDLE, job_slot=0)

    def _learn_oldest(self, active: np.ndarray) -> None:
        """The oldest pending row enters the window (the caches follow); every ``update_every`` rows a new-shrub
        job starts."""
        at, size = self.queue_head, len(self.queue_targets)
        bins, label = self.queue_bins[at].copy(), int(self.queue_targets[at])
        self._set(pending=self.pending - 1, queue_head=(at + 1) % size)
        head = self.head
        full = self.count == self.window_size
        replaced = (self._cached_leaf_values(head, active), int(self.window_targets[head])) if full else None
        self.window_bins[head] = bins
        self.window_targets[head] = label
        self._set(head=(head + 1) % self.window_size, count=min(self.count + 1, self.window_size))
        self._sort_window_rows()
        self.leaf_index[head, active] = self._leaves(bins[None], active)[0] - (active << self.max_depth)
        self._move_pair_terms(head, active, replaced)
        self._set(since_update=self.since_update + 1)
        if self.since_update == self.update_every:
            self._set(since_update=0, phase=TRAIN, job_slot=self._free_slot(active))

    # -- prediction ------------------------------------------------------------------------------------------

    def predict_proba_bins(self, bins: np.ndarray) -> np.ndarray:
        """Q15 probabilities of binned rows, as the device computes them."""
        bins = np.ascontiguousarray(np.atleast_2d(bins), dtype=np.uint8)
        n_classes = len(self.classes_)
        if self.n_shrubs == 0:
            return np.full((len(bins), n_classes), Q15_ONE // n_classes, dtype=np.uint16)
        return self._ensemble().predict_proba_q15(bins)


class ShrubEnsemble(OnlineClassification, Shrubs):
    """Online ensemble of small trees trained on a sliding window, learning in fixed memory: the classifier, with
    scikit-learn's classifier protocol (:class:`~edgestream.learners.base.OnlineClassification`). Parameters: those
    of :class:`Shrubs`."""


def shrubs_context(learner: Shrubs, name: str, optimize: str = "speed") -> dict:
    """A learning bundle keeps every bin edge (new shrubs may split anywhere) and starts from the current state;
    without ``allow_missing`` its float inputs refuse NaN (``ES_ERR_INPUT``), as the host does."""
    from ..emit import c_array

    if not hasattr(learner, "window_bins"):
        raise ValueError("the shrub ensemble has no bins or classes yet; call fit_bins() and set_classes() first")
    edges, offsets = learner.bins_.flat_edges()
    layout = learner.layout()
    arrays, counters = learner.device_state()
    return {"edges": edges, "offsets": offsets, "layout": layout,
            "config_initializer": layout.config_initializer(name), "state_struct": layout.state_struct(name),
            "state_initializer": layout.initializer(name, arrays, counters, c_array),
            "state_binding": layout.binding(name), "state_bytes": layout.size(),
            "refuse_nan": learner.input_dtype == "float32" and not learner.allow_missing}


def shrubs_tables(learner: Shrubs, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                  optimize: str = "speed"):
    """Flash objects: every bin edge (the fitted ones, else max_bins - 1 per feature), offsets, config, pointers."""
    fitted = hasattr(learner, "bins_")
    n_edges = len(learner.bins_.flat_edges()[0]) if fitted else n_features * (learner.max_bins - 1)
    return [("edges", max(n_edges, 1) * 4), ("offsets", 2 * (n_features + 1)), ("config", STATE.config_bytes(packed)),
            ("model", (len(STATE.regions) + 2) * pointer_bytes)]


SHRUB_LADDER = tuple({"window_size": b, "max_shrubs": m, "max_depth": d} for b, m, d in (
    (256, 32, 6), (256, 32, 5), (128, 32, 5), (128, 16, 5), (64, 16, 4), (64, 8, 4), (32, 8, 4), (32, 8, 3), (32, 4, 3),
    (16, 4, 3), (16, 4, 2), (8, 2, 2), (8, 2, 1), (4, 1, 1)))

def cost_terms(params: dict, n_features: int, n_classes: int) -> CostTerms:
    """The work terms of a prediction (constant; quantizing the row, d log2 bins; M shrubs' walks, M depth; their
    leaf rows, M C) and of a learn step (window and ensemble full): every step's (constant; quantizing, d log2 bins;
    the sorted lists' insertion, d B; the new row's leaves, M depth; the Gram update of the leaving and entering
    rows, M^2 g), and those of a step that also trains a shrub (constant; CART's scans, d B depth, and split
    scoring over the classes, d min(B, bins) depth C; the new shrub on the window, B depth; its leaf values, a
    division per class and leaf, 2^depth C; its Gram column, B M g; the gradient steps' dot products, ``burnin`` times ``2 ceil((M + 1) / 2) (M + 1)``: the M + 1
    candidates go two at a time, each pair reading its two Gram rows, so an odd count reads one row more),
    amortized over ``update_every`` steps in the mean. A Gram term reads g = 1 leaf value per shrub with 2
    classes (the two are complementary), C otherwise. With more than 2 classes a scan entry also takes the general
    path (the 2-class scans keep their counts in registers): the scans' ``d B depth`` again, in a column of its
    own, zero for 2 classes.

    A spread call (``work_per_call`` U > 0, the automatic one included, "Bounded work per call") runs whole pieces
    while the next one fits: at worst the most units a call of the repeating schedule runs
    (:func:`most_units_per_call`, often well below U), that share of the ``r + J`` units of an unspread worst
    call (a row and a whole job). Its worst takes that share of the row's and the CART, leaf and column terms
    (their units are about proportional to instructions), but the weights piece whole, its dot products and the
    job's constant (the call's constant term takes it): one call runs the piece, and its units, ``burnin (M +
    1)^2``, understate it where a 64-bit product is a library call (``ES_NO_MUL64``: four 32-bit products per Gram
    entry in ``es_split_dot``, every candidate's 64-bit step, the 64-bit divisions of the step's scale and of the
    projection), on AVR over ten times a CART level's cycles per unit.

    A regressor (``n_classes`` 1, one value per leaf) does the same steps on other work: each CART candidate
    scores both sides' ``floor(S^2 / n)``, two 64-bit divisions (library calls on these cores) where a class count
    is cross-multiplied, every leaf's mean code is a 64-bit division, and its Gram and label terms are signed
    products of codes. Its terms are those shapes that its fewer counts tell apart (``REGRESSION_TERMS``; the
    scans' ``d B depth`` is the candidates' up to B = bins, the quantizing about a constant per feature) in columns
    of their own, zero in a classifier's terms and a classifier's zero in its, so one fit weighs both forms apart."""
    terms = _classifier_shaped_terms(params, n_features, n_classes)
    if n_classes == 1:
        return CostTerms(*([0] * len(own) + [own[i] for i in kept] for own, kept in zip(terms, REGRESSION_TERMS)))
    return CostTerms(*(own + [0] * len(kept) for own, kept in zip(terms, REGRESSION_TERMS)))


# The regressor's terms among a form's (_classifier_shaped_terms): the prediction's all; of a mean learn call the
# step's constant, insertion and Gram update, and the training's constant, candidates, Gram column and gradient
# steps; of the worst, the constant, the insertion, CART's scans and candidates, the new shrub's routing, its Gram
# column and the gradient steps (the largest held-out errors of the counts' subsets of at most 7 terms)
REGRESSION_TERMS = (range(4), (0, 2, 4, 5, 7, 10, 11), (0, 2, 5, 6, 7, 9, 10))


def _classifier_shaped_terms(params: dict, n_features: int, n_classes: int) -> CostTerms:
    """:func:`cost_terms` of one form (the docstring's terms at ``n_classes`` outputs)."""
    b, m, depth = params["window_size"], params["max_shrubs"], params["max_depth"]
    d, c, bins = n_features, n_classes, params["max_bins"]
    g = 1 if c == 2 else c
    quantize = d * int(bins).bit_length()
    step = [1, quantize, d * b, m * depth, m * m * g]
    pairs = params["burnin"] * -(-(m + 1) // 2)
    train = [1, d * b * depth, d * min(b, bins) * depth * c, b * depth, 2**depth * c, b * m * g, 2 * pairs * (m + 1)]
    model = Shrubs(**params)
    units, budget = model.units(d, c), model.units_per_call(d, c)
    job = job_pieces(units, depth)
    share = most_units_per_call(units["row"], job, params["update_every"], budget) / (units["row"] + sum(job)) \
        if budget else 1.0
    general_scans = d * b * depth * (c > 2)  # the scans off the 2-class paths
    return CostTerms(predict=[1, quantize, m * depth, m * c],
                     learn_mean=step + [t / params["update_every"] for t in train + [general_scans]],
                     learn_worst=step[:2] + [t * share for t in step[2:] + train[1:-1]] + train[-1:] + [
                         general_scans * share])


# The budget's search on data (edgestream.search): sizes (window, shrubs, depth) times how they learn (a new shrub
# every `update_every` samples, burn-in steps, step size, bins per feature). Memory depends on the size only.
SEARCH_SIZES = tuple(dict.fromkeys(
    tuple(rung.values()) for rung in SHRUB_LADDER[::-1])) + ((128, 8, 4), (256, 8, 4), (256, 16, 4))
SEARCH_VARIANTS = (
    {"update_every": 1, "burnin": 5, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 1, "burnin": 1, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 4, "burnin": 1, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 16, "burnin": 1, "step_size": "adaptive", "max_bins": 64},
    {"update_every": 4, "burnin": 5, "step_size": "adaptive", "max_bins": 16},
    {"update_every": 4, "burnin": 1, "step_size": 0.25, "max_bins": 64},
)
SHRUB_SEARCH = tuple({"window_size": b, "max_shrubs": m, "max_depth": d, **variant}
                     for b, m, d in SEARCH_SIZES for variant in SEARCH_VARIANTS)

# The test variant (checkpoint tests, fuzz target): a new shrub every 3 rows, spread at the automatic work_per_call
# (the smallest rung's job is too small to spread), so that saved states meet rows pending and jobs under way.
SPREAD_VARIANT = {"window_size": 16, "max_shrubs": 4, "max_depth": 3, "update_every": 3}

SPEC = LearnerSpec(
    name="shrubs", cls=ShrubEnsemble, summary="Shrub Ensembles: small trees on a sliding window, learning on the device",
    options=TREE_OPTIONS + (
             Option("--window", "window_size", int, "samples in the sliding window", "N"),
             Option("--shrubs", "max_shrubs", int, "shrubs kept in the ensemble", "M"),
             Option("--step-size", "step_size", step_size, "gradient step", "X|adaptive"),
             Option("--burnin", "burnin", int, "gradient steps after each new shrub", "N"),
             Option("--update-every", "update_every", int, "a new shrub every N samples", "N"),
             ALLOW_MISSING, WORK_PER_CALL),
    learning=True, online=True, runtime=("es_common", "es_binning", "es_tree", "es_cart", "es_shrubs"),
    template="shrubs.c.j2", context=shrubs_context, tables=shrubs_tables, ladder=SHRUB_LADDER, state=STATE,
    search=SHRUB_SEARCH, variants=(SPREAD_VARIANT,), cost_terms=cost_terms)
