//! Spatial acceleration over float32x2 / float32x3 points and boxes (spec Phase 5): a uniform
//! grid index ([`GridIndex`]) and its conservative query ([`GridIndexQuery`]), the exact point
//! predicate ([`PointSpatialFilter`]) that refines candidates or scans every row, a complete
//! binary bounding volume hierarchy ([`Bvh`], optionally Morton-ordered) and its traversal
//! ([`BvhQuery`]), many small hierarchies in shared buffers ([`SegmentedBvh`]), and CPU
//! oracles ([`cpu`]) the tests and benchmarks compare against. Every kernel is a declared
//! dispatch node (`gpugraph_command::DispatchNode`) over a [`crate::kernel::ShaderSource`]
//! recipe of `spatial/*.wgsl`, with its `#[repr(C)]` parameters checked against the WGSL by
//! naga unit tests.
//!
//! Shared contracts:
//! * identity: every structure publishes stable uint32 IDs: generated source rows (the global
//!   row over all chunks) or caller IDs aligned with the points;
//! * capacity: outputs are caller-sized; the required count is always reported, the stored
//!   prefix never exceeds the capacity, and truncation sets an overflow flag that downstream
//!   consumers propagate (a refined result cannot be complete when its broad phase was cut);
//! * queries live on the GPU ([`SpatialQuery::words`] written into a buffer the graph reads at
//!   every encoding), so changing a query needs no recompilation and no readback;
//! * update policy: [`UpdatePolicy::Rebuild`] — every encoding rebuilds the complete index from
//!   the current points (the spec's 5.1b decision: no incremental maintenance in v1).

mod batch_query;
mod bvh;
mod bvh_query;
pub mod cpu;
mod domain;
mod filter;
mod grid_index;
mod grid_query;
mod nodes;
mod query;
mod segmented;

pub use batch_query::BatchGridIndexQuery;
pub use bvh::{morton_bits, morton_scale, Bvh, BvhOrder, BvhStorage, BVH_SUBTREE_LEAVES};
pub use bvh_query::{BvhQuery, BVH_QUERY_SPLIT};
pub use domain::SpatialDomain;
pub use filter::{FilterCandidates, PointSpatialFilter};
pub use grid_index::{GridIndex, GridStorage, NO_ID};
pub use grid_query::{GridIndexQuery, QUERY_WORKGROUPS};
pub use query::{
    SpatialQuery, QUERY_FLAG_INDEX_OVERFLOW, QUERY_FLAG_INVALID, QUERY_FLAG_MASK_RANGE,
    QUERY_FLAG_OUTPUT_OVERFLOW, QUERY_FLAG_OUTSIDE_DOMAIN, QUERY_WORDS,
};
pub use segmented::{SegmentedBvh, SegmentedBvhTree};

/// How an index follows changing points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdatePolicy {
    /// Every encoding clears, counts, scans and scatters the complete index from the current
    /// points (the only v1 policy; its cost is the build row of the spatial benchmark).
    Rebuild,
}
