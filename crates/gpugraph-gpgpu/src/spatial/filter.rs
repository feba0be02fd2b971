//! [`PointSpatialFilter`]: the exact point predicate of one GPU-resident query, over every
//! source row or over compact candidate rows, into one source-row mask (spec 5.2,
//! GPUPointSpatialFilter).

use gpugraph_command::{Binding, CommandGraph, DataView, VectorFormat, VectorView};

use super::grid_index::point_dims;
use super::nodes::{self, source};
use super::query::QUERY_WORDS;
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_output, require_packed, Binder, ViewCheck};

const ALGORITHM: &str = "point spatial filter";

/// Candidate rows a [`PointSpatialFilter`] refines: a [`super::GridIndexQuery`]'s (built with
/// generated IDs, so IDs are source rows) or any compaction's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FilterCandidates {
    /// Packed uint32 source rows; its length is the capacity.
    pub rows: DataView,
    /// Packed uint32 whose first row is the stored candidate count (read up to the capacity).
    pub count: DataView,
}

/// Writes `mask[row] = 1` where point `row` matches the query exactly
/// ([`super::SpatialQuery::matches`]: equality, closed box, `d² ≤ r²` in float32), else 0,
/// and / or `hits = [matching rows, wrapping sum of their rows]` (the sum is a cheap
/// checksum for comparing result sets without reading them back). At least one is given.
///
/// Two modes, one result: without `candidates` every row is tested; with them the mask is
/// cleared and only the candidate rows are tested, so the masks agree whenever the candidates
/// are a complete superset of the hits (check the query's overflow flags: a truncated broad
/// phase cannot give a complete refinement). Candidate rows at or past the row count are
/// skipped. Invalid queries match nothing.
///
/// Views: `positions` packed float32x2 / float32x3 (chunks in all-rows mode; one chunk with
/// candidates, which address rows directly); `query` [`QUERY_WORDS`] uint32 words; `mask`
/// packed uint32 with one row per position; `hits` 2 packed uint32 rows. Nodes: `{id}/clear-hits`,
/// then all rows `{id}/{chunk}`, or with candidates `{id}/clear` (the mask) and `{id}`.
#[derive(Clone, Debug)]
pub struct PointSpatialFilter {
    /// Node id prefix (and label).
    pub id: String,
    /// The points.
    pub positions: VectorView,
    /// Packed uint32, [`QUERY_WORDS`] rows: the query.
    pub query: DataView,
    /// Candidate rows; `None` tests every row.
    pub candidates: Option<FilterCandidates>,
    /// Packed uint32 result, one row per point.
    pub mask: Option<DataView>,
    /// Packed uint32, 2 rows: hit count and wrapping sum of hit rows.
    pub hits: Option<DataView>,
}

/// `FilterParams` in filter.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct FilterParams {
    query_off: u32,
    pos_off: u32,
    rows: u32,
    base: u32,
    mask_off: u32,
    cand_off: u32,
    cand_cap: u32,
    cand_count_off: u32,
    hits_off: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

