"""Export a fitted model as a self-contained C bundle.

:func:`export_bundle` writes the runtime modules its learner needs (``csrc/``), the generated model files (the
learner's template and the shared header, example and build files, see :mod:`edgestream.emit`), a copy of the
model and a manifest, ``edgestream.json``, that says what the bundle holds:
``format_version``, ``name``, ``learner`` (a registry name), ``learning``, ``input_dtype``, ``n_features``,
``n_classes``, ``sources`` and ``model``, plus what the learner adds (a frozen tree model: ``optimize`` and its
``encoding``; a learning state: ``image_bytes`` and ``model_hash`` of its state images). Tools refuse a bundle of another format version.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

from . import emit, learners
from .encoding import OPTIMIZE

MANIFEST = "edgestream.json"
MODEL_COPY = "model.esm"
BUNDLE_FORMAT_VERSION = 2


def runtime_sources(modules=None) -> list[Path]:
    """The hand-written device runtime shipped with the package (csrc/): all of it, or the given modules and the
    headers they include (a module's generated ``<module>_state.h`` goes with it)."""
    root = resources.files("edgestream.csrc")
    files = sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".c", ".h")))
    if modules is None:
        return files
    return [p for p in files if p.stem in modules or p.stem.removesuffix("_state") in modules]


def runtime_modules(spec: learners.LearnerSpec) -> tuple[str, ...]:
    """The csrc/ modules of a learner's bundles: its own, plus es_image for the state images of a learning state."""
    return spec.runtime + (("es_image",) if spec.state is not None else ())


def bundle_context(model, name: str, optimize: str = "speed") -> tuple[dict, learners.LearnerSpec]:
    """The template context of a fitted model, and its learner. ``optimize`` (``speed`` or ``size``) picks the
    encoding of learners that have several (frozen trees); learning bundles have one."""
    emit.check_name(name)
    if optimize not in OPTIMIZE:
        raise ValueError(f"optimize={optimize!r} must be one of {', '.join(OPTIMIZE)}")
    spec = learners.of_model(model)
    if not learners.is_fitted(model):
        raise ValueError(f"this {type(model).__name__} is not fitted; fit it before exporting")
    input_dtype, n_features = learners.model_input(model)
    context = {"name": name, "learner": spec.name, "learning": spec.learning, "input_dtype": input_dtype,
               "n_features": n_features, "n_classes": len(model.classes_),
               "extra_files": {}, "manifest": {}, "checkpoint": None, **spec.context(model, name, optimize)}
    if spec.state is not None:
        from .checkpoint import context as checkpoint_context
        context.update(checkpoint_context(model, name))
        context["manifest"] = {**context["manifest"], "image_bytes": 24 + context["checkpoint"]["payload_bytes"],
                               "model_hash": context["checkpoint"]["hash"]}
    return context, spec


def generated_headers(model, optimize: str = "speed") -> dict[str, str]:
    """The headers a bundle of ``model`` generates in place of the runtime's defaults (file name -> text)."""
    context, _ = bundle_context(model, "model", optimize)
    return emit.render_files(context, context["extra_files"])


def export_bundle(model, out_dir, name: str = "model", optimize: str = "speed") -> Path:
    """Write a C bundle for ``model`` into ``out_dir`` (created; existing bundle files are replaced); ``optimize``:
    ``speed`` (the fastest full-precision encoding) or ``size`` (the smallest exact one) for frozen models."""
    from .modelfile import model_bytes

    context, spec = bundle_context(model, name, optimize)
    generated = emit.render_bundle(context, spec.template)
    saved = model_bytes(model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for source in runtime_sources(runtime_modules(spec)):
        shutil.copyfile(source, out / source.name)
    for filename, text in generated.items():
        (out / filename).write_text(text)
    (out / MODEL_COPY).write_bytes(saved)
    manifest = {
        "format_version": BUNDLE_FORMAT_VERSION,
        "name": name,
        "learner": spec.name,
        "learning": spec.learning,
        "input_dtype": context["input_dtype"],
        "n_features": context["n_features"],
        "n_classes": context["n_classes"],
        "sources": sorted(p.name for p in out.glob("*.c") if p.name != "main.c"),
        "model": MODEL_COPY,
        **context["manifest"],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def read_manifest(bundle_dir) -> dict:
    """The manifest of a bundle, with its resolved ``directory``; refuses other format versions."""
    path = Path(bundle_dir) / MANIFEST
    if not path.is_file():
        raise ValueError(f"{bundle_dir} is not an edgestream bundle (no {MANIFEST})")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None
    found = manifest.get("format_version", 1) if isinstance(manifest, dict) else None
    if found != BUNDLE_FORMAT_VERSION:
        raise ValueError(f"bundle {bundle_dir} has format_version {found!r}; this edgestream reads format_version "
                         f"{BUNDLE_FORMAT_VERSION}: export the model again (edgestream export MODEL -o DIR)")
    learners.get(manifest["learner"])
    return {**manifest, "directory": str(Path(bundle_dir).resolve())}
