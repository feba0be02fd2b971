//! Compile-time planning (pure; no GPU work): computes every operation's contract against the
//! declarations visible to it, checks producer order, writers, accesses, references and
//! shapes, selects lowerings and outputs. The result, [`Plan`], is immutable and shared by
//! every run of a compiled graph.

use std::collections::HashMap;
use std::sync::Arc;

use gpugraph_command::wgpu;

use crate::graph::declaration::{Declaration, Role, ValueSpec};
use crate::graph::error::{BoxError, ProgramError};
use crate::lowering::{Lowering, LoweringSet, LoweringSource};
use crate::operation::{Access, Operation, OperationContract};

mod checks;
mod steps;

/// How a planned value enters an execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueRole {
    /// Bound on every run, read-only.
    Input,
    /// Bound on every run, mutable.
    State,
    /// Written by the operation at this index.
    Result { producer: usize },
}

impl ValueRole {
    pub(crate) fn as_role(self) -> Role {
        match self {
            ValueRole::Input => Role::Input,
            ValueRole::State => Role::State,
            ValueRole::Result { .. } => Role::Declared,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct PlannedValue {
    pub name: String,
    pub spec: ValueSpec,
    pub role: ValueRole,
}

/// A resolved output shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PlannedShape {
    /// Topology of the value at this index.
    Like(usize),
    /// Fixed rows; the declaration's partition when it has one.
    Length(u64),
    /// Fixed partition.
    Chunked(Vec<u64>),
}

#[derive(Clone, Debug)]
pub(crate) struct PlannedUse {
    pub value: usize,
    pub access: Access,
    pub shape: Option<PlannedShape>,
}

#[derive(Clone)]
pub(crate) struct PlannedOp {
    pub op: Arc<dyn Operation>,
    pub contract: OperationContract,
    pub uses: Vec<PlannedUse>,
    /// Names the lowering may resolve (every value in the contract).
    pub names: Vec<String>,
    pub lowering: Lowering,
    pub source: LoweringSource,
}

impl PlannedOp {
    pub(crate) fn id(&self) -> &str {
        self.op.id()
    }
}

/// The checked program of one compilation.
#[derive(Clone)]
pub(crate) struct Plan {
    pub graph: String,
    pub values: Vec<PlannedValue>,
    pub index: HashMap<String, usize>,
    pub ops: Vec<PlannedOp>,
    /// Selected outputs (value indices), in selection order.
    pub selected: Vec<usize>,
}

impl Plan {
    pub(crate) fn value(&self, name: &str) -> Option<(usize, &PlannedValue)> {
        self.index.get(name).map(|&i| (i, &self.values[i]))
    }

    /// The id of the operation that writes value `v`, or "bindings".
    pub(crate) fn writer(&self, v: usize) -> &str {
        match self.values[v].role {
            ValueRole::Result { producer } => self.ops[producer].id(),
            _ => "bindings",
        }
    }
}

/// Inputs of planning: the builder's declarations and operations.
pub(crate) struct ProgramParts<'a> {
    pub graph: &'a str,
    pub declarations: &'a [Declaration],
    pub operations: &'a [Arc<dyn Operation>],
}

fn contract_error(operation: &str, e: BoxError) -> ProgramError {
    match e.downcast::<ProgramError>() {
        Ok(p) => *p,
        Err(source) => ProgramError::Contract {
            operation: operation.to_string(),
            source,
        },
    }
}

/// A "declared" value that has been read as an input before any write (first reader).
struct DeclaredState {
    first_reader: Option<usize>,
}

/// Plans a program (pure; no GPU work): every operation's contract in scope, the
/// declarations as values, then per operation the steps of [`steps::OP_STEPS`] (contract,
/// lowering, features, outputs, uses, shapes), then the selected outputs.
pub(crate) fn plan(
    parts: ProgramParts<'_>,
    lowerings: &LoweringSet,
    features: wgpu::Features,
    outputs: Option<&[String]>,
) -> Result<Plan, ProgramError> {
    let contracts = steps::contracts(&parts);
    let mut planner = steps::Planner::new(&parts, &contracts, lowerings, features);
    for (i, contract) in contracts.into_iter().enumerate() {
        planner.operation(i, contract)?;
    }
    planner.finish(outputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{ScalarType, ScalarValue};
    use crate::operation::{DotProduct, ScalarLiteral, ScalarOp, ScalarOperation};
    use gpugraph_command::VectorFormat;

    fn parts<'a>(
        declarations: &'a [Declaration],
        operations: &'a [Arc<dyn Operation>],
    ) -> ProgramParts<'a> {
        ProgramParts {
            graph: "g",
            declarations,
            operations,
        }
    }

    fn input(name: &str, spec: ValueSpec) -> Declaration {
        Declaration {
            name: name.into(),
            spec,
            role: Role::Input,
        }
    }

    #[test]
    fn plans_roles_shapes_and_default_outputs_without_a_device() {
        let decls = [
            input("a", ValueSpec::vector(VectorFormat::Float32)),
            input("b", ValueSpec::vector(VectorFormat::Float32)),
        ];
        let ops: Vec<Arc<dyn Operation>> = vec![
            Arc::new(DotProduct::new("dot", "a", "b", "d")),
            Arc::new(ScalarLiteral::new("one", "k", ScalarValue::Float32(1.0))),
            Arc::new(ScalarOperation::new("sum", ScalarOp::Add, "d", "k", "s")),
        ];
        let plan = plan(
            parts(&decls, &ops),
            &LoweringSet::builtins(),
            wgpu::Features::empty(),
            None,
        )
        .unwrap();
        let names: Vec<&str> = plan
            .selected
            .iter()
            .map(|&v| plan.values[v].name.as_str())
            .collect();
        assert_eq!(names, ["d", "k", "s"]);
        let (_, d) = plan.value("d").unwrap();
        assert_eq!(d.role, ValueRole::Result { producer: 0 });
        assert_eq!(d.spec, ValueSpec::scalar(ScalarType::Float32));
        assert_eq!(plan.writer(plan.index["s"]), "sum");
        assert_eq!(plan.ops[2].names, ["d", "k", "s"]);
    }

    #[test]
    fn producer_order_is_checked_without_a_device() {
        let decls = [input("a", ValueSpec::vector(VectorFormat::Float32))];
        let ops: Vec<Arc<dyn Operation>> = vec![
            Arc::new(ScalarOperation::new("sum", ScalarOp::Add, "d", "d", "s")),
            Arc::new(DotProduct::new("dot", "a", "a", "d")),
        ];
        let err = plan(
            parts(&decls, &ops),
            &LoweringSet::builtins(),
            wgpu::Features::empty(),
            None,
        )
        .err()
        .unwrap();
        assert!(
            matches!(&err, ProgramError::ProducerOrder { operation, value, producer } if operation == "sum" && value == "d" && producer == "dot"),
            "{err}"
        );
    }
}
