//! Transactional CPU-authored mutation of a [`GpuScene`] (spec 6.1b).
//!
//! One [`GpuSceneMutation`] is validated whole before anything changes; then removals run,
//! then patches, then insertions, then (optionally) a stable compaction. Every change is made
//! to the scene's CPU copy first and recorded as a dirty byte range; the ranges are merged
//! (sorted, overlapping or touching ranges joined) and each merged range is one
//! `queue.write_buffer` from the CPU copy. So the report's ranges are exactly the bytes
//! written, and its byte count is their sum: nothing is uploaded that did not change or was
//! not asked for.
//!
//! Costs by operation: a removal writes the slot's 4-byte `flags` word (to 0; the rest of the
//! hole keeps its old bytes, which no consumer reads without the active flag); a patch writes
//! its fields' bytes; an insertion writes one 128-byte record; a compaction writes every
//! moved record at its new slot plus the cleared suffix `active..count` (zeroed records),
//! and nothing when the scene is already dense. The 16-byte state block is written once when
//! `count`, `active_count` or `overflow` changed. The packed bounds view ([`super::bounds`])
//! gets the 16-byte rows of the slots whose `flags` or `sphere` bytes were written, one queue
//! write per run of consecutive slots (a removal, an insertion, a sphere patch, a moved or
//! cleared slot; not a transform or box patch); the draw keys view likewise for `flags`,
//! `group_id`, `geometry_id` and `command_slot` bytes.
//!
//! CPU cost: linear in the transaction, with no hashing of IDs in the common case. IDs map to
//! slots through `IdSlots` (`ids.rs`: a vector while IDs are dense); validation finds
//! repeated IDs by marking their slots in a byte-per-slot scratch; a patch's dirty words are a
//! 32-bit mask per record turned into ranges; ranges named in slot order are merged without
//! sorting. (SipHash maps for both lookups and a sort of every dirty range were most of a
//! 1,000-record patch's CPU time before.)

use std::ops::Range;

pub use super::ranges::merge;

use super::record::{aabb_problem, sphere_problem, transform_problem};
use super::{
    GpuScene, GpuSceneError, GpuSceneField, GpuSceneOperation, GpuSceneRecord, GpuSceneState,
    GPU_SCENE_ACTIVE_FLAG, GPU_SCENE_RECORD_BYTES, GPU_SCENE_STATE_BYTES,
};

/// One field's new value in a [`GpuScenePatch`].
#[derive(Clone, Debug, PartialEq)]
pub enum GpuSceneFieldValue {
    /// New flags; must keep [`GPU_SCENE_ACTIVE_FLAG`] (remove a record to deactivate it).
    Flags(u32),
    /// New resource group.
    GroupId(u32),
    /// New geometry.
    GeometryId(u32),
    /// New command slot.
    CommandSlot(u32),
    /// New bounding sphere (finite, radius ≥ 0).
    Sphere([f32; 4]),
    /// New box (finite, `min ≤ max`); the sphere is left as it is.
    Aabb {
        /// Minimum.
        min: [f32; 3],
        /// Maximum.
        max: [f32; 3],
    },
    /// New transform (finite).
    Transform([[f32; 4]; 4]),
    /// Raw words at a record byte offset in `8..128`, 4-byte aligned (object ID and flags are
    /// not raw-patchable). Not checked for finiteness: the caller owns the bits.
    Words {
        /// Record byte offset of the first word.
        byte_offset: u64,
        /// The words.
        words: Vec<u32>,
    },
}

impl GpuSceneFieldValue {
    /// Record byte range written.
    pub fn byte_range(&self) -> Range<u64> {
        let field = |f: GpuSceneField| f.byte_offset()..f.byte_offset() + f.byte_length();
        match self {
            GpuSceneFieldValue::Flags(_) => field(GpuSceneField::Flags),
            GpuSceneFieldValue::GroupId(_) => field(GpuSceneField::GroupId),
            GpuSceneFieldValue::GeometryId(_) => field(GpuSceneField::GeometryId),
            GpuSceneFieldValue::CommandSlot(_) => field(GpuSceneField::CommandSlot),
            GpuSceneFieldValue::Sphere(_) => field(GpuSceneField::Sphere),
            GpuSceneFieldValue::Aabb { .. } => {
                GpuSceneField::AabbMin.byte_offset()
                    ..GpuSceneField::AabbMax.byte_offset() + GpuSceneField::AabbMax.byte_length()
            }
            GpuSceneFieldValue::Transform(_) => field(GpuSceneField::Transform),
            GpuSceneFieldValue::Words { byte_offset, words } => {
                *byte_offset..byte_offset + 4 * words.len() as u64
            }
        }
    }

