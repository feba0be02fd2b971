//! Declared dispatch nodes, undeclared-handle errors, encode errors and the device cache, on a
//! real device (lavapipe in CI). Results are compared with CPU arithmetic; outputs are
//! poisoned first so an unwritten row fails. No adapter is a failure, never a skip.

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    copy_fn, try_copy_fn, Access, Binding, BufferDescriptor, CommandGraph, CopyNode, DataView,
    DispatchNode, EncodeOptions, GpuContext, GraphError, Grid, ResourceUse, ShaderSource,
    VectorFormat,
};

use gpugraph_testing::{ctx, POISON};

fn upload(ctx: &GpuContext, data: &[u32], usage: U) -> wgpu::Buffer {
    gpugraph_testing::upload_padded(ctx, data, usage | U::COPY_SRC, 16)
}

fn read(ctx: &GpuContext, buffer: &wgpu::Buffer, words: u64) -> Vec<u32> {
    gpugraph_testing::read(ctx, buffer, 0, words as usize)
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AffineParams {
    rows: u32,
    scale: u32,
    add: u32,
    _pad: u32,
}

/// `dst[i] = src[i] * scale + add` for `i < rows`, over a 2-D grid of 64-row workgroups.
const AFFINE_WGSL: &str = "
struct Params { rows: u32, scale: u32, add: u32, pad: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 64u + lid;
    if i < params.rows { dst[i] = src[i] * params.scale + params.add; }
}";

fn affine_graph(
    ctx: &GpuContext,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
    rows: u64,
) -> (CommandGraph, DataView) {
    affine_graph_with(ctx, src, dst, rows, true)
}

fn affine_graph_with(
    ctx: &GpuContext,
    src: &wgpu::Buffer,
    dst: &wgpu::Buffer,
    rows: u64,
    share_bind_group: bool,
) -> (CommandGraph, DataView) {
    let mut g = CommandGraph::new("affine", &ctx.device);
    let s = g
        .import_buffer(BufferDescriptor::new("src", src.size(), src.usage()), src)
        .unwrap();
    let d = g
        .import_buffer(BufferDescriptor::new("dst", dst.size(), dst.usage()), dst)
        .unwrap();
    let sv = g.create_packed_view(s, VectorFormat::Uint32, rows).unwrap();
    let dv = g.create_packed_view(d, VectorFormat::Uint32, rows).unwrap();
    let params = AffineParams {
        rows: rows as u32,
        scale: 3,
        add: 7,
        _pad: 0,
    };
    let mut node = DispatchNode::new(
        "affine",
        ShaderSource::new("affine", AFFINE_WGSL),
        "main",
        vec![
            Binding::params(0, &params),
            Binding::read(1, sv),
            Binding::read_write(2, dv),
        ],
        Grid::Rows {
            rows,
            rows_per_workgroup: 64,
        },
    );
    if !share_bind_group {
        node = node.private_bind_group();
    }
    g.add_dispatch_node(node).unwrap();
    (g, dv)
}

fn run(ctx: &GpuContext, g: CommandGraph) -> Result<(), GraphError> {
    let mut compiled = g.compile()?;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    compiled.encode(&mut enc, &EncodeOptions::default())?;
    ctx.queue.submit([enc.finish()]);
    Ok(())
}

#[test]
fn rows_grid_splits_past_the_dimension_limit_and_matches_the_cpu() {
    let base = ctx();
    // A 3-workgroup limit per dimension makes 193+ rows take the 2-D path.
    let small = base
        .with_adjusted_limits(|l| l.max_compute_workgroups_per_dimension = 3)
        .unwrap();
    for ctx in [&base, &small] {
        for rows in [0u64, 1, 63, 64, 65, 191, 192, 193, 513, 576] {
            let input: Vec<u32> = (0..rows as u32)
                .map(|i| i.wrapping_mul(2_654_435_761))
                .collect();
            let src = upload(ctx, &input, U::STORAGE);
            // One guard row past the view: it must keep its poison.
            let dst = upload(ctx, &vec![POISON; rows as usize + 1], U::STORAGE);
            let (g, _) = affine_graph(ctx, &src, &dst, rows);
            run(ctx, g).unwrap();
            let out = read(ctx, &dst, rows + 1);
            let want: Vec<u32> = input
                .iter()
                .map(|x| x.wrapping_mul(3).wrapping_add(7))
                .chain([POISON])
                .collect();
            assert_eq!(out, want, "rows {rows}");
        }
    }
    // 577 rows need 10 workgroups: more than 3 × 3 is a named error, not a truncated grid.
    let src = upload(&small, &[0; 577], U::STORAGE);
    let mut g = CommandGraph::new("affine", &small.device);
    let s = g
        .import_buffer(BufferDescriptor::new("src", src.size(), src.usage()), &src)
        .unwrap();
    let v = g.create_packed_view(s, VectorFormat::Uint32, 577).unwrap();
    let err = g
        .add_dispatch_node(DispatchNode::new(
            "too-big",
            ShaderSource::new("affine", AFFINE_WGSL),
            "main",
            vec![Binding::read(1, v)],
            Grid::Rows {
                rows: 577,
                rows_per_workgroup: 64,
            },
        ))
        .unwrap_err();
    assert!(
        err.to_string().contains("577 rows need 10 workgroups"),
        "{err}"
    );
}

#[test]
fn uses_are_derived_from_bindings() {
    let ctx = ctx();
    let src = upload(&ctx, &[1, 2, 3, 4], U::STORAGE);
    let dst = upload(&ctx, &[0; 4], U::STORAGE);
    let (mut g, dv) = affine_graph(&ctx, &src, &dst, 4);
    // A second dispatch reads what the first wrote: the graph must order it after.
    let out = g
        .create_buffer(BufferDescriptor::new("out", 16, U::STORAGE))
        .unwrap();
    let ov = g.create_packed_view(out, VectorFormat::Uint32, 4).unwrap();
    let params = AffineParams {
        rows: 4,
        scale: 1,
        add: 0,
        _pad: 0,
    };
    g.add_dispatch_node(DispatchNode::new(
        "copy",
        ShaderSource::new("affine", AFFINE_WGSL),
        "main",
        vec![
            Binding::params(0, &params),
            Binding::read(1, dv),
            Binding::read_write(2, ov),
        ],
        Grid::Workgroups([1, 1, 1]),
    ))
    .unwrap();
    let compiled = g.compile().unwrap();
    assert!(
        compiled
            .edges()
            .iter()
            .any(|e| e.from == "affine" && e.to == "copy"),
        "edges {:?}",
        compiled.edges()
    );
}

#[test]
fn indirect_grid_dispatches_what_the_gpu_wrote() {
    let ctx = ctx();
    let rows = 300u32;
    let input: Vec<u32> = (0..rows).collect();
    let src = upload(&ctx, &input, U::STORAGE);
    let dst = upload(&ctx, &vec![POISON; rows as usize], U::STORAGE);
    let args = upload(&ctx, &[0, 0, 0, rows], U::STORAGE | U::INDIRECT);
    let mut g = CommandGraph::new("indirect", &ctx.device);
    let imp = |g: &mut CommandGraph, id: &str, b: &wgpu::Buffer| {
        g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
            .unwrap()
    };
    let s = imp(&mut g, "src", &src);
    let d = imp(&mut g, "dst", &dst);
    let a = imp(&mut g, "args", &args);
    let arg_view = g.create_packed_view(a, VectorFormat::Uint32, 3).unwrap();
    // The GPU derives the workgroup count from the row count stored in word 3.
    g.add_dispatch_node(DispatchNode::new(
        "args",
        ShaderSource::new(
            "args",
            "@group(0) @binding(0) var<storage, read_write> a: array<u32>;
             @compute @workgroup_size(1) fn main() { a[0] = (a[3] + 63u) / 64u; a[1] = 1u; a[2] = 1u; }",
        ),
        "main",
        vec![Binding::handle(0, a, Access::ReadWrite)],
        Grid::Workgroups([1, 1, 1]),
    ))
    .unwrap();
    let params = AffineParams {
        rows,
        scale: 2,
        add: 1,
        _pad: 0,
    };
    let sv = g
        .create_packed_view(s, VectorFormat::Uint32, rows as u64)
        .unwrap();
    let dv = g
        .create_packed_view(d, VectorFormat::Uint32, rows as u64)
        .unwrap();
    g.add_dispatch_node(DispatchNode::new(
        "affine",
        ShaderSource::new("affine", AFFINE_WGSL),
        "main",
        vec![
            Binding::params(0, &params),
            Binding::read(1, sv),
            Binding::read_write(2, dv),
        ],
        Grid::Indirect(arg_view),
    ))
    .unwrap();
    run(&ctx, g).unwrap();
    let want: Vec<u32> = input.iter().map(|x| x * 2 + 1).collect();
    assert_eq!(read(&ctx, &dst, rows as u64), want);
}

#[test]
fn invalid_dispatch_declarations_are_named_errors() {
    let ctx = ctx();
    let src = upload(&ctx, &[1, 2, 3, 4], U::STORAGE);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let s = g
        .import_buffer(BufferDescriptor::new("src", 16, src.usage()), &src)
        .unwrap();
    let v = g.create_packed_view(s, VectorFormat::Uint32, 4).unwrap();
    let shader = ShaderSource::new("affine", AFFINE_WGSL);
    let cases = [
        (
            vec![Binding::read(1, v), Binding::read_write(1, v)],
            Grid::Workgroups([1, 1, 1]),
            "slot 1 is bound twice",
        ),
        (
            vec![Binding::read(1, v)],
            Grid::Workgroups([u32::MAX, 1, 1]),
            "grid dimension 0",
        ),
        (
            vec![Binding::read(1, v)],
            Grid::Indirect(v),
            "indirect arguments must be 3 packed uint32 rows",
        ),
        (
            vec![Binding::read(1, v)],
            Grid::Rows {
                rows: 10,
                rows_per_workgroup: 0,
            },
            "rows_per_workgroup is 0",
        ),
    ];
    for (i, (bindings, grid, want)) in cases.into_iter().enumerate() {
        let err = g
            .add_dispatch_node(DispatchNode::new(
                format!("n{i}"),
                shader.clone(),
                "main",
                bindings,
                grid,
            ))
            .unwrap_err();
        match &err {
            GraphError::InvalidDispatch {
                graph,
                node,
                reason,
            } => {
                assert_eq!(
                    (graph.as_str(), node.as_str()),
                    ("bad", format!("n{i}").as_str())
                );
                assert!(reason.contains(want), "{reason}");
            }
            other => panic!("unexpected {other}"),
        }
    }
}

/// Two imported buffers; node `n` declares only `declared` and resolves `touched`.
fn two_buffer_graph(ctx: &GpuContext) -> (CommandGraph, [gpugraph_command::BufferHandle; 2]) {
    let a = upload(ctx, &[1; 4], U::STORAGE);
    let b = upload(ctx, &[2; 4], U::STORAGE);
    let mut g = CommandGraph::new("strict", &ctx.device);
    let ha = g
        .import_buffer(BufferDescriptor::new("a", 16, a.usage()), &a)
        .unwrap();
    let hb = g
        .import_buffer(BufferDescriptor::new("b", 16, b.usage()), &b)
        .unwrap();
    (g, [ha, hb])
}

fn assert_undeclared(err: GraphError, node: &str) {
    match err {
        GraphError::UndeclaredResource {
            graph,
            node: n,
            resource,
        } => {
            assert_eq!((graph.as_str(), n.as_str()), ("strict", node));
            assert_eq!(resource, "buffer b");
        }
        other => panic!("expected UndeclaredResource, got {other}"),
    }
}

#[test]
fn a_closure_resolving_an_undeclared_buffer_fails_at_encode() {
    let ctx = ctx();
    let (mut g, [a, b]) = two_buffer_graph(&ctx);
    g.add_copy_node(CopyNode::new(
        "sneaky",
        vec![ResourceUse::storage_read(a)],
        move |_| {
            Ok(copy_fn(move |_, ec| {
                let _ = ec.buffer(a);
                let _ = ec.buffer(b);
            }))
        },
    ))
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let err = compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap_err();
    assert_undeclared(err, "sneaky");
}

#[test]
fn a_compile_callback_resolving_an_undeclared_buffer_fails_the_compile() {
    let ctx = ctx();
    let (mut g, [a, b]) = two_buffer_graph(&ctx);
    g.add_copy_node(CopyNode::new(
        "sneaky",
        vec![ResourceUse::storage_read(a)],
        move |cc| {
            let _ = cc.binding(b);
            Ok(copy_fn(|_, _| {}))
        },
    ))
    .unwrap();
    let err = g.compile().err().expect("compile must fail");
    assert_undeclared(err, "sneaky");
    // try_buffer reports it to the callback directly.
    let (mut g, [a, b]) = two_buffer_graph(&ctx);
    g.add_copy_node(CopyNode::new(
        "careful",
        vec![ResourceUse::storage_read(a)],
        move |cc| {
            assert!(cc.try_buffer(a).is_ok());
            let e = cc.try_buffer(b).unwrap_err();
            assert!(
                e.to_string().contains("node careful resolved buffer b"),
                "{e}"
            );
            Err(e.into())
        },
    ))
    .unwrap();
    assert!(g.compile().is_err());
}

#[test]
fn an_executable_error_fails_the_encode_by_name() {
    let ctx = ctx();
    let (mut g, [a, _]) = two_buffer_graph(&ctx);
    g.add_copy_node(CopyNode::new(
        "failing",
        vec![ResourceUse::storage_read(a)],
        |_| Ok(try_copy_fn(|_, _| Err("bind group mismatch".into()))),
    ))
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    match compiled.encode(&mut enc, &EncodeOptions::default()) {
        Err(GraphError::NodeEncode {
            graph,
            node,
            source,
        }) => {
            assert_eq!((graph.as_str(), node.as_str()), ("strict", "failing"));
            assert_eq!(source.to_string(), "bind group mismatch");
        }
        other => panic!("expected NodeEncode, got {other:?}"),
    }
}

#[test]
fn compiling_the_same_shape_twice_creates_no_pipeline() {
    let ctx = ctx();
    let src = upload(&ctx, &[1, 2, 3, 4], U::STORAGE);
    let dst = upload(&ctx, &[0; 4], U::STORAGE);
    let (g, _) = affine_graph(&ctx, &src, &dst, 4);
    let cache = g.cache();
    run(&ctx, g).unwrap();
    let first = cache.stats();
    assert!(first.pipelines_created >= 1, "{first:?}");
    let (g, _) = affine_graph(&ctx, &src, &dst, 4);
    run(&ctx, g).unwrap();
    let second = cache.stats();
    assert_eq!(
        second.pipelines_created, first.pipelines_created,
        "{second:?}"
    );
    assert!(second.pipeline_hits > first.pipeline_hits, "{second:?}");
    assert_eq!(read(&ctx, &dst, 4), vec![10, 13, 16, 19]);
}

/// A node with a private bind group still takes its pipeline from the device cache, but its
/// bind group never enters the cache (whose entries would keep per-query buffers alive).
#[test]
fn private_bind_groups_stay_out_of_the_device_cache() {
    let ctx = ctx();
    let src = upload(&ctx, &[1, 2, 3, 4], U::STORAGE);
    let dst = upload(&ctx, &[POISON; 4], U::STORAGE);
    let (g, _) = affine_graph_with(&ctx, &src, &dst, 4, false);
    let cache = g.cache();
    let before = cache.stats();
    run(&ctx, g).unwrap();
    assert_eq!(read(&ctx, &dst, 4), vec![10, 13, 16, 19]);
    let dst2 = upload(&ctx, &[POISON; 4], U::STORAGE);
    let (g, _) = affine_graph_with(&ctx, &src, &dst2, 4, false);
    run(&ctx, g).unwrap();
    assert_eq!(read(&ctx, &dst2, 4), vec![10, 13, 16, 19]);
    let after = cache.stats();
    assert_eq!(
        (after.bind_groups_created, after.bind_group_hits),
        (before.bind_groups_created, before.bind_group_hits),
        "{after:?}"
    );
    assert!(after.pipeline_hits > before.pipeline_hits, "{after:?}");
    // The shared default does enter it.
    let (g, _) = affine_graph(&ctx, &src, &dst, 4);
    run(&ctx, g).unwrap();
    assert!(cache.stats().bind_groups_created > after.bind_groups_created);
}

#[test]
fn invalid_wgsl_is_not_cached() {
    let ctx = ctx();
    for _ in 0..2 {
        let (mut g, [a, _]) = two_buffer_graph(&ctx);
        g.add_dispatch_node(DispatchNode::new(
            "broken",
            ShaderSource::new(
                "broken",
                "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }",
            ),
            "main",
            vec![Binding::handle(0, a, Access::Read)],
            Grid::Workgroups([1, 1, 1]),
        ))
        .unwrap();
        // Both compiles must report the error: the first failure was not cached as a pipeline.
        match g.compile() {
            Err(GraphError::NodeCompile { node, .. }) => assert_eq!(node, "broken"),
            other => panic!("expected NodeCompile, got {:?}", other.err()),
        }
    }
}

/// `dst[i] = src[i] + ADD` as its own shader text per `add` (so per distinct pipeline).
fn add_shader(add: u32, broken: bool) -> String {
    let body = if broken {
        "let x: u32 = 1.5;".to_string()
    } else {
        format!("if i < arrayLength(&dst) {{ dst[i] = src[i] + {add}u; }}")
    };
    format!(
        "@group(0) @binding(0) var<storage, read> src: array<u32>;
         @group(0) @binding(1) var<storage, read_write> dst: array<u32>;
         @compute @workgroup_size(64)
         fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{ let i = gid.x; {body} }}"
    )
}

