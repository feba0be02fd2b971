//! Sort keys as order-preserving words: every row of a lexicographic ordering becomes a fixed
//! number of `u32` words whose unsigned lexicographic order is the ordering's (DataFusion's
//! `SortOptions`: direction and null placement per key), so the device compares rows without
//! knowing their types. Rows with equal words are ordered by their position in the input (the
//! selection appends the row index as a last word), which makes the GPU's answer and the
//! oracle's ([`order`], [`select_cpu`]) the same rows in the same order.
//!
//! Words per key: 1 for 8–32-bit integers, dates, booleans and `f32`; 2 for 64-bit integers,
//! timestamps and `f64`; 4 for `Decimal128`; plus one leading null word when the column is
//! nullable. Signed integers flip their sign bit, floats map to IEEE-754's total order (as
//! Arrow's sorts and DataFusion's row format do: `-NaN < -inf < … < -0 < +0 < … < +inf <
//! NaN`), and a descending key complements its value words (its null word keeps the key's
//! `nulls_first`).

use datafusion::arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, DurationMicrosecondType,
    DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};

/// Most key words a row may have (the selection kernel's `MAX_WORDS` less the row word).
pub const MAX_KEY_WORDS: usize = 15;

/// How one sort key's values become words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Code {
    /// A signed integer of at most 32 bits: one word, sign bit flipped.
    I32,
    /// An unsigned integer of at most 32 bits or a boolean: one word.
    U32,
    /// A signed 64-bit integer: two words, sign bit flipped.
    I64,
    /// An unsigned 64-bit integer: two words.
    U64,
    /// `f32` in total order: one word.
    F32,
    /// `f64` in total order: two words.
    F64,
    /// `i128` (decimal unscaled values): four words, sign bit flipped.
    I128,
}

impl Code {
    fn of(dt: &DataType) -> Option<Code> {
        use DataType::*;
        Some(match dt {
            Int8 | Int16 | Int32 | Date32 | Time32(_) => Code::I32,
            UInt8 | UInt16 | UInt32 | Boolean => Code::U32,
            Int64 | Date64 | Timestamp(_, _) | Time64(_) | Duration(_) => Code::I64,
            UInt64 => Code::U64,
            Float32 => Code::F32,
            Float64 => Code::F64,
            Decimal128(_, _) => Code::I128,
            _ => return None,
        })
    }

    fn words(self) -> usize {
        match self {
            Code::I32 | Code::U32 | Code::F32 => 1,
            Code::I64 | Code::U64 | Code::F64 => 2,
            Code::I128 => 4,
        }
    }
}

/// One sort key's encoding: its type, direction, null placement and whether it has a null
/// word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLayout {
    data_type: DataType,
    code: Code,
    descending: bool,
    nulls_first: bool,
    nullable: bool,
}

impl KeyLayout {
    /// The layout of a key of type `data_type`, or why the GPU top-k cannot order it.
    pub fn new(
        data_type: &DataType,
        descending: bool,
        nulls_first: bool,
        nullable: bool,
    ) -> Result<Self, String> {
        let code = Code::of(data_type).ok_or_else(|| {
            format!("type {data_type}: the GPU top-k orders numbers, dates, times and booleans")
        })?;
        Ok(Self {
            data_type: data_type.clone(),
            code,
            descending,
            nulls_first,
            nullable,
        })
    }

    /// Words per row of this key.
    pub fn words(&self) -> usize {
        self.code.words() + usize::from(self.nullable)
    }
}

/// One batch's keys in word planes: `planes[w][r]` is word `w` of row `r` (word 0 the most
/// significant), with what the selection needs to skip digits that never vary: the first
/// row's words and, per word, the bits in which some row differs from it.
#[derive(Clone, Debug, Default)]
pub struct Encoded {
    /// Word planes, one per key word, each of the batch's length.
    pub planes: Vec<Vec<u32>>,
    /// Word `w` of the first row (0 without rows).
    pub first: Vec<u32>,
    /// Bits of word `w` in which some row differs from the first.
    pub vary: Vec<u32>,
}