    /// The record words written, as a mask (bit `i`: word `i` of the 32).
    fn word_mask(&self) -> u32 {
        // (first word, words)
        let (first, words) = match self {
            GpuSceneFieldValue::Flags(_) => (1, 1),
            GpuSceneFieldValue::GroupId(_) => (2, 1),
            GpuSceneFieldValue::GeometryId(_) => (3, 1),
            GpuSceneFieldValue::Sphere(_) => (4, 4),
            GpuSceneFieldValue::Aabb { .. } => (8, 7),
            GpuSceneFieldValue::CommandSlot(_) => (11, 1),
            GpuSceneFieldValue::Transform(_) => (16, 16),
            GpuSceneFieldValue::Words { byte_offset, words } => {
                ((*byte_offset / 4) as u32, words.len() as u32)
            }
        };
        if words == 0 || first >= 32 {
            return 0;
        }
        (u32::MAX >> (32 - words.min(32 - first))) << first
    }

    /// Whether the value changes a draw key field (`flags`, `group_id`, `geometry_id`,
    /// `command_slot`). Not a box: its write range spans the command slot word, rewritten
    /// unchanged from the CPU copy.
    fn feeds_key(&self) -> bool {
        const KEY_WORDS: u32 = 0b1110 | 1 << 11;
        match self {
            GpuSceneFieldValue::Aabb { .. } => false,
            v => v.word_mask() & KEY_WORDS != 0,
        }
    }

    fn apply(&self, r: &mut GpuSceneRecord) {
        match self {
            GpuSceneFieldValue::Flags(f) => r.flags = *f,
            GpuSceneFieldValue::GroupId(g) => r.group_id = *g,
            GpuSceneFieldValue::GeometryId(g) => r.geometry_id = *g,
            GpuSceneFieldValue::CommandSlot(s) => r.command_slot = *s,
            GpuSceneFieldValue::Sphere(s) => r.sphere = *s,
            GpuSceneFieldValue::Aabb { min, max } => {
                r.aabb_min = *min;
                r.aabb_max = *max;
            }
            GpuSceneFieldValue::Transform(t) => r.transform = *t,
            GpuSceneFieldValue::Words { byte_offset, words } => {
                let all: &mut [u32; 32] = bytemuck::cast_mut(r);
                let at = (*byte_offset / 4) as usize;
                all[at..at + words.len()].copy_from_slice(words);
            }
        }
    }
}

/// New values for some fields of one live record.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuScenePatch {
    /// The object ID (its slot does not change).
    pub id: u32,
    /// Values, applied in order.
    pub values: Vec<GpuSceneFieldValue>,
}

/// One transaction. An ID may appear in only one of `remove`, `patch`, `insert` (and once).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuSceneMutation {
    /// Live IDs to remove (their slots become holes).
    pub remove: Vec<u32>,
    /// Field patches of live IDs.
    pub patch: Vec<GpuScenePatch>,
    /// New records (IDs not live), placed in the lowest free slots in input order and made
    /// active; those that find no slot are reported in
    /// [`GpuSceneMutationReport::uninserted`].
    pub insert: Vec<GpuSceneRecord>,
    /// Stable-compact afterwards: live records keep their relative order in slots
    /// `0..active_count`.
    pub compact: bool,
}

/// A record moved by compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSceneMove {
    /// The object ID.
    pub id: u32,
    /// Old slot.
    pub from: u32,
    /// New slot.
    pub to: u32,
}

