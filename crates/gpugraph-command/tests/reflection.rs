//! A dispatch node's declared bindings against the bindings naga reflects from its WGSL, on a
//! real device (lavapipe in CI): every disagreement is a typed `BindingError` naming the node,
//! the slot and both kinds, raised before a pipeline is created; an agreeing node runs and
//! computes what the CPU does. No adapter is a failure, never a skip.

use gpugraph_command::shader::reflect::BindingKind;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    Access, Binding, BindingError, BufferDescriptor, CommandGraph, DataView, DispatchNode,
    EncodeOptions, GpuContext, GraphError, Grid, ShaderSource, VectorFormat,
};

/// `dst[i] = src[i] * params.scale`; `other` is declared but only `clear` uses it.
const WGSL: &str = "
struct Params { rows: u32, scale: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> other: array<u32>;
@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x < params.rows { dst[gid.x] = src[gid.x] * params.scale; }
}
@compute @workgroup_size(1)
fn clear() { other[0] = 0u; }
";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    scale: u32,
    pad: [u32; 2],
}

const ROWS: u64 = 100;

struct Fixture {
    ctx: GpuContext,
    dst: wgpu::Buffer,
}

fn fixture() -> Fixture {
    let ctx = gpugraph_testing::ctx();
    let dst = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("dst"),
        size: ROWS * 4,
        usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
        mapped_at_creation: false,
    });
    Fixture { ctx, dst }
}

/// A graph with `src` (0..ROWS) and `dst` views; `bindings` builds the node's declaration
/// from (params, src, dst).
fn graph_with(
    f: &Fixture,
    entry: &str,
    wgsl: &str,
    bindings: impl FnOnce(Binding, DataView, DataView) -> Vec<Binding>,
) -> CommandGraph {
    let ctx = &f.ctx;
    let data: Vec<u32> = (0..ROWS as u32).collect();
    let src = gpugraph_testing::upload_padded(ctx, &data, U::STORAGE, 4);
    gpugraph_testing::poison(ctx, &f.dst);
    let mut g = CommandGraph::new("reflect", &ctx.device);
    let s = g
        .import_buffer(BufferDescriptor::new("src", src.size(), src.usage()), &src)
        .unwrap();
    let d = g
        .import_buffer(
            BufferDescriptor::new("dst", f.dst.size(), f.dst.usage()),
            &f.dst,
        )
        .unwrap();
    let sv = g.create_packed_view(s, VectorFormat::Uint32, ROWS).unwrap();
    let dv = g.create_packed_view(d, VectorFormat::Uint32, ROWS).unwrap();
    let params = Binding::params(
        0,
        &Params {
            rows: ROWS as u32,
            scale: 3,
            pad: [0; 2],
        },
    );
    g.add_dispatch_node(DispatchNode::new(
        "scale-node",
        ShaderSource::new("test/scale", wgsl),
        entry,
        bindings(params, sv, dv),
        Grid::Rows {
            rows: ROWS,
            rows_per_workgroup: 64,
        },
    ))
    .unwrap();
    g
}

/// The compile error's `BindingError`, after checking no pipeline was created for it.
fn binding_error(g: CommandGraph) -> BindingError {
    let cache = g.cache();
    let before = cache.stats().pipelines_created;
    let err = match g.compile() {
        Err(GraphError::NodeCompile { node, source }) => {
            assert_eq!(node, "scale-node");
            let message = source.to_string();
            let e = source
                .downcast::<BindingError>()
                .unwrap_or_else(|e| panic!("expected a BindingError, got {e}"));
            assert_eq!(message, e.to_string());
            *e
        }
        other => panic!("expected NodeCompile, got {:?}", other.err()),
    };
    assert_eq!(
        cache.stats().pipelines_created,
        before,
        "no pipeline for a bad node"
    );
    err
}

#[test]
fn matching_bindings_run() {
    let f = fixture();
    let g = graph_with(&f, "scale", WGSL, |p, s, d| {
        vec![p, Binding::read(1, s), Binding::read_write(2, d)]
    });
    let mut compiled = g.compile().unwrap();
    let ctx = &f.ctx;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap();
    let got: Vec<u32> = gpugraph_testing::submit_and_read(ctx, enc, &f.dst, 0, ROWS as usize);
    let want: Vec<u32> = (0..ROWS as u32).map(|i| i * 3).collect();
    assert_eq!(got, want);
}

