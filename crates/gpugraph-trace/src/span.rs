//! The canonical span (32 bytes) and the dependency record (16 bytes), exactly as they lie in
//! GPU memory.
//!
//! | word | span field | contents |
//! | ---: | --- | --- |
//! | 0 | `start_lo` | start ticks since the trace origin, low 32 bits |
//! | 1 | `start_hi` | start ticks, high 32 bits |
//! | 2 | `duration_lo` | duration ticks, low 32 bits |
//! | 3 | `duration_hi_flags` | duration bits 32..48 (low 16), [`SpanFlags`] (high 16) |
//! | 4 | `thread` | global thread index ([`crate::TraceThread`]) |
//! | 5 | `process_lane` | process index (low 16), lane = nesting depth in its thread (high 16) |
//! | 6 | `group` | interned name ID: the key of name statistics and of the group filter |
//! | 7 | `source_id` | ordinal of the originating event in the source file |
//!
//! Why split words: real traces carry epoch timestamps near 1.7e12 µs, which neither f32 nor
//! a 32-bit integer holds; times are integer ticks (nanoseconds for Chrome JSON, whose unit is
//! the microsecond with at most three decimals) relative to the trace's first timestamp, so
//! sums stay exact. WGSL has no 64-bit integers, so kernels compare `(hi, lo)` pairs. The
//! duration keeps 48 bits (78 hours of nanoseconds) to leave room for the flags.

/// Bytes per canonical span.
pub const TRACE_SPAN_BYTES: u64 = 32;
/// 32-bit words per canonical span.
pub const TRACE_SPAN_WORDS: u64 = 8;
/// Bytes per dependency record.
pub const TRACE_DEPENDENCY_BYTES: u64 = 16;
/// The largest duration a span stores (48 bits of ticks).
pub const MAX_SPAN_DURATION: u64 = (1 << 48) - 1;
/// The "no span" value of parents, picks and projected endpoints.
pub const NO_SPAN: u32 = u32::MAX;
/// The most processes one trace may have (the span's process field is 16 bits).
pub const MAX_PROCESSES: usize = 1 << 16;
/// The deepest lane (nesting depth) a span stores.
pub const MAX_LANE: u32 = u16::MAX as u32;

/// Classification bits of a span (the high 16 bits of word 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpanFlags(pub u16);

impl SpanFlags {
    /// From an `X` (complete) event.
    pub const COMPLETE: u16 = 1 << 0;
    /// From a matched `B`/`E` pair (or an unmatched `B`).
    pub const BEGIN_END: u16 = 1 << 1;
    /// From an instant event (`i`/`I`): duration 0.
    pub const INSTANT: u16 = 1 << 2;
    /// A `B` without its `E`: extended to the end of the trace.
    pub const UNFINISHED: u16 = 1 << 3;
    /// Duration 0 (instants and zero-length slices).
    pub const ZERO_DURATION: u16 = 1 << 4;
    /// Overlaps a span of its thread without nesting in it: placed on its own sub-lane.
    pub const OVERLAP: u16 = 1 << 5;
    /// Source of at least one dependency.
    pub const FLOW_OUT: u16 = 1 << 6;
    /// Target of at least one dependency.
    pub const FLOW_IN: u16 = 1 << 7;
    /// Duration clamped to [`MAX_SPAN_DURATION`].
    pub const CLAMPED: u16 = 1 << 8;

    /// Whether every bit of `bits` is set.
    pub fn has(self, bits: u16) -> bool {
        self.0 & bits == bits
    }

    /// The span's draw group (the three span draws of the trace frame): 0 ordinary slices,
    /// 1 instants and zero-length spans, 2 anomalies (unfinished, overlapping, clamped).
    /// Anomalies win over instants.
    pub fn draw_group(self) -> u32 {
        if self.0 & (Self::UNFINISHED | Self::OVERLAP | Self::CLAMPED) != 0 {
            2
        } else if self.0 & (Self::INSTANT | Self::ZERO_DURATION) != 0 {
            1
        } else {
            0
        }
    }
}

/// Draw groups of [`SpanFlags::draw_group`].
pub const DRAW_GROUPS: u32 = 3;

/// One canonical span, exactly as it lies in GPU memory (see the module table).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TraceSpan {
    /// Start ticks, low word.
    pub start_lo: u32,
    /// Start ticks, high word.
    pub start_hi: u32,
    /// Duration ticks, low word.
    pub duration_lo: u32,
    /// Duration bits 32..48 (low 16) and flags (high 16).
    pub duration_hi_flags: u32,
    /// Global thread index.
    pub thread: u32,
    /// Process index (low 16) and lane (high 16).
    pub process_lane: u32,
    /// Interned name ID.
    pub group: u32,
    /// Ordinal of the source event.
    pub source_id: u32,
}

