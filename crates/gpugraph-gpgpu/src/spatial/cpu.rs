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

/// What a [`super::Bvh`] publishes.
#[derive(Clone, Debug, PartialEq)]
pub struct BvhResult {
    /// `2L − 1` node boxes `(min.xyz, 0, max.xyz, 0)`.
    pub nodes: Vec<[f32; 8]>,
    /// Child pairs ([`NO_ID`] twice for leaves).
    pub children: Vec<[u32; 2]>,
    /// Leaf IDs ([`NO_ID`] for unused slots).
    pub leaf_ids: Vec<u32>,
    /// Items stored, `min(items, L)`.
    pub stored: u32,
    /// Items past the capacity.
    pub overflow: bool,
    /// `log2 L + 1`.
    pub levels: u32,
}

const EMPTY: [f32; 8] = [
    f32::MAX,
    f32::MAX,
    f32::MAX,
    0.0,
    -f32::MAX,
    -f32::MAX,
    -f32::MAX,
    0.0,
];

fn valid_box(dims: usize, lo: &[f32], hi: &[f32]) -> bool {
    (0..dims).all(|a| lo[a].is_finite() && hi[a].is_finite() && lo[a] <= hi[a])
}

/// The Morton code of the center of box `lo..hi` quantized over `min` with `scale`
/// ([`super::morton_scale`]); `u32::MAX` for invalid boxes.
pub fn morton_code(dims: usize, lo: &[f32], hi: &[f32], min: [f32; 3], scale: [f32; 3]) -> u32 {
    if !valid_box(dims, lo, hi) {
        return u32::MAX;
    }
    let bits = super::morton_bits(dims as u32);
    let top = ((1u32 << bits) - 1) as f32;
    let q = |a: usize| {
        let c = (lo[a] + hi[a]) * 0.5;
        ((c - min[a]) * scale[a]).floor().clamp(0.0, top) as u32
    };
    let mut code = 0u32;
    for bit in 0..bits {
        for a in 0..dims {
            code |= ((q(a) >> bit) & 1) << (bit as usize * dims + a);
        }
    }
    code
}

/// Builds the hierarchy of interleaved `lower` / `upper` corners (`dims` floats per item)
/// with optional `ids`, `leaves` leaf slots and the leaf `order`.
pub fn bvh(
    dims: usize,
    lower: &[f32],
    upper: &[f32],
    ids: Option<&[u32]>,
    leaves: u32,
    order: super::BvhOrder,
) -> BvhResult {
    let items = lower.len() / dims;
    let mut rows: Vec<usize> = (0..items).collect();
    if let super::BvhOrder::Morton { min, max } = order {
        let scale = super::morton_scale(dims as u32, min, max);
        let code = |r: usize| {
            let (lo, hi) = (
                &lower[r * dims..(r + 1) * dims],
                &upper[r * dims..(r + 1) * dims],
            );
            morton_code(dims, lo, hi, min, scale)
        };
        rows.sort_by_key(|&r| code(r));
    }
    let l = leaves as usize;
    let mut nodes = vec![EMPTY; 2 * l - 1];
    let mut children = vec![[NO_ID; 2]; 2 * l - 1];
    let mut leaf_ids = vec![NO_ID; l];
    for (j, &r) in rows.iter().take(l).enumerate() {
        let (lo, hi) = (
            &lower[r * dims..(r + 1) * dims],
            &upper[r * dims..(r + 1) * dims],
        );
        if valid_box(dims, lo, hi) {
            let mut n = [0.0f32; 8];
            n[..dims].copy_from_slice(lo);
            n[4..4 + dims].copy_from_slice(hi);
            nodes[l - 1 + j] = n;
        }
        leaf_ids[j] = ids.map_or(r as u32, |ids| ids[r]);
    }
    for i in (0..l - 1).rev() {
        let (a, b) = (nodes[2 * i + 1], nodes[2 * i + 2]);
        nodes[i] = std::array::from_fn(|k| match k {
            3 | 7 => 0.0,
            0..=2 => a[k].min(b[k]),
            _ => a[k].max(b[k]),
        });
        children[i] = [2 * i as u32 + 1, 2 * i as u32 + 2];
    }
    BvhResult {
        nodes,
        children,
        leaf_ids,
        stored: items.min(l) as u32,
        overflow: items > l,
        levels: leaves.trailing_zeros() + 1,
    }
}

/// What a [`super::BvhQuery`] publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BvhQueryResult {
    /// All passing leaf IDs, ascending (the GPU's order is unspecified).
    pub candidates: Vec<u32>,
    /// Stored count.
    pub count: u32,
    /// Full count.
    pub required: u32,
    /// `QUERY_FLAG_*` bits.
    pub flags: u32,
    /// Nodes tested.
    pub visited: u32,
    /// The ID-addressed mask, when a length was given.
    pub mask: Option<Vec<u32>>,
}

