//! Tunables of the compaction family's helper kernels (distribution into chunked outputs,
//! range expansion, partition totals). The fused compaction itself is a scan kernel variant
//! and uses [`crate::scan::ScanPolicy`].

/// Invocations per workgroup of the helper kernels.
pub const WORKGROUP_SIZE: u32 = 256;
/// Rows each invocation of a row-parallel helper kernel handles.
pub const ROWS_PER_THREAD: u32 = 4;
/// Rows one workgroup of a row-parallel helper kernel covers.
pub const ROWS_PER_WORKGROUP: u64 = (WORKGROUP_SIZE * ROWS_PER_THREAD) as u64;
