//! HierarchyLayout on the GPU vs `topology::cpu::hierarchy_heights` + exclusive offsets:
//! every collapse/expand permutation of a small hierarchy, random states at boundary sizes,
//! partitioned parents and children with independent, uneven and empty chunks (== packed),
//! states changed between encodings, and bad declarations. Outputs poisoned, guard rows.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataViewDescriptor,
    VectorFormat as F, VectorView,
};
use gpugraph_gpgpu::topology::{cpu, HierarchyLayout};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

const HEIGHTS: [u32; 3] = [4, 1, 2];

struct Layout {
    parents: wgpu::Buffer,
    children: wgpu::Buffer,
    heights: wgpu::Buffer,
    offsets: wgpu::Buffer,
    compiled: CompiledGraph,
}

fn import(g: &mut CommandGraph, id: &str, b: &wgpu::Buffer) -> BufferHandle {
    g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
        .unwrap()
}

/// Views of `lens` chunks in buffer `h`, one guard row before each chunk.
fn chunks(g: &CommandGraph, h: BufferHandle, lens: &[usize]) -> VectorView {
    let mut row = 0u64;
    let mut out = Vec::new();
    for &len in lens {
        row += 1;
        out.push(
            g.create_data_view(
                h,
                DataViewDescriptor::packed(F::Uint32, len as u64).at_offset(row * 4),
            )
            .unwrap(),
        );
        row += len as u64;
    }
    VectorView::from_chunks(out)
}

/// `values` laid out as [`chunks`] expects (guards poisoned, one trailing).
fn laid_out(values: &[u32], lens: &[usize]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut at = 0;
    for &len in lens {
        out.push(POISON);
        out.extend_from_slice(&values[at..at + len]);
        at += len;
    }
    out.push(POISON);
    out
}

fn build(
    ctx: &gpugraph_command::GpuContext,
    parents: &[u32],
    children: &[u32],
    k: u32,
    parent_lens: &[usize],
    child_lens: &[usize],
) -> Layout {
    let n = children.len();
    let poison = vec![POISON; n + child_lens.len() + 1];
    let b = (
        upload(ctx, &laid_out(parents, parent_lens)),
        upload(ctx, &laid_out(children, child_lens)),
        upload(ctx, &poison),
        upload(ctx, &poison),
    );
    let mut g = CommandGraph::new("layout", &ctx.device);
    let (ph, ch, hh, oh) = (
        import(&mut g, "parents", &b.0),
        import(&mut g, "children", &b.1),
        import(&mut g, "heights", &b.2),
        import(&mut g, "offsets", &b.3),
    );
    HierarchyLayout {
        id: "layout".into(),
        parent_states: chunks(&g, ph, parent_lens),
        child_states: chunks(&g, ch, child_lens),
        heights: chunks(&g, hh, child_lens),
        offsets: chunks(&g, oh, child_lens),
        children_per_parent: k,
        expanded_child_height: HEIGHTS[0],
        collapsed_child_height: HEIGHTS[1],
        collapsed_parent_height: HEIGHTS[2],
    }
    .add_to_graph(&mut g)
    .unwrap();
    Layout {
        parents: b.0,
        children: b.1,
        heights: b.2,
        offsets: b.3,
        compiled: g.compile().unwrap(),
    }
}

fn check(
    ctx: &gpugraph_command::GpuContext,
    l: &mut Layout,
    parents: &[u32],
    children: &[u32],
    k: u32,
    child_lens: &[usize],
    label: &str,
) {
    encode_wait(ctx, &mut l.compiled, &[]);
    let heights = cpu::hierarchy_heights(parents, children, k, HEIGHTS);
    let offsets = cpu::exclusive_offsets(&heights);
    assert_eq!(
        read_buffer(ctx, &l.heights),
        laid_out(&heights, child_lens),
        "{label}: heights"
    );
    assert_eq!(
        read_buffer(ctx, &l.offsets),
        laid_out(&offsets, child_lens),
        "{label}: offsets"
    );
}

#[test]
fn every_collapse_expand_permutation_of_a_small_hierarchy() {
    let ctx = ctx();
    let (p, k) = (3usize, 2u32);
    let n = p * k as usize;
    let zeros = vec![0u32; n];
    let mut l = build(&ctx, &[0; 3], &zeros, k, &[3], &[n]);
    for bits in 0u32..1 << (p + n) {
        let parents: Vec<u32> = (0..p).map(|i| (bits >> i) & 1).collect();
        let children: Vec<u32> = (0..n).map(|i| (bits >> (p + i)) & 1).collect();
        ctx.queue.write_buffer(
            &l.parents,
            0,
            bytemuck::cast_slice(&laid_out(&parents, &[p])),
        );
        ctx.queue.write_buffer(
            &l.children,
            0,
            bytemuck::cast_slice(&laid_out(&children, &[n])),
        );
        check(
            &ctx,
            &mut l,
            &parents,
            &children,
            k,
            &[n],
            &format!("bits={bits:b}"),
        );
    }
}

