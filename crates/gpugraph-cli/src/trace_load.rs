//! Opening a trace for every `gpugraph trace` command (`trace.rs`, `trace_view.rs`): the
//! options they share and the columnar cache in `$XDG_CACHE_HOME/gpugraph/traces` (else
//! `~/.cache/...`), keyed by the file's absolute path and stamped with its length and mtime.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use gpugraph_trace::cache::{read_cache, write_cache};
use gpugraph_trace::{IngestOptions, TraceModel};

/// Options every trace command shares.
#[derive(Args)]
pub struct Common {
    /// The trace (.json or .json.gz).
    pub(crate) file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Neither read nor write the columnar cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Unit of printed times.
    #[arg(long, value_enum, default_value = "us")]
    pub(crate) unit: Unit,
}

/// Time units.
#[derive(Clone, Copy, ValueEnum)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds (the Chrome JSON unit).
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl Unit {
    /// Ticks (ns) per unit.
    pub(crate) fn ticks(self) -> f64 {
        match self {
            Unit::Ns => 1.0,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            Unit::S => 1e9,
        }
    }
    /// `ticks` as an exact decimal in this unit (absolute epoch times exceed f64's integer
    /// precision in nanoseconds, so they are formatted from integers, never through f64).
    pub(crate) fn exact(self, ticks: i128) -> String {
        let (per, digits) = match self {
            Unit::Ns => (1i128, 0usize),
            Unit::Us => (1_000, 3),
            Unit::Ms => (1_000_000, 6),
            Unit::S => (1_000_000_000, 9),
        };
        let sign = if ticks < 0 { "-" } else { "" };
        let t = ticks.abs();
        if digits == 0 {
            return format!("{sign}{t}");
        }
        format!("{sign}{}.{:0digits$}", t / per, t % per)
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::S => "s",
        }
    }
}

fn cache_path(file: &Path) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let abs = std::fs::canonicalize(file).ok()?;
    // FNV-1a of the absolute path: a stable file name without a hashing dependency.
    let hash = abs
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    Some(
        base.join("gpugraph/traces")
            .join(format!("{hash:016x}.ggtrace")),
    )
}

fn stamp(file: &Path) -> Result<[u64; 2]> {
    let meta = std::fs::metadata(file).with_context(|| format!("reading {}", file.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    Ok([meta.len(), mtime])
}

/// How the model was obtained.
pub(crate) struct Loaded {
    pub(crate) model: TraceModel,
    pub(crate) from_cache: bool,
    pub(crate) seconds: f64,
}

/// The trace's model, from the fresh columnar cache or parsed (then cached).
pub(crate) fn load(c: &Common) -> Result<Loaded> {
    let t0 = Instant::now();
    let stamp = stamp(&c.file)?;
    let cache = if c.no_cache {
        None
    } else {
        cache_path(&c.file)
    };
    if let Some(p) = &cache {
        if let Ok(bytes) = std::fs::read(p) {
            if let Ok((model, s)) = read_cache(&bytes) {
                if s == stamp {
                    return Ok(Loaded {
                        model,
                        from_cache: true,
                        seconds: t0.elapsed().as_secs_f64(),
                    });
                }
            }
        }
    }
    let bytes = std::fs::read(&c.file).with_context(|| format!("reading {}", c.file.display()))?;
    let model = gpugraph_trace::parse_chrome_trace(&bytes, IngestOptions::default())
        .with_context(|| format!("parsing {}", c.file.display()))?;
    if let Some(p) = &cache {
        // A cache that cannot be written only costs the next open its speed.
        let _ = std::fs::create_dir_all(p.parent().unwrap_or(Path::new(".")))
            .and_then(|_| std::fs::write(p, write_cache(&model, stamp)));
    }
    Ok(Loaded {
        model,
        from_cache: false,
        seconds: t0.elapsed().as_secs_f64(),
    })
}
