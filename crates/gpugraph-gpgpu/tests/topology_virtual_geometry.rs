//! VirtualGeometrySelection on the GPU vs the f64 oracle (`topology::cpu::select_clusters`):
//! random forests with convergent and invalid child ranges, frusta that cull, cameras inside
//! spheres, non-finite planes and errors, exact / short / roomy capacities (count, total,
//! overflow), and views moved between encodings without recompiling. Outputs poisoned, with
//! a guard row.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataView, DataViewDescriptor,
    GpuContext, VectorFormat as F,
};
use gpugraph_gpgpu::topology::{
    cpu, ClusterHierarchy, SelectionView, VirtualGeometrySelection, SELECTION_VIEW_WORDS,
};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

/// A cluster hierarchy in breadth-level order.
#[derive(Clone, Debug)]
struct Clusters {
    spheres: Vec<[f32; 4]>,
    errors: Vec<f32>,
    children: Vec<[u32; 2]>,
    ids: Vec<u32>,
    levels: Vec<u32>,
}

/// `roots` roots and `depth` levels; children sit inside their parent with half the error;
/// some ranges converge (overlap a sibling's), some point outside the next level.
fn clusters(r: &mut impl Rng, roots: usize, depth: usize) -> Clusters {
    let mut c = Clusters {
        spheres: Vec::new(),
        errors: Vec::new(),
        children: Vec::new(),
        ids: Vec::new(),
        levels: vec![0],
    };
    for _ in 0..roots {
        let center = [
            r.random_range(-50.0..50.0),
            r.random_range(-50.0..50.0),
            r.random_range(-50.0..50.0),
        ];
        c.spheres.push([center[0], center[1], center[2], 10.0]);
        c.errors.push(r.random_range(1.0..4.0));
    }
    c.levels.push(roots as u32);
    for l in 1..depth {
        let (begin, end) = (c.levels[l - 1] as usize, c.levels[l] as usize);
        for p in begin..end {
            let [x, y, z, rad] = c.spheres[p];
            let k = if l + 1 == depth {
                r.random_range(0..4)
            } else {
                r.random_range(0..5)
            };
            let first = c.spheres.len() as u32;
            for _ in 0..k {
                let off = rad * 0.5;
                c.spheres.push([
                    x + r.random_range(-off..off),
                    y + r.random_range(-off..off),
                    z + r.random_range(-off..off),
                    rad * 0.5,
                ]);
                c.errors.push(c.errors[p] * 0.5);
            }
            c.children.push([first, k]);
        }
        let next_end = c.spheres.len() as u32;
        // Convergent ranges (one node back) and invalid ranges (past the next level).
        for p in begin..end {
            match r.random_range(0..12) {
                0 if c.children[p][0] > end as u32 && c.children[p][1] > 0 => {
                    c.children[p][0] -= 1;
                }
                1 => c.children[p] = [next_end + 2, 3],
                2 => c.children[p] = [begin as u32, 1],
                _ => {}
            }
        }
        if next_end as usize == end {
            break;
        }
        c.levels.push(next_end);
    }
    let last = *c.levels.last().unwrap() as usize;
    c.children.resize(last, [0, 0]);
    let n = c.spheres.len();
    c.ids = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 3)
        .collect();
    c
}

/// A box frustum `[-b, b]³` (inward planes) seen from `camera`.
fn boxed(b: f32, camera: [f32; 3], pixel_scale: f32, max_error: f32) -> SelectionView {
    SelectionView {
        planes: [
            [1.0, 0.0, 0.0, b],
            [-1.0, 0.0, 0.0, b],
            [0.0, 1.0, 0.0, b],
            [0.0, -1.0, 0.0, b],
            [0.0, 0.0, 1.0, b],
            [0.0, 0.0, -1.0, b],
        ],
        camera,
        pixel_scale,
        max_error,
    }
}

struct Run {
    view: wgpu::Buffer,
    out: wgpu::Buffer,
    status: wgpu::Buffer,
    compiled: CompiledGraph,
    _keep: Vec<wgpu::Buffer>,
}

fn import(g: &mut CommandGraph, id: &str, b: &wgpu::Buffer) -> BufferHandle {
    g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
        .unwrap()
}

fn view_of(g: &CommandGraph, h: BufferHandle, f: F, row: u64, rows: u64) -> DataView {
    g.create_data_view(
        h,
        DataViewDescriptor::packed(f, rows).at_offset(row * f.byte_size() as u64),
    )
    .unwrap()
}

