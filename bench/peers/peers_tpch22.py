#!/usr/bin/env python3
"""DuckDB on all 22 TPC-H queries as the specification writes them (the files
`crates/gpugraph-datafusion/src/tpch/qN.sql` that `gpugraph bench tpch --query tpch` runs), on
the same Parquet files and host, for the 22-query chart (issue 49):

    python3 bench/peers/peers_tpch22.py --tables-dir .tpch/sf10 --repeat 3 --json duckdb22.json

`--tables-dir` holds `<table>.parquet` for the eight tables. Two modes per query, as in the GPU
bench: "warm" (the tables loaded into DuckDB's memory first; the query alone is timed) and
"parquet" (views over `read_parquet`, so every run reads the files). Scripts (Q15: a view, the
query, the view dropped) run statement by statement and are timed whole. Each row:
{"bench": "tpch", "op": "q1-warm"|..., "peer": "duckdb", "median_ms", "min_ms", "max_ms",
"rows", "threads"}; wall-clock times after one untimed run.
"""
import argparse
import json
import os
import pathlib
import statistics
import time

TABLES = ["part", "supplier", "partsupp", "customer", "orders", "lineitem", "nation", "region"]
SPEC = pathlib.Path(__file__).resolve().parents[2] / "crates/gpugraph-datafusion/src/tpch"


def statements(text):
    lines = [l for l in text.splitlines() if not l.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables-dir", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--queries", default=",".join(f"q{n}" for n in range(1, 23)))
    ap.add_argument("--modes", default="warm,parquet")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    import duckdb

    rows = []
    for mode in a.modes.split(","):
        con = duckdb.connect()
        threads = con.execute("select current_setting('threads')").fetchone()[0]
        for t in TABLES:
            path = os.path.join(a.tables_dir, f"{t}.parquet")
            kind = "table" if mode == "warm" else "view"
            con.execute(f"create {kind} {t} as select * from read_parquet('{path}')")
        lineitem = con.execute("select count(*) from lineitem").fetchone()[0]
        for q in a.queries.split(","):
            stmts = statements((SPEC / f"{q}.sql").read_text())

            def run():
                out = None
                for s in stmts:
                    r = con.execute(s)
                    out = r.fetchall() if r.description else out
                return out

            run()
            times = []
            for _ in range(a.repeat):
                start = time.perf_counter()
                run()
                times.append((time.perf_counter() - start) * 1e3)
            row = dict(bench="tpch", op=f"{q}-{mode}", peer="duckdb",
                       median_ms=statistics.median(times), min_ms=min(times), max_ms=max(times),
                       rows=lineitem, threads=threads)
            print(f"duckdb {q} {mode}: {row['median_ms']:.1f} ms [{row['min_ms']:.1f}-{row['max_ms']:.1f}]",
                  flush=True)
            rows.append(row)
    with open(a.json, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
