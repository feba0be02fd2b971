//! One Trace Event Format element's fields as serde reads them (the reference the fast
//! parser, [`super::fast`], must agree with), and the conversions of field text: timestamps
//! kept as their exact text and converted to integer nanosecond ticks (no f64 round trip),
//! `pid`/`tid` as numbers or strings, flow and bind IDs.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::fast::Fields;

/// A process or thread key as the file spells it (numbers and strings both occur:
/// torch.profiler writes `"tid": "stream 7"` for CUDA streams).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceKey {
    /// A numeric ID.
    Num(i64),
    /// A string ID.
    Str(String),
}

impl std::fmt::Display for TraceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceKey::Num(n) => write!(f, "{n}"),
            TraceKey::Str(s) => f.write_str(s),
        }
    }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    bind_id: Option<&'a RawValue>,
    #[serde(default)]
    flow_in: Option<bool>,
    #[serde(default)]
    flow_out: Option<bool>,
    #[serde(borrow, default)]
    bp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct MetaArgs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    sort_index: Option<i64>,
}

/// Metadata kinds the model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaKind {
    /// `process_name`.
    ProcessName,
    /// `thread_name`.
    ThreadName,
    /// `process_sort_index`.
    ProcessSort,
    /// `thread_sort_index`.
    ThreadSort,
    /// Any other `M` event (`process_labels`, ...): counted only.
    Other,
}

/// Integer nanosecond ticks of a decimal number of microseconds written as `text` (JSON
/// number or a string holding one). Exact for up to three decimals; finer digits round to
/// the nearest tick. `None` when not a number or out of range.
pub fn micros_to_ticks(text: &str) -> Option<i64> {
    plain_micros_to_ticks(text.as_bytes()).or_else(|| general_micros_to_ticks(text))
}

/// [`micros_to_ticks`] of any spelling.
fn general_micros_to_ticks(text: &str) -> Option<i64> {
    let t = text.trim().trim_matches('"');
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(k) => (&t[..k], t[k + 1..].parse::<i32>().ok()?),
        None => (t, 0),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(k) => (&mantissa[..k], &mantissa[k + 1..]),
        None => (mantissa, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    // value = digits × 10^(exp − frac.len()) µs = digits × 10^(exp − frac.len() + 3) ns.
    let digits: String = int.chars().chain(frac.chars()).collect();
    let digits = digits.trim_start_matches('0');
    let scale = i64::from(exp) - frac.len() as i64 + 3;
    let parse = |s: &str| -> Option<i128> {
        s.bytes().try_fold(0i128, |v, c| {
            let v = v.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
            (v <= i128::from(i64::MAX)).then_some(v)
        })
    };
    let mut v = if scale >= 0 {
        parse(digits)?.checked_mul(10i128.checked_pow(u32::try_from(scale).ok()?)?)?
    } else {
        // Drop the last `-scale` digits, rounding half up on the first dropped one.
        let d = usize::try_from(-scale).ok()?;
        let (keep, dropped) = match digits.len().checked_sub(d) {
            Some(k) => (
                &digits[..k],
                digits.as_bytes().get(k).copied().unwrap_or(b'0'),
            ),
            None => ("", b'0'),
        };
        parse(keep)? + i128::from(dropped >= b'5')
    };
    if neg {
        v = -v;
    }
    i64::try_from(v).ok()
}

/// [`micros_to_ticks`] of the common spelling `-?[0-9]{1,16}(\.[0-9]{0,3})?`, without
/// allocating (`None`: another spelling, for the general path).
#[inline]
fn plain_micros_to_ticks(b: &[u8]) -> Option<i64> {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    // One pass: up to 16 integer digits (eight at a time where they are), then optionally
    // `.` and up to 3 digits.
    let mut v = 0u64;
    let mut i = 0;
    while i + 8 <= 16 {
        let Some(d) = b.get(i..i + 8).and_then(eight_digits) else {
            break;
        };
        v = v * 100_000_000 + d;
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if !c.is_ascii_digit() || i == 16 {
            break;
        }
        v = v * 10 + u64::from(c - b'0');
        i += 1;
    }
    if i == 0 {
        return None;
    }
    let mut scale = 1000;
    match b.get(i) {
        None => {}
        Some(b'.') => {
            for &c in &b[i + 1..] {
                if !c.is_ascii_digit() || scale == 1 {
                    return None;
                }
                scale /= 10;
                v = v * 10 + u64::from(c - b'0');
            }
        }
        Some(_) => return None,
    }
    // < 10^19: no overflow in u64.
    let v = i64::try_from(v * scale).ok()?;
    Some(if neg { -v } else { v })
}

/// The value of eight ASCII digits (`None`: not all digits).
#[inline]
fn eight_digits(b: &[u8]) -> Option<u64> {
    let x = u64::from_le_bytes(b.try_into().ok()?);
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // Every byte in 0x30..=0x39: high nibble 3, and still 3 after adding 6 (no carries
    // cross bytes, every byte being at most 0x3F + 6).
    if x & HIGH != ZEROS || x.wrapping_add(0x0606_0606_0606_0606) & HIGH != ZEROS {
        return None;
    }
    // Pairs, then quads, then all eight (the first digit is the lowest byte).
    let x = x & 0x0F0F_0F0F_0F0F_0F0F;
    let x = (x.wrapping_mul(10) + (x >> 8)) & 0x00FF_00FF_00FF_00FF;
    let x = (x.wrapping_mul(100) + (x >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((x.wrapping_mul(10_000) + (x >> 32)) & 0xFFFF_FFFF)
}

/// The process or thread key written as `raw` (JSON text; `None`: absent, which is 0).
pub fn key(raw: Option<&str>) -> TraceKey {
    let Some(r) = raw else {
        return TraceKey::Num(0);
    };
    let t = r.trim();
    let b = t.as_bytes();
    // Fast paths: a plain integer, or a string without escapes.
    if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' {
        let inner = &t[1..t.len() - 1];
        if !inner.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20) {
            return TraceKey::Str(inner.to_string());
        }
    }
    if let Ok(n) = t.parse::<i64>() {
        return TraceKey::Num(n);
    }
    if !t.starts_with('"') {
        // Not a string: serde would refuse it as one.
        return TraceKey::Str(t.to_string());
    }
    if let Ok(s) = serde_json::from_str::<String>(t) {
        return TraceKey::Str(s);
    }
    TraceKey::Str(t.to_string())
}

/// A flow or bind ID written as `raw` (JSON text): a string's content, else the text.
pub fn id_text(raw: &str) -> Cow<'_, str> {
    let t = raw.trim();
    let b = t.as_bytes();
    if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' {
        let inner = &t[1..t.len() - 1];
        if !inner.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20) {
            return Cow::Borrowed(inner);
        }
    }
    if !t.starts_with('"') {
        // Not a string: serde would refuse it as one.
        return Cow::Borrowed(t);
    }
    match serde_json::from_str::<String>(raw) {
        Ok(s) => Cow::Owned(s),
        Err(_) => Cow::Borrowed(t),
    }
}

