//! Chrome Trace Event Format ingestion and the columnar cache: the committed torch.profiler-
//! shaped fixture against its Python reference, both JSON forms, gzip, the corner cases
//! (unbalanced B/E, zero durations, overlaps, flows with missing ends, cycles, bind IDs,
//! metadata-only processes), named errors with byte offsets, and parallel = serial parsing.

use std::collections::BTreeMap;
use std::io::Write;

use gpugraph_trace::cache::{read_cache, write_cache};
use gpugraph_trace::cpu;
use gpugraph_trace::*;

const TORCH: &[u8] = include_bytes!("data/torch_small.json");
const TORCH_EXPECTED: &str = include_str!("data/torch_small.expected.json");

fn parse(s: &str) -> TraceModel {
    parse_chrome_trace(s.as_bytes(), IngestOptions::default()).unwrap()
}

/// Exact microseconds text ("12.345") → ticks.
fn ticks(us: &str) -> i64 {
    let (i, f) = us.split_once('.').unwrap_or((us, ""));
    let f = format!("{f:0<3}");
    let neg = i.starts_with('-');
    let v = i.trim_start_matches('-').parse::<i64>().unwrap() * 1000 + f.parse::<i64>().unwrap();
    if neg {
        -v
    } else {
        v
    }
}

#[test]
fn torch_fixture_matches_the_python_reference() {
    let m = parse_chrome_trace(TORCH, IngestOptions::default()).unwrap();
    let expected: serde_json::Value = serde_json::from_str(TORCH_EXPECTED).unwrap();
    assert_eq!(m.spans.len() as u64, expected["spans"].as_u64().unwrap());
    assert_eq!(
        m.report.flow_missing_end, 1,
        "the launch whose kernel never came"
    );
    assert_eq!(
        m.dependencies.len() as u64,
        expected["flows"].as_u64().unwrap()
    );
    // Every flow goes from a cudaLaunchKernel to a kernel on the GPU stream.
    for d in &m.dependencies {
        assert_eq!(m.name_of(d.from), "cudaLaunchKernel");
        assert!(m.spans[d.to as usize].flags().has(SpanFlags::FLOW_IN));
        let t = m.spans[d.to as usize].thread;
        assert_eq!(m.thread_label(t), "0:7 stream 7 ");
    }
    let stats = cpu::name_stats(&m);
    let exp = expected["stats"].as_object().unwrap();
    assert_eq!(exp.len(), m.names.len());
    for (name, e) in exp {
        let g = m.names.iter().position(|n| n == name).unwrap();
        let s = stats[g];
        assert_eq!(u64::from(s.count), e["count"].as_u64().unwrap(), "{name}");
        assert_eq!(
            s.total as i64,
            ticks(e["total_us"].as_str().unwrap()),
            "{name}"
        );
        assert_eq!(s.self_time, ticks(e["self_us"].as_str().unwrap()), "{name}");
    }
    // Processes by sort index: the python process before the GPU; string pids kept.
    let pids: Vec<String> = m.processes.iter().map(|p| p.pid.to_string()).collect();
    assert_eq!(pids, ["", "Traces", "4242", "0"]);
    assert_eq!(m.processes[3].name.as_deref(), Some("python3"));
    let py = m
        .find_thread(&TraceKey::Num(4242), &TraceKey::Num(4242))
        .unwrap();
    assert_eq!(
        m.threads[py as usize].lanes, 4,
        "step > op > addmm > launch"
    );
    assert_eq!(m.report.by_kind["X"], 46);
    assert_eq!(m.report.by_kind["M"], 10);
    assert_eq!(m.report.by_kind["s"], 10);
    assert_eq!(m.report.by_kind["f"], 9);
    assert_eq!(m.report.by_category["kernel"], 9);
    assert_eq!(m.report.display_time_unit.as_deref(), Some("ms"));
    assert!(m.report.skipped.is_empty(), "{:?}", m.report.skipped);
    // The origin is the first timestamp, kept exactly (epoch µs × 1000).
    assert_eq!(m.origin, 1_700_000_000_001_000_000);
    // Partitions: one contiguous range per process, in order, covering every span.
    let parts = m.partitions();
    assert_eq!(parts.first().unwrap().start, 0);
    assert_eq!(parts.last().unwrap().end as usize, m.spans.len());
    assert!(parts.windows(2).all(|w| w[0].end == w[1].start));
    // Args of the picked kernel come back from the source bytes.
    let k = m.dependencies[0].to;
    let args = gpugraph_trace::chrome::args_at(TORCH, m.source_offsets[k as usize]).unwrap();
    assert!(args.contains("\"correlation\": 100"), "{args}");
}

