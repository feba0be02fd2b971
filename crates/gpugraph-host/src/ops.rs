//! The one-shot calls: each uploads its inputs, adds one gpgpu algorithm to a fresh graph,
//! runs it once and reads the results back. The algorithms' contracts (orders, NaN handling,
//! wrapping) are theirs; this file only moves data and checks lengths.

use gpugraph_command::{CommandGraph, GpuContext, VectorFormat};
use gpugraph_gpgpu::{
    AggregateOutputs, Fft2d, FftDirection, GroupAggregation, Histogram, HistogramBins, KeyType,
    Scan, SortOptions,
};

use crate::{check_aligned, check_rows, import, output, read_words, run, upload, HostError};

/// Stable sort of 32-bit `keys` of `key_type` (the words of u32, i32 or f32 keys) on the GPU,
/// optionally carrying `values` (32-bit words, moved bit for bit) or, when `row_ids`, producing
/// the source row of each sorted key. Returns the sorted keys and the carried values or row
/// ids. Float keys follow `gpugraph_gpgpu::SortOptions`: `-inf < … < -0 < +0 < … < +inf`, every
/// NaN last in input order, written as the canonical NaN `0x7fc00000`.
pub fn sort_words(
    ctx: &GpuContext,
    keys: &[u32],
    (key_type, options): (KeyType, SortOptions),
    values: Option<&[u32]>,
    row_ids: bool,
) -> Result<(Vec<u32>, Option<Vec<u32>>), HostError> {
    let n = check_rows("keys", keys.len())?;
    if let Some(v) = values {
        check_aligned(("values", v.len()), ("keys", keys.len()))?;
    }
    let carried = values.is_some() || row_ids;
    if n == 0 {
        return Ok((Vec::new(), carried.then(Vec::new)));
    }
    let kb = upload(ctx, "keys", bytemuck::cast_slice(keys))?;
    let vb = values
        .map(|v| upload(ctx, "values", bytemuck::cast_slice(v)))
        .transpose()?;
    let out_k = output(ctx, "sorted-keys", n * 4);
    let out_v = carried.then(|| output(ctx, "sorted-values", n * 4));
    let mut g = CommandGraph::new("host-sort", &ctx.device);
    gpugraph_gpgpu::sort::add_sort_of_typed_buffers(
        &mut g,
        "sort",
        n,
        (key_type, options),
        &kb,
        vb.as_ref(),
        &out_k,
        out_v.as_ref(),
    )?;
    run(ctx, g, "sort")?;
    let sorted = read_words(ctx, &out_k, n)?;
    let moved = out_v.map(|b| read_words(ctx, &b, n)).transpose()?;
    Ok((sorted, moved))
}

/// The stable sort of `keys` (words of `key_type`) under `options`: see [`sort_words`].
pub fn sort(
    ctx: &GpuContext,
    keys: &[u32],
    key_type: KeyType,
    options: SortOptions,
) -> Result<Vec<u32>, HostError> {
    Ok(sort_words(ctx, keys, (key_type, options), None, false)?.0)
}

/// Source row ids (u32) of the stable order of `keys` (words of `key_type`) under `options`.
pub fn argsort(
    ctx: &GpuContext,
    keys: &[u32],
    key_type: KeyType,
    options: SortOptions,
) -> Result<Vec<u32>, HostError> {
    let (_, rows) = sort_words(ctx, keys, (key_type, options), None, true)?;
    Ok(rows.unwrap_or_default())
}

/// Inclusive prefix sums of 32-bit words, wrapping modulo 2^32 (so also the wrapping
/// two's-complement sums of int32 words).
pub fn cumsum(ctx: &GpuContext, values: &[u32]) -> Result<Vec<u32>, HostError> {
    let n = check_rows("values", values.len())?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let input = upload(ctx, "cumsum-input", bytemuck::cast_slice(values))?;
    let out = output(ctx, "cumsum-output", n * 4);
    let mut g = CommandGraph::new("host-cumsum", &ctx.device);
    Scan {
        id: "cumsum".into(),
        input: import(&mut g, "cumsum-input", &input, VectorFormat::Uint32, n)?.into(),
        output: import(&mut g, "cumsum-output", &out, VectorFormat::Uint32, n)?.into(),
        inclusive: true,
        segment_starts: None,
    }
    .add_to_graph(&mut g)?;
    run(ctx, g, "cumsum")?;
    read_words(ctx, &out, n)
}

/// The 32-bit `values` whose `flags` word is nonzero, in source order (stable compaction).
pub fn compact(ctx: &GpuContext, values: &[u32], flags: &[u32]) -> Result<Vec<u32>, HostError> {
    let n = check_rows("values", values.len())?;
    check_aligned(("mask", flags.len()), ("values", values.len()))?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let bv = upload(ctx, "values", bytemuck::cast_slice(values))?;
    let bf = upload(ctx, "flags", bytemuck::cast_slice(flags))?;
    let out = output(ctx, "survivors", n * 4);
    let count = output(ctx, "count", 4);
    let g = gpugraph_gpgpu::compact::compaction_graph(
        &ctx.device,
        "host-compact",
        &bv,
        &bf,
        &out,
        &count,
        0,
        n,
        n,
    )?;
    run(ctx, g, "compact")?;
    let selected = read_words(ctx, &count, 1)?[0] as u64;
    read_words(ctx, &out, selected)
}

/// Bin counts of a histogram and the values it left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistogramCounts {
    /// One count per bin.
    pub counts: Vec<u32>,
    /// Values that were non-finite or outside the bins.
    pub ignored: u32,
}

