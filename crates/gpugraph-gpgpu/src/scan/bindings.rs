//! What a planned scan binds ([`ScanBindings`], one [`ChunkBinding`] per chunk), why a binding
//! can be refused ([`ScanBindError`]), and the resulting bind groups ([`ScanBindGroups`]).

use thiserror::Error;

/// One chunk's buffers. Offsets of storage ranges must be multiples of
/// `min_storage_buffer_offset_alignment`; chunk element offsets inside them come from the
/// plan's [`super::ChunkLayout`].
#[derive(Clone, Debug)]
pub struct ChunkBinding<'a> {
    /// Values, read. `STORAGE` usage; at least `(input_offset + len) * 4` bytes.
    pub input: wgpu::BufferBinding<'a>,
    /// Results, written. `STORAGE` usage; at least `(output_offset + len) * 4` bytes; must not
    /// be in the same buffer as any input, flags or status range of the scan (wgpu tracks usage
    /// per buffer), so scans are never in place.
    pub output: wgpu::BufferBinding<'a>,
    /// Segment-start flags, read; required exactly when the plan is segmented. `STORAGE` usage;
    /// at least `(flags_offset + len) * 4` bytes.
    pub flags: Option<wgpu::BufferBinding<'a>>,
}

/// Every buffer one planned scan binds.
#[derive(Clone, Debug)]
pub struct ScanBindings<'a> {
    /// Scratch, read and written: at least [`super::ScanPlan::status_bytes`] from its offset (exactly
    /// that many bytes are bound and cleared). `STORAGE` usage; no initialization needed.
    pub status: wgpu::BufferBinding<'a>,
    /// The per-chunk uniforms: [`super::ScanPlan::params_data`] written at `params.offset` (see
    /// [`super::ScanKernel::create_params_buffer`]). `UNIFORM` usage; offset a multiple of
    /// `min_uniform_buffer_offset_alignment`; at least [`super::ScanPlan::params_bytes`] bytes.
    pub params: wgpu::BufferBinding<'a>,
    /// One entry per planned chunk; `None` is allowed only for empty chunks.
    pub chunks: &'a [Option<ChunkBinding<'a>>],
    /// The input's live count, read: the word at each chunk's [`ScanParams::live_offset`]
    /// (see [`super::ScanPlan::set_live_offset`]); rows at or past `min(count, len)` read as 0 and
    /// start no segment. `STORAGE` usage.
    ///
    /// [`ScanParams::live_offset`]: super::ScanParams::live_offset
    pub live: Option<wgpu::BufferBinding<'a>>,
}

/// A binding that does not fit the plan.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ScanBindError {
    /// The plan was made for another tile size than this kernel's.
    #[error("scan bind: plan tiles of {planned} elements, kernel tiles of {kernel}")]
    TileMismatch {
        /// The plan's `tile_elements`.
        planned: u32,
        /// The kernel's.
        kernel: u32,
    },
    /// The plan dispatches more workgroups in one dimension than this device allows.
    #[error("scan bind: chunk {chunk} dispatches {workgroups:?} workgroups, device limit {limit} per dimension")]
    Dispatch {
        /// Chunk index.
        chunk: usize,
        /// The planned workgroup counts.
        workgroups: [u32; 3],
        /// `max_compute_workgroups_per_dimension`.
        limit: u32,
    },
    /// The number of chunk bindings differs from the plan's chunk count.
    #[error("scan bind: plan has {planned} chunks, {given} bindings given")]
    ChunkCount {
        /// Chunks in the plan.
        planned: usize,
        /// Entries in `ScanBindings::chunks`.
        given: usize,
    },
    /// A non-empty chunk has no binding.
    #[error("scan bind: chunk {chunk} has {len} elements but no binding")]
    MissingChunk {
        /// Chunk index.
        chunk: usize,
        /// Its length.
        len: u32,
    },
    /// Flags were given for a plain scan or missing for a segmented one.
    #[error("scan bind: chunk {chunk}: flags {}", if *.segmented { "missing for a segmented scan" } else { "given for a scan that is not segmented" })]
    Flags {
        /// Chunk index.
        chunk: usize,
        /// Whether the plan is segmented.
        segmented: bool,
    },
    /// A range is smaller than what the plan reads or writes.
    #[error("scan bind: {what} needs {needed} bytes, the binding has {available}")]
    TooSmall {
        /// "chunk N input", "status", ...
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes bound.
        available: u64,
    },
    /// A range offset is not aligned as the device requires.
    #[error("scan bind: {what} offset {offset} is not a multiple of {alignment}")]
    Unaligned {
        /// "chunk N input", "params", ...
        what: String,
        /// The offset.
        offset: u64,
        /// The device alignment.
        alignment: u64,
    },
    /// A range is larger than the device's binding size limit.
    #[error("scan bind: {what} binds {size} bytes, over the device limit {limit}")]
    TooLarge {
        /// "chunk N input", ...
        what: String,
        /// Bytes bound.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A buffer lacks a usage flag the kernel needs.
    #[error("scan bind: {what} buffer lacks usage {needed:?}")]
    Usage {
        /// "chunk N output", ...
        what: String,
        /// The missing usage.
        needed: wgpu::BufferUsages,
    },
    /// A written buffer is also bound for another use in the same dispatch.
    #[error("scan bind: {written} and {other} are the same buffer")]
    Aliased {
        /// The written range ("chunk N output" or "status").
        written: String,
        /// The other range.
        other: String,
    },
}

/// Bind groups for one plan, ready to encode. Built by [`super::ScanKernel::create_bind_groups`];
/// only valid with the kernel that built them.
#[derive(Debug)]
pub struct ScanBindGroups {
    pub(super) clear: Option<wgpu::BindGroup>,
    pub(super) clear_workgroups: u32,
    pub(super) segmented: bool,
    pub(super) live: bool,
    pub(super) dispatches: Vec<(wgpu::BindGroup, [u32; 3])>,
}

impl ScanBindGroups {
    /// Dispatches [`super::ScanKernel::encode`] records: the clear plus one per non-empty chunk.
    pub fn dispatch_count(&self) -> usize {
        usize::from(self.clear.is_some()) + self.dispatches.len()
    }
}
