//! Render-pass attachments: depth/stencil, multisample resolve, mip and layer subresources,
//! their named errors, per-subresource hazards and graph-texture aliasing, on a real device
//! (lavapipe in CI). No adapter is a failure, never a skip.

use gpugraph_command::wgpu::{self, BufferUsages as U, TextureFormat as F, TextureUsages as T};
use gpugraph_command::{
    copy_fn, render_fn, AspectOps, BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph,
    CopyNode, DepthStencilAttachment, EncodeOptions, GpuContext, GraphError, RenderPassNode,
    ResourceUse, Subresource, TextureAccess, TextureDescriptor, TextureHandle,
};

use gpugraph_testing::ctx;

fn texture(g: &mut CommandGraph, id: &str, format: F, usage: T) -> TextureHandle {
    g.create_texture(TextureDescriptor::new(id, (16, 8), format, usage))
        .unwrap()
}

/// A pass that records nothing but its attachments' load and store.
fn pass(
    id: &str,
    color: Vec<ColorAttachment>,
    depth: Option<DepthStencilAttachment>,
) -> RenderPassNode {
    RenderPassNode {
        id: id.into(),
        color,
        depth_stencil: depth,
        uses: vec![],
        depends_on: vec![],
        compile: Box::new(|_| Ok(render_fn(|_, _| {}))),
    }
}

const GREEN: wgpu::Color = wgpu::Color {
    r: 0.0,
    g: 1.0,
    b: 0.0,
    a: 1.0,
};

