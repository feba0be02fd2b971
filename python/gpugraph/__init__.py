"""gpugraph from Python: SQL through DataFusion on the GPU (the one-shot ``sql`` and a
``SessionContext`` shaped like datafusion-python's), and numpy entry points on gpugraph's GPU
primitives (sort, argsort, cumsum, compact, histogram, group_by_mean, fft2).

Every call runs on one GPU device per process, opened on first use (``WGPU_BACKEND`` and
``GPUGRAPH_ADAPTER`` choose it, as for the ``gpugraph`` command). Inputs are copied to the
GPU, the primitive runs once, and the result comes back as a new numpy array; the GIL is
released meanwhile. Arguments of a dtype a primitive does not take raise ``TypeError`` naming
the dtype; bad values raise ``ValueError``; GPU failures raise ``RuntimeError``.

``sql`` needs pyarrow (imported on first use); the numpy entry points need only numpy.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from .session import DataFrame, SessionContext

__all__ = [
    "sql",
    "SessionContext",
    "DataFrame",
    "sort",
    "argsort",
    "cumsum",
    "compact",
    "histogram",
    "group_by_mean",
    "fft2",
]

_KEY_TYPES = {np.dtype(np.uint32): "uint32", np.dtype(np.int32): "int32", np.dtype(np.float32): "float32"}


def sql(
    query: str,
    tables: Optional[Mapping[str, Any]] = None,
    engine: str = "gpu",
) -> "pyarrow.Table":  # noqa: F821 (pyarrow is imported lazily)
    """Run a read-only SQL query (or script) and return its result as a ``pyarrow.Table``.

    ``tables`` maps table names to a ``pyarrow.Table`` (or any object with
    ``__arrow_c_stream__``: pyarrow record batch readers, polars/pandas frames that export
    Arrow) or to the path of a ``.parquet`` / ``.csv`` / ``.arrow`` (``.ipc``, ``.feather``)
    file. Files can also be named directly in ``FROM`` as quoted paths
    (``FROM 'lineitem.parquet'``). Tables cross into Rust and results come back through the
    Arrow C stream interface, without copies.

    ``engine="gpu"`` runs supported operators on the GPU and the rest on DataFusion's CPU
    operators; ``engine="cpu"`` runs DataFusion's CPU plan only (the reference).
    ``query`` may be a script of statements separated by semicolons that also defines views
    and in-memory tables for the session (``CREATE [TEMP] VIEW``, ``CREATE [TEMP] TABLE ...
    AS``, ``DROP VIEW``/``DROP TABLE``): they run in order and the last query's rows are the
    result (TPC-H Q15 as written). Anything that writes files or changes settings (``COPY ...
    TO``, ``INSERT``, ``CREATE EXTERNAL TABLE``, ``SET``) is refused, naming the statement,
    before any statement runs. Raises ``ValueError`` for bad SQL, unknown
    tables or columns and unsupported file extensions, ``FileNotFoundError`` for missing
    table files, ``TypeError`` for a table value of another type, ``RuntimeError`` when the
    GPU engine cannot run.
    """
    import pyarrow  # noqa: F401 (the result is a pyarrow object)

    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    tables = dict(tables or {})
    for name, value in tables.items():
        if isinstance(value, os.PathLike):
            tables[name] = os.fspath(value)
    reader = _native.sql(query, tables, engine)
    return reader.read_all()


def _vector(a: Any, what: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def _key_type(arr: np.ndarray, what: str, allowed: Sequence[np.dtype]) -> str:
    if arr.dtype not in allowed:
        names = ", ".join(str(d) for d in allowed)
        raise TypeError(f"{what} has dtype {arr.dtype}; supported: {names}")
    return _KEY_TYPES[arr.dtype]


def sort(a: Any, descending: bool = False) -> np.ndarray:
    """Stable GPU sort of a 1-D uint32, int32 or float32 array; returns a new array of its dtype.

    Floats follow the total order ``-inf < ... < -0.0 < +0.0 < ... < +inf`` with every NaN
    last in both directions (numpy's ``np.sort`` puts NaNs last too but treats ``-0.0`` and
    ``+0.0`` as equal); NaNs come back as the canonical quiet NaN. ``descending=True`` puts
    the largest first and is still stable.
    """
    arr = _vector(a, "a")
    kind = _key_type(arr, "a", list(_KEY_TYPES))
    words = _native.sort_words(arr.view(np.uint32), kind, bool(descending), False)
    return words.view(arr.dtype)


def argsort(a: Any, descending: bool = False) -> np.ndarray:
    """Source indices (uint32) of the stable GPU sort of a 1-D uint32, int32 or float32 array:
    ``a[argsort(a)]`` equals ``sort(a)``; equal keys keep their input order (as
    ``np.argsort(a, kind="stable")``)."""
    arr = _vector(a, "a")
    kind = _key_type(arr, "a", list(_KEY_TYPES))
    return _native.sort_words(arr.view(np.uint32), kind, bool(descending), True)


def cumsum(a: Any) -> np.ndarray:
    """Inclusive prefix sums of a 1-D uint32 or int32 array in its own dtype, wrapping on
    overflow like ``np.cumsum(a, dtype=a.dtype)`` (numpy's default widens to 64 bits)."""
    arr = _vector(a, "a")
    _key_type(arr, "a", [np.dtype(np.uint32), np.dtype(np.int32)])
    return _native.cumsum_words(arr.view(np.uint32)).view(arr.dtype)


def compact(values: Any, mask: Any) -> np.ndarray:
    """The elements of a 1-D 32-bit array (uint32, int32, float32) whose ``mask`` entry is
    true, in order: ``values[mask]``. ``mask`` is a bool (or uint32, nonzero = keep) array of
    the same length."""
    arr = _vector(values, "values")
    _key_type(arr, "values", list(_KEY_TYPES))
    m = _vector(mask, "mask")
    if m.dtype == np.bool_:
        flags = m.astype(np.uint32)
    elif m.dtype == np.uint32:
        flags = m
    else:
        raise TypeError(f"mask has dtype {m.dtype}; supported: bool, uint32")
    if len(flags) != len(arr):
        raise ValueError(f"mask has {len(flags)} elements but values has {len(arr)}")
    return _native.compact_words(arr.view(np.uint32), flags).view(arr.dtype)


def histogram(
    values: Any,
    bins: Union[int, Sequence[float], np.ndarray] = 10,
    range: Optional[Tuple[float, float]] = None,  # noqa: A002 (numpy's name)
) -> Tuple[np.ndarray, np.ndarray]:
    """GPU histogram of a 1-D float32 array, like ``np.histogram``: returns ``(counts,
    edges)`` with int64 counts.

    ``bins`` is a number of equal-width bins over ``range`` (default: the finite minimum and
    maximum of the values; the upper edge is included), or a sequence of strictly increasing
    finite edges (bins ``[e_i, e_{i+1})``, the last one closed). Values outside the bins and
    NaNs are not counted. Bin boundaries are computed in float32, so a value within float32
    rounding of an interior uniform edge may land in the neighbouring bin.
    """
    arr = _vector(values, "values")
    if arr.dtype != np.float32:
        raise TypeError(f"values has dtype {arr.dtype}; supported: float32")
    if isinstance(bins, (int, np.integer)):
        n = int(bins)
        if n < 1:
            raise ValueError(f"bins must be at least 1, got {n}")
        if range is None:
            finite = arr[np.isfinite(arr)]
            lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
        else:
            lo, hi = float(range[0]), float(range[1])
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        counts, _ = _native.histogram(arr, None, n, np.float32(lo), np.float32(hi))
        edges = np.linspace(lo, hi, n + 1)
    else:
        edges = np.ascontiguousarray(np.asarray(bins, dtype=np.float32))
        if edges.ndim != 1:
            raise ValueError(f"bin edges must be 1-D, got shape {edges.shape}")
        counts, _ = _native.histogram(arr, edges)
    return counts.astype(np.int64), edges


def group_by_mean(
    keys: Any, values: Any, groups: Optional[int] = None
) -> Tuple[np.ndarray, np.ndarray]:
    """Counts and means of float32 ``values`` per dense integer key.

    ``keys`` (uint32 or int32, in ``0..groups``; ``groups`` defaults to ``keys.max() + 1``)
    is aligned with ``values``. Returns ``(counts, means)``, one row per key: uint32 counts
    and float32 means (NaN for a key without rows). Rows whose value is NaN or infinite, or
    whose key is ``>= groups``, are left out. Sums accumulate in float32 on the GPU.
    """
    k = _vector(keys, "keys")
    v = _vector(values, "values")
    _key_type(k, "keys", [np.dtype(np.uint32), np.dtype(np.int32)])
    if v.dtype != np.float32:
        raise TypeError(f"values has dtype {v.dtype}; supported: float32")
    if len(k) != len(v):
        raise ValueError(f"keys has {len(k)} elements but values has {len(v)}")
    if k.dtype == np.int32 and len(k) and int(k.min()) < 0:
        raise ValueError(f"keys must not be negative, found {int(k.min())}")
    if groups is None:
        groups = int(k.max()) + 1 if len(k) else 1
    if not 1 <= int(groups) <= 0xFFFFFFFF:
        raise ValueError(f"groups must be in 1..2^32-1, got {groups}")
    counts, means, _ = _native.group_by_mean(k.view(np.uint32), v, int(groups))
    return counts, means


def fft2(a: Any, inverse: bool = False) -> np.ndarray:
    """2-D FFT on the GPU of a complex64 array of shape (h, w) with power-of-two sides.

    Forward is unscaled (``np.fft.fft2``); ``inverse=True`` scales by ``1/(h*w)``
    (``np.fft.ifft2``). Returns complex64 of the same shape; precision is float32's.
    """
    arr = np.asarray(a)
    if arr.dtype != np.complex64:
        raise TypeError(f"a has dtype {arr.dtype}; supported: complex64")
    if arr.ndim != 2:
        raise ValueError(f"a must be 2-D, got shape {arr.shape}")
    h, w = arr.shape
    if h == 0 or w == 0:
        raise ValueError(f"a must not be empty, got shape {arr.shape}")
    flat = np.ascontiguousarray(arr).view(np.float32).reshape(-1)
    out = _native.fft2(flat, h, w, bool(inverse))
    return out.view(np.complex64).reshape(h, w)
