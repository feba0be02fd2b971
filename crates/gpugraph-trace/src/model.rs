//! The canonical trace model on the CPU: spans in canonical order, their parents, the
//! dependencies, the process and thread tables and the ingestion report. Built from parsed
//! events by [`build`]; read back from a cache by [`crate::cache`].
//!
//! Canonical order: processes by `(sort_index, pid)`, threads of a process by
//! `(sort_index, tid)`, spans of a thread by `(start, longer first, source order)`. A span's
//! ID is its index in that order; each process's spans are one contiguous range, the
//! preserved source partition (empty for a process with metadata only).
//!
//! Lanes: a thread's spans are placed by a stack of open spans: a span nested in the top
//! span (ending no later) goes one lane deeper with it as parent; a span that overlaps open
//! spans without nesting in them goes below all of them ([`SpanFlags::OVERLAP`]), parented
//! by the innermost open span that contains it, if any. Spans on one `(thread, lane)` never
//! overlap (they may touch).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::ops::Range;

use crate::chrome::block::{EventCore, Events, KeyId, Meta, Parsed, Sym};
use crate::chrome::event::{MetaKind, TraceKey};
use crate::error::TraceError;
use crate::span::*;

/// One process: its key, metadata and ranges of threads and spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceProcess {
    /// The `pid` as written.
    pub pid: TraceKey,
    /// `process_name` metadata.
    pub name: Option<String>,
    /// `process_sort_index` metadata (0 when absent).
    pub sort_index: i64,
    /// Its threads (global thread indices).
    pub threads: Range<u32>,
    /// Its spans (canonical IDs): the source partition.
    pub spans: Range<u32>,
}

/// One thread: its process, key, metadata, lanes and spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceThread {
    /// Process index.
    pub process: u32,
    /// The `tid` as written.
    pub tid: TraceKey,
    /// `thread_name` metadata.
    pub name: Option<String>,
    /// `thread_sort_index` metadata (0 when absent).
    pub sort_index: i64,
    /// Lanes used (deepest lane + 1; 0 without spans).
    pub lanes: u32,
    /// Its spans (canonical IDs).
    pub spans: Range<u32>,
}

/// How many events were skipped for one reason, and where the first one was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkipCount {
    /// Events.
    pub count: u64,
    /// Byte offset of the first.
    pub first_offset: u64,
}

/// What ingestion saw and did: nothing here is fatal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    /// Elements of the event array.
    pub events: u64,
    /// Events by `ph` as written.
    pub by_kind: BTreeMap<String, u64>,
    /// Spans by category.
    pub by_category: BTreeMap<String, u64>,
    /// Events not used, by reason (unknown kinds, missing timestamps, malformed fields).
    pub skipped: BTreeMap<String, SkipCount>,
    /// `B` without `E`: extended to the trace end.
    pub unmatched_begins: u64,
    /// `E` without `B`: dropped.
    pub unmatched_ends: u64,
    /// Spans of duration 0 (instants included).
    pub zero_duration: u64,
    /// Spans overlapping their thread's open spans without nesting.
    pub overlapping: u64,
    /// Durations clamped to 48 bits of ticks.
    pub clamped: u64,
    /// Flow events (`s`, `t`, `f`).
    pub flow_events: u64,
    /// Flow chains whose `s` is missing (a `t` or `f` first).
    pub flow_missing_start: u64,
    /// Flow chains without `f`.
    pub flow_missing_end: u64,
    /// Flow events with no slice to bind to.
    pub flow_unbound: u64,
    /// `bind_id`s with sources but no targets or the reverse.
    pub bind_unmatched: u64,
    /// Whether the input was the bare array form.
    pub bare_array: bool,
    /// The object form's `displayTimeUnit`.
    pub display_time_unit: Option<String>,
}

impl IngestReport {
    pub(crate) fn skip(&mut self, reason: &str, offset: u64) {
        let e = self.skipped.entry(reason.to_string()).or_insert(SkipCount {
            count: 0,
            first_offset: offset,
        });
        e.count += 1;
    }
}

