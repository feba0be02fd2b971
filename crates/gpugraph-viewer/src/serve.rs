//! A tiny HTTP server (tiny_http) for the web build and one trace.
//!
//! It serves exactly:
//!
//! * `/` → `index.html`; without a query it answers `302` to `/?trace=/trace`, so the page
//!   loads the served trace by default;
//! * `/NAME` for each file of the web bundle: the regular files (not symlinks) directly in
//!   `web_dir` whose names end in `.html`, `.js` or `.wasm` and consist of ASCII letters,
//!   digits, `-`, `_` and `.`, read into memory once at start (a fixed allow-list);
//! * `/trace` → the trace file (opened per request from the configured path, with its
//!   original name in `Content-Disposition`).
//!
//! Paths are matched as raw bytes, never decoded or joined to the file system, so `..`,
//! percent-encoded dots or slashes and doubled slashes find nothing: `404`. No directory is
//! ever listed. Methods other than `GET` and `HEAD` get `405`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use tiny_http::{Header, Method, Response, Server};

use crate::ViewerError;

/// What to serve and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// The assembled web bundle (`make web` writes it to `$(TARGET_DIR)/web`).
    pub web_dir: PathBuf,
    /// The trace file (`.json` or `.json.gz`).
    pub trace: PathBuf,
    /// Address to bind (127.0.0.1 by default).
    pub bind: IpAddr,
    /// Port (0: any free port).
    pub port: u16,
}

impl ServeConfig {
    /// `web_dir` and `trace` on 127.0.0.1:8080.
    pub fn new(web_dir: impl Into<PathBuf>, trace: impl Into<PathBuf>) -> Self {
        Self {
            web_dir: web_dir.into(),
            trace: trace.into(),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8080,
        }
    }
}

/// A server running on its own thread ([`start`]).
pub struct Serving {
    /// The bound address.
    pub addr: SocketAddr,
    server: Arc<Server>,
    thread: Option<JoinHandle<()>>,
}

impl Serving {
    /// Stops accepting requests and joins the thread.
    pub fn stop(mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
    /// Blocks until the server thread ends.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Bundle {
    files: BTreeMap<String, (Vec<u8>, &'static str)>,
    trace: PathBuf,
    trace_name: String,
    trace_mime: &'static str,
}

fn mime_of(name: &str) -> Option<&'static str> {
    if name.ends_with(".html") {
        Some("text/html; charset=utf-8")
    } else if name.ends_with(".js") {
        Some("text/javascript; charset=utf-8")
    } else if name.ends_with(".wasm") {
        Some("application/wasm")
    } else {
        None
    }
}

fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ViewerError + '_ {
    move |source| ViewerError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Bundle {
    fn load(cfg: &ServeConfig) -> Result<Self, ViewerError> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(&cfg.web_dir).map_err(io(&cfg.web_dir))? {
            let entry = entry.map_err(io(&cfg.web_dir))?;
            let path = entry.path();
            // symlink_metadata: a symlink is never followed, whatever it points to.
            let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let Some(mime) = mime_of(&name) else { continue };
            if !meta.file_type().is_file() || !plain_name(&name) {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            files.insert(name, (bytes, mime));
        }
        if !files.contains_key("index.html") {
            return Err(ViewerError::Serve(format!(
                "{} has no index.html (run `make web`)",
                cfg.web_dir.display()
            )));
        }
        let meta = std::fs::metadata(&cfg.trace).map_err(io(&cfg.trace))?;
        if !meta.is_file() {
            return Err(ViewerError::Serve(format!(
                "{} is not a file",
                cfg.trace.display()
            )));
        }
        let trace_name = cfg
            .trace
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("trace.json")
            .chars()
            .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
            .collect::<String>();
        let trace_mime = if trace_name.ends_with(".gz") {
            "application/gzip"
        } else {
            "application/json"
        };
        Ok(Self {
            files,
            trace: cfg.trace.clone(),
            trace_name,
            trace_mime,
        })
    }

    fn respond(&self, req: tiny_http::Request) {
        let header = |k: &str, v: &str| Header::from_bytes(k.as_bytes(), v.as_bytes()).ok();
        let common = |mut r: tiny_http::ResponseBox| -> tiny_http::ResponseBox {
            for h in [
                header("X-Content-Type-Options", "nosniff"),
                header("Cache-Control", "no-cache"),
            ]
            .into_iter()
            .flatten()
            {
                r.add_header(h);
            }
            r
        };
        if !matches!(req.method(), Method::Get | Method::Head) {
            let mut r = Response::from_string("method not allowed\n").with_status_code(405);
            if let Some(h) = header("Allow", "GET, HEAD") {
                r.add_header(h);
            }
            let _ = req.respond(common(r.boxed()));
            return;
        }
        let url = req.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let file = match path {
            "/" if query.is_empty() => {
                let mut r = Response::empty(302);
                if let Some(h) = header("Location", "/?trace=/trace") {
                    r.add_header(h);
                }
                let _ = req.respond(common(r.boxed()));
                return;
            }
            "/" => Some("index.html"),
            "/trace" => {
                let r = match std::fs::File::open(&self.trace) {
                    Ok(f) => {
                        let mut r = Response::from_file(f);
                        for h in [
                            header("Content-Type", self.trace_mime),
                            header(
                                "Content-Disposition",
                                &format!("inline; filename=\"{}\"", self.trace_name),
                            ),
                        ]
                        .into_iter()
                        .flatten()
                        {
                            r.add_header(h);
                        }
                        r.boxed()
                    }
                    Err(_) => Response::from_string("the trace is gone\n")
                        .with_status_code(500)
                        .boxed(),
                };
                let _ = req.respond(common(r));
                return;
            }
            p => p.strip_prefix('/'),
        };
        let r = match file.and_then(|f| self.files.get(f)) {
            Some((bytes, mime)) => {
                let mut r = Response::from_data(bytes.clone());
                if let Some(h) = header("Content-Type", mime) {
                    r.add_header(h);
                }
                r.boxed()
            }
            None => Response::from_string("not found\n")
                .with_status_code(404)
                .boxed(),
        };
        let _ = req.respond(common(r));
    }
}

/// Loads the bundle's allow-list, binds, and serves on a new thread; returns the bound
/// address (use port 0 for any free port).
pub fn start(cfg: ServeConfig) -> Result<Serving, ViewerError> {
    let bundle = Bundle::load(&cfg)?;
    let server = Server::http(SocketAddr::new(cfg.bind, cfg.port))
        .map_err(|e| ViewerError::Serve(format!("binding {}:{}: {e}", cfg.bind, cfg.port)))?;
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| ViewerError::Serve("the server has no IP address".into()))?;
    let server = Arc::new(server);
    let s = server.clone();
    let thread = std::thread::Builder::new()
        .name("gpugraph-viewer-serve".into())
        .spawn(move || {
            for req in s.incoming_requests() {
                bundle.respond(req);
            }
        })
        .map_err(|e| ViewerError::Serve(format!("spawning the server thread: {e}")))?;
    Ok(Serving {
        addr,
        server,
        thread: Some(thread),
    })
}

/// [`start`], then serves until the process ends (blocking).
pub fn serve(cfg: ServeConfig) -> Result<(), ViewerError> {
    let s = start(cfg)?;
    s.join();
    Ok(())
}
