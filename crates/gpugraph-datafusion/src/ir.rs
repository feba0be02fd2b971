//! Row expressions over exact integers: what a supported DataFusion expression becomes
//! (`expr.rs`), its value bounds from column statistics, and its lowering to [`Op`]s.
//!
//! Every numeric value is an unscaled integer with a decimal scale fixed at planning time
//! (decimals keep their scale, integers and dates have scale 0), so `a + b` over decimals of
//! different scales multiplies the smaller-scale side by a power of ten first, as DataFusion's
//! decimal arithmetic does, and the result is exact whenever every intermediate value fits
//! i64 — which [`Ir::bounds`] proves from the input columns' minimum and maximum before any
//! launch.

use crate::program::Op;

/// Binary operators of [`Ir::Binary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// +
    Add,
    /// −
    Sub,
    /// ×
    Mul,
    /// =
    Eq,
    /// ≠
    Ne,
    /// <
    Lt,
    /// ≤
    Le,
    /// >
    Gt,
    /// ≥
    Ge,
    /// SQL AND
    And,
    /// SQL OR
    Or,
}

/// A row expression over leaf columns.
#[derive(Clone, Debug, PartialEq)]
pub enum Ir {
    /// The source's column with this index, as an exact integer (null where the column is).
    Column(usize),
    /// A constant.
    Const(i64),
    /// SQL NULL.
    Null,
    /// A binary operation.
    Binary(BinOp, Box<Ir>, Box<Ir>),
    /// Negation.
    Neg(Box<Ir>),
    /// SQL NOT.
    Not(Box<Ir>),
    /// IS NULL.
    IsNull(Box<Ir>),
    /// IS NOT NULL.
    IsNotNull(Box<Ir>),
    /// `then` where `cond` is true (not null), else `otherwise`.
    Select {
        /// Condition.
        cond: Box<Ir>,
        /// Value where the condition holds.
        then: Box<Ir>,
        /// Value elsewhere.
        otherwise: Box<Ir>,
    },
    /// `inner`, which DataFusion would reject (a cast's precision overflow) past `±max_abs`:
    /// the bounds check falls back to the CPU unless it provably stays within.
    Limited {
        /// The value.
        inner: Box<Ir>,
        /// Largest magnitude DataFusion accepts.
        max_abs: i128,
    },
}

/// Why an expression cannot run on the GPU for this data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoundsError {
    /// An intermediate value may leave i64.
    #[error("a value of {expr} may reach {bound}, past the 64-bit range the GPU computes in")]
    Overflow {
        /// The expression, as printed by `Debug`.
        expr: String,
        /// The bound that does not fit.
        bound: i128,
    },
    /// A cast may exceed its target precision.
    #[error("a value of {expr} may reach {bound}, past the cast's limit {max_abs}")]
    Precision {
        /// The expression.
        expr: String,
        /// The bound.
        bound: i128,
        /// The limit.
        max_abs: i128,
    },
}

/// Inclusive value bounds.
pub type Bounds = (i128, i128);

impl Ir {
    /// `a op b`.
    pub fn binary(op: BinOp, a: Ir, b: Ir) -> Ir {
        Ir::Binary(op, Box::new(a), Box::new(b))
    }

    /// `self × 10^k` (k = 0: `self`).
    pub fn rescale(self, k: u32) -> Ir {
        if k == 0 {
            self
        } else {
            Ir::binary(BinOp::Mul, self, Ir::Const(10i64.pow(k)))
        }
    }

