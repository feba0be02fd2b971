//! Plain-Rust oracles of the topology family: the loops the shaders parallelize, written for
//! clarity. Tests and benchmarks compare the GPU against them.

use super::traversal::{TraversalDirection, UNREACHED};

/// One partition's CSR: `offsets` (nodes + 1 rows, positions into `neighbors`) and global
/// neighbour IDs.
#[derive(Clone, Copy, Debug)]
pub struct CsrPart<'a> {
    /// Row offsets into `neighbors`.
    pub offsets: &'a [u32],
    /// Global neighbour IDs.
    pub neighbors: &'a [u32],
}

/// What [`traverse`] computes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Traversal {
    /// Per node: its level, [`UNREACHED`] when not reached.
    pub levels: Vec<u32>,
    /// Per node: 1 reached, 0 not.
    pub mask: Vec<u32>,
    /// `[reached, out-of-range IDs and malformed ranges met, effective depth]`, the GPU's
    /// status words.
    pub status: [u32; 3],
}

pub use super::csr::{edge_range, reverse_csr};

/// Breadth-first levels from `seeds` over partitioned CSR (`forward[p]` / `reverse[p]`: the
/// adjacency of partition `p`, whose node count is its offsets length − 1) up to
/// `min(active_depth, max_depth)` levels, following `direction`. Out-of-range seeds and
/// neighbours are skipped and counted, malformed ranges clamped and counted, exactly as the
/// GPU does.
pub fn traverse(
    forward: &[CsrPart<'_>],
    reverse: Option<&[CsrPart<'_>]>,
    direction: TraversalDirection,
    seeds: &[u32],
    max_depth: u32,
    active_depth: Option<u32>,
) -> Traversal {
    let sides: Vec<&[CsrPart<'_>]> = match direction {
        TraversalDirection::Forward => vec![forward],
        TraversalDirection::Reverse => vec![reverse.expect("reverse CSR")],
        TraversalDirection::Both => vec![forward, reverse.expect("reverse CSR")],
    };
    let mut bases = Vec::new();
    let mut n = 0usize;
    for p in forward {
        bases.push(n);
        n += p.offsets.len().saturating_sub(1);
    }
    let depth = active_depth.map_or(max_depth, |d| d.min(max_depth));
    let mut levels = vec![UNREACHED; n];
    let mut invalid = 0u32;
    let mut frontier = Vec::new();
    fn claim(u: u32, d: u32, levels: &mut [u32], next: &mut Vec<u32>, invalid: &mut u32) {
        if u as usize >= levels.len() {
            *invalid += 1;
        } else if levels[u as usize] == UNREACHED {
            levels[u as usize] = d;
            next.push(u);
        }
    }
    for &s in seeds {
        claim(s, 0, &mut levels, &mut frontier, &mut invalid);
    }
    let mut reached = frontier.len() as u32;
    for d in 1..=depth {
        let mut next = Vec::new();
        for &v in &frontier {
            let p = bases.partition_point(|&b| b <= v as usize) - 1;
            let local = v as usize - bases[p];
            for side in &sides {
                let part = side[p];
                let (lo, hi, bad) = edge_range(
                    part.offsets[local],
                    part.offsets[local + 1],
                    part.neighbors.len() as u32,
                );
                invalid += u32::from(bad);
                for &u in &part.neighbors[lo as usize..hi as usize] {
                    claim(u, d, &mut levels, &mut next, &mut invalid);
                }
            }
        }
        reached += next.len() as u32;
        frontier = next;
    }
    let mask = levels.iter().map(|&l| u32::from(l != UNREACHED)).collect();
    Traversal {
        levels,
        mask,
        status: [reached, invalid, depth],
    }
}

/// Nearest visible ancestor of every node within `max_depth` parent links, else `invalid`
/// (the contract of [`super::AncestorProjection`]).
pub fn project_ancestors(
    parents: &[u32],
    visible: &[u32],
    max_depth: u32,
    invalid: u32,
) -> Vec<u32> {
    let n = parents.len();
    (0..n)
        .map(|i| {
            if visible[i] != 0 {
                return i as u32;
            }
            let mut cur = i;
            for _ in 0..max_depth {
                let p = parents[cur] as usize;
                if p >= n {
                    return invalid;
                }
                if visible[p] != 0 {
                    return p as u32;
                }
                cur = p;
            }
            invalid
        })
        .collect()
}

/// Effective child heights of [`super::HierarchyLayout`] over packed states.
pub fn hierarchy_heights(
    parent_states: &[u32],
    child_states: &[u32],
    children_per_parent: u32,
    [expanded_child, collapsed_child, collapsed_parent]: [u32; 3],
) -> Vec<u32> {
    let k = children_per_parent as usize;
    (0..child_states.len())
        .map(|g| {
            if parent_states[g / k] != 0 {
                if child_states[g] != 0 {
                    expanded_child
                } else {
                    collapsed_child
                }
            } else if g % k == 0 {
                collapsed_parent
            } else {
                0
            }
        })
        .collect()
}

/// Exclusive wrapping prefix sum (the row offsets of [`super::HierarchyLayout`]).
pub fn exclusive_offsets(heights: &[u32]) -> Vec<u32> {
    let mut acc = 0u32;
    heights
        .iter()
        .map(|&h| {
            let o = acc;
            acc = acc.wrapping_add(h);
            o
        })
        .collect()
}

/// What [`select_clusters`] computes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Per node: 1 selected, 0 not.
    pub selected: Vec<u32>,
    /// Selected cluster IDs in node order.
    pub ids: Vec<u32>,
    /// Whether some decision lies so close to its threshold that float32 on the GPU may
    /// decide it differently (tests regenerate such inputs).
    pub ambiguous: bool,
}

/// [`super::VirtualGeometrySelection`] in f64: `spheres[i]` = center xyz + radius,
/// `children[i]` = (first, count), levels from `level_offsets`.
pub fn select_clusters(
    spheres: &[[f32; 4]],
    errors: &[f32],
    children: &[[u32; 2]],
    cluster_ids: &[u32],
    level_offsets: &[u32],
    view: &super::SelectionView,
) -> Selection {
    const REQUEST: u8 = 1;
    const BLOCK: u8 = 2;
    let n = spheres.len();
    let fin = |v: f32| v.is_finite();
    let mut state = vec![0u8; n];
    let roots = level_offsets.get(1).copied().unwrap_or(0) as usize;
    state[..roots].iter_mut().for_each(|s| *s = REQUEST);
    let mut selected = vec![0u32; n];
    let mut ambiguous = false;
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-4 * (1.0 + a.abs().max(b.abs()));
    for (l, w) in level_offsets.windows(2).enumerate() {
        let (next_begin, next_end) = (w[1], level_offsets.get(l + 2).copied().unwrap_or(w[1]));
        for i in w[0] as usize..w[1] as usize {
            if state[i] & REQUEST == 0 || state[i] & BLOCK != 0 {
                continue;
            }
            let [cx, cy, cz, r] = spheres[i];
            let mut culled = false;
            for p in &view.planes {
                if !p.iter().all(|&v| fin(v)) {
                    continue;
                }
                let s = p[0] as f64 * cx as f64
                    + p[1] as f64 * cy as f64
                    + p[2] as f64 * cz as f64
                    + p[3] as f64;
                if s.is_finite() && fin(r) {
                    ambiguous |= near(s, -(r as f64));
                    culled |= s < -(r as f64);
                }
            }
            if culled {
                continue;
            }
            let [first, count] = children[i];
            let valid =
                count > 0 && first >= next_begin && first <= next_end && count <= next_end - first;
            let refine = valid && {
                let cam = view.camera;
                let inputs = [
                    cam[0],
                    cam[1],
                    cam[2],
                    view.pixel_scale,
                    view.max_error,
                    errors[i],
                    r,
                ];
                if !inputs.iter().all(|&v| fin(v)) {
                    true
                } else {
                    let d = ((cx as f64 - cam[0] as f64).powi(2)
                        + (cy as f64 - cam[1] as f64).powi(2)
                        + (cz as f64 - cam[2] as f64).powi(2))
                    .sqrt()
                        - r as f64;
                    ambiguous |= near(d, 1e-6);
                    if d <= 1e-6 {
                        true
                    } else {
                        let projected = errors[i] as f64 * view.pixel_scale as f64 / d;
                        ambiguous |= near(projected, view.max_error as f64);
                        projected > view.max_error as f64
                    }
                }
            };
            let bit = if refine { REQUEST } else { BLOCK };
            if !refine {
                selected[i] = 1;
            }
            if valid {
                for c in first..first + count {
                    state[c as usize] |= bit;
                }
            }
        }
    }
    let ids = (0..n)
        .filter(|&i| selected[i] != 0)
        .map(|i| cluster_ids[i])
        .collect();
    Selection {
        selected,
        ids,
        ambiguous,
    }
}
