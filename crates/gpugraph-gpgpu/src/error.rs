//! [`AlgorithmError`]: what an algorithm's `add_to_graph` rejects, naming the algorithm id,
//! the offending view and the numbers involved.

use gpugraph_command::GraphError;

/// Error of an algorithm or workflow declaration.
#[derive(Debug, thiserror::Error)]
pub enum AlgorithmError {
    /// A view has a format, stride or alignment the algorithm does not support.
    #[error("{algorithm} {id}: {what} must be {expected}, got {actual}")]
    UnsupportedView {
        /// Algorithm name ("scan", "mask", ...).
        algorithm: &'static str,
        /// The algorithm instance id.
        id: String,
        /// Which argument ("input", "flags", "output chunk 2", ...).
        what: String,
        /// What is supported, e.g. "packed uint32".
        expected: String,
        /// What was given.
        actual: String,
    },
    /// An argument's length (rows, chunks or entries) differs from what another argument or
    /// the contract fixes.
    #[error("{algorithm} {id}: {what} has {actual} {unit} but {rule} needs {expected}")]
    LengthMismatch {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// The argument ("values", "rejected", ...).
        what: Box<str>,
        /// What is counted: "rows", "chunks", "entries".
        unit: &'static str,
        /// Its length.
        actual: u64,
        /// The length it must have.
        expected: u64,
        /// What fixes that length ("the keys", "one row per partition", ...).
        rule: Box<str>,
    },
    /// Two vectors read or written row for row have different chunk lengths.
    #[error("{algorithm} {id}: {what} chunk lengths {actual:?} differ from {reference} chunk lengths {expected:?}")]
    ChunkMismatch {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// The argument whose chunks differ ("mask", "output", ...).
        what: Box<str>,
        /// The argument it must match ("input", "codes", ...).
        reference: Box<str>,
        /// The reference's chunk lengths (boxed, like the names: keeps `AlgorithmError` small).
        expected: Box<[u64]>,
        /// The argument's chunk lengths.
        actual: Box<[u64]>,
    },
    /// Inputs read row for row carry different live counts (one count must bound them all).
    #[error("{algorithm} {id}: {first} and {second} carry different live counts; rows read together need one count")]
    LiveCountMismatch {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// The first input with a live count.
        first: Box<str>,
        /// An input with another one.
        second: Box<str>,
    },
    /// A configuration value the algorithm does not accept.
    #[error("{algorithm} {id}: {what} is {value}; it must be {allowed}")]
    OutOfRange {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// Which value ("key count", "max segment width", "the x range", ...).
        what: Box<str>,
        /// The value given, rendered ("0", "[1, 1]", ...).
        value: Box<str>,
        /// What is accepted ("at least 1", "in 1..=256", ...).
        allowed: Box<str>,
    },
    /// An argument the rest of the configuration needs was not given.
    #[error("{algorithm} {id}: {needed_by} needs {what}")]
    MissingArgument {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// What is missing ("a sorted-values buffer", ...).
        what: Box<str>,
        /// What needs it ("values", "the mean output", ...).
        needed_by: Box<str>,
    },
    /// A policy or option outside its documented range or beyond the device; `source` is the
    /// policy's typed error ([`crate::kernel::PolicyError`], [`crate::sort::SortPolicyError`],
    /// [`crate::sort::SortOptionsError`]), reachable by downcasting.
    #[error("{algorithm} {id}: {source}")]
    Policy {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// The policy's error.
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A size exceeds a device limit (binding size, dispatch size).
    #[error("{algorithm} {id}: {what} needs {needed} but the device allows {limit}")]
    DeviceLimit {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// Which limit.
        what: String,
        /// Requested amount.
        needed: u64,
        /// Device limit.
        limit: u64,
    },
    /// A buffer the algorithm writes is also read by it (no algorithm works in place), or two
    /// views it writes overlap.
    #[error("{algorithm} {id}: {written} and {other} share buffer {buffer}: {reason}")]
    Aliased {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// The written argument ("output", "count", "output chunk 2", ...).
        written: String,
        /// The other argument (read, or written at overlapping bytes).
        other: String,
        /// The graph id of the shared buffer (boxed: keeps `AlgorithmError` small).
        buffer: Box<str>,
        /// Why the algorithm refuses it.
        reason: &'static str,
    },
    /// A kernel layer (the scan kernel's device check, the chained-scan tile planner, the
    /// scan kernel's binding check) rejected the configuration; `source` is that layer's
    /// typed error (e.g. [`crate::scan::ScanKernelError`], [`crate::scan::ScanPlanError`],
    /// [`crate::scan::ScanBindError`]), reachable by downcasting.
    #[error("{algorithm} {id}: {source}")]
    Kernel {
        /// Algorithm name.
        algorithm: &'static str,
        /// Instance id.
        id: String,
        /// The kernel layer's reason.
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The command graph rejected a declaration.
    #[error(transparent)]
    Graph(#[from] GraphError),
}
