//! DataFusion physical expressions → [`Ir`], or the reason one cannot run on the GPU.
//!
//! Supported: columns of integer, Decimal128 (scale 0..=18) and Date32 type; literals of
//! those types and booleans; `+ − ×`, comparisons, AND/OR/NOT, IS [NOT] NULL, negation, IN
//! lists (as ORs of equalities, so a NULL in the list behaves as SQL says), CASE (searched and
//! simple) and widening casts between those types. BETWEEN reaches the physical plan as
//! `a >= x AND a <= y`. String columns are coded like group keys and take part only in
//! `=`, `<>` and IN against string literals and in IS [NOT] NULL ([`Ir::StrEq`]); below a
//! join, any subexpression over the lookup side alone becomes a host-evaluated lookup column
//! ([`LookupScope`]); on the streamed side, any other boolean or numeric expression over one
//! string column alone (`LIKE`, `substr(s, 1, 2) IN (…)`) becomes a code map evaluated once
//! per distinct string ([`crate::codemap`]). Division, floats and everything else are
//! refused by name.

use std::cell::RefCell;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal,
    NegativeExpr, NotExpr,
};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;

use crate::codemap::CodeMap;
use crate::ir::{BinOp, Ir};

mod float;
mod maps;

use float::float_comparison;

/// The longest IN list the GPU evaluates, as a chain of equalities. Each value is one
/// more comparison in the generated kernel, whose compile time grew quadratically with the
/// list (2,000 values: 48 s on lavapipe); DataFusion's CPU operator hashes the list once.
pub const MAX_GPU_IN_LIST: usize = 64;

/// The GPU type of a value: a number with a decimal scale, or a boolean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// An exact integer meaning `value / 10^scale`.
    Num(u32),
    /// 0 or 1.
    Bool,
    /// A string column coded like a group key ([`Ir::StrColumn`]): only compared with
    /// literals and tested for null.
    Str,
}

/// A translated expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Typed {
    /// The expression.
    pub ir: Ir,
    /// Its type.
    pub ty: Ty,
}

/// One plan level's columns: each output column as an expression over the source, or why not.
pub type Level = Vec<Result<Typed, String>>;

/// A column's origin on a lookup side: the side's index and the column's expression over
/// that side's input (`None` for a column of the streamed side).
pub type Host = Option<(usize, Arc<dyn PhysicalExpr>)>;

/// What an expression's columns mean: the plan level's columns as [`Ir`] over the source,
/// and below joins, which of them derive from one lookup side alone.
pub struct Scope<'a> {
    /// The level's schema.
    pub schema: &'a Schema,
    /// Its columns.
    pub level: &'a Level,
    /// Per column, its lookup side and expression over it where it is one (empty without a
    /// join).
    pub host: &'a [Host],
    /// The joins' lookup sides, by index, below joins.
    pub lookup: &'a [LookupScope<'a>],
    /// What the plan leaves to run time so far: code maps and values, where expressions may
    /// become them (`None`: they stay refused).
    pub deferred: Option<&'a RefCell<Deferred>>,
}

/// What a plan's expressions leave to run time.
#[derive(Debug, Default)]
pub struct Deferred {
    /// String expressions the GPU looks up by code ([`Ir::Mapped`]).
    pub maps: Vec<CodeMap>,
    /// Expressions of no column whose value is known only when the query runs (an
    /// uncorrelated scalar subquery's, `scalar_subquery(<pending>)` while planning), with
    /// their planned type ([`Ir::Param`]).
    pub params: Vec<(Arc<dyn PhysicalExpr>, Ty)>,
}

impl<'a> Scope<'a> {
    /// A scope without a join.
    pub fn plain(schema: &'a Schema, level: &'a Level) -> Self {
        Scope {
            schema,
            level,
            host: &[],
            lookup: &[],
            deferred: None,
        }
    }
}

/// One lookup side of the plan's joins, as expressions see it: a subexpression over its
/// columns alone becomes a lookup column that the host evaluates once per lookup row
/// (`lookup.rs`), gathered by the probe key.
pub struct LookupScope<'a> {
    /// The probe key.
    pub key: &'a Ir,
    /// The lookup side's schema.
    pub schema: &'a Schema,
    /// The lookup columns so far (expressions over the lookup side), shared by the levels.
    pub columns: &'a RefCell<Vec<Arc<dyn PhysicalExpr>>>,
    /// Whether the join is outer: probe rows without a match see NULL lookup columns, so
    /// only plain columns become lookup columns (`coalesce(p_size, 0)` evaluated per lookup
    /// row would not be 0 where no row matched).
    pub outer: bool,
}

