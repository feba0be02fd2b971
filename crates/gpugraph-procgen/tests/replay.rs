//! Record/replay with device.bound and guards: a count with no stated capacity is measured once
//! (room = twice the count in powers of two), replays run it clamped to the room behind a guard
//! word, and the cook after a replay that ran past the guard records again with four times the
//! room; `counts().guarded` counts those replays. A stated capacity holds no guard.

mod common;

use common::*;
use gpugraph_procgen::bound::room_for;
use gpugraph_procgen::luau::values::UNSTATED;
use gpugraph_procgen::transfer::rewrite;
use gpugraph_procgen::{
    Bounded, Column, Cook, CountExpr, Domain, GuardFlag, KernelCall, LiveCount, Player,
    ProcgenError, Uniform,
};

struct Out {
    input: Column,
    bounded: LiveCount,
    points: Column,
}

fn input_count(frame: u64) -> u32 {
    [100, 200, 300, 300, 1000, 5000][frame as usize]
}

#[test]
fn a_growing_count_trips_the_guard_and_records_again_at_four_times_the_room() {
    assert_eq!((room_for(100), room_for(128), room_for(0)), (256, 256, 2));
    let ctx = ctx();
    let mut player: Player<Out> = Player::new(&ctx.device, &ctx.queue);
    let mut build = |cook: &mut Cook, frame: u64| -> gpugraph_procgen::Result<Out> {
        let input = cook.upload_count("n", input_count(frame));
        let raw = LiveCount {
            word: input.buffer.clone(),
            capacity: UNSTATED,
        };
        let Bounded::Live(bounded) = cook.bound("n", &CountExpr::Count(raw), None, false)? else {
            panic!("a device count stays live");
        };
        let call = KernelCall {
            uniforms: [
                ("seed".to_string(), Uniform::Number(7.0)),
                ("extent".to_string(), Uniform::Number(1.0)),
            ]
            .into(),
            ..Default::default()
        };
        let out = cook.kernel(
            &kernel("procgen/scatter_points"),
            Domain::Live(bounded.clone()),
            &call,
        )?;
        Ok(Out {
            input,
            bounded,
            points: out.columns["points"].clone(),
        })
    };
    let mut update = |queue: &gpugraph_command::wgpu::Queue,
                      out: &Out,
                      frame: u64|
     -> gpugraph_procgen::Result<bool> {
        rewrite(queue, &out.input, &[input_count(frame)]);
        Ok(true)
    };
    let mut seen = Vec::new();
    for frame in 0..6u64 {
        player.cook(frame, &mut build, &mut update).unwrap();
        let out = player.outputs().unwrap();
        let rec = player.recording().unwrap();
        let c = count(rec, &out.bounded);
        let room = out.bounded.capacity;
        // Every live point written; past the clamped count the inert (0, 0, 0).
        let pts = floats(rec, &out.points);
        assert_eq!(pts.len() as u64, room * 3);
        assert!(pts[c as usize * 3..].iter().all(|&x| x == 0.0));
        assert!(pts[..c as usize * 3]
            .iter()
            .all(|&x| (0.0..1.0).contains(&x)));
        seen.push((c, room, player.counts.recordings, player.counts.guarded));
    }
    assert_eq!(
        seen,
        [
            (100, 256, 1, 0),  // measured: room = 2 × 100 → 256
            (200, 256, 1, 0),  // replay within the room
            (256, 256, 1, 0),  // replay past the room: clamped, guard raised
            (300, 1024, 2, 1), // the guard read: recorded again at 4 × 256
            (1000, 1024, 2, 1),
            (1024, 1024, 2, 1), // 5000 ran past 1024 ...
        ]
    );
    assert_eq!(player.counts.replays, 6);
    assert_eq!(player.counts.measured, 1);
    // traffic().deferredReads: cooks 1..6 each read the guard word of the replay before it,
    // without a planning wait (the one wait is the first measure, below).
    assert_eq!(player.counts.deferred_reads, 5);
    assert_eq!(
        player.waits.len(),
        1,
        "one planning wait: the first measure"
    );
}

