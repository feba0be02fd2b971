//! GraphTraversal on the GPU vs the CPU BFS (`topology::cpu::traverse`): disconnected,
//! cyclic, high-degree (workgroup-expanded hubs), self-loop and duplicate-edge graphs, the
//! empty graph, zero seeds, out-of-range seeds and neighbours and malformed offsets (skipped
//! and counted), depth 0, forward / reverse / both, GPU-resident seed counts and active depth
//! changed between encodings without recompiling, and partitioned CSR (uneven and empty
//! partitions) giving the packed result. Outputs are poisoned first, with guard rows.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor, GpuContext,
    VectorFormat as F, VectorView,
};
use gpugraph_gpgpu::topology::cpu::{self, CsrPart};
use gpugraph_gpgpu::topology::{
    CsrAdjacency, GraphTraversal, TraversalDirection as Dir, MAX_TRAVERSAL_DEPTH, UNREACHED,
};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

/// A packed CSR over `n` nodes.
#[derive(Clone, Debug)]
struct Csr {
    n: usize,
    offsets: Vec<u32>,
    neighbors: Vec<u32>,
}

impl Csr {
    fn from_lists(lists: &[Vec<u32>]) -> Self {
        let mut offsets = vec![0u32];
        let mut neighbors = Vec::new();
        for l in lists {
            neighbors.extend_from_slice(l);
            offsets.push(neighbors.len() as u32);
        }
        Self {
            n: lists.len(),
            offsets,
            neighbors,
        }
    }

    fn reversed(&self) -> Self {
        let (offsets, neighbors) = cpu::reverse_csr(&self.offsets, &self.neighbors);
        Self {
            n: self.n,
            offsets,
            neighbors,
        }
    }

    /// Local CSRs of the partitions with node counts `lens` (global neighbour IDs kept).
    fn split(&self, lens: &[usize]) -> Vec<(Vec<u32>, Vec<u32>)> {
        let mut out = Vec::new();
        let mut v0 = 0usize;
        for &len in lens {
            // Malformed offsets stay malformed relative to the chunk (clamped slice bounds).
            let m = self.neighbors.len();
            let base = (self.offsets[v0] as usize).min(m);
            let end = (self.offsets[v0 + len] as usize).clamp(base, m);
            let offsets: Vec<u32> = self.offsets[v0..=v0 + len]
                .iter()
                .map(|&o| o.saturating_sub(base as u32))
                .collect();
            let neighbors = self.neighbors[base..end].to_vec();
            out.push((offsets, neighbors));
            v0 += len;
        }
        out
    }
}

/// Random directed graph: `n` nodes, about `avg` edges per node with a few hubs of `hub`
/// edges, self-loops and duplicates mixed in.
fn random_graph(r: &mut impl Rng, n: usize, avg: usize, hub: usize) -> Csr {
    let lists: Vec<Vec<u32>> = (0..n)
        .map(|v| {
            let deg = match r.random_range(0..50) {
                0 => hub,
                1 => 0,
                _ => r.random_range(0..=2 * avg),
            };
            let mut l: Vec<u32> = (0..deg).map(|_| r.random_range(0..n as u32)).collect();
            if r.random_range(0..8) == 0 {
                l.push(v as u32);
            }
            if !l.is_empty() && r.random_range(0..8) == 0 {
                l.push(l[0]);
            }
            l
        })
        .collect();
    Csr::from_lists(&lists)
}

/// GPU buffers of one traversal.
struct Bufs {
    mask: wgpu::Buffer,
    levels: wgpu::Buffer,
    status: wgpu::Buffer,
    seed_count: wgpu::Buffer,
    depth: wgpu::Buffer,
}

fn import(g: &mut CommandGraph, id: &str, b: &wgpu::Buffer) -> BufferHandle {
    g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
        .unwrap()
}

fn view(g: &CommandGraph, h: BufferHandle, row0: u64, rows: u64) -> DataView {
    g.create_data_view(
        h,
        DataViewDescriptor::packed(F::Uint32, rows).at_offset(row0 * 4),
    )
    .unwrap()
}

