//! Spatial family on the GPU vs the CPU oracles (`spatial::cpu`): grid index builds (2-D and
//! 3-D, generated and explicit IDs, uneven and empty chunks, clustered and duplicate points,
//! points on cell and domain boundaries, NaN/inf and out-of-domain rows, exact capacity and
//! overflow), grid queries (point, bounds, radius, invalid, moved between encodings without
//! recompiling, output overflow, masks) and the exact point filter over all rows and over
//! candidates. Outputs are poisoned first so unwritten rows fail.

mod common;

use common::*;
use gpugraph_command::wgpu;
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor, GpuContext,
    VectorFormat as F, VectorView,
};
use gpugraph_gpgpu::spatial::{
    cpu, BatchGridIndexQuery, FilterCandidates, GridIndex, GridIndexQuery, GridStorage,
    PointSpatialFilter, SpatialDomain, SpatialQuery, NO_ID, QUERY_FLAG_INDEX_OVERFLOW,
    QUERY_FLAG_INVALID, QUERY_FLAG_MASK_RANGE, QUERY_FLAG_OUTPUT_OVERFLOW,
    QUERY_FLAG_OUTSIDE_DOMAIN, QUERY_WORDS,
};
use gpugraph_gpgpu::AlgorithmError;
use rand::Rng;

fn domain(dims: usize) -> SpatialDomain {
    if dims == 2 {
        SpatialDomain::new_2d([-2.0, 10.0], [6.0, 14.0], [8, 5])
    } else {
        SpatialDomain {
            min: [-2.0, 10.0, 0.0],
            max: [6.0, 14.0, 3.0],
            cells: [4, 5, 3],
        }
    }
}

/// Clustered points in the domain grown by 10%, with exact cell edges, the max corner,
/// duplicates, NaN and ±inf mixed in.
fn points(r: &mut impl Rng, n: usize, d: &SpatialDomain, dims: usize) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(dims * n);
    let centers: Vec<Vec<f32>> = (0..3)
        .map(|_| {
            (0..dims)
                .map(|a| dyadic(r.random_range(d.min[a]..d.max[a])))
                .collect()
        })
        .collect();
    for row in 0..n {
        if row > 0 && r.random_range(0..10) == 0 {
            let from = r.random_range(0..row);
            let dup: Vec<f32> = out[from * dims..(from + 1) * dims].to_vec();
            out.extend(dup);
            continue;
        }
        let c = &centers[r.random_range(0..3)];
        for (a, &center) in c.iter().enumerate() {
            let (lo, hi, cells) = (d.min[a], d.max[a], d.cells[a]);
            let pad = (hi - lo) * 0.1;
            out.push(match r.random_range(0..30) {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => hi,
                4 => lo,
                5 | 6 => lo + (hi - lo) * r.random_range(0..=cells) as f32 / cells as f32,
                7 | 8 => dyadic(r.random_range(lo - pad..hi + pad)),
                // Clustered: dyadic offsets around a center keep distances exact in float32.
                _ => center + r.random_range(-64..=64) as f32 / 128.0,
            });
        }
    }
    out
}

/// `v` rounded to a multiple of 2^-8: near a query boundary every difference, square and sum
/// of such coordinates is exact in float32, so a GPU that fuses multiply-adds (allowed by
/// WGSL) decides `d² ≤ r²` exactly like the CPU oracle.
fn dyadic(v: f32) -> f32 {
    (v * 256.0).round() / 256.0
}

