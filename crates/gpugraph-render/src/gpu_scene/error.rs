//! [`GpuSceneError`]: what scene storage, mutation and adapters reject, naming the object IDs,
//! slots, fields and numbers involved.

use super::GpuSceneField;

/// Which operation of a transaction an ID appeared in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuSceneOperation {
    /// Initial records of a new scene.
    Initial,
    /// `remove`.
    Remove,
    /// `patch`.
    Patch,
    /// `insert`.
    Insert,
}

impl std::fmt::Display for GpuSceneOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GpuSceneOperation::Initial => "initial records",
            GpuSceneOperation::Remove => "remove",
            GpuSceneOperation::Patch => "patch",
            GpuSceneOperation::Insert => "insert",
        })
    }
}

/// Error of a [`crate::GpuScene`] call. Nothing changed on the CPU or the GPU when one is
/// returned.
#[derive(Debug, thiserror::Error)]
pub enum GpuSceneError {
    /// A staged upload's capacities are out of range.
    #[error("scene {scene}: an upload of {words} words and {runs} runs; words must be 1..={max_words} and runs at least 1")]
    UploadCapacity {
        /// Scene label.
        scene: String,
        /// Words asked for.
        words: u32,
        /// Runs asked for.
        runs: u32,
        /// The most words one scatter covers.
        max_words: u32,
    },
    /// A staged mutation was given another scene's upload.
    #[error("scene {scene}: the upload {upload} was made for another scene")]
    ForeignUpload {
        /// Scene label.
        scene: String,
        /// The upload's label.
        upload: String,
    },
    /// More initial records than the capacity (mutations report overflow instead, see
    /// [`crate::GpuSceneMutationReport::uninserted`]).
    #[error("scene {scene}: {required} records need more than the capacity of {capacity}")]
    CapacityExceeded {
        /// Scene label.
        scene: String,
        /// Slots available.
        capacity: u32,
        /// Records that needed a slot (active plus requested insertions).
        required: u64,
    },
    /// A capacity whose record buffer the device cannot hold or bind whole (every frame node
    /// binds the records as one storage buffer): at most `limit / 128` slots.
    #[error("scene {scene}: {capacity} slots need {bytes} bytes of records, over the device's {limit_name} of {limit} (at most {} slots)", limit / 128)]
    DeviceLimit {
        /// Scene label.
        scene: String,
        /// Slots asked for.
        capacity: u32,
        /// Record bytes they need.
        bytes: u64,
        /// `max_buffer_size` or `max_storage_buffer_binding_size`.
        limit_name: &'static str,
        /// The device's value of that limit.
        limit: u64,
    },
    /// An ID named twice in one transaction (or twice among initial records), or inserted
    /// while present.
    #[error("scene {scene}: object {id} appears in {first} and again in {second}")]
    DuplicateId {
        /// Scene label.
        scene: String,
        /// The object ID.
        id: u32,
        /// Where it appeared first (or "present" via `Initial` for an insert of a live ID).
        first: GpuSceneOperation,
        /// Where it appeared again.
        second: GpuSceneOperation,
    },
    /// A remove or patch of an ID the scene does not hold.
    #[error("scene {scene}: {operation} names object {id}, which the scene does not hold ({active} live records)")]
    UnknownId {
        /// Scene label.
        scene: String,
        /// The object ID.
        id: u32,
        /// The operation.
        operation: GpuSceneOperation,
        /// Live records.
        active: u32,
    },
    /// A record or patch value that cannot be stored.
    #[error("scene {scene}: object {id}, field {}: {reason}", field.name())]
    InvalidField {
        /// Scene label.
        scene: String,
        /// The object ID.
        id: u32,
        /// The field.
        field: GpuSceneField,
        /// What is wrong, with the value.
        reason: String,
    },
    /// A raw word patch outside the patchable bytes `8..128` or not 4-byte aligned.
    #[error("scene {scene}: object {id}: patch of {bytes} bytes at record byte {byte_offset} is outside the patchable range 8..128 or unaligned")]
    BadFieldRange {
        /// Scene label.
        scene: String,
        /// The object ID.
        id: u32,
        /// Record byte offset of the patch.
        byte_offset: u64,
        /// Bytes patched.
        bytes: u64,
    },
    /// Mutation of a scene whose records the CPU does not know (a borrowed table partition).
    #[error("scene {scene} borrows records the CPU does not know; mutate its producer instead")]
    Immutable {
        /// Scene label.
        scene: String,
    },
    /// A scene used after [`crate::GpuScene::destroy`].
    #[error("scene {scene} was destroyed")]
    Destroyed {
        /// Scene label.
        scene: String,
    },
    /// A borrowed record buffer that lacks usage, alignment or bytes.
    #[error("scene {scene}: borrowed records: {reason}")]
    BorrowedRecords {
        /// Scene label.
        scene: String,
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// A table batch that is not canonical interleaved scene records.
    #[error("table scene: batch {batch}: {reason}")]
    TableLayout {
        /// Batch index.
        batch: usize,
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// Active counts that do not match the table's batches.
    #[error("table scene: {reason}")]
    ActiveCounts {
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// A table-layer failure (unknown column, ...).
    #[error(transparent)]
    Table(#[from] gpugraph_tables::TableError),
}
