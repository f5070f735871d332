"""A fitted tree model reduced to the tables a frozen bundle stores in flash (then encoded by :mod:`edgestream.encoding`).

Two lossless reductions are applied, both checked by the parity tests:

* only the bin edges some split compares against are kept, and thresholds are renumbered to the kept edges
  (``bin <= t`` is ``x <= edges[t]``, so comparing against the kept edge gives the same branch);
* identical leaf rows (e.g. every pure leaf of one class) are stored once.

A bundle exported for speed walks its trees in inline code (:func:`inline_walk`): nested ifs that compare the raw
inputs with their edges written as hex float constants, so only the leaf tables stay tables.

A model imported from elsewhere has no bins: its nodes carry their raw edges and NaN directions themselves
(``node_edge``, ``nan_left``), see :mod:`edgestream.importers`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dataclasses import replace

from .emit import C_TYPES, c_literal
from .encoding import LEAF_CODES, VALUE_BYTES, EncodedModel, _leaf_depths, descriptor_bytes, encode, node_edges
from .task import REGRESSION, task_of
from .tree import LEAF_FEATURE, MAX_NODES, NODE_DTYPE, Q15_ONE, TreeEnsemble


@dataclass
class DeviceModel:
    """The tables of one model as they are stored on the device."""

    input_dtype: str  # "float32", "int32" or "int16"
    edges: np.ndarray  # float32 or int32, all features' edges back to back
    offsets: np.ndarray  # uint16 [n_features + 1]
    ensemble: TreeEnsemble
    node_edge: np.ndarray | None = None  # imported models: the raw edge of every node (instead of bin thresholds)
    nan_left: np.ndarray | None = None  # imported models: bool per node, NaN goes left

    def node_edges(self, nodes: np.ndarray) -> np.ndarray:
        """The raw edge of every node of ``nodes`` (the ensemble's, maybe followed by nodes added for the encoding,
        whose children are one leaf: their edge is never decisive and is the past-last one)."""
        if self.node_edge is None:
            per_feature = [self.edges[self.offsets[j]:self.offsets[j + 1]] for j in range(self.n_features)]
            return node_edges(per_feature, nodes, self.input_dtype)
        return _extended(self.node_edge, len(nodes), 0)

    def node_nan_left(self, nodes: np.ndarray) -> np.ndarray:
        """bool per node of ``nodes``: it sends NaN left."""
        return _extended(np.zeros(0, dtype=bool) if self.nan_left is None else self.nan_left, len(nodes), False)

    @property
    def n_features(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_classes(self) -> int:
        return self.ensemble.n_classes

    @classmethod
    def from_model(cls, model) -> "DeviceModel":
        if not hasattr(model, "ensemble_"):
            raise ValueError(f"{type(model).__name__} is not fitted; fit it before exporting")
        edges, offsets, nodes = prune_edges(model.bins_.edges_, model.ensemble_.nodes)
        leaf_values, leaf_index = np.unique(model.ensemble_.leaf_values, axis=0, return_inverse=True)
        is_leaf = nodes["feature"] == LEAF_FEATURE
        nodes["child"][is_leaf] = leaf_index.reshape(-1)[nodes["child"][is_leaf]]
        source = model.ensemble_
        ensemble = TreeEnsemble(nodes, source.roots.copy(), source.weights.copy(),
                                leaf_values.astype(source.leaf_values.dtype), source.n_features,
                                source.leaf_kind, source.base_score, source.score_shift)
        ensemble.validate()
        return cls(model.bins_.dtype, edges.astype(model.bins_.dtype), offsets, ensemble)


def _extended(values: np.ndarray, length: int, fill) -> np.ndarray:
    out = np.full(length, fill, dtype=values.dtype)
    out[:len(values)] = values[:length]
    return out


def prune_edges(edges_per_feature, nodes):
    """Keep only the edges that splits use; returns (flat edges, offsets, nodes with renumbered thresholds)."""
    nodes = nodes.copy()
    split = nodes["feature"] != LEAF_FEATURE
    kept_edges, offsets = [], [0]
    for feature, edges in enumerate(edges_per_feature):
        on_feature = split & (nodes["feature"] == feature)
        thresholds = nodes["threshold"][on_feature].astype(np.int64)
        used = np.unique(thresholds[thresholds < len(edges)])
        # A threshold past the last edge sends every value left; past the last kept edge does the same.
        nodes["threshold"][on_feature] = np.searchsorted(used, thresholds)
        kept_edges.append(np.asarray(edges)[used])
        offsets.append(offsets[-1] + len(used))
    flat = np.concatenate(kept_edges) if kept_edges else np.empty(0)
    return flat, np.asarray(offsets, dtype=np.uint16), nodes


INFER_PREDICT = {"float32": "es_forest_predict_f32", "int32": "es_forest_predict_i32", "int16": "es_forest_predict_i16"}
INFER_INPUT_CODE = {"float32": "F32", "int32": "I32", "int16": "I16"}
INFER_LEAF_MACRO = {"class": "CLASS", "q8": "Q8", "q15": "Q15", "additive": "ADDITIVE"}
INFER_LEAF_TYPE = {"class": None, "q8": "uint8_t", "q15": "uint16_t", "additive": "int16_t"}
INDEX_TYPES = {1: "uint8_t", 2: "uint16_t"}


def tree_context(model, name: str, optimize: str = "speed") -> dict:
    """Template values of a frozen model's bundle in the encoding ``optimize`` picks (:mod:`edgestream.encoding`);
    ``extra_files`` adds the generated ``es_infer_config.h`` that compiles only the variant this model uses."""
    return device_context(DeviceModel.from_model(model), name, optimize)


def device_context(device: DeviceModel, name: str, optimize: str = "speed") -> dict:
    """Template values of the bundle of a model's device tables (:func:`tree_context`)."""
    encoded = bundle_encoding(device, optimize)
    enc = encoded.encoding
    inline = enc.thresholds == "inline"
    code = inline_code(device, optimize)
    return {
        "inline_walk": inline_walk(encoded, name) if code else "",
        "manifest": {"optimize": optimize, "encoding": replace(enc, tree="inline").as_dict() if code else enc.as_dict()},
        "n_trees": encoded.n_trees, "n_scores": encoded.n_scores,
        "encoding_text": ", ".join(f"{k}={v}" for k, v in enc.as_dict().items()),
        "feature": encoded.feature, "threshold": encoded.threshold, "edges": encoded.edges,
        "threshold_type": C_TYPES[enc.input_dtype] if inline else INDEX_TYPES[enc.edge_index_bytes],
        "threshold_dtype": enc.input_dtype if inline else "int",
        "children": encoded.children, "child_type": INDEX_TYPES[enc.child_bytes],
        "tree_base": encoded.tree_base, "weights": encoded.weights, "weighted": enc.weights,
        "leaves": encoded.leaves.reshape(-1) if enc.leaves != "class" else [], "leaf_type": INFER_LEAF_TYPE[enc.leaves],
        "base_score": encoded.base_score, "total_weight": encoded.total_weight, "score_shift": encoded.score_shift,
        "layout": enc.layout, "depth": enc.depth, "leaf_code": LEAF_CODES[enc.leaves], "leaf_macro": INFER_LEAF_MACRO[enc.leaves],
        "input_code": INFER_INPUT_CODE[enc.input_dtype], "predict": INFER_PREDICT[enc.input_dtype],
        "scratch": scratch_size(encoded),
        "extra_files": {"es_infer_config.h": "infer_config.h.j2"},
    }


