//! String expressions on dictionary codes: a deterministic expression over one coded string
//! column alone (TPC-H Q22's `substring(c_phone from 1 for 2) in ('13', …)`, `s LIKE p`,
//! `length(s) > 3`, `upper(s) = 'X'`) whose value is a boolean or a number. The row's string
//! is already a code of its column's dictionary (`convert.rs`), so the host evaluates the
//! expression once per distinct string, through DataFusion's own physical expression over
//! the dictionary's values (its semantics, NULLs included, exactly), and the GPU looks the
//! row's value up by code: the values become a lookup side keyed by code ([`CodeMap::table`])
//! whose key map has no row for a code where the expression is NULL, so the probe and gather
//! of [`crate::ir::Ir::Mapped`] give NULL there, as DataFusion does.
//!
//! The dictionary is complete only when the last batch is converted, so the table is built
//! at run time, beside the joins' lookup sides, and placed after them in the lookup buffer.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Int64Array, UInt32Array};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::empty::EmptyExec;

use crate::convert::local_codes;
use crate::lookup::{LookupPlan, LookupTable};

/// Lookup rows per batch of a code map's table: the table's evaluation into words runs one
/// batch per core (Q22's `c_phone` has a distinct value per customer: 15M at SF 100).
const TABLE_BATCH: usize = 1 << 16;

/// One string expression the GPU evaluates by code (see the module docs).
#[derive(Clone, Debug)]
pub struct CodeMap {
    /// The coded source column the expression reads.
    pub column: usize,
    /// That column's field (its name and Arrow type, as the plan types the expression).
    pub field: FieldRef,
    /// The expression, over a schema of the one column `field` (column 0).
    pub expr: Arc<dyn PhysicalExpr>,
}

impl CodeMap {
    /// The expression's value for each entry of `values` (the column's distinct values in
    /// code order, a NULL entry where NULL has a code): DataFusion's evaluation, so this is
    /// also the oracle of what a row of that value computes. `values` may come in another
    /// string encoding than the plan's (the Parquet scan reads dictionaries): it is cast to
    /// the field's type first.
    pub fn evaluate(&self, values: &ArrayRef) -> Result<ArrayRef, String> {
        let dt = self.field.data_type();
        let values = if values.data_type() == dt {
            Arc::clone(values)
        } else {
            cast(values, dt).map_err(|e| format!("casting {}'s values: {e}", self.field))?
        };
        let field = Field::new(self.field.name(), dt.clone(), true);
        let schema = Arc::new(Schema::new(vec![field]));
        let rows = values.len();
        let batch = RecordBatch::try_new(schema, vec![values])
            .map_err(|e| format!("the values of {}: {e}", self.field.name()))?;
        self.expr
            .evaluate(&batch)
            .and_then(|v| v.into_array(rows))
            .map_err(|e| format!("evaluating {} over its distinct values: {e}", self.expr))
    }

    /// The lookup side the GPU probes by code: one row per code whose value is not NULL,
    /// keyed by the code, with the value as its one column (booleans as 0/1, numbers as
    /// i32 words); `values` as for [`Self::evaluate`]. An error (a value past 32 bits, an
    /// evaluation DataFusion fails) says why the GPU cannot take the expression.
    pub fn table(&self, values: &ArrayRef) -> Result<LookupTable, String> {
        let evaluated = self.evaluate(values)?;
        let kept: Vec<u32> = (0..evaluated.len() as u32)
            .filter(|&c| evaluated.is_valid(c as usize))
            .collect();
        let codes = Int64Array::from_iter_values(kept.iter().map(|&c| i64::from(c)));
        let value =
            take(evaluated.as_ref(), &UInt32Array::from(kept), None).map_err(|e| e.to_string())?;
        self.lookup(codes, value)
    }

    /// The lookup side of a group key (TPC-H Q22's `cntrycode`): the expression's distinct
    /// values over `values` (as for [`Self::evaluate`]) coded in first-seen order, NULL
    /// one value of its own as SQL groups it, every code's row holding its value's code;
    /// and those distinct values, by value code.
    pub fn key_table(&self, values: &ArrayRef) -> Result<(LookupTable, ArrayRef), String> {
        let evaluated = self.evaluate(values)?;
        let (codes, distinct) =
            local_codes(evaluated.as_ref(), self.field.name()).map_err(|m| m.to_string())?;
        let firsts = UInt32Array::from_iter_values(distinct.iter().map(|(_, row)| *row as u32));
        let keys = take(evaluated.as_ref(), &firsts, None).map_err(|e| e.to_string())?;
        let all = Int64Array::from_iter_values(0..codes.len() as i64);
        let value: ArrayRef = Arc::new(Int64Array::from_iter_values(
            codes.iter().map(|&c| i64::from(c)),
        ));
        Ok((self.lookup(all, value)?, keys))
    }

    /// The lookup side of rows keyed by `codes` holding `value`.
    fn lookup(&self, codes: Int64Array, value: ArrayRef) -> Result<LookupTable, String> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("code", DataType::Int64, false),
            Field::new("value", value.data_type().clone(), false),
        ]));
        let rows = codes.len();
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(codes), value])
            .map_err(|e| e.to_string())?;
        let batches: Vec<RecordBatch> = (0..rows.div_ceil(TABLE_BATCH).max(1))
            .map(|b| {
                let at = b * TABLE_BATCH;
                batch.slice(at, TABLE_BATCH.min(rows - at))
            })
            .collect();
        let column = |i: usize| -> Arc<dyn PhysicalExpr> {
            Arc::new(Column::new(schema.field(i).name(), i))
        };
        LookupPlan {
            input: Arc::new(EmptyExec::new(Arc::clone(&schema))),
            key: column(0),
            columns: vec![column(1)],
            groups: Vec::new(),
            outer: true,
            set: None,
        }
        .build(&batches)
        .map_err(|why| format!("{}: {why}", self.expr))
    }
}

impl std::fmt::Display for CodeMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.expr)
    }
}

#[cfg(test)]
mod tests;
