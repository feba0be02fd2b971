//! Data movement as operations: [`Upload`] (host bytes into a new result, through a
//! compile-time staging buffer and copy commands recorded in the run's encoder) and
//! [`CopyVector`] (a vector into a new result of the same chunk topology, one buffer copy per
//! non-empty chunk). Bytes moved: the payload once (plus the staging write for uploads).

use std::sync::Arc;

use gpugraph_command::{copy_fn, CopyNode, ResourceUse, VectorFormat};

use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::support::{copy_source, Check};
use crate::operation::{Operation, OperationContract, Scope, Shape};

/// Type name of [`Upload`].
pub const UPLOAD_TYPE: &str = "upload";
/// Type name of [`CopyVector`].
pub const COPY_TYPE: &str = "copy";

/// Writes host rows into the result `output` (`format`, fixed length; an optional fixed
/// partition). Each chunk's bytes must be a multiple of 4 (copy alignment).
#[derive(Clone, Debug, PartialEq)]
pub struct Upload {
    /// Operation id.
    pub id: String,
    /// The result name.
    pub output: String,
    /// Row format.
    pub format: VectorFormat,
    /// Packed row bytes.
    pub bytes: Arc<[u8]>,
    /// Chunk partition of the result (`None`: one chunk).
    pub chunk_lengths: Option<Vec<u64>>,
}

impl Upload {
    /// Uploads `rows` (packed `format` rows, e.g. `&[f32]` for float32 or `[u32; 2]` for
    /// uint32x2) into `output`.
    pub fn new<T: bytemuck::Pod>(
        id: impl Into<String>,
        output: impl Into<String>,
        format: VectorFormat,
        rows: &[T],
    ) -> Self {
        Self {
            id: id.into(),
            output: output.into(),
            format,
            bytes: Arc::from(bytemuck::cast_slice::<T, u8>(rows)),
            chunk_lengths: None,
        }
    }

    /// The same upload split into chunks of these lengths.
    pub fn with_chunk_lengths(mut self, chunk_lengths: Vec<u64>) -> Self {
        self.chunk_lengths = Some(chunk_lengths);
        self
    }

    fn rows(&self) -> Result<u64, String> {
        let row = self.format.byte_size() as usize;
        if !self.bytes.len().is_multiple_of(row) {
            return Err(format!(
                "{} bytes are not whole {} rows of {row} bytes",
                self.bytes.len(),
                self.format
            ));
        }
        Ok((self.bytes.len() / row) as u64)
    }
}

impl Operation for Upload {
    operation_identity!(UPLOAD_TYPE);
    fn contract(&self, _scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        let rows = self.rows()?;
        let shape = match &self.chunk_lengths {
            Some(c) => Shape::Chunked {
                length: rows,
                chunk_lengths: c.clone(),
            },
            None => Shape::Length(rows),
        };
        Ok(OperationContract::new()
            .output(&self.output, ValueSpec::vector(self.format))
            .write(&self.output, Some(shape)))
    }
}

/// Copies `input` into the new result `output` (same format and chunk lengths). Chunks must
/// be packed at 4-byte aligned offsets with byte lengths that are multiples of 4.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyVector {
    /// Operation id.
    pub id: String,
    /// The source vector.
    pub input: ValueRef,
    /// The result name.
    pub output: String,
}

impl CopyVector {
    /// `output = input`.
    pub fn new(
        id: impl Into<String>,
        input: impl Into<ValueRef>,
        output: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            input: input.into(),
            output: output.into(),
        }
    }
}

impl Operation for CopyVector {
    operation_identity!(COPY_TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        let format = scope.vector_format(&self.input)?;
        Ok(OperationContract::new()
            .output(&self.output, ValueSpec::vector(format))
            .read(self.input.clone())
            .write(&self.output, Some(Shape::Like(self.input.clone()))))
    }
}

/// Built-in lowering of [`Upload`].
pub(crate) fn upload_lowering() -> Lowering {
    Lowering::typed::<Upload>(UPLOAD_TYPE, lower_upload)
}

fn lower_upload(op: &Upload, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let check = Check::new(UPLOAD_TYPE, &op.id);
    let out = cx.resolve_vector(op.output.as_str())?;
    check.packed_words("output", &out.view, op.format)?;
    let row = op.format.byte_size() as u64;
    // (source offset in the staging buffer, destination view) per non-empty chunk.
    let mut copies = Vec::new();
    let mut cursor = 0u64;
    for (k, c) in out.chunks().iter().enumerate() {
        let bytes = c.len() * row;
        if !bytes.is_multiple_of(4) {
            return Err(check
                .unsupported(
                    format!("output chunk {k}"),
                    "a byte length that is a multiple of 4 (copy alignment)".into(),
                    format!("{bytes} bytes"),
                )
                .into());
        }
        if bytes > 0 {
            copies.push((cursor, *c));
        }
        cursor += bytes;
    }
    let uses = out
        .view
        .buffers()
        .into_iter()
        .map(ResourceUse::copy_dst)
        .collect();
    let payload = op.bytes.clone();
    let node = CopyNode::new(cx.node_id("upload"), uses, move |cc| {
        let staging = copy_source(cc.device(), cc.node_id(), &payload)?;
        Ok(copy_fn(move |encoder, ec| {
            for (src, dst) in &copies {
                encoder.copy_buffer_to_buffer(
                    &staging,
                    *src,
                    ec.buffer(*dst),
                    dst.byte_offset(),
                    dst.byte_span(),
                );
            }
        }))
    });
    cx.add_copy_node(node)?;
    cx.explain(
        "staging copy",
        format!(
            "{} bytes written into a compile-time staging buffer, copied in the run's encoder",
            op.bytes.len()
        ),
    );
    Ok(())
}

/// Built-in lowering of [`CopyVector`].
pub(crate) fn copy_lowering() -> Lowering {
    Lowering::typed::<CopyVector>(COPY_TYPE, lower_copy)
}

fn lower_copy(op: &CopyVector, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let check = Check::new(COPY_TYPE, &op.id);
    let src = cx.resolve_vector(op.input.clone())?;
    let dst = cx.resolve_vector(op.output.as_str())?;
    check.same_topology("input", &src.view, "output", &dst.view)?;
    let mut copied = 0;
    for (k, (s, d)) in src.chunks().iter().zip(dst.chunks()).enumerate() {
        if s.is_empty() {
            continue;
        }
        cx.add_view_copy(cx.node_id(&format!("chunk-{k}")), *s, *d)?;
        copied += 1;
    }
    cx.explain(
        "buffer copies",
        format!("{copied} non-empty chunk(s), one copy command each, boundaries kept"),
    );
    Ok(())
}