impl PointSpatialFilter {
    /// Validates the views and adds the filter nodes (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let u32s = VectorFormat::Uint32;
        let dims = point_dims(c, "positions", &self.positions)?;
        let total = self.positions.len();
        require_output(c, "query", &self.query, u32s, QUERY_WORDS)?;
        if self.mask.is_none() && self.hits.is_none() {
            return Err(c.missing("a mask, a hits output or both", "a point spatial filter"));
        }
        if let Some(m) = &self.mask {
            require_output(c, "mask", m, u32s, total)?;
        }
        if let Some(h) = &self.hits {
            require_output(c, "hits", h, u32s, 2)?;
        }
        if total >= u64::from(u32::MAX) {
            return Err(c.device_limit("point rows", total, u64::from(u32::MAX) - 1));
        }
        let mask_v = self.mask.map(VectorView::from);
        let hits_v = self.hits.map(VectorView::from);
        let query_v = VectorView::from(self.query);
        let mut read = vec![("positions", &self.positions), ("query", &query_v)];
        let cand = self
            .candidates
            .map(|k| (VectorView::from(k.rows), VectorView::from(k.count)));
        if let (Some(k), Some((rows_v, count_v))) = (&self.candidates, &cand) {
            require_packed(c, "candidate rows", rows_v, u32s)?;
            require_packed(c, "candidate count", count_v, u32s)?;
            if k.count.is_empty() {
                return Err(c.length("candidate count", "rows", 0, 1, "the candidate count word"));
            }
            if self.positions.chunks().len() != 1 {
                return Err(c.length(
                    "positions",
                    "chunks",
                    self.positions.chunks().len() as u64,
                    1,
                    "candidate rows (they address one chunk)",
                ));
            }
            read.push(("candidate rows", rows_v));
            read.push(("candidate count", count_v));
        }
        let mut written = Vec::new();
        if let Some(m) = &mask_v {
            written.push(("mask", m));
        }
        if let Some(h) = &hits_v {
            written.push(("hits", h));
        }
        check_writes_alone(graph, c, &written, &read, "")?;
        let binder = Binder::new(&graph.device().limits());
        let mut params = FilterParams {
            query_off: binder.offset(c, "query", &self.query)?,
            pos_off: 0,
            rows: 0,
            base: 0,
            mask_off: match &self.mask {
                Some(m) => binder.offset(c, "mask", m)?,
                None => 0,
            },
            cand_off: 0,
            cand_cap: 0,
            cand_count_off: 0,
            hits_off: match &self.hits {
                Some(h) => binder.offset(c, "hits", h)?,
                None => 0,
            },
            pad0: 0,
            pad1: 0,
            pad2: 0,
        };
        let mut defines = Vec::new();
        if self.mask.is_some() {
            defines.push("MASK");
        }
        if self.hits.is_some() {
            defines.push("HITS");
        }
        let wgsl = source("spatial/filter.wgsl", dims, &defines);
        let id = &self.id;
        if let Some(h) = self.hits {
            nodes::clear(graph, c, format!("{id}/clear-hits"), h)?;
        }
        let outputs = |mut b: Vec<Binding>| {
            if let Some(m) = self.mask {
                b.push(Binding::read_write(5, m));
            }
            if let Some(h) = self.hits {
                b.push(Binding::read_write(6, h));
            }
            b
        };
        let Some(k) = self.candidates else {
            let mut base = 0u64;
            for (i, chunk) in self.positions.chunks().iter().enumerate() {
                if chunk.is_empty() {
                    continue;
                }
                params.pos_off = binder.offset(c, "positions", chunk)?;
                params.rows = chunk.len() as u32;
                params.base = base as u32;
                nodes::dispatch(
                    graph,
                    format!("{id}/{i}"),
                    "spatial/filter",
                    wgsl.clone(),
                    "filter_rows",
                    outputs(vec![
                        Binding::params(0, &params),
                        Binding::read(1, self.query),
                        Binding::read(2, *chunk),
                    ]),
                    nodes::rows(chunk.len()),
                )?;
                base += chunk.len();
            }
            return Ok(());
        };
        if let Some(m) = self.mask {
            nodes::clear(graph, c, format!("{id}/clear"), m)?;
        }
        let chunk = self.positions.chunks()[0];
        params.pos_off = binder.offset(c, "positions", &chunk)?;
        params.rows = total as u32;
        params.cand_off = binder.offset(c, "candidate rows", &k.rows)?;
        params.cand_cap = u32::try_from(k.rows.len())
            .map_err(|_| c.device_limit("candidate rows", k.rows.len(), u64::from(u32::MAX)))?;
        params.cand_count_off = binder.offset(c, "candidate count", &k.count)?;
        if k.rows.is_empty() || total == 0 {
            return Ok(());
        }
        nodes::dispatch(
            graph,
            id.clone(),
            "spatial/filter",
            wgsl,
            "filter_candidates",
            outputs(vec![
                Binding::params(0, &params),
                Binding::read(1, self.query),
                Binding::read(2, chunk),
                Binding::read(3, k.rows),
                Binding::read(4, k.count),
            ]),
            nodes::rows(k.rows.len()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn filter_kernel_validates_and_params_match() {
        for dims in [2, 3] {
            for defines in [&["MASK"][..], &["HITS"][..], &["MASK", "HITS"][..]] {
                let s = source("spatial/filter.wgsl", dims, defines);
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
                let members = kernel::field_offsets!(FilterParams; query_off, pos_off, rows,
                    base, mask_off, cand_off, cand_cap, cand_count_off, hits_off, pad0, pad1,
                    pad2);
                let size = Some(std::mem::size_of::<FilterParams>());
                kernel::assert_struct_layout(&s, "FilterParams", size, &members);
            }
        }
    }
}