#[test]
fn a_binding_the_entry_point_uses_must_be_declared() {
    let f = fixture();
    let g = graph_with(&f, "scale", WGSL, |p, s, _| vec![p, Binding::read(1, s)]);
    assert_eq!(
        binding_error(g),
        BindingError::Undeclared {
            node: "scale-node".into(),
            shader: "test/scale".into(),
            entry_point: "scale".into(),
            slot: 2,
            name: "dst".into(),
            kind: BindingKind::Buffer(Access::ReadWrite),
        }
    );
}

#[test]
fn a_declared_slot_the_shader_lacks_is_refused() {
    let f = fixture();
    let g = graph_with(&f, "scale", WGSL, |p, s, d| {
        vec![
            p,
            Binding::read(1, s),
            Binding::read_write(2, d),
            Binding::read(7, s),
        ]
    });
    assert_eq!(
        binding_error(g),
        BindingError::Missing {
            node: "scale-node".into(),
            shader: "test/scale".into(),
            slot: 7,
            declared: BindingKind::Buffer(Access::Read),
        }
    );
}

#[test]
fn storage_read_write_and_uniform_kinds_must_match() {
    let f = fixture();
    // The kernel writes dst: declaring it read would hide the write from hazard analysis.
    let g = graph_with(&f, "scale", WGSL, |p, s, d| {
        vec![p, Binding::read(1, s), Binding::read(2, d)]
    });
    let e = binding_error(g);
    assert_eq!(
        e,
        BindingError::Mistyped {
            node: "scale-node".into(),
            shader: "test/scale".into(),
            slot: 2,
            name: "dst".into(),
            declared: BindingKind::Buffer(Access::Read),
            kind: BindingKind::Buffer(Access::ReadWrite),
        }
    );
    let text = e.to_string();
    assert!(
        text.contains("var<storage, read_write>") && text.contains("var<storage, read>"),
        "{text}"
    );
    // A read-only input declared read-write would order the node after needless writers.
    let g = graph_with(&f, "scale", WGSL, |p, s, d| {
        vec![p, Binding::read_write(1, s), Binding::read_write(2, d)]
    });
    assert!(matches!(
        binding_error(g),
        BindingError::Mistyped {
            slot: 1,
            declared: BindingKind::Buffer(Access::ReadWrite),
            kind: BindingKind::Buffer(Access::Read),
            ..
        }
    ));
    // Storage where the shader has a uniform.
    let g = graph_with(&f, "scale", WGSL, |_, s, d| {
        vec![
            Binding::read(0, s),
            Binding::read(1, s),
            Binding::read_write(2, d),
        ]
    });
    assert!(matches!(
        binding_error(g),
        BindingError::Mistyped {
            slot: 0,
            declared: BindingKind::Buffer(Access::Read),
            kind: BindingKind::Buffer(Access::Uniform),
            ..
        }
    ));
}

#[test]
fn slots_another_entry_point_uses_may_be_declared_with_their_kind() {
    let f = fixture();
    // `clear` uses only slot 3; declaring the module's other slots (with their kinds) is
    // allowed, so entry points of one module can share a declaration.
    let g = graph_with(&f, "clear", WGSL, |p, s, d| {
        vec![
            p,
            Binding::read(1, s),
            Binding::read_write(2, d),
            Binding::read_write(3, d),
        ]
    });
    g.compile().unwrap();
    let g = graph_with(&f, "clear", WGSL, |p, s, _| vec![p, Binding::read(1, s)]);
    assert!(matches!(
        binding_error(g),
        BindingError::Undeclared { slot: 3, ref name, .. } if name == "other"
    ));
}

#[test]
fn unknown_entry_points_and_other_groups_are_refused() {
    let f = fixture();
    let g = graph_with(&f, "nope", WGSL, |p, s, d| {
        vec![p, Binding::read(1, s), Binding::read_write(2, d)]
    });
    match binding_error(g) {
        BindingError::EntryPoint { node, source, .. } => {
            assert_eq!(node, "scale-node");
            assert!(source.to_string().contains("`nope`"), "{source}");
        }
        other => panic!("expected EntryPoint, got {other}"),
    }
    let other_group = WGSL.replace("@group(0) @binding(2)", "@group(1) @binding(2)");
    let g = graph_with(&f, "scale", &other_group, |p, s, d| {
        vec![
            p,
            Binding::read(1, s),
            Binding::handle(2, d.buffer(), Access::ReadWrite),
        ]
    });
    assert!(matches!(
        binding_error(g),
        BindingError::OtherGroup { group: 1, slot: 2, ref name, .. } if name == "dst"
    ));
}

