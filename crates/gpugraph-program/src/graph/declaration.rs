//! Declarations: what a graph value is (scalar, vector or texture, its format, optional fixed
//! length and chunk partition) and typed references to it. Declarations contain types, never
//! data or GPU storage.

use std::fmt;

use gpugraph_command::{wgpu, VectorFormat};

use crate::expr::ScalarType;

/// A vector declaration: row format plus optional fixed row count and chunk partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorSpec {
    /// Stored format of one row.
    pub format: VectorFormat,
    /// Fixed row count every execution must have (`None`: resolved per execution).
    pub length: Option<u64>,
    /// Fixed chunk partition (lengths in chunk order, empty chunks allowed).
    pub chunk_lengths: Option<Vec<u64>>,
}

/// A texture declaration. Textures can be described and validated; reusable graph execution
/// does not bind them yet (compilation rejects operations that use one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextureSpec {
    /// Texel format.
    pub format: wgpu::TextureFormat,
    /// Fixed size in texels, when declared.
    pub size: Option<(u32, u32)>,
}

/// The type of a graph value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueSpec {
    /// One number per execution (float32, sint32 or uint32). Operation-produced scalars live
    /// on the GPU as one-row vectors of the matching format.
    Scalar(ScalarType),
    /// Ordered chunks of fixed-width rows.
    Vector(VectorSpec),
    /// A 2-D texture.
    Texture(TextureSpec),
}

/// The kind of a value, for messages and checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// A scalar.
    Scalar,
    /// A vector.
    Vector,
    /// A texture.
    Texture,
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueKind::Scalar => "scalar",
            ValueKind::Vector => "vector",
            ValueKind::Texture => "texture",
        })
    }
}

impl ValueSpec {
    /// A scalar of `ty`.
    pub fn scalar(ty: ScalarType) -> Self {
        ValueSpec::Scalar(ty)
    }

    /// A vector of `format` rows whose length is resolved per execution.
    pub fn vector(format: VectorFormat) -> Self {
        ValueSpec::Vector(VectorSpec {
            format,
            length: None,
            chunk_lengths: None,
        })
    }

    /// A texture of `format` whose size is not fixed.
    pub fn texture(format: wgpu::TextureFormat) -> Self {
        ValueSpec::Texture(TextureSpec { format, size: None })
    }

    /// The same vector declaration with a fixed row count (no effect on other kinds).
    pub fn with_length(mut self, length: u64) -> Self {
        if let ValueSpec::Vector(v) = &mut self {
            v.length = Some(length);
        }
        self
    }

    /// The same vector declaration with a fixed chunk partition; the row count becomes their
    /// sum unless a length was given (a mismatch is reported when the declaration is added).
    pub fn with_chunk_lengths(mut self, chunk_lengths: Vec<u64>) -> Self {
        if let ValueSpec::Vector(v) = &mut self {
            if v.length.is_none() {
                v.length = Some(chunk_lengths.iter().sum());
            }
            v.chunk_lengths = Some(chunk_lengths);
        }
        self
    }

    /// The same texture declaration with a fixed size (no effect on other kinds).
    pub fn with_size(mut self, width: u32, height: u32) -> Self {
        if let ValueSpec::Texture(t) = &mut self {
            t.size = Some((width, height));
        }
        self
    }

    /// Scalar, vector or texture.
    pub fn kind(&self) -> ValueKind {
        match self {
            ValueSpec::Scalar(_) => ValueKind::Scalar,
            ValueSpec::Vector(_) => ValueKind::Vector,
            ValueSpec::Texture(_) => ValueKind::Texture,
        }
    }

