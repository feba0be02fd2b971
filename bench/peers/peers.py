#!/usr/bin/env python3
"""Peer timings for `gpugraph bench`: the same operations through PyTorch and CuPy (CUB) on the
same card, in the same device call.

    python3 bench/peers/peers.py scan --sizes 1048576,268435456 --repeat 20 --json peer.json

Each row: {"bench", "op", "peer", "elements", "median_ms", "min_ms", "max_ms"}. Timing uses CUDA
events around each repeat after warm-up; inputs are generated on the GPU with a fixed seed.
"""
import argparse
import json
import os
import statistics
import sys

os.environ.setdefault("CUPY_ACCELERATORS", "cub")  # route cupy.cumsum etc. through CUB

import torch  # noqa: E402

try:
    import cupy  # noqa: E402
except Exception:  # pragma: no cover - cupy is optional
    cupy = None


def time_ms(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def cupy_time_ms(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(times), min(times), max(times)


def u32(n, gen, high=2**31):
    return torch.randint(0, high, (n,), dtype=torch.int64, device="cuda", generator=gen).to(torch.int32)


def rows_for(bench, n, repeat, gen, selected=(50,)):
    rows = []

    def add(op, peer, t):
        rows.append({"bench": bench, "op": op, "peer": peer, "elements": n,
                    "median_ms": t[0], "min_ms": t[1], "max_ms": t[2]})

    if bench == "copy":
        src = u32(n, gen)
        dst = torch.empty_like(src)
        t = time_ms(lambda: dst.copy_(src), repeat)
        # Our copy rows: the floor kernel (and its grid variants) and the graph copy node.
        add("copy-kernel", "torch.copy_", t)
        add("copy-buffer", "torch.copy_", t)
    elif bench == "scan":
        x = u32(n, gen, 4)
        add("scan-exclusive", "torch.cumsum", time_ms(lambda: torch.cumsum(x, 0, dtype=torch.int32), repeat))
        add("scan-inclusive", "torch.cumsum", time_ms(lambda: torch.cumsum(x, 0, dtype=torch.int32), repeat))
        if cupy is not None:
            cx = cupy.asarray(x).view(cupy.uint32)
            add("scan-inclusive", "cupy.cumsum(cub)", cupy_time_ms(lambda: cupy.cumsum(cx), repeat))
            add("scan-exclusive", "cupy.cumsum(cub)", cupy_time_ms(lambda: cupy.cumsum(cx), repeat))
    elif bench == "compact":
        values = u32(n, gen)
        for percent in selected:
            draws = torch.randint(0, 100, (n,), dtype=torch.int32, device="cuda", generator=gen)
            # The peer gets a ready bool mask: converting our u32 flags would add a pass.
            maskb = draws < percent
            op = f"compact-{percent}%"
            add(op, "torch.masked_select", time_ms(lambda: torch.masked_select(values, maskb), repeat))
            if cupy is not None:
                cv, cm = cupy.asarray(values), cupy.asarray(maskb)
                add(op, "cupy.compress", cupy_time_ms(lambda: cupy.compress(cm, cv), repeat))
    elif bench == "mask":
        a = torch.randint(0, 2, (n,), dtype=torch.int32, device="cuda", generator=gen)
        b = torch.randint(0, 2, (n,), dtype=torch.int32, device="cuda", generator=gen)
        out = torch.empty_like(a)
        add("mask-and", "torch.logical_and", time_ms(lambda: torch.logical_and(a, b, out=out), repeat))
    elif bench == "sort":
        keys = u32(n, gen, 2**31)
        vals = torch.arange(n, dtype=torch.int32, device="cuda")
        add("sort-keys", "torch.sort(stable)", time_ms(lambda: torch.sort(keys, stable=True), repeat))
        add("sort-pairs", "torch.sort+gather", time_ms(
            lambda: vals[torch.sort(keys, stable=True).indices], repeat))
        # `gpugraph bench sort`'s sort-keys-f32-desc: finite float32 keys of both signs, largest
        # first, stable.
        fkeys = (torch.rand(n, dtype=torch.float32, device="cuda", generator=gen) - 0.5) * 2e4
        add("sort-keys-f32-desc", "torch.sort(desc,stable)", time_ms(
            lambda: torch.sort(fkeys, descending=True, stable=True), repeat))
        if cupy is not None:
            ck = cupy.asarray(keys)
            add("sort-keys", "cupy.sort", cupy_time_ms(lambda: cupy.sort(ck), repeat))
            # CUB sorts ascending only through cupy: descending is the ascending sort of -x
            # (the negation, one extra pass, is timed with it; the result is -sorted).
            cf = cupy.asarray(fkeys)
            add("sort-keys-f32-desc", "cupy.sort(-x)", cupy_time_ms(lambda: cupy.sort(-cf), repeat))
    elif bench == "expr":
        # `gpugraph bench expr`: elements are rows of float32x3; 24 B read + 12 B written per row.
        positions = torch.rand((n, 3), dtype=torch.float32, device="cuda", generator=gen)
        offset = torch.rand((n, 3), dtype=torch.float32, device="cuda", generator=gen)
        scale = 1.618034
        out = torch.empty_like(positions)
        add("expr-madd-f32x3", "torch(eager)", time_ms(lambda: positions * scale + offset, repeat))
        # One fused kernel: offset + scale * positions.
        add("expr-madd-f32x3", "torch.add(alpha)", time_ms(
            lambda: torch.add(offset, positions, alpha=scale, out=out), repeat))
        # The chain: only the per-row length is kept (24 B read + 4 B written per row fused).
        add("expr-chain-f32x3", "torch(eager)", time_ms(
            lambda: torch.linalg.vector_norm(positions * scale + offset - offset * 0.5, dim=1),
            repeat))
    elif bench == "reduce":
        x = torch.rand(n, device="cuda", generator=gen)
        add("reduce-sum-f32", "torch.sum", time_ms(lambda: torch.sum(x), repeat))
        add("reduce-extent-f32", "torch.aminmax", time_ms(lambda: torch.aminmax(x), repeat))
        xi = u32(n, gen, 1 << 20)
        add("reduce-sum-u32", "torch.sum", time_ms(lambda: torch.sum(xi, dtype=torch.int32), repeat))
    elif bench == "histogram":
        x = torch.rand(n, device="cuda", generator=gen)
        add("histogram-256", "torch.histc", time_ms(lambda: torch.histc(x, bins=256, min=0.0, max=1.0), repeat))
    elif bench == "grid":
        pts = torch.rand(n, 2, device="cuda", generator=gen)
        def grid_counts():
            cell = (pts[:, 1] * 256).clamp(max=255).int() * 256 + (pts[:, 0] * 256).clamp(max=255).int()
            return torch.bincount(cell, minlength=256 * 256)
        add("grid-count-256x256", "torch.bincount", time_ms(grid_counts, repeat))
    elif bench == "group":
        codes = torch.randint(0, 1024, (n,), dtype=torch.int64, device="cuda", generator=gen)
        vals = torch.rand(n, device="cuda", generator=gen)
        def group_mean():
            sums = torch.zeros(1024, device="cuda").index_add_(0, codes, vals)
            counts = torch.bincount(codes, minlength=1024)
            return sums / counts
        add("group-mean-1024", "torch.index_add+bincount", time_ms(group_mean, repeat))
    else:
        raise SystemExit(f"peers.py: unknown bench '{bench}'")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("bench")
    p.add_argument("--sizes", required=True, help="comma-separated element counts")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json", help="write rows here")
    p.add_argument("--selected", default="50",
                   help="compact: comma-separated percentages of rows the mask selects")
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("peers.py: CUDA is not available")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        print(f"peers: {args.bench} n={n}", file=sys.stderr)
        rows += rows_for(args.bench, n, args.repeat, gen,
                         [int(p) for p in args.selected.split(",") if p])
        torch.cuda.empty_cache()
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cupy": getattr(cupy, "__version__", None), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    else:
        json.dump(doc, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
