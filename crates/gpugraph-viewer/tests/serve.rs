//! The server serves exactly the bundle's allow-list, `/` and `/trace`: traversal attempts,
//! encoded dots and slashes, doubled slashes, symlinks and other files get 404; other
//! methods 405.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use gpugraph_viewer::serve::{start, ServeConfig};

/// One raw HTTP/1.0 request (the path is sent byte for byte, never normalized).
fn request(addr: SocketAddr, method: &str, path: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{method} {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap();
    (status, head, out[split + 4..].to_vec())
}

#[test]
fn serves_the_bundle_and_the_trace_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("gpugraph-serve-{}", std::process::id()));
    let web = dir.join("web");
    std::fs::create_dir_all(web.join("sub")).unwrap();
    std::fs::write(web.join("index.html"), "<!doctype html>page").unwrap();
    std::fs::write(web.join("viewer.js"), "// js").unwrap();
    std::fs::write(web.join("gpugraph_viewer_bg.wasm"), b"\0asm").unwrap();
    std::fs::write(web.join("notes.txt"), "not in the bundle").unwrap();
    std::fs::write(web.join("sub").join("x.js"), "nested").unwrap();
    std::fs::write(dir.join("secret.js"), "outside").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("secret.js"), web.join("link.js")).unwrap();
    let trace = dir.join("my trace.json");
    std::fs::write(
        &trace,
        r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1}]"#,
    )
    .unwrap();

    let mut cfg = ServeConfig::new(&web, &trace);
    cfg.port = 0;
    let server = start(cfg).unwrap();
    let addr = server.addr;
    assert!(addr.ip().is_loopback());

    let (st, head, body) = request(addr, "GET", "/");
    assert_eq!(st, 302);
    assert!(head.contains("Location: /?trace=/trace"), "{head}");
    let (st, _, body2) = request(addr, "GET", "/?trace=/trace");
    assert_eq!((st, body2.as_slice()), (200, &b"<!doctype html>page"[..]));
    let _ = body;
    let (st, head, body) = request(addr, "GET", "/gpugraph_viewer_bg.wasm");
    assert_eq!((st, body.as_slice()), (200, &b"\0asm"[..]));
    assert!(head.contains("Content-Type: application/wasm"), "{head}");
    let (st, head, _) = request(addr, "GET", "/viewer.js");
    assert_eq!(st, 200);
    assert!(head.contains("Content-Type: text/javascript"), "{head}");
    let (st, head, body) = request(addr, "GET", "/trace");
    assert_eq!(st, 200);
    assert!(body.starts_with(b"[{\"ph\""));
    assert!(
        head.contains("Content-Disposition: inline; filename=\"my trace.json\""),
        "{head}"
    );
    let (st, _, body) = request(addr, "HEAD", "/index.html");
    assert_eq!((st, body.len()), (200, 0));

    for path in [
        "/../Cargo.toml",
        "/%2e%2e/",
        "/%2e%2e/secret.js",
        "/..%2fsecret.js",
        "//etc/passwd",
        "/sub/x.js",
        "/sub%2fx.js",
        "/sub",
        "/notes.txt",
        "/link.js",
        "/index.html/",
        "/./index.html",
        "/INDEX.HTML",
        "/trace/",
        "/trace/../index.html",
        "/%69ndex.html",
    ] {
        let (st, _, _) = request(addr, "GET", path);
        assert_eq!(st, 404, "{path}");
    }
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let (st, head, _) = request(addr, method, "/index.html");
        assert_eq!(st, 405, "{method}");
        assert!(head.contains("Allow: GET, HEAD"), "{head}");
    }
    server.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bundle_without_index_or_a_missing_trace_is_an_error() {
    let dir = std::env::temp_dir().join(format!("gpugraph-serve-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = start(ServeConfig::new(&dir, dir.join("t.json")))
        .err()
        .expect("no index.html");
    assert!(e.to_string().contains("index.html"), "{e}");
    std::fs::write(dir.join("index.html"), "x").unwrap();
    let e = start(ServeConfig::new(&dir, dir.join("t.json")))
        .err()
        .expect("no trace");
    assert!(e.to_string().contains("t.json"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
