//! The picking oracle: a plain-Rust rasterizer of [`crate::InstancedCubes`] into an
//! object/batch ID image, as an [`super::IndexPickingTarget`] pass produces it with MSAA off.
//!
//! It follows the pipeline step by step: the vertex shader's f32 arithmetic (corner =
//! `center + (bits * 2 - 1) * radius * 0.57735`, then the column-major view-projection), the
//! perspective divide and the viewport transform (`x = (ndc.x + 1) / 2 * width`,
//! `y = (1 - ndc.y) / 2 * height`), back faces culled (the cubes' faces wind clockwise seen
//! from outside), one sample at each pixel center, the top-left fill rule, depth interpolated
//! linearly in screen space, the depth test of the pipeline (`Less` against a buffer cleared
//! to 1), and draw order = instance order, then the 12 triangles in index order.
//!
//! What it does not reproduce: a GPU snaps vertices to a sub-pixel grid (8 bits on most
//! hardware) and evaluates edges and depth in its own fixed or floating point, so a pixel
//! whose center lies within a fraction of a pixel of a triangle edge, or where two surfaces
//! are within rounding in depth, may differ. Comparisons therefore use only pixels whose 3×3
//! neighbourhood in this image holds one value ([`interior`]); everywhere else a GPU must
//! match it exactly. No clipping is done: every vertex must lie in the depth range
//! (`0 <= z <= w`, `w > 0`), else [`rasterize`] names the instance.

use crate::camera::Mat4;
use crate::mesh::{CUBE_INDICES, HALF_EXTENT};
use crate::NO_OBJECT;

/// The depth comparison a fragment must pass (`new` against `stored`), as the pipeline's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthTest {
    /// `new < stored` (the pipeline's).
    Less,
    /// `new > stored`.
    Greater,
}

/// What to rasterize.
#[derive(Clone, Copy, Debug)]
pub struct RasterScene<'a> {
    /// Column-major view-projection matrix (the `CubeCamera`'s).
    pub view_projection: &'a Mat4,
    /// Spheres (center, radius) indexed by ID.
    pub spheres: &'a [[f32; 4]],
    /// IDs drawn, in draw order.
    pub visible: &'a [u32],
    /// The batch ID written next to each object ID.
    pub batch: u32,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// The depth comparison.
    pub depth_test: DepthTest,
    /// The value the depth buffer is cleared to.
    pub depth_clear: f32,
}

/// Row-major `(object, batch)` per pixel; `(NO_OBJECT, NO_OBJECT)` where nothing is drawn.
pub type IdImage = Vec<(u32, u32)>;

/// A vertex in window coordinates (y down) with its depth.
#[derive(Clone, Copy)]
struct Vertex {
    x: f64,
    y: f64,
    z: f64,
}

/// `(b - a) × (p - a)`: positive when `p` is right of `a → b` on a y-down screen.
fn edge(a: Vertex, b: Vertex, px: f64, py: f64) -> f64 {
    (b.x - a.x) * (py - a.y) - (b.y - a.y) * (px - a.x)
}

/// Top-left rule for an edge of a triangle with positive [`edge`] area: a horizontal edge at
/// the top, or an edge going up (the left side).
fn top_left(a: Vertex, b: Vertex) -> bool {
    (a.y == b.y && b.x > a.x) || b.y < a.y
}

/// The ID image of `scene`, or the first instance with a vertex outside the depth range (or
/// an ID past the spheres).
pub fn rasterize(scene: &RasterScene<'_>) -> Result<IdImage, u32> {
    let (w, h) = scene.size;
    let mut ids = vec![(NO_OBJECT, NO_OBJECT); (w as usize) * (h as usize)];
    let mut depth = vec![scene.depth_clear; ids.len()];
    let m = scene.view_projection;
    for &id in scene.visible {
        let s = *scene.spheres.get(id as usize).ok_or(id)?;
        let half = s[3] * HALF_EXTENT;
        let mut corners = [Vertex {
            x: 0.0,
            y: 0.0,
            z: 0.0,
        }; 8];
        for (v, corner) in corners.iter_mut().enumerate() {
            let bit = |k: usize| ((v >> k) & 1) as f32 * 2.0 - 1.0;
            let p = [
                s[0] + bit(0) * half,
                s[1] + bit(1) * half,
                s[2] + bit(2) * half,
                1.0,
            ];
            let clip: [f32; 4] =
                std::array::from_fn(|r| m[0][r] * p[0] + m[1][r] * p[1] + m[2][r] * p[2] + m[3][r]);
            if !(clip[3] > 0.0 && clip[2] >= 0.0 && clip[2] <= clip[3]) {
                return Err(id);
            }
            let ndc = clip.map(|c| f64::from(c / clip[3]));
            *corner = Vertex {
                x: (ndc[0] + 1.0) / 2.0 * f64::from(w),
                y: (1.0 - ndc[1]) / 2.0 * f64::from(h),
                z: ndc[2],
            };
        }
        for t in CUBE_INDICES.chunks(3) {
            let [a, b, c] = [0, 1, 2].map(|k| corners[t[k] as usize]);
            let area = edge(a, b, c.x, c.y);
            // Front faces wind clockwise on screen: positive area with y down.
            if area <= 0.0 {
                continue;
            }
            let x0 = a.x.min(b.x).min(c.x).floor().max(0.0) as u32;
            let y0 = a.y.min(b.y).min(c.y).floor().max(0.0) as u32;
            let x1 = (a.x.max(b.x).max(c.x).ceil().max(0.0) as u32).min(w);
            let y1 = (a.y.max(b.y).max(c.y).ceil().max(0.0) as u32).min(h);
            for py in y0..y1 {
                for px in x0..x1 {
                    let (cx, cy) = (f64::from(px) + 0.5, f64::from(py) + 0.5);
                    let (ea, eb, ec) = (edge(b, c, cx, cy), edge(c, a, cx, cy), edge(a, b, cx, cy));
                    let inside =
                        |e: f64, p: Vertex, q: Vertex| e > 0.0 || (e == 0.0 && top_left(p, q));
                    if !(inside(ea, b, c) && inside(eb, c, a) && inside(ec, a, b)) {
                        continue;
                    }
                    let z = ((ea * a.z + eb * b.z + ec * c.z) / area) as f32;
                    let at = (py * w + px) as usize;
                    let pass = match scene.depth_test {
                        DepthTest::Less => z < depth[at],
                        DepthTest::Greater => z > depth[at],
                    };
                    if pass {
                        depth[at] = z;
                        ids[at] = (id, scene.batch);
                    }
                }
            }
        }
    }
    Ok(ids)
}

/// Whether pixel `(x, y)`'s 3×3 neighbourhood (clipped to the image) holds one value: the
/// pixels a GPU must match exactly (see the module doc).
pub fn interior(image: &[(u32, u32)], size: (u32, u32), x: u32, y: u32) -> bool {
    let (w, h) = size;
    let at = |x: u32, y: u32| image[(y * w + x) as usize];
    let here = at(x, y);
    (y.saturating_sub(1)..(y + 2).min(h))
        .all(|ny| (x.saturating_sub(1)..(x + 2).min(w)).all(|nx| at(nx, ny) == here))
}
