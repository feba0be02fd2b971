//! [`GpuTableScene`]: the table-scene consumer (spec 6.3b). A GPU table of points or boxes
//! (float32 coordinate columns, e.g. a Parquet file's uploaded batches) is drawn through the
//! same draw generation, resource groups and frame as a scene graph, batch by batch, with no
//! consumer-specific field in the record:
//!
//! 1. per source batch, one record buffer; a producer dispatch (`table.wgsl`, added by
//!    [`GpuTableScene::add_producer`]) writes the batch's rows into it as canonical records;
//! 2. those buffers form an interleaved GPU table (one batch per source batch, empty batches
//!    kept), which [`GpuScenePartitions::from_table`] borrows as ordered scene partitions:
//!    no readback, no concatenation across batches, no repacking of the records;
//! 3. each nonempty partition is one [`GpuSceneLayer`] of a [`super::GpuSceneFrame`] with its
//!    own `drawIndexed` commands (the renderer's unit box, written once) and groups.
//!
//! Groups: without a group column, one group per partition (ID: the batch index) whose window
//! is the partition's rows; with one, `groups` groups (ID: the column's value mod `groups`),
//! each with a window of the partition's row count, row `r` of group `g` drawing through
//! command `g·rows + r`. Object IDs are the table's global row indices, which is what a pick
//! answers.

use gpugraph_command::{Binding, CommandGraph, DataView, DispatchNode, Grid, VectorFormat};
use gpugraph_tables::{
    GpuData, GpuRecordBatch, GpuTable, GpuVector, GraphImporter, InterleavedAttribute, VectorLayout,
};
use wgpu::BufferUsages as U;

use super::adapters::{GpuScenePartitions, TABLE_SCENE_ATTRIBUTES};
use super::frame::GpuSceneLayer;
use super::source::{cube, SceneVertex};
use super::{GpuSceneGroup, GPU_SCENE_BUFFER_USAGE, GPU_SCENE_RECORD_BYTES};
use crate::{DrawCommandBuffer, DrawLayout, RenderError};

const WORKGROUP_SIZE: u32 = 256;
/// The record column of [`GpuTableScene::record_table`].
pub const TABLE_SCENE_RECORD_COLUMN: &str = "scene";
/// Most groups a group column may be folded into.
pub const TABLE_SCENE_MAX_GROUPS: u32 = 64;

/// Which columns of the source table make the scene (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct TableSceneColumns {
    /// float32 x (a point, or a box's first corner).
    pub x: String,
    /// float32 y.
    pub y: String,
    /// float32 z (0 when `None`).
    pub z: Option<String>,
    /// float32 x of a box's second corner (boxes need `x_max` and `y_max`).
    pub x_max: Option<String>,
    /// float32 y of the second corner.
    pub y_max: Option<String>,
    /// float32 z of the second corner (the first corner's z when `None`).
    pub z_max: Option<String>,
    /// uint32, int32 or float32 (floored) group column; `None`: one group per batch.
    pub group: Option<String>,
    /// Groups the group column is folded into (1..=[`TABLE_SCENE_MAX_GROUPS`]).
    pub groups: u32,
    /// A point's half extent, and a box's least half extent per axis (finite, > 0).
    pub radius: f32,
}

/// Group values of one batch, as the CPU oracle reads them.
#[derive(Clone, Copy, Debug)]
pub enum TableGroupValues<'a> {
    /// A uint32 column.
    U32(&'a [u32]),
    /// An int32 column.
    I32(&'a [i32]),
    /// A float32 column (floored; NaN and values past int32 are group 0).
    F32(&'a [f32]),
}

/// One batch's columns as the CPU oracle reads them.
#[derive(Clone, Copy, Debug)]
pub struct TableRows<'a> {
    /// x.
    pub x: &'a [f32],
    /// y.
    pub y: &'a [f32],
    /// z.
    pub z: Option<&'a [f32]>,
    /// Boxes' second corner x.
    pub x_max: Option<&'a [f32]>,
    /// Second corner y.
    pub y_max: Option<&'a [f32]>,
    /// Second corner z.
    pub z_max: Option<&'a [f32]>,
    /// Group values.
    pub group: Option<TableGroupValues<'a>>,
}

/// Constants of one producer dispatch (WGSL `Params`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ProducerParams {
    rows: u32,
    first_record: u32,
    batch: u32,
    groups: u32,
    group_kind: u32,
    has_z: u32,
    has_box: u32,
    has_z_max: u32,
    x_base: u32,
    y_base: u32,
    z_base: u32,
    x_max_base: u32,
    y_max_base: u32,
    z_max_base: u32,
    group_base: u32,
    record_base: u32,
    radius: f32,
    pad: [u32; 3],
}

