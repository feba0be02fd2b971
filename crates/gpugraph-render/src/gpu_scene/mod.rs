//! GPUScene (spec Phase 6): a flat GPU draw database.
//!
//! * [`GpuScene`] (6.1a, 6.1b): fixed-capacity storage of 128-byte [`GpuSceneRecord`]s with
//!   stable object IDs separate from physical slots, a 16-byte GPU state block, typed strided
//!   graph views per field ([`GpuScene::import_to_graph`]), a packed bounds view (16 bytes a
//!   slot, what visibility reads; [`bounds`]) and a draw keys view (16 bytes a slot, what
//!   draw generation and group classification read) kept in sync by every mutation, and
//!   transactional CPU-authored mutation with exact upload costs ([`GpuScene::mutate`],
//!   [`mutation`]), or staged in one upload and scattered on the GPU
//!   ([`GpuScene::mutate_staged`], [`upload`]).
//! * [`GpuSceneVisibility`]: the frame's bounds visibility fused with its compaction into a
//!   list of visible slots and a GPU count, in one pass over the packed bounds.
//! * [`adapters`] (6.1c): a CPU hierarchy flattened by stable preorder callbacks, and
//!   `GpuTable` batches borrowed as ordered partitions without readback or packing.
//! * [`GpuSceneDrawGeneration`] (6.2a): active, optionally visible rows claim indirect-command
//!   slots (lowest row wins); only `instanceCount` / `firstInstance` are written. Over a
//!   compacted visible-row list its work follows the visible rows and the commands it
//!   publishes, not the scene or command capacity.
//! * [`GpuSceneResourceGroups`] (6.2b): generated commands (every one, or the draw
//!   generation's published list) classified into renderer-owned group windows with per-group
//!   counts and diagnostics on the GPU.
//! * [`cpu`]: the oracles of the GPU steps.
//! * The two consumers (6.3): [`source::SceneSource`] (an application scene graph, from a glTF
//!   2.0 file through [`gltf`] or generated) flattened into one scene, and
//!   [`table::GpuTableScene`] (a GPU table of points or boxes as ordered partitions), both
//!   drawn by one [`GpuSceneFrame`]: visibility, draw generation, groups, one render bundle,
//!   picking.
//!
//! The scene is storage, not a scene graph: no hierarchy, pipeline, material or table type
//! enters the record, and nothing here submits or reads back.

pub mod adapters;
pub mod bounds;
pub mod cpu;
mod draw_generation;
mod error;
pub mod frame;
mod frame_draw;
pub mod gltf;
mod ids;
pub mod mutation;
mod outputs;
mod ranges;
mod record;
mod resource_groups;
#[cfg(test)]
mod shader_layout;
pub mod source;
pub mod table;
pub mod upload;
mod visibility;

use gpugraph_command::{BufferHandle, CommandGraph, DataView, DataViewDescriptor, VectorFormat};
use wgpu::BufferUsages;

pub use bounds::{draw_key, packed_bounds, GPU_SCENE_BOUNDS_BYTES, GPU_SCENE_KEY_BYTES};
pub use draw_generation::{
    DrawGenerationParams, GpuSceneCommandList, GpuSceneDrawGeneration, GpuSceneDrawOutput,
    GpuSceneVisibleRows, GPU_SCENE_DRAW_ROW_TILE,
};
pub use error::{GpuSceneError, GpuSceneOperation};
pub use frame::{
    orbit_camera, GpuSceneFrame, GpuSceneFrameOptions, GpuSceneLayer, GpuSceneLayerDiagnostics,
};
pub use mutation::{
    GpuSceneFieldValue, GpuSceneMove, GpuSceneMutation, GpuSceneMutationReport, GpuScenePatch,
};
pub use record::{
    sphere_around, GpuSceneField, GpuSceneRecord, GpuSceneState, GPU_SCENE_ACTIVE_FLAG,
    GPU_SCENE_INVALID_REFERENCE, GPU_SCENE_RECORD_BYTES, GPU_SCENE_RECORD_WORDS,
    GPU_SCENE_STATE_BYTES, IDENTITY,
};
pub use resource_groups::{
    GpuSceneGroup, GpuSceneGroupClassification, GpuSceneResourceGroups, GROUP_GEOMETRY_MISMATCH,
    GROUP_MISPLACED, SCENE_INVALID_ROW, SCENE_UNKNOWN_GROUP,
};
pub use upload::{GpuSceneUpload, GPU_SCENE_UPLOAD_MAX_WORDS};
pub use visibility::{GpuSceneVisibility, GPU_SCENE_CULL_TILE_ROWS};

