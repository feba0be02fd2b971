//! The one shader assembly path of the crate's kernels:
//! a [`ShaderSource`] names WGSL files of the crate's static registry and turns them, with a
//! constant header generated from the policy, into the text handed to the device.
//!
//! Directives, resolved in this order:
//! 1. `#include "dir/name.wgsl"`: the registry file, once per assembled shader (a second
//!    include of the same file is dropped), nestable;
//! 2. `#ifdef NAME` / `#ifndef NAME` / `#else` / `#endif` against [`ShaderSource::define`]s;
//! 3. `#unroll K in A..B` … `#end_unroll`: the lines between, once per `k` in `A..B` with
//!    every standalone `K` (not part of a longer alphanumeric word; `_` separates, so `in_K`
//!    becomes `in_2`) replaced by `k`. `A` and `B` are literals or header constants. This is
//!    how per-input bindings and straight-line per-slot loads are written (private arrays
//!    indexed in a loop may be placed in slow local memory by some compilers);
//! 4. `#unroll` before a `for (var x = 0u; x < N; x += 1u) {` loop: N blocks `{ let x = k; … }`
//!    (see [`crate::kernel::unroll`]), unless the policy turned loop unrolling off.
//!
//! A malformed directive (unknown include, unknown bound, unterminated block) is left in the
//! text, where it fails WGSL parsing: the naga tests of every kernel catch it without a device.

use super::preprocess::{preprocess, unroll};

/// `[(name, text)]` of WGSL files under `src/`, by path.
macro_rules! registry {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../", $name)))),*]
    };
}

/// Every WGSL file a [`ShaderSource`] may name or include, by its path under `src/`.
const FILES: &[(&str, &str)] = registry![
    "shared/dispatch.wgsl",
    "shared/tile_status.wgsl",
    "shared/chained_lookback.wgsl",
    "shared/tree_reduce.wgsl",
    "shared/row_driver.wgsl",
    "shared/workgroup_scan.wgsl",
    "shared/chained_scan.wgsl",
    "shared/chained_scan_ticket.wgsl",
    "shared/chained_scan_tile.wgsl",
    "shared/chained_scan_carry.wgsl",
    "compact/compact.wgsl",
    "scan/scan.wgsl",
    "mask/mask.wgsl",
    "mask/mask_vec4.wgsl",
    "mask/combine.wgsl",
    "reduce/reduce.wgsl",
    "keyed/keyed.wgsl",
    "keyed/keyed_finalize.wgsl",
    "keyed/fixed_point.wgsl",
    "group/code_key.wgsl",
    "histogram/histogram.wgsl",
    "histogram/validate_edges.wgsl",
    "grid/grid.wgsl",
    "compact/distribute.wgsl",
    "compact/expand.wgsl",
    "compact/partition_totals.wgsl",
    "compact/range.wgsl",
    "compact/range_finish.wgsl",
    "compact/range_lengths.wgsl",
    "compact/zero.wgsl",
    "hash/hash.wgsl",
    "hash/stats.wgsl",
    "hash/build.wgsl",
    "hash/rows.wgsl",
    "hash/query.wgsl",
    "hash/gather.wgsl",
    "spatial/common.wgsl",
    "spatial/clear.wgsl",
    "spatial/grid_build.wgsl",
    "spatial/grid_query.wgsl",
    "spatial/batch_query.wgsl",
    "spatial/filter.wgsl",
    "spatial/bvh_build.wgsl",
    "spatial/bvh_query.wgsl",
    "spatial/segmented_bvh.wgsl",
    "fft/fft.wgsl",
    "topology/traversal.wgsl",
    "topology/ancestor.wgsl",
    "topology/hierarchy.wgsl",
    "topology/virtual_geometry.wgsl",
    "sparse/common.wgsl",
    "sparse/spmv.wgsl",
    "sparse/dot.wgsl",
    "sparse/pcg.wgsl",
    "sort/radix_common.wgsl",
    "sort/radix_histogram.wgsl",
    "sort/radix_pass.wgsl",
    "sort/radix_lookback.wgsl",
    "sort/local.wgsl",
    "sort/classify.wgsl",
    "sort/keys.wgsl",
];