/// Chunks `parts` into one buffer (one guard word between chunks, a leading one so views
/// start at unaligned offsets) and returns their views.
fn chunked(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    id: &str,
    parts: &[&[u32]],
    keep: &mut Vec<wgpu::Buffer>,
) -> VectorView {
    let mut words = vec![POISON];
    let mut at = Vec::new();
    for p in parts {
        at.push((words.len() as u64, p.len() as u64));
        words.extend_from_slice(p);
        words.push(POISON);
    }
    let b = upload(ctx, &words);
    let h = import(g, id, &b);
    keep.push(b);
    VectorView::from_chunks(at.into_iter().map(|(o, l)| view(g, h, o, l)).collect())
}

/// One traversal configuration.
#[derive(Clone)]
struct Case<'a> {
    fwd: &'a Csr,
    rev: Option<&'a Csr>,
    dir: Dir,
    seeds: &'a [u32],
    seed_count: Option<u32>,
    max_depth: u32,
    active: Option<u32>,
    parts: Vec<usize>,
}

/// Builds the traversal of `case` into a graph; returns the graph and its buffers.
fn build(ctx: &GpuContext, case: &Case<'_>) -> (CommandGraph, Bufs, Vec<wgpu::Buffer>) {
    let mut g = CommandGraph::new("traversal", &ctx.device);
    let mut keep = Vec::new();
    let n = case.fwd.n;
    let adjacency = |g: &mut CommandGraph, keep: &mut Vec<wgpu::Buffer>, csr: &Csr, name: &str| {
        let split = csr.split(&case.parts);
        let offs: Vec<&[u32]> = split.iter().map(|p| &p.0[..]).collect();
        let nbrs: Vec<&[u32]> = split.iter().map(|p| &p.1[..]).collect();
        CsrAdjacency {
            offsets: chunked(ctx, g, &format!("{name}-offsets"), &offs, keep),
            neighbors: chunked(ctx, g, &format!("{name}-neighbors"), &nbrs, keep),
        }
    };
    let forward = adjacency(&mut g, &mut keep, case.fwd, "fwd");
    let reverse = case.rev.map(|r| adjacency(&mut g, &mut keep, r, "rev"));
    let b = Bufs {
        mask: upload(ctx, &vec![POISON; n + case.parts.len() + 1]),
        levels: upload(ctx, &vec![POISON; n + case.parts.len() + 1]),
        status: upload(ctx, &[POISON; 4]),
        seed_count: upload(ctx, &[case.seed_count.unwrap_or(0)]),
        depth: upload(ctx, &[case.active.unwrap_or(0)]),
    };
    let node_views = |g: &mut CommandGraph, id: &str, buf: &wgpu::Buffer| {
        let h = import(g, id, buf);
        let mut row = 1u64;
        let mut chunks = Vec::new();
        for &len in &case.parts {
            chunks.push(view(g, h, row, len as u64));
            row += len as u64 + 1;
        }
        VectorView::from_chunks(chunks)
    };
    let mask = node_views(&mut g, "mask", &b.mask);
    let levels = node_views(&mut g, "levels", &b.levels);
    let sb = upload(ctx, &[&[POISON, POISON][..], case.seeds].concat());
    let sh = import(&mut g, "seeds", &sb);
    keep.push(sb);
    let mut seeds = view(&g, sh, 2, case.seeds.len() as u64);
    if case.seed_count.is_some() {
        let ch = import(&mut g, "seed-count", &b.seed_count);
        seeds = g.with_live_count(seeds, view(&g, ch, 0, 1)).unwrap();
    }
    let active_depth = case.active.map(|_| {
        let h = import(&mut g, "active-depth", &b.depth);
        view(&g, h, 0, 1)
    });
    let sth = import(&mut g, "status", &b.status);
    GraphTraversal {
        id: "bfs".into(),
        forward,
        reverse,
        direction: case.dir,
        seeds,
        max_depth: case.max_depth,
        active_depth,
        mask,
        levels: Some(levels),
        status: Some(view(&g, sth, 0, 3)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    (g, b, keep)
}

fn expected(case: &Case<'_>) -> cpu::Traversal {
    let fwd = case.fwd.split(&case.parts);
    let rev = case.rev.map(|r| r.split(&case.parts));
    let parts = |s: &Vec<(Vec<u32>, Vec<u32>)>| -> Vec<(Vec<u32>, Vec<u32>)> { s.clone() };
    let f = parts(&fwd);
    let fp: Vec<CsrPart<'_>> = f
        .iter()
        .map(|(o, n)| CsrPart {
            offsets: o,
            neighbors: n,
        })
        .collect();
    let rp: Option<Vec<CsrPart<'_>>> = rev.as_ref().map(|r| {
        r.iter()
            .map(|(o, n)| CsrPart {
                offsets: o,
                neighbors: n,
            })
            .collect()
    });
    let active_seeds = match case.seed_count {
        Some(c) => &case.seeds[..(c as usize).min(case.seeds.len())],
        None => case.seeds,
    };
    cpu::traverse(
        &fp,
        rp.as_deref(),
        case.dir,
        active_seeds,
        case.max_depth,
        case.active,
    )
}

