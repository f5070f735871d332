"""Data in and out of the package: strict CSV and Parquet readers and built-in stream generators.

The generators let every command and test run with no data files. All of them are deterministic for a seed and
return ``(X float64 [n, d], y int64 [n])`` in stream order.
"""

from __future__ import annotations

import csv

import numpy as np

from .errors import DataError
from .ranges import Range

N_SAMPLES = Range("n_samples", 1, 10**9)  # rows of a built-in stream

MISSING = frozenset({"", "?", "na", "nan"})  # compared case-insensitively


PARQUET_MAGIC = b"PAR1"


def load_table(path, label, no_header: bool = False, delimiter: str = ",", header: bool = False
               ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(X, y, feature_names)`` of a data file: Parquet (by its ``PAR1`` magic, read through pyarrow, the
    ``parquet`` extra) or else CSV with this ``delimiter`` (see :func:`load_csv`). ``label`` None: every column is
    a feature and ``y`` is None."""
    try:
        with open(path, "rb") as handle:
            parquet = handle.read(4) == PARQUET_MAGIC
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    return load_parquet(path, label) if parquet else load_csv(path, label, no_header, delimiter, header)


def load_parquet(path, label) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a Parquet file into ``(X, y, feature_names)``: ``label`` is a column name or 0-based index; every
    other column is a numeric (or boolean) feature, nulls become NaN; null labels are refused."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path} is a Parquet file; reading it needs pyarrow: pip install 'edgestream[parquet]'") \
            from None
    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises its own error kinds for damaged files
        raise DataError(f"cannot read {path} as Parquet: {error}") from None
    names = [str(name) for name in table.column_names]
    if len(names) < 2:
        raise DataError(f"{path} has {len(names)} column(s); need at least one feature column besides the label")
    if table.num_rows == 0:
        raise DataError(f"{path} has no data rows")
    column, y = None if label is None else _label_index(label, names, len(names), path), None
    if column is not None:
        labels = table.column(column)
        if labels.null_count:
            raise DataError(f"{path}: {labels.null_count} missing label(s) in column {names[column]!r}")
        y = np.asarray(labels.to_pylist())
        if y.dtype.kind == "f" and (y == np.round(y)).all():
            y = y.astype(np.int64)
    features = [j for j in range(len(names)) if j != column]
    X = np.empty((table.num_rows, len(features)), dtype=np.float64)
    for i, j in enumerate(features):
        values = table.column(j)
        kind = str(values.type)
        if not (kind.startswith(("int", "uint", "float", "double", "halffloat", "decimal")) or kind == "bool"):
            raise DataError(f"{path}, column {names[j]!r}: type {kind} is not numeric")
        X[:, i] = np.array([np.nan if v is None else float(v) for v in values.to_pylist()])
    return X, y, [names[j] for j in features]


def load_csv(path, label, no_header: bool = False, delimiter: str = ",", header: bool = False
             ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a CSV file (cells separated by ``delimiter``) into ``(X, y, feature_names)``.

    ``label`` is a column name or a 0-based index; a string of digits is an index unless it is a header name; None
    makes every column a feature (``y`` is then None).
    Which first row is a header: with ``header`` it is, with ``no_header`` it is not; else it is when ``label`` is
    a name (not a whole number) found in it (so ``0,1,2,label`` with ``label="label"`` is a header of numeric
    names), when all its cells are non-numeric, when a feature column holds a non-numeric cell, or when the label
    column (given by index) holds a word above a numeric label. A header of numeric names only (``0,1,2,3`` with the
    label given as ``3``) needs ``header``. Feature values must be finite float32 numbers (at most about 3.4e38 in
    magnitude; ``inf`` is refused, it is no reading a sensor gives). Missing feature values (empty, ``?``, ``NA``, ``nan``) become NaN, the bin every
    model reserves for them. Labels stay ints if all are integers, else floats if all are numbers, else strings.
    Columns without a header are named ``x0``, ``x1``, ... by their index in the file.
    """
    if len(delimiter) != 1:
        raise DataError(f"delimiter {delimiter!r} must be one character")
    if header and no_header:
        raise DataError("header and no_header exclude each other (--header, --no-header)")
    rows = _read_rows(path, delimiter)
    first = rows[0][1]
    other = next((d for d in (";", "\t", "|", ",") if len(first) == 1 and d != delimiter and d in first[0]), None)
    if other is not None:
        raise DataError(f"{path} has one column when split at {delimiter!r}, but its first row holds {other!r}: "
                        f"give the delimiter (--delimiter {'tab' if other == chr(9) else repr(other)})")
    second = rows[1][1] if len(rows) > 1 else None
    names = first if header or (not no_header and _is_header(first, label, second)) else None
    if names is not None:
        rows = rows[1:]
    column = None if label is None else _label_index(label, names, len(first), path, no_header)
    if not rows:
        raise DataError(f"{path} has a header row but no data rows")
    if len(first) < 2 and column is not None:
        raise DataError(f"{path} has a single column; need at least one feature column besides the label")
    names = names or [f"x{j}" for j in range(len(first))]
    features = [j for j in range(len(first)) if j != column]
    X = np.empty((len(rows), len(features)), dtype=np.float64)
    labels = []
    for i, (line, cells) in enumerate(rows):
        if len(cells) != len(first):
            raise DataError(f"{path}, line {line}: {len(cells)} columns, expected {len(first)} like the first row")
        if column is not None:
            if cells[column].casefold() in MISSING:
                raise DataError(f"{path}, line {line}: missing label in column {names[column]!r}")
            labels.append(cells[column])
        X[i] = [_feature_value(cells[j], path, line, names[j]) for j in features]
    return X, None if column is None else _label_array(labels), [names[j] for j in features]


def _read_rows(path, delimiter: str = ",") -> list[tuple[int, list[str]]]:
    """Non-blank rows with their line numbers, cells stripped of surrounding spaces."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            rows = [(reader.line_num, [cell.strip() for cell in row]) for row in reader if any(c.strip() for c in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise DataError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    if not rows:
        raise DataError(f"{path} is empty")
    return rows


def _is_number(cell: str) -> bool:
    if cell.casefold() in MISSING:
        return True  # a missing value is data, not a column name
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _is_header(first: list[str], label, second: list[str] | None = None) -> bool:
    """The first row is a header (see :func:`load_csv`); ``second`` is the next row, if any."""
    if _as_index(label) is None and isinstance(label, str) and label in first:
        return True
    numeric = [_is_number(cell) for cell in first]
    if not any(numeric):
        return True
    column = _as_index(label)
    if column is not None and column < len(first) and second is not None and column < len(second) and \
            not numeric[column] and _is_number(second[column]) and second[column].casefold() not in MISSING:
        return True  # a word above numeric labels names the label column
    return any(not ok for j, ok in enumerate(numeric) if j != column)


def _as_index(label) -> int | None:
    if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
        return int(label)
    if isinstance(label, str) and label.isdigit():
        return int(label)
    return None


def _label_index(label, header: list[str] | None, n_columns: int, path, no_header: bool = False) -> int:
    if header is not None and isinstance(label, str) and label in header:
        return header.index(label)
    index = _as_index(label)
    if index is not None and 0 <= index < n_columns:
        return index
    if header is not None:
        available = ", ".join(repr(name) for name in header)
        raise DataError(f"label column {label!r} does not exist in {path}; columns: {available} "
                        f"(or a 0-based index below {n_columns})")
    raise DataError(f"label column {label!r} does not exist in {path}: it has no header row and {n_columns} columns, "
                    f"so the label must be a 0-based index from 0 to {n_columns - 1}"
                    + ("" if no_header else " (or give --header if its first row names the columns)"))


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _feature_value(cell: str, path, line: int, name: str) -> float:
    if cell.casefold() in MISSING:
        return np.nan
    try:
        value = float(cell)
    except ValueError:
        raise DataError(f"{path}, line {line}, column {name!r}: non-numeric value {cell!r}") from None
    if not abs(value) <= FLOAT32_MAX:
        raise DataError(f"{path}, line {line}, column {name!r}: value {cell!r} is not a finite float32 (magnitude at "
                        f"most {FLOAT32_MAX:.4g}; leave the cell empty for a missing value)")
    return value


def _label_array(labels: list[str]) -> np.ndarray:
    for kind in (int, float):
        try:
            return np.array([kind(label) for label in labels])
        except ValueError:
            continue
    return np.array(labels)


def device_input(X: np.ndarray, dtype: str) -> np.ndarray:
    """CSV features as a model takes them: integer models read whole numbers and have no missing values."""
    if dtype == "float32":
        return X
    if not np.isfinite(X).all() or (X != np.round(X)).any():
        raise DataError(f"input dtype {dtype} needs whole-number features; the data has missing or fractional values")
    return X.astype(np.int64)


def make_stream(name: str, n_samples: int = 1000, seed: int = 0, **options) -> tuple[np.ndarray, np.ndarray]:
    """A built-in stream by name (see ``STREAMS``); ``options`` go to its generator."""
    if name not in STREAMS:
        raise ValueError(f"unknown stream {name!r}; available: {', '.join(sorted(STREAMS))}")
    N_SAMPLES.check(n_samples)
    return STREAMS[name](int(n_samples), np.random.default_rng(seed), **options)


def rotating_hyperplane(n_samples: int, rng, n_features: int = 10, n_drift_features: int = 2,
                        magnitude: float = 0.001, reversal: float = 0.1, noise: float = 0.05):
    """Rotating hyperplane (Hulten et al. 2001, as in MOA): gradual drift.

    ``x`` is uniform in [0, 1]^d and the label is ``w . x >= sum(w) / 2``. After every sample the first
    ``n_drift_features`` weights move by ``magnitude`` in their current direction, which reverses with
    probability ``reversal``; a fraction ``noise`` of labels is flipped.
    """
    X = rng.random((n_samples, n_features))
    w0 = rng.random(n_features)
    flips = np.where(rng.random((n_samples, n_drift_features)) < reversal, -1.0, 1.0)
    flips[0] = np.where(rng.random(n_drift_features) < 0.5, -1.0, 1.0)  # initial directions
    steps = magnitude * np.cumsum(np.cumprod(flips, axis=0), axis=0)
    w = np.tile(w0, (n_samples, 1))
    w[1:, :n_drift_features] += steps[:-1]  # sample t sees the weights after t updates
    y = (np.einsum("ij,ij->i", X, w) >= w.sum(axis=1) / 2).astype(np.int64)
    return X, _flip_labels(y, noise, 2, rng)


def gaussian_blobs(n_samples: int, rng, n_classes: int = 3, n_features: int = 4, spread: float = 1.0,
                   distance: float = 3.0):
    """Gaussian blobs: one isotropic cluster per class, centres drawn from N(0, distance^2), no drift."""
    centres = rng.normal(0.0, distance, (n_classes, n_features))
    y = rng.integers(0, n_classes, n_samples)
    return centres[y] + rng.normal(0.0, spread, (n_samples, n_features)), y.astype(np.int64)


def sea_concepts(n_samples: int, rng, thresholds=(8.0, 9.0, 7.0, 9.5), noise: float = 0.1):
    """SEA concepts (Street and Kim 2001): abrupt drift.

    Three features uniform in [0, 10]; the label is ``x0 + x1 <= theta``, the third feature is irrelevant.
    The stream is cut into ``len(thresholds)`` equal blocks, each with its own ``theta``, so the concept
    changes abruptly at every block boundary. A fraction ``noise`` of labels is flipped.
    """
    X = 10.0 * rng.random((n_samples, 3))
    theta = np.asarray(thresholds, dtype=np.float64)[np.arange(n_samples) * len(thresholds) // n_samples]
    y = (X[:, 0] + X[:, 1] <= theta).astype(np.int64)
    return X, _flip_labels(y, noise, 2, rng)


def _flip_labels(y: np.ndarray, noise: float, n_classes: int, rng) -> np.ndarray:
    """Replace a fraction ``noise`` of labels with a different class, drawn uniformly."""
    flip = rng.random(len(y)) < noise
    y = y.copy()
    y[flip] = (y[flip] + rng.integers(1, n_classes, int(flip.sum()))) % n_classes
    return y


STREAMS = {"hyperplane": rotating_hyperplane, "blobs": gaussian_blobs, "sea": sea_concepts}

__all__ = ["DataError", "STREAMS", "load_csv", "load_parquet", "load_table", "make_stream"]