#[test]
fn gzip_and_parallel_parsing_give_the_same_model() {
    let plain = parse_chrome_trace(TORCH, IngestOptions::default()).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(TORCH).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(
        parse_chrome_trace(&gz, IngestOptions::default()).unwrap(),
        plain
    );
    // A trace big enough for several parser threads: equal to the one-thread parse.
    let mut s = String::from("[");
    for i in 0..20_000u32 {
        let tid = i % 7;
        s.push_str(&format!(
            r#"{{"ph":"X","name":"n{}","pid":1,"tid":{tid},"ts":{}.{:03},"dur":{}}},"#,
            i % 13,
            1_700_000_000_000u64 + u64::from(i) * 3,
            i % 1000,
            i % 5
        ));
        if i % 10 == 0 {
            s.push_str(&format!(
                r#"{{"ph":"s","id":{i},"pid":1,"tid":{tid},"ts":{}}},{{"ph":"f","bp":"e","id":{i},"pid":1,"tid":{},"ts":{}}},"#,
                1_700_000_000_000u64 + u64::from(i) * 3,
                (tid + 1) % 7,
                1_700_000_000_000u64 + u64::from(i) * 3 + 30
            ));
        }
    }
    let one = parse_chrome_trace(s.as_bytes(), IngestOptions { threads: 1 }).unwrap();
    let four = parse_chrome_trace(s.as_bytes(), IngestOptions { threads: 4 }).unwrap();
    assert_eq!(one, four);
    assert_eq!(one.spans.len(), 20_000);
    assert!(one.report.bare_array);
}