#[test]
fn attachment_mistakes_are_named_errors_before_anything_runs() {
    let ctx = ctx();
    let mut g = CommandGraph::new("attachments", &ctx.device);
    let ra = T::RENDER_ATTACHMENT;
    let color = texture(&mut g, "color", F::Rgba8Unorm, ra | T::TEXTURE_BINDING);
    let other_size = g
        .create_texture(TextureDescriptor::new("small", (8, 8), F::Rgba8Unorm, ra))
        .unwrap();
    let msaa = g
        .create_texture(TextureDescriptor::new("msaa", (16, 8), F::Rgba8Unorm, ra).with_samples(4))
        .unwrap();
    let msaa_float = g
        .create_texture(
            TextureDescriptor::new("msaa-float", (16, 8), F::Rgba16Float, ra).with_samples(4),
        )
        .unwrap();
    let depth = texture(&mut g, "depth", F::Depth32Float, ra);
    let stencil = texture(&mut g, "depth-stencil", F::Depth24PlusStencil8, ra);
    let mipped = g
        .create_texture(TextureDescriptor::new("mipped", (16, 16), F::Rgba8Unorm, ra).with_mips(2))
        .unwrap();

    let err =
        |g: &mut CommandGraph, node: RenderPassNode| g.add_render_pass_node(node).unwrap_err();
    let clear = ColorLoad::Clear(GREEN);

    let mut beyond = ColorAttachment::new(mipped, clear);
    beyond.target.mip_level = 2;
    let e = err(&mut g, pass("mip-2", vec![beyond], None));
    assert!(
        matches!(&e, GraphError::SubresourceOutOfRange { texture, mip_level: 2, mip_levels: 2, .. } if texture == "mipped"),
        "{e}"
    );
    let e = err(
        &mut g,
        pass(
            "sizes",
            vec![
                ColorAttachment::new(color, clear),
                ColorAttachment::new(other_size, clear),
            ],
            None,
        ),
    );
    assert!(
        matches!(&e, GraphError::AttachmentMismatch { property: "extent", texture, .. } if texture == "small"),
        "{e}"
    );
    // Mip 1 of a 16x16 texture is 8x8: the extent at the attached mip is what counts.
    let mut mip1 = ColorAttachment::new(mipped, clear);
    mip1.target.mip_level = 1;
    g.add_render_pass_node(pass(
        "mip-1-with-small",
        vec![mip1, ColorAttachment::new(other_size, clear)],
        None,
    ))
    .unwrap();
    let e = err(
        &mut g,
        pass(
            "resolve-to-msaa",
            vec![ColorAttachment::new(msaa, clear).resolve_into(msaa)],
            None,
        ),
    );
    assert!(
        matches!(
            &e,
            GraphError::AttachmentMismatch {
                property: "sample count",
                ..
            }
        ),
        "{e}"
    );
    let e = err(
        &mut g,
        pass(
            "resolve-format",
            vec![ColorAttachment::new(msaa_float, clear).resolve_into(color)],
            None,
        ),
    );
    assert!(
        matches!(&e, GraphError::AttachmentMismatch { property: "format", texture, .. } if texture == "color"),
        "{e}"
    );
    let e = err(
        &mut g,
        pass(
            "resolve-single",
            vec![ColorAttachment::new(color, clear).resolve_into(other_size)],
            None,
        ),
    );
    assert!(matches!(&e, GraphError::AttachmentMismatch { .. }), "{e}");
    let e = err(
        &mut g,
        pass(
            "msaa-with-single-depth",
            vec![ColorAttachment::new(msaa, clear)],
            Some(DepthStencilAttachment::cleared_depth(depth, 1.0)),
        ),
    );
    assert!(
        matches!(&e, GraphError::AttachmentMismatch { property: "sample count", texture, .. } if texture == "depth"),
        "{e}"
    );
    let e = err(
        &mut g,
        pass(
            "stencil-ops-missing",
            vec![ColorAttachment::new(color, clear)],
            Some(DepthStencilAttachment::cleared_depth(stencil, 1.0)),
        ),
    );
    assert!(
        matches!(
            &e,
            GraphError::AttachmentMismatch {
                property: "stencil aspect",
                ..
            }
        ),
        "{e}"
    );
    let mut read_only = DepthStencilAttachment::cleared_depth(depth, 1.0);
    read_only.read_only = true;
    let e = err(
        &mut g,
        pass(
            "read-only-with-ops",
            vec![ColorAttachment::new(color, clear)],
            Some(read_only),
        ),
    );
    assert!(
        matches!(
            &e,
            GraphError::AttachmentMismatch {
                property: "depth aspect",
                ..
            }
        ),
        "{e}"
    );
    let e = err(
        &mut g,
        pass(
            "depth-as-color",
            vec![ColorAttachment::new(depth, clear)],
            None,
        ),
    );
    assert!(
        matches!(
            &e,
            GraphError::AttachmentMismatch {
                property: "format",
                ..
            }
        ),
        "{e}"
    );
    let e = err(
        &mut g,
        pass(
            "twice",
            vec![
                ColorAttachment::new(color, clear),
                ColorAttachment::new(color, clear),
            ],
            None,
        ),
    );
    assert!(
        matches!(&e, GraphError::SamePassConflict { texture, .. } if texture == "color"),
        "{e}"
    );
    let mut sampled = pass(
        "render-and-sample",
        vec![ColorAttachment::new(color, clear)],
        None,
    );
    sampled.uses = vec![ResourceUse::texture(color, TextureAccess::Sampled)];
    let e = err(&mut g, sampled);
    assert!(
        matches!(
            &e,
            GraphError::SamePassConflict {
                second: "binding",
                ..
            }
        ),
        "{e}"
    );
    let e = err(&mut g, pass("nothing", vec![], None));
    assert!(
        matches!(
            &e,
            GraphError::AttachmentMismatch {
                property: "attachment count",
                ..
            }
        ),
        "{e}"
    );

    // Descriptors: multisampling with storage usage, a mip chain longer than the size allows.
    let e = g
        .create_texture(
            TextureDescriptor::new(
                "msaa-storage",
                (16, 8),
                F::Rgba8Unorm,
                ra | T::STORAGE_BINDING,
            )
            .with_samples(4),
        )
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::InvalidDescriptor { id, .. } if id == "msaa-storage"),
        "{e}"
    );
    let e = g
        .create_texture(TextureDescriptor::new("mips", (16, 8), F::Rgba8Unorm, ra).with_mips(6))
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::InvalidDescriptor { id, .. } if id == "mips"),
        "{e}"
    );
    // An import must match mips, samples and layers too.
    let real = ctx.device.create_texture(
        &TextureDescriptor::new("real", (16, 8), F::Rgba8Unorm, ra).wgpu_descriptor(),
    );
    let e = g
        .import_texture(
            TextureDescriptor::new("real-msaa", (16, 8), F::Rgba8Unorm, ra).with_samples(4),
            &real,
        )
        .unwrap_err();
    assert!(matches!(&e, GraphError::TextureMismatch { .. }), "{e}");
}