fn f32_words(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

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

fn point_format(dims: usize) -> F {
    if dims == 2 {
        F::Float32x2
    } else {
        F::Float32x3
    }
}

/// GPU buffers of one index build: points (one buffer, chunked views), IDs, outputs.
struct Built {
    positions: wgpu::Buffer,
    offsets: wgpu::Buffer,
    ids_out: wgpu::Buffer,
    status: wgpu::Buffer,
}

/// Adds a grid index over `pos` split into `lens` chunks (one guard row after each output).
#[allow(clippy::too_many_arguments)]
fn add_index(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    d: &SpatialDomain,
    dims: usize,
    pos: &[f32],
    lens: &[usize],
    ids: Option<&[u32]>,
    capacity: usize,
) -> (Built, GridStorage) {
    let cells = d.cell_count() as usize;
    let b = Built {
        positions: upload(ctx, &f32_words(pos)),
        offsets: upload(ctx, &vec![POISON; cells + 2]),
        ids_out: upload(ctx, &vec![POISON; capacity + 1]),
        status: upload(ctx, &[POISON; 4]),
    };
    let ph = import(g, "positions", &b.positions);
    let id_buf = ids.map(|ids| upload(ctx, ids));
    let idh = id_buf.as_ref().map(|buf| import(g, "ids", buf));
    let mut chunks = Vec::new();
    let mut id_chunks = Vec::new();
    let mut row = 0u64;
    for &len in lens {
        chunks.push(view(g, ph, point_format(dims), row, len as u64));
        if let Some(h) = idh {
            id_chunks.push(view(g, h, F::Uint32, row, len as u64));
        }
        row += len as u64;
    }
    let oh = import(g, "offsets", &b.offsets);
    let ih = import(g, "object-ids", &b.ids_out);
    let sh = import(g, "status", &b.status);
    let storage = GridIndex {
        id: "index".into(),
        positions: VectorView::from_chunks(chunks),
        ids: idh.map(|_| VectorView::from_chunks(id_chunks)),
        domain: *d,
        cell_offsets: view(g, oh, F::Uint32, 0, cells as u64 + 1),
        object_ids: view(g, ih, F::Uint32, 0, capacity as u64),
        status: view(g, sh, F::Uint32, 0, 3),
    }
    .add_to_graph(g)
    .unwrap();
    (b, storage)
}

fn check_index(ctx: &GpuContext, b: &Built, want: &cpu::GridIndexResult, label: &str) {
    let offsets = read_buffer(ctx, &b.offsets);
    let n = want.cell_offsets.len();
    assert_eq!(offsets[..n], want.cell_offsets[..], "{label}: offsets");
    assert_eq!(offsets[n], POISON, "{label}: offsets guard");
    let ids = read_buffer(ctx, &b.ids_out);
    let cap = want.object_ids.len();
    assert_eq!(ids[..cap], want.object_ids[..], "{label}: object ids");
    assert_eq!(ids[cap], POISON, "{label}: object ids guard");
    let status = read_buffer(ctx, &b.status);
    assert_eq!(
        status[..4],
        [want.accepted, want.overflow as u32, want.outside, POISON],
        "{label}: status"
    );
}

#[test]
fn grid_index_matches_the_oracle_2d_3d_chunked_ids_and_capacities() {
    let ctx = ctx();
    let mut r = rng(14);
    for dims in [2usize, 3] {
        let d = domain(dims);
        for n in [0usize, 1, 7, 256, 257, 3001] {
            let pos = points(&mut r, n, &d, dims);
            let explicit: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7919) ^ 5).collect();
            let accepted = cpu::grid_index(&d, dims, &pos, None, 0).accepted as usize;
            for (ids, capacity) in [
                (None, accepted),
                (Some(&explicit[..]), accepted),
                (None, accepted.saturating_sub(1)),
                (None, accepted / 3),
                (Some(&explicit[..]), accepted + 5),
            ] {
                let lens = uneven_chunks(&mut r, n, 4);
                let label = format!(
                    "{dims}-D n={n} cap={capacity} ids={} lens={lens:?}",
                    ids.is_some()
                );
                let mut g = CommandGraph::new("grid-index", &ctx.device);
                let (b, _) = add_index(&ctx, &mut g, &d, dims, &pos, &lens, ids, capacity);
                run(&ctx, g);
                let want = cpu::grid_index(&d, dims, &pos, ids, capacity);
                check_index(&ctx, &b, &want, &label);
            }
        }
    }
}