def device_tables(device: DeviceModel, pointer_bytes: int, packed: bool, optimize: str = "speed"):
    """(name, bytes) of every constant object of the bundle of a model's device tables (inline code keeps only the
    descriptor, weights and leaves as tables)."""
    encoded = bundle_encoding(device, optimize)
    walked = INLINE_TABLES if inline_code(device, optimize) else ()
    return [(name, size) for name, size in encoded.table_bytes(pointer_bytes, packed).items()
            if size and name not in walked]


# ------------------------------------------------------------------------------------------------ inline code

INLINE_MAX_DEPTH = 60  # deeper trees keep the tables (C compilers need nest only 127 blocks)
INLINE_TABLES = ("feature", "threshold", "edges", "children", "tree_base", "leaves")  # what the inline walk holds


def inline_code(device: DeviceModel, optimize: str) -> bool:
    """A bundle for speed walks its trees in inline code, unless a tree is deeper than INLINE_MAX_DEPTH."""
    return optimize == "speed" and max(int(d.max()) for d in _leaf_depths(device.ensemble)) <= INLINE_MAX_DEPTH


def bundle_encoding(device: DeviceModel, optimize: str) -> EncodedModel:
    """The tables of a bundle: for inline code the folded ones with inline edges (the walk's constants)."""
    if inline_code(device, optimize):
        return encode(device, optimize, thresholds="inline", tree="folded")
    return encode(device, optimize)


