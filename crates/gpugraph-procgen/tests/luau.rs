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

/// No op calls another op: an op called from a function an op runs (cpu.call's fn, a cpu.read
/// digest, a guard's detail) is refused naming both, and the ops work again after the call.
#[test]
fn an_op_called_inside_another_op_is_refused_naming_both() {
    let cases = [
        (
            "cpu.call(fn → device.kernel)",
            "local function f() device.kernel({ kernel = asset.resolve(\"procgen/gather\", \"computeShader\"), domain = 1 }) end
             cpu.call({ fn = f })",
            ("device.kernel", "cpu.call"),
        ),
        (
            "cpu.call(fn → transfer.upload)",
            "cpu.call({ fn = function() transfer.upload({ values = { a = 1 } }) end })",
            ("transfer.upload", "cpu.call"),
        ),
        (
            "cpu.call(fn → cpu.call)",
            "cpu.call({ fn = function() cpu.call({ fn = function() end }) end })",
            ("cpu.call", "cpu.call"),
        ),
        (
            "cpu.read(digest → device.bound)",
            "cpu.read({ fn = function() return 1 end, returns = { \"Number\" },
                        digest = function() device.bound({ value = 3 }) return 1 end })",
            ("device.bound", "cpu.read"),
        ),
        (
            "device.guard(detail → transfer.readback)",
            "device.guard({ value = 1, flag = 1, why = \"x\",
                            detail = function() transfer.readback({ columns = {} }) return \"d\" end })",
            ("transfer.readback", "device.guard"),
        ),
    ];
    for (what, body, (op, inside)) in cases {
        let source = format!(
            "function cook(frame)\n{body}\nreturn transfer.readback({{ columns = {{ one = 1 }} }})\nend\n"
        );
        match play(&source, 1) {
            Err(ProcgenError::OpInOp { op: o, inside: i }) => {
                assert_eq!((o, i), (op, inside), "{what}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // A call that calls no op leaves the ops usable after it.
    let ok = play(
        "function cook(frame)
           local v = cpu.call({ fn = function() return 2 end, returns = { \"Number\" } })
           local up = transfer.upload({ values = { a = v[1] } })
           return transfer.readback({ columns = { a = up.a } })
         end",
        1,
    )
    .unwrap();
    assert_eq!(ok.frames[0].values["a"], ReadValue::Numbers(vec![2.0]));
}

/// A Handle in cpu.call's results is released when the result is: the result stands as long as
/// the recording that made the call, so its Handle is released when that recording is let go
/// (here a re-record when the inputs change shape, then the end of play), never before, once.
#[test]
fn a_handle_result_is_released_with_its_result() {
    let source = "
        released = {}
        seen = {}
        local made = 0
        local function open()
            made += 1
            local id = made
            return handle.new(function() table.insert(released, id) end)
        end
        local SIZES = { 1, 1, 2, 2 }
        function inputs(frame)
            seen[frame + 1] = #released
            local v = {}
            for i = 1, SIZES[frame + 1] do v[i] = i end
            return { a = v }
        end
        function cook(frame, input)
            local h = cpu.call({ fn = open, returns = { \"Handle\" } })[1]
            assert(not h.released)
            return transfer.readback({ columns = { a = input.a } })
        end";
    let (_ctx, h) = host();
    h.load("handles.luau", source).unwrap();
    let report = h.play(4).unwrap();
    assert_eq!(report.counts.recordings, 2);
    let lua = h.lua();
    let seen: Vec<i64> = lua
        .globals()
        .get::<mlua::Table>("seen")
        .unwrap()
        .sequence_values()
        .map(|v| v.unwrap())
        .collect();
    // Before frames 0 and 1 nothing was released; the frame-2 inputs change shape, so the
    // first recording (and its Handle) goes during frame 2's cook.
    assert_eq!(seen, [0, 0, 0, 1]);
    let released: Vec<i64> = lua
        .globals()
        .get::<mlua::Table>("released")
        .unwrap()
        .sequence_values()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(
        released,
        [1, 2],
        "each once, in order; the last at the end of play"
    );
    // A Handle is released once, however often release is asked.
    h.load(
        "again.luau",
        "count = 0
         local x = handle.new(function() count += 1 end)
         x:release() x:release()
         assert(x.released)",
    )
    .unwrap();
    assert_eq!(lua.globals().get::<i64>("count").unwrap(), 1);
    // A release that fails is a typed error naming it.
    let (_ctx, h) = host();
    h.load(
        "fails.luau",
        "function cook(frame)
           cpu.call({ fn = function() return handle.new(function() error(\"stuck\") end) end,
                      returns = { \"Handle\" } })
           return transfer.readback({ columns = { one = 1 } })
         end",
    )
    .unwrap();
    match h.play(1) {
        Err(ProcgenError::Release { message }) => assert!(message.contains("stuck"), "{message}"),
        other => panic!("{other:?}"),
    }
}

/// `abi.directLimit(kernel, specialize)` in Luau answers the variant's direct-column room:
/// gather binds 3 storage buffers plain (room 5) and 4 with COUNT=device (room 4).
#[test]
fn abi_direct_limit_answers_the_variants_room() {
    let source = "
        local k = asset.resolve(\"procgen/gather\", \"computeShader\")
        plain = abi.directLimit(k, { COUNT = \"plain\" })
        device = abi.directLimit(k, { COUNT = \"device\" })
        default = abi.directLimit(k)";
    let (_ctx, h) = host();
    h.load("abi.luau", source).unwrap();
    let g = h.lua().globals();
    let get = |k: &str| g.get::<i64>(k).unwrap();
    assert_eq!((get("plain"), get("device"), get("default")), (5, 4, 5));
    let err = h
        .load("bad.luau", "abi.directLimit(asset.resolve(\"procgen/gather\", \"computeShader\"), { COUNT = \"gpu\" })")
        .unwrap_err();
    assert!(
        matches!(err, ProcgenError::SpecializeOption { .. }),
        "{err:?}"
    );
}
