//! A small storage buffer bound where a kernel declares an optional input or output the
//! caller did not supply; the kernel's generated constants make it unreachable.

use gpugraph_command::wgpu;

/// A 16-byte STORAGE | UNIFORM buffer created at node compile time; never read or written by
/// a kernel whose corresponding `HAS_*` constant is false.
pub fn placeholder_buffer(device: &wgpu::Device, label: &str) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::UNIFORM,
        mapped_at_creation: false,
    })
}
