//! VisibilityWorkflow on a real device against the exact f32 oracle (`visibility::cpu`):
//! masks, compacted IDs and the count written into a drawIndexed record must equal the
//! oracle's bit for bit — over single and multi-chunk inputs, every optional input, empty /
//! all-culled / all-visible / overflowing cases, and view and selection changes on one
//! compiled graph. Every scene is built on dyadic grids on which all of the predicate's
//! products and sums are exact in f32 (asserted through `cpu::exactly_representable`), so any
//! IEEE device — fused multiply-adds or not — must agree exactly. The plane boundaries
//! themselves are tested in `visibility_boundary.rs`.

mod common;
mod visibility_support;

use common::*;
use gpugraph_command::wgpu::BufferUsages as U;
use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_render::{Bounds, RenderError, VisibilityWorkflow};
use visibility_support::*;

#[test]
fn spheres_in_one_chunk_match_the_oracle() {
    check(Case {
        chunks: vec![20_000],
        publish_mask: true,
        extent: 40.0,
        seed: 1,
        ..Default::default()
    });
}

#[test]
fn boxes_over_uneven_chunks_with_every_input_match_the_oracle() {
    check(Case {
        chunks: vec![0, 1, 4095, 4097, 0, 333],
        boxes: true,
        time: true,
        lod: true,
        selection: true,
        given_ids: true,
        publish_mask: true,
        extent: 30.0,
        seed: 2,
        ..Default::default()
    });
}

#[test]
fn spheres_over_chunks_with_given_ids_and_no_published_mask() {
    check(Case {
        chunks: vec![257, 0, 4096, 1],
        selection: true,
        given_ids: true,
        extent: 30.0,
        seed: 3,
        ..Default::default()
    });
}

#[test]
fn empty_inputs_write_count_zero() {
    for chunks in [vec![], vec![0], vec![0, 0, 0]] {
        check(Case {
            chunks,
            publish_mask: true,
            extent: 1.0,
            seed: 4,
            ..Default::default()
        });
    }
}

#[test]
fn all_culled_and_all_visible() {
    let ctx = ctx();
    let view = view_from([0.0, 0.0, 30.0], [0.0, 0.0, 0.0]);
    for (visible, seed) in [(false, 5), (true, 6)] {
        let case = Case {
            chunks: vec![1000, 3000],
            publish_mask: true,
            extent: 5.0,
            seed,
            ..Default::default()
        };
        let mut inputs = Inputs::random(&case);
        for s in &mut inputs.spheres {
            // Behind the eye, or small and near the origin.
            if !visible {
                s[2] += 60.0;
            }
            s[3] = s[3].min(0.5);
        }
        let mask = inputs.oracle(&case, &view);
        assert!(mask.iter().all(|&m| m == u32::from(visible)));
        let mut s = setup(&ctx, &case, &inputs, &view);
        run_and_check(&ctx, &case, &inputs, &view, &mut s);
    }
}

#[test]
fn overflow_writes_the_first_ids_the_true_count_and_the_flag() {
    check(Case {
        chunks: vec![5000, 5000],
        publish_mask: true,
        capacity: Some(10),
        extent: 10.0,
        seed: 7,
        ..Default::default()
    });
}

