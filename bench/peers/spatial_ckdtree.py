#!/usr/bin/env python3
"""CPU peer of `gpugraph bench spatial`: scipy.spatial.cKDTree over the same points and radius
queries, on the same host.

    ./gpugraph bench spatial --sizes 2^24 --queries 10000 --dump DIR --json gpu.json
    python3 bench/peers/spatial_ckdtree.py DIR --json peer.json [--check gpu.json]

DIR holds the bench's `points-N.npy` (N x 2 float32) and `queries-N.npy` (Q x 3: x, y, r).
Rows: {"bench": "spatial", "op", "peer", "elements", "queries", "build_ms", "query_ms",
"per_query_us", "hits_per_query"} for cKDTree build and query_ball_point with workers=1 and
workers=-1 (all cores). The bench rounds coordinates to multiples of 2^-8 and
uses radii like 1.0, so float64 distances decide exactly as the GPU's float32 ones: the check
compares mean hits per query, which should match to the last digit.
"""
import argparse
import glob
import json
import os
import sys
import time

try:
    import numpy as np
    from scipy.spatial import cKDTree
except ImportError as e:  # the lead's device image may lack scipy: say so, do not fake a row
    print(f"spatial_ckdtree.py: scipy/numpy unavailable ({e}); no peer rows", file=sys.stderr)
    sys.exit(3)


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2], out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--check", help="the bench's JSON: compare mean hits per query")
    args = ap.parse_args()
    rows = []
    for path in sorted(glob.glob(os.path.join(args.dir, "points-*.npy"))):
        n = int(os.path.basename(path)[len("points-"):-len(".npy")])
        pts = np.load(path).astype(np.float64)
        q = np.load(os.path.join(args.dir, f"queries-{n}.npy")).astype(np.float64)
        build_ms, tree = timed(lambda: cKDTree(pts), args.repeat)
        for workers in (1, -1):
            query_ms, hits = timed(
                lambda: tree.query_ball_point(q[:, :2], q[:, 2], workers=workers, return_length=True),
                args.repeat,
            )
            rows.append({
                "bench": "spatial",
                "op": "ckdtree",
                "peer": f"scipy.cKDTree workers={'all' if workers == -1 else 1}",
                "elements": n,
                "queries": int(len(q)),
                "build_ms": build_ms,
                "query_ms": query_ms,
                "per_query_us": query_ms * 1e3 / len(q),
                "hits_per_query": float(np.mean(hits)),
            })
            print(f"{n:>10} {rows[-1]['peer']:<28} build {build_ms:9.2f} ms  queries {query_ms:9.2f} ms"
                  f"  {rows[-1]['per_query_us']:8.2f} us/query  {rows[-1]['hits_per_query']:.1f} hits/query")
    if args.check:
        gpu = json.load(open(args.check))["rows"]
        for r in rows:
            for g in gpu:
                if g["op"] == "scan" and g["elements"] == r["elements"] and g["queries"] == r["queries"]:
                    rel = abs(g["hits_per_query"] - r["hits_per_query"]) / max(r["hits_per_query"], 1e-9)
                    print(f"check n={r['elements']}: GPU {g['hits_per_query']:.3f} vs cKDTree "
                          f"{r['hits_per_query']:.3f} hits/query (relative difference {rel:.2e})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
