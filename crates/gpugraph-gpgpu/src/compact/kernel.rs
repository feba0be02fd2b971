//! The fused compaction kernel: the `COMPACT` (and `COMPACT` + `PARTITIONS`) variants of
//! `scan/scan.wgsl`. The chained scan runs over the 0/1-normalized selection flags; the
//! epilogue scatters each selected row's value to `output[prefix]` (below capacity) and the
//! workgroup of one chosen tile per sequence writes the count, the overflow flag and status
//! word 1 (read by the distribution pass of chunked outputs). Planning is the scan's
//! ([`ScanPlan`]); each chunk's uniform is its [`ScanParams`] followed by [`CompactParams`].

use std::num::NonZeroU64;

use bytemuck::{Pod, Zeroable};
use gpugraph_command::wgpu;

use crate::kernel::{buffer_entry, placeholder_buffer, Kernel};
use crate::scan::source::{self, Variant};
use crate::scan::{ScanKernelOptions, ScanParams, ScanPlan};

/// Storage buffers one dispatch binds at most: flags ×2, output, count, status, values ×2,
/// overflow.
pub(crate) const STORAGE_BINDINGS: u32 = 8;
/// Bytes of one chunk's uniform ([`ChunkParams`]).
const CHUNK_PARAMS_BYTES: u64 = std::mem::size_of::<ChunkParams>() as u64;
const STATUS_BINDING: u32 = 5;

/// The compaction fields of a chunk's uniform, as `scan.wgsl` declares them under `COMPACT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct CompactParams {
    /// Element offset of the chunk's values inside the values binding.
    pub value_offset: u32,
    /// Output rows; survivors at positions `>= capacity` are counted but not written.
    pub capacity: u32,
    /// Element offset of the count word inside the count binding.
    pub count_offset: u32,
    /// Element offset of the overflow word inside the overflow binding.
    pub overflow_offset: u32,
    /// Global id of the tile whose workgroup writes the count (the sequence's last tile).
    pub count_tile: u32,
    /// `PARTITIONS`: global row id of the chunk's first row.
    pub id_base: u32,
    /// `PARTITIONS`: element offset of the chunk's `[start, end)` pair in the ranges binding.
    pub range_offset: u32,
    /// 1 when an overflow word is bound.
    pub has_overflow: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct ChunkParams {
    scan: ScanParams,
    compact: CompactParams,
}

/// One non-empty chunk's buffers. Storage offsets are multiples of the device's storage
/// offset alignment; element offsets inside them are in the plan and [`CompactParams`].
pub(crate) struct CompactBinding<'a> {
    /// The chunk's flags as words (`(offset + len) * 4` bytes).
    pub flags: wgpu::BufferBinding<'a>,
    /// Survivors, written; `None` when the capacity is 0.
    pub output: Option<wgpu::BufferBinding<'a>>,
    /// The count word's binding.
    pub count: wgpu::BufferBinding<'a>,
    /// The overflow word's binding, when one is written.
    pub overflow: Option<wgpu::BufferBinding<'a>>,
    /// Without `PARTITIONS`: the chunk's values as words, and the element offset of its
    /// first value (also in [`CompactParams::value_offset`]).
    pub values: Option<(wgpu::BufferBinding<'a>, u32)>,
    /// With `PARTITIONS`: the `[start, end)` pairs.
    pub ranges: Option<wgpu::BufferBinding<'a>>,
}

/// Bind groups of one plan, ready to encode.
pub(crate) struct CompactGroups {
    clear_workgroups: u32,
    dispatches: Vec<(wgpu::BindGroup, [u32; 3])>,
}

/// The compiled compact (or partitioned compact) pipelines, their shared layout (the status
/// clear uses the first chunk's bind group) and two 16-byte placeholders.
pub(crate) struct CompactKernel {
    partitions: bool,
    tile_elements: u32,
    params_stride: u64,
    layout: wgpu::BindGroupLayout,
    compact: wgpu::ComputePipeline,
    clear: wgpu::ComputePipeline,
    placeholder_read: wgpu::Buffer,
    placeholder_write: wgpu::Buffer,
}

/// The vec4 view of a words binding: the same bytes rounded down to 16, when the chunk has a
/// full tile at a 4-element aligned offset (the shader's condition for vector access).
fn vec4_of<'a>(
    words: &wgpu::BufferBinding<'a>,
    element_offset: u32,
    len: u32,
    tile: u32,
) -> Option<wgpu::BufferBinding<'a>> {
    let bytes = words.size.map_or(0, NonZeroU64::get);
    (len >= tile && element_offset.is_multiple_of(4) && bytes >= 16).then(|| wgpu::BufferBinding {
        buffer: words.buffer,
        offset: words.offset,
        size: NonZeroU64::new(bytes / 16 * 16),
    })
}

