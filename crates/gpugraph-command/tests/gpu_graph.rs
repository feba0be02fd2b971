//! Command graph on a real device (lavapipe in CI, NVIDIA Vulkan on the H200): results are
//! read back and compared with CPU arithmetic. No adapter is a failure, never a skip.

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    copy_fn, render_fn, Access, Binding, BufferDescriptor, BufferHandle, ColorLoad, CommandGraph,
    CopyNode, DispatchNode, EncodeOptions, GpuContext, GraphError, Grid, RenderNode, ResourceUse,
    ShaderSource, TextureAccess, TextureDescriptor, VectorFormat,
};

use gpugraph_testing::ctx;

fn upload(ctx: &GpuContext, data: &[u32], usage: U) -> wgpu::Buffer {
    gpugraph_testing::upload_padded(ctx, data, usage, 4)
}

fn staging(ctx: &GpuContext, bytes: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test-staging"),
        size: bytes,
        usage: U::MAP_READ | U::COPY_DST,
        mapped_at_creation: false,
    })
}

/// The words a graph copied into `staging` (a MAP_READ target the graph writes).
fn read(ctx: &GpuContext, staging: &wgpu::Buffer) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(&gpugraph_testing::map_read(ctx, staging))
}

/// A dispatch node applying `expr` (WGSL over `x`) elementwise from `src` to `dst`.
fn map_node(id: &str, src: BufferHandle, dst: BufferHandle, n: u32, expr: &str) -> DispatchNode {
    let wgsl = format!(
        "@group(0) @binding(0) var<storage, read> src: array<u32>;
         @group(0) @binding(1) var<storage, read_write> dst: array<u32>;
         @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
             if (g.x < {n}u) {{ let x = src[g.x]; dst[g.x] = {expr}; }}
         }}"
    );
    DispatchNode::new(
        id,
        ShaderSource::new(format!("test/map/{id}"), wgsl),
        "main",
        vec![
            Binding::handle(0, src, Access::Read),
            Binding::handle(1, dst, Access::ReadWrite),
        ],
        Grid::Workgroups([n.div_ceil(64), 1, 1]),
    )
}

struct Chain {
    graph: gpugraph_command::CompiledGraph,
    input: BufferHandle,
    output_buffer: wgpu::Buffer,
}

const N: u32 = 1000;

fn cpu_chain(x: u32) -> u32 {
    let a = x.wrapping_mul(2);
    let b = a.wrapping_add(7);
    b.wrapping_mul(b)
}

/// input → double → add → square → output, over three transients; t0 and t2 alias.
fn build_chain(ctx: &GpuContext, input: &wgpu::Buffer) -> Chain {
    let bytes = N as u64 * 4;
    let mut g = CommandGraph::new("chain", &ctx.device);
    let input_h = g
        .import_buffer(
            BufferDescriptor::new("chain-input", bytes, U::STORAGE),
            input,
        )
        .unwrap();
    let output_buffer = upload(
        ctx,
        &vec![gpugraph_testing::POISON; N as usize],
        U::STORAGE | U::COPY_SRC,
    );
    let out = g
        .import_buffer(
            BufferDescriptor::new("chain-output", bytes, U::STORAGE),
            &output_buffer,
        )
        .unwrap();
    let t: Vec<_> = (0..3)
        .map(|i| {
            g.create_buffer(BufferDescriptor::new(format!("t{i}"), bytes, U::STORAGE))
                .unwrap()
        })
        .collect();
    g.add_dispatch_node(map_node("double", input_h, t[0], N, "x * 2u"))
        .unwrap();
    g.add_dispatch_node(map_node("add", t[0], t[1], N, "x + 7u"))
        .unwrap();
    g.add_dispatch_node(map_node("square", t[1], t[2], N, "x * x"))
        .unwrap();
    g.add_dispatch_node(map_node("publish", t[2], out, N, "x"))
        .unwrap();
    Chain {
        graph: g.compile().unwrap(),
        input: input_h,
        output_buffer,
    }
}

