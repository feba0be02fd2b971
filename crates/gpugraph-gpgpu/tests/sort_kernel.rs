//! The radix pass's kernel variants on the GPU vs the CPU oracle, with poisoned outputs: the
//! multisplit (subgroup) ranking and the workgroup-memory counting sorts, the independent and
//! the coupled look-back, each under the forced fallback and last-tile-first schedules, and
//! grids over the dispatch dimension limit. Values are source rows (pairs: row ^ constant,
//! argsort: generated), so every value check is a stability check.
//!
//! Lavapipe has subgroups of 8 with full subgroups in a 256-invocation workgroup, so the
//! multisplit path runs there (the tests `multisplit_path_runs_on_this_adapter` makes sure).

mod common;

use common::sort::*;
use common::*;
use gpugraph_command::{wgpu, CommandGraph, GpuContext};
use gpugraph_gpgpu::SortPolicy;
use rand::Rng;

#[derive(Clone, Copy, Debug)]
enum Dist {
    Uniform,
    AllEqual,
    FewUnique,
    /// Every key shares its top 24 bits: three passes see one digit, one pass all of them.
    SharedTop24,
    /// Few distinct digits per pass, in long runs (many peers per ballot, sorted tiles).
    Runs,
}

const DISTS: [Dist; 5] = [
    Dist::Uniform,
    Dist::AllEqual,
    Dist::FewUnique,
    Dist::SharedTop24,
    Dist::Runs,
];

fn keys_of(dist: Dist, n: usize, seed: u64) -> Vec<u32> {
    let mut r = rng(seed);
    (0..n)
        .map(|i| {
            let x = r.random::<u32>();
            match dist {
                Dist::Uniform => x,
                Dist::AllEqual => 0x1234_5678,
                Dist::FewUnique => [3, 0xffff_ffff, 0x8000_0000, 0x00ff_ff00][x as usize % 4],
                Dist::SharedTop24 => 0xa5c3_e100 | (x & 0xff),
                Dist::Runs => ((i / 37) as u32 % 3) * 0x0101_0101,
            }
        })
        .collect()
}

/// Declares a sort of `keys` under `policy`, outputs at element offset 1 of poisoned buffers.
fn declare(
    ctx: &GpuContext,
    g: &mut CommandGraph,
    label: String,
    keys: Vec<u32>,
    mode: Mode,
    policy: SortPolicy,
) -> SortCase {
    let spec = SortSpec {
        out_offset: 1,
        policy: Some(policy),
        ..SortSpec::new(&label, keys, mode)
    };
    declare_sort(ctx, g, spec)
}

fn check(ctx: &GpuContext, c: &SortCase) {
    verify_sort(ctx, c);
}

/// Both rankings and both look-backs at small tiles (kpt 4: 1024 rows, 32-row subgroup runs on
/// lavapipe) and at the default tile.
fn kernel_policies() -> Vec<(&'static str, SortPolicy)> {
    let small = SortPolicy {
        keys_per_thread: 4,
        histogram_tiles_per_workgroup: 2,
        ..SortPolicy::DEFAULT
    };
    let counting = SortPolicy {
        multisplit: false,
        ..small
    };
    vec![
        ("split-indep", small),
        (
            "split-coupled",
            SortPolicy {
                independent_lookback: false,
                ..small
            },
        ),
        ("counting-indep", counting),
        (
            "counting-coupled",
            SortPolicy {
                independent_lookback: false,
                ..counting
            },
        ),
        // Multisplit with its counters in their own array (the shuffle array plain).
        (
            "split-apart",
            SortPolicy {
                multisplit_apart: true,
                ..small
            },
        ),
        // The 128-bit peer masks of subgroups wider than 32 lanes.
        (
            "split-wide-ballots",
            SortPolicy {
                wide_ballots: true,
                ..small
            },
        ),
        // Multisplit with the workgroup-memory scans, and at 8 keys per thread unrolled.
        (
            "split-no-scans",
            SortPolicy {
                subgroups: false,
                ..small
            },
        ),
        (
            "split-kpt8-unrolled",
            SortPolicy {
                keys_per_thread: 8,
                unroll: true,
                ..small
            },
        ),
        // Keys and values stored straight from registers, without the workgroup reorder.
        (
            "split-direct",
            SortPolicy {
                scatter_direct: true,
                ..small
            },
        ),
        (
            "counting-direct-wgtiles",
            SortPolicy {
                scatter_direct: true,
                workgroup_tiles: true,
                ..counting
            },
        ),
        // The histogram with batched loads, two counter copies and odd tile groups.
        (
            "split-hist-batch3-copies2",
            SortPolicy {
                histogram_batch: 3,
                histogram_copies: 2,
                histogram_tiles_per_workgroup: 3,
                unroll: true,
                workgroup_tiles: true,
                ..small
            },
        ),
        // Keys staged and values loaded before the look-back.
        (
            "split-overlap",
            SortPolicy {
                overlap_lookback: true,
                unroll: true,
                ..small
            },
        ),
        (
            "counting-overlap",
            SortPolicy {
                overlap_lookback: true,
                ..counting
            },
        ),
        ("default", SortPolicy::DEFAULT),
    ]
}

