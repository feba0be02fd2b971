//! The per-use checks of planning: a declared value claimed by its writer (no read before),
//! access rules (read-write needs state, one writer), output shapes against the values they
//! follow, and a declared result's spec merged with its contract output.

use std::collections::HashMap;
use std::sync::Arc;

use crate::graph::declaration::ValueSpec;
use crate::graph::error::ProgramError;
use crate::operation::contract::check_reference;
use crate::operation::{Access, Operation, Shape};

use super::{DeclaredState, PlannedShape, PlannedUse, PlannedValue, ValueRole};

/// A declaration `v` becomes the result of operation `i`; it must not have been read before.
pub(super) fn claim_declared(
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
pub(super) fn check_access(
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

pub(super) fn plan_shape(
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
pub(super) fn merge_specs(declared: &ValueSpec, output: &ValueSpec) -> Result<ValueSpec, String> {
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
