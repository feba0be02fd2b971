//! Binding helpers of nodes that bind many views per dispatch (the scan family): element
//! offsets checked against the device's binding limits and u32 row counts.

use gpugraph_command::{wgpu, BufferDescriptor, CommandGraph, DataView, VectorFormat};

use super::ViewCheck;
use crate::error::AlgorithmError;

/// Element offsets and the device limits shared by the scan-family nodes.
pub struct Binder {
    /// The device's storage-buffer offset alignment.
    pub storage_alignment: u64,
    /// The device's largest storage binding, in bytes.
    pub max_binding: u64,
}

impl Binder {
    /// The binder of a device with `limits`.
    pub fn new(limits: &wgpu::Limits) -> Self {
        Self {
            storage_alignment: u64::from(limits.min_storage_buffer_offset_alignment),
            max_binding: limits.max_storage_buffer_binding_size,
        }
    }

    /// The element offset of `view` inside its aligned binding, after checking the binding
    /// fits the device's storage binding size.
    pub fn offset(
        &self,
        c: ViewCheck<'_>,
        what: &str,
        view: &DataView,
    ) -> Result<u32, AlgorithmError> {
        let r = view.aligned_range(self.storage_alignment);
        if r.size > self.max_binding {
            return Err(c.device_limit(
                format!("bytes bound for {what}"),
                r.size,
                self.max_binding,
            ));
        }
        Ok(r.element_offset as u32)
    }
}

/// A chunk length as the kernels' u32 row count.
pub fn rows_u32(c: ViewCheck<'_>, what: &str, rows: u64) -> Result<u32, AlgorithmError> {
    u32::try_from(rows)
        .map_err(|_| c.device_limit(format!("rows in {what}"), rows, u64::from(u32::MAX)))
}

/// Imports `buffer` (its whole size and usage) and views its first `rows` packed u32 rows.
pub fn import_u32(
    graph: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
    rows: u64,
) -> Result<DataView, AlgorithmError> {
    let h = graph.import_buffer(
        BufferDescriptor::new(id, buffer.size(), buffer.usage()),
        buffer,
    )?;
    Ok(graph.create_packed_view(h, VectorFormat::Uint32, rows)?)
}