/// A whole trace on the CPU (see the module doc). Times are ticks (ns) since `origin`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceModel {
    /// Canonical spans.
    pub spans: Vec<TraceSpan>,
    /// Enclosing span of each span in its thread, or [`NO_SPAN`].
    pub parents: Vec<u32>,
    /// Dependencies between canonical span IDs.
    pub dependencies: Vec<TraceDependency>,
    /// Name of each `group` ID.
    pub names: Vec<String>,
    /// Category names.
    pub categories: Vec<String>,
    /// Category of each span.
    pub span_categories: Vec<u32>,
    /// Flow and bind IDs (the `flow` of a dependency).
    pub flow_ids: Vec<String>,
    /// Processes in canonical order.
    pub processes: Vec<TraceProcess>,
    /// Threads in canonical order.
    pub threads: Vec<TraceThread>,
    /// Byte offset of each span's source event in the (decompressed) input.
    pub source_offsets: Vec<u64>,
    /// Absolute time of tick 0, in ns as the file counts (µs × 1000).
    pub origin: i64,
    /// The latest span end, ticks.
    pub end: u64,
    /// What ingestion saw.
    pub report: IngestReport,
}

impl TraceModel {
    /// The preserved source partitions: each process's span range, in process order.
    pub fn partitions(&self) -> Vec<Range<u32>> {
        self.processes.iter().map(|p| p.spans.clone()).collect()
    }
    /// The name of span `id`.
    pub fn name_of(&self, id: u32) -> &str {
        &self.names[self.spans[id as usize].group as usize]
    }
    /// The display name of thread `t` (`pid:tid name`).
    pub fn thread_label(&self, t: u32) -> String {
        let th = &self.threads[t as usize];
        let p = &self.processes[th.process as usize];
        match &th.name {
            Some(n) => format!("{}:{} {n}", p.pid, th.tid),
            None => format!("{}:{}", p.pid, th.tid),
        }
    }
    /// The thread index of `(pid, tid)`.
    pub fn find_thread(&self, pid: &TraceKey, tid: &TraceKey) -> Option<u32> {
        self.threads
            .iter()
            .position(|t| &t.tid == tid && &self.processes[t.process as usize].pid == pid)
            .map(|t| t as u32)
    }
}

/// A span before canonical placement.
#[derive(Clone, Copy)]
struct RawSpan {
    core: EventCore,
    dur: i64,
    flags: u16,
    ordinal: u32,
    offset: u64,
    bind: Option<(Sym, bool, bool)>,
}

/// `(pid, tid)` key IDs.
type ThreadKey = (KeyId, KeyId);
/// The spans with `flow_out` and those with `flow_in` of one bind ID.
type BindEnds = (Vec<u32>, Vec<u32>);
/// A `B` (with its span) or an `E`: `(ts, ordinal, is_begin, span)`.
type BeginEnd = (i64, u32, bool, Option<RawSpan>);

struct FlowEvent {
    /// The chain's key (`cat` U+0001 `id`).
    key: Sym,
    phase: u8,
    ts: i64,
    thread: ThreadKey,
    enclosing: bool,
    ordinal: u32,
}

/// First-seen interning of text borrowed from the event tables.
#[derive(Default)]
struct Interner<'s> {
    ids: FxHashMap<&'s str, u32>,
    names: Vec<String>,
}

impl<'s> Interner<'s> {
    fn id(&mut self, s: &'s str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.ids.insert(s, i);
        self.names.push(s.to_string());
        i
    }
}

/// First-use numbering of string IDs: `strings[sym]` gets the next ID the first time it is
/// asked for (so IDs follow canonical order, as an interner over the text would).
struct Renumber<'a> {
    strings: &'a [String],
    ids: Vec<u32>,
    names: Vec<String>,
}

impl<'a> Renumber<'a> {
    fn new(strings: &'a [String]) -> Self {
        Renumber {
            strings,
            ids: vec![u32::MAX; strings.len()],
            names: Vec::new(),
        }
    }
    fn id(&mut self, sym: Sym) -> u32 {
        let slot = &mut self.ids[sym as usize];
        if *slot == u32::MAX {
            *slot = self.names.len() as u32;
            self.names.push(self.strings[sym as usize].clone());
        }
        *slot
    }
}

