//! [`ExpressionOperation`]: the expression language (`crate::expr`) as a graph operation.
//!
//! This is the connection between the two layers: the contract reads every identifier the
//! expression uses (vectors and scalars of the graph's scope, including results of earlier
//! operations such as a dot product's GPU scalar) and writes one result whose type the
//! expression infers; the lowering binds the resolved views and scalars (host values or
//! one-row GPU views, [`crate::expr::ScalarBinding`]) to an [`ExpressionKernel`], which adds
//! one compute node. The compiled expression and its pipeline are cached in the operation.

use std::sync::Mutex;

use gpugraph_command::VectorFormat;

use crate::expr::types::FUNCTIONS;
use crate::expr::{
    compile_expression, parse, Expr, ExprKind, ExpressionKernel, ExpressionOptions,
    ExpressionSource, IntegerRounding, ScalarBinding, ScalarType,
};
use crate::graph::declaration::ValueSpec;
use crate::graph::error::{BoxError, ProgramError};
use crate::lowering::{LowerContext, Lowering};
use crate::operation::{Operation, OperationContract, Scope, Shape};

/// Type name of [`ExpressionOperation`].
pub const TYPE: &str = "expression";

type Signature = (Vec<(String, VectorFormat)>, Vec<(String, ScalarType)>);

/// `output = <expression>` over named graph values. Row-sized expressions produce one row per
/// row of their vector inputs (same chunk boundaries, which all vector inputs must share);
/// expressions over scalars only produce one row. Default id: `<output>-expression`.
pub struct ExpressionOperation {
    id: String,
    output: String,
    source: ExpressionSource,
    rounding: IntegerRounding,
    /// Compiled kernels by the declarations they were checked against (an operation shared by
    /// several graphs may see different formats).
    kernels: Mutex<Vec<(Signature, ExpressionKernel)>>,
}

impl std::fmt::Debug for ExpressionOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExpressionOperation")
            .field("id", &self.id)
            .field("output", &self.output)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl ExpressionOperation {
    /// `output = expression` (text or AST).
    pub fn new(output: impl Into<String>, expression: impl Into<ExpressionSource>) -> Self {
        let output = output.into();
        Self {
            id: format!("{output}-expression"),
            output,
            source: expression.into(),
            rounding: IntegerRounding::Truncate,
            kernels: Mutex::new(Vec::new()),
        }
    }
    /// The same operation with id `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
    /// The same operation with float→integer cast rounding `rounding`.
    pub fn with_rounding(mut self, rounding: IntegerRounding) -> Self {
        self.rounding = rounding;
        self
    }
    /// The result name.
    pub fn output(&self) -> &str {
        &self.output
    }

    fn ast(&self) -> Result<Expr, BoxError> {
        match &self.source {
            ExpressionSource::Ast(a) => Ok(a.clone()),
            ExpressionSource::Text(t) => {
                parse(t).map_err(|e| Box::new(e.with_operation(&self.id)) as BoxError)
            }
        }
    }
}

/// Identifiers in first-use order, excluding intrinsic callee names.
fn identifiers(e: &Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Identifier(name) => {
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
        ExprKind::Number(_) => {}
        ExprKind::Neg(x) => identifiers(x, out),
        ExprKind::Binary { left, right, .. } => {
            identifiers(left, out);
            identifiers(right, out);
        }
        ExprKind::Call { callee, args } => {
            if !matches!(callee.kind, ExprKind::Identifier(_)) {
                identifiers(callee, out);
            }
            for a in args {
                identifiers(a, out);
            }
        }
        ExprKind::Member { object, .. } => identifiers(object, out),
    }
}

/// The vector inputs and scalars an expression reads, in first-use order, with their types as
/// `lookup` declares them; an undeclared name is [`ProgramError::UnknownValue`] (intrinsic
/// names used as identifiers are left to the type checker).
fn signature(
    id: &str,
    names: &[String],
    lookup: impl Fn(&str) -> Option<ValueSpec>,
) -> Result<Signature, ProgramError> {
    let mut inputs = Vec::new();
    let mut scalars = Vec::new();
    for name in names {
        match lookup(name) {
            Some(ValueSpec::Vector(v)) => inputs.push((name.clone(), v.format)),
            Some(ValueSpec::Scalar(t)) => scalars.push((name.clone(), t)),
            Some(ValueSpec::Texture(_)) => {
                return Err(ProgramError::TexturesUnsupported {
                    operation: id.to_string(),
                    value: name.clone(),
                })
            }
            None if FUNCTIONS.contains(&name.as_str()) => {}
            None => {
                return Err(ProgramError::UnknownValue {
                    operation: id.to_string(),
                    value: name.clone(),
                })
            }
        }
    }
    Ok((inputs, scalars))
}

