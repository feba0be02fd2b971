//! [`DrawCommandBuffer`]: indirect draw records in one buffer (spec: "Indirect drawing and
//! stable draw groups"). A typed wrapper over a buffer, not a second memory system: compute
//! writes record fields through ordinary views (a compaction's count into `instanceCount`),
//! and render passes read whole records with `draw_indirect` / `draw_indexed_indirect`.

use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor, VectorFormat,
};
use gpugraph_tables::GpuData;
use wgpu::util::{DrawIndexedIndirectArgs, DrawIndirectArgs, RenderEncoder};
use wgpu::BufferUsages;

use crate::RenderError;

/// Which indirect record layout a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DrawLayout {
    /// `vertexCount, instanceCount, firstVertex, firstInstance` (16 bytes).
    Draw,
    /// `indexCount, instanceCount, firstIndex, baseVertex, firstInstance` (20 bytes).
    DrawIndexed,
}

impl DrawLayout {
    /// Bytes per record.
    pub fn record_bytes(self) -> u64 {
        match self {
            DrawLayout::Draw => 16,
            DrawLayout::DrawIndexed => 20,
        }
    }

    /// Byte offset of `instanceCount` inside a record (the same in both layouts).
    pub fn instance_count_offset(self) -> u64 {
        4
    }

    fn name(self) -> &'static str {
        match self {
            DrawLayout::Draw => "draw",
            DrawLayout::DrawIndexed => "drawIndexed",
        }
    }
}

/// The usages a draw command buffer needs: compute writes fields (`STORAGE`), passes read
/// records (`INDIRECT`), and records are initialized or read back by copies.
pub const DRAW_BUFFER_USAGE: BufferUsages = BufferUsages::STORAGE
    .union(BufferUsages::INDIRECT)
    .union(BufferUsages::COPY_DST)
    .union(BufferUsages::COPY_SRC);

/// `records` consecutive indirect records of one [`DrawLayout`] at `byte_offset` of a buffer.
///
/// Ownership: [`DrawCommandBuffer::create`] owns its buffer ([`DrawCommandBuffer::destroy`]
/// destroys it); [`DrawCommandBuffer::borrow`] never destroys the caller's buffer. Views of
/// fields ([`DrawCommandBuffer::instance_count_data`]) always borrow.
#[derive(Clone, Debug)]
pub struct DrawCommandBuffer {
    label: String,
    buffer: wgpu::Buffer,
    byte_offset: u64,
    layout: DrawLayout,
    records: u32,
    owned: bool,
}

