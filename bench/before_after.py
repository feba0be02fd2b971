#!/usr/bin/env python3
"""Summarizes a `bench/h200-before-after.sh` (or `h200-tpch-before-after.sh`) run: the JSON it tars (json/{bench}-{before|after}-{round}.json)
becomes a Markdown table (median GPU time per case and size, before and after, both rounds, and
the after/before ratio of the medians of the rounds) and an SVG bar chart of the ratios.

    python3 bench/before_after.py OUT/json.tar RESULT_DIR

Rows are matched by every field that is not a measurement (op, elements, ...); a case present
in one build only is listed with a dash.
"""
import io
import json
import statistics
import sys
import tarfile
from collections import defaultdict

MEASURED = {"median_ms", "min_ms", "max_ms", "elements_per_s", "gb_per_s", "floor_median_ms",
            "floor_gb_per_s", "ratio_to_floor", "timing", "mean_ms", "samples"}


def key_of(row):
    return tuple(sorted((k, str(v)) for k, v in row.items()
                        if k not in MEASURED and not isinstance(v, (dict, list, float))))


def main(tar_path, out_dir):
    runs = defaultdict(lambda: defaultdict(list))  # (bench, key) -> build -> [median_ms]
    device = "?"
    with tarfile.open(tar_path) as tar:
        for m in tar.getmembers():
            if not m.name.endswith(".json"):
                continue
            name = m.name.rsplit("/", 1)[-1][:-5]
            parts = name.rsplit("-", 2)
            if len(parts) != 3 or parts[1] not in ("before", "after"):
                continue  # e.g. scene.json, the after build alone
            bench, build, _round = parts
            doc = json.load(io.TextIOWrapper(tar.extractfile(m), encoding="utf-8"))
            device = doc.get("device", device)
            for row in doc.get("rows", []):
                if "median_ms" in row:
                    runs[(bench, key_of(row))][build].append(row["median_ms"])
                elif isinstance(row.get("ms"), dict):  # bench tpch: wall ms per query
                    runs[(bench, key_of(row))][build].append(row["ms"]["median"])
    lines = [f"Device: {device}", "",
             "| bench | case | before (ms, rounds) | after (ms, rounds) | after / before |",
             "|---|---|---|---|---|"]
    bars = []
    for (bench, key), builds in sorted(runs.items()):
        case = ", ".join(f"{k}={v}" for k, v in key)
        b, a = builds.get("before", []), builds.get("after", [])
        fmt = lambda xs: " / ".join(f"{x:.4f}" for x in xs) if xs else "-"
        ratio = statistics.median(a) / statistics.median(b) if a and b else None
        lines.append(f"| {bench} | {case} | {fmt(b)} | {fmt(a)} | "
                     f"{'-' if ratio is None else f'{ratio:.3f}'} |")
        if ratio is not None:
            bars.append((f"{bench} {case}", ratio))
    with open(f"{out_dir}/before-after.md", "w") as f:
        f.write("\n".join(lines) + "\n")
    width, row_h, left = 900, 18, 420
    height = 40 + row_h * len(bars)
    scale = (width - left - 40) / max([2.0] + [r for _, r in bars])
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="14">after / before (median GPU time; &lt; 1 is faster)</text>']
    x1 = left + scale
    svg.append(f'<line x1="{x1}" y1="20" x2="{x1}" y2="{height}" stroke="#888"/>')
    for i, (label, r) in enumerate(bars):
        y = 24 + i * row_h
        color = "#4a9" if r <= 1.02 else "#d64"
        svg.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{label}</text>')
        svg.append(f'<rect x="{left}" y="{y + 2}" width="{r * scale:.1f}" height="{row_h - 5}" '
                   f'fill="{color}"/>')
        svg.append(f'<text x="{left + r * scale + 4:.1f}" y="{y + 12}">{r:.3f}</text>')
    svg.append("</svg>")
    with open(f"{out_dir}/before-after.svg", "w") as f:
        f.write("\n".join(svg) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
