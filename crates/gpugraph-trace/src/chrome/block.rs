//! Parsed events in compact form, parsed in contiguous blocks of elements (one per parser
//! thread) with names, categories, `ph`s, flow keys and process/thread keys interned per
//! block, then merged into one file-ordered list with one string table and one key table.

use std::borrow::Cow;
use std::hash::Hash;
use std::ops::Range;

use rustc_hash::FxHashMap;

use super::event::{id_text, key, meta_args, meta_kind, micros_to_ticks, serde_fields};
use super::event::{MetaKind, TraceKey};
use super::fast::Fields;
use crate::error::TraceError;

/// A string ID: an index into [`Events::strings`] (names, categories, `ph`s, flow keys,
/// bind IDs).
pub type Sym = u32;
/// A process or thread key ID: an index into [`Events::keys`].
pub type KeyId = u32;

/// What a span-producing event shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventCore {
    /// Absolute start, ns ticks.
    pub ts: i64,
    /// Process key.
    pub pid: KeyId,
    /// Thread key.
    pub tid: KeyId,
    /// Name (`""` when absent).
    pub name: Sym,
    /// Category (`""` when absent).
    pub cat: Sym,
}

/// A metadata event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Which.
    pub kind: MetaKind,
    /// Process key.
    pub pid: KeyId,
    /// Thread key.
    pub tid: KeyId,
    /// `args.name`.
    pub name: Option<String>,
    /// `args.sort_index`.
    pub sort_index: Option<i64>,
}

/// One parsed event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// `X`.
    Complete {
        /// Shared fields.
        core: EventCore,
        /// Duration ticks (`None`: absent).
        dur: Option<i64>,
        /// `bind_id` with `flow_out` / `flow_in`.
        bind: Option<(Sym, bool, bool)>,
    },
    /// `B`.
    Begin(EventCore),
    /// `E` (name and category unused).
    End(EventCore),
    /// `i` / `I`.
    Instant(EventCore),
    /// `M`.
    Meta(Box<Meta>),
    /// `s` / `t` / `f`.
    Flow {
        /// `b's'`, `b't'` or `b'f'`.
        phase: u8,
        /// Shared fields (name unused).
        core: EventCore,
        /// `cat` U+0001 `id`: the chain's key.
        key: Sym,
        /// `bp: "e"`: binds to the enclosing slice.
        enclosing: bool,
    },
    /// Not used for spans: counted under its `ph`, with why.
    Skipped {
        /// Why it was not used.
        reason: &'static str,
    },
}

/// A parsed element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedEvent {
    /// The event.
    pub event: Parsed,
    /// `ph` as written (`"?"` when missing).
    pub ph: Sym,
    /// Byte offset of the element in the (decompressed) input.
    pub offset: u64,
}

/// All events of a trace in file order, with their tables.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// The events.
    pub events: Vec<ParsedEvent>,
    /// Distinct strings.
    pub strings: Vec<String>,
    /// Distinct process and thread keys.
    pub keys: Vec<TraceKey>,
}

/// First-seen interning of `T` into IDs (each value stored once, in the map; the list in
/// ID order is made at the end).
struct Table<T> {
    ids: FxHashMap<T, u32>,
}

impl<T: Hash + Eq> Table<T> {
    fn new() -> Self {
        Table {
            ids: FxHashMap::default(),
        }
    }
    fn id(&mut self, v: T) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(v).or_insert(next)
    }
    /// The values in ID order.
    fn into_list(self) -> Vec<T> {
        let mut list: Vec<(u32, T)> = self.ids.into_iter().map(|(v, i)| (i, v)).collect();
        list.sort_unstable_by_key(|e| e.0);
        list.into_iter().map(|e| e.1).collect()
    }
}

