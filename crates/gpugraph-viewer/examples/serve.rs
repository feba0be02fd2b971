//! Serves the web build and one trace:
//! `cargo run -p gpugraph-viewer --example serve -- WEB_DIR TRACE.json [PORT]`, then open
//! the printed address.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(web), Some(trace)) = (args.first(), args.get(1)) else {
        eprintln!("usage: serve WEB_DIR TRACE.json [PORT]");
        std::process::exit(2);
    };
    let mut cfg = gpugraph_viewer::serve::ServeConfig::new(web, trace);
    cfg.port = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(8080);
    match gpugraph_viewer::serve::start(cfg) {
        Ok(s) => {
            println!("serving on http://{}/", s.addr);
            s.join();
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
