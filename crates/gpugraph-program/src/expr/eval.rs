//! The CPU oracle: evaluates a [`TypedExpr`] row by row, the plain loop the generated shader
//! parallelizes. The WGSL in `wgsl.rs` implements the same rules; where GPUs are exact the two
//! agree bit for bit.
//!
//! Numeric semantics (docs/expressions.md, "Numeric semantics"):
//! - Float32 values are flushed: a subnormal loaded from an input, scalar or literal, or
//!   produced by any operation or function, becomes a zero of the same sign ([`ftz`]). GPUs
//!   may flush in hardware; the shader flushes explicitly so every device agrees with this.
//! - `+ - * /`, negation, `dot` and `length` are IEEE float32 operations (round to nearest
//!   even) evaluated as written: `dot` is `x0*y0 + x1*y1 + ...` left to right with every
//!   product and sum rounded, `length` is `sqrt(dot(x, x))` (one component: `abs(x)`). The
//!   shader cannot fold, contract or reassociate them, so it matches bit for bit, except that
//!   WGSL allows division 2.5 ulp and sqrt its `inverseSqrt` accuracy for finite results.
//! - `sqrt` is correctly rounded; `sin cos tan exp log pow` are evaluated in float64 and
//!   rounded once to float32 (the best float32 answer; GPUs are within their documented
//!   accuracy of it). Special arguments (±0, ±inf, NaN, out of domain) give the IEEE / C99
//!   results, which the shader decides on the bits; `pow` follows C99 (`pow(x, ±0) = 1`,
//!   negative bases with integer exponents keep the sign of odd powers).
//! - Float→integer casts: round (truncate toward zero, or nearest with ties away from zero),
//!   then saturate to the destination range; NaN → 0, +inf → max, -inf → min. Integer→integer
//!   casts saturate (sint32 → uint32 maps negatives to 0; uint32 → sint32 caps at 2^31-1).
//!   Integer→float32 rounds to nearest even. Integers are exact 32-bit values throughout,
//!   including past 2^24; the language has no integer arithmetic, hence no integer division
//!   or overflow.
//! - `equalAll` compares exactly: floats as IEEE `==` (so -0 == 0 and NaN differs from
//!   everything), integers by value. `select` treats any component that is not ±0 as true
//!   (NaN included). The comparison functions are IEEE (NaN compares false except
//!   `notEqual`); `and`/`or`/`not` treat nonzero as true; all give uint32 0/1.

use crate::expr::ast::BinaryOp;
use crate::expr::error::{ExprError, ExprErrorKind};
use crate::expr::types::{IntegerRounding, MathFn, Node, ScalarType, TypedExpr, ValueType};

/// One row of a value: up to four components as raw 32-bit patterns of `ty.scalar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowValue {
    /// Component type and width.
    pub ty: ValueType,
    /// Components `0..ty.width` (bit patterns); the rest are zero.
    pub bits: [u32; 4],
}

/// A borrowed row-major packed column: `rows × width` components of one type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Column<'a> {
    /// float32 components.
    Float32(&'a [f32]),
    /// sint32 components.
    Sint32(&'a [i32]),
    /// uint32 components.
    Uint32(&'a [u32]),
}

/// An owned row-major packed column (the result of a CPU evaluation).
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// float32 components.
    Float32(Vec<f32>),
    /// sint32 components.
    Sint32(Vec<i32>),
    /// uint32 components.
    Uint32(Vec<u32>),
}

/// A scalar binding: one value broadcast to every row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    /// A float32 value.
    Float32(f32),
    /// A sint32 value.
    Sint32(i32),
    /// A uint32 value.
    Uint32(u32),
}

impl Column<'_> {
    /// The component type.
    pub fn scalar(&self) -> ScalarType {
        match self {
            Column::Float32(_) => ScalarType::Float32,
            Column::Sint32(_) => ScalarType::Sint32,
            Column::Uint32(_) => ScalarType::Uint32,
        }
    }
    /// Number of components.
    pub fn len(&self) -> usize {
        match self {
            Column::Float32(v) => v.len(),
            Column::Sint32(v) => v.len(),
            Column::Uint32(v) => v.len(),
        }
    }
    /// Whether there are no components.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn bits(&self, i: usize) -> u32 {
        match self {
            Column::Float32(v) => v[i].to_bits(),
            Column::Sint32(v) => v[i] as u32,
            Column::Uint32(v) => v[i],
        }
    }
}

