//! Helpers of the trace tests: the committed trace fixtures and the CLI run with its own
//! columnar-cache directory.

use std::process::{Command, Output};

use serde_json::Value;

use super::{assert_success, binary, crate_file, TempDir};

/// The path of a file in `crates/gpugraph-trace/tests/data`.
pub fn fixture(name: &str) -> String {
    crate_file(&format!("../gpugraph-trace/tests/data/{name}"))
        .to_string_lossy()
        .into_owned()
}

/// Runs gpugraph with `XDG_CACHE_HOME` pointing into `cache` (never the user's cache).
pub fn run(cache: &TempDir, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("XDG_CACHE_HOME", cache.dir())
        .output()
        .unwrap_or_else(|e| panic!("could not start gpugraph {args:?}: {e}"))
}

/// [`run`], which must succeed and print JSON.
pub fn json(cache: &TempDir, args: &[&str]) -> Value {
    let out = run(cache, args);
    assert_success(args, &out);
    serde_json::from_slice(&out.stdout).expect("--json prints JSON")
}
