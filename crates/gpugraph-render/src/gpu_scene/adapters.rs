//! GPUScene source adapters (spec 6.1c): two explicit boundaries through which very different
//! application models fill the same flat records, neither becoming canonical.
//!
//! * [`flatten_cpu_hierarchy`] / [`GpuScene::from_cpu_hierarchy`]: an application-owned
//!   hierarchy visited in stable preorder through callbacks; each visited node may yield one
//!   ordinary record (grouping nodes yield none). A node reached twice (shared subgraph, cycle)
//!   is visited once. The result is a normal mutable scene whose object IDs are the
//!   application's, not the slots.
//! * [`GpuScenePartitions::from_table`]: the batches of a `GpuTable` whose column holds
//!   canonical interleaved scene records are borrowed as ordered scene partitions: no
//!   readback, no concatenation, no packing. Empty batches keep their partition slot and
//!   global record base. Each partition scene owns only its 16-byte state block; the table
//!   keeps its record storage.

use std::collections::HashSet;
use std::hash::Hash;

use gpugraph_tables::{GpuTable, VectorLayout};

use super::{GpuScene, GpuSceneError, GpuSceneField, GpuSceneRecord, GPU_SCENE_RECORD_BYTES};

/// What the record callback of [`flatten_cpu_hierarchy`] is told about a visited node.
#[derive(Debug)]
pub struct CpuSceneVisit<'a, N> {
    /// The node.
    pub node: &'a N,
    /// Its parent in this traversal (`None` for roots).
    pub parent: Option<&'a N>,
    /// Depth (roots are 0).
    pub depth: u32,
    /// Preorder index among visited nodes.
    pub visit_index: u32,
    /// The slot the record returned now will occupy.
    pub next_record: u32,
}

