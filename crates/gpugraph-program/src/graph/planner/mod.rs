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
use crate::operation::contract::check_reference;
use crate::operation::{Access, Operation, OperationContract, Scope, Shape};

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

pub(crate) fn plan(
    parts: ProgramParts<'_>,
    lowerings: &LoweringSet,
    features: wgpu::Features,
    outputs: Option<&[String]>,
) -> Result<Plan, ProgramError> {
    let graph = parts.graph.to_string();
    let ops = parts.operations;

    // Contracts, each against the declarations plus earlier results.
    let mut scope_values: HashMap<String, ValueSpec> = parts
        .declarations
        .iter()
        .map(|d| (d.name.clone(), d.spec.clone()))
        .collect();
    let mut contracts: Vec<Result<OperationContract, BoxError>> = Vec::with_capacity(ops.len());
    for op in ops {
        let scope = Scope::new(op.id(), &scope_values);
        let c = op.contract(&scope);
        if let Ok(c) = &c {
            for (name, spec) in &c.outputs {
                scope_values
                    .entry(name.clone())
                    .or_insert_with(|| spec.clone());
            }
            for u in &c.values {
                // Declaration-style results (written, not listed as outputs) are visible too.
                if u.access == Access::Write && !scope_values.contains_key(u.value.name()) {
                    if let Some(spec) = u.value.spec() {
                        scope_values.insert(u.value.name().to_string(), spec.clone());
                    }
                }
            }
        }
        contracts.push(c);
    }
    // Names each successfully contracted operation writes (for producer-order diagnostics).
    let written: Vec<Vec<String>> = contracts
        .iter()
        .map(|c| match c {
            Ok(c) => c
                .outputs
                .iter()
                .map(|(n, _)| n.clone())
                .chain(
                    c.values
                        .iter()
                        .filter(|u| u.access == Access::Write)
                        .map(|u| u.value.name().to_string()),
                )
                .collect(),
            Err(_) => Vec::new(),
        })
        .collect();
    let later_writer = |name: &str, after: usize| -> Option<String> {
        (after + 1..ops.len())
            .find(|&j| written[j].iter().any(|n| n == name))
            .map(|j| ops[j].id().to_string())
    };

    let mut values: Vec<PlannedValue> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut declared: HashMap<usize, DeclaredState> = HashMap::new();
    for d in parts.declarations {
        let role = match d.role {
            Role::Input => ValueRole::Input,
            Role::State => ValueRole::State,
            // Decided below: a result once written, otherwise an input.
            Role::Declared => ValueRole::Input,
        };
        index.insert(d.name.clone(), values.len());
        if d.role == Role::Declared {
            declared.insert(values.len(), DeclaredState { first_reader: None });
        }
        values.push(PlannedValue {
            name: d.name.clone(),
            spec: d.spec.clone(),
            role,
        });
    }

    let mut planned: Vec<PlannedOp> = Vec::with_capacity(ops.len());
    for (i, (op, contract)) in ops.iter().zip(contracts).enumerate() {
        let id = op.id().to_string();
        let contract = match contract.map_err(|e| contract_error(&id, e)) {
            Ok(c) => c,
            Err(ProgramError::UnknownValue { value, .. }) => {
                return Err(match later_writer(&value, i) {
                    Some(producer) => ProgramError::ProducerOrder {
                        operation: id,
                        value,
                        producer,
                    },
                    None => ProgramError::UnknownValue {
                        operation: id,
                        value,
                    },
                });
            }
            Err(e) => return Err(e),
        };
        let (lowering, source) =
            lowerings
                .get(op.operation_type())
                .ok_or_else(|| ProgramError::UnknownLowering {
                    operation: id.clone(),
                    operation_type: op.operation_type().to_string(),
                    known: lowerings.types(),
                })?;
        let missing = contract.required_features - features;
        if !missing.is_empty() {
            return Err(ProgramError::MissingFeature {
                operation: id.clone(),
                feature: format!("{missing:?}"),
            });
        }

        // Outputs: operation-defined results.
        for (name, spec) in &contract.outputs {
            let invalid = |reason: String| ProgramError::InvalidOutput {
                operation: id.clone(),
                value: name.clone(),
                reason,
            };
            if let Err(reason) = spec.check() {
                return Err(invalid(format!("has an invalid declaration: {reason}")));
            }
            if spec.as_vector().is_none() && spec.as_scalar().is_none() {
                return Err(ProgramError::TexturesUnsupported {
                    operation: id.clone(),
                    value: name.clone(),
                });
            }
            if !contract
                .values
                .iter()
                .any(|u| u.value.name() == name && u.access == Access::Write)
            {
                return Err(invalid(
                    "is listed in outputs but not written in the contract's values".into(),
                ));
            }
            match index.get(name).copied() {
                None => {
                    index.insert(name.clone(), values.len());
                    values.push(PlannedValue {
                        name: name.clone(),
                        spec: spec.clone(),
                        role: ValueRole::Result { producer: i },
                    });
                }
                Some(v) => {
                    let existing = &values[v];
                    match existing.role {
                        ValueRole::Result { producer } if producer == i => {
                            return Err(invalid("is listed twice in outputs".into()));
                        }
                        ValueRole::Result { producer } => {
                            return Err(ProgramError::MultipleWriters {
                                operation: id.clone(),
                                value: name.clone(),
                                writer: ops[producer].id().to_string(),
                            });
                        }
                        _ if !declared.contains_key(&v) => {
                            return Err(ProgramError::ResultIsDeclared {
                                operation: id.clone(),
                                value: name.clone(),
                                role: existing.role.as_role(),
                            });
                        }
                        _ => {}
                    }
                    if !existing.spec.same_type(spec) {
                        return Err(ProgramError::ReferenceMismatch {
                            operation: id.clone(),
                            value: name.clone(),
                            declared: existing.spec.to_string(),
                            referenced: spec.to_string(),
                        });
                    }
                    let merged = merge_specs(&existing.spec, spec).map_err(invalid)?;
                    claim_declared(&mut declared, &values, ops, v, i)?;
                    values[v].spec = merged;
                    values[v].role = ValueRole::Result { producer: i };
                }
            }
        }

        // Values: every logical read and write.
        let mut uses: Vec<PlannedUse> = Vec::with_capacity(contract.values.len());
        let mut names: Vec<String> = Vec::with_capacity(contract.values.len());
        for u in &contract.values {
            let name = u.value.name();
            if names.iter().any(|n| n == name) {
                return Err(ProgramError::DuplicateUse {
                    operation: id.clone(),
                    value: name.to_string(),
                });
            }
            let v = match index.get(name).copied() {
                Some(v) => v,
                None => {
                    // A declaration-style result introduced by a typed write.
                    if let (Access::Write, Some(spec)) = (u.access, u.value.spec()) {
                        index.insert(name.to_string(), values.len());
                        values.push(PlannedValue {
                            name: name.to_string(),
                            spec: spec.clone(),
                            role: ValueRole::Result { producer: i },
                        });
                        values.len() - 1
                    } else {
                        return Err(match later_writer(name, i) {
                            Some(producer) => ProgramError::ProducerOrder {
                                operation: id.clone(),
                                value: name.to_string(),
                                producer,
                            },
                            None => ProgramError::UnknownValue {
                                operation: id.clone(),
                                value: name.to_string(),
                            },
                        });
                    }
                }
            };
            check_reference(&id, &u.value, &values[v].spec)?;
            if values[v].spec.as_vector().is_none() && values[v].spec.as_scalar().is_none() {
                return Err(ProgramError::TexturesUnsupported {
                    operation: id.clone(),
                    value: name.to_string(),
                });
            }
            check_access(&id, i, v, u.access, &mut values, &mut declared, ops)?;
            names.push(name.to_string());
            uses.push(PlannedUse {
                value: v,
                access: u.access,
                shape: None,
            });
        }
        // Shapes, now that every use of this operation is known.
        for (k, u) in contract.values.iter().enumerate() {
            let Some(shape) = &u.shape else { continue };
            let v = uses[k].value;
            uses[k].shape = Some(plan_shape(
                &id, &values[v], u.access, shape, &uses, &values,
            )?);
        }
        planned.push(PlannedOp {
            op: op.clone(),
            contract,
            uses,
            names,
            lowering: lowering.clone(),
            source,
        });
    }

    let selected = match outputs {
        None => (0..values.len())
            .filter(|&v| matches!(values[v].role, ValueRole::Result { .. }))
            .collect(),
        Some(names) => {
            let mut selected = Vec::with_capacity(names.len());
            for name in names {
                let Some(&v) = index.get(name) else {
                    return Err(ProgramError::UnknownOutput {
                        graph: graph.clone(),
                        value: name.clone(),
                    });
                };
                if !matches!(values[v].role, ValueRole::Result { .. }) {
                    return Err(ProgramError::NotAResult {
                        graph: graph.clone(),
                        value: name.clone(),
                        role: values[v].role.as_role(),
                    });
                }
                if !selected.contains(&v) {
                    selected.push(v);
                }
            }
            selected
        }
    };

    Ok(Plan {
        graph,
        values,
        index,
        ops: planned,
        selected,
    })
}

