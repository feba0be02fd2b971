//! Workgroup counts beyond one dimension's limit (65,535 on most devices) split over x and y;
//! kernels recover the linear id with `linear_workgroup` (`shared/dispatch.wgsl`) and
//! bound-check, since the split rounds up.

/// A 2-D workgroup grid: `x` columns by `y` rows of workgroups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkgroupSplit {
    /// Workgroups along x.
    pub x: u32,
    /// Workgroups along y.
    pub y: u32,
}

impl WorkgroupSplit {
    /// Whether nothing is dispatched.
    pub fn is_empty(&self) -> bool {
        self.x == 0 || self.y == 0
    }

    /// Workgroups launched (at least the requested count; extra ones must exit early).
    pub fn total(&self) -> u64 {
        u64::from(self.x) * u64::from(self.y)
    }

    /// `[x, y, 1]`, or all zero when empty.
    pub fn dims(&self) -> [u32; 3] {
        if self.is_empty() {
            [0, 0, 0]
        } else {
            [self.x, self.y, 1]
        }
    }
}

/// The smallest near-square split of `workgroups` into `x ≤ max_per_dim` columns and rows.
/// Returns `None` when even `max_per_dim²` workgroups are too few.
pub fn grid_for(workgroups: u64, max_per_dim: u32) -> Option<WorkgroupSplit> {
    if workgroups == 0 {
        return Some(WorkgroupSplit { x: 0, y: 0 });
    }
    let max = u64::from(max_per_dim.max(1));
    if workgroups <= max {
        return Some(WorkgroupSplit {
            x: workgroups as u32,
            y: 1,
        });
    }
    let y = workgroups.div_ceil(max);
    if y > max {
        return None;
    }
    let x = workgroups.div_ceil(y);
    Some(WorkgroupSplit {
        x: x as u32,
        y: y as u32,
    })
}

/// [`grid_for`] as dispatch dimensions (`[x, y, 1]`; all zero for no workgroups).
pub fn split_rows(workgroups: u64, max_per_dim: u32) -> Option<[u32; 3]> {
    grid_for(workgroups, max_per_dim).map(|g| g.dims())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_the_count_within_limits() {
        assert_eq!(grid_for(0, 65535), Some(WorkgroupSplit { x: 0, y: 0 }));
        assert_eq!(split_rows(0, 65535), Some([0, 0, 0]));
        assert_eq!(grid_for(1, 65535), Some(WorkgroupSplit { x: 1, y: 1 }));
        assert_eq!(split_rows(1, 65535), Some([1, 1, 1]));
        assert_eq!(
            grid_for(65535, 65535),
            Some(WorkgroupSplit { x: 65535, y: 1 })
        );
        let g = grid_for(65536, 65535).unwrap();
        assert_eq!((g.x, g.y), (32768, 2));
        for n in [70_000u64, 1 << 20, 1 << 24, 4_000_000_007] {
            let g = grid_for(n, 65535).unwrap();
            assert!(g.total() >= n && g.x <= 65535 && g.y <= 65535);
            assert!(g.total() - n < u64::from(g.y), "waste below one row");
        }
        assert_eq!(grid_for(65535u64 * 65535 + 1, 65535), None);
    }
}
