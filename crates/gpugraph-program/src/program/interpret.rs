//! The CPU interpreter of a [`Program`]: the reference semantics the compiled graph must
//! match (loops check their predicate before each iteration and stop for good once it is
//! zero; a conditional reads its predicate once).

use std::collections::HashMap;

use super::error::ProgramTreeError;
use super::primitive::CpuMemory;
use super::{join, Program};

/// What the interpreter observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interpretation {
    /// Iterations each loop (by tree path) ran in its last execution.
    pub iterations: HashMap<String, u32>,
}

/// Runs `program` on `memory`.
pub fn interpret(
    program: &Program,
    memory: &mut CpuMemory,
) -> Result<Interpretation, ProgramTreeError> {
    let mut out = Interpretation::default();
    run(program, "", memory, &mut out)?;
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
    out: &mut Interpretation,
) -> Result<(), ProgramTreeError> {
    let path = join(prefix, p.id());
    match p {
        Program::Operation(op) => op.interpret(memory)?,
        Program::Composite { children, .. } => {
            for c in children {
                run(c, &path, memory, out)?;
            }
        }
        Program::Conditional {
            predicate,
            then,
            otherwise,
            ..
        } => {
            if truth(&path, memory, predicate)? {
                run(then, &path, memory, out)?;
            } else if let Some(o) = otherwise {
                run(o, &path, memory, out)?;
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
                run(body, &path, memory, out)?;
                n += 1;
            }
            out.iterations.insert(path, n);
        }
    }
    Ok(())
}
