"""``gpugraph.SessionContext``: a SQL session that keeps its tables across queries, shaped like
datafusion-python's ``SessionContext`` so code written for it moves over by changing the
import.

Why a session beside the one-shot :func:`gpugraph.sql`: a session registers each table once,
keeps views and tables that scripts define, and keeps a GPU column cache keyed by its
in-memory tables' batches, so the second query over an in-memory table finds its columns
already on the GPU. Files (``register_parquet``) are read again by every query, as
DataFusion does: their contents may change between queries.
"""

import os
from typing import Any, Dict, List, Optional, Sequence

from . import _native

__all__ = ["SessionContext", "DataFrame"]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DataFrame:
    """A planned query of a :class:`SessionContext`. Planning ran when it was made (a script's
    definitions ran then, once); each ``collect`` (and every ``to_*``) runs the plan again."""

    def __init__(self, plan: Any) -> None:
        self._plan = plan

    def collect(self) -> "List[pyarrow.RecordBatch]":  # noqa: F821 (imported lazily)
        """Runs the query; its rows as a list of ``pyarrow.RecordBatch``."""
        return list(self._plan.collect())

    def to_arrow_table(self) -> "pyarrow.Table":  # noqa: F821
        """Runs the query; its rows as a ``pyarrow.Table`` (zero rows keep the schema)."""
        import pyarrow  # noqa: F401 (the reader is a pyarrow object)

        return self._plan.collect().read_all()

    def to_pandas(self) -> "pandas.DataFrame":  # noqa: F821
        """Runs the query; its rows as a ``pandas.DataFrame`` (needs pandas)."""
        return self.to_arrow_table().to_pandas()

    def to_pylist(self) -> List[Dict[str, Any]]:
        """Runs the query; its rows as a list of dicts."""
        return self.to_arrow_table().to_pylist()

    def count(self) -> int:
        """Runs the query; the number of rows it answers."""
        return sum(b.num_rows for b in self.collect())

    def explain_string(self) -> str:
        """The physical plan, one operator a line; GPU operators say what runs on the GPU and
        why anything fell back to the CPU."""
        return self._plan.explain()

    def explain(self) -> None:
        """Prints :meth:`explain_string` (datafusion-python's ``explain`` prints too)."""
        print(self.explain_string())

    def metrics(self) -> Dict[str, float]:
        """Every operator's counters and times (ms) in the last run, summed:
        ``{"Operator.metric": value}``, e.g. ``GpuPartialAggregateExec.gpu_cache_hits``."""
        return dict(self._plan.metrics())

    def __repr__(self) -> str:
        return "DataFrame(\n" + self.explain_string() + ")"


def _device_list(devices: "Optional[str | Sequence[int]]") -> Optional[str]:
    """``devices`` as ``gpugraph sql --devices`` spells it (``None`` stays ``None``)."""
    if devices is None or isinstance(devices, str):
        return devices
    try:
        numbers = list(devices)
    except TypeError:
        raise ValueError(f"devices must be 'all' or a list of adapter numbers, got {devices!r}") from None
    if not numbers or any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in numbers):
        raise ValueError(f"devices must be 'all' or a list of adapter numbers, got {devices!r}")
    return ",".join(str(n) for n in numbers)


class SessionContext:
    """A DataFusion session on the GPU engine (``engine="cpu"``: DataFusion's CPU plan, the
    reference). ``target_partitions`` sets DataFusion's CPU threads (default: the cores) and
    ``memory_limit`` the bytes its operators may hold (past it a query fails, naming the
    operator). Sessions of one process share the GPU device, unless ``devices`` names the
    GPUs each aggregate splits its input over: ``"all"`` or adapter numbers such as
    ``[0, 1]`` (``gpugraph info`` lists them; a number may repeat, which puts two devices on
    one GPU). Each device aggregates its share of the row groups or batches and DataFusion
    merges the groups.

    Raises ``ValueError`` for a bad engine, option or device list; a GPU session raises
    ``RuntimeError`` when no GPU device opens.
    """

    def __init__(
        self,
        engine: str = "gpu",
        *,
        target_partitions: Optional[int] = None,
        memory_limit: Optional[int] = None,
        devices: "Optional[str | Sequence[int]]" = None,
    ) -> None:
        for what, v in (("target_partitions", target_partitions), ("memory_limit", memory_limit)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"{what} must be a non-negative int, got {v!r}")
        self._session = _native.Session(
            engine, target_partitions, memory_limit, _device_list(devices)
        )

    @property
    def engine(self) -> str:
        """``"gpu"`` or ``"cpu"``."""
        return self._session.engine

    def register_parquet(self, name: str, path: "os.PathLike[str] | str") -> None:
        """Registers the Parquet file at ``path`` as table ``name`` (its schema is read now;
        ``FileNotFoundError`` when it is missing, ``ValueError`` when ``name`` is taken or the
        file is not Parquet)."""
        self._session.register_file(name, os.fspath(path), "parquet")

    def register_csv(self, name: str, path: "os.PathLike[str] | str") -> None:
        """Registers the CSV file (with a header row) at ``path`` as table ``name``."""
        self._session.register_file(name, os.fspath(path), "csv")

    def register_record_batches(
        self, name: str, partitions: "Sequence[Sequence[pyarrow.RecordBatch]]"  # noqa: F821
    ) -> None:
        """Registers in-memory record batches as table ``name``, given as datafusion-python
        takes them: a list of partitions, each a list of ``pyarrow.RecordBatch`` of one
        schema. The batches are shared, not copied; the GPU keeps their columns across
        queries of this session."""
        import pyarrow as pa

        batches = [b for part in partitions for b in part]
        if not batches:
            raise ValueError(f"register_record_batches('{name}'): no batches (the schema comes from them)")
        for b in batches:
            if not isinstance(b, pa.RecordBatch):
                raise TypeError(f"register_record_batches('{name}'): expected pyarrow.RecordBatch, got {type(b).__name__}")
        self._session.register_stream(name, pa.Table.from_batches(batches))

    def from_arrow(self, data: Any, name: str) -> DataFrame:
        """Registers ``data`` (a ``pyarrow.Table`` or anything with ``__arrow_c_stream__``) as
        the in-memory table ``name`` and returns ``table(name)``."""
        if not hasattr(data, "__arrow_c_stream__"):
            raise TypeError(f"from_arrow('{name}'): expected Arrow data (__arrow_c_stream__), got {type(data).__name__}")
        self._session.register_stream(name, data)
        return self.table(name)

    def deregister_table(self, name: str) -> None:
        """Removes table or view ``name`` (``KeyError`` when there is none)."""
        self._session.deregister_table(name)

    def table_exist(self, name: str) -> bool:
        """Whether a table or view ``name`` is registered."""
        return self._session.table_exist(name)

    def table_names(self) -> List[str]:
        """The registered tables and views, sorted."""
        return list(self._session.table_names())

    def table(self, name: str) -> DataFrame:
        """All of table ``name``."""
        if not self.table_exist(name):
            raise KeyError(f"no table named '{name}'")
        return self.sql(f"SELECT * FROM {_quoted(name)}")

    def sql(self, query: str) -> DataFrame:
        """Plans a read-only query or script now (a script's ``CREATE VIEW`` / ``CREATE TEMP
        TABLE … AS`` run now and stay defined in this session); run it with ``collect`` or a
        ``to_*`` method. Statements that write files or change settings are refused, naming
        them. Raises ``ValueError`` for bad SQL and unknown tables or columns."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        return DataFrame(self._session.plan(query))
