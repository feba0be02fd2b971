//! Helpers shared by the ingestion tests: both paths of `parse_events` compared, options,
//! seeds and round counts.

#![allow(dead_code)]

use gpugraph_trace::chrome::block::Events;
use gpugraph_trace::chrome::parse_events;
use gpugraph_trace::{IngestOptions, TraceError};

/// Rounds of the random tests: `base` × `INGEST_FAST_SCALE` (default 1; raise it for a
/// longer search).
pub fn rounds(base: usize) -> usize {
    let scale = std::env::var("INGEST_FAST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    base * scale
}

/// A seed: `base`, varied by `INGEST_FAST_SEED` when set.
pub fn seed(base: u64) -> u64 {
    let extra: u64 = std::env::var("INGEST_FAST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    base ^ extra.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Options with `threads` parser threads.
pub fn opts(threads: usize) -> IngestOptions {
    IngestOptions { threads }
}

/// Fast and reference paths agree: the same events, or the same error.
pub fn agree(bytes: &[u8], threads: usize) -> Result<Events, TraceError> {
    let fast = parse_events(bytes, opts(threads), true);
    let reference = parse_events(bytes, opts(threads), false);
    match (fast, reference) {
        (Ok((fl, fe)), Ok((rl, re))) => {
            assert_eq!(fe, re, "{}", String::from_utf8_lossy(bytes));
            assert_eq!(
                (fl.bare_array, fl.display_time_unit),
                (rl.bare_array, rl.display_time_unit)
            );
            Ok(fe)
        }
        (Err(f), Err(r)) => {
            assert_eq!(
                format!("{f:?}"),
                format!("{r:?}"),
                "{}",
                String::from_utf8_lossy(bytes)
            );
            Err(f)
        }
        (f, r) => panic!(
            "fast {:?} vs reference {:?} on {}",
            f.map(|x| x.1.events.len()),
            r.map(|x| x.1.events.len()),
            String::from_utf8_lossy(bytes)
        ),
    }
}
