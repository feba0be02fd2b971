//! WGSL code generation: one compute entry point evaluating a [`TypedExpr`] per row over
//! packed storage, or several in sequence ([`Stage`]s of a fused shader, where later stages
//! read earlier results from registers instead of memory).
//!
//! Bindings (group 0): 0 = `params: array<u32>`, then one `out{o}: array<T>` (read-write) per
//! stored result, then one `array<T>` per referenced vector input, then one per referenced
//! scalar. Rows are packed scalars: a float32x3 row is three consecutive `f32` (12 bytes, no
//! vec3 padding), so every binding is a plain scalar array and row `i` of a width-`w` view
//! starts at component `offset + i * w`. The row count and the component offsets of every
//! binding live in `params` (`[0]` rows, then outputs, then inputs, then scalars; see
//! [`ShaderLayout`]), so one pipeline serves every length, chunk and aligned binding.
//!
//! Numeric semantics are spelled out rather than left to WGSL, which lets a compiler assume
//! floats are finite (Mesa folded `a / 0`, `a * 0` and `a - a` to 0) and contract or
//! reassociate: every float operand passes through an opaque identity and every literal is
//! XORed with a run-time zero (`helpers.rs`), so each operation is evaluated as written;
//! float values are flushed to signed zero when subnormal; division, sqrt, the
//! transcendental functions and pow decide special cases on the bits; float→integer casts
//! test NaN and range on the bits, integer→float casts round to nearest even explicitly;
//! float equality, comparisons and truthiness are bit tests. The result matches the CPU
//! oracle in `eval.rs` bit for bit except where WGSL leaves finite results of division,
//! sqrt and the transcendental functions to the device's accuracy.

use std::collections::BTreeSet;
use std::fmt::Write;

use gpugraph_command::ShaderSource;

use crate::expr::ast::Expr;
use crate::expr::helpers;
use crate::expr::policy::{ROWS_PER_THREAD, WORKGROUP_SIZE};
use crate::expr::types::{Declarations, ScalarType, TypedExpr};

mod emit;
use emit::{Gen, LANES};

/// Name of the generated compute entry point.
pub const ENTRY_POINT: &str = "evaluate_expression";

/// Which declarations the shader binds and where their parameters sit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderLayout {
    /// Stored results, bound in order from binding 1.
    pub outputs: usize,
    /// Declared vector inputs read by the shader (declaration indices), bound in order after
    /// the outputs.
    pub inputs: Vec<usize>,
    /// Declared scalars read by the shader (declaration indices), bound after the inputs.
    pub scalars: Vec<usize>,
    /// Whether `params` carries the all-ones fence word after the scalar offsets. Always
    /// true: literals and every float operand are masked with it (see `helpers.rs`).
    pub fence: bool,
}

impl ShaderLayout {
    /// Binding of the `o`-th stored result.
    pub fn output_binding(&self, o: usize) -> u32 {
        1 + o as u32
    }
    /// Binding of the `k`-th bound input.
    pub fn input_binding(&self, k: usize) -> u32 {
        1 + (self.outputs + k) as u32
    }
    /// Binding of the `j`-th bound scalar.
    pub fn scalar_binding(&self, j: usize) -> u32 {
        1 + (self.outputs + self.inputs.len() + j) as u32
    }
    /// Total bindings (params, outputs, inputs, scalars).
    pub fn binding_count(&self) -> usize {
        1 + self.outputs + self.inputs.len() + self.scalars.len()
    }
    /// `params` index of the `o`-th stored result's component offset.
    pub fn output_param(&self, o: usize) -> usize {
        1 + o
    }
    /// `params` index of the `k`-th bound input's component offset.
    pub fn input_param(&self, k: usize) -> usize {
        1 + self.outputs + k
    }
    /// `params` index of the `j`-th bound scalar's component offset.
    pub fn scalar_param(&self, j: usize) -> usize {
        1 + self.outputs + self.inputs.len() + j
    }
    /// `params` index of the fence word (0xffffffff at run time), when [`Self::fence`].
    pub fn fence_param(&self) -> usize {
        1 + self.outputs + self.inputs.len() + self.scalars.len()
    }
    /// Number of `params` words the shader reads (host scalar values follow them).
    pub fn params_len(&self) -> usize {
        self.fence_param() + usize::from(self.fence)
    }
}

/// Where a stage's declared vector input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageInput {
    /// The shader's vector input at this declaration index (loaded from memory).
    External(usize),
    /// The result of the earlier stage at this index (already in registers).
    Stage(usize),
}

/// One expression of a (possibly fused) shader.
#[derive(Clone, Copy, Debug)]
pub struct Stage<'a> {
    /// The checked expression, against `decls`.
    pub typed: &'a TypedExpr,
    /// The declarations it was checked against.
    pub decls: &'a Declarations,
    /// Per input of `decls`: where its value comes from.
    pub inputs: &'a [StageInput],
    /// Per scalar of `decls`: the shader's scalar declaration index.
    pub scalars: &'a [usize],
    /// Whether the result is written to memory (else only later stages read it).
    pub stored: bool,
    /// Its source, echoed in a comment.
    pub ast: &'a Expr,
}

