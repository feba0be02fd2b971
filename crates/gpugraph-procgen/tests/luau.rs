//! The Luau front-end: the example graph (scatter → delete by predicate → expand → hash-gather
//! → one readback) against the CPU oracles with its guard/re-record sequence; cpu.call's
//! ceiling (a busy loop refused, a wait not charged, a task it waits for charged), declared
//! return types, BufferRef, pure-call folding and digest-triggered re-cooks; typed refusals.

mod common;

use std::time::Instant;

use common::*;
use gpugraph_procgen::luau::{Host, PlayReport};
use gpugraph_procgen::transfer::ReadValue;
use gpugraph_procgen::{cpu, AssetLibrary, ProcgenError};

const EXAMPLE: &str = include_str!("../examples/graph/scatter_expand.luau");
const EXAMPLE_ASSETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graph/assets");

fn host() -> (gpugraph_command::GpuContext, Host) {
    let ctx = ctx();
    let h = Host::new(
        &ctx.device,
        &ctx.queue,
        AssetLibrary::new().with_root(EXAMPLE_ASSETS),
    )
    .unwrap();
    (ctx, h)
}

fn num(v: &ReadValue) -> f64 {
    match v {
        ReadValue::Number(n) => *n,
        other => panic!("not a number: {other:?}"),
    }
}

fn play(source: &str, frames: u64) -> Result<PlayReport, ProcgenError> {
    let (_ctx, h) = host();
    h.load("test.luau", source)?;
    h.play(frames)
}

#[test]
fn the_example_graph_matches_the_oracle_and_re_records_at_four_times_the_room() {
    // The test reads the children's points in the same one readback to check the pairs.
    let source = EXAMPLE.replace(
        "pairs = near.pairs_count,",
        "pairs = near.pairs_count,\n\t\t\tchild_points = children,",
    );
    let report = play(&source, 5).unwrap();
    let c = &report.counts;
    assert_eq!(
        (c.recordings, c.replays, c.guarded, c.measured),
        (2, 5, 1, 1),
        "{c:?}"
    );
    assert_eq!(
        report.rooms,
        [
            (0, "points".to_string(), 2048),
            (3, "points".to_string(), 8192)
        ]
    );
    let sizes = [1000u32, 1500, 3000, 3000, 3000];
    for (f, frame) in report.frames.iter().enumerate() {
        // The replay of frame 2 ran past the room: its count is clamped to 2048.
        let n = sizes[f].min(if f < 3 { 2048 } else { 8192 });
        assert_eq!(num(&frame.values["points"]) as u32, n, "frame {f}");
        let survivors: Vec<[f32; 3]> = (0..n)
            .map(|i| cpu::scatter_point(i, 7, 8.0, true))
            .filter(|p| cpu::keep(*p, 12.0) == 1)
            .collect();
        assert_eq!(
            num(&frame.values["survivors"]) as usize,
            survivors.len(),
            "frame {f}"
        );
        assert_eq!(
            num(&frame.values["children"]) as usize,
            survivors.len() * 4,
            "frame {f}"
        );
        let ReadValue::Vectors(kids) = &frame.values["child_points"] else {
            panic!("child_points is a vector column");
        };
        assert_eq!(kids.len(), survivors.len() * 4);
        let kids: Vec<[f32; 3]> = kids
            .iter()
            .map(|v| [v[0] as f32, v[1] as f32, v[2] as f32])
            .collect();
        let want = cpu::neighbour_pairs(&kids, &kids, 0.3).len();
        assert_eq!(num(&frame.values["pairs"]) as usize, want, "frame {f}");
        // No count crossed to the CPU before the final readback: a cook waited on the device
        // only at that readback (frame 0 also measured its input count once, to record).
        let expect_waits = if f == 0 { 2 } else { 1 };
        assert_eq!(
            frame.waited.len(),
            expect_waits,
            "frame {f}: {:?}",
            frame.waited
        );
        assert!(frame.waited.last().unwrap().starts_with("readback"));
        assert_eq!(frame.recorded, f == 0 || f == 3, "frame {f}");
    }
}

