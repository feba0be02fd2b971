//! The visibility oracle: the workflow's predicate in plain Rust, evaluated in IEEE-754
//! binary32 with the very operations, in the very order, that `cull.wgsl` performs. It is
//! exact — a 0/1 answer per row, no tolerance band — and it is the contract:
//!
//! * **Planes.** The signed distance of a point `p` to a plane `(n, w)` is
//!   `((n.x·p.x + n.y·p.y) + n.z·p.z) + w` in f32 ([`plane_distance`]); the planes are taken
//!   as given (normalized ones, as [`crate::camera::frustum_planes`] makes, give world units).
//! * **Sphere** `(c, r)`: kept when `distance(plane, c) >= -r` for all six planes. The
//!   boundary belongs to the inside: a sphere exactly tangent to a plane from outside is kept,
//!   and so is a zero-radius sphere whose center lies exactly on a plane (`0 >= -0`). One ulp
//!   further out and it is culled. Non-finite components and negative radii are culled.
//! * **Box** `[lo, hi]`: kept when, for every plane, its corner farthest along the normal
//!   (`hi` where `n >= 0`, else `lo`) has `distance >= 0`. Non-finite corners and `hi < lo`
//!   are culled. Its center (for LOD) is `(lo + hi) · 0.5`.
//! * **Time** `(s, e)`: kept when `s <= window.end && e >= window.start`.
//! * **LOD band** `[near, far)` on the eye-to-center distance, compared squared (no square
//!   root): with `e = center - eye` and `dd = (e.x·e.x + e.y·e.y) + e.z·e.z`, kept when
//!   `(near <= 0 || dd >= near·near) && (far > 0 && dd < far·far)`.
//! * **Selection**: kept when nonzero.
//!
//! IEEE f32 on the GPU. The shader spells out the same products and sums, so a device that
//! rounds each operation to nearest (lavapipe does) agrees with [`visibility`] bit for bit. A
//! compiler may still fuse a product into an add (NVIDIA does): the rounding then differs by at
//! most an ulp of the distance, which moves only rows within that ulp of a boundary. Tests
//! therefore build scenes on which every product and every partial sum, in any order and
//! with or without fusion, is exactly representable in f32 ([`exactly_representable`]):
//! there the f32 answer is the exact real-number answer, every IEEE device must reproduce it
//! exactly, and tangent, one-ulp-outside and zero-radius rows are decided without slack.
//! For arbitrary scenes (benchmarks, examples) [`rounding_sensitive`] names the rows a
//! fused-multiply-add device may decide differently.

use super::ViewParams;

/// Per-row bounds as the oracle reads them.
#[derive(Clone, Copy, Debug)]
pub enum RowBounds {
    /// Center xyz, radius w.
    Sphere([f32; 4]),
    /// Minimum and maximum corners.
    Box([f32; 3], [f32; 3]),
}

/// Optional per-row inputs of the oracle (each as long as the bounds when given).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowInputs<'a> {
    /// `(start, end)` per row.
    pub time_range: Option<&'a [[f32; 2]]>,
    /// `[near, far)` per row.
    pub lod: Option<&'a [[f32; 2]]>,
    /// Selection flags.
    pub selection: Option<&'a [u32]>,
}

