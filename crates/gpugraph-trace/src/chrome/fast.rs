//! The fast path: a hand-written byte parser for one event object that extracts the handful
//! of fields ingestion needs ([`Fields`]) and validates everything else (`args`, unknown
//! keys) without building values.
//!
//! Contract: [`fields`] returns `Some` only where `serde_json` would deserialize the element
//! into the same fields; on anything it is not sure of (a key or field string it cannot
//! decode exactly, a duplicate key, a field of the wrong type, invalid UTF-8, deep nesting,
//! malformed JSON) it returns `None` and the caller asks serde ([`super::event::parse_event`]),
//! which gives the exact result or error. It is at least as strict as serde everywhere: the
//! JSON grammar (numbers, literals, escapes, control characters, whitespace) is checked in
//! full.

use std::borrow::Cow;

/// The fields of one event that ingestion reads: strings decoded, everything else as the
/// exact JSON text of its value (`None`: absent or `null`).
#[derive(Debug, Default)]
pub struct Fields<'a> {
    /// `ph`.
    pub ph: Option<Cow<'a, str>>,
    /// `name`.
    pub name: Option<Cow<'a, str>>,
    /// `cat`.
    pub cat: Option<Cow<'a, str>>,
    /// `bp`.
    pub bp: Option<Cow<'a, str>>,
    /// `ts` as written.
    pub ts: Option<&'a str>,
    /// `dur` as written.
    pub dur: Option<&'a str>,
    /// `pid` as written.
    pub pid: Option<&'a str>,
    /// `tid` as written.
    pub tid: Option<&'a str>,
    /// `id` as written.
    pub id: Option<&'a str>,
    /// `bind_id` as written.
    pub bind_id: Option<&'a str>,
    /// `args` as written.
    pub args: Option<&'a str>,
    /// `flow_in`.
    pub flow_in: Option<bool>,
    /// `flow_out`.
    pub flow_out: Option<bool>,
}

/// Nesting deeper than this goes to serde (whose limit is 128 levels).
const MAX_DEPTH: u32 = 100;

/// Byte classes inside strings: 0 ordinary, 1 the closing quote, 2 a backslash, 3 a control
/// character (not allowed unescaped).
const STR_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = 3;
        c += 1;
    }
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 2;
    t
};

#[inline(always)]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            break;
        }
        i += 1;
    }
    i
}

/// Index of the first byte at or after `i` that is not ordinary string content (a quote, a
/// backslash or a control character), or `b.len()`.
#[inline(always)]
fn string_run(b: &[u8], mut i: usize) -> usize {
    // Eight bytes at a time. Each mask flags the bytes equal to `"`, equal to `\` or below
    // 0x20; the lowest flag is always exact (no borrow reaches it), so its position is the
    // answer.
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let quote = x ^ (LO * u64::from(b'"'));
        let slash = x ^ (LO * u64::from(b'\\'));
        let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
        let control = x.wrapping_sub(LO * 0x20) & !x & HI;
        let m = zero(quote) | zero(slash) | control;
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if STR_CLASS[c as usize] != 0 {
            break;
        }
        i += 1;
    }
    i
}

fn hex4(b: &[u8], i: usize) -> Option<u16> {
    let h = b.get(i..i + 4)?;
    let mut v = 0u16;
    for &c in h {
        let d = (c as char).to_digit(16)?;
        v = v << 4 | d as u16;
    }
    Some(v)
}

/// Skips the string whose opening quote is at `i - 1`; returns the index past the closing
/// quote. Escapes are checked as serde checks them when it ignores a string.
#[inline]
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        i = string_run(b, i);
        match STR_CLASS[*b.get(i)? as usize] {
            1 => return Some(i + 1),
            2 => match *b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    hex4(b, i + 2)?;
                    i += 6;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// Decodes the string whose opening quote is at `i - 1` exactly as serde does for a `str`
/// (paired surrogates combined; lone surrogates are `None`). Returns the end and the text.
fn string<'a>(s: &'a str, i: usize) -> Option<(usize, Cow<'a, str>)> {
    let b = s.as_bytes();
    let mut j = string_run(b, i);
    if *b.get(j)? == b'"' {
        return Some((j + 1, Cow::Borrowed(s.get(i..j)?)));
    }
    let mut out = String::from(s.get(i..j)?);
    loop {
        match STR_CLASS[*b.get(j)? as usize] {
            0 => {
                let k = string_run(b, j);
                out.push_str(s.get(j..k)?);
                j = k;
            }
            1 => return Some((j + 1, Cow::Owned(out))),
            2 => {
                let c = match *b.get(j + 1)? {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        let n = hex4(b, j + 2)?;
                        j += 4;
                        match n {
                            0xD800..=0xDBFF => {
                                if b.get(j + 2..j + 4)? != b"\\u" {
                                    return None;
                                }
                                let m = hex4(b, j + 4)?;
                                if !(0xDC00..=0xDFFF).contains(&m) {
                                    return None;
                                }
                                j += 6;
                                let c = 0x10000
                                    + ((u32::from(n) - 0xD800) << 10)
                                    + (u32::from(m) - 0xDC00);
                                char::from_u32(c)?
                            }
                            0xDC00..=0xDFFF => return None,
                            n => char::from_u32(u32::from(n))?,
                        }
                    }
                    _ => return None,
                };
                out.push(c);
                j += 2;
            }
            _ => return None,
        }
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The JSON number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
#[inline]
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(b, i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let j = digits(b, i + 1);
        if j == i + 1 {
            return None;
        }
        i = j;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let j = digits(b, i);
        if j == i {
            return None;
        }
        i = j;
    }
    Some(i)
}