/// The parts of a span before packing (times in ticks since the trace origin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanParts {
    /// Start ticks.
    pub start: u64,
    /// Duration ticks (clamped to [`MAX_SPAN_DURATION`] with [`SpanFlags::CLAMPED`]).
    pub duration: u64,
    /// Global thread index.
    pub thread: u32,
    /// Process index (< [`MAX_PROCESSES`]).
    pub process: u32,
    /// Nesting depth in the thread (≤ [`MAX_LANE`]).
    pub lane: u32,
    /// Interned name ID.
    pub group: u32,
    /// Source event ordinal.
    pub source_id: u32,
    /// Classification.
    pub flags: SpanFlags,
}

impl TraceSpan {
    /// Packs `p`. The duration is clamped to 48 bits (setting [`SpanFlags::CLAMPED`]), the
    /// process and lane to 16 bits; the ingestion checks those limits before packing.
    pub fn pack(p: SpanParts) -> Self {
        let mut flags = p.flags;
        let duration = if p.duration > MAX_SPAN_DURATION {
            flags.0 |= SpanFlags::CLAMPED;
            MAX_SPAN_DURATION
        } else {
            p.duration
        };
        Self {
            start_lo: p.start as u32,
            start_hi: (p.start >> 32) as u32,
            duration_lo: duration as u32,
            duration_hi_flags: ((duration >> 32) as u32 & 0xffff) | (u32::from(flags.0) << 16),
            thread: p.thread,
            process_lane: (p.process & 0xffff) | (p.lane.min(MAX_LANE) << 16),
            group: p.group,
            source_id: p.source_id,
        }
    }

    /// The fields back.
    pub fn parts(&self) -> SpanParts {
        SpanParts {
            start: self.start(),
            duration: self.duration(),
            thread: self.thread,
            process: self.process(),
            lane: self.lane(),
            group: self.group,
            source_id: self.source_id,
            flags: self.flags(),
        }
    }

    /// Start ticks since the trace origin.
    pub fn start(&self) -> u64 {
        u64::from(self.start_lo) | (u64::from(self.start_hi) << 32)
    }
    /// Duration ticks.
    pub fn duration(&self) -> u64 {
        u64::from(self.duration_lo) | (u64::from(self.duration_hi_flags & 0xffff) << 32)
    }
    /// End ticks (`start + duration`).
    pub fn end(&self) -> u64 {
        self.start() + self.duration()
    }
    /// Classification.
    pub fn flags(&self) -> SpanFlags {
        SpanFlags((self.duration_hi_flags >> 16) as u16)
    }
    /// Sets flag bits.
    pub fn set_flags(&mut self, bits: u16) {
        self.duration_hi_flags |= u32::from(bits) << 16;
    }
    /// Process index.
    pub fn process(&self) -> u32 {
        self.process_lane & 0xffff
    }
    /// Lane (nesting depth in its thread).
    pub fn lane(&self) -> u32 {
        self.process_lane >> 16
    }
}

/// What a dependency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum DependencyKind {
    /// A flow chain (`s` → `t`… → `f` with one `id`).
    Flow = 0,
    /// `bind_id` with `flow_out` on the source and `flow_in` on the target.
    Bind = 1,
}

/// One fixed-width dependency record (16 bytes): `from` → `to`, canonical span IDs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TraceDependency {
    /// Source span ID.
    pub from: u32,
    /// Target span ID.
    pub to: u32,
    /// [`DependencyKind`] as u32.
    pub kind: u32,
    /// The flow's interned ID (the `id`/`bind_id` string), for display.
    pub flow: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_round_trips_and_is_32_bytes() {
        assert_eq!(std::mem::size_of::<TraceSpan>() as u64, TRACE_SPAN_BYTES);
        assert_eq!(
            std::mem::size_of::<TraceDependency>() as u64,
            TRACE_DEPENDENCY_BYTES
        );
        let p = SpanParts {
            start: 1_700_000_000_123_456_789,
            duration: (1 << 47) + 12345,
            thread: 7,
            process: 65535,
            lane: 300,
            group: 42,
            source_id: 9,
            flags: SpanFlags(SpanFlags::COMPLETE | SpanFlags::FLOW_IN),
        };
        assert_eq!(TraceSpan::pack(p).parts(), p);
        let big = TraceSpan::pack(SpanParts {
            duration: u64::MAX,
            ..p
        });
        assert_eq!(big.duration(), MAX_SPAN_DURATION);
        assert!(big.flags().has(SpanFlags::CLAMPED));
        assert_eq!(big.flags().draw_group(), 2);
    }
}
