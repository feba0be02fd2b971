//! Emission of one typed expression as WGSL: each node becomes an SSA `let` of its value,
//! every float operand passing through an opaque identity, literals masked with the run-time
//! fence, and special cases decided on the bits (see the parent module's doc and
//! `helpers.rs`). The parent assembles bindings, loads, stages and stores around it.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::expr::ast::BinaryOp;
use crate::expr::functions::{CompareFn, LogicFn};
use crate::expr::helpers::{self, cast_helper, truthy};
use crate::expr::types::{MathFn, Node, ScalarType, TypedExpr, ValueType};

/// Emits one stage's typed tree as SSA `let`s into `body`.
pub(super) struct Gen {
    /// WGSL value of each declared input / scalar of the stage being emitted.
    pub input_names: Vec<String>,
    pub scalar_names: Vec<String>,
    pub body: String,
    pub next: usize,
    pub helpers: BTreeSet<String>,
}

pub(super) const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// Which opaque identity an operand passes through (see `helpers.rs`): two different ones, so
/// the operands of `x - x` cannot be proven equal.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

impl Gen {
    fn bind(&mut self, ty: ValueType, value: String) -> String {
        let name = format!("t{}", self.next);
        self.next += 1;
        let _ = writeln!(self.body, "    let {name}: {} = {value};", ty.wgsl());
        name
    }

    /// `base_<suffix>(v)` for a width-generic float helper.
    fn float_fn(&mut self, base: &str, v: &str, width: u8) -> String {
        let name = format!("{base}_{}", helpers::suffix(width));
        let call = format!("{name}({v})");
        self.helpers.insert(name);
        call
    }

    /// `v` through an opaque identity.
    fn opaque(&mut self, v: &str, ty: ValueType, side: Side) -> String {
        let base = match side {
            Side::Left => "keep",
            Side::Right => "hold",
        };
        self.float_fn(base, v, ty.width)
    }

    /// `v` bound with subnormals flushed.
    fn flushed(&mut self, ty: ValueType, v: String) -> String {
        let value = self.float_fn("ftz", &v, ty.width);
        self.bind(ty, value)
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
        self.helpers.insert(helper.to_string());
        if from.width == 1 {
            format!("{helper}({v})")
        } else {
            let parts: Vec<String> = (0..from.width as usize)
                .map(|c| format!("{helper}({v}.{})", LANES[c]))
                .collect();
            format!("{}({})", to.wgsl(), parts.join(", "))
        }
    }

    /// A two-argument scalar helper per component of `ty`; one-component operands broadcast.
    fn per_component2(&mut self, helper: &'static str, a: &str, b: &str, ty: ValueType) -> String {
        self.helpers.insert(helper.to_string());
        if ty.width == 1 {
            return format!("{helper}({a}, {b})");
        }
        let parts: Vec<String> = LANES[..ty.width as usize]
            .iter()
            .map(|l| format!("{helper}({a}.{l}, {b}.{l})"))
            .collect();
        format!("{}({})", ty.wgsl(), parts.join(", "))
    }

    /// `x · y` in the oracle's order: `x0*y0 + x1*y1 + ...`, every product and sum rounded
    /// (and flushed) on its own, so no device contracts it into fused multiply-adds.
    fn dot(&mut self, x: &str, y: &str, width: u8) -> String {
        let f = ValueType::new(ScalarType::Float32, 1);
        let x = self.opaque(x, ValueType::new(ScalarType::Float32, width), Side::Left);
        let x = self.bind(ValueType::new(ScalarType::Float32, width), x);
        let y = self.opaque(y, ValueType::new(ScalarType::Float32, width), Side::Right);
        let y = self.bind(ValueType::new(ScalarType::Float32, width), y);
        let mut acc = self.flushed(f, format!("{x}.x * {y}.x"));
        for l in &LANES[1..width as usize] {
            let p = self.flushed(f, format!("{x}.{l} * {y}.{l}"));
            let (a, b) = (
                self.opaque(&acc, f, Side::Left),
                self.opaque(&p, f, Side::Right),
            );
            acc = self.flushed(f, format!("{a} + {b}"));
        }
        acc
    }

