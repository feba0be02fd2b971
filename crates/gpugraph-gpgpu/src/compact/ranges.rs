//! [`IndexedRangeCompaction`]: candidate-driven compaction of source row ids over
//! GPU-resident `[start, end)` ranges into one dense output.
//!
//! Composition (none of it reads anything back): `{id}/lengths` clamps every range and counts
//! the invalid ones; `{id}/range-ends` is a [`Scan`] of the clamped lengths (inclusive: range
//! ends in candidate space); `{id}/expand` maps candidate c to its source id by binary search
//! over the ends and writes the id and its 0/1 selection into transients; `{id}` is a
//! [`Compaction`] of those; `{id}/finish` publishes the invalid-range count and the
//! candidate-bound bit. Traffic per candidate row: flag gather 4 bytes, id + selection
//! written and read again 16 bytes, survivors 4 bytes; per range 8 + 12 bytes.

use gpugraph_command::{BufferDescriptor, CommandGraph, DataView, VectorFormat, VectorView};

use super::helper::{HelperDispatch, HelperKernel, HelperNode, Res};
use super::{add_zero_words, check_compaction_device, helper_grid, helper_source, Compaction};
use crate::error::AlgorithmError;
use crate::kernel::{
    check_writes_alone, require_output, require_packed, Access, ViewCheck, WorkgroupSplit,
};
use crate::kernel::{rows_u32, Binder};
use crate::scan::{Scan, ScanKernelOptions};

const ALGORITHM: &str = "indexed range compaction";

/// Emits the source ids `i` of every row of every range (`ranges` in order, each
/// `[start, end)` over the rows of `flags`) with `flags[i] != 0` into `output`, densely and in
/// range order (a row in two ranges is emitted twice). `count` = the survivor count.
///
/// Ranges are GPU-resident packed uint32x2 rows, read at every encoding. A range is clamped
/// to `start' = min(start, n)`, `end' = clamp(end, start', n)` (n = flag rows); ranges with
/// `end < start`, or non-empty and reaching past n, are invalid: clamped and counted in
/// `invalid_ranges`. Only the first `max_candidates` candidate rows (the sum of the clamped
/// lengths, which must stay below 2^32) are examined. Capacity: `output.len()`; beyond it
/// survivors are counted but not written. `overflow` is a bit set:
/// [`super::cpu::OVERFLOW_CAPACITY`] (1) when the count exceeds the capacity,
/// [`super::cpu::OVERFLOW_CANDIDATES`] (2) when candidate rows
/// exceeded `max_candidates` (the count then covers only the examined rows). Owns transients
/// of `8 * max_candidates + 8 * ranges + 16` bytes (plus the scans' tile status).
#[derive(Clone, Debug)]
pub struct IndexedRangeCompaction {
    /// Node id prefix.
    pub id: String,
    /// Packed uint32x2 `[start, end)` rows over source row ids, processed in order.
    pub ranges: DataView,
    /// Packed uint32 source-aligned selection flags (nonzero = selected).
    pub flags: DataView,
    /// Packed uint32 destination for source ids; its rows are the capacity.
    pub output: DataView,
    /// One packed uint32 row: the survivor count.
    pub count: DataView,
    /// One packed uint32 row: overflow bits (see the type's doc).
    pub overflow: Option<DataView>,
    /// One packed uint32 row: the number of invalid (clamped) ranges.
    pub invalid_ranges: Option<DataView>,
    /// Host bound on the candidate rows over all ranges (e.g. the flags length when ranges
    /// do not overlap); sizes the candidate transients.
    pub max_candidates: u64,
}

