//! Topology over stable node IDs (spec Phase 0 and tranche 3.2): bounded breadth-first
//! reachability over packed or partitioned CSR ([`GraphTraversal`]), nearest visible
//! ancestors ([`AncestorProjection`]), one-level hierarchy row layout ([`HierarchyLayout`])
//! and the render frontier of a cluster hierarchy ([`VirtualGeometrySelection`]). Every kernel is a declared dispatch node over a
//! [`crate::kernel::ShaderSource`] recipe of `topology/*.wgsl`, its `#[repr(C)]` parameters
//! checked against the WGSL by naga unit tests; [`cpu`] holds the oracles.
//!
//! Shared contracts: node IDs are source rows (global over chunks) and never move; outputs are
//! node-aligned; malformed GPU data (out-of-range IDs, cycles, overlong chains) gives
//! documented sentinels and counts, never a hang; nothing is read back or submitted.

mod ancestor;
pub mod cpu;
mod csr;
mod hierarchy;
mod nodes;
mod traversal;
mod virtual_geometry;

pub use ancestor::{AncestorProjection, NO_ANCESTOR};
pub use csr::reverse_csr;
pub use hierarchy::HierarchyLayout;
pub use traversal::{
    CsrAdjacency, GraphTraversal, TraversalDirection, BIG_DEGREE, HUB_CHUNK, HUGE_DEGREE,
    MAX_TRAVERSAL_DEPTH, TRAVERSAL_STATUS_WORDS, UNREACHED,
};
pub use virtual_geometry::{
    ClusterHierarchy, SelectionView, VirtualGeometrySelection, SELECTION_VIEW_WORDS,
};
