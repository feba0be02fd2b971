//! The numpy entry points' native halves. Each takes contiguous 1-D arrays of the words the
//! primitive reads (the Python layer checks dtypes and views int32/float32 as uint32 words),
//! releases the GIL while [`gpugraph_host`] runs the primitive, and returns new arrays.

use gpugraph_gpgpu::{FftDirection, HistogramBins, KeyType, SortOptions, SortOrder};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{context, host_error};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort_words, m)?)?;
    m.add_function(wrap_pyfunction!(cumsum_words, m)?)?;
    m.add_function(wrap_pyfunction!(compact_words, m)?)?;
    m.add_function(wrap_pyfunction!(histogram, m)?)?;
    m.add_function(wrap_pyfunction!(group_by_mean, m)?)?;
    m.add_function(wrap_pyfunction!(fft2, m)?)?;
    Ok(())
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, what: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|e| PyValueError::new_err(format!("{what}: {e} (pass a contiguous array)")))
}

/// Stable sort of `keys` (the words of `key_type` "uint32" | "int32" | "float32" keys);
/// returns the sorted words, or the source row ids when `row_ids`.
#[pyfunction]
#[pyo3(signature = (keys, key_type, descending, row_ids))]
fn sort_words<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'py, u32>,
    key_type: &str,
    descending: bool,
    row_ids: bool,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let key_type = match key_type {
        "uint32" => KeyType::Uint32,
        "int32" => KeyType::Int32,
        "float32" => KeyType::Float32,
        other => return Err(PyValueError::new_err(format!("unknown key type '{other}'"))),
    };
    let options = SortOptions {
        order: if descending {
            SortOrder::Descending
        } else {
            SortOrder::Ascending
        },
        key_bits: 32,
    };
    let words = slice(&keys, "keys")?;
    let ctx = context()?;
    let out = py
        .detach(|| {
            if row_ids {
                gpugraph_host::argsort(ctx, words, key_type, options)
            } else {
                gpugraph_host::sort(ctx, words, key_type, options)
            }
        })
        .map_err(host_error)?;
    Ok(out.into_pyarray(py))
}

/// Inclusive prefix sums of 32-bit words, wrapping modulo 2^32.
#[pyfunction]
fn cumsum_words<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u32>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let words = slice(&values, "values")?;
    let ctx = context()?;
    let out = py
        .detach(|| gpugraph_host::cumsum(ctx, words))
        .map_err(host_error)?;
    Ok(out.into_pyarray(py))
}

/// The 32-bit `values` whose `flags` word is nonzero, in order.
#[pyfunction]
fn compact_words<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u32>,
    flags: PyReadonlyArray1<'py, u32>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let (v, f) = (slice(&values, "values")?, slice(&flags, "mask")?);
    let ctx = context()?;
    let out = py
        .detach(|| gpugraph_host::compact(ctx, v, f))
        .map_err(host_error)?;
    Ok(out.into_pyarray(py))
}

/// Counts of float32 `values` in `edges` bins, or in `bins` uniform bins over `[lo, hi]`
/// (`hi` included); returns `(counts, ignored)`.
#[pyfunction]
#[pyo3(signature = (values, edges=None, bins=0, lo=0.0, hi=0.0))]
fn histogram<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f32>,
    edges: Option<PyReadonlyArray1<'py, f32>>,
    bins: u32,
    lo: f32,
    hi: f32,
) -> PyResult<(Bound<'py, PyArray1<u32>>, u32)> {
    let bins = match &edges {
        Some(e) => HistogramBins::Edges(slice(e, "edges")?.to_vec()),
        None => HistogramBins::Uniform {
            min: lo,
            max: hi,
            bins,
        },
    };
    let v = slice(&values, "values")?;
    let ctx = context()?;
    let out = py
        .detach(|| gpugraph_host::histogram(ctx, v, bins))
        .map_err(host_error)?;
    Ok((out.counts.into_pyarray(py), out.ignored))
}

/// Counts and means of float32 `values` grouped by dense uint32 `codes` in `0..groups`;
/// returns `(counts, means, ignored)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn group_by_mean<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray1<'py, u32>,
    values: PyReadonlyArray1<'py, f32>,
    groups: u32,
) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f32>>, u32)> {
    let (c, v) = (slice(&codes, "keys")?, slice(&values, "values")?);
    let ctx = context()?;
    let out = py
        .detach(|| gpugraph_host::group_by_mean(ctx, c, v, groups))
        .map_err(host_error)?;
    Ok((
        out.counts.into_pyarray(py),
        out.means.into_pyarray(py),
        out.ignored,
    ))
}

/// The 2-D FFT of a `height × width` complex field given as interleaved float32 pairs.
#[pyfunction]
fn fft2<'py>(
    py: Python<'py>,
    field: PyReadonlyArray1<'py, f32>,
    height: usize,
    width: usize,
    inverse: bool,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let f = slice(&field, "field")?;
    let direction = if inverse {
        FftDirection::Inverse
    } else {
        FftDirection::Forward
    };
    let ctx = context()?;
    let out = py
        .detach(|| gpugraph_host::fft2(ctx, f, (height, width), direction))
        .map_err(host_error)?;
    Ok(out.into_pyarray(py))
}
