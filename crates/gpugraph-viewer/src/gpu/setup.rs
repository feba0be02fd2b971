//! Adapter and device for a surface, shared by the shells.

use crate::ViewerError;

/// An adapter compatible with `surface` (when given) and a device with the adapter's own
/// limits (the trace frame's visibility pass binds more storage buffers than WebGPU's
/// default limit of 8 per stage).
pub async fn request_device(
    instance: &wgpu::Instance,
    surface: Option<&wgpu::Surface<'_>>,
) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue), ViewerError> {
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: surface,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| ViewerError::NoGpu(format!("no adapter: {e}")))?;
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("gpugraph-viewer"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            ..Default::default()
        })
        .await
        .map_err(|e| ViewerError::NoGpu(format!("no device: {e}")))?;
    Ok((adapter, device, queue))
}

/// The surface format the viewer draws in: the first non-sRGB format the surface offers
/// (colors then match the headless PNG render), else its first.
pub fn pick_format(caps: &wgpu::SurfaceCapabilities) -> Option<wgpu::TextureFormat> {
    caps.formats
        .iter()
        .copied()
        .find(|f| !f.is_srgb())
        .or_else(|| caps.formats.first().copied())
}