#[test]
fn exact_maximum_coordinates_land_in_the_final_cell() {
    let ctx = ctx();
    let d = domain(2);
    // The max corner, the min corner, an interior cell edge, and rows just outside.
    let pos = [
        6.0, 14.0, -2.0, 10.0, 0.0, 12.4, 6.0000005, 14.0, -2.0, 9.999999,
    ];
    let want = cpu::grid_index(&d, 2, &pos, None, 8);
    assert_eq!(want.accepted, 3);
    let last = d.cell_count() as usize - 1;
    assert_eq!(
        want.cell_offsets[last + 1] - want.cell_offsets[last],
        1,
        "max corner in the last cell"
    );
    let mut g = CommandGraph::new("grid-edge", &ctx.device);
    let (b, _) = add_index(&ctx, &mut g, &d, 2, &pos, &[5], None, 8);
    run(&ctx, g);
    check_index(&ctx, &b, &want, "edges");
}

/// Query buffers: the query words, candidates (+1 guard), status (+1 guard), optional mask.
struct QueryBufs {
    query: wgpu::Buffer,
    candidates: wgpu::Buffer,
    status: wgpu::Buffer,
    mask: Option<wgpu::Buffer>,
}

fn add_query(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    storage: GridStorage,
    q: &SpatialQuery,
    capacity: usize,
    mask_len: Option<usize>,
) -> (QueryBufs, (DataView, DataView, DataView)) {
    let qb = QueryBufs {
        query: upload(ctx, &q.words()),
        candidates: upload(ctx, &vec![POISON; capacity + 1]),
        status: upload(ctx, &[POISON; 4]),
        mask: mask_len.map(|n| upload(ctx, &vec![POISON; n + 1])),
    };
    let qh = import(g, "query", &qb.query);
    let ch = import(g, "candidates", &qb.candidates);
    let sh = import(g, "query-status", &qb.status);
    let query = view(g, qh, F::Uint32, 0, QUERY_WORDS);
    let candidates = view(g, ch, F::Uint32, 0, capacity as u64);
    let status = view(g, sh, F::Uint32, 0, 3);
    let mask = qb.mask.as_ref().map(|m| {
        let h = import(g, "mask", m);
        view(g, h, F::Uint32, 0, mask_len.unwrap() as u64)
    });
    GridIndexQuery {
        id: "query".into(),
        index: storage,
        query,
        candidates,
        status,
        mask,
    }
    .add_to_graph(g)
    .unwrap();
    (qb, (query, candidates, status))
}

