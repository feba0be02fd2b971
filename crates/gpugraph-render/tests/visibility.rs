//! VisibilityWorkflow on a real device against the exact f32 oracle (`visibility::cpu`):
//! masks, compacted IDs and the count written into a drawIndexed record must equal the
//! oracle's bit for bit — over single and multi-chunk inputs, every optional input, spheres
//! exactly tangent to, one ulp outside of and straddling the planes, zero radii on the planes,
//! boxes touching them, empty / all-culled / all-visible / overflowing cases, and view and
//! selection changes on one compiled graph. Every scene is built on dyadic grids on which all
//! of the predicate's products and sums are exact in f32 (asserted through
//! `cpu::exactly_representable`), so any IEEE device — fused multiply-adds or not — must agree
//! exactly; the boundary test also checks that a wrong comparison, an epsilon or a flipped
//! plane would disagree with the GPU.

mod common;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CommandGraph, CompiledGraph, GpuContext, VectorFormat, VectorView};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::visibility::cpu::{self, RowBounds, RowInputs};
use gpugraph_render::{
    Bounds, DrawCommandBuffer, DrawLayout, RenderError, ViewParams, VisibilityWorkflow,
};
use rand::Rng;
use wgpu::util::DrawIndexedIndirectArgs;

/// Rows left between chunks (poisoned) so that chunk offsets are unaligned and a write past a
/// chunk shows.
const GAP: u64 = 3;
/// Grid of positions, radii and LOD edges (1/16); planes use 2^-8 (normals) and 2^-12
/// (offsets): products and sums then stay far inside f32's 24 bits.
const GRID: f32 = 16.0;

fn snap(x: f32, grid: f32) -> f32 {
    (x * grid).round() / grid
}

