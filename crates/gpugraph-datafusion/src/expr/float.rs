//! Comparisons of a decimal cast to Float64 with a float literal, decided exactly on the
//! decimal's unscaled integer.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Literal};
use datafusion::physical_expr::PhysicalExpr;

use super::{num_scale, translate, Scope, Ty, Typed};
use crate::ir::{BinOp, Ir};

/// `x` (exact, scale `s`) as Arrow casts it to Float64: `x as f64 / 10^s`.
fn as_float(x: i64, scale: u32) -> f64 {
    x as f64 / 10f64.powi(scale as i32)
}

/// The largest integer `x` with `as_float(x, scale) <= f` (the cast is monotonic in `x`).
fn last_at_most(f: f64, scale: u32) -> Option<i64> {
    let guess = (f * 10f64.powi(scale as i32)).floor();
    if !guess.is_finite() || guess.abs() > (1u64 << 62) as f64 {
        return None;
    }
    let mut x = guess as i64;
    while as_float(x, scale) > f {
        x -= 1;
    }
    while as_float(x + 1, scale) <= f {
        x += 1;
    }
    Some(x)
}

/// `CAST(x AS Float64) op literal` (or mirrored), as DataFusion writes a decimal compared with
/// a float literal such as TPC-H Q6's `l_discount between 0.06 - 0.01 and 0.06 + 0.01`: an
/// exact integer comparison of `x` with the threshold where the cast crosses the literal, so
/// every row compares as on the CPU. `None` when `b` is not of that form.
pub(super) fn float_comparison(b: &BinaryExpr, scope: &Scope<'_>) -> Result<Option<Typed>, String> {
    let op = *b.op();
    let mirrored = match op {
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        Operator::Eq | Operator::NotEq => op,
        _ => return Ok(None),
    };
    let float_literal = |e: &Arc<dyn PhysicalExpr>| match e.downcast_ref::<Literal>() {
        Some(l) => match l.value() {
            ScalarValue::Float64(v) => Some(*v),
            _ => None,
        },
        None => None,
    };
    let float_cast = |e: &Arc<dyn PhysicalExpr>| {
        e.downcast_ref::<CastExpr>()
            .filter(|c| *c.cast_type() == DataType::Float64)
            .map(|c| Arc::clone(c.expr()))
    };
    let (inner, value, op) = match (float_cast(b.left()), float_literal(b.right())) {
        (Some(inner), Some(v)) => (inner, v, op),
        _ => match (float_literal(b.left()), float_cast(b.right())) {
            (Some(v), Some(inner)) => (inner, v, mirrored),
            _ => return Ok(None),
        },
    };
    let x = translate(&inner, scope)?;
    let s = num_scale(&x, "a float comparison")?;
    let Some(f) = value else {
        // Comparing with NULL is NULL.
        return Ok(Some(Typed {
            ir: Ir::Null,
            ty: Ty::Bool,
        }));
    };
    let refuse = || format!("the float literal {f} is out of the GPU's exact range");
    if f.is_nan() {
        return Err(refuse());
    }
    let at_most = last_at_most(f, s).ok_or_else(refuse)?;
    // The first x whose cast reaches f: past every x whose cast stays below f.
    let below = if as_float(at_most, s) == f {
        at_most - 1
    } else {
        at_most
    };
    let ge = Ir::binary(BinOp::Gt, x.ir.clone(), Ir::Const(below));
    let le = Ir::binary(BinOp::Le, x.ir.clone(), Ir::Const(at_most));
    let ir = match op {
        Operator::Lt => Ir::binary(BinOp::Le, x.ir, Ir::Const(below)),
        Operator::LtEq => le,
        Operator::Gt => Ir::binary(BinOp::Gt, x.ir, Ir::Const(at_most)),
        Operator::GtEq => ge,
        Operator::Eq => Ir::binary(BinOp::And, ge, le),
        _ => Ir::Not(Box::new(Ir::binary(BinOp::And, ge, le))),
    };
    Ok(Some(Typed { ir, ty: Ty::Bool }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_thresholds_match_the_cast() {
        for (f, s) in [
            (0.06 - 0.01, 2u32),
            (0.06 + 0.01, 2),
            (24.0, 2),
            (-1.5, 1),
            (0.1, 3),
        ] {
            let t = last_at_most(f, s).expect("in range");
            assert!(
                as_float(t, s) <= f && as_float(t + 1, s) > f,
                "{f} at scale {s}"
            );
        }
        // 0.06 - 0.01 is 0.049999999999999996 in f64, yet 5 (0.05) casts to 0.05, above it.
        assert_eq!(last_at_most(0.06 - 0.01, 2), Some(4));
    }
}
