//! External textures on a real device (lavapipe in CI): a render node samples the frame's
//! external image, resolved while encoding, so successive frames show successive images
//! through one compiled graph; reuse, non-sampled access and wrong descriptors fail by name.

use gpugraph_command::wgpu::{self, BufferUsages as U, TextureFormat as F, TextureUsages as T};
use gpugraph_command::{
    copy_fn, BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph, CompiledGraph, CopyNode,
    EncodeOptions, FrameTextures, GpuContext, GraphError, NodeError, RenderExecutable,
    RenderPassNode, ResourceUse, TextureAccess, TextureDescriptor, TextureHandle,
};

const W: u32 = 64;
const H: u32 = 2;

use gpugraph_testing::ctx;

/// Draws a full-screen triangle whose color is texel (0, 0) of the external texture, with a
/// bind group made per encode from the texture of that encoding.
struct Sample {
    pipeline: wgpu::RenderPipeline,
    external: TextureHandle,
    device: wgpu::Device,
}

impl RenderExecutable for Sample {
    fn encode(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        ctx: &gpugraph_command::EncodeContext<'_>,
    ) -> Result<(), NodeError> {
        let view = ctx.texture(self.external).create_view(&Default::default());
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&view),
            }],
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.draw(0..3, 0..1);
        Ok(())
    }
}

fn external_desc() -> TextureDescriptor {
    TextureDescriptor::new("video", (4, 4), F::Rgba8Unorm, T::TEXTURE_BINDING)
}

fn graph(ctx: &GpuContext) -> (CompiledGraph, TextureHandle, wgpu::Buffer) {
    let mut g = CommandGraph::new("external", &ctx.device);
    let external = g.import_external_texture(external_desc()).unwrap();
    let target = g
        .create_texture(TextureDescriptor::new(
            "target",
            (W, H),
            F::Rgba8Unorm,
            T::RENDER_ATTACHMENT | T::COPY_SRC,
        ))
        .unwrap();
    g.add_render_pass_node(RenderPassNode {
        id: "sample".into(),
        color: vec![ColorAttachment::new(
            target,
            ColorLoad::Clear(wgpu::Color::BLACK),
        )],
        depth_stencil: None,
        uses: vec![ResourceUse::texture(external, TextureAccess::Sampled)],
        depends_on: vec![],
        compile: Box::new(move |cc| {
            let m = cc
                .device()
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: None,
                    source: wgpu::ShaderSource::Wgsl(
                        "@group(0) @binding(0) var image: texture_2d<f32>;
                     @vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
                         let p = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
                         return vec4<f32>(p * 2.0 - 1.0, 0.0, 1.0);
                     }
                     @fragment fn fs() -> @location(0) vec4<f32> {
                         return textureLoad(image, vec2<u32>(0u, 0u), 0);
                     }"
                        .into(),
                    ),
                });
            let pipeline = cc
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
                        targets: &[Some(F::Rgba8Unorm.into())],
                    }),
                    multiview_mask: None,
                    cache: None,
                });
            Ok(Box::new(Sample {
                pipeline,
                external,
                device: cc.device().clone(),
            }) as Box<dyn RenderExecutable>)
        }),
    })
    .unwrap();
    let out = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256 * u64::from(H),
        usage: U::COPY_DST | U::COPY_SRC,
        mapped_at_creation: false,
    });
    let out_h = g
        .import_buffer(BufferDescriptor::new("out", out.size(), U::COPY_DST), &out)
        .unwrap();
    g.add_copy_node(CopyNode::new(
        "read",
        vec![
            ResourceUse::texture(target, TextureAccess::CopySrc),
            ResourceUse::copy_dst(out_h),
        ],
        move |_| {
            Ok(copy_fn(move |enc, ec| {
                enc.copy_texture_to_buffer(
                    ec.texture(target).as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: ec.buffer(out_h),
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(256),
                            rows_per_image: Some(H),
                        },
                    },
                    wgpu::Extent3d {
                        width: W,
                        height: H,
                        depth_or_array_layers: 1,
                    },
                );
            }))
        },
    ))
    .unwrap();
    (g.compile().unwrap(), external, out)
}