/// Node-aligned rows of a chunked output (guards must stay poisoned).
fn gather(ctx: &GpuContext, buf: &wgpu::Buffer, parts: &[usize], label: &str) -> Vec<u32> {
    let words = read_buffer(ctx, buf);
    assert_eq!(words[0], POISON, "{label}: leading guard");
    let mut out = Vec::new();
    let mut row = 1usize;
    for &len in parts {
        out.extend_from_slice(&words[row..row + len]);
        assert_eq!(words[row + len], POISON, "{label}: guard after a chunk");
        row += len + 1;
    }
    out
}

fn check(ctx: &GpuContext, b: &Bufs, case: &Case<'_>, label: &str) -> cpu::Traversal {
    let want = expected(case);
    let mask = gather(ctx, &b.mask, &case.parts, label);
    let levels = gather(ctx, &b.levels, &case.parts, label);
    assert_eq!(levels, want.levels, "{label}: levels");
    assert_eq!(mask, want.mask, "{label}: mask");
    let status = read_buffer(ctx, &b.status);
    assert_eq!(status[..3], want.status, "{label}: status");
    assert_eq!(status[3], POISON, "{label}: status guard");
    want
}

fn run_case(ctx: &GpuContext, case: &Case<'_>, label: &str) -> cpu::Traversal {
    let (g, b, _keep) = build(ctx, case);
    run(ctx, g);
    check(ctx, &b, case, label)
}

fn packed(n: usize) -> Vec<usize> {
    vec![n]
}

#[test]
fn random_graphs_match_bfs_in_every_direction_and_partitioning() {
    let ctx = ctx();
    let mut r = rng(16);
    for n in [1usize, 2, 255, 256, 257, 3000] {
        // Hubs past HUGE_DEGREE (the hub dispatch) in the largest graph.
        let fwd = random_graph(&mut r, n, 3, if n > 2000 { 1500 } else { 300 });
        let rev = fwd.reversed();
        let seeds: Vec<u32> = (0..r.random_range(1..6))
            .map(|_| r.random_range(0..n as u32))
            .collect();
        for dir in [Dir::Forward, Dir::Reverse, Dir::Both] {
            for parts in [packed(n), uneven_chunks(&mut r, n, 4)] {
                for max_depth in [0u32, 1, 3, 6] {
                    let case = Case {
                        fwd: &fwd,
                        rev: Some(&rev),
                        dir,
                        seeds: &seeds,
                        seed_count: None,
                        max_depth,
                        active: None,
                        parts: parts.clone(),
                    };
                    let label = format!("n={n} {dir:?} parts={parts:?} depth={max_depth}");
                    run_case(&ctx, &case, &label);
                }
            }
        }
    }
}

