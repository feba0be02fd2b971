"""Type stubs of the gpugraph package (see __init__.py for the contracts)."""

from typing import Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt
import pyarrow

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

from .session import DataFrame as DataFrame, SessionContext as SessionContext

def sql(
    query: str,
    tables: Optional[Mapping[str, Any]] = ...,
    engine: str = ...,
) -> pyarrow.Table:
    """Run a read-only SQL query or script (engine "gpu" or "cpu"); tables are pyarrow
    tables (anything with __arrow_c_stream__) or .parquet/.csv/.arrow paths. A script may
    define views and in-memory tables; the last query's rows are the result."""

def sort(a: npt.ArrayLike, descending: bool = ...) -> npt.NDArray[Any]:
    """Stable GPU sort of a 1-D uint32, int32 or float32 array."""

def argsort(a: npt.ArrayLike, descending: bool = ...) -> npt.NDArray[np.uint32]:
    """Source indices of the stable GPU sort of a 1-D uint32, int32 or float32 array."""

def cumsum(a: npt.ArrayLike) -> npt.NDArray[Any]:
    """Inclusive prefix sums of a 1-D uint32 or int32 array, wrapping in its dtype."""

def compact(values: npt.ArrayLike, mask: npt.ArrayLike) -> npt.NDArray[Any]:
    """values[mask] for a 1-D 32-bit array and a bool or uint32 mask."""

def histogram(
    values: npt.ArrayLike,
    bins: Union[int, Sequence[float], npt.NDArray[Any]] = ...,
    range: Optional[Tuple[float, float]] = ...,
) -> Tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    """(counts, edges) of a 1-D float32 array, like np.histogram."""

def group_by_mean(
    keys: npt.ArrayLike, values: npt.ArrayLike, groups: Optional[int] = ...
) -> Tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """(counts, means) of float32 values per dense uint32/int32 key."""

def fft2(a: npt.ArrayLike, inverse: bool = ...) -> npt.NDArray[np.complex64]:
    """2-D FFT of a complex64 (h, w) array with power-of-two sides."""
