//! Helpers shared by the sort kernels: pipelines from the device's one cache, bindings.

use gpugraph_command::{wgpu, BufferHandle, EncodeContext};

use crate::kernel::{Binding, Kernel};

/// The sort kernel `entry` of `wgsl` with `bindings` as group 0, from the device's one
/// [`gpugraph_command::DeviceCache`] (the same source, entry and layout compile once per
/// device, however many sorts ask). `label` names the variant in wgpu's messages.
pub(crate) fn get(
    device: &wgpu::Device,
    label: &str,
    wgsl: &str,
    entry: &str,
    bindings: &[Binding],
) -> Kernel {
    Kernel::new(device, label, wgsl, entry, bindings, &[])
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
