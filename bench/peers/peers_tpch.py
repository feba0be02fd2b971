#!/usr/bin/env python3
"""CPU peers of `gpugraph bench tpch`: TPC-H Q1 and Q6 in DuckDB and Polars on the same host, in
the same device call (the device carries their wheels; see docs/benchmarks.md), and the joins in
DuckDB when their tables are given: Q14 with --part, Q12 with --orders, Q3 with --orders and
--customer, Q10 with those and --nation, Q5 with those, --supplier and --region.

    python3 bench/peers/peers_tpch.py --lineitem /tmp/lineitem-sf10.parquet \
        --part /tmp/part-sf10.parquet --orders /tmp/orders-sf10.parquet \
        --customer /tmp/customer-sf10.parquet --nation /tmp/nation-sf10.parquet \
        --engines duckdb --repeat 5 --json duckdb.json

Two modes per query, as in the GPU bench:
- "warm": the table already in the engine's memory (DuckDB: a table created from the Parquet
  file; Polars: a DataFrame read once), the query alone is timed;
- "parquet": the query reads the Parquet file (DuckDB: read_parquet in the FROM clause;
  Polars: scan_parquet, lazy).
Each row: {"bench": "tpch", "op": "q1-warm"|..., "peer", "median_ms", "min_ms", "max_ms",
"rows", "threads"}. Wall-clock times (time.perf_counter) after one untimed run.
"""
import argparse
import datetime as dt
import json
import os
import statistics
import time

Q1 = """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
       sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price,
       avg(l_discount) as avg_disc, count(*) as count_order
from {lineitem}
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus
"""

Q6 = """
select sum(l_extendedprice * l_discount) as revenue
from {lineitem}
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24
"""

Q14 = """
select 100.00 * sum(case when p_type like 'PROMO%'
                         then l_extendedprice * (1 - l_discount) else 0 end)
       / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from {lineitem}, {part}
where l_partkey = p_partkey
  and l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-10-01'
"""

Q12 = """
select l_shipmode,
       sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH'
                then 1 else 0 end) as high_line_count,
       sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH'
                then 1 else 0 end) as low_line_count
from {orders}, {lineitem}
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP')
  and l_commitdate < l_receiptdate and l_shipdate < l_commitdate
  and l_receiptdate >= date '1994-01-01' and l_receiptdate < date '1995-01-01'
group by l_shipmode
order by l_shipmode
"""

Q3 = """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from {customer}, {orders}, {lineitem}
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10
"""

Q10 = """
select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name,
       c_address, c_phone, c_comment
from {customer}, {orders}, {lineitem}, {nation}
where c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate >= date '1993-10-01' and o_orderdate < date '1994-01-01'
  and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20
"""

Q5 = """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from {customer}, {orders}, {lineitem}, {supplier}, {nation}, {region}
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01' and o_orderdate < date '1995-01-01'
group by n_name
order by revenue desc
"""

# Not TPC-H: `gpugraph_datafusion::tpch::TOPK`, a top-k in a total order.
TOPK = """
select l_orderkey, l_linenumber, l_extendedprice, l_shipdate
from lineitem where l_shipdate >= date '1995-01-01'
order by l_extendedprice desc, l_orderkey, l_linenumber limit 10
"""

# Not TPC-H: `gpugraph_datafusion::tpch::DISTINCT`, three COUNT(DISTINCT)s over Q1's groups.
DISTINCT = """
select l_returnflag, l_linestatus,
  count(distinct l_orderkey) as orders, count(distinct l_partkey) as parts,
  count(distinct l_suppkey) as suppliers, count(*) as lines
from lineitem where l_shipdate <= date '1998-09-02'
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus
"""

# Each query and the tables it reads.
QUERIES = [
    ("q1", Q1, ["lineitem"]),
    ("q6", Q6, ["lineitem"]),
    ("q12", Q12, ["lineitem", "orders"]),
    ("q14", Q14, ["lineitem", "part"]),
    ("q3", Q3, ["lineitem", "orders", "customer"]),
    ("q10", Q10, ["lineitem", "orders", "customer", "nation"]),
    ("q5", Q5, ["lineitem", "orders", "customer", "supplier", "nation", "region"]),
    ("topk", TOPK, ["lineitem"]),
    ("distinct", DISTINCT, ["lineitem"]),
]


