//! The viewer on a real device (lavapipe in CI; no adapter is a failure, never a skip):
//! frames drawn offscreen through the same `Viewer::render` the shells use, with the GPU
//! pick, the visible count and the collapse checked against the trace crate's CPU oracles,
//! and the picture checked where the selection is drawn.

use gpugraph_command::GpuContext;
use gpugraph_trace::{parse_chrome_trace, IngestOptions, TraceModel};
use gpugraph_viewer::labels::LabelKind;
use gpugraph_viewer::{InputEvent, Key, Viewer};

const W: u32 = 1000;
const H: u32 = 420;
const FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

fn model() -> TraceModel {
    let mut ev = Vec::new();
    for p in 1..=3 {
        ev.push(format!(
            r#"{{"ph":"M","name":"process_name","pid":{p},"args":{{"name":"proc-{p}"}}}}"#
        ));
        for t in 1..=2 {
            for k in 0..6u64 {
                let ts = k * 100 + p * 7 + t * 3;
                ev.push(format!(
                    r#"{{"ph":"X","name":"step","pid":{p},"tid":{t},"ts":{ts},"dur":90}}"#
                ));
                ev.push(format!(
                    r#"{{"ph":"X","name":"inner{}","pid":{p},"tid":{t},"ts":{},"dur":40}}"#,
                    k % 3,
                    ts + 5
                ));
            }
        }
    }
    ev.push(r#"{"ph":"s","id":1,"pid":1,"tid":1,"ts":20}"#.into());
    ev.push(r#"{"ph":"f","bp":"e","id":1,"pid":2,"tid":1,"ts":130}"#.into());
    parse_chrome_trace(
        format!("[{}]", ev.join(",")).as_bytes(),
        IngestOptions::default(),
    )
    .unwrap()
}

struct Rig {
    ctx: GpuContext,
    viewer: Viewer,
    target: wgpu::Texture,
}

impl Rig {
    fn new() -> Self {
        let ctx = gpugraph_testing::ctx();
        let viewer = Viewer::new(
            ctx.device.clone(),
            ctx.queue.clone(),
            FORMAT,
            model(),
            (W, H),
            1.0,
        )
        .unwrap();
        let target = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("target"),
            size: wgpu::Extent3d {
                width: W,
                height: H,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        Self {
            ctx,
            viewer,
            target,
        }
    }

    /// Draws until a frame's readback has arrived for the latest view.
    fn settle(&mut self) {
        let view = self.target.create_view(&Default::default());
        for _ in 0..10 {
            if self.viewer.needs_frame() {
                self.viewer.render(&view).unwrap();
            }
            self.ctx
                .device
                .poll(wgpu::PollType::wait_indefinitely())
                .unwrap();
            self.viewer.poll();
            let s = self.viewer.stats();
            if !self.viewer.needs_frame() && s.completed == s.frames {
                return;
            }
        }
        panic!("no readback arrived");
    }

    fn click(&mut self, x: f32, y: f32, shift: bool) {
        self.viewer.handle(InputEvent::PointerDown {
            x,
            y,
            primary: true,
        });
        self.viewer.handle(InputEvent::PointerUp { x, y, shift });
        self.settle();
    }

    /// Draws one frame if one is due, without waiting for the GPU (a shell's frame).
    fn frame(&mut self) {
        let view = self.target.create_view(&Default::default());
        if self.viewer.needs_frame() {
            self.viewer.render(&view).unwrap();
        }
        self.viewer.poll();
    }

    fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let row = (W * 4).div_ceil(256) * 256;
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("pixels"),
            size: u64::from(row * H),
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        enc.copy_texture_to_buffer(
            self.target.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: None,
                },
            },
            self.target.size(),
        );
        self.ctx.queue.submit([enc.finish()]);
        let bytes = gpugraph_tables::readback::read_bytes(
            &self.ctx.device,
            &self.ctx.queue,
            &staging,
            0,
            u64::from(row * H),
        )
        .unwrap();
        let at = (y * row + 4 * x) as usize;
        [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]
    }
}