fn build(ctx: &GpuContext, c: &Clusters, v: &SelectionView, capacity: usize) -> Run {
    let n = c.spheres.len() as u64;
    let mut g = CommandGraph::new("vgs", &ctx.device);
    let words = |x: &[f32]| -> Vec<u32> { x.iter().map(|f| f.to_bits()).collect() };
    let sb = upload(ctx, &words(&c.spheres.concat()));
    let eb = upload(ctx, &words(&c.errors));
    let cb = upload(ctx, &c.children.concat());
    let ib = upload(ctx, &[&[POISON][..], &c.ids].concat());
    let vb = upload(ctx, &v.words());
    let out = upload(ctx, &vec![POISON; capacity + 1]);
    let status = upload(ctx, &[POISON; 4]);
    let hs = [
        import(&mut g, "spheres", &sb),
        import(&mut g, "errors", &eb),
        import(&mut g, "children", &cb),
        import(&mut g, "ids", &ib),
        import(&mut g, "view", &vb),
        import(&mut g, "out", &out),
        import(&mut g, "status", &status),
    ];
    VirtualGeometrySelection {
        id: "vgs".into(),
        hierarchy: ClusterHierarchy {
            spheres: view_of(&g, hs[0], F::Float32x4, 0, n),
            errors: view_of(&g, hs[1], F::Float32, 0, n),
            children: view_of(&g, hs[2], F::Uint32x2, 0, n),
            cluster_ids: view_of(&g, hs[3], F::Uint32, 1, n),
            level_offsets: c.levels.clone(),
        },
        view: view_of(&g, hs[4], F::Uint32, 0, SELECTION_VIEW_WORDS),
        output: view_of(&g, hs[5], F::Uint32, 0, capacity as u64),
        count: view_of(&g, hs[6], F::Uint32, 0, 1),
        total_count: Some(view_of(&g, hs[6], F::Uint32, 1, 1)),
        overflow: Some(view_of(&g, hs[6], F::Uint32, 2, 1)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    Run {
        view: vb,
        out,
        status,
        compiled: g.compile().unwrap(),
        _keep: vec![sb, eb, cb, ib],
    }
}

fn oracle(c: &Clusters, v: &SelectionView) -> cpu::Selection {
    cpu::select_clusters(&c.spheres, &c.errors, &c.children, &c.ids, &c.levels, v)
}

fn check(ctx: &GpuContext, run: &mut Run, want: &cpu::Selection, capacity: usize, label: &str) {
    ctx.queue.write_buffer(
        &run.out,
        0,
        bytemuck::cast_slice(&vec![POISON; capacity + 1]),
    );
    ctx.queue
        .write_buffer(&run.status, 0, bytemuck::cast_slice(&[POISON; 4]));
    encode_wait(ctx, &mut run.compiled, &[]);
    let total = want.ids.len();
    let count = total.min(capacity);
    let status = read_buffer(ctx, &run.status);
    assert_eq!(
        status,
        [
            count as u32,
            total as u32,
            u32::from(total > capacity),
            POISON
        ],
        "{label}: count, total, overflow"
    );
    let out = read_buffer(ctx, &run.out);
    assert_eq!(out[..count], want.ids[..count], "{label}: selected ids");
    assert_eq!(out[capacity], POISON, "{label}: guard");
}

/// A hierarchy and view whose decisions are all clear of float32 rounding.
fn unambiguous(r: &mut impl Rng, roots: usize, depth: usize) -> (Clusters, SelectionView) {
    loop {
        let c = clusters(r, roots, depth);
        let cam = [
            r.random_range(-80.0..80.0),
            r.random_range(-80.0..80.0),
            r.random_range(-80.0..80.0),
        ];
        let v = boxed(
            r.random_range(20.0..60.0),
            cam,
            r.random_range(50.0..400.0),
            r.random_range(0.5..4.0),
        );
        if !oracle(&c, &v).ambiguous {
            return (c, v);
        }
    }
}

#[test]
fn random_hierarchies_match_the_oracle_at_every_capacity() {
    let ctx = ctx();
    let mut r = rng(164);
    for (roots, depth) in [(1usize, 1usize), (1, 4), (3, 3), (40, 4), (300, 3)] {
        let (c, v) = unambiguous(&mut r, roots, depth);
        let want = oracle(&c, &v);
        let total = want.ids.len();
        for capacity in [total, total.saturating_sub(1), total / 2, total + 3, 0] {
            let mut run = build(&ctx, &c, &v, capacity);
            check(
                &ctx,
                &mut run,
                &want,
                capacity,
                &format!("roots={roots} depth={depth} cap={capacity}"),
            );
        }
    }
}

#[test]
fn views_move_between_encodings_without_recompiling() {
    let ctx = ctx();
    let mut r = rng(165);
    let (c, v0) = unambiguous(&mut r, 60, 4);
    let capacity = c.spheres.len();
    let mut run = build(&ctx, &c, &v0, capacity);
    let mut totals = Vec::new();
    for step in 0..8 {
        let v = loop {
            let cam = [
                r.random_range(-90.0..90.0),
                r.random_range(-90.0..90.0),
                r.random_range(-90.0..90.0),
            ];
            let v = boxed(
                r.random_range(5.0..70.0),
                cam,
                r.random_range(10.0..800.0),
                r.random_range(0.2..5.0),
            );
            if !oracle(&c, &v).ambiguous {
                break v;
            }
        };
        ctx.queue
            .write_buffer(&run.view, 0, bytemuck::cast_slice(&v.words()));
        let want = oracle(&c, &v);
        totals.push(want.ids.len());
        check(&ctx, &mut run, &want, capacity, &format!("step {step}"));
    }
    assert!(
        totals.windows(2).any(|w| w[0] != w[1]),
        "views differ: {totals:?}"
    );
}

#[test]
fn non_finite_inputs_refine_and_never_cull() {
    let ctx = ctx();
    let mut r = rng(166);
    let c = clusters(&mut r, 20, 3);
    let capacity = c.spheres.len();
    let mut nan_planes = boxed(1.0, [500.0, 0.0, 0.0], 100.0, 1.0);
    nan_planes.planes[0][0] = f32::NAN;
    nan_planes.planes[1][3] = f32::INFINITY;
    for (v, label) in [
        (
            boxed(1e9, [0.0, 0.0, 0.0], 100.0, 1.0),
            "camera inside the roots",
        ),
        (boxed(1e9, [0.0, 0.0, 0.0], f32::NAN, 1.0), "NaN scale"),
        (
            boxed(1e9, [1e4, 1e4, 1e4], 1.0, f32::INFINITY),
            "infinite bound",
        ),
        (nan_planes, "non-finite planes"),
    ] {
        let want = oracle(&c, &v);
        let mut run = build(&ctx, &c, &v, capacity);
        check(&ctx, &mut run, &want, capacity, label);
    }
    // Everything refines to the finest valid level when the camera is inside every root.
    let v = boxed(1e9, [0.0, 0.0, 0.0], f32::NAN, 1.0);
    let want = oracle(&c, &v);
    for (i, [first, count]) in c.children.iter().enumerate() {
        if want.selected[i] == 1 && *count > 0 {
            let next = c.levels.iter().position(|&e| e > i as u32).unwrap();
            let (nb, ne) = (
                c.levels[next],
                c.levels.get(next + 1).copied().unwrap_or(c.levels[next]),
            );
            assert!(
                *first < nb || first + count > ne,
                "node {i} kept despite valid children"
            );
        }
    }
}

#[test]
fn selected_parents_and_their_children_never_appear_together() {
    // Node 0 stays coarse (zero error), node 1 refines; both ranges hold node 3.
    let c = Clusters {
        spheres: vec![
            [0.0, 0.0, 0.0, 1.0],
            [3.0, 0.0, 0.0, 1.0],
            [3.0, 0.0, 0.0, 0.5],
            [1.5, 0.0, 0.0, 0.5],
        ],
        errors: vec![0.0, 100.0, 1.0, 1.0],
        children: vec![[3, 1], [2, 2], [0, 0], [0, 0]],
        ids: vec![10, 11, 12, 13],
        levels: vec![0, 2, 4],
    };
    let v = boxed(1e6, [0.0, 0.0, 50.0], 100.0, 1.0);
    let want = oracle(&c, &v);
    assert_eq!(
        want.ids,
        vec![10, 12],
        "node 3 is blocked by its selected parent 0"
    );
    let ctx = ctx();
    let mut run = build(&ctx, &c, &v, 4);
    check(&ctx, &mut run, &want, 4, "convergent");
}

#[test]
fn bad_hierarchies_are_named_errors() {
    let ctx = ctx();
    let b = upload(&ctx, &[0u32; 256]);
    let o = upload(&ctx, &[0u32; 64]);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let h = import(&mut g, "in", &b);
    let oh = import(&mut g, "out", &o);
    let make = |levels: Vec<u32>, errors_rows: u64| VirtualGeometrySelection {
        id: "bad".into(),
        hierarchy: ClusterHierarchy {
            spheres: view_of(&g, h, F::Float32x4, 0, 4),
            errors: view_of(&g, h, F::Float32, 16, errors_rows),
            children: view_of(&g, h, F::Uint32x2, 10, 4),
            cluster_ids: view_of(&g, h, F::Uint32, 32, 4),
            level_offsets: levels,
        },
        view: view_of(&g, h, F::Uint32, 64, SELECTION_VIEW_WORDS),
        output: view_of(&g, oh, F::Uint32, 0, 4),
        count: view_of(&g, oh, F::Uint32, 8, 1),
        total_count: None,
        overflow: None,
    };
    let cases = [
        make(vec![0, 2, 2, 4], 4),
        make(vec![0, 3], 4),
        make(vec![0, 4], 3),
    ];
    let errors: Vec<AlgorithmError> = cases
        .into_iter()
        .map(|s| s.add_to_graph(&mut g).unwrap_err())
        .collect();
    assert!(
        matches!(&errors[0], AlgorithmError::OutOfRange { what, .. } if &**what == "level_offsets"),
        "{}",
        errors[0]
    );
    assert!(
        matches!(errors[1], AlgorithmError::OutOfRange { .. }),
        "{}",
        errors[1]
    );
    assert!(
        matches!(
            errors[2],
            AlgorithmError::LengthMismatch {
                actual: 3,
                expected: 4,
                ..
            }
        ),
        "{}",
        errors[2]
    );
}
