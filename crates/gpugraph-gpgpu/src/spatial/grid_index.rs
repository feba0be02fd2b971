//! [`GridIndex`]: a flat uniform-grid index of 2-D or 3-D points — exclusive row-major cell
//! offsets and capacity-bounded stable IDs (spec 5.1, GPUGridIndex).

use gpugraph_command::{Binding, CommandGraph, DataView, VectorFormat, VectorView};

use super::domain::{DomainParams, SpatialDomain};
use super::nodes::{self, source, transient_u32};
use super::UpdatePolicy;
use crate::error::AlgorithmError;
use crate::kernel::{
    check_same_topology, check_writes_alone, require_output, require_packed, Binder, ViewCheck,
};
use crate::scan::Scan;
use crate::sort::{Sort, SortOptions};

const ALGORITHM: &str = "grid index";

/// The object ID written past the stored prefix of [`GridIndex::object_ids`] (no object).
pub const NO_ID: u32 = u32::MAX;

/// Builds a uniform-grid index of `positions` at every encoding ([`UpdatePolicy::Rebuild`]).
///
/// Contract:
/// * a row is *accepted* when all its coordinates are finite and inside the closed domain
///   box; its cell is [`SpatialDomain::cell_of`] (the maximum coordinate lands in the last
///   cell). Non-finite and out-of-domain rows are ignored (not counted, not stored);
/// * `cell_offsets` (`cells + 1` rows) are the exclusive row-major prefix sums of the
///   accepted rows per cell: cell `c` owns `object_ids[cell_offsets[c]..cell_offsets[c+1]]`
///   and `cell_offsets[cells]` is the accepted count, even past the capacity;
/// * `object_ids` (its length is the capacity) holds the IDs grouped by cell in cell order,
///   in source order within a cell (stable); only the first `min(accepted, capacity)` are
///   stored and the remaining rows hold [`NO_ID`]. IDs are the global source row over all
///   chunks, or the caller's `ids` (aligned with the positions);
/// * `status` (3 rows): `[accepted, overflow, outside]`: overflow 1 when
///   `accepted > capacity`; outside counts the finite rows outside the domain (a query
///   reaching outside the domain cannot find them: [`super::QUERY_FLAG_OUTSIDE_DOMAIN`]);
/// * vectors keep their chunks (uneven and empty chunks are fine); at most `u32::MAX − 1`
///   rows in total.
///
/// Design: `{id}/clear` zeroes per-cell counts; `{id}/keys/{chunk}` computes each row's cell
/// key (ignored rows get the key `cells`, which sorts last) and counts it; `{id}/sort` is a
/// stable radix [`Sort`] of (key, ID) pairs over only the key bits the cell count needs;
/// `{id}/offsets` is an exclusive [`Scan`] of the counts into `cell_offsets`; `{id}/store`
/// copies the accepted prefix and writes the status. Transients: 16 bytes per row plus the
/// sort's scratch and 4 bytes per cell.
#[derive(Clone, Debug)]
pub struct GridIndex {
    /// Node id prefix (and label).
    pub id: String,
    /// Packed float32x2 (2-D) or float32x3 (3-D) points.
    pub positions: VectorView,
    /// Packed uint32 IDs aligned with `positions`; `None`: the global source row.
    pub ids: Option<VectorView>,
    /// Cell layout (caller-controlled).
    pub domain: SpatialDomain,
    /// Packed uint32, `cells + 1` rows: exclusive cell offsets.
    pub cell_offsets: DataView,
    /// Packed uint32; its length is the ID capacity.
    pub object_ids: DataView,
    /// Packed uint32, 3 rows: accepted count, overflow flag, finite rows outside the domain.
    pub status: DataView,
}

/// What a grid query reads of a built index (see [`GridIndex`] for the meaning of each view).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridStorage {
    /// Cell layout.
    pub domain: SpatialDomain,
    /// 2 or 3.
    pub dims: u32,
    /// `cells + 1` exclusive offsets.
    pub cell_offsets: DataView,
    /// Capacity-bounded IDs grouped by cell.
    pub object_ids: DataView,
    /// `[accepted, overflow, outside]`.
    pub status: DataView,
}

/// `BuildParams` in grid_build.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct BuildParams {
    domain: DomainParams,
    rows: u32,
    base: u32,
    pos_off: u32,
    id_off: u32,
    invalid_key: u32,
    capacity: u32,
    offsets_off: u32,
    ids_out_off: u32,
    status_off: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

/// The point dimension of `positions` (float32x2 → 2, float32x3 → 3), checking every chunk is
/// packed in that one format.
pub(crate) fn point_dims(
    c: ViewCheck<'_>,
    what: &str,
    positions: &VectorView,
) -> Result<u32, AlgorithmError> {
    let format = positions.format().ok_or_else(|| {
        c.missing(
            "at least one (possibly empty) chunk, so its format is known",
            what.to_string(),
        )
    })?;
    let dims = SpatialDomain::dims_of(format).ok_or_else(|| AlgorithmError::UnsupportedView {
        algorithm: c.algorithm,
        id: c.id.to_string(),
        what: what.to_string(),
        expected: "packed float32x2 or float32x3 points".into(),
        actual: format.to_string(),
    })?;
    require_packed(c, what, positions, format)?;
    Ok(dims)
}

impl GridIndex {
    /// The update policy (every encoding rebuilds).
    pub fn update_policy(&self) -> UpdatePolicy {
        UpdatePolicy::Rebuild
    }