#[test]
fn begin_end_instants_overlaps_and_metadata_only_processes() {
    let m = parse(
        r#"[
        {"ph":"B","name":"outer","pid":1,"tid":1,"ts":10},
        {"ph":"B","name":"inner","pid":1,"tid":1,"ts":12},
        {"ph":"E","pid":1,"tid":1,"ts":15},
        {"ph":"E","pid":1,"tid":1,"ts":20},
        {"ph":"E","pid":1,"tid":1,"ts":21},
        {"ph":"B","name":"open","pid":1,"tid":1,"ts":30},
        {"ph":"X","name":"zero","pid":1,"tid":2,"ts":11,"dur":0},
        {"ph":"X","name":"a","pid":1,"tid":2,"ts":10,"dur":10},
        {"ph":"X","name":"b","pid":1,"tid":2,"ts":15,"dur":10},
        {"ph":"X","name":"c","pid":1,"tid":2,"ts":22,"dur":1},
        {"ph":"i","name":"mark","pid":1,"tid":2,"ts":40},
        {"ph":"C","name":"counter","pid":1,"ts":5,"args":{"v":1}},
        {"ph":"b","name":"async","pid":1,"id":3,"ts":5},
        {"ph":"X","name":"notime","pid":1,"tid":2},
        {"ph":"M","name":"process_name","pid":9,"args":{"name":"idle"}},
        {"ph":"M","name":"thread_name","pid":1,"tid":5,"args":{"name":"quiet"}}
        "#,
    );
    let by_name = |n: &str| {
        let g = m.names.iter().position(|x| x == n).unwrap() as u32;
        let i = m.spans.iter().position(|s| s.group == g).unwrap();
        (i as u32, m.spans[i])
    };
    let (outer, o) = by_name("outer");
    let (_, i) = by_name("inner");
    assert_eq!((o.start(), o.duration(), o.lane()), (0, 10_000, 0));
    assert_eq!((i.start(), i.duration(), i.lane()), (2_000, 3_000, 1));
    assert!(o.flags().has(SpanFlags::BEGIN_END));
    assert_eq!(m.report.unmatched_ends, 1);
    assert_eq!(m.report.unmatched_begins, 1);
    let (_, open) = by_name("open");
    assert!(open.flags().has(SpanFlags::UNFINISHED));
    assert_eq!(
        open.end(),
        m.end,
        "an unfinished span runs to the trace end"
    );
    assert_eq!(m.end, 30_000, "the instant at 40 is the latest event");
    let (_, a) = by_name("a");
    let (zi, z) = by_name("zero");
    let (bi, b) = by_name("b");
    let (_, c) = by_name("c");
    assert_eq!((a.lane(), z.lane(), b.lane(), c.lane()), (0, 1, 1, 2));
    assert!(z.flags().has(SpanFlags::ZERO_DURATION));
    assert!(
        b.flags().has(SpanFlags::OVERLAP),
        "b overlaps a without nesting"
    );
    assert_eq!(m.parents[bi as usize], NO_SPAN);
    assert_eq!(m.parents[zi as usize], by_name("a").0);
    assert_eq!(m.parents[by_name("inner").0 as usize], outer);
    let (_, mark) = by_name("mark");
    assert!(mark.flags().has(SpanFlags::INSTANT));
    assert_eq!(mark.flags().draw_group(), 1);
    assert_eq!(b.flags().draw_group(), 2);
    assert_eq!(m.report.skipped["event kind not used for spans"].count, 2);
    assert_eq!(m.report.skipped["no timestamp"].count, 1);
    // Process 9 has metadata only: an empty partition in its place; thread 1:5 likewise.
    let idle = m
        .processes
        .iter()
        .find(|p| p.pid == TraceKey::Num(9))
        .unwrap();
    assert!(idle.spans.is_empty() && idle.threads.is_empty());
    let quiet = m.find_thread(&TraceKey::Num(1), &TraceKey::Num(5)).unwrap();
    assert_eq!(m.threads[quiet as usize].lanes, 0);
    // Spans on one (thread, lane) never overlap.
    for t in 0..m.threads.len() as u32 {
        let mut by_lane: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for s in m.spans.iter().filter(|s| s.thread == t) {
            by_lane
                .entry(s.lane())
                .or_default()
                .push((s.start(), s.end()));
        }
        for v in by_lane.values() {
            assert!(v.windows(2).all(|w| w[0].1 <= w[1].0), "{v:?}");
        }
    }
}

#[test]
fn flows_with_missing_ends_cycles_and_bind_ids() {
    let m = parse(
        r#"{"traceEvents":[
        {"ph":"X","name":"A","pid":1,"tid":1,"ts":0,"dur":10},
        {"ph":"X","name":"B","pid":1,"tid":2,"ts":0,"dur":10},
        {"ph":"X","name":"C","pid":2,"tid":1,"ts":20,"dur":10},
        {"ph":"s","id":1,"pid":1,"tid":1,"ts":1},
        {"ph":"f","id":1,"pid":1,"tid":2,"ts":2,"bp":"e"},
        {"ph":"s","id":2,"pid":1,"tid":2,"ts":3},
        {"ph":"f","id":2,"pid":1,"tid":1,"ts":4,"bp":"e"},
        {"ph":"s","id":3,"pid":1,"tid":1,"ts":5},
        {"ph":"t","id":3,"pid":1,"tid":2,"ts":6,"bp":"e"},
        {"ph":"f","id":3,"pid":2,"tid":1,"ts":15},
        {"ph":"f","id":4,"pid":1,"tid":1,"ts":5,"bp":"e"},
        {"ph":"s","id":5,"pid":7,"tid":7,"ts":5},
        {"ph":"X","name":"P","pid":2,"tid":2,"ts":40,"dur":1,"bind_id":"0xa","flow_out":true},
        {"ph":"X","name":"Q","pid":2,"tid":2,"ts":45,"dur":1,"bind_id":"0xa","flow_in":true},
        {"ph":"X","name":"R","pid":2,"tid":2,"ts":50,"dur":1,"bind_id":"0xb","flow_out":true}
        ]}"#,
    );
    let id = |n: &str| {
        let g = m.names.iter().position(|x| x == n).unwrap() as u32;
        m.spans.iter().position(|s| s.group == g).unwrap() as u32
    };
    let edges: Vec<(u32, u32, u32)> = m
        .dependencies
        .iter()
        .map(|d| (d.from, d.to, d.kind))
        .collect();
    let (a, b, c) = (id("A"), id("B"), id("C"));
    let flow = DependencyKind::Flow as u32;
    assert_eq!(
        edges,
        [
            (a, b, flow),
            (b, a, flow),
            (a, b, flow),
            (b, c, flow),
            (id("P"), id("Q"), DependencyKind::Bind as u32)
        ],
        "a cycle A→B→A, a chain A→B→C where f binds to the next slice"
    );
    assert_eq!(m.report.flow_missing_start, 1);
    assert_eq!(m.report.flow_missing_end, 1);
    assert_eq!(m.report.flow_unbound, 1);
    assert_eq!(m.report.bind_unmatched, 1);
    assert!(!m.report.bare_array);
}

