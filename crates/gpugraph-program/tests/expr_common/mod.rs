//! Support for the expression GPU tests: a runner that lays inputs and outputs out as chunked,
//! unaligned, poisoned views; a seeded generator of well-typed random expressions; and an
//! interval evaluator that bounds what a conformant GPU may return for each component, so
//! float results are checked against a sound tolerance instead of a guessed epsilon.
#![allow(dead_code)]

use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, GpuContext, VectorFormat,
    VectorView,
};
use gpugraph_program::expr::types::{IntegerRounding, MathFn, Node, TypedExpr};
use gpugraph_program::expr::{
    BinaryOp, CompiledExpression, ExpressionKernel, ScalarBinding, ScalarType, ScalarValue,
    ValueType,
};
use rand::Rng;

use gpugraph_testing::{read_buffer, rng, run, upload, POISON};

// ---------------------------------------------------------------- GPU runner

/// Words of poison before the first row of every input/output buffer (not row-aligned for
/// three-component rows, and not 256-aligned, so element offsets are exercised).
const LEAD: usize = 7;
const TAIL: usize = 5;

/// How scalars reach the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalars {
    /// Host values in the parameter buffer.
    Values,
    /// One-row views of GPU buffers.
    Views,
}

fn import(g: &mut CommandGraph, id: &str, buf: &wgpu::Buffer) -> gpugraph_command::BufferHandle {
    g.import_buffer(BufferDescriptor::new(id, buf.size(), buf.usage()), buf)
        .unwrap()
}

/// Views of consecutive chunks of `format` rows inside `buf`, starting `LEAD` words in.
fn chunk_views(
    g: &CommandGraph,
    h: gpugraph_command::BufferHandle,
    format: VectorFormat,
    lead: usize,
    chunks: &[usize],
) -> VectorView {
    let w = format.components() as usize;
    let mut start = 0;
    let mut views = Vec::new();
    for &len in chunks {
        let desc = DataViewDescriptor::packed(format, len as u64)
            .at_offset(((lead + start * w) * 4) as u64);
        views.push(g.create_data_view(h, desc).unwrap());
        start += len;
    }
    VectorView::from_chunks(views)
}

/// Runs `kernel` on the GPU over `inputs` (row-major bits per declared input) split into
/// `chunks`, and returns the output bits. Checks the poison around the output survived.
pub fn run_gpu(
    ctx: &GpuContext,
    kernel: &ExpressionKernel,
    inputs: &[Vec<u32>],
    scalars: &[ScalarValue],
    chunks: &[usize],
    scalar_mode: Scalars,
) -> Vec<u32> {
    let expr = kernel.expression().expect("a single-expression kernel");
    let decls = expr.declarations();
    let mut g = CommandGraph::new("expr-test", &ctx.device);
    let mut keep = Vec::new();
    let mut views = Vec::new();
    for (i, ((name, ty), data)) in decls.inputs.iter().zip(inputs).enumerate() {
        let lead = LEAD + i;
        let mut words = vec![POISON; lead];
        words.extend_from_slice(data);
        words.extend(std::iter::repeat_n(POISON, TAIL));
        let buf = upload(ctx, &words);
        let h = import(&mut g, &format!("in-{name}"), &buf);
        let rows = data.len() / ty.width as usize;
        let input_chunks: Vec<usize> = if expr.is_row_sized() {
            chunks.to_vec()
        } else {
            vec![rows]
        };
        views.push(chunk_views(&g, h, ty.format(), lead, &input_chunks));
        keep.push(buf);
    }
    let mut bindings = Vec::new();
    for (j, s) in scalars.iter().enumerate() {
        bindings.push(match scalar_mode {
            Scalars::Values => ScalarBinding::Value(*s),
            Scalars::Views => {
                let mut words = vec![POISON; 5 + j];
                words.push(s.bits());
                let buf = upload(ctx, &words);
                let h = import(&mut g, &format!("scalar-{j}"), &buf);
                let format = ValueType::new(s.scalar(), 1).format();
                let v = g
                    .create_data_view(
                        h,
                        DataViewDescriptor::packed(format, 1).at_offset(((5 + j) * 4) as u64),
                    )
                    .unwrap();
                keep.push(buf);
                ScalarBinding::View(v)
            }
        });
    }
    let out_ty = expr.output_type();
    let w = out_ty.width as usize;
    let rows: usize = chunks.iter().sum();
    let out_buf = upload(ctx, &vec![POISON; 3 + rows * w + TAIL]);
    let oh = import(&mut g, "out", &out_buf);
    let out = chunk_views(&g, oh, out_ty.format(), 3, chunks);
    kernel
        .add_to_graph(&mut g, &views, &bindings, &out)
        .unwrap();
    run(ctx, g);
    let all = read_buffer(ctx, &out_buf);
    assert_eq!(
        &all[..3],
        &[POISON; 3],
        "{}: words before the output",
        expr.id()
    );
    assert_eq!(
        &all[3 + rows * w..],
        &[POISON; TAIL],
        "{}: words after the output",
        expr.id()
    );
    all[3..3 + rows * w].to_vec()
}

