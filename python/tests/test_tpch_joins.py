"""gpugraph.sql on TPC-H SF 0.01's join queries (Q3, Q5, Q10, Q12, Q14): the GPU engine's
answers equal the CPU engine's (DataFusion's own operators), from Parquet files and from
pyarrow tables. The queries are DataFusion's benchmark texts, as `bench tpch` runs them."""

import subprocess

import pyarrow.parquet as pq
import pytest

import gpugraph
from conftest import gpugraph_binary

Q12 = """select l_shipmode, sum(case when o_orderpriority = '1-URGENT'
    or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
    sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end)
    as low_line_count from orders, lineitem where o_orderkey = l_orderkey
    and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate
    and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01'
    and l_receiptdate < date '1994-01-01' + interval '1' year
    group by l_shipmode order by l_shipmode"""

Q14 = """select 100.00 * sum(case when p_type like 'PROMO%'
    then l_extendedprice * (1 - l_discount) else 0 end) / sum(l_extendedprice * (1 - l_discount))
    as promo_revenue from lineitem, part where l_partkey = p_partkey
    and l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-09-01' + interval '1' month"""

Q3 = """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue,
    o_orderdate, o_shippriority from customer, orders, lineitem
    where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
    and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
    group by l_orderkey, o_orderdate, o_shippriority
    order by revenue desc, o_orderdate, l_orderkey limit 10"""

Q10 = """select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue,
    c_acctbal, n_name, c_address, c_phone, c_comment from customer, orders, lineitem, nation
    where c_custkey = o_custkey and l_orderkey = o_orderkey
    and o_orderdate >= date '1993-10-01' and o_orderdate < date '1993-10-01' + interval '3' month
    and l_returnflag = 'R' and c_nationkey = n_nationkey
    group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
    order by revenue desc, c_custkey limit 20"""

Q5 = """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
    from customer, orders, lineitem, supplier, nation, region
    where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
    and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
    and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
    and o_orderdate < date '1994-01-01' + interval '1' year
    group by n_name order by revenue desc"""

JOINS = {"Q12": Q12, "Q14": Q14, "Q3": Q3, "Q10": Q10, "Q5": Q5}
DIMENSIONS = ("orders", "part", "customer", "nation", "supplier", "region")


@pytest.fixture(scope="session")
def tpch(lineitem, tmp_path_factory):
    """lineitem and every table the join queries read, as Parquet paths at SF 0.01."""
    folder = tmp_path_factory.mktemp("tpch-joins")
    tables = {"lineitem": lineitem}
    for name in DIMENSIONS:
        path = folder / f"{name}.parquet"
        subprocess.run(
            [gpugraph_binary(), "generate-table", "--tpch", name, "--scale", "0.01",
             "--out", path],
            check=True,
            capture_output=True,
        )
        tables[name] = path
    return tables


@pytest.mark.parametrize("name", list(JOINS))
def test_join_queries_on_the_gpu_engine_match_the_cpu_engine(tpch, name):
    query = JOINS[name]
    cpu = gpugraph.sql(query, tables=tpch, engine="cpu")
    assert cpu.num_rows > 0, f"{name} selects nothing at SF 0.01: the check would be empty"
    gpu = gpugraph.sql(query, tables=tpch)
    assert gpu.equals(cpu), f"{name}\nGPU:\n{gpu}\nCPU:\n{cpu}"


def test_join_queries_over_pyarrow_tables_match_the_files(tpch):
    in_memory = {name: pq.read_table(path) for name, path in tpch.items()}
    for name in ("Q12", "Q5"):
        from_files = gpugraph.sql(JOINS[name], tables=tpch)
        from_memory = gpugraph.sql(JOINS[name], tables=in_memory)
        assert from_memory.equals(from_files), name
