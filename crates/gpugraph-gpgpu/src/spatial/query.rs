//! [`SpatialQuery`]: the GPU-resident query word layout shared by the grid query and the
//! exact point filter, its status flags, and the float32 arithmetic the kernels and the CPU
//! oracle share (query box, exact predicate).

/// uint32 words of one encoded query ([`SpatialQuery::words`]).
pub const QUERY_WORDS: u64 = 8;

/// Query status flag: the index it read had overflowed (its stored IDs are a truncated prefix),
/// so candidates may be missing.
pub const QUERY_FLAG_INDEX_OVERFLOW: u32 = 1;
/// Query status flag: more candidates than the output capacity; the stored prefix is partial.
pub const QUERY_FLAG_OUTPUT_OVERFLOW: u32 = 2;
/// Query status flag: a candidate ID was at or past the mask's length (not marked).
pub const QUERY_FLAG_MASK_RANGE: u32 = 4;
/// Query status flag: the query words were invalid (unknown kind, non-finite coordinates,
/// `min > max`, negative radius); the result is empty.
pub const QUERY_FLAG_INVALID: u32 = 8;
/// Query status flag: the query box reaches outside the index domain and the index ignored
/// finite rows outside it; such rows can match the query but are never candidates.
pub const QUERY_FLAG_OUTSIDE_DOMAIN: u32 = 16;

/// One spatial query. The third coordinate is ignored by 2-D structures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpatialQuery {
    /// Points equal to `p` (the grid selects `p`'s cell).
    Point([f32; 3]),
    /// Points inside the closed box `[min, max]`.
    Bounds {
        /// Lower corner.
        min: [f32; 3],
        /// Upper corner (included).
        max: [f32; 3],
    },
    /// Points at distance at most `radius` from `center` (`dx² + dy² (+ dz²) ≤ r²` in
    /// float32).
    Radius {
        /// Center.
        center: [f32; 3],
        /// Radius (≥ 0).
        radius: f32,
    },
}

const KIND_POINT: u32 = 0;
const KIND_BOUNDS: u32 = 1;
const KIND_RADIUS: u32 = 2;

impl SpatialQuery {
    /// The [`QUERY_WORDS`] uint32 words a query buffer holds: the kind (0 point, 1 bounds,
    /// 2 radius) then float32 bits (`x, y, z` of the point, min and max corner, or center and
    /// radius). Write them into the query view (e.g. `queue.write_buffer`) between encodings.
    pub fn words(&self) -> [u32; QUERY_WORDS as usize] {
        let f = |v: f32| v.to_bits();
        match *self {
            SpatialQuery::Point(p) => [KIND_POINT, f(p[0]), f(p[1]), f(p[2]), 0, 0, 0, 0],
            SpatialQuery::Bounds { min, max } => [
                KIND_BOUNDS,
                f(min[0]),
                f(min[1]),
                f(min[2]),
                f(max[0]),
                f(max[1]),
                f(max[2]),
                0,
            ],
            SpatialQuery::Radius { center, radius } => [
                KIND_RADIUS,
                f(center[0]),
                f(center[1]),
                f(center[2]),
                f(radius),
                0,
                0,
                0,
            ],
        }
    }

    /// Decodes query words as the kernels do; `None` for an unknown kind.
    pub fn from_words(w: &[u32]) -> Option<Self> {
        let f = |i: usize| f32::from_bits(w[i]);
        match w[0] {
            KIND_POINT => Some(SpatialQuery::Point([f(1), f(2), f(3)])),
            KIND_BOUNDS => Some(SpatialQuery::Bounds {
                min: [f(1), f(2), f(3)],
                max: [f(4), f(5), f(6)],
            }),
            KIND_RADIUS => Some(SpatialQuery::Radius {
                center: [f(1), f(2), f(3)],
                radius: f(4),
            }),
            _ => None,
        }
    }

    /// The closed box a query can match in `dims` dimensions, or `None` for an invalid
    /// query. A radius box is widened by `(|c| + r) · 2⁻²⁰` per axis so that float32 rounding
    /// of `c ± r` never excludes a point the exact predicate accepts.
    pub fn query_box(&self, dims: usize) -> Option<([f32; 3], [f32; 3])> {
        let finite = |v: &[f32; 3]| v[..dims].iter().all(|x| x.is_finite());
        match *self {
            SpatialQuery::Point(p) => finite(&p).then_some((p, p)),
            SpatialQuery::Bounds { min, max } => {
                (finite(&min) && finite(&max) && (0..dims).all(|a| min[a] <= max[a]))
                    .then_some((min, max))
            }
            SpatialQuery::Radius { center, radius } => {
                if !(finite(&center) && radius.is_finite() && radius >= 0.0) {
                    return None;
                }
                let e = |a: usize| (center[a].abs() + radius) * RADIUS_MARGIN;
                let lo = std::array::from_fn(|a| center[a] - radius - e(a));
                let hi = std::array::from_fn(|a| center[a] + radius + e(a));
                Some((lo, hi))
            }
        }
    }

    /// The exact predicate on a point's first `dims` coordinates (false for invalid queries
    /// and non-finite points), in the kernels' float32 arithmetic.
    pub fn matches(&self, dims: usize, p: &[f32]) -> bool {
        if self.query_box(dims).is_none() || p[..dims].iter().any(|v| !v.is_finite()) {
            return false;
        }
        match *self {
            SpatialQuery::Point(q) => (0..dims).all(|a| p[a] == q[a]),
            SpatialQuery::Bounds { min, max } => {
                (0..dims).all(|a| p[a] >= min[a] && p[a] <= max[a])
            }
            SpatialQuery::Radius { center, radius } => {
                let mut d2 = 0.0f32;
                for a in 0..dims {
                    let d = p[a] - center[a];
                    d2 += d * d;
                }
                d2 <= radius * radius
            }
        }
    }
}

/// Relative widening of radius query boxes (see [`SpatialQuery::query_box`]).
pub(crate) const RADIUS_MARGIN: f32 = 1.0 / (1 << 20) as f32;
