//! Tile planning for the chained scan: pure data, no GPU.
//!
//! A logical sequence is a list of chunks (each in its own binding; empty and uneven chunks
//! allowed). Every non-empty chunk is scanned by one dispatch of `scan_tiles`; its tiles get
//! global ids after the previous chunk's (`tile_base`), so all dispatches share one status
//! buffer and the carry crosses chunk boundaries through the ordinary look-back. A tile never
//! straddles two chunks.
//!
//! Dispatch shape: a chunk of `n` tiles launches `[n, 1, 1]` workgroups when `n` fits in one
//! dimension, otherwise a 2-D grid `[ceil(n / y), y, 1]` with `y = ceil(n / max_per_dim)`. The
//! shader never linearizes the workgroup id: each workgroup takes the next ticket from an
//! atomic counter and scans tile `ticket - ticket_base`; the (fewer than `y`) padding
//! workgroups of a 2-D grid draw tickets past the chunk's tiles and exit. `ticket_base` is the
//! number of workgroups of all earlier dispatches, so one counter serves every chunk.

use bytemuck::{Pod, Zeroable};
use thiserror::Error;

/// Words at the start of the status buffer before the first tile's status: word 0 is the
/// ticket counter, word 1 receives the survivor count of the compaction variant
/// (`crate::compact`), words 2..3 are reserved; all are zeroed by the clear. Mirrors
/// `STATUS_HEADER_WORDS` in `scan.wgsl`.
pub const STATUS_HEADER_WORDS: u64 = 4;
/// Status words per tile (two 16-bit halves of the value, each tagged with the tile state).
pub const STATUS_WORDS_PER_TILE: u64 = 2;
/// Bytes of one chunk's [`ScanParams`] uniform.
pub const PARAMS_BYTES: u64 = std::mem::size_of::<ScanParams>() as u64;
/// Bit of [`ScanParams::mode`]: inclusive results (exclusive when clear).
pub const MODE_INCLUSIVE: u32 = 1;

/// Where one chunk lives inside its bindings, in elements (u32). The offsets are added to
/// indices inside the shader, so a chunk may start anywhere after its binding's (256-byte
/// aligned) start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ChunkLayout {
    /// Elements in the chunk (0 allowed).
    pub len: u32,
    /// Element offset of the chunk's first value inside the input binding.
    pub input_offset: u32,
    /// Element offset of the chunk's first result inside the output binding.
    pub output_offset: u32,
    /// Element offset of the chunk's first segment flag inside the flags binding (ignored when
    /// the scan is not segmented).
    pub flags_offset: u32,
}

impl ChunkLayout {
    /// A chunk of `len` elements at offset 0 of every binding.
    pub const fn new(len: u32) -> Self {
        Self {
            len,
            input_offset: 0,
            output_offset: 0,
            flags_offset: 0,
        }
    }
}

/// Scan convention: exclusive or inclusive sum, optionally restarting at segment starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScanMode {
    /// Inclusive (`out[i]` includes `in[i]`) when true, exclusive otherwise.
    pub inclusive: bool,
    /// Segment-start flags are read; the first logical element and every element with a nonzero
    /// flag start a segment, where both conventions restart (exclusive value 0).
    pub segmented: bool,
}

/// Device-dependent numbers the plan needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanLimits {
    /// Elements per tile ([`super::ScanPolicy::tile_elements`]); a positive multiple of 4.
    pub tile_elements: u32,
    /// Clear-kernel workgroup size ([`super::ScanPolicy::workgroup_size`]).
    pub workgroup_size: u32,
    /// `Limits::max_compute_workgroups_per_dimension` (65535 on WebGPU).
    pub max_workgroups_per_dimension: u32,
    /// `Limits::min_uniform_buffer_offset_alignment` (256 on most devices).
    pub uniform_offset_alignment: u32,
}

