//! `gpugraph traverse` on CSR .npy files written here: masks and levels vs the CPU BFS in
//! every direction and at depth 0, int64 offsets (scipy's default), and malformed files as
//! one-line errors naming the file and row, leaving no output behind.

mod common;

use common::*;
use gpugraph_gpgpu::topology::cpu::{self, CsrPart};
use gpugraph_gpgpu::topology::TraversalDirection;

fn run_ok(args: &[&str]) -> String {
    let out = gpugraph(args);
    assert_success(args, &out);
    text(&out.stdout)
}

fn fails_naming(args: &[&str], needle: &str) {
    let out = gpugraph(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}", our_stderr(&out));
    let err = our_stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains(needle) && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A graph of `n` nodes: a ring, chords every 7th node, a hub (node 3) to every 5th node,
/// self-loops and duplicates.
fn graph(n: u32) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32];
    let mut neighbors = Vec::new();
    for v in 0..n {
        neighbors.push((v + 1) % n);
        if v % 7 == 0 {
            neighbors.extend([(v * 13 + 5) % n, (v * 13 + 5) % n, v]);
        }
        if v == 3 {
            neighbors.extend((0..n).step_by(5));
        }
        offsets.push(neighbors.len() as u32);
    }
    (offsets, neighbors)
}

#[test]
fn masks_and_levels_match_bfs_in_every_direction() {
    let dir = TempDir::new("traverse");
    let n = 3000u32;
    let (offsets, neighbors) = graph(n);
    let (o, nb, s, out, lv) = (
        dir.path("o.npy"),
        dir.path("n.npy"),
        dir.path("s.npy"),
        dir.path("mask.npy"),
        dir.path("levels.npy"),
    );
    // Offsets as int64, as scipy writes them: converted exactly.
    let wide: Vec<u32> = offsets.iter().flat_map(|&x| [x, 0]).collect();
    std::fs::write(&o, npy_bytes("<i8", &[offsets.len()], &wide)).unwrap();
    write_u32(&nb, &[neighbors.len()], &neighbors);
    let seeds = [10u32, 2500, 10];
    write_u32(&s, &[seeds.len()], &seeds);
    let (ro, rn) = cpu::reverse_csr(&offsets, &neighbors);
    for (direction, d) in [
        ("forward", TraversalDirection::Forward),
        ("reverse", TraversalDirection::Reverse),
        ("both", TraversalDirection::Both),
    ] {
        for depth in [0u32, 1, 4, 40] {
            let ds = depth.to_string();
            let stdout = run_ok(&[
                "traverse",
                "--offsets",
                &o,
                "--neighbors",
                &nb,
                "--seeds",
                &s,
                "--depth",
                &ds,
                "--direction",
                direction,
                "--out",
                &out,
                "--levels",
                &lv,
            ]);
            let f = [CsrPart {
                offsets: &offsets,
                neighbors: &neighbors,
            }];
            let r = [CsrPart {
                offsets: &ro,
                neighbors: &rn,
            }];
            let want = cpu::traverse(&f, Some(&r), d, &seeds, depth, None);
            assert_eq!(
                read_npy(&out),
                ("<u4".into(), vec![n as usize], want.mask.clone()),
                "{direction} {depth}"
            );
            assert_eq!(read_npy(&lv).2, want.levels, "{direction} {depth}");
            assert!(
                stdout.contains(&format!("{} reached", want.status[0])),
                "{stdout}"
            );
        }
    }
}

#[test]
fn malformed_graphs_are_named_errors_and_leave_no_output() {
    let dir = TempDir::new("traverse-bad");
    let (o, nb, s, out) = (
        dir.path("o.npy"),
        dir.path("n.npy"),
        dir.path("s.npy"),
        dir.path("mask.npy"),
    );
    let args = [
        "traverse",
        "--offsets",
        &o,
        "--neighbors",
        &nb,
        "--seeds",
        &s,
        "--depth",
        "3",
        "--out",
        &out,
    ];
    write_u32(&s, &[1], &[0]);
    write_u32(&nb, &[3], &[1, 2, 0]);
    write_u32(&o, &[4], &[0, 2, 1, 3]);
    fails_naming(&args, "o.npy: row 2 is 1 after 2");
    write_u32(&o, &[4], &[0, 1, 2, 4]);
    fails_naming(&args, "the last offset is 4");
    write_u32(&o, &[4], &[1, 1, 2, 3]);
    fails_naming(&args, "row 0 is 1");
    write_u32(&o, &[4], &[0, 1, 2, 3]);
    write_u32(&nb, &[3], &[1, 3, 0]);
    fails_naming(&args, "n.npy: row 1 is 3 but the graph has 3 nodes");
    write_u32(&nb, &[3], &[1, 2, 0]);
    write_u32(&s, &[2], &[0, 9]);
    fails_naming(&args, "s.npy: row 1 is 9");
    write_f32(&s, &[1], &[0.5]);
    fails_naming(&args, "s.npy");
    assert!(!std::path::Path::new(&out).exists(), "no partial output");
    write_u32(&s, &[1], &[0]);
    let deep = [
        "traverse",
        "--offsets",
        &o,
        "--neighbors",
        &nb,
        "--seeds",
        &s,
        "--depth",
        "5000",
        "--out",
        &out,
    ];
    fails_naming(&deep, "--depth 5000");
    run_ok(&args);
    assert_eq!(read_npy(&out).2, vec![1, 1, 1]);
}