impl Operation for ExpressionOperation {
    operation_identity!(TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        let ast = self.ast()?;
        let mut names = Vec::new();
        identifiers(&ast, &mut names);
        let (inputs, scalars) = signature(&self.id, &names, |n| scope.get(n).cloned())?;
        let mut options = ExpressionOptions::output(&self.output).with_rounding(self.rounding);
        if let Some(ValueSpec::Vector(declared)) = scope.get(&self.output) {
            options = options.with_output_format(declared.format);
        }
        let input_refs: Vec<(&str, VectorFormat)> =
            inputs.iter().map(|(n, f)| (n.as_str(), *f)).collect();
        let scalar_refs: Vec<(&str, ScalarType)> =
            scalars.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let compiled = compile_expression(Some(&self.id), ast, &input_refs, &scalar_refs, &options)
            .map_err(|mut e| {
                // ProgramError::Contract already names the operation.
                e.operation = None;
                Box::new(e) as BoxError
            })?;
        let format = compiled.output_format();
        let row_sized = compiled.is_row_sized();
        let shape = match inputs.first() {
            Some((first, _)) if row_sized => Shape::Like(first.as_str().into()),
            _ => Shape::Length(1),
        };
        let key = (inputs, scalars);
        let mut kernels = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if !kernels.iter().any(|(k, _)| *k == key) {
            kernels.push((key, ExpressionKernel::new(compiled)));
        }
        let mut c = OperationContract::new().output(&self.output, ValueSpec::vector(format));
        for name in names.iter().filter(|n| scope.get(n).is_some()) {
            c = c.read(name.as_str());
        }
        Ok(c.write(&self.output, Some(shape)))
    }
}

impl ExpressionOperation {
    /// The expression as its contract compiled it for the declarations `lookup` gives
    /// (`None` if the contract never saw them).
    pub(crate) fn compiled(
        &self,
        lookup: impl Fn(&str) -> Option<ValueSpec>,
    ) -> Option<crate::expr::CompiledExpression> {
        let mut names = Vec::new();
        identifiers(&self.ast().ok()?, &mut names);
        let key = signature(&self.id, &names, lookup).ok()?;
        let kernels = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        kernels
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, k)| k.expression().cloned())
    }
}

/// Built-in lowering: the expression kernel's single compute node.
pub(crate) fn lowering() -> Lowering {
    Lowering::typed::<ExpressionOperation>(TYPE, lower)
}

fn lower(op: &ExpressionOperation, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let mut names = Vec::new();
    identifiers(&op.ast()?, &mut names);
    let key = signature(&op.id, &names, |n| cx.spec(n).ok().cloned())?;
    let kernel = op
        .kernels
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, k)| k.clone())
        .ok_or_else(|| {
            format!(
                "expression {} was lowered against declarations its contract never saw",
                op.id
            )
        })?;
    let (inputs, scalars) = key;
    let views = inputs
        .iter()
        .map(|(n, _)| cx.resolve_vector(n.as_str()).map(|v| v.view))
        .collect::<Result<Vec<_>, _>>()?;
    let bindings: Vec<ScalarBinding> = scalars
        .iter()
        .map(|(n, _)| cx.resolve_scalar(n.as_str()).map(|s| s.binding))
        .collect::<Result<Vec<_>, _>>()?;
    let out = cx.resolve_vector(op.output.as_str())?;
    let gpu_scalars = bindings
        .iter()
        .filter(|b| matches!(b, ScalarBinding::View(_)))
        .count();
    kernel.add_to_graph(cx.graph(), &views, &bindings, &out.view)?;
    cx.record_node(kernel.id());
    cx.explain(
        "generated expression kernel",
        format!(
            "{} vector input(s), {} scalar(s) ({gpu_scalars} GPU-resident, read without readback); pipeline cached across runs",
            inputs.len(),
            scalars.len()
        ),
    );
    Ok(())
}
