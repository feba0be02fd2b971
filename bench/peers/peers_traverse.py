#!/usr/bin/env python3
"""Peer timings for `gpugraph bench traverse`: bounded breadth-first reachability over the same
power-law graph (the recipe in crates/gpugraph-cli/src/bench/traverse.rs, rebuilt here in numpy
uint64 arithmetic, bit for bit), depth 4 from 1,000 seeds, through PyTorch and CuPy on CUDA.

    python3 bench/peers/peers_traverse.py --sizes 16777216 --repeat 10 --json traverse-peer.json

Peers (forward edges only, like the `traverse-forward` row):
  torch-frontier  edge-proportional expansion: gather the frontier's CSR rows
                  (repeat_interleave), drop visited targets, unique, mark visited;
  torch-spmv      sparse-matrix frontier expansion: y = R @ x per level over the reverse CSR
                  (torch.sparse_csr_tensor, every edge per level), next = (y > 0) & ~visited;
  cupy-spmv       the same SpMV through cuSPARSE (cupyx.scipy.sparse), when CuPy is present.

Each row: {"bench", "op", "peer", "nodes", "edges", "elements" (traversed edges: the edges of
every expanded node, as the gpugraph row counts them), "reached", "median_ms", "min_ms",
"max_ms"}; every peer's reached count must equal the numpy BFS's (and `gpugraph bench
traverse`'s progress line). `--verify` runs only the numpy generator and BFS (no CUDA): it
prints the reached and traversed-edge counts to compare with the gpugraph bench on any machine.
"""
import argparse
import json
import statistics
import sys

import numpy as np

U64 = np.uint64


def splitmix64(x):
    with np.errstate(over="ignore"):
        z = x + U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
        return z ^ (z >> U64(31))


def power_law_graph(n, degree, seeds):
    """CSR offsets, neighbours (int64) and seeds of the bench recipe; n a power of two."""
    m = n * degree
    mask = U64(n - 1)
    src = np.empty(m, dtype=np.int64)
    dst = np.empty(m, dtype=np.int64)
    step = 1 << 24
    for lo in range(0, m, step):
        e = np.arange(lo, min(lo + step, m), dtype=U64)
        h = splitmix64(e + U64(0x1234_0000_0000))
        h1, h2 = h & U64(0xFFFFFFFF), h >> U64(32)
        s = ((((h1 * h1) >> U64(32)) * h1) >> U64(32)) * U64(n) >> U64(32)
        d = (((h2 * h2) >> U64(32)) * U64(n)) >> U64(32)
        src[lo:lo + len(e)] = ((s * U64(0x9E3779B1) + U64(0x7F4A7C15)) & mask).astype(np.int64)
        dst[lo:lo + len(e)] = ((d * U64(0x85EBCA77) + U64(0x165667B1)) & mask).astype(np.int64)
    order = np.argsort(src, kind="stable")
    neighbors = dst[order]
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.bincount(src, minlength=n))
    i = np.arange(seeds, dtype=U64)
    seed_ids = (splitmix64(i + U64(0x5EED_0000_0000)) & mask).astype(np.int64)
    return offsets, neighbors, seed_ids


def numpy_bfs(offsets, neighbors, seeds, depth):
    """(reached, traversed edges) of the bounded BFS, forward edges."""
    n = len(offsets) - 1
    visited = np.zeros(n, dtype=bool)
    frontier = np.unique(seeds)
    visited[frontier] = True
    edges = 0
    for _ in range(depth):
        starts, ends = offsets[frontier], offsets[frontier + 1]
        counts = ends - starts
        edges += int(counts.sum())
        if counts.sum() == 0:
            frontier = frontier[:0]
            continue
        idx = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts) + np.arange(counts.sum())
        nb = neighbors[idx]
        nb = np.unique(nb[~visited[nb]])
        visited[nb] = True
        frontier = nb
    return int(visited.sum()), edges