/// The shader source and its layout for `expr` (`ast` is echoed in a comment).
pub fn generate(expr: &TypedExpr, decls: &Declarations, ast: &Expr) -> (String, ShaderLayout) {
    let inputs: Vec<StageInput> = (0..decls.inputs.len()).map(StageInput::External).collect();
    let scalars: Vec<usize> = (0..decls.scalars.len()).collect();
    let stage = Stage {
        typed: expr,
        decls,
        inputs: &inputs,
        scalars: &scalars,
        stored: true,
        ast,
    };
    generate_stages(&[stage], decls)
}

/// One shader evaluating `stages` in order for every row. `shader` declares the shader's own
/// vector inputs (the stages' `External` indices) and scalars. Stages may only read results
/// of earlier stages.
pub fn generate_stages(stages: &[Stage<'_>], shader: &Declarations) -> (String, ShaderLayout) {
    let mut referenced_inputs = BTreeSet::new();
    let mut referenced_scalars = BTreeSet::new();
    for st in stages {
        for i in st.typed.referenced_inputs() {
            if let StageInput::External(k) = st.inputs[i] {
                referenced_inputs.insert(k);
            }
        }
        for j in st.typed.referenced_scalars() {
            referenced_scalars.insert(st.scalars[j]);
        }
    }
    let layout = ShaderLayout {
        outputs: stages.iter().filter(|s| s.stored).count(),
        inputs: referenced_inputs.into_iter().collect(),
        scalars: referenced_scalars.into_iter().collect(),
        fence: true,
    };
    let position = |list: &[usize], x: usize| list.iter().position(|&y| y == x).unwrap_or(0);

    let mut src = String::new();
    for st in stages {
        // Escaped: declared names are arbitrary strings and must not end the comment line.
        let shown = st.ast.to_string().escape_default().to_string();
        let _ = writeln!(src, "// Generated by gpugraph-program for: {shown}");
        let _ = writeln!(src, "// Result: {} per row.", st.typed.ty);
    }
    // `linear_workgroup` (2-D grids past 65,535), resolved by the one assembly path below.
    src.push_str("#include \"shared/dispatch.wgsl\"\n");
    src.push_str("@group(0) @binding(0) var<storage, read> params: array<u32>;\n");
    for (o, st) in stages.iter().filter(|s| s.stored).enumerate() {
        let _ = writeln!(
            src,
            "@group(0) @binding({}) var<storage, read_write> out{o}: array<{}>;",
            layout.output_binding(o),
            st.typed.ty.scalar.wgsl()
        );
    }
    for (k, &i) in layout.inputs.iter().enumerate() {
        let ty = shader.inputs[i].1;
        let _ = writeln!(
            src,
            "@group(0) @binding({}) var<storage, read> in{k}: array<{}>; // {} ({ty})",
            layout.input_binding(k),
            ty.scalar.wgsl(),
            shader.inputs[i].0.escape_default()
        );
    }
    for (j, &i) in layout.scalars.iter().enumerate() {
        let t = shader.scalars[i].1;
        let _ = writeln!(
            src,
            "@group(0) @binding({}) var<storage, read> sc{j}: array<{}>; // {} ({t})",
            layout.scalar_binding(j),
            t.wgsl(),
            shader.scalars[i].0.escape_default()
        );
    }
    let _ = writeln!(src, "\nconst WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;");
    let _ = writeln!(src, "const ROWS_PER_THREAD: u32 = {ROWS_PER_THREAD}u;\n");

    // The row function: loads, each stage as SSA lets, the stores.
    let mut body = String::new();
    let mut all_helpers: BTreeSet<String> = BTreeSet::new();
    for (k, &i) in layout.inputs.iter().enumerate() {
        let ty = shader.inputs[i].1;
        let p = layout.input_param(k);
        // Float loads are flushed (subnormals to signed zero) like every float value.
        let load = |v: String| match ty.scalar {
            ScalarType::Float32 => format!("ftz_{}({v})", helpers::suffix(ty.width)),
            _ => v,
        };
        if ty.scalar == ScalarType::Float32 {
            all_helpers.insert(format!("ftz_{}", helpers::suffix(ty.width)));
        }
        if ty.width == 1 {
            let _ = writeln!(
                body,
                "    let v{k} = {};",
                load(format!("in{k}[params[{p}] + i]"))
            );
        } else {
            let w = ty.width;
            let _ = writeln!(body, "    let b{k} = params[{p}] + i * {w}u;");
            let comps: Vec<String> = (0..w)
                .map(|c| {
                    if c == 0 {
                        format!("in{k}[b{k}]")
                    } else {
                        format!("in{k}[b{k} + {c}u]")
                    }
                })
                .collect();
            let value = load(format!("{}({})", ty.wgsl(), comps.join(", ")));
            let _ = writeln!(body, "    let v{k} = {value};");
        }
    }
    let mut next = 0;
    let mut results: Vec<String> = Vec::new();
    let mut stored = 0;
    for st in stages {
        let input_names = st
            .inputs
            .iter()
            .map(|s| match *s {
                StageInput::External(i) => format!("v{}", position(&layout.inputs, i)),
                StageInput::Stage(j) => results[j].clone(),
            })
            .collect();
        let scalar_names = st
            .scalars
            .iter()
            .map(|&i| format!("s{}", position(&layout.scalars, i)))
            .collect();
        let mut g = Gen {
            input_names,
            scalar_names,
            body: String::new(),
            next,
            helpers: BTreeSet::new(),
        };
        let result = g.emit(st.typed);
        next = g.next;
        all_helpers.extend(g.helpers);
        body.push_str(&g.body);
        if st.stored {
            let o = stored;
            stored += 1;
            let p = layout.output_param(o);
            let ty = st.typed.ty;
            if ty.width == 1 {
                let _ = writeln!(body, "    out{o}[params[{p}] + i] = {result};");
            } else {
                let w = ty.width;
                let _ = writeln!(body, "    let ob{o} = params[{p}] + i * {w}u;");
                for (c, lane) in LANES.iter().enumerate().take(w as usize) {
                    if c == 0 {
                        let _ = writeln!(body, "    out{o}[ob{o}] = {result}.{lane};");
                    } else {
                        let _ = writeln!(body, "    out{o}[ob{o} + {c}u] = {result}.{lane};");
                    }
                }
            }
        }
        // Later stages read the result through the fence: an AND with a mask the compiler
        // cannot see is all ones, so it cannot fuse, reassociate or contract arithmetic
        // across the stage boundary, and every stage rounds exactly as it does alone.
        // (Every float operation's operands are fenced too; this keeps the boundary explicit.)
        if stages.len() > 1 {
            let ty = st.typed.ty;
            let bits = if ty.width == 1 {
                "u32".to_string()
            } else {
                format!("vec{}<u32>", ty.width)
            };
            let mask = if ty.width == 1 {
                "fence".to_string()
            } else {
                format!("{bits}(fence)")
            };
            let fenced = format!("f{}", results.len());
            let value = match ty.scalar {
                ScalarType::Uint32 => format!("{result} & {mask}"),
                _ => format!("bitcast<{}>(bitcast<{bits}>({result}) & {mask})", ty.wgsl()),
            };
            let _ = writeln!(body, "    let {fenced} = {value};");
            results.push(fenced);
        } else {
            results.push(result);
        }
    }
    if layout
        .scalars
        .iter()
        .any(|&i| shader.scalars[i].1 == ScalarType::Float32)
    {
        all_helpers.insert("ftz_f32".into());
    }
    let mut pending: Vec<String> = all_helpers.iter().cloned().collect();
    while let Some(h) = pending.pop() {
        for d in helpers::helper_dependencies(&h) {
            if all_helpers.insert(d.to_string()) {
                pending.push(d.to_string());
            }
        }
    }
    // The run-time all-ones word every opaque identity and literal is masked with.
    src.push_str("var<private> fence: u32;\n\n");
    for h in &all_helpers {
        src.push_str(&helpers::helper_source(h));
        src.push('\n');
    }
    let scalar_params: Vec<String> = layout
        .scalars
        .iter()
        .enumerate()
        .map(|(j, &i)| format!(", s{j}: {}", shader.scalars[i].1.wgsl()))
        .collect();
    let _ = writeln!(src, "fn evaluate_row(i: u32{}) {{", scalar_params.concat());
    src.push_str(&body);
    src.push_str("}\n\n");

    let _ = writeln!(src, "@compute @workgroup_size(WORKGROUP_SIZE)");
    let _ = writeln!(
        src,
        "fn {ENTRY_POINT}(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) num_wg: vec3<u32>,\n        @builtin(local_invocation_index) lane: u32) {{"
    );
    src.push_str("    let count = params[0];\n");
    let mut args = String::new();
    let _ = writeln!(src, "    fence = params[{}];", layout.fence_param());
    for (j, &i) in layout.scalars.iter().enumerate() {
        let load = format!("sc{j}[params[{}]]", layout.scalar_param(j));
        let value = match shader.scalars[i].1 {
            ScalarType::Float32 => format!("ftz_f32({load})"),
            _ => load,
        };
        let _ = writeln!(src, "    let s{j} = {value};");
        let _ = write!(args, ", s{j}");
    }
    src.push_str(
        "    let base = linear_workgroup(wg, num_wg) * WORKGROUP_SIZE * ROWS_PER_THREAD + lane;\n",
    );
    src.push_str("    for (var r = 0u; r < ROWS_PER_THREAD; r++) {\n");
    src.push_str("        let i = base + r * WORKGROUP_SIZE;\n");
    let _ = writeln!(
        src,
        "        if (i < count) {{\n            evaluate_row(i{args});\n        }}"
    );
    src.push_str("    }\n}\n");
    (ShaderSource::new("expr", src).build(), layout)
}