impl Encoded {
    /// The planes `planes` (equal lengths) with their first row and varying bits.
    pub fn from_planes(planes: Vec<Vec<u32>>) -> Self {
        let first: Vec<u32> = planes
            .iter()
            .map(|p| p.first().copied().unwrap_or(0))
            .collect();
        let vary = planes
            .iter()
            .zip(&first)
            .map(|(p, f)| p.iter().fold(0, |v, w| v | (w ^ f)))
            .collect();
        Self {
            planes,
            first,
            vary,
        }
    }

    /// Rows encoded.
    pub fn rows(&self) -> usize {
        self.planes.first().map_or(0, Vec::len)
    }

    /// Bits of each word in which some row of `parts` differs from another (0 everywhere
    /// without rows), and one row's words, which agree with every row outside those bits.
    pub fn merged(parts: &[Encoded], words: usize) -> (Vec<u32>, Vec<u32>) {
        let mut first: Option<Vec<u32>> = None;
        let mut vary = vec![0u32; words];
        for p in parts.iter().filter(|p| p.rows() > 0) {
            let f = first.get_or_insert_with(|| p.first.clone());
            for w in 0..words {
                vary[w] |= p.vary[w] | (p.first[w] ^ f[w]);
            }
        }
        (first.unwrap_or_else(|| vec![0; words]), vary)
    }
}

/// Total words per row of `layouts`.
pub fn key_words(layouts: &[KeyLayout]) -> usize {
    layouts.iter().map(KeyLayout::words).sum()
}

/// Writes value `bits` (the code's words, most significant first, in the low bits of a u128)
/// of `array` into `planes`, complemented when descending; nulls write 0.
fn fill<T: ArrowPrimitiveType>(
    array: &dyn Array,
    layout: &KeyLayout,
    planes: &mut [Vec<u32>],
    bits: impl Fn(T::Native) -> u128,
) {
    let values = array.as_primitive::<T>();
    let words = layout.code.words();
    let flip = if layout.descending { u32::MAX } else { 0 };
    for (r, v) in values.iter().enumerate() {
        let b = v.map(&bits);
        for (i, plane) in planes.iter_mut().enumerate().take(words) {
            plane[r] = match b {
                Some(b) => (b >> (32 * (words - 1 - i))) as u32 ^ flip,
                None => 0,
            };
        }
    }
}

fn f32_bits(v: f32) -> u128 {
    let b = v.to_bits();
    (if b >> 31 == 1 { !b } else { b | 1 << 31 }) as u128
}

fn f64_bits(v: f64) -> u128 {
    let b = v.to_bits();
    (if b >> 63 == 1 { !b } else { b | 1 << 63 }) as u128
}

fn i32_bits(v: i32) -> u128 {
    (v as u32 ^ 1 << 31) as u128
}

fn i64_bits(v: i64) -> u128 {
    (v as u64 ^ 1 << 63) as u128
}

