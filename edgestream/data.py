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


def load_table(path, label, no_header: bool = False, delimiter: str = ",", header: bool = False,
               with_cells: bool = False) -> tuple:
    """``(X, y, feature_names)`` of a data file: Parquet (by its ``PAR1`` magic, read through pyarrow, the
    ``parquet`` extra) or else CSV with this ``delimiter`` (see :func:`load_csv`). ``label`` None: every column is
    a feature and ``y`` is None. ``with_cells``: a fourth item, ``where(row, feature)``, names a cell as the file
    counts it (a CSV's line number, a Parquet file's row from 1) for messages."""
    try:
        with open(path, "rb") as handle:
            parquet = handle.read(4) == PARQUET_MAGIC
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    if parquet:
        X, y, names = load_parquet(path, label)
        lines, unit = np.arange(1, len(X) + 1), "row"
    else:
        X, y, names, lines = load_csv(path, label, no_header, delimiter, header, with_lines=True)
        unit = "line"
    if not with_cells:
        return X, y, names
    return X, y, names, lambda row, feature: f"{path}, {unit} {lines[row]}, column {names[feature]!r}"


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


def load_csv(path, label, no_header: bool = False, delimiter: str = ",", header: bool = False,
             with_lines: bool = False) -> tuple:
    """Read a CSV file (cells separated by ``delimiter``) into ``(X, y, feature_names)`` (and, ``with_lines``, the
    file's line number of each row).

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
    table = X, None if column is None else _label_array(labels), [names[j] for j in features]
    return (*table, [line for line, _ in rows]) if with_lines else table


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


def write_csv(path, X: np.ndarray, y: np.ndarray) -> None:
    """Write rows as a CSV file that :func:`load_csv` reads back: a header ``x0,...,y``, features to 6 significant
    digits (what a sensor log holds), the label last."""
    header = ",".join([*(f"x{j}" for j in range(X.shape[1])), "y"])
    label_format = "%d" if np.asarray(y).dtype.kind in "iub" else "%.6g"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="",
               fmt=["%.6g"] * X.shape[1] + [label_format])


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
                   distance: float = 3.0, incremental: bool = False):
    """Gaussian blobs: one isotropic cluster per class, centres drawn from N(0, distance^2), no drift.

    With ``incremental`` the classes arrive one after another (a class-incremental stream): the stream is cut into
    ``n_classes - 1`` equal blocks, the first draws its labels among classes 0 and 1, each later block adds the
    next class, and every row draws uniformly among the classes seen so far.
    """
    centres = rng.normal(0.0, distance, (n_classes, n_features))
    if incremental:
        seen = 2 + np.arange(n_samples) * (n_classes - 1) // n_samples
        y = (rng.random(n_samples) * seen).astype(np.int64)
    else:
        y = rng.integers(0, n_classes, n_samples)
    return centres[y] + rng.normal(0.0, spread, (n_samples, n_features)), y.astype(np.int64)


def sea_concepts(n_samples: int, rng, thresholds=(8.0, 9.0, 7.0, 9.5), noise: float = 0.1, changes=None):
    """SEA concepts (Street and Kim 2001): abrupt drift.

    Three features uniform in [0, 10]; the label is ``x0 + x1 <= theta``, the third feature is irrelevant.
    Each of ``thresholds`` is one concept's ``theta``; the concept changes abruptly at the rows ``changes`` (by
    default the stream is cut into equal blocks, see :func:`concept_of_rows`). A fraction ``noise`` of labels is
    flipped.
    """
    X = 10.0 * rng.random((n_samples, 3))
    theta = np.asarray(thresholds, dtype=np.float64)[concept_of_rows(n_samples, len(thresholds), changes)]
    y = (X[:, 0] + X[:, 1] <= theta).astype(np.int64)
    return X, _flip_labels(y, noise, 2, rng)


def concept_of_rows(n_samples: int, n_concepts: int, changes=None) -> np.ndarray:
    """The concept (0 .. ``n_concepts - 1``) of every row. ``changes`` are the rows where the next concept starts,
    ``n_concepts - 1`` of them, increasing, within the stream; by default the stream is cut into equal blocks."""
    if changes is None:
        return np.arange(n_samples) * n_concepts // n_samples
    changes = np.asarray(changes, dtype=np.int64).reshape(-1)
    if len(changes) != n_concepts - 1:
        raise ValueError(f"changes {changes.tolist()}: {n_concepts} concepts need {n_concepts - 1} change rows")
    if (np.diff(changes) <= 0).any() or (len(changes) and not 0 < changes[0] <= changes[-1] < n_samples):
        raise ValueError(f"changes {changes.tolist()} must increase strictly within rows 1 .. {n_samples - 1}")
    return np.searchsorted(changes, np.arange(n_samples), side="right")


def agrawal(n_samples: int, rng, functions=(0, 2), changes=None, perturbation: float = 0.05):
    """Agrawal et al. (1993), as MOA's ``AgrawalGenerator``: loan applications, abrupt drift.

    Nine attributes drawn as MOA draws them: salary, commission, age, elevel, car, zipcode, hvalue, hyears, loan
    (elevel, car and zipcode are category numbers 0 .. 4, 0 .. 19, 0 .. 8). The label is one of the paper's ten
    classification ``functions`` (0 .. 9, MOA's ``-f`` minus one); each entry of ``functions`` is one concept and
    the concept changes abruptly at the rows ``changes`` (default equal blocks: for two functions one change at the
    middle, see :func:`concept_of_rows`). As in MOA the label comes first, then salary, commission, age, hvalue,
    hyears and loan move by up to ``perturbation`` of their range and are clipped to it (hvalue to MOA's
    0 .. 135,000, a quirk kept so that the streams are MOA's).
    """
    bad = [f for f in functions if not 0 <= f < len(AGRAWAL_FUNCTIONS)]
    if bad:
        raise ValueError(f"Agrawal functions {bad} out of range 0 .. {len(AGRAWAL_FUNCTIONS) - 1}")
    a = _agrawal_attributes(n_samples, rng)
    concept = concept_of_rows(n_samples, len(functions), changes)
    y = np.empty(n_samples, dtype=np.int64)
    for index, function in enumerate(functions):
        rows = concept == index
        y[rows] = np.where(AGRAWAL_FUNCTIONS[function]({name: v[rows] for name, v in a.items()}), 0, 1)
    if perturbation > 0:
        _perturb_agrawal(a, perturbation, rng)
    return np.column_stack([a[name] for name in AGRAWAL_ATTRIBUTES]), y


AGRAWAL_ATTRIBUTES = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan")


def _agrawal_attributes(n: int, rng) -> dict[str, np.ndarray]:
    salary = 20000.0 + 130000.0 * rng.random(n)
    zipcode = rng.integers(0, 9, n).astype(np.float64)
    return {"salary": salary, "commission": np.where(salary >= 75000.0, 0.0, 10000.0 + 65000.0 * rng.random(n)),
            "age": rng.integers(20, 81, n).astype(np.float64), "elevel": rng.integers(0, 5, n).astype(np.float64),
            "car": rng.integers(0, 20, n).astype(np.float64), "zipcode": zipcode,
            "hvalue": (9.0 - zipcode) * 100000.0 * (0.5 + rng.random(n)),
            "hyears": rng.integers(1, 31, n).astype(np.float64), "loan": 500000.0 * rng.random(n)}


def _perturb_agrawal(a: dict, fraction: float, rng) -> None:
    """MOA's ``perturbValue``: ``value + range * (2u - 1) * fraction``, clipped (age and hyears then rounded; a
    zero commission stays zero)."""
    def perturb(value, span, low, high):
        return np.clip(value + span * (2.0 * rng.random(len(value)) - 1.0) * fraction, low, high)
    a["salary"] = perturb(a["salary"], 130000.0, 20000.0, 150000.0)
    a["commission"] = np.where(a["commission"] > 0, perturb(a["commission"], 65000.0, 10000.0, 75000.0), 0.0)
    a["age"] = np.round(perturb(a["age"], 60.0, 20.0, 80.0))
    a["hvalue"] = perturb(a["hvalue"], (9.0 - a["zipcode"]) * 100000.0, 0.0, 135000.0)
    a["hyears"] = np.round(perturb(a["hyears"], 29.0, 1.0, 30.0))
    a["loan"] = perturb(a["loan"], 500000.0, 0.0, 500000.0)


def _between(value, low, high):
    return (low <= value) & (value <= high)


def _by_age(age, young, middle, old):
    """Per row the value of its age band: below 40, 40 to 59, 60 and older."""
    return np.where(age < 40, young, np.where(age < 60, middle, old))


def _salary_bands(salary):
    """The salary condition of functions 1 and 3 (0-based) for each age band."""
    return _between(salary, 50000, 100000), _between(salary, 75000, 125000), _between(salary, 25000, 75000)


def _elevel_bands(elevel):
    return elevel <= 1, _between(elevel, 1, 3), elevel >= 2


def _agrawal_3(a):
    young, middle, old = _elevel_bands(a["elevel"])
    wide, high, low = _salary_bands(a["salary"])
    return _by_age(a["age"], np.where(young, _between(a["salary"], 25000, 75000), wide),
                   np.where(middle, wide, high), np.where(old, wide, low))


def _agrawal_4(a):
    wide, high, low = _salary_bands(a["salary"])
    loan = a["loan"]
    return _by_age(a["age"],
                   np.where(wide, _between(loan, 100000, 300000), _between(loan, 200000, 400000)),
                   np.where(high, _between(loan, 200000, 400000), _between(loan, 300000, 500000)),
                   np.where(low, _between(loan, 300000, 500000), _between(loan, 100000, 300000)))


def _disposable(a, elevel_cost=0.0, loan_share=0.0, equity_share=0.0, base=20000.0):
    """Two thirds of the income less the costs of the disposable-income functions 6 .. 9 (0-based)."""
    equity = np.where(a["hyears"] >= 20, a["hvalue"] * (a["hyears"] - 20.0) / 10.0, 0.0)
    return (2.0 * (a["salary"] + a["commission"]) / 3.0 - elevel_cost * a["elevel"] - loan_share * a["loan"]
            + equity_share * equity - base)


# The ten functions, 0-based: True where MOA's function gives class 0.
AGRAWAL_FUNCTIONS = (
    lambda a: (a["age"] < 40) | (a["age"] >= 60),
    lambda a: _by_age(a["age"], *_salary_bands(a["salary"])),
    lambda a: _by_age(a["age"], *_elevel_bands(a["elevel"])),
    _agrawal_3,
    _agrawal_4,
    lambda a: _by_age(a["age"], *_salary_bands(a["salary"] + a["commission"])),
    lambda a: _disposable(a, loan_share=0.2) > 0,
    lambda a: _disposable(a, elevel_cost=5000.0) > 0,
    lambda a: _disposable(a, elevel_cost=5000.0, loan_share=0.2, base=10000.0) > 0,
    lambda a: _disposable(a, elevel_cost=5000.0, equity_share=0.2, base=10000.0) > 0,
)


def stagger(n_samples: int, rng, concepts=(0, 1, 2, 0, 1, 2), changes=None, noise: float = 0.0):
    """STAGGER concepts (Schlimmer and Granger 1986, as MOA's ``STAGGERGenerator``): abrupt, recurring drift.

    Three category features, numbered 0 .. 2: size (small, medium, large), colour (red, green, blue) and shape
    (circle, square, triangle). Concept 0 is ``size = small and colour = red``, concept 1 ``colour = green or
    shape = circle``, concept 2 ``size = medium or large``; class 1 where the concept holds. Each entry of
    ``concepts`` is one period of the stream, changing abruptly at the rows ``changes`` (default equal blocks), so
    the default sequence brings every concept back once. A fraction ``noise`` of labels is flipped.
    """
    bad = [c for c in concepts if c not in (0, 1, 2)]
    if bad:
        raise ValueError(f"STAGGER concepts {bad} out of range 0 .. 2")
    X = rng.integers(0, 3, (n_samples, 3))
    size, colour, shape = X.T
    holds = np.stack([(size == 0) & (colour == 0), (colour == 1) | (shape == 0), size >= 1])
    concept = np.asarray(concepts)[concept_of_rows(n_samples, len(concepts), changes)]
    y = holds[concept, np.arange(n_samples)].astype(np.int64)
    return X.astype(np.float64), _flip_labels(y, noise, 2, rng)


LED_SEGMENTS = np.array([[1, 1, 1, 0, 1, 1, 1], [0, 0, 1, 0, 0, 1, 0], [1, 0, 1, 1, 1, 0, 1], [1, 0, 1, 1, 0, 1, 1],
                         [0, 1, 1, 1, 0, 1, 0], [1, 1, 0, 1, 0, 1, 1], [1, 1, 0, 1, 1, 1, 1], [1, 0, 1, 0, 0, 1, 0],
                         [1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1, 1]])  # digit -> its 7 segments, as in MOA
LED_IRRELEVANT = 17


def led(n_samples: int, rng, noise: float = 0.1, n_concepts: int = 2, n_drift_features: int = 7, changes=None):
    """LED display (Breiman et al. 1984, as MOA's ``LEDGenerator`` and ``LEDGeneratorDrift``): abrupt drift.

    The label is a digit 0 .. 9; 24 binary features, the digit's 7 segments, each flipped with probability
    ``noise``, and 17 random bits. The first concept has the segments in columns 0 .. 6; each later one (the
    stream changes at the rows ``changes``, default equal blocks) swaps ``n_drift_features`` segment columns
    with irrelevant ones, as ``LEDGeneratorDrift`` does, so the digit moves to other columns.
    """
    if not 0 <= n_drift_features <= 7:
        raise ValueError(f"n_drift_features {n_drift_features} out of range 0 .. 7")
    y = rng.integers(0, 10, n_samples)
    segments = LED_SEGMENTS[y] ^ (rng.random((n_samples, 7)) < noise)
    values = np.hstack([segments, rng.integers(0, 2, (n_samples, LED_IRRELEVANT))]).astype(np.float64)
    orders = [np.arange(7 + LED_IRRELEVANT)] + [_led_swap(n_drift_features, rng) for _ in range(n_concepts - 1)]
    columns = np.stack(orders)[concept_of_rows(n_samples, n_concepts, changes)]
    X = np.empty_like(values)
    np.put_along_axis(X, columns, values, axis=1)  # value j of a row goes to its concept's column j
    return X, y.astype(np.int64)


def _led_swap(n_swaps: int, rng) -> np.ndarray:
    """A column order that puts ``n_swaps`` distinct segments into distinct irrelevant columns and back."""
    order = np.arange(7 + LED_IRRELEVANT)
    segments = rng.choice(7, n_swaps, replace=False)
    irrelevant = 7 + rng.choice(LED_IRRELEVANT, n_swaps, replace=False)
    order[segments], order[irrelevant] = irrelevant, segments
    return order


def random_rbf(n_samples: int, rng, n_features: int = 10, n_classes: int = 2, n_centroids: int = 50,
               n_drift_centroids: int = 50, speed: float = 0.0001):
    """Random RBF with moving centroids (as MOA's ``RandomRBFGeneratorDrift``): gradual drift.

    ``n_centroids`` centroids, each with a centre uniform in [0, 1]^d, a class, a spread and a weight (uniform in
    [0, 1)); a row picks a centroid by weight and lies in a random direction from its centre at a distance drawn
    from N(0, spread^2). The first ``n_drift_centroids`` move by ``speed`` per row in a random direction and
    bounce off the unit cube's walls, so the class regions slide while the stream runs.
    """
    centres, spread = rng.random((n_centroids, n_features)), rng.random(n_centroids)
    labels, weights = rng.integers(0, n_classes, n_centroids), rng.random(n_centroids)
    velocity = rng.normal(size=(n_centroids, n_features))
    velocity *= speed / np.linalg.norm(velocity, axis=1, keepdims=True)
    velocity[n_drift_centroids:] = 0.0
    k = rng.choice(n_centroids, n_samples, p=weights / weights.sum())
    direction = rng.normal(size=(n_samples, n_features))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    travelled = np.arange(n_samples)[:, None] * velocity[k]  # row t sees its centre after t moves
    X = _bounce(centres[k] + travelled) + direction * (rng.normal(size=n_samples) * spread[k])[:, None]
    return X, labels[k].astype(np.int64)


def _bounce(position: np.ndarray) -> np.ndarray:
    """A point moving in a straight line, reflected at the walls of [0, 1]: a triangle wave of period 2."""
    folded = np.mod(position, 2.0)
    return np.where(folded > 1.0, 2.0 - folded, folded)


def _flip_labels(y: np.ndarray, noise: float, n_classes: int, rng) -> np.ndarray:
    """Replace a fraction ``noise`` of labels with a different class, drawn uniformly."""
    flip = rng.random(len(y)) < noise
    y = y.copy()
    y[flip] = (y[flip] + rng.integers(1, n_classes, int(flip.sum()))) % n_classes
    return y


STREAMS = {"hyperplane": rotating_hyperplane, "blobs": gaussian_blobs, "sea": sea_concepts, "agrawal": agrawal,
           "stagger": stagger, "led": led, "rbf": random_rbf}

__all__ = ["DataError", "STREAMS", "load_csv", "load_parquet", "load_table", "make_stream", "write_csv"]