fn call(
    h: &Host,
    f: &str,
    ceiling_ms: f64,
    returns: &[&str],
) -> Result<Vec<mlua::Value>, ProcgenError> {
    let lua = h.lua();
    let t = lua.create_table().unwrap();
    t.set("fn", lua.globals().get::<mlua::Function>(f).unwrap())
        .unwrap();
    t.set("ceilingMs", ceiling_ms).unwrap();
    t.set(
        "returns",
        lua.create_sequence_from(returns.iter().copied()).unwrap(),
    )
    .unwrap();
    h.call(&t)
}

const FUNCTIONS: &str = r#"
function busy()
    local x = 0
    while true do x += 1 end
end
function sleepy()
    task.wait(0.3)
    return 1
end
-- Spins for `ms` of this thread's CPU time (wall time would stretch on a busy machine, where
-- waiting for a core is not charged).
function spins(ms)
    local t0 = cpu_clock()
    while cpu_clock() - t0 < ms / 1000 do end
end
function waits_for_busy_task()
    local done = false
    task.spawn(function() task.wait(0); spins(400); done = true end)
    while not done do task.wait(0.01) end
    return 1
end
function leaves_busy_task()
    task.defer(function() spins(400) end)
    return 1
end
function co_busy()
    local co = coroutine.create(function() spins(400) end)
    coroutine.resume(co)
    return 1
end
function wrong() return "text" end
function two() return 1, 2 end
"#;

#[test]
fn the_ceiling_counts_cpu_time_across_coroutines_and_tasks_but_not_waits() {
    let (_ctx, h) = host();
    h.load("functions.luau", FUNCTIONS).unwrap();
    let t0 = Instant::now();
    let e = call(&h, "busy", 100.0, &[]).unwrap_err();
    assert!(
        matches!(e, ProcgenError::Ceiling { ceiling_ms: 100, used_ms, .. } if (100..2000).contains(&used_ms)),
        "{e}"
    );
    assert!(
        t0.elapsed().as_secs_f64() < 10.0,
        "refused near the ceiling"
    );
    // A wait is not charged: 300 ms asleep under a 100 ms ceiling.
    let t0 = Instant::now();
    let v = call(&h, "sleepy", 100.0, &["Number"]).unwrap();
    assert!(t0.elapsed().as_secs_f64() >= 0.29);
    assert_eq!(v.len(), 1);
    // A task it starts and waits for is charged to it, as is a coroutine it resumes.
    let e = call(&h, "waits_for_busy_task", 150.0, &["Number"]).unwrap_err();
    assert!(matches!(e, ProcgenError::Ceiling { .. }), "{e}");
    let e = call(&h, "co_busy", 150.0, &["Number"]).unwrap_err();
    assert!(matches!(e, ProcgenError::Ceiling { .. }), "{e}");
    // A task it leaves running is not charged to it.
    call(&h, "leaves_busy_task", 150.0, &["Number"]).unwrap();
    // Declared return types: a wrong type and an extra result are refused by position.
    let e = call(&h, "wrong", 0.0, &["Number"]).unwrap_err();
    assert!(
        matches!(e, ProcgenError::ReturnType { index: 1, ref expected, ref got, .. } if expected == "Number" && got == "String"),
        "{e}"
    );
    let e = call(&h, "two", 0.0, &["Number"]).unwrap_err();
    assert!(
        matches!(e, ProcgenError::ReturnType { index: 2, .. }),
        "{e}"
    );
    call(&h, "two", 0.0, &["Number", "Number"]).unwrap();
}

