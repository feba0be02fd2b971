//! `gpugraph trace serve` end to end: the server binds 127.0.0.1 on the port it prints,
//! answers the viewer's files and the trace, and nothing else (no traversal, no listing,
//! no other methods); a missing bundle or a trace that is not a file is a one-line error.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

/// A served process, killed when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Status line and body of one raw HTTP/1.0 request.
fn request(port: u16, method: &str, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("reads the answer");
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header");
    let status: u16 = String::from_utf8_lossy(&raw[..head_end])
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (status, raw[head_end + 4..].to_vec())
}

#[test]
fn serve_answers_the_viewer_and_the_trace_only() {
    let t = TempDir::new("trace-serve");
    let web = t.path("web");
    let dir = std::path::Path::new(&web);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>viewer</title>",
    )
    .unwrap();
    std::fs::write(dir.join("viewer.js"), "export {};").unwrap();
    std::fs::write(dir.join("gpugraph_viewer_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(t.path("secret.txt"), "not for the browser").unwrap();
    let trace = t.path("trace.json");
    std::fs::write(
        &trace,
        r#"{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1}]}"#,
    )
    .unwrap();
    let mut child = Command::new(binary())
        .args([
            "trace",
            "serve",
            trace.as_str(),
            "--port",
            "0",
            "--web",
            web.as_str(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let stdout = child.stdout.take().unwrap();
    let served = Served(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "binds loopback: {line}"
    );
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    assert_eq!(request(port, "GET", "/").0, 302);
    let (status, body) = request(port, "GET", "/?trace=/trace");
    assert_eq!((status, body.starts_with(b"<!doctype html>")), (200, true));
    assert_eq!(request(port, "GET", "/viewer.js").0, 200);
    assert_eq!(request(port, "GET", "/gpugraph_viewer_bg.wasm").0, 200);
    let (status, body) = request(port, "GET", "/trace");
    assert_eq!(status, 200);
    assert_eq!(body, std::fs::read(&trace).unwrap());
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "//etc/passwd",
        "/web/",
        "/secret.txt",
        "/index.html/..",
    ] {
        assert_eq!(request(port, "GET", path).0, 404, "{path}");
    }
    assert_eq!(request(port, "POST", "/trace").0, 405);
    drop(served);
}

#[test]
fn serve_names_what_is_missing() {
    let t = TempDir::new("trace-serve-errors");
    let trace = t.path("trace.json");
    std::fs::write(&trace, r#"{"traceEvents":[]}"#).unwrap();
    let empty = t.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    // (the trace, the bundle directory, what the one-line error must say)
    let cases = [
        (&trace, &empty, ["no web bundle", "make web"]),
        (&empty, &empty, ["not a regular file", "trace"]),
    ];
    for (file, web, says) in cases {
        let args = ["trace", "serve", file, "--port", "0", "--web", web];
        let out = gpugraph(&args);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(says.iter().all(|s| err.contains(s)), "{args:?}: {err}");
    }
}