/// Whether box `n` passes `query` (as `node_test` in bvh_query.wgsl).
pub fn node_passes(
    dims: usize,
    n: &[f32; 8],
    query: &SpatialQuery,
    lo: [f32; 3],
    hi: [f32; 3],
) -> bool {
    // Node boxes are never NaN: min > max is exactly the empty box.
    if n[0] > n[4] {
        return false;
    }
    if let SpatialQuery::Radius { center, radius } = *query {
        let mut d2 = 0.0f32;
        for a in 0..dims {
            let d = (n[a] - center[a]).max(0.0).max(center[a] - n[4 + a]);
            d2 = if a == 0 { d * d } else { d2 + d * d };
        }
        return d2 <= radius * radius;
    }
    (0..dims).all(|a| n[a] <= hi[a] && n[4 + a] >= lo[a])
}

/// Runs `query` against a built hierarchy with `capacity` candidate rows and an optional mask.
pub fn bvh_query(
    dims: usize,
    b: &BvhResult,
    query: &SpatialQuery,
    capacity: usize,
    mask_len: Option<usize>,
) -> BvhQueryResult {
    let mut flags = if b.overflow {
        QUERY_FLAG_INDEX_OVERFLOW
    } else {
        0
    };
    let mut candidates = Vec::new();
    let mut visited = 0u32;
    let first_leaf = b.leaf_ids.len() - 1;
    match query.query_box(dims) {
        None => flags |= QUERY_FLAG_INVALID,
        Some((lo, hi)) => {
            let mut stack = vec![0usize];
            while let Some(i) = stack.pop() {
                visited += 1;
                if !node_passes(dims, &b.nodes[i], query, lo, hi) {
                    continue;
                }
                if i >= first_leaf {
                    let id = b.leaf_ids[i - first_leaf];
                    if id != NO_ID {
                        candidates.push(id);
                    }
                } else {
                    stack.push(2 * i + 2);
                    stack.push(2 * i + 1);
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
    candidates.sort_unstable();
    BvhQueryResult {
        count: required.min(capacity) as u32,
        required: required as u32,
        flags,
        visited,
        candidates,
        mask,
    }
}

/// Each tree of a [`super::SegmentedBvh`], built by [`bvh`] from its item range (tree-local
/// generated IDs, tree-local child indices), in tree order.
pub fn segmented_bvh(
    dims: usize,
    lower: &[f32],
    upper: &[f32],
    ids: Option<&[u32]>,
    trees: &[super::SegmentedBvhTree],
) -> Vec<BvhResult> {
    trees
        .iter()
        .map(|t| {
            let (a, b) = (t.item_offset as usize, (t.item_offset + t.items) as usize);
            bvh(
                dims,
                &lower[a * dims..b * dims],
                &upper[a * dims..b * dims],
                ids.map(|ids| &ids[a..b]),
                t.leaf_capacity,
                super::BvhOrder::Source,
            )
        })
        .collect()
}

/// The filter's `hits`: matching rows and the wrapping sum of their rows.
pub fn hits(dims: usize, positions: &[f32], query: &SpatialQuery) -> [u32; 2] {
    filter(dims, positions, query)
        .iter()
        .enumerate()
        .filter(|(_, &m)| m == 1)
        .fold([0u32, 0u32], |[n, s], (row, _)| {
            [n + 1, s.wrapping_add(row as u32)]
        })
}

/// What a [`super::BatchGridIndexQuery`] publishes for `queries` against a built `index` over
/// interleaved `positions`: `hits` (`[count, wrapping ID sum]` per query) and `status`
/// (`[candidates, flags]` per query).
pub fn batch_grid_query(
    domain: &SpatialDomain,
    dims: usize,
    index: &GridIndexResult,
    positions: &[f32],
    queries: &[SpatialQuery],
) -> (Vec<u32>, Vec<u32>) {
    let rows = positions.len() / dims;
    let mut hits = Vec::with_capacity(2 * queries.len());
    let mut status = Vec::with_capacity(2 * queries.len());
    for q in queries {
        let r = grid_query(domain, dims, index, q, usize::MAX, None);
        let mut flags = r.flags & !QUERY_FLAG_OUTPUT_OVERFLOW;
        let (mut n, mut sum) = (0u32, 0u32);
        for &id in &r.candidates {
            let i = id as usize;
            if i >= rows {
                flags |= QUERY_FLAG_MASK_RANGE;
            } else if q.matches(dims, &positions[i * dims..(i + 1) * dims]) {
                n += 1;
                sum = sum.wrapping_add(id);
            }
        }
        hits.extend([n, sum]);
        status.extend([r.required, flags]);
    }
    (hits, status)
}