/// Skips (and validates) the value starting at `i`; `depth`: containers already open.
fn value(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i + 1),
        b'{' => object(b, i + 1, depth + 1),
        b'[' => array(b, i + 1, depth + 1),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        b'-' | b'0'..=b'9' => number(b, i),
        _ => None,
    }
}

fn object(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut i = ws(b, i);
    if *b.get(i)? == b'}' {
        return Some(i + 1);
    }
    loop {
        if *b.get(i)? != b'"' {
            return None;
        }
        i = ws(b, skip_string(b, i + 1)?);
        if *b.get(i)? != b':' {
            return None;
        }
        i = ws(b, value(b, ws(b, i + 1), depth)?);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

fn array(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut i = ws(b, i);
    if *b.get(i)? == b']' {
        return Some(i + 1);
    }
    loop {
        i = ws(b, value(b, i, depth)?);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b']' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Where a field's value lies: `(start, end)`; a string's `start` is past its quote and
/// `end` at its closing quote.
type Span = (usize, usize);

/// A string field: where its content lies and whether it has escapes.
type StrSpan = (usize, usize, bool);

/// A string field's value (`None`: `null`), decoded from the element text `s` (`at`: the
/// element's offset in the buffer the span counts in).
fn decode<'a>(s: &'a str, at: usize, v: Option<StrSpan>) -> Option<Option<Cow<'a, str>>> {
    let Some((a, e, escaped)) = v else {
        return Some(None);
    };
    let (a, e) = (a - at, e - at);
    if !escaped {
        return Some(Some(Cow::Borrowed(s.get(a..e)?)));
    }
    let (end, v) = string(s, a)?;
    (end == e + 1).then_some(Some(v))
}

/// The event object that starts at `b[start] == '{'`: its [`Fields`] and the index past its
/// closing `}`, or `None` when serde must decide (see the module doc).
pub fn fields(b: &[u8], start: usize) -> Option<(Fields<'_>, usize)> {
    if b.get(start) != Some(&b'{') {
        return None;
    }
    // Pass 1: structure, validation and where the fields are.
    let mut strs: [Option<StrSpan>; 4] = [None; 4];
    let mut raws: [Option<Span>; 7] = [None; 7];
    let mut flags: [Option<bool>; 2] = [None; 2];
    let mut seen = 0u32;
    let mut i = ws(b, start + 1);
    let end = if *b.get(i)? == b'}' {
        i + 1
    } else {
        loop {
            if *b.get(i)? != b'"' {
                return None;
            }
            let k = i + 1;
            let ke = string_run(b, k);
            if *b.get(ke)? != b'"' {
                // An escaped or malformed key: serde decodes it.
                return None;
            }
            let key = &b[k..ke];
            i = ws(b, ke + 1);
            if *b.get(i)? != b':' {
                return None;
            }
            i = ws(b, i + 1);
            let slot = match key {
                b"ph" => 0,
                b"name" => 1,
                b"cat" => 2,
                b"bp" => 3,
                b"ts" => 4,
                b"dur" => 5,
                b"pid" => 6,
                b"tid" => 7,
                b"id" => 8,
                b"bind_id" => 9,
                b"args" => 10,
                b"flow_in" => 11,
                b"flow_out" => 12,
                _ => 32,
            };
            if slot < 32 {
                // A duplicate field is serde's error.
                if seen & (1 << slot) != 0 {
                    return None;
                }
                seen |= 1 << slot;
            }
            let c = *b.get(i)?;
            let end = match slot {
                0..=3 => match c {
                    b'"' => {
                        let plain = string_run(b, i + 1);
                        let e = if b.get(plain) == Some(&b'"') {
                            plain + 1
                        } else {
                            skip_string(b, i + 1)?
                        };
                        strs[slot] = Some((i + 1, e - 1, e != plain + 1));
                        e
                    }
                    b'n' => literal(b, i, b"null")?,
                    _ => return None,
                },
                4..=10 => {
                    if c == b'n' {
                        literal(b, i, b"null")?
                    } else {
                        let e = value(b, i, 1)?;
                        raws[slot - 4] = Some((i, e));
                        e
                    }
                }
                11 | 12 => {
                    let (e, v) = match c {
                        b't' => (literal(b, i, b"true")?, Some(true)),
                        b'f' => (literal(b, i, b"false")?, Some(false)),
                        b'n' => (literal(b, i, b"null")?, None),
                        _ => return None,
                    };
                    flags[slot - 11] = v;
                    e
                }
                _ => value(b, i, 1)?,
            };
            i = ws(b, end);
            match *b.get(i)? {
                b',' => i = ws(b, i + 1),
                b'}' => break i + 1,
                _ => return None,
            }
        }
    };
    // Pass 2: the text (serde requires UTF-8 of strings and raw values; checking the whole
    // element is stricter) and the decoded strings.
    let s = std::str::from_utf8(&b[start..end]).ok()?;
    let raw = |v: Option<Span>| v.and_then(|(a, e)| s.get(a - start..e - start));
    let f = Fields {
        ph: decode(s, start, strs[0])?,
        name: decode(s, start, strs[1])?,
        cat: decode(s, start, strs[2])?,
        bp: decode(s, start, strs[3])?,
        ts: raw(raws[0]),
        dur: raw(raws[1]),
        pid: raw(raws[2]),
        tid: raw(raws[3]),
        id: raw(raws[4]),
        bind_id: raw(raws[5]),
        args: raw(raws[6]),
        flow_in: flags[0],
        flow_out: flags[1],
    };
    Some((f, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_runs_stop_at_the_first_special_byte() {
        for len in 0..40 {
            for special in [b'"', b'\\', b'\n', 0u8, 0x1f] {
                let mut s = vec![b'a'; len];
                s.extend_from_slice("é€😀".as_bytes());
                let at = s.len();
                s.push(special);
                s.extend_from_slice(b"\"\\\x01tail");
                assert_eq!(string_run(&s, 0), at, "{len} {special}");
            }
            assert_eq!(string_run(&vec![b'x'; len], 0), len);
        }
    }

    #[test]
    fn fields_or_doubt() {
        let f = |s: &str| fields(s.as_bytes(), 0).map(|(f, e)| (format!("{f:?}"), e));
        let s = r#"{ "ph" : "X", "ts":1.5e3,"name":"a\"b\u00e9\ud83d\ude00","args":{"x":[1,{}]} } tail"#;
        let (d, e) = f(s).unwrap();
        assert_eq!(e, s.find(" tail").unwrap());
        assert!(d.contains(r#"name: Some("a\"bé😀")"#), "{d}");
        assert!(d.contains(r#"ts: Some("1.5e3")"#), "{d}");
        assert!(d.contains(r#"args: Some("{\"x\":[1,{}]}")"#), "{d}");
        assert!(f(r#"{"ph":null,"ts":null,"flow_in":null}"#).is_some());
        // Serde decides: duplicates, escaped keys, wrong types, lone surrogates, bad JSON.
        for s in [
            r#"{"ph":"X","ph":"X"}"#,
            r#"{"p\u0068":"X"}"#,
            r#"{"ph":5}"#,
            r#"{"flow_in":1}"#,
            r#"{"name":"\ud800"}"#,
            r#"{"name":"\udc00"}"#,
            r#"{"ts":01}"#,
            r#"{"ts":1.}"#,
            r#"{"ts":-}"#,
            r#"{"args":{"a":1,}}"#,
            r#"{"args":[1 2]}"#,
            r#"{"x":tru}"#,
            "{\"name\":\"tab\there\"}",
            r#"{"a":"\x"}"#,
            r#"{"ph":"X""#,
            "[]",
        ] {
            assert!(f(s).is_none(), "{s}");
        }
        let deep = format!("{{\"args\":{}{}}}", "[".repeat(120), "]".repeat(120));
        assert!(f(&deep).is_none(), "deep nesting goes to serde");
        assert!(fields(b"{\"name\":\"\xff\"}", 0).is_none(), "invalid UTF-8");
    }
}