#[test]
fn special_graphs_match_bfs() {
    let ctx = ctx();
    let n = 600usize;
    // Two components, a ring, a self-loop-only node, duplicate edges, and a hub of 2,000
    // edges (workgroup expansion) pointing at every node of the second component.
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (v, l) in lists.iter_mut().enumerate().take(100) {
        l.push(((v + 1) % 100) as u32); // ring 0..100
    }
    lists[5].extend([5, 5, 6, 6, 6]); // self-loops and duplicates
    lists[200] = (0..2000).map(|i| 300 + (i % 300) as u32).collect(); // hub into 300..600
    lists[300].push(200); // cycle back into the hub
    lists[150].push(150); // isolated self-loop
    let fwd = Csr::from_lists(&lists);
    let rev = fwd.reversed();
    for (seeds, label) in [
        (vec![0u32], "ring"),
        (vec![200], "hub"),
        (vec![150], "self-loop"),
        (vec![0, 200, 0, 200], "duplicate seeds, two components"),
        (vec![599], "into the hub backwards"),
    ] {
        for dir in [Dir::Forward, Dir::Reverse, Dir::Both] {
            for max_depth in [0u32, 1, 2, 50, 120] {
                let case = Case {
                    fwd: &fwd,
                    rev: Some(&rev),
                    dir,
                    seeds: &seeds,
                    seed_count: None,
                    max_depth,
                    active: None,
                    parts: vec![250, 0, 350],
                };
                let want = run_case(&ctx, &case, &format!("{label} {dir:?} d={max_depth}"));
                if label == "ring" && dir == Dir::Forward && max_depth == 120 {
                    assert_eq!(want.status[0], 100, "the whole ring, once each");
                }
            }
        }
    }
}

#[test]
fn wide_frontiers_overflow_the_workgroup_staging_and_stay_exact() {
    // 300 seeds of degree 31 (per-invocation path) into 9,300 fresh nodes: one workgroup
    // claims far more than it stages; then a hub of 6,000 distinct targets (workgroup path).
    let ctx = ctx();
    let n = 20_000usize;
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (s, l) in lists.iter_mut().enumerate().take(300) {
        *l = (0..31).map(|k| (300 + s * 31 + k) as u32).collect();
    }
    lists[300] = (0..6000).map(|k| 10_000 + k as u32).collect();
    let fwd = Csr::from_lists(&lists);
    let seeds: Vec<u32> = (0..300).collect();
    for parts in [vec![n], vec![5000, 0, 15_000]] {
        let case = Case {
            fwd: &fwd,
            rev: None,
            dir: Dir::Forward,
            seeds: &seeds,
            seed_count: None,
            max_depth: 3,
            active: None,
            parts: parts.clone(),
        };
        let want = run_case(&ctx, &case, &format!("wide {parts:?}"));
        assert_eq!(want.status[0], 300 + 9300 + 6000);
    }
}

