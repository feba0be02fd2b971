//! [`SortKernels`]: compiled sort pipelines shared by every sort instance that holds a clone
//! of the same cache, so a graph (or an application) with many sorts compiles each distinct
//! kernel once per device.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gpugraph_command::{wgpu, BufferHandle, EncodeContext};

use crate::kernel::{Binding, Kernel};

/// A cache of compiled sort kernels, keyed by device and variant. Cloning shares the cache;
/// `default()` starts an empty one. Holds the pipelines (and so their devices) until the last
/// clone drops.
#[derive(Clone, Default)]
pub struct SortKernels(Arc<Mutex<HashMap<(wgpu::Device, String), Kernel>>>);

impl std::fmt::Debug for SortKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |m| m.len());
        write!(f, "SortKernels({n} compiled)")
    }
}

impl SortKernels {
    /// The kernel `label` on `device`, compiled from `wgsl()` on first use. `label` must name
    /// the variant completely (policy, value mode, entry point).
    pub(crate) fn get(
        &self,
        device: &wgpu::Device,
        label: &str,
        wgsl: impl FnOnce() -> String,
        entry: &str,
        bindings: &[Binding],
    ) -> Kernel {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.entry((device.clone(), label.to_string()))
            .or_insert_with(|| Kernel::new(device, label, &wgsl(), entry, bindings, &[]))
            .clone()
    }
}

/// The buffers `handles` resolve to for this encoding (the bind-group cache key).
pub(crate) fn resolve<'a>(
    ec: &'a EncodeContext<'_>,
    handles: &[BufferHandle],
) -> Vec<&'a wgpu::Buffer> {
    handles.iter().map(|&h| ec.buffer(h)).collect()
}

/// A `vec4<u32>` binding over the bytes of `words`, its size rounded down to 16 bytes. Only
/// used for views of more than 256 rows, so the rounded size is never 0.
pub(crate) fn vec4_binding<'b>(words: &wgpu::BufferBinding<'b>) -> wgpu::BufferBinding<'b> {
    let size = words.size.map_or(16, |s| s.get()) / 16 * 16;
    wgpu::BufferBinding {
        buffer: words.buffer,
        offset: words.offset,
        size: wgpu::BufferSize::new(size.max(16)),
    }
}