/// One key's words for `array` into `planes` (the key's words only).
fn encode_key(layout: &KeyLayout, array: &ArrayRef, planes: &mut [Vec<u32>]) -> Result<(), String> {
    if array.data_type() != &layout.data_type {
        return Err(format!(
            "a sort key evaluated to {}, planned as {}",
            array.data_type(),
            layout.data_type
        ));
    }
    let (null_plane, planes) = if layout.nullable {
        let (n, rest) = planes.split_at_mut(1);
        (Some(&mut n[0]), rest)
    } else {
        (None, planes)
    };
    match null_plane {
        Some(plane) => {
            let (null, valid) = if layout.nulls_first { (0, 1) } else { (1, 0) };
            for (r, w) in plane.iter_mut().enumerate() {
                *w = if array.is_null(r) { null } else { valid };
            }
        }
        None if array.null_count() > 0 => {
            return Err("a sort key planned without nulls holds nulls".into());
        }
        None => {}
    }
    let a = array.as_ref();
    use DataType::*;
    match layout.data_type {
        Int8 => fill::<Int8Type>(a, layout, planes, |v| i32_bits(v as i32)),
        Int16 => fill::<Int16Type>(a, layout, planes, |v| i32_bits(v as i32)),
        Int32 => fill::<Int32Type>(a, layout, planes, i32_bits),
        Date32 => fill::<Date32Type>(a, layout, planes, i32_bits),
        Time32(TimeUnit::Second) => fill::<Time32SecondType>(a, layout, planes, i32_bits),
        Time32(_) => fill::<Time32MillisecondType>(a, layout, planes, i32_bits),
        UInt8 => fill::<UInt8Type>(a, layout, planes, |v| v as u128),
        UInt16 => fill::<UInt16Type>(a, layout, planes, |v| v as u128),
        UInt32 => fill::<UInt32Type>(a, layout, planes, |v| v as u128),
        UInt64 => fill::<UInt64Type>(a, layout, planes, |v| v as u128),
        Int64 => fill::<Int64Type>(a, layout, planes, i64_bits),
        Date64 => fill::<Date64Type>(a, layout, planes, i64_bits),
        Timestamp(TimeUnit::Second, _) => fill::<TimestampSecondType>(a, layout, planes, i64_bits),
        Timestamp(TimeUnit::Millisecond, _) => {
            fill::<TimestampMillisecondType>(a, layout, planes, i64_bits)
        }
        Timestamp(TimeUnit::Microsecond, _) => {
            fill::<TimestampMicrosecondType>(a, layout, planes, i64_bits)
        }
        Timestamp(TimeUnit::Nanosecond, _) => {
            fill::<TimestampNanosecondType>(a, layout, planes, i64_bits)
        }
        Time64(TimeUnit::Nanosecond) => fill::<Time64NanosecondType>(a, layout, planes, i64_bits),
        Time64(_) => fill::<Time64MicrosecondType>(a, layout, planes, i64_bits),
        Duration(TimeUnit::Second) => fill::<DurationSecondType>(a, layout, planes, i64_bits),
        Duration(TimeUnit::Millisecond) => {
            fill::<DurationMillisecondType>(a, layout, planes, i64_bits)
        }
        Duration(TimeUnit::Microsecond) => {
            fill::<DurationMicrosecondType>(a, layout, planes, i64_bits)
        }
        Duration(TimeUnit::Nanosecond) => {
            fill::<DurationNanosecondType>(a, layout, planes, i64_bits)
        }
        Float32 => fill::<Float32Type>(a, layout, planes, f32_bits),
        Float64 => fill::<Float64Type>(a, layout, planes, f64_bits),
        Decimal128(_, _) => fill::<Decimal128Type>(a, layout, planes, |v| v as u128 ^ 1 << 127),
        // Boolean: false < true.
        Boolean => {
            let flip = if layout.descending { u32::MAX } else { 0 };
            for (r, v) in array.as_boolean().iter().enumerate() {
                planes[0][r] = v.map_or(0, |v| u32::from(v) ^ flip);
            }
        }
        ref other => return Err(format!("type {other} has no GPU sort encoding")),
    }
    Ok(())
}

/// The words of one batch's evaluated sort keys `arrays` (one per layout, equal lengths).
pub fn encode(layouts: &[KeyLayout], arrays: &[ArrayRef]) -> Result<Encoded, String> {
    let rows = arrays.first().map_or(0, |a| a.len());
    let words = key_words(layouts);
    let mut planes = vec![vec![0u32; rows]; words];
    let mut at = 0;
    for (layout, array) in layouts.iter().zip(arrays) {
        let w = layout.words();
        encode_key(layout, array, &mut planes[at..at + w])?;
        at += w;
    }
    Ok(Encoded::from_planes(planes))
}

/// Sorts `indices` by the words `word(w, row)` of their rows (`words` of them), then by row:
/// the order the selection defines.
pub fn order_by(indices: &mut [u32], words: usize, word: impl Fn(usize, u32) -> u32) {
    indices.sort_unstable_by(|&a, &b| {
        (0..words)
            .map(|w| word(w, a).cmp(&word(w, b)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.cmp(&b))
    });
}

/// The oracle: the first `k` of the `rows` rows in [`order_by`]'s order.
pub fn select_cpu(
    rows: usize,
    words: usize,
    k: usize,
    word: impl Fn(usize, u32) -> u32,
) -> Vec<u32> {
    let mut all: Vec<u32> = (0..rows as u32).collect();
    order_by(&mut all, words, word);
    all.truncate(k);
    all
}
