#!/usr/bin/env python3
"""Table and chart of bench/device-viewer-scene.sh runs.

    python3 bench/plot_viewer_scene.py RESULT_DIR RUN_DIR [RUN_DIR ...]

Each RUN_DIR holds one call's log.txt (the viewer's frame_bench JSON lines) and scene.json
(`bench scene`). Writes RESULT_DIR/viewer-scene.md (a Markdown table per bench) and
RESULT_DIR/viewer-scene.svg (horizontal bars, log-scale milliseconds: the viewer's full frame,
frame graph and GPU time per span count, and GPUScene's frame against the culling peer per
record count, one bar per run).
"""
import json
import math
import os
import sys


def viewer_rows(log):
    rows = []
    with open(log) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{") and '"frame_median_ms"' in line:
                rows.append(json.loads(line))
    return rows


def scene_rows(path):
    with open(path) as f:
        return json.load(f)["rows"]


def main():
    out, runs = sys.argv[1], sys.argv[2:]
    md = ["# Viewer and GPUScene per run", ""]
    bars = []  # (label, run, ms)
    md += ["## Viewer frame_bench (1280 × 760, scripted zoom)", "",
           "| run | spans | full frame ms | frame graph ms | graph GPU ms | frames/s |",
           "|---|---:|---:|---:|---:|---:|"]
    for run in runs:
        name = os.path.basename(run.rstrip("/"))
        for r in viewer_rows(os.path.join(run, "log.txt")):
            n = r["spans"]
            gpu = r.get("graph_gpu_ms")
            md.append(f"| {name} | {n:,} | {r['frame_median_ms']:.2f} | "
                      f"{r['graph_only_median_ms']:.2f} | "
                      f"{'' if gpu is None else f'{gpu:.3f}'} | {1000 / r['frame_median_ms']:.0f} |")
            label = f"viewer {n / 1e6:.0f}M spans"
            bars.append((f"{label}: full frame", name, r["frame_median_ms"]))
            if gpu is not None:
                bars.append((f"{label}: graph GPU", name, gpu))
    md += ["", "## GPUScene frame against the culling peer (GPU ms per frame)", "",
           "| run | records | scene frame ms | cull peer ms | patch-staged-1000 µs | patch-1000 µs |",
           "|---|---:|---:|---:|---:|---:|"]
    for run in runs:
        name = os.path.basename(run.rstrip("/"))
        rows = scene_rows(os.path.join(run, "scene.json"))
        by = {}
        for r in rows:
            by.setdefault(r["records"], {})[r["op"].split(" ")[0]] = r
        for n, ops in sorted(by.items()):
            def med(op, key):
                v = ops.get(op, {}).get(key)
                return None if v is None else v["median"]
            frame, cull = med("scene-frame", "gpu_ms"), med("cull", "gpu_ms")
            staged = med("patch-staged-1000", "patch_us")
            direct = med("patch-1000", "patch_us")
            fmt = lambda v, p: "" if v is None else f"{v:.{p}f}"
            md.append(f"| {name} | {n:,} | {fmt(frame, 3)} | {fmt(cull, 3)} | "
                      f"{fmt(staged, 0)} | {fmt(direct, 0)} |")
            if frame is not None:
                bars.append((f"scene {n / 1e6:.0f}M: frame", name, frame))
            if cull is not None:
                bars.append((f"scene {n / 1e6:.0f}M: cull peer", name, cull))
    with open(os.path.join(out, "viewer-scene.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    names = [os.path.basename(r.rstrip("/")) for r in runs]
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
    lo = min(b[2] for b in bars) / 2
    hi = max(b[2] for b in bars) * 2
    width, left, bar_h = 900, 260, 14
    labels = list(dict.fromkeys(b[0] for b in bars))
    height = 60 + len(labels) * (bar_h * len(names) + 10)

    def x(v):
        return left + (width - left - 40) * (math.log10(v) - math.log10(lo)) / (
            math.log10(hi) - math.log10(lo))

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           '<text x="10" y="20" font-size="14">Viewer and GPUScene on the H100 '
           '(ms, log scale)</text>']
    for k, n in enumerate(names):
        svg.append(f'<rect x="{left + 160 * k}" y="30" width="10" height="10" fill="{colors[k % 4]}"/>'
                   f'<text x="{left + 160 * k + 14}" y="39">{n}</text>')
    y = 55
    for label in labels:
        svg.append(f'<text x="10" y="{y + bar_h}">{label}</text>')
        for k, n in enumerate(names):
            for b in bars:
                if b[0] == label and b[1] == n:
                    svg.append(f'<rect x="{left}" y="{y}" width="{x(b[2]) - left:.1f}" '
                               f'height="{bar_h - 2}" fill="{colors[k % 4]}"/>'
                               f'<text x="{x(b[2]) + 4:.1f}" y="{y + bar_h - 3}">{b[2]:.3g}</text>')
            y += bar_h
        y += 10
    svg.append("</svg>")
    with open(os.path.join(out, "viewer-scene.svg"), "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
