//! One Trace Event Format element → a [`Parsed`] event: borrowed serde fields, timestamps
//! kept as their exact text and converted to integer nanosecond ticks (no f64 round trip),
//! `pid`/`tid` as numbers or strings.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

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

/// What a span-producing event shares.
#[derive(Clone, Debug)]
pub struct EventCore {
    /// Absolute start, ns ticks.
    pub ts: i64,
    /// Process key.
    pub pid: TraceKey,
    /// Thread key.
    pub tid: TraceKey,
    /// Name.
    pub name: String,
    /// Category.
    pub cat: String,
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

/// One parsed event.
#[derive(Clone, Debug)]
pub enum Parsed {
    /// `X`.
    Complete {
        /// Shared fields.
        core: EventCore,
        /// Duration ticks (`None`: absent).
        dur: Option<i64>,
        /// `bind_id` with `flow_out` / `flow_in`.
        bind: Option<(String, bool, bool)>,
    },
    /// `B`.
    Begin(EventCore),
    /// `E` (name and category unused).
    End(EventCore),
    /// `i` / `I`.
    Instant(EventCore),
    /// `M`.
    Meta {
        /// Which.
        kind: MetaKind,
        /// Process key.
        pid: TraceKey,
        /// Thread key.
        tid: TraceKey,
        /// `args.name`.
        name: Option<String>,
        /// `args.sort_index`.
        sort_index: Option<i64>,
    },
    /// `s` / `t` / `f`.
    Flow {
        /// `b's'`, `b't'` or `b'f'`.
        phase: u8,
        /// Shared fields (name unused).
        core: EventCore,
        /// Category and id: the chain's key.
        key: String,
        /// `bp: "e"`: binds to the enclosing slice.
        enclosing: bool,
    },
    /// Not used for spans: counted under its `ph`, with why.
    Skipped {
        /// Why it was not used.
        reason: &'static str,
    },
}

/// A parsed element: the event, its `ph` as written (for counts) and its `args` text.
#[derive(Debug)]
pub struct ParsedEvent {
    /// The event.
    pub event: Parsed,
    /// `ph`, as written (`"?"` when missing).
    pub ph: String,
}

/// Integer nanosecond ticks of a decimal number of microseconds written as `text` (JSON
/// number or a string holding one). Exact for up to three decimals; finer digits round to
/// the nearest tick. `None` when not a number or out of range.
pub fn micros_to_ticks(text: &str) -> Option<i64> {
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

fn key(raw: Option<&RawValue>) -> TraceKey {
    let Some(r) = raw else {
        return TraceKey::Num(0);
    };
    let t = r.get().trim();
    if let Ok(n) = t.parse::<i64>() {
        return TraceKey::Num(n);
    }
    if let Ok(s) = serde_json::from_str::<String>(t) {
        return TraceKey::Str(s);
    }
    TraceKey::Str(t.to_string())
}

fn id_text(raw: &RawValue) -> String {
    serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().trim().to_string())
}

/// Parses one element. `Err` is serde's error (a syntax error inside the element, or a field
/// of the wrong type); the caller turns it into an offset.
pub fn parse_event(bytes: &[u8]) -> Result<ParsedEvent, serde_json::Error> {
    let raw: RawEvent<'_> = serde_json::from_slice(bytes)?;
    let ph = raw.ph.as_deref().unwrap_or("?").to_string();
    let skipped = |reason| ParsedEvent {
        event: Parsed::Skipped { reason },
        ph: ph.clone(),
    };
    let ts = raw.ts.map(|t| micros_to_ticks(t.get()));
    let core = |ts: i64| EventCore {
        ts,
        pid: key(raw.pid),
        tid: key(raw.tid),
        name: raw.name.as_deref().unwrap_or("").to_string(),
        cat: raw.cat.as_deref().unwrap_or("").to_string(),
    };
    let timed = |f: &dyn Fn(i64) -> Parsed| match ts {
        Some(Some(t)) => ParsedEvent {
            event: f(t),
            ph: ph.clone(),
        },
        Some(None) => skipped("timestamp is not a number"),
        None => skipped("no timestamp"),
    };
    Ok(match ph.as_str() {
        "X" => {
            let dur = match raw.dur.map(|d| micros_to_ticks(d.get())) {
                Some(None) => return Ok(skipped("duration is not a number")),
                Some(Some(d)) if d < 0 => return Ok(skipped("negative duration")),
                Some(Some(d)) => Some(d),
                None => None,
            };
            let bind = raw.bind_id.map(|b| {
                (
                    id_text(b),
                    raw.flow_out.unwrap_or(false),
                    raw.flow_in.unwrap_or(false),
                )
            });
            timed(&|t| Parsed::Complete {
                core: core(t),
                dur,
                bind: bind.clone(),
            })
        }
        "B" => timed(&|t| Parsed::Begin(core(t))),
        "E" => timed(&|t| Parsed::End(core(t))),
        "i" | "I" => timed(&|t| Parsed::Instant(core(t))),
        "s" | "t" | "f" => {
            let Some(id) = raw.id else {
                return Ok(skipped("flow event without id"));
            };
            let key = format!("{}\u{1}{}", raw.cat.as_deref().unwrap_or(""), id_text(id));
            let enclosing = raw.bp.as_deref() == Some("e");
            let phase = ph.as_bytes()[0];
            timed(&|t| Parsed::Flow {
                phase,
                core: core(t),
                key: key.clone(),
                enclosing,
            })
        }
        "M" => {
            let kind = match raw.name.as_deref() {
                Some("process_name") => MetaKind::ProcessName,
                Some("thread_name") => MetaKind::ThreadName,
                Some("process_sort_index") => MetaKind::ProcessSort,
                Some("thread_sort_index") => MetaKind::ThreadSort,
                _ => MetaKind::Other,
            };
            let args: MetaArgs = raw
                .args
                .and_then(|a| serde_json::from_str(a.get()).ok())
                .unwrap_or_default();
            ParsedEvent {
                event: Parsed::Meta {
                    kind,
                    pid: key(raw.pid),
                    tid: key(raw.tid),
                    name: args.name,
                    sort_index: args.sort_index,
                },
                ph: ph.clone(),
            }
        }
        "?" => skipped("no ph"),
        _ => skipped("event kind not used for spans"),
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
}
