//! [`HierarchyLayout`]: parent/child expansion flags → effective child heights → [`Scan`] →
//! stable exclusive row offsets, packed or partitioned (spec tranche 3.2,
//! GPUHierarchyLayout).

use gpugraph_command::{Binding, CommandGraph, VectorFormat, VectorView};

use super::nodes::{self, bound, WG};
use crate::error::AlgorithmError;
use crate::kernel::{
    check_same_topology, check_writes_alone, require_packed, shader, Binder, ViewCheck,
};
use crate::scan::Scan;

const ALGORITHM: &str = "hierarchy layout";

/// Row heights and exclusive row offsets of a one-level hierarchy: `parent_states.len()`
/// parents with `children_per_parent` children each, child `g` belonging to parent
/// `g / children_per_parent`.
///
/// Contract:
/// * states are packed uint32, nonzero = expanded; `child_states` has
///   `parent_states.len() · children_per_parent` rows;
/// * height of child `g`: under an expanded parent, `expanded_child_height` or
///   `collapsed_child_height` by its own state; under a collapsed parent,
///   `collapsed_parent_height` for the parent's first child (its one summary row) and 0 for
///   the others;
/// * `offsets` = the exclusive prefix sum of `heights` (uint32, wrapping), by [`Scan`];
/// * partitioned: `heights` and `offsets` have `child_states`' chunk lengths; parent chunks
///   may cut anywhere — the global child and parent IDs (cumulative chunk lengths) pair them,
///   one explicit pass per intersecting (child chunk, parent chunk) range, and the scan
///   carries across chunks, so the result equals the packed layout; empty chunks keep their
///   place; nothing is concatenated or repacked;
/// * outputs may share no buffer with the states or each other; states may change between
///   encodings (no recompilation, no readback).
///
/// Nodes: `{id}/heights/{c}/{q}` per non-empty intersection, then the scan `{id}/scan`.
#[derive(Clone, Debug)]
pub struct HierarchyLayout {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed uint32 expansion flag per parent.
    pub parent_states: VectorView,
    /// Packed uint32 expansion flag per child.
    pub child_states: VectorView,
    /// Packed uint32 output: effective height per child.
    pub heights: VectorView,
    /// Packed uint32 output: exclusive row offset per child.
    pub offsets: VectorView,
    /// Children of every parent (at least 1).
    pub children_per_parent: u32,
    /// Height of an expanded child of an expanded parent.
    pub expanded_child_height: u32,
    /// Height of a collapsed child of an expanded parent.
    pub collapsed_child_height: u32,
    /// Height of a collapsed parent's summary row.
    pub collapsed_parent_height: u32,
}

/// `HeightParams` in hierarchy.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct HeightParams {
    rows: u32,
    start: u32,
    child_base: u32,
    parent_base: u32,
    child_off: u32,
    parent_off: u32,
    heights_off: u32,
    children_per_parent: u32,
    expanded_child: u32,
    collapsed_child: u32,
    collapsed_parent: u32,
    pad0: u32,
}

fn source() -> String {
    shader("topology/hierarchy.wgsl")
        .comment("gpugraph-gpgpu topology: hierarchy layout heights")
        .u32("WG", WG)
        .build()
}

impl HierarchyLayout {
    /// Validates the views and adds the height passes and the scan (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let u32s = VectorFormat::Uint32;
        if self.children_per_parent == 0 {
            return Err(c.out_of_range("children_per_parent", 0, "at least 1"));
        }
        require_packed(c, "parent_states", &self.parent_states, u32s)?;
        require_packed(c, "child_states", &self.child_states, u32s)?;
        require_packed(c, "heights", &self.heights, u32s)?;
        require_packed(c, "offsets", &self.offsets, u32s)?;
        let k = u64::from(self.children_per_parent);
        let children = self.parent_states.len().checked_mul(k);
        if children != Some(self.child_states.len()) {
            return Err(c.length(
                "child_states",
                "rows",
                self.child_states.len(),
                children.unwrap_or(u64::MAX),
                "parent_states rows × children_per_parent",
            ));
        }
        if self.child_states.len() > u64::from(u32::MAX) {
            return Err(c.device_limit("children", self.child_states.len(), u64::from(u32::MAX)));
        }
        check_same_topology(
            c,
            "child_states",
            &self.child_states,
            "heights",
            &self.heights,
        )?;
        check_same_topology(
            c,
            "child_states",
            &self.child_states,
            "offsets",
            &self.offsets,
        )?;
        check_writes_alone(
            graph,
            c,
            &[("heights", &self.heights), ("offsets", &self.offsets)],
            &[
                ("parent_states", &self.parent_states),
                ("child_states", &self.child_states),
            ],
            "",
        )?;
        let binder = Binder::new(&graph.device().limits());
        // Every pass's parameters first, so a view the device cannot bind adds nothing.
        let mut passes = Vec::new();
        let mut child_base = 0u64;
        for (ci, (cv, hv)) in self
            .child_states
            .chunks()
            .iter()
            .zip(self.heights.chunks())
            .enumerate()
        {
            let (child_off, _) = bound(&binder, c, &format!("child_states chunk {ci}"), cv)?;
            let (heights_off, _) = bound(&binder, c, &format!("heights chunk {ci}"), hv)?;
            let child_end = child_base + cv.len();
            let mut parent_base = 0u64;
            for (qi, pv) in self.parent_states.chunks().iter().enumerate() {
                let (lo, hi) = (
                    (parent_base * k).max(child_base),
                    ((parent_base + pv.len()) * k).min(child_end),
                );
                if lo < hi {
                    let (parent_off, _) =
                        bound(&binder, c, &format!("parent_states chunk {qi}"), pv)?;
                    let p = HeightParams {
                        rows: (hi - lo) as u32,
                        start: (lo - child_base) as u32,
                        child_base: child_base as u32,
                        parent_base: parent_base as u32,
                        child_off,
                        parent_off,
                        heights_off,
                        children_per_parent: self.children_per_parent,
                        expanded_child: self.expanded_child_height,
                        collapsed_child: self.collapsed_child_height,
                        collapsed_parent: self.collapsed_parent_height,
                        pad0: 0,
                    };
                    passes.push((ci, qi, p, *pv, *cv, *hv));
                }
                parent_base += pv.len();
            }
            child_base = child_end;
        }
        let id = &self.id;
        let wgsl = source();
        for (ci, qi, p, pv, cv, hv) in passes {
            nodes::dispatch(
                graph,
                format!("{id}/heights/{ci}/{qi}"),
                "topology/hierarchy",
                wgsl.clone(),
                "heights_of",
                vec![
                    Binding::params(0, &p),
                    Binding::read(1, pv),
                    Binding::read(2, cv),
                    Binding::read_write(3, hv),
                ],
                nodes::rows(u64::from(p.rows)),
            )?;
        }
        Scan {
            id: format!("{id}/scan"),
            input: self.heights,
            output: self.offsets,
            inclusive: false,
            segment_starts: None,
        }
        .add_to_graph(graph)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn height_kernel_validates_and_params_match() {
        let s = source();
        kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
        let members = kernel::field_offsets!(HeightParams; rows, start, child_base,
            parent_base, child_off, parent_off, heights_off, children_per_parent,
            expanded_child, collapsed_child, collapsed_parent, pad0);
        let size = Some(std::mem::size_of::<HeightParams>());
        kernel::assert_struct_layout(&s, "HeightParams", size, &members);
    }
}