/// `fill` then `add` over the same bindings in one node; `words` are storage parameters and
/// `unused` a placeholder neither entry point touches.
const STEPS_WGSL: &str = "
@group(0) @binding(0) var<storage, read> words: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> unused: array<u32>;
@compute @workgroup_size(64)
fn fill(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x < words[0] { dst[gid.x] = words[1]; }
}
@compute @workgroup_size(64)
fn add(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x < words[0] { dst[gid.x] += src[gid.x]; }
}
@compute @workgroup_size(1)
fn touch() { unused[0] = 1u; }
";

#[test]
fn follow_up_dispatches_share_the_node_and_are_checked_per_entry_point() {
    let f = fixture();
    let rows = Grid::Rows {
        rows: ROWS,
        rows_per_workgroup: 64,
    };
    let node = |g: &mut CommandGraph, s: DataView, d: DataView, then: &str| {
        g.add_dispatch_node(
            DispatchNode::new(
                "steps",
                ShaderSource::new("test/steps", STEPS_WGSL),
                "fill",
                vec![
                    Binding::storage_params(0, &[ROWS as u32, 7]),
                    Binding::read(1, s),
                    Binding::read_write(2, d),
                    Binding::placeholder(3, Access::ReadWrite),
                ],
                rows,
            )
            .then(then, rows),
        )
    };
    let mut views = None;
    let mut g = graph_with(&f, "scale", WGSL, |p, s, d| {
        views = Some((s, d));
        vec![p, Binding::read(1, s), Binding::read_write(2, d)]
    });
    let (s, d) = views.unwrap();
    node(&mut g, s, d, "add").unwrap();
    let mut compiled = g.compile().unwrap();
    let ctx = &f.ctx;
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap();
    let got: Vec<u32> = gpugraph_testing::submit_and_read(ctx, enc, &f.dst, 0, ROWS as usize);
    // The scale node ran first (dst = 3i), then fill overwrote it and add added src.
    let want: Vec<u32> = (0..ROWS as u32).map(|i| i + 7).collect();
    assert_eq!(got, want);

    // The follow-up's own entry point is checked: `touch` uses slot 3, declared here as a
    // placeholder with the right kind, so it passes; declared read-only it is refused.
    let mut views = None;
    let mut g = graph_with(&f, "scale", WGSL, |p, s, d| {
        views = Some((s, d));
        vec![p, Binding::read(1, s), Binding::read_write(2, d)]
    });
    let (s, d) = views.unwrap();
    g.add_dispatch_node(
        DispatchNode::new(
            "steps",
            ShaderSource::new("test/steps", STEPS_WGSL),
            "fill",
            vec![
                Binding::storage_params(0, &[ROWS as u32, 7]),
                Binding::read(1, s),
                Binding::read_write(2, d),
                Binding::placeholder(3, Access::Read),
            ],
            rows,
        )
        .then("touch", Grid::Workgroups([1, 1, 1])),
    )
    .unwrap();
    match g.compile() {
        Err(GraphError::NodeCompile { node, source }) => {
            assert_eq!(node, "steps");
            assert!(matches!(
                source.downcast_ref::<BindingError>(),
                Some(BindingError::Mistyped {
                    slot: 3,
                    declared: BindingKind::Buffer(Access::Read),
                    ..
                })
            ));
        }
        other => panic!("expected NodeCompile, got {:?}", other.err()),
    }
}

#[test]
fn parameters_cannot_be_declared_writable() {
    let f = fixture();
    let mut g = CommandGraph::new("params", &f.ctx.device);
    let err = g
        .add_dispatch_node(DispatchNode::new(
            "writable-params",
            ShaderSource::new("test/steps", STEPS_WGSL),
            "touch",
            vec![Binding {
                slot: 3,
                resource: gpugraph_command::Resource::Params(vec![0; 16]),
                access: Access::ReadWrite,
            }],
            Grid::Workgroups([1, 1, 1]),
        ))
        .unwrap_err();
    match err {
        GraphError::InvalidDispatch { node, reason, .. } => {
            assert_eq!(node, "writable-params");
            assert!(reason.contains("parameter slot 3"), "{reason}");
        }
        other => panic!("expected InvalidDispatch, got {other}"),
    }
}