#[test]
fn ranking_paths_match_the_oracle_at_tile_and_subgroup_boundaries() {
    let ctx = ctx();
    for (name, policy) in kernel_policies() {
        let tile = policy.tile_rows() as usize;
        // Around one and two tiles, and inside a partial tile at the edges of 8- and 32-lane
        // subgroup runs (kpt rows per lane).
        let run8 = 8 * policy.keys_per_thread as usize;
        let run32 = 32 * policy.keys_per_thread as usize;
        let sizes = [
            257,
            tile - 1,
            tile,
            tile + 1,
            tile + run8 - 1,
            tile + run8 + 1,
            tile + run32,
            2 * tile + 3 * run8 + 5,
        ];
        let mut g = CommandGraph::new("sort-kernel", &ctx.device);
        let mut cases = Vec::new();
        for (si, &n) in sizes.iter().enumerate() {
            for (di, dist) in DISTS.into_iter().enumerate() {
                let mode = MODES[(si + di) % 3];
                let label = format!("{name}-n{n}-{dist:?}-{mode:?}");
                let keys = keys_of(dist, n, (n * 7 + di) as u64);
                cases.push(declare(&ctx, &mut g, label, keys, mode, policy));
            }
        }
        run(&ctx, g);
        for c in &cases {
            check(&ctx, c);
        }
    }
}

