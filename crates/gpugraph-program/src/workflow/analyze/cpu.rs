//! CPU twins of the analysis's own WGSL kernels (positions.wgsl, edges.wgsl): the oracle the
//! tests compare against (the host extent itself is `domain.rs`).

pub use super::domain::{step_out, widened};

/// positions.wgsl's `unit`: `v` on the unit square through the extent `[lo, hi]` (widened
/// when `widen`); NaN for non-finite input or extent; 0.5 for a degenerate extent.
pub fn unit(v: f32, [lo, hi]: [f32; 2], widen: bool) -> f32 {
    if !v.is_finite() || !lo.is_finite() || !hi.is_finite() {
        return f32::NAN;
    }
    let [lo, hi] = widened([lo, hi], widen);
    if hi > lo {
        let width = hi - lo;
        if width.is_finite() {
            return ((v - lo) / width).clamp(0.0, 1.0);
        }
        return ((v * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5)).clamp(0.0, 1.0);
    }
    0.5
}

/// edges.wgsl: `bins + 1` equal-width edges over `[lo, hi]` (degenerate extents widen by 0.5
/// on each side; an overflowing width interpolates; NaN extents give NaN edges).
pub fn uniform_edges([lo, hi]: [f32; 2], bins: u32) -> Vec<f32> {
    let (mut lo, mut hi) = (lo, hi);
    if lo == hi {
        lo -= 0.5;
        hi += 0.5;
    }
    let width = hi - lo;
    let wide = width.to_bits() & 0x7fff_ffff == 0x7f80_0000;
    (0..=bins)
        .map(|j| {
            let t = j as f32 / bins as f32;
            let mut e = lo + width * t;
            if wide {
                e = (lo * (1.0 - t) + hi * t).clamp(lo, hi);
            }
            if j == 0 {
                e = lo;
            }
            if j == bins {
                e = hi;
            }
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_widening() {
        assert_eq!(step_out(1.0, true), f32::from_bits(1.0f32.to_bits() + 1));
        assert_eq!(
            step_out(-1.0, true),
            f32::from_bits((-1.0f32).to_bits() - 1)
        );
        assert_eq!(step_out(1.0, false), f32::from_bits(1.0f32.to_bits() - 1));
        assert_eq!(step_out(0.0, false), -f32::MIN_POSITIVE);
        assert_eq!(step_out(f32::MAX, true), f32::MAX);
        assert_eq!(widened([0.1, 0.2], false), [0.1, 0.2]);
        let [lo, hi] = widened([0.1, 0.2], true);
        assert!(lo < 0.1 && hi > 0.2);
        assert_eq!(unit(2.0, [2.0, 2.0], false), 0.5);
        assert!(unit(f32::NAN, [0.0, 1.0], false).is_nan());
        assert_eq!(unit(3e38, [-3e38, 3e38], false), 1.0);
        assert_eq!(uniform_edges([0.0, 4.0], 4), [0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(uniform_edges([1.0, 1.0], 1), [0.5, 1.5]);
    }
}