def inline_walk(encoded: EncodedModel, name: str) -> str:
    """C of ``<name>_walk``: every tree as nested ifs on the raw inputs, exactly the folded walk of ``encoded``.

    A node goes left iff ``x[f] <= e`` (NaN right by the form of the comparison) or, when it sends NaN left,
    iff ``!(x[f] > e)``; float edges are hex float constants (exact). On cores without an FPU
    (``ES_F32_COMPARE_BITS``) the features' integer keys are computed once and compared with the edges' keys.
    A leaf adds its terms of the accumulators itself: its class's weight (class leaves), or ``w * v`` for every
    non-zero value ``v`` of its row (the stored q8 or Q15 value, or the additive score with weight 1), the very
    integers ``es_forest_add_leaf`` would add from the leaf table, which the bundle then does not hold."""
    enc = encoded.encoding
    dtype, ctype = enc.input_dtype, C_TYPES[enc.input_dtype]
    children, tree_base = encoded.children.astype(np.int64), encoded.tree_base.astype(np.int64)
    feature, edge, nan_left = encoded.feature.astype(np.int64), encoded.threshold, encoded.nan_left
    macro = name.upper()
    lines = []

    def test(i: int) -> str:
        left = f"{macro}_LE_NAN" if nan_left[i] else f"{macro}_LE"
        if dtype != "float32":
            return f"{left}({feature[i]}, {c_literal(edge[i], dtype)}, 0)"
        return f"{left}({feature[i]}, {hex_float(edge[i])}, {f32_key(edge[i])})"

    def walk(t: int, ref: int, indent: str) -> None:
        n_internal = int(tree_base[t + 1] - tree_base[t])
        if ref >= n_internal:
            lines.append(indent + leaf(t, ref - n_internal))
            return
        i = int(tree_base[t]) + ref
        lines.append(f"{indent}if ({test(i)}) {{")
        walk(t, int(children[2 * i]), indent + "    ")
        lines.append(f"{indent}}} else {{")
        walk(t, int(children[2 * i + 1]), indent + "    ")
        lines.append(f"{indent}}}")

    def leaf(t: int, slot: int) -> str:
        weight = int(encoded.weights[t]) if enc.weights and enc.leaves != "additive" else 1
        if enc.leaves == "class":
            return f"acc[{slot}] += {weight};"
        terms = [f"acc[{k}] += {weight * int(v)};" for k, v in enumerate(encoded.leaves[slot]) if v]
        return " ".join(terms) or ";"

    for t in range(encoded.n_trees):
        if t:
            lines.append(f"    {macro}_NEXT_TREE();")
        walk(t, 0, "    ")
    keys = [f"    int32_t key[{encoded.n_features}];", "    unsigned j;",
            f"    for (j = 0; j < {encoded.n_features}u; j++) {{", "        key[j] = es_f32_key(x[j]);", "    }"]
    compare = ([f"#define {macro}_LE(f, e, k) (key[f] <= (k))",
                f"#define {macro}_LE_NAN(f, e, k) (key[f] <= (k) || key[f] == ES_F32_KEY_NAN)",
                f"#define {macro}_NEXT_TREE() ES_TREE_BOUNDARY(key)",
                "#else",
                f"#define {macro}_LE(f, e, k) (x[f] <= (e))",
                f"#define {macro}_LE_NAN(f, e, k) (!(x[f] > (e)))",
                f"#define {macro}_NEXT_TREE() ES_TREE_BOUNDARY(x)"] if dtype == "float32"
               else [f"#define {macro}_LE(f, e, k) (x[f] <= (e))", f"#define {macro}_NEXT_TREE() ES_TREE_BOUNDARY(x)"])
    head = ["#if ES_F32_COMPARE_BITS" if dtype == "float32" else "#if 1", *compare, "#endif", "",
            f"ES_WALK_CODE static void {name}_walk(const void *input, int32_t *acc, const es_forest *model)", "{",
            f"    const {ctype} *x = (const {ctype} *)input;"]
    if dtype == "float32":
        head += ["#if ES_F32_COMPARE_BITS", *keys, "#endif"]
    return "\n".join(head + ["    (void)model;", *lines, "}"])


