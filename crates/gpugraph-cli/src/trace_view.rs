//! `gpugraph trace serve FILE` and `gpugraph trace view FILE`: the trace viewer
//! (`gpugraph-viewer`) in the browser and in a native window.
//!
//! `serve` hands the web build (`make web` assembles it under `target/web`) and the one named
//! trace to a browser: 127.0.0.1 unless `--bind` says otherwise; only the bundle's files and
//! the trace are reachable (the viewer crate's `serve` module states the rules). `view` opens
//! the same viewer in a window (winit) on this machine's GPU.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use gpugraph_viewer::serve::{start, ServeConfig};

use crate::trace_load::{load, Common};

/// `trace serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// The trace (.json or .json.gz).
    file: PathBuf,
    /// Port to listen on (0: any free port; the URL printed says which).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to bind. Anything but a loopback address exposes the trace to the network.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The web bundle. Default: $GPUGRAPH_WEB, else `web/` beside the executable, else the
    /// `target/web` that `make web` writes, found from the executable's directory.
    #[arg(long)]
    web: Option<PathBuf>,
}

/// `trace view`.
#[derive(Args)]
pub struct ViewArgs {
    #[command(flatten)]
    common: Common,
}

/// Where the web bundle is: the first candidate holding an `index.html`.
fn web_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        if dir.join("index.html").is_file() {
            return Ok(dir.to_path_buf());
        }
        bail!(
            "no web bundle at {}: it has no index.html (build it with `make web`)",
            dir.display()
        );
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("GPUGRAPH_WEB") {
        candidates.push(PathBuf::from(dir));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(bin) = exe.parent() {
            candidates.push(bin.join("web"));
            // target/release/gpugraph → target/web
            if let Some(target) = bin.parent() {
                candidates.push(target.join("web"));
            }
        }
    }
    candidates.push(PathBuf::from("target/web"));
    candidates
        .iter()
        .find(|d| d.join("index.html").is_file())
        .cloned()
        .with_context(|| {
            format!(
                "no web bundle found (looked in {}): build it with `make web`, or pass --web DIR",
                candidates
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Serves until the process is stopped.
pub fn serve(a: &ServeArgs) -> Result<()> {
    let meta =
        std::fs::metadata(&a.file).with_context(|| format!("the trace {}", a.file.display()))?;
    if !meta.is_file() {
        bail!("the trace {} is not a regular file", a.file.display());
    }
    let web = web_dir(a.web.as_deref())?;
    let mut cfg = ServeConfig::new(&web, &a.file);
    cfg.bind = a.bind;
    cfg.port = a.port;
    let serving = start(cfg).with_context(|| format!("serving {}", a.file.display()))?;
    let host = match serving.addr.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    println!(
        "serving {} at http://{host}:{}/",
        a.file.display(),
        serving.addr.port()
    );
    if !a.bind.is_loopback() {
        eprintln!(
            "note: bound to {}: anyone who can reach this address can read the trace",
            a.bind
        );
    }
    eprintln!("(the web bundle: {}; stop with Ctrl-C)", web.display());
    serving.join();
    Ok(())
}

/// Opens the native window.
pub fn view(a: &ViewArgs) -> Result<()> {
    let loaded = load(&a.common)?;
    let file = a.common.file.display();
    eprintln!(
        "{file}: {} spans ({}, {:.2} s)",
        loaded.model.spans.len(),
        if loaded.from_cache {
            "from the cache"
        } else {
            "parsed"
        },
        loaded.seconds
    );
    let title = format!("gpugraph trace — {file}");
    gpugraph_viewer::native::run_window(loaded.model, &title)
        .with_context(|| format!("viewing {file}"))
}
