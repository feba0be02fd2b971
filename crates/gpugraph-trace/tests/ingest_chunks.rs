//! The fast path's parallel chunks: boundaries with 2, 3 and 7 threads (true and wrong
//! chunk-start guesses), serde fallbacks in every chunk, mutations of a chunked trace, and
//! extreme timestamps.

mod ingest_common;

use gpugraph_trace::parse_chrome_trace;
use ingest_common::{agree, opts, rounds, seed};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A trace of `n` events of about 400 bytes whose args hold arrays of objects and strings
/// that look like event boundaries (`}, {`), so some chunk-start guesses fall inside events.
fn boundary_trace(n: usize, tricky: bool) -> String {
    let mut s = String::from("{\"traceEvents\": [\n");
    for i in 0..n {
        let args = if tricky && i % 3 == 0 {
            format!(
                r#"{{"objs": [{{"a": {i}}}, {{"b": "}}, {{\"c\": 1}}"}}, {{"d": [{{}}, {{}}]}}], "pad": "{}"}}"#,
                "x".repeat(i % 200)
            )
        } else {
            format!(
                r#"{{"External id": {i}, "pad": "{}"}}"#,
                "y".repeat(i % 150)
            )
        };
        let name = if i % 11 == 0 {
            "esc\\u00e9\\\""
        } else {
            "aten::op"
        };
        s.push_str(&format!(
            "  {{\"ph\": \"X\", \"name\": \"{name}{}\", \"pid\": 1, \"tid\": {}, \"ts\": {}.{:03}, \"dur\": 1.5, \"args\": {args}}},\n",
            i % 17,
            i % 5,
            1_700_000_000_000u64 + i as u64,
            i % 1000
        ));
        if i % 7 == 0 {
            s.push_str(&format!(
                "  {{\"ph\": \"s\", \"id\": {i}, \"pid\": 1, \"tid\": 0, \"ts\": {}, \"cat\": \"ac2g\"}},\n",
                1_700_000_000_000u64 + i as u64
            ));
        }
    }
    s.push_str("  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"p\"}}\n]}");
    s
}

#[test]
fn chunk_boundaries_with_2_3_and_7_threads() {
    for tricky in [false, true] {
        // ~7.5 MB: more than one chunk per thread at 7 threads.
        let text = boundary_trace(22_000, tricky);
        let one = parse_chrome_trace(text.as_bytes(), opts(1)).unwrap();
        let reference = agree(text.as_bytes(), 1).unwrap();
        for threads in [2, 3, 7] {
            let e = agree(text.as_bytes(), threads).unwrap();
            assert_eq!(e, reference, "threads {threads}");
            let m = parse_chrome_trace(text.as_bytes(), opts(threads)).unwrap();
            assert_eq!(m, one, "threads {threads}");
        }
        assert!(one.report.skipped.is_empty(), "{:?}", one.report.skipped);
        // A syntax error near the end is the reference's error whatever the thread count.
        let mut bad = text.clone().into_bytes();
        let at = text.rfind("\"dur\": 1.5").unwrap() + 9;
        bad[at] = b'#';
        let e1 = agree(&bad, 1).unwrap_err();
        for threads in [2, 3, 7] {
            let e = agree(&bad, threads).unwrap_err();
            assert_eq!(format!("{e:?}"), format!("{e1:?}"));
        }
    }
}

#[test]
fn fallbacks_inside_a_big_trace_keep_file_order() {
    // Elements the fast parser leaves to serde (escaped keys, duplicates, wrong types) in
    // every chunk of a parallel parse.
    let mut text = String::from("[");
    for i in 0..30_000u32 {
        let e = match i % 1000 {
            0 => format!(r#"{{"p\u0068":"X","ts":{i},"dur":1,"name":"escaped key"}}"#),
            1 => format!(r#"{{"ph":"X","ph":"X","ts":{i}}}"#),
            2 => format!(r#"{{"ph":"X","ts":{i},"name":5}}"#),
            3 => format!(r#"{{"ph":"X","ts":{i},"flow_in":1}}"#),
            4 => format!(r#"{{"ph":"X","ts":{i},"name":"pair \ud83d\ude00 \u00e9"}}"#),
            _ => format!(
                r#"{{"ph":"X","ts":{i},"dur":1,"name":"n{}","pid":1,"tid":{},"args":{{"pad":"{}"}}}}"#,
                i % 13,
                i % 3,
                "z".repeat(200)
            ),
        };
        text.push_str(&e);
        text.push_str(",\n");
    }
    text.push(']');
    let reference = agree(text.as_bytes(), 1).unwrap();
    for threads in [2, 3, 7] {
        assert_eq!(agree(text.as_bytes(), threads).unwrap(), reference);
    }
    let m = parse_chrome_trace(text.as_bytes(), opts(3)).unwrap();
    assert_eq!(m.report.skipped["malformed field"].count, 90);
    assert!(m.names.iter().any(|n| n == "pair 😀 é"));
    assert!(m.names.iter().any(|n| n == "escaped key"));
}

#[test]
fn mutations_of_a_chunked_trace_agree() {
    // ~2.7 MB: three chunks at 3 threads; each mutation lands anywhere, chunk starts included.
    let text = boundary_trace(8_000, true);
    let mut r = StdRng::seed_from_u64(seed(3));
    for _ in 0..rounds(12) {
        let mut b = text.clone().into_bytes();
        let at = r.random_range(0..b.len());
        match r.random_range(0..3) {
            0 => b[at] = b"\"{}[],:x\\"[r.random_range(0..9)],
            1 => {
                b.remove(at);
            }
            _ => b.truncate(at),
        }
        let one = agree(&b, 1);
        let three = agree(&b, 3);
        match (one, three) {
            (Ok(a), Ok(c)) => assert_eq!(a, c),
            (Err(a), Err(c)) => assert_eq!(format!("{a:?}"), format!("{c:?}")),
            (a, c) => panic!("{:?} vs {:?}", a.is_ok(), c.is_ok()),
        }
    }
}

#[test]
fn extreme_timestamps_do_not_panic() {
    let s = r#"[{"ph":"X","ts":-9223372036854775.808,"dur":9223372036854775.807,"name":"a"},
        {"ph":"B","ts":9223372036854775.807,"name":"b"},{"ph":"E","ts":-9223372036854775.808},
        {"ph":"B","ts":9223372036854775.807,"name":"open"},
        {"ph":"s","id":1,"ts":9223372036854775.807},{"ph":"f","id":1,"ts":-9223372036854775.808}]"#;
    let m = parse_chrome_trace(s.as_bytes(), opts(1)).unwrap();
    assert_eq!(m.report.events, 6);
}