#[cfg(test)]
pub(crate) const RECORD_WGSL: &str = include_str!("record.wgsl");

/// Usages of the record and state buffers: kernels read them (`STORAGE`), mutation writes
/// them through the queue (`COPY_DST`), tests and tools copy them out (`COPY_SRC`).
pub const GPU_SCENE_BUFFER_USAGE: BufferUsages = BufferUsages::STORAGE
    .union(BufferUsages::COPY_DST)
    .union(BufferUsages::COPY_SRC);

/// The CPU's copy of a mutable scene: the records exactly as the GPU holds them, where each
/// ID lives, and the holes below the high-water mark.
#[derive(Clone, Debug)]
pub(crate) struct CpuRecords {
    pub(crate) records: Vec<GpuSceneRecord>,
    pub(crate) slot_of: ids::IdSlots,
    pub(crate) holes: std::collections::BTreeSet<u32>,
    /// Validation's scratch, one byte per slot (0 between transactions): which operation of
    /// the transaction being validated names the slot's ID. Allocated by the first mutation.
    pub(crate) marks: Vec<u8>,
}

/// A flat, fixed-capacity GPU draw database (see the module doc).
///
/// Storage: `capacity` records of [`GPU_SCENE_RECORD_BYTES`] at a byte offset of a record
/// buffer, and a [`GpuSceneState`] block (`count`, `active_count`, `overflow`). Initial records
/// occupy the dense prefix `0..n`. Ownership is per buffer: [`GpuScene::new`] owns both;
/// a table partition borrows its records and owns only its state, so
/// [`GpuScene::destroy`] releases the state and leaves the records to the table.
///
/// Mutable scenes keep a CPU copy of their records (the only way to know IDs and holes
/// without a readback); opaque borrowed scenes are read-only ([`GpuScene::is_mutable`]).
/// Capacity never grows: an insertion past it is reported, not reallocated.
#[derive(Debug)]
pub struct GpuScene {
    label: String,
    records: wgpu::Buffer,
    record_offset: u64,
    records_owned: bool,
    state: wgpu::Buffer,
    state_owned: bool,
    /// The packed bounds view ([`bounds`]), owned; mutable scenes only.
    bounds: Option<wgpu::Buffer>,
    /// The draw keys view ([`bounds`]), owned; mutable scenes only.
    keys: Option<wgpu::Buffer>,
    capacity: u32,
    cpu: Option<CpuRecords>,
    gpu_state: GpuSceneState,
    destroyed: bool,
}

/// Fails when `capacity` records exceed what `device` can allocate or bind as one storage
/// buffer (a 2 GiB binding holds 16,777,215 records).
fn check_device_limits(
    device: &wgpu::Device,
    label: &str,
    capacity: u32,
) -> Result<(), GpuSceneError> {
    let limits = device.limits();
    let bytes = u64::from(capacity) * GPU_SCENE_RECORD_BYTES;
    for (limit_name, limit) in [
        ("max_buffer_size", limits.max_buffer_size),
        (
            "max_storage_buffer_binding_size",
            limits.max_storage_buffer_binding_size,
        ),
    ] {
        if bytes > limit {
            return Err(GpuSceneError::DeviceLimit {
                scene: label.into(),
                capacity,
                bytes,
                limit_name,
                limit,
            });
        }
    }
    Ok(())
}

