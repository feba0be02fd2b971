//! CPU oracles of the spatial family: the plain loops the kernels parallelize, with the same
//! float32 arithmetic ([`SpatialDomain::cell_of`], [`SpatialQuery::query_box`],
//! [`SpatialQuery::matches`]).

use super::domain::SpatialDomain;
use super::grid_index::NO_ID;
use super::query::{
    SpatialQuery, QUERY_FLAG_INDEX_OVERFLOW, QUERY_FLAG_INVALID, QUERY_FLAG_MASK_RANGE,
    QUERY_FLAG_OUTPUT_OVERFLOW, QUERY_FLAG_OUTSIDE_DOMAIN,
};

/// What a [`super::GridIndex`] publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridIndexResult {
    /// `cells + 1` exclusive offsets.
    pub cell_offsets: Vec<u32>,
    /// `capacity` IDs ([`NO_ID`] past the stored prefix).
    pub object_ids: Vec<u32>,
    /// Accepted rows.
    pub accepted: u32,
    /// Whether accepted rows exceeded the capacity.
    pub overflow: bool,
    /// Finite rows outside the domain.
    pub outside: u32,
}

/// Builds the grid index of interleaved `positions` (`dims` floats per row) with optional
/// explicit `ids` and `capacity` ID rows.
pub fn grid_index(
    domain: &SpatialDomain,
    dims: usize,
    positions: &[f32],
    ids: Option<&[u32]>,
    capacity: usize,
) -> GridIndexResult {
    let cells = domain.cell_count() as usize;
    let mut per_cell: Vec<Vec<u32>> = vec![Vec::new(); cells];
    let mut outside = 0;
    for (row, p) in positions.chunks_exact(dims).enumerate() {
        if let Some(cell) = domain.cell_of(dims, p) {
            let id = ids.map_or(row as u32, |ids| ids[row]);
            per_cell[cell as usize].push(id);
        } else if p.iter().all(|v| v.is_finite()) {
            outside += 1;
        }
    }
    let mut cell_offsets = Vec::with_capacity(cells + 1);
    let mut all = Vec::new();
    for ids in &per_cell {
        cell_offsets.push(all.len() as u32);
        all.extend_from_slice(ids);
    }
    cell_offsets.push(all.len() as u32);
    let accepted = all.len();
    let mut object_ids = vec![NO_ID; capacity];
    let stored = accepted.min(capacity);
    object_ids[..stored].copy_from_slice(&all[..stored]);
    GridIndexResult {
        cell_offsets,
        object_ids,
        accepted: accepted as u32,
        overflow: accepted > capacity,
        outside,
    }
}

/// What a [`super::GridIndexQuery`] publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridQueryResult {
    /// All candidates in output order (`required` of them; only the first `capacity` are
    /// stored on the GPU).
    pub candidates: Vec<u32>,
    /// Stored count, `min(required, capacity)`.
    pub count: u32,
    /// Full candidate count.
    pub required: u32,
    /// `QUERY_FLAG_*` bits.
    pub flags: u32,
    /// The ID-addressed mask, when a length was given.
    pub mask: Option<Vec<u32>>,
}

fn axis_range(domain: &SpatialDomain, a: usize, lo: f32, hi: f32) -> Option<(u32, u32)> {
    let (dmin, dmax) = (domain.min[a], domain.max[a]);
    if hi < dmin || lo > dmax {
        return None;
    }
    Some((
        domain.axis_cell(a, lo.max(dmin)),
        domain.axis_cell(a, hi.min(dmax)),
    ))
}

/// Runs `query` against a built `index` with `capacity` candidate rows and an optional mask
/// of `mask_len` rows.
pub fn grid_query(
    domain: &SpatialDomain,
    dims: usize,
    index: &GridIndexResult,
    query: &SpatialQuery,
    capacity: usize,
    mask_len: Option<usize>,
) -> GridQueryResult {
    let mut flags = if index.overflow {
        QUERY_FLAG_INDEX_OVERFLOW
    } else {
        0
    };
    let stored = (index.accepted as usize).min(index.object_ids.len());
    let mut candidates = Vec::new();
    match query.query_box(dims) {
        None => flags |= QUERY_FLAG_INVALID,
        Some((lo, hi)) => {
            let reaches_out = (0..dims).any(|a| lo[a] < domain.min[a] || hi[a] > domain.max[a]);
            if reaches_out && index.outside > 0 {
                flags |= QUERY_FLAG_OUTSIDE_DOMAIN;
            }
            let r: Vec<Option<(u32, u32)>> = (0..dims)
                .map(|a| axis_range(domain, a, lo[a], hi[a]))
                .collect();
            if r.iter().all(Option::is_some) {
                let r: Vec<(u32, u32)> = r.into_iter().flatten().collect();
                let (z0, z1) = if dims == 3 { r[2] } else { (0, 0) };
                let (nx, ny) = (domain.cells[0], domain.cells[1]);
                for cz in z0..=z1 {
                    for cy in r[1].0..=r[1].1 {
                        let c0 = ((cz * ny + cy) * nx + r[0].0) as usize;
                        let c1 = ((cz * ny + cy) * nx + r[0].1) as usize + 1;
                        let s = (index.cell_offsets[c0] as usize).min(stored);
                        let e = (index.cell_offsets[c1] as usize).min(stored).max(s);
                        candidates.extend_from_slice(&index.object_ids[s..e]);
                    }
                }
            }
        }
    }
    let required = candidates.len();
    if required > capacity {
        flags |= QUERY_FLAG_OUTPUT_OVERFLOW;
    }
    let mask = mask_len.map(|len| {
        let mut m = vec![0u32; len];
        for &id in &candidates {
            match m.get_mut(id as usize) {
                Some(x) => *x = 1,
                None => flags |= QUERY_FLAG_MASK_RANGE,
            }
        }
        m
    });
    GridQueryResult {
        count: required.min(capacity) as u32,
        required: required as u32,
        flags,
        candidates,
        mask,
    }
}

/// The exact mask of `query` over interleaved `positions` (a [`super::PointSpatialFilter`]).
pub fn filter(dims: usize, positions: &[f32], query: &SpatialQuery) -> Vec<u32> {
    positions
        .chunks_exact(dims)
        .map(|p| u32::from(query.matches(dims, p)))
        .collect()
}