    /// Validates the domain and views and adds the build nodes (see the type's contract);
    /// returns the storage a [`super::GridIndexQuery`] reads.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<GridStorage, AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let dims = point_dims(c, "positions", &self.positions)?;
        self.domain.check(c, dims)?;
        let cells = self.domain.cell_count();
        if let Some(ids) = &self.ids {
            require_packed(c, "ids", ids, VectorFormat::Uint32)?;
            check_same_topology(c, "positions", &self.positions, "ids", ids)?;
        }
        require_output(
            c,
            "cell offsets",
            &self.cell_offsets,
            VectorFormat::Uint32,
            cells + 1,
        )?;
        require_output(c, "status", &self.status, VectorFormat::Uint32, 3)?;
        let ids_out = VectorView::from(self.object_ids);
        require_packed(c, "object ids", &ids_out, VectorFormat::Uint32)?;
        let total = self.positions.len();
        if total >= u64::from(u32::MAX) {
            return Err(c.device_limit("point rows", total, u64::from(u32::MAX) - 1));
        }
        let capacity = u32::try_from(self.object_ids.len()).map_err(|_| {
            c.device_limit("object id rows", self.object_ids.len(), u64::from(u32::MAX))
        })?;
        let (offsets_v, status_v) = (self.cell_offsets.into(), self.status.into());
        let mut read = vec![("positions", &self.positions)];
        if let Some(ids) = &self.ids {
            read.push(("ids", ids));
        }
        check_writes_alone(
            graph,
            c,
            &[
                ("cell offsets", &offsets_v),
                ("object ids", &ids_out),
                ("status", &status_v),
            ],
            &read,
            "",
        )?;

        let id = &self.id;
        let binder = Binder::new(&graph.device().limits());
        let counts = transient_u32(graph, format!("{id}/counts"), cells + 1)?;
        let keys = transient_u32(graph, format!("{id}/keys"), total)?;
        let values = transient_u32(graph, format!("{id}/values"), total)?;
        let sorted_keys = transient_u32(graph, format!("{id}/sorted-keys"), total)?;
        let sorted_values = transient_u32(graph, format!("{id}/sorted-values"), total)?;
        nodes::clear(graph, c, format!("{id}/clear"), counts)?;

        let mut params = BuildParams {
            domain: self.domain.params(),
            rows: 0,
            base: 0,
            pos_off: 0,
            id_off: 0,
            invalid_key: cells as u32,
            capacity,
            offsets_off: binder.offset(c, "cell offsets", &self.cell_offsets)?,
            ids_out_off: binder.offset(c, "object ids", &self.object_ids)?,
            status_off: binder.offset(c, "status", &self.status)?,
            pad0: 0,
            pad1: 0,
            pad2: 0,
        };
        let defines: &[&'static str] = if self.ids.is_some() {
            &["EXPLICIT_IDS"]
        } else {
            &[]
        };
        let build = source("spatial/grid_build.wgsl", dims, defines);
        let mut base = 0u64;
        for (i, chunk) in self.positions.chunks().iter().enumerate() {
            let rows = chunk.len();
            if rows == 0 {
                continue;
            }
            params.rows = rows as u32;
            params.base = base as u32;
            params.pos_off = binder.offset(c, "positions", chunk)?;
            let mut bindings = vec![
                Binding::read(1, *chunk),
                Binding::read_write(3, keys),
                Binding::read_write(4, values),
                Binding::read_write(5, counts),
            ];
            if let Some(ids) = &self.ids {
                let ids = ids.chunks()[i];
                params.id_off = binder.offset(c, "ids", &ids)?;
                bindings.push(Binding::read(2, ids));
            }
            bindings.push(Binding::params(0, &params));
            nodes::dispatch(
                graph,
                format!("{id}/keys/{i}"),
                "spatial/grid_build",
                build.clone(),
                "build_keys",
                bindings,
                nodes::rows(rows),
            )?;
            base += rows;
        }
        // Ignored rows carry the key `cells`: the sort needs only the bits of `cells`.
        let key_bits = (32 - (cells as u32).leading_zeros()).max(1);
        Sort::pairs(
            format!("{id}/sort"),
            keys,
            values,
            sorted_keys,
            sorted_values,
        )
        .add_to_graph_with(graph, SortOptions::default().with_key_bits(key_bits))?;
        Scan {
            id: format!("{id}/offsets"),
            input: counts.into(),
            output: offsets_v,
            inclusive: false,
            segment_starts: None,
        }
        .add_to_graph(graph)?;
        params.rows = 0;
        params.base = 0;
        let store = source("spatial/grid_build.wgsl", dims, &[]);
        nodes::dispatch(
            graph,
            format!("{id}/store"),
            "spatial/grid_build",
            store,
            "store_ids",
            vec![
                Binding::params(0, &params),
                Binding::read(6, self.cell_offsets),
                Binding::read(7, sorted_values),
                Binding::read_write(8, self.object_ids),
                Binding::read_write(9, self.status),
                Binding::read(10, counts),
            ],
            nodes::rows(u64::from(capacity).max(1)),
        )?;
        Ok(GridStorage {
            domain: self.domain,
            dims,
            cell_offsets: self.cell_offsets,
            object_ids: self.object_ids,
            status: self.status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn build_kernels_validate_and_params_match() {
        for dims in [2, 3] {
            for defines in [&[][..], &["EXPLICIT_IDS"][..]] {
                let s = source("spatial/grid_build.wgsl", dims, defines);
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}"));
                let members = kernel::field_offsets!(BuildParams; domain, rows, base, pos_off,
                    id_off, invalid_key, capacity, offsets_off, ids_out_off, status_off, pad0,
                    pad1, pad2);
                let size = Some(std::mem::size_of::<BuildParams>());
                kernel::assert_struct_layout(&s, "BuildParams", size, &members);
            }
        }
    }
}