impl PlanLimits {
    /// The limits for `policy` on a device with `limits` (what [`super::ScanKernel::plan`]
    /// uses), so graph nodes can plan before any kernel exists.
    pub fn new(policy: &super::ScanPolicy, limits: &wgpu::Limits) -> Self {
        Self {
            tile_elements: policy.tile_elements(),
            workgroup_size: policy.workgroup_size,
            max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            uniform_offset_alignment: limits.min_uniform_buffer_offset_alignment,
        }
    }
}

/// The uniform block of one chunk dispatch, as `scan.wgsl` declares it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ScanParams {
    /// Elements in the chunk.
    pub len: u32,
    /// Element offset of the chunk inside the input binding.
    pub input_offset: u32,
    /// Element offset of the chunk inside the output binding.
    pub output_offset: u32,
    /// Element offset of the chunk inside the flags binding.
    pub flags_offset: u32,
    /// Global id of the chunk's first tile.
    pub tile_base: u32,
    /// Ticket-counter value when this dispatch starts (workgroups of earlier dispatches).
    pub ticket_base: u32,
    /// Tiles in the chunk.
    pub tiles: u32,
    /// [`MODE_INCLUSIVE`] or 0.
    pub mode: u32,
    /// With a live count: element offset of the count word inside its binding (binding 9).
    pub live_offset: u32,
}

/// One chunk's share of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    /// The chunk as given.
    pub layout: ChunkLayout,
    /// Tiles covering the chunk (`ceil(len / tile_elements)`; 0 for an empty chunk, which is
    /// not dispatched).
    pub tiles: u32,
    /// Global id of the first tile.
    pub tile_base: u32,
    /// Workgroups launched by earlier chunk dispatches.
    pub ticket_base: u32,
    /// Workgroup counts of this chunk's dispatch (`[0, 0, 0]` when empty).
    pub workgroups: [u32; 3],
    /// Byte offset of this chunk's [`ScanParams`] inside the params buffer.
    pub params_offset: u64,
    /// The uniform contents.
    pub params: ScanParams,
}

/// Everything needed to allocate scratch and record a chunked scan; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanPlan {
    /// Convention.
    pub mode: ScanMode,
    /// Elements per tile.
    pub tile_elements: u32,
    /// One entry per input chunk, in order (empty chunks included).
    pub chunks: Vec<ChunkPlan>,
    /// Tiles over all chunks.
    pub total_tiles: u32,
    /// Elements over all chunks.
    pub total_elements: u64,
    /// Workgroups of the 1-D clear dispatch (0 when nothing is dispatched).
    pub clear_workgroups: u32,
    /// Distance between two chunks' params in the params buffer (a multiple of the uniform
    /// offset alignment).
    pub params_stride: u64,
}

/// A chunk list or limit the planner cannot serve.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ScanPlanError {
    /// `tile_elements` is 0 or not a multiple of 4.
    #[error("scan plan: tile_elements {0} is not a positive multiple of 4")]
    TileElements(u32),
    /// A limit is 0 or not a power of two where one is required.
    #[error("scan plan: invalid limit {name} = {value}")]
    Limit {
        /// The limit's field name in [`PlanLimits`].
        name: &'static str,
        /// Its value.
        value: u32,
    },
    /// A chunk's offset + length (+ one tile of slack used by the shader's u32 index math)
    /// does not fit in 32 bits.
    #[error("scan plan: chunk {chunk}: offset {offset} + len {len} leaves no room for a tile of {tile_elements} in u32 indices")]
    ChunkTooLarge {
        /// Chunk index.
        chunk: usize,
        /// The largest of the chunk's offsets.
        offset: u32,
        /// Its length.
        len: u32,
        /// Elements per tile.
        tile_elements: u32,
    },
    /// The total tile or workgroup count does not fit the 32-bit counters.
    #[error("scan plan: {what} over all chunks exceeds u32")]
    TooManyTiles {
        /// What overflowed: "tiles", "workgroups" or "workgroups per dimension".
        what: &'static str,
    },
}

/// `ceil(len / tile_elements)`.
pub const fn tiles_for(len: u32, tile_elements: u32) -> u32 {
    len.div_ceil(tile_elements)
}

