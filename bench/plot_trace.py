#!/usr/bin/env python3
"""Chart of `gpugraph bench trace` against issue 46's targets: per span count, each timed
operation's median as a bar and its target as a red mark, log-scale milliseconds; the Python
json + numpy peer's load beside the JSON open.

    python3 bench/plot_trace.py DIR   (reads DIR/trace.json and DIR/trace-peer-*.json,
                                       writes DIR/trace.svg)

`gpugraph bench plot` draws bandwidth; these are latencies with per-operation targets.
"""
import glob
import json
import math
import os
import sys


def main():
    folder = sys.argv[1]
    doc = json.load(open(os.path.join(folder, "trace.json")))
    bars = []
    for r in doc["rows"]:
        target = (r.get("target") or {}).get("limit_ms")
        bars.append((r["elements"], r["op"], "gpugraph", r["median_ms"], target))
    for path in sorted(glob.glob(os.path.join(folder, "trace-peer-*.json"))):
        for r in json.load(open(path))["rows"]:
            bars.append((r["elements"], r["op"] + " (peer)", r["peer"], r["median_ms"], None))
    bars.sort(key=lambda b: (b[0], b[1]))
    bar, left, top, width = 18, 300, 50, 560
    values = [b[3] for b in bars] + [b[4] for b in bars if b[4]]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    x = lambda ms: left + width * (math.log10(ms) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    height = top + len(bars) * (bar + 6) + 80
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 120}" height="{height}" '
         'font-family="sans-serif" font-size="13">', '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="10" y="24" font-size="16" font-weight="bold">gpugraph bench trace, {doc["device"]}</text>']
    y = top
    for n, op, who, ms, target in bars:
        color = "#d69e2e" if who != "gpugraph" else "#2b6cb0"
        s.append(f'<text x="10" y="{y + 13}">{n:,} spans · {op}</text>')
        s.append(f'<rect x="{left}" y="{y}" width="{max(x(ms) - left, 1):.1f}" height="{bar}" fill="{color}"/>')
        label = f"{ms / 1e3:,.2f} s" if ms >= 1e3 else (f"{ms:,.3f} ms" if ms >= 0.1 else f"{ms * 1e3:,.1f} µs")
        s.append(f'<text x="{x(ms) + 4:.1f}" y="{y + 13}">{label}</text>')
        if target:
            s.append(f'<line x1="{x(target):.1f}" y1="{y - 2}" x2="{x(target):.1f}" y2="{y + bar + 2}" '
                     'stroke="#c53030" stroke-width="3"/>')
        y += bar + 6
    axis = y + 8
    for p in range(int(math.log10(lo)), int(math.log10(hi)) + 1):
        tx = x(10 ** p)
        s.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{axis}" stroke="#ddd"/>')
        s.append(f'<text x="{tx:.1f}" y="{axis + 16}" text-anchor="middle">{10 ** p:g} ms</text>')
    s.append(f'<text x="{left}" y="{axis + 40}">median, log scale; red: the issue\'s target '
             '(blue gpugraph, orange Python json + numpy)</text>')
    s.append("</svg>")
    with open(os.path.join(folder, "trace.svg"), "w") as f:
        f.write("\n".join(s))


if __name__ == "__main__":
    main()