fn finite(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// The signed distance of `p` to `plane` in f32, in the shader's order (see the module doc).
pub fn plane_distance(plane: &[f32; 4], p: [f32; 3]) -> f32 {
    ((plane[0] * p[0] + plane[1] * p[1]) + plane[2] * p[2]) + plane[3]
}

/// The corner of `[lo, hi]` farthest along `plane`'s normal.
fn far_corner(plane: &[f32; 4], lo: [f32; 3], hi: [f32; 3]) -> [f32; 3] {
    std::array::from_fn(|i| if plane[i] >= 0.0 { hi[i] } else { lo[i] })
}

/// The bounds test alone: whether `bounds` meet all six `planes`.
pub fn bounds_visible(planes: &[[f32; 4]; 6], bounds: RowBounds) -> bool {
    match bounds {
        RowBounds::Sphere(s) => {
            let (center, radius) = ([s[0], s[1], s[2]], s[3]);
            finite(&s)
                && radius >= 0.0
                && planes.iter().all(|p| plane_distance(p, center) >= -radius)
        }
        RowBounds::Box(lo, hi) => {
            finite(&lo)
                && finite(&hi)
                && (0..3).all(|i| hi[i] >= lo[i])
                && planes
                    .iter()
                    .all(|p| plane_distance(p, far_corner(p, lo, hi)) >= 0.0)
        }
    }
}

/// The center the LOD test measures from.
pub fn center(bounds: RowBounds) -> [f32; 3] {
    match bounds {
        RowBounds::Sphere(s) => [s[0], s[1], s[2]],
        RowBounds::Box(lo, hi) => std::array::from_fn(|i| (lo[i] + hi[i]) * 0.5),
    }
}

/// Whether the LOD band `[near, far)` holds the distance from `eye` to `center` (squared).
pub fn lod_visible(eye: [f32; 3], center: [f32; 3], [near, far]: [f32; 2]) -> bool {
    let e: [f32; 3] = std::array::from_fn(|i| center[i] - eye[i]);
    let dd = (e[0] * e[0] + e[1] * e[1]) + e[2] * e[2];
    (near <= 0.0 || dd >= near * near) && (far > 0.0 && dd < far * far)
}

/// Whether the range `(start, end)` meets the time `window` `[start, end]`.
pub fn time_visible(window: [f32; 2], [start, end]: [f32; 2]) -> bool {
    start <= window[1] && end >= window[0]
}

/// Whether row `i` is visible.
fn row_visible(view: &ViewParams, bounds: RowBounds, inputs: RowInputs<'_>, i: usize) -> bool {
    let eye = [view.eye[0], view.eye[1], view.eye[2]];
    bounds_visible(&view.planes, bounds)
        && inputs
            .time_range
            .is_none_or(|t| time_visible(view.time, t[i]))
        && inputs
            .lod
            .is_none_or(|l| lod_visible(eye, center(bounds), l[i]))
        && inputs.selection.is_none_or(|s| s[i] != 0)
}

/// The mask of every row: 1 visible, 0 culled.
pub fn visibility(view: &ViewParams, bounds: &[RowBounds], inputs: RowInputs<'_>) -> Vec<u32> {
    (0..bounds.len())
        .map(|i| u32::from(row_visible(view, bounds[i], inputs, i)))
        .collect()
}

/// Whether every subset sum of `terms` (f64 values) is computed exactly in f64 and is
/// representable in f32: then any order of summation, fused or not, yields it exactly.
fn sums_exact(terms: &[f64]) -> bool {
    (1u32..1 << terms.len()).all(|subset| {
        let mut sum = 0.0f64;
        for (k, &t) in terms.iter().enumerate() {
            if subset >> k & 1 == 1 {
                // TwoSum: the exact rounding error of `sum + t`.
                let s = sum + t;
                let v = s - sum;
                if (sum - (s - v)) + (t - v) != 0.0 {
                    return false;
                }
                sum = s;
            }
        }
        f64::from(sum as f32) == sum
    })
}

/// Products of two f32 are exact in f64; the terms of `a · b + ...`.
fn products(a: [f32; 3], b: [f32; 3]) -> [f64; 3] {
    std::array::from_fn(|i| f64::from(a[i]) * f64::from(b[i]))
}

fn distance_exact(plane: &[f32; 4], p: [f32; 3]) -> bool {
    let [x, y, z] = products([plane[0], plane[1], plane[2]], p);
    sums_exact(&[x, y, z, f64::from(plane[3])])
}

/// The first row (if any) on which some product or partial sum of the predicate, in some
/// summation order with or without fused multiply-adds, is not exactly representable in
/// f32. `None`: every IEEE-754 device decides every row exactly like [`visibility`].
/// Rows with non-finite or inverted bounds are culled before any arithmetic and pass.
pub fn exactly_representable(
    view: &ViewParams,
    bounds: &[RowBounds],
    inputs: RowInputs<'_>,
) -> Option<usize> {
    let eye = [view.eye[0], view.eye[1], view.eye[2]];
    (0..bounds.len()).find(|&i| {
        let ok = match bounds[i] {
            RowBounds::Sphere(s) => {
                !finite(&s)
                    || view
                        .planes
                        .iter()
                        .all(|p| distance_exact(p, [s[0], s[1], s[2]]))
            }
            RowBounds::Box(lo, hi) => {
                !(finite(&lo) && finite(&hi))
                    || (0..3).all(|k| {
                        sums_exact(&[f64::from(lo[k]), f64::from(hi[k])])
                            && f64::from((lo[k] + hi[k]) * 0.5)
                                == (f64::from(lo[k]) + f64::from(hi[k])) * 0.5
                    }) && view
                        .planes
                        .iter()
                        .all(|p| distance_exact(p, far_corner(p, lo, hi)))
            }
        };
        let lod_ok = inputs.lod.is_none_or(|l| {
            let c = center(bounds[i]);
            let diffs_exact = (0..3).all(|k| sums_exact(&[f64::from(c[k]), -f64::from(eye[k])]));
            let e: [f32; 3] = std::array::from_fn(|k| c[k] - eye[k]);
            let squares = products(e, e);
            let [near, far] = l[i].map(f64::from);
            diffs_exact && sums_exact(&squares) && sums_exact(&[near * near, far * far])
        });
        !(ok && lod_ok)
    })
}

/// Rows whose decision a device that evaluates the predicate in another f32 order or with
/// fused multiply-adds may flip: some plane distance (plus radius), or the squared LOD
/// distance against a band edge, lies within `relative` of the decision (relative to the
/// magnitudes involved), measured in f64. For arbitrary, non-exact scenes only.
pub fn rounding_sensitive(
    view: &ViewParams,
    bounds: &[RowBounds],
    inputs: RowInputs<'_>,
    relative: f64,
) -> Vec<bool> {
    let eye = view.eye.map(f64::from);
    let near_zero = |x: f64, scale: f64| x.abs() <= relative * (1.0 + scale);
    let distance = |p: &[f32; 4], x: [f32; 3]| {
        let [a, b, c] = products([p[0], p[1], p[2]], x);
        let scale = a.abs() + b.abs() + c.abs() + f64::from(p[3]).abs();
        (a + b + c + f64::from(p[3]), scale)
    };
    (0..bounds.len())
        .map(|i| {
            let planes = view.planes.iter().any(|p| match bounds[i] {
                RowBounds::Sphere(s) => {
                    let (d, scale) = distance(p, [s[0], s[1], s[2]]);
                    finite(&s) && near_zero(d + f64::from(s[3]), scale + f64::from(s[3]).abs())
                }
                RowBounds::Box(lo, hi) => {
                    let (d, scale) = distance(p, far_corner(p, lo, hi));
                    finite(&lo) && finite(&hi) && near_zero(d, scale)
                }
            });
            let lod = inputs.lod.is_some_and(|l| {
                let c = center(bounds[i]).map(f64::from);
                let dd: f64 = (0..3).map(|k| (c[k] - eye[k]).powi(2)).sum();
                l[i].iter()
                    .any(|&edge| near_zero(dd - f64::from(edge).powi(2), dd))
            });
            planes || lod
        })
        .collect()
}

/// The first row where `got` differs from `want`, ignoring rows marked in `tolerated`
/// (where `got` must still be 0 or 1); an empty `tolerated` tolerates nothing.
pub fn first_disagreement(want: &[u32], got: &[u32], tolerated: &[bool]) -> Option<usize> {
    if want.len() != got.len() {
        return Some(want.len().min(got.len()));
    }
    (0..want.len()).find(|&i| {
        if tolerated.get(i).copied().unwrap_or(false) {
            got[i] > 1
        } else {
            got[i] != want[i]
        }
    })
}

/// Stable compaction: `ids[i]` for every row with a nonzero mask, in row order.
pub fn compact(ids: &[u32], mask: &[u32]) -> Vec<u32> {
    ids.iter()
        .zip(mask)
        .filter(|(_, &m)| m != 0)
        .map(|(&id, _)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis_box_view() -> ViewParams {
        // The cube [-4, 4]³ as six planes (inside where n·p + w >= 0).
        let planes = [
            [1.0, 0.0, 0.0, 4.0],
            [-1.0, 0.0, 0.0, 4.0],
            [0.0, 1.0, 0.0, 4.0],
            [0.0, -1.0, 0.0, 4.0],
            [0.0, 0.0, 1.0, 4.0],
            [0.0, 0.0, -1.0, 4.0],
        ];
        ViewParams {
            planes,
            eye: [0.0; 4],
            time: [f32::NEG_INFINITY, f32::INFINITY],
            pad: [0.0; 2],
        }
    }

    /// The boundary: tangent and zero-radius-on-the-plane kept, one ulp out culled.
    #[test]
    fn the_boundary_belongs_to_the_inside() {
        let v = axis_box_view();
        let sphere = |x: f32, r: f32| RowBounds::Sphere([x, 0.0, 0.0, r]);
        assert!(bounds_visible(&v.planes, sphere(5.0, 1.0)), "tangent");
        assert!(bounds_visible(&v.planes, sphere(4.0, 0.0)), "on the plane");
        assert!(bounds_visible(&v.planes, sphere(-4.0, -0.0)), "-0 radius");
        assert!(!bounds_visible(
            &v.planes,
            sphere(5.0, f32::from_bits(1.0f32.to_bits() - 1))
        ));
        assert!(
            !bounds_visible(&v.planes, sphere(0.0, -1.0)),
            "negative radius"
        );
        assert!(!bounds_visible(&v.planes, sphere(f32::NAN, 1.0)));
        assert!(!bounds_visible(&v.planes, sphere(0.0, f32::INFINITY)));
        let b = |lo: f32, hi: f32| RowBounds::Box([lo, 0.0, 0.0], [hi, 1.0, 1.0]);
        assert!(bounds_visible(&v.planes, b(4.0, 6.0)), "touching box");
        assert!(!bounds_visible(&v.planes, b(4.0 + f32::EPSILON * 4.0, 6.0)));
        assert!(!bounds_visible(&v.planes, b(1.0, 0.0)), "inverted box");
        assert_eq!(
            exactly_representable(&v, &[sphere(5.0, 1.0), b(4.0, 6.0)], Default::default()),
            None
        );
    }

    #[test]
    fn lod_band_is_half_open_on_the_distance() {
        let eye = [0.0; 3];
        assert!(
            lod_visible(eye, [3.0, 4.0, 0.0], [5.0, 6.0]),
            "near edge kept"
        );
        assert!(
            !lod_visible(eye, [3.0, 4.0, 0.0], [1.0, 5.0]),
            "far edge culled"
        );
        assert!(lod_visible(eye, [0.0; 3], [-1.0, 1.0]), "negative near");
        assert!(!lod_visible(eye, [0.0; 3], [-2.0, -1.0]), "negative far");
        assert!(!lod_visible(eye, [0.0; 3], [f32::NAN, 1.0]));
    }

    #[test]
    fn inexact_arithmetic_is_named() {
        let mut v = axis_box_view();
        v.planes[0] = [0.1, 0.2, 0.3, 0.7];
        let s = [
            RowBounds::Sphere([0.0; 4]),
            RowBounds::Sphere([0.3, 0.1, 0.7, 1.0]),
        ];
        assert_eq!(exactly_representable(&v, &s, Default::default()), Some(1));
        let tangent = [RowBounds::Sphere([7.0, 0.0, 0.0, 3.0])];
        let sensitive = rounding_sensitive(&v, &tangent, Default::default(), 1e-6);
        assert_eq!(sensitive, vec![true], "tangent to x = 4");
    }
}