/// What one transaction did and exactly what it uploaded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuSceneMutationReport {
    /// `(id, slot)` removed.
    pub removed: Vec<(u32, u32)>,
    /// `(id, slot)` patched.
    pub patched: Vec<(u32, u32)>,
    /// `(id, slot)` inserted.
    pub inserted: Vec<(u32, u32)>,
    /// IDs not inserted for lack of a free slot (the input's suffix); the GPU state's
    /// `overflow` is 1 when this is not empty.
    pub uninserted: Vec<u32>,
    /// Records moved by compaction.
    pub moves: Vec<GpuSceneMove>,
    /// Record-buffer byte ranges written (relative to slot 0), sorted and disjoint: one
    /// queue write each ([`GpuScene::mutate`]) or one run of a staged scatter
    /// ([`GpuScene::mutate_staged`]).
    pub record_writes: Vec<Range<u64>>,
    /// Sum of the record ranges' lengths.
    pub record_bytes: u64,
    /// Bytes written to the state block (0 or 16).
    pub state_bytes: u64,
    /// Byte ranges of the scene's packed bounds buffer written from the CPU copy (one queue
    /// write each): the rows of the slots whose `flags` or `sphere` bytes the record writes
    /// changed ([`crate::gpu_scene::bounds`]). Empty for a staged mutation, whose upload
    /// re-derives those rows on the GPU.
    pub bounds_writes: Vec<Range<u64>>,
    /// Sum of the bounds ranges' lengths.
    pub bounds_bytes: u64,
    /// Byte ranges of the scene's draw keys buffer written from the CPU copy (one queue write
    /// each): the rows of the slots whose `flags`, `group_id`, `geometry_id` or
    /// `command_slot` bytes the record writes changed ([`crate::gpu_scene::bounds`]). Empty
    /// for a staged mutation, whose upload re-derives those rows on the GPU.
    pub key_writes: Vec<Range<u64>>,
    /// Sum of the key ranges' lengths.
    pub key_bytes: u64,
    /// Bytes a staged mutation wrote to its [`crate::GpuSceneUpload`] besides the record
    /// bytes: 8 per run, 16 of counts and 12 of dispatch arguments (0 for [`GpuScene::mutate`]).
    pub staging_bytes: u64,
    /// Writes of a staged transaction straight into its upload's mapped host buffer (0 or 1;
    /// then no queue write carried its bytes, and the encode that takes them copies them; see
    /// [`crate::gpu_scene::upload`]).
    pub host_writes: usize,
    /// Queue writes the transaction issued: one per record range, bounds range and key range
    /// ([`GpuScene::mutate`]), one or three into the upload ([`GpuScene::mutate_staged`], see
    /// [`crate::gpu_scene::upload`]), plus the state block's.
    pub queue_writes: usize,
}

impl GpuSceneMutationReport {
    /// Total bytes uploaded.
    pub fn uploaded_bytes(&self) -> u64 {
        self.record_bytes
            + self.state_bytes
            + self.staging_bytes
            + self.bounds_bytes
            + self.key_bytes
    }
    /// Queue writes issued ([`Self::queue_writes`]).
    pub fn write_count(&self) -> usize {
        self.queue_writes
    }
    /// `Err(CapacityExceeded)` when some insertions found no slot, for callers that treat a
    /// full scene as an error rather than a result.
    pub fn into_complete(self, scene: &GpuScene) -> Result<Self, GpuSceneError> {
        if self.uninserted.is_empty() {
            return Ok(self);
        }
        Err(GpuSceneError::CapacityExceeded {
            scene: scene.label().into(),
            capacity: scene.capacity(),
            required: u64::from(scene.state().active_count) + self.uninserted.len() as u64,
        })
    }
}

impl GpuScene {
    /// Applies `mutation` as one transaction (see the module doc): validated whole, then
    /// applied to the CPU copy and uploaded as merged dirty ranges through `queue` (in place
    /// for the next submission; nothing is submitted or read back). Fails, changing nothing,
    /// on an unknown or repeated ID, an insert of a live ID or of the invalid ID, a value that
    /// cannot be stored, a bad raw range, an opaque or destroyed scene.
    pub fn mutate(
        &mut self,
        queue: &wgpu::Queue,
        mutation: &GpuSceneMutation,
    ) -> Result<GpuSceneMutationReport, GpuSceneError> {
        let Applied {
            mut report,
            state,
            key_rows,
        } = self.apply_to_copy(mutation)?;
        let bytes: &[u8] = bytemuck::cast_slice(&self.cpu.as_ref().expect("checked").records);
        for r in &report.record_writes {
            queue.write_buffer(
                &self.records,
                self.record_offset + r.start,
                &bytes[r.start as usize..r.end as usize],
            );
        }
        report.queue_writes = report.record_writes.len();
        let ranges = std::mem::take(&mut report.record_writes);
        self.write_bounds(queue, &ranges, Some(&key_rows), &mut report);
        report.record_writes = ranges;
        self.write_state(queue, state, &mut report);
        Ok(report)
    }

