//! The table `bench trace` prints: each row with its timing source and the target it meets
//! or misses.

use super::super::report::{Summary, Table};
use super::TraceRow;

pub(super) fn print_rows(rows: &[TraceRow]) {
    let mut table = Table::new([
        "op",
        "spans",
        "flows",
        "JSON MB",
        "median [min-max]",
        "rate",
        "timing",
        "target",
    ]);
    for r in rows {
        let name = match &r.peer {
            Some(p) => format!("{} ({p})", r.op),
            None => r.op.clone(),
        };
        if let Some(s) = &r.skipped {
            table.row([
                name,
                r.elements.to_string(),
                "-".into(),
                "-".into(),
                format!("skipped: {s}"),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        let s = Summary {
            median: r.median_ms,
            min: r.min_ms,
            max: r.max_ms,
            mean: r.mean_ms,
            samples: r.samples.clone(),
        };
        let (value, rate) = if r.op.ends_with("-encode") {
            let us = Summary {
                median: s.median * 1e3,
                min: s.min * 1e3,
                max: s.max * 1e3,
                mean: s.mean * 1e3,
                samples: s.samples.iter().map(|x| x * 1e3).collect(),
            };
            (format!("{} µs", us.show(1)), "-".to_string())
        } else if r.op.starts_with("frame") {
            (
                format!("{} ms", s.show(3)),
                format!(
                    "{:.2} Gspans/s",
                    r.elements as f64 / (r.median_ms * 1e-3) / 1e9
                ),
            )
        } else {
            let mb = if r.op == "json-open" {
                r.json_bytes as f64
            } else {
                r.cache_bytes.unwrap_or(0) as f64
            } / 1e6;
            (
                format!("{} ms", s.show(1)),
                format!("{:.0} MB/s", mb / (r.median_ms * 1e-3)),
            )
        };
        let target = r.target.as_ref().map_or("-".to_string(), |t| {
            let limit = if t.limit_ms < 1.0 {
                format!("≤ {:.0} µs", t.limit_ms * 1e3)
            } else if t.limit_ms < 10.0 {
                format!("≤ {:.1} ms", t.limit_ms)
            } else {
                format!("≤ {:.0} ms", t.limit_ms)
            };
            format!("{} {limit}", if t.met { "meets" } else { "MISSES" })
        });
        table.row([
            name,
            r.elements.to_string(),
            r.flows.to_string(),
            format!("{:.1}", r.json_bytes as f64 / 1e6),
            value,
            rate,
            r.timing.to_string(),
            target,
        ]);
    }
    print!("{table}");
    let mut seen = Vec::new();
    for t in rows.iter().filter_map(|r| r.target.as_ref()) {
        if !seen.contains(&t.what) {
            seen.push(t.what.clone());
        }
    }
    for what in seen {
        println!("target: {what}");
    }
}
