//! Frame textures and TextureHistory on a real device: one compiled graph renders into the
//! current history slot and copies the previous slot out, frame after frame, with strictly
//! increasing frame IDs; stale frames, missing, foreign-shaped and non-frame textures, plain
//! encodes and compile-time resolution of a frame texture fail by name.

mod common;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U, TextureFormat as F, TextureUsages as T};
use gpugraph_command::{
    copy_fn, render_fn, ColorAttachment, ColorLoad, CommandGraph, CompiledGraph, CopyNode,
    EncodeOptions, FrameTextures, GpuContext, GraphError, RenderPassNode, ResourceUse,
    TextureAccess, TextureDescriptor, TextureHandle,
};
use gpugraph_render::{RenderError, TextureHistory};

const W: u32 = 64;
const H: u32 = 2;

fn desc(id: &str) -> TextureDescriptor {
    TextureDescriptor::new(
        id,
        (W, H),
        F::Rgba8Unorm,
        T::RENDER_ATTACHMENT | T::COPY_SRC,
    )
}

struct Setup {
    compiled: CompiledGraph,
    current: TextureHandle,
    previous: TextureHandle,
    out: wgpu::Buffer,
}

fn setup(ctx: &GpuContext) -> Setup {
    let mut g = CommandGraph::new("history", &ctx.device);
    let current = g.import_frame_texture(desc("current")).unwrap();
    let previous = g.import_frame_texture(desc("previous")).unwrap();
    g.add_render_pass_node(RenderPassNode {
        id: "draw".into(),
        color: vec![ColorAttachment::new(
            current,
            ColorLoad::Clear(wgpu::Color::RED),
        )],
        depth_stencil: None,
        uses: vec![],
        depends_on: vec![],
        compile: Box::new(|_| Ok(render_fn(|_, _| {}))),
    })
    .unwrap();
    let out = upload(ctx, &vec![POISON; (256 * H / 4) as usize], U::empty());
    let out_h = import(&mut g, "out", &out);
    g.add_copy_node(CopyNode::new(
        "read-previous",
        vec![
            ResourceUse::texture(previous, TextureAccess::CopySrc),
            ResourceUse::copy_dst(out_h),
        ],
        move |_| {
            Ok(copy_fn(move |enc, ec| {
                enc.copy_texture_to_buffer(
                    ec.texture(previous).as_image_copy(),
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
    Setup {
        compiled: g.compile().unwrap(),
        current,
        previous,
        out,
    }
}

fn encode_frame(
    ctx: &GpuContext,
    s: &mut Setup,
    frame: &FrameTextures<'_>,
) -> Result<(), GraphError> {
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    s.compiled
        .encode_frame(&mut enc, &EncodeOptions::default(), frame)?;
    ctx.queue.submit([enc.finish()]);
    Ok(())
}

#[test]
fn the_previous_frame_is_what_the_last_frame_rendered() {
    let ctx = ctx();
    let mut s = setup(&ctx);
    let mut history = TextureHistory::new(&ctx.device, &desc("history"), 2).unwrap();
    let red = u32::from_le_bytes([255, 0, 0, 255]);
    for (k, frame_id) in [10u64, 11, 15].into_iter().enumerate() {
        history.advance(frame_id).unwrap();
        let (id, _) = history.current().unwrap();
        assert_eq!(id, frame_id);
        let textures = history.frame_textures(s.current, s.previous).unwrap();
        encode_frame(
            &ctx,
            &mut s,
            &FrameTextures {
                frame_id,
                textures: &textures,
            },
        )
        .unwrap();
        let out = read_buffer(&ctx, &s.out);
        let row: &[u32] = &out[..W as usize];
        if k == 0 {
            // The first frame's "previous" slot was never rendered (zero-initialized).
            assert!(row.iter().all(|&t| t == 0), "{:x?}", &row[..2]);
            assert!(history.previous(1).is_none());
        } else {
            assert!(
                row.iter().all(|&t| t == red),
                "frame {frame_id}: {:x?}",
                &row[..2]
            );
            assert_eq!(
                history.previous(1).map(|(f, _)| f),
                Some([10, 11, 15][k - 1])
            );
        }
    }
    let e = history.advance(15).unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::StaleHistoryFrame {
                frame: 15,
                last: 15,
                ..
            }
        ),
        "{e}"
    );
    history.destroy();
    assert!(matches!(
        history.current(),
        Err(RenderError::HistoryDestroyed { .. })
    ));
    assert!(matches!(
        TextureHistory::new(&ctx.device, &desc("short"), 1),
        Err(RenderError::HistoryLength { length: 1, .. })
    ));
}

#[test]
fn frame_mistakes_fail_before_anything_is_recorded() {
    let ctx = ctx();
    let mut s = setup(&ctx);
    let make = |d: TextureDescriptor| ctx.device.create_texture(&d.wgpu_descriptor());
    let (a, b) = (make(desc("a")), make(desc("b")));
    let ok = [(s.current, &a), (s.previous, &b)];
    // A plain encode has no frame textures to use.
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let e = s
        .compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::MissingFrameTexture { texture, .. } if texture == "current"),
        "{e}"
    );
    encode_frame(
        &ctx,
        &mut s,
        &FrameTextures {
            frame_id: 7,
            textures: &ok,
        },
    )
    .unwrap();
    let e = encode_frame(
        &ctx,
        &mut s,
        &FrameTextures {
            frame_id: 7,
            textures: &ok,
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            GraphError::StaleFrame {
                frame: 7,
                last: 7,
                ..
            }
        ),
        "{e}"
    );
    let e = encode_frame(
        &ctx,
        &mut s,
        &FrameTextures {
            frame_id: 8,
            textures: &ok[..1],
        },
    )
    .unwrap_err();
    assert!(
        matches!(&e, GraphError::MissingFrameTexture { texture, .. } if texture == "previous"),
        "{e}"
    );
    let small = make(TextureDescriptor::new(
        "small",
        (W / 2, H),
        F::Rgba8Unorm,
        T::RENDER_ATTACHMENT | T::COPY_SRC,
    ));
    let wrong = [(s.current, &small), (s.previous, &b)];
    let e = encode_frame(
        &ctx,
        &mut s,
        &FrameTextures {
            frame_id: 8,
            textures: &wrong,
        },
    )
    .unwrap_err();
    assert!(
        matches!(&e, GraphError::TextureMismatch { id, .. } if id == "current"),
        "{e}"
    );
    let e = encode_frame(
        &ctx,
        &mut s,
        &FrameTextures {
            frame_id: 8,
            textures: &[ok[0], ok[0], ok[1]],
        },
    )
    .unwrap_err();
    assert!(matches!(&e, GraphError::TextureMismatch { .. }), "{e}");
    // The failures above recorded nothing and did not advance the frame.
    encode_frame(
        &ctx,
        &mut s,
        &FrameTextures {
            frame_id: 8,
            textures: &ok,
        },
    )
    .unwrap();

    // A graph texture that is not a frame texture cannot be supplied per frame.
    let mut g = CommandGraph::new("not-frame", &ctx.device);
    let plain = g.create_texture(desc("plain")).unwrap();
    let frame = g.import_frame_texture(desc("frame")).unwrap();
    g.add_render_pass_node(RenderPassNode {
        id: "draw".into(),
        color: vec![ColorAttachment::new(
            frame,
            ColorLoad::Clear(wgpu::Color::RED),
        )],
        depth_stencil: None,
        uses: vec![],
        depends_on: vec![],
        compile: Box::new(|_| Ok(render_fn(|_, _| {}))),
    })
    .unwrap();
    let mut c = g.compile().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let e = c
        .encode_frame(
            &mut enc,
            &EncodeOptions::default(),
            &FrameTextures {
                frame_id: 1,
                textures: &[(plain, &a)],
            },
        )
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::NotAFrameTexture { texture, .. } if texture == "plain"),
        "{e}"
    );

    // Resolving a frame texture while compiling fails the node by name.
    let mut g = CommandGraph::new("compile-time", &ctx.device);
    let frame = g
        .import_frame_texture(TextureDescriptor::new(
            "frame",
            (W, H),
            F::Rgba8Unorm,
            T::TEXTURE_BINDING,
        ))
        .unwrap();
    g.add_copy_node(CopyNode::new(
        "binds-at-compile",
        vec![ResourceUse::texture(frame, TextureAccess::Sampled)],
        move |cc| {
            let _view = cc.texture(frame).create_view(&Default::default());
            Ok(copy_fn(|_, _| {}))
        },
    ))
    .unwrap();
    let e = g.compile().err().unwrap();
    assert!(
        matches!(&e, GraphError::FrameTextureAtCompile { node, texture, .. } if node == "binds-at-compile" && texture == "frame"),
        "{e}"
    );
}