impl LookupScope<'_> {
    /// `expr`, which reads this side's columns only ([`on_lookup`] gave `over_lookup`), as
    /// lookup column of side `side` when it has a type the GPU computes on (booleans
    /// included: `p_type LIKE 'PROMO%'`); `None` otherwise.
    fn derive(
        &self,
        side: usize,
        over_lookup: Arc<dyn PhysicalExpr>,
    ) -> Option<Result<Typed, String>> {
        if self.outer && over_lookup.downcast_ref::<Column>().is_none() {
            return None;
        }
        let dt = match over_lookup.data_type(self.schema) {
            Ok(dt) => dt,
            Err(e) => return Some(Err(e.to_string())),
        };
        let ty = match dt {
            DataType::Boolean => Ty::Bool,
            ref dt => column_type(dt)?,
        };
        let mut columns = self.columns.borrow_mut();
        let text = over_lookup.to_string();
        let column = match columns.iter().position(|c| c.to_string() == text) {
            Some(at) => at,
            None => {
                columns.push(over_lookup);
                columns.len() - 1
            }
        };
        Some(Ok(Typed {
            ir: Ir::Lookup {
                side,
                key: Box::new(self.key.clone()),
                column,
            },
            ty,
        }))
    }
}

/// The lookup side `expr` reads and `expr` with its columns replaced by their expressions
/// over it (`host`), when it reads at least one column and only columns of that one side.
pub fn on_lookup(
    expr: &Arc<dyn PhysicalExpr>,
    host: &[Host],
) -> Option<(usize, Arc<dyn PhysicalExpr>)> {
    let mut sides = collect_columns(expr)
        .iter()
        .map(|c| host.get(c.index()).cloned().flatten().map(|(side, _)| side))
        .collect::<Option<Vec<usize>>>()?;
    sides.sort_unstable();
    sides.dedup();
    let [side] = sides[..] else {
        // No columns, or columns of two sides.
        return None;
    };
    Arc::clone(expr)
        .transform(|e| {
            Ok(match e.downcast_ref::<Column>() {
                Some(c) => match host.get(c.index()).cloned().flatten() {
                    Some((_, h)) => Transformed::yes(h),
                    None => Transformed::no(e),
                },
                None => Transformed::no(e),
            })
        })
        .ok()
        .map(|t| (side, t.data))
}

/// The GPU type of a source column of `dt`, if the GPU computes on it.
pub fn column_type(dt: &DataType) -> Option<Ty> {
    match dt {
        DataType::Decimal128(_, s) if (0..=18).contains(s) => Some(Ty::Num(*s as u32)),
        dt if is_integer(dt) || *dt == DataType::Date32 => Some(Ty::Num(0)),
        _ => None,
    }
}

pub use crate::convert::is_integer;

/// The leaf level of `schema`: column `i` is `Ir::Column(i)` where its type is a number,
/// `Ir::StrColumn(i)` where it is a string.
pub fn leaf_level(schema: &Schema) -> Level {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match column_type(f.data_type()) {
            Some(ty) => Ok(Typed {
                ir: Ir::Column(i),
                ty,
            }),
            None if is_string(f.data_type()) => Ok(Typed {
                ir: Ir::StrColumn(i),
                ty: Ty::Str,
            }),
            None => Err(format!(
                "column {} has type {}, which the GPU plans do not compute on",
                f.name(),
                f.data_type()
            )),
        })
        .collect()
}

pub(crate) fn num_scale(t: &Typed, what: &str) -> Result<u32, String> {
    match t.ty {
        Ty::Num(s) => Ok(s),
        Ty::Bool => Err(format!("{what} of a boolean is not supported on the GPU")),
        Ty::Str => Err(format!(
            "{what} of a string is not supported on the GPU (strings are compared with literals only)"
        )),
    }
}

/// Whether `dt` is a string type the converter codes (`convert::key_type_supported`).
fn is_string(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_string(v),
        _ => false,
    }
}

/// The value of a string literal (`Some(None)`: a NULL string), or `None` for other
/// expressions.
fn string_literal(e: &Arc<dyn PhysicalExpr>) -> Option<Option<String>> {
    fn of(v: &ScalarValue) -> Option<Option<String>> {
        match v {
            ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s) => {
                Some(s.clone())
            }
            ScalarValue::Dictionary(_, inner) => of(inner),
            _ => None,
        }
    }
    of(e.downcast_ref::<Literal>()?.value())
}