fn check_query(
    ctx: &GpuContext,
    qb: &QueryBufs,
    want: &cpu::GridQueryResult,
    capacity: usize,
    label: &str,
) {
    let status = read_buffer(ctx, &qb.status);
    assert_eq!(
        status[..4],
        [want.count, want.required, want.flags, POISON],
        "{label}: status"
    );
    let cand = read_buffer(ctx, &qb.candidates);
    let count = want.count as usize;
    assert_eq!(
        cand[..count],
        want.candidates[..count],
        "{label}: candidates"
    );
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

fn queries(r: &mut impl Rng, d: &SpatialDomain, pos: &[f32], dims: usize) -> Vec<SpatialQuery> {
    let p = |r: &mut dyn rand::RngCore| -> [f32; 3] {
        std::array::from_fn(|a| {
            if a < dims {
                dyadic(r.random_range(d.min[a] - 1.0..d.max[a] + 1.0))
            } else {
                0.0
            }
        })
    };
    let mut out = vec![
        // The whole domain, a box missing it, invalid queries.
        SpatialQuery::Bounds {
            min: d.min,
            max: d.max,
        },
        SpatialQuery::Bounds {
            min: [100.0; 3],
            max: [101.0; 3],
        },
        SpatialQuery::Bounds {
            min: [1.0; 3],
            max: [0.0; 3],
        },
        SpatialQuery::Radius {
            center: [0.0, 12.0, 1.0],
            radius: -1.0,
        },
        SpatialQuery::Point([f32::NAN, 12.0, 1.0]),
        // Exactly the max corner.
        SpatialQuery::Point(d.max),
    ];
    if pos.len() >= dims {
        let row = r.random_range(0..pos.len() / dims);
        let mut at = [0.0f32; 3];
        at[..dims].copy_from_slice(&pos[row * dims..(row + 1) * dims]);
        out.push(SpatialQuery::Point(at));
        out.push(SpatialQuery::Radius {
            center: at,
            radius: 0.75,
        });
    }
    for _ in 0..4 {
        let (a, b) = (p(r), p(r));
        out.push(SpatialQuery::Bounds {
            min: std::array::from_fn(|i| a[i].min(b[i])),
            max: std::array::from_fn(|i| a[i].max(b[i])),
        });
        out.push(SpatialQuery::Radius {
            center: p(r),
            radius: r.random_range(0..40) as f32 / 16.0,
        });
    }
    out
}

#[test]
fn grid_queries_match_the_oracle_and_move_without_recompiling() {
    let ctx = ctx();
    let mut r = rng(5);
    for dims in [2usize, 3] {
        let d = domain(dims);
        for (n, index_cap_less) in [(0usize, 0usize), (600, 0), (600, 40)] {
            let pos = points(&mut r, n, &d, dims);
            let accepted = cpu::grid_index(&d, dims, &pos, None, 0).accepted as usize;
            let index_cap = accepted - index_cap_less.min(accepted);
            let index = cpu::grid_index(&d, dims, &pos, None, index_cap);
            for (capacity, mask) in [
                (accepted + 3, Some(n)),
                (accepted / 4, None),
                (0, Some(n / 2)),
            ] {
                let mut g = CommandGraph::new("grid-query", &ctx.device);
                let lens = uneven_chunks(&mut r, n, 3);
                let (b, storage) = add_index(&ctx, &mut g, &d, dims, &pos, &lens, None, index_cap);
                let qs = queries(&mut r, &d, &pos, dims);
                let (qb, _) = add_query(&ctx, &mut g, storage, &qs[0], capacity, mask);
                let mut compiled = g.compile().unwrap();
                for q in &qs {
                    // Moving the query rewrites its words; the compiled graph stays.
                    ctx.queue
                        .write_buffer(&qb.query, 0, bytemuck::cast_slice(&q.words()));
                    if let Some(m) = &qb.mask {
                        ctx.queue.write_buffer(
                            m,
                            0,
                            bytemuck::cast_slice(&vec![POISON; mask.unwrap()]),
                        );
                    }
                    ctx.queue.write_buffer(
                        &qb.candidates,
                        0,
                        bytemuck::cast_slice(&vec![POISON; capacity + 1]),
                    );
                    encode_wait(&ctx, &mut compiled, &[]);
                    let want = cpu::grid_query(&d, dims, &index, q, capacity, mask);
                    let label =
                        format!("{dims}-D n={n} index cap={index_cap} cap={capacity} {q:?}");
                    check_query(&ctx, &qb, &want, capacity, &label);
                }
                check_index(&ctx, &b, &index, "index under queries");
            }
        }
    }
}

#[test]
fn query_flags_report_overflow_invalid_queries_and_mask_range() {
    let d = domain(2);
    let pos = [0.0f32, 12.0, 0.0, 12.0, 1.0, 12.0];
    let index = cpu::grid_index(&d, 2, &pos, None, 2);
    assert!(index.overflow);
    let all = SpatialQuery::Bounds {
        min: d.min,
        max: d.max,
    };
    let res = cpu::grid_query(&d, 2, &index, &all, 1, Some(1));
    assert_eq!(
        res.flags,
        QUERY_FLAG_INDEX_OVERFLOW | QUERY_FLAG_OUTPUT_OVERFLOW | QUERY_FLAG_MASK_RANGE
    );
    let outside = cpu::grid_index(&d, 2, &[100.0, 12.0], None, 1);
    let reach = SpatialQuery::Radius {
        center: [5.0, 12.0, 0.0],
        radius: 2.0,
    };
    assert_eq!(
        cpu::grid_query(&d, 2, &outside, &reach, 1, None).flags,
        QUERY_FLAG_OUTSIDE_DOMAIN
    );
    let within = SpatialQuery::Radius {
        center: [4.0, 12.0, 0.0],
        radius: 1.0,
    };
    assert_eq!(cpu::grid_query(&d, 2, &outside, &within, 1, None).flags, 0);
    let bad = SpatialQuery::Radius {
        center: [0.0; 3],
        radius: f32::NAN,
    };
    assert_eq!(
        cpu::grid_query(&d, 2, &index, &bad, 4, None).flags & QUERY_FLAG_INVALID,
        QUERY_FLAG_INVALID
    );
    // The same on the GPU.
    let ctx = ctx();
    let mut g = CommandGraph::new("grid-flags", &ctx.device);
    let (_, storage) = add_index(&ctx, &mut g, &d, 2, &pos, &[3], None, 2);
    let (qb, _) = add_query(&ctx, &mut g, storage, &all, 1, Some(1));
    run(&ctx, g);
    check_query(&ctx, &qb, &res, 1, "flags");
}

/// A candidate-mode filter writing its mask and its hits (2 words + a guard after the mask).
fn add_filter(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    positions: VectorView,
    query: DataView,
    candidates: Option<FilterCandidates>,
    rows: usize,
) -> wgpu::Buffer {
    let mask = upload(ctx, &vec![POISON; rows + 4]);
    let h = import(g, "filter-mask", &mask);
    PointSpatialFilter {
        id: "filter".into(),
        positions,
        query,
        candidates,
        mask: Some(view(g, h, F::Uint32, 0, rows as u64)),
        hits: Some(view(g, h, F::Uint32, rows as u64 + 1, 2)),
    }
    .add_to_graph(g)
    .unwrap();
    mask
}

#[test]
fn the_point_filter_gives_the_same_mask_over_all_rows_and_over_candidates() {
    let ctx = ctx();
    let mut r = rng(77);
    for dims in [2usize, 3] {
        let d = domain(dims);
        for n in [0usize, 1, 300, 2100] {
            let pos = points(&mut r, n, &d, dims);
            for q in queries(&mut r, &d, &pos, dims) {
                let want = cpu::filter(dims, &pos, &q);
                let label = format!("{dims}-D n={n} {q:?}");
                // All rows, over uneven chunks of a second copy of the points.
                let mut g = CommandGraph::new("filter", &ctx.device);
                let (b, storage) = add_index(&ctx, &mut g, &d, dims, &pos, &[n], None, n);
                let (_, (query, candidates, status)) =
                    add_query(&ctx, &mut g, storage, &q, n, None);
                let ph = g.imported_handle(&b.positions).unwrap();
                let one = VectorView::from(view(&g, ph, point_format(dims), 0, n as u64));
                let refined = add_filter(
                    &ctx,
                    &mut g,
                    one,
                    query,
                    Some(FilterCandidates {
                        rows: candidates,
                        count: status,
                    }),
                    n,
                );
                let copy = upload(&ctx, &f32_words(&pos));
                let ch = import(&mut g, "positions-copy", &copy);
                let lens = uneven_chunks(&mut r, n, 4);
                let mut row = 0u64;
                let chunks = lens
                    .iter()
                    .map(|&l| {
                        let v = view(&g, ch, point_format(dims), row, l as u64);
                        row += l as u64;
                        v
                    })
                    .collect();
                let mut g2 = g;
                let mask_all = upload(&ctx, &vec![POISON; n + 4]);
                let mh = import(&mut g2, "mask-all", &mask_all);
                PointSpatialFilter {
                    id: "filter-all".into(),
                    positions: VectorView::from_chunks(chunks),
                    query,
                    candidates: None,
                    mask: Some(view(&g2, mh, F::Uint32, 0, n as u64)),
                    hits: Some(view(&g2, mh, F::Uint32, n as u64 + 1, 2)),
                }
                .add_to_graph(&mut g2)
                .unwrap();
                run(&ctx, g2);
                let all = read_buffer(&ctx, &mask_all);
                assert_eq!(all[..n], want[..], "{label}: all rows");
                assert_eq!(all[n], POISON, "{label}: all-rows guard");
                let h = cpu::hits(dims, &pos, &q);
                assert_eq!(
                    all[n + 1..n + 4],
                    [h[0], h[1], POISON],
                    "{label}: all-rows hits"
                );
                // Candidates come from the index, which leaves out rows outside its domain.
                let inside: Vec<u32> = pos
                    .chunks_exact(dims)
                    .zip(&want)
                    .map(|(p, &w)| w & u32::from(d.cell_of(dims, p).is_some()))
                    .collect();
                let cand = read_buffer(&ctx, &refined);
                assert_eq!(cand[..n], inside[..], "{label}: candidates");
                assert_eq!(cand[n], POISON, "{label}: candidates guard");
                let want_hits = cpu::hits(dims, &pos, &q);
                let inside_hits = inside
                    .iter()
                    .enumerate()
                    .filter(|(_, &m)| m == 1)
                    .fold([0u32, 0u32], |[k, s], (row, _)| {
                        [k + 1, s.wrapping_add(row as u32)]
                    });
                assert!(inside_hits[0] <= want_hits[0]);
                assert_eq!(
                    cand[n + 1..n + 4],
                    [inside_hits[0], inside_hits[1], POISON],
                    "{label}: hits"
                );
            }
        }
    }
}

#[test]
fn bad_views_are_named_errors() {
    let ctx = ctx();
    let mut g = CommandGraph::new("bad", &ctx.device);
    let buf = upload(&ctx, &[0; 64]);
    let h = import(&mut g, "buf", &buf);
    let other = upload(&ctx, &[0; 64]);
    let o = import(&mut g, "other", &other);
    let d = domain(2);
    let base = GridIndex {
        id: "ix".into(),
        positions: view(&g, h, F::Float32x2, 0, 4).into(),
        ids: None,
        domain: d,
        cell_offsets: view(&g, o, F::Uint32, 0, d.cell_count() + 1),
        object_ids: view(&g, o, F::Uint32, 42, 4),
        status: view(&g, o, F::Uint32, 46, 3),
    };
    let err = |e: AlgorithmError| e.to_string();
    let mut wrong = base.clone();
    wrong.positions = view(&g, h, F::Float32, 0, 4).into();
    assert!(err(wrong.add_to_graph(&mut g).unwrap_err()).contains("float32x2 or float32x3"));
    let mut wrong = base.clone();
    wrong.cell_offsets = view(&g, o, F::Uint32, 0, d.cell_count());
    let e = wrong.add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 40, expected: 41, .. }
            if &**what == "cell offsets"),
        "{e}"
    );
    let mut wrong = base.clone();
    wrong.domain.max[0] = f32::NAN;
    assert!(err(wrong.add_to_graph(&mut g).unwrap_err()).contains("x range"));
    let mut wrong = base.clone();
    wrong.object_ids = view(&g, h, F::Uint32, 40, 4);
    assert!(matches!(
        wrong.add_to_graph(&mut g).unwrap_err(),
        AlgorithmError::Aliased { .. }
    ));
    let mut wrong = base.clone();
    wrong.status = view(&g, o, F::Uint32, 40, 3);
    assert!(matches!(
        wrong.add_to_graph(&mut g).unwrap_err(),
        AlgorithmError::Aliased { .. }
    ));
    let _ = NO_ID;
}