/// A one-chunk helper view (for error tests).
pub fn packed_view(
    g: &mut CommandGraph,
    ctx: &GpuContext,
    id: &str,
    format: VectorFormat,
    rows: usize,
) -> DataView {
    let buf = upload(ctx, &vec![0; rows * format.components() as usize + 1]);
    let h = import(g, id, &buf);
    g.create_packed_view(h, format, rows as u64).unwrap()
}

// ---------------------------------------------------------------- data

/// Random row-major bits for `ty`: floats in [-4, 4] with exact halves and zeros mixed in;
/// integers over their whole range with small values mixed in.
pub fn random_column(r: &mut impl Rng, ty: ValueType, rows: usize) -> Vec<u32> {
    (0..rows * ty.width as usize)
        .map(|_| match ty.scalar {
            ScalarType::Float32 => match r.random_range(0..10) {
                0 => 0.0f32.to_bits(),
                1 => (r.random_range(-8i32..=8) as f32 * 0.5).to_bits(),
                2 => (-0.0f32).to_bits(),
                _ => r.random_range(-4.0f32..4.0).to_bits(),
            },
            ScalarType::Sint32 => match r.random_range(0..4) {
                0 => r.random_range(-5i32..=5) as u32,
                1 => [i32::MIN, i32::MAX, 16_777_217, -16_777_217][r.random_range(0..4)] as u32,
                _ => r.random::<u32>(),
            },
            ScalarType::Uint32 => match r.random_range(0..4) {
                0 => r.random_range(0u32..=5),
                1 => [u32::MAX, 16_777_217, 16_777_219, 1 << 31][r.random_range(0..4)],
                _ => r.random::<u32>(),
            },
        })
        .collect()
}

pub fn random_scalar(r: &mut impl Rng, t: ScalarType) -> ScalarValue {
    let bits = random_column(r, ValueType::new(t, 1), 1)[0];
    match t {
        ScalarType::Float32 => ScalarValue::Float32(f32::from_bits(bits)),
        ScalarType::Sint32 => ScalarValue::Sint32(bits as i32),
        ScalarType::Uint32 => ScalarValue::Uint32(bits),
    }
}

// ---------------------------------------------------------------- random expressions