    /// The vector declaration, if this is one.
    pub fn as_vector(&self) -> Option<&VectorSpec> {
        match self {
            ValueSpec::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// The scalar type, if this is a scalar.
    pub fn as_scalar(&self) -> Option<ScalarType> {
        match self {
            ValueSpec::Scalar(t) => Some(*t),
            _ => None,
        }
    }

    /// Whether `other` has the same kind and format (lengths are not compared): the rule a
    /// typed reference must satisfy against the declaration it names.
    pub fn same_type(&self, other: &ValueSpec) -> bool {
        match (self, other) {
            (ValueSpec::Scalar(a), ValueSpec::Scalar(b)) => a == b,
            (ValueSpec::Vector(a), ValueSpec::Vector(b)) => a.format == b.format,
            (ValueSpec::Texture(a), ValueSpec::Texture(b)) => a.format == b.format,
            _ => false,
        }
    }

    /// The storage format of the value's rows: a vector's format, a scalar's one-component
    /// format; `None` for textures.
    pub fn row_format(&self) -> Option<VectorFormat> {
        match self {
            ValueSpec::Scalar(t) => Some(scalar_format(*t)),
            ValueSpec::Vector(v) => Some(v.format),
            ValueSpec::Texture(_) => None,
        }
    }

    /// Checks internal consistency: chunk lengths that sum to the declared length.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let ValueSpec::Vector(VectorSpec {
            length: Some(length),
            chunk_lengths: Some(chunks),
            ..
        }) = self
        {
            let sum: u64 = chunks.iter().sum();
            if sum != *length {
                return Err(format!(
                    "chunk lengths {chunks:?} sum to {sum}, not the declared length {length}"
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for ValueSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSpec::Scalar(t) => write!(f, "scalar {t}"),
            ValueSpec::Vector(v) => {
                write!(f, "vector {}", v.format)?;
                if let Some(l) = v.length {
                    write!(f, " of length {l}")?;
                }
                if let Some(c) = &v.chunk_lengths {
                    write!(f, " in chunks {c:?}")?;
                }
                Ok(())
            }
            ValueSpec::Texture(t) => write!(f, "texture {:?}", t.format),
        }
    }
}

/// The one-component storage format of a scalar type (how produced scalars are stored).
pub fn scalar_format(ty: ScalarType) -> VectorFormat {
    match ty {
        ScalarType::Float32 => VectorFormat::Float32,
        ScalarType::Sint32 => VectorFormat::Sint32,
        ScalarType::Uint32 => VectorFormat::Uint32,
    }
}

/// A reference to a graph value: a name, optionally typed. Both forms resolve through the
/// graph's declaration namespace; a typed reference must match the declared kind and format.
/// References are not physical buffers or command-graph views.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueRef {
    name: String,
    spec: Option<ValueSpec>,
}

impl ValueRef {
    /// A reference by name only.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            spec: None,
        }
    }

    /// A typed reference: resolution checks the declaration has `spec`'s kind and format.
    pub fn typed(name: impl Into<String>, spec: ValueSpec) -> Self {
        Self {
            name: name.into(),
            spec: Some(spec),
        }
    }

    /// The referenced name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The expected type, for typed references.
    pub fn spec(&self) -> Option<&ValueSpec> {
        self.spec.as_ref()
    }
}

impl fmt::Display for ValueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl From<&str> for ValueRef {
    fn from(s: &str) -> Self {
        ValueRef::named(s)
    }
}

impl From<String> for ValueRef {
    fn from(s: String) -> Self {
        ValueRef::named(s)
    }
}

impl From<&String> for ValueRef {
    fn from(s: &String) -> Self {
        ValueRef::named(s.as_str())
    }
}

impl From<&ValueRef> for ValueRef {
    fn from(r: &ValueRef) -> Self {
        r.clone()
    }
}

/// How a declared value enters an execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// External, borrowed, read-only; bound on every run.
    Input,
    /// Initialized mutable vector storage, caller-owned, bound on every run; operations may
    /// read, write or update it in place.
    State,
    /// An explicit declaration without a role: a result when an operation writes it, otherwise
    /// an input that must be bound.
    Declared,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Input => "input",
            Role::State => "state",
            Role::Declared => "declared value",
        })
    }
}

/// One entry of a graph's declaration namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// Unique name.
    pub name: String,
    /// Its type.
    pub spec: ValueSpec,
    /// How it enters an execution.
    pub role: Role,
}
