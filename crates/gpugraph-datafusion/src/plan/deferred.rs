//! What a GPU plan leaves to run time besides its data: values of scalar subqueries
//! ([`GpuPlan::resolved`]) and group keys that are string expressions ([`derived_key`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;

use super::GpuPlan;
use crate::codemap::CodeMap;
use crate::expr::literal;
use crate::ir::Ir;

impl GpuPlan {
    /// This plan with each value known at run time ([`Self::params`]) evaluated (by
    /// DataFusion, once its scalar subqueries have run) and put in as a constant; why not,
    /// when one has no GPU value of its planned type.
    pub fn resolved(&self) -> Result<GpuPlan, String> {
        let options = RecordBatchOptions::new().with_row_count(Some(1));
        let one = RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options)
            .map_err(|e| e.to_string())?;
        let mut values = Vec::with_capacity(self.params.len());
        for (expr, ty) in &self.params {
            let value = expr
                .evaluate(&one)
                .and_then(|v| v.into_array(1))
                .and_then(|a| ScalarValue::try_from_array(&a, 0))
                .map_err(|e| format!("evaluating {expr}: {e}"))?;
            let t = literal(&value).map_err(|why| format!("{expr}: {why}"))?;
            if t.ty != *ty {
                return Err(format!("{expr} is {value}, not of its planned type"));
            }
            values.push(t.ir);
        }
        let mut plan = self.clone();
        let mut put = |n: &mut Ir| {
            if let Ir::Param(i) = n {
                *n = values.get(*i).cloned().unwrap_or(Ir::Null);
            }
        };
        for p in &mut plan.predicates {
            p.walk_mut(&mut put);
        }
        for a in &mut plan.aggregates {
            a.arg.walk_mut(&mut put);
        }
        if let Some((_, key)) = &mut plan.lookup_row {
            key.walk_mut(&mut put);
        }
        Ok(plan)
    }
}

/// `expr`, a projection's expression over `schema` whose columns come from the source as
/// `origin` says, as a group-key code map when it reads one source string column alone, is
/// deterministic and has a string or integer type (whose values the host codes exactly).
pub(super) fn derived_key(
    expr: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
    origin: &[Option<usize>],
) -> Option<CodeMap> {
    if expr.downcast_ref::<Column>().is_some() || is_volatile(expr) {
        return None;
    }
    let read = collect_columns(expr);
    let [column] = read.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let source = origin.get(column.index()).copied().flatten()?;
    let field = Arc::new(schema.field(column.index()).clone());
    let out = expr.data_type(schema).ok()?;
    if !is_string(field.data_type()) || !(is_string(&out) || crate::expr::is_integer(&out)) {
        return None;
    }
    let over = Arc::clone(expr)
        .transform(|e| {
            Ok(match e.downcast_ref::<Column>() {
                Some(c) => Transformed::yes(Arc::new(Column::new(c.name(), 0)) as _),
                None => Transformed::no(e),
            })
        })
        .ok()?
        .data;
    Some(CodeMap {
        column: source,
        field,
        expr: over,
    })
}

/// Whether `dt` is a string type (plain or dictionary-encoded).
fn is_string(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_string(v),
        _ => false,
    }
}
