//! [`ProgramPrimitive`]: an operation of a program tree as explicit command nodes, plus its
//! CPU semantics over [`CpuMemory`] (the interpreter's buffers).

use std::collections::HashMap;
use std::fmt;

use gpugraph_command::{BufferHandle, CommandGraph, DataView, DispatchNode, VectorFormat};

use super::error::ProgramTreeError;
use crate::lowering::BackendCapabilities;

/// One command node a primitive asks for. Dispatches may be gated (their grid replaced by a
/// GPU-written indirect count); copies cannot be, and are refused inside gated regions.
#[derive(Clone, Debug)]
pub enum PrimitiveNode {
    /// A declared compute dispatch.
    Dispatch(DispatchNode),
    /// A packed view-to-view copy (`CommandGraph::add_view_copy`).
    Copy {
        /// Node id (the compiler prefixes the tree path).
        id: String,
        /// Source view.
        src: DataView,
        /// Destination view.
        dst: DataView,
    },
}

impl PrimitiveNode {
    /// The node id.
    pub fn id(&self) -> &str {
        match self {
            Self::Dispatch(d) => &d.id,
            Self::Copy { id, .. } => id,
        }
    }
}

/// One choice a primitive made, e.g. `("spmv", "subgroup-row", "short-row CSR …")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// What was chosen (`spmv`, `reduction`): the decision is recorded as `{path}#{aspect}`.
    pub aspect: String,
    /// The realization.
    pub realization: String,
    /// Why.
    pub reason: String,
}

impl Choice {
    /// A choice of `realization` for `aspect`, because `reason`.
    pub fn new(
        aspect: impl Into<String>,
        realization: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            aspect: aspect.into(),
            realization: realization.into(),
            reason: reason.into(),
        }
    }
}

/// A program operation with explicit command nodes (decision `explicit-command-nodes`).
///
/// Contract: construction may allocate graph-owned scratch (transients) but schedules
/// nothing; [`Self::command_nodes`] describes the nodes of ONE execution and never adds them
/// (the compiler does, possibly gating their grids); it must return the same nodes every
/// call. [`Self::interpret`] applies the same semantics to host words.
pub trait ProgramPrimitive: Send + Sync + fmt::Debug {
    /// Unique id within the tree.
    fn id(&self) -> &str;
    /// The operation type (decision report).
    fn operation_type(&self) -> &str;
    /// The realizations chosen from shapes and `capabilities`, with reasons.
    fn choices(&self, capabilities: &BackendCapabilities) -> Vec<Choice>;
    /// The nodes of one execution, in order.
    fn command_nodes(
        &self,
        graph: &CommandGraph,
        capabilities: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError>;
    /// The same semantics on the CPU.
    fn interpret(&self, memory: &mut CpuMemory) -> Result<(), ProgramTreeError>;
}

/// Host copies of graph buffers as 32-bit words, for the CPU interpreter. Views must be
/// packed 4-byte formats (uint32, int32, float32) at 4-byte offsets.
#[derive(Clone, Debug, Default)]
pub struct CpuMemory {
    buffers: HashMap<BufferHandle, Vec<u32>>,
}

impl CpuMemory {
    /// Empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets buffer `h` to `words`.
    pub fn insert(&mut self, h: BufferHandle, words: Vec<u32>) {
        self.buffers.insert(h, words);
    }

    /// Buffer `h`'s words, if present.
    pub fn buffer(&self, h: BufferHandle) -> Option<&[u32]> {
        self.buffers.get(&h).map(Vec::as_slice)
    }

    fn range(op: &str, v: &DataView) -> Result<(usize, usize), ProgramTreeError> {
        if v.format().byte_size() != 4 || !v.is_packed() || !v.byte_offset().is_multiple_of(4) {
            return Err(ProgramTreeError::Cpu {
                operation: op.to_string(),
                reason: format!(
                    "the interpreter reads packed 4-byte rows; got {} rows of {} at byte {}",
                    v.len(),
                    v.format(),
                    v.byte_offset()
                ),
            });
        }
        let start = (v.byte_offset() / 4) as usize;
        Ok((start, start + v.len() as usize))
    }

    /// The words of `view` (operation `op` names errors).
    pub fn read(&self, op: &str, view: &DataView) -> Result<Vec<u32>, ProgramTreeError> {
        let (s, e) = Self::range(op, view)?;
        match self.buffers.get(&view.buffer()) {
            Some(b) if b.len() >= e => Ok(b[s..e].to_vec()),
            Some(b) => Err(ProgramTreeError::Cpu {
                operation: op.to_string(),
                reason: format!("the view ends at word {e}; the buffer holds {}", b.len()),
            }),
            None => Err(ProgramTreeError::Cpu {
                operation: op.to_string(),
                reason: "the view's buffer was never written or inserted".into(),
            }),
        }
    }

    /// The float32 rows of `view`.
    pub fn read_f32(&self, op: &str, view: &DataView) -> Result<Vec<f32>, ProgramTreeError> {
        Ok(self
            .read(op, view)?
            .into_iter()
            .map(f32::from_bits)
            .collect())
    }

    /// Writes `words` into `view` (growing a buffer first written here).
    pub fn write(
        &mut self,
        op: &str,
        view: &DataView,
        words: &[u32],
    ) -> Result<(), ProgramTreeError> {
        let (s, e) = Self::range(op, view)?;
        if words.len() != e - s {
            return Err(ProgramTreeError::Cpu {
                operation: op.to_string(),
                reason: format!("{} words written into a {}-row view", words.len(), e - s),
            });
        }
        let b = self.buffers.entry(view.buffer()).or_default();
        if b.len() < e {
            b.resize(e, 0);
        }
        b[s..e].copy_from_slice(words);
        Ok(())
    }

    /// Writes float32 rows into `view`.
    pub fn write_f32(
        &mut self,
        op: &str,
        view: &DataView,
        values: &[f32],
    ) -> Result<(), ProgramTreeError> {
        let words: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        self.write(op, view, &words)
    }
}

/// Requires `view` to be one packed row of `format`.
pub(crate) fn require_word(
    node: &str,
    view: &DataView,
    format: VectorFormat,
) -> Result<(), ProgramTreeError> {
    if view.len() != 1 || view.format() != format || !view.is_packed() {
        return Err(ProgramTreeError::Predicate {
            node: node.to_string(),
            rows: view.len(),
            format: view.format().to_string(),
        });
    }
    Ok(())
}
