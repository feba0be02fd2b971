//! Typed errors: ingestion and cache errors carry byte offsets, GPU errors the ids involved.

/// Why a trace file or cache could not be read. Every variant with an `offset` points at the
/// byte of the (decompressed) input where the problem was found.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Reading the file failed.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The gzip stream is corrupt (offset into the compressed bytes is unknown to the
    /// decoder; `decompressed` bytes came out before the failure).
    #[error("gzip stream corrupt after {decompressed} decompressed bytes: {message}")]
    Gzip {
        /// Bytes decompressed before the failure.
        decompressed: u64,
        /// The decoder's message.
        message: String,
    },
    /// The JSON is malformed at `offset`.
    #[error("byte {offset}: malformed JSON: {what}")]
    Syntax {
        /// Byte offset.
        offset: u64,
        /// What was found or missing.
        what: String,
    },
    /// The input is JSON but not a trace: neither an array nor an object with `traceEvents`.
    #[error("byte {offset}: not a Chrome trace: {what}")]
    NotATrace {
        /// Byte offset.
        offset: u64,
        /// What was found.
        what: String,
    },
    /// More processes than the span's 16-bit process field holds.
    #[error("{count} processes; a trace holds at most {limit}")]
    TooManyProcesses {
        /// Processes found.
        count: usize,
        /// [`crate::MAX_PROCESSES`].
        limit: usize,
    },
    /// More spans or events than 32-bit IDs hold.
    #[error("{count} {what}; at most {limit} fit 32-bit IDs")]
    TooMany {
        /// What overflowed ("spans", "events", "names").
        what: &'static str,
        /// How many there were.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// A cache file is not one of ours.
    #[error("byte {offset}: not a gpugraph trace cache ({what})")]
    CacheFormat {
        /// Byte offset.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A cache file of another format version.
    #[error("trace cache version {found}; this build reads version {expected}")]
    CacheVersion {
        /// Version in the file.
        found: u32,
        /// Version this build writes.
        expected: u32,
    },
    /// A cache file whose payload does not match its checksum.
    #[error("trace cache checksum {found:#010x} does not match the stored {stored:#010x}")]
    CacheChecksum {
        /// Stored CRC-32.
        stored: u32,
        /// CRC-32 of the payload read.
        found: u32,
    },
    /// A cache file shorter than its header says.
    #[error("trace cache truncated at byte {offset}: {needed} more bytes needed for {what}")]
    CacheTruncated {
        /// Byte offset.
        offset: u64,
        /// Bytes missing.
        needed: u64,
        /// What was being read.
        what: &'static str,
    },
}

/// Why a trace GPU workflow could not be added to a graph.
#[derive(Debug, thiserror::Error)]
pub enum TraceGpuError {
    /// A graph operation failed.
    #[error(transparent)]
    Graph(#[from] gpugraph_command::GraphError),
    /// A primitive rejected its views.
    #[error(transparent)]
    Algorithm(#[from] gpugraph_gpgpu::AlgorithmError),
    /// A render workflow rejected its views.
    #[error(transparent)]
    Render(#[from] gpugraph_render::RenderError),
    /// Data larger than the capacity the graph was compiled for.
    #[error("{workflow} '{id}': {what} needs {needed} rows; the capacity is {capacity}")]
    Capacity {
        /// The workflow.
        workflow: &'static str,
        /// Its id.
        id: String,
        /// What does not fit.
        what: &'static str,
        /// Rows needed.
        needed: u64,
        /// Rows compiled.
        capacity: u64,
    },
    /// A view of the wrong shape.
    #[error("{workflow} '{id}': {what} must be {expected}, got {actual}")]
    View {
        /// The workflow.
        workflow: &'static str,
        /// Its id.
        id: String,
        /// Which view.
        what: &'static str,
        /// The expected shape.
        expected: &'static str,
        /// The shape given.
        actual: String,
    },
}
