//! Spans as GPUScene records (spec T.1 scene projection): every frame rewrites one 128-byte
//! record per span slot from the spans and the frame's rows; compared with
//! `cpu::scene_record` over random traces and views, holes past the loaded spans, and the
//! borrowed scene's state; view changes compile nothing.

mod common;

use common::*;
use gpugraph_render::GpuSceneRecord;
use gpugraph_trace::cpu;
use gpugraph_trace::frame::{TraceFrame, TraceFrameConfig};
use gpugraph_trace::*;
use rand::SeedableRng;

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn spans_project_into_scene_records() {
    let ctx = ctx();
    let mut r = rand::rngs::StdRng::seed_from_u64(77);
    for (seed, n) in [(41, 0), (42, 1), (43, 300)] {
        let m = random_trace(seed, n);
        let mut config = TraceFrameConfig::exact(&m, 2);
        config.scene_records = true;
        config.span_capacity += 3;
        let cap = config.span_capacity as usize;
        let mut f = TraceFrame::new(&ctx.device, &ctx.queue, &m, config).unwrap();
        let state = f.scene().unwrap().state();
        assert_eq!((state.count, state.active_count), (n as u32, n as u32));
        submit(&ctx, |e| f.encode_build(e).unwrap());
        let compiled = f.pipelines_created();
        for k in 0..4 {
            let view = if k == 0 {
                TraceView::default()
            } else {
                random_view(&mut r, &m, 2)
            };
            f.write_view(&ctx.queue, &view).unwrap();
            submit(&ctx, |e| f.encode(e).unwrap());
            let want = cpu::frame(&m, &view, config.max_ancestor_depth);
            let words = read(&ctx, f.buffers().scene_records.as_ref().unwrap(), 32 * cap);
            let got: &[GpuSceneRecord] = bytemuck::cast_slice(&words);
            for (i, g) in got.iter().enumerate() {
                if i >= n {
                    assert_eq!(*g, bytemuck::Zeroable::zeroed(), "slot {i} is a hole");
                    continue;
                }
                let w = cpu::scene_record(&m.spans, i as u32, want.rows[i], 1e-3);
                let ints = |r: &GpuSceneRecord| {
                    (
                        r.object_id,
                        r.flags,
                        r.group_id,
                        r.geometry_id,
                        r.command_slot,
                    )
                };
                assert_eq!(ints(g), ints(&w), "slot {i} view {k}");
                let floats = |r: &GpuSceneRecord| {
                    let mut v = r.sphere.to_vec();
                    v.extend(r.aabb_min);
                    v.extend(r.aabb_max);
                    v.extend(r.transform.iter().flatten());
                    v
                };
                for (a, b) in floats(g).iter().zip(floats(&w)) {
                    assert!(close(*a, b), "slot {i} view {k}: {g:?} vs {w:?}");
                }
            }
        }
        assert_eq!(f.pipelines_created(), compiled);
    }
}
