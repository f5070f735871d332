"""Saving and loading fitted models.

A model file is three parts:

1. the magic line ``EDGESTREAM-MODEL\\n``;
2. one line of JSON: ``format_version``, ``learner`` (class name), ``params`` (``get_params()``), ``classes``
   (JSON keeps ints, floats, strings and booleans apart, so labels come back as the kind they were; a regressor
   has ``task`` and ``target`` instead: the ``offset`` and ``step`` of :class:`edgestream.task.TargetScale`, and
   ``saturated``: the targets it learned outside that range, saturated, as ``saturated_`` counts them; an
   imported regressor learned no rows and has none; the host encodes the targets, so a device's state image
   has no count: a model continued from an image keeps its model file's),
   ``binning`` (``max_bins``, ``strategy``, ``dtype``; null for a learner of raw features), ``n_features``,
   ``feature_names`` (the DataFrame columns the model was fitted on, or null), ``columns`` (the data file's
   feature columns ``edgestream fit`` learned from, in order, or null) and ``sha256`` of the payload;
3. the payload: an ``.npz`` archive of the tree tables and the flat bin edges, read with ``allow_pickle=False``
   so that loading a file never runs code from it.

Versions: 2 added a regressor's ``saturated``. A file of version 1 is still read (its regressor's count starts
at 0, as it did then); a file of a later version is refused, naming both.

The payload's zip entries carry a fixed timestamp, so the same model always gives the same bytes (bundles that
embed the file can be cached by content hash). Files are written to a temporary file in the target directory and
moved into place, so a failure never leaves a half-written model, and the next write removes the temporary files
of writers that were killed (:func:`write_atomic`). Every problem raises
:class:`edgestream.errors.ModelFileError`.
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: temporary files of killed writers go by age only
    fcntl = None

from . import learners
from .binning import MAX_EDGES, BinMapper
from .errors import ModelFileError
from .learners.skbase import feature_names
from .scratch import writer_ended
from .task import ANOMALY, REGRESSION, TargetScale, task_of

MAGIC = b"EDGESTREAM-MODEL\n"
FORMAT_VERSION = 2  # 2: a regressor's saturated count
READABLE_VERSIONS = (1, FORMAT_VERSION)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def save_model(model, path) -> Path:
    """Write a fitted model to ``path`` atomically and return the path."""
    path = Path(path)
    data = model_bytes(model)
    try:
        write_atomic(path, data)
    except OSError as error:
        raise ModelFileError(f"cannot write model file {path}: {error.strerror or error}") from None
    return path


def load_model(path):
    """Read a model file written by :func:`save_model`, checking magic, version, checksum and every table."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ModelFileError(f"cannot read model file {path}: {error.strerror or error}") from None
    return model_from_bytes(data, str(path))


def _names(header: dict, key: str) -> list[str] | None:
    """A header's list of one name per feature (or None)."""
    names = header.get(key)
    if names is not None and (not isinstance(names, list) or len(names) != header["n_features"]
                              or not all(isinstance(name, str) for name in names)):
        raise ValueError(f"{key} must be a list of {header['n_features']} strings")
    return names