#[test]
fn empty_graph_zero_seeds_and_bad_ids_are_counted_not_followed() {
    let ctx = ctx();
    let empty = Csr::from_lists(&[]);
    for seeds in [vec![], vec![0u32, 7]] {
        let case = Case {
            fwd: &empty,
            rev: None,
            dir: Dir::Forward,
            seeds: &seeds,
            seed_count: None,
            max_depth: 3,
            active: None,
            parts: vec![0],
        };
        let want = run_case(&ctx, &case, "empty graph");
        assert_eq!(want.status, [0, seeds.len() as u32, 3]);
    }
    // Out-of-range neighbours and a malformed offset pair (decreasing, then past the end).
    let mut bad = Csr::from_lists(&[vec![1, 9, u32::MAX], vec![2, 4], vec![0], vec![3]]);
    bad.offsets = vec![0, 3, 5, 4, 9];
    let seeds = [0u32, 2, 3, 77];
    for parts in [vec![4], vec![1, 3], vec![0, 2, 2]] {
        let case = Case {
            fwd: &bad,
            rev: None,
            dir: Dir::Forward,
            seeds: &seeds,
            seed_count: None,
            max_depth: 4,
            active: None,
            parts: parts.clone(),
        };
        let want = run_case(&ctx, &case, &format!("bad ids {parts:?}"));
        assert!(want.status[1] >= 3, "bad IDs counted: {:?}", want.status);
    }
    // Six overlapping hub ranges (offsets that decrease in between) over 1,600 edges: the
    // hub list holds 1600 / HUGE_DEGREE + 2 = 3, so the rest are expanded by their
    // workgroups; each range ends on 100 targets no other range has.
    let n = 1700usize;
    let mut offsets = vec![1600u32; n + 1];
    for k in 0..6u32 {
        offsets[2 * k as usize] = 100 * k;
        offsets[2 * k as usize + 1] = 1100 + 100 * k;
    }
    let overlap = Csr {
        n,
        offsets,
        neighbors: (12..1612).collect(),
    };
    let hubs = [0u32, 2, 4, 6, 8, 10];
    let case = Case {
        fwd: &overlap,
        rev: None,
        dir: Dir::Forward,
        seeds: &hubs,
        seed_count: None,
        max_depth: 1,
        active: None,
        parts: vec![n],
    };
    let want = run_case(&ctx, &case, "overlapping hubs");
    assert_eq!(want.status[0], 6 + 1600, "every target once");
    // Zero active seeds through a live count.
    let g = Csr::from_lists(&[vec![1], vec![0]]);
    let case = Case {
        fwd: &g,
        rev: None,
        dir: Dir::Forward,
        seeds: &[0, 1],
        seed_count: Some(0),
        max_depth: 2,
        active: None,
        parts: vec![2],
    };
    assert_eq!(run_case(&ctx, &case, "zero seed count").status[0], 0);
}

#[test]
fn seed_count_and_active_depth_change_between_encodings_without_recompiling() {
    let ctx = ctx();
    let mut r = rng(161);
    let n = 2000;
    let fwd = random_graph(&mut r, n, 2, 100);
    let seeds: Vec<u32> = (0..40).map(|_| r.random_range(0..n as u32)).collect();
    let mut case = Case {
        fwd: &fwd,
        rev: None,
        dir: Dir::Forward,
        seeds: &seeds,
        seed_count: Some(40),
        max_depth: 5,
        active: Some(5),
        parts: vec![700, 1300],
    };
    let (g, b, _keep) = build(&ctx, &case);
    let mut compiled = g.compile().unwrap();
    let mut seen = Vec::new();
    for (count, active) in [(40u32, 5u32), (3, 2), (0, 5), (1, 0), (40, 9), (99, 3)] {
        ctx.queue
            .write_buffer(&b.seed_count, 0, bytemuck::bytes_of(&count));
        ctx.queue
            .write_buffer(&b.depth, 0, bytemuck::bytes_of(&active));
        ctx.queue
            .write_buffer(&b.mask, 0, bytemuck::cast_slice(&vec![POISON; n + 3]));
        ctx.queue
            .write_buffer(&b.levels, 0, bytemuck::cast_slice(&vec![POISON; n + 3]));
        ctx.queue
            .write_buffer(&b.status, 0, bytemuck::cast_slice(&[POISON; 4]));
        encode_wait(&ctx, &mut compiled, &[]);
        case.seed_count = Some(count);
        case.active = Some(active);
        let want = check(&ctx, &b, &case, &format!("count={count} active={active}"));
        seen.push(want.status[0]);
    }
    assert!(
        seen.windows(2).any(|w| w[0] != w[1]),
        "the runs differ: {seen:?}"
    );
    assert_eq!(seen[2], 0);
}

