//! [`SpanLod`]: the level of detail of a frame's span draw. Zoomed out, most visible spans are
//! narrower than a pixel: drawing each as a quad costs six vertices for a sliver nobody can
//! see apart from its neighbours (a million of them take half a second a frame on a software
//! rasterizer, and tens of millions of vertices on a GPU). The LOD graph keeps quads for spans
//! at least [`LodParams::min_px`] wide (and the selected span) and folds the narrower ones
//! into a row × pixel-column occupancy bitmap, which the draw shows as one quad.
//!
//! ```text
//! lod/prepare ─ lod/clear ─ lod/classify (per visible candidate of the frame) ─ lod/args
//!                          └─ lod/block_pass (per block record, frames in blocks mode)
//!                              ├─ wide_ids (atomic append; order is not part of the contract)
//!                              └─ occupancy bits (row slot × column), dense count
//! ```
//!
//! A frame in the trace frame's blocks mode ([`crate::frame::TraceFrameConfig::block_lod`])
//! writes no candidates: `prepare` then gives `classify` no workgroups and `block_pass` one
//! invocation per block record, which marks a zoomed-out block's columns from its summary
//! without visiting its spans, and classifies them one by one where the summary cannot prove
//! the same result. Either way the quads, the bitmap and the dense count equal
//! [`cpu::span_lod`] over the frame's visible spans.
//!
//! Nothing in it is proportional to the compiled capacities: the classification reads the
//! frame's candidates (their IDs and visible flags, so the frame needs no visible-ID
//! compaction: [`crate::frame::TraceFrameConfig::compact_visible`] may be off) over an
//! indirect grid of the candidate rows (written by `prepare`), and `clear` zeroes only the
//! bitmap words this plot uses (row slots × `columns / 32`), by a fixed grid of
//! `CLEAR_GROUPS` workgroups striding over them.
//!
//! ```text
//! ```
//!
//! What a span counts as (visible, picked, its row) is the trace frame's business and does not
//! change here: only how the visible ones are drawn. Spans whose row lies outside the plot's
//! row slots are neither drawn nor marked (the draw would clip them anyway).

pub mod cpu;

use gpugraph_command::{
    Access, Binding, BufferDescriptor, CommandGraph, CompiledGraph, DispatchNode, EncodeOptions,
    Grid, ShaderSource, VectorFormat,
};
use wgpu::BufferUsages as U;

use crate::error::TraceGpuError;
use crate::frame::FrameBuffers;

/// Workgroups of `lod/clear` (its invocations stride over the bitmap's used words).
const CLEAR_GROUPS: u32 = 16;
const WGSL: &str = concat!(
    include_str!("../common.wgsl"),
    include_str!("params.wgsl"),
    include_str!("../frame/params.wgsl"),
    include_str!("lod.wgsl")
);

/// The WGSL declaration of [`LodParams`], for draws that read the LOD's bitmap.
pub const LOD_PARAMS_WGSL: &str = include_str!("params.wgsl");

/// Words of [`SpanLod::counters`]: `[wide spans, spans folded into the bitmap]`.
pub const LOD_COUNTER_WORDS: u64 = 2;

/// `LodParams` in lod.wgsl: the per-frame uniform ([`SpanLod::write`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LodParams {
    /// Window start ticks (lo, hi).
    pub window_start: [u32; 2],
    /// Physical pixels per tick (columns / window width).
    pub px_per_tick: f32,
    /// Spans at least this many pixels wide are drawn as quads.
    pub min_px: f32,
    /// Pixel columns of the plot; 0 turns the LOD off (every visible span is a quad).
    pub columns: u32,
    /// Layout row of the first row slot (the plot's top row).
    pub first_row: u32,
    /// Row slots (rows at least partly in the plot).
    pub rows: u32,
    /// Bitmap words per row slot: the plot's columns / 32, rounded up (at least 1). The
    /// bitmap's first `rows × words_per_row` words are this frame's; the rest are
    /// unspecified.
    pub words_per_row: u32,
    /// The selected span (always a quad) or [`crate::NO_SPAN`].
    pub selected: u32,
    /// Zero.
    pub pad: [u32; 3],
}

impl LodParams {
    /// The parameters of a plot `columns` physical px wide showing `window_width` ticks from
    /// `window_start`, rows from `row_scroll` (fractional) over `rows_in_view` rows, under
    /// `config`. The LOD turns itself off (`columns = 0`) when the plot exceeds the config's
    /// bitmap, so nothing is ever dropped.
    pub fn new(
        config: &LodConfig,
        window_start: u64,
        window_width: u64,
        columns: u32,
        row_scroll: f32,
        rows_in_view: f32,
        selected: Option<u32>,
    ) -> Self {
        let first_row = row_scroll.max(0.0).floor() as u32;
        let rows = (row_scroll.max(0.0) + rows_in_view.max(0.0)).ceil() as u32 - first_row;
        let fits = columns <= config.max_columns && rows <= config.max_rows;
        Self {
            window_start: [window_start as u32, (window_start >> 32) as u32],
            px_per_tick: columns as f32 / window_width.max(1) as f32,
            min_px: config.min_px,
            columns: if fits { columns } else { 0 },
            first_row,
            rows: if fits { rows } else { 0 },
            words_per_row: if fits { columns.div_ceil(32).max(1) } else { 1 },
            selected: selected.unwrap_or(crate::NO_SPAN),
            pad: [0; 3],
        }
    }
}

