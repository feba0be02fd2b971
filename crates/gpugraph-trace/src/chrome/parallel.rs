//! The fast path's event array: parsed in one pass, in contiguous chunks on parallel threads,
//! without a separate structural scan.
//!
//! Chunks start at guessed element starts: the first `{` at or after an even split of the
//! array's bytes that follows `}` `,` (whitespace between allowed), which is where one event
//! ends and the next begins in every trace writer's output, but can also occur inside an
//! event (an array of objects in `args`, or a string). Each thread parses elements from its
//! start until the next element would start at or past the next chunk's start. The guesses
//! are then checked in order: chunk 0 starts at the array's true first element, so its
//! element starts are true; it must stop exactly at chunk 1's start, which makes that start
//! true, and so on. A wrong guess (or any doubt in a later chunk) reparses the array on one
//! thread; any doubt there gives `None`, and the caller takes the reference path.

use super::block::{merge, Events, ParsedBlock};
use super::fast;
use super::scan::skip_value;

/// Chunks smaller than this are not worth a thread.
const MIN_CHUNK_BYTES: usize = 1 << 20;
/// Chunks per parser thread (see [`parse_array`]).
const CHUNKS_PER_THREAD: usize = 4;

/// How a run over part of the event array ended.
#[derive(Debug, PartialEq, Eq)]
enum RunEnd {
    /// Stopped before the element that starts here (at or past the stop index).
    At(usize),
    /// The array ended: the index past its `]`, or the input's end in the bare form.
    End(usize),
}

#[inline]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// Parses elements from the one starting at `i` into `block` until the next would start at
/// or past `stop` or the array ends (`open_end`: the bare form, which may end after an
/// element or a comma). The separators follow the reference scan: `,` between elements, a
/// trailing `,` before `]` allowed. `None`: anything unusual.
fn run<'a>(
    b: &'a [u8],
    mut i: usize,
    stop: usize,
    open_end: bool,
    block: &mut ParsedBlock<'a>,
) -> Option<RunEnd> {
    loop {
        if i >= stop {
            return Some(RunEnd::At(i));
        }
        let end = match fast::fields(b, i) {
            Some((f, end)) => {
                block.push(f, i as u64);
                end
            }
            None => {
                // Serde decides this element (escaped keys, duplicates, wrong types, ...),
                // over the range the reference scan gives it (whose bracket check comes
                // first there: serde may stop at a wrong type before malformed JSON).
                let end = skip_value(b, i).ok()?;
                block.push_serde(b, i..end).ok()?;
                end
            }
        };
        let mut j = ws(b, end);
        match b.get(j) {
            Some(b',') => {
                j = ws(b, j + 1);
                if b.get(j) == Some(&b']') {
                    return Some(RunEnd::End(j + 1));
                }
                if j >= b.len() && open_end {
                    return Some(RunEnd::End(j));
                }
            }
            Some(b']') => return Some(RunEnd::End(j + 1)),
            None if open_end => return Some(RunEnd::End(j)),
            _ => return None,
        }
        i = j;
    }
}

/// The first likely element start at or after `from` (see the module doc).
fn guess(b: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let k = from + memchr::memchr(b'{', b.get(from..)?)?;
        let mut q = k;
        while q > 0 && is_ws(b[q - 1]) {
            q -= 1;
        }
        if q > 0 && b[q - 1] == b',' {
            let mut r = q - 1;
            while r > 0 && is_ws(b[r - 1]) {
                r -= 1;
            }
            if r > 0 && b[r - 1] == b'}' {
                return Some(k);
            }
        }
        from = k + 1;
    }
}

/// Parses the whole array from `first` (its first element) on one thread.
fn serial(b: &[u8], first: usize, open_end: bool) -> Option<(Events, usize)> {
    let mut block = ParsedBlock::new(0);
    match run(b, first, usize::MAX, open_end, &mut block)? {
        RunEnd::End(e) => Some((merge(vec![block]), e)),
        RunEnd::At(_) => None,
    }
}