#[test]
fn levels_are_bfs_distances_on_a_chain() {
    let ctx = ctx();
    let n = 1100usize;
    let lists: Vec<Vec<u32>> = (0..n)
        .map(|v| {
            if v + 1 < n {
                vec![v as u32 + 1]
            } else {
                vec![]
            }
        })
        .collect();
    let fwd = Csr::from_lists(&lists);
    let case = Case {
        fwd: &fwd,
        rev: None,
        dir: Dir::Forward,
        seeds: &[0],
        seed_count: None,
        max_depth: MAX_TRAVERSAL_DEPTH,
        active: None,
        parts: vec![n],
    };
    let want = run_case(&ctx, &case, "chain");
    assert_eq!(want.levels[1023], 1023);
    assert_eq!(want.levels[1025], UNREACHED);
}

#[test]
fn bad_declarations_are_named_errors() {
    let ctx = ctx();
    let fwd = Csr::from_lists(&[vec![1], vec![0], vec![]]);
    let base = Case {
        fwd: &fwd,
        rev: None,
        dir: Dir::Forward,
        seeds: &[0],
        seed_count: None,
        max_depth: 2,
        active: None,
        parts: vec![3],
    };
    let declare = |mutate: &dyn Fn(&mut GraphTraversal, &mut CommandGraph)| {
        let mut g = CommandGraph::new("bad", &ctx.device);
        let buf = upload(&ctx, &[0u32; 64]);
        let h = import(&mut g, "words", &buf);
        let mut t = GraphTraversal {
            id: "bad".into(),
            forward: CsrAdjacency {
                offsets: view(&g, h, 0, 4).into(),
                neighbors: view(&g, h, 4, 2).into(),
            },
            reverse: None,
            direction: base.dir,
            seeds: view(&g, h, 8, 1),
            max_depth: base.max_depth,
            active_depth: None,
            mask: view(&g, h, 16, 3).into(),
            levels: None,
            status: None,
        };
        mutate(&mut t, &mut g);
        // The mask shares the adjacency's buffer unless a mutation moved it.
        t.add_to_graph(&mut g).unwrap_err()
    };
    let e = declare(&|_, _| {});
    assert!(matches!(e, AlgorithmError::Aliased { .. }), "{e}");
    let own_mask = |t: &mut GraphTraversal, g: &mut CommandGraph| {
        let b = upload(&ctx, &[0u32; 8]);
        let h = import(g, "mask-out", &b);
        t.mask = view(g, h, 0, 3).into();
    };
    let e = declare(&|t, g| {
        own_mask(t, g);
        t.max_depth = MAX_TRAVERSAL_DEPTH + 1;
    });
    assert!(
        matches!(&e, AlgorithmError::OutOfRange { what, .. } if &**what == "max_depth"),
        "{e}"
    );
    let e = declare(&|t, g| {
        own_mask(t, g);
        t.direction = Dir::Both;
    });
    assert!(matches!(e, AlgorithmError::MissingArgument { .. }), "{e}");
    let e = declare(&|t, g| {
        own_mask(t, g);
        t.forward.offsets = view(g, t.forward.offsets.chunks()[0].buffer(), 0, 3).into();
    });
    assert!(
        matches!(
            &e,
            AlgorithmError::LengthMismatch {
                actual: 3,
                expected: 4,
                ..
            }
        ),
        "{e}"
    );
    let e = declare(&|t, g| {
        own_mask(t, g);
        let h = t.forward.offsets.chunks()[0].buffer();
        t.forward.neighbors = VectorView::from_chunks(vec![view(g, h, 4, 1), view(g, h, 5, 1)]);
    });
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { unit: "chunks", .. }),
        "{e}"
    );
}

