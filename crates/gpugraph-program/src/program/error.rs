//! [`ProgramTreeError`]: why a program tree could not be compiled, interpreted or run.

use gpugraph_command::GraphError;
use gpugraph_gpgpu::AlgorithmError;

/// Why a [`super::Program`] could not be compiled, interpreted or run. Every variant names
/// the tree node (its path, e.g. `pcg/iterate/spmv-dot`).
#[derive(Debug, thiserror::Error)]
pub enum ProgramTreeError {
    /// The command graph refused a buffer, view or node.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A primitive's checks refused its views.
    #[error(transparent)]
    Algorithm(#[from] AlgorithmError),
    /// Two nodes of one tree share an id (ids name nodes, buffers and decisions).
    #[error("program node id '{id}' is used twice")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// A predicate must be one packed uint32 row (nonzero means true).
    #[error("{node}: the predicate is {rows} rows of {format}; it must be one packed uint32 row")]
    Predicate {
        /// The loop or conditional.
        node: String,
        /// Its rows.
        rows: u64,
        /// Its format.
        format: String,
    },
    /// A node a gate cannot condition sits in a GPU-gated region: copies and render passes
    /// have no indirect form, and an already indirect dispatch cannot take a second count.
    #[error("{node} ({kind}) cannot run inside the GPU-gated region {region}: {reason}")]
    Ungatable {
        /// The gated loop or conditional.
        region: String,
        /// The node.
        node: String,
        /// `copy`, `indirect dispatch`.
        kind: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// The backend cannot run GPU-written indirect dispatches, so a runtime predicate has
    /// no lowering (and no CPU readback is inserted in its place).
    #[error("{node}: runtime predicates need indirect dispatch, which {backend} lacks")]
    RuntimePredicateUnsupported {
        /// The loop or conditional.
        node: String,
        /// The backend.
        backend: String,
    },
    /// An iteration of a gated loop emitted different dispatches than the first one (a
    /// primitive whose nodes depend on state other than its construction).
    #[error("{region}: iteration emitted {node} with another geometry than the first iteration")]
    Geometry {
        /// The region.
        region: String,
        /// The node.
        node: String,
    },
    /// The CPU interpreter found a view it cannot read or write.
    #[error("{operation}: {reason}")]
    Cpu {
        /// The operation.
        operation: String,
        /// What was wrong.
        reason: String,
    },
    /// Running the compiled graph failed.
    #[error("running {graph}: {reason}")]
    Run {
        /// The graph.
        graph: String,
        /// What failed.
        reason: String,
    },
    /// A semantic operation lacks a view role or attribute its type needs.
    #[error("{operation} ({operation_type}): missing or mistyped {what}")]
    Operand {
        /// The operation.
        operation: String,
        /// Its type.
        operation_type: String,
        /// The role or attribute.
        what: String,
    },
    /// No program lowering is registered for a semantic operation's type.
    #[error("{operation}: no program lowering for operation type '{operation_type}' in the lowering set")]
    NoLowering {
        /// The operation.
        operation: String,
        /// Its type.
        operation_type: String,
    },
    /// No realization of the operation's type fits its shape and the backend.
    #[error("{operation} ({operation_type}): no realization fits: {reasons}")]
    NoRealization {
        /// The operation.
        operation: String,
        /// Its type.
        operation_type: String,
        /// Why each was passed over.
        reasons: String,
    },
}
