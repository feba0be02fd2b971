#!/usr/bin/env python3
"""One WGSL assembly path: every shader text a crate hands the device is a
`gpugraph_command::ShaderSource` recipe, assembled by `gpugraph-command`'s `shader/` module.

    python3 scripts/one_kernel_way.py [REPO_ROOT]

Scans the Rust files of every crate under `crates/` except `gpugraph-command` (the assembly
path and its device cache own the one `create_shader_module`, and its tests feed raw text on
purpose) and reports, with file and line:

* `create_shader_module*`, `ShaderModuleDescriptor`, `include_wgsl!` or `wgpu::ShaderSource`
  (`ShaderSource::Wgsl`, `::SpirV`, ...): a
  module made from text that bypassed the recipe (render pipelines take theirs from
  `DeviceCache::shader_module`);
* `concat!(…)` whose arguments hold an `include_str!`: WGSL files glued together instead of
  `#include`d from a `ShaderRegistry` (`include_str!(concat!(…))`, one file by a built path,
  is fine);
* `format!`, `concat!` or `push_str` over a WGSL text constant (`…_WGSL` / `WGSL`, or any
  constant of the file bound to `include_str!("….wgsl")`): the same gluing at run time;
* `with_shared(`: the removed pre-recipe helper.

Comments are ignored. Exit status 1 when anything is found (`make test` runs this;
`scripts/test_one_kernel_way.py` checks that it does), else 0.
"""
import os
import re
import sys

OWNER = "gpugraph-command"
MODULE = re.compile(
    r"\bcreate_shader_module\w*\b|\bShaderModuleDescriptor\b|\binclude_wgsl!"
    r"|\bwgpu::ShaderSource\b|\bShaderSource::(?:Wgsl|SpirV|Naga|Glsl|Dummy)\b"
)
HELPER = re.compile(r"\bwith_shared\s*\(")
GLUE_CALL = re.compile(r"\b(?:format!|concat!|push_str)\s*\(")
WGSL_CONST = re.compile(r"\b[A-Z][A-Z0-9_]*WGSL\b|\bWGSL\b")


def strip_comments(text):
    """`text` with `//` comments blanked (string literals holding `//` kept), lines kept."""
    out = []
    for line in text.split("\n"):
        in_str = False
        cut = len(line)
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\" and in_str:
                i += 2
                continue
            if c == '"':
                in_str = not in_str
            elif not in_str and line.startswith("//", i):
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def call_args(text, open_paren):
    """The text between `text[open_paren]` == '(' and its matching ')'."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i]
    return text[open_paren + 1 :]


STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}")


def code_and_placeholders(args):
    """`args` with each string literal replaced by the names its `{name}` placeholders
    capture: words inside messages are not code, an inline `{WGSL}` is."""
    return STRING.sub(lambda m: " ".join(PLACEHOLDER.findall(m.group(0))), args)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


WGSL_FILE_CONST = re.compile(r'\bconst\s+([A-Za-z_][A-Za-z0-9_]*)\s*:\s*&str\s*=\s*include_str!\(\s*"[^"]*\.wgsl"\s*\)')


def findings(path):
    text = strip_comments(open(path, encoding="utf-8").read())
    found = []
    file_consts = WGSL_FILE_CONST.findall(text)
    wgsl_text = re.compile(WGSL_CONST.pattern + "".join(rf"|\b{n}\b" for n in file_consts))
    for m in MODULE.finditer(text):
        found.append((line_of(text, m.start()), f"`{m.group(0)}` outside {OWNER}: build a ShaderSource recipe (render pipelines: DeviceCache::shader_module)"))
    for m in HELPER.finditer(text):
        found.append((line_of(text, m.start()), "`with_shared(`: `#include` the shared file from a recipe instead"))
    for m in GLUE_CALL.finditer(text):
        args = call_args(text, m.end() - 1)
        name = m.group(0).rstrip("( ").strip()
        if name == "concat!" and "include_str!" in args:
            found.append((line_of(text, m.start()), "WGSL files joined by `concat!`: `#include` them from a ShaderRegistry"))
        elif wgsl_text.search(code_and_placeholders(args)):
            found.append((line_of(text, m.start()), f"WGSL text joined by `{name}`: `#include` it from a ShaderRegistry"))
    return sorted(found)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = os.path.join(root, "crates")
    bad = 0
    for crate in sorted(os.listdir(crates)):
        if crate == OWNER or not os.path.isdir(os.path.join(crates, crate)):
            continue
        for d, _, files in sorted(os.walk(os.path.join(crates, crate))):
            if f"{os.sep}target" in d:
                continue
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                path = os.path.join(d, f)
                for line, what in findings(path):
                    print(f"{os.path.relpath(path, root)}:{line}: {what}")
                    bad += 1
    if bad:
        print(f"{bad} shader text(s) bypass the one assembly path (gpugraph_command::shader)")
        return 1
    print("one WGSL assembly path: no shader text outside ShaderSource recipes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
