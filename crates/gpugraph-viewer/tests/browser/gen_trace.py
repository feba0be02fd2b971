#!/usr/bin/env python3
"""Writes a deterministic Chrome Trace Event JSON for the viewer's tests.

`--processes P --threads T --spans N`: P processes (pid 1..P, named "proc-<pid>"), T threads
each (tid 1..T, named "worker-<tid>"), and about N complete ("X") spans spread evenly over
the threads: each thread is a row of top-level "step" spans, each holding nested children
("phase", "kernel", "copy") to depth 3, plus a flow ("s"/"f") from each thread's first step
to the next thread's. Same arguments, same bytes.
"""

import argparse
import json
import sys


def generate(processes, threads, spans, out):
    names = ["phase", "kernel", "copy"]
    per_thread = max(1, spans // (processes * threads))
    # One top-level step holds 1 + 2 + 4 = 7 spans (depth 3, two children per span).
    steps = max(1, per_thread // 7)
    out.write('{"displayTimeUnit":"ns","traceEvents":[\n')
    first = True

    def emit(ev):
        nonlocal first
        if not first:
            out.write(",\n")
        first = False
        out.write(json.dumps(ev, separators=(",", ":")))

    for p in range(1, processes + 1):
        emit({"ph": "M", "name": "process_name", "pid": p, "args": {"name": f"proc-{p}"}})
        for t in range(1, threads + 1):
            emit({"ph": "M", "name": "thread_name", "pid": p, "tid": t,
                  "args": {"name": f"worker-{t}"}})
    step_us = 100
    for p in range(1, processes + 1):
        for t in range(1, threads + 1):
            offset = (p * 7 + t * 3) % 20
            for k in range(steps):
                ts = offset + k * step_us
                emit({"ph": "X", "name": "step", "cat": "demo", "pid": p, "tid": t,
                      "ts": ts, "dur": 90, "args": {"k": k}})

                def children(start, dur, depth):
                    if depth > 2:
                        return
                    half = dur // 2
                    for c in range(2):
                        s = start + c * half + 1
                        d = max(1, half - 3)
                        emit({"ph": "X", "name": names[(depth + c) % 3], "cat": "demo",
                              "pid": p, "tid": t, "ts": s, "dur": d})
                        children(s, d, depth + 1)

                children(ts, 90, 1)
    for p in range(1, processes + 1):
        for t in range(1, threads):
            fid = p * 1000 + t
            emit({"ph": "s", "id": fid, "name": "flow", "cat": "demo", "pid": p, "tid": t,
                  "ts": (p * 7 + t * 3) % 20 + 10})
            emit({"ph": "f", "bp": "e", "id": fid, "name": "flow", "cat": "demo", "pid": p,
                  "tid": t + 1, "ts": (p * 7 + (t + 1) * 3) % 20 + 10})
    out.write("\n]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--spans", type=int, default=200)
    ap.add_argument("--out", default="-")
    a = ap.parse_args()
    if a.out == "-":
        generate(a.processes, a.threads, a.spans, sys.stdout)
    else:
        with open(a.out, "w", buffering=1 << 20) as f:
            generate(a.processes, a.threads, a.spans, f)


if __name__ == "__main__":
    main()
