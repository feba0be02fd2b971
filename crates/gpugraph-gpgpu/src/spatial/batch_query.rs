//! [`BatchGridIndexQuery`]: many GPU-resident queries against a built [`super::GridIndex`] in
//! one dispatch, refined exactly against the points, to per-query hit counts (spec 5.2's
//! GPUGridIndexQuery, batched; the single-query path is [`super::GridIndexQuery`]).

use gpugraph_command::{Binding, CommandGraph, DataView, Grid, VectorFormat, VectorView};

use super::domain::DomainParams;
use super::grid_index::{point_dims, GridStorage};
use super::nodes::{self, WG};
use super::query::QUERY_WORDS;
use crate::error::AlgorithmError;
use crate::kernel::{
    check_writes_alone, require_output, require_packed, shader, Binder, ViewCheck,
};

const ALGORITHM: &str = "batch grid index query";

/// Exact point / bounds / radius hits of `Q` queries against a [`GridStorage`], at every
/// encoding, in one dispatch (one workgroup per query).
///
/// Contract:
/// * `queries` holds `Q × QUERY_WORDS` words (query `i` at `i × QUERY_WORDS`, each
///   [`super::SpatialQuery::words`]), read at every encoding: rewrite them to move the
///   queries without recompiling; `Q = queries.len() / QUERY_WORDS` (a partial query is a
///   named error);
/// * the index's object IDs must be rows of `positions` (build it with `ids: None`, or with
///   IDs that address `positions`); `positions` is one packed float32x2 / float32x3 chunk of
///   the index's dimension;
/// * the cells a query selects are [`super::GridIndexQuery`]'s (the same stored prefix, the
///   same conservative rectangle); every stored ID in them is tested with the exact predicate
///   ([`super::SpatialQuery::matches`]), so a point is counted once per query when it matches
///   and is stored in the index;
/// * `hits` (`2 × Q` rows, packed uint32): `[count, wrapping sum of the matching IDs]` per
///   query — the same pair a [`super::PointSpatialFilter`]'s `hits` gives over the stored points;
///   every word is written;
/// * `status` (optional, `2 × Q` rows): `[candidates tested, flags]` per query, the flags
///   being the `QUERY_FLAG_*` bits: index overflow, an ID at or past `positions`' length
///   ([`super::QUERY_FLAG_MASK_RANGE`]; that ID is skipped), invalid query, outside-domain.
///
/// Nodes: `{id}` (`Q` workgroups of 256 invocations, split over x and y past the
/// per-dimension limit). Cost per query: its cell rows' offsets, then one coalesced ID read and
/// one point gather per candidate; no output traffic besides 8 (16 with status) bytes.
#[derive(Clone, Debug)]
pub struct BatchGridIndexQuery {
    /// Node id (and label).
    pub id: String,
    /// The index to query.
    pub index: GridStorage,
    /// The indexed points, addressed by the index's IDs.
    pub positions: VectorView,
    /// Packed uint32, `Q × QUERY_WORDS` rows: the queries.
    pub queries: DataView,
    /// Packed uint32, `2 × Q` rows: `[count, ID sum]` per query.
    pub hits: DataView,
    /// Packed uint32, `2 × Q` rows: `[candidates, flags]` per query.
    pub status: Option<DataView>,
}

/// `BatchParams` in batch_query.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct BatchParams {
    domain: DomainParams,
    queries_off: u32,
    query_count: u32,
    offsets_off: u32,
    ids_off: u32,
    index_status_off: u32,
    capacity: u32,
    pos_off: u32,
    pos_rows: u32,
    hits_off: u32,
    status_off: u32,
    pad0: u32,
    pad1: u32,
}

fn wgsl(dims: u32, status: bool) -> String {
    let mut s = shader("spatial/common.wgsl")
        .file("spatial/batch_query.wgsl")
        .comment(format!(
            "gpugraph-gpgpu spatial: batch grid query, {dims}-D"
        ))
        .u32("DIMS", dims)
        .u32("WG", WG)
        .u32("QUERY_WORDS", QUERY_WORDS as u32);
    if status {
        s = s.define("STATUS");
    }
    s.build()
}