#[test]
fn frames_picks_and_collapse_match_the_cpu_oracles() {
    let mut rig = Rig::new();
    rig.settle();
    let v = &rig.viewer;
    assert_eq!(v.stats().visible, Some(v.oracle_visible() as u32));
    assert!(v.oracle_visible() > 0);
    let pipelines = v.frame().pipelines_created();

    // Zoom in about the plot's middle: the window shrinks, counts still match.
    let r = v.regions();
    let w0 = v.state().camera.window();
    rig.viewer.handle(InputEvent::Wheel {
        x: r.plot.x + r.plot.w * 0.3,
        y: r.plot.y + 10.0,
        dx: 0.0,
        dy: -300.0,
    });
    rig.viewer.handle(InputEvent::Key(Key::D));
    let reused = rig.viewer.stats().reused;
    rig.settle();
    // The redraw for the counts that came back draws the graphs' results again without
    // running them (same view), and the counts still match.
    assert!(rig.viewer.stats().reused > reused);
    let w1 = rig.viewer.state().camera.window();
    assert!(w1.1 - w1.0 < w0.1 - w0.0, "{w0:?} -> {w1:?}");
    assert_eq!(
        rig.viewer.stats().visible,
        Some(rig.viewer.oracle_visible() as u32)
    );

    // Click an inner span: the GPU pick is the oracle's, and it is drawn selected.
    let id = (0..rig.viewer.model().spans.len() as u32)
        .find(|&i| {
            rig.viewer.model().spans[i as usize].lane() == 1 && rig.viewer.span_point(i).is_some()
        })
        .expect("an inner span on screen");
    let (x, y) = rig.viewer.span_point(id).unwrap();
    let want = rig.viewer.oracle_pick(x, y);
    assert_eq!(want, Some(id));
    rig.click(x, y, false);
    assert_eq!(rig.viewer.state().selected, want);
    let px = rig.pixel(x as u32, y as u32);
    // Orange (255, 140, 0), maybe under a faint grid line.
    assert!(
        px[0] > 200 && (90..160).contains(&px[1]) && px[2] < 40,
        "the selected span is drawn orange: {px:?}"
    );

    // Shift-click: a focus seed; visible count under focus matches the oracle.
    rig.click(x, y, true);
    assert_eq!(rig.viewer.state().focus_seeds, vec![id]);
    assert_eq!(
        rig.viewer.stats().visible,
        Some(rig.viewer.oracle_visible() as u32)
    );
    rig.viewer.handle(InputEvent::Key(Key::Escape));

    // Click empty time: nothing selected.
    let r = rig.viewer.regions();
    rig.click(r.plot.right() - 2.0, r.plot.bottom() - 2.0, false);
    assert_eq!(rig.viewer.state().selected, None);

    // Collapse process 0 by its label.
    let before = rig.viewer.stats().visible.unwrap();
    let (lx, ly) = rig.viewer.label_center(LabelKind::Process(0)).unwrap();
    rig.click(lx, ly, false);
    assert!(rig.viewer.state().collapsed_processes.contains(&0));
    let after = rig.viewer.stats().visible.unwrap();
    assert_eq!(after, rig.viewer.oracle_visible() as u32);
    assert!(after < before, "{after} < {before}");

    // Nothing recompiled.
    assert_eq!(rig.viewer.frame().pipelines_created(), pipelines);
    assert_eq!(rig.viewer.compiles(), 1);
}

#[test]
fn the_tooltip_is_the_oracles_span_under_the_pointer() {
    let mut rig = Rig::new();
    rig.settle();
    let m = rig.viewer.model().clone();
    let on_screen: Vec<u32> = (0..m.spans.len() as u32)
        .filter(|&i| rig.viewer.span_point(i).is_some())
        .collect();
    assert!(on_screen.len() > 4);
    let tooltip_at = |rig: &Rig, (x, y): (f32, f32)| {
        let want = rig
            .viewer
            .oracle_pick(x, y)
            .expect("a span under the pointer");
        let got = rig.viewer.tooltip().expect("a tooltip");
        let facts = gpugraph_viewer::tooltip::Tooltip::of(&m, want).unwrap();
        assert_eq!(rig.viewer.state().hovered, Some(want));
        assert_eq!(
            (got.name.as_str(), got.duration),
            (m.name_of(want), facts.duration)
        );
        assert_eq!(got, facts);
    };

    let p = rig.viewer.span_point(on_screen[1]).unwrap();
    rig.viewer
        .handle(InputEvent::PointerMove { x: p.0, y: p.1 });
    assert!(rig.viewer.pick_pending());
    rig.settle();
    tooltip_at(&rig, p);

    // A pointer moving every frame: one hover pick in flight at a time, the latest position
    // queued, so the tooltip converges on where the pointer stopped.
    for &id in on_screen.iter().rev().take(4) {
        let (x, y) = rig.viewer.span_point(id).unwrap();
        rig.viewer.handle(InputEvent::PointerMove { x, y });
        rig.frame();
    }
    let last = rig
        .viewer
        .span_point(on_screen[on_screen.len() - 4])
        .unwrap();
    rig.settle();
    tooltip_at(&rig, last);

    // A click while a hover pick is pending still selects what the oracle picks.
    let p = rig.viewer.span_point(on_screen[2]).unwrap();
    rig.viewer
        .handle(InputEvent::PointerMove { x: p.0, y: p.1 });
    rig.frame();
    rig.click(p.0, p.1, false);
    assert_eq!(
        rig.viewer.state().selected,
        rig.viewer.oracle_pick(p.0, p.1)
    );
    tooltip_at(&rig, p);

    // Leaving the surface takes the tooltip away.
    rig.viewer.handle(InputEvent::PointerLeave);
    rig.settle();
    assert_eq!(rig.viewer.tooltip(), None);
}

#[test]
fn an_empty_trace_draws_without_spans() {
    let ctx = gpugraph_testing::ctx();
    let model = parse_chrome_trace(b"[]", IngestOptions::default()).unwrap();
    let mut v = Viewer::new(
        ctx.device.clone(),
        ctx.queue.clone(),
        FORMAT,
        model,
        (W, H),
        1.0,
    )
    .unwrap();
    let target = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("target"),
        size: wgpu::Extent3d {
            width: W,
            height: H,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    });
    let view = target.create_view(&Default::default());
    v.handle(InputEvent::PointerDown {
        x: 500.0,
        y: 100.0,
        primary: true,
    });
    v.handle(InputEvent::PointerUp {
        x: 500.0,
        y: 100.0,
        shift: false,
    });
    for _ in 0..3 {
        v.render(&view).unwrap();
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .unwrap();
        v.poll();
    }
    assert_eq!(v.stats().visible, Some(0));
    assert_eq!(v.state().selected, None);
    assert!(!v.pick_pending());
}
