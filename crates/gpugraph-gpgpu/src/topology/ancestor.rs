//! [`AncestorProjection`]: every node's nearest visible ancestor along one canonical parent
//! chain (spec tranche 3.2, GPUAncestorProjection).

use gpugraph_command::{Binding, CommandGraph, DataView, VectorFormat, VectorView};

use super::nodes::{self, bound, WG};
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_packed, shader, Binder, ViewCheck};

const ALGORITHM: &str = "ancestor projection";

/// The default invalid value of [`AncestorProjection::invalid`].
pub const NO_ANCESTOR: u32 = u32::MAX;

/// For every node `i`: `i` when visible, else the first visible node on the chain
/// `parents[i]`, `parents[parents[i]]`, … within `max_depth` parent links, else `invalid`.
///
/// Contract:
/// * `parents`, `visible` and `output` are packed uint32 with one row per node (equal
///   lengths); `visible` nonzero = visible; a parent ID `≥` the node count is missing;
/// * a missing parent, a chain of more than `max_depth` hidden links and a hidden cycle (which
///   exhausts the bound) all give `invalid` — deterministic data, never an error, since the
///   chains are GPU data; `max_depth = 0` projects visible nodes only;
/// * IDs are source rows: nothing is renumbered or repacked; `output` may share no buffer
///   with the inputs.
///
/// Node: `{id}`, one invocation per node walking at most `max_depth` links (a bounded walk:
/// reads `2 + 2·links` words per node; pointer jumping would pay `log max_depth` full passes
/// even when chains are short, which interactive hierarchies mostly are).
#[derive(Clone, Debug)]
pub struct AncestorProjection {
    /// Node id (and label).
    pub id: String,
    /// Packed uint32 parent of every node.
    pub parents: DataView,
    /// Packed uint32 visibility of every node (nonzero = visible).
    pub visible: DataView,
    /// Packed uint32 output: the projected node ID per node.
    pub output: DataView,
    /// Hidden parent links followed at most.
    pub max_depth: u32,
    /// Written for missing, cyclic and too-deep ancestry ([`NO_ANCESTOR`] by convention).
    pub invalid: u32,
}

/// `AncestorParams` in ancestor.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct AncestorParams {
    rows: u32,
    max_depth: u32,
    invalid: u32,
    parents_off: u32,
    visible_off: u32,
    out_off: u32,
    pad0: u32,
    pad1: u32,
}

fn source() -> String {
    shader("topology/ancestor.wgsl")
        .comment("gpugraph-gpgpu topology: ancestor projection")
        .u32("WG", WG)
        .build()
}

impl AncestorProjection {
    /// Validates the views and adds node `{id}` (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let u32s = VectorFormat::Uint32;
        let (parents, visible, output) = (
            VectorView::from(self.parents),
            VectorView::from(self.visible),
            VectorView::from(self.output),
        );
        require_packed(c, "parents", &parents, u32s)?;
        require_packed(c, "visible", &visible, u32s)?;
        require_packed(c, "output", &output, u32s)?;
        let n = self.parents.len();
        for (what, v) in [("visible", &self.visible), ("output", &self.output)] {
            if v.len() != n {
                return Err(c.length(what, "rows", v.len(), n, "one row per parent entry"));
            }
        }
        check_writes_alone(
            graph,
            c,
            &[("output", &output)],
            &[("parents", &parents), ("visible", &visible)],
            "",
        )?;
        let binder = Binder::new(&graph.device().limits());
        let (parents_off, rows) = bound(&binder, c, "parents", &self.parents)?;
        let params = AncestorParams {
            rows,
            max_depth: self.max_depth,
            invalid: self.invalid,
            parents_off,
            visible_off: binder.offset(c, "visible", &self.visible)?,
            out_off: binder.offset(c, "output", &self.output)?,
            pad0: 0,
            pad1: 0,
        };
        nodes::dispatch(
            graph,
            self.id.clone(),
            "topology/ancestor",
            source(),
            "project",
            vec![
                Binding::params(0, &params),
                Binding::read(1, self.parents),
                Binding::read(2, self.visible),
                Binding::read_write(3, self.output),
            ],
            nodes::rows(n),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn ancestor_kernel_validates_and_params_match() {
        let s = source();
        kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
        let members = kernel::field_offsets!(AncestorParams; rows, max_depth, invalid,
            parents_off, visible_off, out_off, pad0, pad1);
        let size = Some(std::mem::size_of::<AncestorParams>());
        kernel::assert_struct_layout(&s, "AncestorParams", size, &members);
    }
}
