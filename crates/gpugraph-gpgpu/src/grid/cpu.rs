//! CPU oracle of grid binning and aggregation: the kernel's cell arithmetic and the plain
//! keyed loop of [`crate::group::cpu`].

use super::GridDomain;
use crate::group::cpu::{aggregate_keys, Aggregates};

fn axis_cell(v: f32, lo: f32, scale: f32, n: u32) -> u32 {
    let y = ((v - lo) * scale).floor();
    if y >= n as f32 {
        n - 1
    } else {
        y as u32
    }
}

/// The row-major cell of `(x, y)`, or `None` outside the domain (max edges included) or for
/// non-finite coordinates.
pub fn cell_of(d: &GridDomain, x: f32, y: f32) -> Option<u32> {
    if !(x >= d.x_min && x <= d.x_max && y >= d.y_min && y <= d.y_max) {
        return None;
    }
    let cx = axis_cell(x, d.x_min, d.x_scale(), d.nx);
    let cy = axis_cell(y, d.y_min, d.y_scale(), d.ny);
    Some(cy * d.nx + cx)
}

/// Per-cell statistics of interleaved `positions` (x0, y0, x1, y1, ...) with optional
/// weights and mask.
pub fn aggregate(
    d: &GridDomain,
    positions: &[f32],
    weights: Option<&[f32]>,
    mask: Option<&[u32]>,
) -> Aggregates {
    aggregate_keys(
        positions.len() / 2,
        |i| cell_of(d, positions[2 * i], positions[2 * i + 1]),
        weights,
        mask,
        d.cells() as u32,
    )
}

/// Per-cell counts and the ignored count (positions outside or non-finite).
pub fn bin(d: &GridDomain, positions: &[f32], mask: Option<&[u32]>) -> (Vec<u32>, u32) {
    let a = aggregate(d, positions, None, mask);
    (a.count, a.ignored)
}
