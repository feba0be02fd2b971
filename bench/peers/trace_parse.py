#!/usr/bin/env python3
"""Peer for `gpugraph bench trace`'s `json-open`: load a Chrome Trace Event Format JSON file
with Python's `json` module and build the span columns with numpy, as a Python tool would
(start and duration as float64 microseconds, pid and tid as int64 codes; string thread IDs
such as torch.profiler's "stream 7" are numbered in order of appearance).

    python3 bench/peers/trace_parse.py FILE [FILE ...] [--repeat R] [--json OUT|-]

Timed per run: reading and parsing the whole file (`json.load`), selecting the complete
(`X`) events and building the four arrays. One row per file:
{"bench": "trace", "op": "json-open", "peer": "python-json-numpy", "elements" (spans),
"json_bytes", "median_ms", "min_ms", "max_ms", "samples", "mb_per_s"}; `--json -` prints the
document ({"bench", "device", "rows"}) on stdout, which is how `gpugraph bench trace --peer
python3` runs it (and checks `elements` against the spans it generated). Without `--json` a
line per file is printed.

Note: float64 cannot hold epoch microseconds with their nanosecond fraction (1.7e15 us has
16 integer digits), so `start` is rounded here; gpugraph keeps exact integer nanoseconds.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np


def load(path):
    with open(path, "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    spans = [e for e in events if e.get("ph") == "X"]
    n = len(spans)
    start = np.fromiter((e["ts"] for e in spans), dtype=np.float64, count=n)
    dur = np.fromiter((e.get("dur", 0) for e in spans), dtype=np.float64, count=n)
    codes = {}

    def code(v):
        if isinstance(v, int):
            return v
        c = codes.get(v)
        if c is None:
            c = codes[v] = -1 - len(codes)
        return c

    pid = np.fromiter((code(e.get("pid", 0)) for e in spans), dtype=np.int64, count=n)
    tid = np.fromiter((code(e.get("tid", 0)) for e in spans), dtype=np.int64, count=n)
    return start, dur, pid, tid


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", help="write the rows as JSON to this file ('-': stdout)")
    a = ap.parse_args()
    rows = []
    for path in a.files:
        size = os.path.getsize(path)
        samples, spans = [], None
        for _ in range(max(1, a.repeat)):
            t0 = time.perf_counter()
            cols = load(path)
            samples.append((time.perf_counter() - t0) * 1e3)
            spans = len(cols[0])
            del cols
        med = statistics.median(samples)
        rows.append({
            "bench": "trace", "op": "json-open", "peer": "python-json-numpy",
            "elements": spans, "json_bytes": size, "median_ms": med,
            "min_ms": min(samples), "max_ms": max(samples), "samples": samples,
            "mb_per_s": size / 1e6 / (med / 1e3) if med > 0 else 0.0,
        })
        if a.json != "-":
            print(f"{path}: {spans} spans, {size / 1e6:.1f} MB in {med / 1e3:.2f} s "
                  f"({rows[-1]['mb_per_s']:.1f} MB/s)", file=sys.stderr)
    doc = {"bench": "trace-peer",
           "device": f"CPU, Python {platform.python_version()}, numpy {np.__version__}",
           "rows": rows}
    if a.json == "-":
        json.dump(doc, sys.stdout)
        print()
    elif a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