#[test]
fn pure_calls_fold_digests_re_cook_and_columns_arrive_as_buffer_refs() {
    let script = r#"
calls = 0
version = 0
function expensive(x) calls += 1; return x * 2 end
function scene() return version end
function inputs(frame)
    if frame == 2 then version = 1 end
    return {}
end
function cook(frame)
    local doubled = cpu.call({ fn = expensive, args = { 21 }, returns = { "Number" }, pure = true })[1]
    local seen = cpu.read({ fn = scene, returns = { "Number" }, digest = scene })[1]
    local col = transfer.upload({ values = { xs = { type = "Int", values = { 1, 2, 3 } } } }).xs
    local ref = cpu.call({
        fn = function(b) return b.type, b.count, b.lanes, b.element end,
        args = { col },
        returns = { "String", "Number", "Number", "String" },
    })
    return transfer.readback({ columns = {
        doubled = doubled, seen = seen, calls = calls,
        ref = { type = ref[1], count = ref[2], lanes = ref[3], element = ref[4] },
        xs = col,
    } })
end
"#;
    let report = play(script, 4).unwrap();
    // Frames 0 and 2 record (the digest moved before frame 2); the pure call ran once.
    assert_eq!(report.counts.recordings, 2);
    assert_eq!(report.digest_recooks, 1);
    assert_eq!(report.folded_calls, 1);
    let last = &report.frames[3].values;
    assert_eq!(num(&last["doubled"]), 42.0);
    assert_eq!(num(&last["seen"]), 1.0);
    assert_eq!(num(&last["calls"]), 1.0);
    assert_eq!(last["xs"], ReadValue::Numbers(vec![1.0, 2.0, 3.0]));
    let ReadValue::Table(r) = &last["ref"] else {
        panic!()
    };
    assert_eq!(r["type"], ReadValue::Text("Int".into()));
    assert_eq!(num(&r["count"]), 3.0);
    assert_eq!(num(&r["lanes"]), 1.0);
    assert_eq!(r["element"], ReadValue::Text("i32".into()));
    assert!(report.frames[2].recorded && !report.frames[1].recorded);
}

#[test]
fn luau_refusals_keep_their_typed_errors() {
    let bare = r#"
function cook(frame)
    local out = device.kernel({ kernel = "procgen/gather", domain = 1 })
    return transfer.readback({ columns = { x = out.dst } })
end
"#;
    let e = play(bare, 1).unwrap_err();
    assert!(
        matches!(e, ProcgenError::BareKernelName { ref name } if name == "procgen/gather"),
        "{e}"
    );
    let name = r#"
function cook(frame)
    asset.resolve("gather", "computeShader")
    return transfer.readback({ columns = {} })
end
"#;
    let e = play(name, 1).unwrap_err();
    assert!(matches!(e, ProcgenError::NotAnIdentity { .. }), "{e}");
    let uniform = r#"
function cook(frame)
    local src = transfer.upload({ values = { s = { 1, 2 }, i = { type = "Int", values = { 1, 0 } } } })
    device.kernel({ kernel = asset.resolve("procgen/gather", "computeShader"), domain = 2,
        bind = { src = src.s, index = src.i }, uniforms = { speed = 2 } })
    return transfer.readback({ columns = {} })
end
"#;
    let e = play(uniform, 1).unwrap_err();
    assert!(
        matches!(e, ProcgenError::UnknownUniform { ref name, .. } if name == "speed"),
        "{e}"
    );
    let flags = r#"
function cook(frame)
    transfer.upload({ values = { names = { true, false } } })
    return transfer.readback({ columns = {} })
end
"#;
    let e = play(flags, 1).unwrap_err();
    assert!(e.to_string().contains("names"), "{e}");
    let mixed = r#"
function cook(frame)
    transfer.upload({ values = { names = { type = "String", values = { "a", 2 } } } })
    return transfer.readback({ columns = {} })
end
"#;
    let e = play(mixed, 1).unwrap_err();
    assert!(
        e.to_string().contains("names") && e.to_string().contains("item 2"),
        "{e}"
    );
    let e = play("x = 1", 1).unwrap_err();
    assert!(e.to_string().contains("cook"), "{e}");
}