/// A perspective view from `eye` (on the grid) at `target`, its planes snapped to dyadic
/// values (no longer exactly unit normals: the contract takes planes as given).
fn view_from(eye: [f32; 3], target: [f32; 3]) -> ViewParams {
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
fn axis_box_view() -> ViewParams {
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
struct Case {
    chunks: Vec<u64>,
    boxes: bool,
    time: bool,
    lod: bool,
    selection: bool,
    given_ids: bool,
    publish_mask: bool,
    capacity: Option<u64>,
    extent: f32,
    seed: u64,
}

/// Per-row inputs of a case, in global row order.
struct Inputs {
    spheres: Vec<[f32; 4]>,
    box_max: Vec<[f32; 4]>,
    time: Vec<[f32; 2]>,
    lod: Vec<[f32; 2]>,
    selection: Vec<u32>,
    ids: Vec<u32>,
}

impl Inputs {
    fn random(case: &Case) -> Self {
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

    fn bounds(&self, case: &Case) -> Vec<RowBounds> {
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
    fn oracle(&self, case: &Case, view: &ViewParams) -> Vec<u32> {
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
struct Setup {
    compiled: CompiledGraph,
    view: wgpu::Buffer,
    selection: wgpu::Buffer,
    mask: wgpu::Buffer,
    output: wgpu::Buffer,
    draw: DrawCommandBuffer,
    overflow: wgpu::Buffer,
}

/// Uploads `rows` into one buffer laid out chunk by chunk with [`GAP`] poisoned rows before
/// each chunk; returns the buffer and the chunk views once imported.
fn chunked<T: bytemuck::Pod>(
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
        .map(|(&len, &off)| common::view(g, h, format, off, len))
        .collect();
    (buffer, g.create_vector_view(views).unwrap())
}

fn setup(ctx: &GpuContext, case: &Case, inputs: &Inputs, view: &ViewParams) -> Setup {
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
        .create_vector_view(vec![common::view(&g, output_h, u1, 1, capacity)])
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
        overflow: Some(common::view(&g, overflow_h, u1, 0, 1)),
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
fn read_mask(ctx: &GpuContext, case: &Case, s: &Setup) -> Vec<u32> {
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
fn run_and_check(
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

fn check(case: Case) {
    let ctx = ctx();
    let inputs = Inputs::random(&case);
    let view = view_from([0.0, 0.0, 30.0], [0.0, 0.0, 0.0]);
    let mut s = setup(&ctx, &case, &inputs, &view);
    run_and_check(&ctx, &case, &inputs, &view, &mut s);
}

#[test]
fn spheres_in_one_chunk_match_the_oracle() {
    check(Case {
        chunks: vec![20_000],
        publish_mask: true,
        extent: 40.0,
        seed: 1,
        ..Default::default()
    });
}

#[test]
fn boxes_over_uneven_chunks_with_every_input_match_the_oracle() {
    check(Case {
        chunks: vec![0, 1, 4095, 4097, 0, 333],
        boxes: true,
        time: true,
        lod: true,
        selection: true,
        given_ids: true,
        publish_mask: true,
        extent: 30.0,
        seed: 2,
        ..Default::default()
    });
}

#[test]
fn spheres_over_chunks_with_given_ids_and_no_published_mask() {
    check(Case {
        chunks: vec![257, 0, 4096, 1],
        selection: true,
        given_ids: true,
        extent: 30.0,
        seed: 3,
        ..Default::default()
    });
}

#[test]
fn empty_inputs_write_count_zero() {
    for chunks in [vec![], vec![0], vec![0, 0, 0]] {
        check(Case {
            chunks,
            publish_mask: true,
            extent: 1.0,
            seed: 4,
            ..Default::default()
        });
    }
}

#[test]
fn all_culled_and_all_visible() {
    let ctx = ctx();
    let view = view_from([0.0, 0.0, 30.0], [0.0, 0.0, 0.0]);
    for (visible, seed) in [(false, 5), (true, 6)] {
        let case = Case {
            chunks: vec![1000, 3000],
            publish_mask: true,
            extent: 5.0,
            seed,
            ..Default::default()
        };
        let mut inputs = Inputs::random(&case);
        for s in &mut inputs.spheres {
            // Behind the eye, or small and near the origin.
            if !visible {
                s[2] += 60.0;
            }
            s[3] = s[3].min(0.5);
        }
        let mask = inputs.oracle(&case, &view);
        assert!(mask.iter().all(|&m| m == u32::from(visible)));
        let mut s = setup(&ctx, &case, &inputs, &view);
        run_and_check(&ctx, &case, &inputs, &view, &mut s);
    }
}

/// Rows of the boundary test: each sphere is outside exactly one plane by its center, and is
/// exactly tangent to it, one ulp of radius short of it, one ulp past it, straddling it, or
/// 1/16 short, while the other five planes keep it whatever the kind (so that plane decides).
fn boundary_spheres(
    view: &ViewParams,
    eye: [f32; 3],
    target: [f32; 3],
    rows: usize,
    seed: u64,
) -> Vec<[f32; 4]> {
    let mut rng = rng(seed);
    let norm = |v: [f32; 3]| {
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|x| x / l)
    };
    let fwd = norm([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
    let right = norm([-fwd[2], 0.0, fwd[0]]);
    let up = [
        right[1] * fwd[2] - right[2] * fwd[1],
        right[2] * fwd[0] - right[0] * fwd[2],
        right[0] * fwd[1] - right[1] * fwd[0],
    ];
    let mut out = Vec::with_capacity(rows);
    while out.len() < rows {
        // Around the frustum at every depth, behind the eye included.
        let u = rng.random_range(-3.0..48.0f32);
        let w = u.abs().max(1.0) * 0.7;
        let (a, b) = (
            rng.random_range(-1.5..1.5f32) * w,
            rng.random_range(-1.0..1.0f32) * w,
        );
        let c: [f32; 3] =
            std::array::from_fn(|k| snap(eye[k] + fwd[k] * u + right[k] * a + up[k] * b, GRID));
        let d: Vec<f32> = view
            .planes
            .iter()
            .map(|p| cpu::plane_distance(p, c))
            .collect();
        let outside: Vec<usize> = (0..6).filter(|&k| d[k] < 0.0).collect();
        let [p] = outside[..] else { continue };
        if !(-3.0..=-0.25).contains(&d[p]) {
            continue;
        }
        if (0..6).any(|k| k != p && d[k] < d[p] + 0.125) {
            continue;
        }
        let r = match out.len() % 5 {
            0 => -d[p],
            1 => (-d[p]).next_down(),
            2 => (-d[p]).next_up(),
            3 => -d[p] + 1.0,
            _ => -d[p] - 1.0 / GRID,
        };
        out.push([c[0], c[1], c[2], r]);
    }
    out
}

/// A sphere oracle with the comparison replaced: `keep(distance, radius)` per plane.
fn mutant(view: &ViewParams, spheres: &[[f32; 4]], keep: impl Fn(f32, f32) -> bool) -> Vec<u32> {
    spheres
        .iter()
        .map(|s| {
            let c = [s[0], s[1], s[2]];
            u32::from(
                s[3] >= 0.0
                    && view
                        .planes
                        .iter()
                        .all(|p| keep(cpu::plane_distance(p, c), s[3])),
            )
        })
        .collect()
}

#[test]
fn tangent_ulp_and_straddling_spheres_match_the_oracle_exactly() {
    let ctx = ctx();
    let (eye, target) = ([0.0, 0.0, 30.0], [2.0, 1.0, 0.0]);
    let view = view_from(eye, target);
    let case = Case {
        chunks: vec![0, 777, 1, 0, 4101],
        publish_mask: true,
        extent: 1.0,
        seed: 9,
        ..Default::default()
    };
    let mut inputs = Inputs::random(&case);
    inputs.spheres = boundary_spheres(&view, eye, target, 4879, 10);
    let mut s = setup(&ctx, &case, &inputs, &view);
    let gpu = run_and_check(&ctx, &case, &inputs, &view, &mut s);
    let kept = gpu.iter().filter(|&&m| m == 1).count();
    assert!(
        kept > 1000 && kept < 4000,
        "both sides of the planes: {kept}"
    );
    // The GPU's answer rules out each near miss of the contract.
    type Keep<'a> = &'a dyn Fn(f32, f32) -> bool;
    let mutants: [(&str, Keep); 5] = [
        ("strict comparison", &|d, r| d > -r),
        ("epsilon outward", &|d, r| d + 1e-6 >= -r),
        ("epsilon inward", &|d, r| d >= -r + 1e-6),
        ("flipped planes", &|d, r| -d >= -r),
        ("radius ignored", &|d, _| d >= 0.0),
    ];
    for (what, keep) in mutants {
        assert_ne!(mutant(&view, &inputs.spheres, keep), gpu, "{what}");
    }
}

#[test]
fn zero_radii_and_boxes_on_the_planes_match_the_oracle_exactly() {
    let ctx = ctx();
    let view = axis_box_view();
    let mut rng = rng(11);
    // Points on faces, edges and corners of [-4, 4]³, on it or 1/16 outside; radius 0 or -0.
    let coordinate = |rng: &mut rand::rngs::StdRng| match rng.random_range(0..4) {
        0 => 4.0,
        1 => -4.0,
        2 => 4.0 + 1.0 / GRID,
        _ => snap(rng.random_range(-4.0..4.0f32), GRID),
    };
    let points: Vec<[f32; 4]> = (0..3000)
        .map(|_| {
            let r = if rng.random_bool(0.5) { 0.0 } else { -0.0 };
            [
                coordinate(&mut rng),
                coordinate(&mut rng),
                coordinate(&mut rng),
                r,
            ]
        })
        .collect();
    let mut spheres_case = Case {
        chunks: vec![1000, 0, 2000],
        publish_mask: true,
        lod: true,
        extent: 1.0,
        seed: 12,
        ..Default::default()
    };
    let mut inputs = Inputs::random(&spheres_case);
    inputs.spheres = points.clone();
    inputs.lod.fill([0.0, 100.0]);
    // Rows at distance 5 from the eye with LOD edges exactly there (or 1/16 off): the near
    // edge keeps, the far edge culls.
    let bands = [
        [5.0, 6.0],
        [1.0, 5.0],
        [5.0625, 9.0],
        [0.0, 5.0625],
        [-1.0, 5.0],
    ];
    for (k, band) in bands.iter().cycle().take(60).enumerate() {
        let c = [[3.0, 4.0, 0.0], [0.0, -3.0, 4.0], [-4.0, 0.0, 3.0]][k % 3];
        inputs.spheres[k] = [c[0], c[1], c[2], 0.0];
        inputs.lod[k] = *band;
    }
    let mut s = setup(&ctx, &spheres_case, &inputs, &view);
    let gpu = run_and_check(&ctx, &spheres_case, &inputs, &view, &mut s);
    let kept = gpu.iter().filter(|&&m| m == 1).count();
    assert!(kept > 100 && kept < 2900, "{kept} of 3000 kept");
    spheres_case.lod = false;
    // Boxes [p - 1, p] and [p, p + 1]: touching a face where p is on it, 1/16 apart (or
    // straddling) where p is outside.
    let boxes_case = Case {
        boxes: true,
        ..spheres_case
    };
    let shifted = |p: &[f32; 4], by: f32| [p[0] + by, p[1] + by, p[2] + by, 0.0];
    let (lo, hi): (Vec<[f32; 4]>, Vec<[f32; 4]>) = points
        .iter()
        .enumerate()
        .map(|(k, p)| {
            if k % 2 == 0 {
                (shifted(p, -1.0), shifted(p, 0.0))
            } else {
                (shifted(p, 0.0), shifted(p, 1.0))
            }
        })
        .unzip();
    inputs.spheres = lo;
    inputs.box_max = hi;
    let mut s = setup(&ctx, &boxes_case, &inputs, &view);
    run_and_check(&ctx, &boxes_case, &inputs, &view, &mut s);
}

#[test]
fn overflow_writes_the_first_ids_the_true_count_and_the_flag() {
    check(Case {
        chunks: vec![5000, 5000],
        publish_mask: true,
        capacity: Some(10),
        extent: 10.0,
        seed: 7,
        ..Default::default()
    });
}

#[test]
fn view_and_selection_changes_need_no_recompile() {
    let ctx = ctx();
    let case = Case {
        chunks: vec![3000, 2000],
        selection: true,
        lod: true,
        time: true,
        publish_mask: true,
        extent: 30.0,
        seed: 8,
        ..Default::default()
    };
    let mut inputs = Inputs::random(&case);
    let first = view_from([0.0, 0.0, 30.0], [0.0, 0.0, 0.0]);
    let mut s = setup(&ctx, &case, &inputs, &first);
    run_and_check(&ctx, &case, &inputs, &first, &mut s);
    let mut counts = vec![read_buffer(&ctx, s.draw.buffer())[6]];
    let views = [
        view_from([25.0, 5.0, 0.0], [0.0, 0.0, 0.0]).with_time(0.0, 5.0),
        view_from([0.0, 0.0, -30.0], [0.0, 0.0, 0.0]).with_time(25.0, 40.0),
    ];
    for (k, view) in views.iter().enumerate() {
        ctx.queue.write_buffer(&s.view, 0, bytemuck::bytes_of(view));
        // A new selection: the same rows flipped, through the same imported buffer (laid out
        // with the gaps of `chunked`).
        for v in &mut inputs.selection {
            *v = u32::from(*v == 0) * (k as u32 + 1);
        }
        let mut laid = Vec::new();
        let mut at = 0;
        for &len in &case.chunks {
            laid.extend([POISON; GAP as usize]);
            laid.extend_from_slice(&inputs.selection[at..at + len as usize]);
            at += len as usize;
        }
        ctx.queue
            .write_buffer(&s.selection, 0, bytemuck::cast_slice(&laid));
        // Rows past a smaller count keep the previous run's IDs: poison them again.
        let poison = vec![POISON; (s.output.size() / 4) as usize];
        ctx.queue
            .write_buffer(&s.output, 0, bytemuck::cast_slice(&poison));
        run_and_check(&ctx, &case, &inputs, view, &mut s);
        counts.push(read_buffer(&ctx, s.draw.buffer())[6]);
    }
    counts.dedup();
    assert_eq!(
        counts.len(),
        3,
        "each view should change the count: {counts:?}"
    );
}

#[test]
fn bad_declarations_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let small_view = upload(&ctx, &[0u32; 4], U::UNIFORM);
    let view_buf = upload(&ctx, &[view_from([0.0, 0.0, 30.0], [0.0; 3])], U::UNIFORM);
    let data = upload(&ctx, &[0u32; 64], U::empty());
    let out = upload(&ctx, &[0u32; 64], U::empty());
    let small_h = import(&mut g, "small-view", &small_view);
    let view_h = import(&mut g, "view", &view_buf);
    let data_h = import(&mut g, "data", &data);
    let out_h = import(&mut g, "out", &out);
    let f4 = |g: &CommandGraph, n| {
        g.create_vector_view(vec![common::view(g, data_h, VectorFormat::Float32x4, 0, n)])
            .unwrap()
    };
    let u1 = |g: &CommandGraph, h, n| {
        g.create_vector_view(vec![common::view(g, h, VectorFormat::Uint32, 0, n)])
            .unwrap()
    };
    let base = |g: &CommandGraph| VisibilityWorkflow {
        id: "w".into(),
        view: view_h,
        bounds: Bounds::Spheres(f4(g, 8)),
        time_range: None,
        lod: None,
        selection: None,
        ids: None,
        mask: None,
        output: u1(g, out_h, 8),
        count: common::view(g, out_h, VectorFormat::Uint32, 10, 1),
        overflow: None,
    };
    let mut w = base(&g);
    w.bounds = Bounds::Spheres(u1(&g, data_h, 8));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::UnsupportedView { what: "bounds", .. }),
        "{e}"
    );
    let mut w = base(&g);
    w.selection = Some(u1(&g, data_h, 7));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(
            &e,
            RenderError::ChunkMismatch {
                what: "selection",
                ..
            }
        ),
        "{e}"
    );
    let mut w = base(&g);
    w.mask = Some(u1(&g, data_h, 8));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::WritesAlone { what: "mask", buffer, .. } if buffer == "data"),
        "{e}"
    );
    let mut w = base(&g);
    w.view = small_h;
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::UnsupportedView { what: "view", .. }),
        "{e}"
    );
    // The output may not share a buffer with the IDs the compaction reads.
    let mut w = base(&g);
    w.ids = Some(u1(&g, out_h, 8));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::WritesAlone { what: "output", .. }),
        "{e}"
    );
    let mut w = base(&g);
    w.count = common::view(&g, data_h, VectorFormat::Uint32, 0, 2);
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::UnsupportedView { what: "count", .. }),
        "{e}"
    );
    // Nothing half-added: a good declaration still compiles.
    base(&g).add_to_graph(&mut g).unwrap();
    g.compile().unwrap();
}