/// The look-back's fallback and adverse schedules under both rankings and both look-backs:
/// every predecessor recounted, tiles taken last-first (each waits on predecessors that have
/// not started), both, a wide (unrolled) window with an impatient spin limit, and the
/// look-back before the ranking.
#[test]
fn look_back_variants_survive_forced_fallback_and_reverse_schedules() {
    let ctx = ctx();
    let mut g = CommandGraph::new("sort-kernel-lookback", &ctx.device);
    let mut cases = Vec::new();
    for (name, base) in kernel_policies().into_iter().take(4) {
        let schedules = [
            (
                "force",
                SortPolicy {
                    force_fallback: true,
                    ..base
                },
            ),
            (
                "reverse",
                SortPolicy {
                    reverse_tiles: true,
                    spin_limit: 3,
                    ..base
                },
            ),
            (
                "reverse-force",
                SortPolicy {
                    reverse_tiles: true,
                    force_fallback: true,
                    ..base
                },
            ),
            (
                "window4-spin1-unrolled",
                SortPolicy {
                    lookback_window: 4,
                    spin_limit: 1,
                    unroll: true,
                    ..base
                },
            ),
            // Look back before ranking.
            (
                "early-reverse-window3",
                SortPolicy {
                    lookback_first: true,
                    reverse_tiles: true,
                    spin_limit: 3,
                    lookback_window: 3,
                    ..base
                },
            ),
            (
                "early-force",
                SortPolicy {
                    lookback_first: true,
                    force_fallback: true,
                    ..base
                },
            ),
            // Tiles by workgroup id, last id first: every workgroup waits on tiles whose
            // workgroups may not have started, and the direct scatter after the fallback.
            (
                "wgtiles-reverse-direct",
                SortPolicy {
                    workgroup_tiles: true,
                    reverse_tiles: true,
                    scatter_direct: true,
                    spin_limit: 3,
                    ..base
                },
            ),
            (
                "wgtiles-force",
                SortPolicy {
                    workgroup_tiles: true,
                    force_fallback: true,
                    ..base
                },
            ),
            // The fallback recount runs while the staged keys wait in workgroup memory.
            (
                "overlap-reverse-force",
                SortPolicy {
                    overlap_lookback: true,
                    reverse_tiles: true,
                    force_fallback: true,
                    ..base
                },
            ),
        ];
        for (schedule, policy) in schedules {
            for (n, dist, mode) in [
                (1025, Dist::Uniform, Mode::Pairs),
                (9 * 1024 + 77, Dist::FewUnique, Mode::Argsort),
                (9 * 1024 + 77, Dist::SharedTop24, Mode::Pairs),
            ] {
                let label = format!("{name}-{schedule}-n{n}-{dist:?}");
                let keys = keys_of(dist, n, n as u64 ^ 0x51);
                cases.push(declare(&ctx, &mut g, label, keys, mode, policy));
            }
        }
    }
    run(&ctx, g);
    for c in &cases {
        check(&ctx, c);
    }
}

/// More tiles than the device allows workgroups per grid dimension (16 here, 65,535 on most
/// GPUs): the grid takes a second row, and tickets still cover every tile once.
#[test]
fn kernel_variants_over_the_dispatch_dimension_limit() {
    let ctx = ctx_with_max_dispatch(16);
    let mut g = CommandGraph::new("sort-kernel-2d", &ctx.device);
    let mut cases = Vec::new();
    let mut policies = kernel_policies();
    policies.truncate(4);
    // Tiles by workgroup id over a two-dimensional grid (surplus workgroups must leave), with
    // the batched histogram.
    let wgtiles: Vec<_> = policies
        .iter()
        .map(|&(_, p)| SortPolicy {
            workgroup_tiles: true,
            scatter_direct: true,
            histogram_batch: 2,
            histogram_copies: 2,
            ..p
        })
        .collect();
    let names = ["wgtiles-a", "wgtiles-b", "wgtiles-c", "wgtiles-d"];
    policies.extend(names.into_iter().zip(wgtiles));
    for (name, policy) in policies {
        let policy = SortPolicy {
            histogram_tiles_per_workgroup: 1,
            ..policy
        };
        // 40 tiles of 1024 rows.
        let n = 40 * 1024 - 9;
        let keys = keys_of(Dist::Uniform, n, 77);
        let label = format!("{name}-2d");
        cases.push(declare(&ctx, &mut g, label, keys, Mode::Pairs, policy));
    }
    run(&ctx, g);
    for c in &cases {
        check(&ctx, c);
    }
}

/// Guards the premise of this file: lavapipe (CI) must run the multisplit path, i.e. have
/// subgroups between `SPLIT_MIN_SUBGROUP` and `SPLIT_MAX_SUBGROUP` lanes.
#[test]
fn multisplit_path_runs_on_this_adapter() {
    use gpugraph_gpgpu::sort::policy::{SPLIT_MAX_SUBGROUP, SPLIT_MIN_SUBGROUP};
    let ctx = ctx();
    assert!(ctx.device.features().contains(wgpu::Features::SUBGROUP));
    let info = ctx.adapter.get_info();
    assert!(
        info.subgroup_min_size >= SPLIT_MIN_SUBGROUP
            && info.subgroup_max_size <= SPLIT_MAX_SUBGROUP,
        "{info:?}"
    );
}
