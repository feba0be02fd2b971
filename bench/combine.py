#!/usr/bin/env python3
"""One table from `gpugraph bench ... --json OURS` and `peers.py ... --json PEER` measured in the
same device call: for every gpugraph row, the best peer row of the same op and size, and our
speed ratio to it (>1 means gpugraph is faster).

    python3 bench/combine.py ours.json peer.json [--markdown]
"""
import json
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        raise SystemExit(__doc__)
    ours = json.load(open(args[0]))
    peer = json.load(open(args[1]))
    best = {}
    for r in peer["rows"]:
        key = (r["op"], r["elements"])
        if key not in best or r["median_ms"] < best[key]["median_ms"]:
            best[key] = r
    head = ["op", "elements", "ours ms", "GB/s", "x copy floor", "peer", "peer ms", "x peer"]
    lines = [head]
    for r in ours["rows"]:
        # "[...]" marks a kernel variant of the same op (--scan-policy); it pairs with the op's peer.
        p = best.get((r["op"].split("[")[0], r["elements"]))
        lines.append([
            r["op"], str(r["elements"]), f'{r["median_ms"]:.3f}', f'{r.get("gb_per_s", 0):.0f}',
            f'{r.get("ratio_to_copy", 0):.2f}',
            p["peer"] if p else "-", f'{p["median_ms"]:.3f}' if p else "-",
            f'{p["median_ms"] / r["median_ms"]:.2f}' if p and r["median_ms"] > 0 else "-",
        ])
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    md = "--markdown" in sys.argv
    for i, l in enumerate(lines):
        if md:
            print("| " + " | ".join(c.ljust(w) for c, w in zip(l, widths)) + " |")
            if i == 0:
                print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        else:
            print("  ".join(c.rjust(w) for c, w in zip(l, widths)))
    print(f'device: {ours.get("device", "?")} / peer {peer.get("device", "?")} torch {peer.get("torch")} cupy {peer.get("cupy")}')


if __name__ == "__main__":
    main()
