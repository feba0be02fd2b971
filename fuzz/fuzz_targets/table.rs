//! The analyze loaders on arbitrary bytes: a CSV, Parquet, Arrow IPC file or stream (chosen by
//! the first byte) is loaded for one of four column requests (the second byte) with the CLI's
//! own `load`, then uploaded into a `GpuTable` as `analyze` does. Never a panic, a wgpu
//! validation error or an abort; an accepted table has the rows the loader counted.
//!
//! Runs on whatever Vulkan adapter wgpu finds (Mesa lavapipe on a machine without a GPU).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use gpugraph_arrow::{upload_record_batches, UploadOptions};
use gpugraph_command::GpuContext;
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/gpugraph-cli/src/analyze"]
mod analyze {
    pub mod args;
    pub mod column_types;
    pub mod ipc_extents;
    pub mod load;
    pub mod parquet_read;
}

use analyze::load::{load, Request};

const KINDS: [&str; 4] = ["csv", "parquet", "arrow", "arrows"];

fn context() -> &'static GpuContext {
    static CTX: OnceLock<GpuContext> = OnceLock::new();
    CTX.get_or_init(|| GpuContext::new().expect("a Vulkan adapter (install lavapipe)"))
}

/// The seeds' columns (those of `generate-table` and tests/data/flights_small.csv).
fn request(selector: u8) -> Request {
    let name = |n: &str| Some(n.to_string());
    match selector % 4 {
        0 => Request {
            value: name("arr_delay"),
            ..Request::default()
        },
        1 => Request {
            group: name("carrier"),
            ..Request::default()
        },
        2 => Request {
            x: name("dep_time"),
            y: name("arr_delay"),
            ..Request::default()
        },
        _ => Request {
            value: name("distance"),
            group: name("carrier"),
            filters: vec![analyze::args::parse_filter("dep_time >= 600").expect("filter")],
            ..Request::default()
        },
    }
}

fn scratch(ext: &str) -> PathBuf {
    std::env::temp_dir().join(format!("gpugraph-fuzz-table-{}.{ext}", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let [kind, selector, body @ ..] = data else {
        return;
    };
    let path = scratch(KINDS[usize::from(*kind) % KINDS.len()]);
    std::fs::write(&path, body).expect("scratch file");
    let Ok(loaded) = load(&path, &request(*selector), &mut |_| {}) else {
        return;
    };
    let options = UploadOptions::default()
        .round_float64()
        .narrow_int64()
        .encode_utf8();
    let ctx = context();
    if let Ok(table) = upload_record_batches(ctx, loaded.schema.clone(), &loaded.batches, &options)
    {
        assert_eq!(table.num_rows(), loaded.rows);
    }
});