impl Values {
    /// The component bit patterns (what the GPU writes to storage).
    pub fn to_bits(&self) -> Vec<u32> {
        match self {
            Values::Float32(v) => v.iter().map(|x| x.to_bits()).collect(),
            Values::Sint32(v) => v.iter().map(|&x| x as u32).collect(),
            Values::Uint32(v) => v.clone(),
        }
    }
    /// Number of components.
    pub fn len(&self) -> usize {
        match self {
            Values::Float32(v) => v.len(),
            Values::Sint32(v) => v.len(),
            Values::Uint32(v) => v.len(),
        }
    }
    /// Whether there are no components.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A borrowed view, usable as an input of another evaluation.
    pub fn as_column(&self) -> Column<'_> {
        match self {
            Values::Float32(v) => Column::Float32(v),
            Values::Sint32(v) => Column::Sint32(v),
            Values::Uint32(v) => Column::Uint32(v),
        }
    }
}

impl ScalarValue {
    /// The component type.
    pub fn scalar(&self) -> ScalarType {
        match self {
            ScalarValue::Float32(_) => ScalarType::Float32,
            ScalarValue::Sint32(_) => ScalarType::Sint32,
            ScalarValue::Uint32(_) => ScalarType::Uint32,
        }
    }
    /// The bit pattern.
    pub fn bits(&self) -> u32 {
        match self {
            ScalarValue::Float32(v) => v.to_bits(),
            ScalarValue::Sint32(v) => *v as u32,
            ScalarValue::Uint32(v) => *v,
        }
    }
}

/// Float32 → sint32: round per `rounding`, then saturate; NaN → 0.
pub fn f32_to_i32(v: f32, rounding: IntegerRounding) -> i32 {
    // Rust's `as` saturates and maps NaN to 0; `round` is ties-away-from-zero.
    match rounding {
        IntegerRounding::Truncate => v as i32,
        IntegerRounding::Nearest => v.round() as i32,
    }
}

/// Float32 → uint32: round per `rounding`, then saturate (negatives → 0); NaN → 0.
pub fn f32_to_u32(v: f32, rounding: IntegerRounding) -> u32 {
    match rounding {
        IntegerRounding::Truncate => v as u32,
        IntegerRounding::Nearest => v.round() as u32,
    }
}

/// Converts one component between types with the language's cast rules.
pub fn cast_bits(bits: u32, from: ScalarType, to: ScalarType, rounding: IntegerRounding) -> u32 {
    use ScalarType::*;
    match (from, to) {
        (a, b) if a == b => bits,
        (Float32, Sint32) => f32_to_i32(f32::from_bits(bits), rounding) as u32,
        (Float32, Uint32) => f32_to_u32(f32::from_bits(bits), rounding),
        (Sint32, Float32) => (bits as i32 as f32).to_bits(),
        (Uint32, Float32) => (bits as f32).to_bits(),
        (Sint32, Uint32) => (bits as i32).max(0) as u32,
        (Uint32, Sint32) => bits.min(i32::MAX as u32),
        _ => unreachable!("equal types handled first"),
    }
}

/// Whether a component is nonzero (true for `select`); floats: anything but ±0, NaN included.
pub fn truthy(bits: u32, scalar: ScalarType) -> bool {
    match scalar {
        ScalarType::Float32 => bits & 0x7fff_ffff != 0,
        _ => bits != 0,
    }
}

/// Exact component equality of `equalAll`.
pub fn components_equal(a: u32, b: u32, scalar: ScalarType) -> bool {
    match scalar {
        ScalarType::Float32 => f32::from_bits(a) == f32::from_bits(b),
        _ => a == b,
    }
}

fn via_f64(x: f32, f: impl Fn(f64) -> f64) -> f32 {
    f(x as f64) as f32
}

/// The math function on one float32 component.
pub fn math(f: MathFn, x: f32) -> f32 {
    match f {
        MathFn::Abs => x.abs(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Sin => via_f64(x, f64::sin),
        MathFn::Cos => via_f64(x, f64::cos),
        MathFn::Tan => via_f64(x, f64::tan),
        MathFn::Exp => via_f64(x, f64::exp),
        MathFn::Log => via_f64(x, f64::ln),
    }
}

/// Float32 `pow`, evaluated in float64 and rounded once.
pub fn pow(x: f32, y: f32) -> f32 {
    (x as f64).powf(y as f64) as f32
}

/// Float32 arithmetic on one component pair.
pub fn arith(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
    }
}

/// The inputs of one evaluation: row-major columns per declared input, scalar values.
pub(crate) struct Env<'a> {
    pub inputs: &'a [Column<'a>],
    pub input_widths: Vec<usize>,
    pub scalars: &'a [ScalarValue],
}

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

/// Component `k` of `v`, broadcasting a one-component value.
fn lane(v: &RowValue, k: usize) -> u32 {
    if v.ty.width == 1 {
        v.bits[0]
    } else {
        v.bits[k]
    }
}