/// Visits `roots` and their descendants (`children` in the order given) in stable preorder,
/// each distinct node once, and collects the records `record` returns (`None`: the node has
/// no record, its children are still visited). The records' object IDs are whatever the
/// application chose.
pub fn flatten_cpu_hierarchy<N: Clone + Eq + Hash>(
    roots: &[N],
    mut children: impl FnMut(&N) -> Vec<N>,
    mut record: impl FnMut(&CpuSceneVisit<'_, N>) -> Option<GpuSceneRecord>,
) -> Vec<GpuSceneRecord> {
    let mut out = Vec::new();
    let mut seen: HashSet<N> = HashSet::new();
    let mut visit_index = 0u32;
    // Explicit stack of (node, parent, depth), children pushed in reverse for preorder.
    let mut stack: Vec<(N, Option<N>, u32)> =
        roots.iter().rev().map(|r| (r.clone(), None, 0)).collect();
    while let Some((node, parent, depth)) = stack.pop() {
        if !seen.insert(node.clone()) {
            continue;
        }
        let visit = CpuSceneVisit {
            node: &node,
            parent: parent.as_ref(),
            depth,
            visit_index,
            next_record: out.len() as u32,
        };
        if let Some(r) = record(&visit) {
            out.push(r);
        }
        visit_index += 1;
        for c in children(&node).into_iter().rev() {
            stack.push((c, Some(node.clone()), depth + 1));
        }
    }
    out
}

impl GpuScene {
    /// A mutable scene of `capacity` slots holding the records of
    /// [`flatten_cpu_hierarchy`] in visit order (same checks as [`GpuScene::new`]).
    pub fn from_cpu_hierarchy<N: Clone + Eq + Hash>(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        capacity: u32,
        roots: &[N],
        children: impl FnMut(&N) -> Vec<N>,
        record: impl FnMut(&CpuSceneVisit<'_, N>) -> Option<GpuSceneRecord>,
    ) -> Result<Self, GpuSceneError> {
        let records = flatten_cpu_hierarchy(roots, children, record);
        GpuScene::new(device, queue, label, capacity, &records)
    }
}

/// The canonical attribute names of an interleaved scene-record column, with their fields.
/// A column may also carry only some of them; every one it carries must sit at its field's
/// offset with its format.
pub const TABLE_SCENE_ATTRIBUTES: [(&str, GpuSceneField); 9] = [
    ("object_id", GpuSceneField::ObjectId),
    ("flags", GpuSceneField::Flags),
    ("group_id", GpuSceneField::GroupId),
    ("geometry_id", GpuSceneField::GeometryId),
    ("sphere", GpuSceneField::Sphere),
    ("aabb_min", GpuSceneField::AabbMin),
    ("command_slot", GpuSceneField::CommandSlot),
    ("aabb_max", GpuSceneField::AabbMax),
    ("transform", GpuSceneField::Transform),
];

/// One source batch as a scene partition.
#[derive(Debug)]
pub struct GpuScenePartition {
    /// Index of the source batch.
    pub batch_index: usize,
    /// Global record index of the partition's first record (as if the batches were
    /// concatenated; nothing is).
    pub first_record: u64,
    /// Records in the batch.
    pub record_count: u32,
    /// The borrowed scene; `None` for an empty batch.
    pub scene: Option<GpuScene>,
}

/// The ordered partitions of a table adapted by [`GpuScenePartitions::from_table`].
#[derive(Debug)]
pub struct GpuScenePartitions {
    /// One per source batch, in batch order.
    pub partitions: Vec<GpuScenePartition>,
}

impl GpuScenePartitions {
    /// Borrows column `column` of every batch of `table` as a scene partition. The column must
    /// be interleaved with a 128-byte stride, record 0 at a 4-byte aligned offset, and
    /// attributes named and placed as [`TABLE_SCENE_ATTRIBUTES`] (the record starts
    /// `attribute[0].byte_offset` before each chunk). `active_counts[i]` is the producer's
    /// count of live records in batch `i` (the records are never read). Empty batches yield a
    /// partition without a scene. Creates one 16-byte state buffer per nonempty batch; submits
    /// nothing.
    pub fn from_table(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        table: &GpuTable,
        column: &str,
        active_counts: &[u32],
    ) -> Result<Self, GpuSceneError> {
        if active_counts.len() != table.num_batches() {
            return Err(GpuSceneError::ActiveCounts {
                reason: format!(
                    "{} active counts for {} batches",
                    active_counts.len(),
                    table.num_batches()
                ),
            });
        }
        let offsets = table.batch_row_offsets();
        let mut partitions = Vec::with_capacity(table.num_batches());
        for (b, batch) in table.batches().iter().enumerate() {
            let bad = |reason: String| GpuSceneError::TableLayout { batch: b, reason };
            let vector = batch.column(column)?;
            let VectorLayout::Interleaved { attributes } = vector.layout() else {
                return Err(bad(format!(
                    "column '{column}' is {}, not interleaved scene records",
                    vector.describe()
                )));
            };
            let first = &attributes[0];
            for a in attributes {
                let Some((_, f)) = TABLE_SCENE_ATTRIBUTES.iter().find(|(n, _)| *n == a.name) else {
                    return Err(bad(format!("attribute '{}' is no scene field", a.name)));
                };
                if a.byte_offset != f.byte_offset() || a.format != f.format() {
                    return Err(bad(format!(
                        "attribute '{}' is {} at byte {}; the scene record has {} at byte {}",
                        a.name,
                        a.format,
                        a.byte_offset,
                        f.format(),
                        f.byte_offset()
                    )));
                }
            }
            let rows = batch.num_rows();
            let active = active_counts[b];
            if u64::from(active) > rows {
                return Err(GpuSceneError::ActiveCounts {
                    reason: format!("batch {b}: active count {active} exceeds its {rows} rows"),
                });
            }
            let mut scene = None;
            let chunks = vector.chunks();
            if rows > 0 {
                if chunks.len() != 1 {
                    return Err(bad(format!(
                        "column '{column}' has {} chunks in one batch; a partition is one contiguous record range",
                        chunks.len()
                    )));
                }
                let c = &chunks[0];
                if c.byte_stride() != GPU_SCENE_RECORD_BYTES {
                    return Err(bad(format!(
                        "stride {} is not the {GPU_SCENE_RECORD_BYTES}-byte scene record",
                        c.byte_stride()
                    )));
                }
                let record_start = c.byte_offset() - first.byte_offset;
                scene = Some(GpuScene::borrow_records(
                    device,
                    queue,
                    &format!("{column}/batch-{b}"),
                    c.buffer(),
                    record_start,
                    rows as u32,
                    active,
                )?);
            }
            partitions.push(GpuScenePartition {
                batch_index: b,
                first_record: offsets[b],
                record_count: rows as u32,
                scene,
            });
        }
        Ok(Self { partitions })
    }

    /// Destroys every partition's state block (the table's records are untouched). Idempotent.
    pub fn destroy(&mut self) {
        for p in &mut self.partitions {
            if let Some(s) = &mut p.scene {
                s.destroy();
            }
        }
    }
}