/// Builds the model from parsed events in file order. Time arithmetic wraps (as release
/// builds always did) so that extreme timestamps never panic in debug builds.
pub(crate) fn build(events: Events, mut report: IngestReport) -> Result<TraceModel, TraceError> {
    let Events {
        events,
        strings,
        keys,
    } = events;
    if events.len() as u64 >= u64::from(u32::MAX) {
        return Err(TraceError::TooMany {
            what: "events",
            count: events.len() as u64,
            limit: u64::from(u32::MAX) - 1,
        });
    }
    report.events = events.len() as u64;
    let mut by_kind = vec![0u64; strings.len()];
    let mut raw: Vec<RawSpan> = Vec::new();
    let mut begin_end: BTreeMap<ThreadKey, Vec<BeginEnd>> = BTreeMap::new();
    let mut flows: Vec<FlowEvent> = Vec::new();
    let mut proc_meta: BTreeMap<KeyId, (Option<String>, i64)> = BTreeMap::new();
    let mut thread_meta: BTreeMap<ThreadKey, (Option<String>, i64)> = BTreeMap::new();
    for (ordinal, pe) in events.into_iter().enumerate() {
        let ordinal = ordinal as u32;
        let offset = pe.offset;
        by_kind[pe.ph as usize] += 1;
        let span = |core: EventCore, dur: i64, flags: u16, bind| RawSpan {
            core,
            dur,
            flags,
            ordinal,
            offset,
            bind,
        };
        match pe.event {
            Parsed::Complete { core, dur, bind } => {
                let flags = SpanFlags::COMPLETE;
                raw.push(span(core, dur.unwrap_or(0), flags, bind));
            }
            Parsed::Instant(core) => raw.push(span(core, 0, SpanFlags::INSTANT, None)),
            Parsed::Begin(core) => {
                let s = span(core, 0, SpanFlags::BEGIN_END, None);
                begin_end.entry((core.pid, core.tid)).or_default().push((
                    core.ts,
                    ordinal,
                    true,
                    Some(s),
                ));
            }
            Parsed::End(core) => {
                begin_end
                    .entry((core.pid, core.tid))
                    .or_default()
                    .push((core.ts, ordinal, false, None));
            }
            Parsed::Flow {
                phase,
                core,
                key,
                enclosing,
            } => {
                report.flow_events += 1;
                flows.push(FlowEvent {
                    key,
                    phase,
                    ts: core.ts,
                    thread: (core.pid, core.tid),
                    enclosing,
                    ordinal,
                });
            }
            Parsed::Meta(m) => {
                let Meta {
                    kind,
                    pid,
                    tid,
                    name,
                    sort_index,
                } = *m;
                match kind {
                    MetaKind::ProcessName => proc_meta.entry(pid).or_default().0 = name,
                    MetaKind::ProcessSort => {
                        proc_meta.entry(pid).or_default().1 = sort_index.unwrap_or(0)
                    }
                    MetaKind::ThreadName => thread_meta.entry((pid, tid)).or_default().0 = name,
                    MetaKind::ThreadSort => {
                        thread_meta.entry((pid, tid)).or_default().1 = sort_index.unwrap_or(0)
                    }
                    MetaKind::Other => {}
                }
            }
            Parsed::Skipped { reason } => report.skip(reason, offset),
        }
    }
    for (sym, &n) in by_kind.iter().enumerate() {
        if n > 0 {
            *report.by_kind.entry(strings[sym].clone()).or_default() += n;
        }
    }

    // B/E pairs per thread, in time order (file order breaks ties): E closes the latest B.
    let mut unfinished: Vec<RawSpan> = Vec::new();
    for (_, mut list) in begin_end {
        list.sort_by_key(|e| (e.0, e.1));
        let mut stack: Vec<RawSpan> = Vec::new();
        for (ts, _, is_begin, s) in list {
            if is_begin {
                stack.extend(s);
            } else if let Some(mut b) = stack.pop() {
                b.dur = ts.wrapping_sub(b.core.ts);
                raw.push(b);
            } else {
                report.unmatched_ends += 1;
            }
        }
        report.unmatched_begins += stack.len() as u64;
        unfinished.extend(stack);
    }

    let origin = raw
        .iter()
        .chain(&unfinished)
        .map(|s| s.core.ts)
        .chain(flows.iter().map(|f| f.ts))
        .min()
        .unwrap_or(0);
    let end_abs = raw
        .iter()
        .map(|s| s.core.ts.saturating_add(s.dur))
        .chain(unfinished.iter().map(|s| s.core.ts))
        .max()
        .unwrap_or(origin);
    for mut s in unfinished {
        s.dur = end_abs.wrapping_sub(s.core.ts);
        s.flags |= SpanFlags::UNFINISHED;
        raw.push(s);
    }

    // Processes and threads (including metadata-only ones), in canonical order.
    let mut thread_keys: Vec<ThreadKey> = Vec::new();
    {
        let mut seen: FxHashMap<ThreadKey, ()> = FxHashMap::default();
        let mut last = None;
        for s in &raw {
            let k = (s.core.pid, s.core.tid);
            if last != Some(k) && seen.insert(k, ()).is_none() {
                thread_keys.push(k);
            }
            last = Some(k);
        }
        for &k in thread_meta.keys() {
            if seen.insert(k, ()).is_none() {
                thread_keys.push(k);
            }
        }
    }
    let key = |k: KeyId| &keys[k as usize];
    thread_keys.sort_by(|a, b| (key(a.0), key(a.1)).cmp(&(key(b.0), key(b.1))));
    let mut pids: Vec<KeyId> = proc_meta.keys().copied().collect();
    pids.extend(thread_keys.iter().map(|&(p, _)| p));
    pids.sort_by(|a, b| key(*a).cmp(key(*b)));
    pids.dedup();
    if pids.len() > MAX_PROCESSES {
        return Err(TraceError::TooManyProcesses {
            count: pids.len(),
            limit: MAX_PROCESSES,
        });
    }
    let pmeta = |p: KeyId| proc_meta.get(&p).cloned().unwrap_or((None, 0));
    pids.sort_by(|&a, &b| (pmeta(a).1, key(a)).cmp(&(pmeta(b).1, key(b))));
    let mut tids_of: FxHashMap<KeyId, Vec<KeyId>> = FxHashMap::default();
    for &(p, t) in &thread_keys {
        tids_of.entry(p).or_default().push(t);
    }
    let mut processes = Vec::with_capacity(pids.len());
    let mut threads: Vec<TraceThread> = Vec::new();
    let mut thread_index: FxHashMap<ThreadKey, u32> = FxHashMap::default();
    for (pi, &pid) in pids.iter().enumerate() {
        let tmeta = |t: KeyId| thread_meta.get(&(pid, t)).cloned().unwrap_or((None, 0));
        let mut tids: Vec<KeyId> = tids_of.remove(&pid).unwrap_or_default();
        tids.sort_by(|&a, &b| (tmeta(a).1, key(a)).cmp(&(tmeta(b).1, key(b))));
        let first = threads.len() as u32;
        for tid in tids {
            thread_index.insert((pid, tid), threads.len() as u32);
            let (name, sort_index) = tmeta(tid);
            threads.push(TraceThread {
                process: pi as u32,
                tid: key(tid).clone(),
                name,
                sort_index,
                lanes: 0,
                spans: 0..0,
            });
        }
        let (name, sort_index) = pmeta(pid);
        processes.push(TraceProcess {
            pid: key(pid).clone(),
            name,
            sort_index,
            threads: first..threads.len() as u32,
            spans: 0..0,
        });
    }

    // Spans grouped by thread, sorted, placed on lanes.
    let mut last: Option<(ThreadKey, u32)> = None;
    let thread_of: Vec<u32> = raw
        .iter()
        .map(|s| {
            let k = (s.core.pid, s.core.tid);
            let t = match last {
                Some((lk, t)) if lk == k => t,
                _ => thread_index[&k],
            };
            last = Some((k, t));
            t
        })
        .collect();
    let mut counts = vec![0usize; threads.len()];
    for &t in &thread_of {
        counts[t as usize] += 1;
    }
    let mut by_thread: Vec<Vec<RawSpan>> = counts.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (s, t) in raw.into_iter().zip(thread_of) {
        by_thread[t as usize].push(s);
    }
    let total: usize = by_thread.iter().map(Vec::len).sum();
    if total as u64 >= u64::from(u32::MAX) {
        return Err(TraceError::TooMany {
            what: "spans",
            count: total as u64,
            limit: u64::from(u32::MAX) - 1,
        });
    }
    let mut names = Renumber::new(&strings);
    let mut cats = Renumber::new(&strings);
    let mut by_category = vec![0u64; strings.len()];
    let mut flow_ids = Interner::default();
    let mut spans = Vec::with_capacity(total);
    let mut parents = Vec::with_capacity(total);
    let mut span_categories = Vec::with_capacity(total);
    let mut source_offsets = Vec::with_capacity(total);
    let mut binds: FxHashMap<Sym, BindEnds> = FxHashMap::default();
    for (t, list) in by_thread.iter_mut().enumerate() {
        list.sort_by_key(|s| (s.core.ts, std::cmp::Reverse(s.dur), s.ordinal));
        let first = spans.len() as u32;
        let mut stack: Vec<(i64, u32)> = Vec::new();
        let mut lanes = 0u32;
        for s in list.iter() {
            let id = spans.len() as u32;
            let end = s.core.ts.saturating_add(s.dur);
            while stack.last().is_some_and(|&(e, _)| e <= s.core.ts) {
                stack.pop();
            }
            let mut flags = s.flags;
            let lane = stack.len() as u32;
            let parent = match stack.last() {
                Some(&(e, p)) if e >= end => p,
                Some(_) => {
                    flags |= SpanFlags::OVERLAP;
                    report.overlapping += 1;
                    stack
                        .iter()
                        .rev()
                        .find(|&&(e, _)| e >= end)
                        .map_or(NO_SPAN, |&(_, p)| p)
                }
                None => NO_SPAN,
            };
            if lane > MAX_LANE {
                return Err(TraceError::TooMany {
                    what: "nesting levels in one thread",
                    count: u64::from(lane) + 1,
                    limit: u64::from(MAX_LANE) + 1,
                });
            }
            stack.push((end, id));
            lanes = lanes.max(lane + 1);
            if s.dur == 0 {
                flags |= SpanFlags::ZERO_DURATION;
                report.zero_duration += 1;
            }
            let duration = s.dur as u64;
            if duration > MAX_SPAN_DURATION {
                report.clamped += 1;
            }
            by_category[s.core.cat as usize] += 1;
            if let Some((b, out, inn)) = &s.bind {
                let e = binds.entry(*b).or_default();
                if *out {
                    e.0.push(id);
                }
                if *inn {
                    e.1.push(id);
                }
            }
            spans.push(TraceSpan::pack(SpanParts {
                start: s.core.ts.wrapping_sub(origin) as u64,
                duration,
                thread: t as u32,
                process: threads[t].process,
                lane,
                group: names.id(s.core.name),
                source_id: s.ordinal,
                flags: SpanFlags(flags),
            }));
            parents.push(parent);
            span_categories.push(cats.id(s.core.cat));
            source_offsets.push(s.offset);
        }
        threads[t].lanes = lanes;
        threads[t].spans = first..spans.len() as u32;
    }
    for p in &mut processes {
        let lo = threads[p.threads.start as usize..p.threads.end as usize]
            .first()
            .map_or(spans.len() as u32, |t| t.spans.start);
        let hi = threads[p.threads.start as usize..p.threads.end as usize]
            .last()
            .map_or(lo, |t| t.spans.end);
        p.spans = lo..hi;
    }
    for (cat, &n) in by_category.iter().enumerate() {
        if n > 0 {
            report.by_category.insert(strings[cat].clone(), n);
        }
    }
    // Empty processes keep their place in the order: point them at the next span.
    let mut next = spans.len() as u32;
    for p in processes.iter_mut().rev() {
        if p.threads.is_empty() {
            p.spans = next..next;
        }
        next = p.spans.start;
    }

    // Dependencies: flow chains, then bind IDs.
    let mut deps = Vec::new();
    let bind_span = |f: &FlowEvent| -> Option<u32> {
        let t = *thread_index.get(&f.thread)?;
        let r = threads[t as usize].spans.clone();
        let ts = f.ts.wrapping_sub(origin) as u64;
        let local = &spans[r.start as usize..r.end as usize];
        let k = local.partition_point(|s| s.start() <= ts);
        let enclosing_first = f.enclosing || f.phase == b's';
        let mut c = if k == 0 {
            NO_SPAN
        } else {
            r.start + k as u32 - 1
        };
        while c != NO_SPAN && spans[c as usize].end() < ts {
            c = parents[c as usize];
        }
        if c != NO_SPAN && enclosing_first {
            return Some(c);
        }
        // `t`/`f` without `bp: "e"` bind to the next slice starting at or after `ts`.
        let k = local.partition_point(|s| s.start() < ts);
        if !enclosing_first && k < local.len() {
            return Some(r.start + k as u32);
        }
        (c != NO_SPAN).then_some(c)
    };
    // Chains in the order of their keys' text, each in time order (file order breaks ties).
    let mut chain_keys: Vec<Sym> = flows.iter().map(|f| f.key).collect();
    chain_keys.sort_unstable();
    chain_keys.dedup();
    chain_keys.sort_unstable_by(|&a, &b| strings[a as usize].cmp(&strings[b as usize]));
    let mut rank = vec![0u32; strings.len()];
    for (r, &k) in chain_keys.iter().enumerate() {
        rank[k as usize] = r as u32;
    }
    flows.sort_unstable_by_key(|f| (rank[f.key as usize], f.ts, f.ordinal));
    for list in flows.chunk_by(|a, b| a.key == b.key) {
        let key = &strings[list[0].key as usize];
        let flow = flow_ids.id(key.split('\u{1}').nth(1).unwrap_or(key));
        let mut prev: Option<Option<u32>> = None;
        for f in list {
            let bound = bind_span(f);
            if bound.is_none() {
                report.flow_unbound += 1;
            }
            match f.phase {
                b's' => {
                    if prev.is_some() {
                        report.flow_missing_end += 1;
                    }
                    prev = Some(bound);
                    continue;
                }
                _ if prev.is_none() => {
                    report.flow_missing_start += 1;
                    prev = (f.phase == b't').then_some(bound);
                    continue;
                }
                _ => {}
            }
            if let (Some(Some(a)), Some(b)) = (prev, bound) {
                if a != b {
                    deps.push(TraceDependency {
                        from: a,
                        to: b,
                        kind: DependencyKind::Flow as u32,
                        flow,
                    });
                }
            }
            prev = (f.phase == b't').then_some(bound.or(prev.flatten()));
        }
        if prev.is_some() {
            report.flow_missing_end += 1;
        }
    }
    let mut binds: Vec<(Sym, BindEnds)> = binds.into_iter().collect();
    binds.sort_unstable_by(|a, b| strings[a.0 as usize].cmp(&strings[b.0 as usize]));
    for (b, (outs, ins)) in binds {
        let b = &strings[b as usize];
        if outs.is_empty() || ins.is_empty() {
            report.bind_unmatched += 1;
            continue;
        }
        let flow = flow_ids.id(b);
        for &a in &outs {
            for &c in &ins {
                if a != c {
                    deps.push(TraceDependency {
                        from: a,
                        to: c,
                        kind: DependencyKind::Bind as u32,
                        flow,
                    });
                }
            }
        }
    }
    for d in &deps {
        spans[d.from as usize].set_flags(SpanFlags::FLOW_OUT);
        spans[d.to as usize].set_flags(SpanFlags::FLOW_IN);
    }
    Ok(TraceModel {
        end: spans.iter().map(TraceSpan::end).max().unwrap_or(0),
        spans,
        parents,
        dependencies: deps,
        names: names.names,
        categories: cats.names,
        span_categories,
        flow_ids: flow_ids.names,
        processes,
        threads,
        source_offsets,
        origin,
        report,
    })
}