/// `column = value` for a coded string column (`Ir::StrColumn`), as [`Ir::StrEq`]; SQL NULL
/// compares as NULL.
fn string_eq(column: &Typed, value: Option<String>) -> Result<Ir, String> {
    match (&column.ir, value) {
        (_, None) => Ok(Ir::Null),
        (Ir::StrColumn(c), Some(value)) => Ok(Ir::StrEq { column: *c, value }),
        _ => Err(
            "a comparison of a string expression with a literal is not supported on the GPU".into(),
        ),
    }
}

/// Both operands at one scale (the larger), as DataFusion's decimal coercion does.
fn align(a: Typed, b: Typed, what: &str) -> Result<(Ir, Ir, u32), String> {
    let (sa, sb) = (num_scale(&a, what)?, num_scale(&b, what)?);
    let s = sa.max(sb);
    Ok((a.ir.rescale(s - sa), b.ir.rescale(s - sb), s))
}

pub(crate) fn literal(value: &ScalarValue) -> Result<Typed, String> {
    let num = |v: Option<i64>, scale: u32| Typed {
        ir: v.map_or(Ir::Null, Ir::Const),
        ty: Ty::Num(scale),
    };
    Ok(match value {
        ScalarValue::Boolean(b) => Typed {
            ir: b.map_or(Ir::Null, |b| Ir::Const(b as i64)),
            ty: Ty::Bool,
        },
        ScalarValue::Int8(v) => num(v.map(i64::from), 0),
        ScalarValue::Int16(v) => num(v.map(i64::from), 0),
        ScalarValue::Int32(v) => num(v.map(i64::from), 0),
        ScalarValue::Int64(v) => num(*v, 0),
        ScalarValue::UInt8(v) => num(v.map(i64::from), 0),
        ScalarValue::UInt16(v) => num(v.map(i64::from), 0),
        ScalarValue::UInt32(v) => num(v.map(i64::from), 0),
        ScalarValue::Date32(v) => num(v.map(i64::from), 0),
        ScalarValue::Decimal128(v, _, s) if (0..=18).contains(s) => {
            let v = match v {
                Some(x) => Some(
                    i64::try_from(*x)
                        .map_err(|_| format!("the decimal literal {value} does not fit 64 bits"))?,
                ),
                None => None,
            };
            num(v, *s as u32)
        }
        other => {
            return Err(format!(
                "the literal {other} of type {} is not supported on the GPU",
                other.data_type()
            ))
        }
    })
}

/// The scale DataFusion gives a numeric result of type `dt`, if the GPU represents it.
fn result_scale(dt: &DataType) -> Option<u32> {
    match dt {
        DataType::Decimal128(_, s) if (0..=18).contains(s) => Some(*s as u32),
        dt if is_integer(dt) => Some(0),
        _ => None,
    }
}

/// `ir` limited to the range of its SQL result type `dt`. The GPU computes exactly in 64
/// bits, but DataFusion computes `Int32 * Int32` in 32 bits (wrapping) and fails a decimal
/// past its precision: a result that may leave its type's range goes to the CPU plan
/// ([`Ir::Limited`]), so both paths answer alike.
fn limited(ir: Ir, dt: &DataType) -> Ir {
    let max_abs = match dt {
        DataType::Int8 => i8::MAX as i128,
        DataType::Int16 => i16::MAX as i128,
        DataType::Int32 => i32::MAX as i128,
        DataType::Decimal128(p, _) => 10i128.pow(u32::from(*p).min(38)) - 1,
        // Int64 is the GPU's own range (checked for every value); unsigned types keep it.
        _ => return ir,
    };
    Ir::Limited {
        inner: Box::new(ir),
        max_abs,
    }
}

fn cast(inner: Typed, to: &DataType, from: &DataType) -> Result<Typed, String> {
    let s = num_scale(&inner, "a cast")?;
    let refuse = || format!("a cast from {from} to {to} is not supported on the GPU");
    let int_limit = |bits: u32| Ok::<i128, String>((1i128 << (bits - 1)) - 1);
    let (scale, max_abs) = match to {
        DataType::Int64 if s == 0 => (0, int_limit(64)?),
        DataType::Int32 if s == 0 => (0, int_limit(32)?),
        DataType::Int16 if s == 0 => (0, int_limit(16)?),
        DataType::Date32 if *from == DataType::Date32 => (0, int_limit(32)?),
        DataType::Decimal128(p, t) if (0..=18).contains(t) && *t as u32 >= s => {
            (*t as u32, 10i128.pow(*p as u32) - 1)
        }
        _ => return Err(refuse()),
    };
    Ok(Typed {
        ir: Ir::Limited {
            inner: Box::new(inner.ir.rescale(scale - s)),
            max_abs,
        },
        ty: Ty::Num(scale),
    })
}

