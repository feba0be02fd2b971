//! Mask composition on the GPU vs the CPU oracle, with poisoned outputs.

mod common;

use common::*;
use gpugraph_command::{CommandGraph, VectorView};
use gpugraph_gpgpu::mask::{cpu, shader_source, vec4_shader_source, MaskPolicy};
use gpugraph_gpgpu::{AlgorithmError, Mask, MaskOp};

const OPS: [MaskOp; 5] = [
    MaskOp::And,
    MaskOp::Or,
    MaskOp::Xor,
    MaskOp::Difference,
    MaskOp::Not,
];

fn arity(op: MaskOp) -> usize {
    if op == MaskOp::Not {
        1
    } else {
        3
    }
}

#[test]
fn generated_wgsl_validates_for_every_op_and_arity() {
    for op in OPS {
        for n in if op == MaskOp::Not { 1..2 } else { 2..6 } {
            let sources = [false, true].into_iter().flat_map(|live| {
                let p = MaskPolicy::DEFAULT;
                [
                    shader_source(&p, op, n, live),
                    vec4_shader_source(&p, op, n, live),
                ]
            });
            for src in sources {
                let module = naga::front::wgsl::parse_str(&src)
                    .unwrap_or_else(|e| panic!("{op:?}/{n}: {e}"));
                naga::valid::Validator::new(
                    naga::valid::ValidationFlags::all(),
                    naga::valid::Capabilities::all(),
                )
                .validate(&module)
                .unwrap_or_else(|e| panic!("{op:?}/{n}: {e:?}"));
            }
        }
    }
}

/// Patterns: empty, none, all, alternating, random with arbitrary nonzero values.
fn patterns(n: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut r = rng(seed);
    vec![
        vec![0; n],
        vec![7; n],
        (0..n as u32).map(|i| i % 2).collect(),
        random_u32s(&mut r, n, 3)
            .into_iter()
            .map(|v| v.wrapping_mul(0x8000_0001))
            .collect(),
        random_u32s(&mut r, n, 2),
    ]
}

#[test]
fn single_view_masks_match_the_oracle_across_sizes() {
    let ctx = ctx();
    // Output at element offset 3 (scalar kernel only) and 4 (vector kernel, scalar tail).
    for (at, &n) in [3usize, 4].into_iter().flat_map(|at| {
        [0usize, 1, 255, 256, 257, 1023, 1024, 1025, 4097, 100_003]
            .iter()
            .map(move |n| (at, n))
    }) {
        let pats = patterns(n, n as u64);
        for op in OPS {
            let ins: Vec<&[u32]> = (0..arity(op))
                .map(|k| pats[(k * 2 + op as usize) % pats.len()].as_slice())
                .collect();
            let mut g = CommandGraph::new("mask-test", &ctx.device);
            // Output at element offset `at` inside a larger poisoned buffer.
            let out_buf = upload(&ctx, &vec![POISON; n + at + 2]);
            let out = import_view(&mut g, "out", &out_buf, at as u64, n as u64);
            let inputs: Vec<VectorView> = ins
                .iter()
                .enumerate()
                .map(|(k, m)| {
                    let b = upload(&ctx, m);
                    import_view(&mut g, &format!("in{k}"), &b, 0, n as u64).into()
                })
                .collect();
            Mask {
                id: "combine".into(),
                inputs,
                output: out.into(),
                op,
            }
            .add_to_graph(&mut g)
            .unwrap();
            run(&ctx, g);
            let all = read_buffer(&ctx, &out_buf);
            assert_eq!(
                &all[at..at + n],
                cpu::combine(op, &ins).as_slice(),
                "{op:?} n={n} at={at}"
            );
            assert!(
                all[..at].iter().all(|&w| w == POISON),
                "rows before the view untouched"
            );
            assert_eq!(
                &all[at + n..at + n + 2],
                &[POISON; 2],
                "rows after the view untouched"
            );
        }
    }
}

#[test]
fn dispatches_over_the_dimension_limit_use_a_second_grid_row() {
    // 16 workgroups per dimension × 1024 rows: 100,003 rows need 98 workgroups → 7 grid rows.
    let ctx = ctx_with_max_dispatch(16);
    let n = 100_003;
    let a = patterns(n, 3).swap_remove(3);
    let mut g = CommandGraph::new("mask-2d", &ctx.device);
    let out_buf = upload(&ctx, &vec![POISON; n]);
    let out = import_view(&mut g, "out", &out_buf, 0, n as u64);
    let ba = upload(&ctx, &a);
    let va = import_view(&mut g, "a", &ba, 0, n as u64);
    Mask {
        id: "not".into(),
        inputs: vec![va.into()],
        output: out.into(),
        op: MaskOp::Not,
    }
    .add_to_graph(&mut g)
    .unwrap();
    run(&ctx, g);
    assert_eq!(
        read_buffer(&ctx, &out_buf),
        cpu::combine(MaskOp::Not, &[&a])
    );
}

