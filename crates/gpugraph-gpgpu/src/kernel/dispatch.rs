//! Dispatch shapes for workgroup counts beyond one dimension's limit (65,535 on most devices):
//! split over x and y; kernels recover the linear id with `linear_workgroup` and bound-check.

/// A 2-D workgroup grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Workgroups along x.
    pub x: u32,
    /// Workgroups along y.
    pub y: u32,
}

impl Grid {
    /// Whether nothing is dispatched.
    pub fn is_empty(&self) -> bool {
        self.x == 0 || self.y == 0
    }
    /// Workgroups launched (at least the requested count; extra ones must exit early).
    pub fn total(&self) -> u64 {
        self.x as u64 * self.y as u64
    }
}

/// The smallest near-square split of `workgroups` into `x ≤ max_per_dim` columns and rows.
/// Returns `None` when even `max_per_dim²` workgroups are too few.
pub fn grid_for(workgroups: u64, max_per_dim: u32) -> Option<Grid> {
    if workgroups == 0 {
        return Some(Grid { x: 0, y: 0 });
    }
    let max = max_per_dim.max(1) as u64;
    if workgroups <= max {
        return Some(Grid {
            x: workgroups as u32,
            y: 1,
        });
    }
    let y = workgroups.div_ceil(max);
    if y > max {
        return None;
    }
    let x = workgroups.div_ceil(y);
    Some(Grid {
        x: x as u32,
        y: y as u32,
    })
}

/// Adds the declared dispatch `entry` of `wgsl` (pipeline key `key`) as node `id`: the one
/// path by which the families' kernels reach the command graph's
/// [`gpugraph_command::DispatchNode`] (uses derived from `bindings`).
pub(crate) fn add_dispatch(
    graph: &mut gpugraph_command::CommandGraph,
    id: String,
    key: &str,
    wgsl: String,
    entry: &str,
    bindings: Vec<gpugraph_command::Binding>,
    grid: gpugraph_command::Grid,
) -> Result<(), crate::error::AlgorithmError> {
    let shader = gpugraph_command::ShaderSource::new(key, wgsl);
    graph.add_dispatch_node(gpugraph_command::DispatchNode::new(
        id, shader, entry, bindings, grid,
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_the_count_within_limits() {
        assert_eq!(grid_for(0, 65535), Some(Grid { x: 0, y: 0 }));
        assert_eq!(grid_for(1, 65535), Some(Grid { x: 1, y: 1 }));
        assert_eq!(grid_for(65535, 65535), Some(Grid { x: 65535, y: 1 }));
        let g = grid_for(65536, 65535).unwrap();
        assert_eq!((g.x, g.y), (32768, 2));
        for n in [70_000u64, 1 << 20, 1 << 24, 4_000_000_007] {
            let g = grid_for(n, 65535).unwrap();
            assert!(g.total() >= n && g.x <= 65535 && g.y <= 65535);
            assert!(g.total() - n < g.y as u64, "waste below one row");
        }
        assert_eq!(grid_for(65535u64 * 65535 + 1, 65535), None);
    }
}