    /// Writes `state` when it changed, counting its bytes into `report`.
    pub(super) fn write_state(
        &mut self,
        queue: &wgpu::Queue,
        state: GpuSceneState,
        report: &mut GpuSceneMutationReport,
    ) {
        if state != self.gpu_state {
            queue.write_buffer(&self.state, 0, bytemuck::bytes_of(&state));
            report.state_bytes = GPU_SCENE_STATE_BYTES;
            report.queue_writes += 1;
            self.gpu_state = state;
        }
    }

    /// Validates `mutation` and applies it to the CPU copy: the report with the merged dirty
    /// ranges (`record_bytes` their sum), the new state and the draw key rows that change,
    /// nothing written to the GPU yet.
    pub(super) fn apply_to_copy(
        &mut self,
        mutation: &GpuSceneMutation,
    ) -> Result<Applied, GpuSceneError> {
        let slots = self.validate(mutation)?;
        let cpu = self.cpu.as_mut().expect("validated: mutable");
        let mut report = GpuSceneMutationReport {
            removed: Vec::with_capacity(mutation.remove.len()),
            patched: Vec::with_capacity(mutation.patch.len()),
            ..Default::default()
        };
        // Per patch a few ranges of one record (merged right away), per removal and insertion
        // one: in slot order when the transaction names records in slot order, so the final
        // merge only joins neighbours.
        let mut dirty: Vec<Range<u64>> = Vec::with_capacity(
            mutation.remove.len() + 2 * mutation.patch.len() + mutation.insert.len(),
        );
        let rec = |slot: u32, r: Range<u64>| {
            let base = u64::from(slot) * GPU_SCENE_RECORD_BYTES;
            base + r.start..base + r.end
        };
        // The slots whose draw key rows change (`bounds.rs`).
        let mut keys: Vec<Range<u32>> = Vec::with_capacity(
            mutation.remove.len() + mutation.patch.len() + mutation.insert.len(),
        );
        let mut state = self.gpu_state;
        for (&id, &slot) in mutation.remove.iter().zip(&slots.remove) {
            cpu.slot_of.remove(id);
            cpu.records[slot as usize].flags = 0;
            cpu.holes.insert(slot);
            dirty.push(rec(slot, 4..8));
            keys.push(slot..slot + 1);
            report.removed.push((id, slot));
            state.active_count -= 1;
        }
        for (p, &slot) in mutation.patch.iter().zip(&slots.patch) {
            let record = &mut cpu.records[slot as usize];
            // The record's written words as a mask, then one range per run of set bits.
            let mut mask = 0u32;
            let mut key = false;
            for v in &p.values {
                v.apply(record);
                mask |= v.word_mask();
                key |= v.feeds_key();
            }
            if key {
                keys.push(slot..slot + 1);
            }
            while mask != 0 {
                let first = mask.trailing_zeros();
                let words = (!(mask >> first)).trailing_zeros();
                dirty.push(rec(
                    slot,
                    u64::from(4 * first)..u64::from(4 * (first + words)),
                ));
                mask = if first + words >= 32 {
                    0
                } else {
                    mask & !((u32::MAX >> (32 - words)) << first)
                };
            }
            report.patched.push((p.id, slot));
        }
        for (k, r) in mutation.insert.iter().enumerate() {
            let slot = match cpu.holes.pop_first() {
                Some(s) => s,
                None if state.count < self.capacity => {
                    state.count += 1;
                    state.count - 1
                }
                None => {
                    report.uninserted = mutation.insert[k..].iter().map(|r| r.object_id).collect();
                    state.overflow = 1;
                    break;
                }
            };
            let mut r = *r;
            r.flags |= GPU_SCENE_ACTIVE_FLAG;
            r.reserved = 0;
            cpu.records[slot as usize] = r;
            cpu.slot_of.insert(r.object_id, slot);
            dirty.push(rec(slot, 0..GPU_SCENE_RECORD_BYTES));
            keys.push(slot..slot + 1);
            report.inserted.push((r.object_id, slot));
            state.active_count += 1;
        }
        if mutation.compact {
            let mut to = 0u32;
            for from in 0..state.count {
                let r = cpu.records[from as usize];
                if !r.is_active() {
                    continue;
                }
                if from != to {
                    cpu.records[to as usize] = r;
                    cpu.slot_of.insert(r.object_id, to);
                    dirty.push(rec(to, 0..GPU_SCENE_RECORD_BYTES));
                    keys.push(to..to + 1);
                    report.moves.push(GpuSceneMove {
                        id: r.object_id,
                        from,
                        to,
                    });
                }
                to += 1;
            }
            for s in to..state.count {
                cpu.records[s as usize] = bytemuck::Zeroable::zeroed();
            }
            if to < state.count {
                keys.push(to..state.count);
                dirty.push(
                    u64::from(to) * GPU_SCENE_RECORD_BYTES
                        ..u64::from(state.count) * GPU_SCENE_RECORD_BYTES,
                );
            }
            cpu.holes.clear();
            state.count = to;
        }
        report.record_writes = merge(dirty);
        report.record_bytes = report.record_writes.iter().map(|r| r.end - r.start).sum();
        Ok(Applied {
            report,
            state,
            key_rows: merge(keys),
        })
    }