#[test]
fn aliased_transient_chain_computes_the_cpu_result() {
    let ctx = ctx();
    let data: Vec<u32> = (0..N).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let input = upload(&ctx, &data, U::STORAGE);
    let mut chain = build_chain(&ctx, &input);
    let s = chain.graph.stats().clone();
    assert_eq!(s.logical_transient_count, 3);
    assert_eq!(
        s.physical_transient_count, 2,
        "t0 [0,1] and t2 [2,3] must share"
    );
    assert_eq!(s.reused_bytes, N as u64 * 4);
    assert_eq!(s.imported_bytes, 2 * N as u64 * 4);

    // The encoder also carries unrelated work before and after the graph.
    let unrelated_src = upload(&ctx, &[11, 22, 33, 44], U::COPY_SRC);
    let unrelated_dst = staging(&ctx, 16);
    let out_staging = staging(&ctx, N as u64 * 4);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(&unrelated_src, 0, &unrelated_dst, 0, 16);
    let report = chain
        .graph
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap();
    assert_eq!(
        report.compute_passes, 1,
        "four compute nodes share one pass"
    );
    enc.copy_buffer_to_buffer(&chain.output_buffer, 0, &out_staging, 0, N as u64 * 4);
    ctx.queue.submit([enc.finish()]);
    let got = read(&ctx, &out_staging);
    let want: Vec<u32> = data.iter().map(|&x| cpu_chain(x)).collect();
    assert_eq!(got, want);
    assert_eq!(read(&ctx, &unrelated_dst), vec![11, 22, 33, 44]);
}

#[test]
fn import_override_between_encodes_and_bad_overrides_are_rejected() {
    let ctx = ctx();
    let first: Vec<u32> = (0..N).collect();
    let second: Vec<u32> = (0..N).map(|i| 5000 + 3 * i).collect();
    let input = upload(&ctx, &first, U::STORAGE);
    let replacement = upload(&ctx, &second, U::STORAGE);
    let mut chain = build_chain(&ctx, &input);
    let run = |chain: &mut Chain, overrides: &[(BufferHandle, &wgpu::Buffer)]| {
        let st = staging(&ctx, N as u64 * 4);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        chain
            .graph
            .encode(
                &mut enc,
                &EncodeOptions {
                    overrides,
                    profile: false,
                },
            )
            .unwrap();
        enc.copy_buffer_to_buffer(&chain.output_buffer, 0, &st, 0, N as u64 * 4);
        ctx.queue.submit([enc.finish()]);
        read(&ctx, &st)
    };
    let a = run(&mut chain, &[]);
    let input_h = chain.input;
    let b = run(&mut chain, &[(input_h, &replacement)]);
    let c = run(&mut chain, &[]);
    assert_eq!(a, first.iter().map(|&x| cpu_chain(x)).collect::<Vec<_>>());
    assert_eq!(b, second.iter().map(|&x| cpu_chain(x)).collect::<Vec<_>>());
    assert_eq!(
        c, a,
        "the default import is used again without the override"
    );

    let small = upload(&ctx, &[1, 2, 3], U::STORAGE);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let err = chain
        .graph
        .encode(
            &mut enc,
            &EncodeOptions {
                overrides: &[(chain.input, &small)],
                profile: false,
            },
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "buffer chain-input (12 bytes) is smaller than compiled capacity 4000"
    );
    let wrong_usage = upload(&ctx, &first, U::VERTEX);
    let err = chain
        .graph
        .encode(
            &mut enc,
            &EncodeOptions {
                overrides: &[(chain.input, &wrong_usage)],
                profile: false,
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, GraphError::BufferMissingUsage { ref id, .. } if id == "chain-input"),
        "{err}"
    );

    // Transients cannot be overridden.
    let mut g = CommandGraph::new("t", &ctx.device);
    let t = g
        .create_buffer(BufferDescriptor::new("scratch", 16, U::STORAGE))
        .unwrap();
    g.add_copy_node(CopyNode::new(
        "n",
        vec![ResourceUse::storage_write(t)],
        |_| Ok(copy_fn(|_, _| {})),
    ))
    .unwrap();
    let mut c = g.compile().unwrap();
    let err = c
        .encode(
            &mut enc,
            &EncodeOptions {
                overrides: &[(t, &small)],
                profile: false,
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, GraphError::OverrideNotImported { .. }),
        "{err}"
    );
}

