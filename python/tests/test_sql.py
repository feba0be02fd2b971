"""gpugraph.sql on TPC-H SF 0.01 lineitem: Q1 and Q6 on the CPU engine against a plain-Python
oracle (exact decimals), the GPU engine against the CPU engine, pyarrow tables and paths as
tables, and the exceptions for bad SQL, missing files, unsupported extensions and bad
arguments."""

import datetime
import decimal
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpugraph

Q1 = """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
    sum(l_extendedprice) AS sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
    avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price,
    avg(l_discount) AS avg_disc, count(*) AS count_order
FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""

Q6 = """SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24"""


def oracle(path):
    t = pq.read_table(path).to_pydict()
    rows = zip(t["l_shipdate"], t["l_discount"], t["l_quantity"], t["l_extendedprice"],
               t["l_returnflag"], t["l_linestatus"], t["l_tax"])
    revenue = decimal.Decimal(0)
    q1 = defaultdict(lambda: [0, decimal.Decimal(0), decimal.Decimal(0), decimal.Decimal(0)])
    lo, hi, q1_end = datetime.date(1994, 1, 1), datetime.date(1995, 1, 1), datetime.date(1998, 9, 2)
    for ship, disc, qty, price, flag, status, tax in rows:
        if lo <= ship < hi and decimal.Decimal("0.05") <= disc <= decimal.Decimal("0.07") and qty < 24:
            revenue += price * disc
        if ship <= q1_end:
            g = q1[(flag, status)]
            g[0] += 1
            g[1] += qty
            g[2] += price
            g[3] += price * (1 - disc) * (1 + tax)
    return revenue, dict(sorted(q1.items()))


def test_q1_and_q6_on_the_cpu_engine_match_a_python_oracle(lineitem):
    revenue, q1 = oracle(lineitem)
    got = gpugraph.sql(Q6, tables={"lineitem": lineitem}, engine="cpu")
    assert isinstance(got, pa.Table)
    assert got.column("revenue").to_pylist() == [revenue]
    got = gpugraph.sql(Q1, tables={"lineitem": str(lineitem)}, engine="cpu").to_pylist()
    assert len(got) == len(q1) == 4
    for row, ((flag, status), (count, qty, price, charge)) in zip(got, q1.items()):
        assert (row["l_returnflag"], row["l_linestatus"]) == (flag, status)
        assert row["count_order"] == count
        assert row["sum_qty"] == qty
        assert row["sum_base_price"] == price
        assert row["sum_charge"] == charge


def test_q1_and_q6_gpu_engine_matches_the_cpu_engine(lineitem):
    """Exercises the GPU engine (fails while it reports itself unavailable)."""
    for q in (Q1, Q6):
        gpu = gpugraph.sql(q, tables={"lineitem": lineitem})
        cpu = gpugraph.sql(q, tables={"lineitem": lineitem}, engine="cpu")
        assert gpu.equals(cpu), f"{q}\nGPU:\n{gpu}\nCPU:\n{cpu}"


def test_pyarrow_tables_and_quoted_paths_give_the_file_tables_answer(lineitem):
    table = pq.read_table(lineitem)
    from_file = gpugraph.sql(Q1, tables={"lineitem": lineitem}, engine="cpu")
    from_memory = gpugraph.sql(Q1, tables={"lineitem": table}, engine="cpu")
    assert from_memory.equals(from_file)
    by_path = gpugraph.sql(f"SELECT count(*) AS n FROM '{lineitem}'", engine="cpu")
    assert by_path.column("n").to_pylist() == [table.num_rows]
    small = pa.table({"k": pa.array([1, 2, 2, 3], pa.int32()), "v": [1.0, 2.0, 3.0, None]})
    got = gpugraph.sql("SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY k", {"t": small}, "cpu")
    assert got.to_pydict() == {"k": [1, 2, 3], "s": [1.0, 5.0, None]}
    empty = gpugraph.sql("SELECT k FROM t WHERE k > 10", {"t": small}, "cpu")
    assert empty.num_rows == 0 and empty.schema.names == ["k"]


def test_errors_are_python_exceptions_naming_the_problem(lineitem, tmp_path):
    tables = {"lineitem": lineitem}
    with pytest.raises(ValueError, match="SELEC"):
        gpugraph.sql("SELEC 1", tables, "cpu")
    with pytest.raises(ValueError, match="nope"):
        gpugraph.sql("SELECT nope FROM lineitem", tables, "cpu")
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        gpugraph.sql("SELECT 1", {"t": tmp_path / "missing.parquet"}, "cpu")
    # A quoted path in FROM that is no file names the file, on either engine.
    for engine in ("cpu", "gpu"):
        with pytest.raises(FileNotFoundError, match="no such table file"):
            gpugraph.sql(f"SELECT * FROM '{tmp_path / 'absent.parquet'}'", None, engine)
    (tmp_path / "data.txt").write_text("x\n1\n")
    with pytest.raises(ValueError, match=r"unsupported table file extension \.txt"):
        gpugraph.sql("SELECT 1", {"t": tmp_path / "data.txt"}, "cpu")
    with pytest.raises(TypeError, match="int"):
        gpugraph.sql("SELECT 1", {"t": 42}, "cpu")
    with pytest.raises(ValueError, match="engine"):
        gpugraph.sql("SELECT 1", {}, "tpu")
    out = tmp_path / "copied.csv"
    with pytest.raises(ValueError, match="not supported"):
        gpugraph.sql(f"COPY (SELECT 1) TO '{out}'", {}, "cpu")
    assert not out.exists()


def test_scripts_define_views_and_tables_and_answer_the_last_query(lineitem, tmp_path):
    """A script as TPC-H Q15 is written (a view, the query over it, the view dropped), on
    both engines with the same answer; a write anywhere in a script refuses it whole."""
    script = """-- revenue per supplier, the best ones
    create view revenue (supplier, total) as
        select l_suppkey, sum(l_extendedprice * (1 - l_discount)) from lineitem
        where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-04-01'
        group by l_suppkey;
    create temp table best as select max(total) as top from revenue;
    select supplier, total from revenue, best where total = top order by supplier;
    drop view revenue;"""
    tables = {"lineitem": lineitem}
    cpu = gpugraph.sql(script, tables, "cpu")
    gpu = gpugraph.sql(script, tables, "gpu")
    assert cpu.num_rows >= 1 and cpu.schema.names == ["supplier", "total"]
    assert gpu.equals(cpu), f"GPU:\n{gpu}\nCPU:\n{cpu}"
    out = tmp_path / "copied.csv"
    with pytest.raises(ValueError, match="statement 2 of 2: COPY statements are not supported"):
        gpugraph.sql(f"select 1; copy (select 1) to '{out}'", {}, "cpu")
    assert not out.exists()
