"""Fast exact inference for frozen tree models: the raw-compare rule, leaf kinds and the compact device encodings.

This module is the specification of ``csrc/es_infer.c``.

**Raw-compare rule.** A node with feature ``f`` and bin threshold ``t`` sends a row left iff ``bin(x[f]) <= t``.
With the feature's edges ``e_0 < ... < e_{k-1}``, ``bin(x) = #{i: e_i < x}``, so ``bin(x) <= t`` iff ``x <= e_t``
(for ``t < k``); for ``t >= k`` every value is left. The device therefore never quantizes: each node compares the
raw input with its *edge* and goes left iff ``x[f] <= edge``, where ``edge`` is the kept bin edge, or ``+inf``
(float32) / the type's maximum (int32, int16) for a threshold past the last edge. NaN (missing) compares false
and goes right, as the bin rule sends NaN to bin 255 > every threshold; ``-0.0 <= +0.0`` holds. So the raw rule
and the bin rule predict identically (``tests/test_encoding.py`` checks it on NaN, infinities, signed zeros,
subnormals and every edge's float32 neighbours).

**Leaf values** (``leaf_values`` of the tree learners, applied to the Q15 rows at fit time by
:func:`restrict_leaf_values`, so the Python model predicts with the very values the device holds):

* ``"q15"``: the rows as trained;
* ``"q8"``: ``v_k = (p_k * 128 + 16384) >> 15`` (0..128, 1.0 == 128) and the row becomes ``v_k << 8``;
* ``"vote"``: the row becomes 32768 at its first largest class, 0 elsewhere (a hard vote).

Every voting kind then follows the one rule of :mod:`edgestream.tree`: ``acc_k = sum_t w_t * q15_t[k]``,
``proba_k = (acc_k + W // 2) // W`` (uint32 arithmetic, ``W = sum_t w_t <= 65535``), class = first largest
``proba_k``. The device stores q8 rows as the 8-bit ``v`` and sums ``w * v`` then shifts left by 8; vote rows as
the class index and sums ``w`` per class then shifts left by 15 -- the same integers.

**Additive leaves** (``leaf_kind == "additive"``, boosting): int16 scores per class (one score when binary),
``sum_k = base_score_k + sum_t leaf_t[k]`` in int32 (tree weights are ignored); class = first largest sum, or
``sum_0 > 0`` with one score; probabilities by :func:`additive_proba_q15` of the sums brought back to Q10 by
``score_shift`` (:func:`edgestream.fixedpoint.shift_scores`: scores with ``10 + score_shift`` fraction bits keep
the precision of models imported from elsewhere; the class is taken from the unshifted sums).

**Missing values sent left** (models imported from elsewhere): a node whose source sends a missing value (NaN)
left goes left iff ``x <= edge`` or ``x`` is NaN. Such nodes are flagged by one bit per internal node
(``nan_left``); without any, the tables hold no flags and every NaN goes right.

**Compact encodings** (:class:`Encoding`, chosen per model by :func:`choose_encoding`, all exact by construction
since they store the same integers and edges the Python model uses):

* only internal nodes are stored (structure of arrays): ``feature`` (uint8), ``threshold`` and two child refs.
  Leaves are folded into their parent: a child ref ``r`` of tree ``t`` is internal node ``r`` of that tree if
  ``r < n_internal_t``, else the leaf slot ``r - n_internal_t``: a class index (``class`` leaves), or a row of the
  deduplicated leaf table. Refs are local to the tree (``tree_base[t]`` is its first node), so they are uint8
  whenever every tree has ``n_internal_t + slots <= 256``, else uint16;
* ``threshold`` is the edge itself (``inline``, the input type) or an index (uint8 if at most 256, else uint16)
  into the sorted table of the model's distinct edges (``index``);
* leaf tables: ``class`` (no table: every row one-hot), ``q8`` (uint8 rows, every row a multiple of 256), ``q15``
  (uint16 rows), ``additive`` (int16 rows + int32 base scores). The smallest exact kind is picked from the rows;
* ``weights`` is omitted (NULL on the device) when every tree weighs 1;
* NaN-left flags (layout bit 4) follow the ``feature`` table in the same array: bit ``i & 7`` of byte
  ``n_internal + (i >> 3)`` is set when internal node ``i`` (counted over all trees) sends NaN left.

**Complete layout** (``tree == "complete"``, for shallow trees under ``optimize="speed"``): every tree is stored
as the complete binary tree of the model's depth ``D`` (the deepest tree's), in heap order: internal position
``i`` has children ``2i + 1`` (left) and ``2i + 2`` (right), positions ``0 .. 2^D - 2`` are internal nodes
(``feature`` uint8 and inline ``threshold``, ``2^D - 1`` per tree) and the ``2^D`` bottom positions are leaf slots
(``children`` holds them: uint8, or uint16 when a slot exceeds 255). A leaf of depth ``d < D`` is padded: its
position becomes an internal node (feature 0, threshold :func:`past_last`) and *all* ``2^(D - d)`` bottom
positions under it hold its slot, so whichever way the padding sends a row (NaN goes right), it reaches the same
slot: exact for every input. The walk has no child loads and no exit test: exactly ``D`` steps
``i = 2i + 1 + !(x[f] <= e)`` per tree, then slot ``i - (2^D - 1)``. ``tree_base[t] = t (2^D - 1)``.
Chosen by ``optimize="speed"`` when ``D <= COMPLETE_MAX_DEPTH`` and the padding is cheap: ``D`` at most
``COMPLETE_PATH_RATIO`` times the mean leaf depth (a padded step costs less than a folded one).

``optimize="speed"`` (the default) takes the complete layout when it is chosen as above, else inline thresholds
(one load less per node); ``optimize="size"`` takes the folded layout and whichever threshold form makes the
tables smaller.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from . import _kernels
from .fixedpoint import additive_predict
from .fixedpoint import additive_proba_q15 as fixedpoint_proba
from .fixedpoint import shift_scores

LEAF_KINDS = ("proba", "additive")
LEAF_VALUES = ("q15", "q8", "vote")
OPTIMIZE = ("speed", "size")
Q15_ONE = 32768
Q8_ONE = 128  # q8 leaf values: 1.0 == 128, stored as uint8, Q15 == v << 8
Q8_SHIFT = 8
LEAF_FEATURE = _kernels.LEAF_FEATURE
INPUT_DTYPES = ("float32", "int32", "int16")
VALUE_BYTES = {"float32": 4, "int32": 4, "int16": 2}
INT32_MAX = 2**31 - 1
TREE_LAYOUTS = ("folded", "complete")
COMPLETE_MAX_DEPTH = 10  # es_infer.c unrolls up to this depth (ES_COMPLETE_MAX_DEPTH)
COMPLETE_PATH_RATIO = 1.5  # complete when depth <= this x the mean leaf depth


# ------------------------------------------------------------------------------------------------ leaf values

def restrict_leaf_values(rows: np.ndarray, mode: str) -> np.ndarray:
    """Q15 probability rows as ``leaf_values=mode`` keeps them (idempotent; ``"q15"`` returns the rows)."""
    if mode not in LEAF_VALUES:
        raise ValueError(f"leaf_values={mode!r} must be one of {LEAF_VALUES}")
    rows = np.asarray(rows)
    if mode == "q15" or rows.dtype != np.uint16:
        return rows
    if mode == "q8":
        v = (rows.astype(np.int64) * Q8_ONE + Q15_ONE // 2) >> 15
        return (v << Q8_SHIFT).astype(np.uint16)
    out = np.zeros_like(rows)
    if len(rows):
        out[np.arange(len(rows)), np.argmax(rows, axis=1)] = Q15_ONE
    return out


# ------------------------------------------------------------------------------------------------ additive leaves

def check_additive(leaf_values: np.ndarray, base_score, n_trees: int) -> None:
    """Scores are int16, base scores int32 (one per score), and no sum can leave int32."""
    n_scores = leaf_values.shape[1]
    if base_score is None or np.asarray(base_score).dtype != np.int32 or np.asarray(base_score).shape != (n_scores,):
        raise ValueError(f"additive leaves need an int32 base_score of {n_scores} values")
    if not 1 <= n_scores <= 255:
        raise ValueError(f"{n_scores} scores per leaf: must be 1..255")
    bound = int(np.abs(np.asarray(base_score, dtype=np.int64)).max()) + n_trees * 32768
    if bound > INT32_MAX:
        raise ValueError(f"base scores and {n_trees} trees of int16 scores can overflow int32 ({bound})")


def additive_sums(leaf_values: np.ndarray, base_score: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """int64 [rows, n_scores]: base score plus the leaf scores reached in every tree (they fit int32)."""
    return base_score.astype(np.int64) + leaf_values[leaves].astype(np.int64).sum(axis=1)


def additive_classes(sums: np.ndarray) -> np.ndarray:
    """Class of each row: first largest sum, or ``sum > 0`` for a single (binary) score."""
    return additive_predict(np.asarray(sums, dtype=np.int64)).astype(np.uint8)


def additive_proba_q15(score_sums: np.ndarray) -> np.ndarray:
    """Q15 class probabilities from the int32 score sums (:mod:`edgestream.fixedpoint`, C ``es_additive_proba``)."""
    return fixedpoint_proba(np.asarray(score_sums, dtype=np.int64))


# ------------------------------------------------------------------------------------------------ raw rule

def past_last(dtype: str):
    """The edge of a threshold past the feature's last edge: every value but NaN goes left."""
    return np.float32(np.inf) if dtype == "float32" else np.iinfo(dtype).max


