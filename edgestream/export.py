"""Export a fitted model as a self-contained C bundle.

:func:`export_bundle` writes the runtime modules its learner needs (``csrc/``), the generated model files (the
learner's template and the shared header, example and build files, see :mod:`edgestream.emit`), a copy of the
model and a manifest, ``edgestream.json``, that says what the bundle holds:
``format_version``, ``name``, ``learner`` (a registry name), ``learning``, ``input_dtype``, ``n_features``,
``n_classes``, ``class_names`` (the label of each class index), ``edgestream_version``, ``model_sha256`` (of the
model copy), ``sources`` (paths of the C files to compile), ``include_dir``, ``files`` (everything the export
wrote) and ``model``, plus what the learner adds (a frozen tree model: ``optimize`` and its ``encoding``). Tools
refuse a bundle of another format version.

Layout (format 3): the C runtime, model tables and public header in ``src/``; ``Makefile`` and
``CMakeLists.txt`` whose default target is the static library only (the host example ``extras/main.c`` is the
separate target ``example`` / ``<name>_example``); ``library.properties`` and ``examples/<name>/<name>.ino`` (an
Arduino library), ``library.json`` (a PlatformIO library), ``zephyr/module.yml`` with its ``CMakeLists.txt`` and
``Kconfig`` (a Zephyr module), and ``extras/arm-none-eabi.cmake`` (a CMake toolchain file for Cortex-M).
Exporting into a folder removes the files an earlier export listed there first, and refuses a non-empty folder
that is not a bundle, so no stale generated file is ever built with the new ones.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import resources
from pathlib import Path

from . import __version__, emit, learners
from .encoding import OPTIMIZE

MANIFEST = "edgestream.json"
MODEL_COPY = "model.esm"
BUNDLE_FORMAT_VERSION = 3


def runtime_sources(modules=None) -> list[Path]:
    """The hand-written device runtime shipped with the package (csrc/): all of it, or the given modules and the
    headers they include (a module's generated ``<module>_state.h`` goes with it)."""
    root = resources.files("edgestream.csrc")
    files = sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".c", ".h")))
    if modules is None:
        return files
    return [p for p in files if p.stem in modules or p.stem.removesuffix("_state") in modules]


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
               "missing_rule": learners.missing_rule(model), "n_features": n_features, "n_classes": len(model.classes_),
               "extra_files": {}, "manifest": {}, **spec.context(model, name, optimize)}
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
    saved = model_bytes(model)
    runtime = runtime_sources(spec.runtime)
    src = emit.SOURCE_DIR
    headers = sorted({p.name for p in runtime if p.suffix == ".h"} | {f"{name}.h", *context["extra_files"]})
    sources = sorted({p.name for p in runtime if p.suffix == ".c"} | {f"{name}.c"})
    class_names = [str(label) for label in model.classes_.tolist()]
    context.update(version=__version__, model_sha256=hashlib.sha256(saved).hexdigest(), headers=headers,
                   sources=sources, class_names=[emit.c_string(label) for label in class_names])
    generated = emit.render_bundle(context, spec.template)
    out = Path(out_dir)
    clear_previous_export(out)
    (out / src).mkdir(parents=True, exist_ok=True)
    for source in runtime:
        shutil.copyfile(source, out / src / source.name)
    for filename, text in generated.items():
        (out / filename).parent.mkdir(parents=True, exist_ok=True)
        (out / filename).write_text(text)
    (out / MODEL_COPY).write_bytes(saved)
    written = sorted({f"{src}/{p.name}" for p in runtime} | set(generated) | {MODEL_COPY, MANIFEST})
    manifest = {
        "format_version": BUNDLE_FORMAT_VERSION,
        "name": name,
        "learner": spec.name,
        "learning": spec.learning,
        "input_dtype": context["input_dtype"],
        "n_features": context["n_features"],
        "n_classes": context["n_classes"],
        "class_names": class_names,
        "edgestream_version": __version__,
        "model_sha256": context["model_sha256"],
        "sources": [f"{src}/{source}" for source in sources],
        "include_dir": src,
        "files": written,
        "model": MODEL_COPY,
        **context["manifest"],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def clear_previous_export(out: Path) -> None:
    """Remove what an earlier export wrote into ``out`` (the ``files`` of its manifest), so that no stale
    generated file stays next to the new ones; a non-empty folder that is not a bundle is refused."""
    if not out.exists():
        return
    if not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder")
    manifest = out / MANIFEST
    previous = None
    if manifest.is_file():
        try:
            previous = json.loads(manifest.read_text()).get("files")
        except (json.JSONDecodeError, AttributeError):
            previous = None
    if previous is None:
        if any(out.iterdir()):
            raise ValueError(f"{out} is not empty and holds no bundle this edgestream wrote (no {MANIFEST} with "
                             f"its list of files); export into an empty or new folder")
        return
    root = out.resolve()
    for relative in previous:
        path = (out / str(relative)).resolve()
        if root in path.parents and path.is_file():
            path.unlink()
            for parent in path.parents:  # folders the export made and left empty
                if parent == root or any(parent.iterdir()):
                    break
                parent.rmdir()


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
    directory = Path(bundle_dir).resolve()
    return {**manifest, "directory": str(directory), "include_directory": str(directory / manifest["include_dir"])}