#[test]
fn shrinking_count_arithmetic_is_a_planning_wait_in_the_play_report() {
    // kept.count - 1 as a domain: read back where the scan needs it, every cook; the count
    // grows with the frame, so frame 2 plans again.
    let source = r#"
function inputs(frame)
    local k = { 1, 0, 1, 1, 0, 1, 0, 0 }
    if frame >= 2 then k = { 1, 1, 1, 1, 1, 1, 0, 1 } end
    return { keep = { type = "UInt", values = k } }
end
function cook(frame, input)
    local kept = device.kernel({ name = "kept", kernel = asset.resolve("procgen/compact", "computeShader"),
        domain = 8, bind = { keep = input.keep } })
    local ones = transfer.upload({ values = { o = { type = "Int", values = { 1, 1, 1, 1, 1, 1, 1, 1 } } } }).o
    local scanned = device.kernel({ kernel = asset.resolve("procgen/scan", "computeShader"),
        domain = count.max(kept.indices_count - 1, 0), bind = { src = ones } })
    local grown = device.kernel({ kernel = asset.resolve("procgen/scan", "computeShader"),
        domain = count.min(kept.indices_count * 2, 5), bind = { src = ones } })
    return transfer.readback({ columns = { trimmed = scanned.total, grown = grown.total } })
end
"#;
    let report = play(source, 3).unwrap();
    let kept = [4usize, 4, 7];
    for (f, frame) in report.frames.iter().enumerate() {
        let want = (kept[f] - 1) as f64;
        assert_eq!(frame.values["trimmed"], ReadValue::Numbers(vec![want]));
        let grown = (kept[f] * 2).min(5) as f64;
        assert_eq!(frame.values["grown"], ReadValue::Numbers(vec![grown]));
        let wait = format!(
            "planning wait: `(kept.indices_count - 1)` read back = {} for the domain of procgen/scan#",
            kept[f] - 1
        );
        assert!(
            frame.waited.iter().any(|w| w.contains(&wait)),
            "frame {f}: {:?}",
            frame.waited
        );
        // One read per run (frame 2's first run read the moved number and stopped), nothing
        // for the growing domain, then the readback.
        let reads = frame
            .waited
            .iter()
            .filter(|w| w.contains("planning wait"))
            .count();
        assert_eq!(reads, if f == 2 { 2 } else { 1 }, "{:?}", frame.waited);
        assert!(frame.waited.last().unwrap().starts_with("readback"));
    }
    let c = &report.counts;
    assert_eq!((c.recordings, c.replans, c.plan_waits), (2, 1, 4), "{c:?}");
}

#[test]
fn the_sprout_tail_example_reads_its_shrinking_count_back_every_cook() {
    let source = include_str!("../examples/graph/sprout_tail.luau");
    let report = play(source, 4).unwrap();
    let sizes = [400u32, 400, 900, 900];
    for (f, frame) in report.frames.iter().enumerate() {
        let survivors = (0..sizes[f])
            .map(|i| cpu::scatter_point(i, 11, 8.0, true))
            .filter(|p| cpu::keep(*p, 12.0) == 1)
            .count();
        let tail = survivors.saturating_sub(3);
        assert_eq!(
            num(&frame.values["survivors"]) as usize,
            survivors,
            "frame {f}"
        );
        assert_eq!(
            num(&frame.values["children"]) as usize,
            tail * 3,
            "frame {f}"
        );
        let wait = format!(
            "planning wait: `(kept.indices_count - 3)` read back = {tail} for the domain of sprouts#"
        );
        assert!(
            frame.waited.iter().any(|w| w.starts_with(&wait)),
            "frame {f}: {:?}",
            frame.waited
        );
        assert_eq!(frame.recorded, f == 0 || f == 2, "frame {f}");
    }
    let c = &report.counts;
    assert_eq!(
        (c.recordings, c.replays, c.replans, c.plan_waits, c.guarded),
        (2, 5, 1, 5, 0),
        "{c:?}"
    );
}
