//! Lowerings: the backend side of operations. A [`Lowering`] descriptor maps an operation
//! type to a callback that, given resolved vector views in a [`LowerContext`], adds
//! command-graph passes. The compiler snapshots an immutable [`LoweringSet`] (built-ins plus
//! the supplied descriptors; duplicate type names are rejected), advertises
//! [`BackendCapabilities`], and records every choice as a [`LoweringDecision`].
//!
//! The same set holds the program-tree lowerings ([`ProgramLowering`]: a semantic
//! [`ProgramOp`] type's CPU semantics and its realizations, chosen by shape and
//! capabilities).
//!
//! Lowerings never submit or read back: the context gives them a command graph and views,
//! not a queue.

mod context;
mod decision;
mod program;
mod registry;

pub(crate) use context::Resolved;
pub use context::{LowerContext, ResolvedScalar, ResolvedVector};
pub use decision::{BackendCapabilities, LoweringDecision, LoweringReport, LoweringSource};
pub use program::{
    Attribute, CpuFn, ProgramLowering, ProgramOp, Realization, RealizeFn, SelectFn, Selected,
    FORCED,
};
pub use registry::{LowerFn, Lowering, LoweringSet};