#[test]
fn view_and_selection_changes_need_no_recompile() {
    let ctx = ctx();
    let case = Case {
        chunks: vec![3000, 2000],
        selection: true,
        lod: true,
        time: true,
        publish_mask: true,
        extent: 30.0,
        seed: 8,
        ..Default::default()
    };
    let mut inputs = Inputs::random(&case);
    let first = view_from([0.0, 0.0, 30.0], [0.0, 0.0, 0.0]);
    let mut s = setup(&ctx, &case, &inputs, &first);
    run_and_check(&ctx, &case, &inputs, &first, &mut s);
    let mut counts = vec![read_buffer(&ctx, s.draw.buffer())[6]];
    let views = [
        view_from([25.0, 5.0, 0.0], [0.0, 0.0, 0.0]).with_time(0.0, 5.0),
        view_from([0.0, 0.0, -30.0], [0.0, 0.0, 0.0]).with_time(25.0, 40.0),
    ];
    for (k, view) in views.iter().enumerate() {
        ctx.queue.write_buffer(&s.view, 0, bytemuck::bytes_of(view));
        // A new selection: the same rows flipped, through the same imported buffer (laid out
        // with the gaps of `chunked`).
        for v in &mut inputs.selection {
            *v = u32::from(*v == 0) * (k as u32 + 1);
        }
        let mut laid = Vec::new();
        let mut at = 0;
        for &len in &case.chunks {
            laid.extend([POISON; GAP as usize]);
            laid.extend_from_slice(&inputs.selection[at..at + len as usize]);
            at += len as usize;
        }
        ctx.queue
            .write_buffer(&s.selection, 0, bytemuck::cast_slice(&laid));
        // Rows past a smaller count keep the previous run's IDs: poison them again.
        let poison = vec![POISON; (s.output.size() / 4) as usize];
        ctx.queue
            .write_buffer(&s.output, 0, bytemuck::cast_slice(&poison));
        run_and_check(&ctx, &case, &inputs, view, &mut s);
        counts.push(read_buffer(&ctx, s.draw.buffer())[6]);
    }
    counts.dedup();
    assert_eq!(
        counts.len(),
        3,
        "each view should change the count: {counts:?}"
    );
}

#[test]
fn bad_declarations_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let small_view = upload(&ctx, &[0u32; 4], U::UNIFORM);
    let view_buf = upload(&ctx, &[view_from([0.0, 0.0, 30.0], [0.0; 3])], U::UNIFORM);
    let data = upload(&ctx, &[0u32; 64], U::empty());
    let out = upload(&ctx, &[0u32; 64], U::empty());
    let small_h = import(&mut g, "small-view", &small_view);
    let view_h = import(&mut g, "view", &view_buf);
    let data_h = import(&mut g, "data", &data);
    let out_h = import(&mut g, "out", &out);
    let f4 = |g: &CommandGraph, n| {
        g.create_vector_view(vec![common::view(g, data_h, VectorFormat::Float32x4, 0, n)])
            .unwrap()
    };
    let u1 = |g: &CommandGraph, h, n| {
        g.create_vector_view(vec![common::view(g, h, VectorFormat::Uint32, 0, n)])
            .unwrap()
    };
    let base = |g: &CommandGraph| VisibilityWorkflow {
        id: "w".into(),
        view: view_h,
        bounds: Bounds::Spheres(f4(g, 8)),
        time_range: None,
        lod: None,
        selection: None,
        ids: None,
        mask: None,
        output: u1(g, out_h, 8),
        count: common::view(g, out_h, VectorFormat::Uint32, 10, 1),
        overflow: None,
    };
    let mut w = base(&g);
    w.bounds = Bounds::Spheres(u1(&g, data_h, 8));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::UnsupportedView { what: "bounds", .. }),
        "{e}"
    );
    let mut w = base(&g);
    w.selection = Some(u1(&g, data_h, 7));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(
            &e,
            RenderError::ChunkMismatch {
                what: "selection",
                ..
            }
        ),
        "{e}"
    );
    let mut w = base(&g);
    w.mask = Some(u1(&g, data_h, 8));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::WritesAlone { what: "mask", buffer, .. } if buffer == "data"),
        "{e}"
    );
    let mut w = base(&g);
    w.view = small_h;
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::UnsupportedView { what: "view", .. }),
        "{e}"
    );
    // The output may not share a buffer with the IDs the compaction reads.
    let mut w = base(&g);
    w.ids = Some(u1(&g, out_h, 8));
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::WritesAlone { what: "output", .. }),
        "{e}"
    );
    let mut w = base(&g);
    w.count = common::view(&g, data_h, VectorFormat::Uint32, 0, 2);
    let e = w.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, RenderError::UnsupportedView { what: "count", .. }),
        "{e}"
    );
    // Nothing half-added: a good declaration still compiles.
    base(&g).add_to_graph(&mut g).unwrap();
    g.compile().unwrap();
}
