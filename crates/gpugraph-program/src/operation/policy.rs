//! Tunables of the built-in operation kernels, in one place. The WGSL reads them through the
//! header [`wgsl_header`] prepends; the host dispatch math reads the same constants.

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

/// WGSL constants for a kernel with `items_per_thread`, followed by the shared dispatch
/// helpers (`linear_workgroup`).
pub fn wgsl_header(items_per_thread: u32) -> String {
    format!(
        "const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\nconst ITEMS_PER_THREAD: u32 = {items_per_thread}u;\n{}\n",
        gpugraph_gpgpu::kernel::SHARED_DISPATCH_WGSL
    )
}
