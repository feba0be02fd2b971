//! Same-device checks. wgpu exposes no "device of this buffer" query, so the check asks the
//! graph's device to use the buffer in a throwaway object inside a validation error scope:
//! wgpu rejects resources of another device there, before anything is recorded or submitted.
//! wgpu can only tell apart devices created through one `wgpu::Instance`; a buffer from a
//! device of another instance is not detectable here (wgpu's ids are per instance).

use wgpu::BufferUsages;

/// Whether `buffer` belongs to `device`. Buffers that can be neither bound nor copied (only
/// vertex/index/indirect usage, or under 4 bytes) cannot be probed and are accepted.
pub(crate) fn same_device_buffer(device: &wgpu::Device, buffer: &wgpu::Buffer) -> bool {
    if buffer.size() < 4 {
        return true;
    }
    let usage = buffer.usage();
    let binding = if usage.contains(BufferUsages::STORAGE) {
        Some(wgpu::BufferBindingType::Storage { read_only: true })
    } else if usage.contains(BufferUsages::UNIFORM) {
        Some(wgpu::BufferBindingType::Uniform)
    } else {
        None
    };
    let copy = usage.intersects(BufferUsages::COPY_SRC | BufferUsages::COPY_DST);
    if binding.is_none() && !copy {
        return true;
    }
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    if let Some(ty) = binding {
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("gpugraph-device-probe"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let _group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("gpugraph-device-probe"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(4),
                }),
            }],
        });
    } else {
        let scratch = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpugraph-device-probe"),
            size: 4,
            usage: BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("gpugraph-device-probe"),
        });
        if usage.contains(BufferUsages::COPY_SRC) {
            encoder.copy_buffer_to_buffer(buffer, 0, &scratch, 0, 4);
        } else {
            encoder.copy_buffer_to_buffer(&scratch, 0, buffer, 0, 4);
        }
        drop(encoder.finish());
        scratch.destroy();
    }
    scope_error(scope).is_none()
}

/// The error `scope` caught. Native backends answer at once (`block_on` returns without
/// waiting). On wasm32 (WebGPU) the answer is a JS promise that only the browser's event loop
/// can settle, so blocking would hang the page: the scope is polled once and an unsettled
/// answer counts as no error (a real error then surfaces only in the browser console).
pub(crate) fn scope_error(scope: wgpu::ErrorScopeGuard) -> Option<wgpu::Error> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        pollster::block_on(scope.pop())
    }
    #[cfg(target_arch = "wasm32")]
    {
        use std::future::Future as _;
        let mut fut = std::pin::pin!(scope.pop());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(e) => e,
            std::task::Poll::Pending => None,
        }
    }
}