/// Sizes the LOD graph is compiled for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodConfig {
    /// Widest plot in physical px the bitmap covers (a wider one draws every span).
    pub max_columns: u32,
    /// Most row slots the bitmap covers.
    pub max_rows: u32,
    /// The quad threshold in physical px.
    pub min_px: f32,
}

impl Default for LodConfig {
    /// An 8K-wide plot of up to 2,048 row slots (2 MiB of bitmap), quads from 1.5 px.
    fn default() -> Self {
        Self {
            max_columns: 8192,
            max_rows: 2048,
            min_px: 1.5,
        }
    }
}

impl LodConfig {
    /// Bitmap words per row slot of the widest plot.
    pub fn words_per_row(&self) -> u32 {
        self.max_columns.div_ceil(32).max(1)
    }
    /// Bitmap words in all (the widest plot's row stride × the row slots).
    pub fn words(&self) -> u64 {
        u64::from(self.words_per_row()) * u64::from(self.max_rows.max(1))
    }
}

/// The LOD graph over one [`crate::frame::TraceFrame`]'s buffers (see the module doc).
pub struct SpanLod {
    config: LodConfig,
    params: wgpu::Buffer,
    wide_ids: wgpu::Buffer,
    occupancy: wgpu::Buffer,
    counters: wgpu::Buffer,
    draw_args: wgpu::Buffer,
    /// The classification's and the block pass's indirect grids (kept alive beside the graph
    /// that imports them).
    _grids: [wgpu::Buffer; 2],
    graph: CompiledGraph,
}

