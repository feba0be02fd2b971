//! The fast ingestion path against references: against serde_json's full parse
//! (`serde_json::Value`, a small oracle of the event rules) on random traces with random
//! nesting, escapes, whitespace and number spellings; against the reference path (the
//! structural scan and serde per element) on the same traces, on mutated and truncated
//! copies (same events or the same error, never a panic), and on empty, one-event and
//! non-object inputs. `ingest_chunks.rs` covers the parallel chunks.

mod ingest_common;

use gpugraph_trace::chrome::block::{Events, Parsed};
use gpugraph_trace::chrome::event::MetaKind;
use gpugraph_trace::{parse_chrome_trace, TraceError, TraceKey};
use ingest_common::{agree, opts, rounds, seed};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// A generated trace and, per element, the exact ticks of its `ts` and `dur` as written.
struct Trace {
    text: String,
    ts: Vec<Option<i64>>,
    dur: Vec<Option<i64>>,
}

struct Gen {
    r: StdRng,
}

const NAMES: [&str; 12] = [
    "aten::addmm",
    "cudaLaunchKernel",
    "quote \" inside",
    "back\\slash",
    "café",
    "emoji 😀 here",
    "tab\tand\nnewline",
    "slash/ed",
    "",
    "}, {\"ph\": \"X\"}, {",
    "ctl \u{1} \u{1f}",
    "void at::native::{lambda()#1}",
];

