//! Helpers shared by the CLI tests: run the built binary, scratch directories, and `.npy`
//! files written and read by hand (CI has no numpy).
#![allow(dead_code)]

pub mod trace;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test: `GPUGRAPH_BIN` when set (carried binaries on a machine without
/// cargo, where the build path does not exist), else the one cargo built for this test.
pub fn binary() -> PathBuf {
    std::env::var_os("GPUGRAPH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_gpugraph")))
}

/// A file of the CLI crate (`rel` from its manifest directory): found under the build-time
/// manifest directory, else under `crates/gpugraph-cli/` of the working directory (the
/// repository root on a machine that runs carried test binaries).
pub fn crate_file(rel: &str) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    if built.exists() {
        return built;
    }
    PathBuf::from("crates/gpugraph-cli").join(rel)
}

/// Runs the built `gpugraph` with `args`.
pub fn gpugraph(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("could not start gpugraph {args:?}: {e}"))
}

/// Lossy UTF-8 of captured output.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fails the test with stdout and stderr unless the run succeeded.
pub fn assert_success(args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "gpugraph {args:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// stderr without the lines the Vulkan loader may print about the environment.
pub fn our_stderr(out: &Output) -> String {
    text(&out.stderr)
        .lines()
        .filter(|l| !l.contains("XDG_RUNTIME_DIR"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A scratch directory unique to this test process and name, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh, empty directory.
    pub fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("gpugraph-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    /// The directory.
    pub fn dir(&self) -> &str {
        self.0.to_str().expect("temp dir path is UTF-8")
    }
    /// A file inside it.
    pub fn path(&self, file: &str) -> String {
        self.0.join(file).to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `.npy` version 1.0 bytes of little-endian 4-byte words (`descr` like `<f4`).
pub fn npy_bytes(descr: &str, shape: &[usize], words: &[u32]) -> Vec<u8> {
    let shape = match shape {
        [n] => format!("({n},)"),
        [n, k] => format!("({n}, {k})"),
        _ => unreachable!(),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out
}

/// Writes float32 rows.
pub fn write_f32(path: &str, shape: &[usize], v: &[f32]) {
    let words: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
    std::fs::write(path, npy_bytes("<f4", shape, &words)).unwrap();
}

/// Writes uint32 rows.
pub fn write_u32(path: &str, shape: &[usize], v: &[u32]) {
    std::fs::write(path, npy_bytes("<u4", shape, v)).unwrap();
}

/// Writes int32 rows.
pub fn write_i32(path: &str, shape: &[usize], v: &[i32]) {
    let words: Vec<u32> = v.iter().map(|&x| x as u32).collect();
    std::fs::write(path, npy_bytes("<i4", shape, &words)).unwrap();
}

/// Reads a version-1 `.npy` written by the CLI: (descr, shape, words).
pub fn read_npy(path: &str) -> (String, Vec<usize>, Vec<u32>) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(&b[..8], b"\x93NUMPY\x01\x00", "{path}: magic");
    let len = u16::from_le_bytes([b[8], b[9]]) as usize;
    let header = std::str::from_utf8(&b[10..10 + len]).unwrap();
    let after = |key: &str| &header[header.find(key).unwrap() + key.len()..];
    let descr = after("'descr': '").split('\'').next().unwrap().to_string();
    let shape = after("'shape': (")
        .split(')')
        .next()
        .unwrap()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let words = b[10 + len..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (descr, shape, words)
}

/// A decoded 8-bit RGB PNG: width, height and pixels (3 bytes each).
pub fn read_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let name = path.display();
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{name} missing: {e}"));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|e| panic!("{name} is not a PNG: {e}"));
    let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    assert_eq!(info.color_type, png::ColorType::Rgb, "{name}");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Asserts that the PNG at `path` is `width × height` and not blank: its luminance varies
/// (a white page with a title alone stays under the bound) and it has several colours.
pub fn assert_chart_png(path: &std::path::Path, width: u32, height: u32) {
    let (w, h, rgb) = read_png(path);
    let name = path.display();
    assert_eq!((w, h), (width, height), "{name}: size");
    let lum: Vec<f64> = rgb
        .chunks(3)
        .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    assert!(
        var > 400.0,
        "{name} looks blank: luminance variance {var:.1}"
    );
    let colours: std::collections::HashSet<&[u8]> = rgb.chunks(3).collect();
    assert!(colours.len() >= 8, "{name}: {} colours", colours.len());
}

/// Runs a failing command; returns its stderr, after checking `out` was not created and no
/// temporary is left beside it.
pub fn fails_without_output(args: &[&str], out: &str) -> String {
    let o = gpugraph(args);
    assert!(!o.status.success(), "gpugraph {args:?} should fail");
    assert!(
        !std::path::Path::new(out).exists(),
        "{out} exists after a failure"
    );
    let dir = std::path::Path::new(out).parent().unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".partial"), "temporary {name} left behind");
    }
    our_stderr(&o)
}

/// Runs gpugraph with `args`, killing it after `limit`; returns stderr and the time taken.
pub fn run_within(args: &[&str], limit: Duration) -> (Option<i32>, String, Duration) {
    let start = Instant::now();
    let mut child = Command::new(binary())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (status.code(), our_stderr(&out), start.elapsed());
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("gpugraph {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