/// One nonempty partition's drawing state.
#[derive(Debug)]
struct TableLayer {
    partition: usize,
    commands: DrawCommandBuffer,
    groups: Vec<GpuSceneGroup>,
    colors: Vec<[f32; 4]>,
}

/// A GPU table drawn as scene partitions (see the module doc).
#[derive(Debug)]
pub struct GpuTableScene {
    columns: TableSceneColumns,
    group_kind: u32,
    records: GpuTable,
    partitions: GpuScenePartitions,
    layers: Vec<TableLayer>,
    vertices: Vec<SceneVertex>,
    indices: Vec<u32>,
}

/// Distinct colors for group IDs (by ID modulo their count).
pub const TABLE_SCENE_PALETTE: [[f32; 4]; 8] = [
    [0.90, 0.45, 0.25, 1.0],
    [0.30, 0.65, 0.90, 1.0],
    [0.45, 0.80, 0.35, 1.0],
    [0.85, 0.75, 0.30, 1.0],
    [0.70, 0.45, 0.85, 1.0],
    [0.35, 0.80, 0.75, 1.0],
    [0.90, 0.40, 0.60, 1.0],
    [0.65, 0.65, 0.65, 1.0],
];

impl GpuTableScene {
    /// Checks `columns` against every batch of `table` (names, formats, single packed chunks),
    /// then creates one record buffer per batch, the interleaved record table, its partitions
    /// and each nonempty partition's commands (renderer-authored: the unit box, written through
    /// `queue`). The records are written only when the graph of [`Self::add_producer`] runs.
    /// Errors name the column and the batch; nothing is allocated when a check fails.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        table: &GpuTable,
        columns: TableSceneColumns,
    ) -> Result<Self, RenderError> {
        let bad = |column: &str, reason: String| RenderError::TableScene {
            column: column.into(),
            reason,
        };
        if !(columns.radius.is_finite() && columns.radius > 0.0) {
            return Err(bad(
                "radius",
                format!("{} is not finite and > 0", columns.radius),
            ));
        }
        if columns.x_max.is_some() != columns.y_max.is_some()
            || (columns.z_max.is_some() && columns.x_max.is_none())
        {
            return Err(bad(
                "x_max",
                "boxes need both x_max and y_max (z_max only with them)".into(),
            ));
        }
        let groups = if columns.group.is_some() {
            if !(1..=TABLE_SCENE_MAX_GROUPS).contains(&columns.groups) {
                return Err(bad(
                    "groups",
                    format!("{} is not in 1..={TABLE_SCENE_MAX_GROUPS}", columns.groups),
                ));
            }
            columns.groups
        } else {
            1
        };
        let total = table.num_rows();
        if total >= u64::from(u32::MAX) {
            return Err(bad(
                &columns.x,
                format!("{total} rows exceed the uint32 object IDs"),
            ));
        }
        let mut group_kind = 0;
        for (b, batch) in table.batches().iter().enumerate() {
            for name in float_columns(&columns) {
                let v = single_packed(batch, name, b)?;
                if v.format() != VectorFormat::Float32 {
                    return Err(bad(
                        name,
                        format!("batch {b}: {} is not float32", v.format()),
                    ));
                }
            }
            if let Some(name) = &columns.group {
                group_kind = match single_packed(batch, name, b)?.format() {
                    VectorFormat::Uint32 => 1,
                    VectorFormat::Sint32 => 2,
                    VectorFormat::Float32 => 3,
                    f => {
                        return Err(bad(
                            name,
                            format!("batch {b}: {f} is not uint32, int32 or float32"),
                        ))
                    }
                };
            }
            let commands =
                u64::from(groups) * batch.num_rows() * DrawLayout::DrawIndexed.record_bytes();
            if commands > device.limits().max_buffer_size
                || batch.num_rows() * GPU_SCENE_RECORD_BYTES > device.limits().max_buffer_size
            {
                return Err(bad(
                    &columns.x,
                    format!(
                        "batch {b}: {} rows need {commands} bytes of commands; the device's max_buffer_size is {}",
                        batch.num_rows(),
                        device.limits().max_buffer_size
                    ),
                ));
            }
        }
        let attributes: Vec<InterleavedAttribute> = TABLE_SCENE_ATTRIBUTES
            .iter()
            .map(|(name, f)| InterleavedAttribute::new(*name, f.format(), f.byte_offset()))
            .collect();
        let mut batches = Vec::with_capacity(table.num_batches());
        for (b, batch) in table.batches().iter().enumerate() {
            let rows = batch.num_rows();
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("table-scene/records/batch-{b}")),
                size: rows.max(1) * GPU_SCENE_RECORD_BYTES,
                usage: GPU_SCENE_BUFFER_USAGE,
                mapped_at_creation: false,
            });
            let chunk = GpuData::owned(
                buffer,
                0,
                rows,
                VectorFormat::Uint32,
                GPU_SCENE_RECORD_BYTES,
            )?;
            let vector = GpuVector::interleaved(vec![chunk], attributes.clone())?;
            batches.push(GpuRecordBatch::from_columns([(
                TABLE_SCENE_RECORD_COLUMN,
                vector,
            )])?);
        }
        let records = match batches.first() {
            Some(first) => GpuTable::new(first.schema().clone(), batches)?,
            None => return Err(bad(&columns.x, "the table has no batches".into())),
        };
        let active: Vec<u32> = table
            .batches()
            .iter()
            .map(|b| b.num_rows() as u32)
            .collect();
        let partitions = GpuScenePartitions::from_table(
            device,
            queue,
            &records,
            TABLE_SCENE_RECORD_COLUMN,
            &active,
        )?;
        let (vertices, indices) = cube();
        let mut layers = Vec::new();
        for (p, part) in partitions.partitions.iter().enumerate() {
            if part.scene.is_none() {
                continue;
            }
            let rows = part.record_count;
            let ids: Vec<u32> = if columns.group.is_some() {
                (0..groups).collect()
            } else {
                vec![p as u32]
            };
            let groups: Vec<GpuSceneGroup> = ids
                .iter()
                .enumerate()
                .map(|(k, &id)| GpuSceneGroup {
                    id,
                    first_command: k as u32 * rows,
                    command_count: rows,
                    geometry_id: Some(0),
                })
                .collect();
            let count = rows * groups.len() as u32;
            let commands = DrawCommandBuffer::create(
                device,
                &format!("table-scene/commands/batch-{p}"),
                DrawLayout::DrawIndexed,
                count,
            );
            let args = [indices.len() as u32, 0, 0, 0, 0];
            let words: Vec<u32> = (0..count).flat_map(|_| args).collect();
            queue.write_buffer(commands.buffer(), 0, bytemuck::cast_slice(&words));
            let colors = ids
                .iter()
                .map(|&id| TABLE_SCENE_PALETTE[id as usize % TABLE_SCENE_PALETTE.len()])
                .collect();
            layers.push(TableLayer {
                partition: p,
                commands,
                groups,
                colors,
            });
        }
        Ok(Self {
            columns,
            group_kind,
            records,
            partitions,
            layers,
            vertices,
            indices,
        })
    }

    /// Adds one producer dispatch per nonempty batch (`table-scene/produce/batch-{b}`) that
    /// writes the batch's records from `table`'s columns (the table given to [`Self::new`]).
    /// Run the graph once before the first frame (and again after the columns change).
    pub fn add_producer(
        &self,
        graph: &mut CommandGraph,
        table: &GpuTable,
    ) -> Result<(), RenderError> {
        let offsets = table.batch_row_offsets();
        let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
        let mut importer = GraphImporter::new(graph);
        for layer in &self.layers {
            let b = layer.partition;
            let batch = table
                .batches()
                .get(b)
                .ok_or_else(|| RenderError::TableScene {
                    column: self.columns.x.clone(),
                    reason: format!(
                        "the table has no batch {b}; give the table the scene was built from"
                    ),
                })?;
            let mut view = |name: &str| -> Result<DataView, RenderError> {
                let v = single_packed(batch, name, b)?;
                Ok(importer.import_data(
                    &format!("table-scene/{name}/batch-{b}"),
                    &v.chunks()[0],
                    U::STORAGE,
                )?)
            };
            let x = view(&self.columns.x)?;
            let y = view(&self.columns.y)?;
            let optional = |v: &mut dyn FnMut(&str) -> Result<DataView, RenderError>,
                            name: &Option<String>|
             -> Result<Option<DataView>, RenderError> {
                name.as_deref().map(v).transpose()
            };
            let z = optional(&mut view, &self.columns.z)?;
            let x_max = optional(&mut view, &self.columns.x_max)?;
            let y_max = optional(&mut view, &self.columns.y_max)?;
            let z_max = optional(&mut view, &self.columns.z_max)?;
            let group = optional(&mut view, &self.columns.group)?;
            let scene = self.partitions.partitions[b]
                .scene
                .as_ref()
                .expect("layers are nonempty partitions");
            let records_data = &self.records.batches()[b]
                .column(TABLE_SCENE_RECORD_COLUMN)?
                .chunks()[0];
            let rows = scene.capacity();
            let words = importer.import_data(
                &format!("table-scene/records/batch-{b}"),
                &GpuData::borrowed_packed(
                    records_data.buffer(),
                    scene.record_buffer_offset(),
                    u64::from(rows) * (GPU_SCENE_RECORD_BYTES / 4),
                    VectorFormat::Uint32,
                )?,
                GPU_SCENE_BUFFER_USAGE,
            )?;
            let base = |v: &DataView| v.aligned_range(align).element_offset as u32;
            let or_x = |v: &Option<DataView>| v.unwrap_or(x);
            let params = ProducerParams {
                rows,
                first_record: offsets[b] as u32,
                batch: b as u32,
                groups: self.columns.groups.max(1),
                group_kind: if group.is_some() { self.group_kind } else { 0 },
                has_z: u32::from(z.is_some()),
                has_box: u32::from(x_max.is_some()),
                has_z_max: u32::from(z_max.is_some()),
                x_base: base(&x),
                y_base: base(&y),
                z_base: base(&or_x(&z)),
                x_max_base: base(&or_x(&x_max)),
                y_max_base: base(&or_x(&y_max)),
                z_max_base: base(&or_x(&z_max)),
                group_base: base(&or_x(&group)),
                record_base: base(&words),
                radius: self.columns.radius,
                pad: [0; 3],
            };
            let bindings = vec![
                Binding::params(0, &params),
                Binding::read(1, x),
                Binding::read(2, y),
                Binding::read(3, or_x(&z)),
                Binding::read(4, or_x(&x_max)),
                Binding::read(5, or_x(&y_max)),
                Binding::read(6, or_x(&z_max)),
                Binding::read(7, or_x(&group)),
                Binding::read_write(8, words),
            ];
            importer.graph().add_dispatch_node(DispatchNode::new(
                format!("table-scene/produce/batch-{b}"),
                crate::shaders::shader("render/gpu_scene/table", "gpu_scene/table.wgsl"),
                "produce",
                bindings,
                Grid::Rows {
                    rows: u64::from(rows),
                    rows_per_workgroup: WORKGROUP_SIZE,
                },
            ))?;
        }
        Ok(())
    }

    /// The frame layers: one per nonempty partition, in batch order.
    pub fn layers(&self) -> Vec<GpuSceneLayer<'_>> {
        self.layers
            .iter()
            .map(|l| GpuSceneLayer {
                scene: self.partitions.partitions[l.partition]
                    .scene
                    .as_ref()
                    .expect("layers are nonempty partitions"),
                commands: &l.commands,
                groups: &l.groups,
                colors: &l.colors,
                upload: None,
            })
            .collect()
    }

    /// The source batch of each layer.
    pub fn layer_batches(&self) -> Vec<usize> {
        self.layers.iter().map(|l| l.partition).collect()
    }

    /// The partitions, one per source batch (empty ones without a scene).
    pub fn partitions(&self) -> &GpuScenePartitions {
        &self.partitions
    }

    /// The interleaved record table the partitions borrow.
    pub fn record_table(&self) -> &GpuTable {
        &self.records
    }

    /// The unit box the renderer draws (vertices, indices).
    pub fn mesh(&self) -> (&[SceneVertex], &[u32]) {
        (&self.vertices, &self.indices)
    }

    /// The columns the scene was built from.
    pub fn columns(&self) -> &TableSceneColumns {
        &self.columns
    }

    /// Releases the partitions' state blocks and the commands; the record table's buffers go
    /// with the scene. The source table is untouched.
    pub fn destroy(&mut self) {
        self.partitions.destroy();
        for l in &self.layers {
            l.commands.destroy();
        }
    }
}