#[test]
fn imports_are_checked_against_their_descriptor_and_device() {
    let ctx = ctx();
    let buf = upload(&ctx, &[0; 16], U::STORAGE);
    let mut g = CommandGraph::new("imports", &ctx.device);
    let err = g
        .import_buffer(
            BufferDescriptor::new("network-visible-ids", 4096, U::STORAGE),
            &buf,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "buffer network-visible-ids (64 bytes) is smaller than compiled capacity 4096"
    );
    let err = g
        .import_buffer(
            BufferDescriptor::new("ids", 64, U::STORAGE | U::INDIRECT),
            &buf,
        )
        .unwrap_err();
    assert!(err.to_string().contains("INDIRECT"), "{err}");

    // A second device on the same adapter and instance (wgpu can only tell devices of one
    // instance apart).
    let (other, _other_queue) = pollster::block_on(
        ctx.adapter
            .request_device(&wgpu::DeviceDescriptor::default()),
    )
    .unwrap();
    let foreign_buffer = |usage| {
        other.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 64,
            usage,
            mapped_at_creation: false,
        })
    };
    let foreign = foreign_buffer(U::STORAGE);
    let err = g
        .import_buffer(BufferDescriptor::new("foreign", 64, U::STORAGE), &foreign)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "buffer foreign belongs to a different device than graph imports (or was destroyed)"
    );
    let foreign_copy_only = foreign_buffer(U::COPY_SRC);
    let err = g
        .import_buffer(
            BufferDescriptor::new("foreign-copy", 64, U::COPY_SRC),
            &foreign_copy_only,
        )
        .unwrap_err();
    assert!(matches!(err, GraphError::WrongDevice { .. }), "{err}");
    // The same buffer on its own device imports fine, and a view of it works.
    let ok = g
        .import_buffer(BufferDescriptor::new("ids", 64, U::STORAGE), &buf)
        .unwrap();
    assert_eq!(
        g.create_packed_view(ok, VectorFormat::Uint32, 16)
            .unwrap()
            .len(),
        16
    );
}

#[test]
fn node_compile_with_invalid_wgsl_is_a_named_error() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad-shader", &ctx.device);
    let a = g
        .create_buffer(BufferDescriptor::new("a", 64, U::STORAGE))
        .unwrap();
    let b = g
        .create_buffer(BufferDescriptor::new("b", 64, U::STORAGE))
        .unwrap();
    g.add_dispatch_node(map_node("broken-kernel", a, b, 16, "x +* 1u"))
        .unwrap();
    let err = g.compile().err().unwrap();
    assert!(
        err.to_string()
            .starts_with("node broken-kernel failed to compile"),
        "{err}"
    );
}