impl GpuScene {
    /// A scene of `capacity` slots owning both buffers, holding `records` in slots
    /// `0..records.len()` (all made active), uploaded through `queue` (in place for the next
    /// submission). Fails before allocating when the records exceed the capacity, the
    /// capacity exceeds the device's buffer or binding limits, the records repeat an ID or
    /// hold a value that cannot be stored.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        capacity: u32,
        records: &[GpuSceneRecord],
    ) -> Result<Self, GpuSceneError> {
        if records.len() as u64 > u64::from(capacity) {
            return Err(GpuSceneError::CapacityExceeded {
                scene: label.into(),
                capacity,
                required: records.len() as u64,
            });
        }
        check_device_limits(device, label, capacity)?;
        let mut slot_of = ids::IdSlots::new(capacity);
        let mut stored = Vec::with_capacity(capacity as usize);
        for r in records {
            let mut r = *r;
            r.flags |= GPU_SCENE_ACTIVE_FLAG;
            r.reserved = 0;
            if let Some((field, reason)) = r.problem() {
                return Err(GpuSceneError::InvalidField {
                    scene: label.into(),
                    id: r.object_id,
                    field,
                    reason,
                });
            }
            if slot_of.insert(r.object_id, stored.len() as u32).is_some() {
                return Err(GpuSceneError::DuplicateId {
                    scene: label.into(),
                    id: r.object_id,
                    first: GpuSceneOperation::Initial,
                    second: GpuSceneOperation::Initial,
                });
            }
            stored.push(r);
        }
        let n = stored.len() as u32;
        stored.resize(capacity as usize, bytemuck::Zeroable::zeroed());
        let records_buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{label}/records")),
            size: (u64::from(capacity) * GPU_SCENE_RECORD_BYTES).max(GPU_SCENE_RECORD_BYTES),
            usage: GPU_SCENE_BUFFER_USAGE,
            mapped_at_creation: false,
        });
        if n > 0 {
            queue.write_buffer(
                &records_buffer,
                0,
                bytemuck::cast_slice(&stored[..n as usize]),
            );
        }
        // Zero-initialized: every slot past the records reads as a hole.
        let packed_view = |name: &str, pack: fn(&GpuSceneRecord) -> [u32; 4]| {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("{label}/{name}")),
                size: (u64::from(capacity) * 16).max(16),
                usage: GPU_SCENE_BUFFER_USAGE,
                mapped_at_creation: false,
            });
            if n > 0 {
                let rows: Vec<[u32; 4]> = stored[..n as usize].iter().map(pack).collect();
                queue.write_buffer(&buffer, 0, bytemuck::cast_slice(&rows));
            }
            buffer
        };
        let bounds = packed_view("bounds", packed_bounds);
        let keys = packed_view("keys", draw_key);
        let gpu_state = GpuSceneState {
            count: n,
            active_count: n,
            overflow: 0,
            reserved: 0,
        };
        let state = state_buffer(device, queue, label, &gpu_state);
        Ok(Self {
            label: label.into(),
            records: records_buffer,
            record_offset: 0,
            records_owned: true,
            state,
            state_owned: true,
            bounds: Some(bounds),
            keys: Some(keys),
            capacity,
            cpu: Some(CpuRecords {
                records: stored,
                slot_of,
                holes: Default::default(),
                marks: Vec::new(),
            }),
            gpu_state,
            destroyed: false,
        })
    }

    /// An opaque, read-only scene over `record_count` records a producer already wrote at
    /// `byte_offset` of a caller's `buffer` (BORROWED: never destroyed here), of which the
    /// producer states `active_count` are live. Owns a new state block holding those counts.
    /// Checks usage (`STORAGE | COPY_SRC | COPY_DST`), 4-byte alignment, that the records fit
    /// and that `active_count ≤ record_count`; the record bytes are never read.
    pub fn borrow_records(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        buffer: &wgpu::Buffer,
        byte_offset: u64,
        record_count: u32,
        active_count: u32,
    ) -> Result<Self, GpuSceneError> {
        let bad = |reason: String| GpuSceneError::BorrowedRecords {
            scene: label.into(),
            reason,
        };
        let missing = GPU_SCENE_BUFFER_USAGE - buffer.usage();
        if !missing.is_empty() {
            return Err(bad(format!(
                "buffer usage {:?} lacks {missing:?}",
                buffer.usage()
            )));
        }
        let end = byte_offset + u64::from(record_count) * GPU_SCENE_RECORD_BYTES;
        if !byte_offset.is_multiple_of(4) || end > buffer.size() {
            return Err(bad(format!(
                "{record_count} records at byte {byte_offset} need {end} bytes 4-aligned; the buffer has {}",
                buffer.size()
            )));
        }
        if active_count > record_count {
            return Err(bad(format!(
                "active count {active_count} exceeds the record count {record_count}"
            )));
        }
        let gpu_state = GpuSceneState {
            count: record_count,
            active_count,
            overflow: 0,
            reserved: 0,
        };
        Ok(Self {
            label: label.into(),
            records: buffer.clone(),
            record_offset: byte_offset,
            records_owned: false,
            state: state_buffer(device, queue, label, &gpu_state),
            state_owned: true,
            bounds: None,
            keys: None,
            capacity: record_count,
            cpu: None,
            gpu_state,
            destroyed: false,
        })
    }

    /// The label.
    pub fn label(&self) -> &str {
        &self.label
    }
    /// Slots.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
    /// The state the GPU holds after the last mutation (the CPU's copy, no readback).
    pub fn state(&self) -> GpuSceneState {
        self.gpu_state
    }
    /// The record buffer (owned or borrowed).
    pub fn record_buffer(&self) -> &wgpu::Buffer {
        &self.records
    }
    /// Byte offset of slot 0 in [`Self::record_buffer`].
    pub fn record_buffer_offset(&self) -> u64 {
        self.record_offset
    }
    /// The state buffer (always owned).
    pub fn state_buffer(&self) -> &wgpu::Buffer {
        &self.state
    }
    /// Whether [`Self::destroy`] destroys the record buffer.
    pub fn owns_records(&self) -> bool {
        self.records_owned
    }
    /// Whether [`Self::destroy`] destroys the state buffer.
    pub fn owns_state(&self) -> bool {
        self.state_owned
    }
    /// Whether the CPU knows the records, so [`Self::mutate`] works.
    pub fn is_mutable(&self) -> bool {
        self.cpu.is_some()
    }
    /// Whether [`Self::destroy`] ran.
    pub fn is_destroyed(&self) -> bool {
        self.destroyed
    }

    /// Byte offset of slot `slot` in the record buffer (`None` past the capacity).
    pub fn record_byte_offset(&self, slot: u32) -> Option<u64> {
        (slot < self.capacity)
            .then(|| self.record_offset + u64::from(slot) * GPU_SCENE_RECORD_BYTES)
    }

    /// The physical slot of live object `id` (mutable scenes; `None` otherwise or unknown).
    pub fn slot_of(&self, id: u32) -> Option<u32> {
        self.cpu.as_ref()?.slot_of.get(id)
    }

    /// The record in `slot` as the GPU holds it (mutable scenes; holes have `flags == 0`).
    pub fn record(&self, slot: u32) -> Option<&GpuSceneRecord> {
        self.cpu.as_ref()?.records.get(slot as usize)
    }

    /// The live records' `(slot, record)` in slot order (mutable scenes; empty otherwise).
    pub fn active_records(&self) -> Vec<(u32, GpuSceneRecord)> {
        let Some(cpu) = &self.cpu else {
            return Vec::new();
        };
        cpu.records[..self.gpu_state.count as usize]
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_active())
            .map(|(s, r)| (s as u32, *r))
            .collect()
    }

    /// Imports the record and state buffers into `graph` (once per buffer; an already
    /// imported buffer keeps its handle) and returns typed views of every field over the whole
    /// capacity. Adds no node, compiles nothing, submits nothing.
    pub fn import_to_graph(
        &self,
        graph: &mut CommandGraph,
        id: &str,
    ) -> Result<GpuSceneViews, crate::RenderError> {
        if self.destroyed {
            return Err(GpuSceneError::Destroyed {
                scene: self.label.clone(),
            }
            .into());
        }
        let import = |graph: &mut CommandGraph, name: &str, b: &wgpu::Buffer| {
            graph.import_buffer_once(format!("{id}/{name}"), b, GPU_SCENE_BUFFER_USAGE)
        };
        let records = import(graph, "records", &self.records)?;
        let state = import(graph, "state", &self.state)?;
        let n = u64::from(self.capacity);
        let bounds = match &self.bounds {
            Some(b) => {
                let h = import(graph, "bounds", b)?;
                Some(graph.create_packed_view(h, VectorFormat::Float32x4, n)?)
            }
            None => None,
        };
        let keys = match &self.keys {
            Some(b) => {
                let h = import(graph, "keys", b)?;
                Some(graph.create_packed_view(h, VectorFormat::Uint32x4, n)?)
            }
            None => None,
        };
        let field = |f: GpuSceneField, extra: u64| {
            graph.create_data_view(
                records,
                DataViewDescriptor {
                    format: f.format(),
                    length: n,
                    byte_offset: self.record_offset + f.byte_offset() + extra,
                    byte_stride: Some(GPU_SCENE_RECORD_BYTES),
                },
            )
        };
        let word = |at: u64| {
            graph.create_data_view(
                state,
                DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(at),
            )
        };
        Ok(GpuSceneViews {
            records,
            state,
            capacity: self.capacity,
            bounds,
            keys,
            record_words: graph.create_data_view(
                records,
                DataViewDescriptor::packed(VectorFormat::Uint32, n * GPU_SCENE_RECORD_WORDS)
                    .at_offset(self.record_offset),
            )?,
            object_id: field(GpuSceneField::ObjectId, 0)?,
            flags: field(GpuSceneField::Flags, 0)?,
            group_id: field(GpuSceneField::GroupId, 0)?,
            geometry_id: field(GpuSceneField::GeometryId, 0)?,
            sphere: field(GpuSceneField::Sphere, 0)?,
            aabb_min: field(GpuSceneField::AabbMin, 0)?,
            command_slot: field(GpuSceneField::CommandSlot, 0)?,
            aabb_max: field(GpuSceneField::AabbMax, 0)?,
            transform: [
                field(GpuSceneField::Transform, 0)?,
                field(GpuSceneField::Transform, 16)?,
                field(GpuSceneField::Transform, 32)?,
                field(GpuSceneField::Transform, 48)?,
            ],
            count: word(0)?,
            active_count: word(4)?,
            overflow: word(8)?,
        })
    }

    /// Clears the state block's sticky `overflow` (a 4-byte queue write).
    pub fn reset_overflow(&mut self, queue: &wgpu::Queue) {
        self.gpu_state.overflow = 0;
        queue.write_buffer(&self.state, 8, &0u32.to_ne_bytes());
    }

    /// Destroys the owned buffers; borrowed ones are left to their owner. Idempotent.
    pub fn destroy(&mut self) {
        if self.destroyed {
            return;
        }
        if self.records_owned {
            self.records.destroy();
        }
        if self.state_owned {
            self.state.destroy();
        }
        for b in self.bounds.iter().chain(&self.keys) {
            b.destroy();
        }
        self.destroyed = true;
    }
}

