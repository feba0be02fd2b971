//! The visibility oracle: the workflow's predicate in plain Rust, evaluated in f64 on the same
//! f32 inputs and planes the GPU sees. A row whose decision hinges on f32 rounding (within
//! `epsilon` of a plane, an LOD edge) is [`Verdict::Borderline`]: tests accept either answer
//! there and require exact agreement everywhere else.

use super::ViewParams;

/// The oracle's decision for one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Visible by a margin larger than the tolerance.
    Visible,
    /// Culled by a margin larger than the tolerance (or by an exact test: selection, time,
    /// non-finite bounds).
    Culled,
    /// Within the tolerance of a boundary: the f32 GPU test may decide either way.
    Borderline,
}

/// Per-row bounds as the oracle reads them.
#[derive(Clone, Copy, Debug)]
pub enum RowBounds {
    /// Center xyz, radius w.
    Sphere([f32; 4]),
    /// Minimum and maximum corners.
    Box([f32; 3], [f32; 3]),
}

fn finite(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn plane_distance(p: &[f32; 4], x: [f64; 3]) -> f64 {
    f64::from(p[0]) * x[0] + f64::from(p[1]) * x[1] + f64::from(p[2]) * x[2] + f64::from(p[3])
}

/// The bounds test alone: (verdict, center of the bounds).
pub fn bounds_verdict(view: &ViewParams, bounds: RowBounds, epsilon: f64) -> (Verdict, [f64; 3]) {
    let mut worst = f64::INFINITY;
    let center;
    match bounds {
        RowBounds::Sphere(s) => {
            if !finite(&s) || s[3] < 0.0 {
                return (Verdict::Culled, [0.0; 3]);
            }
            center = [f64::from(s[0]), f64::from(s[1]), f64::from(s[2])];
            for p in &view.planes {
                worst = worst.min(plane_distance(p, center) + f64::from(s[3]));
            }
        }
        RowBounds::Box(lo, hi) => {
            if !finite(&lo) || !finite(&hi) || (0..3).any(|i| hi[i] < lo[i]) {
                return (Verdict::Culled, [0.0; 3]);
            }
            center = std::array::from_fn(|i| (f64::from(lo[i]) + f64::from(hi[i])) / 2.0);
            for p in &view.planes {
                let corner =
                    std::array::from_fn(|i| f64::from(if p[i] >= 0.0 { hi[i] } else { lo[i] }));
                worst = worst.min(plane_distance(p, corner));
            }
        }
    }
    let scale = 1.0 + center.iter().map(|c| c.abs()).fold(0.0, f64::max);
    let verdict = if worst.abs() <= epsilon * scale {
        Verdict::Borderline
    } else if worst > 0.0 {
        Verdict::Visible
    } else {
        Verdict::Culled
    };
    (verdict, center)
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

/// The verdict of every row.
pub fn visibility(
    view: &ViewParams,
    bounds: &[RowBounds],
    inputs: RowInputs<'_>,
    epsilon: f64,
) -> Vec<Verdict> {
    bounds
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let (mut verdict, center) = bounds_verdict(view, b, epsilon);
            if verdict == Verdict::Culled {
                return verdict;
            }
            if let Some(t) = inputs.time_range {
                let [s, e] = t[i];
                if !(s <= view.time[1] && e >= view.time[0]) {
                    return Verdict::Culled;
                }
            }
            if let Some(sel) = inputs.selection {
                if sel[i] == 0 {
                    return Verdict::Culled;
                }
            }
            if let Some(l) = inputs.lod {
                let eye = view.eye.map(f64::from);
                let d = (0..3)
                    .map(|k| (center[k] - eye[k]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                let (near, far) = (f64::from(l[i][0]), f64::from(l[i][1]));
                let tol = epsilon * (1.0 + d);
                if (d - near).abs() <= tol || (d - far).abs() <= tol {
                    verdict = Verdict::Borderline;
                } else if !(d >= near && d < far) {
                    return Verdict::Culled;
                }
            }
            verdict
        })
        .collect()
}

/// Whether a GPU mask agrees with the verdicts: equal everywhere but borderline rows (where
/// it must still be 0 or 1). Returns the first disagreeing row.
pub fn first_disagreement(verdicts: &[Verdict], mask: &[u32]) -> Option<usize> {
    if verdicts.len() != mask.len() {
        return Some(verdicts.len().min(mask.len()));
    }
    verdicts.iter().zip(mask).position(|(v, &m)| match v {
        Verdict::Visible => m != 1,
        Verdict::Culled => m != 0,
        Verdict::Borderline => m > 1,
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