/// A declaration `v` becomes the result of operation `i`; it must not have been read before.
fn claim_declared(
    declared: &mut HashMap<usize, DeclaredState>,
    values: &[PlannedValue],
    ops: &[Arc<dyn Operation>],
    v: usize,
    i: usize,
) -> Result<(), ProgramError> {
    if let Some(state) = declared.remove(&v) {
        if let Some(reader) = state.first_reader {
            return Err(ProgramError::ProducerOrder {
                operation: ops[reader].id().to_string(),
                value: values[v].name.clone(),
                producer: ops[i].id().to_string(),
            });
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn check_access(
    id: &str,
    i: usize,
    v: usize,
    access: Access,
    values: &mut [PlannedValue],
    declared: &mut HashMap<usize, DeclaredState>,
    ops: &[Arc<dyn Operation>],
) -> Result<(), ProgramError> {
    let name = values[v].name.clone();
    let read_write_error = |actual: String| ProgramError::ReadWriteNeedsState {
        operation: id.to_string(),
        value: name.clone(),
        actual,
    };
    if let Some(state) = declared.get_mut(&v) {
        // An explicit declaration nobody has written yet.
        return match access {
            Access::Read => {
                state.first_reader.get_or_insert(i);
                Ok(())
            }
            Access::Write => {
                claim_declared(declared, values, ops, v, i)?;
                values[v].role = ValueRole::Result { producer: i };
                Ok(())
            }
            Access::ReadWrite => Err(read_write_error("it is an explicit declaration".into())),
        };
    }
    match values[v].role {
        ValueRole::Input => {
            if access.writes() {
                return Err(ProgramError::WriteToInput {
                    operation: id.to_string(),
                    value: name,
                });
            }
        }
        ValueRole::State => {}
        ValueRole::Result { producer } if producer == i => match access {
            Access::Write => {}
            Access::Read => {
                return Err(ProgramError::InvalidOutput {
                    operation: id.to_string(),
                    value: name,
                    reason: "is read by the operation that produces it; results are written, not self-referenced".into(),
                })
            }
            Access::ReadWrite => {
                return Err(read_write_error("it is a result of this operation".into()))
            }
        },
        ValueRole::Result { producer } => match access {
            Access::Read => {}
            Access::Write => {
                return Err(ProgramError::MultipleWriters {
                    operation: id.to_string(),
                    value: name,
                    writer: ops[producer].id().to_string(),
                })
            }
            Access::ReadWrite => {
                return Err(read_write_error(format!(
                    "it is the result of {}",
                    ops[producer].id()
                )))
            }
        },
    }
    Ok(())
}

fn plan_shape(
    id: &str,
    value: &PlannedValue,
    access: Access,
    shape: &Shape,
    uses: &[PlannedUse],
    values: &[PlannedValue],
) -> Result<PlannedShape, ProgramError> {
    let invalid = |reason: String| ProgramError::InvalidShape {
        operation: id.to_string(),
        value: value.name.clone(),
        reason,
    };
    let Some(decl) = value.spec.as_vector() else {
        return Err(invalid(format!(
            "shapes apply only to written vectors; it is a {}",
            value.spec
        )));
    };
    if !access.writes() {
        return Err(invalid(
            "shapes apply only to written vectors; it is read".into(),
        ));
    }
    let check_length = |n: u64| -> Result<(), ProgramError> {
        if let Some(l) = decl.length {
            if l != n {
                return Err(invalid(format!(
                    "the shape has {n} rows but the declaration fixes {l}"
                )));
            }
        }
        Ok(())
    };
    Ok(match shape {
        Shape::Like(r) => {
            let target = uses.iter().find(|u| values[u.value].name == r.name());
            let Some(target) = target.filter(|u| u.access.reads()) else {
                return Err(invalid(format!(
                    "like '{}' names no vector this operation reads",
                    r.name()
                )));
            };
            let t = &values[target.value];
            check_reference(id, r, &t.spec)?;
            if t.spec.as_vector().is_none() {
                return Err(invalid(format!(
                    "like '{}' names a {}, not a vector",
                    r.name(),
                    t.spec
                )));
            }
            PlannedShape::Like(target.value)
        }
        Shape::Length(n) => {
            check_length(*n)?;
            PlannedShape::Length(*n)
        }
        Shape::Chunked {
            length,
            chunk_lengths,
        } => {
            let sum: u64 = chunk_lengths.iter().sum();
            if sum != *length {
                return Err(invalid(format!(
                    "chunk lengths {chunk_lengths:?} sum to {sum}, not {length}"
                )));
            }
            check_length(*length)?;
            if let Some(declared) = &decl.chunk_lengths {
                if declared != chunk_lengths {
                    return Err(invalid(format!(
                        "the shape's chunks {chunk_lengths:?} differ from the declared chunks {declared:?}"
                    )));
                }
            }
            PlannedShape::Chunked(chunk_lengths.clone())
        }
    })
}

/// The declaration of an explicitly declared result merged with its contract output: both
/// constraints must hold, so conflicting fixed lengths or partitions are an error.
fn merge_specs(declared: &ValueSpec, output: &ValueSpec) -> Result<ValueSpec, String> {
    let (ValueSpec::Vector(a), ValueSpec::Vector(b)) = (declared, output) else {
        return Ok(declared.clone());
    };
    let mut merged = a.clone();
    match (a.length, b.length) {
        (Some(x), Some(y)) if x != y => {
            return Err(format!(
                "is declared with {x} rows but the contract output has {y}"
            ))
        }
        (None, Some(y)) => merged.length = Some(y),
        _ => {}
    }
    match (&a.chunk_lengths, &b.chunk_lengths) {
        (Some(x), Some(y)) if x != y => {
            return Err(format!(
                "is declared with chunks {x:?} but the contract output has {y:?}"
            ))
        }
        (None, Some(y)) => merged.chunk_lengths = Some(y.clone()),
        _ => {}
    }
    Ok(ValueSpec::Vector(merged))
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
