#!/usr/bin/env python3
"""GPU peer of `gpugraph bench solve`: cupyx.scipy.sparse.linalg.cg in float32 on the same 2-D
Poisson matrix (5-point Laplacian of an N x N grid, Dirichlet, 4 on the diagonal), b = ones,
the same relative tolerance, Jacobi preconditioning (M = D^-1 as a LinearOperator) by
default, on the same host.

    ./gpugraph bench solve --grid 2048 --tol 1e-6 --max-iter 8000 --json gpu.json
    python3 bench/peers/peers_cg.py --grid 2048 --tol 1e-6 --json peer.json

Rows: {"bench": "solve", "op": "cupy-cg[jacobi]", "peer", "elements", "nonzeros",
"iterations", "solve_ms", "ms_per_iteration", "true_residual"}; solve_ms is the median of
--repeat solves timed with CUDA events around cg() (cupy checks the residual on the host
every iteration).
"""
import argparse
import json
import sys

try:
    import numpy as np
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as cla
except ImportError as e:  # the device image may lack cupy: say so, do not fake a row
    print(f"peers_cg.py: cupy/numpy unavailable ({e}); no peer rows", file=sys.stderr)
    sys.exit(3)


def poisson2d(n):
    """CSR arrays of the 5-point Laplacian, rows and columns in gpugraph's order."""
    i, j = np.divmod(np.arange(n * n, dtype=np.int64), n)
    rows, cols, vals = [], [], []
    for di, dj, v in ((-1, 0, -1.0), (0, -1, -1.0), (0, 0, 4.0), (0, 1, -1.0), (1, 0, -1.0)):
        ok = (i + di >= 0) & (i + di < n) & (j + dj >= 0) & (j + dj < n)
        r = (i * n + j)[ok]
        rows.append(r)
        cols.append(r + di * n + dj)
        vals.append(np.full(r.shape, v, dtype=np.float32))
    rows, cols, vals = map(np.concatenate, (rows, cols, vals))
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    indptr = np.zeros(n * n + 1, dtype=np.int32)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr).astype(np.int32), cols.astype(np.int32), vals


def cg(a, b, tol, maxiter, m, callback):
    try:
        return cla.cg(a, b, rtol=tol, atol=0.0, maxiter=maxiter, M=m, callback=callback)
    except TypeError:  # cupy before the rtol keyword
        return cla.cg(a, b, tol=tol, atol=0.0, maxiter=maxiter, M=m, callback=callback)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", type=int, default=2048)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=100000)
    ap.add_argument("--precond", choices=["jacobi", "none"], default="jacobi")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    indptr, indices, data = poisson2d(args.grid)
    n = args.grid * args.grid
    a = csp.csr_matrix((cp.asarray(data), cp.asarray(indices), cp.asarray(indptr)), shape=(n, n))
    b = cp.ones(n, dtype=cp.float32)
    m = None
    if args.precond == "jacobi":
        dinv = (1.0 / a.diagonal()).astype(cp.float32)
        m = cla.LinearOperator((n, n), matvec=lambda v: dinv * v, dtype=cp.float32)
    times, iterations, x = [], 0, None
    for k in range(args.repeat + 1):  # the first solve warms up (kernels, cuSPARSE handles)
        count = [0]
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Device().synchronize()
        start.record()
        x, info = cg(a, b, args.tol, args.max_iter, m, lambda _xk: count.__setitem__(0, count[0] + 1))
        stop.record()
        stop.synchronize()
        if k > 0:
            times.append(cp.cuda.get_elapsed_time(start, stop))
        iterations = count[0]
    times.sort()
    solve_ms = times[len(times) // 2]
    r = b - a @ x
    true_residual = float(cp.linalg.norm(r) / cp.linalg.norm(b))
    row = {
        "bench": "solve",
        "op": f"cupy-cg[{args.precond}]",
        "peer": f"cupy {cp.__version__}",
        "elements": n,
        "nonzeros": int(a.nnz),
        "iterations": iterations,
        "solve_ms": solve_ms,
        "ms_per_iteration": solve_ms / max(iterations, 1),
        "true_residual": true_residual,
        "info": int(info),
    }
    print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "solve", "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": [row]}, f, indent=2)


if __name__ == "__main__":
    main()
