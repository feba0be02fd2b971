//! Built-in program primitives: exact uint32 word operations ([`words`]) and sparse linear
//! algebra ([`sparse`]: SpMV and dot products whose realizations depend on shape and
//! device).

pub mod sparse;
pub mod words;
