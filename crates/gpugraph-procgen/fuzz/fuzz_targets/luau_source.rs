//! Any bytes as a procgen graph script: loaded by the sandboxed host (source text only) under
//! a short CPU-time ceiling and a small memory limit, then, if it loaded, cooked for two
//! frames on the device. Every outcome must be a value or a typed error: a panic, an abort, a
//! stack overflow, a hang past the ceiling or memory past the limit is a finding.

#![no_main]

use std::time::Duration;

use gpugraph_command::GpuContext;
use gpugraph_procgen::luau::{Host, ScriptLimits};
use gpugraph_procgen::AssetLibrary;
use libfuzzer_sys::fuzz_target;

/// Short enough that a busy input costs little, long enough for the example graphs' cooks.
const LIMITS: ScriptLimits = ScriptLimits {
    cpu_time: Duration::from_millis(500),
    memory: 64 << 20,
};

const EXAMPLE_ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/graph/assets");

thread_local! {
    // One device for the whole run: making one per input would dominate the time. Leaked, so
    // it is never dropped while thread-locals are torn down at exit (wgpu-core's lock tracing
    // reads a thread-local of its own when a buffer drops, which panics then).
    static CTX: &'static GpuContext = Box::leak(Box::new(
        GpuContext::new().expect("a Vulkan adapter (lavapipe) to fuzz on"),
    ));
}

fuzz_target!(|data: &[u8]| {
    CTX.with(|ctx| {
        let ctx: &GpuContext = ctx;
        let lib = AssetLibrary::new().with_root(EXAMPLE_ASSETS);
        let host = Host::with_limits(&ctx.device, &ctx.queue, lib, LIMITS)
            .expect("a host is made for any script");
        // A script without `cook` is refused by play() before it touches the device.
        let outcome = host
            .load("fuzz.luau", data)
            .and_then(|()| host.play(2).map(drop));
        if let Err(e) = outcome {
            // Formatting the error is part of the contract (it must not panic either).
            let _ = e.to_string();
        }
    });
});