/// Runs a [`BatchGridIndexQuery`] of `qs` over an index of `pos` (chunked by `lens`) and
/// returns (hits, status) with their guard words.
#[allow(clippy::too_many_arguments)]
fn run_batch(
    ctx: &GpuContext,
    d: &SpatialDomain,
    dims: usize,
    pos: &[f32],
    lens: &[usize],
    ids: Option<&[u32]>,
    index_cap: usize,
    qs: &[SpatialQuery],
) -> (Vec<u32>, Vec<u32>) {
    let mut g = CommandGraph::new("batch-query", &ctx.device);
    let (_b, storage) = add_index(ctx, &mut g, d, dims, pos, lens, ids, index_cap);
    let q = qs.len();
    let words: Vec<u32> = qs.iter().flat_map(|q| q.words()).collect();
    let (qbuf, pbuf) = (upload(ctx, &words), upload(ctx, &f32_words(pos)));
    let hits = upload(ctx, &vec![POISON; 2 * q + 1]);
    let status = upload(ctx, &vec![POISON; 2 * q + 1]);
    let (qh, ph) = (
        import(&mut g, "queries", &qbuf),
        import(&mut g, "points", &pbuf),
    );
    let (hh, sh) = (
        import(&mut g, "hits", &hits),
        import(&mut g, "q-status", &status),
    );
    BatchGridIndexQuery {
        id: "batch".into(),
        index: storage,
        positions: view(&g, ph, point_format(dims), 0, (pos.len() / dims) as u64).into(),
        queries: view(&g, qh, F::Uint32, 0, words.len() as u64),
        hits: view(&g, hh, F::Uint32, 0, 2 * q as u64),
        status: Some(view(&g, sh, F::Uint32, 0, 2 * q as u64)),
    }
    .add_to_graph(&mut g)
    .unwrap();
    let mut compiled = g.compile().unwrap();
    encode_wait(ctx, &mut compiled, &[]);
    (read_buffer(ctx, &hits), read_buffer(ctx, &status))
}

