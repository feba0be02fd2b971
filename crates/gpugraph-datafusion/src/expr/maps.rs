//! Streamed-side string expressions as code maps ([`crate::codemap`]).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;

use super::{column_type, translate, Scope, Ty, Typed};
use crate::codemap::CodeMap;
use crate::ir::Ir;

/// `expr` as a code map of `scope`'s plan ([`Ir::Mapped`]) when it reads exactly one column,
/// a coded string column of the source, is deterministic, has a boolean or GPU number type,
/// and has no plain translation (a comparison with a literal needs no table); `None`
/// otherwise, for [`translate`] to go on.
pub(super) fn code_map(
    expr: &Arc<dyn PhysicalExpr>,
    scope: &Scope<'_>,
) -> Option<Result<Typed, String>> {
    let deferred = scope.deferred?;
    if expr.downcast_ref::<Column>().is_some()
        || expr.downcast_ref::<Literal>().is_some()
        || is_volatile(expr)
    {
        return None;
    }
    let read = collect_columns(expr);
    let [column] = read.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let Ok(Typed {
        ir: Ir::StrColumn(source),
        ..
    }) = scope.level.get(column.index())?
    else {
        return None;
    };
    let source = *source;
    let ty = match expr.data_type(scope.schema).ok()? {
        DataType::Boolean => Ty::Bool,
        dt => column_type(&dt)?,
    };
    // The whole expression is one map (Q22's IN list of seven prefixes: one probe a row,
    // not seven), unless it translates without one.
    let plain = Scope {
        deferred: None,
        ..*scope
    };
    if let Ok(t) = translate(expr, &plain) {
        return Some(Ok(t));
    }
    let field = Arc::new(scope.schema.field(column.index()).clone());
    let over = Arc::clone(expr)
        .transform(|e| {
            Ok(match e.downcast_ref::<Column>() {
                Some(c) => Transformed::yes(Arc::new(Column::new(c.name(), 0)) as _),
                None => Transformed::no(e),
            })
        })
        .map(|t| t.data);
    let over = match over {
        Ok(over) => over,
        Err(e) => return Some(Err(e.to_string())),
    };
    let mut deferred = deferred.borrow_mut();
    let maps = &mut deferred.maps;
    let text = over.to_string();
    let map = match maps
        .iter()
        .position(|m| m.column == source && m.expr.to_string() == text)
    {
        Some(at) => at,
        None => {
            maps.push(CodeMap {
                column: source,
                field,
                expr: over,
            });
            maps.len() - 1
        }
    };
    Some(Ok(Typed {
        ir: Ir::Mapped {
            map,
            column: source,
        },
        ty,
    }))
}

/// `expr` as a value known when the query runs ([`Ir::Param`]) when it reads no column, is
/// deterministic and not a literal, has a boolean or GPU number type and no plain
/// translation: TPC-H Q22's `c_acctbal > (select avg(c_acctbal) …)`, whose subquery
/// DataFusion runs before the plan's input. `None` otherwise.
pub(super) fn param(
    expr: &Arc<dyn PhysicalExpr>,
    scope: &Scope<'_>,
) -> Option<Result<Typed, String>> {
    let deferred = scope.deferred?;
    if !collect_columns(expr).is_empty()
        || expr.downcast_ref::<Literal>().is_some()
        || is_volatile(expr)
    {
        return None;
    }
    let ty = match expr.data_type(scope.schema).ok()? {
        DataType::Boolean => Ty::Bool,
        dt => column_type(&dt)?,
    };
    let plain = Scope {
        deferred: None,
        ..*scope
    };
    if let Ok(t) = translate(expr, &plain) {
        return Some(Ok(t));
    }
    let mut deferred = deferred.borrow_mut();
    let params = &mut deferred.params;
    let at = match params.iter().position(|(p, _)| p.eq(expr)) {
        Some(at) => at,
        None => {
            params.push((Arc::clone(expr), ty));
            params.len() - 1
        }
    };
    Some(Ok(Typed {
        ir: Ir::Param(at),
        ty,
    }))
}