/// The float32 columns `columns` names.
fn float_columns(columns: &TableSceneColumns) -> Vec<&str> {
    [
        Some(&columns.x),
        Some(&columns.y),
        columns.z.as_ref(),
        columns.x_max.as_ref(),
        columns.y_max.as_ref(),
        columns.z_max.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(String::as_str)
    .collect()
}

/// Column `name` of batch `b`, which must be one packed fixed-width chunk.
fn single_packed<'a>(
    batch: &'a GpuRecordBatch,
    name: &str,
    b: usize,
) -> Result<&'a GpuVector, RenderError> {
    let v = batch.column(name)?;
    let chunks = v.chunks();
    if !matches!(v.layout(), VectorLayout::Fixed) || chunks.len() != 1 || !chunks[0].is_packed() {
        return Err(RenderError::TableScene {
            column: name.into(),
            reason: format!(
                "batch {b}: {} in {} chunks; the table scene reads one packed chunk per batch",
                v.describe(),
                chunks.len()
            ),
        });
    }
    Ok(v)
}

/// The records the producer writes for one batch of `rows.x.len()` rows whose first global row
/// is `first_record` (the oracle of `table.wgsl`; `length` of the half extents as `f32::sqrt`).
pub fn table_records(
    rows: &TableRows<'_>,
    batch: u32,
    first_record: u32,
    groups: u32,
    radius: f32,
) -> Vec<super::GpuSceneRecord> {
    let n = rows.x.len();
    let k = groups.max(1) as i64;
    (0..n)
        .map(|r| {
            let a = [rows.x[r], rows.y[r], rows.z.map_or(0.0, |z| z[r])];
            let (mut lo, mut hi) = (a, a);
            if let (Some(xm), Some(ym)) = (rows.x_max, rows.y_max) {
                let b = [xm[r], ym[r], rows.z_max.map_or(a[2], |z| z[r])];
                lo = std::array::from_fn(|i| a[i].min(b[i]));
                hi = std::array::from_fn(|i| a[i].max(b[i]));
            }
            let center: [f32; 3] = std::array::from_fn(|i| (lo[i] + hi[i]) * 0.5);
            let half: [f32; 3] = std::array::from_fn(|i| ((hi[i] - lo[i]) * 0.5).max(radius));
            let fold = |v: i64| ((v % k) + k) % k;
            let (g, slot_window) = match rows.group {
                None => (batch, 0),
                Some(TableGroupValues::U32(v)) => {
                    let g = v[r] % k as u32;
                    (g, g)
                }
                Some(TableGroupValues::I32(v)) => {
                    let g = fold(i64::from(v[r])) as u32;
                    (g, g)
                }
                Some(TableGroupValues::F32(v)) => {
                    let f = v[r].floor();
                    let g = if f.abs() < 2_147_483_648.0 {
                        fold(f as i64) as u32
                    } else {
                        0
                    };
                    (g, g)
                }
            };
            let mut rec = super::GpuSceneRecord::new(first_record + r as u32)
                .with_group(g)
                .with_geometry(0)
                .with_command_slot(slot_window * n as u32 + r as u32)
                .with_transform(super::source::translate_scale(center, half));
            rec.aabb_min = std::array::from_fn(|i| center[i] - half[i]);
            rec.aabb_max = std::array::from_fn(|i| center[i] + half[i]);
            let len = (half[0] * half[0] + half[1] * half[1] + half[2] * half[2]).sqrt();
            rec.sphere = [center[0], center[1], center[2], len];
            rec
        })
        .collect()
}
