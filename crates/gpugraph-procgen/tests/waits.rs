//! Planning waits: arithmetic that takes a count away is read back where the dispatch needs the
//! number. The recording is split there (what comes before is submitted, the word is read, the
//! plan goes on with the number), every replay reads it again, a number that moved plans the
//! cook again, and growing arithmetic makes no wait.

mod common;

use common::*;
use gpugraph_procgen::{
    cpu, BindValue, Column, Cook, CountExpr, Domain, KernelCall, KernelOutputs, Player,
};

/// Keep words per frame: 8 kept (frames 0, 1), 12 kept (2, 3), none (4).
fn keep_words(frame: u64) -> Vec<u32> {
    (0..20u32)
        .map(|i| match frame {
            0 | 1 => u32::from(i % 5 < 2),
            2 | 3 => u32::from(i % 5 < 3),
            _ => 0,
        })
        .collect()
}

const SRC: [f32; 30] = {
    let mut s = [0.0f32; 30];
    let mut i = 0;
    while i < 30 {
        s[i] = i as f32 * 1.5 - 7.0;
        i += 1;
    }
    s
};

fn index() -> Vec<i32> {
    (0..20).map(|i| (i * 7 % 33) - 2).collect()
}

fn values() -> Vec<i32> {
    (0..20).map(|i| i * 3 - 11).collect()
}

struct Out {
    keep: Column,
    trimmed: KernelOutputs,
    rest: KernelOutputs,
    grown: KernelOutputs,
}

fn build(cook: &mut Cook, frame: u64) -> gpugraph_procgen::Result<Out> {
    let keep = upload_u32(cook, &keep_words(frame));
    let src = upload_f32(cook, &SRC);
    let idx = upload_i32(cook, &index());
    let vals = upload_i32(cook, &values());
    let kept = cook.kernel(
        &kernel("procgen/compact"),
        Domain::Number(20),
        &KernelCall {
            bind: [("keep".to_string(), BindValue::Column(keep.clone()))].into(),
            ..Default::default()
        },
    )?;
    let kept_count = CountExpr::Named(
        "kept.indices_count".into(),
        Box::new(CountExpr::Count(kept.counts["indices"].clone())),
    );
    let gather = KernelCall {
        bind: [
            ("src".to_string(), BindValue::Column(src)),
            ("index".to_string(), BindValue::Column(idx)),
        ]
        .into(),
        ..Default::default()
    };
    // max(kept.count - 3, 0): shrinking, read back for the gather's domain.
    let trimmed = cook.kernel(
        &kernel("procgen/gather"),
        Domain::Count(CountExpr::Max(
            Box::new(CountExpr::Sub(
                Box::new(kept_count.clone()),
                Box::new(CountExpr::Number(3)),
            )),
            Box::new(CountExpr::Number(0)),
        )),
        &gather,
    )?;
    // kept.count - room: read back for the scan's domain.
    let room = CountExpr::Number(2);
    let rest = cook.kernel(
        &kernel("procgen/scan"),
        Domain::Count(CountExpr::Sub(Box::new(kept_count.clone()), Box::new(room))),
        &KernelCall {
            bind: [("src".to_string(), BindValue::Column(vals))].into(),
            ..Default::default()
        },
    )?;
    // min(kept.count, 9): growing, evaluated on the device, no wait.
    let grown = cook.kernel(
        &kernel("procgen/gather"),
        Domain::Count(CountExpr::Min(
            Box::new(kept_count),
            Box::new(CountExpr::Number(9)),
        )),
        &gather,
    )?;
    Ok(Out {
        keep,
        trimmed,
        rest,
        grown,
    })
}