/// Parses the event array whose `[` is at `i` with up to `threads` threads: the events and
/// the index past the array (`open_end`: the bare form). `None`: the fast path is unsure.
pub fn parse_array(b: &[u8], i: usize, open_end: bool, threads: usize) -> Option<(Events, usize)> {
    let first = ws(b, i + 1);
    if b.get(first) == Some(&b']') {
        return Some((Events::default(), first + 1));
    }
    if first >= b.len() && open_end {
        return Some((Events::default(), first));
    }
    if threads <= 1 {
        return serial(b, first, open_end);
    }
    // A few chunks per thread, taken from a shared queue: a thread that the system slows
    // (another process on its core) holds up less of the array.
    let chunks = (threads * CHUNKS_PER_THREAD)
        .min((b.len() - first) / MIN_CHUNK_BYTES)
        .max(1);
    let mut starts = vec![first];
    for k in 1..chunks {
        let at = first + (b.len() - first) / chunks * k;
        match guess(b, at.max(starts[starts.len() - 1] + 1)) {
            Some(g) => starts.push(g),
            None => break,
        }
    }
    if starts.len() == 1 {
        return serial(b, first, open_end);
    }
    match chunked(b, &starts, open_end, threads) {
        Some(done) => Some(done),
        None => serial(b, first, open_end),
    }
}

/// A parsed chunk and how its run ended.
#[cfg(not(target_arch = "wasm32"))]
type Chunk<'a> = (ParsedBlock<'a>, Option<RunEnd>);

#[cfg(not(target_arch = "wasm32"))]
fn chunked(b: &[u8], starts: &[usize], open_end: bool, threads: usize) -> Option<(Events, usize)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let bounds: Vec<std::ops::Range<usize>> = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| s..starts.get(k + 1).copied().unwrap_or(usize::MAX))
        .collect();
    let per = (b.len() / 300 / bounds.len()).min(1 << 24);
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Chunk<'_>>>> = bounds.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(bounds.len()) {
            s.spawn(|| {
                let (bounds, slots, next) = (&bounds, &slots, &next);
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(r) = bounds.get(k) else { break };
                    let mut block = ParsedBlock::new(per);
                    let end = run(b, r.start, r.end, open_end, &mut block);
                    if let Ok(mut slot) = slots[k].lock() {
                        *slot = Some((block, end));
                    }
                }
            });
        }
    });
    let last = bounds.len() - 1;
    let mut end = 0;
    let mut blocks = Vec::with_capacity(bounds.len());
    for (k, slot) in slots.into_iter().enumerate() {
        let (block, e) = slot.into_inner().ok()??;
        match e? {
            RunEnd::At(at) if k < last && at == bounds[k].end => {}
            RunEnd::End(e) if k == last => end = e,
            _ => return None,
        }
        blocks.push(block);
    }
    Some((merge(blocks), end))
}

#[cfg(target_arch = "wasm32")]
fn chunked(
    _b: &[u8],
    _starts: &[usize],
    _open_end: bool,
    _threads: usize,
) -> Option<(Events, usize)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(n: usize, inner: &str) -> String {
        let mut s = String::from("[");
        for i in 0..n {
            s.push_str(&format!(
                "{{\"ph\":\"X\",\"ts\":{i},\"name\":\"n\",\"args\":{inner}}},\n"
            ));
        }
        s.push_str("{}]");
        s
    }

    #[test]
    fn true_guesses_are_confirmed_and_wrong_ones_refused() {
        let s = array(
            40_000,
            r#"{"pad":"0123456789012345678901234567890123456789"}"#,
        );
        let b = s.as_bytes();
        let mid = guess(b, b.len() / 2).unwrap();
        let (e, end) = chunked(b, &[1, mid], false, 2).expect("a true start is confirmed");
        assert_eq!((e.events.len(), end), (40_001, b.len()));
        assert_eq!(e, serial(b, 1, false).unwrap().0);
        // A guess inside an event (an array of objects in args) is refused.
        let s = array(10, r#"{"objs":[{"a":1}, {"b":2}]}"#);
        let b = s.as_bytes();
        let inside = guess(b, 0).unwrap();
        assert_eq!(&b[inside..inside + 4], b"{\"b\"");
        assert!(chunked(b, &[1, inside], false, 2).is_none());
        assert_eq!(parse_array(b, 0, false, 4).unwrap().0.events.len(), 11);
    }
}
