//! Join key columns as u32 hash keys: integer columns only, mapped by one
//! [`KeyMapping`] chosen over the valid keys of both sides (so equal keys stay equal),
//! nulls as validity flags (a null key never matches).

use anyhow::{bail, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use gpugraph_gpgpu::hash::keys::KeyMapping;

/// A key column as the GPU reads it.
pub struct Keys {
    /// One u32 key per row (0 on null rows).
    pub words: Vec<u32>,
    /// One flag per row (1 valid, 0 null) when the column has nulls.
    pub valid: Option<Vec<u32>>,
}

/// Calls `f` with every row's key widened to i128 (`None` for nulls).
fn for_each(
    side: &str,
    flag: &str,
    name: &str,
    chunk: &ArrayRef,
    f: &mut dyn FnMut(Option<i128>),
) -> Result<()> {
    use DataType::*;
    match chunk.data_type() {
        UInt64 => chunk
            .as_primitive::<UInt64Type>()
            .iter()
            .for_each(|v| f(v.map(i128::from))),
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 => {
            let wide = arrow_cast::cast(chunk, &Int64)?;
            wide.as_primitive::<Int64Type>()
                .iter()
                .for_each(|v| f(v.map(i128::from)));
        }
        t => bail!(
            "{flag} {name}: the {side} key column has type {t}; join keys must be integer columns (Int8..Int64, UInt8..UInt64)"
        ),
    }
    Ok(())
}

/// The smallest and largest valid key of a column (`None` when every key is null).
pub fn range(
    side: &str,
    flag: &str,
    name: &str,
    chunks: &[ArrayRef],
) -> Result<Option<(i128, i128)>> {
    let mut out: Option<(i128, i128)> = None;
    for c in chunks {
        for_each(side, flag, name, c, &mut |v| {
            if let Some(v) = v {
                out = Some(out.map_or((v, v), |(a, b)| (a.min(v), b.max(v))));
            }
        })?;
    }
    Ok(out)
}

/// The mapping of both sides' ranges (an all-null side constrains nothing).
pub fn mapping(ranges: [Option<(i128, i128)>; 2]) -> Result<KeyMapping> {
    let (min, max) = ranges
        .into_iter()
        .flatten()
        .fold((0i128, 0i128), |(a, b), (lo, hi)| (a.min(lo), b.max(hi)));
    KeyMapping::for_range(min, max).map_err(|e| anyhow::anyhow!("--left-on/--right-on: {e}"))
}

/// The column's keys under `mapping` (which holds every valid key: [`range`] was checked).
pub fn words(
    side: &str,
    flag: &str,
    name: &str,
    chunks: &[ArrayRef],
    mapping: KeyMapping,
) -> Result<Keys> {
    let rows: usize = chunks.iter().map(|c| c.len()).sum();
    let nulls: usize = chunks.iter().map(|c| c.null_count()).sum();
    let mut words = Vec::with_capacity(rows);
    let mut valid = (nulls > 0).then(|| Vec::with_capacity(rows));
    for c in chunks {
        for_each(side, flag, name, c, &mut |v| {
            words.push(v.and_then(|v| mapping.map(v)).unwrap_or(0));
            if let Some(flags) = &mut valid {
                flags.push(u32::from(v.is_some()));
            }
        })?;
    }
    Ok(Keys { words, valid })
}