impl SpanLod {
    /// Allocates the LOD's buffers (wide IDs for every span slot of `frame`, the bitmap of
    /// `config`) and compiles its graph over `frame`'s spans, rows, candidates (IDs, flags,
    /// rows) and draw records. Submits nothing.
    pub fn new(
        device: &wgpu::Device,
        frame: &FrameBuffers,
        config: LodConfig,
    ) -> Result<Self, TraceGpuError> {
        let spans = frame.rows.size() / 4;
        let buffer = |label: &str, words: u64, usage: U| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: words.max(1) * 4,
                usage: usage | U::STORAGE | U::COPY_SRC | U::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("trace-lod/params"),
            size: std::mem::size_of::<LodParams>() as u64,
            usage: U::UNIFORM | U::COPY_DST,
            mapped_at_creation: false,
        });
        let wide_ids = buffer("trace-lod/wide-ids", spans, U::empty());
        let occupancy = buffer("trace-lod/occupancy", config.words(), U::empty());
        let counters = buffer("trace-lod/counters", LOD_COUNTER_WORDS, U::empty());
        let draw_args = buffer("trace-lod/draw-args", 8, U::INDIRECT);
        let classify_args = buffer("trace-lod/classify-args", 3, U::INDIRECT);
        let block_args = buffer("trace-lod/block-args", 3, U::INDIRECT);

        let mut g = CommandGraph::new("trace-lod", device);
        let mut view = |name: &str, b: &wgpu::Buffer| -> Result<_, TraceGpuError> {
            let h = g.import_buffer(BufferDescriptor::new(name, b.size(), b.usage()), b)?;
            Ok(g.create_packed_view(h, VectorFormat::Uint32, b.size() / 4)?)
        };
        let spans = Binding::read(1, view("spans", &frame.spans)?);
        let rows_view = view("rows", &frame.rows)?;
        let rows = Binding::read(2, rows_view);
        let ids = Binding::read(3, view("candidate-ids", &frame.candidate_ids)?);
        let frame_args = Binding::read(4, view("frame-args", &frame.draw_args)?);
        let wide = Binding::read_write(5, view("wide-ids", &wide_ids)?);
        let bitmap = Binding::read_write(6, view("occupancy", &occupancy)?);
        let counts = Binding::read_write(7, view("counters", &counters)?);
        let draws = Binding::read_write(8, view("draw-args", &draw_args)?);
        let flags = Binding::read(10, view("candidate-flags", &frame.candidate_flags)?);
        let live = Binding::read(11, view("live-total", &frame.live_total)?);
        let classify_grid = view("classify-args", &classify_args)?;
        let block_grid = view("block-args", &block_args)?;
        let records = Binding::read(13, view("blocks", &frame.blocks)?);
        let thread_info = Binding::read(14, view("thread-info", &frame.thread_info)?);
        let rows_out = Binding::read_write(15, rows_view);
        let fp_h = g.import_buffer(
            BufferDescriptor::new("frame-params", frame.params.size(), frame.params.usage()),
            &frame.params,
        )?;
        let fp = Binding::handle(12, fp_h, Access::Uniform);
        let params_h = g.import_buffer(
            BufferDescriptor::new("params", params.size(), params.usage()),
            &params,
        )?;
        let lp = Binding::handle(0, params_h, Access::Uniform);
        let shader = ShaderSource::new("trace/lod", WGSL);
        // Each node binds what its entry point reads and writes, no more: a browser's WebGPU
        // device has 8–10 storage buffers per stage (the classification uses 8).
        let nodes = [
            (
                "prepare",
                vec![
                    counts.clone(),
                    ids.clone(),
                    flags.clone(),
                    live.clone(),
                    Binding::read_write(9, classify_grid),
                    fp.clone(),
                    Binding::read_write(16, block_grid),
                ],
                Grid::Workgroups([1, 1, 1]),
            ),
            (
                "clear",
                vec![lp.clone(), bitmap.clone()],
                Grid::Workgroups([CLEAR_GROUPS, 1, 1]),
            ),
            (
                "classify",
                vec![
                    lp.clone(),
                    spans.clone(),
                    rows,
                    ids,
                    wide.clone(),
                    bitmap.clone(),
                    counts.clone(),
                    flags,
                    live,
                ],
                Grid::Indirect(classify_grid),
            ),
            (
                "block_pass",
                vec![
                    lp,
                    fp,
                    spans,
                    records,
                    thread_info,
                    rows_out,
                    wide,
                    bitmap,
                    counts.clone(),
                ],
                Grid::Indirect(block_grid),
            ),
            (
                "args",
                vec![frame_args, counts, draws],
                Grid::Workgroups([1, 1, 1]),
            ),
        ];
        for (entry, bindings, grid) in nodes {
            g.add_dispatch_node(DispatchNode::new(
                format!("lod/{entry}"),
                shader.clone(),
                entry,
                bindings,
                grid,
            ))?;
        }
        let graph = g.compile()?;
        Ok(Self {
            config,
            params,
            wide_ids,
            occupancy,
            counters,
            draw_args,
            _grids: [classify_args, block_args],
            graph,
        })
    }

    /// The compiled sizes.
    pub fn config(&self) -> LodConfig {
        self.config
    }

    /// Writes this frame's parameters (visible to the next submission).
    pub fn write(&self, queue: &wgpu::Queue, params: &LodParams) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
    }

    /// Records the LOD graph (after the trace frame's graph, before the draw).
    pub fn encode(&mut self, encoder: &mut wgpu::CommandEncoder) -> Result<(), TraceGpuError> {
        self.graph.encode(encoder, &EncodeOptions::default())?;
        Ok(())
    }

    /// [`Self::encode`] with a timestamp pass around every node (needs `TIMESTAMP_QUERY`);
    /// after submitting, [`Self::read_timings`] gives each node's GPU time.
    pub fn encode_profiled(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), TraceGpuError> {
        let options = EncodeOptions {
            profile: true,
            ..Default::default()
        };
        self.graph.encode(encoder, &options)?;
        Ok(())
    }

    /// The node timings of the last [`Self::encode_profiled`], in execution order. A
    /// readback: blocks until the GPU finished (native only in practice).
    pub fn read_timings(
        &mut self,
        queue: &wgpu::Queue,
    ) -> Result<Vec<gpugraph_command::NodeTiming>, TraceGpuError> {
        Ok(self.graph.read_timings(queue)?)
    }

    /// The [`LodParams`] uniform (for the draw's bitmap quad).
    pub fn params(&self) -> &wgpu::Buffer {
        &self.params
    }
    /// Span IDs drawn as quads: the first `counters[0]` rows.
    pub fn wide_ids(&self) -> &wgpu::Buffer {
        &self.wide_ids
    }
    /// The bitmap: row slot `s`, column `c` is bit `c % 32` of word
    /// `s × words_per_row + c / 32`.
    pub fn occupancy(&self) -> &wgpu::Buffer {
        &self.occupancy
    }
    /// `[wide spans, spans folded into the bitmap]`.
    pub fn counters(&self) -> &wgpu::Buffer {
        &self.counters
    }
    /// Non-instanced indirect draw records (`STORAGE | INDIRECT`): spans at byte 0
    /// (`6 × wide` vertices), edges at byte 16 (`2 ×` the frame's drawn edges).
    pub fn draw_args(&self) -> &wgpu::Buffer {
        &self.draw_args
    }
    /// The compiled graph (node order, its device cache).
    pub fn graph(&self) -> &CompiledGraph {
        &self.graph
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_shader() {
        crate::assert_params_layout::<LodParams>(WGSL, "LodParams", 12);
    }

    #[test]
    fn a_plot_past_the_bitmap_turns_the_lod_off() {
        let c = LodConfig::default();
        let p = LodParams::new(&c, 5, 1000, 8193, 0.0, 10.0, None);
        assert_eq!((p.columns, p.rows), (0, 0));
        let p = LodParams::new(&c, 5, 1000, 1200, 2.5, 10.0, Some(3));
        assert_eq!(
            (p.columns, p.first_row, p.rows, p.selected),
            (1200, 2, 11, 3)
        );
        let p = LodParams::new(&c, 5, 1000, 1200, 0.0, 4096.0, None);
        assert_eq!(p.columns, 0);
    }
}
