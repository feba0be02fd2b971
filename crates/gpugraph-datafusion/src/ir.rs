//! Row expressions over exact integers: what a supported DataFusion expression becomes
//! (`expr.rs`), its value bounds from column statistics, and its lowering to [`Op`]s.
//!
//! Every numeric value is an unscaled integer with a decimal scale fixed at planning time
//! (decimals keep their scale, integers and dates have scale 0), so `a + b` over decimals of
//! different scales multiplies the smaller-scale side by a power of ten first, as DataFusion's
//! decimal arithmetic does, and the result is exact whenever every intermediate value fits
//! i64 — which [`Ir::bounds`] proves from the input columns' minimum and maximum before any
//! launch.

use crate::program::{LookupShape, Op};

/// A leaf an expression reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// The source's column with this index.
    Column(usize),
    /// Column `j` of lookup side `side` (`lookup.rs`): (side, j).
    Lookup(usize, usize),
    /// The value of code map `m` ([`Ir::Mapped`]).
    Map(usize),
}

/// What lowering needs besides the expression: kernel slots of source columns, the codes of
/// coded (string) columns, and each lookup side's part of the lookup buffer when the plan
/// joins.
pub struct Lowering<'a> {
    /// The kernel's column slot of a source column (a number, or a coded column's codes).
    pub slot: &'a dyn Fn(usize) -> u32,
    /// The code of a string (`None`: of NULL) in a coded source column, if any row has it.
    pub code: &'a dyn Fn(usize, Option<&str>) -> Option<u32>,
    /// Each lookup side's layout in the lookup buffer (none without a join).
    pub lookup: &'a [LookupShape],
    /// Each code map's layout in the lookup buffer ([`Ir::Mapped`]), after the joins' sides.
    pub maps: &'a [LookupShape],
}

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
    /// Lookup column `column` of lookup side `side`'s row whose key equals `key` (a
    /// many-to-one join); null where no row has that key.
    Lookup {
        /// Which lookup side.
        side: usize,
        /// The probe key.
        key: Box<Ir>,
        /// The lookup column.
        column: usize,
    },
    /// Whether lookup side `.0` has a row with key `.1` (never null): an inner join's match,
    /// a semi join's membership test, and negated, an anti join's (a null key is in no set).
    Matched(usize, Box<Ir>),
    /// SQL's `.1 NOT IN (the keys of lookup side .0)`, as DataFusion's null-aware anti join
    /// decides it: false for every row when the side has a null key, true for every row
    /// (null keys included) when it has no rows, else whether `.1` is not null and not in the
    /// side's keys. The side's nulls and rows are known at run time only, so the lowering
    /// reads them from its [`LookupShape`].
    NotIn(usize, Box<Ir>),
    /// A string column of the source, coded like a group key: 0, null where the string is.
    /// Only its nulls and its comparisons with literals ([`Ir::StrEq`]) reach the GPU.
    StrColumn(usize),
    /// The value of code map `map` ([`crate::codemap::CodeMap`]: a string expression over
    /// coded column `column` alone, evaluated once per distinct string on the host) at the
    /// row's code: a probe of the map's key map (code → row, no row where the expression is
    /// NULL) and a gather of its one column, so NULL where DataFusion's expression is.
    Mapped {
        /// The code map.
        map: usize,
        /// The coded source column.
        column: usize,
    },
    /// Value `.0` of the plan's values known when the query runs
    /// ([`crate::plan::GpuPlan::params`]); replaced by its constant before a program is
    /// built ([`crate::plan::GpuPlan::resolved`]).
    Param(usize),
    /// Whether the coded string column `column` equals `value` (null where it is null).
    StrEq {
        /// The source column.
        column: usize,
        /// The literal.
        value: String,
    },
    /// `inner`, which DataFusion would reject or wrap past `±max_abs` (a cast's precision
    /// overflow, an `Int32` product past 32 bits): the bounds check falls back to the CPU
    /// unless it provably stays within.
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
    /// A cast or arithmetic result may exceed its SQL type's range, where DataFusion's CPU
    /// operators would wrap or fail: the CPU plan decides, so both paths give one answer.
    #[error("a value of {expr} may reach {bound}, past its SQL type's limit {max_abs}")]
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

    /// Calls `f` on this expression and every subexpression, parents first.
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Ir)) {
        f(self);
        match self {
            Ir::Column(_)
            | Ir::Const(_)
            | Ir::Null
            | Ir::StrColumn(_)
            | Ir::StrEq { .. }
            | Ir::Mapped { .. }
            | Ir::Param(_) => {}
            Ir::Binary(_, a, b) => {
                a.walk_mut(f);
                b.walk_mut(f);
            }
            Ir::Neg(a)
            | Ir::Not(a)
            | Ir::IsNull(a)
            | Ir::IsNotNull(a)
            | Ir::Matched(_, a)
            | Ir::NotIn(_, a) => a.walk_mut(f),
            Ir::Lookup { key, .. } => key.walk_mut(f),
            Ir::Select {
                cond,
                then,
                otherwise,
            } => {
                cond.walk_mut(f);
                then.walk_mut(f);
                otherwise.walk_mut(f);
            }
            Ir::Limited { inner, .. } => inner.walk_mut(f),
        }
    }

    /// Whether this expression is NULL whenever every source column it reads is, whatever
    /// else: an outer join's NULL-extended row has NULL streamed columns.
    pub fn strict(&self) -> bool {
        match self {
            Ir::Column(_) | Ir::StrColumn(_) => true,
            Ir::Binary(op, a, b) => {
                !matches!(op, BinOp::And | BinOp::Or) && (a.strict() || b.strict())
            }
            Ir::Neg(a) | Ir::Not(a) => a.strict(),
            Ir::Limited { inner, .. } => inner.strict(),
            _ => false,
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
            Ir::Const(_)
            | Ir::Null
            | Ir::StrColumn(_)
            | Ir::StrEq { .. }
            | Ir::Mapped { .. }
            | Ir::Param(_) => {}
            Ir::Binary(_, a, b) => {
                a.columns(out);
                b.columns(out);
            }
            Ir::Neg(a)
            | Ir::Not(a)
            | Ir::IsNull(a)
            | Ir::IsNotNull(a)
            | Ir::Matched(_, a)
            | Ir::NotIn(_, a) => a.columns(out),
            Ir::Lookup { key, .. } => key.columns(out),
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

    /// Every coded string column this expression reads, in first-use order.
    pub fn strings(&self, out: &mut Vec<usize>) {
        let mut push = |c: usize| {
            if !out.contains(&c) {
                out.push(c)
            }
        };
        match self {
            Ir::StrColumn(c) | Ir::StrEq { column: c, .. } | Ir::Mapped { column: c, .. } => {
                push(*c)
            }
            Ir::Column(_) | Ir::Const(_) | Ir::Null | Ir::Param(_) => {}
            Ir::Binary(_, a, b) => {
                a.strings(out);
                b.strings(out);
            }
            Ir::Neg(a)
            | Ir::Not(a)
            | Ir::IsNull(a)
            | Ir::IsNotNull(a)
            | Ir::Matched(_, a)
            | Ir::NotIn(_, a) => a.strings(out),
            Ir::Lookup { key, .. } => key.strings(out),
            Ir::Select {
                cond,
                then,
                otherwise,
            } => {
                cond.strings(out);
                then.strings(out);
                otherwise.strings(out);
            }
            Ir::Limited { inner, .. } => inner.strings(out),
        }
    }

    /// Whether this expression may be null, given which leaves may hold nulls (a lookup is
    /// null where no row matches unless `Leaf::Lookup` says the plan drops such rows).
    pub fn nullable(&self, column: &dyn Fn(Leaf) -> bool) -> bool {
        match self {
            Ir::Column(c) => column(Leaf::Column(*c)),
            Ir::Lookup {
                side,
                key,
                column: j,
            } => key.nullable(column) || column(Leaf::Lookup(*side, *j)),
            Ir::Matched(..) | Ir::NotIn(..) => false,
            Ir::Mapped { map, .. } => column(Leaf::Map(*map)),
            Ir::StrColumn(_) | Ir::StrEq { .. } | Ir::Param(_) => true,
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
    pub fn bounds(&self, column: &dyn Fn(Leaf) -> Bounds) -> Result<Bounds, BoundsError> {
        let b = match self {
            Ir::Column(c) => column(Leaf::Column(*c)),
            Ir::Lookup {
                side,
                key,
                column: j,
            } => {
                probe_bounds(key, column)?;
                column(Leaf::Lookup(*side, *j))
            }
            Ir::Matched(_, key) | Ir::NotIn(_, key) => {
                probe_bounds(key, column)?;
                (0, 1)
            }
            Ir::Const(v) => (*v as i128, *v as i128),
            Ir::Null | Ir::StrColumn(_) => (0, 0),
            Ir::StrEq { .. } => (0, 1),
            Ir::Mapped { map, .. } => column(Leaf::Map(*map)),
            // Unresolved: any value, so no arithmetic on it passes.
            Ir::Param(_) => (i64::MIN as i128, i64::MAX as i128),
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

    /// Appends the instructions that push this expression's value.
    pub fn lower(&self, to: &Lowering<'_>, ops: &mut Vec<Op>) {
        match self {
            Ir::Column(c) => ops.push(Op::Load((to.slot)(*c))),
            Ir::Lookup { side, key, column } => {
                probe(*side, key, to, ops);
                let at = to
                    .lookup
                    .get(*side)
                    .map_or(0, |l| l.columns.get(*column).copied().unwrap_or(0));
                ops.push(Op::Const(at as i64));
                ops.push(Op::Gather);
            }
            Ir::Matched(side, key) => {
                probe(*side, key, to, ops);
                ops.push(Op::IsNotNull);
            }
            Ir::NotIn(side, key) => match to.lookup.get(*side) {
                Some(s) if s.null_keys => ops.push(Op::Const(0)),
                Some(s) if s.empty => ops.push(Op::Const(1)),
                _ => {
                    probe(*side, key, to, ops);
                    ops.push(Op::IsNull);
                    key.lower(to, ops);
                    ops.push(Op::IsNotNull);
                    ops.push(Op::And);
                }
            },
            Ir::Const(v) => ops.push(Op::Const(*v)),
            Ir::Null | Ir::Param(_) => ops.push(Op::Null),
            Ir::StrColumn(c) => coded(*c, &[Op::Const(0)], to, ops),
            Ir::Mapped { map, column } => {
                // Codes are never null (NULL has a code of its own), and the map's keys are
                // the codes from 0.
                let shape = to.maps.get(*map);
                probe_shape(shape, &[Op::Load((to.slot)(*column))], ops);
                let at = shape.map_or(0, |s| s.columns.first().copied().unwrap_or(0));
                ops.push(Op::Const(at as i64));
                ops.push(Op::Gather);
            }
            Ir::StrEq { column, value } => {
                let eq = match (to.code)(*column, Some(value)) {
                    Some(code) => {
                        vec![Op::Load((to.slot)(*column)), Op::Const(code as i64), Op::Eq]
                    }
                    // No row has the value: false wherever the string is not null.
                    None => vec![Op::Const(0)],
                };
                coded(*column, &eq, to, ops);
            }
            Ir::Binary(op, a, b) => {
                a.lower(to, ops);
                b.lower(to, ops);
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
                a.lower(to, ops);
                ops.push(Op::Neg);
            }
            Ir::Not(a) => {
                a.lower(to, ops);
                ops.push(Op::Not);
            }
            Ir::IsNull(a) => {
                a.lower(to, ops);
                ops.push(Op::IsNull);
            }
            Ir::IsNotNull(a) => {
                a.lower(to, ops);
                ops.push(Op::IsNotNull);
            }
            Ir::Select {
                cond,
                then,
                otherwise,
            } => {
                otherwise.lower(to, ops);
                then.lower(to, ops);
                cond.lower(to, ops);
                ops.push(Op::Select);
            }
            Ir::Limited { inner, .. } => inner.lower(to, ops),
        }
    }
}

/// Pushes `value`'s instructions' value, or null where coded column `c` holds NULL's code.
fn coded(c: usize, value: &[Op], to: &Lowering<'_>, ops: &mut Vec<Op>) {
    ops.extend_from_slice(value);
    if let Some(null) = (to.code)(c, None) {
        // (else, then, condition) for Select.
        ops.push(Op::Null);
        ops.extend([
            Op::Load((to.slot)(c)),
            Op::Const(null as i64),
            Op::Eq,
            Op::Select,
        ]);
    }
}

/// Checks a probe key: besides its own bounds, its offset from the first lookup key (an i32)
/// must fit i64.
fn probe_bounds(key: &Ir, column: &dyn Fn(Leaf) -> Bounds) -> Result<(), BoundsError> {
    let (lo, hi) = key.bounds(column)?;
    let reach = i64::MAX as i128 - (1i128 << 31);
    for bound in [lo, hi] {
        if bound.abs() > reach {
            return Err(BoundsError::Overflow {
                expr: format!("{key:?}"),
                bound,
            });
        }
    }
    Ok(())
}

/// Pushes lookup side `side`'s row of `key` (null without one): its offset from the first
/// key, checked against the key count, in the side's key map.
pub(crate) fn probe(side: usize, key: &Ir, to: &Lowering<'_>, ops: &mut Vec<Op>) {
    let mut key_ops = Vec::new();
    key.lower(to, &mut key_ops);
    probe_shape(to.lookup.get(side), &key_ops, ops);
}

/// Pushes the row of the key that `key` pushes in the key map `shape` (null without one).
fn probe_shape(shape: Option<&LookupShape>, key: &[Op], ops: &mut Vec<Op>) {
    let (first, keys, base) = shape.map_or((0, 0, 0), |l| (l.first_key, l.keys, l.base));
    ops.extend_from_slice(key);
    ops.push(Op::Const(first));
    ops.push(Op::Sub);
    ops.push(Op::Const(keys as i64));
    ops.push(Op::Const(base as i64));
    ops.push(Op::Probe);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_arithmetic_and_refuse_overflow() {
        let col = |c: Leaf| {
            if c == Leaf::Column(0) {
                (-5, 7)
            } else {
                (2, 3)
            }
        };
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