#[test]
fn batch_grid_queries_match_the_oracle_per_query() {
    let ctx = ctx();
    let mut r = rng(21);
    for dims in [2usize, 3] {
        let d = domain(dims);
        for (n, index_cap_less) in [(0usize, 0usize), (700, 0), (3000, 0), (700, 90)] {
            let pos = points(&mut r, n, &d, dims);
            let accepted = cpu::grid_index(&d, dims, &pos, None, 0).accepted as usize;
            let index_cap = accepted - index_cap_less.min(accepted);
            let index = cpu::grid_index(&d, dims, &pos, None, index_cap);
            let mut qs = queries(&mut r, &d, &pos, dims);
            for _ in 0..300 {
                let i = r.random_range(0..n.max(1));
                let mut center = [0.0f32; 3];
                for (a, c) in center.iter_mut().enumerate().take(dims) {
                    *c = pos.get(i * dims + a).copied().unwrap_or(1.0);
                }
                let radius = r.random_range(0..64) as f32 / 16.0;
                qs.push(SpatialQuery::Radius { center, radius });
            }
            let lens = uneven_chunks(&mut r, n, 3);
            let (hits, status) = run_batch(&ctx, &d, dims, &pos, &lens, None, index_cap, &qs);
            let (want_hits, want_status) = cpu::batch_grid_query(&d, dims, &index, &pos, &qs);
            let label = format!("{dims}-D n={n} index cap={index_cap}");
            let q = qs.len();
            for i in 0..q {
                assert_eq!(
                    (&hits[2 * i..2 * i + 2], &status[2 * i..2 * i + 2]),
                    (&want_hits[2 * i..2 * i + 2], &want_status[2 * i..2 * i + 2]),
                    "{label}: query {i} {:?}: (hits, status)",
                    qs[i]
                );
            }
            assert_eq!(
                (hits[2 * q], status[2 * q]),
                (POISON, POISON),
                "{label}: guards"
            );
            // The batch's hits are the exact filter's over the stored points.
            if index_cap_less == 0 {
                // Points the index leaves out (outside the domain, not finite) match nothing.
                let stored: Vec<f32> = pos
                    .chunks_exact(dims)
                    .flat_map(|p| {
                        if d.cell_of(dims, p).is_some() {
                            p.to_vec()
                        } else {
                            vec![f32::NAN; dims]
                        }
                    })
                    .collect();
                for (i, qq) in qs.iter().enumerate().take(40) {
                    assert_eq!(
                        hits[2 * i..2 * i + 2],
                        cpu::hits(dims, &stored, qq),
                        "{label}: query {i} vs filter"
                    );
                }
            }
        }
    }
}

