#!/usr/bin/env python3
"""One table from `gpugraph bench ... --json OURS` and `peers.py ... --json PEER` measured in the
same device call: for every gpugraph row, its ratio to the floor (the WGSL copy kernel of the same
bytes, same process), the best peer row of the same op and size and our speed ratio to it (>1
means gpugraph is faster), and, given the copy bench's peer file, our bandwidth over
torch.copy_'s at the nearest traffic. Rows with per-node times (`bench sort`: histogram, digit
passes, key transforms) get a second table: each node's time against the floor of its own
traffic, and its share of the peer's time.

    python3 bench/combine.py ours.json peer.json [--copy-peer copy-peer.json] [--markdown]
"""
import json
import sys


def torch_copy_gbps(copy_peer):
    """(bytes moved, GB/s) of torch.copy_ rows: n u32 read + written = 8 n bytes."""
    out = []
    for r in copy_peer["rows"]:
        if r.get("peer") == "torch.copy_" and r["op"] == "copy-kernel" and r["median_ms"] > 0:
            b = 8 * r["elements"]
            out.append((b, b / (r["median_ms"] * 1e6)))
    return sorted(out)


def main():
    argv = sys.argv[1:]
    copy_peer = None
    if "--copy-peer" in argv:
        i = argv.index("--copy-peer")
        copy_peer = json.load(open(argv[i + 1]))
        del argv[i:i + 2]
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        raise SystemExit(__doc__)
    ours = json.load(open(args[0]))
    peer = json.load(open(args[1]))
    copies = torch_copy_gbps(copy_peer) if copy_peer else []
    best = {}
    for r in peer["rows"]:
        key = (r["op"], r["elements"])
        if key not in best or r["median_ms"] < best[key]["median_ms"]:
            best[key] = r
    head = ["op", "elements", "ours ms [min-max]", "GB/s", "x floor", "x torch copy", "peer",
            "peer ms", "x peer"]
    lines = [head]
    bad = []
    for r in ours["rows"]:
        # "[...]" marks a kernel variant of the same op (--scan-policy); it pairs with the op's peer.
        p = best.get((r["op"].split("[")[0], r["elements"]))
        floor = r.get("ratio_to_floor", r.get("ratio_to_copy", 0))
        if floor > 1.0:
            bad.append(r["op"])
        traffic = r["elements"] * r.get("bytes_per_element", 0)
        tc = min(copies, key=lambda c: abs(c[0] - traffic))[1] if copies and traffic else 0
        lines.append([
            r["op"], str(r["elements"]),
            f'{r["median_ms"]:.3f} [{r.get("min_ms", 0):.3f}-{r.get("max_ms", 0):.3f}]',
            f'{r.get("gb_per_s", 0):.0f}', f'{floor:.2f}' + ("!" if floor > 1.0 else ""),
            f'{r.get("gb_per_s", 0) / tc:.2f}' if tc else "-",
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
    nodes = [(r, nd) for r in ours["rows"] for nd in r.get("nodes", [])]
    if nodes:
        print()
        head = ["node", "elements", "ms", "B/elem", "floor ms", "x floor", "x peer total"]
        lines = [head]
        for r, nd in nodes:
            p = best.get((r["op"].split("[")[0], r["elements"]))
            lines.append([
                nd["node"], str(r["elements"]), f'{nd["median_ms"]:.3f}',
                f'{nd["bytes_per_element"]:g}', f'{nd["floor_median_ms"]:.3f}',
                f'{nd["ratio_to_floor"]:.2f}',
                f'{nd["median_ms"] / p["median_ms"]:.2f}' if p and p["median_ms"] > 0 else "-",
            ])
        widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
        for i, l in enumerate(lines):
            if md:
                print("| " + " | ".join(c.ljust(w) for c, w in zip(l, widths)) + " |")
                if i == 0:
                    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
            else:
                print("  ".join(c.rjust(w) for c, w in zip(l, widths)))
    print(f'device: {ours.get("device", "?")} / peer {peer.get("device", "?")} torch {peer.get("torch")} cupy {peer.get("cupy")}')
    if bad:
        print(f"BENCH BUG: above 1.0x the floor: {', '.join(bad)}")


if __name__ == "__main__":
    main()