/// Evaluates row `row` of `e`.
pub(crate) fn eval_row(e: &TypedExpr, env: &Env<'_>, row: usize) -> RowValue {
    let ty = e.ty;
    let w = ty.width as usize;
    let mut bits = [0u32; 4];
    let map = |v: &RowValue, g: &dyn Fn(u32) -> u32| {
        let mut out = [0u32; 4];
        for (k, o) in out.iter_mut().enumerate().take(w) {
            *o = g(lane(v, k));
        }
        out
    };
    match &e.node {
        Node::Input(i) => {
            let width = env.input_widths[*i];
            for (k, b) in bits.iter_mut().enumerate().take(w) {
                *b = load(env.inputs[*i].bits(row * width + k), ty.scalar);
            }
        }
        Node::Scalar(i) => bits[0] = load(env.scalars[*i].bits(), ty.scalar),
        Node::Literal(v) => bits[0] = ftz(*v).to_bits(),
        Node::Neg(a) => {
            let a = eval_row(a, env, row);
            bits = map(&a, &|x| (-f(x)).to_bits());
        }
        Node::Arith(op, a, b) => {
            let (a, b) = (eval_row(a, env, row), eval_row(b, env, row));
            for (k, o) in bits.iter_mut().enumerate().take(w) {
                *o = ftz(arith(*op, f(lane(&a, k)), f(lane(&b, k)))).to_bits();
            }
        }
        Node::Math(m, a) => {
            let a = eval_row(a, env, row);
            bits = map(&a, &|x| ftz(math(*m, f(x))).to_bits());
        }
        Node::Pow(a, b) => {
            let (a, b) = (eval_row(a, env, row), eval_row(b, env, row));
            for (k, o) in bits.iter_mut().enumerate().take(w) {
                *o = ftz(pow(f(lane(&a, k)), f(lane(&b, k)))).to_bits();
            }
        }
        Node::Cast { to, rounding, arg } => {
            let a = eval_row(arg, env, row);
            let from = a.ty.scalar;
            bits = map(&a, &|x| cast_bits(x, from, *to, *rounding));
        }
        Node::Swizzle(a, lanes) => {
            let a = eval_row(a, env, row);
            for (k, &l) in lanes.iter().enumerate() {
                bits[k] = a.bits[l as usize];
            }
        }
        Node::Splat(a) => {
            let a = eval_row(a, env, row);
            bits = map(&a, &|x| x);
        }
        Node::Concat(parts) => {
            let mut k = 0;
            for p in parts {
                let v = eval_row(p, env, row);
                for c in 0..v.ty.width as usize {
                    bits[k] = v.bits[c];
                    k += 1;
                }
            }
        }
        Node::Dot(a, b) => {
            let (a, b) = (eval_row(a, env, row), eval_row(b, env, row));
            bits[0] = dot(&a, &b).to_bits();
        }
        Node::Length(a) => {
            let a = eval_row(a, env, row);
            bits[0] = if a.ty.width == 1 {
                f(a.bits[0]).abs()
            } else {
                ftz(dot(&a, &a).sqrt())
            }
            .to_bits();
        }
        Node::EqualAll(a, b) => {
            let (a, b) = (eval_row(a, env, row), eval_row(b, env, row));
            let s = a.ty.scalar;
            let all = (0..a.ty.width as usize).all(|k| components_equal(a.bits[k], b.bits[k], s));
            bits[0] = all as u32;
        }
        Node::Compare(cmp, a, b) => {
            let (a, b) = (eval_row(a, env, row), eval_row(b, env, row));
            let s = a.ty.scalar;
            for (k, o) in bits.iter_mut().enumerate().take(w) {
                *o = cmp.apply(lane(&a, k), lane(&b, k), s) as u32;
            }
        }
        Node::Logic(op, args) => {
            let vals: Vec<RowValue> = args.iter().map(|a| eval_row(a, env, row)).collect();
            for (k, o) in bits.iter_mut().enumerate().take(w) {
                let b = vals.get(1).map_or(0, |v| lane(v, k));
                *o = op.apply(lane(&vals[0], k), b) as u32;
            }
        }
        Node::Select {
            cond,
            when_true,
            when_false,
        } => {
            let c = eval_row(cond, env, row);
            let t = eval_row(when_true, env, row);
            let fl = eval_row(when_false, env, row);
            for (k, o) in bits.iter_mut().enumerate().take(w) {
                *o = if truthy(lane(&c, k), c.ty.scalar) {
                    lane(&t, k)
                } else {
                    lane(&fl, k)
                };
            }
        }
    }
    RowValue { ty, bits }
}

/// `x0*y0 + x1*y1 + ...` left to right, every product and sum rounded and flushed.
fn dot(a: &RowValue, b: &RowValue) -> f32 {
    let mut acc = ftz(f(a.bits[0]) * f(b.bits[0]));
    for k in 1..a.ty.width as usize {
        acc = ftz(acc + ftz(f(a.bits[k]) * f(b.bits[k])));
    }
    acc
}