/// A chain of `adds.len()` nodes over `rows` words: buffer k+1 = buffer k + adds[k]; nodes
/// listed in `broken` get invalid WGSL. Returns the graph and the buffers.
fn add_chain(
    ctx: &GpuContext,
    rows: u64,
    adds: &[u32],
    broken: &[usize],
) -> (CommandGraph, Vec<wgpu::Buffer>) {
    let mut g = CommandGraph::new("chain", &ctx.device);
    let mut data = vec![POISON; rows as usize];
    data.iter_mut().enumerate().for_each(|(i, v)| *v = i as u32);
    let buffers: Vec<wgpu::Buffer> = (0..=adds.len())
        .map(|k| {
            let init = if k == 0 {
                data.clone()
            } else {
                vec![POISON; rows as usize]
            };
            upload(ctx, &init, U::STORAGE)
        })
        .collect();
    let views: Vec<DataView> = buffers
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let h = g
                .import_buffer(
                    BufferDescriptor::new(format!("b{k}"), b.size(), b.usage()),
                    b,
                )
                .unwrap();
            g.create_packed_view(h, VectorFormat::Uint32, rows).unwrap()
        })
        .collect();
    for (k, &add) in adds.iter().enumerate() {
        g.add_dispatch_node(DispatchNode::new(
            format!("add{k}"),
            ShaderSource::new(format!("add{add}"), add_shader(add, broken.contains(&k))),
            "main",
            vec![
                Binding::read(0, views[k]),
                Binding::read_write(1, views[k + 1]),
            ],
            Grid::Rows {
                rows,
                rows_per_workgroup: 64,
            },
        ))
        .unwrap();
    }
    (g, buffers)
}

