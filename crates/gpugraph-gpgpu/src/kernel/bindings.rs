//! Buffer bindings of views inside their aligned ranges, shared by the algorithms that bind
//! optional views (a placeholder stands in for an absent one).

use gpugraph_command::{view_binding, wgpu, DataView};

/// The packed binding of `view` in `buffer`, or the placeholder when the view is absent.
pub fn bind_or<'a>(
    buffer: Option<&'a wgpu::Buffer>,
    view: Option<DataView>,
    placeholder: &'a wgpu::Buffer,
    align: u64,
) -> wgpu::BufferBinding<'a> {
    match (buffer, view) {
        (Some(b), Some(v)) => view_binding(b, &v, align).0,
        _ => placeholder.as_entire_buffer_binding(),
    }
}

/// Offset of `view`'s first row inside its aligned binding, in rows (the binding is an array
/// of the row type; alignment ≥ 16 keeps it whole for vec2 rows).
pub fn row_offset(view: &DataView, align: u64) -> u32 {
    (view.aligned_range(align).element_offset / view.format().components().max(1) as u64) as u32
}

/// Binding offsets: the device's storage alignment, at least 16 bytes so vec2/vec4 element
/// offsets inside a binding are whole.
pub fn binding_alignment(cc: &gpugraph_command::CompileContext<'_>) -> u64 {
    (cc.limits().min_storage_buffer_offset_alignment as u64).max(16)
}
