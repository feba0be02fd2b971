//! [`RenderError`]: what the render crate rejects, naming the object and the numbers.

use gpugraph_command::GraphError;
use gpugraph_gpgpu::AlgorithmError;
use gpugraph_tables::TableError;

/// Error of a render-side declaration or resource.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A borrowed buffer lacks usage flags the draw records need.
    #[error("draw buffer {label}: created with usage {actual:?}, needs {missing:?} as well")]
    DrawBufferUsage {
        /// Label of the draw command buffer.
        label: String,
        /// Usage of the supplied buffer.
        actual: wgpu::BufferUsages,
        /// Missing flags.
        missing: wgpu::BufferUsages,
    },
    /// Records do not fit in the borrowed buffer, or the offset is not 4-byte aligned.
    #[error("draw buffer {label}: {records} records of {record_bytes} bytes at byte {byte_offset} need {needed} bytes 4-aligned; the buffer has {size}")]
    DrawBufferRange {
        /// Label of the draw command buffer.
        label: String,
        /// Record count.
        records: u32,
        /// Bytes per record.
        record_bytes: u64,
        /// First record's byte offset.
        byte_offset: u64,
        /// Bytes the records need past the offset's start.
        needed: u64,
        /// Size of the buffer.
        size: u64,
    },
    /// A record index past the record count.
    #[error("draw buffer {label}: record {index} does not exist (it has {records})")]
    NoSuchRecord {
        /// Label of the draw command buffer.
        label: String,
        /// Requested record.
        index: u32,
        /// Record count.
        records: u32,
    },
    /// A draw record of the wrong layout was written or encoded.
    #[error("draw buffer {label}: holds {layout} records, not {requested}")]
    WrongLayout {
        /// Label of the draw command buffer.
        label: String,
        /// Layout the buffer holds.
        layout: &'static str,
        /// Layout the call needs.
        requested: &'static str,
    },
    /// A view argument has the wrong format, stride or live count.
    #[error("{workflow} {id}: {what} must be {expected}, got {actual}")]
    UnsupportedView {
        /// Workflow name.
        workflow: &'static str,
        /// Instance id.
        id: String,
        /// Which argument.
        what: &'static str,
        /// What is supported.
        expected: &'static str,
        /// What was given.
        actual: String,
    },
    /// Two vectors read row for row have different chunk lengths.
    #[error(
        "{workflow} {id}: {what} chunk lengths {actual:?} differ from the bounds' {expected:?}"
    )]
    ChunkMismatch {
        /// Workflow name.
        workflow: &'static str,
        /// Instance id.
        id: String,
        /// The argument whose chunks differ.
        what: &'static str,
        /// The bounds' chunk lengths.
        expected: Vec<u64>,
        /// The argument's chunk lengths.
        actual: Vec<u64>,
    },
    /// A written view shares a buffer with an input of the same node.
    #[error(
        "{workflow} {id}: {what} shares buffer {buffer} with an input; it must be written alone"
    )]
    WritesAlone {
        /// Workflow name.
        workflow: &'static str,
        /// Instance id.
        id: String,
        /// Which argument.
        what: &'static str,
        /// The shared buffer's id.
        buffer: String,
    },
    /// More rows than stable uint32 IDs can name.
    #[error("{workflow} {id}: {rows} rows exceed the {limit} that uint32 IDs can name")]
    TooManyRows {
        /// Workflow name.
        workflow: &'static str,
        /// Instance id.
        id: String,
        /// Rows given.
        rows: u64,
        /// The limit.
        limit: u64,
    },
    /// A render bundle recorded against one buffer met another at encode time.
    #[error("render node {node}: its bundle was recorded against the compiled {what}; import overrides cannot reach a recorded bundle")]
    BundleOverride {
        /// Node id.
        node: String,
        /// Which buffer.
        what: &'static str,
    },
    /// A pick outside the image (or on a scene built without picking: a 0×0 image).
    #[error("pick at ({x}, {y}) is outside the {width}x{height} picking image")]
    PickOutside {
        /// Column.
        x: u32,
        /// Row.
        y: u32,
        /// Image width.
        width: u32,
        /// Image height.
        height: u32,
    },
    /// Every slot of a readback ring is held by a live ticket.
    #[error("readback ring {label}: all {slots} slots are held; read or cancel a ticket first")]
    RingExhausted {
        /// Ring label.
        label: String,
        /// Slots in the ring.
        slots: usize,
    },
    /// The ring was destroyed.
    #[error("readback ring {label} was destroyed")]
    RingDestroyed {
        /// Ring label.
        label: String,
    },
    /// A ticket that was already read or cancelled (its slot may serve another ticket).
    #[error("readback ring {label}: the ticket of slot {slot} was already read or cancelled")]
    StaleTicket {
        /// Ring label.
        label: String,
        /// Slot index.
        slot: usize,
    },
    /// A ticket operation out of order (map before copy, read before the map finished).
    #[error("readback ring {label}: slot {slot} is {state}; this needs {needed}")]
    TicketState {
        /// Ring label.
        label: String,
        /// Slot index.
        slot: usize,
        /// Where the ticket stands.
        state: &'static str,
        /// What the operation needs.
        needed: &'static str,
    },
    /// A map failed (device lost or destroyed), or the application marked the device lost.
    #[error("readback ring {label}: slot {slot}: readback failed: {message}")]
    ReadbackFailed {
        /// Ring label.
        label: String,
        /// Slot index (`usize::MAX`: the whole ring).
        slot: usize,
        /// wgpu's or the application's message.
        message: String,
    },
    /// A copy that does not fit the slot or the source, is unaligned, or whose source lacks
    /// `COPY_SRC`.
    #[error("readback ring {label}: copy of {bytes} bytes at {offset} does not fit a {slot_bytes}-byte slot and a {source_bytes}-byte COPY_SRC source with 4-byte alignment")]
    ReadbackRange {
        /// Ring label.
        label: String,
        /// Source offset.
        offset: u64,
        /// Bytes to copy.
        bytes: u64,
        /// Bytes per slot.
        slot_bytes: u64,
        /// Source size.
        source_bytes: u64,
    },
    /// A texture history shorter than 2 frames.
    #[error("texture history {label}: needs at least 2 frames, got {length}")]
    HistoryLength {
        /// History label.
        label: String,
        /// Requested length.
        length: usize,
    },
    /// A frame ID not above the history's last one.
    #[error("texture history {label}: frame {frame} is stale; the last frame was {last}")]
    StaleHistoryFrame {
        /// History label.
        label: String,
        /// Supplied frame ID.
        frame: u64,
        /// Last frame ID.
        last: u64,
    },
    /// The current frame of a history before its first frame.
    #[error("texture history {label}: no frame was started (advance first)")]
    HistoryNotStarted {
        /// History label.
        label: String,
    },
    /// The history was destroyed.
    #[error("texture history {label} was destroyed")]
    HistoryDestroyed {
        /// History label.
        label: String,
    },
    /// The device lacks a feature the workflow needs.
    #[error("{workflow} {id}: the device lacks {feature}; request it when creating the device")]
    MissingFeature {
        /// Workflow name.
        workflow: &'static str,
        /// Instance id.
        id: String,
        /// The wgpu feature.
        feature: &'static str,
    },
    /// A resource-group descriptor that cannot be classified against.
    #[error("scene resource groups {id}: group {group:?}: {reason}")]
    InvalidGroup {
        /// Instance id.
        id: String,
        /// The group's scene ID (`None`: the descriptor list as a whole).
        group: Option<u32>,
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// An application scene ([`crate::gpu_scene::source::SceneSource`]) that cannot be
    /// flattened: a node naming a missing geometry or material, an index past its vertices.
    #[error("scene source: {reason}")]
    SceneSource {
        /// What is wrong, naming the node, geometry or index and the numbers.
        reason: String,
    },
    /// A glTF 2.0 file that cannot be loaded ([`crate::gpu_scene::source::SceneSource::from_gltf`]).
    #[error("glTF {path}: {reason}")]
    Gltf {
        /// The file (or `<memory>`).
        path: String,
        /// What is wrong, naming the mesh, primitive, buffer or node.
        reason: String,
    },
    /// A table that cannot be drawn as a table scene ([`crate::gpu_scene::table::GpuTableScene`]).
    #[error("table scene: column '{column}': {reason}")]
    TableScene {
        /// The column (or option) at fault.
        column: String,
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// A scene storage, mutation or adapter call failed.
    #[error(transparent)]
    Scene(#[from] crate::gpu_scene::GpuSceneError),
    /// A graph declaration failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// An algorithm the workflow composes rejected its arguments.
    #[error(transparent)]
    Algorithm(#[from] AlgorithmError),
    /// A table-layer range check failed.
    #[error(transparent)]
    Table(#[from] TableError),
}
