"""Export a fitted model as a self-contained C bundle.

:func:`export_bundle` writes the runtime modules its learner needs (``csrc/``), the generated model files (the
learner's template and the shared header, example and build files, see :mod:`edgestream.emit`), a copy of the
model and a manifest, ``edgestream.json``, that says what the bundle holds:
``format_version``, ``name``, ``learner`` (a registry name), ``learning``, ``input_dtype``, ``n_features``,
``n_classes``, ``class_names`` (the label of each class index), ``feature_names`` (the name of each feature, in
the order of the input rows, or null), ``edgestream_version``, ``model_sha256`` (of the
model copy), ``sources`` (paths of the C files to compile), ``include_dir``, ``model`` and ``files`` (the SHA-256 of
every file the export wrote, checked by every tool that reads the bundle), plus what the learner adds (a frozen tree
model: ``optimize`` and its ``encoding``; a learning state: ``image_bytes`` and ``model_hash`` of its state images).
Tools refuse a bundle of another format version.

Layout (format 3): the C runtime, model tables and public header in ``src/``; ``Makefile`` and
``CMakeLists.txt`` whose default target is the static library only (the host example ``extras/main.c`` is the
separate target ``example`` / ``<name>_example``); ``library.properties`` and ``examples/<name>/<name>.ino`` (an
Arduino library), ``library.json`` (a PlatformIO library), ``zephyr/module.yml`` with its ``CMakeLists.txt`` and
``Kconfig`` (a Zephyr module), ``idf_component.yml`` (with ``CMakeLists.txt``'s ``ESP_PLATFORM`` branch, an ESP-IDF
component), and ``extras/arm-none-eabi.cmake`` and ``extras/riscv64-unknown-elf.cmake`` (CMake toolchain files for
Cortex-M and RISC-V).

Crash-safe: a bundle is written in a temporary directory beside the target and takes its place in one step, so a
kill at any moment leaves the complete old or the complete new bundle; no stale generated file survives an export,
and files edgestream did not write are kept (an export that would overwrite one is refused).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from . import __version__, emit, learners
from .encoding import OPTIMIZE
from .learners.skbase import feature_names
from .task import ANOMALY, CLASSIFICATION, REGRESSION, TASKS, TargetScale, output_context, task_of

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


def runtime_modules(spec: learners.LearnerSpec, task: str = CLASSIFICATION) -> tuple[str, ...]:
    """The csrc/ modules of a learner's bundles of ``task``: its own (and those of its regression form), es_flash
    (the reads of constant tables in flash) and es_image for the state images of a learning state."""
    own = spec.runtime + (spec.regressor_runtime if task == REGRESSION else ())
    return own + ("es_flash",) + (("es_image",) if spec.state is not None and spec.checkpoints else ())


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
    output = output_context(model)
    context = {"name": name, "learner": spec.name, "learning": spec.learning, "input_dtype": input_dtype,
               "missing_rule": learners.missing_rule(model), "n_features": n_features, "n_classes": output["n_classes"],
               "task": output["task"], "target": output["target"], "extra_files": {}, "manifest": {}, "checkpoint": None,
               **spec.context(model, name, optimize)}
    if spec.state is not None and spec.checkpoints:
        from .checkpoint import context as checkpoint_context
        context.update(checkpoint_context(model, name))
        context["manifest"] = {**context["manifest"], "image_bytes": 24 + context["checkpoint"]["payload_bytes"],
                               "model_hash": context["checkpoint"]["hash"]}
    return context, spec


def generated_headers(model, optimize: str = "speed") -> dict[str, str]:
    """The headers a bundle of ``model`` generates in place of the runtime's defaults (file name -> text)."""
    context, _ = bundle_context(model, "model", optimize)
    return emit.render_files(context, context["extra_files"])


