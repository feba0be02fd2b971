//! Tunables of the expression kernel, in one place: the generated WGSL and the host-side
//! dispatch math both read them.

/// Invocations per workgroup.
pub const WORKGROUP_SIZE: u32 = 256;
/// Rows each invocation evaluates (strided by the workgroup size so loads stay coalesced).
pub const ROWS_PER_THREAD: u32 = 4;
/// Rows one workgroup covers.
pub const ROWS_PER_WORKGROUP: u64 = WORKGROUP_SIZE as u64 * ROWS_PER_THREAD as u64;
/// Deepest expression tree (and parenthesis, negation and call nesting) the front end
/// accepts. Parser, checker, code generator and oracle recurse once per level; this bounds
/// their stack use (about a third of a 2 MiB thread stack in debug builds).
pub const MAX_DEPTH: usize = 64;