    pub(super) fn emit(&mut self, e: &TypedExpr) -> String {
        let ty = e.ty;
        let value = match &e.node {
            Node::Input(i) => return self.input_names[*i].clone(),
            Node::Scalar(i) => return self.scalar_names[*i].clone(),
            // XORed with a run-time zero: a literal is as opaque as a loaded value, so no
            // compiler folds `x * 0`, `x / 0` or `0 - x` (WGSL lets it assume no NaN, infinity
            // or signed zero).
            Node::Literal(v) => {
                let lit = format!("bitcast<f32>(0x{:08x}u ^ ~fence)", v.to_bits());
                return self.flushed(ty, lit);
            }
            Node::Neg(a) => {
                let a = self.emit(a);
                self.float_fn("neg", &a, ty.width)
            }
            Node::Arith(op, a, b) => {
                let (ta, tb) = (a.ty, b.ty);
                let (a, b) = (self.emit(a), self.emit(b));
                let (a, b) = (
                    self.opaque(&a, ta, Side::Left),
                    self.opaque(&b, tb, Side::Right),
                );
                let raw = if *op == BinaryOp::Div {
                    let (a, b) = (self.widen(&a, ta, ty.width), self.widen(&b, tb, ty.width));
                    self.per_component2("div_f32", &a, &b, ty)
                } else {
                    format!("{a} {} {b}", op.symbol())
                };
                return self.flushed(ty, raw);
            }
            Node::Math(f, a) => {
                let from = a.ty;
                let a = self.emit(a);
                if *f == MathFn::Abs {
                    self.float_fn("abs", &a, ty.width)
                } else {
                    let a = self.opaque(&a, from, Side::Left);
                    let helper = match f {
                        MathFn::Sqrt => "sqrt_f32",
                        MathFn::Sin => "sin_f32",
                        MathFn::Cos => "cos_f32",
                        MathFn::Tan => "tan_f32",
                        MathFn::Exp => "exp_f32",
                        MathFn::Log => "log_f32",
                        MathFn::Abs => unreachable!("handled above"),
                    };
                    let raw = self.per_component(helper, &a, from, ty);
                    return self.flushed(ty, raw);
                }
            }
            Node::Pow(a, b) => {
                let (ta, tb) = (a.ty, b.ty);
                let (a, b) = (self.emit(a), self.emit(b));
                let (a, b) = (
                    self.opaque(&a, ta, Side::Left),
                    self.opaque(&b, tb, Side::Right),
                );
                let (a, b) = (self.widen(&a, ta, ty.width), self.widen(&b, tb, ty.width));
                let raw = self.per_component2("pow_f32", &a, &b, ty);
                return self.flushed(ty, raw);
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
                    let f = ValueType::new(ScalarType::Float32, 1);
                    let (a, b) = (
                        self.opaque(&a, f, Side::Left),
                        self.opaque(&b, f, Side::Right),
                    );
                    return self.flushed(ty, format!("{a} * {b}"));
                }
                return self.dot(&a, &b, w);
            }
            Node::Length(a) => {
                let w = a.ty.width;
                let a = self.emit(a);
                if w == 1 {
                    self.float_fn("abs", &a, 1)
                } else {
                    let sum = self.dot(&a, &a, w);
                    let sum = self.opaque(&sum, ty, Side::Left);
                    let raw = self.per_component("sqrt_f32", &sum, ty, ty);
                    return self.flushed(ty, raw);
                }
            }
            Node::EqualAll(a, b) => {
                let at = a.ty;
                let (a, b) = (self.emit(a), self.emit(b));
                let cond = if at.scalar == ScalarType::Float32 {
                    self.helpers.insert("eq_f32".into());
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
            Node::Compare(f, a, b) => {
                let (ta, tb) = (a.ty, b.ty);
                let (a, b) = (self.emit(a), self.emit(b));
                let (a, b) = (self.widen(&a, ta, ty.width), self.widen(&b, tb, ty.width));
                self.compare(*f, &a, &b, ta.scalar, ty.width)
            }
            Node::Logic(f, args) => {
                let tys: Vec<ValueType> = args.iter().map(|a| a.ty).collect();
                let vals: Vec<String> = args.iter().map(|a| self.emit(a)).collect();
                let zero = ValueType::new(ScalarType::Uint32, ty.width).wgsl();
                let set: Vec<String> = vals
                    .iter()
                    .zip(&tys)
                    .map(|(v, t)| format!("({} != {zero}())", self.widen(v, *t, ty.width)))
                    .collect();
                let cond = match f {
                    LogicFn::And => format!("{} & {}", set[0], set[1]),
                    LogicFn::Or => format!("{} | {}", set[0], set[1]),
                    LogicFn::Not => format!("!{}", set[0]),
                };
                format!("select({zero}(0u), {zero}(1u), {cond})")
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

    /// uint32 0/1 per component of `a <f> b` (both already `width` wide). Floats compare by
    /// the bits (`order_f32`, `eq_f32`): a compiler may assume no NaN in float comparisons.
    fn compare(&mut self, f: CompareFn, a: &str, b: &str, s: ScalarType, width: u8) -> String {
        let u = ValueType::new(ScalarType::Uint32, width).wgsl();
        let one = |c: &str| format!("select(0u, 1u, {c})");
        if s != ScalarType::Float32 {
            return format!("select({u}(0u), {u}(1u), {a} {} {b})", f.wgsl_operator());
        }
        self.helpers.insert("eq_f32".into());
        self.helpers.insert("order_f32".into());
        let lane = |l: Option<&str>| {
            let (x, y) = match l {
                Some(l) => (format!("{a}.{l}"), format!("{b}.{l}")),
                None => (a.to_string(), b.to_string()),
            };
            let nan = |v: &str| format!("(bitcast<u32>({v}) & 0x7fffffffu) > 0x7f800000u");
            let both = format!("!({} || {})", nan(&x), nan(&y));
            let cond = match f {
                CompareFn::Equal => format!("eq_f32({x}, {y})"),
                CompareFn::NotEqual => format!("!eq_f32({x}, {y})"),
                _ => format!(
                    "{both} && order_f32({x}) {} order_f32({y})",
                    f.wgsl_operator()
                ),
            };
            one(&cond)
        };
        if width == 1 {
            lane(None)
        } else {
            let parts: Vec<String> = LANES[..width as usize]
                .iter()
                .map(|l| lane(Some(l)))
                .collect();
            format!("{u}({})", parts.join(", "))
        }
    }
}