/// Counts `values` per bin (see `gpugraph_gpgpu::HistogramBins`: uniform bins include their
/// upper edge `max`; edge bins are `[e_i, e_{i+1})`, the last one closed).
pub fn histogram(
    ctx: &GpuContext,
    values: &[f32],
    bins: HistogramBins,
) -> Result<HistogramCounts, HostError> {
    let n = check_rows("values", values.len())?;
    let bin_count = bins.bin_count();
    if n == 0 {
        if let HistogramBins::Edges(edges) = &bins {
            gpugraph_gpgpu::histogram::check_edges("histogram", edges)?;
        }
        return Ok(HistogramCounts {
            counts: vec![0; bin_count as usize],
            ignored: 0,
        });
    }
    let input = upload(ctx, "histogram-input", bytemuck::cast_slice(values))?;
    let counts = output(ctx, "histogram-counts", bin_count * 4);
    let ignored = output(ctx, "histogram-ignored", 4);
    let mut g = CommandGraph::new("host-histogram", &ctx.device);
    Histogram {
        id: "histogram".into(),
        input: import(&mut g, "histogram-input", &input, VectorFormat::Float32, n)?.into(),
        mask: None,
        bins,
        counts: import(
            &mut g,
            "histogram-counts",
            &counts,
            VectorFormat::Uint32,
            bin_count,
        )?,
        cumulative: None,
        ignored: Some(import(
            &mut g,
            "histogram-ignored",
            &ignored,
            VectorFormat::Uint32,
            1,
        )?),
        invalid_edges: None,
    }
    .add_to_graph(&mut g)?;
    run(ctx, g, "histogram")?;
    Ok(HistogramCounts {
        counts: read_words(ctx, &counts, bin_count)?,
        ignored: read_words(ctx, &ignored, 1)?[0],
    })
}

/// Per-group counts and means of a group-by.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupMeans {
    /// Rows per group code.
    pub counts: Vec<u32>,
    /// Mean value per group code (NaN for a group without rows).
    pub means: Vec<f32>,
    /// Rows with a code ≥ the group count or a non-finite value (left out).
    pub ignored: u32,
}

/// Counts and means of `values` grouped by dense `codes` in `0..groups` (at least 1 group).
pub fn group_by_mean(
    ctx: &GpuContext,
    codes: &[u32],
    values: &[f32],
    groups: u32,
) -> Result<GroupMeans, HostError> {
    let n = check_rows("codes", codes.len())?;
    check_aligned(("values", values.len()), ("codes", codes.len()))?;
    let g_rows = groups as u64;
    if n == 0 {
        return Ok(GroupMeans {
            counts: vec![0; groups as usize],
            means: vec![f32::NAN; groups as usize],
            ignored: 0,
        });
    }
    let bc = upload(ctx, "codes", bytemuck::cast_slice(codes))?;
    let bv = upload(ctx, "values", bytemuck::cast_slice(values))?;
    let count = output(ctx, "group-count", g_rows * 4);
    let mean = output(ctx, "group-mean", g_rows * 4);
    let ignored = output(ctx, "group-ignored", 4);
    let mut g = CommandGraph::new("host-group-mean", &ctx.device);
    GroupAggregation {
        id: "group-mean".into(),
        codes: import(&mut g, "codes", &bc, VectorFormat::Uint32, n)?.into(),
        values: Some(import(&mut g, "values", &bv, VectorFormat::Float32, n)?.into()),
        mask: None,
        group_count: groups,
        outputs: AggregateOutputs {
            count: Some(import(
                &mut g,
                "group-count",
                &count,
                VectorFormat::Uint32,
                g_rows,
            )?),
            mean: Some(import(
                &mut g,
                "group-mean",
                &mean,
                VectorFormat::Float32,
                g_rows,
            )?),
            ..Default::default()
        },
        ignored: Some(import(
            &mut g,
            "group-ignored",
            &ignored,
            VectorFormat::Uint32,
            1,
        )?),
    }
    .add_to_graph(&mut g)?;
    run(ctx, g, "group_by_mean")?;
    Ok(GroupMeans {
        counts: read_words(ctx, &count, g_rows)?,
        means: bytemuck::pod_collect_to_vec(&read_words(ctx, &mean, g_rows)?),
        ignored: read_words(ctx, &ignored, 1)?[0],
    })
}

/// The 2-D FFT of a `height × width` row-major complex field given as interleaved
/// `(re, im)` float32 pairs; both sides powers of two. Forward is unscaled; inverse is
/// scaled by `1 / (height · width)` (numpy's `fft2` / `ifft2` conventions).
pub fn fft2(
    ctx: &GpuContext,
    field: &[f32],
    (height, width): (usize, usize),
    direction: FftDirection,
) -> Result<Vec<f32>, HostError> {
    for (what, got) in [("height", height), ("width", width)] {
        if !got.is_power_of_two() {
            return Err(HostError::NotPowerOfTwo { what, got });
        }
    }
    let n = check_rows("field", height * width)?;
    check_aligned(
        ("field (floats)", field.len()),
        ("height × width × 2", height * width * 2),
    )?;
    let input = upload(ctx, "fft2-input", bytemuck::cast_slice(field))?;
    let out = output(ctx, "fft2-output", n * 8);
    let mut g = CommandGraph::new("host-fft2", &ctx.device);
    Fft2d {
        id: "fft2".into(),
        input: import(&mut g, "fft2-input", &input, VectorFormat::Float32x2, n)?,
        output: import(&mut g, "fft2-output", &out, VectorFormat::Float32x2, n)?,
        width: width as u64,
        height: height as u64,
        direction,
    }
    .add_to_graph(&mut g)?;
    run(ctx, g, "fft2")?;
    Ok(bytemuck::pod_collect_to_vec(&read_words(ctx, &out, 2 * n)?))
}
