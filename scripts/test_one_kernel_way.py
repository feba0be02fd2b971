#!/usr/bin/env python3
"""Checks that scripts/one_kernel_way.py fails on each way of bypassing the one WGSL assembly
path and passes on recipes, on small crates written to a temporary directory (plain asserts,
no test framework).

    python3 scripts/test_one_kernel_way.py
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "one_kernel_way.py")


def run(files, crate="gpugraph-demo"):
    """Exit status and output of the script over one crate made of `files` (path -> text)."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, "crates", crate, "src", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        done = subprocess.run(
            [sys.executable, SCRIPT, root], capture_output=True, text=True, check=False
        )
        return done.returncode, done.stdout


def fails(text, what):
    code, out = run({"lib.rs": text})
    assert code == 1, f"{what}: expected a failure\n{out}"
    assert "lib.rs:" in out, out


def passes(text, what, crate="gpugraph-demo"):
    code, out = run({"lib.rs": text}, crate)
    assert code == 0, f"{what}: expected a pass\n{out}"


def main():
    fails(
        'fn m(d: &wgpu::Device) { d.create_shader_module(todo!()); }\n',
        "a module created outside the command crate",
    )
    fails(
        'fn s() -> wgpu::ShaderSource<\'static> { wgpu::ShaderSource::Wgsl("".into()) }\n',
        "wgpu's shader source",
    )
    fails(
        'fn m(d: &wgpu::Device) { d.create_shader_module(wgpu::include_wgsl!("a.wgsl")); }\n',
        "include_wgsl!",
    )
    fails(
        'const WGSL: &str = concat!(include_str!("a.wgsl"), include_str!("b.wgsl"));\n',
        "files joined by concat!",
    )
    fails(
        'const BODY: &str = include_str!("body.wgsl");\n'
        'fn s(h: &str) -> String { format!("{h}{BODY}") }\n',
        "a file constant joined by format!",
    )
    fails(
        'fn s(out: &mut String) { out.push_str(LOD_PARAMS_WGSL); }\n',
        "a WGSL constant joined by push_str",
    )
    fails('fn s() -> String { with_shared(&[], "") }\n', "the removed helper")
    # Recipes, a registry built with include_str!(concat!(…)), messages naming WGSL, comments.
    passes(
        'static R: ShaderRegistry = ShaderRegistry::new("d", &[("a.wgsl", include_str!(concat!("", "a.wgsl")))]);\n'
        'fn s() -> ShaderSource { ShaderSource::from_registry(&R, "a.wgsl").u32("N", 4) }\n'
        'fn e(n: u32) -> String { format!("the WGSL has {n} bindings") }\n'
        '// a comment may say create_shader_module or concat!(include_str!(…))\n',
        "recipes",
    )
    passes(
        'fn m(d: &wgpu::Device) { d.create_shader_module(todo!()); }\n',
        "the command crate itself",
        crate="gpugraph-command",
    )
    print("one_kernel_way.py: failures and passes as expected")


if __name__ == "__main__":
    main()
