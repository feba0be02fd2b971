//! Tunables of the built-in operation kernels, in one place. The WGSL reads them through the
//! constant header [`operation_source`] generates; the host dispatch math reads the same
//! constants.

/// Invocations per workgroup of every built-in vector kernel.
pub const WORKGROUP_SIZE: u32 = 256;
/// Components each MADD invocation processes (strided by the workgroup size: coalesced).
pub const MADD_ITEMS_PER_THREAD: u32 = 4;
/// Component products each dot-product invocation accumulates before the workgroup tree.
pub const DOT_ITEMS_PER_THREAD: u32 = 8;
/// CSR rows per SpMV workgroup (one row per invocation).
pub const SPMV_ROWS_PER_WORKGROUP: u64 = WORKGROUP_SIZE as u64;

/// Components one MADD workgroup covers.
pub const MADD_TILE: u64 = WORKGROUP_SIZE as u64 * MADD_ITEMS_PER_THREAD as u64;
/// Components one dot-product workgroup reduces to one partial.
pub const DOT_TILE: u64 = WORKGROUP_SIZE as u64 * DOT_ITEMS_PER_THREAD as u64;

/// The recipe of operation kernel `wgsl` (labelled `key`): its tunables as a constant header
/// (`WORKGROUP_SIZE`, `ITEMS_PER_THREAD`); the kernel `#include`s `shared/dispatch.wgsl`.
pub fn operation_source(
    key: impl Into<String>,
    wgsl: &str,
    items_per_thread: u32,
) -> gpugraph_command::ShaderSource {
    gpugraph_command::ShaderSource::new(key, wgsl)
        .u32("WORKGROUP_SIZE", WORKGROUP_SIZE)
        .u32("ITEMS_PER_THREAD", items_per_thread)
}