impl DrawCommandBuffer {
    /// A new owned buffer of `records` zeroed records, usage [`DRAW_BUFFER_USAGE`].
    pub fn create(device: &wgpu::Device, label: &str, layout: DrawLayout, records: u32) -> Self {
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (u64::from(records) * layout.record_bytes()).max(4),
            usage: DRAW_BUFFER_USAGE,
            mapped_at_creation: false,
        });
        Self {
            label: label.to_string(),
            buffer,
            byte_offset: 0,
            layout,
            records,
            owned: true,
        }
    }

    /// Borrows `records` records at `byte_offset` of a caller's buffer after checking that it
    /// has `STORAGE | INDIRECT` usage (the flags a GPU-written record needs), the offset is
    /// 4-byte aligned and the records fit.
    pub fn borrow(
        buffer: &wgpu::Buffer,
        label: &str,
        byte_offset: u64,
        layout: DrawLayout,
        records: u32,
    ) -> Result<Self, RenderError> {
        let need = BufferUsages::STORAGE | BufferUsages::INDIRECT;
        let missing = need - buffer.usage();
        if !missing.is_empty() {
            return Err(RenderError::DrawBufferUsage {
                label: label.into(),
                actual: buffer.usage(),
                missing,
            });
        }
        let needed = u64::from(records) * layout.record_bytes();
        let fits = byte_offset
            .checked_add(needed)
            .is_some_and(|end| end <= buffer.size());
        if !byte_offset.is_multiple_of(4) || !fits {
            return Err(RenderError::DrawBufferRange {
                label: label.into(),
                records,
                record_bytes: layout.record_bytes(),
                byte_offset,
                needed,
                size: buffer.size(),
            });
        }
        Ok(Self {
            label: label.into(),
            buffer: buffer.clone(),
            byte_offset,
            layout,
            records,
            owned: false,
        })
    }

    /// The record layout.
    pub fn layout(&self) -> DrawLayout {
        self.layout
    }

    /// Number of records.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// The backing buffer (borrowed or owned).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Whether [`Self::destroy`] destroys the buffer.
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Bytes from the buffer's start to the first record.
    pub fn byte_offset(&self) -> u64 {
        self.byte_offset
    }

    /// Byte offset of record `index` in the buffer.
    pub fn record_byte_offset(&self, index: u32) -> Result<u64, RenderError> {
        if index >= self.records {
            return Err(RenderError::NoSuchRecord {
                label: self.label.clone(),
                index,
                records: self.records,
            });
        }
        Ok(self.byte_offset + u64::from(index) * self.layout.record_bytes())
    }

    /// Byte offset of record `index`'s `instanceCount` word in the buffer.
    pub fn instance_count_byte_offset(&self, index: u32) -> Result<u64, RenderError> {
        Ok(self.record_byte_offset(index)? + self.layout.instance_count_offset())
    }

    /// A borrowed one-row uint32 view of record `index`'s `instanceCount`: hand it to a
    /// compaction as its count and the GPU-written count becomes the instance count.
    pub fn instance_count_data(&self, index: u32) -> Result<GpuData, RenderError> {
        let at = self.instance_count_byte_offset(index)?;
        Ok(GpuData::borrowed_packed(
            &self.buffer,
            at,
            1,
            VectorFormat::Uint32,
        )?)
    }

    /// Imports the backing buffer into `graph` once (usage `STORAGE | INDIRECT`, the whole
    /// buffer); views of every record field then share one hazard chain, so a compaction
    /// writing a count orders before the render node that draws from it.
    pub fn import(&self, graph: &mut CommandGraph, id: &str) -> Result<BufferHandle, RenderError> {
        if let Some(h) = graph.imported_handle(&self.buffer) {
            return Ok(h);
        }
        Ok(graph.import_buffer(
            BufferDescriptor::new(
                id,
                self.buffer.size(),
                BufferUsages::STORAGE | BufferUsages::INDIRECT,
            ),
            &self.buffer,
        )?)
    }

    /// The graph view of record `index`'s `instanceCount` inside `handle` (from
    /// [`Self::import`]).
    pub fn instance_count_view(
        &self,
        graph: &CommandGraph,
        handle: BufferHandle,
        index: u32,
    ) -> Result<DataView, RenderError> {
        let at = self.instance_count_byte_offset(index)?;
        Ok(graph.create_data_view(
            handle,
            DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(at),
        )?)
    }

    /// Writes a `draw` record through the queue (lands before the next submission).
    pub fn write_draw(
        &self,
        queue: &wgpu::Queue,
        index: u32,
        args: DrawIndirectArgs,
    ) -> Result<(), RenderError> {
        self.expect(DrawLayout::Draw)?;
        let at = self.record_byte_offset(index)?;
        queue.write_buffer(&self.buffer, at, args.as_bytes());
        Ok(())
    }

    /// Writes a `drawIndexed` record through the queue.
    pub fn write_draw_indexed(
        &self,
        queue: &wgpu::Queue,
        index: u32,
        args: DrawIndexedIndirectArgs,
    ) -> Result<(), RenderError> {
        self.expect(DrawLayout::DrawIndexed)?;
        let at = self.record_byte_offset(index)?;
        queue.write_buffer(&self.buffer, at, args.as_bytes());
        Ok(())
    }

    fn expect(&self, layout: DrawLayout) -> Result<(), RenderError> {
        if self.layout != layout {
            return Err(RenderError::WrongLayout {
                label: self.label.clone(),
                layout: self.layout.name(),
                requested: layout.name(),
            });
        }
        Ok(())
    }

    /// Records record `index` into a render pass or bundle with the method its layout needs
    /// (`draw_indirect` or `draw_indexed_indirect`; the caller set the index buffer for the
    /// latter). `buffer` is the buffer the pass resolves (the graph's, which may be this one).
    pub fn encode<'a>(
        &self,
        pass: &mut impl RenderEncoder<'a>,
        buffer: &'a wgpu::Buffer,
        index: u32,
    ) -> Result<(), RenderError> {
        let at = self.record_byte_offset(index)?;
        match self.layout {
            DrawLayout::Draw => pass.draw_indirect(buffer, at),
            DrawLayout::DrawIndexed => pass.draw_indexed_indirect(buffer, at),
        }
        Ok(())
    }

    /// Destroys the buffer when owned; a borrowed buffer is left to its owner.
    pub fn destroy(&self) {
        if self.owned {
            self.buffer.destroy();
        }
    }
}