/// Workgroup counts that launch at least `workgroups` workgroups with no dimension above
/// `max_per_dimension` (fewer than `y` extra workgroups in the 2-D case). `[0, 0, 0]` for 0.
pub const fn dispatch_shape(workgroups: u32, max_per_dimension: u32) -> [u32; 3] {
    if workgroups == 0 {
        return [0, 0, 0];
    }
    if workgroups <= max_per_dimension {
        return [workgroups, 1, 1];
    }
    let y = workgroups.div_ceil(max_per_dimension);
    [workgroups.div_ceil(y), y, 1]
}

impl ScanPlan {
    /// Plans a scan over `chunks` (one logical sequence, in order).
    ///
    /// Fails on invalid limits, on a chunk whose offsets and length overflow the shader's u32
    /// index arithmetic, and when the tile or workgroup totals overflow u32.
    pub fn new(
        chunks: &[ChunkLayout],
        mode: ScanMode,
        limits: PlanLimits,
    ) -> Result<Self, ScanPlanError> {
        let tile = limits.tile_elements;
        if tile == 0 || !tile.is_multiple_of(4) {
            return Err(ScanPlanError::TileElements(tile));
        }
        if limits.max_workgroups_per_dimension == 0 {
            return Err(ScanPlanError::Limit {
                name: "max_workgroups_per_dimension",
                value: 0,
            });
        }
        if limits.workgroup_size == 0 {
            return Err(ScanPlanError::Limit {
                name: "workgroup_size",
                value: 0,
            });
        }
        if !limits.uniform_offset_alignment.is_power_of_two() {
            return Err(ScanPlanError::Limit {
                name: "uniform_offset_alignment",
                value: limits.uniform_offset_alignment,
            });
        }
        let params_stride =
            PARAMS_BYTES.next_multiple_of(u64::from(limits.uniform_offset_alignment));

        let mut planned = Vec::with_capacity(chunks.len());
        let mut tile_base: u32 = 0;
        let mut ticket_base: u32 = 0;
        let mut total_elements = 0u64;
        for (index, layout) in chunks.iter().enumerate() {
            let offset = layout
                .input_offset
                .max(layout.output_offset)
                .max(if mode.segmented {
                    layout.flags_offset
                } else {
                    0
                });
            let fits =
                u64::from(offset) + u64::from(layout.len) + u64::from(tile) <= u64::from(u32::MAX);
            if !fits {
                return Err(ScanPlanError::ChunkTooLarge {
                    chunk: index,
                    offset,
                    len: layout.len,
                    tile_elements: tile,
                });
            }
            let tiles = tiles_for(layout.len, tile);
            let workgroups = dispatch_shape(tiles, limits.max_workgroups_per_dimension);
            if workgroups[1] > limits.max_workgroups_per_dimension {
                return Err(ScanPlanError::TooManyTiles {
                    what: "workgroups per dimension",
                });
            }
            let launched = workgroups[0] * workgroups[1] * workgroups[2];
            let params = ScanParams {
                len: layout.len,
                input_offset: layout.input_offset,
                output_offset: layout.output_offset,
                flags_offset: if mode.segmented {
                    layout.flags_offset
                } else {
                    0
                },
                tile_base,
                ticket_base,
                tiles,
                mode: if mode.inclusive { MODE_INCLUSIVE } else { 0 },
                live_offset: 0,
            };
            planned.push(ChunkPlan {
                layout: *layout,
                tiles,
                tile_base,
                ticket_base,
                workgroups,
                params_offset: params_stride * index as u64,
                params,
            });
            tile_base = tile_base
                .checked_add(tiles)
                .ok_or(ScanPlanError::TooManyTiles { what: "tiles" })?;
            ticket_base = ticket_base
                .checked_add(launched)
                .ok_or(ScanPlanError::TooManyTiles { what: "workgroups" })?;
            total_elements += u64::from(layout.len);
        }
        let total_tiles = tile_base;
        // The status words must also be addressable by u32 in the shader.
        let status_words = STATUS_HEADER_WORDS + STATUS_WORDS_PER_TILE * u64::from(total_tiles);
        if status_words > u64::from(u32::MAX) {
            return Err(ScanPlanError::TooManyTiles { what: "tiles" });
        }
        let clear_workgroups = if total_tiles == 0 {
            0
        } else {
            let needed = status_words.div_ceil(u64::from(limits.workgroup_size));
            needed.min(u64::from(limits.max_workgroups_per_dimension)) as u32
        };
        Ok(Self {
            mode,
            tile_elements: tile,
            chunks: planned,
            total_tiles,
            total_elements,
            clear_workgroups,
            params_stride,
        })
    }

