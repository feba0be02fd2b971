//! Texture bindings of dispatch nodes: per-subresource hazards against render attachments and
//! other dispatches, the texels a kernel reads and writes (compared with the values written
//! before, outputs poisoned first), and the named errors of a bad declaration, on a real
//! device (lavapipe in CI). No adapter is a failure, never a skip.

use gpugraph_command::plan::EdgeKind;
use gpugraph_command::shader::reflect::BindingKind;
use gpugraph_command::wgpu::{self, BufferUsages as U, TextureFormat as F, TextureUsages as T};
use gpugraph_command::{
    render_fn, Binding, BindingError, BufferDescriptor, BufferHandle, ColorAttachment, ColorLoad,
    CommandGraph, DispatchNode, EncodeOptions, GpuContext, GraphError, Grid, RenderPassNode,
    ShaderSource, TextureDescriptor, TextureHandle, TextureSlot,
};

use gpugraph_testing::ctx;

const W: u32 = 16;
const H: u32 = 8;

/// `out[y * width + x] = texel.x + 1000 * texel.y` over mip 0 of `src`.
const READ_WGSL: &str = "
@group(0) @binding(0) var src: texture_2d<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let dims = textureDimensions(src, 0);
    if g.x >= dims.x || g.y >= dims.y { return; }
    let t = textureLoad(src, vec2<u32>(g.xy), 0);
    out[g.y * dims.x + g.x] = t.x + 1000u * t.y;
}";

/// `dst[x, y] = x + 100 * y`.
const WRITE_WGSL: &str = "
@group(0) @binding(0) var dst: texture_storage_2d<r32uint, write>;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let dims = textureDimensions(dst);
    if g.x >= dims.x || g.y >= dims.y { return; }
    textureStore(dst, vec2<u32>(g.xy), vec4<u32>(g.x + 100u * g.y, 0u, 0u, 0u));
}";

const GRID: Grid = Grid::Workgroups([W.div_ceil(8), H.div_ceil(8), 1]);

fn reader(id: &str, slot: TextureSlot, out: BufferHandle) -> DispatchNode {
    DispatchNode::new(
        id,
        ShaderSource::new("test/read-texture", READ_WGSL),
        "main",
        vec![
            Binding::texture(0, slot),
            Binding::handle(1, out, gpugraph_command::Access::ReadWrite),
        ],
        GRID,
    )
}

/// A render pass that only clears `mip` of `texture` to `(r, g)`.
fn clear(id: &str, texture: TextureHandle, mip: u32, r: f64, g: f64) -> RenderPassNode {
    let mut color = ColorAttachment::new(
        texture,
        ColorLoad::Clear(wgpu::Color {
            r,
            g,
            b: 0.0,
            a: 0.0,
        }),
    );
    color.target.mip_level = mip;
    RenderPassNode {
        id: id.into(),
        color: vec![color],
        depth_stencil: None,
        uses: vec![],
        depends_on: vec![],
        compile: Box::new(|_| Ok(render_fn(|_, _| {}))),
    }
}

/// An imported storage buffer of `W * H` poisoned words.
fn output(ctx: &GpuContext, g: &mut CommandGraph) -> (wgpu::Buffer, BufferHandle) {
    let bytes = u64::from(W * H) * 4;
    let buffer = gpugraph_testing::poisoned(ctx, (W * H) as usize, U::STORAGE | U::COPY_SRC);
    let h = g
        .import_buffer(BufferDescriptor::new("out", bytes, buffer.usage()), &buffer)
        .unwrap();
    (buffer, h)
}

/// Compiles and runs `g`; returns its edges as `(from, to, kind)` and the words of `out`.
fn run(
    ctx: &GpuContext,
    g: CommandGraph,
    out: &wgpu::Buffer,
) -> (Vec<(String, String, EdgeKind)>, Vec<u32>) {
    let mut compiled = g.compile().unwrap();
    let edges = compiled
        .edges()
        .iter()
        .map(|e| (e.from.clone(), e.to.clone(), e.kind))
        .collect();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap();
    let words = gpugraph_testing::submit_and_read(ctx, enc, out, 0, (out.size() / 4) as usize);
    (edges, words)
}