def cuda_rows(offsets, neighbors, seeds, depth, repeat, reached, edges):
    import torch  # noqa: E402
    try:
        import cupy  # noqa: E402
        import cupyx.scipy.sparse as cps  # noqa: E402
    except Exception:  # pragma: no cover - cupy is optional
        cupy = None
    dev = "cuda"
    n = len(offsets) - 1
    off = torch.from_numpy(offsets).to(dev)
    nbr = torch.from_numpy(neighbors).to(dev)
    sd = torch.from_numpy(seeds).to(dev)

    def frontier_bfs():
        visited = torch.zeros(n, dtype=torch.bool, device=dev)
        frontier = torch.unique(sd)
        visited[frontier] = True
        for _ in range(depth):
            starts = off[frontier]
            counts = off[frontier + 1] - starts
            total = int(counts.sum())
            if total == 0:
                break
            base = torch.repeat_interleave(starts - (torch.cumsum(counts, 0) - counts), counts, output_size=total)
            nb = nbr[base + torch.arange(total, device=dev)]
            nb = torch.unique(nb[~visited[nb]])
            visited[nb] = True
            frontier = nb
        return visited

    # Reverse CSR (row u: the sources of u's in-edges) for y = R @ x, built outside the timing.
    order = np.argsort(neighbors, kind="stable")
    src_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    r_cols = torch.from_numpy(src_of[order]).to(dev)
    r_rows = np.zeros(n + 1, dtype=np.int64)
    r_rows[1:] = np.cumsum(np.bincount(neighbors, minlength=n))
    r_rows_t = torch.from_numpy(r_rows).to(dev)
    vals = torch.ones(len(neighbors), dtype=torch.float32, device=dev)
    R = torch.sparse_csr_tensor(r_rows_t, r_cols, vals, size=(n, n))

    def spmv_bfs():
        visited = torch.zeros(n, dtype=torch.bool, device=dev)
        visited[sd] = True
        x = visited.to(torch.float32)
        for _ in range(depth):
            y = R @ x
            nxt = (y > 0) & ~visited
            visited |= nxt
            x = nxt.to(torch.float32)
        return visited

    def timed(fn):
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times), min(times), max(times)

    rows = []

    def add(peer, fn, t):
        got = int(fn().sum())
        if got != reached:
            raise SystemExit(f"peers_traverse: {peer} reached {got}, the numpy BFS {reached}")
        rows.append({"bench": "traverse", "op": "traverse-forward", "peer": peer, "nodes": n,
                     "edges": len(neighbors), "elements": edges, "reached": reached,
                     "median_ms": t[0], "min_ms": t[1], "max_ms": t[2]})

    add("torch-frontier", frontier_bfs, timed(frontier_bfs))
    add("torch-spmv", spmv_bfs, timed(spmv_bfs))
    if cupy is not None:
        # cuSPARSE takes int32 indices (2^27 edges fit).
        Rc = cps.csr_matrix((cupy.ones(len(neighbors), dtype=cupy.float32),
                             cupy.asarray(src_of[order].astype(np.int32)),
                             cupy.asarray(r_rows.astype(np.int32))), shape=(n, n))
        sc = cupy.asarray(seeds)

        def cupy_bfs():
            visited = cupy.zeros(n, dtype=bool)
            visited[sc] = True
            x = visited.astype(cupy.float32)
            for _ in range(depth):
                nxt = (Rc @ x > 0) & ~visited
                visited |= nxt
                x = nxt.astype(cupy.float32)
            return visited

        for _ in range(2):
            cupy_bfs()
        cupy.cuda.Device().synchronize()
        times = []
        for _ in range(repeat):
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record()
            cupy_bfs()
            b.record()
            b.synchronize()
            times.append(cupy.cuda.get_elapsed_time(a, b))
        add("cupy-spmv", lambda: cupy.asnumpy(cupy_bfs()),
            (statistics.median(times), min(times), max(times)))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="16777216", help="comma-separated node counts (powers of two)")
    p.add_argument("--degree", type=int, default=8)
    p.add_argument("--seeds", type=int, default=1000)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--json", help="write rows here")
    p.add_argument("--verify", action="store_true", help="numpy generator and BFS only (no CUDA)")
    args = p.parse_args()
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        if n & (n - 1):
            raise SystemExit(f"peers_traverse: {n} is not a power of two")
        print(f"peers_traverse: n={n}: generating", file=sys.stderr)
        offsets, neighbors, seeds = power_law_graph(n, args.degree, args.seeds)
        reached, edges = numpy_bfs(offsets, neighbors, seeds, args.depth)
        print(f"peers_traverse: n={n}, {len(neighbors)} edges: {reached} reached, "
              f"{edges} edges traversed", file=sys.stderr)
        if args.verify:
            rows.append({"nodes": n, "edges": len(neighbors), "reached": reached, "elements": edges})
        else:
            rows += cuda_rows(offsets, neighbors, seeds, args.depth, args.repeat, reached, edges)
    doc = {"bench": "traverse", "rows": rows}
    if not args.verify:
        import torch
        doc["device"] = torch.cuda.get_device_name()
        doc["torch"] = torch.__version__
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    else:
        json.dump(doc, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
