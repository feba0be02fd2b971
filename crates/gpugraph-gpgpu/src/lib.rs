//! gpugraph-gpgpu: algorithms (data semantics over one or more kernels) and workflows, each
//! added to a [`gpugraph_command::CommandGraph`] as named nodes with declared uses.
//!
//! Every algorithm lives in one folder: `mod.rs` (the public struct and `add_to_graph`, with
//! its contract), its WGSL beside it, and `cpu.rs`, the plain-Rust oracle the tests compare
//! against.

#![warn(missing_docs)]

pub mod compact;
pub mod error;
pub mod fft;
pub mod grid;
pub mod group;
pub mod hash;
pub mod histogram;
pub mod kernel;
pub mod keyed;
pub mod mask;
pub mod reduce;
pub mod scan;
pub mod sort;
pub mod sparse;
pub mod spatial;
pub mod topology;

pub use compact::{Compaction, IndexedRangeCompaction, PartitionedIndexedRangeCompaction};
pub use error::AlgorithmError;
pub use fft::{Fft1d, Fft2d, FftDirection, FftPolicy};
pub use grid::{GridAggregation, GridBinning, GridDomain};
pub use group::GroupAggregation;
pub use hash::{
    BatchHashIndex, BatchHashJoin, HashIndex, HashIndexQuery, HashJoin, HashPolicy, HashTable,
    RowGather,
};
pub use histogram::{Histogram, HistogramBins};
pub use keyed::{AggregateOutputs, KeyedPolicy, Summation};
pub use mask::{Mask, MaskOp, MaskPolicy};
pub use reduce::{ReduceOp, ReducePolicy, Reduction};
pub use scan::Scan;
pub use sort::{
    BatchSort, KeyType, SegmentedSort, Sort, SortOptions, SortOptionsError, SortOrder, SortPayload,
    SortPolicy, SortPolicyError,
};
pub use spatial::{GridIndex, GridIndexQuery, PointSpatialFilter, SpatialDomain, SpatialQuery};
pub use topology::{AncestorProjection, GraphTraversal, HierarchyLayout, VirtualGeometrySelection};
