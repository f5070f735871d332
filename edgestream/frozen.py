"""A fitted tree model reduced to the tables a frozen bundle stores in flash (then encoded by :mod:`edgestream.encoding`).

Two lossless reductions are applied, both checked by the parity tests:

* only the bin edges some split compares against are kept, and thresholds are renumbered to the kept edges
  (``bin <= t`` is ``x <= edges[t]``, so comparing against the kept edge gives the same branch);
* identical leaf rows (e.g. every pure leaf of one class) are stored once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .emit import C_TYPES
from .encoding import LEAF_CODES, VALUE_BYTES, descriptor_bytes, encode
from .tree import LEAF_FEATURE, TreeEnsemble


@dataclass
class DeviceModel:
    """The tables of one model as they are stored on the device."""

    input_dtype: str  # "float32", "int32" or "int16"
    edges: np.ndarray  # float32 or int32, all features' edges back to back
    offsets: np.ndarray  # uint16 [n_features + 1]
    ensemble: TreeEnsemble

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
                                source.leaf_kind, source.base_score)
        ensemble.validate()
        return cls(model.bins_.dtype, edges.astype(model.bins_.dtype), offsets, ensemble)


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
    encoded = encode(DeviceModel.from_model(model), optimize)
    enc = encoded.encoding
    inline = enc.thresholds == "inline"
    return {
        "n_trees": encoded.n_trees, "n_scores": encoded.n_scores,
        "encoding_text": ", ".join(f"{k}={v}" for k, v in enc.as_dict().items()),
        "feature": encoded.feature, "threshold": encoded.threshold, "edges": encoded.edges,
        "threshold_type": C_TYPES[enc.input_dtype] if inline else INDEX_TYPES[enc.edge_index_bytes],
        "threshold_dtype": enc.input_dtype if inline else "int",
        "children": encoded.children, "child_type": INDEX_TYPES[enc.child_bytes],
        "tree_base": encoded.tree_base, "weights": encoded.weights, "weighted": enc.weights,
        "leaves": encoded.leaves.reshape(-1) if enc.leaves != "class" else [], "leaf_type": INFER_LEAF_TYPE[enc.leaves],
        "base_score": encoded.base_score, "total_weight": encoded.total_weight,
        "layout": enc.layout, "depth": enc.depth, "leaf_code": LEAF_CODES[enc.leaves], "leaf_macro": INFER_LEAF_MACRO[enc.leaves],
        "input_code": INFER_INPUT_CODE[enc.input_dtype], "predict": INFER_PREDICT[enc.input_dtype],
        "scratch": scratch_size(encoded),
        "extra_files": {"es_infer_config.h": "infer_config.h.j2"},
        "manifest": {"optimize": optimize, "encoding": enc.as_dict()},
    }


def scratch_size(encoded) -> int:
    """int32 scratch of ``es_forest_predict_*``: the class accumulators, or score sums and the softmax's work."""
    return 2 * encoded.n_scores if encoded.encoding.leaves == "additive" else encoded.n_classes


def tree_tables(model, n_features: int, n_classes: int, pointer_bytes: int, packed: bool,
                optimize: str = "speed") -> list[tuple[str, int]]:
    """Flash objects of a frozen bundle: exact for a fitted model (its encoding's tables), else the worst case of
    full trees of max_depth in the fastest encoding."""
    if hasattr(model, "ensemble_"):
        encoded = encode(DeviceModel.from_model(model), optimize)
        return [(name, size) for name, size in encoded.table_bytes(pointer_bytes, packed).items() if size]
    n_trees = getattr(model, "n_trees", 1)
    internal = n_trees * (2**model.max_depth - 1)
    leaves = n_trees * 2**model.max_depth
    per_tree = 2**model.max_depth - 1 + 2**model.max_depth
    child_bytes = 1 if per_tree < 256 else 2
    leaf_bytes = {"q15": 2 * n_classes, "q8": n_classes, "vote": 0}[model.leaf_values] * leaves
    return [("descriptor", descriptor_bytes(pointer_bytes, packed)),
            ("feature", max(internal, 1)), ("threshold", max(internal, 1) * VALUE_BYTES[model.input_dtype]),
            ("children", max(2 * internal, 1) * child_bytes), ("tree_base", 2 * (n_trees + 1)),
            ("leaves", leaf_bytes)]
