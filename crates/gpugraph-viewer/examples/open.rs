//! Opens a Chrome trace in the native viewer window:
//! `cargo run -p gpugraph-viewer --example open -- trace.json[.gz]`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: open TRACE.json[.gz]");
        std::process::exit(2);
    };
    let result = gpugraph_trace::chrome::open_chrome_trace(
        std::path::Path::new(&path),
        gpugraph_trace::IngestOptions::default(),
    )
    .map_err(gpugraph_viewer::ViewerError::from)
    .and_then(|model| gpugraph_viewer::native::run_window(model, &path));
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