def node_edges(edges_per_feature, nodes: np.ndarray, dtype: str) -> np.ndarray:
    """The raw edge of every node (0 for leaves): ``edges[feature][threshold]`` or :func:`past_last`."""
    out = np.zeros(len(nodes), dtype=dtype)
    for i, node in enumerate(nodes):
        if node["feature"] == LEAF_FEATURE:
            continue
        edges = edges_per_feature[node["feature"]]
        out[i] = edges[node["threshold"]] if node["threshold"] < len(edges) else past_last(dtype)
    return out


def goes_right(x: np.ndarray, edge: np.ndarray, nan_left) -> np.ndarray:
    """The raw rule of every node: right unless ``x <= edge``; NaN right unless the node sends it left."""
    right = ~(x <= edge)
    if np.any(nan_left) and x.dtype.kind == "f":
        right &= ~(np.isnan(x) & nan_left)
    return right


def as_input(X, dtype: str) -> np.ndarray:
    """Rows as the device reads them (float inputs rounded to float32)."""
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(np.asarray(X).astype(dtype))


def apply_raw(nodes: np.ndarray, roots: np.ndarray, edges: np.ndarray, X, nan_left=False) -> np.ndarray:
    """Leaf row reached in every tree by the raw rule (``x[f] <= edge`` goes left, NaN right unless ``nan_left``
    of the node, a bool per node, says left): uint16 [rows, trees]."""
    X = as_input(X, edges.dtype.name)
    rows = np.arange(len(X))
    out = np.empty((len(X), len(roots)), dtype=np.uint16)
    feature = nodes["feature"].astype(np.int64)
    child = nodes["child"].astype(np.int64)
    for t, root in enumerate(roots):
        at = np.full(len(X), int(root), dtype=np.int64)
        while True:
            inner = feature[at] != LEAF_FEATURE
            if not inner.any():
                break
            r, i = rows[inner], at[inner]
            at[inner] = child[i] + goes_right(X[r, feature[i]], edges[i], nan_left if np.ndim(nan_left) == 0
                                              else nan_left[i])
        out[:, t] = child[at]
    return out


