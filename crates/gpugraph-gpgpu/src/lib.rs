//! gpugraph-gpgpu: algorithms (data semantics over one or more kernels) and workflows, each
//! added to a [`gpugraph_command::CommandGraph`] as named nodes with declared uses.
//!
//! Every algorithm lives in one folder: `mod.rs` (the public struct and `add_to_graph`, with
//! its contract), its WGSL beside it, and `cpu.rs`, the plain-Rust oracle the tests compare
//! against.

#![warn(missing_docs)]

pub mod error;
pub mod kernel;
pub mod mask;
pub mod scan;

pub use error::AlgorithmError;
pub use mask::{Mask, MaskOp};