#[test]
fn replacing_one_partitions_batch_between_encodings_keeps_the_others() {
    // Two partitions with their own offset and neighbour allocations; the second batch is
    // replaced by an import override (same node count, new edges) without recompiling.
    let ctx = ctx();
    let mut r = rng(167);
    let (n0, n1) = (700usize, 900usize);
    let n = n0 + n1;
    let old = random_graph(&mut r, n, 3, 40);
    let mut new_lists: Vec<Vec<u32>> = (0..n)
        .map(|v| {
            let (lo, hi) = (old.offsets[v] as usize, old.offsets[v + 1] as usize);
            old.neighbors[lo..hi].to_vec()
        })
        .collect();
    for l in new_lists.iter_mut().skip(n0) {
        *l = (0..r.random_range(0..6))
            .map(|_| r.random_range(0..n as u32))
            .collect();
    }
    let new = Csr::from_lists(&new_lists);
    let seeds: Vec<u32> = vec![3, 750, 1200];
    let parts = vec![n0, n1];
    let (old_split, new_split) = (old.split(&parts), new.split(&parts));
    let mut g = CommandGraph::new("replace", &ctx.device);
    let bufs: Vec<(wgpu::Buffer, wgpu::Buffer)> = old_split
        .iter()
        .map(|(o, nb)| (upload(&ctx, o), upload(&ctx, nb)))
        .collect();
    let mut offsets = Vec::new();
    let mut neighbors = Vec::new();
    let mut handles = Vec::new();
    for (p, ((ob, nbb), (o, nb))) in bufs.iter().zip(&old_split).enumerate() {
        let oh = import(&mut g, &format!("offsets-{p}"), ob);
        let nh = import(&mut g, &format!("neighbors-{p}"), nbb);
        offsets.push(view(&g, oh, 0, o.len() as u64));
        neighbors.push(view(&g, nh, 0, nb.len() as u64));
        handles.push((oh, nh));
    }
    // The replacement batch must fit the compiled views: keep its edge count.
    let (new_o, mut new_nb) = new_split[1].clone();
    new_nb.resize(old_split[1].1.len(), 0);
    let mut new_o = new_o;
    let last = new_o.len() - 1;
    new_o[last] = new_nb.len() as u32; // padding edges (to node 0) belong to the last node
    let replacement = (upload(&ctx, &new_o), upload(&ctx, &new_nb));
    let mask_b = upload(&ctx, &vec![POISON; n]);
    let sb = upload(&ctx, &seeds);
    let mh = import(&mut g, "mask", &mask_b);
    let sh = import(&mut g, "seeds", &sb);
    let mask = VectorView::from_chunks(vec![
        view(&g, mh, 0, n0 as u64),
        view(&g, mh, n0 as u64, n1 as u64),
    ]);
    GraphTraversal {
        id: "replace".into(),
        forward: CsrAdjacency {
            offsets: VectorView::from_chunks(offsets),
            neighbors: VectorView::from_chunks(neighbors),
        },
        reverse: None,
        direction: Dir::Forward,
        seeds: view(&g, sh, 0, seeds.len() as u64),
        max_depth: 6,
        active_depth: None,
        mask,
        levels: None,
        status: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    let oracle = |p1: (&[u32], &[u32])| {
        let f = [
            CsrPart {
                offsets: &old_split[0].0,
                neighbors: &old_split[0].1,
            },
            CsrPart {
                offsets: p1.0,
                neighbors: p1.1,
            },
        ];
        cpu::traverse(&f, None, Dir::Forward, &seeds, 6, None).mask
    };
    encode_wait(&ctx, &mut compiled, &[]);
    let before = read_buffer(&ctx, &mask_b);
    assert_eq!(
        before,
        oracle((&old_split[1].0, &old_split[1].1)),
        "original batches"
    );
    ctx.queue
        .write_buffer(&mask_b, 0, bytemuck::cast_slice(&vec![POISON; n]));
    let (oh, nh) = handles[1];
    encode_wait(
        &ctx,
        &mut compiled,
        &[(oh, &replacement.0), (nh, &replacement.1)],
    );
    let after = read_buffer(&ctx, &mask_b);
    assert_eq!(after, oracle((&new_o, &new_nb)), "second batch replaced");
    assert_ne!(before, after, "the replacement changed the reach");
}