#[test]
fn batch_grid_query_flags_ids_past_the_points_and_spans_two_dispatch_dimensions() {
    let ctx = ctx();
    let d = domain(2);
    // IDs that do not address the 3 points: the batch skips and flags them.
    let pos = [0.0f32, 12.0, 1.0, 12.5, 2.0, 13.0];
    let qs = [SpatialQuery::Bounds {
        min: d.min,
        max: d.max,
    }];
    let (hits, status) = run_batch(&ctx, &d, 2, &pos, &[3], Some(&[0, 7, 2]), 3, &qs);
    assert_eq!(hits[..2], [2, 2], "IDs 0 and 2 match");
    assert_eq!(
        status[..2],
        [3, QUERY_FLAG_MASK_RANGE],
        "ID 7 is past the points"
    );
    // More queries than one dispatch dimension holds (65,535 workgroups).
    let mut r = rng(22);
    let pos = points(&mut r, 40, &d, 2);
    let index = cpu::grid_index(&d, 2, &pos, None, 40);
    let qs: Vec<SpatialQuery> = (0..65_600)
        .map(|i| SpatialQuery::Radius {
            center: [pos[2 * (i % 40)], pos[2 * (i % 40) + 1], 0.0],
            radius: (i % 7) as f32 / 4.0,
        })
        .collect();
    let (hits, status) = run_batch(&ctx, &d, 2, &pos, &[40], None, 40, &qs);
    let (want_hits, want_status) = cpu::batch_grid_query(&d, 2, &index, &pos, &qs);
    assert_eq!(
        hits[..want_hits.len()],
        want_hits[..],
        "hits over 65,600 queries"
    );
    assert_eq!(
        status[..want_status.len()],
        want_status[..],
        "status over 65,600 queries"
    );
}

