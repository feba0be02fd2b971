//! The columnar trace cache: a [`TraceModel`] in a versioned little-endian binary file whose
//! columns (spans, parents, dependencies, ...) are stored as contiguous arrays, so a second
//! open is a read, a checksum and a few bulk copies instead of a JSON parse.
//!
//! Layout: `GGTRACE\0` magic, version (u32), CRC-32 of the payload (u32), payload length
//! (u64), the caller's source stamp (two u64: e.g. the source file's length and mtime, so a
//! stale cache can be told from a fresh one), then the payload: each column as a u64 count
//! and its rows, strings as u32 length + UTF-8. Why not Arrow IPC: this crate must stay free
//! of Arrow (it compiles for wasm32 without it); the CLI may export Arrow instead.

use std::collections::BTreeMap;

use crate::chrome::event::TraceKey;
use crate::error::TraceError;
use crate::model::{IngestReport, SkipCount, TraceModel, TraceProcess, TraceThread};
use crate::span::{TraceDependency, TraceSpan};

/// The magic bytes.
pub const CACHE_MAGIC: &[u8; 8] = b"GGTRACE\0";
/// The format version this build writes and reads.
pub const CACHE_VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 4 + 8 + 16;

#[derive(Default)]
struct W(Vec<u8>);

impl W {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt(&mut self, s: &Option<String>) {
        match s {
            Some(s) => {
                self.0.push(1);
                self.str(s);
            }
            None => self.0.push(0),
        }
    }
    fn key(&mut self, k: &TraceKey) {
        match k {
            TraceKey::Num(n) => {
                self.0.push(0);
                self.i64(*n);
            }
            TraceKey::Str(s) => {
                self.0.push(1);
                self.str(s);
            }
        }
    }
    fn pod<T: bytemuck::Pod>(&mut self, v: &[T]) {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(bytemuck::cast_slice(v));
    }
    fn strs(&mut self, v: &[String]) {
        self.u64(v.len() as u64);
        v.iter().for_each(|s| self.str(s));
    }
    fn counts(&mut self, m: &BTreeMap<String, u64>) {
        self.u64(m.len() as u64);
        for (k, v) in m {
            self.str(k);
            self.u64(*v);
        }
    }
}

