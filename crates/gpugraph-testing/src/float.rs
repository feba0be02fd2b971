//! Float comparison under the oracles' IEEE rules: results the oracle defines exactly match
//! bit for bit (so `-0.0 != 0.0`), every NaN matching every NaN (WGSL does not fix NaN
//! payloads); results of a different summation order match within a bound the test states.

/// Bitwise equality, every NaN equal to every NaN.
pub fn same_float(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Asserts [`same_float`] row by row (and equal lengths), naming `what` and the first row
/// that differs.
pub fn assert_same_floats(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for k in 0..got.len() {
        assert!(
            same_float(got[k], want[k]),
            "{what}[{k}]: got {:?}, want {:?}",
            got[k],
            want[k]
        );
    }
}

/// Asserts `|got[k] - want[k]| <= bound[k]` for every row (NaN matches NaN only), naming
/// `what` and the first row outside its bound.
pub fn assert_close(what: &str, got: &[f32], want: &[f64], bound: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for k in 0..got.len() {
        let (g, w) = (got[k] as f64, want[k]);
        if w.is_nan() {
            assert!(g.is_nan(), "{what}[{k}]: got {g}, want NaN");
            continue;
        }
        assert!(
            (g - w).abs() <= bound[k],
            "{what}[{k}]: got {g}, want {w} ± {}",
            bound[k]
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_matches_nan_and_signed_zeros_differ() {
        assert!(same_float(f32::NAN, -f32::NAN));
        assert!(same_float(1.5, 1.5));
        assert!(!same_float(0.0, -0.0));
        assert!(!same_float(f32::NAN, 0.0));
    }

    #[test]
    #[should_panic(expected = "x[1]")]
    fn a_value_outside_its_bound_fails() {
        assert_close("x", &[1.0, 2.5], &[1.0, 2.0], &[0.0, 0.25]);
    }
}
