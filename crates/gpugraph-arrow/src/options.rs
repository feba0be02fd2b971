//! [`UploadOptions`]: the named choices an upload makes explicit. Every lossy or checked
//! conversion is off by default, so an upload never changes a value silently.

use wgpu::BufferUsages;

/// How 64-bit integer columns upload: `Int64`, `UInt64` and the 64-bit temporal types
/// (`Date64`, `Time64`, `Timestamp`, `Duration`, uploaded as their raw counts in the column's
/// unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Int64Policy {
    /// Reject the column with [`ArrowAdapterError::ConversionNotEnabled`](crate::ArrowAdapterError).
    #[default]
    Reject,
    /// Narrow to `sint32` (signed) or `uint32` (`UInt64`) when every non-null value fits;
    /// otherwise fail with `ValueOutOfRange` naming the column, row and first offending value.
    NarrowChecked,
}

/// How `Float64` columns upload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Float64Policy {
    /// Reject the column with `ConversionNotEnabled`.
    #[default]
    Reject,
    /// Round each value to the nearest `float32` (ties to even). NaN and ±infinity are kept;
    /// a finite value beyond `f32::MAX` fails with `ValueOutOfRange` instead of becoming
    /// infinite; values below the smallest `float32` subnormal round to zero.
    RoundToFloat32,
}

/// How string columns (`Utf8`, `LargeUtf8`, `Utf8View`) upload inside record batches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Utf8Policy {
    /// Reject the column with `ConversionNotEnabled` (strings have no GPU format).
    #[default]
    Reject,
    /// Dictionary-encode on upload: `uint32` codes on the GPU, the distinct strings on the CPU
    /// in order of first appearance (see [`crate::dictionary`]).
    DictionaryEncode,
}

/// When a column gets a validity mask (a source-aligned `uint32` vector, 1 valid, 0 null).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValidityPolicy {
    /// A mask only when some row is null (for a table: in any batch; batches without nulls
    /// then get an all-ones chunk so the mask stays chunk-aligned with the values).
    #[default]
    IfNulls,
    /// A mask for every column, all ones where nothing is null.
    Always,
    /// No masks; a null fails with [`NullsRejected`](crate::ArrowAdapterError) naming the first
    /// null row.
    RejectNulls,
}

/// Where the chunks of one uploaded column live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChunkPlacement {
    /// One owned buffer per chunk (per record batch).
    #[default]
    BufferPerChunk,
    /// One owned buffer per column holding every chunk, each starting at a multiple of the
    /// device's `min_storage_buffer_offset_alignment` so it binds directly. Fewer allocations
    /// and one logical graph buffer per column, for one extra host copy of the column; the
    /// column must fit one buffer (`max_buffer_size`).
    SharedPerColumn,
}

/// How validity masks cross the bus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MaskTransfer {
    /// Arrow's null bitmap (1 bit per row) is uploaded and a GPU kernel expands it into the
    /// `uint32` mask: 1/32 of the bytes over the bus. Falls back to [`Words`](Self::Words) for a
    /// column with a chunk the device cannot bind as one storage buffer.
    #[default]
    Bitmap,
    /// The `uint32` mask is written on the host and uploaded (4 bytes per row).
    Words,
}

/// The choices an upload makes explicit. `Default` rejects every lossy or checked conversion,
/// masks only columns with nulls, and uses one buffer per chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadOptions {
    /// 64-bit integer and temporal columns.
    pub int64: Int64Policy,
    /// `Float64` columns.
    pub float64: Float64Policy,
    /// String columns in record batches.
    pub utf8: Utf8Policy,
    /// Validity masks.
    pub validity: ValidityPolicy,
    /// Buffer placement of chunks.
    pub placement: ChunkPlacement,
    /// How validity masks cross the bus.
    pub mask_transfer: MaskTransfer,
    /// Usage flags added to every created buffer beyond `STORAGE | COPY_SRC | COPY_DST`
    /// (e.g. `VERTEX`); map flags are rejected.
    pub extra_usage: BufferUsages,
}

impl Default for UploadOptions {
    fn default() -> Self {
        Self {
            int64: Int64Policy::default(),
            float64: Float64Policy::default(),
            utf8: Utf8Policy::default(),
            validity: ValidityPolicy::default(),
            placement: ChunkPlacement::default(),
            mask_transfer: MaskTransfer::default(),
            extra_usage: BufferUsages::empty(),
        }
    }
}

impl UploadOptions {
    /// The same options with [`Int64Policy::NarrowChecked`].
    pub fn narrow_int64(mut self) -> Self {
        self.int64 = Int64Policy::NarrowChecked;
        self
    }
    /// The same options with [`Float64Policy::RoundToFloat32`].
    pub fn round_float64(mut self) -> Self {
        self.float64 = Float64Policy::RoundToFloat32;
        self
    }
    /// The same options with [`Utf8Policy::DictionaryEncode`].
    pub fn encode_utf8(mut self) -> Self {
        self.utf8 = Utf8Policy::DictionaryEncode;
        self
    }
    /// The same options with another validity policy.
    pub fn with_validity(mut self, validity: ValidityPolicy) -> Self {
        self.validity = validity;
        self
    }
    /// The same options with another chunk placement.
    pub fn with_placement(mut self, placement: ChunkPlacement) -> Self {
        self.placement = placement;
        self
    }
    /// The same options with another mask transfer.
    pub fn with_mask_transfer(mut self, transfer: MaskTransfer) -> Self {
        self.mask_transfer = transfer;
        self
    }
    /// The same options with extra buffer usage flags.
    pub fn with_extra_usage(mut self, usage: BufferUsages) -> Self {
        self.extra_usage = usage;
        self
    }
}
