//! `gpugraph procgen run`: the sprout_tail example's play report names its planning wait (the
//! expression, the node, the number) every frame and counts the re-plan when the number moves;
//! a graph that fails is one error line and leaves no report behind; the forest example's live
//! counts match a CPU oracle and its `--render` picture draws the live trees.

mod common;

use std::collections::HashMap;

use common::*;

fn example(name: &str) -> String {
    crate_file(&format!("../gpugraph-procgen/examples/graph/{name}"))
        .display()
        .to_string()
}

#[test]
fn the_play_report_lists_planning_waits_and_replans() {
    let dir = TempDir::new("procgen-run");
    let report = dir.path("report.json");
    let graph = example("sprout_tail.luau");
    let args = [
        "procgen", "run", &graph, "--frames", "4", "--report", &report,
    ];
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let stdout = text(&out.stdout);
    let waits = stdout
        .lines()
        .filter(|l| l.contains("planning wait: `(kept.indices_count - 3)` read back = "))
        .filter(|l| l.contains("for the domain of sprouts#"))
        .count();
    assert_eq!(waits, 5, "{stdout}");
    assert!(stdout.contains("planned again"), "{stdout}");
    assert!(
        stdout.contains(
            "recordings 2, replays 5, guarded 0, measured 0, planning waits 5 (replans 1)"
        ),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["counts"]["replans"], 1);
    assert_eq!(json["counts"]["plan_waits"], 5);
    assert_eq!(json["frames"].as_array().unwrap().len(), 4);
}

#[test]
fn a_failing_graph_is_one_error_line_and_writes_no_report() {
    let dir = TempDir::new("procgen-fail");
    let report = dir.path("report.json");
    let graph = dir.path("bad.luau");
    std::fs::write(
        &graph,
        "function cook(frame)\n  device.kernel({ kernel = \"gather\", domain = 1 })\n  return transfer.readback({ columns = {} })\nend\n",
    )
    .unwrap();
    let args = ["procgen", "run", &graph, "--report", &report];
    let out = gpugraph(&args);
    assert_eq!(out.status.code(), Some(1), "{}", our_stderr(&out));
    let err = our_stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains("gather") && !err.contains("panicked"),
        "{err}"
    );
    assert!(!std::path::Path::new(&report).exists());
}

/// Runs `procgen run` on `script` with `flags`; answers the exit code and our stderr.
fn run_script(name: &str, script: &[u8], flags: &[&str]) -> (Option<i32>, String) {
    let dir = TempDir::new(name);
    let graph = dir.path("graph.luau");
    std::fs::write(&graph, script).unwrap();
    let mut args = vec!["procgen", "run", &graph];
    args.extend_from_slice(flags);
    let out = gpugraph(&args);
    (out.status.code(), our_stderr(&out))
}

#[test]
fn an_assets_root_that_is_not_there_is_one_error_naming_it() {
    let dir = TempDir::new("procgen-assets");
    let missing = dir.path("no-such-assets");
    let graph = example("sprout_tail.luau");
    let args = ["procgen", "run", &graph, "--assets", &missing];
    let out = gpugraph(&args);
    assert_eq!(out.status.code(), Some(1), "{}", our_stderr(&out));
    assert_eq!(
        our_stderr(&out).trim_end(),
        format!("error: --assets: asset root `{missing}` does not exist")
    );
    let file = dir.path("file");
    std::fs::write(&file, "").unwrap();
    let args = ["procgen", "run", &graph, "--assets", &file];
    let out = gpugraph(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        our_stderr(&out).contains("is not a directory"),
        "{}",
        our_stderr(&out)
    );
}