#[test]
fn bad_input_is_a_named_error_with_the_byte_offset() {
    let err = |s: &str| parse_chrome_trace(s.as_bytes(), IngestOptions::default()).unwrap_err();
    match err(r#"[{"ph":"X","ts":12x,"dur":1}]"#) {
        TraceError::Syntax { offset, .. } => assert_eq!(offset, 18, "at the x"),
        e => panic!("{e}"),
    }
    match err("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"unterminated}]}") {
        TraceError::Syntax { offset, .. } => assert_eq!(offset, 33),
        e => panic!("{e}"),
    }
    match err("\"just a string\"") {
        TraceError::NotATrace { offset, .. } => assert_eq!(offset, 0),
        e => panic!("{e}"),
    }
    let e = err("[{\"ph\":\"X\"} {}]");
    assert!(e.to_string().starts_with("byte 12: malformed JSON"), "{e}");
    assert!(matches!(
        parse_chrome_trace(&[0x1f, 0x8b, 1, 2, 3], IngestOptions::default()),
        Err(TraceError::Gzip { .. })
    ));
    // Valid JSON, wrong types: skipped and counted with the offset, never fatal.
    let m = parse(
        r#"[{"ph":"X","ts":1,"dur":1,"name":"ok"}, {"ph":5,"ts":1}, {"ph":"X","ts":"soon"}]"#,
    );
    assert_eq!(m.spans.len(), 1);
    assert_eq!(m.report.skipped["malformed field"].first_offset, 40);
    assert_eq!(m.report.skipped["timestamp is not a number"].count, 1);
}

#[test]
fn cache_round_trips_and_rejects_damage() {
    let m = parse_chrome_trace(TORCH, IngestOptions::default()).unwrap();
    let bytes = write_cache(&m, [7, 9]);
    let (back, stamp) = read_cache(&bytes).unwrap();
    assert_eq!(back, m);
    assert_eq!(stamp, [7, 9]);
    let mut bad = bytes.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert!(matches!(
        read_cache(&bad),
        Err(TraceError::CacheChecksum { .. })
    ));
    assert!(matches!(
        read_cache(&bytes[..bytes.len() - 5]),
        Err(TraceError::CacheTruncated { .. })
    ));
    let mut old = bytes.clone();
    old[8] = 99;
    assert!(matches!(
        read_cache(&old),
        Err(TraceError::CacheVersion { found: 99, .. })
    ));
    assert!(matches!(
        read_cache(b"not a cache at all, really not"),
        Err(TraceError::CacheFormat { offset: 0, .. })
    ));
    let empty = parse("[]");
    assert_eq!(read_cache(&write_cache(&empty, [0, 0])).unwrap().0, empty);
}
