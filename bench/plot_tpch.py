#!/usr/bin/env python3
"""TPC-H chart: one SVG of median milliseconds per engine and variant, log scale, and a
Markdown table of gpugraph against each peer per query with geometric means.

    python3 bench/plot_tpch.py DIR   (reads DIR/tpch-gpu.json and DIR/tpch-*.json peers,
                                      writes DIR/tpch.svg and DIR/tpch.md)

`gpugraph bench plot` draws throughput rows; TPC-H rows are latencies of whole queries over
several engines, so they get this chart instead. Plain SVG: no plotting package needed where
the results are committed.
"""
import glob
import json
import math
import os
import sys

COLORS = {"gpugraph": "#2b6cb0", "DataFusion CPU": "#718096", "duckdb": "#d69e2e", "polars": "#805ad5"}


def bars(folder):
    out = []
    gpu = json.load(open(os.path.join(folder, "tpch-gpu.json")))
    for r in gpu["rows"]:
        engine = "gpugraph" if r["variant"].startswith("gpu") else "DataFusion CPU"
        source = {"warm": "memory (GPU-resident)", "memory": "memory", "host": "memory, uploaded each run",
                  "parquet": "Parquet"}[r["variant"].split("-", 1)[1]]
        out.append((r["query"], engine, source, r["ms"]["median"]))
    for path in sorted(glob.glob(os.path.join(folder, "tpch-*.json"))):
        if path.endswith("tpch-gpu.json"):
            continue
        for r in json.load(open(path)):
            q, source = r["op"].split("-", 1)
            out.append((q, r["peer"], "memory" if source == "warm" else "Parquet", r["median_ms"]))
    return out


def order(q):
    """q2 before q10; named queries (topk, distinct) after the numbered ones."""
    return (0, int(q[1:]), q) if q[1:].isdigit() else (1, 0, q)


def table(rows):
    """Markdown: per query, gpugraph's median and each peer's, warm and from Parquet, and
    peer / gpugraph (> 1: gpugraph is faster); geometric means of those ratios last."""
    ms = {(q, e, src): v for q, e, src, v in rows}
    peers = sorted({e for _, e, _, _ in rows if e != "gpugraph"})
    sources = [("memory (GPU-resident)", "memory", "warm"), ("Parquet", "Parquet", "from Parquet")]
    head = ["query"]
    for _, _, label in sources:
        head.append(f"gpugraph {label}")
        for p in peers:
            head += [f"{p} {label}", f"{p} / gpugraph"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    logs = {}
    for q in sorted({r[0] for r in rows}, key=order):
        cells = [q.upper()]
        for ours, theirs, label in sources:
            g = ms.get((q, "gpugraph", ours))
            cells.append(f"{g:,.1f}" if g else "")
            for p in peers:
                v = ms.get((q, p, theirs)) or ms.get((q, p, ours))
                cells.append(f"{v:,.1f}" if v else "")
                if g and v:
                    cells.append(f"{v / g:.2f}")
                    logs.setdefault((label, p), []).append(math.log(v / g))
                else:
                    cells.append("")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for (label, p), ls in sorted(logs.items()):
        lines.append(f"- {p} / gpugraph, {label}: geometric mean {math.exp(sum(ls) / len(ls)):.2f} over {len(ls)} queries")
    return "\n".join(lines) + "\n"


def svg(rows, title):
    bar, gap, left, top, width = 18, 10, 330, 50, 520
    lo, hi = 1.0, 10 ** math.ceil(math.log10(max(r[3] for r in rows)))
    x = lambda ms: left + width * (math.log10(max(ms, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    # Each query after the first adds a gap of 2 * gap above its bars.
    queries = len({r[0] for r in rows})
    height = top + len(rows) * (bar + 4) + gap * 2 * max(queries - 1, 0) + gap + 50
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
         'font-family="sans-serif" font-size="13">',
         '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="10" y="24" font-size="16" font-weight="bold">{title}</text>']
    y = top
    last_q = None
    for q, engine, source, ms in sorted(rows, key=lambda r: (order(r[0]), r[2] == "Parquet", r[3])):
        if q != last_q and last_q is not None:
            y += gap * 2
        last_q = q
        s.append(f'<text x="10" y="{y + 13}">{q.upper()} · {engine} · {source}</text>')
        s.append(f'<rect x="{left}" y="{y}" width="{x(ms) - left:.1f}" height="{bar}" '
                 f'fill="{COLORS.get(engine, "#999")}"/>')
        s.append(f'<text x="{x(ms) + 4:.1f}" y="{y + 13}">{ms:,.1f} ms</text>')
        y += bar + 4
    axis = y + gap
    for p in range(int(math.log10(lo)), int(math.log10(hi)) + 1):
        tx = x(10 ** p)
        s.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{axis}" stroke="#ddd"/>')
        s.append(f'<text x="{tx:.1f}" y="{axis + 16}" text-anchor="middle">{10 ** p:,} ms</text>')
    s.append(f'<text x="{left + width / 2}" y="{axis + 36}" text-anchor="middle">'
             'median query time, log scale (shorter is faster)</text>')
    s.append("</svg>")
    return "\n".join(s)


def main():
    folder = sys.argv[1]
    rows = bars(folder)
    gpu = json.load(open(os.path.join(folder, "tpch-gpu.json")))
    title = f"TPC-H SF 10 lineitem ({gpu['rows'][0]['rows']:,} rows), {gpu['device']}"
    with open(os.path.join(folder, "tpch.svg"), "w") as f:
        f.write(svg(rows, title))
    with open(os.path.join(folder, "tpch.md"), "w") as f:
        f.write(table(rows))


if __name__ == "__main__":
    main()