#[test]
fn partitioned_layouts_equal_packed_with_uneven_and_empty_chunks() {
    let ctx = ctx();
    let mut r = rng(163);
    for (p, k) in [(0usize, 3u32), (1, 1), (5, 3), (100, 7), (1200, 4)] {
        let n = p * k as usize;
        let parents: Vec<u32> = (0..p).map(|_| r.random_range(0..2)).collect();
        let children: Vec<u32> = (0..n).map(|_| r.random_range(0..3)).collect();
        for parts in 0..4 {
            let (pl, cl) = if parts == 0 {
                (vec![p], vec![n])
            } else {
                (
                    uneven_chunks(&mut r, p, parts + 1),
                    uneven_chunks(&mut r, n, parts + 2),
                )
            };
            let mut l = build(&ctx, &parents, &children, k, &pl, &cl);
            check(
                &ctx,
                &mut l,
                &parents,
                &children,
                k,
                &cl,
                &format!("p={p} k={k} {pl:?} {cl:?}"),
            );
        }
    }
}

#[test]
fn bad_declarations_are_named_errors() {
    let ctx = ctx();
    let b = upload(&ctx, &[0u32; 64]);
    let out = upload(&ctx, &[0u32; 64]);
    let mut g = CommandGraph::new("bad", &ctx.device);
    let h = import(&mut g, "in", &b);
    let oh = import(&mut g, "out", &out);
    let v = |h, row: u64, n: u64| -> VectorView {
        g.create_data_view(
            h,
            DataViewDescriptor::packed(F::Uint32, n).at_offset(row * 4),
        )
        .unwrap()
        .into()
    };
    let layout = |children: VectorView, heights: VectorView, k: u32| HierarchyLayout {
        id: "bad".into(),
        parent_states: v(h, 0, 4),
        child_states: children,
        heights,
        offsets: v(oh, 32, 8),
        children_per_parent: k,
        expanded_child_height: 1,
        collapsed_child_height: 1,
        collapsed_parent_height: 1,
    };
    let cases = [
        layout(v(h, 8, 7), v(oh, 0, 7), 2),
        layout(v(h, 8, 8), v(oh, 0, 8), 0),
        layout(v(h, 8, 8), v(h, 16, 8), 2),
        layout(v(h, 8, 8), v(oh, 0, 6), 2),
    ];
    let errors: Vec<AlgorithmError> = cases
        .into_iter()
        .map(|l| l.add_to_graph(&mut g).unwrap_err())
        .collect();
    let e = &errors[0];
    assert!(
        matches!(
            e,
            AlgorithmError::LengthMismatch {
                actual: 7,
                expected: 8,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        matches!(errors[1], AlgorithmError::OutOfRange { .. }),
        "{}",
        errors[1]
    );
    assert!(
        matches!(errors[2], AlgorithmError::Aliased { .. }),
        "{}",
        errors[2]
    );
    assert!(
        matches!(errors[3], AlgorithmError::ChunkMismatch { .. }),
        "{}",
        errors[3]
    );
}

#[test]
fn replacing_one_parent_batch_between_encodings_relayouts_without_recompiling() {
    // Parents in two allocations (3 and 5 parents), children in three chunks cutting across
    // them; the second parent batch is replaced by an import override.
    let ctx = ctx();
    let k = 3u32;
    let (first, second, replaced) = ([1u32, 0, 1], [0u32, 1, 1, 0, 1], [1u32, 0, 0, 1, 0]);
    let children: Vec<u32> = (0..24).map(|i| u32::from(i % 3 != 1)).collect();
    let child_lens = [5usize, 0, 19];
    let b0 = upload(&ctx, &first);
    let b1 = upload(&ctx, &second);
    let b1_new = upload(&ctx, &replaced);
    let cb = upload(&ctx, &laid_out(&children, &child_lens));
    let poison = vec![POISON; children.len() + child_lens.len() + 1];
    let (hb, ob) = (upload(&ctx, &poison), upload(&ctx, &poison));
    let mut g = CommandGraph::new("replace", &ctx.device);
    let (h0, h1) = (
        import(&mut g, "parents-0", &b0),
        import(&mut g, "parents-1", &b1),
    );
    let (ch, hh, oh) = (
        import(&mut g, "children", &cb),
        import(&mut g, "heights", &hb),
        import(&mut g, "offsets", &ob),
    );
    let packed = |h, n: u64| {
        g.create_data_view(h, DataViewDescriptor::packed(F::Uint32, n))
            .unwrap()
    };
    let parent_states = VectorView::from_chunks(vec![packed(h0, 3), packed(h1, 5)]);
    HierarchyLayout {
        id: "layout".into(),
        parent_states,
        child_states: chunks(&g, ch, &child_lens),
        heights: chunks(&g, hh, &child_lens),
        offsets: chunks(&g, oh, &child_lens),
        children_per_parent: k,
        expanded_child_height: HEIGHTS[0],
        collapsed_child_height: HEIGHTS[1],
        collapsed_parent_height: HEIGHTS[2],
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    for (batch, overrides) in [(second, vec![]), (replaced, vec![(h1, &b1_new)])] {
        encode_wait(&ctx, &mut compiled, &overrides);
        let parents = [&first[..], &batch[..]].concat();
        let heights = cpu::hierarchy_heights(&parents, &children, k, HEIGHTS);
        let offsets = cpu::exclusive_offsets(&heights);
        let label = format!("parents {parents:?}");
        assert_eq!(
            read_buffer(&ctx, &hb),
            laid_out(&heights, &child_lens),
            "{label}"
        );
        assert_eq!(
            read_buffer(&ctx, &ob),
            laid_out(&offsets, &child_lens),
            "{label}"
        );
    }
}
