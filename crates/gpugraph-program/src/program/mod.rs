//! Program trees: [`Program`] (operations, composites, conditionals, loops), their wgpu
//! compiler ([`WgpuProgramCompiler`]) and CPU interpreter ([`interpret`]).
//!
//! A program is semantic: its operations ([`ProgramOp`]: a type name, input and output views,
//! attributes) never touch the command graph; the compiler lowers each through the program
//! lowerings of its [`crate::lowering::LoweringSet`], which pick a realization from the
//! operation's shape and the backend's capabilities (e.g. SpMV `subgroup-row` vs
//! `thread-row`, dot `single-workgroup` vs `hierarchical`). User [`ProgramPrimitive`]s may
//! instead describe their own command nodes (decision `explicit-command-nodes`). Either way
//! the compiler adds the nodes, lowering the whole tree into ONE command graph and recording
//! each choice in a [`ProgramReport`]:
//! - composites flatten (WebGPU has no child graphs);
//! - loops without a runtime predicate unroll to `max_iterations` ("bounded unrolling");
//! - loops and conditionals with a runtime predicate (one uint32 word on the GPU, nonzero =
//!   true) lower to a "gpu-gated bounded sequence": before each iteration (or the branches) a
//!   one-workgroup gate kernel reads the predicate and writes the indirect workgroup counts
//!   of every dispatch the region holds: its geometry while active, 0 after the loop exited
//!   or on the branch not taken. The unrolled remainder then costs only empty indirect
//!   dispatches and the gates. Nothing is read back between submit and completion.
//!
//! What a gate can condition: compute dispatches with a direct grid. It cannot condition
//! copies or render passes (they have no indirect workgroup count) nor dispatches that are
//! already indirect: those are refused inside a gated region with
//! [`ProgramTreeError::Ungatable`] (express a copy as a copy kernel instead), never run
//! unconditionally. Gates nest: a region inside a gated region is active only while its
//! parent is.

mod compile;
mod error;
mod interpret;
pub mod ops;
pub mod pcg;
mod primitive;
mod report;
mod run;

use std::sync::Arc;

use gpugraph_command::DataView;

use crate::lowering::ProgramOp;

pub use compile::{CompiledProgram, GatedRegion, RegionKind, WgpuProgramCompiler};
pub use error::ProgramTreeError;
pub use interpret::{interpret, interpret_with, Interpretation};
pub use primitive::{Choice, CpuMemory, PrimitiveNode, ProgramPrimitive};
pub use report::{ProgramReport, TreeReport};
pub use run::{run_once, RunLog};

/// A program tree.
#[derive(Clone, Debug)]
pub enum Program {
    /// A user primitive with explicit command nodes (decision `explicit-command-nodes`).
    Operation(Arc<dyn ProgramPrimitive>),
    /// A semantic operation, lowered through the lowering set's realizations.
    Semantic(ProgramOp),
    /// Children in order.
    Composite {
        /// Id (unique among siblings' paths).
        id: String,
        /// The children, run in order.
        children: Vec<Program>,
    },
    /// `then` when the predicate word is nonzero, else `otherwise`; the predicate is read
    /// once, before either branch runs.
    Conditional {
        /// Id.
        id: String,
        /// One packed uint32 row.
        predicate: DataView,
        /// Runs when the predicate is nonzero.
        then: Box<Program>,
        /// Runs when it is zero.
        otherwise: Option<Box<Program>>,
    },
    /// `body` up to `max_iterations` times; with a predicate, before each iteration the
    /// predicate word is read and the loop exits for good once it is zero.
    Loop {
        /// Id.
        id: String,
        /// The body.
        body: Box<Program>,
        /// The bound (the compiler unrolls this many iterations).
        max_iterations: u32,
        /// One packed uint32 row, or none (a fixed trip count).
        predicate: Option<DataView>,
    },
}

impl Program {
    /// An operation node.
    pub fn operation(p: impl ProgramPrimitive + 'static) -> Self {
        Self::Operation(Arc::new(p))
    }