    /// True when there is nothing to dispatch (every chunk is empty). Encoding such a plan
    /// records nothing.
    pub fn is_empty(&self) -> bool {
        self.total_tiles == 0
    }

    /// Bytes the status buffer binding must have: the header plus two words per tile. The
    /// kernel clears exactly the bound range, so bind this size.
    pub fn status_bytes(&self) -> u64 {
        4 * (STATUS_HEADER_WORDS + STATUS_WORDS_PER_TILE * u64::from(self.total_tiles))
    }

    /// Points every chunk at the live-count word `element_offset` of the live binding
    /// ([`super::ScanBindings::live`]).
    pub fn set_live_offset(&mut self, element_offset: u32) {
        for c in &mut self.chunks {
            c.params.live_offset = element_offset;
        }
    }

    /// Bytes of the params (uniform) buffer: one `params_stride` slot per chunk, at least
    /// [`PARAMS_BYTES`].
    pub fn params_bytes(&self) -> u64 {
        (self.params_stride * self.chunks.len() as u64).max(PARAMS_BYTES)
    }

    /// The params buffer contents ([`Self::params_bytes`] long): each chunk's [`ScanParams`] at
    /// its `params_offset`, zeros elsewhere. Write once when the plan is compiled.
    pub fn params_data(&self) -> Vec<u8> {
        let mut data = vec![0u8; self.params_bytes() as usize];
        for chunk in &self.chunks {
            let at = chunk.params_offset as usize;
            data[at..at + PARAMS_BYTES as usize].copy_from_slice(bytemuck::bytes_of(&chunk.params));
        }
        data
    }

