"""Understand a fitted model as the device will hold it, and export it as a self-contained C bundle.

:class:`DeviceModel` is the model reduced to the tables that go to flash. For a frozen model two lossless
reductions are applied, both checked by the parity tests:

* only the bin edges some split compares against are kept, and thresholds are renumbered to the kept edges
  (``bin <= t`` is ``x <= edges[t]``, so comparing against the kept edge gives the same branch);
* identical leaf rows (e.g. every pure leaf of one class) are stored once.

:func:`export_bundle` writes the runtime sources, the generated model files (see :mod:`edgestream.emit`), the
build files and a copy of the model into one directory.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from .tree import LEAF_FEATURE, TreeEnsemble

MANIFEST = "edgestream.json"
MODEL_COPY = "model.esm"


@dataclass
class DeviceModel:
    """The tables of one model as they are stored on the device."""

    name: str
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
    def from_model(cls, model, name: str = "model") -> "DeviceModel":
        if not hasattr(model, "ensemble_"):
            raise ValueError(f"{type(model).__name__} is not fitted; fit it before exporting")
        check_name(name)
        edges, offsets, nodes = prune_edges(model.bins_.edges_, model.ensemble_.nodes)
        leaf_values, leaf_index = np.unique(model.ensemble_.leaf_values, axis=0, return_inverse=True)
        is_leaf = nodes["feature"] == LEAF_FEATURE
        nodes["child"][is_leaf] = leaf_index.reshape(-1)[nodes["child"][is_leaf]]
        source = model.ensemble_
        ensemble = TreeEnsemble(nodes, source.roots.copy(), source.weights.copy(),
                                leaf_values.astype(source.leaf_values.dtype), source.n_features,
                                source.leaf_kind, source.base_score)
        ensemble.validate()
        return cls(name, model.bins_.dtype, edges.astype(model.bins_.dtype), offsets, ensemble)


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


def wrapper_stack_bytes(n_features: int, n_classes: int) -> int:
    """Locals of the generated predict wrapper: the bins, the uint32 accumulator and the Q15 probabilities."""
    return n_features + 4 * n_classes + 2 * n_classes


def check_name(name: str) -> None:
    if not (name.isidentifier() and name.isascii() and name.lower() == name) or name == "main" or name.startswith("es_"):
        raise ValueError(f"bundle name {name!r} must be a lowercase C identifier (letters, digits, _), "
                         "not 'main' and not starting with 'es_'")


RUNTIME_MODULES = {"trees": ("es_common", "es_infer", "es_infer_config"),
                   "shrubs": ("es_common", "es_binning", "es_tree", "es_cart", "es_shrubs")}


def runtime_sources(kind: str | None = None) -> list[Path]:
    """The hand-written device runtime shipped with the package (csrc/): all of it, or what ``kind`` needs."""
    root = resources.files("edgestream.csrc")
    files = sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".c", ".h")))
    return files if kind is None else [p for p in files if p.stem in RUNTIME_MODULES[kind]]


def tree_context(device: DeviceModel) -> dict:
    ensemble = device.ensemble
    return {
        "name": device.name, "input_dtype": device.input_dtype, "learning": False,
        "n_features": device.n_features, "n_classes": device.n_classes, "n_trees": ensemble.n_trees,
        "edges": device.edges, "offsets": device.offsets, "nodes": ensemble.nodes, "roots": ensemble.roots,
        "weights": ensemble.weights, "leaf_values": ensemble.leaf_values, "n_leaves": len(ensemble.leaf_values),
    }


INFER_PREDICT = {"float32": "es_forest_predict_f32", "int32": "es_forest_predict_i32", "int16": "es_forest_predict_i16"}
INFER_INPUT_CODE = {"float32": "F32", "int32": "I32", "int16": "I16"}
INFER_LEAF_MACRO = {"class": "CLASS", "q8": "Q8", "q15": "Q15", "additive": "ADDITIVE"}
INFER_LEAF_TYPE = {"class": None, "q8": "uint8_t", "q15": "uint16_t", "additive": "int16_t"}
INDEX_TYPES = {1: "uint8_t", 2: "uint16_t"}


def frozen_context(encoded, name: str) -> dict:
    """Template values of a frozen model's bundle in the encoding of ``encoded`` (see :mod:`edgestream.encoding`)."""
    from .emit import C_TYPES
    from .encoding import LEAF_CODES

    enc = encoded.encoding
    inline = enc.thresholds == "inline"
    return {
        "name": name, "input_dtype": enc.input_dtype, "learning": False,
        "n_features": encoded.n_features, "n_classes": encoded.n_classes, "n_trees": encoded.n_trees,
        "n_scores": encoded.n_scores, "encoding": enc.as_dict(),
        "encoding_text": ", ".join(f"{k}={v}" for k, v in enc.as_dict().items()),
        "feature": encoded.feature, "threshold": encoded.threshold, "edges": encoded.edges,
        "threshold_type": C_TYPES[enc.input_dtype] if inline else INDEX_TYPES[enc.edge_index_bytes],
        "threshold_dtype": enc.input_dtype if inline else "int",
        "children": encoded.children, "child_type": INDEX_TYPES[enc.child_bytes],
        "tree_base": encoded.tree_base, "weights": encoded.weights, "weighted": enc.weights,
        "leaves": encoded.leaves.reshape(-1) if enc.leaves != "class" else [], "leaf_type": INFER_LEAF_TYPE[enc.leaves],
        "base_score": encoded.base_score, "total_weight": encoded.total_weight,
        "layout": enc.layout, "leaf_code": LEAF_CODES[enc.leaves], "leaf_macro": INFER_LEAF_MACRO[enc.leaves],
        "input_code": INFER_INPUT_CODE[enc.input_dtype], "predict": INFER_PREDICT[enc.input_dtype],
        "scratch": max(encoded.n_classes, encoded.n_scores), "table_bytes": encoded.table_bytes(pointer_bytes=4),
    }