/// A 4x4 external image filled with one color (the application's copy of a decoded frame).
fn image(ctx: &GpuContext, rgba: [u8; 4]) -> wgpu::Texture {
    // The application's texture may carry more usages than the graph needs (it writes it).
    let mut desc = external_desc();
    desc.usage |= T::COPY_DST;
    let t = ctx.device.create_texture(&desc.wgpu_descriptor());
    ctx.queue.write_texture(
        t.as_image_copy(),
        &rgba.repeat(16),
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(16),
            rows_per_image: Some(4),
        },
        wgpu::Extent3d {
            width: 4,
            height: 4,
            depth_or_array_layers: 1,
        },
    );
    t
}

fn first_texel(ctx: &GpuContext, out: &wgpu::Buffer) -> u32 {
    gpugraph_testing::read(ctx, out, 0, 1)[0]
}

fn encode(
    ctx: &GpuContext,
    c: &mut CompiledGraph,
    frame_id: u64,
    textures: &[(TextureHandle, &wgpu::Texture)],
) -> Result<(), GraphError> {
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    c.encode_frame(
        &mut enc,
        &EncodeOptions::default(),
        &FrameTextures { frame_id, textures },
    )?;
    ctx.queue.submit([enc.finish()]);
    Ok(())
}

#[test]
fn each_frame_samples_its_own_fresh_external_image() {
    let ctx = ctx();
    let (mut c, external, out) = graph(&ctx);
    let red = image(&ctx, [255, 0, 0, 255]);
    let green = image(&ctx, [0, 255, 0, 255]);
    encode(&ctx, &mut c, 1, &[(external, &red)]).unwrap();
    assert_eq!(
        first_texel(&ctx, &out),
        u32::from_le_bytes([255, 0, 0, 255])
    );
    encode(&ctx, &mut c, 2, &[(external, &green)]).unwrap();
    assert_eq!(
        first_texel(&ctx, &out),
        u32::from_le_bytes([0, 255, 0, 255])
    );
    // The same texture twice in a row is not a fresh image.
    let e = encode(&ctx, &mut c, 3, &[(external, &green)]).unwrap_err();
    assert!(
        matches!(&e, GraphError::ExternalTextureReused { frame: 3, texture, .. } if texture == "video"),
        "{e}"
    );
    // A stale frame ID with a fresh texture is refused too; then the next frame works.
    let e = encode(&ctx, &mut c, 2, &[(external, &red)]).unwrap_err();
    assert!(matches!(e, GraphError::StaleFrame { .. }), "{e}");
    encode(&ctx, &mut c, 3, &[(external, &red)]).unwrap();
    assert_eq!(
        first_texel(&ctx, &out),
        u32::from_le_bytes([255, 0, 0, 255])
    );
    // The graph never destroyed the application's images.
    encode(&ctx, &mut c, 4, &[(external, &green)]).unwrap();
    assert_eq!(
        first_texel(&ctx, &out),
        u32::from_le_bytes([0, 255, 0, 255])
    );
}

#[test]
fn external_textures_are_sampled_only() {
    let ctx = ctx();
    let mut g = CommandGraph::new("external-misuse", &ctx.device);
    let e = g
        .import_external_texture(TextureDescriptor::new(
            "storage-video",
            (4, 4),
            F::Rgba8Unorm,
            T::TEXTURE_BINDING | T::COPY_SRC,
        ))
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::InvalidDescriptor { id, .. } if id == "storage-video"),
        "{e}"
    );
    let external = g.import_external_texture(external_desc()).unwrap();
    let sink = g
        .create_buffer(BufferDescriptor::new("sink", 256, U::COPY_DST))
        .unwrap();
    let e = g
        .add_copy_node(CopyNode::new(
            "copy-video",
            vec![
                ResourceUse::texture(external, TextureAccess::CopySrc),
                ResourceUse::copy_dst(sink),
            ],
            |_| Ok(copy_fn(|_, _| {})),
        ))
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::ExternalTextureAccess { access, .. } if access == "copy-source"),
        "{e}"
    );
    let e = g
        .add_render_pass_node(RenderPassNode {
            id: "draw-into-video".into(),
            color: vec![ColorAttachment::new(external, ColorLoad::Load)],
            depth_stencil: None,
            uses: vec![],
            depends_on: vec![],
            compile: Box::new(|_| Ok(gpugraph_command::render_fn(|_, _| {}))),
        })
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::ExternalTextureAccess { access, .. } if access == "render-target"),
        "{e}"
    );
}