    /// Dispatches recorded by encode: the clear plus one per non-empty chunk (0 when empty).
    pub fn dispatch_count(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        1 + self.chunks.iter().filter(|c| c.tiles > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: PlanLimits = PlanLimits {
        tile_elements: 4096,
        workgroup_size: 256,
        max_workgroups_per_dimension: 65535,
        uniform_offset_alignment: 256,
    };

    fn mode() -> ScanMode {
        ScanMode {
            inclusive: false,
            segmented: false,
        }
    }

    #[test]
    fn shapes_stay_within_one_dimension_and_cover() {
        assert_eq!(dispatch_shape(0, 65535), [0, 0, 0]);
        assert_eq!(dispatch_shape(1, 65535), [1, 1, 1]);
        assert_eq!(dispatch_shape(65535, 65535), [65535, 1, 1]);
        assert_eq!(dispatch_shape(65536, 65535), [32768, 2, 1]);
        for n in [
            1u32,
            2,
            6,
            7,
            8,
            49,
            50,
            51,
            1000,
            70000,
            1 << 20,
            u32::MAX / 2,
        ] {
            for max in [1u32, 7, 256, 65535] {
                if u64::from(n) > u64::from(max) * u64::from(max) {
                    continue;
                }
                let [x, y, z] = dispatch_shape(n, max);
                assert!(x <= max && y <= max && z == 1, "{n} {max}");
                let launched = u64::from(x) * u64::from(y);
                assert!(launched >= u64::from(n), "{n} {max}");
                assert!(launched - u64::from(n) < u64::from(y), "{n} {max}");
            }
        }
    }

    #[test]
    fn chunks_get_consecutive_tile_and_ticket_bases() {
        let chunks = [
            ChunkLayout::new(0),
            ChunkLayout::new(1),
            ChunkLayout::new(4096),
            ChunkLayout::new(0),
            ChunkLayout::new(4097),
        ];
        let plan = ScanPlan::new(&chunks, mode(), LIMITS).unwrap();
        let tiles: Vec<u32> = plan.chunks.iter().map(|c| c.tiles).collect();
        let bases: Vec<u32> = plan.chunks.iter().map(|c| c.tile_base).collect();
        assert_eq!(tiles, [0, 1, 1, 0, 2]);
        assert_eq!(bases, [0, 0, 1, 2, 2]);
        assert_eq!(plan.total_tiles, 4);
        assert_eq!(plan.total_elements, 8194);
        assert_eq!(plan.status_bytes(), 4 * (4 + 8));
        assert_eq!(plan.dispatch_count(), 4);
        assert_eq!(plan.chunks[0].workgroups, [0, 0, 0]);
        assert_eq!(plan.chunks[4].workgroups, [2, 1, 1]);
        assert_eq!(plan.chunks[4].params.ticket_base, 2);
        assert_eq!(plan.chunks[4].params_offset, 4 * 256);
        assert_eq!(plan.params_bytes(), 5 * 256);
    }

    #[test]
    fn ticket_base_counts_padding_workgroups() {
        let limits = PlanLimits {
            tile_elements: 4,
            max_workgroups_per_dimension: 4,
            ..LIMITS
        };
        // 7 tiles -> [4, 2, 1] = 8 workgroups (one padding).
        let plan =
            ScanPlan::new(&[ChunkLayout::new(28), ChunkLayout::new(5)], mode(), limits).unwrap();
        assert_eq!(plan.chunks[0].workgroups, [4, 2, 1]);
        assert_eq!(plan.chunks[1].tile_base, 7);
        assert_eq!(plan.chunks[1].ticket_base, 8);
        // Clear: 4 + 2 * 9 = 22 words over workgroups of 256, capped at 4.
        assert_eq!(plan.clear_workgroups, 1);
    }

    #[test]
    fn empty_plan_dispatches_nothing() {
        let plan = ScanPlan::new(&[ChunkLayout::new(0)], mode(), LIMITS).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.dispatch_count(), 0);
        assert_eq!(plan.clear_workgroups, 0);
        let none = ScanPlan::new(&[], mode(), LIMITS).unwrap();
        assert!(none.is_empty());
        assert_eq!(none.params_bytes(), PARAMS_BYTES);
    }

    #[test]
    fn params_are_laid_out_at_their_offsets() {
        let chunk = ChunkLayout {
            len: 10,
            input_offset: 3,
            output_offset: 5,
            flags_offset: 7,
        };
        let plan = ScanPlan::new(
            &[ChunkLayout::new(9000), chunk],
            ScanMode {
                inclusive: true,
                segmented: true,
            },
            LIMITS,
        )
        .unwrap();
        let data = plan.params_data();
        let words: &[u32] = bytemuck::cast_slice(&data[256..256 + 32]);
        assert_eq!(words, [10, 3, 5, 7, 3, 3, 1, MODE_INCLUSIVE]);
    }

    #[test]
    fn rejects_overflowing_chunks_and_bad_limits() {
        let big = ChunkLayout {
            len: u32::MAX - 100,
            ..ChunkLayout::default()
        };
        assert!(matches!(
            ScanPlan::new(&[big], mode(), LIMITS),
            Err(ScanPlanError::ChunkTooLarge { chunk: 0, .. })
        ));
        let bad = PlanLimits {
            tile_elements: 6,
            ..LIMITS
        };
        assert_eq!(
            ScanPlan::new(&[], mode(), bad),
            Err(ScanPlanError::TileElements(6))
        );
        let bad = PlanLimits {
            uniform_offset_alignment: 0,
            ..LIMITS
        };
        assert!(ScanPlan::new(&[], mode(), bad).is_err());
    }
}
