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
//! Integer semantics are spelled out rather than left to WGSL conversions, whose NaN and
//! out-of-range behavior is not portable: float→integer casts test the float's bits for NaN
//! and range before converting, integer→float casts round to nearest even explicitly, and
//! float equality / truthiness are bit tests (a compiler may assume no NaN or infinity in
//! float comparisons). The result matches the CPU oracle in `eval.rs` exactly for every
//! integer path.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::expr::ast::Expr;
use crate::expr::policy::{ROWS_PER_THREAD, WORKGROUP_SIZE};
use crate::expr::types::{Declarations, IntegerRounding, Node, ScalarType, TypedExpr, ValueType};

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
    /// Whether `params` carries the all-ones fence word after the scalar offsets (fused
    /// shaders whose stages read earlier results).
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
        fence: stages
            .iter()
            .any(|s| s.inputs.iter().any(|i| matches!(i, StageInput::Stage(_)))),
    };
    let position = |list: &[usize], x: usize| list.iter().position(|&y| y == x).unwrap_or(0);

    let mut src = String::new();
    for st in stages {
        // Escaped: declared names are arbitrary strings and must not end the comment line.
        let shown = st.ast.to_string().escape_default().to_string();
        let _ = writeln!(src, "// Generated by gpugraph-program for: {shown}");
        let _ = writeln!(src, "// Result: {} per row.", st.typed.ty);
    }
    src.push_str(kernel_dispatch_wgsl());
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
    for (k, &i) in layout.inputs.iter().enumerate() {
        let ty = shader.inputs[i].1;
        let p = layout.input_param(k);
        if ty.width == 1 {
            let _ = writeln!(body, "    let v{k} = in{k}[params[{p}] + i];");
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
            let _ = writeln!(body, "    let v{k} = {}({});", ty.wgsl(), comps.join(", "));
        }
    }
    let mut helpers = BTreeSet::new();
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
        helpers.extend(g.helpers);
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
        if layout.fence {
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
    for h in &helpers {
        src.push_str(helper_source(h));
        src.push('\n');
    }
    let mut scalar_params: Vec<String> = layout
        .scalars
        .iter()
        .enumerate()
        .map(|(j, &i)| format!(", s{j}: {}", shader.scalars[i].1.wgsl()))
        .collect();
    if layout.fence {
        scalar_params.push(", fence: u32".into());
    }
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
    for (j, _) in layout.scalars.iter().enumerate() {
        let _ = writeln!(
            src,
            "    let s{j} = sc{j}[params[{}]];",
            layout.scalar_param(j)
        );
        let _ = write!(args, ", s{j}");
    }
    if layout.fence {
        let _ = writeln!(src, "    let fence = params[{}];", layout.fence_param());
        args.push_str(", fence");
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
    (src, layout)
}

/// The shared `linear_workgroup` helper of the gpgpu kernels (2-D grids past 65,535).
fn kernel_dispatch_wgsl() -> &'static str {
    gpugraph_gpgpu::kernel::SHARED_DISPATCH_WGSL
}

struct Gen {
    /// WGSL value of each declared input / scalar of the stage being emitted.
    input_names: Vec<String>,
    scalar_names: Vec<String>,
    body: String,
    next: usize,
    helpers: BTreeSet<&'static str>,
}

const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// A float32 literal that WGSL reads back to the same bits: small integers verbatim, anything
/// else as a bit pattern (no decimal double-rounding).
fn f32_literal(v: f32) -> String {
    if v == v.trunc() && v.abs() < 16_777_216.0 && !(v == 0.0 && v.is_sign_negative()) {
        format!("{}f", v as i32)
    } else {
        format!("bitcast<f32>(0x{:08x}u)", v.to_bits())
    }
}

impl Gen {
    fn bind(&mut self, ty: ValueType, value: String) -> String {
        let name = format!("t{}", self.next);
        self.next += 1;
        let _ = writeln!(self.body, "    let {name}: {} = {value};", ty.wgsl());
        name
    }

    /// `v` widened to `width` when it has one component.
    fn widen(&self, v: &str, from: ValueType, width: u8) -> String {
        if from.width == 1 && width > 1 {
            format!("vec{width}<{}>({v})", from.scalar.wgsl())
        } else {
            v.to_string()
        }
    }

    /// Applies a scalar helper to every component.
    fn per_component(
        &mut self,
        helper: &'static str,
        v: &str,
        from: ValueType,
        to: ValueType,
    ) -> String {
        self.helpers.insert(helper);
        if helper == "cast_i32_f32" {
            self.helpers.insert("cast_u32_f32");
        }
        if from.width == 1 {
            format!("{helper}({v})")
        } else {
            let parts: Vec<String> = (0..from.width as usize)
                .map(|c| format!("{helper}({v}.{})", LANES[c]))
                .collect();
            format!("{}({})", to.wgsl(), parts.join(", "))
        }
    }