#[test]
fn nodes_compiled_on_several_threads_share_pipelines_and_match_the_cpu() {
    let ctx = ctx();
    // 12 nodes over 3 distinct shaders: whatever the thread count, each pipeline is created
    // once (a racing request waits for the first) and the chain computes what the CPU does.
    let adds: Vec<u32> = (0..12).map(|k| [1, 5, 11][k % 3]).collect();
    let rows = 300u64;
    let (g, buffers) = add_chain(&ctx, rows, &adds, &[]);
    let cache = g.cache();
    let before = cache.stats();
    run(&ctx, g).unwrap();
    let after = cache.stats();
    assert_eq!(
        after.pipelines_created - before.pipelines_created,
        3,
        "{after:?}"
    );
    assert_eq!(after.pipeline_hits - before.pipeline_hits, 9, "{after:?}");
    let total: u32 = adds.iter().sum();
    let expected: Vec<u32> = (0..rows as u32).map(|i| i + total).collect();
    assert_eq!(read(&ctx, buffers.last().unwrap(), rows), expected);
}

#[test]
fn the_first_failing_node_in_order_is_the_compile_error() {
    let ctx = ctx();
    let adds: Vec<u32> = (0..10).map(|k| k as u32 + 100).collect();
    for broken in [vec![3, 7], vec![9], vec![0, 1, 2]] {
        let (g, _) = add_chain(&ctx, 64, &adds, &broken);
        match g.compile() {
            Err(GraphError::NodeCompile { node, .. }) => {
                assert_eq!(node, format!("add{}", broken[0]), "broken nodes {broken:?}")
            }
            other => panic!("expected NodeCompile, got {:?}", other.err()),
        }
    }
}