def hex_float(value) -> str:
    """A float32 as an exact C constant: a hex float, or INFINITY."""
    value = float(np.float32(value))
    if np.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    mantissa, exponent = float.hex(value).split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}f"


def f32_key(value) -> str:
    """``es_f32_key`` of a (non-NaN) float32 edge, as a C literal."""
    bits = int(np.asarray(value, dtype=np.float32).view(np.uint32))
    key = -(bits & 0x7FFFFFFF) if bits & 0x80000000 else bits
    return str(key)


def scratch_size(encoded) -> int:
    """int32 scratch of ``es_forest_predict_*``: the class accumulators, or score sums and the softmax's work."""
    return 2 * encoded.n_scores if encoded.encoding.leaves == "additive" else encoded.n_classes


def tree_tables(model, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                optimize: str = "speed") -> list[tuple[str, int]]:
    """Flash objects of a frozen bundle: exact for a fitted model (its encoding's tables), else the worst case of
    full trees of max_depth in the fastest encoding (for speed, trees in inline code: the descriptor alone, the
    budget counts the code, see :func:`edgestream.budget.inline_code_bound`). A regressor's leaves are one int16
    code each, summed from an int32 base score."""
    if hasattr(model, "ensemble_"):
        return device_tables(DeviceModel.from_model(model), pointer_bytes, packed, optimize)
    n_trees = getattr(model, "n_trees", 1)
    internal = n_trees * (2**model.max_depth - 1)
    leaves = n_trees * 2**model.max_depth
    per_tree = 2**model.max_depth - 1 + 2**model.max_depth
    child_bytes = 1 if per_tree < 256 else 2
    regressor = task_of(model) == REGRESSION
    leaf_bytes = 2 if regressor else {"q15": 2 * n_classes, "q8": n_classes, "vote": 0}[model.leaf_values]
    tables = [("descriptor", descriptor_bytes(pointer_bytes, packed)),
              ("feature", max(internal, 1)), ("threshold", max(internal, 1) * VALUE_BYTES[model.input_dtype]),
              ("children", max(2 * internal, 1) * child_bytes), ("tree_base", 2 * (n_trees + 1)),
              ("leaves", leaf_bytes * leaves), *([("base_score", 4)] if regressor else [])]
    return without_inline_tables(tables, optimize, model.max_depth)


def without_inline_tables(tables: list[tuple[str, int]], optimize: str, max_depth: int) -> list[tuple[str, int]]:
    """The worst-case tables of a configuration but those a bundle for speed holds as inline code instead
    (:func:`inline_code`: every tree at most ``max_depth`` deep is)."""
    if optimize != "speed" or max_depth > INLINE_MAX_DEPTH:
        return tables
    return [(name, size) for name, size in tables if name not in INLINE_TABLES]