def timed(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times), max(times)


def duckdb_rows(files, repeat):
    """`files`: table name -> Parquet file (lineitem always); queries whose tables are all
    given run."""
    import duckdb

    con = duckdb.connect()
    threads = con.execute("select current_setting('threads')").fetchone()[0]
    for table, file in files.items():
        con.execute(f"create table {table} as select * from read_parquet('{file}')")
    rows = con.execute("select count(*) from lineitem").fetchone()[0]
    out = []
    for name, q, tables in QUERIES:
        if not all(t in files for t in tables):
            continue
        for mode in ("warm", "parquet"):
            names = {t: t if mode == "warm" else f"read_parquet('{files[t]}')" for t in tables}
            med, lo, hi = timed(lambda: con.execute(q.format(**names)).fetchall(), repeat)
            out.append(dict(bench="tpch", op=f"{name}-{mode}", peer="duckdb", median_ms=med,
                            min_ms=lo, max_ms=hi, rows=rows, threads=threads))
    return out


def polars_q1(lf):
    import polars as pl

    cutoff = dt.date(1998, 12, 1) - dt.timedelta(days=90)
    disc = pl.col("l_extendedprice") * (1 - pl.col("l_discount"))
    return (
        lf.filter(pl.col("l_shipdate") <= cutoff)
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            pl.col("l_extendedprice").sum().alias("sum_base_price"),
            disc.sum().alias("sum_disc_price"),
            (disc * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            pl.col("l_extendedprice").mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
    )


def polars_q6(lf):
    import polars as pl

    return lf.filter(
        (pl.col("l_shipdate") >= dt.date(1994, 1, 1))
        & (pl.col("l_shipdate") < dt.date(1995, 1, 1))
        & pl.col("l_discount").is_between(0.05, 0.07)
        & (pl.col("l_quantity") < 24)
    ).select((pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue"))


def polars_rows(path, repeat):
    import polars as pl

    threads = pl.thread_pool_size()
    df = pl.read_parquet(path)
    out = []
    for name, q in (("q1", polars_q1), ("q6", polars_q6)):
        for mode, make in (("warm", lambda: df.lazy()), ("parquet", lambda: pl.scan_parquet(path))):
            med, lo, hi = timed(lambda: q(make()).collect(), repeat)
            out.append(dict(bench="tpch", op=f"{name}-{mode}", peer="polars", median_ms=med,
                            min_ms=lo, max_ms=hi, rows=df.height, threads=threads))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lineitem", required=True, help="lineitem Parquet file")
    ap.add_argument("--part", help="part Parquet file (adds Q14; DuckDB only)")
    ap.add_argument("--orders", help="orders Parquet file (adds Q12; DuckDB only)")
    ap.add_argument("--customer", help="customer Parquet file (adds Q3 with --orders)")
    ap.add_argument("--nation", help="nation Parquet file (adds Q10 with Q3's tables)")
    ap.add_argument("--supplier", help="supplier Parquet file (adds Q5 with Q10's and --region)")
    ap.add_argument("--region", help="region Parquet file (adds Q5)")
    ap.add_argument("--engines", default="duckdb,polars")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", required=True)
    ap.add_argument("--queries", help="comma-separated query names to run (default: all)")
    a = ap.parse_args()
    if a.queries:
        wanted = set(a.queries.split(","))
        QUERIES[:] = [q for q in QUERIES if q[0] in wanted]
    rows = []
    for engine in a.engines.split(","):
        try:
            if engine == "duckdb":
                files = {"lineitem": a.lineitem}
                for t in ("part", "orders", "customer", "nation", "supplier", "region"):
                    if getattr(a, t):
                        files[t] = getattr(a, t)
                rows += duckdb_rows(files, a.repeat)
            else:
                rows += {"polars": polars_rows}[engine](a.lineitem, a.repeat)
        except ImportError as e:
            print(f"{engine}: not installed ({e}); skipped")
    for r in rows:
        print(f"{r['peer']:>7} {r['op']:<11} {r['median_ms']:9.1f} ms "
              f"[{r['min_ms']:.1f}-{r['max_ms']:.1f}] threads={r['threads']}")
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"cpus: {os.cpu_count()}")


if __name__ == "__main__":
    main()
