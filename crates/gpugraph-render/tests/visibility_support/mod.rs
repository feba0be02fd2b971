//! Shared support of the VisibilityWorkflow tests: exact (dyadic) scenes, their upload in
//! chunks with poisoned gaps, one compiled workflow per case, and the check of mask, IDs,
//! count and overflow against the exact oracle.
#![allow(dead_code)]

use crate::common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CommandGraph, CompiledGraph, GpuContext, VectorFormat, VectorView};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::visibility::cpu::{self, RowBounds, RowInputs};
use gpugraph_render::{Bounds, DrawCommandBuffer, DrawLayout, ViewParams, VisibilityWorkflow};
use rand::Rng;
use wgpu::util::DrawIndexedIndirectArgs;

/// Rows left between chunks (poisoned) so that chunk offsets are unaligned and a write past a
/// chunk shows.
pub const GAP: u64 = 3;
/// Grid of positions, radii and LOD edges (1/16); planes use 2^-8 (normals) and 2^-12
/// (offsets): products and sums then stay far inside f32's 24 bits.
pub const GRID: f32 = 16.0;

pub fn snap(x: f32, grid: f32) -> f32 {
    (x * grid).round() / grid
}

/// A perspective view from `eye` (on the grid) at `target`, its planes snapped to dyadic
/// values (no longer exactly unit normals: the contract takes planes as given).
pub fn view_from(eye: [f32; 3], target: [f32; 3]) -> ViewParams {
    let vp = mul(
        &perspective(60f32.to_radians(), 1.5, 1.0, 45.0),
        &look_at(eye, target, [0.0, 1.0, 0.0]),
    );
    let mut view = ViewParams::new(&vp, eye).with_time(10.0, 20.0);
    for p in &mut view.planes {
        for c in p.iter_mut().take(3) {
            *c = snap(*c, 256.0);
        }
        p[3] = snap(p[3], 4096.0);
    }
    view
}

/// The cube [-4, 4]³ as six axis planes, eye at the origin.
pub fn axis_box_view() -> ViewParams {
    let mut planes = [[0.0f32; 4]; 6];
    for (k, p) in planes.iter_mut().enumerate() {
        p[k / 2] = if k % 2 == 0 { 1.0 } else { -1.0 };
        p[3] = 4.0;
    }
    ViewParams {
        planes,
        eye: [0.0, 0.0, 0.0, 1.0],
        time: [f32::NEG_INFINITY, f32::INFINITY],
        pad: [0.0; 2],
    }
}

#[derive(Clone, Default)]
pub struct Case {
    pub chunks: Vec<u64>,
    pub boxes: bool,
    pub time: bool,
    pub lod: bool,
    pub selection: bool,
    pub given_ids: bool,
    pub publish_mask: bool,
    pub capacity: Option<u64>,
    pub extent: f32,
    pub seed: u64,
}

/// Per-row inputs of a case, in global row order.
pub struct Inputs {
    pub spheres: Vec<[f32; 4]>,
    pub box_max: Vec<[f32; 4]>,
    pub time: Vec<[f32; 2]>,
    pub lod: Vec<[f32; 2]>,
    pub selection: Vec<u32>,
    pub ids: Vec<u32>,
}

impl Inputs {
    pub fn random(case: &Case) -> Self {
        let mut rng = rng(case.seed);
        let n: u64 = case.chunks.iter().sum();
        let n = n as usize;
        let spheres: Vec<[f32; 4]> = random_spheres(&mut rng, n, case.extent, 2.0)
            .into_iter()
            .map(|s| s.map(|x| snap(x, GRID)))
            .collect();
        // Boxes: the sphere's center as the minimum corner, extents up to 3.
        let box_max = spheres
            .iter()
            .map(|s| {
                let e = snap(s[3] * 1.5, GRID);
                [s[0] + e, s[1] + snap(e * 0.5, GRID), s[2] + e, 0.0]
            })
            .collect();
        let time = (0..n)
            .map(|_| {
                let s = rng.random_range(0.0..30.0f32);
                [s, s + rng.random_range(0.0..8.0f32)]
            })
            .collect();
        let lod = (0..n)
            .map(|_| {
                let near = snap(rng.random_range(0.0..25.0f32), GRID);
                [near, near + snap(rng.random_range(5.0..40.0f32), GRID)]
            })
            .collect();
        let selection = (0..n)
            .map(|_| {
                if rng.random_bool(0.7) {
                    rng.random_range(1..9)
                } else {
                    0
                }
            })
            .collect();
        let ids = if case.given_ids {
            (0..n).map(|_| rng.random()).collect()
        } else {
            (0..n as u32).collect()
        };
        Self {
            spheres,
            box_max,
            time,
            lod,
            selection,
            ids,
        }
    }