# ------------------------------------------------------------------------------------------------ encodings

@dataclass(frozen=True)
class Encoding:
    """How a frozen model's tables are laid out on the device (recorded in the bundle's manifest)."""

    input_dtype: str  # float32 | int32 | int16
    child_bytes: int  # 1 | 2: width of the child refs
    thresholds: str  # "inline" | "index"
    edge_index_bytes: int  # 0 (inline) | 1 | 2
    leaves: str  # "class" | "q8" | "q15" | "additive"
    weights: bool  # False: every tree weight is 1 and no table is stored
    tree: str = "folded"  # "folded" | "complete" (heap order, padded to depth; child_bytes is then the slot width)
    depth: int = 0  # complete: the depth every tree is padded to; 0 for folded
    nan_left: bool = False  # some node sends NaN left: its flag bits follow the feature table

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def layout(self) -> int:
        """``es_forest.layout``: bit 0 uint16 child refs (complete: leaf slots), bit 1 edge indices, bit 2 uint16
        edge indices, bit 3 complete layout, bit 4 NaN-left flags."""
        return ((self.child_bytes == 2) | (self.thresholds == "index") << 1 | (self.edge_index_bytes == 2) << 2
                | (self.tree == "complete") << 3 | self.nan_left << 4)


LEAF_CODES = {"class": 0, "q8": 1, "q15": 2, "additive": 3}  # es_forest.leaf_kind
CHILD_TYPES = {1: np.uint8, 2: np.uint16}


