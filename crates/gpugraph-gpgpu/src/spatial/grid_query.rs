//! [`GridIndexQuery`]: conservative point / bounds / radius candidates from a built
//! [`super::GridIndex`] (spec 5.2, GPUGridIndexQuery).

use gpugraph_command::{Binding, CommandGraph, DataView, Grid, VectorFormat, VectorView};

use super::domain::DomainParams;
use super::grid_index::GridStorage;
use super::nodes::{self, source};
use super::query::QUERY_WORDS;
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_output, require_packed, Binder, ViewCheck};

const ALGORITHM: &str = "grid index query";

/// Workgroups of the query dispatch: every invocation walks the query's cell rows and copies
/// a strided share of each; enough to spread large results, cheap for small ones.
pub const QUERY_WORKGROUPS: u32 = 64;

/// Candidate IDs of one GPU-resident query against a [`GridStorage`], at every encoding.
///
/// Contract:
/// * `query` holds [`QUERY_WORDS`] words ([`super::SpatialQuery::words`]) read at every
///   encoding: rewrite them between encodings to move the query, without recompiling;
/// * point queries select the point's cell; bounds and radius queries select every cell whose
///   row-major range intersects the query box ([`super::SpatialQuery::query_box`]) —
///   conservative: candidates are a superset of the exact hits among stored IDs, refined by a
///   following predicate such as [`super::PointSpatialFilter`];
/// * candidates come out in row-major cell order, stored order within a cell
///   (deterministic); only the first `capacity` (the `candidates` length) are written, rows
///   past the count are left untouched;
/// * `status` (3 rows): `[count, required, flags]` — the stored-prefix count
///   `min(required, capacity)`, the full candidate count, and the `QUERY_FLAG_*` bits: index
///   overflow (propagated from the index status: its IDs are truncated), output overflow,
///   a candidate ID outside the mask, invalid query (empty result), and outside-domain (the
///   query box reaches past the domain and the index left out finite rows there: those rows
///   are no candidates, so a refinement is exact only for rows inside the domain);
/// * `mask` (optional, packed uint32, one row per source ID): cleared, then 1 at every
///   candidate ID below its length.
///
/// Nodes: `{id}/clear` (status), `{id}/clear-mask`, `{id}` ([`QUERY_WORKGROUPS`] workgroups).
/// Cost: one pass over the selected cell rows' offsets plus one read and one write (two with
/// the mask) per candidate.
#[derive(Clone, Debug)]
pub struct GridIndexQuery {
    /// Node id prefix (and label).
    pub id: String,
    /// The index to query.
    pub index: GridStorage,
    /// Packed uint32, [`QUERY_WORDS`] rows: the query.
    pub query: DataView,
    /// Packed uint32 candidate IDs; its length is the capacity.
    pub candidates: DataView,
    /// Packed uint32, 3 rows: count, required, flags.
    pub status: DataView,
    /// Packed uint32 mask addressed by ID.
    pub mask: Option<DataView>,
}

/// `QueryParams` in grid_query.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct QueryParams {
    domain: DomainParams,
    query_off: u32,
    offsets_off: u32,
    ids_off: u32,
    index_status_off: u32,
    capacity: u32,
    cand_off: u32,
    cand_cap: u32,
    status_off: u32,
    mask_off: u32,
    mask_len: u32,
    pad0: u32,
    pad1: u32,
}

impl GridIndexQuery {
    /// Validates the views and adds the query nodes (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let ix = self.index;
        let u32s = VectorFormat::Uint32;
        ix.domain.check(c, ix.dims)?;
        require_output(c, "query", &self.query, u32s, QUERY_WORDS)?;
        require_output(c, "status", &self.status, u32s, 3)?;
        require_output(
            c,
            "index cell offsets",
            &ix.cell_offsets,
            u32s,
            ix.domain.cell_count() + 1,
        )?;
        require_output(c, "index status", &ix.status, u32s, 3)?;
        let (cand_v, status_v) = (
            VectorView::from(self.candidates),
            VectorView::from(self.status),
        );
        require_packed(c, "candidates", &cand_v, u32s)?;
        let index_ids = VectorView::from(ix.object_ids);
        require_packed(c, "index object ids", &index_ids, u32s)?;
        let mask_v = self.mask.map(VectorView::from);
        let mut written = vec![("candidates", &cand_v), ("status", &status_v)];
        if let Some(m) = &mask_v {
            require_packed(c, "mask", m, u32s)?;
            written.push(("mask", m));
        }
        let (query_v, offsets_v, istatus_v) = (
            VectorView::from(self.query),
            VectorView::from(ix.cell_offsets),
            VectorView::from(ix.status),
        );
        check_writes_alone(
            graph,
            c,
            &written,
            &[
                ("query", &query_v),
                ("index cell offsets", &offsets_v),
                ("index object ids", &index_ids),
                ("index status", &istatus_v),
            ],
            "",
        )?;
        let rows = |what: &str, v: &DataView| {
            u32::try_from(v.len()).map_err(|_| {
                c.device_limit(format!("rows of {what}"), v.len(), u64::from(u32::MAX))
            })
        };
        let binder = Binder::new(&graph.device().limits());
        let id = &self.id;
        let params = QueryParams {
            domain: ix.domain.params(),
            query_off: binder.offset(c, "query", &self.query)?,
            offsets_off: binder.offset(c, "index cell offsets", &ix.cell_offsets)?,
            ids_off: binder.offset(c, "index object ids", &ix.object_ids)?,
            index_status_off: binder.offset(c, "index status", &ix.status)?,
            capacity: rows("index object ids", &ix.object_ids)?,
            cand_off: binder.offset(c, "candidates", &self.candidates)?,
            cand_cap: rows("candidates", &self.candidates)?,
            status_off: binder.offset(c, "status", &self.status)?,
            mask_off: match &self.mask {
                Some(m) => binder.offset(c, "mask", m)?,
                None => 0,
            },
            mask_len: match &self.mask {
                Some(m) => rows("mask", m)?,
                None => 0,
            },
            pad0: 0,
            pad1: 0,
        };
        nodes::clear(graph, c, format!("{id}/clear"), self.status)?;
        if let Some(m) = self.mask {
            nodes::clear(graph, c, format!("{id}/clear-mask"), m)?;
        }
        let defines: &[&'static str] = if self.mask.is_some() { &["MASK"] } else { &[] };
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, self.query),
            Binding::read(2, ix.cell_offsets),
            Binding::read(3, ix.object_ids),
            Binding::read(4, ix.status),
            Binding::read_write(5, self.candidates),
            Binding::read_write(6, self.status),
        ];
        if let Some(m) = self.mask {
            bindings.push(Binding::read_write(7, m));
        }
        nodes::dispatch(
            graph,
            id.clone(),
            "spatial/grid_query",
            source("spatial/grid_query.wgsl", ix.dims, defines),
            "query_cells",
            bindings,
            Grid::Workgroups([QUERY_WORKGROUPS, 1, 1]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn query_kernel_validates_and_params_match() {
        for dims in [2, 3] {
            for defines in [&[][..], &["MASK"][..]] {
                let s = source("spatial/grid_query.wgsl", dims, defines);
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
                let members = kernel::field_offsets!(QueryParams; domain, query_off,
                    offsets_off, ids_off, index_status_off, capacity, cand_off, cand_cap,
                    status_off, mask_off, mask_len, pad0, pad1);
                let size = Some(std::mem::size_of::<QueryParams>());
                kernel::assert_struct_layout(&s, "QueryParams", size, &members);
            }
        }
    }
}