    /// Stable compaction alone: `mutate` of an empty transaction with `compact`.
    pub fn compact(
        &mut self,
        queue: &wgpu::Queue,
    ) -> Result<GpuSceneMutationReport, GpuSceneError> {
        self.mutate(
            queue,
            &GpuSceneMutation {
                compact: true,
                ..Default::default()
            },
        )
    }

    /// Checks the whole transaction before anything changes; the slots of its removals and
    /// patches in input order. Errors are those of the first offending item in the order
    /// removals, patches, insertions (per item: a repeated ID, an unknown or live ID, a value).
    fn validate(&mut self, m: &GpuSceneMutation) -> Result<Slots, GpuSceneError> {
        let scene = &self.label;
        if self.destroyed {
            return Err(GpuSceneError::Destroyed {
                scene: scene.clone(),
            });
        }
        let Some(cpu) = self.cpu.as_mut() else {
            return Err(GpuSceneError::Immutable {
                scene: scene.clone(),
            });
        };
        // Which operation already named a slot's ID: a byte per slot, cleared again below
        // (no hashing, no allocation after the first transaction).
        let mut marks = std::mem::take(&mut cpu.marks);
        if marks.len() < cpu.records.len() {
            marks.resize(cpu.records.len(), 0);
        }
        let mut slots = Slots {
            remove: Vec::with_capacity(m.remove.len()),
            patch: Vec::with_capacity(m.patch.len()),
        };
        let result = Self::validate_marked(
            scene,
            cpu,
            self.gpu_state.active_count,
            m,
            &mut marks,
            &mut slots,
        );
        for &s in slots.remove.iter().chain(&slots.patch) {
            marks[s as usize] = 0;
        }
        cpu.marks = marks;
        result?;
        Ok(slots)
    }

    fn validate_marked(
        scene: &str,
        cpu: &super::CpuRecords,
        active: u32,
        m: &GpuSceneMutation,
        marks: &mut [u8],
        slots: &mut Slots,
    ) -> Result<(), GpuSceneError> {
        const REMOVE: u8 = 1;
        const PATCH: u8 = 2;
        let operation = |mark: u8| match mark {
            REMOVE => GpuSceneOperation::Remove,
            PATCH => GpuSceneOperation::Patch,
            _ => GpuSceneOperation::Initial,
        };
        let duplicate = |id: u32, first, second| GpuSceneError::DuplicateId {
            scene: scene.into(),
            id,
            first,
            second,
        };
        let unknown = |id: u32, operation| GpuSceneError::UnknownId {
            scene: scene.into(),
            id,
            operation,
            active,
        };
        let mut claim = |id: u32, op: u8, out: &mut Vec<u32>| {
            let Some(slot) = cpu.slot_of.get(id) else {
                return Err(unknown(id, operation(op)));
            };
            let mark = &mut marks[slot as usize];
            if *mark != 0 {
                return Err(duplicate(id, operation(*mark), operation(op)));
            }
            *mark = op;
            out.push(slot);
            Ok(())
        };
        for &id in &m.remove {
            claim(id, REMOVE, &mut slots.remove)?;
        }
        for p in &m.patch {
            claim(p.id, PATCH, &mut slots.patch)?;
            for v in &p.values {
                check_value(scene, p.id, v)?;
            }
        }
        if m.insert.is_empty() {
            return Ok(());
        }
        let mut fresh: rustc_hash::FxHashSet<u32> =
            rustc_hash::FxHashSet::with_capacity_and_hasher(m.insert.len(), Default::default());
        for r in &m.insert {
            let id = r.object_id;
            if let Some(slot) = cpu.slot_of.get(id) {
                // Live: named by a removal or patch of this transaction, or just live.
                let first = operation(marks[slot as usize]);
                return Err(duplicate(id, first, GpuSceneOperation::Insert));
            }
            if !fresh.insert(id) {
                return Err(duplicate(
                    id,
                    GpuSceneOperation::Insert,
                    GpuSceneOperation::Insert,
                ));
            }
            if let Some((field, reason)) = r.problem() {
                return Err(GpuSceneError::InvalidField {
                    scene: scene.into(),
                    id,
                    field,
                    reason,
                });
            }
        }
        Ok(())
    }
}