/// Translates `expr`, whose columns are `scope`'s.
pub fn translate(expr: &Arc<dyn PhysicalExpr>, scope: &Scope<'_>) -> Result<Typed, String> {
    if let Some((side, over_lookup)) = on_lookup(expr, scope.host) {
        if let Some(t) = scope
            .lookup
            .get(side)
            .and_then(|l| l.derive(side, over_lookup))
        {
            return t;
        }
    }
    if let Some(t) = maps::code_map(expr, scope) {
        return t;
    }
    let (schema, level) = (scope.schema, scope.level);
    if let Some(c) = expr.downcast_ref::<Column>() {
        return level
            .get(c.index())
            .cloned()
            .unwrap_or_else(|| Err(format!("column {} is out of range", c.index())));
    }
    if let Some(l) = expr.downcast_ref::<Literal>() {
        return literal(l.value());
    }
    if let Some(t) = maps::param(expr, scope) {
        return t;
    }
    let sub = |e: &Arc<dyn PhysicalExpr>| translate(e, scope);
    let boolean = |ir: Ir| Typed { ir, ty: Ty::Bool };
    if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        if let Some(t) = float_comparison(b, scope)? {
            return Ok(t);
        }
        if matches!(b.op(), Operator::Eq | Operator::NotEq) {
            let sides = match (string_literal(b.left()), string_literal(b.right())) {
                (None, Some(v)) => Some((b.left(), v)),
                (Some(v), None) => Some((b.right(), v)),
                _ => None,
            };
            if let Some((column, value)) = sides {
                let eq = string_eq(&sub(column)?, value)?;
                return Ok(boolean(if *b.op() == Operator::Eq {
                    eq
                } else {
                    Ir::Not(Box::new(eq))
                }));
            }
        }
        let (l, r) = (sub(b.left())?, sub(b.right())?);
        let op = b.op();
        return match op {
            Operator::And | Operator::Or => {
                if l.ty != Ty::Bool || r.ty != Ty::Bool {
                    return Err(format!("{op} of non-booleans in {expr}"));
                }
                let op = if *op == Operator::And {
                    BinOp::And
                } else {
                    BinOp::Or
                };
                Ok(boolean(Ir::binary(op, l.ir, r.ir)))
            }
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq => {
                let cmp = match op {
                    Operator::Eq => BinOp::Eq,
                    Operator::NotEq => BinOp::Ne,
                    Operator::Lt => BinOp::Lt,
                    Operator::LtEq => BinOp::Le,
                    Operator::Gt => BinOp::Gt,
                    _ => BinOp::Ge,
                };
                if l.ty == Ty::Bool && r.ty == Ty::Bool {
                    return Ok(boolean(Ir::binary(cmp, l.ir, r.ir)));
                }
                let (a, b, _) = align(l, r, "a comparison")?;
                Ok(boolean(Ir::binary(cmp, a, b)))
            }
            Operator::Plus | Operator::Minus | Operator::Multiply => {
                let (ir, scale) = if *op == Operator::Multiply {
                    let (sa, sb) = (num_scale(&l, "×")?, num_scale(&r, "×")?);
                    (Ir::binary(BinOp::Mul, l.ir, r.ir), sa + sb)
                } else {
                    let (a, b, s) = align(l, r, "+/−")?;
                    let op = if *op == Operator::Plus {
                        BinOp::Add
                    } else {
                        BinOp::Sub
                    };
                    (Ir::binary(op, a, b), s)
                };
                let dt = expr.data_type(schema).map_err(|e| e.to_string())?;
                match result_scale(&dt) {
                    Some(s) if s == scale => Ok(Typed {
                        ir: limited(ir, &dt),
                        ty: Ty::Num(scale),
                    }),
                    _ => Err(format!(
                        "{expr} has type {dt}, which the GPU's exact arithmetic (scale {scale}) does not produce"
                    )),
                }
            }
            other => Err(format!("the operator {other} is not supported on the GPU")),
        };
    }
    if let Some(n) = expr.downcast_ref::<NotExpr>() {
        let a = sub(n.arg())?;
        if a.ty != Ty::Bool {
            return Err(format!("NOT of a non-boolean in {expr}"));
        }
        return Ok(boolean(Ir::Not(Box::new(a.ir))));
    }
    if let Some(n) = expr.downcast_ref::<NegativeExpr>() {
        let a = sub(n.arg())?;
        let s = num_scale(&a, "negation")?;
        let dt = expr.data_type(schema).map_err(|e| e.to_string())?;
        return Ok(Typed {
            ir: limited(Ir::Neg(Box::new(a.ir)), &dt),
            ty: Ty::Num(s),
        });
    }
    if let Some(n) = expr.downcast_ref::<IsNullExpr>() {
        return Ok(boolean(Ir::IsNull(Box::new(sub(n.arg())?.ir))));
    }
    if let Some(n) = expr.downcast_ref::<IsNotNullExpr>() {
        return Ok(boolean(Ir::IsNotNull(Box::new(sub(n.arg())?.ir))));
    }
    if let Some(c) = expr.downcast_ref::<CastExpr>() {
        let from = c.expr().data_type(schema).map_err(|e| e.to_string())?;
        let inner = sub(c.expr())?;
        if &from == c.cast_type() {
            return Ok(inner);
        }
        return cast(inner, c.cast_type(), &from);
    }
    if let Some(i) = expr.downcast_ref::<InListExpr>() {
        if i.list().len() > MAX_GPU_IN_LIST {
            return Err(format!(
                "an IN list of {} values: the GPU compares at most {MAX_GPU_IN_LIST} one by one, and longer lists run on the CPU's hash set",
                i.list().len()
            ));
        }
        let needle = sub(i.expr())?;
        let mut any_of: Option<Ir> = None;
        for item in i.list() {
            if needle.ty == Ty::Str {
                let value = string_literal(item)
                    .ok_or_else(|| format!("IN of a string with {item}, not a literal"))?;
                let eq = string_eq(&needle, value)?;
                any_of = Some(match any_of {
                    None => eq,
                    Some(acc) => Ir::binary(BinOp::Or, acc, eq),
                });
                continue;
            }
            let item = sub(item)?;
            let eq = if needle.ty == Ty::Bool && item.ty == Ty::Bool {
                Ir::binary(BinOp::Eq, needle.ir.clone(), item.ir)
            } else {
                let (a, b, _) = align(needle.clone(), item, "IN")?;
                Ir::binary(BinOp::Eq, a, b)
            };
            any_of = Some(match any_of {
                None => eq,
                Some(acc) => Ir::binary(BinOp::Or, acc, eq),
            });
        }
        let ir = any_of.unwrap_or(Ir::Const(0));
        return Ok(boolean(if i.negated() {
            Ir::Not(Box::new(ir))
        } else {
            ir
        }));
    }
    if let Some(c) = expr.downcast_ref::<CaseExpr>() {
        return case(c, scope);
    }
    Err(format!("the expression {expr} is not supported on the GPU"))
}

