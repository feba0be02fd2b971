//! The frame's picture on the GPU: visible spans are drawn where the window and the row
//! layout put them, hidden lanes and empty time stay background, edges are drawn, and a
//! window or collapse change redraws through the same compiled graph (indirect draws fed by
//! the compactions, no readback of counts).

mod common;

use common::*;
use gpugraph_command::GpuContext;
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::*;

const W: u32 = 200;
const H: u32 = 60;

/// The picture as RGBA rows (explicit texture readback for checking).
fn picture(ctx: &GpuContext, t: &wgpu::Texture) -> Vec<[u8; 4]> {
    let row = (W * 4).div_ceil(256) * 256;
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("picture"),
        size: u64::from(row * H),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    submit(ctx, |e| {
        e.copy_texture_to_buffer(
            t.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: None,
                },
            },
            t.size(),
        )
    });
    let words = read(ctx, &staging, (row * H / 4) as usize);
    let bytes: &[u8] = bytemuck::cast_slice(&words);
    (0..H)
        .flat_map(|y| {
            (0..W).map(move |x| {
                let at = (y * row + 4 * x) as usize;
                [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]
            })
        })
        .collect()
}

fn at(p: &[[u8; 4]], x: u32, y: u32) -> [u8; 4] {
    p[(y * W + x) as usize]
}

const WHITE: [u8; 4] = [255, 255, 255, 255];

#[test]
fn spans_and_edges_are_drawn_where_the_layout_says() {
    let ctx = ctx();
    let m = parse_chrome_trace(
        br#"[
        {"ph":"X","name":"root","pid":1,"tid":1,"ts":0,"dur":100},
        {"ph":"X","name":"child","pid":1,"tid":1,"ts":10,"dur":20},
        {"ph":"X","name":"other","pid":1,"tid":2,"ts":50,"dur":40},
        {"ph":"s","id":1,"pid":1,"tid":1,"ts":40},
        {"ph":"f","bp":"e","id":1,"pid":1,"tid":2,"ts":60}
        ]"#,
        IngestOptions::default(),
    )
    .unwrap();
    let mut config = TraceFrameConfig::exact(&m, 1);
    config.picture = Some((W, H));
    let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).unwrap();
    submit(&ctx, |e| f.encode_build(e).unwrap());
    let draw = |f: &mut TraceFrame, view: &TraceView| {
        f.write_view(&ctx.queue, view).unwrap();
        submit(&ctx, |e| f.encode(e).unwrap());
        picture(&ctx, f.buffers().color.as_ref().unwrap())
    };
    // Three rows of 20 px: root (thread 1 lane 0), child (lane 1), other (thread 2).
    let view = TraceView {
        window: (0, m.end),
        ..Default::default()
    };
    let compiled = f.pipelines_created();
    let p = draw(&mut f, &view);
    assert_ne!(at(&p, 100, 10), WHITE, "root");
    assert_ne!(at(&p, 40, 30), WHITE, "child");
    assert_eq!(at(&p, 150, 30), WHITE, "after the child ends");
    assert_ne!(at(&p, 140, 50), WHITE, "other");
    assert_eq!(at(&p, 20, 50), WHITE, "before other starts");
    let edge = |p: &[[u8; 4]]| p.iter().filter(|c| c[2] > 200 && c[0] < 60).count();
    assert_eq!(m.dependencies.len(), 1);
    assert!(edge(&p) > 0, "the root → other edge is drawn");
    // Zoomed to [0, 50]: other is out of the window, so is its edge.
    let zoom = draw(
        &mut f,
        &TraceView {
            window: (0, 50_000 - 1),
            ..Default::default()
        },
    );
    assert_ne!(at(&zoom, 60, 30), WHITE, "child now spans x 40..120");
    assert_eq!(at(&zoom, 150, 50), WHITE, "other is outside the window");
    assert_eq!(edge(&zoom), 0);
    // Thread 1 collapsed: two rows of 30 px; the child is hidden.
    let collapsed = draw(
        &mut f,
        &TraceView {
            window: (0, m.end),
            collapsed_threads: [0].into(),
            ..Default::default()
        },
    );
    assert_ne!(at(&collapsed, 40, 15), WHITE, "root row");
    assert_ne!(at(&collapsed, 140, 45), WHITE, "other row");
    assert_eq!(f.pipelines_created(), compiled);
}
