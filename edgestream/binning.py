"""Feature quantization to 8-bit bins, mirrored exactly by ``csrc/es_binning.c``.

Each feature ``j`` has a strictly increasing array of edges ``e_0 < ... < e_{k-1}`` with ``k <= 254``.
A value ``x`` goes to bin ``i`` = the number of edges strictly below ``x``; equivalently the smallest ``i``
with ``x <= e_i``, or ``k`` when ``x`` is above every edge. So

* a value exactly on edge ``e_i`` falls in bin ``i`` (bins are closed on the right),
* values below the fitted range fall in bin 0 and above it in bin ``k`` (``-inf`` and ``+inf`` too),
* NaN is missing and falls in the reserved bin ``MISSING_BIN`` (255); a tree threshold never reaches 255,
  so missing values always take the right branch,
* float inputs are first rounded to float32, as on the device; subnormals compare as the numbers they are.

Integer edges (``dtype="int32"`` or ``"int16"``) quantize raw sensor readings without an FPU: the same rule with
integer comparisons, and no missing bin. The midpoint of two integers of one type lies between them, so the
edges of an int16 feature are int16 too.
"""

from __future__ import annotations

import numpy as np

MISSING_BIN = 255
MAX_EDGES = 254  # value bins 0..254, bin 255 is reserved for missing values
STRATEGIES = ("quantile", "adaptive")
DTYPES = ("float32", "int32", "int16")
INTEGER_DTYPES = ("int32", "int16")


class BinMapper:
    """Fits per-feature bin edges and maps feature arrays to uint8 bins.

    Parameters
    ----------
    max_bins : number of value bins per feature, 2..255 (the missing bin comes on top).
    strategy : ``"quantile"`` places edges at quantiles (between distinct values when there are few);
        ``"adaptive"`` is the bin-width-doubling discretization of the in-place online GBDT paper
        (Appendix A): equal-width bins starting at ``range / 2**16``, the width doubled until at most
        ``max_bins`` non-empty bins remain; edges lie midway between neighbouring non-empty bins.
    dtype : ``"float32"`` edges (device input is float), ``"int32"`` or ``"int16"`` edges (device input is
        that integer type).
    """

    def __init__(self, max_bins: int = 255, strategy: str = "quantile", dtype: str = "float32"):
        self.max_bins = max_bins
        self.strategy = strategy
        self.dtype = dtype

    def _check_params(self):
        if not isinstance(self.max_bins, (int, np.integer)) or not 2 <= self.max_bins <= MAX_EDGES + 1:
            raise ValueError(f"max_bins={self.max_bins!r} must be an integer from 2 to {MAX_EDGES + 1}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r} must be one of {STRATEGIES}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} must be one of {DTYPES}")

    def fit(self, X) -> "BinMapper":
        self._check_params()
        X = self.as_input(X)
        fit_one = _quantile_edges if self.strategy == "quantile" else _adaptive_edges
        self.edges_ = []
        for column in X.T:
            present = np.sort(column[~np.isnan(column)] if self.dtype == "float32" else column)
            self.edges_.append(fit_one(present, self.max_bins, self.dtype))
        return self

    @property
    def n_features(self) -> int:
        return len(self.edges_)

    def transform(self, X) -> np.ndarray:
        X = self.as_input(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, the bins were fitted on {self.n_features}")
        bins = np.empty(X.shape, dtype=np.uint8)
        for j, edges in enumerate(self.edges_):
            bins[:, j] = np.searchsorted(edges, X[:, j], side="left")
        if self.dtype == "float32":
            bins[np.isnan(X)] = MISSING_BIN
        return bins

    def fit_transform(self, X) -> np.ndarray:
        return self.fit(X).transform(X)

    def flat_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """All edges in one array and ``offsets`` (n_features + 1) so feature j owns edges[offsets[j]:offsets[j+1]]."""
        offsets = np.zeros(self.n_features + 1, dtype=np.uint16)
        offsets[1:] = np.cumsum([len(e) for e in self.edges_])
        edges = np.concatenate(self.edges_) if self.edges_ else np.empty(0, self.dtype)
        return edges.astype(self.dtype), offsets

    @classmethod
    def from_flat_edges(cls, edges, offsets, max_bins, strategy, dtype) -> "BinMapper":
        mapper = cls(max_bins=max_bins, strategy=strategy, dtype=dtype)
        mapper._check_params()
        edges = np.asarray(edges, dtype=dtype)
        mapper.edges_ = [edges[offsets[j] : offsets[j + 1]] for j in range(len(offsets) - 1)]
        return mapper

    def as_input(self, X) -> np.ndarray:
        """Rows as the device reads them: float32 (rounded from float64), or the integer input type."""
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional (samples, features), got shape {X.shape}")
        if self.dtype in INTEGER_DTYPES:
            if not np.issubdtype(X.dtype, np.integer):
                raise ValueError(f"integer bins need integer input, got dtype {X.dtype}")
            info = np.iinfo(self.dtype)
            if X.size and (X.min() < info.min or X.max() > info.max):
                raise ValueError(f"integer input must fit {self.dtype} [{info.min}, {info.max}]")
            return X.astype(self.dtype)
        with np.errstate(over="ignore"):  # large float64 values become +-inf in float32, like on the device
            return X.astype(np.float32)


def _quantile_edges(present: np.ndarray, max_bins: int, dtype: str) -> np.ndarray:
    values = np.unique(present)
    if len(values) <= max_bins:
        upper = values[1:]
        lower = values[:-1]
    else:
        cut = np.unique(np.quantile(present, np.linspace(0, 1, max_bins + 1)[1:-1], method="inverted_cdf"))
        cut = cut.astype(values.dtype)
        lower = cut
        upper = values[np.searchsorted(values, cut, side="right").clip(max=len(values) - 1)]
    return _midpoints(lower, upper, dtype)


def _adaptive_edges(present: np.ndarray, max_bins: int, dtype: str) -> np.ndarray:
    values = np.unique(present)
    finite = values[np.isfinite(values)] if dtype == "float32" else values
    if len(finite) <= 1:
        return np.empty(0, dtype=dtype)
    low, span = float(finite[0]), float(finite[-1]) - float(finite[0])
    width = span / 2.0**16
    while True:
        bin_ids = np.floor((finite.astype(np.float64) - low) / width).astype(np.int64)
        starts = np.flatnonzero(np.diff(bin_ids)) + 1  # first value of every non-empty bin but the first
        if len(starts) + 1 <= max_bins:
            break
        width *= 2.0
    return _midpoints(finite[starts - 1], finite[starts], dtype)


def _midpoints(lower: np.ndarray, upper: np.ndarray, dtype: str) -> np.ndarray:
    """Edges between neighbouring distinct values: x <= edge keeps ``lower`` left and ``upper`` right."""
    if dtype in INTEGER_DTYPES:
        edges = lower.astype(np.int64) + (upper.astype(np.int64) - lower.astype(np.int64)) // 2
        return np.unique(edges).astype(dtype)[:MAX_EDGES]
    with np.errstate(over="ignore", invalid="ignore"):
        mid = (lower.astype(np.float64) + upper.astype(np.float64)) / 2.0
    mid = np.where(np.isfinite(mid), mid, lower.astype(np.float64))
    edges = mid.astype(np.float32)
    edges = np.where(edges >= upper, lower, edges)  # float32 rounding must not put `upper` on the left
    edges = np.unique(edges[np.isfinite(edges)])
    return edges.astype(np.float32)[:MAX_EDGES]