fn state_buffer(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    state: &GpuSceneState,
) -> wgpu::Buffer {
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(&format!("{label}/state")),
        size: GPU_SCENE_STATE_BYTES,
        usage: GPU_SCENE_BUFFER_USAGE,
        mapped_at_creation: false,
    });
    queue.write_buffer(&buffer, 0, bytemuck::bytes_of(state));
    buffer
}

/// A scene imported into one graph: its two handles and a typed view per field, each over
/// the whole capacity with the record stride (no repacking). `record_words` is the records
/// as packed uint32 words (32 per record), what the scene kernels bind.
#[derive(Clone, Copy, Debug)]
pub struct GpuSceneViews {
    /// The record buffer.
    pub records: BufferHandle,
    /// The state buffer.
    pub state: BufferHandle,
    /// Slots (rows of every field view).
    pub capacity: u32,
    /// The packed bounds view (float32x4, packed, `capacity` rows; [`bounds`]): mutable
    /// scenes only.
    pub bounds: Option<DataView>,
    /// The draw keys view (uint32x4, packed, `capacity` rows: `[flags, group_id,
    /// geometry_id, command_slot]`; [`bounds`]): mutable scenes only.
    pub keys: Option<DataView>,
    /// Every record word, packed uint32, `capacity × 32` rows.
    pub record_words: DataView,
    /// uint32, stride 128.
    pub object_id: DataView,
    /// uint32, stride 128.
    pub flags: DataView,
    /// uint32, stride 128.
    pub group_id: DataView,
    /// uint32, stride 128.
    pub geometry_id: DataView,
    /// float32x4 (center, radius), stride 128.
    pub sphere: DataView,
    /// float32x3, stride 128.
    pub aabb_min: DataView,
    /// uint32, stride 128.
    pub command_slot: DataView,
    /// float32x3, stride 128.
    pub aabb_max: DataView,
    /// Four float32x4 columns, stride 128.
    pub transform: [DataView; 4],
    /// One uint32: the high-water mark.
    pub count: DataView,
    /// One uint32: live records.
    pub active_count: DataView,
    /// One uint32: 1 after an insertion overflowed.
    pub overflow: DataView,
}

impl GpuSceneViews {
    /// The draw keys binding at `slot` (`array<vec4<u32>>`): the keys view when the scene has
    /// one with at least one row, else a placeholder, which nothing reads (the kernel's
    /// `KEYED` is off, or no row exists): a binding is never empty.
    pub(crate) fn keys_binding(&self, slot: u32) -> gpugraph_command::Binding {
        match self.keys {
            Some(k) if self.capacity > 0 => gpugraph_command::Binding::read(slot, k),
            _ => gpugraph_command::Binding::placeholder(slot, gpugraph_command::Access::Read),
        }
    }

    /// The view of `field` (a transform's first column for [`GpuSceneField::Transform`]).
    pub fn field(&self, field: GpuSceneField) -> DataView {
        match field {
            GpuSceneField::ObjectId => self.object_id,
            GpuSceneField::Flags => self.flags,
            GpuSceneField::GroupId => self.group_id,
            GpuSceneField::GeometryId => self.geometry_id,
            GpuSceneField::Sphere => self.sphere,
            GpuSceneField::AabbMin => self.aabb_min,
            GpuSceneField::CommandSlot => self.command_slot,
            GpuSceneField::AabbMax => self.aabb_max,
            GpuSceneField::Transform => self.transform[0],
        }
    }
}
