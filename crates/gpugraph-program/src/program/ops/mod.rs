//! Built-in program operations: exact uint32 word primitives ([`words`], explicit command
//! nodes), and semantic operations lowered through the lowering set: sparse linear algebra
//! ([`sparse`]: SpMV and dot products whose realizations depend on shape and device) and
//! the fused passes of PCG ([`pcg`]).

pub mod pcg;
pub mod sparse;
pub mod words;

/// The built-in program lowerings (the lowering set's program half).
pub(crate) fn builtin_program_lowerings() -> Vec<crate::lowering::ProgramLowering> {
    let mut l = sparse::lowerings();
    l.extend(pcg::lowerings());
    l
}
