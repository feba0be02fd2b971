#!/usr/bin/env python3
"""DuckDB peer of `gpugraph join` on TPC-H lineitem ⋈ orders (l_orderkey = o_orderkey), same
host, same Parquet files (written by `gpugraph generate-table --tpch`).

    gpugraph generate-table --tpch lineitem --scale 10 --out /tmp/li10.parquet
    gpugraph generate-table --tpch orders --scale 10 --out /tmp/o10.parquet
    gpugraph join /tmp/li10.parquet /tmp/o10.parquet --left-on l_orderkey --right-on o_orderkey \
        --select l_orderkey,l_quantity,l_extendedprice,l_shipdate,o_custkey,o_orderdate,o_totalprice \
        --out /tmp/j10.parquet          # prints its GPU-phase and end-to-end timings
    python3 bench/peers/peers_join.py /tmp/li10.parquet /tmp/o10.parquet --out /tmp/j10-duck.parquet \
        --repeat 3 --json join-peer.json

Rows (JSON list, one object each: {"bench", "op", "peer", "elements", "median_ms", "min_ms",
"max_ms", "rows"}):
* `join-e2e`: file → file, `COPY (SELECT … JOIN …) TO out.parquet` (Snappy), like the CLI;
* `join-materialize`: the join of the two tables already in DuckDB's memory, materialized
  (`CREATE TABLE … AS SELECT …`): the phase to compare with the CLI's "GPU" time;
* `join-count`: the same join counted, nothing materialized (DuckDB's hash join alone).
`elements` is the number of lineitem rows. Threads: DuckDB's default (all cores) unless
--threads is given.
"""
import argparse
import json
import statistics
import time

import duckdb

DEFAULT_SELECT = "l_orderkey,l_quantity,l_extendedprice,l_shipdate,o_custkey,o_orderdate,o_totalprice"


def timed(con, sql, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        con.execute(sql)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times), max(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("lineitem")
    p.add_argument("orders")
    p.add_argument("--select", default=DEFAULT_SELECT)
    p.add_argument("--out", required=True, help="Parquet file the end-to-end run writes")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--json")
    args = p.parse_args()

    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {args.threads}")
    cols = [c.strip() for c in args.select.split(",") if c.strip()]
    left = [c for c in cols if c.startswith("l_")]
    right = [c for c in cols if c.startswith("o_")]
    select = ", ".join(cols)
    li, o = args.lineitem.replace("'", "''"), args.orders.replace("'", "''")
    out = args.out.replace("'", "''")
    n = con.execute(f"SELECT count(*) FROM read_parquet('{li}')").fetchone()[0]
    rows = []

    def add(op, t, result_rows):
        rows.append({"bench": "join", "op": op, "peer": "duckdb", "elements": n,
                     "median_ms": t[0], "min_ms": t[1], "max_ms": t[2], "rows": result_rows})
        print(f"{op:18s} {n:>12d} rows  median {t[0]:10.1f} ms  [{t[1]:.1f}-{t[2]:.1f}]  -> {result_rows} rows")

    join = f"FROM read_parquet('{li}') JOIN read_parquet('{o}') ON l_orderkey = o_orderkey"
    t = timed(con, f"COPY (SELECT {select} {join}) TO '{out}' (FORMAT parquet, COMPRESSION snappy)", args.repeat)
    written = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
    add("join-e2e", t, written)

    lcols = ", ".join(dict.fromkeys(["l_orderkey"] + left))
    rcols = ", ".join(dict.fromkeys(["o_orderkey"] + right))
    con.execute(f"CREATE TABLE l AS SELECT {lcols} FROM read_parquet('{li}')")
    con.execute(f"CREATE TABLE o AS SELECT {rcols} FROM read_parquet('{o}')")
    t = timed(con, f"CREATE OR REPLACE TABLE j AS SELECT {select} FROM l JOIN o ON l_orderkey = o_orderkey", args.repeat)
    add("join-materialize", t, con.execute("SELECT count(*) FROM j").fetchone()[0])
    t = timed(con, "SELECT count(*) FROM l JOIN o ON l_orderkey = o_orderkey", args.repeat)
    add("join-count", t, con.execute("SELECT count(*) FROM l JOIN o ON l_orderkey = o_orderkey").fetchone()[0])

    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
