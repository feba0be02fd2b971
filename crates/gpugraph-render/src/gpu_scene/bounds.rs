//! The packed bounds view of a mutable [`GpuScene`]: one 16-byte row per slot holding what
//! visibility reads — the sphere's center and, in the fourth lane, its radius and whether the
//! record is live — in a buffer of its own beside the records.
//!
//! Why: the frame's visibility reads every slot every frame. Through the 128-byte record it
//! touches one 32-byte memory sector per row for 20 useful bytes; packed, a row is 16 bytes
//! and consecutive rows share sectors, so the cull reads half the bytes and every byte it
//! reads is used (at 16M records: 256 MB a frame instead of 512 MB).
//!
//! Encoding of a row `[x, y, z, w]` (bit patterns, [`packed_bounds`]): `x, y, z` are the
//! sphere center's words; `w` is `0` for a slot whose `flags` is 0 (a hole, a removed or
//! never-written slot: a zero-initialized buffer is all holes), else the radius with its sign
//! bit flipped (a radius of ±0 stored as `-0.0`). So a row is live exactly when the sign bit
//! of `w` is set, and its radius is `w` with the sign bit cleared; a negative radius (only
//! raw words can store one) flips to a clear sign bit and is never visible, as the record's
//! own test would decide. The scene's visibility ([`super::GpuSceneVisibility`]) decodes it.
//!
//! The draw keys view beside it: one 16-byte row per slot holding what draw generation and
//! resource-group classification read — `[flags, group_id, geometry_id, command_slot]`, the
//! record's words 1, 2, 3 and 11 ([`draw_key`]). Why: through the 128-byte record, a row's
//! `flags` and `command_slot` lie in two 32-byte sectors (64 bytes touched for 8 useful), and
//! the rows draw generation visits are scattered over the whole record buffer (2 GiB at 16M
//! records); a key row is one sector of a buffer an eighth of that size. A zero-initialized
//! buffer is all holes (`flags == 0`).
//!
//! Maintenance: every mutation keeps the rows of both views in sync for the slots whose
//! feeding bytes it wrote (bounds: `flags` and `sphere`; keys: `flags`, `group_id`,
//! `geometry_id` and `command_slot`). [`GpuScene::mutate`] writes those rows from the CPU
//! copy after the records (runs of consecutive slots, one queue write each, reported as
//! [`super::GpuSceneMutationReport::bounds_writes`] and
//! [`super::GpuSceneMutationReport::key_writes`]); a staged mutation uploads nothing more:
//! its upload's `bounds` node re-derives the rows of the staged words on the GPU after the
//! scatter ([`super::upload`]).

use std::ops::Range;

use super::{GpuScene, GpuSceneMutationReport, GpuSceneRecord, GPU_SCENE_RECORD_BYTES};

/// Bytes per packed bounds row.
pub const GPU_SCENE_BOUNDS_BYTES: u64 = 16;
const SIGN: u32 = 0x8000_0000;

/// The packed bounds row of `record` (see the module doc for the encoding), as words.
pub fn packed_bounds(record: &GpuSceneRecord) -> [u32; 4] {
    let s: [u32; 4] = bytemuck::cast(record.sphere);
    let w = if record.flags == 0 {
        0
    } else if s[3] & !SIGN == 0 {
        SIGN
    } else {
        s[3] ^ SIGN
    };
    [s[0], s[1], s[2], w]
}

/// Bytes per draw key row.
pub const GPU_SCENE_KEY_BYTES: u64 = 16;

/// The draw key row of `record`: `[flags, group_id, geometry_id, command_slot]`.
pub fn draw_key(record: &GpuSceneRecord) -> [u32; 4] {
    [
        record.flags,
        record.group_id,
        record.geometry_id,
        record.command_slot,
    ]
}

/// The record byte ranges that feed a packed bounds row: `flags` and `sphere`.
const BOUNDS_FEEDS: &[(u64, u64)] = &[(4, 8), (16, 32)];
/// The record byte ranges that feed a draw key row: `flags`, `group_id`, `geometry_id`,
/// `command_slot`.
const KEY_FEEDS: &[(u64, u64)] = &[(4, 16), (44, 48)];

/// The runs of consecutive slots whose packed bounds rows the sorted, disjoint record byte
/// `ranges` (relative to slot 0) change, in slot order.
pub(crate) fn bounds_rows(ranges: &[Range<u64>]) -> Vec<Range<u32>> {
    fed_rows(ranges, BOUNDS_FEEDS)
}

/// The runs of consecutive slots whose draw key rows `ranges` change, as [`bounds_rows`].
pub(crate) fn key_rows(ranges: &[Range<u64>]) -> Vec<Range<u32>> {
    fed_rows(ranges, KEY_FEEDS)
}

fn fed_rows(ranges: &[Range<u64>], feeds: &[(u64, u64)]) -> Vec<Range<u32>> {
    let touches = |slot: u64, r: &Range<u64>| {
        let base = slot * GPU_SCENE_RECORD_BYTES;
        feeds
            .iter()
            .any(|&(s, e)| r.start < base + e && base + s < r.end)
    };
    let mut out: Vec<Range<u32>> = Vec::new();
    for r in ranges.iter().filter(|r| r.start < r.end) {
        // Slots strictly inside the range are wholly written; only its ends may miss.
        let (mut lo, mut hi) = (
            r.start / GPU_SCENE_RECORD_BYTES,
            (r.end - 1) / GPU_SCENE_RECORD_BYTES + 1,
        );
        if !touches(lo, r) {
            lo += 1;
        }
        if hi > lo && !touches(hi - 1, r) {
            hi -= 1;
        }
        if lo >= hi {
            continue;
        }
        let (lo, hi) = (lo as u32, hi as u32);
        match out.last_mut() {
            Some(last) if last.end >= lo => last.end = last.end.max(hi),
            _ => out.push(lo..hi),
        }
    }
    out
}

