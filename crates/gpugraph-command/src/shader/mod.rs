//! The one shader assembly path of the workspace: a [`ShaderSource`] names WGSL files of
//! static [`ShaderRegistry`]s (or holds WGSL text) and turns them, with a constant header
//! generated from a policy, into the text handed to the device.
//!
//! Directives, resolved in this order:
//! 1. `#include "dir/name.wgsl"`: the file of the first registry holding it (the recipe's
//!    registries in order, then [`SHARED`]), once per assembled shader (a second include of the
//!    same file is dropped), nestable;
//! 2. `#ifdef NAME` / `#ifndef NAME` / `#else` / `#endif` against [`ShaderSource::define`]s;
//! 3. `#unroll K in A..B` … `#end_unroll`: the lines between, once per `k` in `A..B` with
//!    every standalone `K` (not part of a longer alphanumeric word; `_` separates, so `in_K`
//!    becomes `in_2`) replaced by `k`. `A` and `B` are literals or header constants. This is
//!    how per-input bindings and straight-line per-slot loads are written (private arrays
//!    indexed in a loop may be placed in slow local memory by some compilers);
//! 4. `#unroll` before a `for (var x = 0u; x < N; x += 1u) {` loop: N blocks `{ let x = k; … }`
//!    (see `preprocess::unroll` for why), unless the recipe turned loop unrolling off.
//!
//! A malformed directive (unknown include, unknown bound, unterminated block) is left in the
//! text, where it fails WGSL parsing: the naga tests of every kernel catch it without a device.
//! Bindings and parameter structs of the assembled text are read back by [`reflect`].

mod directives;
mod preprocess;
pub mod reflect;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use directives::{include, repeat};
use preprocess::{preprocess, unroll};

/// Recipes whose assembled text [`ShaderSource::build`] keeps before it starts over.
const MEMO_CAPACITY: usize = 4096;

/// Named WGSL files, by path (`"scan/scan.wgsl"`), that recipes may name or `#include`. Each
/// crate with kernels keeps one, built with `include_str!` so the text is in the binary.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ShaderRegistry {
    /// The owner, for messages ("gpugraph-gpgpu").
    pub name: &'static str,
    files: &'static [(&'static str, &'static str)],
}

impl ShaderRegistry {
    /// A registry `name` of `(path, text)` files.
    pub const fn new(name: &'static str, files: &'static [(&'static str, &'static str)]) -> Self {
        Self { name, files }
    }

    /// The text of `path`, if the registry holds it.
    pub fn file(&self, path: &str) -> Option<&'static str> {
        self.entry(path).map(|(_, text)| text)
    }

    /// Every path the registry holds, in registration order.
    pub fn paths(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.files.iter().map(|(n, _)| *n)
    }

    fn entry(&self, path: &str) -> Option<(&'static str, &'static str)> {
        self.files.iter().find(|(n, _)| *n == path).copied()
    }
}

/// `shared/dispatch.wgsl`: `linear_workgroup(wid, nwg)`, the linear workgroup index of a grid
/// split over x and y ([`crate::Grid::Rows`], [`crate::grid_for`]).
pub const DISPATCH_WGSL: &str = include_str!("../shared/dispatch.wgsl");

/// The files every recipe can include, whatever its own registries: the helpers that belong
/// to dispatching itself (`shared/dispatch.wgsl`).
pub static SHARED: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-command",
    &[("shared/dispatch.wgsl", DISPATCH_WGSL)],
);

/// What a recipe assembles, in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Part {
    /// A registry file, by path.
    File(&'static str),
    /// WGSL text held by the recipe.
    Text(String),
}

/// One shader's recipe: WGSL text or registry files in order, a generated constant header, the
/// `#ifdef` names and whether counted loops are unrolled, under a short key for labels and
/// errors. [`ShaderSource::build`] gives the WGSL; equal recipes give equal text, so the device
/// cache compiles them once (it keys by the full text, not by the key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShaderSource {
    key: String,
    parts: Vec<Part>,
    registries: Vec<&'static ShaderRegistry>,
    header: Vec<String>,
    constants: Vec<(String, u32)>,
    defines: Vec<String>,
    unroll_loops: bool,
}

impl ShaderSource {
    /// The WGSL text `wgsl` under key `key` ("render/visibility/cull"). Its directives, if any,
    /// resolve like a registry file's; `#include` reaches [`SHARED`] and
    /// [`ShaderSource::registry`]s added later.
    pub fn new(key: impl Into<String>, wgsl: impl Into<String>) -> Self {
        Self::with_part(key.into(), Part::Text(wgsl.into()), Vec::new())
    }

    /// The file `path` of `registry` (e.g. `"reduce/reduce.wgsl"`), keyed by its path without
    /// the `.wgsl` extension, with loop unrolling on. A path the registry lacks is left as an
    /// `#include` line, which fails WGSL parsing by name.
    pub fn from_registry(registry: &'static ShaderRegistry, path: &'static str) -> Self {
        let key = path.strip_suffix(".wgsl").unwrap_or(path).to_string();
        Self::with_part(key, Part::File(path), vec![registry])
    }

