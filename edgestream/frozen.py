"""A fitted tree model reduced to the constant tables a frozen bundle stores in flash.

Two lossless reductions are applied, both checked by the parity tests:

* only the bin edges some split compares against are kept, and thresholds are renumbered to the kept edges
  (``bin <= t`` is ``x <= edges[t]``, so comparing against the kept edge gives the same branch);
* identical leaf rows (e.g. every pure leaf of one class) are stored once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tree import LEAF_FEATURE, TreeEnsemble

INPUT_BYTES = {"float32": 4, "int32": 4}


@dataclass
class DeviceModel:
    """The tables of one model as they are stored on the device."""

    input_dtype: str  # "float32" or "int32"
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
        ensemble = TreeEnsemble(nodes, model.ensemble_.roots.copy(), model.ensemble_.weights.copy(),
                                leaf_values.astype(np.uint16), model.ensemble_.n_features)
        ensemble.validate()
        return cls(model.bins_.dtype, edges.astype(model.bins_.dtype), offsets, ensemble)

    def context(self) -> dict:
        ensemble = self.ensemble
        return {"edges": self.edges, "offsets": self.offsets, "nodes": ensemble.nodes, "roots": ensemble.roots,
                "weights": ensemble.weights, "leaf_values": ensemble.leaf_values, "n_trees": ensemble.n_trees,
                "n_leaves": len(ensemble.leaf_values)}


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


def tree_context(model, name: str) -> dict:
    return DeviceModel.from_model(model).context()


def tree_tables(model, n_features: int, n_classes: int, pointer_bytes: int, packed: bool) -> list[tuple[str, int]]:
    """Flash objects of a frozen bundle: exact for a fitted model, else full trees of max_depth, an edge per split."""
    input_bytes = INPUT_BYTES[model.input_dtype]
    if hasattr(model, "ensemble_"):
        device = DeviceModel.from_model(model)
        n_edges, n_nodes = max(len(device.edges), 1), len(device.ensemble.nodes)
        n_leaf_rows, n_trees = len(device.ensemble.leaf_values), device.ensemble.n_trees
    else:
        n_trees = getattr(model, "n_trees", 1)
        leaves = n_trees * 2**model.max_depth
        splits = leaves - n_trees  # each split keeps at most one edge
        n_edges = max(min(n_features * (model.max_bins - 1), splits), 1)
        n_nodes, n_leaf_rows = 2 * leaves - n_trees, leaves
    return [("edges", n_edges * input_bytes), ("offsets", 2 * (n_features + 1)), ("nodes", 4 * n_nodes),
            ("roots", 2 * n_trees), ("weights", 2 * n_trees), ("leaf_values", 2 * n_leaf_rows * n_classes),
            ("ensemble", 4 * pointer_bytes + 4 if packed else -(-(4 * pointer_bytes + 4) // pointer_bytes) * pointer_bytes)]