struct R<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> R<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], TraceError> {
        if self.b.len() - self.at < n {
            return Err(TraceError::CacheTruncated {
                offset: self.at as u64,
                needed: (n - (self.b.len() - self.at)) as u64,
                what,
            });
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, TraceError> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, TraceError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, TraceError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    fn i64(&mut self, what: &'static str) -> Result<i64, TraceError> {
        Ok(self.u64(what)? as i64)
    }
    fn count(&mut self, what: &'static str, row: usize) -> Result<usize, TraceError> {
        let n = self.u64(what)?;
        let left = (self.b.len() - self.at) as u64;
        if n.saturating_mul(row.max(1) as u64) > left {
            return Err(TraceError::CacheTruncated {
                offset: self.at as u64,
                needed: n.saturating_mul(row.max(1) as u64) - left,
                what,
            });
        }
        Ok(n as usize)
    }
    fn str(&mut self, what: &'static str) -> Result<String, TraceError> {
        let n = self.u32(what)? as usize;
        let at = self.at;
        let s = self.take(n, what)?;
        String::from_utf8(s.to_vec()).map_err(|_| TraceError::CacheFormat {
            offset: at as u64,
            what: format!("{what} is not UTF-8"),
        })
    }
    fn opt(&mut self, what: &'static str) -> Result<Option<String>, TraceError> {
        Ok(match self.u8(what)? {
            0 => None,
            _ => Some(self.str(what)?),
        })
    }
    fn key(&mut self, what: &'static str) -> Result<TraceKey, TraceError> {
        Ok(match self.u8(what)? {
            0 => TraceKey::Num(self.i64(what)?),
            _ => TraceKey::Str(self.str(what)?),
        })
    }
    fn pod<T: bytemuck::Pod>(&mut self, what: &'static str) -> Result<Vec<T>, TraceError> {
        let row = std::mem::size_of::<T>();
        let n = self.count(what, row)?;
        // The payload is not aligned for T: copy bytes into a typed vector.
        let bytes = self.take(n * row, what)?;
        let mut v = vec![<T as bytemuck::Zeroable>::zeroed(); n];
        bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
        Ok(v)
    }
    fn strs(&mut self, what: &'static str) -> Result<Vec<String>, TraceError> {
        let n = self.count(what, 4)?;
        (0..n).map(|_| self.str(what)).collect()
    }
    fn counts(&mut self, what: &'static str) -> Result<BTreeMap<String, u64>, TraceError> {
        let n = self.count(what, 12)?;
        (0..n)
            .map(|_| Ok((self.str(what)?, self.u64(what)?)))
            .collect()
    }
}

/// The cache bytes of `model`, stamped with `source_stamp`.
pub fn write_cache(model: &TraceModel, source_stamp: [u64; 2]) -> Vec<u8> {
    let mut w = W::default();
    w.pod::<TraceSpan>(&model.spans);
    w.pod::<u32>(&model.parents);
    w.pod::<TraceDependency>(&model.dependencies);
    w.strs(&model.names);
    w.strs(&model.categories);
    w.pod::<u32>(&model.span_categories);
    w.strs(&model.flow_ids);
    w.pod::<u64>(&model.source_offsets);
    w.i64(model.origin);
    w.u64(model.end);
    w.u64(model.processes.len() as u64);
    for p in &model.processes {
        w.key(&p.pid);
        w.opt(&p.name);
        w.i64(p.sort_index);
        w.pod::<u32>(&[p.threads.start, p.threads.end, p.spans.start, p.spans.end]);
    }
    w.u64(model.threads.len() as u64);
    for t in &model.threads {
        w.u32(t.process);
        w.key(&t.tid);
        w.opt(&t.name);
        w.i64(t.sort_index);
        w.pod::<u32>(&[t.lanes, t.spans.start, t.spans.end]);
    }
    let r = &model.report;
    w.counts(&r.by_kind);
    w.counts(&r.by_category);
    w.u64(r.skipped.len() as u64);
    for (k, s) in &r.skipped {
        w.str(k);
        w.u64(s.count);
        w.u64(s.first_offset);
    }
    for v in [
        r.events,
        r.unmatched_begins,
        r.unmatched_ends,
        r.zero_duration,
        r.overlapping,
        r.clamped,
        r.flow_events,
        r.flow_missing_start,
        r.flow_missing_end,
        r.flow_unbound,
        r.bind_unmatched,
        u64::from(r.bare_array),
    ] {
        w.u64(v);
    }
    w.opt(&r.display_time_unit);
    let payload = w.0;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(CACHE_MAGIC);
    out.extend_from_slice(&CACHE_VERSION.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&source_stamp[0].to_le_bytes());
    out.extend_from_slice(&source_stamp[1].to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Reads a cache written by [`write_cache`]: the model and the source stamp. Checks the
/// magic, the version, the length and the checksum before decoding anything.
pub fn read_cache(bytes: &[u8]) -> Result<(TraceModel, [u64; 2]), TraceError> {
    if bytes.len() < HEADER || &bytes[..8] != CACHE_MAGIC {
        return Err(TraceError::CacheFormat {
            offset: 0,
            what: "no GGTRACE header".into(),
        });
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let long = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let version = word(8);
    if version != CACHE_VERSION {
        return Err(TraceError::CacheVersion {
            found: version,
            expected: CACHE_VERSION,
        });
    }
    let len = long(16);
    let stamp = [long(24), long(32)];
    let payload = &bytes[HEADER..];
    if (payload.len() as u64) < len {
        return Err(TraceError::CacheTruncated {
            offset: bytes.len() as u64,
            needed: len - payload.len() as u64,
            what: "payload",
        });
    }
    let payload = &payload[..len as usize];
    let found = crc32fast::hash(payload);
    if found != word(12) {
        return Err(TraceError::CacheChecksum {
            stored: word(12),
            found,
        });
    }
    let mut r = R { b: payload, at: 0 };
    let mut m = TraceModel {
        spans: r.pod("spans")?,
        parents: r.pod("parents")?,
        dependencies: r.pod("dependencies")?,
        names: r.strs("names")?,
        categories: r.strs("categories")?,
        span_categories: r.pod("span categories")?,
        flow_ids: r.strs("flow ids")?,
        source_offsets: r.pod("source offsets")?,
        origin: r.i64("origin")?,
        end: r.u64("end")?,
        ..Default::default()
    };
    let n = r.count("processes", 8)?;
    for _ in 0..n {
        let pid = r.key("process")?;
        let name = r.opt("process")?;
        let sort_index = r.i64("process")?;
        let v: Vec<u32> = r.pod("process")?;
        let [a, b, c, d] = v[..] else {
            return Err(TraceError::CacheFormat {
                offset: r.at as u64,
                what: "process ranges".into(),
            });
        };
        m.processes.push(TraceProcess {
            pid,
            name,
            sort_index,
            threads: a..b,
            spans: c..d,
        });
    }
    let n = r.count("threads", 8)?;
    for _ in 0..n {
        let process = r.u32("thread")?;
        let tid = r.key("thread")?;
        let name = r.opt("thread")?;
        let sort_index = r.i64("thread")?;
        let v: Vec<u32> = r.pod("thread")?;
        let [lanes, a, b] = v[..] else {
            return Err(TraceError::CacheFormat {
                offset: r.at as u64,
                what: "thread ranges".into(),
            });
        };
        m.threads.push(TraceThread {
            process,
            tid,
            name,
            sort_index,
            lanes,
            spans: a..b,
        });
    }
    let rep = &mut m.report;
    rep.by_kind = r.counts("report")?;
    rep.by_category = r.counts("report")?;
    let n = r.count("report", 20)?;
    for _ in 0..n {
        let k = r.str("report")?;
        let count = r.u64("report")?;
        let first_offset = r.u64("report")?;
        rep.skipped.insert(
            k,
            SkipCount {
                count,
                first_offset,
            },
        );
    }
    let mut v = [0u64; 12];
    for x in &mut v {
        *x = r.u64("report")?;
    }
    *rep = IngestReport {
        events: v[0],
        unmatched_begins: v[1],
        unmatched_ends: v[2],
        zero_duration: v[3],
        overlapping: v[4],
        clamped: v[5],
        flow_events: v[6],
        flow_missing_start: v[7],
        flow_missing_end: v[8],
        flow_unbound: v[9],
        bind_unmatched: v[10],
        bare_array: v[11] != 0,
        display_time_unit: r.opt("report")?,
        by_kind: std::mem::take(&mut rep.by_kind),
        by_category: std::mem::take(&mut rep.by_category),
        skipped: std::mem::take(&mut rep.skipped),
    };
    let (spans, threads) = (m.spans.len(), m.threads.len());
    let bad = m.parents.len() != spans
        || m.span_categories.len() != spans
        || m.source_offsets.len() != spans
        || m.spans.iter().any(|s| s.thread as usize >= threads)
        || m.dependencies
            .iter()
            .any(|d| d.from as usize >= spans || d.to as usize >= spans);
    if bad {
        return Err(TraceError::CacheFormat {
            offset: HEADER as u64,
            what: "columns disagree (lengths or IDs out of range)".into(),
        });
    }
    Ok((m, stamp))
}
