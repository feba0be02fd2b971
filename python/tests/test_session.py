"""gpugraph.SessionContext: a session that keeps its tables, definitions and GPU column cache
across queries. The GPU engine against the CPU engine (TPC-H Q1, Q6 from Parquet and from
memory), the cache hit on the second query over an in-memory table (the plan's metrics),
views that outlive their script, the datafusion-python-shaped methods, the README's example
verbatim, and the errors for bad arguments."""

import datetime
import decimal
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import gpugraph
from conftest import ROOT
from test_sql import Q1, Q6

HITS = "GpuPartialAggregateExec.gpu_cache_hits"


def test_parquet_tables_gpu_engine_equals_cpu_engine(lineitem):
    gpu, cpu = gpugraph.SessionContext(), gpugraph.SessionContext("cpu")
    assert (gpu.engine, cpu.engine) == ("gpu", "cpu")
    for ctx in (gpu, cpu):
        ctx.register_parquet("lineitem", lineitem)
        assert ctx.table_names() == ["lineitem"]
    for q in (Q1, Q6):
        got, want = gpu.sql(q).to_arrow_table(), cpu.sql(q).to_arrow_table()
        assert got.equals(want), f"{q}\nGPU:\n{got}\nCPU:\n{want}"
    assert "Gpu" in gpu.sql(Q1).explain_string()
    assert "Gpu" not in cpu.sql(Q1).explain_string()


def test_in_memory_tables_stay_on_the_gpu_across_queries(lineitem):
    table = pq.read_table(lineitem)
    ctx = gpugraph.SessionContext()
    ctx.register_record_batches("lineitem", [table.to_batches(max_chunksize=20_000)])
    first = ctx.sql(Q6)
    got = first.to_arrow_table()
    assert first.metrics().get(HITS, 0) == 0
    again = ctx.sql(Q6)
    assert again.to_arrow_table().equals(got)
    assert again.metrics()[HITS] >= 1, again.metrics()
    want = gpugraph.sql(Q6, tables={"lineitem": table}, engine="cpu")
    assert got.equals(want)
    # A collected frame runs again (and hits again); metrics are the last run's.
    assert again.to_arrow_table().equals(got)
    assert again.metrics()[HITS] >= 1


def test_definitions_outlive_their_script_and_tables_come_and_go(lineitem):
    ctx = gpugraph.SessionContext()
    ctx.register_parquet("lineitem", lineitem)
    ctx.sql("CREATE VIEW cheap AS SELECT * FROM lineitem WHERE l_discount < 0.03")
    table = pq.read_table(lineitem)
    want = sum(1 for d in table["l_discount"].to_pylist() if d < decimal.Decimal("0.03"))
    assert ctx.sql("SELECT count(*) AS n FROM cheap").to_pylist() == [{"n": want}]
    assert ctx.table_names() == ["cheap", "lineitem"]
    assert ctx.table("cheap").count() == want
    ctx.deregister_table("cheap")
    assert not ctx.table_exist("cheap") and ctx.table_exist("lineitem")
    with pytest.raises(KeyError, match="cheap"):
        ctx.deregister_table("cheap")
    with pytest.raises(KeyError, match="cheap"):
        ctx.table("cheap")


def test_frames_convert_like_datafusion_pythons(lineitem):
    ctx = gpugraph.SessionContext()
    small = pa.table({"k": pa.array([3, 1, 2, 1], pa.int32()), "v": [1.0, 2.0, 3.0, 4.0]})
    frame = ctx.from_arrow(small, "t")
    assert frame.count() == 4
    df = ctx.sql("SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY k")
    batches = df.collect()
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert pa.Table.from_batches(batches).to_pylist() == [
        {"k": 1, "s": 6.0}, {"k": 2, "s": 3.0}, {"k": 3, "s": 1.0}]
    pandas = df.to_pandas()
    assert isinstance(pandas, pd.DataFrame) and list(pandas["s"]) == [6.0, 3.0, 1.0]
    empty = ctx.sql("SELECT k FROM t WHERE k > 10").to_arrow_table()
    assert empty.num_rows == 0 and empty.schema.names == ["k"]
    assert "DataFrame(" in repr(df)


def test_devices_split_aggregates_and_answer_like_one_device(lineitem):
    one = gpugraph.SessionContext()
    two = gpugraph.SessionContext(devices=[0, 0])
    every = gpugraph.SessionContext(devices="all")
    for ctx in (one, two, every):
        ctx.register_parquet("lineitem", lineitem)
    for q in (Q1, Q6):
        want = one.sql(q).to_arrow_table()
        assert two.sql(q).to_arrow_table().equals(want), q
        assert every.sql(q).to_arrow_table().equals(want), q
    assert "devices=2" in two.sql(Q6).explain_string()
    with pytest.raises(ValueError, match="no adapter 9"):
        gpugraph.SessionContext(devices=[9])
    with pytest.raises(ValueError, match="'x' is not an adapter number"):
        gpugraph.SessionContext(devices="0,x")
    for bad in ([], [-1], [True], 3):
        with pytest.raises(ValueError, match="list of adapter numbers"):
            gpugraph.SessionContext(devices=bad)
    with pytest.raises(ValueError, match="GPU engine"):
        gpugraph.SessionContext("cpu", devices="all")


def test_bad_arguments_raise_named_errors(lineitem, tmp_path):
    with pytest.raises(ValueError, match="engine must be 'gpu' or 'cpu'"):
        gpugraph.SessionContext("tpu")
    with pytest.raises(ValueError, match="target_partitions"):
        gpugraph.SessionContext(target_partitions=-1)
    ctx = gpugraph.SessionContext()
    with pytest.raises(FileNotFoundError):
        ctx.register_parquet("t", tmp_path / "missing.parquet")
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="extension says csv"):
        ctx.register_parquet("t", csv)
    ctx.register_csv("t", csv)
    assert ctx.sql("SELECT a + b AS s FROM t").to_pylist() == [{"s": 3}]
    with pytest.raises(ValueError, match="given twice"):
        ctx.register_parquet("t", lineitem)
    with pytest.raises(ValueError, match="no batches"):
        ctx.register_record_batches("u", [[]])
    with pytest.raises(TypeError, match="RecordBatch"):
        ctx.register_record_batches("u", [[{"a": 1}]])
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        ctx.from_arrow([1, 2], "u")
    with pytest.raises(ValueError):
        ctx.sql("SELEC 1")
    with pytest.raises(ValueError, match="nope"):
        ctx.sql("SELECT nope FROM t")
    out = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match="COPY"):
        ctx.sql(f"COPY t TO '{out}'")
    assert not out.exists()
    with pytest.raises(TypeError):
        ctx.sql(42)


def test_the_readme_example_runs_and_is_verbatim(lineitem):
    example = ROOT / "python" / "examples" / "session.py"
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```python\n# python/examples/session.py\n", 1)
    assert len(block) == 2, "README.md has no python block headed by the example's path"
    assert block[1].split("```", 1)[0] == example.read_text()
    run = subprocess.run([sys.executable, example, lineitem], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    ship = pq.read_table(lineitem)["l_shipdate"]
    rows = pc.sum(pc.less_equal(ship, pa.scalar(datetime.date(1998, 9, 2)))).as_py()
    assert f"'shipped_rows': {rows}" in run.stdout, run.stdout
    assert "Gpu" in run.stdout