#[test]
fn shrinking_counts_are_read_back_each_cook_and_a_moved_number_plans_again() {
    let ctx = ctx();
    let mut player: Player<Out> = Player::new(&ctx.device, &ctx.queue);
    let mut update = |queue: &gpugraph_command::wgpu::Queue,
                      out: &Out,
                      frame: u64|
     -> gpugraph_procgen::Result<bool> {
        gpugraph_procgen::transfer::rewrite(queue, &out.keep, &keep_words(frame));
        Ok(true)
    };
    let mut history = Vec::new();
    for frame in 0..5u64 {
        let waits_before = player.waits.len();
        player.cook(frame, &mut build, &mut update).unwrap();
        let out = player.outputs().unwrap();
        let rec = player.recording().unwrap();
        let kept = cpu::compact(&keep_words(frame), 20).len();
        let trim = kept.saturating_sub(3);
        let rest = kept.saturating_sub(2);
        // The shrinking domains ran as the numbers (plain variants, outputs of that size).
        assert_eq!(out.trimmed.variant, "COUNT=plain");
        assert_eq!(out.trimmed.columns["dst"].capacity, trim as u64);
        assert_eq!(
            floats(rec, &out.trimmed.columns["dst"]),
            cpu::gather(&SRC, &index(), trim, trim),
            "frame {frame}"
        );
        assert_eq!(out.rest.columns["dst"].capacity, rest as u64);
        let (scan, total) = cpu::scan(&values(), rest, rest);
        assert_eq!(ints(rec, &out.rest.columns["dst"]), scan, "frame {frame}");
        assert_eq!(ints(rec, &out.rest.columns["total"]), [total]);
        // The growing domain stayed on the device: its capacity is min(20, 9).
        assert_eq!(out.grown.variant, "COUNT=device");
        assert_eq!(out.grown.columns["dst"].capacity, 9);
        let g = kept.min(9);
        assert_eq!(
            floats(rec, &out.grown.columns["dst"]),
            cpu::gather(&SRC, &index(), g, 9),
            "frame {frame}"
        );
        // This frame's waits: the two reads, naming the expression and the node (a frame that
        // planned again also names the number that moved).
        let waits = &player.waits[waits_before..];
        let reads: Vec<&String> = waits
            .iter()
            .filter(|w| w.contains("planning wait"))
            .collect();
        let last_two = &reads[reads.len() - 2..];
        assert!(
            last_two[0].contains(&format!(
                "`(kept.indices_count - 3)` read back = {trim} for the domain of procgen/gather#"
            )),
            "{waits:?}"
        );
        assert!(
            last_two[1].contains(&format!(
                "`(kept.indices_count - 2)` read back = {rest} for the domain of procgen/scan#"
            )),
            "{waits:?}"
        );
        assert!(
            !waits.iter().any(|w| w.contains("min(")),
            "growing arithmetic makes no wait: {waits:?}"
        );
        let c = &player.counts;
        history.push((c.recordings, c.replays, c.replans, c.plan_waits));
    }
    // Frames 2 and 4 read another number at the first wait: the run stopped there (one wait)
    // and the cook was planned again (two more).
    assert_eq!(
        history,
        [
            (1, 1, 0, 2),
            (1, 2, 0, 4),
            (2, 4, 1, 7),
            (2, 5, 1, 9),
            (3, 7, 2, 12),
        ]
    );
}

#[test]
fn a_cook_of_growing_arithmetic_alone_holds_no_wait() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let keep = upload_u32(&mut c, &keep_words(0));
    let kept = c
        .kernel(
            &kernel("procgen/compact"),
            Domain::Number(20),
            &KernelCall {
                bind: [("keep".to_string(), BindValue::Column(keep))].into(),
                ..Default::default()
            },
        )
        .unwrap();
    let k = CountExpr::Count(kept.counts["indices"].clone());
    let src: Vec<i32> = (0..41).map(|i| i * 5 - 60).collect();
    let vals = upload_i32(&mut c, &src);
    let out = c
        .kernel(
            &kernel("procgen/scan"),
            Domain::Count(CountExpr::Add(
                Box::new(CountExpr::Mul(Box::new(k), Box::new(CountExpr::Number(2)))),
                Box::new(CountExpr::Number(1)),
            )),
            &KernelCall {
                bind: [("src".to_string(), BindValue::Column(vals))].into(),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(out.variant, "COUNT=device SEGMENTS=none");
    assert_eq!(c.plan_waits().count(), 0);
    assert!(c.waits.is_empty());
    let mut rec = c.finish().unwrap();
    let r = rec.run().unwrap();
    assert!(r.waits.is_empty() && r.replan.is_none());
    assert_eq!(rec.plan_waits().count(), 0);
    // 8 * 2 + 1 = 17 over a capacity of 20 * 2 + 1.
    assert_eq!(out.columns["dst"].capacity, 41);
    assert_eq!(count(&rec, out.columns["dst"].live.as_ref().unwrap()), 17);
    assert_eq!(ints(&rec, &out.columns["dst"]), cpu::scan(&src, 17, 41).0);
}
