//! Exact conversion of `.npy` elements into the 32-bit type a command needs, and the message
//! naming the first value that would not convert exactly (with the `astype` to use).

use super::dtype::FileDtype;
use super::{Dtype, Target};

/// One element read from the file.
#[derive(Clone, Copy, Debug)]
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

/// Appends `bytes` (elements of `file`) as `out`; on the first inexact value returns its
/// index within `bytes` and the value.
pub(super) fn convert(
    file: FileDtype,
    out: Dtype,
    bytes: &[u8],
    data: &mut Vec<u8>,
) -> Result<(), (usize, Num)> {
    let same = matches!(
        (file, out),
        (FileDtype::U32, Dtype::U32) | (FileDtype::I32, Dtype::I32) | (FileDtype::F32, Dtype::F32)
    );
    if same {
        data.extend_from_slice(bytes);
        return Ok(());
    }
    for (i, b) in bytes.chunks_exact(file.size()).enumerate() {
        let value = element(file, b);
        let word = match (out, value) {
            (Dtype::U32, Num::Int(v)) => u32::try_from(v).ok(),
            (Dtype::I32, Num::Int(v)) => i32::try_from(v).ok().map(|v| v as u32),
            (Dtype::F32, Num::Float(v)) => {
                let r = v as f32;
                (v.is_nan() || f64::from(r) == v).then_some(r.to_bits())
            }
            (Dtype::U8, Num::Int(v)) => {
                data.push(u8::try_from(v).map_err(|_| (i, value))?);
                continue;
            }
            _ => None,
        };
        data.extend_from_slice(&word.ok_or((i, value))?.to_le_bytes());
    }
    Ok(())
}

fn element(file: FileDtype, b: &[u8]) -> Num {
    let int = |v: i128| Num::Int(v);
    match file {
        FileDtype::Bool => int(i128::from(b[0] != 0)),
        FileDtype::U8 => int(b[0].into()),
        FileDtype::I8 => int((b[0] as i8).into()),
        FileDtype::U16 => int(u16::from_le_bytes([b[0], b[1]]).into()),
        FileDtype::I16 => int(i16::from_le_bytes([b[0], b[1]]).into()),
        FileDtype::U32 => int(u32::from_le_bytes(b.try_into().unwrap()).into()),
        FileDtype::I32 => int(i32::from_le_bytes(b.try_into().unwrap()).into()),
        FileDtype::U64 => int(u64::from_le_bytes(b.try_into().unwrap()).into()),
        FileDtype::I64 => int(i64::from_le_bytes(b.try_into().unwrap()).into()),
        FileDtype::F32 => Num::Float(f32::from_le_bytes(b.try_into().unwrap()).into()),
        FileDtype::F64 => Num::Float(f64::from_le_bytes(b.try_into().unwrap())),
        // Complex bodies convert as their components (`FileDtype::component`); a whole
        // element stands for its real part.
        FileDtype::C64 => element(FileDtype::F32, &b[..4]),
        FileDtype::C128 => element(FileDtype::F64, &b[..8]),
    }
}

/// The message for the first value of `file` that does not convert exactly to `out`: the
/// value, where it is, what NumPy's `astype` would make of it.
pub(super) fn loss(
    value: Num,
    file: FileDtype,
    out: Dtype,
    index: usize,
    shape: &[usize],
    target: Target,
) -> String {
    let at = match shape {
        [_, k] if *k > 0 => format!("row {}, column {}", index / k, index % k),
        _ => format!("index {index}"),
    };
    let lead = match target {
        Target::U32 { what } => format!("{what} need uint32, but the {} value", file.name()),
        Target::Natural => format!("the {} value", file.name()),
        Target::Complex { what } => format!(
            "{what} needs float32 (re, im), but the {} value",
            file.name()
        ),
    };
    let first = format!(
        "the first value that does not convert exactly to {}",
        out.name()
    );
    match value {
        Num::Float(v) => {
            let r = f64::from(v as f32);
            format!(
                "{lead} {v:?} at {at} is not exactly a float32 (it would become {r:?}), {first}; save a.astype(np.float32) to accept the rounding"
            )
        }
        Num::Int(v) => {
            let (low, high) = match out {
                Dtype::I32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
                Dtype::U8 => (0, 255),
                _ => (0, i128::from(u32::MAX)),
            };
            let wrapped = match out {
                Dtype::I32 => (v as i32).to_string(),
                Dtype::U8 => (v as u8).to_string(),
                _ => (v as u32).to_string(),
            };
            let alternative = if out == Dtype::I32 && v > 0 && v <= i128::from(u32::MAX) {
                "; or save a.astype(np.uint32), which holds it"
            } else {
                ""
            };
            format!(
                "{lead} {v} at {at} is outside {}'s range {low}..={high}, {first}; a.astype(np.{}) would wrap it to {wrapped}{alternative}",
                out.name(),
                out.name()
            )
        }
    }
}