impl CompactKernel {
    /// Compiles the compact (or, with `partitions`, the partitioned compact) pipeline and the
    /// status clear. The caller has checked the device ([`crate::scan::check_device`] and
    /// [`STORAGE_BINDINGS`]).
    /// With `live`, the flags carry a live count (binding 9): rows at or past it are not
    /// selected.
    pub fn new(
        device: &wgpu::Device,
        options: &ScanKernelOptions,
        partitions: bool,
        live: bool,
    ) -> Self {
        let label = match (partitions, live) {
            (true, _) => "compact (partitioned)",
            (false, false) => "compact",
            (false, true) => "compact (live count)",
        };
        let variant = Variant {
            compact: true,
            partitions,
            live_count: live,
            subgroup_lookback: options.subgroup_lookback,
            ..Variant::scan(
                false,
                options.subgroups,
                options.force_fallback,
                options.reverse_tiles,
            )
        };
        let wgsl = source::wgsl(&options.policy, variant);
        let read = wgpu::BufferBindingType::Storage { read_only: true };
        let write = wgpu::BufferBindingType::Storage { read_only: false };
        let mut entries = vec![
            buffer_entry(0, wgpu::BufferBindingType::Uniform, CHUNK_PARAMS_BYTES),
            buffer_entry(1, read, 4),
            buffer_entry(2, read, 16),
            buffer_entry(3, write, 4),
            buffer_entry(4, write, 4),
            buffer_entry(STATUS_BINDING, write, 16),
            buffer_entry(6, read, 4),
            buffer_entry(8, write, 4),
        ];
        if !partitions {
            entries.push(buffer_entry(7, read, 16));
        }
        if live {
            entries.push(buffer_entry(crate::scan::LIVE_BINDING, read, 4));
        }
        // Both entry points share one layout: the device cache keys layouts by their entries.
        let pipeline =
            |entry: &str| Kernel::with_entries(device, label, &wgsl, entry, &entries, &[]);
        let compact = pipeline("scan_tiles");
        let alignment = u64::from(device.limits().min_uniform_buffer_offset_alignment);
        Self {
            partitions,
            tile_elements: options.policy.tile_elements(),
            params_stride: CHUNK_PARAMS_BYTES.next_multiple_of(alignment.max(1)),
            layout: compact.layout,
            compact: compact.pipeline,
            clear: pipeline("clear_status").pipeline,
            placeholder_read: placeholder_buffer(device, "compact placeholder (read)"),
            placeholder_write: placeholder_buffer(device, "compact placeholder (write)"),
        }
    }

    /// A `UNIFORM` buffer holding chunk `k`'s [`ScanParams`] and `compact[k]` at
    /// `k * params_stride`. Allocates: call at compile time.
    pub fn params_buffer(
        &self,
        device: &wgpu::Device,
        plan: &ScanPlan,
        compact: &[CompactParams],
    ) -> wgpu::Buffer {
        let mut data = Vec::with_capacity(plan.chunks.len());
        for (chunk, c) in plan.chunks.iter().zip(compact) {
            let p = ChunkParams {
                scan: chunk.params,
                compact: *c,
            };
            let mut slot = bytemuck::bytes_of(&p).to_vec();
            slot.resize(self.params_stride as usize, 0);
            data.extend(slot);
        }
        crate::kernel::parameter_buffer(device, "compact params", &data)
    }

    /// Bind groups for `plan` with one entry per planned chunk (`None` only for empty
    /// chunks). `status` must hold [`ScanPlan::status_bytes`] at offset 0 (exactly that many
    /// bytes are bound and cleared).
    pub fn bind_groups(
        &self,
        device: &wgpu::Device,
        plan: &ScanPlan,
        params: &wgpu::Buffer,
        status: &wgpu::Buffer,
        chunks: &[Option<CompactBinding<'_>>],
        live: Option<wgpu::BufferBinding<'_>>,
    ) -> CompactGroups {
        let mut dispatches = Vec::new();
        for (k, (chunk, binding)) in plan.chunks.iter().zip(chunks).enumerate() {
            let Some(b) = binding.as_ref().filter(|_| chunk.tiles > 0) else {
                continue;
            };
            let read = || self.placeholder_read.as_entire_buffer_binding();
            let write = || self.placeholder_write.as_entire_buffer_binding();
            let len = chunk.layout.len;
            let tile = self.tile_elements;
            let mut resources = vec![
                (
                    0,
                    wgpu::BufferBinding {
                        buffer: params,
                        offset: self.params_stride * k as u64,
                        size: NonZeroU64::new(CHUNK_PARAMS_BYTES),
                    },
                ),
                (1, b.flags.clone()),
                (
                    2,
                    vec4_of(&b.flags, chunk.layout.input_offset, len, tile).unwrap_or_else(read),
                ),
                (3, b.output.clone().unwrap_or_else(write)),
                (4, b.count.clone()),
                (
                    STATUS_BINDING,
                    wgpu::BufferBinding {
                        buffer: status,
                        offset: 0,
                        size: NonZeroU64::new(plan.status_bytes()),
                    },
                ),
                (8, b.overflow.clone().unwrap_or_else(write)),
            ];
            if self.partitions {
                resources.push((6, b.ranges.clone().unwrap_or_else(read)));
            } else {
                let values = b.values.as_ref().map(|(v, _)| v.clone());
                let vec4 = b
                    .values
                    .as_ref()
                    .and_then(|(v, offset)| vec4_of(v, *offset, len, tile));
                resources.push((6, values.unwrap_or_else(read)));
                resources.push((7, vec4.unwrap_or_else(read)));
            }
            if let Some(l) = &live {
                resources.push((crate::scan::LIVE_BINDING, l.clone()));
            }
            let entries: Vec<wgpu::BindGroupEntry<'_>> = resources
                .into_iter()
                .map(|(binding, buffer)| wgpu::BindGroupEntry {
                    binding,
                    resource: wgpu::BindingResource::Buffer(buffer),
                })
                .collect();
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("compact chunk"),
                layout: &self.layout,
                entries: &entries,
            });
            dispatches.push((group, chunk.workgroups));
        }
        CompactGroups {
            clear_workgroups: plan.clear_workgroups,
            dispatches,
        }
    }

    /// Records the status clear and one dispatch per non-empty chunk. Allocates nothing.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>, groups: &CompactGroups) {
        let Some((first, _)) = groups.dispatches.first() else {
            return;
        };
        pass.set_pipeline(&self.clear);
        pass.set_bind_group(0, first, &[]);
        pass.dispatch_workgroups(groups.clear_workgroups, 1, 1);
        pass.set_pipeline(&self.compact);
        for (group, [x, y, z]) in &groups.dispatches {
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(*x, *y, *z);
        }
    }
}