impl BatchGridIndexQuery {
    /// Validates the views and adds the query node (see the type's contract).
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let ix = self.index;
        let u32s = VectorFormat::Uint32;
        ix.domain.check(c, ix.dims)?;
        let dims = point_dims(c, "positions", &self.positions)?;
        if dims != ix.dims {
            return Err(c.length(
                "positions",
                "dimensions",
                u64::from(dims),
                u64::from(ix.dims),
                "the index's dimension",
            ));
        }
        if self.positions.chunks().len() != 1 {
            return Err(c.length(
                "positions",
                "chunks",
                self.positions.chunks().len() as u64,
                1,
                "one chunk (the index's IDs address it)",
            ));
        }
        let words = self.queries.len();
        if !words.is_multiple_of(QUERY_WORDS) {
            return Err(c.length(
                "queries",
                "words",
                words,
                words.next_multiple_of(QUERY_WORDS),
                "a whole number of queries (QUERY_WORDS = 8 words each)",
            ));
        }
        let q = words / QUERY_WORDS;
        let query_count =
            u32::try_from(q).map_err(|_| c.device_limit("queries", q, u64::from(u32::MAX)))?;
        require_output(c, "hits", &self.hits, u32s, 2 * q)?;
        if let Some(s) = &self.status {
            require_output(c, "status", s, u32s, 2 * q)?;
        }
        require_output(
            c,
            "index cell offsets",
            &ix.cell_offsets,
            u32s,
            ix.domain.cell_count() + 1,
        )?;
        require_output(c, "index status", &ix.status, u32s, 3)?;
        let index_ids = VectorView::from(ix.object_ids);
        require_packed(c, "index object ids", &index_ids, u32s)?;
        let queries_v = VectorView::from(self.queries);
        require_packed(c, "queries", &queries_v, u32s)?;
        let hits_v = VectorView::from(self.hits);
        let status_v = self.status.map(VectorView::from);
        let mut written = vec![("hits", &hits_v)];
        if let Some(s) = &status_v {
            written.push(("status", s));
        }
        let (offsets_v, istatus_v) = (
            VectorView::from(ix.cell_offsets),
            VectorView::from(ix.status),
        );
        check_writes_alone(
            graph,
            c,
            &written,
            &[
                ("queries", &queries_v),
                ("positions", &self.positions),
                ("index cell offsets", &offsets_v),
                ("index object ids", &index_ids),
                ("index status", &istatus_v),
            ],
            "",
        )?;
        let rows = |what: &str, n: u64| {
            u32::try_from(n)
                .map_err(|_| c.device_limit(format!("rows of {what}"), n, u64::from(u32::MAX)))
        };
        let chunk = self.positions.chunks()[0];
        let binder = Binder::new(&graph.device().limits());
        let params = BatchParams {
            domain: ix.domain.params(),
            queries_off: binder.offset(c, "queries", &self.queries)?,
            query_count,
            offsets_off: binder.offset(c, "index cell offsets", &ix.cell_offsets)?,
            ids_off: binder.offset(c, "index object ids", &ix.object_ids)?,
            index_status_off: binder.offset(c, "index status", &ix.status)?,
            capacity: rows("index object ids", ix.object_ids.len())?,
            pos_off: binder.offset(c, "positions", &chunk)?,
            pos_rows: rows("positions", chunk.len())?,
            hits_off: binder.offset(c, "hits", &self.hits)?,
            status_off: match &self.status {
                Some(s) => binder.offset(c, "status", s)?,
                None => 0,
            },
            pad0: 0,
            pad1: 0,
        };
        if q == 0 {
            return Ok(());
        }
        let mut bindings = vec![
            Binding::params(0, &params),
            Binding::read(1, self.queries),
            Binding::read(2, ix.cell_offsets),
            Binding::read(3, ix.object_ids),
            Binding::read(4, ix.status),
            Binding::read(5, chunk),
            Binding::read_write(6, self.hits),
        ];
        if let Some(s) = self.status {
            bindings.push(Binding::read_write(7, s));
        }
        nodes::dispatch(
            graph,
            self.id.clone(),
            "spatial/batch_query",
            wgsl(ix.dims, self.status.is_some()),
            "batch_query",
            bindings,
            Grid::Rows {
                rows: q,
                rows_per_workgroup: 1,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn batch_kernel_validates_and_params_match() {
        for dims in [2, 3] {
            for status in [false, true] {
                let s = wgsl(dims, status);
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
                let members = kernel::field_offsets!(BatchParams; domain, queries_off,
                    query_count, offsets_off, ids_off, index_status_off, capacity, pos_off,
                    pos_rows, hits_off, status_off, pad0, pad1);
                let size = Some(std::mem::size_of::<BatchParams>());
                kernel::assert_struct_layout(&s, "BatchParams", size, &members);
            }
        }
    }
}