def bundle_files(model, name: str = "model", optimize: str = "speed") -> tuple[dict[str, bytes], dict,
                                                                                learners.LearnerSpec]:
    """Every file of a bundle but its manifest (path in the bundle -> bytes), the template context and the learner."""
    from .modelfile import model_bytes

    context, spec = bundle_context(model, name, optimize)
    saved = model_bytes(model)
    runtime = runtime_sources(runtime_modules(spec, task_of(model)))
    headers = sorted({p.name for p in runtime if p.suffix == ".h"} | {f"{name}.h", *context["extra_files"]})
    sources = sorted({p.name for p in runtime if p.suffix == ".c"} | {f"{name}.c"})
    names = column_names(model)
    context.update(version=__version__, model_sha256=sha256(saved), headers=headers, sources=sources,
                   class_names=[emit.c_string(label) for label in output_context(model)["class_names"]],
                   feature_names=None if names is None else [emit.c_string(name) for name in names])
    files = {f"{emit.SOURCE_DIR}/{source.name}": source.read_bytes() for source in runtime}
    files.update({filename: text.encode() for filename, text in emit.render_bundle(context, spec.template).items()})
    files[MODEL_COPY] = saved
    return files, context, spec


def column_names(model) -> list[str] | None:
    """The names of a model's features in the order the device takes them: the DataFrame's columns it was fitted
    on, or the data file's that ``edgestream fit`` learned from (None when neither is known)."""
    return feature_names(model) or getattr(model, "columns_", None)


