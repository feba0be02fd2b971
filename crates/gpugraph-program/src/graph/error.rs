//! [`ProgramError`]: every rule of declarations, operation contracts, lowering sets, bindings
//! and output targets, as a typed error naming the operation id and the value involved.

use gpugraph_command::{GraphError, VectorFormat};

use crate::graph::declaration::{Role, ValueKind};

/// Boxed error of an operation's contract or of a lowering callback.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Error of graph declaration, compilation or execution.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    // ------------------------------------------------------------------ declarations
    /// A declaration name is used twice.
    #[error("graph {graph}: '{name}' is already declared as {existing}")]
    DuplicateDeclaration {
        /// Graph id.
        graph: String,
        /// The repeated name.
        name: String,
        /// The role of the first declaration.
        existing: Role,
    },
    /// A declaration is internally inconsistent (chunk lengths vs length, empty name, ...).
    #[error("graph {graph}: declaration '{name}' is invalid: {reason}")]
    InvalidDeclaration {
        /// Graph id.
        graph: String,
        /// Declared name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// State must be vector storage.
    #[error("graph {graph}: state '{name}' must be a vector (state is initialized mutable vector storage), not a {kind}")]
    StateNotVector {
        /// Graph id.
        graph: String,
        /// Declared name.
        name: String,
        /// The declared kind.
        kind: ValueKind,
    },
    /// Two operations share an id.
    #[error("graph {graph}: duplicate operation id '{operation}'")]
    DuplicateOperation {
        /// Graph id.
        graph: String,
        /// The repeated id.
        operation: String,
    },

    // ------------------------------------------------------------------ contracts
    /// An operation's contract could not be computed (e.g. an expression that does not type-check).
    #[error("{operation}: {source}")]
    Contract {
        /// Operation id.
        operation: String,
        /// The operation's error.
        #[source]
        source: BoxError,
    },
    /// A contract names a value that is neither declared nor produced by any operation.
    #[error("{operation}: '{value}' is not declared and no operation produces it")]
    UnknownValue {
        /// Operation id.
        operation: String,
        /// The name.
        value: String,
    },
    /// A value is read before the operation that produces it was added.
    #[error("{operation}: reads '{value}' before its producer '{producer}'; add producers before consumers")]
    ProducerOrder {
        /// Consuming operation id.
        operation: String,
        /// The value.
        value: String,
        /// The operation that produces it later.
        producer: String,
    },
    /// A second operation writes an operation-defined result.
    #[error("{operation}: '{value}' already has the writer '{writer}'; results have one writer")]
    MultipleWriters {
        /// The second writer.
        operation: String,
        /// The value.
        value: String,
        /// The first writer.
        writer: String,
    },
    /// An operation-defined result names an input or state declaration.
    #[error("{operation}: result '{value}' is declared as {role}; operation-defined results cannot also be inputs or state")]
    ResultIsDeclared {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
        /// Its declared role.
        role: Role,
    },
    /// An operation writes (or updates) an input.
    #[error("{operation}: '{value}' is an input and cannot be written; declare it with add_state for mutable storage")]
    WriteToInput {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
    },
    /// A read-write use names something other than state.
    #[error("{operation}: read-write '{value}' needs initialized storage bound on every run; declare it with add_state ({actual})")]
    ReadWriteNeedsState {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
        /// What it is instead.
        actual: String,
    },
    /// A contract lists a value twice.
    #[error("{operation}: '{value}' is listed twice in the contract; use one read, write or read-write entry")]
    DuplicateUse {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
    },
    /// An output is listed in `outputs` but not written in `values`, or an output is listed twice.
    #[error("{operation}: output '{value}' {reason}")]
    InvalidOutput {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A typed reference does not match the declaration it names.
    #[error("{operation}: '{value}' is declared {declared} but referenced as {referenced}")]
    ReferenceMismatch {
        /// Operation id (or the lowering's operation).
        operation: String,
        /// The value.
        value: String,
        /// The declaration, spelled.
        declared: String,
        /// The reference's type, spelled.
        referenced: String,
    },
    /// A shape was given where shapes do not apply, or is inconsistent.
    #[error("{operation}: shape of '{value}' is invalid: {reason}")]
    InvalidShape {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// An operation uses a texture; reusable execution does not bind textures yet.
    #[error("{operation}: texture '{value}' cannot be bound by reusable graph execution yet")]
    TexturesUnsupported {
        /// Operation id.
        operation: String,
        /// The texture value.
        value: String,
    },
    /// The device lacks a feature an operation requires.
    #[error("{operation}: requires device feature {feature} which the device lacks")]
    MissingFeature {
        /// Operation id.
        operation: String,
        /// The missing feature, spelled.
        feature: String,
    },

    // ------------------------------------------------------------------ compilation
    /// No lowering is registered for an operation's type.
    #[error("{operation}: no lowering for operation type '{operation_type}' (known: {known:?})")]
    UnknownLowering {
        /// Operation id.
        operation: String,
        /// Its type.
        operation_type: String,
        /// Registered types.
        known: Vec<String>,
    },
    /// Two lowerings share a type name, or one collides with a built-in operation.
    #[error("lowering type '{operation_type}' is supplied twice{}", if *.builtin { " (it is a built-in operation type)" } else { "" })]
    DuplicateLowering {
        /// The type name.
        operation_type: String,
        /// Whether it collides with a built-in.
        builtin: bool,
    },
    /// SimpleGraph was given custom lowerings.
    #[error("SimpleGraph {graph} does not accept custom lowerings ({types:?}); custom lowerings are a full Graph extension")]
    CustomLoweringsUnsupported {
        /// Graph id.
        graph: String,
        /// The supplied types.
        types: Vec<String>,
    },
    /// A selected output is not a known value.
    #[error("graph {graph}: selected output '{value}' is not declared or produced")]
    UnknownOutput {
        /// Graph id.
        graph: String,
        /// The name.
        value: String,
    },
    /// A selected output is an input or state rather than an operation result.
    #[error("graph {graph}: selected output '{value}' is {role}, not an operation result")]
    NotAResult {
        /// Graph id.
        graph: String,
        /// The name.
        value: String,
        /// Its role.
        role: Role,
    },

    // ------------------------------------------------------------------ execution
    /// The compiled graph was destroyed.
    #[error("compiled graph {graph} was destroyed")]
    Destroyed {
        /// Graph id.
        graph: String,
    },
    /// An input or state is not bound.
    #[error("graph {graph}: {role} '{value}' is not bound")]
    MissingBinding {
        /// Graph id.
        graph: String,
        /// The value.
        value: String,
        /// Its role.
        role: Role,
    },
    /// A binding names nothing bindable.
    #[error("graph {graph}: binding '{value}' {reason}")]
    UnexpectedBinding {
        /// Graph id.
        graph: String,
        /// The binding name.
        value: String,
        /// Why it cannot be bound.
        reason: String,
    },
    /// A binding's kind, format or layout does not match the declaration.
    #[error("graph {graph}: binding '{value}' must be {expected}, got {actual}")]
    BindingMismatch {
        /// Graph id.
        graph: String,
        /// The value.
        value: String,
        /// What the declaration needs.
        expected: String,
        /// What was bound.
        actual: String,
    },
    /// A vector's rows or chunk partition differ from what a declaration or shape fixes.
    #[error("{operation}: '{value}' must have {expected}, got {actual}")]
    LengthMismatch {
        /// The operation that writes the value, or "bindings" for inputs and state.
        operation: String,
        /// The value.
        value: String,
        /// Expected rows/chunks, spelled.
        expected: String,
        /// Actual rows/chunks, spelled.
        actual: String,
    },
    /// No shape, declaration or output target determines an output's rows.
    #[error("{operation}: cannot determine the rows of '{value}': give the contract a shape, declare a length, or supply an output target")]
    ShapeUndetermined {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
    },
    /// An output target is invalid.
    #[error("{operation}: output target '{value}' {reason}")]
    InvalidTarget {
        /// The operation that writes the value ("bindings" when none does).
        operation: String,
        /// The target name.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A lowering resolved a value its operation's contract does not list.
    #[error("{operation}: lowering resolves '{value}', which its contract does not list")]
    UndeclaredUse {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
    },
    /// A lowering resolved a value as the wrong kind (vector vs scalar) or a scalar without GPU storage.
    #[error("{operation}: '{value}' cannot be resolved as {expected}: {reason}")]
    ResolveMismatch {
        /// Operation id.
        operation: String,
        /// The value.
        value: String,
        /// What the lowering asked for.
        expected: &'static str,
        /// Why it is not.
        reason: String,
    },
    /// A lowering callback failed.
    #[error("{operation}: lowering '{operation_type}' failed: {source}")]
    Lowering {
        /// Operation id.
        operation: String,
        /// The operation type.
        operation_type: String,
        /// The callback's error.
        #[source]
        source: BoxError,
    },
    /// Storage for a result or intermediate could not be created.
    #[error("{operation}: cannot allocate '{value}' ({bytes} bytes of {format}): {reason}")]
    Allocation {
        /// The operation that writes the value.
        operation: String,
        /// The value.
        value: String,
        /// Requested bytes.
        bytes: u64,
        /// Its format.
        format: VectorFormat,
        /// Why.
        reason: String,
    },
    /// The command graph rejected an import, a node or compilation.
    #[error("graph {graph}: {context}: {source}")]
    CommandGraph {
        /// Graph id.
        graph: String,
        /// What was being done.
        context: String,
        /// The command-graph error.
        #[source]
        source: Box<GraphError>,
    },
}

impl ProgramError {
    /// The operation id the error names, when it names one.
    pub fn operation(&self) -> Option<&str> {
        use ProgramError::*;
        match self {
            Contract { operation, .. }
            | UnknownValue { operation, .. }
            | ProducerOrder { operation, .. }
            | MultipleWriters { operation, .. }
            | ResultIsDeclared { operation, .. }
            | WriteToInput { operation, .. }
            | ReadWriteNeedsState { operation, .. }
            | DuplicateUse { operation, .. }
            | InvalidOutput { operation, .. }
            | ReferenceMismatch { operation, .. }
            | InvalidShape { operation, .. }
            | TexturesUnsupported { operation, .. }
            | MissingFeature { operation, .. }
            | UnknownLowering { operation, .. }
            | LengthMismatch { operation, .. }
            | ShapeUndetermined { operation, .. }
            | InvalidTarget { operation, .. }
            | UndeclaredUse { operation, .. }
            | ResolveMismatch { operation, .. }
            | Lowering { operation, .. }
            | Allocation { operation, .. } => Some(operation),
            DuplicateOperation { operation, .. } => Some(operation),
            _ => None,
        }
    }
}