    /// A semantic operation node.
    pub fn semantic(op: ProgramOp) -> Self {
        Self::Semantic(op)
    }

    /// A composite node.
    pub fn composite(id: impl Into<String>, children: Vec<Program>) -> Self {
        Self::Composite {
            id: id.into(),
            children,
        }
    }

    /// A conditional node.
    pub fn conditional(
        id: impl Into<String>,
        predicate: DataView,
        then: Program,
        otherwise: Option<Program>,
    ) -> Self {
        Self::Conditional {
            id: id.into(),
            predicate,
            then: Box::new(then),
            otherwise: otherwise.map(Box::new),
        }
    }

    /// A loop node.
    pub fn repeat(
        id: impl Into<String>,
        body: Program,
        max_iterations: u32,
        predicate: Option<DataView>,
    ) -> Self {
        Self::Loop {
            id: id.into(),
            body: Box::new(body),
            max_iterations,
            predicate,
        }
    }

    /// The node's id.
    pub fn id(&self) -> &str {
        match self {
            Self::Operation(p) => p.id(),
            Self::Semantic(op) => &op.id,
            Self::Composite { id, .. } | Self::Conditional { id, .. } | Self::Loop { id, .. } => id,
        }
    }
}

/// `prefix/id` (or `id` at the root).
pub(crate) fn join(prefix: &str, id: &str) -> String {
    if prefix.is_empty() {
        id.to_string()
    } else {
        format!("{prefix}/{id}")
    }
}

/// `(span, [(member, offset)])` of WGSL struct `name`: the naga check of `#[repr(C)]`
/// parameter structs against their shaders.
#[cfg(test)]
pub(crate) fn wgsl_struct_layout(wgsl: &str, name: &str) -> (u32, Vec<(String, u32)>) {
    let module = naga::front::wgsl::parse_str(wgsl).unwrap_or_else(|e| panic!("{e}"));
    let ty = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name}"))
        .1;
    match &ty.inner {
        naga::TypeInner::Struct { members, span } => (
            *span,
            members
                .iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                .collect(),
        ),
        _ => panic!("{name} is not a struct"),
    }
}

#[cfg(test)]
mod tests {
    use super::compile::GateParams;
    use super::ops::words::WordParams;
    use super::wgsl_struct_layout;
    use std::mem::{offset_of, size_of};

    #[test]
    fn parameter_structs_match_their_wgsl() {
        let (span, members) = wgsl_struct_layout(include_str!("gate.wgsl"), "GateParams");
        assert_eq!(span as usize, size_of::<GateParams>());
        let want = [
            ("mode", offset_of!(GateParams, mode)),
            ("count", offset_of!(GateParams, count)),
            ("pred_off", offset_of!(GateParams, pred_off)),
            ("parent_off", offset_of!(GateParams, parent_off)),
            ("has_parent", offset_of!(GateParams, has_parent)),
            ("max_count", offset_of!(GateParams, max_count)),
            ("pad1", offset_of!(GateParams, pad1)),
            ("pad2", offset_of!(GateParams, pad2)),
        ];
        let got: Vec<(&str, usize)> = members
            .iter()
            .map(|(n, o)| (n.as_str(), *o as usize))
            .collect();
        assert_eq!(got, want);
        let (span, members) = wgsl_struct_layout(include_str!("ops/words.wgsl"), "WordParams");
        assert_eq!(span as usize, size_of::<WordParams>());
        let want = [
            ("n", offset_of!(WordParams, n)),
            ("constant", offset_of!(WordParams, constant)),
            ("limit", offset_of!(WordParams, limit)),
            ("off_target", offset_of!(WordParams, off_target)),
            ("off_word", offset_of!(WordParams, off_word)),
            ("off_counter", offset_of!(WordParams, off_counter)),
            ("off_pred", offset_of!(WordParams, off_pred)),
            ("pad0", offset_of!(WordParams, pad0)),
        ];
        let got: Vec<(&str, usize)> = members
            .iter()
            .map(|(n, o)| (n.as_str(), *o as usize))
            .collect();
        assert_eq!(got, want);
    }
}