    pub fn bounds(&self, case: &Case) -> Vec<RowBounds> {
        if case.boxes {
            self.spheres
                .iter()
                .zip(&self.box_max)
                .map(|(lo, hi)| RowBounds::Box([lo[0], lo[1], lo[2]], [hi[0], hi[1], hi[2]]))
                .collect()
        } else {
            self.spheres.iter().map(|&s| RowBounds::Sphere(s)).collect()
        }
    }

    /// The oracle's mask, after checking that the scene is exact in f32.
    pub fn oracle(&self, case: &Case, view: &ViewParams) -> Vec<u32> {
        let bounds = self.bounds(case);
        let inputs = RowInputs {
            time_range: case.time.then_some(&self.time[..]),
            lod: case.lod.then_some(&self.lod[..]),
            selection: case.selection.then_some(&self.selection[..]),
        };
        assert_eq!(
            cpu::exactly_representable(view, &bounds, inputs),
            None,
            "the test scene must be exact in f32"
        );
        cpu::visibility(view, &bounds, inputs)
    }
}

/// One compiled workflow and the buffers to check it by.
pub struct Setup {
    pub compiled: CompiledGraph,
    pub view: wgpu::Buffer,
    pub selection: wgpu::Buffer,
    pub mask: wgpu::Buffer,
    pub output: wgpu::Buffer,
    pub draw: DrawCommandBuffer,
    pub overflow: wgpu::Buffer,
}

/// Uploads `rows` into one buffer laid out chunk by chunk with [`GAP`] poisoned rows before
/// each chunk; returns the buffer and the chunk views once imported.
pub fn chunked<T: bytemuck::Pod>(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    id: &str,
    rows: &[T],
    poison: T,
    chunks: &[u64],
    format: VectorFormat,
) -> (wgpu::Buffer, VectorView) {
    let mut laid = Vec::new();
    let mut at = 0usize;
    let mut offsets = Vec::new();
    for &len in chunks {
        laid.extend(std::iter::repeat_n(poison, GAP as usize));
        offsets.push(laid.len() as u64);
        laid.extend_from_slice(&rows[at..at + len as usize]);
        at += len as usize;
    }
    let buffer = upload(ctx, &laid, U::empty());
    let h = import(g, id, &buffer);
    let views = chunks
        .iter()
        .zip(&offsets)
        .map(|(&len, &off)| crate::common::view(g, h, format, off, len))
        .collect();
    (buffer, g.create_vector_view(views).unwrap())
}

