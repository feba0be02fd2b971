//! Helpers shared by the analysis-primitive tests (reduce, histogram, grid, group): typed
//! float views, chunked uploads and tolerance checks. Builds on `common`.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

use gpugraph_command::wgpu;
use gpugraph_command::{CommandGraph, DataView, GpuContext, VectorFormat, VectorView};
use rand::Rng;

use crate::common::*;
pub use gpugraph_testing::{assert_close, assert_same_floats, same_float};

/// f32 values as u32 bits (for `upload`).
pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// u32 bits as f32 values (after `read_buffer`).
pub fn floats(v: &[u32]) -> Vec<f32> {
    v.iter().map(|&b| f32::from_bits(b)).collect()
}

/// Uploads `words` (rows of `format`, `per_row` words each) split into chunks of `lens`
/// rows, each chunk in its own buffer after `lead` poison rows; returns the vector view.
pub fn chunked(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    name: &str,
    words: &[u32],
    format: VectorFormat,
    lens: &[usize],
    lead: usize,
) -> VectorView {
    let per_row = (format.byte_size() / 4) as usize;
    let mut start = 0;
    let mut chunks = Vec::new();
    for (ci, &len) in lens.iter().enumerate() {
        let mut data = vec![POISON; lead * per_row];
        data.extend_from_slice(&words[start * per_row..(start + len) * per_row]);
        data.extend_from_slice(&[POISON; 3]);
        let b = upload(ctx, &data);
        chunks.push(import_typed(
            g,
            &format!("{name}{ci}"),
            &b,
            format,
            lead as u64,
            len as u64,
        ));
        start += len;
    }
    VectorView::from_chunks(chunks)
}

/// A poisoned output buffer of `len` rows at row `offset` inside it; returns (buffer, view).
pub fn output(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    id: &str,
    format: VectorFormat,
    offset: u64,
    len: u64,
) -> (wgpu::Buffer, DataView) {
    let per_row = (format.byte_size() / 4) as usize;
    let b = upload(
        ctx,
        &vec![POISON; (offset as usize + len as usize + 2) * per_row],
    );
    let v = import_typed(g, id, &b, format, offset, len);
    (b, v)
}

/// Rows `offset..offset+len` of an output (one word per row) after checking the rows
/// around them are still poison.
pub fn read_out(ctx: &GpuContext, b: &wgpu::Buffer, offset: usize, len: usize) -> Vec<u32> {
    let all = read_buffer(ctx, b);
    assert!(
        all[..offset].iter().all(|&w| w == POISON),
        "rows before the view written"
    );
    assert!(
        all[offset + len..].iter().all(|&w| w == POISON),
        "rows after the view written"
    );
    all[offset..offset + len].to_vec()
}

/// Random f32 in [-100, 100) with NaN, ±inf, ±0 and repeated values sprinkled in.
pub fn awkward_floats(r: &mut impl Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match r.random_range(0..40) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => -0.0,
            4 => 0.0,
            5 => 42.5,
            _ => r.random_range(-100.0f32..100.0),
        })
        .collect()
}

/// Deterministic sums equal the fixed-point oracle bit for bit and are within its error bound
/// of the exact sum; means are sum / count up to the device's division accuracy.
pub fn check_deterministic(
    label: &str,
    sum: &[f32],
    mean: &[f32],
    want: &gpugraph_gpgpu::group::cpu::Aggregates,
) {
    for k in 0..sum.len() {
        assert_eq!(
            sum[k].to_bits(),
            want.fixed_sum[k].to_bits(),
            "{label}: deterministic sum[{k}] = {} but the fixed-point oracle gives {}",
            sum[k],
            want.fixed_sum[k]
        );
        if want.sum[k].is_finite() && sum[k].is_finite() {
            // Each term is off by at most half a unit of 2^(e-31), e ≤ exponent(max|v|) + 1,
            // plus the final rounding.
            let unit = 2f64.powi(-31) * 2.0 * want.max_abs(k) as f64;
            let floor = 2f64.powi(-126);
            let bound = want.count[k] as f64 * (unit + floor) + want.sum[k].abs() * 2f64.powi(-24);
            assert!(
                (sum[k] as f64 - want.sum[k]).abs() <= bound + floor,
                "{label}: deterministic sum[{k}] {} vs exact {} (bound {bound})",
                sum[k],
                want.sum[k]
            );
        }
        if want.count[k] == 0 {
            assert!(mean[k].is_nan(), "{label}: empty deterministic mean is NaN");
        } else {
            let q = want.fixed_sum[k] / want.count[k] as f32;
            assert!(
                (mean[k] - q).abs() <= 3.0 * f32::EPSILON * q.abs(),
                "{label}: deterministic mean[{k}] {} vs sum/count {q}",
                mean[k]
            );
        }
    }
}
