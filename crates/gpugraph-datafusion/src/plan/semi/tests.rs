//! Semi and anti joins' key sets on the device against the CPU oracle
//! ([`Membership::mask`]): the device's key map equals the host's build word for word, and
//! the membership predicate, lowered as the planner lowers it, keeps exactly the oracle's
//! rows, for random keys with repeats and NULLs on either side, empty sides, all and no
//! matches, and sizes around the 256-thread workgroups.

use std::sync::Arc;

use datafusion::arrow::array::Int64Array;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_expr::expressions::col;
use datafusion::physical_plan::empty::EmptyExec;
use gpugraph_command::GpuContext;
use rand::{Rng, SeedableRng};

use crate::convert::{Chunk, Part};
use crate::ir::{Ir, Lowering};
use crate::kernel::{self, keymap::lookup_buffer};
use crate::lookup::{place, LookupPlan, LookupTable, Membership};
use crate::pages::tests::{gpu, read_back};
use crate::program::{sum96, Layout, Op, Program, NO_ROW};

const KINDS: [Membership; 3] = [Membership::Semi, Membership::Anti, Membership::NotIn];

/// The key set of `keys` (None: NULL) for a `kind` join, from three unevenly split batches.
fn set_table(kind: Membership, keys: &[Option<i64>]) -> LookupTable {
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int64Array::from(keys.to_vec()))],
    )
    .expect("batch");
    let third = keys.len() / 3;
    let cuts = [0, third, (third + 1).min(keys.len()), keys.len()];
    let batches: Vec<RecordBatch> = cuts
        .windows(2)
        .map(|w| batch.slice(w[0], w[1] - w[0]))
        .collect();
    LookupPlan {
        input: Arc::new(EmptyExec::new(Arc::clone(&schema))),
        key: col("k", &schema).expect("k"),
        columns: Vec::new(),
        groups: Vec::new(),
        outer: false,
        set: Some(kind),
    }
    .build(&batches)
    .expect("a key set builds, repeated keys and all")
}

/// The rows the GPU keeps: `kind`'s predicate over probe key slot 0 (as `plan/semi.rs`
/// plans it), then one group per row (slot 1 holds the row's index) counting it. Also
/// checks the device's key map against the host's.
fn gpu_mask(
    ctx: &GpuContext,
    kind: Membership,
    table: &LookupTable,
    probe: &[Option<i64>],
) -> Vec<bool> {
    let mut tables = vec![table.clone()];
    place(&mut tables);
    let expected = tables[0]
        .words()
        .expect("a key set has no repeats to refuse");
    let buffer = lookup_buffer(ctx, &tables)
        .expect("runs")
        .expect("a key set's repeated keys are no error");
    assert_eq!(
        read_back(ctx, &buffer, expected.len()),
        expected,
        "the device's key map"
    );
    let shapes = [tables[0].shape.clone()];
    let key = Box::new(Ir::Column(0));
    let predicate = match kind {
        Membership::Semi => Ir::Matched(0, key),
        Membership::Anti => Ir::Not(Box::new(Ir::Matched(0, key))),
        Membership::NotIn => Ir::NotIn(0, key),
    };
    let slot = |c: usize| c as u32;
    let code = |_: usize, _: Option<&str>| None;
    let lowering = Lowering {
        slot: &slot,
        code: &code,
        lookup: &shapes,
        maps: &[],
    };
    let mut layout = Layout::default();
    let count = layout.sum();
    let mut ops = Vec::new();
    predicate.lower(&lowering, &mut ops);
    ops.extend([Op::Filter, Op::Load(1), Op::Group, Op::Const(1)]);
    ops.push(Op::Count(count));
    let program = Program {
        ops,
        kinds: layout.into_kinds(),
    };
    program.check().expect("well-formed");
    let rows = probe.len();
    let mut keys: Vec<u32> = probe.iter().map(|k| k.unwrap_or(0) as i32 as u32).collect();
    let nulls = probe.iter().any(Option::is_none);
    if nulls {
        let mut valid = vec![0u32; rows.div_ceil(32)];
        for (r, k) in probe.iter().enumerate() {
            if k.is_some() {
                valid[r / 32] |= 1 << (r % 32);
            }
        }
        keys.extend(valid);
    }
    let chunk = Chunk {
        rows,
        columns: vec![
            vec![Part::Words(keys)],
            vec![Part::Words((0..rows as u32).collect())],
        ],
        has_valid: u32::from(nulls),
        bounds: vec![None, None],
    };
    let uploaded = kernel::upload(ctx, &chunk).expect("upload");
    let (acc, _) =
        kernel::run(ctx, &program, rows.max(1), &[uploaded], Some(&buffer)).expect("runs");
    buffer.destroy();
    (0..rows)
        .map(|r| match sum96(&acc, r * 3) {
            0 => false,
            1 => true,
            n => panic!("row {r} counted {n} times"),
        })
        .collect()
}