def shrubs_context(learner, name: str) -> dict:
    """A learning bundle keeps every bin edge (new shrubs may split anywhere) and starts from the current state."""
    from .emit import state_struct
    from .shrubs import config_values

    if not hasattr(learner, "window_bins"):
        raise ValueError("the shrub ensemble has no bins or classes yet; call fit_bins() and set_classes() first")
    edges, offsets = learner.bins_.flat_edges()
    state = learner.saved_arrays()
    initial = {key: state[key] for key in ("window_bins", "window_labels", "leaf_values", "roots", "weights")
               if state[key].any()}
    return {
        "name": name, "input_dtype": learner.input_dtype, "learning": True,
        "n_features": learner.n_features_, "n_classes": len(learner.classes_),
        "edges": edges, "offsets": offsets, "config": config_values(learner), "regions": learner.layout(),
        "state_struct": state_struct(name, learner.layout()),
        "state_bytes": learner.state_bytes(), "initial": initial,
        "nodes": state["nodes"] if state["nodes"].view(np.uint8).any() else [], "counters": state["counters"].tolist(),
    }


def export_bundle(model, out_dir, name: str = "model", optimize: str = "speed") -> Path:
    """Write a C bundle for ``model`` into ``out_dir`` (created; existing bundle files are replaced).

    A frozen tree model is written in the encoding ``optimize`` picks (:func:`edgestream.encoding.encode`:
    ``"speed"``, the fastest full-precision one, or ``"size"``, the smallest exact one); the manifest records it.
    """
    from . import emit
    from .encoding import OPTIMIZE, encode
    from .modelfile import model_bytes
    from .shrubs import ShrubEnsemble

    check_name(name)
    if optimize not in OPTIMIZE:
        raise ValueError(f"optimize={optimize!r} must be one of {OPTIMIZE}")
    if isinstance(model, ShrubEnsemble):
        context, template, kind = shrubs_context(model, name), "shrubs.c.j2", "shrubs"
    else:
        encoded = encode(DeviceModel.from_model(model, name), optimize)
        context, template, kind = frozen_context(encoded, name), "frozen.c.j2", "trees"
    generated = emit.render_bundle(context, template)
    if kind == "trees":
        generated["es_infer_config.h"] = emit.environment().get_template("infer_config.h.j2").render(context)
    saved = model_bytes(model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for source in runtime_sources(kind):
        shutil.copyfile(source, out / source.name)
    for filename, text in generated.items():
        (out / filename).write_text(text)
    (out / MODEL_COPY).write_bytes(saved)
    manifest = {
        "name": name,
        "learner": kind,
        "input_dtype": context["input_dtype"],
        "n_features": context["n_features"],
        "n_classes": context["n_classes"],
        "sources": sorted(p.name for p in out.glob("*.c") if p.name != "main.c"),
        "model": MODEL_COPY,
    }
    if kind == "trees":
        manifest.update(optimize=optimize, encoding=context["encoding"], table_bytes=context["table_bytes"])
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out
