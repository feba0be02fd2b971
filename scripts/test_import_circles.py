#!/usr/bin/env python3
"""Checks that scripts/import_circles.py fails on a circle or on production code naming a CPU
oracle and passes without them, on small crates written to a temporary directory (plain
asserts, no test framework).

    python3 scripts/test_import_circles.py
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "import_circles.py")


def run(files):
    """Exit status and output of the script over one crate made of `files` (path -> text)."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, "crates", "demo", "src", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        done = subprocess.run(
            [sys.executable, SCRIPT, root], capture_output=True, text=True, check=False
        )
        return done.returncode, done.stdout


def main():
    lib = "mod a;\nmod b;\nmod c;\n"
    # a -> b -> c -> a through `crate::` and `super::` paths.
    code, out = run(
        {
            "lib.rs": lib,
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use super::c::C;\npub struct B;\n",
            "c.rs": "pub struct C(crate::a::A);\n",
        }
    )
    assert code == 1, (code, out)
    assert "demo: circle a <-> b <-> c" in out and "1 circle(s)" in out, out
    # The same modules in a line, a test module's imports and a comment naming `a` ignored.
    code, out = run(
        {
            "lib.rs": lib,
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use super::c::C;\npub struct B;\n",
            "c.rs": "// crate::a::A would close a circle\npub struct C;\n"
            "#[cfg(test)]\nmod tests { use crate::a::A; }\n",
        }
    )
    assert code == 0, (code, out)
    assert "0 circle(s)" in out, out
    # A child module naming its parent is part of it, not a circle.
    code, out = run(
        {
            "lib.rs": "mod a;\n",
            "a/mod.rs": "mod inner;\npub struct A;\nuse inner::I;\n",
            "a/inner.rs": "use super::A;\npub struct I;\n",
        }
    )
    assert code == 0, (code, out)
    # Production code naming a `cpu` oracle fails, through `crate::`, `super::` or another
    # crate's `cpu` module alike.
    oracle = "pub fn reference() {}\n"
    for user in (
        "pub fn f() { crate::cpu::reference() }\n",
        "use super::cpu;\npub fn f() { cpu::reference() }\n",
        "use other_crate::cpu;\n",
    ):
        code, out = run({"lib.rs": "mod cpu;\nmod a;\n", "cpu.rs": oracle, "a.rs": user})
        assert code == 1, (user, code, out)
        assert "demo: " + os.path.join("crates", "demo", "src", "a.rs") + " names a cpu oracle" in out, out
        assert "1 production module(s) naming a cpu oracle" in out and "0 circle(s)" in out, out
    # The oracle itself, a module inside it, a test module and a comment may name it; a name
    # that merely starts with `cpu` (`cpu_call::`) is not an oracle.
    code, out = run(
        {
            "lib.rs": "mod cpu;\nmod a;\nmod cpu_call;\n",
            "cpu/mod.rs": "mod inner;\npub use inner::reference;\n",
            "cpu/inner.rs": "pub fn reference() {}\npub fn again() { super::cpu::reference() }\n",
            "cpu_call.rs": "pub fn call() {}\n",
            "a.rs": "// crate::cpu::reference is the oracle\npub fn f() { crate::cpu_call::call() }\n"
            "#[cfg(test)]\nmod tests { use crate::cpu::reference; }\n",
        }
    )
    assert code == 0, (code, out)
    assert "0 production module(s) naming a cpu oracle" in out, out
    print("import_circles.py: fails on a circle or an oracle import, passes without them")


if __name__ == "__main__":
    main()