#[test]
fn vector_masks_keep_empty_and_uneven_chunks() {
    let ctx = ctx();
    let mut r = rng(7);
    let total = 5000;
    let lens = uneven_chunks(&mut r, total, 6);
    let lens: Vec<usize> = [vec![0], lens, vec![0]].concat();
    let a = random_u32s(&mut r, total, 2);
    let b = random_u32s(&mut r, total, 4);
    for op in [MaskOp::And, MaskOp::Xor, MaskOp::Difference] {
        let mut g = CommandGraph::new("mask-vector", &ctx.device);
        let (mut va, mut vb, mut vo, mut outs) = (vec![], vec![], vec![], vec![]);
        let mut start = 0;
        for (ci, &len) in lens.iter().enumerate() {
            let ba = upload(&ctx, &a[start..start + len]);
            let bb = upload(&ctx, &b[start..start + len]);
            let bo = upload(&ctx, &vec![POISON; len]);
            va.push(import_view(&mut g, &format!("a{ci}"), &ba, 0, len as u64));
            vb.push(import_view(&mut g, &format!("b{ci}"), &bb, 0, len as u64));
            vo.push(import_view(&mut g, &format!("o{ci}"), &bo, 0, len as u64));
            outs.push((bo, len));
            start += len;
        }
        let inputs = vec![VectorView::from_chunks(va), VectorView::from_chunks(vb)];
        Mask {
            id: "m".into(),
            inputs,
            output: VectorView::from_chunks(vo),
            op,
        }
        .add_to_graph(&mut g)
        .unwrap();
        run(&ctx, g);
        let got: Vec<u32> = outs
            .iter()
            .flat_map(|(buf, len)| read_rows(&ctx, buf, 0, *len))
            .collect();
        assert_eq!(got, cpu::combine(op, &[&a, &b]), "{op:?} chunks {lens:?}");
    }
}

#[test]
fn bad_masks_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let a = upload(&ctx, &[1; 8]);
    let o = upload(&ctx, &[0; 8]);
    let va = import_view(&mut g, "a", &a, 0, 8);
    let short = import_view(&mut g, "short-out", &o, 0, 7);
    let err = Mask {
        id: "m".into(),
        inputs: vec![va.into(), va.into()],
        output: short.into(),
        op: MaskOp::Not,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::OutOfRange { value, allowed, .. }
            if &**value == "2" && &**allowed == "exactly 1"),
        "{err}"
    );
    let err = Mask {
        id: "m".into(),
        inputs: vec![va.into()],
        output: short.into(),
        op: MaskOp::Or,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(
        matches!(&err, AlgorithmError::ChunkMismatch { what, actual, expected, .. } if &**what == "input 0" && **actual == [8] && **expected == [7]),
        "{err}"
    );
    assert!(
        err.to_string().contains("[8]") && err.to_string().contains("[7]"),
        "{err}"
    );
    let err = Mask {
        id: "m".into(),
        inputs: vec![va.into()],
        output: va.into(),
        op: MaskOp::Not,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert!(err.to_string().contains("share buffer a"), "{err}");
    let h = g.buffer_descriptor(va.buffer()).unwrap().clone();
    let _ = h;
    let f32_view = g
        .create_packed_view(va.buffer(), gpugraph_command::VectorFormat::Float32, 8)
        .unwrap();
    let err = Mask {
        id: "m".into(),
        inputs: vec![f32_view.into()],
        output: short.into(),
        op: MaskOp::Not,
    }
    .add_to_graph(&mut g)
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "mask m: input 0 must be uint32, got float32"
    );
}

#[test]
fn policies_tune_the_kernels_and_invalid_ones_are_named() {
    let ctx = ctx();
    let policies: [MaskPolicy; 2] = [
        "wg=64,rows=3,vec4=2".parse().unwrap(),
        "wg=32,rows=1,vec4=5".parse().unwrap(),
    ];
    for policy in policies {
        // 4 inputs: vector kernel over the aligned slots, scalar kernel over the tail rows.
        for n in [0usize, 1, 63, 64, 65, 641, 4099] {
            let pats = patterns(n, n as u64 + 7);
            for op in OPS {
                let ins: Vec<&[u32]> = (0..if op == MaskOp::Not { 1 } else { 4 })
                    .map(|k| pats[(k + op as usize) % pats.len()].as_slice())
                    .collect();
                let mut g = CommandGraph::new("mask-policy", &ctx.device);
                let out_buf = upload(&ctx, &vec![POISON; n]);
                let out = import_view(&mut g, "out", &out_buf, 0, n as u64);
                let inputs: Vec<VectorView> = ins
                    .iter()
                    .enumerate()
                    .map(|(k, m)| {
                        let b = upload(&ctx, m);
                        import_view(&mut g, &format!("in{k}"), &b, 0, n as u64).into()
                    })
                    .collect();
                Mask {
                    id: "combine".into(),
                    inputs,
                    output: out.into(),
                    op,
                }
                .add_to_graph_with(&mut g, policy)
                .unwrap();
                run(&ctx, g);
                let got = read_buffer(&ctx, &out_buf);
                assert_eq!(
                    &got[..n],
                    cpu::combine(op, &ins).as_slice(),
                    "{policy:?} {op:?} n={n}"
                );
            }
        }
    }
    let mut g = CommandGraph::new("mask-bad-policy", &ctx.device);
    let b = upload(&ctx, &[0; 4]);
    let v = import_view(&mut g, "v", &b, 0, 4);
    let o = upload(&ctx, &[0; 4]);
    let ov = import_view(&mut g, "o", &o, 0, 4);
    let err = Mask {
        id: "bad".into(),
        inputs: vec![v.into()],
        output: ov.into(),
        op: MaskOp::Not,
    }
    .add_to_graph_with(
        &mut g,
        MaskPolicy {
            workgroup_size: 48,
            ..MaskPolicy::DEFAULT
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("workgroup_size 48"), "{err}");
    assert!("wg=64,lanes=2".parse::<MaskPolicy>().is_err());
}