#[test]
fn batch_grid_query_refuses_partial_queries_and_chunked_points() {
    let ctx = ctx();
    let d = domain(2);
    let pos = [0.0f32, 12.0, 1.0, 12.5];
    let mut g = CommandGraph::new("batch-errors", &ctx.device);
    let (_b, storage) = add_index(&ctx, &mut g, &d, 2, &pos, &[1, 1], None, 2);
    let buf = upload(&ctx, &[0; 64]);
    let h = import(&mut g, "scratch", &buf);
    let pbuf = upload(&ctx, &f32_words(&pos));
    let ph = import(&mut g, "points", &pbuf);
    let one: VectorView = view(&g, ph, F::Float32x2, 0, 2).into();
    let two = VectorView::from_chunks(vec![
        view(&g, ph, F::Float32x2, 0, 1),
        view(&g, ph, F::Float32x2, 1, 1),
    ]);
    let (partial, whole) = (
        view(&g, h, F::Uint32, 0, QUERY_WORDS + 3),
        view(&g, h, F::Uint32, 0, QUERY_WORDS),
    );
    let hits = view(&g, h, F::Uint32, 32, 2);
    let batch = |queries: DataView, positions: VectorView| BatchGridIndexQuery {
        id: "batch".into(),
        index: storage,
        positions,
        queries,
        hits,
        status: None,
    };
    let e = batch(partial, one).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 11, expected: 16, .. } if &**what == "queries"),
        "{e}"
    );
    let e = batch(whole, two).add_to_graph(&mut g).unwrap_err();
    assert!(
        matches!(&e, AlgorithmError::LengthMismatch { what, actual: 2, expected: 1, .. } if &**what == "positions"),
        "{e}"
    );
}