impl IndexedRangeCompaction {
    /// Validates the views and adds the nodes described in the module doc.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let options = ScanKernelOptions::for_compaction(graph.device());
        self.add_to_graph_with(graph, options)
    }

    /// [`IndexedRangeCompaction::add_to_graph`] with explicit scan kernel options.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        options: ScanKernelOptions,
    ) -> Result<(), AlgorithmError> {
        let id = self.id.clone();
        let c = ViewCheck::new(ALGORITHM, &id);
        let device = graph.device().clone();
        check_compaction_device(c, &device, &options)?;
        let ranges_v = VectorView::from(self.ranges);
        let flags_v = VectorView::from(self.flags);
        let output_v = VectorView::from(self.output);
        require_packed(c, "ranges", &ranges_v, VectorFormat::Uint32x2)?;
        require_packed(c, "flags", &flags_v, VectorFormat::Uint32)?;
        require_packed(c, "output", &output_v, VectorFormat::Uint32)?;
        require_output(c, "count", &self.count, VectorFormat::Uint32, 1)?;
        let singles: Vec<(&str, VectorView)> = [
            ("count", Some(self.count)),
            ("overflow", self.overflow),
            ("invalid_ranges", self.invalid_ranges),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| (name, VectorView::from(v))))
        .collect();
        for (name, v) in &singles[1..] {
            require_output(c, name, &v.chunks()[0], VectorFormat::Uint32, 1)?;
        }
        let mut written = vec![("output", &output_v)];
        written.extend(singles.iter().map(|(n, v)| (*n, v)));
        check_writes_alone(
            graph,
            c,
            &written,
            &[("ranges", &ranges_v), ("flags", &flags_v)],
            "",
        )?;
        let binder = Binder::new(&device.limits());
        let n = rows_u32(c, "flags", self.flags.len())?;
        let range_count = rows_u32(c, "ranges", self.ranges.len())?;
        let candidates = rows_u32(c, "max_candidates", self.max_candidates)?;
        let ranges_offset = binder.offset(c, "ranges", &self.ranges)?;
        let flags_offset = binder.offset(c, "flags", &self.flags)?;
        for (what, rows) in [
            ("candidate transients", candidates),
            ("range transients", range_count),
        ] {
            let bytes = u64::from(rows) * 4;
            if bytes > binder.max_binding {
                return Err(c.device_limit(
                    format!("bytes of the {what}"),
                    bytes,
                    binder.max_binding,
                ));
            }
        }
        let offset_of =
            |v: &DataView| v.aligned_range(binder.storage_alignment).element_offset as u32;

        if range_count == 0 {
            let mut words = vec![self.count];
            words.extend(self.overflow);
            words.extend(self.invalid_ranges);
            return add_zero_words(graph, id, words);
        }

        let transient = |graph: &mut CommandGraph, name: &str, rows: u32| {
            let h = graph.create_buffer(BufferDescriptor::new(
                format!("{id}/{name}"),
                u64::from(rows.max(1)) * 4,
                gpugraph_command::wgpu::BufferUsages::STORAGE,
            ))?;
            Ok::<DataView, AlgorithmError>(graph.create_packed_view(
                h,
                VectorFormat::Uint32,
                u64::from(rows),
            )?)
        };
        let lengths = transient(graph, "range-lengths", range_count)?;
        let ends = transient(graph, "range-end-sums", range_count)?;
        let scalars = transient(graph, "range-scalars", 4)?;

        // {id}/lengths
        let bindings = vec![
            Access::Read,
            Access::Read,
            Access::ReadWrite,
            Access::ReadWrite,
        ];
        let wgsl = helper_source(&["compact/range.wgsl", "compact/range_lengths.wgsl"]);
        let resources = vec![
            Res::Params(0),
            Res::View(self.ranges),
            Res::View(lengths),
            Res::View(scalars),
        ];
        HelperNode {
            id: format!("{id}/lengths"),
            kernels: vec![
                HelperKernel {
                    wgsl: wgsl.clone(),
                    entry: "clear_scalars",
                    bindings: bindings.clone(),
                },
                HelperKernel {
                    wgsl,
                    entry: "range_lengths",
                    bindings,
                },
            ],
            params: vec![vec![range_count, ranges_offset, n]],
            dispatches: vec![
                HelperDispatch {
                    kernel: 0,
                    resources: resources.clone(),
                    grid: WorkgroupSplit { x: 1, y: 1 },
                },
                HelperDispatch {
                    kernel: 1,
                    resources,
                    grid: helper_grid(c, &device, u64::from(range_count))?,
                },
            ],
        }
        .add(graph)?;

        // {id}/range-ends
        Scan {
            id: format!("{id}/range-ends"),
            input: lengths.into(),
            output: ends.into(),
            inclusive: true,
            segment_starts: None,
        }
        .add_to_graph_with(graph, options)?;

        // {id}/expand and {id}
        if candidates == 0 {
            let mut words = vec![self.count];
            words.extend(self.overflow);
            add_zero_words(graph, id.clone(), words)?;
        } else {
            let ids = transient(graph, "candidate-ids", candidates)?;
            let selected = transient(graph, "candidate-flags", candidates)?;
            let resources = vec![
                Res::Params(0),
                Res::View(self.ranges),
                Res::View(ends),
                Res::View(self.flags),
                Res::View(ids),
                Res::View(selected),
            ];
            HelperNode {
                id: format!("{id}/expand"),
                kernels: vec![HelperKernel {
                    wgsl: helper_source(&["compact/range.wgsl", "compact/expand.wgsl"]),
                    entry: "expand_candidates",
                    bindings: vec![
                        Access::Read,
                        Access::Read,
                        Access::Read,
                        Access::Read,
                        Access::ReadWrite,
                        Access::ReadWrite,
                    ],
                }],
                params: vec![vec![
                    range_count,
                    ranges_offset,
                    n,
                    flags_offset,
                    candidates,
                ]],
                dispatches: vec![HelperDispatch {
                    kernel: 0,
                    resources,
                    grid: helper_grid(c, &device, u64::from(candidates))?,
                }],
            }
            .add(graph)?;
            Compaction {
                id: id.clone(),
                values: ids.into(),
                flags: selected.into(),
                output: self.output.into(),
                count: self.count,
                overflow: self.overflow,
            }
            .add_to_graph_with(graph, options)?;
        }

        // {id}/finish
        if self.overflow.is_some() || self.invalid_ranges.is_some() {
            let mut resources = vec![Res::Params(0), Res::View(scalars), Res::View(ends)];
            for v in [self.invalid_ranges, self.overflow] {
                match v {
                    Some(v) => {
                        resources.push(Res::View(v));
                    }
                    None => resources.push(Res::Placeholder),
                }
            }
            let params = vec![
                range_count,
                candidates,
                self.invalid_ranges.as_ref().map_or(0, offset_of),
                u32::from(self.invalid_ranges.is_some()),
                self.overflow.as_ref().map_or(0, offset_of),
                u32::from(self.overflow.is_some()),
            ];
            HelperNode {
                id: format!("{id}/finish"),
                kernels: vec![HelperKernel {
                    wgsl: helper_source(&["compact/range_finish.wgsl"]),
                    entry: "finish_ranges",
                    bindings: vec![
                        Access::Read,
                        Access::Read,
                        Access::Read,
                        Access::ReadWrite,
                        Access::ReadWrite,
                    ],
                }],
                params: vec![params],
                dispatches: vec![HelperDispatch {
                    kernel: 0,
                    resources,
                    grid: WorkgroupSplit { x: 1, y: 1 },
                }],
            }
            .add(graph)?;
        }
        Ok(())
    }
}