#[test]
fn a_script_that_never_ends_stops_at_its_ceiling_naming_the_flag() {
    let t0 = std::time::Instant::now();
    let (code, err) = run_script(
        "procgen-busy",
        b"function cook(frame) while true do end end\n",
        &["--script-timeout", "0.5"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with(
            "error: script exceeded its 0.5 s CPU-time ceiling (--script-timeout) in cook(frame 0)"
        ) && err.lines().count() == 1,
        "{err}"
    );
    assert!(t0.elapsed().as_secs() < 60, "{:?}", t0.elapsed());
    let (code, err) = run_script(
        "procgen-bomb",
        b"local t = {} for i = 1, 1e9 do t[i] = { i } end\n",
        &["--script-memory", "32"],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: script exceeded its 32 MiB memory limit (--script-memory)"),
        "{err}"
    );
    for (flag, value) in [
        ("--script-timeout", "0"),
        ("--script-timeout", "-1"),
        ("--script-timeout", "NaN"),
        ("--script-memory", "0"),
    ] {
        let (code, err) = run_script("procgen-flag", b"x = 1\n", &[flag, value]);
        assert_eq!(code, Some(1), "{flag} {value}: {err}");
        assert!(err.contains(flag) && err.contains(value), "{err}");
    }
}

#[test]
fn a_bytecode_script_is_refused_by_name() {
    let (code, err) = run_script("procgen-bytecode", b"\x03\x01\x00garbage\xff", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: script `") && err.contains("is not Luau source text"),
        "{err}"
    );
}

// The forest example (`examples/graph/forest.luau --render`): its live counts against a CPU
// oracle of the same graph (height field, scatter, the two rejections), its picture (size,
// terrain and tree pixels, the trees drawn being the live count), a forest with no trees, and
// bad `--render` arguments failing with one line and no file.

/// The `local NAME = number` constants of the script (what the oracle computes with).
fn constants(script: &str) -> HashMap<String, f64> {
    script
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("local ")?;
            let (name, value) = rest.split_once('=')?;
            let value = value.split("--").next()?.trim().parse::<f64>().ok()?;
            Some((name.trim().to_string(), value))
        })
        .collect()
}

// The CPU twins of the kernels (scatter_points, forest/terrain, forest/height_keep,
// forest/slope_keep): the same f32 operations in the same order.

fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}

fn unit(v: u32) -> f32 {
    (v >> 8) as f32 / 16777216.0
}

fn lattice(x: u32, z: u32, salt: u32) -> f32 {
    unit(pcg(x.wrapping_mul(73856093) ^ pcg(z ^ salt)))
}

fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a + (b - a) * t
}

fn value_noise(px: f32, pz: f32, salt: u32) -> f32 {
    let (cx, cz) = (px.floor(), pz.floor());
    let (fx, fz) = (px - cx, pz - cz);
    let (sx, sz) = (fx * fx * (3.0 - 2.0 * fx), fz * fz * (3.0 - 2.0 * fz));
    let (x, z) = (cx as u32, cz as u32);
    let top = lerp(lattice(x, z, salt), lattice(x + 1, z, salt), sx);
    let bottom = lerp(lattice(x, z + 1, salt), lattice(x + 1, z + 1, salt), sx);
    lerp(top, bottom, sz)
}

fn terrain_height(i: u32, cells: u32, relief: f32, seed: u32) -> f32 {
    let last = (cells.max(2) - 1) as f32;
    let u = (i % cells) as f32 / last;
    let v = (i / cells) as f32 / last;
    let (mut qx, mut qz) = (u * 3.0 + 4.0, v * 3.0 + 4.0);
    let (mut amp, mut e) = (0.5f32, 0.0f32);
    for o in 0..5u32 {
        e += amp * value_noise(qx, qz, seed + o * 1013);
        qx *= 2.0;
        qz *= 2.0;
        amp *= 0.5;
    }
    let d = u - 0.5 - 0.25 * (v - 0.5);
    let valley = (1.0 - d * d * 14.0).max(0.0);
    relief * (1.3 * e + 0.45 * v * v - 0.35 * valley - 0.35)
}

/// One candidate: its decision and whether float rounding could flip it (a value this close
/// to a threshold may fall on either side on the GPU, which may fuse multiply-adds).
#[derive(Clone, Copy)]
struct Verdict {
    keep: bool,
    unsure: bool,
}

fn above(value: f32, threshold: f32, eps: f32) -> Verdict {
    Verdict {
        keep: value > threshold,
        unsure: (value - threshold).abs() < eps,
    }
}

fn both(a: Verdict, b: Verdict) -> Verdict {
    Verdict {
        keep: a.keep && b.keep,
        unsure: (a.unsure && b.keep) || (b.unsure && a.keep) || (a.unsure && b.unsure),
    }
}

/// The counts the oracle allows: (surely kept, kept or maybe kept).
#[derive(Debug, Default)]
struct Range {
    sure: u64,
    maybe: u64,
}

impl Range {
    fn add(&mut self, v: Verdict) {
        if v.keep && !v.unsure {
            self.sure += 1;
        }
        if v.keep || v.unsure {
            self.maybe += 1;
        }
    }

    fn holds(&self, n: u64) -> bool {
        (self.sure..=self.maybe).contains(&n)
    }
}

/// (dry, trees): the counts the forest graph with constants `c` may come to.
fn forest_oracle(c: &HashMap<String, f64>) -> (Range, Range) {
    let k = |name: &str| {
        *c.get(name)
            .unwrap_or_else(|| panic!("no {name} in the script"))
    };
    let cells = k("CELLS") as u32;
    let size = k("SIZE") as f32;
    let relief = k("RELIEF") as f32;
    let heights: Vec<f32> = (0..cells * cells)
        .map(|i| terrain_height(i, cells, relief, k("TERRAIN_SEED") as u32))
        .collect();
    let sample = |x: u32, z: u32| heights[(z * cells + x) as usize];
    let (water, shore, treeline) = (k("WATER") as f32, k("SHORE") as f32, k("TREELINE") as f32);
    let (max_slope, patch, density) = (
        k("MAX_SLOPE") as f32,
        k("GROVES") as f32,
        k("DENSITY") as f32,
    );
    let seed = pcg(k("SCATTER_SEED") as u32);
    let (mut dry, mut trees) = (Range::default(), Range::default());
    for i in 0..k("CANDIDATES") as u32 {
        let h = pcg(i ^ seed);
        let hx = pcg(h);
        let hy = pcg(hx);
        let (x, z) = (unit(hx) * size, unit(hy) * size);
        let spacing = size / (cells - 1) as f32;
        let (gx, gz) = (x / spacing, z / spacing);
        let cx = (gx.floor() as u32).min(cells - 2);
        let cz = (gz.floor() as u32).min(cells - 2);
        let (fx, fz) = (gx - cx as f32, gz - cz as f32);
        let (h00, h10) = (sample(cx, cz), sample(cx + 1, cz));
        let (h01, h11) = (sample(cx, cz + 1), sample(cx + 1, cz + 1));
        let near = h00 + (h10 - h00) * fx;
        let far = h01 + (h11 - h01) * fx;
        let y = near + (far - near) * fz;
        let dx = ((h10 - h00) * (1.0 - fz) + (h11 - h01) * fz) / spacing;
        let dz = (far - near) / spacing;
        let slope = (dx * dx + dz * dz).sqrt();
        let is_dry = both(above(y, water + shore, 1e-3), above(-y, -treeline, 1e-3));
        dry.add(is_dry);
        let grove = value_noise(x * patch, z * patch, k("GROVE_SEED") as u32);
        let gentle = both(above(-slope, -max_slope, 1e-3), above(grove, density, 1e-4));
        trees.add(both(is_dry, gentle));
    }
    (dry, trees)
}

/// Pixels of the trees' greens (a tree's albedo has green over 2.5 × red; grass, rock, sand,
/// snow and water have none such), and pixels that are not the sky.
fn tree_and_ground_pixels(rgb: &[u8]) -> (usize, usize) {
    let sky = [163i32, 194, 224];
    let mut trees = 0;
    let mut ground = 0;
    for p in rgb.chunks(3) {
        let (r, g, b) = (p[0] as f32, p[1] as f32, p[2] as f32);
        if g > 1.6 * r && g > 1.1 * b {
            trees += 1;
        }
        if (0..3).any(|c| (p[c] as i32 - sky[c]).abs() > 6) {
            ground += 1;
        }
    }
    (trees, ground)
}

struct Forest {
    counts: serde_json::Value,
    report: serde_json::Value,
    drawn: u64,
    stdout: String,
    rgb: Vec<u8>,
}

/// Runs `script` (a path) with `--render` at 240×135 and reads back its report and picture.
fn run_forest(dir: &TempDir, script: &str, extra: &[&str]) -> Forest {
    let png = dir.path("forest.png");
    let report = dir.path("forest.json");
    let mut args = vec![
        "procgen", "run", script, "--render", &png, "--size", "240x135", "--report", &report,
        "--frames", "2",
    ];
    args.extend_from_slice(extra);
    let out = gpugraph(&args);
    assert_success(&args, &out);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let (w, h, rgb) = read_png(std::path::Path::new(&png));
    assert_eq!((w, h), (240, 135));
    // The second frame replays the first frame's recording and answers the same.
    assert_eq!(json["frames"][0]["values"], json["frames"][1]["values"]);
    Forest {
        counts: json["frames"][0]["values"].clone(),
        report: json["counts"].clone(),
        drawn: json["render"]["trees_drawn"].as_u64().expect("trees_drawn"),
        stdout: text(&out.stdout),
        rgb,
    }
}

#[test]
fn the_forest_counts_match_the_cpu_oracle_and_its_picture_draws_the_live_trees() {
    let script = example("forest.luau");
    let c = constants(&std::fs::read_to_string(&script).unwrap());
    let (dry, trees) = forest_oracle(&c);
    let candidates = c["CANDIDATES"] as u64;
    // The oracle decides nearly every candidate (else the ranges would prove little).
    assert!(dry.maybe - dry.sure <= candidates / 200, "{dry:?}");
    assert!(trees.maybe - trees.sure <= candidates / 200, "{trees:?}");
    // Both rejections reject something, and trees remain.
    assert!(dry.maybe < candidates && trees.maybe < dry.sure && trees.sure > 200);

    let dir = TempDir::new("procgen-forest");
    let f = run_forest(&dir, &script, &[]);
    assert_eq!(
        f.counts["candidates"].as_f64(),
        Some(candidates as f64),
        "{}",
        f.stdout
    );
    let n = |key: &str| f.counts[key].as_f64().unwrap() as u64;
    assert!(dry.holds(n("dry")), "dry {} outside {dry:?}", n("dry"));
    assert!(
        trees.holds(n("trees")),
        "trees {} outside {trees:?}",
        n("trees")
    );
    assert_eq!(
        f.drawn,
        n("trees"),
        "the draw's instanceCount is the live count"
    );
    // Frame 0 measures the candidate count and records; frame 1 replays, and the cook reads
    // the guard word of the replay before it without waiting (one deferred read).
    let r = &f.report;
    let got: Vec<u64> = [
        "recordings",
        "replays",
        "measured",
        "deferredReads",
        "guarded",
    ]
    .iter()
    .map(|k| r[*k].as_u64().unwrap_or(u64::MAX))
    .collect();
    assert_eq!(got, [1, 2, 1, 1, 0], "{r}");
    assert!(
        f.stdout.contains(&format!("{} trees drawn", n("trees"))),
        "{}",
        f.stdout
    );
    let (tree_px, ground_px) = tree_and_ground_pixels(&f.rgb);
    let px = f.rgb.len() / 3;
    // The block fills about 40% of the frame.
    assert!(ground_px > px / 4, "ground {ground_px} of {px} pixels");
    assert!(ground_px < px, "the sky shows above the hills");
    assert!(tree_px > px / 200, "tree pixels {tree_px} of {px}");
}

#[test]
fn a_forest_with_no_groves_draws_no_trees() {
    let dir = TempDir::new("procgen-forest-bare");
    let source = std::fs::read_to_string(example("forest.luau")).unwrap();
    let line = source
        .lines()
        .find(|l| l.starts_with("local DENSITY ="))
        .unwrap();
    // Grove noise lies in [0, 1): a threshold of 2 keeps nothing.
    let bare = source.replace(line, "local DENSITY = 2");
    let script = dir.path("bare.luau");
    std::fs::write(&script, bare).unwrap();
    let assets = example("assets");
    let f = run_forest(&dir, &script, &["--assets", &assets]);
    assert_eq!(f.counts["trees"].as_f64(), Some(0.0), "{}", f.stdout);
    assert!(f.counts["dry"].as_f64().unwrap() > 0.0);
    assert_eq!(f.drawn, 0);
    let (tree_px, ground_px) = tree_and_ground_pixels(&f.rgb);
    assert_eq!(tree_px, 0, "no tree greens without trees");
    assert!(ground_px > f.rgb.len() / 3 / 4, "ground {ground_px}");
}

#[test]
fn bad_render_arguments_fail_with_one_line_and_no_file() {
    let dir = TempDir::new("procgen-forest-bad");
    let graph = example("forest.luau");
    let missing = dir.path("no-such-dir/forest.png");
    let out = gpugraph(&["procgen", "run", &graph, "--render", &missing]);
    assert_eq!(out.status.code(), Some(1));
    let err = our_stderr(&out);
    assert!(
        err.starts_with("error: --render ") && err.contains("does not exist"),
        "{err}"
    );
    let png = dir.path("forest.png");
    for (size, says) in [
        ("0x10", "outside 1..=8192"),
        ("640", "is not WIDTHxHEIGHT"),
        ("640x", "not a number of pixels"),
        ("9000x100", "outside 1..=8192"),
    ] {
        let err = fails_without_output(
            &["procgen", "run", &graph, "--render", &png, "--size", size],
            &png,
        );
        assert!(
            err.contains("--size") && err.contains(says),
            "{size}: {err}"
        );
    }
    let txt = dir.path("forest.txt");
    let err = fails_without_output(&["procgen", "run", &graph, "--render", &txt], &txt);
    assert!(err.contains("must name a .png file"), "{err}");
    // A graph that shows nothing cannot be rendered, and leaves no picture.
    let bare = dir.path("bare.luau");
    std::fs::write(
        &bare,
        "function cook(frame)\n  return transfer.readback({ columns = { one = 1 } })\nend\n",
    )
    .unwrap();
    let err = fails_without_output(&["procgen", "run", &bare, "--render", &png], &png);
    assert!(
        err.starts_with("error: --render: the graph shows nothing"),
        "{err}"
    );
}