#[test]
fn hazards_are_per_subresource_and_whole_texture_uses_meet_every_one() {
    let ctx = ctx();
    let mut g = CommandGraph::new("subresources", &ctx.device);
    let usage = T::RENDER_ATTACHMENT | T::TEXTURE_BINDING | T::COPY_SRC;
    let layered = g
        .create_texture(
            TextureDescriptor::new("layered", (8, 8), F::Rgba8Unorm, usage)
                .with_layers(2)
                .with_mips(2),
        )
        .unwrap();
    let at = |mip_level, layer| {
        let mut c = ColorAttachment::new(layered, ColorLoad::Clear(GREEN));
        c.target = Subresource {
            texture: layered,
            mip_level,
            layer,
        };
        c
    };
    g.add_render_pass_node(pass("layer-0", vec![at(0, 0)], None))
        .unwrap();
    g.add_render_pass_node(pass("layer-1", vec![at(0, 1)], None))
        .unwrap();
    g.add_render_pass_node(pass("mip-1", vec![at(1, 0)], None))
        .unwrap();
    g.add_render_pass_node(pass("layer-0-again", vec![at(0, 0)], None))
        .unwrap();
    let sink = g
        .create_buffer(BufferDescriptor::new("sink", 4, U::COPY_DST))
        .unwrap();
    g.add_copy_node(CopyNode::new(
        "whole-read",
        vec![
            ResourceUse::texture(layered, TextureAccess::CopySrc),
            ResourceUse::copy_dst(sink),
        ],
        |_| Ok(copy_fn(|_, _| {})),
    ))
    .unwrap();
    let c = g.compile().unwrap();
    let mut edges: Vec<(String, String)> = c
        .edges()
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    edges.sort();
    edges.dedup();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        edges,
        vec![
            pair("layer-0", "layer-0-again"),
            pair("layer-0-again", "whole-read"),
            pair("layer-1", "whole-read"),
            pair("mip-1", "whole-read"),
        ]
    );
}

fn read_texels(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Vec<u32> {
    gpugraph_testing::read_buffer(ctx, buffer)
}

/// A copy node reading mip 0 / layer 0 of a 64x`h` Rgba8 texture into `out`.
fn read_back_node(g: &mut CommandGraph, id: &str, tex: TextureHandle, out: &wgpu::Buffer, h: u32) {
    let out_h = g
        .import_buffer(
            BufferDescriptor::new(format!("{id}/out"), out.size(), U::COPY_DST),
            out,
        )
        .unwrap();
    g.add_copy_node(CopyNode::new(
        id,
        vec![
            ResourceUse::texture(tex, TextureAccess::CopySrc),
            ResourceUse::copy_dst(out_h),
        ],
        move |_| {
            Ok(copy_fn(move |enc, ec| {
                enc.copy_texture_to_buffer(
                    ec.texture(tex).as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: ec.buffer(out_h),
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(256),
                            rows_per_image: Some(h),
                        },
                    },
                    wgpu::Extent3d {
                        width: 64,
                        height: h,
                        depth_or_array_layers: 1,
                    },
                );
            }))
        },
    ))
    .unwrap();
}