/// One block's events and tables (IDs local to the block).
struct Block<'a> {
    events: Vec<ParsedEvent>,
    strings: Table<Cow<'a, str>>,
    /// Key text as written → local key ID (several texts may be one key: `0` and `-0`).
    key_text: FxHashMap<Option<&'a str>, KeyId>,
    keys: Vec<TraceKey>,
    flow_key: String,
    /// IDs of one-byte ASCII strings (`ph`s), `u32::MAX` until seen.
    short: [Sym; 128],
    /// The last borrowed name and category seen, with their IDs (runs repeat them).
    last_str: [Option<(&'a str, Sym)>; 2],
    /// The last `pid` and `tid` texts seen, with their IDs.
    last_key: [Option<(Option<&'a str>, KeyId)>; 2],
}

impl<'a> Block<'a> {
    fn new(capacity: usize) -> Self {
        Block {
            events: Vec::with_capacity(capacity),
            strings: Table::new(),
            key_text: FxHashMap::default(),
            keys: Vec::new(),
            flow_key: String::new(),
            short: [u32::MAX; 128],
            last_str: [None; 2],
            last_key: [None; 2],
        }
    }

    /// The key ID of `raw`; `slot`: 0 for `pid`, 1 for `tid` (its one-entry cache).
    fn key(&mut self, raw: Option<&'a str>, slot: usize) -> KeyId {
        if let Some((text, k)) = self.last_key[slot] {
            if text == raw {
                return k;
            }
        }
        let k = match self.key_text.get(&raw) {
            Some(&k) => k,
            None => {
                let k = self.keys.len() as KeyId;
                self.keys.push(key(raw));
                self.key_text.insert(raw, k);
                k
            }
        };
        self.last_key[slot] = Some((raw, k));
        k
    }

    /// The ID of `s` (`""` when absent); `slot`: 0 for names, 1 for categories (its
    /// one-entry cache).
    fn str(&mut self, s: Option<&Cow<'a, str>>, slot: usize) -> Sym {
        let Some(s) = s else {
            return self.short_id("");
        };
        if let Cow::Borrowed(b) = s {
            if let Some((last, id)) = self.last_str[slot] {
                if last == *b {
                    return id;
                }
            }
            let id = self.short_id(b);
            self.last_str[slot] = Some((*b, id));
            return id;
        }
        self.strings.id(s.clone())
    }

    /// The ID of a borrowed `s`, through the one-byte table where it fits.
    fn short_id(&mut self, s: &'a str) -> Sym {
        match s.as_bytes() {
            &[c] if c < 128 => {
                let id = self.short[c as usize];
                if id != u32::MAX {
                    return id;
                }
                let id = self.strings.id(Cow::Borrowed(s));
                self.short[c as usize] = id;
                id
            }
            _ => self.strings.id(Cow::Borrowed(s)),
        }
    }

    /// Appends the event of `f`: the rules of the reference (`ph` decides; an `X` checks
    /// its duration, a flow its `id`, then the timestamp is needed; `M` needs none).
    fn push(&mut self, f: Fields<'a>, offset: u64) {
        let ph_text = f.ph.clone().unwrap_or(Cow::Borrowed("?"));
        let ph = match &ph_text {
            Cow::Borrowed(b) => self.short_id(b),
            Cow::Owned(o) => match self.strings.ids.get(o.as_str()) {
                Some(&s) => s,
                None => self.strings.id(Cow::Owned(o.clone())),
            },
        };
        let ts = match f.ts.map(micros_to_ticks) {
            Some(Some(t)) => Ok(t),
            Some(None) => Err("timestamp is not a number"),
            None => Err("no timestamp"),
        };
        let event = match ph_text.as_ref() {
            "X" => match (duration(f.dur), ts) {
                (Err(reason), _) | (Ok(_), Err(reason)) => Parsed::Skipped { reason },
                (Ok(dur), Ok(ts)) => {
                    let bind = f.bind_id.map(|b| {
                        (
                            self.strings.id(id_text(b)),
                            f.flow_out.unwrap_or(false),
                            f.flow_in.unwrap_or(false),
                        )
                    });
                    Parsed::Complete {
                        core: self.core(&f, ts),
                        dur,
                        bind,
                    }
                }
            },
            "B" | "E" | "i" | "I" => match ts {
                Err(reason) => Parsed::Skipped { reason },
                Ok(ts) => {
                    let core = self.core(&f, ts);
                    match ph_text.as_ref() {
                        "B" => Parsed::Begin(core),
                        "E" => Parsed::End(core),
                        _ => Parsed::Instant(core),
                    }
                }
            },
            "s" | "t" | "f" => match (f.id, ts) {
                (None, _) => Parsed::Skipped {
                    reason: "flow event without id",
                },
                (Some(_), Err(reason)) => Parsed::Skipped { reason },
                (Some(id), Ok(ts)) => {
                    let mut k = std::mem::take(&mut self.flow_key);
                    k.clear();
                    k.push_str(f.cat.as_deref().unwrap_or(""));
                    k.push('\u{1}');
                    k.push_str(&id_text(id));
                    let key = match self.strings.ids.get(k.as_str()) {
                        Some(&s) => s,
                        None => self.strings.id(Cow::Owned(k.clone())),
                    };
                    self.flow_key = k;
                    Parsed::Flow {
                        phase: ph_text.as_bytes()[0],
                        core: self.core(&f, ts),
                        key,
                        enclosing: f.bp.as_deref() == Some("e"),
                    }
                }
            },
            "M" => {
                let (name, sort_index) = meta_args(f.args);
                Parsed::Meta(Box::new(Meta {
                    kind: meta_kind(f.name.as_deref()),
                    pid: self.key(f.pid, 0),
                    tid: self.key(f.tid, 1),
                    name,
                    sort_index,
                }))
            }
            "?" => Parsed::Skipped { reason: "no ph" },
            _ => Parsed::Skipped {
                reason: "event kind not used for spans",
            },
        };
        self.events.push(ParsedEvent { event, ph, offset });
    }

    fn core(&mut self, f: &Fields<'a>, ts: i64) -> EventCore {
        EventCore {
            ts,
            pid: self.key(f.pid, 0),
            tid: self.key(f.tid, 1),
            name: self.str(f.name.as_ref(), 0),
            cat: self.str(f.cat.as_ref(), 1),
        }
    }
}

/// An `X` event's duration ticks (`None`: absent), or why it makes the event unusable.
fn duration(dur: Option<&str>) -> Result<Option<i64>, &'static str> {
    match dur.map(micros_to_ticks) {
        Some(None) => Err("duration is not a number"),
        Some(Some(d)) if d < 0 => Err("negative duration"),
        d => Ok(d.flatten()),
    }
}

/// The byte offset inside `bytes` of serde's `(line, column)` (both 1-based).
fn offset_of(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut at = 0;
    for _ in 1..line {
        match memchr::memchr(b'\n', &bytes[at..]) {
            Some(k) => at += k + 1,
            None => break,
        }
    }
    (at + column.saturating_sub(1)).min(bytes.len())
}

/// One block of parsed elements, IDs local to it (see [`merge`]).
pub struct ParsedBlock<'a>(Block<'a>);

impl<'a> ParsedBlock<'a> {
    /// An empty block with room for `capacity` events.
    pub fn new(capacity: usize) -> Self {
        ParsedBlock(Block::new(capacity))
    }

    /// Appends the event whose fields are `f` and whose element starts at `offset`.
    pub fn push(&mut self, f: Fields<'a>, offset: u64) {
        self.0.push(f, offset);
    }

    /// Appends an element with a field of the wrong type: skipped as "malformed field",
    /// counted under `ph` `?`.
    pub fn push_malformed(&mut self, offset: u64) {
        let ph = self.0.strings.id(Cow::Borrowed("?"));
        self.0.events.push(ParsedEvent {
            event: Parsed::Skipped {
                reason: "malformed field",
            },
            ph,
            offset,
        });
    }

    /// Appends the element at `bytes[range]` as serde reads it. `Err`: malformed JSON, at
    /// serde's offset.
    pub fn push_serde(&mut self, bytes: &'a [u8], range: Range<usize>) -> Result<(), TraceError> {
        let el = &bytes[range.clone()];
        match serde_fields(el) {
            Ok(f) => self.push(f, range.start as u64),
            Err(e) if e.is_data() => self.push_malformed(range.start as u64),
            Err(e) => {
                return Err(TraceError::Syntax {
                    offset: (range.start + offset_of(el, e.line(), e.column())) as u64,
                    what: e.to_string(),
                })
            }
        }
        Ok(())
    }
}

/// Parses the elements at `ranges` of `bytes` in order with serde (the reference path). A
/// field of the wrong type skips the element as "malformed field" (its `ph` counted as `?`);
/// malformed JSON is a [`TraceError::Syntax`] at serde's offset.
pub fn parse_block<'a>(
    bytes: &'a [u8],
    ranges: &[Range<usize>],
) -> Result<ParsedBlock<'a>, TraceError> {
    let mut block = ParsedBlock::new(ranges.len());
    for r in ranges {
        block.push_serde(bytes, r.clone())?;
    }
    Ok(block)
}