impl GpuScene {
    /// Writes the packed bounds and draw key rows that `ranges` (merged record byte ranges
    /// just written) change, from the CPU copy, counting them into `report`: the key rows
    /// `keys` when the transaction knows them (a box patch rewrites the command slot word
    /// unchanged), else those whose feeding bytes `ranges` touch. Nothing for scenes
    /// without packed views.
    pub(super) fn write_bounds(
        &self,
        queue: &wgpu::Queue,
        ranges: &[Range<u64>],
        keys: Option<&[Range<u32>]>,
        report: &mut GpuSceneMutationReport,
    ) {
        let (Some(bounds), Some(key_buffer), Some(cpu)) = (&self.bounds, &self.keys, &self.cpu)
        else {
            return;
        };
        let records = &cpu.records;
        let (writes, bytes) =
            write_rows(queue, bounds, records, &bounds_rows(ranges), packed_bounds);
        report.bounds_writes = writes;
        report.bounds_bytes = bytes;
        report.queue_writes += report.bounds_writes.len();
        let fed;
        let key_runs = match keys {
            Some(k) => k,
            None => {
                fed = key_rows(ranges);
                &fed
            }
        };
        let (writes, bytes) = write_rows(queue, key_buffer, records, key_runs, draw_key);
        report.key_writes = writes;
        report.key_bytes = bytes;
        report.queue_writes += report.key_writes.len();
    }

    /// The draw keys buffer ([`GPU_SCENE_KEY_BYTES`] per slot; see
    /// [`crate::gpu_scene::bounds`]): mutable scenes only (`None` for borrowed records, whose
    /// draw generation and classification read the records).
    pub fn key_buffer(&self) -> Option<&wgpu::Buffer> {
        self.keys.as_ref()
    }

    /// The packed bounds buffer ([`GPU_SCENE_BOUNDS_BYTES`] per slot; see
    /// [`crate::gpu_scene::bounds`]): mutable scenes only (`None` for borrowed records, whose
    /// visibility reads the records).
    pub fn bounds_buffer(&self) -> Option<&wgpu::Buffer> {
        self.bounds.as_ref()
    }
}

/// One queue write per run of 16-byte rows packed from `records` by `pack`: the byte ranges
/// written and their sum.
fn write_rows(
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    records: &[GpuSceneRecord],
    runs: &[Range<u32>],
    pack: fn(&GpuSceneRecord) -> [u32; 4],
) -> (Vec<Range<u64>>, u64) {
    let mut rows: Vec<[u32; 4]> = Vec::new();
    let mut writes = Vec::with_capacity(runs.len());
    let mut total = 0;
    for run in runs {
        rows.clear();
        rows.extend(
            records[run.start as usize..run.end as usize]
                .iter()
                .map(pack),
        );
        let at = u64::from(run.start) * 16;
        queue.write_buffer(buffer, at, bytemuck::cast_slice(&rows));
        let bytes = u64::from(run.end - run.start) * 16;
        writes.push(at..at + bytes);
        total += bytes;
    }
    (writes, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_marks_live_rows_by_the_sign_bit() {
        let live = GpuSceneRecord::new(1).with_sphere([1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            packed_bounds(&live),
            [
                1f32.to_bits(),
                2f32.to_bits(),
                3f32.to_bits(),
                (-4f32).to_bits()
            ]
        );
        for r in [0.0f32, -0.0] {
            let zero = GpuSceneRecord::new(1).with_sphere([0.0, 0.0, 0.0, r]);
            assert_eq!(packed_bounds(&zero)[3], SIGN, "radius {r} is live");
        }
        let mut dead = live;
        dead.flags = 0;
        assert_eq!(packed_bounds(&dead)[3], 0);
        let negative = GpuSceneRecord::new(1).with_sphere([0.0, 0.0, 0.0, -2.0]);
        assert_eq!(packed_bounds(&negative)[3] & SIGN, 0, "never visible");
    }

    // Lists of one byte range are the input here, not ranges meant as element lists.
    #[allow(clippy::single_range_in_vec_init)]
    #[test]
    fn rows_follow_the_flags_and_sphere_bytes() {
        let b = GPU_SCENE_RECORD_BYTES;
        // Group word only: no row; flags: its row; a transform and the next slot's flags.
        assert_eq!(bounds_rows(&[8..12]), vec![]);
        assert_eq!(bounds_rows(&[b + 4..b + 8]), vec![1..2]);
        assert_eq!(bounds_rows(&[b + 64..2 * b + 8]), vec![2..3]);
        // Whole records and a run joining its neighbour's.
        assert_eq!(bounds_rows(&[0..3 * b, 3 * b + 16..3 * b + 20]), vec![0..4]);
        assert_eq!(bounds_rows(&[b + 32..b + 64, 5 * b..6 * b]), vec![5..6]);
        // Keys: flags through geometry and the command slot; not the sphere or box.
        assert_eq!(key_rows(&[16..44, 48..b]), vec![]);
        assert_eq!(
            key_rows(&[b + 44..b + 48, 3 * b + 12..3 * b + 16]),
            vec![1..2, 3..4]
        );
        assert_eq!(key_rows(&[0..3 * b]), vec![0..3]);
    }
}
