//! Every script stops by itself: a busy loop at the top level, in `inputs`, in `cook` or in a
//! cpu.call (also one that `pcall`s the stop away) runs into the script's CPU-time ceiling; a
//! sleep past the ceiling is refused at once; a table or string bomb runs into the memory
//! limit. Each is a typed error naming the limit, its flag and what was running.

mod common;

use std::time::{Duration, Instant};

use common::*;
use gpugraph_procgen::luau::{Host, ScriptLimits};
use gpugraph_procgen::{AssetLibrary, ProcgenError};

const CEILING_MS: u64 = 300;

fn host(limits: ScriptLimits) -> (gpugraph_command::GpuContext, Host) {
    let ctx = ctx();
    let h = Host::with_limits(&ctx.device, &ctx.queue, AssetLibrary::new(), limits).unwrap();
    (ctx, h)
}

fn short() -> ScriptLimits {
    ScriptLimits {
        cpu_time: Duration::from_millis(CEILING_MS),
        ..ScriptLimits::default()
    }
}

/// Runs `source` for a frame under `limits`; answers the error and the wall time it took.
fn fail(source: &str, limits: ScriptLimits) -> (ProcgenError, Duration) {
    let (_ctx, h) = host(limits);
    let t0 = Instant::now();
    let e = h
        .load("hostile.luau", source)
        .and_then(|()| h.play(1))
        .expect_err("the script must be stopped");
    (e, t0.elapsed())
}

fn assert_timeout(source: &str, during: &str) {
    let (e, took) = fail(source, short());
    let ProcgenError::ScriptTimeout {
        during: d,
        limit_ms,
        used_ms,
    } = &e
    else {
        panic!("{during}: {e}");
    };
    assert_eq!((d.as_str(), *limit_ms), (during, CEILING_MS), "{e}");
    assert!(*used_ms >= CEILING_MS, "{e}");
    assert!(
        e.to_string()
            .starts_with("script exceeded its 0.3 s CPU-time ceiling (--script-timeout) in "),
        "{e}"
    );
    // Stopped near the ceiling (CPU time is not wall time on a busy machine: a wide margin).
    assert!(took < Duration::from_secs(20), "{during}: {took:?}");
}

const READBACK: &str = "return transfer.readback({ columns = {} })";

#[test]
fn a_busy_loop_anywhere_in_a_script_runs_into_its_ceiling() {
    assert_timeout("while true do end", "loading `hostile.luau`");
    assert_timeout(
        &format!("function cook(frame) while true do end {READBACK} end"),
        "cook(frame 0)",
    );
    assert_timeout(
        &format!(
            "function inputs(frame) while true do end end function cook(frame) {READBACK} end"
        ),
        "inputs(frame 0)",
    );
    // Recursion without end is Luau's own stack overflow, an error at once.
    let (e, _) = fail("local function f(n) return f(n + 1) + 1 end f(0)", short());
    assert!(e.to_string().contains("stack overflow"), "{e}");
    // A cpu.call's own ceiling (5 s unless stated) is longer than the script's: the script's
    // stops it.
    assert_timeout(
        &format!(
            "function cook(frame) cpu.call({{ fn = function() while true do end end }}) {READBACK} end"
        ),
        "cook(frame 0)",
    );
}

#[test]
fn a_script_cannot_catch_its_way_past_the_ceiling() {
    assert_timeout(
        "while true do pcall(function() while true do end end) end",
        "loading `hostile.luau`",
    );
    assert_timeout(
        "local function spin() while true do end end \
         while true do xpcall(spin, function() while true do end end) end",
        "loading `hostile.luau`",
    );
    // Pattern matching that backtracks for ever is stopped inside the match.
    assert_timeout(
        "local s = string.rep('a', 60) while true do s:find(string.rep('a*', 30) .. 'b') end",
        "loading `hostile.luau`",
    );
}

#[test]
fn a_sleep_past_the_ceiling_is_refused_at_once_and_sleeps_are_charged() {
    let (e, took) = fail(
        &format!(
            "function cook(frame) cpu.call({{ fn = function() task.wait(1e9) end }}) {READBACK} end"
        ),
        short(),
    );
    assert!(
        matches!(e, ProcgenError::ScriptTimeout { ref during, .. } if during == "cook(frame 0)"),
        "{e}"
    );
    assert!(
        took < Duration::from_secs(5),
        "refused, not slept: {took:?}"
    );
    // Short sleeps add up: 0.05 s at a time, at most about the ceiling.
    let (e, took) = fail(
        &format!(
            "function cook(frame) cpu.call({{ fn = function() while true do task.wait(0.05) end end }}) {READBACK} end"
        ),
        short(),
    );
    assert!(matches!(e, ProcgenError::ScriptTimeout { .. }), "{e}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The task library's sleep is a global a script can call itself: charged the same, and a
    // NaN sleeps nothing.
    let (e, _) = fail("__procgen_sleep(0/0) __procgen_sleep(1e9)", short());
    assert!(matches!(e, ProcgenError::ScriptTimeout { .. }), "{e}");
}

#[test]
fn the_ceiling_is_per_entry_and_a_script_under_it_runs() {
    let (_ctx, h) = host(short());
    h.load(
        "spin.luau",
        "function spin(ms) local t0 = cpu_clock() while cpu_clock() - t0 < ms / 1000 do end end",
    )
    .unwrap();
    // Three entries of 150 ms each: 450 ms together, each under its 300 ms ceiling.
    for _ in 0..3 {
        h.load("paced.luau", "spin(150)").unwrap();
    }
    // The host is usable after an entry was stopped.
    h.load("loop.luau", "spin(1e9)").unwrap_err();
    h.load("fine.luau", "y = 2").unwrap();
}

fn assert_memory(source: &str, during: &str) {
    let limits = ScriptLimits {
        memory: 64 << 20,
        ..ScriptLimits::default()
    };
    let (e, _) = fail(source, limits);
    assert!(
        matches!(e, ProcgenError::ScriptMemory { during: ref d, limit_bytes } if d == during && limit_bytes == 64 << 20),
        "{during}: {e}"
    );
    assert!(
        e.to_string()
            .starts_with("script exceeded its 64 MiB memory limit (--script-memory) in "),
        "{e}"
    );
}

#[test]
fn a_table_or_string_bomb_runs_into_the_memory_limit() {
    assert_memory(
        "local t = {} for i = 1, 1e9 do t[i] = { i, i, i } end",
        "loading `hostile.luau`",
    );
    assert_memory("local s = string.rep('x', 2^29)", "loading `hostile.luau`");
    assert_memory(
        &format!("function cook(frame) local s = 'x' while true do s = s .. s end {READBACK} end"),
        "cook(frame 0)",
    );
    // Inside a cpu.call (a coroutine of the task library).
    assert_memory(
        &format!(
            "function cook(frame) cpu.call({{ fn = function() local t = {{}} for i = 1, 1e9 do t[i] = {{}} end end }}) {READBACK} end"
        ),
        "cpu.call `fn`",
    );
}
