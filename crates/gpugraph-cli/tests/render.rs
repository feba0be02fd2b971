//! `gpugraph render cull` end to end on the device (lavapipe in CI): a small scene over two
//! frames with MSAA and a pick writes a PNG of the requested size with drawn pixels; bad
//! arguments fail with one line and leave no file behind; the `bench render` row runs.

mod common;

use common::*;

#[test]
fn cull_writes_a_png_with_the_visible_instances() {
    let dir = TempDir::new("render-cull");
    let out = dir.path("frame.png");
    let args = [
        "render",
        "cull",
        "--instances",
        "2000",
        "--out",
        &out,
        "--frames",
        "2",
        "--msaa",
        "4",
        "--pick",
        "32,20",
        "--width",
        "64",
        "--height",
        "40",
    ];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    let stdout = text(&run.stdout);
    assert!(
        stdout.contains("2000 instances, 2 frames at 64x40 (msaa 4)"),
        "{stdout}"
    );
    assert!(stdout.contains("pick (32, 20):"), "{stdout}");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (64, 40));
    let background = pixels[..4].to_vec();
    let drawn = pixels.chunks(4).filter(|p| *p != &background[..]).count();
    assert!(drawn > 0, "no instance was drawn");
    let visible: Vec<u32> = stdout
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells.len() == 4 && cells[0].parse::<u32>().is_ok()).then(|| cells[1].parse().unwrap())
        })
        .collect();
    assert_eq!(visible.len(), 2, "{stdout}");
    assert!(visible.iter().all(|&v| v > 0 && v <= 2000), "{visible:?}");
}

#[test]
fn cull_rejects_bad_arguments_and_leaves_nothing() {
    let dir = TempDir::new("render-cull-bad");
    let out = dir.path("frame.png");
    for bad in [
        vec!["--instances", "0", "--out", &out],
        vec!["--instances", "10", "--out", &out, "--msaa", "2"],
        vec![
            "--instances",
            "10",
            "--out",
            &out,
            "--pick",
            "64,0",
            "--width",
            "64",
        ],
        vec!["--instances", "10", "--out", &out, "--pick", "3"],
        vec!["--instances", "10", "--out", &dir.path("frame.txt")],
        vec!["--instances", "10", "--out", &dir.path("missing/frame.png")],
    ] {
        let mut args = vec!["render", "cull"];
        args.extend(bad);
        let run = gpugraph(&args);
        assert!(!run.status.success(), "{args:?} succeeded");
        let err = our_stderr(&run);
        assert!(
            err.contains("error") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
        assert!(
            std::fs::read_dir(dir.dir()).unwrap().next().is_none(),
            "{args:?} left a file behind"
        );
    }
}

#[test]
fn bench_render_runs_and_checks() {
    let args = ["bench", "render", "--sizes", "2^10", "--repeat", "1"];
    let run = gpugraph(&args);
    assert_success(&args, &run);
    assert!(
        text(&run.stdout).contains("cull-draw"),
        "{}",
        text(&run.stdout)
    );
}