#[test]
fn multisample_resolve_and_depth_run_through_the_graph() {
    let ctx = ctx();
    let (w, h) = (64u32, 4u32);
    let mut g = CommandGraph::new("resolve", &ctx.device);
    let ra = T::RENDER_ATTACHMENT;
    let msaa = g
        .create_texture(TextureDescriptor::new("msaa", (w, h), F::Rgba8Unorm, ra).with_samples(4))
        .unwrap();
    let depth = g
        .create_texture(
            TextureDescriptor::new("depth", (w, h), F::Depth32Float, ra).with_samples(4),
        )
        .unwrap();
    let resolved = g
        .create_texture(TextureDescriptor::new(
            "resolved",
            (w, h),
            F::Rgba8Unorm,
            ra | T::COPY_SRC,
        ))
        .unwrap();
    let mut color = ColorAttachment::new(msaa, ColorLoad::Clear(GREEN)).resolve_into(resolved);
    color.store = false;
    let mut d = DepthStencilAttachment::cleared_depth(depth, 1.0);
    d.depth = Some(AspectOps {
        clear: Some(1.0),
        store: false,
    });
    g.add_render_pass_node(pass("clear-and-resolve", vec![color], Some(d)))
        .unwrap();
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256 * u64::from(h),
        usage: U::COPY_DST | U::COPY_SRC,
        mapped_at_creation: false,
    });
    read_back_node(&mut g, "read", resolved, &out, h);
    let mut c = g.compile().unwrap();
    assert_eq!(c.node_order(), ["clear-and-resolve", "read"]);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    c.encode(&mut enc, &EncodeOptions::default()).unwrap();
    ctx.queue.submit([enc.finish()]);
    let texels = read_texels(&ctx, &out);
    // Without the resolve the target keeps its zero-initialized contents.
    let green = u32::from_le_bytes([0, 255, 0, 255]);
    assert!(texels.iter().all(|&t| t == green), "{:x?}", &texels[..4]);
}

#[test]
fn graph_textures_with_disjoint_lifetimes_share_one_allocation() {
    let ctx = ctx();
    let (w, h) = (64u32, 2u32);
    let mut g = CommandGraph::new("alias", &ctx.device);
    let usage = T::RENDER_ATTACHMENT | T::COPY_SRC;
    let a = g
        .create_texture(TextureDescriptor::new("a", (w, h), F::Rgba8Unorm, usage))
        .unwrap();
    let b = g
        .create_texture(TextureDescriptor::new("b", (w, h), F::Rgba8Unorm, usage))
        .unwrap();
    let other = g
        .create_texture(TextureDescriptor::new(
            "other",
            (w, h),
            F::Bgra8Unorm,
            usage,
        ))
        .unwrap();
    let red = wgpu::Color::RED;
    g.add_render_pass_node(pass(
        "draw-a",
        vec![ColorAttachment::new(a, ColorLoad::Clear(red))],
        None,
    ))
    .unwrap();
    let out_a = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256 * u64::from(h),
        usage: U::COPY_DST | U::COPY_SRC,
        mapped_at_creation: false,
    });
    read_back_node(&mut g, "read-a", a, &out_a, h);
    g.add_render_pass_node(pass(
        "draw-b",
        vec![ColorAttachment::new(b, ColorLoad::Clear(GREEN))],
        None,
    ))
    .unwrap();
    g.add_render_pass_node(pass(
        "draw-other",
        vec![ColorAttachment::new(other, ColorLoad::Clear(GREEN))],
        None,
    ))
    .unwrap();
    let out_b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256 * u64::from(h),
        usage: U::COPY_DST | U::COPY_SRC,
        mapped_at_creation: false,
    });
    read_back_node(&mut g, "read-b", b, &out_b, h);
    let mut c = g.compile().unwrap();
    let stats = c.stats();
    assert_eq!(
        (stats.logical_texture_count, stats.physical_texture_count),
        (3, 2)
    );
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    c.encode(&mut enc, &EncodeOptions::default()).unwrap();
    ctx.queue.submit([enc.finish()]);
    // Sharing one allocation, each tenant still reads what its own pass wrote.
    let red_texel = u32::from_le_bytes([255, 0, 0, 255]);
    let green_texel = u32::from_le_bytes([0, 255, 0, 255]);
    assert!(read_texels(&ctx, &out_a).iter().all(|&t| t == red_texel));
    assert!(read_texels(&ctx, &out_b).iter().all(|&t| t == green_texel));
}
