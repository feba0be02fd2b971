//! Lookup sides with payload columns found by a GPU plan of their own (TPC-H Q12's orders
//! under `CASE`s of `o_orderpriority`, Q14's part under `p_type LIKE 'PROMO%'`): instead of
//! DataFusion collecting the side on the CPU and the host evaluating and packing every row,
//! the side's filtered rows are aggregated on the GPU into presence bitmaps over the join key
//! (the same `count(distinct key)` bitmaps a key set is found with, `semi.rs`):
//!
//! - the keys present (`count(distinct key)`) and how many non-null keys there are
//!   (`count(key)`): more keys than distinct keys is a repeated key, and the side is
//!   collected instead (whose build then refuses the join by the usual rule);
//! - for each payload column and each value it can take, the keys whose row has that value
//!   (`count(distinct CASE WHEN column = value THEN key END)`).
//!
//! So a payload column qualifies when the planner knows every value it can take: a boolean
//! expression (true, false) or a `CASE` whose branches are all literals. The bitmaps come
//! back (a bit per key and value: five bitmaps of 7.2 MiB for SF 10's 60M order keys and
//! Q12's two 0/1 columns) and the device expands them into the key map and the columns, each indexed by
//! key (`kernel/keymap.wgsl`'s `expand`; [`crate::lookup::LookupTable::from_payload_bits`]).
//! A run that refuses the data (a key or value past 32 bits, a span past a bitmap's, a NULL
//! payload, a repeated key) collects the side on the CPU instead, as before.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion::physical_expr::expressions::{case, lit, not, BinaryExpr, CaseExpr, Literal};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};

use super::GpuPlan;
use crate::lookup::LookupPlan;

/// Most value bitmaps one payload side may ask for (its columns' values together). Each is a
/// bit per key of the span, read back and expanded; collecting the side instead costs at least
/// its key and payload words per row (8 bytes and more) plus the host's filter and pack, so 16
/// bitmaps (2 bytes per key) stay cheaper on a dense key span. TPC-H Q19's part side asks for
/// 12 (six boolean conditions, true and false each).
pub const MAX_VALUE_BITMAPS: usize = 16;

/// A payload side's GPU plan and the word of each value its columns can take, in bitmap
/// order: column `j`'s values are `values[j]`, their bitmaps the plan's aggregates
/// `2 + Σ_{i<j} values[i].len()` on.
#[derive(Clone, Debug)]
pub struct PayloadPlan {
    /// The partial aggregate of the side's bitmaps ([`payload_plan`]).
    pub plan: Arc<GpuPlan>,
    /// Each payload column's value words (the words the collected side would hold).
    pub values: Vec<Vec<u32>>,
}

/// Why lookup sides with payload columns are collected on the CPU whatever their plan:
/// `GPUGRAPH_GPU_LOOKUPS=0` (to compare both ways on one binary), or not.
fn lookups_on_gpu() -> Result<(), String> {
    if std::env::var("GPUGRAPH_GPU_LOOKUPS").is_ok_and(|v| v == "0") {
        return Err("GPUGRAPH_GPU_LOOKUPS=0".into());
    }
    Ok(())
}

/// The GPU plan that finds lookup side `l`'s keys and payload words ([`PayloadPlan`]), or why
/// the side is collected on the CPU: a key set (`semi.rs` finds those), a side with group
/// keys (the host takes their values by lookup row), a non-integer key, a payload column
/// whose values the planner cannot list, or a side the GPU does not aggregate. An outer
/// join's side qualifies: a key absent from the map gathers NULL either way.
pub fn payload_plan(l: &LookupPlan) -> Result<PayloadPlan, String> {
    if l.set.is_some() {
        return Err("a key set".into());
    }
    if !l.groups.is_empty() {
        return Err("its group keys are taken on the host by lookup row".into());
    }
    let schema = l.input.schema();
    let fail = |e: datafusion::error::DataFusionError| e.to_string();
    let key_type = l.key.data_type(&schema).map_err(fail)?;
    if !key_type.is_integer() {
        return Err(format!("the join key {} is a {key_type}", l.key));
    }
    let mut values = Vec::new();
    let mut present = Vec::new();
    for c in &l.columns {
        let (words, conditions) = enumerated(c, &schema)?;
        values.push(words);
        present.extend(conditions);
    }
    if present.len() > MAX_VALUE_BITMAPS {
        return Err(format!(
            "the payload columns take {} values; the GPU's lookup bitmaps take at most {MAX_VALUE_BITMAPS}",
            present.len()
        ));
    }
    let count = |arg: Arc<dyn PhysicalExpr>, name: String, distinct: bool| {
        let b = AggregateExprBuilder::new(count_udaf(), vec![arg])
            .schema(Arc::clone(&schema))
            .alias(name);
        let b = if distinct { b.distinct() } else { b };
        b.build().map(Arc::new)
    };
    let mut aggregates: Vec<Arc<AggregateFunctionExpr>> = vec![
        count(Arc::clone(&l.key), "keys".into(), true).map_err(fail)?,
        count(Arc::clone(&l.key), "rows".into(), false).map_err(fail)?,
    ];
    for (i, condition) in present.into_iter().enumerate() {
        let keyed = case(None, vec![(condition, Arc::clone(&l.key))], None).map_err(fail)?;
        aggregates.push(count(keyed, format!("value{i}"), true).map_err(fail)?);
    }
    let filters = vec![None; aggregates.len()];
    let agg = AggregateExec::try_new(
        AggregateMode::Partial,
        PhysicalGroupBy::new_single(Vec::new()),
        aggregates,
        filters,
        Arc::clone(&l.input),
        Arc::clone(&schema),
    )
    .map_err(fail)?;
    let plan = super::plan(&agg)?;
    // Last: where the side qualifies, the switch is why it is collected.
    lookups_on_gpu()?;
    Ok(PayloadPlan {
        plan: Arc::new(plan),
        values,
    })
}