impl Gen {
    fn ws(&mut self) -> &'static str {
        ["", "", "", " ", "\n  ", "\t", "\r\n    "][self.r.random_range(0..7)]
    }

    /// `s` as a JSON string, characters escaped at random (`\uXXXX`, surrogate pairs, `\/`).
    fn string(&mut self, s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            let escape = self.r.random_bool(0.15);
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' if !escape => out.push_str("\\n"),
                '\t' if !escape => out.push_str("\\t"),
                '/' if escape => out.push_str("\\/"),
                c if (c as u32) < 0x20 || escape => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// Microseconds in one of many spellings, with its exact ticks.
    fn micros(&mut self) -> (String, i64) {
        let n: i64 = self.r.random_range(0..2_000_000_000_000_000);
        let small: i64 = self.r.random_range(0..100_000);
        match self.r.random_range(0..12) {
            0 => (format!("{small}"), small * 1000),
            1 => (format!("{}.{:03}", n / 1000, n % 1000), n),
            2 => (format!("{small}.5"), small * 1000 + 500),
            3 => (format!("{small}.000"), small * 1000),
            4 => ("-0".into(), 0),
            5 => ("-0.0".into(), 0),
            6 => (format!("{small}e3"), small * 1_000_000),
            7 => (format!("{small}.25E+1"), small * 10_000 + 2_500),
            8 => (format!("{}e-3", small), small),
            9 => (format!("-{small}.125"), -(small * 1000 + 125)),
            10 => ("1.0005".into(), 1_001),
            _ => (format!("\"{small}.75\""), small * 1000 + 750),
        }
    }

    fn key(&mut self) -> String {
        match self.r.random_range(0..6) {
            0 => format!("{}", self.r.random_range(0..5)),
            1 => format!("-{}", self.r.random_range(0..3)),
            2 => "9223372036854775807".into(),
            3 => self.string("stream 7"),
            4 => self.string("Traces"),
            _ => format!("{}", self.r.random_range(1000..1003)),
        }
    }

    /// A random JSON value for `args` and unknown keys.
    fn value(&mut self, depth: u32) -> String {
        let k = self.r.random_range(0..if depth > 4 { 6 } else { 9 });
        match k {
            0 => [
                "1.5",
                "1e3",
                "-0",
                "12.000",
                "18446744073709551616",
                "-1.5E-7",
                "0",
            ][self.r.random_range(0..7)]
            .into(),
            1 => ["true", "false", "null"][self.r.random_range(0..3)].into(),
            2..=5 => {
                let s = NAMES[self.r.random_range(0..NAMES.len())];
                self.string(s)
            }
            6 | 7 => {
                let n = self.r.random_range(0..4);
                let mut out = String::from("{");
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    let key = NAMES[self.r.random_range(0..NAMES.len())];
                    let (w1, w2) = (self.ws(), self.ws());
                    let (key, v) = (self.string(key), self.value(depth + 1));
                    out.push_str(&format!("{w1}{key}{w2}:{v}"));
                }
                out.push_str(self.ws());
                out.push('}');
                out
            }
            _ => {
                let n = self.r.random_range(0..4);
                let items: Vec<String> = (0..n).map(|_| self.value(depth + 1)).collect();
                let sep = format!(",{}", self.ws());
                format!("[{}]", items.join(&sep))
            }
        }
    }

    /// One event element (well-typed fields), with the ticks of its `ts` and `dur`.
    fn event(&mut self) -> (String, Option<i64>, Option<i64>) {
        let ph = [
            "X", "X", "X", "B", "E", "i", "I", "s", "t", "f", "M", "C", "?",
        ][self.r.random_range(0..13)];
        let mut fields: Vec<(String, String)> = Vec::new();
        let mut add = |k: &str, v: String, g: &mut Gen| fields.push((g.string(k), v));
        if self.r.random_bool(0.97) {
            let v = if self.r.random_bool(0.9) {
                self.string(ph)
            } else {
                "null".into()
            };
            add("ph", v, self);
        }
        let (mut ts, mut dur) = (None, None);
        if self.r.random_bool(0.95) {
            let (t, ticks) = self.micros();
            add("ts", t, self);
            ts = Some(ticks);
        }
        if ph == "X" && self.r.random_bool(0.9) {
            let (d, ticks) = self.micros();
            add("dur", d, self);
            dur = Some(ticks);
        }
        let name = if ph == "M" {
            [
                "process_name",
                "thread_name",
                "process_sort_index",
                "thread_sort_index",
                "x",
            ][self.r.random_range(0..5)]
        } else {
            NAMES[self.r.random_range(0..NAMES.len())]
        };
        if self.r.random_bool(0.9) {
            let v = self.string(name);
            add("name", v, self);
        }
        if self.r.random_bool(0.8) {
            let c = ["cpu_op", "kernel", "ac2g", "é\"cat"][self.r.random_range(0..4)];
            let v = self.string(c);
            add("cat", v, self);
        }
        for k in ["pid", "tid"] {
            if self.r.random_bool(0.9) {
                let v = self.key();
                add(k, v, self);
            }
        }
        if matches!(ph, "s" | "t" | "f") && self.r.random_bool(0.9) {
            let v = match self.r.random_range(0..3) {
                0 => format!("{}", self.r.random_range(0..20)),
                1 => {
                    let id = format!("0x{}", self.r.random_range(0..20));
                    self.string(&id)
                }
                _ => format!("{{\"local\":{}}}", self.r.random_range(0..3)),
            };
            add("id", v, self);
        }
        if self.r.random_bool(0.2) {
            add("bp", self.string("e"), self);
        }
        if ph == "X" && self.r.random_bool(0.2) {
            let id = format!("0x{}", self.r.random_range(0..5));
            let v = self.string(&id);
            add("bind_id", v, self);
            let (o, i) = (self.r.random_bool(0.5), self.r.random_bool(0.5));
            add("flow_out", o.to_string(), self);
            add("flow_in", i.to_string(), self);
        }
        if ph == "M" {
            let v = match self.r.random_range(0..4) {
                0 => format!("{{\"name\": {}}}", self.string("stream 7 ")),
                1 => format!("{{\"sort_index\": {}}}", self.r.random_range(-3..30)),
                2 => "{\"name\": 5}".into(),
                _ => "{\"labels\": [1, {}]}".into(),
            };
            add("args", v, self);
        } else if self.r.random_bool(0.8) {
            let v = self.value(0);
            add("args", v, self);
        }
        for _ in 0..self.r.random_range(0..3) {
            let k = NAMES[self.r.random_range(0..NAMES.len())];
            let v = self.value(1);
            add(&format!("x-{k}"), v, self);
        }
        // Random order, random whitespace.
        for i in (1..fields.len()).rev() {
            let j = self.r.random_range(0..=i);
            fields.swap(i, j);
        }
        let mut out = String::from("{");
        for (i, (k, v)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let (a, b, c) = (self.ws(), self.ws(), self.ws());
            out.push_str(&format!("{a}{k}{b}:{c}{v}"));
        }
        out.push_str(self.ws());
        out.push('}');
        (out, ts, dur)
    }

    fn trace(&mut self, events: usize) -> Trace {
        let object = self.r.random_bool(0.5);
        let mut text = String::new();
        if object {
            text.push_str("{\"otherData\": {\"x\": [1, {\"y\": \"]\"}]},\n\"traceEvents\": [");
        } else {
            text.push('[');
        }
        let (mut ts, mut dur) = (Vec::new(), Vec::new());
        for i in 0..events {
            if i > 0 {
                text.push(',');
            }
            text.push_str(self.ws());
            let (e, t, d) = self.event();
            text.push_str(&e);
            ts.push(t);
            dur.push(d);
        }
        text.push_str(self.ws());
        text.push(']');
        if object {
            text.push_str(", \"displayTimeUnit\": \"ns\"}");
        }
        Trace { text, ts, dur }
    }
}