pub fn setup(ctx: &GpuContext, case: &Case, inputs: &Inputs, view: &ViewParams) -> Setup {
    let mut g = CommandGraph::new("visibility-test", &ctx.device);
    let chunks = &case.chunks;
    let total: u64 = chunks.iter().sum();
    let f4 = VectorFormat::Float32x4;
    let f2 = VectorFormat::Float32x2;
    let u1 = VectorFormat::Uint32;
    let view_buf = upload(ctx, &[*view], U::UNIFORM);
    let view_h = import(&mut g, "view", &view_buf);
    let (_b, bounds) = chunked(
        ctx,
        &mut g,
        "spheres",
        &inputs.spheres,
        [f32::NAN; 4],
        chunks,
        f4,
    );
    let bounds = if case.boxes {
        let (_m, max) = chunked(
            ctx,
            &mut g,
            "box-max",
            &inputs.box_max,
            [f32::NAN; 4],
            chunks,
            f4,
        );
        Bounds::Boxes { min: bounds, max }
    } else {
        Bounds::Spheres(bounds)
    };
    let time = case
        .time
        .then(|| chunked(ctx, &mut g, "time", &inputs.time, [f32::NAN; 2], chunks, f2).1);
    let lod = case
        .lod
        .then(|| chunked(ctx, &mut g, "lod", &inputs.lod, [f32::NAN; 2], chunks, f2).1);
    let (selection_buf, selection) = chunked(
        ctx,
        &mut g,
        "selection",
        &inputs.selection,
        POISON,
        chunks,
        u1,
    );
    let ids = case
        .given_ids
        .then(|| chunked(ctx, &mut g, "ids", &inputs.ids, POISON, chunks, u1).1);
    let (mask_buf, mask) = chunked(
        ctx,
        &mut g,
        "mask",
        &vec![POISON; total as usize],
        POISON,
        chunks,
        u1,
    );
    let capacity = case.capacity.unwrap_or(total);
    let output_buf = upload(ctx, &vec![POISON; capacity as usize + 2], U::empty());
    let output_h = import(&mut g, "output", &output_buf);
    let output = g
        .create_vector_view(vec![crate::common::view(&g, output_h, u1, 1, capacity)])
        .unwrap();
    let draw = DrawCommandBuffer::create(&ctx.device, "draws", DrawLayout::DrawIndexed, 2);
    for r in 0..2 {
        draw.write_draw_indexed(
            &ctx.queue,
            r,
            DrawIndexedIndirectArgs {
                index_count: 36,
                instance_count: POISON,
                first_index: 0,
                base_vertex: 0,
                first_instance: 0,
            },
        )
        .unwrap();
    }
    let draw_h = draw.import(&mut g, "draws").unwrap();
    let count = draw.instance_count_view(&g, draw_h, 1).unwrap();
    let overflow_buf = upload(ctx, &[POISON], U::empty());
    let overflow_h = import(&mut g, "overflow", &overflow_buf);
    VisibilityWorkflow {
        id: "visible".into(),
        view: view_h,
        bounds,
        time_range: time,
        lod,
        selection: case.selection.then_some(selection),
        ids,
        mask: case.publish_mask.then_some(mask),
        output,
        count,
        overflow: Some(crate::common::view(&g, overflow_h, u1, 0, 1)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    Setup {
        compiled: g.compile().unwrap(),
        view: view_buf,
        selection: selection_buf,
        mask: mask_buf,
        output: output_buf,
        draw,
        overflow: overflow_buf,
    }
}

/// The GPU's published mask in row order (gaps checked untouched).
pub fn read_mask(ctx: &GpuContext, case: &Case, s: &Setup) -> Vec<u32> {
    let laid = read_buffer(ctx, &s.mask);
    let mut mask = Vec::new();
    let mut at = 0usize;
    for &len in &case.chunks {
        assert!(
            laid[at..at + GAP as usize].iter().all(|&w| w == POISON),
            "gap before a chunk written"
        );
        at += GAP as usize;
        mask.extend_from_slice(&laid[at..at + len as usize]);
        at += len as usize;
    }
    mask
}

/// Runs the compiled workflow once and checks everything against the oracle; returns the
/// GPU's mask (the oracle's when the case publishes none).
pub fn run_and_check(
    ctx: &GpuContext,
    case: &Case,
    inputs: &Inputs,
    view: &ViewParams,
    s: &mut Setup,
) -> Vec<u32> {
    encode_wait(ctx, &mut s.compiled);
    let want_mask = inputs.oracle(case, view);
    let mask = if case.publish_mask {
        let mask = read_mask(ctx, case, s);
        if let Some(row) = cpu::first_disagreement(&want_mask, &mask, &[]) {
            panic!(
                "mask row {row}: GPU {} vs oracle {} ({:?})",
                mask[row],
                want_mask[row],
                inputs.bounds(case)[row]
            );
        }
        mask
    } else {
        want_mask
    };
    let want = cpu::compact(&inputs.ids, &mask);
    let total = mask.len();
    let capacity = case.capacity.unwrap_or(total as u64) as usize;
    let record = read_buffer(ctx, s.draw.buffer());
    assert_eq!(
        &record[5..10],
        &[36, want.len() as u32, 0, 0, 0],
        "record 1"
    );
    assert_eq!(record[1], POISON, "record 0 untouched");
    let out = read_buffer(ctx, &s.output);
    let written = want.len().min(capacity);
    assert_eq!(out[0], POISON, "guard before the output");
    assert_eq!(&out[1..1 + written], &want[..written]);
    assert!(
        out[1 + written..capacity + 2].iter().all(|&w| w == POISON),
        "rows past the count"
    );
    let overflow = read_buffer(ctx, &s.overflow)[0];
    assert_eq!(overflow, u32::from(want.len() > capacity));
    mask
}

pub fn check(case: Case) {
    let ctx = ctx();
    let inputs = Inputs::random(&case);
    let view = view_from([0.0, 0.0, 30.0], [0.0, 0.0, 0.0]);
    let mut s = setup(&ctx, &case, &inputs, &view);
    run_and_check(&ctx, &case, &inputs, &view, &mut s);
}
