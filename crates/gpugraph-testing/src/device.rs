//! The device of a GPU test: the real adapter `GpuContext::new` picks (lavapipe in CI, chosen
//! by `WGPU_BACKEND`/`GPUGRAPH_ADAPTER` as in production). No adapter panics with
//! [`NO_ADAPTER`]: a GPU test that cannot run fails, it never passes by skipping.

use std::sync::OnceLock;

use gpugraph_command::GpuContext;

/// The panic message when no adapter is found.
pub const NO_ADAPTER: &str = "a Vulkan adapter (lavapipe in CI) is required for GPU tests";

/// A new device on the real adapter; panics with [`NO_ADAPTER`] when there is none.
pub fn ctx() -> GpuContext {
    GpuContext::new().expect(NO_ADAPTER)
}

/// One device shared by every test of a test binary (made on first use), for binaries whose
/// tests need no device of their own; panics with [`NO_ADAPTER`] when there is no adapter.
pub fn shared_ctx() -> &'static GpuContext {
    static CTX: OnceLock<GpuContext> = OnceLock::new();
    CTX.get_or_init(ctx)
}

/// A new device whose dispatch dimension limit is `max_dim`, so multi-row dispatch grids are
/// exercised with small inputs. Panics when there is no adapter or the limit is refused.
pub fn ctx_with_max_dispatch(max_dim: u32) -> GpuContext {
    ctx()
        .with_adjusted_limits(|l| l.max_compute_workgroups_per_dimension = max_dim)
        .expect("device with reduced dispatch limit")
}