/// Flush to zero: a subnormal float32 becomes a zero of the same sign; anything else is kept.
pub fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// A loaded component: float32 values are flushed, integers kept.
fn load(bits: u32, scalar: ScalarType) -> u32 {
    match scalar {
        ScalarType::Float32 => ftz(f32::from_bits(bits)).to_bits(),
        _ => bits,
    }
}

fn binding(msg: String) -> ExprError {
    ExprError::new(ExprErrorKind::Binding, msg, None)
}

/// Checks the bindings against the declarations and returns the row count.
pub(crate) fn check_bindings(
    expr: &TypedExpr,
    inputs_decl: &[(String, ValueType)],
    scalars_decl: &[(String, ScalarType)],
    inputs: &[Column<'_>],
    scalars: &[ScalarValue],
) -> Result<usize, ExprError> {
    if inputs.len() != inputs_decl.len() {
        return Err(binding(format!(
            "expected {} input columns ({}), got {}",
            inputs_decl.len(),
            names(inputs_decl.iter().map(|(n, _)| n)),
            inputs.len()
        )));
    }
    if scalars.len() != scalars_decl.len() {
        return Err(binding(format!(
            "expected {} scalar values ({}), got {}",
            scalars_decl.len(),
            names(scalars_decl.iter().map(|(n, _)| n)),
            scalars.len()
        )));
    }
    for ((name, ty), col) in inputs_decl.iter().zip(inputs) {
        if col.scalar() != ty.scalar {
            return Err(binding(format!(
                "input {name} is declared {ty} but the column holds {} components",
                col.scalar()
            )));
        }
        if col.len() % ty.width as usize != 0 {
            return Err(binding(format!(
                "input {name} ({ty}) has {} components, not a multiple of its width {}",
                col.len(),
                ty.width
            )));
        }
    }
    for ((name, t), v) in scalars_decl.iter().zip(scalars) {
        if v.scalar() != *t {
            return Err(binding(format!(
                "scalar {name} is declared {t} but the value is {}",
                v.scalar()
            )));
        }
    }
    let mut rows: Option<(usize, &str)> = None;
    for i in expr.referenced_inputs() {
        let (name, ty) = &inputs_decl[i];
        let n = inputs[i].len() / ty.width as usize;
        match rows {
            None => rows = Some((n, name)),
            Some((m, other)) if m != n => {
                return Err(binding(format!(
                "input {name} has {n} rows but {other} has {m}; vector operands need equal lengths"
            )))
            }
            _ => {}
        }
    }
    // Without a vector operand the result is one constant row.
    Ok(rows.map_or(1, |(n, _)| n))
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    it.map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// Evaluates every row into a packed output column.
pub(crate) fn evaluate(expr: &TypedExpr, env: &Env<'_>, rows: usize) -> Values {
    let w = expr.ty.width as usize;
    let mut out = Vec::with_capacity(rows * w);
    for row in 0..rows {
        let v = eval_row(expr, env, row);
        out.extend_from_slice(&v.bits[..w]);
    }
    match expr.ty.scalar {
        ScalarType::Float32 => Values::Float32(out.into_iter().map(f32::from_bits).collect()),
        ScalarType::Sint32 => Values::Sint32(out.into_iter().map(|b| b as i32).collect()),
        ScalarType::Uint32 => Values::Uint32(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IntegerRounding::*;

    #[test]
    fn casts_round_then_saturate() {
        assert_eq!(f32_to_i32(-1.5, Nearest), -2);
        assert_eq!(f32_to_i32(1.5, Nearest), 2);
        assert_eq!(f32_to_i32(2.5, Nearest), 3);
        assert_eq!(f32_to_i32(0.49999997, Nearest), 0);
        assert_eq!(f32_to_i32(-1.7, Truncate), -1);
        assert_eq!(f32_to_i32(3e9, Truncate), i32::MAX);
        assert_eq!(f32_to_i32(-3e9, Nearest), i32::MIN);
        assert_eq!(f32_to_i32(f32::NAN, Nearest), 0);
        assert_eq!(f32_to_u32(-0.5, Nearest), 0);
        assert_eq!(f32_to_u32(f32::INFINITY, Truncate), u32::MAX);
        assert_eq!(
            cast_bits(
                -5i32 as u32,
                ScalarType::Sint32,
                ScalarType::Uint32,
                Truncate
            ),
            0
        );
        assert_eq!(
            cast_bits(u32::MAX, ScalarType::Uint32, ScalarType::Sint32, Truncate),
            i32::MAX as u32
        );
        assert_eq!(
            f32::from_bits(cast_bits(
                16_777_217,
                ScalarType::Uint32,
                ScalarType::Float32,
                Truncate
            )),
            16_777_216.0
        );
    }
}