/// The registry file `name`, if any.
pub fn registry_file(name: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// One shader's recipe: registry files in order, a generated constant header, the `#ifdef`
/// names and whether counted loops are unrolled. [`ShaderSource::build`] gives the WGSL; equal
/// recipes give equal text, so the device cache compiles them once.
#[derive(Clone, Debug)]
pub struct ShaderSource {
    files: Vec<&'static str>,
    header: Vec<String>,
    constants: Vec<(String, u32)>,
    defines: Vec<&'static str>,
    unroll_loops: bool,
}

impl ShaderSource {
    /// The registry file `file` (e.g. `"reduce/reduce.wgsl"`), with loop unrolling on.
    pub fn new(file: &'static str) -> Self {
        Self {
            files: vec![file],
            header: Vec::new(),
            constants: Vec::new(),
            defines: Vec::new(),
            unroll_loops: true,
        }
    }

    /// Appends the registry file `file` after the ones named so far.
    pub fn file(mut self, file: &'static str) -> Self {
        self.files.push(file);
        self
    }

    /// A `// text` line in the header (provenance: which module and policy made it).
    pub fn comment(mut self, text: impl AsRef<str>) -> Self {
        self.header.push(format!("// {}", text.as_ref()));
        self
    }

    /// `const NAME: u32 = value;` in the header; also a bound for `#unroll`.
    pub fn u32(mut self, name: &str, value: u32) -> Self {
        self.header.push(format!("const {name}: u32 = {value}u;"));
        self.constants.push((name.to_string(), value));
        self
    }

    /// `const NAME = array<u32, N>(…);` in the header (a table of the recipe, e.g. the sort's
    /// width classes).
    pub fn u32_array(mut self, name: &str, values: &[u32]) -> Self {
        let list: Vec<String> = values.iter().map(|v| format!("{v}u")).collect();
        self.header.push(format!(
            "const {name} = array<u32, {}>({});",
            values.len(),
            list.join(", ")
        ));
        self
    }

    /// `const NAME: bool = value;` in the header.
    pub fn bool(mut self, name: &str, value: bool) -> Self {
        self.header.push(format!("const {name}: bool = {value};"));
        self
    }

    /// `alias NAME = ty;` in the header.
    pub fn alias(mut self, name: &str, ty: &str) -> Self {
        self.header.push(format!("alias {name} = {ty};"));
        self
    }

    /// Defines `name` for `#ifdef`.
    pub fn define(mut self, name: &'static str) -> Self {
        self.defines.push(name);
        self
    }

    /// Defines `name` when `on`.
    pub fn define_if(self, on: bool, name: &'static str) -> Self {
        if on {
            self.define(name)
        } else {
            self
        }
    }

    /// Whether `#unroll` loops are expanded (`#unroll K in …` blocks always are).
    pub fn unroll_loops(mut self, on: bool) -> Self {
        self.unroll_loops = on;
        self
    }

    /// The assembled WGSL: header lines, a blank line, then each file with its directives
    /// resolved.
    pub fn build(&self) -> String {
        let mut text = String::new();
        let mut included = Vec::new();
        for file in &self.files {
            include(&format!("#include \"{file}\""), &mut included, &mut text);
        }
        let specialized = preprocess(&text, &self.defines);
        let constants: Vec<(&str, u32)> = self
            .constants
            .iter()
            .map(|(n, v)| (n.as_str(), *v))
            .collect();
        let repeated = repeat(&specialized, &constants);
        let mut out = String::new();
        if !self.header.is_empty() {
            for line in &self.header {
                out.push_str(line);
                out.push('\n');
            }
            out.push('\n');
        }
        out.push_str(&unroll(&repeated, &constants, self.unroll_loops));
        out
    }
}

/// Appends `source` to `out` with its `#include` lines replaced by their files (once each).
fn include(source: &str, included: &mut Vec<&'static str>, out: &mut String) {
    for line in source.lines() {
        let name = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'));
        let Some(name) = name else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        match FILES.iter().find(|(n, _)| *n == name) {
            Some((n, _)) if included.contains(n) => {}
            Some((n, text)) => {
                included.push(n);
                include(text, included, out);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

/// `#unroll K in A..B` header: (name, start, end).
fn repeat_header(line: &str, constants: &[(&str, u32)]) -> Option<(String, u32, u32)> {
    let rest = line.trim().strip_prefix("#unroll ")?;
    let (name, range) = rest.split_once(" in ")?;
    let (a, b) = range.trim().split_once("..")?;
    let value = |s: &str| {
        let s = s.trim();
        s.parse::<u32>()
            .ok()
            .or_else(|| constants.iter().find(|(n, _)| *n == s).map(|(_, v)| *v))
    };
    Some((name.trim().to_string(), value(a)?, value(b)?))
}

fn is_repeat_start(line: &str) -> bool {
    line.trim().starts_with("#unroll ") && line.contains(" in ")
}

/// Expands `#unroll K in A..B` … `#end_unroll` blocks (nestable).
fn repeat(source: &str, constants: &[(&str, u32)]) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !is_repeat_start(line) {
            out.push_str(line);
            out.push('\n');
            i += 1;
            continue;
        }
        // The matching #end_unroll.
        let mut depth = 0;
        let mut end = None;
        for (j, l) in lines.iter().enumerate().skip(i) {
            if is_repeat_start(l) {
                depth += 1;
            } else if l.trim() == "#end_unroll" {
                depth -= 1;
                if depth == 0 {
                    end = Some(j);
                    break;
                }
            }
        }
        match (repeat_header(line, constants), end) {
            (Some((name, a, b)), Some(end)) => {
                let body = lines[i + 1..end].join("\n");
                for k in a..b {
                    out.push_str(&repeat(&substitute(&body, &name, k), constants));
                }
                i = end + 1;
            }
            _ => {
                // Left in place: the parse error names the directive.
                out.push_str(line);
                out.push('\n');
                i += 1;
            }
        }
    }
    out
}

/// `text` with every occurrence of `name` that no ASCII alphanumeric touches replaced by `k`.
fn substitute(text: &str, name: &str, k: u32) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(name) {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + name.len()).copied();
            let free = |c: Option<u8>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
            if free(before) && free(after) {
                out.push_str(&k.to_string());
                i += name.len();
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Testing: byte size and member offsets of struct `name` in `wgsl` as naga lays it out, to
/// check a `#[repr(C)]` parameter struct against the shader's view of it.
#[cfg(test)]
pub(crate) fn struct_layout(wgsl: &str, name: &str) -> (u32, Vec<(String, u32)>) {
    let module = naga::front::wgsl::parse_str(wgsl).unwrap_or_else(|e| panic!("{e}"));
    let ty = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name}"))
        .1;
    match &ty.inner {
        naga::TypeInner::Struct { members, span } => (
            *span,
            members
                .iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                .collect(),
        ),
        other => panic!("{name} is {other:?}"),
    }
}

/// Testing: asserts that struct `name` of `wgsl` has `size` bytes (`None`: ends in a runtime
/// array, so only the members are compared) and the `members` at the given byte offsets, in
/// order.
#[cfg(test)]
pub(crate) fn assert_struct_layout(
    wgsl: &str,
    name: &str,
    size: Option<usize>,
    members: &[(&str, usize)],
) {
    let (span, got) = struct_layout(wgsl, name);
    if let Some(size) = size {
        assert_eq!(span as usize, size, "size of {name}");
    }
    let got: Vec<(&str, usize)> = got.iter().map(|(n, o)| (n.as_str(), *o as usize)).collect();
    assert_eq!(got, members, "members of {name}");
}

/// Testing: `[(field name, byte offset)]` of the listed fields of a `#[repr(C)]` struct, for
/// [`assert_struct_layout`].
#[cfg(test)]
macro_rules! field_offsets {
    ($t:ty; $($f:ident),* $(,)?) => {
        vec![$((stringify!($f), std::mem::offset_of!($t, $f))),*]
    };
}
#[cfg(test)]
pub(crate) use field_offsets;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_repeat_with_the_index_substituted() {
        let src = "a\n#unroll K in 1..N\nlet in_K = x_K + K * WORK;\n#unroll J in 0..2\nb_K_J;\n#end_unroll\n#end_unroll\nz\n";
        let out = repeat(src, &[("N", 3)]);
        assert_eq!(
            out,
            "a\nlet in_1 = x_1 + 1 * WORK;\nb_1_0;\nb_1_1;\nlet in_2 = x_2 + 2 * WORK;\nb_2_0;\nb_2_1;\nz\n"
        );
        // Malformed blocks stay visible.
        assert!(repeat("#unroll K in 0..M\nx\n#end_unroll\n", &[]).contains("#unroll K"));
    }

    /// Every WGSL file of the crate can be named.
    #[test]
    fn the_registry_holds_every_wgsl_file() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut missing = Vec::new();
        for dir in std::fs::read_dir(&src).unwrap() {
            let dir = dir.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&dir).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "wgsl") {
                    let name = path
                        .strip_prefix(&src)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    if registry_file(&name).is_none() {
                        missing.push(name);
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not in the registry: {missing:?}");
    }

    #[test]
    fn files_include_once_with_a_header() {
        let s = ShaderSource::new("mask/mask.wgsl")
            .comment("test")
            .u32("INPUTS_END", 4)
            .build();
        assert!(
            s.starts_with("// test\nconst INPUTS_END: u32 = 4u;\n\n"),
            "{s}"
        );
        assert_eq!(s.matches("fn linear_workgroup").count(), 1);
        assert!(!s.contains("#include"));
        let mut out = String::new();
        include("#include \"nope.wgsl\"\n", &mut Vec::new(), &mut out);
        assert_eq!(out, "#include \"nope.wgsl\"\n");
    }
}