#[test]
fn render_node_draws_into_a_graph_texture_read_by_a_copy_node() {
    let ctx = ctx();
    let (w, h) = (64u32, 4u32);
    let mut g = CommandGraph::new("render", &ctx.device);
    let color = g
        .create_buffer(BufferDescriptor::new("color", 16, U::STORAGE | U::COPY_DST))
        .unwrap();
    let target = g
        .create_texture(TextureDescriptor {
            id: "target".into(),
            size: (w, h),
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            mip_level_count: 1,
            sample_count: 1,
            layers: 1,
        })
        .unwrap();
    let pixels = staging(&ctx, (w * h * 4) as u64);
    let pixels_h = g
        .import_buffer(
            BufferDescriptor::new("pixels", (w * h * 4) as u64, U::COPY_DST),
            &pixels,
        )
        .unwrap();
    // Compute writes the color the fragment shader reads: a compute→render RAW hazard.
    g.add_dispatch_node(DispatchNode::new(
        "pick-color",
        ShaderSource::new(
            "test/pick-color",
            "@group(0) @binding(0) var<storage, read_write> c: array<u32>;
             @compute @workgroup_size(1) fn main() { c[0] = 0u; c[1] = 255u; c[2] = 0u; c[3] = 255u; }",
        ),
        "main",
        vec![Binding::handle(0, color, Access::ReadWrite)],
        Grid::Workgroups([1, 1, 1]),
    ))
    .unwrap();
    g.add_render_node(RenderNode {
        id: "fullscreen".into(),
        color_target: target,
        load: ColorLoad::Clear(wgpu::Color::RED),
        uses: vec![ResourceUse::storage_read(color)],
        depends_on: vec![],
        compile: Box::new(move |cc| {
            let m = cc
                .device()
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: None,
                    source: wgpu::ShaderSource::Wgsl(
                        "@group(0) @binding(0) var<storage, read> c: array<u32>;
                     @vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
                         let p = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
                         return vec4<f32>(p * 2.0 - 1.0, 0.0, 1.0);
                     }
                     @fragment fn fs() -> @location(0) vec4<f32> {
                         return vec4<f32>(f32(c[0]), f32(c[1]), f32(c[2]), f32(c[3])) / 255.0;
                     }"
                        .into(),
                    ),
                });
            let p = cc
                .device()
                .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: None,
                    layout: None,
                    vertex: wgpu::VertexState {
                        module: &m,
                        entry_point: Some("vs"),
                        compilation_options: Default::default(),
                        buffers: &[],
                    },
                    primitive: Default::default(),
                    depth_stencil: None,
                    multisample: Default::default(),
                    fragment: Some(wgpu::FragmentState {
                        module: &m,
                        entry_point: Some("fs"),
                        compilation_options: Default::default(),
                        targets: &[Some(wgpu::TextureFormat::Rgba8Unorm.into())],
                    }),
                    multiview_mask: None,
                    cache: None,
                });
            let bg = cc.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &p.get_bind_group_layout(0),
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: cc.buffer(color).as_entire_binding(),
                }],
            });
            Ok(render_fn(move |pass, _| {
                pass.set_pipeline(&p);
                pass.set_bind_group(0, &bg, &[]);
                pass.draw(0..3, 0..1);
            }))
        }),
    })
    .unwrap();
    g.add_copy_node(CopyNode::new(
        "read-target",
        vec![
            ResourceUse::texture(target, TextureAccess::CopySrc),
            ResourceUse::copy_dst(pixels_h),
        ],
        move |_| {
            Ok(copy_fn(move |enc, ec| {
                enc.copy_texture_to_buffer(
                    ec.texture(target).as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: ec.buffer(pixels_h),
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(w * 4),
                            rows_per_image: Some(h),
                        },
                    },
                    wgpu::Extent3d {
                        width: w,
                        height: h,
                        depth_or_array_layers: 1,
                    },
                );
            }))
        },
    ))
    .unwrap();
    let mut c = g.compile().unwrap();
    assert_eq!(c.node_order(), ["pick-color", "fullscreen", "read-target"]);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let report = c.encode(&mut enc, &EncodeOptions::default()).unwrap();
    assert_eq!((report.compute_passes, report.render_passes), (1, 1));
    ctx.queue.submit([enc.finish()]);
    let texels = read(&ctx, &pixels);
    assert!(
        texels
            .iter()
            .all(|&p| p == u32::from_le_bytes([0, 255, 0, 255])),
        "{:x?}",
        &texels[..4]
    );
}

