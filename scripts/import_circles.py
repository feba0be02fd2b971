#!/usr/bin/env python3
"""Import circles inside each crate, and production code that imports a CPU oracle.

    python3 scripts/import_circles.py [REPO_ROOT]

Nodes are a crate's modules (one per file); an edge a -> b is a `crate::…` or `super::…` path
in a's text (before its `#[cfg(test)]` block, comments dropped) that resolves to module b, a
module's own children excluded. Every strongly connected component of more than one module is
a circle, printed with its edges. Then every non-test module outside a `cpu` oracle that names
a `cpu` module (`cpu::`, `::cpu`) is listed: production code should not depend on an oracle
(the CLI's benches, which check their results against the oracles, are the exception).

Exit status 1 when any crate has a circle or a production module naming an oracle (`make
test` runs this, so either fails CI; `scripts/test_import_circles.py` checks that it does),
else 0.
"""
import os
import re
import sys
from collections import defaultdict

PATH = re.compile(r"\b((?:crate|super)(?:::\{?[A-Za-z_][A-Za-z0-9_]*)+)")
CPU = re.compile(r"\bcpu::|::cpu\b")


def modules(src):
    """Module path (tuple) -> file, for every .rs file under `src`."""
    mods = {}
    for d, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                rel = os.path.relpath(os.path.join(d, f), src)[:-3].split(os.sep)
                if rel[-1] in ("mod", "lib", "main"):
                    rel = rel[:-1]
                mods[tuple(rel)] = os.path.join(d, f)
    return mods


def production_text(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    return re.sub(r"//[^\n]*", "", text)


def edges_of(mods):
    def resolve(path):
        for n in range(len(path), 0, -1):
            if tuple(path[:n]) in mods:
                return tuple(path[:n])
        return None

    edges = defaultdict(set)
    for m, f in mods.items():
        is_dir_module = os.path.basename(f) in ("mod.rs", "lib.rs", "main.rs")
        for hit in PATH.finditer(production_text(f)):
            parts = hit.group(1).replace("{", "").split("::")
            if parts[0] == "crate":
                base, parts = [], parts[1:]
            else:
                # `super` from a file module names its parent; from mod.rs, the grandparent.
                base = list(m) if is_dir_module else list(m[:-1])
                while parts and parts[0] == "super":
                    base, parts = base[:-1], parts[1:]
            target = resolve(base + parts)
            if target is None or target == m or target[: len(m)] == m:
                continue  # unresolved, itself, or one of its own children
            if m[: len(target)] == target:
                continue  # its parent module (re-exports flow down, not a dependency)
            edges[m].add(target)
    return edges


def circles(edges):
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def main(root):
    """Prints the report for the crates under `root`; returns the number of circles plus the
    number of production modules that name an oracle."""
    total = 0
    oracle_imports = 0
    for crate in sorted(os.listdir(os.path.join(root, "crates"))):
        src = os.path.join(root, "crates", crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        edges = edges_of(mods)
        for comp in circles(edges):
            total += 1
            name = lambda m: "::".join(m) or "crate"
            print(f"{crate}: circle {' <-> '.join(sorted(map(name, comp)))}")
            for a in sorted(comp):
                for b in sorted(edges[a]):
                    if b in comp:
                        print(f"    {name(a)} -> {name(b)}")
        for m, f in sorted(mods.items()):
            if "cpu" in m or (crate == "gpugraph-cli" and m[:1] == ("bench",)):
                continue
            if CPU.search(production_text(f)):
                oracle_imports += 1
                print(f"{crate}: {os.path.relpath(f, root)} names a cpu oracle")
    print(f"{total} circle(s)")
    print(f"{oracle_imports} production module(s) naming a cpu oracle")
    return total + oracle_imports


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1] if len(sys.argv) > 1 else ".") else 0)