/// `n` keys from `lo..hi`, each NULL with probability `nulls`.
fn keys(rng: &mut impl Rng, n: usize, lo: i64, hi: i64, nulls: f64) -> Vec<Option<i64>> {
    (0..n)
        .map(|_| (!rng.random_bool(nulls)).then(|| rng.random_range(lo..hi)))
        .collect()
}

#[test]
fn the_oracle_follows_sql() {
    let set = [Some(1), Some(2), Some(2)];
    let probe = [Some(2), Some(3), None];
    assert_eq!(Membership::Semi.mask(&probe, &set), [true, false, false]);
    assert_eq!(Membership::Anti.mask(&probe, &set), [false, true, true]);
    assert_eq!(Membership::NotIn.mask(&probe, &set), [false, true, false]);
    // NOT IN a set holding NULL: no row; NOT IN an empty set: every row, NULL's too.
    let with_null = [Some(1), None];
    assert_eq!(Membership::NotIn.mask(&probe, &with_null), [false; 3]);
    assert_eq!(Membership::NotIn.mask(&probe, &[]), [true; 3]);
    assert_eq!(Membership::NotIn.mask(&probe, &[None]), [false; 3]);
    assert_eq!(Membership::Anti.mask(&probe, &[]), [true; 3]);
    assert_eq!(Membership::Semi.mask(&probe, &[]), [false; 3]);
}

/// Random probe and set keys (the set from a narrower range, so every key repeats) at sizes
/// around the workgroups, NULLs on each side, empty sides.
#[test]
fn device_membership_matches_the_oracle_on_random_keys() {
    let ctx = gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(49);
    let cases = [
        (0, 0),
        (0, 100),
        (100, 0),
        (1, 1),
        (255, 257),
        (256, 256),
        (257, 255),
        (5_003, 4_099),
        (70_001, 20_000),
    ];
    for (i, &(probe_rows, set_rows)) in cases.iter().enumerate() {
        for kind in KINDS {
            for set_nulls in [0.0, 0.01] {
                let probe = keys(&mut rng, probe_rows, -300, 3_000, 0.05);
                let mut set = keys(&mut rng, set_rows, -100, 1_000, set_nulls);
                if set_nulls > 0.0 && set_rows > 0 {
                    // At least one NULL, so NOT IN keeps nothing.
                    set[i % set_rows] = None;
                }
                let table = set_table(kind, &set);
                let got = gpu_mask(&ctx, kind, &table, &probe);
                let want = kind.mask(&probe, &set);
                assert_eq!(
                    got, want,
                    "{kind}: {probe_rows} probe rows, {set_rows} set rows, nulls {set_nulls}"
                );
            }
        }
    }
}

/// Every probe key in the set, then none: the masks are all kept or all dropped.
#[test]
fn all_and_no_matches() {
    let ctx = gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(50);
    let set: Vec<Option<i64>> = (0..1_000).map(|k| Some(k % 300 * 7)).collect();
    let inside: Vec<Option<i64>> = (0..2_049)
        .map(|_| Some(rng.random_range(0..300) * 7))
        .collect();
    // Between the set's keys and past both ends of its map.
    let outside: Vec<Option<i64>> = (0..2_049)
        .map(|r| Some([-1_000, 1, 2_094, 9_999][r % 4]))
        .collect();
    for kind in KINDS {
        let table = set_table(kind, &set);
        for (probe, member) in [(&inside, true), (&outside, false)] {
            let got = gpu_mask(&ctx, kind, &table, probe);
            assert_eq!(got, kind.mask(probe, &set), "{kind}");
            let kept = member == (kind == Membership::Semi);
            assert!(got.iter().all(|&k| k == kept), "{kind}: member {member}");
        }
    }
}

/// A key set with repeated keys marks each present key once; a many-to-one lookup of the
/// same keys is refused, so the repeat tolerance is the set's alone.
#[test]
fn repeated_keys_mark_the_set_and_refuse_a_lookup() {
    let keys = [Some(5), Some(5), None, Some(8), Some(5)];
    let set = set_table(Membership::Semi, &keys);
    assert_eq!(set.words().expect("a set"), [0, NO_ROW, NO_ROW, 0]);
    assert!(set.shape.null_keys && !set.shape.empty);
    let mut lookup = set.clone();
    lookup.set = false;
    let why = lookup.words().unwrap_err();
    assert!(why.contains("repeats the value 5"), "{why}");
    let ctx = gpu();
    let refused = lookup_buffer(&ctx, std::slice::from_ref(&lookup))
        .expect("runs")
        .unwrap_err();
    assert_eq!(refused, why);
}