@dataclass
class EncodedModel:
    """The tables of a frozen tree model in one encoding; :meth:`predict_proba_q15` is what ``es_infer.c`` does."""

    encoding: Encoding
    n_features: int
    n_classes: int
    feature: np.ndarray  # uint8 [n_internal], then with encoding.nan_left the NaN-left bits [ceil(n_internal / 8)]
    threshold: np.ndarray  # input dtype (inline) or uint8/uint16 indices [n_internal]
    edges: np.ndarray  # input dtype: the distinct edges (index), empty for inline
    children: np.ndarray  # uint8/uint16 [2 * n_internal]
    tree_base: np.ndarray  # uint16 [n_trees + 1]
    weights: np.ndarray  # uint16 [n_trees] (all ones when encoding.weights is False)
    leaves: np.ndarray  # uint16 / uint8 / int16 rows [n_rows, n_scores]; [0, n_classes] for class leaves
    base_score: np.ndarray  # int32 [n_scores] (additive), empty otherwise
    score_shift: int = 0  # additive: fraction bits of the scores beyond Q10

    @property
    def n_trees(self) -> int:
        return len(self.tree_base) - 1

    @property
    def nan_left(self) -> np.ndarray:
        """bool [n_internal]: the internal nodes that send NaN left (all False without flags)."""
        n_internal = int(self.tree_base[-1])
        if not self.encoding.nan_left:
            return np.zeros(n_internal, dtype=bool)
        return np.unpackbits(self.feature[n_internal:], bitorder="little")[:n_internal].astype(bool)

    @property
    def n_scores(self) -> int:
        return self.leaves.shape[1]

    @property
    def total_weight(self) -> int:
        return int(self.weights.astype(np.int64).sum())

    def table_bytes(self, pointer_bytes: int = 4, packed: bool = False) -> dict[str, int]:
        """Bytes of every const object the bundle stores (what the budget counts), the ``es_forest`` descriptor
        (8 pointers, then 11 bytes of sizes and codes, padded to pointer alignment unless packed) included."""
        descriptor = descriptor_bytes(pointer_bytes, packed)

        def at_least_one(array):  # C has no empty arrays: the template writes one element
            return max(array.size, 1) * array.itemsize

        sizes = {"descriptor": descriptor, "feature": at_least_one(self.feature),
                 "threshold": at_least_one(self.threshold), "edges": self.edges.nbytes,
                 "children": at_least_one(self.children), "tree_base": self.tree_base.nbytes,
                 "weights": self.weights.nbytes if self.encoding.weights else 0,
                 "leaves": self.leaves.nbytes if self.encoding.leaves != "class" else 0,
                 "base_score": self.base_score.nbytes}
        return sizes

    @property
    def nbytes(self) -> int:
        """Bytes of the tables and the descriptor on a 32-bit MCU."""
        return sum(self.table_bytes().values())

    def leaf_slots(self, X) -> np.ndarray:
        """Leaf slot reached in every tree (class index or leaf-table row): int64 [rows, trees]."""
        enc = self.encoding
        X = as_input(X, enc.input_dtype)
        if enc.tree == "complete":
            return self._complete_slots(X)
        edge = self.threshold if enc.thresholds == "inline" else self.edges[self.threshold]
        rows = np.arange(len(X))
        out = np.empty((len(X), self.n_trees), dtype=np.int64)
        nan_left = self.nan_left
        children = self.children.astype(np.int64)
        feature = self.feature.astype(np.int64)
        for t in range(self.n_trees):
            base, n_internal = int(self.tree_base[t]), int(self.tree_base[t + 1]) - int(self.tree_base[t])
            at = np.zeros(len(X), dtype=np.int64)
            while True:
                inner = at < n_internal
                if not inner.any():
                    break
                r, i = rows[inner], at[inner] + base
                at[inner] = children[2 * i + goes_right(X[r, feature[i]], edge[i], nan_left[i])]
            out[:, t] = at - n_internal
        return out

    def _complete_slots(self, X) -> np.ndarray:
        """The complete layout's walk: ``D`` steps ``i = 2i + 1 + !(x[f] <= e)``, then slot ``i - (2^D - 1)``."""
        n_nodes = 2**self.encoding.depth - 1
        rows = np.arange(len(X))
        feature, threshold = self.feature.astype(np.int64), self.threshold
        slots = self.children.astype(np.int64)
        nan_left = self.nan_left
        out = np.empty((len(X), self.n_trees), dtype=np.int64)
        for t in range(self.n_trees):
            i = np.zeros(len(X), dtype=np.int64)
            for _ in range(self.encoding.depth):
                j = t * n_nodes + i
                i = 2 * i + 1 + goes_right(X[rows, feature[j]], threshold[j], nan_left[j])
            out[:, t] = slots[t * (n_nodes + 1) + i - n_nodes]
        return out

    def _sums(self, slots: np.ndarray) -> np.ndarray:
        """int64 [rows, n_scores]: the device's accumulator after every tree (voting kinds scaled to Q15)."""
        leaves = self.encoding.leaves
        if leaves == "additive":
            return additive_sums(self.leaves, self.base_score, slots)
        w = self.weights.astype(np.int64)
        if leaves == "class":
            acc = np.zeros((len(slots), self.n_classes), dtype=np.int64)
            for t in range(self.n_trees):
                np.add.at(acc, (np.arange(len(slots)), slots[:, t]), w[t])
            return acc << 15
        acc = np.einsum("rtc,t->rc", self.leaves[slots].astype(np.int64), w)
        return acc << Q8_SHIFT if leaves == "q8" else acc

    def predict_proba_q15(self, X) -> np.ndarray:
        sums = self._sums(self.leaf_slots(X))
        if self.encoding.leaves == "additive":
            return additive_proba_q15(shift_scores(sums, self.score_shift))
        total = self.total_weight
        return ((sums + total // 2) // total).astype(np.uint16)

    def predict(self, X) -> np.ndarray:
        if self.encoding.leaves == "additive":
            return additive_classes(self._sums(self.leaf_slots(X)))
        return np.argmax(self.predict_proba_q15(X), axis=1).astype(np.uint8)


def leaf_storage(ensemble) -> tuple[str, np.ndarray]:
    """The smallest exact leaf table: ("class", one-hot rows' classes), ("q8", v), ("q15", rows) or additive."""
    rows = ensemble.leaf_values
    if ensemble.leaf_kind == "additive":
        return "additive", rows.astype(np.int16)
    if np.array_equal(restrict_leaf_values(rows, "vote"), rows):
        return "class", np.argmax(rows, axis=1)
    if not (rows & 0xFF).any():
        return "q8", (rows >> Q8_SHIFT).astype(np.uint8)
    return "q15", rows.astype(np.uint16)


def _fold(ensemble, slot_of_leaf: np.ndarray):
    """Per tree: internal nodes in breadth-first order, their local child refs (leaves folded), and tree bases.

    Ref 0 of a tree is its root: internal node 0, or leaf slot 0 when the tree is a single leaf."""
    nodes = ensemble.nodes
    features, edge_nodes, children, tree_base, widest = [], [], [], [0], 0
    for root in ensemble.roots.astype(np.int64):
        order, local = [], {}
        queue = [root]
        while queue:
            i = queue.pop(0)
            if nodes[i]["feature"] == LEAF_FEATURE:
                continue
            local[i] = len(order)
            order.append(i)
            queue += [int(nodes[i]["child"]), int(nodes[i]["child"]) + 1]
        n_internal = len(order)

        def ref(i):
            if nodes[i]["feature"] == LEAF_FEATURE:
                return n_internal + int(slot_of_leaf[nodes[i]["child"]])
            return local[i]

        tree_children = [ref(c) for i in order for c in (int(nodes[i]["child"]), int(nodes[i]["child"]) + 1)]
        features += [int(nodes[i]["feature"]) for i in order]
        edge_nodes += order
        children += tree_children
        widest = max(widest, max(tree_children, default=0))
        tree_base.append(tree_base[-1] + n_internal)
    return np.asarray(features, dtype=np.uint8), np.asarray(edge_nodes, dtype=np.int64), children, tree_base, widest


def encode(device, optimize: str = "speed", thresholds: str | None = None, tree: str | None = None) -> EncodedModel:
    """The tables of :class:`edgestream.frozen.DeviceModel` ``device`` in the encoding ``optimize`` picks.

    ``thresholds`` forces ``"inline"`` or ``"index"``, ``tree`` forces ``"folded"`` or ``"complete"`` (tests cover
    every form on every model; the complete layout has inline thresholds only).
    """
    if optimize not in OPTIMIZE:
        raise ValueError(f"optimize={optimize!r} must be one of {OPTIMIZE}")
    if tree is not None and tree not in TREE_LAYOUTS:
        raise ValueError(f"tree={tree!r} must be one of {TREE_LAYOUTS}")
    ensemble, dtype = device.ensemble, device.input_dtype
    if dtype not in INPUT_DTYPES:
        raise ValueError(f"input_dtype={dtype!r} must be one of {INPUT_DTYPES}")
    kind, table = leaf_storage(ensemble)
    if kind == "class":
        slot_of_leaf = table.astype(np.int64)  # the slot is the class
        table = np.zeros((0, ensemble.n_classes), dtype=np.uint16)
    else:
        slot_of_leaf = np.arange(len(table), dtype=np.int64)
    if tree is None:
        tree = "complete" if optimize == "speed" and thresholds in (None, "inline") and _complete_pays(ensemble) else "folded"
    if tree == "complete":
        if thresholds == "index":
            raise ValueError("the complete layout has inline thresholds only")
        feature, edge, nan_left, slots, tree_base, depth = _complete(ensemble, slot_of_leaf, device, dtype)
        thresholds, threshold, edges, index_bytes = "inline", edge, np.zeros(0, dtype=dtype), 0
        child_bytes = 1 if slots.max(initial=0) < 256 else 2
        children = slots
    else:
        depth = 0
        # A root-only tree whose slot is not 0 gets a split, see _root_leaves_first.
        nodes, roots = _root_leaves_first(ensemble, slot_of_leaf)
        folded = type(ensemble)(nodes, roots, ensemble.weights, ensemble.leaf_values, ensemble.n_features,
                                ensemble.leaf_kind, ensemble.base_score)
        feature, order, children, tree_base, widest = _fold(folded, slot_of_leaf)
        edge = device.node_edges(nodes)[order]
        nan_left = device.node_nan_left(nodes)[order]
        child_bytes = 1 if widest < 256 else 2
        distinct = np.unique(edge)
        index_bytes = 1 if len(distinct) <= 256 else 2
        if thresholds is None:
            value = VALUE_BYTES[dtype]
            inline_bytes = len(edge) * value
            index_bytes_total = len(edge) * index_bytes + len(distinct) * value
            thresholds = "index" if optimize == "size" and index_bytes_total < inline_bytes else "inline"
        if thresholds == "index":
            threshold = np.searchsorted(distinct, edge).astype(CHILD_TYPES[index_bytes])
            edges = distinct.astype(dtype)
        else:
            threshold, edges, index_bytes = edge.astype(dtype), np.zeros(0, dtype=dtype), 0
    if tree_base[-1] > 65535:
        raise ValueError(f"{tree_base[-1]} internal nodes: the encoding holds at most 65535")
    weighted = ensemble.leaf_kind != "additive" and bool((ensemble.weights != 1).any())
    flagged = bool(nan_left.any())
    if flagged:
        feature = np.concatenate([feature, np.packbits(nan_left, bitorder="little")])
    encoding = Encoding(dtype, child_bytes, thresholds, index_bytes, kind, weighted, tree, depth, flagged)
    base = ensemble.base_score if kind == "additive" else np.zeros(0, dtype=np.int32)
    return EncodedModel(encoding, device.n_features, ensemble.n_classes, feature, threshold, edges,
                        np.asarray(children, dtype=CHILD_TYPES[child_bytes]), np.asarray(tree_base, dtype=np.uint16),
                        ensemble.weights.astype(np.uint16), table, np.asarray(base, dtype=np.int32),
                        ensemble.score_shift if kind == "additive" else 0)


def _leaf_depths(ensemble) -> list[np.ndarray]:
    """Depth of every leaf, per tree."""
    nodes, out = ensemble.nodes, []
    for root in ensemble.roots.astype(np.int64):
        stack, depths = [(int(root), 0)], []
        while stack:
            i, d = stack.pop()
            if nodes[i]["feature"] == LEAF_FEATURE:
                depths.append(d)
            else:
                c = int(nodes[i]["child"])
                stack += [(c, d + 1), (c + 1, d + 1)]
        out.append(np.asarray(depths))
    return out


def _complete_pays(ensemble) -> bool:
    """The complete layout is faster: shallow enough and not much deeper than the mean leaf."""
    depths = np.concatenate(_leaf_depths(ensemble))
    depth = int(depths.max())
    return (depth <= COMPLETE_MAX_DEPTH and len(ensemble.roots) * (2**depth - 1) <= 65535
            and depth <= COMPLETE_PATH_RATIO * max(float(depths.mean()), 1.0))


def _complete(ensemble, slot_of_leaf, device, dtype):
    """Feature, inline edge, NaN-left and leaf-slot tables of the complete layout (heap order, leaves padded to
    depth).

    Padding positions get feature 0 and the past-last edge; every bottom slot under a padded leaf is that leaf's
    slot, so both ways out of the padding reach it."""
    nodes = ensemble.nodes
    depth = int(max(d.max() for d in _leaf_depths(ensemble)))
    if depth > COMPLETE_MAX_DEPTH:
        raise ValueError(f"depth {depth}: the complete layout holds at most depth {COMPLETE_MAX_DEPTH}")
    n_nodes, n_trees = 2**depth - 1, len(ensemble.roots)
    edge_of, nan_left_of = device.node_edges(nodes), device.node_nan_left(nodes)
    feature = np.zeros(n_trees * n_nodes, dtype=np.uint8)
    edge = np.full(n_trees * n_nodes, past_last(dtype), dtype=dtype)
    nan_left = np.zeros(n_trees * n_nodes, dtype=bool)
    slots = np.zeros(n_trees * (n_nodes + 1), dtype=np.int64)
    for t, root in enumerate(ensemble.roots.astype(np.int64)):
        stack = [(int(root), 0, 0)]  # node, position, depth
        while stack:
            i, pos, d = stack.pop()
            if nodes[i]["feature"] == LEAF_FEATURE:
                first = (pos + 1) * 2 ** (depth - d) - 1 - n_nodes
                slots[t * (n_nodes + 1) + first:t * (n_nodes + 1) + first + 2 ** (depth - d)] = \
                    slot_of_leaf[nodes[i]["child"]]
                continue
            feature[t * n_nodes + pos], edge[t * n_nodes + pos] = nodes[i]["feature"], edge_of[i]
            nan_left[t * n_nodes + pos] = nan_left_of[i]
            c = int(nodes[i]["child"])
            stack += [(c, 2 * pos + 1, d + 1), (c + 1, 2 * pos + 2, d + 1)]
    tree_base = [t * n_nodes for t in range(n_trees + 1)]
    return feature, edge, nan_left, slots, tree_base, depth


def _root_leaves_first(ensemble, slot_of_leaf):
    """Nodes and roots where a root-only tree reaches leaf slot 0 (its ref 0 must be that slot).

    A root-only tree whose leaf is in another slot (a class-leaf tree predicting a class other than 0) is
    rewritten as one split whose two children are both that leaf: exact for every input.
    """
    nodes, roots = ensemble.nodes.copy(), ensemble.roots.copy()
    fix = [t for t, r in enumerate(roots) if nodes[r]["feature"] == LEAF_FEATURE and slot_of_leaf[nodes[r]["child"]] != 0]
    if not fix:
        return nodes, roots
    extra = []
    for t in fix:
        leaf = nodes[roots[t]]
        start = len(nodes) + len(extra)
        split = np.zeros(1, dtype=nodes.dtype)[0]
        split["feature"], split["threshold"], split["child"] = 0, 0, start + 1
        extra += [split, leaf, leaf]
        roots[t] = start
    return np.concatenate([nodes, np.asarray(extra, dtype=nodes.dtype)]), roots


def descriptor_bytes(pointer_bytes: int = 4, packed: bool = False) -> int:
    """``sizeof(es_forest)``: 8 pointers, then 11 bytes of sizes and codes, padded to pointer alignment unless packed."""
    size = 8 * pointer_bytes + 11
    return size if packed else -(-size // pointer_bytes) * pointer_bytes


def choose_encoding(device, optimize: str = "speed") -> Encoding:
    return encode(device, optimize).encoding


__all__ = ["Encoding", "EncodedModel", "encode", "choose_encoding", "restrict_leaf_values", "apply_raw",
           "node_edges", "additive_proba_q15", "additive_sums", "additive_classes", "LEAF_VALUES", "OPTIMIZE"]