def tree_worst_case(model, n_features: int, n_classes: int) -> WorstCase | None:
    """The largest trees of an unfitted tree or forest configuration: ``max_depth`` levels, at most ``max_nodes``
    nodes each (and the format's 65,535), leaf rows of ``leaf_values`` with every class non-zero (a regressor's:
    one int16 code)."""
    if hasattr(model, "ensemble_"):
        return None
    leaves = min(2 ** model.max_depth, ((model.max_nodes or MAX_NODES) + 1) // 2, (MAX_NODES + 1) // 2)
    if task_of(model) == REGRESSION:
        return WorstCase(getattr(model, "n_trees", 1), model.max_depth, leaves, n_features, 1, "additive", 1,
                         model.input_dtype)
    kind = {"q15": "q15", "q8": "q8", "vote": "class"}[model.leaf_values]
    return WorstCase(getattr(model, "n_trees", 1), model.max_depth, leaves, n_features, n_classes, kind,
                     1 if kind == "class" else n_classes, model.input_dtype)


# ------------------------------------------------------------------------- the worst case of a configuration

@dataclass(frozen=True)
class WorstCase:
    """The largest trees a configuration of a frozen learner can export, for the budget's bound of the inline code
    of a model not trained yet (:func:`edgestream.budget.inline_code_bound`).

    Every tree of the configuration is at most ``max_leaves`` leaves deep at most ``max_depth`` levels; the
    synthetic trees of :meth:`device` have exactly that many leaves, every internal node on the highest feature
    (the largest load offset), every edge distinct and not a small immediate (each is its own constant, none is
    shared or folded), and every leaf a distinct row with ``terms`` non-zero values of the leaf kind's largest
    magnitudes in the highest score slots (so no two leaves compile to the same code and every term is a
    full-width addition at the largest accumulator offset)."""

    n_trees: int  # trees of the configuration (boosting: iterations x scores)
    max_depth: int
    max_leaves: int  # per tree
    n_features: int
    n_classes: int
    leaves: str  # "class", "q8", "q15" or "additive"
    terms: int  # non-zero values per leaf row (class leaves: 1)
    input_dtype: str

    @property
    def inline(self) -> bool:
        """A bundle of this configuration for speed walks its trees in inline code (:func:`inline_code`)."""
        return self.max_depth <= INLINE_MAX_DEPTH

    def shape(self) -> dict:
        """Everything but the tree count: what a tree's inline code depends on."""
        return {key: value for key, value in vars(self).items() if key != "n_trees"}

    def device(self, n_trees: int) -> DeviceModel:
        """``n_trees`` synthetic worst-case trees of this configuration, as device tables."""
        depths = leaf_depth_profile(self.max_leaves, self.max_depth)
        nodes, node_edge, rows = [], [], []
        roots = []
        for _ in range(n_trees):
            roots.append(len(nodes))
            _append_tree(nodes, depths, len(rows))
            rows.extend(range(len(rows), len(rows) + len(depths)))
        nodes = np.array(nodes, dtype=NODE_DTYPE)
        node_edge = np.zeros(len(nodes), dtype=self.input_dtype)
        for root in roots:  # edges rise left to right: no comparison is implied by those above it
            order = _in_order(nodes, root)
            node_edge[order] = worst_edges(len(order), self.input_dtype)
            nodes["feature"][order] = self.n_features - 1 - np.arange(len(order)) % self.n_features
        leaf_values = worst_leaf_rows(len(rows), self.n_classes, self.leaves, self.terms)
        per_tree = len(depths)
        for t in range(n_trees):  # the trees take the slots in turn (boosting: tree t adds to score t % n_scores)
            block = slice(t * per_tree, (t + 1) * per_tree)
            leaf_values[block] = np.roll(leaf_values[block], -t, axis=1)
        n_scores = leaf_values.shape[1]
        ensemble = TreeEnsemble(nodes, np.asarray(roots, dtype=np.uint16), np.ones(n_trees, dtype=np.uint16),
                                leaf_values, self.n_features, "additive" if self.leaves == "additive" else "proba",
                                np.zeros(n_scores, dtype=np.int32) if self.leaves == "additive" else None)
        offsets = np.zeros(self.n_features + 1, dtype=np.uint16)
        return DeviceModel(self.input_dtype, np.zeros(0, dtype=self.input_dtype), offsets, ensemble, node_edge)


def leaf_depth_profile(max_leaves: int, max_depth: int) -> list[int]:
    """Leaf depths, left to right, of the worst-case tree: ``max_leaves`` leaves within ``max_depth`` levels, as
    unbalanced as the depth allows (a spine down to ``max_depth`` whose every level but the deepest hangs the
    largest full subtree that the leaves left and the depth admit): the layout with the longest jumps (over the
    largest subtrees), which the branch encodings depend on. Full trees (``2**max_depth`` leaves) are the one
    shape of their size."""
    leaves = max(1, min(max_leaves, 2 ** max_depth))

    def build(n: int, depth: int, level: int) -> list[int]:
        if n == 1:
            return [level]
        room = 2 ** (depth - 1)  # leaves a subtree one level down can hold
        spine = min(n - 1, room)  # the right subtree goes deepest
        rest = n - spine
        return build(rest, depth - 1, level + 1) + build(spine, depth - 1, level + 1)

    return build(leaves, max_depth, 0)


def _append_tree(nodes: list, depths: list[int], first_row: int) -> None:
    """Append one tree with leaves at ``depths`` (left to right) in the node format: children of node i at
    ``child`` and ``child + 1``, after their parent (breadth first); leaves point at rows from ``first_row``."""
    base = len(nodes)
    queue = [(depths, 0)]
    nodes.append(None)
    position, next_row = 0, [first_row]
    while position < len(queue):
        leaf_depths, level = queue[position]
        at = base + position
        if len(leaf_depths) == 1:
            nodes[at] = (LEAF_FEATURE, 0, next_row[0])
            next_row[0] += 1
        else:
            cut = next(i for i in range(1, len(leaf_depths) + 1) if _closed(leaf_depths[:i], level + 1))
            nodes[at] = (0, 0, base + len(queue))
            queue += [(leaf_depths[:cut], level + 1), (leaf_depths[cut:], level + 1)]
            nodes += [None, None]
        position += 1


def _closed(depths: list[int], level: int) -> bool:
    """The leaves at ``depths`` fill exactly one subtree rooted at ``level`` (Kraft's sum is one)."""
    return sum(2.0 ** (level - d) for d in depths) == 1.0


def _in_order(nodes: np.ndarray, root: int) -> list[int]:
    """Internal nodes of the tree at ``root``, left to right."""
    order, stack, node = [], [], root
    while stack or node is not None:
        while node is not None and nodes["feature"][node] != LEAF_FEATURE:
            stack.append(node)
            node = int(nodes["child"][node])
        if not stack:
            break
        node = stack.pop()
        order.append(node)
        node = int(nodes["child"][node]) + 1
    return order


def _spread_bytes(count: int, width: int, start: int, stop: int) -> list[int]:
    """``count`` integers of ``width`` bytes from ``start`` up, going round from ``start`` again at ``stop``,
    whose bytes are all non-zero and distinct (no byte compares or adds as a zero register or as a byte already
    loaded); rising while they do not go round."""
    values, value = [], start
    while len(values) < count:
        parts = [(value >> (8 * i)) & 0xFF for i in range(width)]
        if 0 not in parts and len(set(parts)) == width:
            values.append(value)
        value = value + 1 if value + 1 < stop else start
    return values


def worst_edges(count: int, dtype: str) -> np.ndarray:
    """``count`` rising edges of ``dtype``, each a constant no instruction holds as an immediate: float32 edges
    whose bit patterns (and integer keys) have four distinct non-zero bytes and are no short float immediate,
    integer edges likewise (int16: two bytes)."""
    if dtype == "int16":
        return np.asarray(_spread_bytes(count, 2, 0x1203, 0x8000), dtype=np.int16)
    bits = _spread_bytes(count, 4, 0x3F912345, 0x7F000000)  # positive finite floats (about 1.13 and up), rising
    if dtype == "int32":
        return np.asarray(bits, dtype=np.int32)
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def worst_leaf_rows(n_rows: int, n_classes: int, leaves: str, terms: int) -> np.ndarray:
    """``n_rows`` distinct leaf rows of kind ``leaves`` with ``terms`` non-zero values in the highest slots, of the
    largest magnitudes the kind holds (class leaves: one-hot rows, the classes taken in turn from the highest)."""
    if leaves == "additive":
        n_scores = 1 if n_classes == 2 else n_classes
        rows = np.zeros((n_rows, n_scores), dtype=np.int16)
        values = _spread_bytes(n_rows * terms, 2, 0x4A1B, 0x8000)
        signs = np.where(np.arange(len(values)) % 2, -1, 1)
        rows[:, n_scores - terms:] = (np.asarray(values) * signs).reshape(n_rows, terms)
        return rows
    rows = np.zeros((n_rows, n_classes), dtype=np.uint16)
    if leaves == "class":
        rows[np.arange(n_rows), n_classes - 1 - np.arange(n_rows) % n_classes] = Q15_ONE
        return rows
    if leaves == "q8":  # q8 rows are multiples of 256 up to Q15_ONE (stored as 1..128)
        values = 128 - np.arange(n_rows * terms) % 64
        rows[:, n_classes - terms:] = (values << 8).reshape(n_rows, terms)
        return rows
    values = np.asarray(_spread_bytes(n_rows * terms, 2, 0x4A1B, Q15_ONE))
    rows[:, n_classes - terms:] = values.reshape(n_rows, terms)
    return rows
