//! Ingestion speed on a synthetic torch.profiler-like trace held in memory: JSON parse with
//! 1 thread and with all cores, then the columnar cache written and read back. Not a
//! benchmark harness (that is `gpugraph bench trace`, not written yet); a quick measurement.
//!
//! `cargo run --release -p gpugraph-trace --example parse_speed [EVENTS]`

use std::time::Instant;

use gpugraph_trace::cache::{read_cache, write_cache};
use gpugraph_trace::{parse_chrome_trace, IngestOptions};

fn main() {
    let events: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut s = String::from("{\"traceEvents\":[\n");
    let base = 1_700_000_000_000_000u64;
    for i in 0..events {
        let (tid, ts) = (i % 16, base + i as u64 * 2);
        s.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::op{}\",\"pid\":1,\"tid\":{tid},\"ts\":{ts}.{:03},\"dur\":{}.5,\"args\":{{\"External id\":{i},\"Input Dims\":[[8,16],[32,16]]}}}},\n",
            i % 97,
            i % 1000,
            i % 7
        ));
        if i % 10 == 0 {
            s.push_str(&format!(
                "{{\"ph\":\"s\",\"id\":{i},\"pid\":1,\"tid\":{tid},\"ts\":{ts}.{:03},\"cat\":\"ac2g\",\"name\":\"ac2g\"}},\n{{\"ph\":\"f\",\"id\":{i},\"pid\":1,\"tid\":{},\"ts\":{}.{:03},\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}},\n",
                i % 1000,
                (tid + 1) % 16,
                ts + 2,
                (i + 1) % 1000
            ));
        }
    }
    s.push_str(
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"python3\"}}]}\n",
    );
    let mb = s.len() as f64 / 1e6;
    for threads in [1, 0] {
        let t = Instant::now();
        let m = parse_chrome_trace(s.as_bytes(), IngestOptions { threads }).unwrap();
        let dt = t.elapsed().as_secs_f64();
        println!(
            "parse ({} threads): {mb:.1} MB, {} spans, {} flow links in {dt:.3} s ({:.0} MB/s)",
            if threads == 0 {
                "all".to_string()
            } else {
                threads.to_string()
            },
            m.spans.len(),
            m.dependencies.len(),
            mb / dt
        );
        if threads == 0 {
            let t = Instant::now();
            let bytes = write_cache(&m, [0, 0]);
            let w = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let (back, _) = read_cache(&bytes).unwrap();
            let r = t.elapsed().as_secs_f64();
            assert_eq!(back.spans.len(), m.spans.len());
            println!(
                "cache: {:.1} MB written in {w:.3} s, read in {r:.3} s",
                bytes.len() as f64 / 1e6
            );
        }
    }
}
