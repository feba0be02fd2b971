//! The CPU interpreter of a [`Program`]: the reference semantics the compiled graph must
//! match (loops check their predicate before each iteration and stop for good once it is
//! zero; a conditional reads its predicate once).

use std::collections::HashMap;

use super::error::ProgramTreeError;
use super::primitive::CpuMemory;
use super::{join, Program};
use crate::lowering::LoweringSet;

/// What the interpreter observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interpretation {
    /// Iterations each loop (by tree path) ran in its last execution.
    pub iterations: HashMap<String, u32>,
}

/// Runs `program` on `memory` (semantic operations with the built-in lowerings' CPU
/// semantics).
pub fn interpret(
    program: &Program,
    memory: &mut CpuMemory,
) -> Result<Interpretation, ProgramTreeError> {
    interpret_with(program, memory, &LoweringSet::builtins())
}

/// Runs `program` on `memory`, semantic operations with the CPU semantics of `set`.
pub fn interpret_with(
    program: &Program,
    memory: &mut CpuMemory,
    set: &LoweringSet,
) -> Result<Interpretation, ProgramTreeError> {
    let mut out = Interpretation::default();
    run(program, "", memory, set, &mut out)?;
    Ok(out)
}

fn truth(
    path: &str,
    memory: &CpuMemory,
    p: &gpugraph_command::DataView,
) -> Result<bool, ProgramTreeError> {
    super::primitive::require_word(path, p, gpugraph_command::VectorFormat::Uint32)?;
    Ok(memory.read(path, p)?[0] != 0)
}

fn run(
    p: &Program,
    prefix: &str,
    memory: &mut CpuMemory,
    set: &LoweringSet,
    out: &mut Interpretation,
) -> Result<(), ProgramTreeError> {
    let path = join(prefix, p.id());
    match p {
        Program::Operation(op) => op.interpret(memory)?,
        Program::Semantic(op) => set
            .program_lowering(&op.name)
            .ok_or_else(|| ProgramTreeError::NoLowering {
                operation: path.clone(),
                operation_type: op.name.clone(),
            })?
            .0
            .interpret(op, memory)?,
        Program::Composite { children, .. } => {
            for c in children {
                run(c, &path, memory, set, out)?;
            }
        }
        Program::Conditional {
            predicate,
            then,
            otherwise,
            ..
        } => {
            if truth(&path, memory, predicate)? {
                run(then, &path, memory, set, out)?;
            } else if let Some(o) = otherwise {
                run(o, &path, memory, set, out)?;
            }
        }
        Program::Loop {
            body,
            max_iterations,
            predicate,
            ..
        } => {
            let mut n = 0;
            while n < *max_iterations {
                if let Some(pred) = predicate {
                    if !truth(&path, memory, pred)? {
                        break;
                    }
                }
                run(body, &path, memory, set, out)?;
                n += 1;
            }
            out.iterations.insert(path, n);
        }
    }
    Ok(())
}