fn edge(from: &str, to: &str, kind: EdgeKind) -> (String, String, EdgeKind) {
    (from.into(), to.into(), kind)
}

#[test]
fn a_sampled_view_orders_between_the_render_passes_of_its_subresource() {
    let ctx = ctx();
    let mut g = CommandGraph::new("sample-after-draw", &ctx.device);
    let ids = g
        .create_texture(
            TextureDescriptor::new(
                "ids",
                (W, H),
                F::Rg32Uint,
                T::RENDER_ATTACHMENT | T::TEXTURE_BINDING,
            )
            .with_mips(2),
        )
        .unwrap();
    let (out, out_h) = output(&ctx, &mut g);
    g.add_render_pass_node(clear("draw", ids, 0, 7.0, 9.0))
        .unwrap();
    // Another mip: no hazard with a view of mip 0.
    g.add_render_pass_node(clear("draw-mip-1", ids, 1, 1.0, 1.0))
        .unwrap();
    let mip0 = TextureSlot::sampled(ids, wgpu::TextureSampleType::Uint).mips(0, 1);
    g.add_dispatch_node(reader("read", mip0, out_h)).unwrap();
    // Drawn after the read in insertion order: the read must still see the first draw.
    g.add_render_pass_node(clear("redraw", ids, 0, 3.0, 4.0))
        .unwrap();
    let (edges, words) = run(&ctx, g, &out);
    assert_eq!(
        edges,
        [
            edge("draw", "read", EdgeKind::ReadAfterWrite),
            edge("draw", "redraw", EdgeKind::WriteAfterWrite),
            edge("read", "redraw", EdgeKind::WriteAfterRead),
        ]
    );
    assert_eq!(words, vec![7 + 9 * 1000; (W * H) as usize]);
}

#[test]
fn a_view_of_every_mip_orders_after_every_mips_draw() {
    let ctx = ctx();
    let mut g = CommandGraph::new("whole-texture", &ctx.device);
    let ids = g
        .create_texture(
            TextureDescriptor::new(
                "ids",
                (W, H),
                F::Rg32Uint,
                T::RENDER_ATTACHMENT | T::TEXTURE_BINDING,
            )
            .with_mips(2),
        )
        .unwrap();
    let (out, out_h) = output(&ctx, &mut g);
    g.add_render_pass_node(clear("draw-mip-1", ids, 1, 1.0, 1.0))
        .unwrap();
    g.add_render_pass_node(clear("draw", ids, 0, 2.0, 5.0))
        .unwrap();
    let all = TextureSlot::sampled(ids, wgpu::TextureSampleType::Uint);
    g.add_dispatch_node(reader("read", all, out_h)).unwrap();
    let (edges, words) = run(&ctx, g, &out);
    assert_eq!(
        edges,
        [
            edge("draw-mip-1", "read", EdgeKind::ReadAfterWrite),
            edge("draw", "read", EdgeKind::ReadAfterWrite),
        ]
    );
    assert_eq!(words, vec![2 + 5 * 1000; (W * H) as usize]);
}

#[test]
fn a_storage_write_is_read_by_the_next_dispatch() {
    let ctx = ctx();
    let mut g = CommandGraph::new("store-then-load", &ctx.device);
    let tex = g
        .create_texture(TextureDescriptor::new(
            "values",
            (W, H),
            F::R32Uint,
            T::STORAGE_BINDING | T::TEXTURE_BINDING,
        ))
        .unwrap();
    let (out, out_h) = output(&ctx, &mut g);
    let (read, write) = (
        TextureSlot::sampled(tex, wgpu::TextureSampleType::Uint),
        TextureSlot::storage(tex, wgpu::StorageTextureAccess::WriteOnly, 0),
    );
    g.add_dispatch_node(DispatchNode::new(
        "write",
        ShaderSource::new("test/write-texture", WRITE_WGSL),
        "main",
        vec![Binding::texture(0, write)],
        GRID,
    ))
    .unwrap();
    g.add_dispatch_node(reader("read", read, out_h)).unwrap();
    let (edges, words) = run(&ctx, g, &out);
    assert_eq!(edges, [edge("write", "read", EdgeKind::ReadAfterWrite)]);
    let expected: Vec<u32> = (0..H)
        .flat_map(|y| (0..W).map(move |x| x + 100 * y))
        .collect();
    assert_eq!(words, expected);
}