#[test]
fn stated_capacities_hold_no_guard_and_numbers_stay_numbers() {
    let ctx = ctx();
    let mut c = Cook::new(&ctx, "t");
    let w = c.upload_count("n", 5);
    let raw = LiveCount {
        word: w.buffer.clone(),
        capacity: UNSTATED,
    };
    assert_eq!(
        c.bound("a", &CountExpr::Count(raw.clone()), Some(64), false)
            .unwrap(),
        Bounded::Live(LiveCount {
            word: w.buffer.clone(),
            capacity: 64
        })
    );
    assert_eq!(
        c.bound("b", &CountExpr::Number(5), None, false).unwrap(),
        Bounded::Known(5)
    );
    // live = true writes the number to the device, room the next power of two.
    match c.bound("c", &CountExpr::Number(5), None, true).unwrap() {
        Bounded::Live(l) => assert_eq!(l.capacity, 8),
        other => panic!("{other:?}"),
    }
    // A guard over a known flag refuses now, naming why.
    let e = c
        .guard((), GuardFlag::Number(1), "not a solid")
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::Guard { ref why, flag: 1 } if why == "not a solid"),
        "{e}"
    );
    c.guard((), GuardFlag::Number(0), "fine").unwrap();
    let rec = run(c);
    assert!(
        rec.guards.is_empty(),
        "no guard words for stated capacities"
    );
}

#[test]
fn a_device_guard_flag_refuses_the_next_cook() {
    let ctx = ctx();
    let mut player: Player<Column> = Player::new(&ctx.device, &ctx.queue);
    let mut build = |cook: &mut Cook, _frame: u64| -> gpugraph_procgen::Result<Column> {
        let flag = cook.upload_count("flag", 0);
        cook.guard(
            flag.clone(),
            GuardFlag::Column(flag.clone()),
            "input is no longer a solid",
        )
    };
    let mut set = 0u32;
    let mut update = |queue: &gpugraph_command::wgpu::Queue,
                      flag: &Column,
                      _f: u64|
     -> gpugraph_procgen::Result<bool> {
        rewrite(queue, flag, &[set]);
        set = 1;
        Ok(true)
    };
    player.cook(0, &mut build, &mut update).unwrap();
    player.cook(1, &mut build, &mut update).unwrap(); // writes 0, replays
    player.cook(2, &mut build, &mut update).unwrap(); // writes 1, replays: past the guard
    let e = player.cook(3, &mut build, &mut update).err().unwrap();
    assert!(
        matches!(e, ProcgenError::Guard { ref why, .. } if why == "input is no longer a solid"),
        "{e}"
    );
}

/// A recording over a live number (device.bound { value = n, live = true }) runs again for
/// every number inside its room — the number written into its count word, the kernel over it
/// covering exactly that many — and is recorded again for a number outside the room.
#[test]
fn a_recording_over_a_live_number_replays_inside_its_room_and_records_again_outside() {
    let ctx = ctx();
    let mut player: Player<(LiveCount, Column)> = Player::new(&ctx.device, &ctx.queue);
    let numbers = [100u64, 128, 3, 128, 129, 256, 200, 0];
    let n = std::cell::Cell::new(numbers[0]);
    let mut build = |cook: &mut Cook, _frame: u64| -> gpugraph_procgen::Result<_> {
        let Bounded::Live(l) = cook.bound("n", &CountExpr::Number(n.get()), None, true)? else {
            panic!("a live number is a live count");
        };
        let call = KernelCall {
            uniforms: [
                ("seed".to_string(), Uniform::Number(3.0)),
                ("extent".to_string(), Uniform::Number(1.0)),
            ]
            .into(),
            ..Default::default()
        };
        let out = cook.kernel(
            &kernel("procgen/scatter_points"),
            Domain::Live(l.clone()),
            &call,
        )?;
        Ok((l, out.columns["points"].clone()))
    };
    let mut update = |_: &gpugraph_command::wgpu::Queue,
                      _: &(LiveCount, Column),
                      _: u64|
     -> gpugraph_procgen::Result<bool> { Ok(true) };
    let mut log = Vec::new();
    for (frame, &v) in numbers.iter().enumerate() {
        n.set(v);
        player.set_number("n", v);
        let recordings = player.counts.recordings;
        player.cook(frame as u64, &mut build, &mut update).unwrap();
        let (l, points) = player.outputs().unwrap().clone();
        let rec = player.recording().unwrap();
        assert_eq!(
            u64::from(count(rec, &l)),
            v,
            "frame {frame}: the word holds the number"
        );
        let pts = floats(rec, &points);
        let live = v as usize * 3;
        assert!(pts[..live].iter().any(|&x| x != 0.0) || v == 0);
        assert!(
            pts[live..].iter().all(|&x| x == 0.0),
            "frame {frame}: past {v}"
        );
        log.push((player.counts.recordings > recordings, l.capacity));
    }
    // 100 → room 128: 128, 3 and 128 replay; 129 records (room 256); 256, 200 and 0 replay.
    assert_eq!(
        log,
        [
            (true, 128),
            (false, 128),
            (false, 128),
            (false, 128),
            (true, 256),
            (false, 256),
            (false, 256),
            (false, 256),
        ]
    );
    assert_eq!(player.counts.recordings, 2);
    assert_eq!(player.counts.renumbered, 6, "{:?}", player.counts);
}
