#!/usr/bin/env python3
"""Checks docs/procgen-conformance.md, the procgen ABI conformance table.

Every table row (`| ID | L | Rule | Check |`) must have a unique ID and a Check cell that is
either one or more tests, each written `` `FILE.rs::name` `` (a path under
crates/gpugraph-procgen/, e.g. `tests/abi.rs::casts_are_by_value_in_every_direction` or
`src/asset/variant.rs::tests::name`), or a reason:

- ``not built: host engine: "<quote>"`` where the quote is text of the spec (checked against
  shared/spec/procgen-abi.txt when that file is found: $PROCGEN_SPEC, else ../shared/spec/ and
  shared/spec/ from the repository root);
- ``not built yet: <what is missing>``.

A named test must be a `fn NAME` in the named file under `#[test]` (or `#[tokio::test]`,
attributes and doc comments between them allowed); for `src/FILE.rs::tests::NAME` inside that
file's `mod tests`. An argument names another table file (for testing the checker). Exits 1 naming each bad row, 0 when every row holds.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATE = os.path.join(ROOT, "crates", "gpugraph-procgen")
TABLE = os.path.join(ROOT, "docs", "procgen-conformance.md")

TEST_REF = re.compile(r"`([A-Za-z0-9_./-]+\.rs)::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)`")
HOST = re.compile(r'^not built: host engine: "([^"]+)"\s*$')
YET = re.compile(r"^not built yet: \S.*$")
ID = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$")


def spec_text():
    """The spec's text, or None when it is not on this machine."""
    candidates = [os.environ.get("PROCGEN_SPEC")]
    candidates += [
        os.path.join(ROOT, "..", "shared", "spec", "procgen-abi.txt"),
        os.path.join(ROOT, "shared", "spec", "procgen-abi.txt"),
    ]
    for c in candidates:
        if c and os.path.isfile(c):
            with open(c, encoding="utf-8") as f:
                return f.read()
    return None


def split_row(line):
    """The cells of a markdown table row (no escaped pipes are used in the table)."""
    cells = line.strip().strip("|").split("|")
    return [c.strip() for c in cells]


def rows(text):
    """(line number, cells) of every data row of every table with a Check column."""
    out = []
    header = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = split_row(line)
        if header is None:
            header = cells
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        if "Check" in header and "ID" in header:
            if len(cells) != len(header):
                out.append((n, None, f"has {len(cells)} cells, the header {len(header)}"))
                continue
            out.append((n, dict(zip(header, cells)), None))
    return out


_tests_cache = {}


def test_fns(path):
    """Names of `#[test]` / `#[tokio::test]` functions in `path`: top-level ones as NAME and
    those inside `mod tests` as tests::NAME (both forms for the latter)."""
    if path in _tests_cache:
        return _tests_cache[path]
    names = set()
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    in_tests_mod = False
    pending = False
    for line in lines:
        s = line.strip()
        if re.match(r"^(pub(\(crate\))?\s+)?mod\s+tests\s*\{", s):
            in_tests_mod = True
        if re.match(r"^#\[(tokio::)?test(\(.*\))?\]$", s):
            pending = True
            continue
        if pending:
            m = re.match(r"^(pub\s+)?(async\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)\s*[(<]", s)
            if m:
                names.add(m.group(3))
                if in_tests_mod:
                    names.add("tests::" + m.group(3))
                pending = False
            elif not (s.startswith("#[") or s.startswith("//") or s == ""):
                pending = False
    _tests_cache[path] = names
    return names


def check_cell(check, spec):
    """Problems with one Check cell (empty when it holds)."""
    refs = TEST_REF.findall(check)
    if refs:
        rest = TEST_REF.sub("", check).replace(",", "").replace(";", "").strip()
        if rest:
            return [f"text besides the tests: {rest!r}"]
        problems = []
        for file, name in refs:
            path = os.path.normpath(os.path.join(CRATE, file))
            if not path.startswith(CRATE + os.sep) or not os.path.isfile(path):
                problems.append(f"{file}: no such file in crates/gpugraph-procgen")
                continue
            if name not in test_fns(path):
                problems.append(f"{file}::{name}: no #[test] fn {name.split('::')[-1]} there")
        return problems
    m = HOST.match(check)
    if m:
        if spec is not None and " ".join(m.group(1).split()) not in " ".join(spec.split()):
            return [f"the quote {m.group(1)!r} is not in the spec"]
        return []
    if YET.match(check):
        return []
    if not check:
        return ["no test and no reason"]
    return [f"neither a test nor a reason: {check!r}"]


def main():
    table = sys.argv[1] if len(sys.argv) > 1 else TABLE
    with open(table, encoding="utf-8") as f:
        text = f.read()
    spec = spec_text()
    bad = []
    seen = {}
    counts = {"tested": 0, "host": 0, "yet": 0}
    found = rows(text)
    if not found:
        bad.append("docs/procgen-conformance.md: no table rows found")
    for n, row, err in found:
        where = f"{os.path.relpath(table, ROOT)}:{n}"
        if err:
            bad.append(f"{where}: {err}")
            continue
        rid = row["ID"]
        if not ID.match(rid):
            bad.append(f"{where}: ID {rid!r} is not an upper-case ID")
        if rid in seen:
            bad.append(f"{where}: ID {rid} repeats line {seen[rid]}")
        else:
            seen[rid] = n
        if not row.get("Rule"):
            bad.append(f"{where} ({rid}): no rule")
        for p in check_cell(row["Check"], spec):
            bad.append(f"{where} ({rid}): {p}")
        c = row["Check"]
        counts["tested" if TEST_REF.search(c) else "host" if HOST.match(c) else "yet"] += 1
    if bad:
        for b in bad:
            print(b, file=sys.stderr)
        print(f"{len(bad)} bad row(s)", file=sys.stderr)
        return 1
    note = "" if spec is not None else " (spec not found: quotes unchecked)"
    print(
        f"procgen conformance: {len(found)} rows: {counts['tested']} tested, "
        f"{counts['host']} not built (host engine), {counts['yet']} not built yet{note}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