/// Declarations the generator draws names from.
pub struct GenDecls {
    pub inputs: Vec<(&'static str, ValueType)>,
    pub scalars: Vec<(&'static str, ScalarType)>,
}

const LANES: [char; 4] = ['x', 'y', 'z', 'w'];

fn lanes(r: &mut impl Rng, from: u8, n: u8) -> String {
    (0..n)
        .map(|_| LANES[r.random_range(0..from) as usize])
        .collect()
}

fn literal(r: &mut impl Rng) -> String {
    match r.random_range(0..3) {
        0 => r.random_range(-3i32..=3).to_string(),
        1 => format!("{}", r.random_range(-30i32..=30) as f32 * 0.1),
        _ => format!("{:.3}", r.random_range(-3.0f32..3.0)),
    }
}

fn vec_of(ty: ValueType, x: String) -> String {
    if ty.width == 1 {
        x
    } else {
        format!("vec{}({x})", ty.width)
    }
}

fn other_int(s: ScalarType) -> ScalarType {
    if s == ScalarType::Sint32 {
        ScalarType::Uint32
    } else {
        ScalarType::Sint32
    }
}

fn any_scalar(r: &mut impl Rng) -> ScalarType {
    [ScalarType::Float32, ScalarType::Sint32, ScalarType::Uint32][r.random_range(0..3)]
}

impl GenDecls {
    /// A well-typed expression of type `ty` (text), at most `depth` operations deep.
    pub fn expr(&self, r: &mut impl Rng, ty: ValueType, depth: u32) -> String {
        if depth == 0 || r.random_bool(0.2) {
            return self.leaf(r, ty);
        }
        let d = depth - 1;
        let w = ty.width;
        let f = |w| ValueType::new(ScalarType::Float32, w);
        let same_or_one = |r: &mut dyn rand::RngCore| {
            if r.random_bool(0.3) {
                ValueType::new(ty.scalar, 1)
            } else {
                ty
            }
        };
        match ty.scalar {
            ScalarType::Float32 => match r.random_range(0..14) {
                0..=2 => {
                    let op = ["+", "-", "*", "/"][r.random_range(0..4)];
                    let (a, b) = if r.random_bool(0.5) {
                        (ty, same_or_one(r))
                    } else {
                        (same_or_one(r), ty)
                    };
                    format!("({}) {op} ({})", self.expr(r, a, d), self.expr(r, b, d))
                }
                3 => format!("-({})", self.expr(r, ty, d)),
                4 => {
                    let x = self.expr(r, ty, d);
                    match r.random_range(0..7) {
                        0 => format!("abs({x})"),
                        1 => format!("sqrt(abs({x}))"),
                        2 => format!("sin({x})"),
                        3 => format!("cos({x})"),
                        4 => format!("tan(({x}) * 0.3)"),
                        5 => format!("exp(sin({x}))"),
                        _ => format!("log(abs({x}) + 1)"),
                    }
                }
                5 => {
                    let y = same_or_one(r);
                    format!(
                        "pow(abs({}) + 0.5, sin({}) * 2)",
                        self.expr(r, ty, d),
                        self.expr(r, y, d)
                    )
                }
                6 => {
                    let s = if r.random_bool(0.5) {
                        ScalarType::Sint32
                    } else {
                        ScalarType::Uint32
                    };
                    format!("float32({})", self.expr(r, ValueType::new(s, w), d))
                }
                7 => self.select(r, ty, d),
                8 => self.concat(r, ty, d),
                9 => self.selector(r, ty, d),
                10 if w == 1 => {
                    let k = f(r.random_range(1..=4));
                    format!("dot({}, {})", self.expr(r, k, d), self.expr(r, k, d))
                }
                11 if w == 1 => {
                    let k = f(r.random_range(1..=4));
                    format!("length({})", self.expr(r, k, d))
                }
                12 if w > 1 => format!("vec{w}({})", self.expr(r, f(1), d)),
                _ => {
                    let b = same_or_one(r);
                    format!("({}) * ({})", self.expr(r, ty, d), self.expr(r, b, d))
                }
            },
            int => match r.random_range(0..7) {
                0 | 1 => {
                    // Scale floats up so casts reach saturation and values past 2^24.
                    let scale = ["1", "1000", "3e9", "0.5"][r.random_range(0..4)];
                    format!("{}(({}) * {scale})", int.name(), self.expr(r, f(w), d))
                }
                2 => format!(
                    "{}({})",
                    int.name(),
                    self.expr(r, ValueType::new(other_int(int), w), d)
                ),
                3 => self.select(r, ty, d),
                4 => self.concat(r, ty, d),
                5 if int == ScalarType::Uint32 && w == 1 => {
                    let k = ValueType::new(any_scalar(r), r.random_range(1..=4));
                    let a = self.expr(r, k, d);
                    let b = if r.random_bool(0.4) {
                        a.clone()
                    } else {
                        self.expr(r, k, d)
                    };
                    format!("equalAll({a}, {b})")
                }
                _ => self.selector(r, ty, d),
            },
        }
    }

    fn select(&self, r: &mut impl Rng, ty: ValueType, d: u32) -> String {
        let cw = if r.random_bool(0.5) { 1 } else { ty.width };
        let ct = ValueType::new(any_scalar(r), cw);
        let c = self.expr(r, ct, d);
        let fw = if r.random_bool(0.3) { 1 } else { ty.width };
        let t = self.expr(r, ty, d);
        let f = self.expr(r, ValueType::new(ty.scalar, fw), d);
        format!("select({c}, {t}, {f})")
    }

    fn concat(&self, r: &mut impl Rng, ty: ValueType, d: u32) -> String {
        if ty.width == 1 {
            return self.expr(r, ty, d);
        }
        let mut parts = Vec::new();
        let mut left = ty.width;
        while left > 0 {
            let n = r.random_range(1..=left);
            parts.push(self.expr(r, ValueType::new(ty.scalar, n), d));
            left -= n;
        }
        format!("vec{}({})", ty.width, parts.join(", "))
    }

    fn selector(&self, r: &mut impl Rng, ty: ValueType, d: u32) -> String {
        let from = r.random_range(1..=4u8);
        let inner = self.expr(r, ValueType::new(ty.scalar, from), d);
        format!("({inner}).{}", lanes(r, from, ty.width))
    }

    fn leaf(&self, r: &mut impl Rng, ty: ValueType) -> String {
        let mut options: Vec<String> = Vec::new();
        for (name, t) in &self.inputs {
            if t.scalar != ty.scalar {
                continue;
            }
            if t.width == ty.width {
                options.push(name.to_string());
            }
            options.push(format!("{name}.{}", lanes(r, t.width, ty.width)));
            if t.width == 1 && ty.width > 1 {
                options.push(vec_of(ty, name.to_string()));
            }
        }
        for (name, t) in &self.scalars {
            if *t == ty.scalar {
                options.push(vec_of(ty, name.to_string()));
            }
        }
        match ty.scalar {
            ScalarType::Float32 => {
                if ty.width == 1 {
                    options.push(literal(r));
                } else {
                    let parts: Vec<String> = (0..ty.width).map(|_| literal(r)).collect();
                    options.push(format!("vec{}({})", ty.width, parts.join(", ")));
                }
            }
            int => {
                let v = r.random_range(0..9).to_string();
                options.push(vec_of(ty, format!("{}({v})", int.name())));
            }
        }
        options.swap_remove(r.random_range(0..options.len()))
    }
}

/// The declarations the random tests draw from.
pub fn random_decls() -> GenDecls {
    use ScalarType::*;
    let t = ValueType::new;
    GenDecls {
        inputs: vec![
            ("f1", t(Float32, 1)),
            ("f2", t(Float32, 2)),
            ("f3", t(Float32, 3)),
            ("f4", t(Float32, 4)),
            ("u1", t(Uint32, 1)),
            ("u3", t(Uint32, 3)),
            ("i2", t(Sint32, 2)),
            ("i4", t(Sint32, 4)),
        ],
        scalars: vec![("s", Float32), ("su", Uint32), ("si", Sint32)],
    }
}

/// The random expressions of `seed` (shared with the WGSL validation test).
pub fn random_expressions(seed: u64, count: usize) -> Vec<(String, IntegerRounding)> {
    let d = random_decls();
    let mut r = rng(seed);
    (0..count)
        .map(|_| {
            let scalar =
                [ScalarType::Float32, ScalarType::Sint32, ScalarType::Uint32][r.random_range(0..3)];
            let ty = ValueType::new(scalar, r.random_range(1..=4));
            let depth = r.random_range(1..=4);
            let rounding = if r.random_bool(0.5) {
                IntegerRounding::Nearest
            } else {
                IntegerRounding::Truncate
            };
            (d.expr(&mut r, ty, depth), rounding)
        })
        .collect()
}

// ---------------------------------------------------------------- interval bounds

/// The values a conformant GPU may produce for one component.
#[derive(Clone, Copy, Debug)]
pub struct Iv {
    pub lo: f64,
    pub hi: f64,
    /// Anything is acceptable (possible NaN, overflow or out-of-domain math).
    pub any: bool,
}

const ULP: f64 = 1.0 / 8_388_608.0; // 2^-23
/// Flush-to-zero slack: GPUs may flush float32 subnormals.
const FTZ: f64 = 2.4e-38;

impl Iv {
    fn point(v: f64) -> Iv {
        if v.is_nan() {
            return Iv::any();
        }
        Iv {
            lo: v,
            hi: v,
            any: false,
        }
    }
    fn any() -> Iv {
        Iv {
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
            any: true,
        }
    }
    fn new(lo: f64, hi: f64) -> Iv {
        if lo.is_nan() || hi.is_nan() {
            return Iv::any();
        }
        Iv { lo, hi, any: false }
    }
    fn mag(&self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }
    /// Widens by `ulps` float32 ulps of the magnitude plus `abs`; huge values become `any`
    /// (overflow has no cross-backend guarantee).
    fn widen(self, ulps: f64, abs: f64) -> Iv {
        if self.any || self.mag() > 1e30 {
            return Iv::any();
        }
        let e = self.mag() * ulps * ULP + abs + FTZ;
        Iv::new(self.lo - e, self.hi + e)
    }
    fn hull(a: Iv, b: Iv) -> Iv {
        if a.any || b.any {
            return Iv::any();
        }
        Iv::new(a.lo.min(b.lo), a.hi.max(b.hi))
    }
    pub fn contains(&self, v: f64) -> bool {
        self.any || (self.lo <= v && v <= self.hi)
    }
    fn map2(a: Iv, b: Iv, f: impl Fn(f64, f64) -> f64) -> Iv {
        if a.any || b.any {
            return Iv::any();
        }
        let c = [f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)];
        Iv::new(
            c.iter().cloned().fold(f64::INFINITY, f64::min),
            c.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        )
    }
    fn square(self) -> Iv {
        if self.any {
            return self;
        }
        let (a, b) = (self.lo * self.lo, self.hi * self.hi);
        if self.lo <= 0.0 && self.hi >= 0.0 {
            Iv::new(0.0, a.max(b))
        } else {
            Iv::new(a.min(b), a.max(b))
        }
    }
}

/// Whether `[lo, hi]` contains `p + 2πk` for some integer k.
fn hits(lo: f64, hi: f64, p: f64, period: f64) -> bool {
    ((lo - p) / period).ceil() <= ((hi - p) / period).floor()
}

fn sin_cos(x: Iv, cos: bool) -> Iv {
    if x.any {
        return Iv::any();
    }
    let tau = std::f64::consts::TAU;
    let shift = if cos {
        std::f64::consts::FRAC_PI_2
    } else {
        0.0
    };
    let f = |v: f64| (v + shift).sin();
    let (a, b) = (f(x.lo), f(x.hi));
    let mut lo = a.min(b);
    let mut hi = a.max(b);
    if x.hi - x.lo >= tau || hits(x.lo + shift, x.hi + shift, std::f64::consts::FRAC_PI_2, tau) {
        hi = 1.0;
    }
    if x.hi - x.lo >= tau
        || hits(
            x.lo + shift,
            x.hi + shift,
            -std::f64::consts::FRAC_PI_2,
            tau,
        )
    {
        lo = -1.0;
    }
    // Vulkan: absolute error 2^-11 in [-π, π]; grow it with the argument beyond.
    let abs = (1.0 / 2048.0) * (x.mag() / std::f64::consts::PI).max(1.0);
    Iv::new(lo, hi).widen(0.0, abs)
}

fn int_range(s: ScalarType) -> (f64, f64) {
    match s {
        ScalarType::Sint32 => (i32::MIN as f64, i32::MAX as f64),
        ScalarType::Uint32 => (0.0, u32::MAX as f64),
        ScalarType::Float32 => unreachable!(),
    }
}

fn cast_iv(x: Iv, from: ScalarType, to: ScalarType, rounding: IntegerRounding) -> Iv {
    use ScalarType::*;
    if from == to {
        return x;
    }
    if x.any {
        return Iv::any();
    }
    match (from, to) {
        (Float32, int) => {
            let (min, max) = int_range(int);
            let round = |v: f64| match rounding {
                IntegerRounding::Truncate => v.trunc(),
                IntegerRounding::Nearest => v.round(),
            };
            Iv::new(round(x.lo).clamp(min, max), round(x.hi).clamp(min, max))
        }
        (_, Float32) => Iv::new(x.lo as f32 as f64, x.hi as f32 as f64),
        (_, int) => {
            let (min, max) = int_range(int);
            Iv::new(x.lo.clamp(min, max), x.hi.clamp(min, max))
        }
    }
}

fn value_of(bits: u32, s: ScalarType) -> f64 {
    match s {
        ScalarType::Float32 => f32::from_bits(bits) as f64,
        ScalarType::Sint32 => bits as i32 as f64,
        ScalarType::Uint32 => bits as f64,
    }
}

/// Bounds of every component of `e` at `row`.
pub fn bounds(
    e: &TypedExpr,
    expr: &CompiledExpression,
    inputs: &[Vec<u32>],
    scalars: &[ScalarValue],
    row: usize,
) -> Vec<Iv> {
    let w = e.ty.width as usize;
    let b = |x: &TypedExpr| bounds(x, expr, inputs, scalars, row);
    let lane = |v: &[Iv], k: usize| if v.len() == 1 { v[0] } else { v[k] };
    match &e.node {
        Node::Input(i) => {
            let ty = expr.declarations().inputs[*i].1;
            let iw = ty.width as usize;
            (0..iw)
                .map(|k| Iv::point(value_of(inputs[*i][row * iw + k], ty.scalar)))
                .collect()
        }
        Node::Scalar(i) => vec![Iv::point(value_of(
            scalars[*i].bits(),
            scalars[*i].scalar(),
        ))],
        Node::Literal(v) => vec![Iv::point(*v as f64)],
        Node::Neg(a) => b(a)
            .into_iter()
            .map(|x| Iv {
                lo: -x.hi,
                hi: -x.lo,
                any: x.any,
            })
            .collect(),
        Node::Arith(op, x, y) => {
            let (x, y) = (b(x), b(y));
            (0..w)
                .map(|k| {
                    let (p, q) = (lane(&x, k), lane(&y, k));
                    match op {
                        BinaryOp::Add => Iv::map2(p, q, |a, b| a + b).widen(1.0, 0.0),
                        BinaryOp::Sub => Iv::map2(p, q, |a, b| a - b).widen(1.0, 0.0),
                        BinaryOp::Mul => Iv::map2(p, q, |a, b| a * b).widen(1.0, 0.0),
                        BinaryOp::Div => {
                            if q.any || (q.lo <= 1e-30 && q.hi >= -1e-30) {
                                Iv::any()
                            } else {
                                Iv::map2(p, q, |a, b| a / b).widen(3.0, 0.0)
                            }
                        }
                    }
                })
                .collect()
        }
        Node::Math(f, x) => b(x)
            .into_iter()
            .map(|x| {
                if x.any {
                    return Iv::any();
                }
                match f {
                    MathFn::Abs => {
                        if x.lo >= 0.0 {
                            x
                        } else if x.hi <= 0.0 {
                            Iv::new(-x.hi, -x.lo)
                        } else {
                            Iv::new(0.0, x.mag())
                        }
                    }
                    MathFn::Sqrt => {
                        if x.lo < 0.0 {
                            Iv::any()
                        } else {
                            Iv::new(x.lo.sqrt(), x.hi.sqrt()).widen(3.0, 0.0)
                        }
                    }
                    MathFn::Sin => sin_cos(x, false),
                    MathFn::Cos => sin_cos(x, true),
                    MathFn::Tan => {
                        let pi = std::f64::consts::PI;
                        let c_min = x.lo.cos().abs().min(x.hi.cos().abs());
                        if hits(x.lo, x.hi, std::f64::consts::FRAC_PI_2, pi) || c_min < 1.0 / 512.0
                        {
                            Iv::any()
                        } else {
                            let t = Iv::new(x.lo.tan(), x.hi.tan());
                            let abs =
                                (1.0 / 2048.0) * (1.0 + t.mag()) / c_min * (x.mag() / pi).max(1.0);
                            t.widen(0.0, abs)
                        }
                    }
                    MathFn::Exp => {
                        if x.hi > 80.0 {
                            Iv::any()
                        } else {
                            Iv::new(x.lo.exp(), x.hi.exp()).widen(3.0 + 2.0 * x.mag(), 0.0)
                        }
                    }
                    MathFn::Log => {
                        if x.lo <= 0.0 {
                            Iv::any()
                        } else {
                            let near_one = x.lo <= 2.0 && x.hi >= 0.5;
                            let abs = if near_one { 1.0 / 2_097_152.0 } else { 0.0 };
                            Iv::new(x.lo.ln(), x.hi.ln()).widen(3.0, abs)
                        }
                    }
                }
            })
            .collect(),
        Node::Pow(x, y) => {
            let (x, y) = (b(x), b(y));
            (0..w)
                .map(|k| {
                    let (p, q) = (lane(&x, k), lane(&y, k));
                    if p.any || q.any || p.lo <= 0.0 {
                        return Iv::any();
                    }
                    let r = Iv::map2(p, q, f64::powf);
                    let l = Iv::map2(p, q, |a, b| (b * a.log2()).abs()).mag();
                    r.widen(8.0 + 4.0 * l + 8.0 * q.mag(), 0.0)
                })
                .collect()
        }
        Node::Cast { to, rounding, arg } => {
            let from = arg.ty.scalar;
            b(arg)
                .into_iter()
                .map(|x| cast_iv(x, from, *to, *rounding))
                .collect()
        }
        Node::Swizzle(a, lanes) => {
            let a = b(a);
            lanes.iter().map(|&l| a[l as usize]).collect()
        }
        Node::Splat(a) => vec![b(a)[0]; w],
        Node::Concat(parts) => parts.iter().flat_map(b).collect(),
        Node::Dot(x, y) => {
            let (x, y) = (b(x), b(y));
            let n = x.len();
            let mut acc = Iv::map2(x[0], y[0], |a, b| a * b).widen(1.0, 0.0);
            for k in 1..n {
                let p = Iv::map2(x[k], y[k], |a, b| a * b).widen(1.0, 0.0);
                acc = Iv::map2(acc, p, |a, b| a + b).widen(1.0 + n as f64, 0.0);
            }
            vec![acc]
        }
        Node::Length(x) => {
            let x = b(x);
            if x.len() == 1 {
                let v = x[0];
                return vec![if v.any {
                    v
                } else {
                    Iv::new(
                        if v.lo <= 0.0 && v.hi >= 0.0 {
                            0.0
                        } else {
                            v.lo.abs().min(v.hi.abs())
                        },
                        v.mag(),
                    )
                }];
            }
            let mut acc = x[0].square().widen(1.0, 0.0);
            for v in &x[1..] {
                acc = Iv::map2(acc, v.square().widen(1.0, 0.0), |a, b| a + b).widen(2.0, 0.0);
            }
            if acc.any {
                return vec![acc];
            }
            vec![Iv::new(acc.lo.max(0.0).sqrt(), acc.hi.sqrt()).widen(4.0 + x.len() as f64, 0.0)]
        }
        Node::Compare(..) | Node::Logic(..) => vec![Iv::new(0.0, 1.0); w],
        Node::EqualAll(x, y) => {
            let (x, y) = (b(x), b(y));
            let mut all_equal = true;
            for (p, q) in x.iter().zip(&y) {
                if p.any || q.any {
                    all_equal = false;
                    continue;
                }
                if p.hi < q.lo || q.hi < p.lo {
                    return vec![Iv::point(0.0)];
                }
                if !(p.lo == p.hi && q.lo == q.hi && p.lo == q.lo) {
                    all_equal = false;
                }
            }
            vec![if all_equal {
                Iv::point(1.0)
            } else {
                Iv::new(0.0, 1.0)
            }]
        }
        Node::Select {
            cond,
            when_true,
            when_false,
        } => {
            let (c, t, f) = (b(cond), b(when_true), b(when_false));
            (0..w)
                .map(|k| {
                    let (c, t, f) = (lane(&c, k), lane(&t, k), lane(&f, k));
                    if !c.any && (c.lo > 0.0 || c.hi < 0.0) {
                        t
                    } else if !c.any && c.lo == 0.0 && c.hi == 0.0 {
                        f
                    } else {
                        Iv::hull(t, f)
                    }
                })
                .collect()
        }
    }
}

/// Checks `gpu` (and the CPU `oracle`) bits against the bounds of every row; returns the
/// first failure.
pub fn check_within_bounds(
    expr: &CompiledExpression,
    inputs: &[Vec<u32>],
    scalars: &[ScalarValue],
    gpu: &[u32],
    oracle: &[u32],
) -> Result<(), String> {
    let ty = expr.output_type();
    let w = ty.width as usize;
    let rows = gpu.len() / w;
    for row in 0..rows {
        let iv = bounds(expr.typed(), expr, inputs, scalars, row);
        for k in 0..w {
            for (who, bits) in [("gpu", gpu[row * w + k]), ("oracle", oracle[row * w + k])] {
                let v = value_of(bits, ty.scalar);
                let ok = iv[k].any || (!v.is_nan() && iv[k].contains(v));
                if !ok {
                    return Err(format!(
                        "{}: row {row} component {k}: {who} {v} (bits {bits:#010x}) outside [{}, {}] (gpu {}, oracle {})",
                        expr.ast(),
                        iv[k].lo,
                        iv[k].hi,
                        value_of(gpu[row * w + k], ty.scalar),
                        value_of(oracle[row * w + k], ty.scalar),
                    ));
                }
            }
        }
    }
    Ok(())
}