fn add_err(g: &mut CommandGraph, node: DispatchNode) -> String {
    match g.add_dispatch_node(node) {
        Err(e @ GraphError::InvalidDispatch { .. })
        | Err(e @ GraphError::UsageNotDeclared { .. }) => e.to_string(),
        other => panic!("expected a named declaration error, got {other:?}"),
    }
}

#[test]
fn bad_texture_declarations_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad-textures", &ctx.device);
    let ids = g
        .create_texture(TextureDescriptor::new(
            "ids",
            (W, H),
            F::Rg32Uint,
            T::RENDER_ATTACHMENT | T::TEXTURE_BINDING,
        ))
        .unwrap();
    let (_out, out_h) = output(&ctx, &mut g);
    let float = wgpu::TextureSampleType::Float { filterable: true };
    let e = add_err(
        &mut g,
        reader("float", TextureSlot::sampled(ids, float), out_h),
    );
    assert!(e.contains("Rg32Uint") && e.contains("slot 0"), "{e}");
    let uint = TextureSlot::sampled(ids, wgpu::TextureSampleType::Uint);
    let e = add_err(&mut g, reader("mips", uint.mips(0, 2), out_h));
    assert!(e.contains("outside its 1 levels"), "{e}");
    let e = add_err(&mut g, reader("layers", uint.layers(0, 2), out_h));
    assert!(e.contains("outside its 1 layers"), "{e}");
    let storage = TextureSlot::storage(ids, wgpu::StorageTextureAccess::WriteOnly, 0);
    let e = add_err(&mut g, reader("no-storage-usage", storage, out_h));
    assert!(e.contains("STORAGE_BINDING"), "{e}");
    let mut wrong_access = reader("access", uint, out_h);
    wrong_access.bindings[0].access = gpugraph_command::Access::ReadWrite;
    let e = add_err(&mut g, wrong_access);
    assert!(e.contains("texture slot 0"), "{e}");

    // The WGSL reads texture_2d<u32>; a node declaring a depth texture names both types.
    let depth = g
        .create_texture(TextureDescriptor::new(
            "depth",
            (W, H),
            F::Depth32Float,
            T::RENDER_ATTACHMENT | T::TEXTURE_BINDING,
        ))
        .unwrap();
    let slot = TextureSlot::sampled(depth, wgpu::TextureSampleType::Depth);
    g.add_dispatch_node(reader("depth-as-uint", slot, out_h))
        .unwrap();
    match g.compile() {
        Err(GraphError::NodeCompile { node, source }) => {
            assert_eq!(node, "depth-as-uint");
            let e = source
                .downcast::<BindingError>()
                .unwrap_or_else(|e| panic!("expected a BindingError, got {e}"));
            assert!(
                matches!(&*e, BindingError::Mistyped { slot: 0, declared, kind, .. }
                    if *declared == BindingKind::Texture("texture_depth_2d".into())
                        && *kind == BindingKind::Texture("texture_2d<u32>".into())),
                "{e}"
            );
        }
        other => panic!("expected NodeCompile, got {:?}", other.err()),
    }
}

#[test]
fn a_storage_write_and_a_sample_of_one_subresource_cannot_share_a_dispatch() {
    let ctx = ctx();
    let mut g = CommandGraph::new("same-dispatch", &ctx.device);
    let tex = g
        .create_texture(TextureDescriptor::new(
            "values",
            (W, H),
            F::R32Uint,
            T::STORAGE_BINDING | T::TEXTURE_BINDING,
        ))
        .unwrap();
    let node = DispatchNode::new(
        "both",
        ShaderSource::new("test/write-texture", WRITE_WGSL),
        "main",
        vec![
            Binding::texture(
                0,
                TextureSlot::storage(tex, wgpu::StorageTextureAccess::WriteOnly, 0),
            ),
            Binding::texture(1, TextureSlot::sampled(tex, wgpu::TextureSampleType::Uint)),
        ],
        GRID,
    );
    let e = add_err(&mut g, node);
    assert!(e.contains("storage write"), "{e}");
}