/// A parsed event in plain terms, for comparison with the oracle.
#[derive(Debug, PartialEq)]
enum Plain {
    Skipped(String, &'static str),
    Span(String, String, String, TraceKey, TraceKey, i64, Option<i64>),
    Flow(String, String, TraceKey, TraceKey, i64, bool),
    Meta(MetaKind, TraceKey, TraceKey, Option<String>, Option<i64>),
}

fn plain(ev: &Events) -> Vec<Plain> {
    let s = |i: u32| ev.strings[i as usize].clone();
    let k = |i: u32| ev.keys[i as usize].clone();
    ev.events
        .iter()
        .map(|e| {
            let ph = s(e.ph);
            match &e.event {
                Parsed::Skipped { reason } => Plain::Skipped(ph, reason),
                Parsed::Complete { core: c, dur, .. } => {
                    Plain::Span(ph, s(c.name), s(c.cat), k(c.pid), k(c.tid), c.ts, *dur)
                }
                Parsed::Begin(c) | Parsed::End(c) | Parsed::Instant(c) => {
                    Plain::Span(ph, s(c.name), s(c.cat), k(c.pid), k(c.tid), c.ts, None)
                }
                Parsed::Flow {
                    core: c,
                    key,
                    enclosing,
                    ..
                } => Plain::Flow(ph, s(*key), k(c.pid), k(c.tid), c.ts, *enclosing),
                Parsed::Meta(m) => {
                    Plain::Meta(m.kind, k(m.pid), k(m.tid), m.name.clone(), m.sort_index)
                }
            }
        })
        .collect()
}

fn oracle_key(v: Option<&Value>) -> TraceKey {
    match v {
        None | Some(Value::Null) => TraceKey::Num(0),
        Some(Value::String(s)) => TraceKey::Str(s.clone()),
        // The generator writes integer keys only; serde_json reads `-0` as the float -0.0.
        Some(n) if n.as_f64() == Some(0.0) => TraceKey::Num(0),
        Some(n) => match n.as_i64() {
            Some(i) => TraceKey::Num(i),
            None => TraceKey::Str(n.to_string()),
        },
    }
}

/// The event rules over serde_json's `Value` of one element.
fn oracle(v: &Value, ts: Option<i64>, dur: Option<i64>) -> Plain {
    let str_of = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let ph = str_of("ph").unwrap_or_else(|| "?".into());
    let (name, cat) = (
        str_of("name").unwrap_or_default(),
        str_of("cat").unwrap_or_default(),
    );
    let (pid, tid) = (oracle_key(v.get("pid")), oracle_key(v.get("tid")));
    let no_ts = if v.get("ts").is_some_and(|t| !t.is_null()) {
        "timestamp is not a number"
    } else {
        "no timestamp"
    };
    let skip = |r| Plain::Skipped(ph.clone(), r);
    match ph.as_str() {
        "X" => match (dur, ts) {
            (Some(d), _) if d < 0 => skip("negative duration"),
            (_, None) => skip(no_ts),
            (_, Some(t)) => Plain::Span(ph.clone(), name, cat, pid, tid, t, dur),
        },
        "B" | "E" | "i" | "I" => match ts {
            None => skip(no_ts),
            Some(t) => Plain::Span(ph.clone(), name, cat, pid, tid, t, None),
        },
        "s" | "t" | "f" => match (v.get("id").filter(|i| !i.is_null()), ts) {
            (None, _) => skip("flow event without id"),
            (_, None) => skip(no_ts),
            (Some(id), Some(t)) => {
                let id = match id {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let enclosing = v.get("bp").and_then(Value::as_str) == Some("e");
                Plain::Flow(
                    ph.clone(),
                    format!("{cat}\u{1}{id}"),
                    pid,
                    tid,
                    t,
                    enclosing,
                )
            }
        },
        "M" => {
            let kind = match name.as_str() {
                "process_name" => MetaKind::ProcessName,
                "thread_name" => MetaKind::ThreadName,
                "process_sort_index" => MetaKind::ProcessSort,
                "thread_sort_index" => MetaKind::ThreadSort,
                _ => MetaKind::Other,
            };
            let args = v.get("args");
            let n = args.and_then(|a| a.get("name"));
            let si = args.and_then(|a| a.get("sort_index"));
            let ok = n.is_none_or(|n| n.is_string() || n.is_null())
                && si.is_none_or(|s| s.is_i64() || s.is_null());
            let (n, si) = if ok {
                (
                    n.and_then(Value::as_str).map(str::to_string),
                    si.and_then(Value::as_i64),
                )
            } else {
                (None, None)
            };
            Plain::Meta(kind, pid, tid, n, si)
        }
        "?" => skip("no ph"),
        _ => skip("event kind not used for spans"),
    }
}

#[test]
fn random_traces_match_serde_values_and_the_reference_path() {
    let mut g = Gen {
        r: StdRng::seed_from_u64(seed(46)),
    };
    for round in 0..rounds(400) {
        let n = g.r.random_range(0..40);
        let t = g.trace(n);
        let doc: Value =
            serde_json::from_str(&t.text).unwrap_or_else(|e| panic!("{e}: {}", t.text));
        let arr = match &doc {
            Value::Array(a) => a,
            other => other["traceEvents"].as_array().unwrap(),
        };
        let expected: Vec<Plain> = arr
            .iter()
            .enumerate()
            .map(|(i, v)| oracle(v, t.ts[i], t.dur[i]))
            .collect();
        let events = agree(t.text.as_bytes(), 1 + round % 3).unwrap();
        assert_eq!(plain(&events), expected, "{}", t.text);
        let m = parse_chrome_trace(t.text.as_bytes(), opts(1)).unwrap();
        assert_eq!(m.report.events as usize, arr.len());
        // A trailing comma before `]` is accepted (the reference scan allows it).
        if !arr.is_empty() {
            let close = t.text.rfind(']').unwrap();
            let mut comma = t.text.clone();
            comma.insert(close, ',');
            assert_eq!(agree(comma.as_bytes(), 1).unwrap(), events);
        }
    }
}

#[test]
fn mutated_and_truncated_traces_agree_and_never_panic() {
    let mut g = Gen {
        r: StdRng::seed_from_u64(seed(7)),
    };
    let junk: &[&[u8]] = &[
        b"\"", b"\\", b"{", b"}", b"[", b"]", b",", b":", b"x", b"0", b" ", b"\0", b"\xff",
        b"\xc3", b"-", b".", b"e", b"null", b"\\u", b"\\ud800",
    ];
    for _ in 0..rounds(1500) {
        let n = g.r.random_range(1..12);
        let t = g.trace(n);
        let mut b = t.text.into_bytes();
        for _ in 0..g.r.random_range(1..4) {
            let at = g.r.random_range(0..=b.len());
            match g.r.random_range(0..4) {
                0 => b.truncate(at),
                1 if at < b.len() => {
                    b.remove(at);
                }
                2 => {
                    let j = junk[g.r.random_range(0..junk.len())];
                    b.splice(at..at, j.iter().copied());
                }
                _ if at + 1 < b.len() => b.swap(at, at + 1),
                _ => {}
            }
        }
        let r = agree(&b, 1 + b.len() % 3);
        if serde_json::from_slice::<Value>(&b).is_ok() {
            assert!(
                !matches!(r, Err(TraceError::Syntax { .. })),
                "valid JSON is not a syntax error: {}",
                String::from_utf8_lossy(&b)
            );
        }
        let _ = parse_chrome_trace(&b, opts(2));
    }
}

#[test]
fn empty_and_single_event_traces() {
    for s in [
        "[]",
        " [ ] ",
        "[",
        "[\n",
        "{\"traceEvents\":[]}",
        "{\"traceEvents\": [ ]}",
    ] {
        let e = agree(s.as_bytes(), 1).unwrap();
        assert!(e.events.is_empty(), "{s}");
    }
    for s in [
        r#"[{"ph":"X","ts":1,"dur":2,"name":"one"}]"#,
        r#"[{"ph":"X","ts":1,"dur":2,"name":"one"},]"#,
        r#"[{"ph":"X","ts":1,"dur":2,"name":"one"}"#,
        r#"[{"ph":"X","ts":1,"dur":2,"name":"one"},"#,
        r#"{"traceEvents":[{"ph":"X","ts":1,"dur":2,"name":"one"}]}"#,
    ] {
        let e = agree(s.as_bytes(), 2).unwrap();
        assert_eq!(e.events.len(), 1, "{s}");
        let m = parse_chrome_trace(s.as_bytes(), opts(1)).unwrap();
        assert_eq!(m.spans.len(), 1);
        assert_eq!(m.names, ["one"]);
    }
    for s in [
        "",
        "[{}",
        "[{\"ph\":1}",
        "{\"traceEvents\":[",
        "[1]",
        "[{\"a\":[}]",
    ] {
        let _ = agree(s.as_bytes(), 1);
    }
    // A field of the wrong type in an element whose brackets do not match: serde alone
    // would stop at the type ("malformed field"); the reference scan's bracket error wins.
    let mismatched = r#"[{"ph":"X","ts":1},{"name" : ["a","pid":1}]"#;
    match agree(mismatched.as_bytes(), 1) {
        Err(TraceError::Syntax { offset, .. }) => {
            assert_eq!(offset, 41, "the brace closing the bracket")
        }
        other => panic!("{other:?}"),
    }
    // Elements that are not objects: serde's type error, skipped, on both paths.
    let e = agree(br#"[1, "x", [], {"ph":"X","ts":1}, null]"#, 1).unwrap();
    assert_eq!(e.events.len(), 5);
    // A lone surrogate in a name is serde's syntax error, on both paths.
    let lone = r#"[{"ph":"X","ts":1,"name":"lone \ud800 x"}]"#;
    assert!(matches!(
        agree(lone.as_bytes(), 1),
        Err(TraceError::Syntax { .. })
    ));
}