    fn emit(&mut self, e: &TypedExpr) -> String {
        let ty = e.ty;
        let value = match &e.node {
            Node::Input(i) => return self.input_names[*i].clone(),
            Node::Scalar(i) => return self.scalar_names[*i].clone(),
            Node::Literal(v) => f32_literal(*v),
            Node::Neg(a) => format!("-{}", self.emit(a)),
            Node::Arith(op, a, b) => {
                let (a, b) = (self.emit(a), self.emit(b));
                format!("{a} {} {b}", op.symbol())
            }
            Node::Math(f, a) => format!("{}({})", f.name(), self.emit(a)),
            Node::Pow(a, b) => {
                let (ta, tb) = (a.ty, b.ty);
                let (a, b) = (self.emit(a), self.emit(b));
                format!(
                    "pow({}, {})",
                    self.widen(&a, ta, ty.width),
                    self.widen(&b, tb, ty.width)
                )
            }
            Node::Cast { to, rounding, arg } => {
                let from = arg.ty;
                let a = self.emit(arg);
                match cast_helper(from.scalar, *to, *rounding) {
                    None => return a,
                    Some(h) => self.per_component(h, &a, from, ty),
                }
            }
            Node::Swizzle(a, lanes) => {
                let from = a.ty;
                let a = self.emit(a);
                if from.width == 1 {
                    // Only `.x`, `.xx`, ... fit a one-component value, which WGSL holds as a
                    // scalar (no swizzles).
                    if ty.width == 1 {
                        return a;
                    }
                    self.widen(&a, from, ty.width)
                } else {
                    let s: String = lanes.iter().map(|&l| LANES[l as usize]).collect();
                    format!("{a}.{s}")
                }
            }
            Node::Splat(a) => {
                let from = a.ty;
                let a = self.emit(a);
                self.widen(&a, from, ty.width)
            }
            Node::Concat(parts) => {
                if parts.len() == 1 {
                    return self.emit(&parts[0]);
                }
                let vals: Vec<String> = parts.iter().map(|p| self.emit(p)).collect();
                format!("{}({})", ty.wgsl(), vals.join(", "))
            }
            Node::Dot(a, b) => {
                let w = a.ty.width;
                let (a, b) = (self.emit(a), self.emit(b));
                if w == 1 {
                    format!("{a} * {b}")
                } else {
                    format!("dot({a}, {b})")
                }
            }
            Node::Length(a) => {
                let w = a.ty.width;
                let a = self.emit(a);
                if w == 1 {
                    format!("abs({a})")
                } else {
                    format!("length({a})")
                }
            }
            Node::EqualAll(a, b) => {
                let at = a.ty;
                let (a, b) = (self.emit(a), self.emit(b));
                let cond = if at.scalar == ScalarType::Float32 {
                    self.helpers.insert("eq_f32");
                    if at.width == 1 {
                        format!("eq_f32({a}, {b})")
                    } else {
                        (0..at.width as usize)
                            .map(|c| format!("eq_f32({a}.{l}, {b}.{l})", l = LANES[c]))
                            .collect::<Vec<_>>()
                            .join(" && ")
                    }
                } else if at.width == 1 {
                    format!("{a} == {b}")
                } else {
                    format!("all({a} == {b})")
                };
                format!("select(0u, 1u, {cond})")
            }
            Node::Select {
                cond,
                when_true,
                when_false,
            } => {
                let ct = cond.ty;
                let (tt, ft) = (when_true.ty, when_false.ty);
                let c = self.emit(cond);
                let t = self.emit(when_true);
                let f = self.emit(when_false);
                let test = truthy(&c, ct);
                format!(
                    "select({}, {}, {test})",
                    self.widen(&f, ft, ty.width),
                    self.widen(&t, tt, ty.width)
                )
            }
        };
        self.bind(ty, value)
    }
}

/// WGSL `bool` / `vecN<bool>`: components that are not zero (floats: not ±0, by bits).
fn truthy(c: &str, ty: ValueType) -> String {
    match (ty.scalar, ty.width) {
        (ScalarType::Float32, 1) => format!("(bitcast<u32>({c}) & 0x7fffffffu) != 0u"),
        (ScalarType::Float32, w) => {
            format!("(bitcast<vec{w}<u32>>({c}) & vec{w}<u32>(0x7fffffffu)) != vec{w}<u32>()")
        }
        (_, 1) => format!("{c} != {}()", ty.scalar.wgsl()),
        (_, w) => format!("{c} != vec{w}<{}>()", ty.scalar.wgsl()),
    }
}

fn cast_helper(
    from: ScalarType,
    to: ScalarType,
    rounding: IntegerRounding,
) -> Option<&'static str> {
    use IntegerRounding::*;
    use ScalarType::*;
    Some(match (from, to, rounding) {
        (a, b, _) if a == b => return None,
        (Float32, Sint32, Truncate) => "cast_f32_i32_trunc",
        (Float32, Sint32, Nearest) => "cast_f32_i32_nearest",
        (Float32, Uint32, Truncate) => "cast_f32_u32_trunc",
        (Float32, Uint32, Nearest) => "cast_f32_u32_nearest",
        (Sint32, Float32, _) => "cast_i32_f32",
        (Uint32, Float32, _) => "cast_u32_f32",
        (Sint32, Uint32, _) => "cast_i32_u32",
        (Uint32, Sint32, _) => "cast_u32_i32",
        _ => unreachable!("equal types handled first"),
    })
}

