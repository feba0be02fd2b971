#!/usr/bin/env python3
"""The Python reference for `gpugraph trace stats --by name` on any Chrome Trace Event Format
file (.json or .json.gz): span count, flow links, and per name the count, total and self time
in the file's unit, summed exactly (Decimal), with nothing but the standard library.

    python3 scripts/trace_reference.py TRACE.json[.gz] [--out expected.json]
    python3 scripts/trace_reference.py TRACE.json --pick PID:TID --at TIME

`--pick` prints the innermost span of that thread containing TIME (start <= TIME < end; the
latest start wins, then the shorter span), as `gpugraph trace pick` answers it.

Spans are what the trace domain makes spans of: `X` complete events (a missing `dur` is 0),
instants `i`/`I` (duration 0), and `B`/`E` pairs matched per thread in time order (file order
breaks ties; an `E` closes the latest open `B`); a `B` left open runs to the trace's end (the
latest end of any other span, or the latest open `B`). Self time subtracts each span from the
innermost open span of the same process and thread that contains it (sorted by start, longer
first; a span that starts where the open one ends is not inside it; one that overlaps the open
spans without nesting in them is subtracted from the innermost that contains it, if any), as
the trace model parents spans. Flow links count `f` events (and `t` steps), the ends of
`s` → `f` chains.

Kept apart from the Rust so that a bug in the ingestion cannot hide in its own oracle: the CLI
tests and the device scripts compare `gpugraph trace stats --json` with this output.
"""
import argparse
import gzip
import json
import sys
from decimal import Decimal


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal, parse_int=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def spans_of(events):
    spans, open_by_thread, unfinished = [], {}, []
    for order, e in enumerate(events):
        ph = e.get("ph")
        if ph not in ("X", "i", "I", "B", "E") or "ts" not in e:
            continue
        key = (str(e.get("pid", "")), str(e.get("tid", "")))
        ts = Decimal(e["ts"])
        if ph == "X":
            spans.append((key, ts, Decimal(e.get("dur", 0)), e.get("name", ""), order))
        elif ph in ("i", "I"):
            spans.append((key, ts, Decimal(0), e.get("name", ""), order))
        else:
            open_by_thread.setdefault(key, []).append((ts, order, ph, e.get("name", "")))
    for key, marks in open_by_thread.items():
        marks.sort(key=lambda m: (m[0], m[1]))
        stack = []
        for ts, order, ph, name in marks:
            if ph == "B":
                stack.append((ts, order, name))
            elif stack:
                b_ts, b_order, b_name = stack.pop()
                spans.append((key, b_ts, ts - b_ts, b_name, b_order))
        unfinished += [(key, ts, name, order) for ts, order, name in stack]
    ends = [s[1] + s[2] for s in spans] + [u[1] for u in unfinished]
    end = max(ends) if ends else Decimal(0)
    spans += [(key, ts, end - ts, name, order) for key, ts, name, order in unfinished]
    return spans


def reference(events):
    spans = spans_of(events)
    stats = {}
    for _, _, dur, name, _ in spans:
        s = stats.setdefault(name, {"count": 0, "total": Decimal(0), "self": Decimal(0)})
        s["count"] += 1
        s["total"] += dur
        s["self"] += dur
    by_thread = {}
    for s in spans:
        by_thread.setdefault(s[0], []).append(s)
    for evs in by_thread.values():
        evs.sort(key=lambda s: (s[1], -s[2], s[4]))
        stack = []
        for s in evs:
            while stack and stack[-1][1] + stack[-1][2] <= s[1]:
                stack.pop()
            # The innermost open span that contains it (a span overlapping the open ones
            # without nesting in them is no child of theirs).
            end = s[1] + s[2]
            parent = next((p for p in reversed(stack) if p[1] + p[2] >= end), None)
            if parent:
                stats[parent[3]]["self"] -= s[2]
            stack.append(s)
    flows = sum(1 for e in events if e.get("ph") in ("f", "t"))
    rows = {n: {"count": s["count"], "total_us": str(s["total"]), "self_us": str(s["self"])}
            for n, s in sorted(stats.items())}
    return {"spans": len(spans), "flows": flows, "stats": rows}


def pick(events, thread, at):
    at = Decimal(at)
    inside = [s for s in spans_of(events) if s[0] == thread and s[1] <= at < s[1] + s[2]]
    if not inside:
        return None
    key, ts, dur, name, _ = max(inside, key=lambda s: (s[1], -s[2], s[4]))
    return {"name": name, "ts": str(ts), "dur": str(dur)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    ap.add_argument("--pick", metavar="PID:TID", help="the thread to pick in (with --at)")
    ap.add_argument("--at", help="the time to pick at, in the file's unit")
    a = ap.parse_args()
    if a.pick:
        pid, _, tid = a.pick.partition(":")
        out = pick(load(a.trace), (pid, tid), a.at)
    else:
        out = reference(load(a.trace))
    text = json.dumps(out, indent=1, sort_keys=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
