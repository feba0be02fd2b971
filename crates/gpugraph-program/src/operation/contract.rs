//! Operation contracts: which graph values an operation reads and writes, how vector outputs
//! get their rows, and which device features it needs. Contracts describe logical work; they
//! do not execute it or own storage. Physical accesses are declared separately by the
//! command-graph nodes a lowering adds.

use std::collections::HashMap;

use gpugraph_command::{wgpu, VectorFormat};

use crate::expr::ScalarType;
use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::ProgramError;

/// How an operation uses a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Uses an existing value.
    Read,
    /// Produces or replaces a value (no promise of zero-filled storage: write every row
    /// consumers read).
    Write,
    /// Requires initialized storage (state) and updates that same value.
    ReadWrite,
}

impl Access {
    /// Whether the access reads the value.
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }
    /// Whether the access writes the value.
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
    /// The spec spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read-write",
        }
    }
}

/// How a written vector's rows and chunk boundaries are determined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Row count and exact chunk boundaries (empty chunks included) of a vector the operation
    /// reads.
    Like(ValueRef),
    /// A fixed row count; a partition on the output's declaration is kept when present.
    Length(u64),
    /// A fixed partition whose lengths sum to `length`.
    Chunked {
        /// Total rows.
        length: u64,
        /// Rows per chunk, in order.
        chunk_lengths: Vec<u64>,
    },
}

/// One logical use of a graph value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueUse {
    /// The value (by name or typed reference).
    pub value: ValueRef,
    /// How it is used.
    pub access: Access,
    /// Output shape; only for written vectors. `None` uses the output declaration or the
    /// supplied output target.
    pub shape: Option<Shape>,
}

/// What an operation reads and writes. Readonly once given to a graph: the graph snapshots it
/// at compilation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperationContract {
    /// Operation-defined results (one writer; not inputs or state) with their declarations.
    pub outputs: Vec<(String, ValueSpec)>,
    /// Every logical read and write, outputs included.
    pub values: Vec<ValueUse>,
    /// Device features the lowering needs; compilation rejects a device without them.
    pub required_features: wgpu::Features,
}

impl OperationContract {
    /// An empty contract.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds an operation-defined result `name` declared as `spec`.
    pub fn output(mut self, name: impl Into<String>, spec: ValueSpec) -> Self {
        self.outputs.push((name.into(), spec));
        self
    }
    /// Adds a read of `value`.
    pub fn read(mut self, value: impl Into<ValueRef>) -> Self {
        self.values.push(ValueUse {
            value: value.into(),
            access: Access::Read,
            shape: None,
        });
        self
    }
    /// Adds a read of `value` unless the contract already reads a value of that name (so
    /// `a · a` or `x * s + x` lists its operand once).
    pub(crate) fn read_once(self, value: impl Into<ValueRef>) -> Self {
        let value = value.into();
        let listed = self
            .values
            .iter()
            .any(|u| u.access == Access::Read && u.value.name() == value.name());
        if listed {
            self
        } else {
            self.read(value)
        }
    }
    /// Adds a write of `value` with an optional shape.
    pub fn write(mut self, value: impl Into<ValueRef>, shape: Option<Shape>) -> Self {
        self.values.push(ValueUse {
            value: value.into(),
            access: Access::Write,
            shape,
        });
        self
    }
    /// Adds a read-write (in-place update) of `value`, which must be state.
    pub fn read_write(mut self, value: impl Into<ValueRef>) -> Self {
        self.values.push(ValueUse {
            value: value.into(),
            access: Access::ReadWrite,
            shape: None,
        });
        self
    }
    /// Adds required device features.
    pub fn requires(mut self, features: wgpu::Features) -> Self {
        self.required_features |= features;
        self
    }
}

/// The declarations visible to an operation when its contract is computed: the graph's
/// inputs, state and explicit declarations, and the results of operations added before it.
pub struct Scope<'a> {
    pub(crate) operation: &'a str,
    pub(crate) values: &'a HashMap<String, ValueSpec>,
}

impl<'a> Scope<'a> {
    /// A scope over `values` for the operation `operation` (for tests and custom planners).
    pub fn new(operation: &'a str, values: &'a HashMap<String, ValueSpec>) -> Self {
        Self { operation, values }
    }

    /// The operation whose contract is being computed.
    pub fn operation(&self) -> &str {
        self.operation
    }

    /// The declaration of `name`, if visible.
    pub fn get(&self, name: &str) -> Option<&'a ValueSpec> {
        self.values.get(name)
    }

    /// Every visible name.
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        self.values.keys().map(String::as_str)
    }

    /// Resolves a reference: the name must be visible and a typed reference must match the
    /// declared kind and format.
    pub fn resolve(&self, r: &ValueRef) -> Result<&'a ValueSpec, ProgramError> {
        find_declared(self.operation, r, self.values, |spec| spec)
    }

    /// The format of a visible vector.
    pub fn vector_format(&self, r: &ValueRef) -> Result<VectorFormat, ProgramError> {
        match self.resolve(r)? {
            ValueSpec::Vector(v) => Ok(v.format),
            other => Err(self.mismatch(r, other, "a vector")),
        }
    }

    /// The type of a visible scalar.
    pub fn scalar_type(&self, r: &ValueRef) -> Result<ScalarType, ProgramError> {
        match self.resolve(r)? {
            ValueSpec::Scalar(t) => Ok(*t),
            other => Err(self.mismatch(r, other, "a scalar")),
        }
    }

    fn mismatch(&self, r: &ValueRef, spec: &ValueSpec, wanted: &str) -> ProgramError {
        ProgramError::ReferenceMismatch {
            operation: self.operation.to_string(),
            value: r.name().to_string(),
            declared: spec.to_string(),
            referenced: wanted.to_string(),
        }
    }
}

/// The entry of `values` named by `r`, whose declaration (`spec` of it) a typed `r` must
/// match; an unknown name is [`ProgramError::UnknownValue`] of `operation`.
pub(crate) fn find_declared<'m, T>(
    operation: &str,
    r: &ValueRef,
    values: &'m HashMap<String, T>,
    spec: fn(&T) -> &ValueSpec,
) -> Result<&'m T, ProgramError> {
    let found = values
        .get(r.name())
        .ok_or_else(|| ProgramError::UnknownValue {
            operation: operation.to_string(),
            value: r.name().to_string(),
        })?;
    check_reference(operation, r, spec(found))?;
    Ok(found)
}

/// A typed reference must have the declared kind and format.
pub(crate) fn check_reference(
    operation: &str,
    r: &ValueRef,
    declared: &ValueSpec,
) -> Result<(), ProgramError> {
    match r.spec() {
        Some(expected) if !expected.same_type(declared) => Err(ProgramError::ReferenceMismatch {
            operation: operation.to_string(),
            value: r.name().to_string(),
            declared: declared.to_string(),
            referenced: expected.to_string(),
        }),
        _ => Ok(()),
    }
}