/// A transaction applied to the CPU copy ([`GpuScene::apply_to_copy`]).
pub(super) struct Applied {
    pub(super) report: GpuSceneMutationReport,
    pub(super) state: GpuSceneState,
    /// Runs of slots whose draw key rows changed, sorted and merged.
    pub(super) key_rows: Vec<Range<u32>>,
}

/// The slots a transaction's removals and patches name, in input order (from validation).
struct Slots {
    remove: Vec<u32>,
    patch: Vec<u32>,
}

fn check_value(scene: &str, id: u32, v: &GpuSceneFieldValue) -> Result<(), GpuSceneError> {
    let invalid = |field, reason: String| GpuSceneError::InvalidField {
        scene: scene.into(),
        id,
        field,
        reason,
    };
    match v {
        GpuSceneFieldValue::Flags(f) if f & GPU_SCENE_ACTIVE_FLAG == 0 => Err(invalid(
            GpuSceneField::Flags,
            format!("flags {f:#x} clear the active bit; remove the record instead"),
        )),
        GpuSceneFieldValue::Sphere(s) => match sphere_problem(s) {
            Some(r) => Err(invalid(GpuSceneField::Sphere, r)),
            None => Ok(()),
        },
        GpuSceneFieldValue::Aabb { min, max } => match aabb_problem(min, max) {
            Some(r) => Err(invalid(GpuSceneField::AabbMin, r)),
            None => Ok(()),
        },
        GpuSceneFieldValue::Transform(t) => match transform_problem(t) {
            Some(r) => Err(invalid(GpuSceneField::Transform, r)),
            None => Ok(()),
        },
        GpuSceneFieldValue::Words { byte_offset, words } => {
            let end = byte_offset + 4 * words.len() as u64;
            if *byte_offset < 8 || end > GPU_SCENE_RECORD_BYTES || byte_offset % 4 != 0 {
                return Err(GpuSceneError::BadFieldRange {
                    scene: scene.into(),
                    id,
                    byte_offset: *byte_offset,
                    bytes: 4 * words.len() as u64,
                });
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The state a CPU model expects (for oracles and tests): counts from the live slots.
pub fn expected_state(count: u32, active_count: u32, overflow: bool) -> GpuSceneState {
    GpuSceneState {
        count,
        active_count,
        overflow: u32::from(overflow),
        reserved: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value's word mask covers exactly its byte range's words.
    #[test]
    fn word_masks_are_the_byte_ranges() {
        use GpuSceneFieldValue as V;
        let values = [
            V::Flags(1),
            V::GroupId(2),
            V::GeometryId(3),
            V::CommandSlot(4),
            V::Sphere([0.0; 4]),
            V::Aabb {
                min: [0.0; 3],
                max: [1.0; 3],
            },
            V::Transform([[0.0; 4]; 4]),
            V::Words {
                byte_offset: 8,
                words: vec![1],
            },
            V::Words {
                byte_offset: 124,
                words: vec![1],
            },
            V::Words {
                byte_offset: 8,
                words: vec![0; 30],
            },
            V::Words {
                byte_offset: 40,
                words: vec![],
            },
        ];
        for v in values {
            let r = v.byte_range();
            let want = (r.start / 4..r.end / 4).fold(0u32, |m, w| m | 1 << w);
            assert_eq!(v.word_mask(), want, "{v:?}");
        }
    }
}