/// Each value payload column `c` can take, as its lookup word, with the condition that a row
/// has it; why not when the planner cannot list them.
type Enumerated = (Vec<u32>, Vec<Arc<dyn PhysicalExpr>>);

/// [`Enumerated`] of `c` over `schema`: true and false for a boolean expression, the
/// distinct literals of a `CASE` whose every branch is one (a NULL branch adds no value: a
/// row that takes it has no bit, and the run refuses the NULL).
fn enumerated(
    c: &Arc<dyn PhysicalExpr>,
    schema: &datafusion::arrow::datatypes::Schema,
) -> Result<Enumerated, String> {
    let fail = |e: datafusion::error::DataFusionError| e.to_string();
    let dt = c.data_type(schema).map_err(fail)?;
    if dt == DataType::Boolean {
        let negated = not(Arc::clone(c)).map_err(fail)?;
        return Ok((vec![1, 0], vec![Arc::clone(c), negated]));
    }
    let unlisted = || format!("the payload column {c} is not a boolean or a CASE of literals");
    let Some(e) = c.downcast_ref::<CaseExpr>() else {
        return Err(unlisted());
    };
    let branches = e
        .when_then_expr()
        .iter()
        .map(|(_, then)| then)
        .chain(e.else_expr());
    let mut values: Vec<ScalarValue> = Vec::new();
    for b in branches {
        let Some(l) = b.downcast_ref::<Literal>() else {
            return Err(unlisted());
        };
        let v = l.value();
        // A branch of another type (a decimal of another scale) would stand for other words.
        if !v.is_null() && v.data_type() != dt {
            return Err(unlisted());
        }
        if !v.is_null() && !values.contains(v) {
            values.push(v.clone());
        }
    }
    let mut words = Vec::new();
    let mut conditions = Vec::new();
    for v in values {
        words.push(word(&v).ok_or_else(|| {
            format!("the payload column {c} takes {v}, which the GPU's lookups do not carry")
        })?);
        let equal: Arc<dyn PhysicalExpr> =
            Arc::new(BinaryExpr::new(Arc::clone(c), Operator::Eq, lit(v)));
        conditions.push(equal);
    }
    Ok((words, conditions))
}

/// The lookup word of `v` as a collected side holds it (`lookup/evaluate.rs`'s `words`):
/// integers and dates as i32, decimals' unscaled values; `None` past 32 bits or for another
/// type.
fn word(v: &ScalarValue) -> Option<u32> {
    let wide: i128 = match v {
        ScalarValue::Int8(Some(x)) => *x as i128,
        ScalarValue::Int16(Some(x)) => *x as i128,
        ScalarValue::Int32(Some(x)) => *x as i128,
        ScalarValue::Int64(Some(x)) => *x as i128,
        ScalarValue::UInt8(Some(x)) => *x as i128,
        ScalarValue::UInt16(Some(x)) => *x as i128,
        ScalarValue::UInt32(Some(x)) => *x as i128,
        ScalarValue::Date32(Some(x)) => *x as i128,
        ScalarValue::Decimal128(Some(x), _, s) if (0..=18).contains(s) => *x,
        _ => return None,
    };
    i32::try_from(wide).ok().map(|x| x as u32)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::physical_expr::expressions::col;

    use super::*;

    /// Booleans list true then false; a CASE of literals lists its distinct non-null
    /// branches; anything else, or a value past 32 bits, is refused by name.
    #[test]
    fn payload_values_are_listed() {
        let schema = Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("b", DataType::Boolean, true),
            Field::new("v", DataType::Int64, true),
        ]);
        let b = col("b", &schema).unwrap();
        let v = col("v", &schema).unwrap();
        assert_eq!(enumerated(&b, &schema).unwrap().0, [1, 0]);
        let branches = vec![
            (Arc::clone(&b), lit(3i64)),
            (Arc::clone(&b), lit(ScalarValue::Int64(None))),
            (Arc::clone(&b), lit(-2i64)),
        ];
        let e = case(None, branches, Some(lit(3i64))).unwrap();
        let (words, conditions) = enumerated(&e, &schema).unwrap();
        assert_eq!(words, [3, -2i32 as u32]);
        assert_eq!(conditions.len(), 2);
        let why = enumerated(&v, &schema).unwrap_err();
        assert!(why.contains("not a boolean or a CASE of literals"), "{why}");
        let wide = case(None, vec![(b, lit(1i64 << 40))], None).unwrap();
        let why = enumerated(&wide, &schema).unwrap_err();
        assert!(
            why.contains("which the GPU's lookups do not carry"),
            "{why}"
        );
        let d = ScalarValue::Decimal128(Some(-1234), 12, 2);
        assert_eq!(word(&d), Some(-1234i32 as u32));
        assert_eq!(word(&ScalarValue::Date32(Some(9000))), Some(9000));
        assert_eq!(word(&ScalarValue::Utf8(Some("x".into()))), None);
    }
}
