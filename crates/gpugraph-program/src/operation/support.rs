//! Plumbing shared by the built-in lowerings: view checks (packed 32-bit words, chunk
//! topology, no read/write buffer sharing inside one node), dispatch grids, binding-size
//! limits, and scalar operands that come from host values or one-row GPU views.

use gpugraph_command::{wgpu, BufferHandle, DataView, VectorFormat, VectorView};
use gpugraph_gpgpu::kernel::{grid_for, ViewCheck, WorkgroupSplit};
use gpugraph_gpgpu::AlgorithmError;

use crate::expr::ScalarBinding;

/// Error helpers bound to one operation type and id.
#[derive(Clone, Copy)]
pub(crate) struct Check<'a> {
    pub algorithm: &'static str,
    pub id: &'a str,
}

impl<'a> Check<'a> {
    pub(crate) fn new(algorithm: &'static str, id: &'a str) -> Self {
        Self { algorithm, id }
    }

    /// The gpgpu checker of the same operation, for its structured errors.
    pub(crate) fn view_check(&self) -> ViewCheck<'a> {
        ViewCheck::new(self.algorithm, self.id)
    }

    pub(crate) fn unsupported(
        &self,
        what: String,
        expected: String,
        actual: String,
    ) -> AlgorithmError {
        AlgorithmError::UnsupportedView {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what,
            expected,
            actual,
        }
    }

    /// Every chunk of `v` is packed `format` rows at a 4-byte aligned offset.
    pub(crate) fn packed_words(
        &self,
        what: &str,
        v: &VectorView,
        format: VectorFormat,
    ) -> Result<(), AlgorithmError> {
        for (i, c) in v.chunks().iter().enumerate() {
            let name = if v.chunks().len() == 1 {
                what.to_string()
            } else {
                format!("{what} chunk {i}")
            };
            if c.format() != format {
                return Err(self.unsupported(name, format.to_string(), c.format().to_string()));
            }
            if !c.is_packed() || c.byte_offset() % 4 != 0 {
                return Err(self.unsupported(
                    name,
                    format!("packed {format} at a 4-byte aligned offset"),
                    format!(
                        "{} rows at byte offset {} with stride {}",
                        c.len(),
                        c.byte_offset(),
                        c.byte_stride()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `b` has `a`'s chunk lengths.
    pub(crate) fn same_topology(
        &self,
        a_name: &str,
        a: &VectorView,
        b_name: &str,
        b: &VectorView,
    ) -> Result<(), AlgorithmError> {
        gpugraph_gpgpu::kernel::check_same_topology(
            gpugraph_gpgpu::kernel::ViewCheck {
                algorithm: self.algorithm,
                id: self.id,
            },
            a_name,
            a,
            b_name,
            b,
        )
    }

    /// No buffer in `writes` is also in `reads` (one dispatch cannot bind a buffer both
    /// read-only and writable).
    pub(crate) fn disjoint(
        &self,
        graph: &gpugraph_command::CommandGraph,
        writes: &[BufferHandle],
        reads: &[(String, BufferHandle)],
    ) -> Result<(), AlgorithmError> {
        for (name, b) in reads {
            if writes.contains(b) {
                return Err(self.view_check().aliased(
                    "output",
                    name.as_str(),
                    graph.buffer_id(*b)?,
                    "the operation reads it; write the result to another buffer",
                ));
            }
        }
        Ok(())
    }

    /// A 2-D grid of `workgroups`, or a named device-limit error.
    pub(crate) fn grid(
        &self,
        what: &str,
        workgroups: u64,
        limits: &wgpu::Limits,
    ) -> Result<WorkgroupSplit, AlgorithmError> {
        let max = limits.max_compute_workgroups_per_dimension;
        grid_for(workgroups, max).ok_or_else(|| AlgorithmError::DeviceLimit {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what: format!("workgroups for {what}"),
            needed: workgroups,
            limit: max as u64 * max as u64,
        })
    }

    /// Rows/components of one dispatch must index with u32 arithmetic.
    pub(crate) fn fits_u32(&self, what: &str, count: u64) -> Result<(), AlgorithmError> {
        if count > u32::MAX as u64 {
            return Err(AlgorithmError::DeviceLimit {
                algorithm: self.algorithm,
                id: self.id.to_string(),
                what: what.to_string(),
                needed: count,
                limit: u32::MAX as u64,
            });
        }
        Ok(())
    }

    /// The binding range of a non-empty view fits the storage binding limit.
    pub(crate) fn binding_fits(
        &self,
        what: &str,
        v: &DataView,
        limits: &wgpu::Limits,
    ) -> Result<(), AlgorithmError> {
        let align = limits.min_storage_buffer_offset_alignment as u64;
        let size = v.aligned_range(align).size;
        if !v.is_empty() && size > limits.max_storage_buffer_binding_size {
            return Err(AlgorithmError::DeviceLimit {
                algorithm: self.algorithm,
                id: self.id.to_string(),
                what: format!("storage binding bytes of {what}"),
                needed: size,
                limit: limits.max_storage_buffer_binding_size,
            });
        }
        Ok(())
    }
}

/// Component (4-byte word) offset of a view inside its aligned binding.
pub(crate) fn word_offset(v: &DataView, alignment: u64) -> u32 {
    ((v.byte_offset() - v.aligned_range(alignment).offset) / 4) as u32
}

/// Components (4-byte words) of a packed 32-bit view.
pub(crate) fn words(v: &DataView) -> u64 {
    v.len() * v.format().components() as u64
}

/// Distinct buffers of several vector views, in first-seen order.
pub(crate) fn buffers_of<'a>(views: impl IntoIterator<Item = &'a VectorView>) -> Vec<BufferHandle> {
    let mut out: Vec<BufferHandle> = Vec::new();
    for v in views {
        for b in v.buffers() {
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }
    out
}

/// `buffers`, each named `label` (the reads [`Check::disjoint`] names in its error).
pub(crate) fn labeled(label: &str, buffers: Vec<BufferHandle>) -> Vec<(String, BufferHandle)> {
    buffers
        .into_iter()
        .map(|h| (label.to_string(), h))
        .collect()
}

/// Where a scalar operand is read from on the GPU: a one-row view, or a word of the node's
/// own parameter buffer holding a host value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand {
    View(DataView),
    Host(u32),
}

impl Operand {
    pub(crate) fn of(binding: &ScalarBinding) -> Self {
        match binding {
            ScalarBinding::View(v) => Operand::View(*v),
            ScalarBinding::Value(s) => Operand::Host(s.bits()),
        }
    }
    pub(crate) fn buffer(&self) -> Option<BufferHandle> {
        match self {
            Operand::View(v) => Some(v.buffer()),
            Operand::Host(_) => None,
        }
    }
}

/// Float32 storage formats with one to four components (what MADD and dot products read).
pub(crate) fn is_float32(format: VectorFormat) -> bool {
    use VectorFormat::*;
    matches!(format, Float32 | Float32x2 | Float32x3 | Float32x4)
}

impl Operand {
    /// The parameter word a kernel reads the operand at: its view's word offset inside the
    /// aligned binding, or `host_slot` (where [`Self::host_bits`] sits in the parameters).
    pub(crate) fn word(&self, alignment: u64, host_slot: u32) -> u32 {
        match self {
            Operand::View(v) => word_offset(v, alignment),
            Operand::Host(_) => host_slot,
        }
    }

    /// The host value's bits for the parameter buffer (0 for a GPU view, which is not read).
    pub(crate) fn host_bits(&self) -> u32 {
        match self {
            Operand::Host(bits) => *bits,
            Operand::View(_) => 0,
        }
    }
}

/// A `COPY_SRC` buffer created (at node compile time) holding `bytes`, at least 4 bytes long
/// so an empty payload still gets a valid buffer; copy nodes copy from it in every run.
pub(crate) fn copy_source(
    device: &wgpu::Device,
    label: &str,
    bytes: &[u8],
) -> Result<wgpu::Buffer, gpugraph_command::NodeError> {
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (bytes.len() as u64).max(4),
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    if !bytes.is_empty() {
        buffer
            .slice(..bytes.len() as u64)
            .get_mapped_range_mut()?
            .copy_from_slice(bytes);
    }
    buffer.unmap();
    Ok(buffer)
}
