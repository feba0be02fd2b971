//! [`SpatialDomain`]: the caller-controlled cell layout of a grid index, and the float32 cell
//! arithmetic the kernels and the CPU oracle share bit for bit.

use gpugraph_command::VectorFormat;

use crate::error::AlgorithmError;
use crate::kernel::ViewCheck;

/// A row-major grid of `cells[0] × cells[1] (× cells[2])` equal cells over the closed box
/// `[min, max]`. Cell `(cx, cy, cz)` is row `(cz · ny + cy) · nx + cx`. Each axis maps `v` to
/// `floor((v − min) · scale)` in float32 with `scale = cells / (max − min)` (see
/// [`SpatialDomain::scale`]), the maximum coordinate included in the last cell. Two-dimensional
/// indexes ignore the third axis (`cells[2]` must be 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpatialDomain {
    /// Lower corner (x, y, z).
    pub min: [f32; 3],
    /// Upper corner (included).
    pub max: [f32; 3],
    /// Cells per axis (each at least 1).
    pub cells: [u32; 3],
}

impl SpatialDomain {
    /// A 2-D domain over `[x0, x1] × [y0, y1]` with `nx × ny` cells.
    pub fn new_2d(min: [f32; 2], max: [f32; 2], cells: [u32; 2]) -> Self {
        Self {
            min: [min[0], min[1], 0.0],
            max: [max[0], max[1], 1.0],
            cells: [cells[0], cells[1], 1],
        }
    }

    /// Total cells (the product over the axes).
    pub fn cell_count(&self) -> u64 {
        self.cells.iter().map(|&c| u64::from(c)).product()
    }

    /// `cells / (max − min)` per axis, as float32 (shared by the kernels and the oracle).
    pub fn scale(&self) -> [f32; 3] {
        std::array::from_fn(|a| {
            (f64::from(self.cells[a]) / (f64::from(self.max[a]) - f64::from(self.min[a]))) as f32
        })
    }

    /// The cell of axis `a` for a coordinate inside `[min, max]`.
    pub fn axis_cell(&self, a: usize, v: f32) -> u32 {
        let y = ((v - self.min[a]) * self.scale()[a]).floor();
        if y >= self.cells[a] as f32 {
            self.cells[a] - 1
        } else {
            y as u32
        }
    }

    /// The row-major cell of `p` (its first `dims` coordinates), or `None` when a coordinate
    /// is non-finite or outside `[min, max]`.
    pub fn cell_of(&self, dims: usize, p: &[f32]) -> Option<u32> {
        if (0..dims).any(|a| !(p[a] >= self.min[a] && p[a] <= self.max[a])) {
            return None;
        }
        let mut cell = 0u32;
        for a in (0..dims).rev() {
            cell = cell * self.cells[a] + self.axis_cell(a, p[a]);
        }
        Some(cell)
    }

    /// The dimension count of a point format: 2 for float32x2, 3 for float32x3.
    pub fn dims_of(format: VectorFormat) -> Option<u32> {
        match format {
            VectorFormat::Float32x2 => Some(2),
            VectorFormat::Float32x3 => Some(3),
            _ => None,
        }
    }

    /// Checks the domain for `dims` dimensions: finite `min < max` with a finite width, at
    /// least one cell and a finite positive scale per used axis, one z cell in 2-D, and a cell
    /// count whose offsets (`cells + 1` rows) fit uint32.
    pub fn check(&self, c: ViewCheck<'_>, dims: u32) -> Result<(), AlgorithmError> {
        let scale = self.scale();
        for a in 0..dims as usize {
            let (lo, hi, n) = (self.min[a], self.max[a], self.cells[a]);
            let axis = ["x", "y", "z"][a];
            if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
                return Err(c.out_of_range(
                    format!("the {axis} range"),
                    format!("[{lo}, {hi}]"),
                    "finite with min < max and a finite width",
                ));
            }
            if n == 0 || !scale[a].is_finite() || scale[a] <= 0.0 || n > 1 << 24 {
                return Err(c.out_of_range(
                    format!("the {axis} cell count over [{lo}, {hi}]"),
                    n,
                    "in 1..=2^24 with a finite positive float32 cell scale",
                ));
            }
        }
        if dims == 2 && self.cells[2] != 1 {
            return Err(c.out_of_range("the z cell count of a 2-D domain", self.cells[2], "1"));
        }
        if self.cell_count() >= u64::from(u32::MAX) {
            return Err(c.out_of_range(
                "the cell count",
                self.cell_count(),
                "below 4294967295 (cells + 1 offsets are uint32)",
            ));
        }
        Ok(())
    }

    /// The domain as the kernels' uniform block.
    pub(crate) fn params(&self) -> DomainParams {
        let s = self.scale();
        DomainParams {
            min: [self.min[0], self.min[1], self.min[2], 0.0],
            max: [self.max[0], self.max[1], self.max[2], 0.0],
            scale: [s[0], s[1], s[2], 0.0],
            cells: [self.cells[0], self.cells[1], self.cells[2], 0],
        }
    }
}

/// `Domain` in spatial/common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct DomainParams {
    pub min: [f32; 4],
    pub max: [f32; 4],
    pub scale: [f32; 4],
    pub cells: [u32; 4],
}