/// `args.name` and `args.sort_index` of a metadata event (`args` as JSON text); both `None`
/// when `args` is absent or not an object of the right types.
pub fn meta_args(args: Option<&str>) -> (Option<String>, Option<i64>) {
    let a: MetaArgs = args
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or_default();
    (a.name, a.sort_index)
}

/// The metadata kind named `name`.
pub fn meta_kind(name: Option<&str>) -> MetaKind {
    match name {
        Some("process_name") => MetaKind::ProcessName,
        Some("thread_name") => MetaKind::ThreadName,
        Some("process_sort_index") => MetaKind::ProcessSort,
        Some("thread_sort_index") => MetaKind::ThreadSort,
        _ => MetaKind::Other,
    }
}

/// Reads one element's [`Fields`] with serde: the reference. `Err` is serde's error (a
/// syntax error inside the element, or a field of the wrong type); the caller turns it into
/// an offset.
pub fn serde_fields(bytes: &[u8]) -> Result<Fields<'_>, serde_json::Error> {
    let raw: RawEvent<'_> = serde_json::from_slice(bytes)?;
    Ok(Fields {
        ph: raw.ph,
        name: raw.name,
        cat: raw.cat,
        bp: raw.bp,
        ts: raw.ts.map(RawValue::get),
        dur: raw.dur.map(RawValue::get),
        pid: raw.pid.map(RawValue::get),
        tid: raw.tid.map(RawValue::get),
        id: raw.id.map(RawValue::get),
        bind_id: raw.bind_id.map(RawValue::get),
        args: raw.args.map(RawValue::get),
        flow_in: raw.flow_in,
        flow_out: raw.flow_out,
    })
}

/// The `args` of the element in `bytes` as JSON text (`"{}"` when absent), for display.
pub fn event_args(bytes: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Args<'a> {
        #[serde(borrow, default)]
        args: Option<&'a RawValue>,
    }
    let a: Args<'_> = serde_json::from_slice(bytes).ok()?;
    Some(
        a.args
            .map(|r| r.get().to_string())
            .unwrap_or_else(|| "{}".into()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_exact() {
        assert_eq!(
            micros_to_ticks("1700000000123.456"),
            Some(1_700_000_000_123_456)
        );
        assert_eq!(
            micros_to_ticks("1700000000123"),
            Some(1_700_000_000_123_000)
        );
        assert_eq!(micros_to_ticks("0.5"), Some(500));
        assert_eq!(micros_to_ticks("\"12.25\""), Some(12_250));
        assert_eq!(micros_to_ticks("-3.001"), Some(-3_001));
        assert_eq!(micros_to_ticks("1.7e12"), Some(1_700_000_000_000_000));
        assert_eq!(micros_to_ticks("1.0004"), Some(1_000));
        assert_eq!(micros_to_ticks("1.0005"), Some(1_001));
        assert_eq!(micros_to_ticks("2.5e-3"), Some(3));
        assert_eq!(micros_to_ticks("000"), Some(0));
        assert_eq!(micros_to_ticks("abc"), None);
        assert_eq!(micros_to_ticks(""), None);
        assert_eq!(micros_to_ticks("1e400"), None);
    }

    #[test]
    fn the_plain_spelling_agrees_with_the_general_path() {
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "7",
            "1.",
            "-1.",
            "12.5",
            "12.05",
            "12.005",
            "12.0005",
            "0.000",
            "9223372036854775",
            "9223372036854775.807",
            "9223372036854775.808",
            "-9223372036854775.808",
            "9999999999999999.999",
            "99999999999999999",
            "1.2.3",
            "1-2",
            "--1",
            "-",
            ".",
            ".5",
            "+1",
            "1e3",
            " 1",
            "00012.340",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let int = x % 10u64.pow((x >> 40) as u32 % 18);
            let frac = (x >> 8) % 10_000;
            cases.push(match x % 5 {
                0 => format!("{int}"),
                1 => format!("-{int}.{}", frac % 1000),
                2 => format!("{int}.{frac:04}"),
                3 => format!("{int}.{:03}", frac % 1000),
                _ => format!("{int}.{}", frac % 10),
            });
        }
        for c in &cases {
            if let Some(v) = plain_micros_to_ticks(c.as_bytes()) {
                assert_eq!(Some(v), general_micros_to_ticks(c), "{c}");
            }
            assert_eq!(micros_to_ticks(c), general_micros_to_ticks(c), "{c}");
        }
    }
}