    fn with_part(key: String, part: Part, registries: Vec<&'static ShaderRegistry>) -> Self {
        Self {
            key,
            parts: vec![part],
            registries,
            header: Vec::new(),
            constants: Vec::new(),
            defines: Vec::new(),
            unroll_loops: true,
        }
    }

    /// The short name for labels and errors.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The same recipe under key `key`.
    pub fn keyed(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }

    /// Also resolves names from `registry` (after the ones added before, before [`SHARED`]).
    pub fn registry(mut self, registry: &'static ShaderRegistry) -> Self {
        if !self.registries.contains(&registry) {
            self.registries.push(registry);
        }
        self
    }

    /// Appends the registry file `path` after the parts named so far.
    pub fn file(mut self, path: &'static str) -> Self {
        self.parts.push(Part::File(path));
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
    pub fn define(mut self, name: impl Into<String>) -> Self {
        self.defines.push(name.into());
        self
    }

    /// Defines `name` when `on`.
    pub fn define_if(self, on: bool, name: impl Into<String>) -> Self {
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

    /// The assembled WGSL: header lines, a blank line, then each part with its directives
    /// resolved. Memoized per process by recipe: a graph compiled again (a query's aggregate
    /// every run, a streamed scan's every submission) assembles nothing (a 19 KB aggregate
    /// shader took 122 µs to assemble on the lavapipe host, more than the rest of its graph's
    /// compile).
    pub fn build(&self) -> String {
        type Memo = Mutex<HashMap<ShaderSource, Arc<str>>>;
        static MEMO: OnceLock<Memo> = OnceLock::new();
        let memo = MEMO.get_or_init(Default::default);
        if let Some(text) = memo.lock().ok().and_then(|m| m.get(self).cloned()) {
            return text.to_string();
        }
        // Assembled outside the lock: two threads assembling one recipe get equal texts.
        let text = self.assemble();
        if let Ok(mut m) = memo.lock() {
            // Bounded: a process that builds ever new recipes (generated shaders) starts over.
            if m.len() >= MEMO_CAPACITY {
                m.clear();
            }
            m.insert(self.clone(), Arc::from(text.as_str()));
        }
        text
    }

    /// [`ShaderSource::build`] without the memo.
    fn assemble(&self) -> String {
        let mut registries = self.registries.clone();
        registries.push(&SHARED);
        let mut text = String::new();
        let mut included = Vec::new();
        for part in &self.parts {
            match part {
                Part::File(path) => include(
                    &format!("#include \"{path}\""),
                    &registries,
                    &mut included,
                    &mut text,
                ),
                Part::Text(wgsl) => include(wgsl, &registries, &mut included, &mut text),
            }
        }
        let defines: Vec<&str> = self.defines.iter().map(String::as_str).collect();
        let specialized = preprocess(&text, &defines);
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

#[cfg(test)]
mod tests {
    use super::*;

    static TEST: ShaderRegistry = ShaderRegistry::new(
        "test",
        &[
            (
                "a.wgsl",
                "#include \"shared/dispatch.wgsl\"\n#include \"b.wgsl\"\nfn a() {}\n",
            ),
            ("b.wgsl", "#include \"shared/dispatch.wgsl\"\nfn b() {}\n"),
        ],
    );

    #[test]
    fn files_include_once_with_a_header() {
        let s = ShaderSource::from_registry(&TEST, "a.wgsl")
            .comment("test")
            .u32("INPUTS_END", 4)
            .build();
        assert!(
            s.starts_with("// test\nconst INPUTS_END: u32 = 4u;\n\n"),
            "{s}"
        );
        assert_eq!(s.matches("fn linear_workgroup").count(), 1);
        assert_eq!(s.matches("fn b()").count(), 1);
        assert!(!s.contains("#include"));
        assert_eq!(ShaderSource::from_registry(&TEST, "a.wgsl").key(), "a");
    }

    #[test]
    fn a_recipe_built_again_gives_the_same_text() {
        let recipe = ShaderSource::from_registry(&TEST, "a.wgsl").u32("N", 3);
        assert_eq!(recipe.build(), recipe.assemble());
        assert_eq!(recipe.build(), recipe.assemble(), "from the memo");
        let other = recipe.clone().u32("M", 1);
        assert_ne!(other.build(), recipe.build());
        assert!(other.build().contains("const M: u32 = 1u;"));
    }

    #[test]
    fn text_sources_reach_the_shared_registry_and_defines() {
        let s = ShaderSource::new(
            "t",
            "#include \"shared/dispatch.wgsl\"\n#ifdef X\nfn x() {}\n#else\nfn y() {}\n#endif\n",
        )
        .define("X")
        .build();
        assert!(s.contains("fn linear_workgroup") && s.contains("fn x()") && !s.contains("fn y()"));
        let plain = "fn main() {}\n";
        assert_eq!(ShaderSource::new("p", plain).build(), plain);
    }
}
