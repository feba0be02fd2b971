//! AncestorProjection on the GPU vs `topology::cpu::project_ancestors`: random forests with
//! random visibility, chains longer than `max_depth`, cycles (including self-parents),
//! missing parents, caller sentinels, depth 0, empty input, unaligned views; outputs poisoned
//! with guard rows.

mod common;

use common::*;
use gpugraph_command::{BufferDescriptor, CommandGraph, DataViewDescriptor, VectorFormat as F};
use gpugraph_gpgpu::topology::{cpu, AncestorProjection, NO_ANCESTOR};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

/// Runs the projection with the inputs at row 3 of their buffers and the output at row 1.
fn project(parents: &[u32], visible: &[u32], max_depth: u32, invalid: u32) -> Vec<u32> {
    let ctx = ctx();
    let n = parents.len();
    let pad = |v: &[u32]| [&[POISON; 3][..], v, &[POISON]].concat();
    let pb = upload(&ctx, &pad(parents));
    let vb = upload(&ctx, &pad(visible));
    let ob = upload(&ctx, &vec![POISON; n + 2]);
    let mut g = CommandGraph::new("ancestors", &ctx.device);
    let mut v = |id: &str, b: &gpugraph_command::wgpu::Buffer, row: u64| {
        let h = g
            .import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
            .unwrap();
        g.create_data_view(
            h,
            DataViewDescriptor::packed(F::Uint32, n as u64).at_offset(row * 4),
        )
        .unwrap()
    };
    let (parents_v, visible_v, output_v) =
        (v("parents", &pb, 3), v("visible", &vb, 3), v("out", &ob, 1));
    AncestorProjection {
        id: "project".into(),
        parents: parents_v,
        visible: visible_v,
        output: output_v,
        max_depth,
        invalid,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    let out = read_buffer(&ctx, &ob);
    assert_eq!(out[0], POISON, "leading guard");
    assert_eq!(out[n + 1], POISON, "trailing guard");
    out[1..=n].to_vec()
}

#[test]
fn random_forests_match_the_oracle() {
    let mut r = rng(162);
    for n in [0usize, 1, 255, 256, 257, 5000] {
        // Parents point mostly to lower rows (forests), some missing, some cyclic.
        let parents: Vec<u32> = (0..n)
            .map(|i| match r.random_range(0..20) {
                0 => n as u32 + r.random_range(0..3),
                1 => u32::MAX,
                2 => r.random_range(0..n as u32), // may close a cycle
                3 => i as u32,                    // self-parent
                _ if i == 0 => u32::MAX,
                _ => r.random_range(i.saturating_sub(8)..i) as u32,
            })
            .collect();
        for density in [0u32, 1, 5, 50] {
            let visible: Vec<u32> = (0..n)
                .map(|_| u32::from(r.random_range(0..100) < density))
                .collect();
            for (max_depth, invalid) in [(0u32, NO_ANCESTOR), (1, 7), (4, NO_ANCESTOR), (64, 123)] {
                let got = project(&parents, &visible, max_depth, invalid);
                let want = cpu::project_ancestors(&parents, &visible, max_depth, invalid);
                assert_eq!(got, want, "n={n} density={density} depth={max_depth}");
            }
        }
    }
}

#[test]
fn chains_beyond_max_depth_and_cycles_give_the_sentinel() {
    // A chain 0 ← 1 ← … ← 99 with only node 0 visible, and a hidden 3-cycle 100 → 101 → 102.
    let mut parents: Vec<u32> = (0..100u32).map(|i| i.wrapping_sub(1)).collect();
    parents.extend([101, 102, 100]);
    let mut visible = vec![0u32; 103];
    visible[0] = 1;
    let got = project(&parents, &visible, 10, 0xABCD);
    assert_eq!(got, cpu::project_ancestors(&parents, &visible, 10, 0xABCD));
    assert_eq!(got[0], 0, "visible projects to itself");
    assert_eq!(got[10], 0, "ten links reach the root");
    assert_eq!(got[11], 0xABCD, "eleven links exceed max_depth");
    assert_eq!(got[100..], [0xABCD; 3], "a hidden cycle exhausts the bound");
    let deep = project(&parents, &visible, 1000, 0xABCD);
    assert_eq!(deep[99], 0);
}

#[test]
fn mismatched_lengths_and_aliasing_are_named_errors() {
    let ctx = ctx();
    let b = upload(&ctx, &[0u32; 32]);
    let out = upload(&ctx, &[0u32; 32]);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let h = g
        .import_buffer(BufferDescriptor::new("in", b.size(), b.usage()), &b)
        .unwrap();
    let oh = g
        .import_buffer(BufferDescriptor::new("out", out.size(), out.usage()), &out)
        .unwrap();
    let view = |h, row: u64, n: u64| {
        g.create_data_view(
            h,
            DataViewDescriptor::packed(F::Uint32, n).at_offset(row * 4),
        )
        .unwrap()
    };
    let p = |visible, output| AncestorProjection {
        id: "p".into(),
        parents: view(h, 0, 8),
        visible,
        output,
        max_depth: 4,
        invalid: NO_ANCESTOR,
    };
    let (short, aliased) = (
        p(view(h, 8, 7), view(oh, 0, 8)),
        p(view(h, 8, 8), view(h, 16, 8)),
    );
    let e = short.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(
            &e,
            AlgorithmError::LengthMismatch {
                actual: 7,
                expected: 8,
                ..
            }
        ),
        "{e}"
    );
    let e = aliased.add_to_graph(&mut g).unwrap_err();
    assert!(matches!(e, AlgorithmError::Aliased { .. }), "{e}");
}