/// Merges blocks (in file order) into one event list with global tables.
pub fn merge(blocks: Vec<ParsedBlock<'_>>) -> Events {
    let mut strings: Table<Cow<'_, str>> = Table::new();
    let mut keys: Table<TraceKey> = Table::new();
    let total: usize = blocks.iter().map(|b| b.0.events.len()).sum();
    let mut events: Vec<ParsedEvent> = Vec::new();
    for ParsedBlock(b) in blocks {
        let s: Vec<Sym> = b
            .strings
            .into_list()
            .into_iter()
            .map(|s| strings.id(s))
            .collect();
        let k: Vec<KeyId> = b.keys.into_iter().map(|k| keys.id(k)).collect();
        let remap = |e: &mut ParsedEvent| remap(e, &s, &k);
        if events.is_empty() {
            // The first block's list is the output (a large one is not copied again).
            events = b.events;
            events.iter_mut().for_each(remap);
            events.reserve(total - events.len());
        } else {
            events.extend(b.events.into_iter().map(|mut e| {
                remap(&mut e);
                e
            }));
        }
    }
    Events {
        events,
        strings: strings
            .into_list()
            .into_iter()
            .map(Cow::into_owned)
            .collect(),
        keys: keys.into_list(),
    }
}

/// Rewrites the block-local IDs of `e` with the global ones (`s`: strings, `k`: keys).
fn remap(e: &mut ParsedEvent, s: &[Sym], k: &[KeyId]) {
    let core = |c: &mut EventCore| {
        c.pid = k[c.pid as usize];
        c.tid = k[c.tid as usize];
        c.name = s[c.name as usize];
        c.cat = s[c.cat as usize];
    };
    e.ph = s[e.ph as usize];
    match &mut e.event {
        Parsed::Complete { core: c, bind, .. } => {
            core(c);
            if let Some(b) = bind {
                b.0 = s[b.0 as usize];
            }
        }
        Parsed::Begin(c) | Parsed::End(c) | Parsed::Instant(c) => core(c),
        Parsed::Flow { core: c, key, .. } => {
            core(c);
            *key = s[*key as usize];
        }
        Parsed::Meta(m) => {
            m.pid = k[m.pid as usize];
            m.tid = k[m.tid as usize];
        }
        Parsed::Skipped { .. } => {}
    }
}
