//! Every one-shot call against the gpgpu CPU oracles on random inputs at boundary sizes
//! (around workgroup and tile sizes), empty inputs, and the typed errors for misaligned or
//! invalid inputs. Runs on the real GPU path (lavapipe on CI).

use gpugraph_gpgpu::{
    group, histogram, scan, sort, FftDirection, HistogramBins, KeyType, SortOptions, SortOrder,
};
use gpugraph_host::HostError;
use gpugraph_testing::{ctx, rng};
use rand::Rng;

const SIZES: [usize; 9] = [0, 1, 2, 255, 256, 257, 1025, 4097, 70_001];

#[test]
fn sort_and_argsort_match_the_oracle_for_each_key_type_and_order() {
    let ctx = ctx();
    for (k, &n) in SIZES.iter().enumerate() {
        let mut r = rng(k as u64);
        for key_type in [KeyType::Uint32, KeyType::Int32, KeyType::Float32] {
            let keys: Vec<u32> = (0..n)
                .map(|_| match key_type {
                    KeyType::Float32 => (r.random::<f32>() * 200.0 - 100.0).to_bits(),
                    _ => r.random_range(0..1000u32).wrapping_mul(0x9E37_79B9),
                })
                .collect();
            for order in [SortOrder::Ascending, SortOrder::Descending] {
                let options = SortOptions {
                    order,
                    key_bits: 32,
                };
                let (want_rows, want_keys) = sort::cpu::sort_typed(&keys, key_type, options);
                let got = gpugraph_host::sort(&ctx, &keys, key_type, options).unwrap();
                assert_eq!(got, want_keys, "{key_type:?} {order:?} n={n}");
                let rows = gpugraph_host::argsort(&ctx, &keys, key_type, options).unwrap();
                assert_eq!(rows, want_rows, "{key_type:?} {order:?} n={n} row ids");
            }
        }
    }
}

#[test]
fn sort_carries_values_and_checks_their_length() {
    let ctx = ctx();
    let keys = [3u32, 1, 2, 1];
    let values = [30u32, 10, 20, 11];
    let options = SortOptions::default();
    let (k, v) = gpugraph_host::sort_words(
        &ctx,
        &keys,
        (KeyType::Uint32, options),
        Some(&values),
        false,
    )
    .unwrap();
    assert_eq!((k, v.unwrap()), (vec![1, 1, 2, 3], vec![10, 11, 20, 30]));
    let err = gpugraph_host::sort_words(
        &ctx,
        &keys,
        (KeyType::Uint32, options),
        Some(&values[..3]),
        false,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            HostError::Length {
                got: 3,
                expected: 4,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn cumsum_and_compact_match_the_oracles() {
    let ctx = ctx();
    for (k, &n) in SIZES.iter().enumerate() {
        let mut r = rng(100 + k as u64);
        let values: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let flags: Vec<u32> = (0..n)
            .map(|_| (r.random::<f32>() < 0.3) as u32 * 5)
            .collect();
        let sums = gpugraph_host::cumsum(&ctx, &values).unwrap();
        assert_eq!(sums, scan::cpu::scan(&values, None, true), "cumsum n={n}");
        let kept = gpugraph_host::compact(&ctx, &values, &flags).unwrap();
        let want: Vec<u32> = values
            .iter()
            .zip(&flags)
            .filter(|(_, &f)| f != 0)
            .map(|(&v, _)| v)
            .collect();
        assert_eq!(kept, want, "compact n={n}");
    }
    let err = gpugraph_host::compact(&ctx, &[1, 2], &[1]).unwrap_err();
    assert!(matches!(err, HostError::Length { .. }), "{err}");
}

#[test]
fn histogram_and_group_means_match_the_oracles() {
    let ctx = ctx();
    for (k, &n) in SIZES.iter().enumerate() {
        let mut r = rng(200 + k as u64);
        let values: Vec<f32> = (0..n)
            .map(|i| match i % 97 {
                0 => f32::NAN,
                1 => 150.0,
                _ => r.random::<f32>() * 100.0,
            })
            .collect();
        for bins in [
            HistogramBins::Uniform {
                min: 0.0,
                max: 100.0,
                bins: 13,
            },
            HistogramBins::Edges(vec![0.0, 1.0, 10.0, 50.0, 100.0]),
        ] {
            let (counts, ignored) = histogram::cpu::histogram(&values, None, &bins, None);
            let got = gpugraph_host::histogram(&ctx, &values, bins.clone()).unwrap();
            assert_eq!(
                (got.counts, got.ignored),
                (counts, ignored),
                "{bins:?} n={n}"
            );
        }
        let codes: Vec<u32> = (0..n).map(|_| r.random_range(0..40)).collect();
        let want = group::cpu::group(&codes, Some(&values), None, 37);
        let got = gpugraph_host::group_by_mean(&ctx, &codes, &values, 37).unwrap();
        assert_eq!(got.counts, want.count, "group counts n={n}");
        assert_eq!(got.ignored, want.ignored, "group ignored n={n}");
        for g in 0..37 {
            let mean = want.sum[g] / want.count[g] as f64;
            let bound = 1e-5 * (want.abs_sum[g] / want.count[g].max(1) as f64) + 1e-6;
            if want.count[g] == 0 {
                assert!(got.means[g].is_nan(), "empty group {g} mean");
            } else {
                assert!(
                    (got.means[g] as f64 - mean).abs() <= bound,
                    "group {g} mean {} vs {mean} (n={n})",
                    got.means[g]
                );
            }
        }
    }
    let err =
        gpugraph_host::histogram(&ctx, &[1.0], HistogramBins::Edges(vec![2.0, 1.0])).unwrap_err();
    assert!(matches!(err, HostError::Algorithm(_)), "{err}");
}

#[test]
fn fft2_matches_the_oracle_and_refuses_other_sides() {
    let ctx = ctx();
    for (h, w) in [(1, 1), (1, 8), (4, 4), (16, 64), (128, 32)] {
        let mut r = rng((h * w) as u64);
        let field: Vec<f32> = (0..2 * h * w).map(|_| r.random::<f32>() - 0.5).collect();
        for (direction, inverse) in [
            (FftDirection::Forward, false),
            (FftDirection::Inverse, true),
        ] {
            let got = gpugraph_host::fft2(&ctx, &field, (h, w), direction).unwrap();
            let want = gpugraph_gpgpu::fft::cpu::fft2d(
                &gpugraph_gpgpu::fft::cpu::from_interleaved(&field),
                h,
                w,
                inverse,
            );
            let scale = want
                .iter()
                .map(|c| c[0].abs().max(c[1].abs()))
                .fold(0.0, f64::max);
            for (i, c) in want.iter().enumerate() {
                for part in 0..2 {
                    let err = (got[2 * i + part] as f64 - c[part]).abs();
                    assert!(
                        err <= 1e-5 * scale * ((h * w) as f64).log2().max(1.0) + 1e-6,
                        "{h}x{w} {direction:?} element {i}: {} vs {}",
                        got[2 * i + part],
                        c[part]
                    );
                }
            }
        }
    }
    let err = gpugraph_host::fft2(&ctx, &[0.0; 12], (2, 3), FftDirection::Forward).unwrap_err();
    assert!(
        matches!(
            err,
            HostError::NotPowerOfTwo {
                what: "width",
                got: 3
            }
        ),
        "{err}"
    );
}