def model_bytes(model) -> bytes:
    """The complete file contents for a fitted model."""
    name = type(model).__name__
    try:
        learners.of_model(model)
    except ValueError as error:
        raise ModelFileError(f"cannot save a {name}: {error}") from None
    try:
        arrays = model.saved_arrays()
    except RuntimeError as error:
        raise ModelFileError(f"cannot save an unfitted {name}: {error}") from None
    bins = getattr(model, "bins_", None)
    if bins is not None:
        edges, offsets = bins.flat_edges()
        arrays = {**arrays, "bin_edges": edges, "bin_offsets": offsets}
    payload = _npz_bytes(arrays)
    header = {
        "format_version": FORMAT_VERSION,
        "learner": name,
        "params": model.get_params(),
        **_output_header(model),
        "binning": None if bins is None else {"max_bins": bins.max_bins, "strategy": bins.strategy,
                                              "dtype": bins.dtype},
        "n_features": learners.model_input(model)[1],
        "feature_names": feature_names(model),
        "columns": getattr(model, "columns_", None),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    try:
        line = json.dumps(header, default=_json_scalar, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ModelFileError(f"cannot save this {name}: {error}") from None
    return MAGIC + line.encode() + b"\n" + payload


def model_from_bytes(data: bytes, source: str = "<bytes>"):
    """Rebuild a model from file contents; ``source`` names the file in error messages."""
    if not data.startswith(MAGIC):
        raise ModelFileError(f"{source} is not an edgestream model file (it does not start with {MAGIC[:-1].decode()!r})")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise ModelFileError(f"corrupt model file {source}: the header line is incomplete (truncated file?)")
    try:
        header = json.loads(data[len(MAGIC):end])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(f"corrupt model file {source}: the header is not valid JSON ({error})") from None
    if not isinstance(header, dict):
        raise ModelFileError(f"corrupt model file {source}: the header is not a JSON object")
    _check_version(header, source)
    payload = data[end + 1:]
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise ModelFileError(f"corrupt model file {source}: payload checksum mismatch (truncated or modified)")
    try:
        return _rebuild(header, _read_npz(payload), source)
    except KeyError as error:
        raise ModelFileError(f"model file {source} has no entry {error}: written by an edgestream whose state "
                             f"for this learner differs (or damaged); train or convert it again") from None
    except (TypeError, ValueError) as error:
        raise ModelFileError(f"invalid model file {source}: {error}") from None


def _check_version(header: dict, source: str) -> None:
    found = header.get("format_version")
    if type(found) is not int or found not in READABLE_VERSIONS:
        hint = "; upgrade edgestream to read it" if isinstance(found, int) and found > FORMAT_VERSION else ""
        raise ModelFileError(f"model file {source} has format_version {found!r}; this edgestream supports "
                             f"format_version {' and '.join(map(str, READABLE_VERSIONS))}{hint}")


def _rebuild(header: dict, arrays: dict, source: str):
    try:
        spec = learners.by_class_name(header["learner"])
    except ValueError as error:
        raise ModelFileError(f"model file {source}: {error}") from None
    model = spec.make(task_of(learners.class_named(header["learner"])), **header["params"])
    if task_of(model) == REGRESSION:
        model.target_ = TargetScale.from_json(header.get("target"))
    elif task_of(model) != ANOMALY:  # a detector has no output description
        model.classes_ = _classes(header["classes"])
    names, columns = (_names(header, key) for key in ("feature_names", "columns"))
    if names is not None:
        model.feature_names_in_ = np.asarray(names, dtype=object)
    if columns is not None:
        model.columns_ = columns
    binning = header["binning"]
    if binning is None:  # a learner of raw features: its arrays carry the input description
        model.restore_arrays(arrays)
        if learners.model_input(model)[1] != header["n_features"]:
            raise ValueError(f"state for {learners.model_input(model)[1]} features, header says "
                             f"{header['n_features']}")
        return _restore_saturated(model, header)
    _check_bin_tables(arrays, binning["dtype"])
    model.bins_ = BinMapper.from_flat_edges(arrays["bin_edges"], arrays["bin_offsets"], binning["max_bins"],
                                            binning["strategy"], binning["dtype"])
    if model.bins_.n_features != header["n_features"]:
        raise ValueError(f"bin edges for {model.bins_.n_features} features, header says {header['n_features']}")
    model.restore_arrays(arrays)
    return _restore_saturated(model, header)


def _counts_saturated(model) -> bool:
    """A regressor that learned rows (not an imported one) counts the targets it saturated."""
    return task_of(model) == REGRESSION and learners.of_model(model).trainable


def _restore_saturated(model, header: dict):
    """A regressor's ``saturated_`` from the header (0 in a file of format 1)."""
    if _counts_saturated(model):
        count = header.get("saturated", 0)
        if type(count) is not int or count < 0:
            raise ValueError(f"saturated={count!r} must be a count of rows (an integer >= 0)")
        model.saturated_ = count
    return model


def _output_header(model) -> dict:
    """The header's part that depends on the task: ``classes``, or a regressor's ``task`` and ``target``."""
    if task_of(model) == REGRESSION:
        counted = {"saturated": int(model.saturated_)} if _counts_saturated(model) else {}
        return {"task": REGRESSION, "target": model.target_.to_json(), **counted}
    if task_of(model) == ANOMALY:
        return {"task": ANOMALY}
    return {"classes": np.asarray(model.classes_).tolist()}


def _classes(labels) -> np.ndarray:
    """Class labels of one kind (all int, float, str or bool), as ``np.unique`` had sorted them at fit time."""
    kinds = {type(label) for label in labels} if isinstance(labels, list) else set()
    if len(kinds) != 1 or not kinds <= {int, float, str, bool}:
        raise ValueError("classes must be a non-empty list of labels of one kind (int, float, str or bool)")
    return np.asarray(labels)


def _check_bin_tables(arrays: dict, edge_dtype: str) -> None:
    """Dtypes, shapes and bin offsets, checked before anything indexes with them."""
    for name, dtype in {"bin_offsets": np.uint16, "bin_edges": edge_dtype}.items():
        if arrays[name].dtype != np.dtype(dtype) or arrays[name].ndim != 1:
            raise ValueError(f"table {name!r} has dtype {arrays[name].dtype} and shape {arrays[name].shape}, "
                             f"expected a 1-D {np.dtype(dtype)} array")
    offsets, edges = arrays["bin_offsets"].astype(np.int64), arrays["bin_edges"]
    if len(offsets) < 2 or offsets[0] != 0 or offsets[-1] != len(edges) or (np.diff(offsets) < 0).any():
        raise ValueError("bin offsets do not partition the bin edges")
    for start, stop in zip(offsets[:-1], offsets[1:]):
        if stop - start > MAX_EDGES or not (np.diff(edges[start:stop]) > 0).all():
            raise ValueError(f"a feature has more than {MAX_EDGES} or unsorted bin edges")


def _npz_bytes(arrays: dict) -> bytes:
    """An ``np.savez``-compatible archive with fixed timestamps, so equal models give equal bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            with archive.open(zipfile.ZipInfo(f"{name}.npy", _ZIP_DATE), "w") as entry:
                np.lib.format.write_array(entry, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def _read_npz(payload: bytes) -> dict:
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(f"the payload is not a readable array archive ({error})") from None


def _json_scalar(value):
    """numpy scalars in ``get_params()`` become plain JSON numbers and booleans."""
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise TypeError(f"parameter value {value!r} of type {type(value).__name__} cannot be stored in a model file")


STALE_SECONDS = 600  # an unlocked temporary file this old was left by a killed writer (a live one renames in seconds)


def write_atomic(path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a kill at any moment leaves the old or the new file: to a temporary file
    beside it (``.NAME.PID.RANDOM.tmp``, locked while it is written where the system has ``flock``), fsynced,
    renamed into place, then the directory fsynced. The temporary files of earlier writers that were killed are
    removed first (see :func:`remove_orphans`)."""
    path = Path(path)
    remove_orphans(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    try:
        _lock(fd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory)
    except OSError:
        pass
    finally:
        os.close(directory)


def remove_orphans(path: Path) -> list[Path]:
    """Remove the temporary files that killed writers of ``path`` left behind: those no process holds locked whose
    writer (the PID in the name) has ended, or that are older than :data:`STALE_SECONDS`. Returns them."""
    removed = []
    for temp in Path(path).parent.glob(f".{glob.escape(Path(path).name)}.*.tmp"):
        try:
            age = time.time() - temp.stat().st_mtime
            if _locked(temp):
                continue
            if writer_ended(temp.name[len(Path(path).name) + 2:]) or age > STALE_SECONDS:
                temp.unlink()
                removed.append(temp)
        except OSError:  # gone meanwhile (renamed by its writer or removed by another cleaner)
            continue
    return removed


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _locked(path: Path) -> bool:
    """Some process holds ``path`` locked (a writer at work); False where the system has no ``flock``."""
    if fcntl is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


__all__ = ["FORMAT_VERSION", "MAGIC", "READABLE_VERSIONS", "load_model", "model_bytes", "model_from_bytes", "remove_orphans", "save_model",
           "write_atomic"]