    /// Every leaf column this expression reads, in first-use order.
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Ir::Column(c) => {
                if !out.contains(c) {
                    out.push(*c)
                }
            }
            Ir::Const(_) | Ir::Null => {}
            Ir::Binary(_, a, b) => {
                a.columns(out);
                b.columns(out);
            }
            Ir::Neg(a) | Ir::Not(a) | Ir::IsNull(a) | Ir::IsNotNull(a) => a.columns(out),
            Ir::Select {
                cond,
                then,
                otherwise,
            } => {
                cond.columns(out);
                then.columns(out);
                otherwise.columns(out);
            }
            Ir::Limited { inner, .. } => inner.columns(out),
        }
    }

    /// Whether this expression may be null, given which columns may hold nulls.
    pub fn nullable(&self, column: &dyn Fn(usize) -> bool) -> bool {
        match self {
            Ir::Column(c) => column(*c),
            Ir::Const(_) => false,
            Ir::Null => true,
            Ir::Binary(_, a, b) => a.nullable(column) || b.nullable(column),
            Ir::Neg(a) | Ir::Not(a) => a.nullable(column),
            Ir::IsNull(_) | Ir::IsNotNull(_) => false,
            Ir::Select {
                then, otherwise, ..
            } => then.nullable(column) || otherwise.nullable(column),
            Ir::Limited { inner, .. } => inner.nullable(column),
        }
    }

    /// Bounds of every value this expression takes, given each column's bounds; an error
    /// when any intermediate value may leave i64 (or a cast's limit).
    pub fn bounds(&self, column: &dyn Fn(usize) -> Bounds) -> Result<Bounds, BoundsError> {
        let b = match self {
            Ir::Column(c) => column(*c),
            Ir::Const(v) => (*v as i128, *v as i128),
            Ir::Null => (0, 0),
            Ir::Binary(op, a, b) => {
                let (alo, ahi) = a.bounds(column)?;
                let (blo, bhi) = b.bounds(column)?;
                match op {
                    BinOp::Add => (alo + blo, ahi + bhi),
                    BinOp::Sub => (alo - bhi, ahi - blo),
                    BinOp::Mul => {
                        let p = [alo * blo, alo * bhi, ahi * blo, ahi * bhi];
                        (*p.iter().min().unwrap_or(&0), *p.iter().max().unwrap_or(&0))
                    }
                    _ => (0, 1),
                }
            }
            Ir::Neg(a) => {
                let (lo, hi) = a.bounds(column)?;
                (-hi, -lo)
            }
            Ir::Not(a) | Ir::IsNull(a) | Ir::IsNotNull(a) => {
                a.bounds(column)?;
                (0, 1)
            }
            Ir::Select {
                cond,
                then,
                otherwise,
            } => {
                cond.bounds(column)?;
                let (tlo, thi) = then.bounds(column)?;
                let (olo, ohi) = otherwise.bounds(column)?;
                // A NULL branch contributes no value.
                match (**then == Ir::Null, **otherwise == Ir::Null) {
                    (true, false) => (olo, ohi),
                    (false, true) => (tlo, thi),
                    _ => (tlo.min(olo), thi.max(ohi)),
                }
            }
            Ir::Limited { inner, max_abs } => {
                let (lo, hi) = inner.bounds(column)?;
                for bound in [lo, hi] {
                    if bound.abs() > *max_abs {
                        return Err(BoundsError::Precision {
                            expr: format!("{inner:?}"),
                            bound,
                            max_abs: *max_abs,
                        });
                    }
                }
                (lo, hi)
            }
        };
        for bound in [b.0, b.1] {
            if bound < i64::MIN as i128 || bound > i64::MAX as i128 {
                return Err(BoundsError::Overflow {
                    expr: format!("{self:?}"),
                    bound,
                });
            }
        }
        Ok(b)
    }

    /// Appends the instructions that push this expression's value; `slot` maps a leaf
    /// column to the kernel's column slot.
    pub fn lower(&self, slot: &dyn Fn(usize) -> u32, ops: &mut Vec<Op>) {
        match self {
            Ir::Column(c) => ops.push(Op::Load(slot(*c))),
            Ir::Const(v) => ops.push(Op::Const(*v)),
            Ir::Null => ops.push(Op::Null),
            Ir::Binary(op, a, b) => {
                a.lower(slot, ops);
                b.lower(slot, ops);
                ops.push(match op {
                    BinOp::Add => Op::Add,
                    BinOp::Sub => Op::Sub,
                    BinOp::Mul => Op::Mul,
                    BinOp::Eq => Op::Eq,
                    BinOp::Ne => Op::Ne,
                    BinOp::Lt => Op::Lt,
                    BinOp::Le => Op::Le,
                    BinOp::Gt => Op::Gt,
                    BinOp::Ge => Op::Ge,
                    BinOp::And => Op::And,
                    BinOp::Or => Op::Or,
                });
            }
            Ir::Neg(a) => {
                a.lower(slot, ops);
                ops.push(Op::Neg);
            }
            Ir::Not(a) => {
                a.lower(slot, ops);
                ops.push(Op::Not);
            }
            Ir::IsNull(a) => {
                a.lower(slot, ops);
                ops.push(Op::IsNull);
            }
            Ir::IsNotNull(a) => {
                a.lower(slot, ops);
                ops.push(Op::IsNotNull);
            }
            Ir::Select {
                cond,
                then,
                otherwise,
            } => {
                otherwise.lower(slot, ops);
                then.lower(slot, ops);
                cond.lower(slot, ops);
                ops.push(Op::Select);
            }
            Ir::Limited { inner, .. } => inner.lower(slot, ops),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_arithmetic_and_refuse_overflow() {
        let col = |c: usize| if c == 0 { (-5, 7) } else { (2, 3) };
        let e = Ir::binary(
            BinOp::Mul,
            Ir::Column(0),
            Ir::binary(BinOp::Sub, Ir::Const(10), Ir::Column(1)),
        );
        assert_eq!(e.bounds(&col), Ok((-40, 56)));
        let big = Ir::binary(BinOp::Mul, Ir::Const(i64::MAX), Ir::Column(1));
        assert!(matches!(
            big.bounds(&col),
            Err(BoundsError::Overflow { .. })
        ));
        let limited = Ir::Limited {
            inner: Box::new(Ir::Column(0)),
            max_abs: 6,
        };
        assert!(matches!(
            limited.bounds(&col),
            Err(BoundsError::Precision { .. })
        ));
    }
}