def export_bundle(model, out_dir, name: str = "model", optimize: str = "speed") -> Path:
    """Write a C bundle for ``model`` into ``out_dir``; ``optimize``: ``speed`` (the fastest full-precision
    encoding) or ``size`` (the smallest exact one) for frozen models.

    Crash-safe: the bundle is written (and fsynced) in a temporary directory beside ``out_dir`` and then takes its
    place in one step (an atomic exchange where the system has one), so after a kill at any moment ``out_dir``
    holds the complete old or the complete new bundle. Files of an earlier bundle that this one does not write
    (stale sources) go; files edgestream did not write stay, and an export that would overwrite one of them (or a
    generated file changed by hand) is refused. Errors name the destination."""
    files, context, spec = bundle_files(model, name, optimize)
    src = emit.SOURCE_DIR
    sources, output = context["sources"], output_context(model)
    manifest = {
        "format_version": BUNDLE_FORMAT_VERSION,
        "name": name,
        "learner": spec.name,
        "learning": spec.learning,
        "input_dtype": context["input_dtype"],
        "n_features": context["n_features"],
        "task": output["task"],
        "n_classes": output["n_classes"],
        "class_names": output["class_names"],
        "feature_names": column_names(model),
        **({"target": output["target"]} if output["target"] else {}),
        "edgestream_version": __version__,
        "model_sha256": context["model_sha256"],
        "sources": [f"{src}/{source}" for source in sources],
        "include_dir": src,
        "model": MODEL_COPY,
        **context["manifest"],
        "files": {filename: sha256(data) for filename, data in sorted(files.items())},
    }
    files[MANIFEST] = (json.dumps(manifest, indent=2) + "\n").encode()
    out = Path(out_dir)
    try:
        keep = user_files(out, set(files))
        _publish(out, files, keep)
    except OSError as error:
        raise OSError(error.errno, f"export to {out} failed: {error.strerror or error}") from None
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def user_files(out: Path, generated: set[str]) -> list[str]:
    """Entries of an existing ``out`` that edgestream did not write (kept by an export); refuses an export that
    would overwrite one of them, or a generated file changed since its export."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise ValueError(f"cannot export to {out}: it exists and is not a directory")
    ours = {}
    manifest_path = out / MANIFEST
    if manifest_path.is_file():
        try:
            ours = dict(json.loads(manifest_path.read_text()).get("files", {}))
        except (ValueError, AttributeError):
            raise ValueError(f"cannot export to {out}: its {MANIFEST} is not a bundle manifest; move it away or "
                             f"export to another directory") from None
        ours[MANIFEST] = None
    for path, digest in ours.items():
        existing = out / path
        if digest is not None and existing.exists() and (not existing.is_file() or sha256(existing.read_bytes()) != digest):
            raise ValueError(f"cannot export to {out}: {existing} was changed since edgestream wrote it; move it "
                             f"away (or restore it) first")
    ours_top, generated_top = {top_level(path) for path in ours}, {top_level(path) for path in generated}
    keep = []
    for entry in sorted(out.iterdir()):
        if entry.name in ours_top:
            continue
        if entry.name in generated_top:
            raise ValueError(f"cannot export to {out}: it holds {entry.name}, which edgestream did not write and the "
                             f"bundle would overwrite; move it away or export to another directory")
        keep.append(entry.name)
    return keep


def top_level(path: str) -> str:
    """The entry of the bundle folder a bundle path lies in (``src/x.c`` -> ``src``)."""
    return path.split("/", 1)[0]


def _fsync_directory(path: Path) -> None:
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _publish(out: Path, files: dict[str, bytes], keep: list[str]) -> None:
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{out.name}.export-*"):  # left by an export killed before its swap
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.export-", dir=parent))
    try:
        for filename, data in files.items():
            (work / filename).parent.mkdir(parents=True, exist_ok=True)
            with open(work / filename, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for entry in keep:  # the user's own files move over with the bundle (hard links where possible)
            source = out / entry
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, work / entry, symlinks=True, copy_function=_link_or_copy)
            else:
                _link_or_copy(source, work / entry)
        _fsync_directory(work)
        if not out.exists():
            os.rename(work, out)
        elif _exchange(work, out):
            shutil.rmtree(work, ignore_errors=True)  # now the old bundle
        else:  # no atomic exchange: a kill between the two renames leaves the old bundle beside the target
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.export-old-", dir=parent))
            os.rename(out, old / "bundle")
            os.rename(work, out)
            shutil.rmtree(old, ignore_errors=True)
        _fsync_directory(parent)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _link_or_copy(source, destination) -> None:
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, destination, follow_symlinks=False)


def verify_files(bundle_dir, manifest: dict) -> None:
    """Every file the manifest lists is there with its hash; the error names the first that is not."""
    for filename, digest in manifest.get("files", {}).items():
        path = Path(bundle_dir) / filename
        if not path.is_file():
            raise ValueError(f"bundle {bundle_dir} is incomplete: {filename} is missing; export the model again")
        if sha256(path.read_bytes()) != digest:
            raise ValueError(f"bundle {bundle_dir}: {filename} differs from the file edgestream wrote (its hash is "
                             f"not the manifest's); export the model again")


# The manifest fields every tool reads, and their JSON types (bool is not an int here).
MANIFEST_FIELDS = {"format_version": int, "name": str, "learner": str, "learning": bool, "input_dtype": str,
                   "n_features": int, "n_classes": int, "class_names": list, "model_sha256": str, "sources": list,
                   "include_dir": str, "model": str, "files": dict}
INPUT_DTYPES = ("float32", "int32", "int16")


def read_manifest(bundle_dir) -> dict:
    """The manifest of a bundle, with its resolved ``directory``; refuses other format versions, fields that are
    missing or of the wrong type or value, paths outside the bundle, and files whose hash is not the manifest's."""
    path = Path(bundle_dir) / MANIFEST
    if Path(bundle_dir).is_file():
        raise ValueError(f"{bundle_dir} is a file, not an edgestream bundle directory (a model file is exported "
                         f"into one with: edgestream export MODEL -o DIR)")
    if not path.is_file():
        raise ValueError(f"{bundle_dir} is not an edgestream bundle (no {MANIFEST})")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None
    found = manifest.get("format_version", 1) if isinstance(manifest, dict) else None
    if found != BUNDLE_FORMAT_VERSION:
        raise ValueError(f"bundle {bundle_dir} has format_version {found!r}; this edgestream reads format_version "
                         f"{BUNDLE_FORMAT_VERSION}: export the model again (edgestream export MODEL -o DIR)")
    try:
        check_manifest(manifest)
    except ValueError as error:
        raise ValueError(f"bundle {bundle_dir}: {error}; export the model again") from None
    verify_files(bundle_dir, manifest)
    directory = Path(bundle_dir).resolve()
    return {**manifest, "directory": str(directory), "include_directory": str(directory / manifest["include_dir"])}