#[test]
fn profiled_encode_times_each_pass_or_reports_missing_feature() {
    let ctx = ctx();
    let input = upload(&ctx, &(0..N).collect::<Vec<_>>(), U::STORAGE);
    let mut chain = build_chain(&ctx, &input);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let result = chain.graph.encode(
        &mut enc,
        &EncodeOptions {
            overrides: &[],
            profile: true,
        },
    );
    if ctx.capabilities().timestamp_query {
        let report = result.unwrap();
        assert_eq!(
            report.compute_passes, 4,
            "profiling gives every node its own pass"
        );
        // The resolved ticks, copied in the caller's own readback after the encode.
        let (ticks, bytes) = chain.graph.timestamp_range().expect("a profiled encode");
        assert_eq!(bytes, 4 * 2 * 8, "two timestamps per node");
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("ticks"),
            size: bytes,
            usage: U::MAP_READ | U::COPY_DST,
            mapped_at_creation: false,
        });
        enc.copy_buffer_to_buffer(ticks, 0, &staging, 0, bytes);
        ctx.queue.submit([enc.finish()]);
        let words = read(&ctx, &staging);
        let from_ticks = chain
            .graph
            .timings_from(&ctx.queue, bytemuck::cast_slice(&words))
            .unwrap();
        assert!(
            chain.graph.timings_from(&ctx.queue, &[0; 8]).is_err(),
            "too few bytes"
        );
        let timings = chain.graph.read_timings(&ctx.queue).unwrap();
        assert_eq!(
            from_ticks, timings,
            "one set of ticks, two ways of reading it"
        );
        assert_eq!(timings.len(), 4);
        assert!(timings.iter().all(|t| t.gpu_ns.is_some_and(|ns| ns >= 0.0)));
        // The chain's passes depend on each other: their begin timestamps are in order.
        let spans: Vec<(f64, f64)> = timings
            .iter()
            .map(|t| {
                let start = t.start_ns.expect("a compute node has a start");
                (start, start + t.gpu_ns.unwrap_or(0.0))
            })
            .collect();
        for w in spans.windows(2) {
            assert!(w[1].0 >= w[0].0, "{spans:?}");
        }
    } else {
        assert!(matches!(
            result,
            Err(GraphError::ProfilingUnsupported { .. })
        ));
        assert!(chain.graph.read_timings(&ctx.queue).is_err());
        assert!(chain.graph.timestamp_range().is_none());
        assert!(chain.graph.timings_from(&ctx.queue, &[0; 64]).is_err());
    }
}

#[test]
fn a_buffer_is_imported_once() {
    let ctx = ctx();
    let buf = upload(&ctx, &[0; 16], U::STORAGE);
    let mut g = CommandGraph::new("twice", &ctx.device);
    g.import_buffer(BufferDescriptor::new("counts", 64, U::STORAGE), &buf)
        .unwrap();
    let err = g
        .import_buffer(BufferDescriptor::new("counts-again", 64, U::STORAGE), &buf)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "buffer counts-again is the same wgpu buffer as import counts; import an allocation once and create views of it"
    );
}

#[test]
fn consecutive_compute_nodes_share_a_pass_and_copies_split_them() {
    let ctx = ctx();
    let mut g = CommandGraph::new("g", &ctx.device);
    let mut buffer = |id: &str, usage: U| {
        g.create_buffer(BufferDescriptor::new(id, 64, U::STORAGE | usage))
            .unwrap()
    };
    let [seed, a, a2, b, out] = [
        buffer("seed", U::empty()),
        buffer("a", U::COPY_SRC),
        buffer("a2", U::empty()),
        buffer("b", U::COPY_DST),
        buffer("out", U::empty()),
    ];
    g.add_dispatch_node(map_node("w1", seed, a, 16, "x"))
        .unwrap();
    g.add_dispatch_node(map_node("w2", a, a2, 16, "x")).unwrap();
    let va = g.create_packed_view(a, VectorFormat::Uint32, 16).unwrap();
    let vb = g.create_packed_view(b, VectorFormat::Uint32, 16).unwrap();
    g.add_view_copy("copy", va, vb).unwrap();
    g.add_dispatch_node(map_node("r", b, out, 16, "x")).unwrap();
    let mut c = g.compile().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let report = c.encode(&mut enc, &EncodeOptions::default()).unwrap();
    assert_eq!(report.compute_passes, 2);
    assert_eq!(report.node_encode_cpu.len(), 4);
    assert_eq!(c.node_order(), ["w1", "w2", "copy", "r"]);
}
