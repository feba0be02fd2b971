//! The structural scan: one pass over the bytes that finds the byte range of every element of
//! the trace's event array without building any value (strings and brackets only; numbers and
//! literals are checked later by the per-event parser). The ranges let events be parsed in
//! parallel and give every error an exact byte offset.
//!
//! Accepted shapes (the Trace Event Format): a bare array `[ev, ev, ...]`, whose closing `]`
//! may be missing (Chrome writes it so that a killed process still leaves a usable trace),
//! and an object with a `traceEvents` array among other keys (`displayTimeUnit`,
//! `otherData`, ...), whose other values are skipped.

use std::ops::Range;

use crate::error::TraceError;

/// What the scan found.
#[derive(Debug, Default)]
pub struct Layout {
    /// Byte ranges of the event elements, in file order.
    pub events: Vec<Range<usize>>,
    /// Whether the input was the bare array form.
    pub bare_array: bool,
    /// The object form's `displayTimeUnit` string, if any.
    pub display_time_unit: Option<String>,
}

fn syntax(offset: usize, what: impl Into<String>) -> TraceError {
    TraceError::Syntax {
        offset: offset as u64,
        what: what.into(),
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The index just past the string that starts at `b[i] == '"'`.
fn skip_string(b: &[u8], i: usize) -> Result<usize, TraceError> {
    let mut j = i + 1;
    loop {
        match memchr::memchr2(b'"', b'\\', &b[j..]) {
            None => return Err(syntax(i, "unterminated string")),
            Some(k) => {
                j += k;
                if b[j] == b'\\' {
                    if j + 1 >= b.len() {
                        return Err(syntax(i, "unterminated string"));
                    }
                    j += 2;
                } else {
                    return Ok(j + 1);
                }
            }
        }
    }
}

/// The index just past the value starting at `i` (after whitespace): strings and bracket
/// nesting are checked, scalars are not (the per-event parser checks them).
pub fn skip_value(b: &[u8], i: usize) -> Result<usize, TraceError> {
    match b.get(i) {
        None => Err(syntax(i, "value expected, found the end of the input")),
        Some(b'"') => skip_string(b, i),
        Some(b'{') | Some(b'[') => {
            let mut stack: Vec<u8> = vec![b[i]];
            let mut j = i + 1;
            while let Some(&c) = b.get(j) {
                match c {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => stack.push(c),
                    b'}' | b']' => {
                        let open = stack.pop().unwrap_or(0);
                        let want = if open == b'{' { b'}' } else { b']' };
                        if c != want {
                            return Err(syntax(
                                j,
                                format!("'{}' closes '{}'", c as char, open as char),
                            ));
                        }
                        if stack.is_empty() {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err(syntax(
                i,
                format!(
                    "'{}' never closed before the end of the input",
                    b[i] as char
                ),
            ))
        }
        Some(c) if c.is_ascii_digit() || matches!(c, b'-' | b't' | b'f' | b'n') => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            Ok(j)
        }
        Some(&c) => Err(syntax(i, format!("unexpected '{}'", c.escape_ascii()))),
    }
}

/// Splits the array whose `[` is at `i`; returns the element ranges and the index past `]`.
/// `open_end`: the bare form, where the input may end inside the array after an element or
/// a comma.
fn split_array(
    b: &[u8],
    i: usize,
    open_end: bool,
) -> Result<(Vec<Range<usize>>, usize), TraceError> {
    let mut out = Vec::new();
    let mut j = skip_ws(b, i + 1);
    if b.get(j) == Some(&b']') {
        return Ok((out, j + 1));
    }
    loop {
        if j >= b.len() && open_end {
            return Ok((out, j));
        }
        let end = skip_value(b, j)?;
        out.push(j..end);
        j = skip_ws(b, end);
        match b.get(j) {
            Some(b',') => {
                j = skip_ws(b, j + 1);
                // A trailing comma before `]` (or before the end in the bare form).
                if b.get(j) == Some(&b']') {
                    return Ok((out, j + 1));
                }
            }
            Some(b']') => return Ok((out, j + 1)),
            None if open_end => return Ok((out, j)),
            None => return Err(syntax(j, "the event array is not closed")),
            Some(&c) => {
                return Err(syntax(
                    j,
                    format!(
                        "',' or ']' expected after an event, found '{}'",
                        c.escape_ascii()
                    ),
                ))
            }
        }
    }
}

/// Scans `b` (see the module doc).
pub fn scan(b: &[u8]) -> Result<Layout, TraceError> {
    scan_with(b, &mut split_array)
}

/// Splits (or parses) the event array whose `[` is at `i`: the element ranges and the index
/// past its end; `open_end`: the bare form (see [`split_array`]).
pub type ArrayFn<'f> =
    dyn FnMut(&[u8], usize, bool) -> Result<(Vec<Range<usize>>, usize), TraceError> + 'f;

/// [`scan`] with the event array handled by `array` (the fast path parses it in place).
pub fn scan_with(b: &[u8], array: &mut ArrayFn<'_>) -> Result<Layout, TraceError> {
    let mut i = 0;
    if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
        i = 3;
    }
    i = skip_ws(b, i);
    match b.get(i) {
        Some(b'[') => {
            let (events, end) = array(b, i, true)?;
            let end = skip_ws(b, end);
            if end < b.len() {
                return Err(syntax(end, "trailing data after the event array"));
            }
            Ok(Layout {
                events,
                bare_array: true,
                display_time_unit: None,
            })
        }
        Some(b'{') => {
            let mut layout = Layout::default();
            let mut found = false;
            let mut j = skip_ws(b, i + 1);
            if b.get(j) == Some(&b'}') {
                return Err(TraceError::NotATrace {
                    offset: i as u64,
                    what: "an empty object (no traceEvents)".into(),
                });
            }
            loop {
                if b.get(j) != Some(&b'"') {
                    return Err(syntax(j, "a key string expected"));
                }
                let key_end = skip_string(b, j)?;
                let key = &b[j + 1..key_end - 1];
                j = skip_ws(b, key_end);
                if b.get(j) != Some(&b':') {
                    return Err(syntax(j, "':' expected after a key"));
                }
                j = skip_ws(b, j + 1);
                if key == b"traceEvents" {
                    if b.get(j) != Some(&b'[') {
                        return Err(TraceError::NotATrace {
                            offset: j as u64,
                            what: "traceEvents is not an array".into(),
                        });
                    }
                    let (events, end) = array(b, j, false)?;
                    layout.events = events;
                    found = true;
                    j = end;
                } else {
                    let end = skip_value(b, j)?;
                    if key == b"displayTimeUnit" && b[j] == b'"' {
                        layout.display_time_unit =
                            Some(String::from_utf8_lossy(&b[j + 1..end - 1]).into_owned());
                    }
                    j = end;
                }
                j = skip_ws(b, j);
                match b.get(j) {
                    Some(b',') => j = skip_ws(b, j + 1),
                    Some(b'}') => {
                        j = skip_ws(b, j + 1);
                        break;
                    }
                    None => return Err(syntax(j, "the top-level object is not closed")),
                    Some(&c) => {
                        return Err(syntax(
                            j,
                            format!("',' or '}}' expected, found '{}'", c.escape_ascii()),
                        ))
                    }
                }
            }
            if j < b.len() {
                return Err(syntax(j, "trailing data after the top-level object"));
            }
            if !found {
                return Err(TraceError::NotATrace {
                    offset: i as u64,
                    what: "an object without a traceEvents array".into(),
                });
            }
            Ok(layout)
        }
        None => Err(TraceError::NotATrace {
            offset: i as u64,
            what: "empty input".into(),
        }),
        Some(&c) => Err(TraceError::NotATrace {
            offset: i as u64,
            what: format!("starts with '{}', not '[' or '{{'", c.escape_ascii()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(s: &str) -> Vec<&str> {
        scan(s.as_bytes())
            .unwrap()
            .events
            .into_iter()
            .map(|r| &s[r])
            .collect()
    }

    #[test]
    fn both_forms_and_open_ends() {
        assert_eq!(
            ranges(r#"[{"a":"]"}, {"b":[1,{}]} ]"#),
            [r#"{"a":"]"}"#, r#"{"b":[1,{}]}"#]
        );
        assert_eq!(
            ranges("[{\"a\":1},\n{\"b\":2},\n"),
            ["{\"a\":1}", "{\"b\":2}"]
        );
        assert_eq!(ranges("[{\"a\":1}"), ["{\"a\":1}"]);
        assert_eq!(ranges("[]"), Vec::<&str>::new());
        let obj = r#"{"otherData":{"x":[1,2]},"traceEvents":[{"ph":"X"}],"displayTimeUnit":"ns"}"#;
        assert_eq!(ranges(obj), [r#"{"ph":"X"}"#]);
        assert_eq!(
            scan(obj.as_bytes()).unwrap().display_time_unit.as_deref(),
            Some("ns")
        );
    }

    #[test]
    fn errors_name_the_offset() {
        let offset = |s: &str| match scan(s.as_bytes()) {
            Err(TraceError::Syntax { offset, .. }) | Err(TraceError::NotATrace { offset, .. }) => {
                offset
            }
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(offset(r#"[{"a":"x}]"#), 6);
        assert_eq!(offset(r#"[{"a":1]}"#), 7);
        assert_eq!(offset(r#"[{"a":1} {"b":2}]"#), 9);
        assert_eq!(offset(r#"{"traceEvents":[{"a":1}"#), 23);
        assert_eq!(offset(r#"{"x":1}"#), 0);
        assert_eq!(offset("  7"), 2);
        assert_eq!(offset(r#"{"traceEvents":3}"#), 15);
    }
}
