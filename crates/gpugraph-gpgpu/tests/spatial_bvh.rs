//! Bvh build/refit and BvhQuery on the GPU vs the CPU oracles (`spatial::cpu::bvh`,
//! `bvh_query`): 2-D and 3-D, points and boxes, invalid items, leaf capacities around the
//! one-workgroup subtree (1, 2, 128, 256, 1024), exact capacity and overflow, generated and
//! explicit IDs, source and Morton order, refit after the boxes move without recompiling,
//! candidates equal to the exact point filter, visited counts. Outputs are poisoned first.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataView, DataViewDescriptor,
    GpuContext, VectorFormat as F,
};
use gpugraph_gpgpu::spatial::{cpu, Bvh, BvhOrder, BvhQuery, SpatialQuery, QUERY_WORDS};
use rand::Rng;

fn import(g: &mut CommandGraph, id: &str, b: &wgpu::Buffer) -> BufferHandle {
    g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
        .unwrap()
}

fn view(g: &CommandGraph, h: BufferHandle, format: F, row0: u64, rows: u64) -> DataView {
    let bytes = format.byte_size() as u64;
    g.create_data_view(
        h,
        DataViewDescriptor::packed(format, rows).at_offset(row0 * bytes),
    )
    .unwrap()
}

fn words(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Clustered points (dyadic offsets, so distances are exact) with NaN/inf and duplicates.
fn points(r: &mut impl Rng, n: usize, dims: usize) -> Vec<f32> {
    let centers: Vec<[f32; 3]> = (0..4)
        .map(|_| std::array::from_fn(|_| r.random_range(-8..8) as f32))
        .collect();
    let mut out = Vec::new();
    for row in 0..n {
        if row > 0 && r.random_range(0..12) == 0 {
            let from = r.random_range(0..row);
            let dup = out[from * dims..(from + 1) * dims].to_vec();
            out.extend(dup);
            continue;
        }
        let c = centers[r.random_range(0..4)];
        for &center in c.iter().take(dims) {
            out.push(match r.random_range(0..40) {
                0 => f32::NAN,
                1 => f32::INFINITY,
                _ => center + r.random_range(-256..=256) as f32 / 64.0,
            });
        }
    }
    out
}

/// Boxes around points: upper = lower + a non-negative extent, some inverted (invalid).
fn boxes(r: &mut impl Rng, lower: &[f32]) -> Vec<f32> {
    lower
        .iter()
        .map(|&v| match r.random_range(0..30) {
            0 => v - 1.0,
            _ => v + r.random_range(0..8) as f32 / 4.0,
        })
        .collect()
}

fn point_format(dims: usize) -> F {
    if dims == 2 {
        F::Float32x2
    } else {
        F::Float32x3
    }
}

struct BvhBufs {
    lower: wgpu::Buffer,
    upper: wgpu::Buffer,
    nodes: wgpu::Buffer,
    children: wgpu::Buffer,
    leaf_ids: wgpu::Buffer,
    status: wgpu::Buffer,
}

#[allow(clippy::too_many_arguments)]
fn add_bvh(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    dims: usize,
    lower: &[f32],
    upper: Option<&[f32]>,
    ids: Option<&[u32]>,
    leaves: u32,
    order: BvhOrder,
) -> (BvhBufs, gpugraph_gpgpu::spatial::BvhStorage) {
    let n = (2 * leaves - 1) as usize;
    let b = BvhBufs {
        lower: upload(ctx, &words(lower)),
        upper: upload(ctx, &words(upper.unwrap_or(lower))),
        nodes: upload(ctx, &vec![POISON; 8 * n + 1]),
        children: upload(ctx, &vec![POISON; 2 * n + 1]),
        leaf_ids: upload(ctx, &vec![POISON; leaves as usize + 1]),
        status: upload(ctx, &[POISON; 4]),
    };
    let items = (lower.len() / dims) as u64;
    let lh = import(g, "lower", &b.lower);
    let lower_v = view(g, lh, point_format(dims), 0, items);
    let upper_v = match upper {
        Some(_) => {
            let h = import(g, "upper", &b.upper);
            view(g, h, point_format(dims), 0, items)
        }
        None => lower_v,
    };
    let id_buf = ids.map(|ids| upload(ctx, ids));
    let ids_v = id_buf.as_ref().map(|buf| {
        let h = import(g, "ids", buf);
        view(g, h, F::Uint32, 0, items)
    });
    let nh = import(g, "nodes", &b.nodes);
    let ch = import(g, "children", &b.children);
    let ih = import(g, "leaf-ids", &b.leaf_ids);
    let sh = import(g, "bvh-status", &b.status);
    let storage = Bvh {
        id: "bvh".into(),
        lower: lower_v,
        upper: upper_v,
        ids: ids_v,
        leaf_capacity: leaves,
        order,
        nodes: view(g, nh, F::Float32, 0, 8 * n as u64),
        children: view(g, ch, F::Uint32, 0, 2 * n as u64),
        leaf_ids: view(g, ih, F::Uint32, 0, leaves as u64),
        status: view(g, sh, F::Uint32, 0, 3),
    }
    .add_to_graph(g)
    .unwrap();
    (b, storage)
}

fn check_bvh(ctx: &GpuContext, b: &BvhBufs, want: &cpu::BvhResult, label: &str) {
    let nodes = read_buffer(ctx, &b.nodes);
    let want_nodes: Vec<u32> = want.nodes.iter().flatten().map(|x| x.to_bits()).collect();
    assert_eq!(nodes[..want_nodes.len()], want_nodes[..], "{label}: nodes");
    assert_eq!(nodes[want_nodes.len()], POISON, "{label}: nodes guard");
    let children = read_buffer(ctx, &b.children);
    let want_children: Vec<u32> = want.children.iter().flatten().copied().collect();
    assert_eq!(
        children[..want_children.len()],
        want_children[..],
        "{label}: children"
    );
    let ids = read_buffer(ctx, &b.leaf_ids);
    assert_eq!(
        ids[..want.leaf_ids.len()],
        want.leaf_ids[..],
        "{label}: leaf ids"
    );
    assert_eq!(ids[want.leaf_ids.len()], POISON, "{label}: leaf ids guard");
    let status = read_buffer(ctx, &b.status);
    assert_eq!(
        status[..4],
        [want.stored, want.overflow as u32, want.levels, POISON],
        "{label}: status"
    );
}

const MORTON: BvhOrder = BvhOrder::Morton {
    min: [-12.0, -12.0, -12.0],
    max: [12.0, 12.0, 12.0],
};

#[test]
fn bvh_builds_match_the_oracle_and_refit_without_recompiling() {
    let ctx = ctx();
    let mut r = rng(3);
    for dims in [2usize, 3] {
        for leaves in [1u32, 2, 128, 256, 1024] {
            let l = leaves as usize;
            for n in [0usize, 1, l.saturating_sub(1), l, l + 5] {
                for (with_boxes, explicit, order) in [
                    (false, false, BvhOrder::Source),
                    (true, true, BvhOrder::Source),
                    (false, true, MORTON),
                    (true, false, MORTON),
                ] {
                    let lower = points(&mut r, n, dims);
                    let upper = with_boxes.then(|| boxes(&mut r, &lower));
                    let ids: Option<Vec<u32>> =
                        explicit.then(|| (0..n as u32).map(|i| i * 3 + 1).collect());
                    let label = format!(
                        "{dims}-D L={leaves} n={n} boxes={with_boxes} ids={explicit} {order:?}"
                    );
                    let mut g = CommandGraph::new("bvh", &ctx.device);
                    let (b, _) = add_bvh(
                        &ctx,
                        &mut g,
                        dims,
                        &lower,
                        upper.as_deref(),
                        ids.as_deref(),
                        leaves,
                        order,
                    );
                    let mut compiled = g.compile().unwrap();
                    encode_wait(&ctx, &mut compiled, &[]);
                    let up = upper.as_deref().unwrap_or(&lower);
                    let want = cpu::bvh(dims, &lower, up, ids.as_deref(), leaves, order);
                    check_bvh(&ctx, &b, &want, &label);
                    // Refit: move every item, encode the same compiled graph again.
                    let moved: Vec<f32> = lower.iter().map(|v| v * 0.5 + 1.0).collect();
                    ctx.queue
                        .write_buffer(&b.lower, 0, bytemuck::cast_slice(&words(&moved)));
                    let moved_up: Option<Vec<f32>> = upper
                        .as_ref()
                        .map(|u| u.iter().map(|v| v * 0.5 + 1.0).collect());
                    if let Some(u) = &moved_up {
                        ctx.queue
                            .write_buffer(&b.upper, 0, bytemuck::cast_slice(&words(u)));
                    }
                    encode_wait(&ctx, &mut compiled, &[]);
                    let up = moved_up.as_deref().unwrap_or(&moved);
                    let want = cpu::bvh(dims, &moved, up, ids.as_deref(), leaves, order);
                    check_bvh(&ctx, &b, &want, &format!("{label} refit"));
                }
            }
        }
    }
}

struct QueryBufs {
    query: wgpu::Buffer,
    candidates: wgpu::Buffer,
    status: wgpu::Buffer,
    mask: Option<wgpu::Buffer>,
}

fn add_query(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    bvh: gpugraph_gpgpu::spatial::BvhStorage,
    capacity: usize,
    mask_len: Option<usize>,
) -> QueryBufs {
    let qb = QueryBufs {
        query: upload(ctx, &[0; QUERY_WORDS as usize]),
        candidates: upload(ctx, &vec![POISON; capacity + 1]),
        status: upload(ctx, &[POISON; 5]),
        mask: mask_len.map(|n| upload(ctx, &vec![POISON; n + 1])),
    };
    let qh = import(g, "query", &qb.query);
    let ch = import(g, "candidates", &qb.candidates);
    let sh = import(g, "query-status", &qb.status);
    let mask = qb.mask.as_ref().map(|m| {
        let h = import(g, "mask", m);
        view(g, h, F::Uint32, 0, mask_len.unwrap() as u64)
    });
    BvhQuery {
        id: "query".into(),
        bvh,
        query: view(g, qh, F::Uint32, 0, QUERY_WORDS),
        candidates: view(g, ch, F::Uint32, 0, capacity as u64),
        status: view(g, sh, F::Uint32, 0, 4),
        mask,
    }
    .add_to_graph(g)
    .unwrap();
    qb
}

fn run_query(
    ctx: &GpuContext,
    compiled: &mut CompiledGraph,
    qb: &QueryBufs,
    q: &SpatialQuery,
    capacity: usize,
) {
    ctx.queue
        .write_buffer(&qb.query, 0, bytemuck::cast_slice(&q.words()));
    ctx.queue.write_buffer(
        &qb.candidates,
        0,
        bytemuck::cast_slice(&vec![POISON; capacity + 1]),
    );
    if let Some(m) = &qb.mask {
        let len = m.size() as usize / 4;
        ctx.queue
            .write_buffer(m, 0, bytemuck::cast_slice(&vec![POISON; len]));
    }
    encode_wait(ctx, compiled, &[]);
}

fn check_query(
    ctx: &GpuContext,
    qb: &QueryBufs,
    want: &cpu::BvhQueryResult,
    capacity: usize,
    label: &str,
) {
    let status = read_buffer(ctx, &qb.status);
    assert_eq!(
        status[..5],
        [want.count, want.required, want.flags, want.visited, POISON],
        "{label}: status"
    );
    let cand = read_buffer(ctx, &qb.candidates);
    let count = want.count as usize;
    let mut got = cand[..count].to_vec();
    got.sort_unstable();
    if count == want.candidates.len() {
        assert_eq!(got, want.candidates, "{label}: candidates");
    } else {
        // Output overflow: which candidates won the race is unspecified; each is a real one.
        assert!(
            got.iter().all(|x| want.candidates.binary_search(x).is_ok()),
            "{label}: stored candidates"
        );
    }
    assert!(
        cand[count..=capacity].iter().all(|&x| x == POISON),
        "{label}: rows past the count untouched"
    );
    if let (Some(m), Some(wm)) = (&qb.mask, &want.mask) {
        let got = read_buffer(ctx, m);
        assert_eq!(got[..wm.len()], wm[..], "{label}: mask");
        assert_eq!(got[wm.len()], POISON, "{label}: mask guard");
    }
}

fn queries(r: &mut impl Rng, pos: &[f32], dims: usize) -> Vec<SpatialQuery> {
    let p = |r: &mut dyn rand::RngCore| -> [f32; 3] {
        std::array::from_fn(|a| {
            if a < dims {
                r.random_range(-12..12) as f32 / 1.5
            } else {
                0.0
            }
        })
    };
    let mut out = vec![
        SpatialQuery::Bounds {
            min: [-100.0; 3],
            max: [100.0; 3],
        },
        SpatialQuery::Bounds {
            min: [50.0; 3],
            max: [60.0; 3],
        },
        SpatialQuery::Radius {
            center: [0.0; 3],
            radius: f32::NAN,
        },
    ];
    let rows = pos.len() / dims;
    for _ in 0..3 {
        if rows > 0 {
            let row = r.random_range(0..rows);
            let mut at = [0.0f32; 3];
            at[..dims].copy_from_slice(&pos[row * dims..(row + 1) * dims]);
            out.push(SpatialQuery::Point(at));
            out.push(SpatialQuery::Radius {
                center: at,
                radius: r.random_range(0..16) as f32 / 8.0,
            });
        }
        let (a, b) = (p(r), p(r));
        out.push(SpatialQuery::Bounds {
            min: std::array::from_fn(|i| a[i].min(b[i])),
            max: std::array::from_fn(|i| a[i].max(b[i])),
        });
    }
    out
}

#[test]
fn subtree_and_level_grids_split_past_the_dispatch_dimension_limit() {
    // 3 workgroups per dimension: 1024 leaves need 8 subtree workgroups (a 3 x 3 grid with one
    // spare) and level passes of up to 4 rows; 3-D Morton order with explicit IDs.
    let ctx = ctx_with_max_dispatch(3);
    let mut r = rng(31);
    for n in [1000usize, 1024] {
        let lower = points(&mut r, n, 3);
        let upper = boxes(&mut r, &lower);
        let ids: Vec<u32> = (0..n as u32).map(|i| i ^ 0x55).collect();
        let mut g = CommandGraph::new("bvh-split", &ctx.device);
        let (b, _) = add_bvh(
            &ctx,
            &mut g,
            3,
            &lower,
            Some(&upper),
            Some(&ids),
            1024,
            MORTON,
        );
        run(&ctx, g);
        let want = cpu::bvh(3, &lower, &upper, Some(&ids), 1024, MORTON);
        check_bvh(&ctx, &b, &want, &format!("split n={n}"));
    }
}

#[test]
fn bvh_queries_match_the_oracle_and_the_exact_filter_for_points() {
    let ctx = ctx();
    let mut r = rng(11);
    for dims in [2usize, 3] {
        for (leaves, n, with_boxes, order) in [
            (1u32, 1usize, false, BvhOrder::Source),
            (64, 50, true, BvhOrder::Source),
            (256, 256, false, MORTON),
            (1024, 1000, false, BvhOrder::Source),
            (1024, 1030, true, MORTON),
            (8192, 5000, false, MORTON),
        ] {
            let lower = points(&mut r, n, dims);
            let upper = with_boxes.then(|| boxes(&mut r, &lower));
            let up = upper.as_deref().unwrap_or(&lower).to_vec();
            let built = cpu::bvh(dims, &lower, &up, None, leaves, order);
            for (capacity, mask) in [(n + 2, Some(n)), (n / 5, None)] {
                let mut g = CommandGraph::new("bvh-query", &ctx.device);
                let (_, storage) = add_bvh(
                    &ctx,
                    &mut g,
                    dims,
                    &lower,
                    upper.as_deref(),
                    None,
                    leaves,
                    order,
                );
                let qb = add_query(&ctx, &mut g, storage, capacity, mask);
                let mut compiled = g.compile().unwrap();
                for q in queries(&mut r, &lower, dims) {
                    let label = format!("{dims}-D L={leaves} n={n} boxes={with_boxes} cap={capacity} {order:?} {q:?}");
                    run_query(&ctx, &mut compiled, &qb, &q, capacity);
                    let want = cpu::bvh_query(dims, &built, &q, capacity, mask);
                    check_query(&ctx, &qb, &want, capacity, &label);
                    if !with_boxes && n <= leaves as usize {
                        // Point items: the candidates are exactly the filter's hits.
                        let exact: Vec<u32> = cpu::filter(dims, &lower, &q)
                            .iter()
                            .enumerate()
                            .filter(|(_, &m)| m == 1)
                            .map(|(i, _)| i as u32)
                            .collect();
                        assert_eq!(want.candidates, exact, "{label}: oracle vs exact filter");
                    }
                }
            }
        }
    }
}

#[test]
fn morton_order_visits_fewer_nodes_than_shuffled_source_order() {
    let mut r = rng(21);
    let dims = 2;
    let lower = points(&mut r, 4096, dims);
    let source = cpu::bvh(dims, &lower, &lower, None, 4096, BvhOrder::Source);
    let morton = cpu::bvh(dims, &lower, &lower, None, 4096, MORTON);
    let (mut vs, mut vm) = (0u64, 0u64);
    for q in queries(&mut r, &lower, dims) {
        let a = cpu::bvh_query(dims, &source, &q, 0, None);
        let b = cpu::bvh_query(dims, &morton, &q, 0, None);
        assert_eq!(a.candidates, b.candidates, "{q:?}: order changes no result");
        vs += u64::from(a.visited);
        vm += u64::from(b.visited);
    }
    assert!(vm * 2 < vs, "Morton visited {vm} nodes, source order {vs}");
}

#[test]
fn segmented_bvh_builds_every_tree_like_the_oracle() {
    use gpugraph_gpgpu::spatial::{SegmentedBvh, SegmentedBvhTree};
    let ctx = ctx();
    let mut r = rng(8);
    for dims in [2usize, 3] {
        for explicit in [false, true] {
            // Mixed capacities in interleaved order, an empty tree, an overflowing tree, and
            // gaps between the node and leaf ranges (which must stay untouched).
            let shapes: &[(u32, u32)] = &[
                (4, 3),
                (128, 128),
                (1, 1),
                (16, 0),
                (4, 9),
                (64, 40),
                (2, 2),
                (128, 70),
                (8, 8),
                (32, 31),
            ];
            let mut trees = Vec::new();
            let (mut items, mut nodes, mut leaves) = (0u32, 1u32, 3u32);
            for &(cap, n) in shapes {
                trees.push(SegmentedBvhTree {
                    item_offset: items,
                    items: n,
                    leaf_capacity: cap,
                    node_offset: nodes,
                    leaf_offset: leaves,
                });
                items += n + 1;
                nodes += 2 * cap - 1 + 2;
                leaves += cap + 1;
            }
            let lower = points(&mut r, items as usize, dims);
            let upper = boxes(&mut r, &lower);
            let ids: Vec<u32> = (0..items).map(|i| 1000 + i).collect();
            let ids_opt = explicit.then_some(&ids[..]);
            let nodes_len = nodes as usize + 1;
            let bufs = [
                upload(&ctx, &words(&lower)),
                upload(&ctx, &words(&upper)),
                upload(&ctx, &ids),
                upload(&ctx, &vec![POISON; 8 * nodes_len]),
                upload(&ctx, &vec![POISON; 2 * nodes_len]),
                upload(&ctx, &vec![POISON; leaves as usize + 1]),
                upload(&ctx, &vec![POISON; 2 * shapes.len() + 1]),
            ];
            let mut g = CommandGraph::new("segmented", &ctx.device);
            let names = [
                "lower", "upper", "ids", "nodes", "children", "leaf-ids", "status",
            ];
            let h: Vec<BufferHandle> = bufs
                .iter()
                .zip(names)
                .map(|(b, n)| import(&mut g, n, b))
                .collect();
            SegmentedBvh {
                id: "seg".into(),
                lower: view(&g, h[0], point_format(dims), 0, items as u64),
                upper: view(&g, h[1], point_format(dims), 0, items as u64),
                ids: explicit.then(|| view(&g, h[2], F::Uint32, 0, items as u64)),
                trees: trees.clone(),
                nodes: view(&g, h[3], F::Float32, 0, 8 * nodes_len as u64),
                children: view(&g, h[4], F::Uint32, 0, 2 * nodes_len as u64),
                leaf_ids: view(&g, h[5], F::Uint32, 0, leaves as u64 + 1),
                status: view(&g, h[6], F::Uint32, 0, 2 * shapes.len() as u64),
            }
            .add_to_graph(&mut g)
            .unwrap();
            // One node per distinct capacity (1, 2, 4, 8, 16, 32, 64, 128), whatever the order.
            assert_eq!(g.node_count(), 8);
            run(&ctx, g);
            let want = cpu::segmented_bvh(dims, &lower, &upper, ids_opt, &trees);
            let mut exp_nodes = vec![POISON; 8 * nodes_len];
            let mut exp_children = vec![POISON; 2 * nodes_len];
            let mut exp_leaves = vec![POISON; leaves as usize + 1];
            let mut exp_status = vec![POISON; 2 * shapes.len() + 1];
            for (i, (t, w)) in trees.iter().zip(&want).enumerate() {
                let n0 = t.node_offset as usize;
                for (k, node) in w.nodes.iter().enumerate() {
                    for (j, v) in node.iter().enumerate() {
                        exp_nodes[8 * (n0 + k) + j] = v.to_bits();
                    }
                    exp_children[2 * (n0 + k)..2 * (n0 + k) + 2].copy_from_slice(&w.children[k]);
                }
                let l0 = t.leaf_offset as usize;
                exp_leaves[l0..l0 + w.leaf_ids.len()].copy_from_slice(&w.leaf_ids);
                exp_status[2 * i] = w.stored;
                exp_status[2 * i + 1] = w.overflow as u32;
            }
            let label = format!("{dims}-D ids={explicit}");
            assert_eq!(read_buffer(&ctx, &bufs[3]), exp_nodes, "{label}: nodes");
            assert_eq!(
                read_buffer(&ctx, &bufs[4]),
                exp_children,
                "{label}: children"
            );
            assert_eq!(read_buffer(&ctx, &bufs[5]), exp_leaves, "{label}: leaf ids");
            assert_eq!(read_buffer(&ctx, &bufs[6]), exp_status, "{label}: status");
        }
    }
}

#[test]
fn bad_configurations_are_named_errors() {
    use gpugraph_gpgpu::spatial::{
        FilterCandidates, PointSpatialFilter, SegmentedBvh, SegmentedBvhTree,
    };
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let a = upload(&ctx, &[0; 256]);
    let b = upload(&ctx, &[0; 256]);
    let (ha, hb) = (import(&mut g, "a", &a), import(&mut g, "b", &b));
    let pts = view(&g, ha, F::Float32x2, 0, 8);
    let base = Bvh {
        id: "bvh".into(),
        lower: pts,
        upper: pts,
        ids: None,
        leaf_capacity: 8,
        order: BvhOrder::Source,
        nodes: view(&g, hb, F::Float32, 0, 8 * 15),
        children: view(&g, hb, F::Uint32, 120, 30),
        leaf_ids: view(&g, hb, F::Uint32, 150, 8),
        status: view(&g, hb, F::Uint32, 158, 3),
    };
    let msg = |e: gpugraph_gpgpu::AlgorithmError| e.to_string();
    let mut wrong = base.clone();
    wrong.leaf_capacity = 6;
    assert!(msg(wrong.add_to_graph(&mut g).unwrap_err()).contains("power of two"));
    let mut wrong = base.clone();
    wrong.nodes = view(&g, hb, F::Float32, 0, 8 * 14);
    let e = wrong.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, gpugraph_gpgpu::AlgorithmError::LengthMismatch { what, actual: 112, expected: 120, .. }
            if &**what == "nodes"),
        "{e}"
    );
    let mut wrong = base.clone();
    wrong.order = BvhOrder::Morton {
        min: [0.0; 3],
        max: [0.0, 1.0, 1.0],
    };
    assert!(msg(wrong.add_to_graph(&mut g).unwrap_err()).contains("Morton box"));
    let mut wrong = base.clone();
    wrong.upper = view(&g, ha, F::Float32x2, 0, 7);
    assert!(matches!(wrong.add_to_graph(&mut g).unwrap_err(),
            gpugraph_gpgpu::AlgorithmError::LengthMismatch { what, actual: 7, expected: 8, .. }
            if &*what == "upper"));
    let mut wrong = base.clone();
    wrong.status = view(&g, ha, F::Uint32, 100, 3);
    assert!(matches!(
        wrong.add_to_graph(&mut g).unwrap_err(),
        gpugraph_gpgpu::AlgorithmError::Aliased { .. }
    ));

    let query = view(&g, hb, F::Uint32, 200, QUERY_WORDS);
    let filter = PointSpatialFilter {
        id: "f".into(),
        positions: pts.into(),
        query,
        candidates: None,
        mask: None,
        hits: None,
    };
    assert!(matches!(
        filter.clone().add_to_graph(&mut g).unwrap_err(),
        gpugraph_gpgpu::AlgorithmError::MissingArgument { what, .. }
            if &*what == "a mask, a hits output or both"
    ));
    let two = gpugraph_command::VectorView::from_chunks(vec![
        view(&g, ha, F::Float32x2, 0, 4),
        view(&g, ha, F::Float32x2, 4, 4),
    ]);
    let wrong = PointSpatialFilter {
        positions: two,
        candidates: Some(FilterCandidates {
            rows: view(&g, hb, F::Uint32, 210, 8),
            count: view(&g, hb, F::Uint32, 220, 1),
        }),
        hits: Some(view(&g, hb, F::Uint32, 230, 2)),
        ..filter
    };
    assert!(matches!(wrong.add_to_graph(&mut g).unwrap_err(),
            gpugraph_gpgpu::AlgorithmError::LengthMismatch { what, unit: "chunks", expected: 1, .. }
            if &*what == "positions"));

    let tree = |cap, node_offset| SegmentedBvhTree {
        item_offset: 0,
        items: 4,
        leaf_capacity: cap,
        node_offset,
        leaf_offset: 0,
    };
    let (nodes, children, leaf_ids, status) = (
        view(&g, hb, F::Float32, 0, 8 * 15),
        view(&g, hb, F::Uint32, 120, 30),
        view(&g, hb, F::Uint32, 150, 8),
        view(&g, hb, F::Uint32, 158, 4),
    );
    let seg = |trees: Vec<SegmentedBvhTree>| SegmentedBvh {
        id: "seg".into(),
        lower: pts,
        upper: pts,
        ids: None,
        trees,
        nodes,
        children,
        leaf_ids,
        status,
    };
    assert!(msg(seg(vec![tree(256, 0), tree(4, 7)])
        .add_to_graph(&mut g)
        .unwrap_err())
    .contains("up to 128"));
    let overlapping = vec![
        tree(4, 0),
        SegmentedBvhTree {
            leaf_offset: 4,
            ..tree(4, 5)
        },
    ];
    assert!(msg(seg(overlapping).add_to_graph(&mut g).unwrap_err()).contains("must not overlap"));
}
