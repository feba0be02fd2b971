#!/usr/bin/env python3
"""Peer timings for `gpugraph bench fft`: torch.fft.fft2 (cuFFT) of square complex64 fields
on the same card, in the same device call (and cupy.fft.fft2 when CuPy is present).

    python3 bench/peers/peers_fft.py --sizes 16777216,67108864 --repeat 20 --json peer-fft.json

--sizes counts elements (side² : 2^24 = 4096², 2^26 = 8192²), like the bench. Each row:
{"bench": "fft", "op": "fft2d-forward", "peer", "elements", "median_ms", "min_ms", "max_ms"}.
Timing: CUDA events around each repeat after warm-up (cuFFT's plan is built in the warm-up and
cached, as it is for a torch user), inputs generated on the GPU with a fixed seed.
"""
import argparse
import json
import math
import statistics
import sys

import torch

try:
    import cupy  # noqa: E402
except Exception:  # pragma: no cover - cupy is optional
    cupy = None


def time_ms(fn, repeat, sync, event, warmup=5):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        start, end = event(), event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16777216,67108864")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(16)
    for n in [int(s) for s in args.sizes.split(",")]:
        side = math.isqrt(n)
        if side * side != n or side & (side - 1):
            sys.exit(f"--sizes {n} must be a square of a power of two")
        re = torch.rand((side, side), generator=gen, device="cuda") * 2 - 1
        im = torch.rand((side, side), generator=gen, device="cuda") * 2 - 1
        x = torch.complex(re, im)
        del re, im
        t = time_ms(lambda: torch.fft.fft2(x), args.repeat, torch.cuda.synchronize,
                    lambda: torch.cuda.Event(enable_timing=True))
        rows.append({"bench": "fft", "op": "fft2d-forward", "peer": "torch.fft.fft2",
                     "elements": n, "median_ms": t[0], "min_ms": t[1], "max_ms": t[2]})
        print(f"torch.fft.fft2 {side}x{side}: {t[0]:.3f} ms [{t[1]:.3f}-{t[2]:.3f}]")
        if cupy is not None:
            cx = cupy.asarray(x)

            class Ev:
                def __init__(self):
                    self.e = cupy.cuda.Event()

                def record(self):
                    self.e.record()

                def synchronize(self):
                    self.e.synchronize()

                def elapsed_time(self, other):
                    return cupy.cuda.get_elapsed_time(self.e, other.e)

            t = time_ms(lambda: cupy.fft.fft2(cx), args.repeat,
                        cupy.cuda.Device().synchronize, Ev)
            rows.append({"bench": "fft", "op": "fft2d-forward", "peer": "cupy.fft.fft2",
                         "elements": n, "median_ms": t[0], "min_ms": t[1], "max_ms": t[2]})
            print(f"cupy.fft.fft2 {side}x{side}: {t[0]:.3f} ms [{t[1]:.3f}-{t[2]:.3f}]")
            del cx
        del x
        torch.cuda.empty_cache()
    with open(args.json, "w") as f:
        json.dump({"bench": "fft", "device": torch.cuda.get_device_name(),
                   "torch": torch.__version__, "cupy": getattr(cupy, "__version__", None),
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