/// Helper function sources (`cast_i32_f32` calls `cast_u32_f32`, which `per_component` adds).
fn helper_source(name: &str) -> &'static str {
    match name {
        "cast_f32_i32_trunc" => CAST_F32_I32_TRUNC,
        "cast_f32_i32_nearest" => CAST_F32_I32_NEAREST,
        "cast_f32_u32_trunc" => CAST_F32_U32_TRUNC,
        "cast_f32_u32_nearest" => CAST_F32_U32_NEAREST,
        "cast_i32_f32" => CAST_I32_F32,
        "cast_u32_f32" => CAST_U32_F32,
        "cast_i32_u32" => CAST_I32_U32,
        "cast_u32_i32" => CAST_U32_I32,
        "eq_f32" => EQ_F32,
        _ => "",
    }
}

// Float→integer: NaN and range are decided on the bits before any float operation, because
// WGSL lets implementations assume floats are finite. 0x4f000000 = 2^31, 0x4f800000 = 2^32.
const CAST_F32_I32_TRUNC: &str = "// float32 -> sint32: truncate, saturate, NaN -> 0.
fn cast_f32_i32_trunc(v: f32) -> i32 {
    let bits = bitcast<u32>(v);
    let mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) { return 0i; }
    if (mag >= 0x4f000000u) { return select(2147483647i, bitcast<i32>(0x80000000u), bits >= 0x80000000u); }
    return i32(v);
}
";

// `trunc(v) + sign(v)` when the dropped fraction is at least one half: exact (the fraction of a
// float32 is representable), unlike `v + 0.5`, which rounds 0.49999997 up.
const CAST_F32_I32_NEAREST: &str = "// float32 -> sint32: nearest (ties away from zero), saturate, NaN -> 0.
fn cast_f32_i32_nearest(v: f32) -> i32 {
    let bits = bitcast<u32>(v);
    let mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) { return 0i; }
    if (mag >= 0x4f000000u) { return select(2147483647i, bitcast<i32>(0x80000000u), bits >= 0x80000000u); }
    let t = trunc(v);
    return i32(select(t, t + sign(v), abs(v - t) >= 0.5f));
}
";

const CAST_F32_U32_TRUNC: &str =
    "// float32 -> uint32: truncate, saturate (negatives -> 0), NaN -> 0.
fn cast_f32_u32_trunc(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7fffffffu) > 0x7f800000u || bits >= 0x80000000u) { return 0u; }
    if (bits >= 0x4f800000u) { return 4294967295u; }
    return u32(v);
}
";

const CAST_F32_U32_NEAREST: &str =
    "// float32 -> uint32: nearest (ties away from zero), saturate, NaN -> 0.
fn cast_f32_u32_nearest(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7fffffffu) > 0x7f800000u || bits >= 0x80000000u) { return 0u; }
    if (bits >= 0x4f800000u) { return 4294967295u; }
    let t = trunc(v);
    return u32(select(t, t + 1.0f, v - t >= 0.5f));
}
";

// Integer→float: WGSL leaves the rounding of inexact conversions to the implementation; this
// rounds to nearest even like the CPU. Above 2^24, keep the top 24 bits, round on the rest,
// then scale by an exact power of two.
const CAST_U32_F32: &str = "// uint32 -> float32: round to nearest even.
fn cast_u32_f32(x: u32) -> f32 {
    if (x < 0x1000000u) { return f32(x); }
    let shift = 8u - countLeadingZeros(x);
    var m = x >> shift;
    let rest = x & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (m & 1u) == 1u)) { m = m + 1u; }
    return f32(m) * bitcast<f32>((127u + shift) << 23u);
}
";

const CAST_I32_F32: &str =
    "// sint32 -> float32: round to nearest even (magnitude via cast_u32_f32).
fn cast_i32_f32(x: i32) -> f32 {
    let negative = x < 0i;
    let r = cast_u32_f32(select(bitcast<u32>(x), 0u - bitcast<u32>(x), negative));
    return select(r, -r, negative);
}
";

const CAST_I32_U32: &str = "// sint32 -> uint32: saturate (negatives -> 0).
fn cast_i32_u32(x: i32) -> u32 {
    return bitcast<u32>(max(x, 0i));
}
";

const CAST_U32_I32: &str = "// uint32 -> sint32: saturate at 2^31 - 1.
fn cast_u32_i32(x: u32) -> i32 {
    return bitcast<i32>(min(x, 2147483647u));
}
";

const EQ_F32: &str = "// Exact float32 equality by bits: -0 == 0, NaN equals nothing.
fn eq_f32(a: f32, b: f32) -> bool {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    let nan = (ua & 0x7fffffffu) > 0x7f800000u;
    return (ua == ub && !nan) || ((ua | ub) & 0x7fffffffu) == 0u;
}
";
