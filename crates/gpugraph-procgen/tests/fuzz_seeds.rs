//! The Luau fuzz target's seeds (`fuzz/seeds/luau_source`: the example graphs, the hostile
//! scripts of issue 52 and every crash the fuzzer found, once fixed) through the same harness
//! as `fuzz/fuzz_targets/luau_source.rs`, so `cargo test` replays them without cargo-fuzz:
//! each ends by itself in a value or a typed error, the example graphs in a value.

mod common;

use std::time::{Duration, Instant};

use common::*;
use gpugraph_procgen::luau::{Host, ScriptLimits};
use gpugraph_procgen::{AssetLibrary, ProcgenError};

/// The fuzz target's limits.
const LIMITS: ScriptLimits = ScriptLimits {
    cpu_time: Duration::from_millis(500),
    memory: 64 << 20,
};

const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/luau_source");
const EXAMPLE_ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graph/assets");

/// The fuzz target's body.
fn harness(ctx: &gpugraph_command::GpuContext, data: &[u8]) -> Result<(), ProcgenError> {
    let lib = AssetLibrary::new().with_root(EXAMPLE_ASSETS);
    let host = Host::with_limits(&ctx.device, &ctx.queue, lib, LIMITS)?;
    host.load("fuzz.luau", data)
        .and_then(|()| host.play(2).map(drop))
}

#[test]
fn every_fuzz_seed_ends_in_a_value_or_a_typed_error() {
    let ctx = ctx();
    let mut seeds: Vec<_> = std::fs::read_dir(SEEDS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 10, "{seeds:?}");
    for seed in seeds {
        let name = seed.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&seed).unwrap();
        let t0 = Instant::now();
        let outcome = harness(&ctx, &data);
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{name}: {:?}",
            t0.elapsed()
        );
        let examples = ["scatter_expand.luau", "sprout_tail.luau"];
        match outcome {
            Ok(()) => assert!(examples.contains(&name.as_str()), "{name} was not refused"),
            Err(e) => {
                assert!(!examples.contains(&name.as_str()), "{name}: {e}");
                let text = e.to_string();
                assert!(
                    !text.is_empty() && !text.contains("panicked"),
                    "{name}: {text}"
                );
            }
        }
    }
}