def check_manifest(manifest: dict) -> None:
    """Types and values of the fields tools use (see :data:`MANIFEST_FIELDS`); ``ValueError`` naming the first
    that is wrong."""
    from .tree import CLASSES, FEATURES

    for key, kind in MANIFEST_FIELDS.items():
        value = manifest.get(key)
        if key not in manifest or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"manifest field {key!r} is {'missing' if key not in manifest else repr(value)}, "
                             f"expected a JSON {_JSON_NAMES[kind]}")
    try:
        emit.check_name(manifest["name"])
    except ValueError:
        raise ValueError(f"manifest name {manifest['name']!r} is not a C identifier edgestream writes (lowercase, "
                         f"not a C keyword, not 'main', not starting with 'es_')") from None
    if manifest["input_dtype"] not in INPUT_DTYPES:
        raise ValueError(f"manifest input_dtype {manifest['input_dtype']!r} must be one of {', '.join(INPUT_DTYPES)}")
    FEATURES.check(manifest["n_features"], "manifest n_features")
    task = manifest.get("task", CLASSIFICATION)
    if task not in TASKS:
        raise ValueError(f"manifest task {task!r} must be one of {', '.join(TASKS)}")
    learners.get(manifest["learner"], task)
    if task == ANOMALY:
        if manifest["n_classes"] != 1 or manifest["class_names"]:
            raise ValueError("a detector's manifest has n_classes 1 and no class_names")
        return _check_files(manifest)
    if task == REGRESSION:
        TargetScale.from_json(manifest.get("target"))
        divisor = manifest["target"].get("divisor")
        if not isinstance(divisor, int) or isinstance(divisor, bool) or not 1 <= divisor <= 65535:
            raise ValueError(f"manifest target divisor {divisor!r} must be an integer from 1 to 65535")
        if manifest["n_classes"] != 1 or manifest["class_names"]:
            raise ValueError("a regressor's manifest has n_classes 1 and no class_names")
        return _check_files(manifest)
    CLASSES.check(manifest["n_classes"], "manifest n_classes")
    names = manifest["class_names"]
    if len(names) != manifest["n_classes"] or not all(isinstance(label, str) for label in names):
        raise ValueError(f"manifest class_names must be {manifest['n_classes']} strings (n_classes), got {names!r}")
    _check_files(manifest)


def _check_files(manifest: dict) -> None:
    """The manifest's file table, model, sources and include folder: paths inside the bundle, listed files."""
    files = manifest["files"]
    for filename, digest in files.items():
        if not _inside(filename) or not (isinstance(digest, str) and len(digest) == 64):
            raise ValueError(f"manifest files entry {filename!r}: {digest!r} is not a relative path inside the bundle "
                             f"with a SHA-256")
    for key, value in [("model", manifest["model"]), *(("sources", source) for source in manifest["sources"])]:
        if not isinstance(value, str) or value not in files:
            raise ValueError(f"manifest {key} {value!r} is not one of the bundle's files")
    include = manifest["include_dir"]
    if not _inside(include) or not any(filename.startswith(f"{include}/") for filename in files):
        raise ValueError(f"manifest include_dir {include!r} is not a folder of the bundle's files")


_JSON_NAMES = {int: "integer", str: "string", bool: "boolean", list: "array", dict: "object"}


def _inside(relative: str) -> bool:
    """A path relative to the bundle that stays inside it."""
    path = Path(relative)
    return bool(relative) and not path.is_absolute() and ".." not in path.parts and "\\" not in relative


def load_bundle_model(manifest: dict):
    """The Python model of a bundle read by :func:`read_manifest`: its model copy, refused when it is not the
    model the bundle's C code was generated from (another learner, features, classes or model file)."""
    from .modelfile import load_model

    directory = Path(manifest["directory"])
    path = directory / manifest["model"]
    if sha256(path.read_bytes()) != manifest["model_sha256"]:
        raise ValueError(f"bundle {directory}: {manifest['model']} is not the model the bundle was exported from "
                         f"(its SHA-256 is not the manifest's model_sha256); export the model again")
    model = load_model(path)
    input_dtype, n_features = learners.model_input(model)
    output = output_context(model)
    held = {"learner": learners.of_model(model).name, "input_dtype": input_dtype, "n_features": n_features,
            "task": output["task"], "n_classes": output["n_classes"], "class_names": output["class_names"],
            "target": output["target"]}
    manifest = {"task": CLASSIFICATION, "target": None, **manifest}
    differ = [f"{key} {value!r} (manifest {manifest[key]!r})" for key, value in held.items() if value != manifest[key]]
    if differ:
        raise ValueError(f"bundle {directory}: {manifest['model']} holds another model than the bundle's C code: "
                         f"{', '.join(differ)}; export the model again")
    return model