fn case(c: &CaseExpr, scope: &Scope<'_>) -> Result<Typed, String> {
    let schema = scope.schema;
    let sub = |e: &Arc<dyn PhysicalExpr>| translate(e, scope);
    let subject = c.expr().map(sub).transpose()?;
    let mut arms = Vec::new();
    for (when, then) in c.when_then_expr() {
        let when = sub(when)?;
        let cond = match &subject {
            Some(s) => {
                let (a, b, _) = align(s.clone(), when, "CASE")?;
                Ir::binary(BinOp::Eq, a, b)
            }
            None if when.ty == Ty::Bool => when.ir,
            None => return Err("a CASE condition that is not boolean".into()),
        };
        arms.push((cond, sub(then)?));
    }
    let otherwise = c.else_expr().map(sub).transpose()?;
    // Every branch at the scale DataFusion gives the result (its type).
    let dt = c.data_type(schema).map_err(|e| e.to_string())?;
    let ty = match (&dt, result_scale(&dt)) {
        (DataType::Boolean, _) => Ty::Bool,
        (DataType::Date32, _) => Ty::Num(0),
        (_, Some(s)) => Ty::Num(s),
        _ => return Err(format!("a CASE of type {dt} is not supported on the GPU")),
    };
    let fit = |t: Typed| -> Result<Ir, String> {
        match (t.ty, ty) {
            (Ty::Bool, Ty::Bool) => Ok(t.ir),
            (Ty::Num(s), Ty::Num(target)) if s <= target => Ok(t.ir.rescale(target - s)),
            _ => Err(format!(
                "a CASE branch of type {:?} in a CASE of type {dt}",
                t.ty
            )),
        }
    };
    let mut result = match otherwise {
        Some(o) => fit(o)?,
        None => Ir::Null,
    };
    for (cond, then) in arms.into_iter().rev() {
        result = Ir::Select {
            cond: Box::new(cond),
            then: Box::new(fit(then)?),
            otherwise: Box::new(result),
        };
    }
    Ok(Typed { ir: result, ty })
}
