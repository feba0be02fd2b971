use rand::{Rng, SeedableRng};

use super::*;
use crate::convert::Part;
use crate::program::{run_cpu, ColumnWords, Layout, LookupShape, Op, Program, NO_ROW};

use gpugraph_testing::ctx as gpu;

#[test]
fn wgsl_validates_and_params_match_the_struct() {
    let wgsl = shader(&program(3), 0b10).build();
    let module = naga::front::wgsl::parse_str(&wgsl).expect("the compiled shader parses");
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .expect("the compiled shader validates");
    let (_, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("Params"))
        .expect("struct Params");
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("Params is a struct");
    };
    assert_eq!(*span as usize, std::mem::size_of::<Params>());
    let offsets: Vec<(String, u32)> = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    assert_eq!(offsets[0], ("rows".into(), 0));
    assert_eq!(offsets[5], ("has_valid".into(), 20));
    assert_eq!(offsets[7], ("kinds".into(), 28));
    assert_eq!(offsets[8], ("copies".into(), 32));
    assert_eq!(offsets[9], ("copy_stride".into(), 36));
}

/// Columns of `rows` values with every 7th row null in column 1.
fn columns(rng: &mut impl Rng, rows: usize, extreme: bool) -> (Vec<Vec<u32>>, Vec<u32>) {
    let mut cols = Vec::new();
    for c in 0..3 {
        let values: Vec<u32> = (0..rows)
            .map(|r| {
                if extreme && r % 5 == 0 {
                    [i32::MIN, i32::MAX, -1, 0][r / 5 % 4] as u32
                } else if c == 2 {
                    rng.random_range(0..5u32) // a group code
                } else if c == 1 {
                    // Few distinct values, so comparisons are often equal (< and <= differ).
                    rng.random_range(-8..8i32) as u32
                } else {
                    rng.random_range(-1000..1000i32) as u32
                }
            })
            .collect();
        cols.push(values);
    }
    let mut valid = vec![0u32; rows.div_ceil(32)];
    for r in 0..rows {
        if r % 7 != 3 {
            valid[r / 32] |= 1 << (r % 32);
        }
    }
    (cols, valid)
}

/// Filter `c0 > -500 OR c1 IS NULL`, group by c2, then count, sum(c0 * c1 * K), min/max(c0),
/// sum(CASE WHEN c1 < 0 THEN -c0 ELSE c0 END).
fn program(big: i64) -> Program {
    let mut l = Layout::default();
    let rows = l.sum();
    let sum = l.sum();
    let min = l.extreme(false);
    let max = l.extreme(true);
    let case = l.sum();
    let ops = vec![
        Op::Load(0),
        Op::Const(-500),
        Op::Gt,
        Op::Load(1),
        Op::IsNull,
        Op::Or,
        Op::Filter,
        Op::Load(2),
        Op::Group,
        Op::Const(1),
        Op::Count(rows),
        Op::Load(0),
        Op::Load(1),
        Op::Mul,
        Op::Const(big),
        Op::Mul,
        Op::Sum(sum),
        Op::Load(0),
        Op::Min(min),
        Op::Load(0),
        Op::Max(max),
        Op::Load(0),
        Op::Load(0),
        Op::Neg,
        Op::Load(1),
        Op::Const(0),
        Op::Lt,
        Op::Select,
        Op::Sum(case),
    ];
    Program {
        ops,
        kinds: l.into_kinds(),
    }
}

/// Runs `program` over random columns in two chunks on the GPU and on the CPU oracle and
/// compares every accumulator word; `nulls`: column 1 has every 7th row null (else no slot
/// carries validity, and the compiled shader folds the null flags away); `lookup`: the
/// lookup buffer of a join program.
#[allow(clippy::too_many_arguments)] // one call per case reads better than a case struct
fn check(
    ctx: &GpuContext,
    program: &Program,
    groups: usize,
    rows: usize,
    extreme: bool,
    seed: u64,
    nulls: bool,
    lookup: Option<&[u32]>,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (cols, valid) = columns(&mut rng, rows, extreme);
    // Two chunks, so the accumulators carry across dispatches.
    let split = rows / 3;
    let mut gpu_chunks = Vec::new();
    let mut expected = program.initial_accumulators(groups);
    for (start, end) in [(0, split), (split, rows)] {
        let n = end - start;
        let mut chunk_valid = vec![0u32; n.div_ceil(32)];
        for r in 0..n {
            if valid[(start + r) / 32] >> ((start + r) % 32) & 1 == 1 {
                chunk_valid[r / 32] |= 1 << (r % 32);
            }
        }
        let slices: Vec<Vec<u32>> = cols.iter().map(|c| c[start..end].to_vec()).collect();
        let views: Vec<ColumnWords<'_>> = slices
            .iter()
            .enumerate()
            .map(|(i, v)| ColumnWords {
                values: v,
                valid: (nulls && i == 1).then_some(&chunk_valid[..]),
            })
            .collect();
        run_cpu(program, &views, lookup.unwrap_or(&[]), n, &mut expected);
        // Each slot's bounds, so the upload packs it as narrowly as it can: the codes in
        // 8 bits, column 1 in 8, column 0 (±1000) in 16, extreme columns in 32.
        let bounds = slices
            .iter()
            .map(|v| {
                let lo = v.iter().map(|&w| w as i32).min()?;
                let hi = v.iter().map(|&w| w as i32).max()?;
                Some((lo, hi))
            })
            .collect();
        let mut columns = slices.clone();
        if nulls {
            columns[1].extend(&chunk_valid);
        }
        let chunk = Chunk {
            rows: n,
            // Two parts per column, split unevenly, as merged batches arrive.
            columns: columns
                .into_iter()
                .map(|c| {
                    let (a, b) = c.split_at(c.len() / 3);
                    vec![Part::Words(a.to_vec()), Part::Words(b.to_vec())]
                })
                .collect(),
            has_valid: if nulls { 0b10 } else { 0 },
            bounds,
        };
        gpu_chunks.push(upload(ctx, &chunk).expect("upload"));
    }
    let buffer = lookup.map(|words| lookup_buffer(&ctx.device, words).expect("lookup buffer"));
    let (got, _) = run(ctx, program, groups, &gpu_chunks, buffer.as_ref()).expect("run");
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(
            g,
            e,
            "word {i} of {} (rows {rows}, groups {groups})",
            got.len()
        );
    }
}

#[test]
fn kernel_matches_the_oracle_with_nulls_private_and_global_accumulators() {
    let ctx = gpu();
    let p = program(3);
    for (rows, seed) in [(1, 1), (31, 2), (257, 3), (70_001, 4)] {
        // 5 groups fit workgroup memory; 2,000 groups (codes 0..5 used) do not.
        check(&ctx, &p, 5, rows, false, seed, true, None);
        check(&ctx, &p, 2000, rows, false, seed, true, None);
    }
    check(&ctx, &p, 5, 0, false, 5, true, None);
}

#[test]
fn kernel_matches_the_oracle_without_nulls() {
    let ctx = gpu();
    let p = program(3);
    for (rows, seed) in [(1, 11), (300, 12), (70_001, 13)] {
        check(&ctx, &p, 5, rows, false, seed, false, None);
        check(&ctx, &p, 2000, rows, false, seed, false, None);
    }
}

/// Group by c2, then COUNT(DISTINCT c1) (16 values, nulls included) and COUNT(DISTINCT c0)
/// over a bitmap one value narrower than c0's range, so value 999 would fall past it (the
/// kernel must skip it as the oracle does), and over an offset that a wrong bound makes
/// negative (c0 - (-990)).
fn distinct_program() -> Program {
    let mut l = Layout::default();
    let rows = l.sum();
    let small = l.bits(1);
    let wide = l.bits(2000 / 32 - 1);
    let low = l.bits(2);
    let ops = vec![
        Op::Load(2),
        Op::Group,
        Op::Const(1),
        Op::Count(rows),
        Op::Load(1),
        Op::Const(-8),
        Op::Sub,
        Op::Bits {
            word: small,
            words: 1,
        },
        Op::Load(0),
        Op::Const(-1000),
        Op::Sub,
        Op::Bits {
            word: wide,
            words: 2000 / 32 - 1,
        },
        Op::Load(0),
        Op::Const(-990),
        Op::Sub,
        Op::Bits {
            word: low,
            words: 2,
        },
    ];
    Program {
        ops,
        kinds: l.into_kinds(),
    }
}

#[test]
fn distinct_bitmaps_match_the_oracle_in_private_and_global_accumulators() {
    let ctx = gpu();
    let p = distinct_program();
    assert!(p.check().is_ok());
    for (rows, seed) in [(1, 21), (33, 22), (70_001, 23)] {
        // 5 groups of 66 words fit workgroup memory (with copies); 200 groups do not.
        check(&ctx, &p, 5, rows, false, seed, true, None);
        check(&ctx, &p, 200, rows, false, seed, false, None);
    }
    // A bitmap past the group's words is refused before it reaches the kernel.
    let mut bad = distinct_program();
    bad.kinds.truncate(bad.kinds.len() - 1);
    assert!(bad.check().is_err());
}

#[test]
fn sixty_four_and_ninety_six_bit_arithmetic_is_exact() {
    let ctx = gpu();
    // c0 * c1 reaches 2^62 with i32::MIN / i32::MAX inputs; × 2 keeps it within i64 only for
    // the products that are not both extreme, and the wrapping is identical on both sides;
    // sums of many ±2^62 terms carry into the third word.
    let p = program(2);
    check(&ctx, &p, 5, 100_000, true, 9, true, None);
    let p = program(-1);
    check(&ctx, &p, 5, 20_000, true, 10, false, None);
}

/// Pushes a random value expression over columns 0 and 1 (postfix): column words, constants
/// that fit i32 and constants that do not, NULL, arithmetic, negation, CASE and predicates
/// used as values, so the compiler's i32, bool and i64 forms meet in every combination.
fn random_value(rng: &mut impl Rng, depth: u32, ops: &mut Vec<Op>) {
    if depth == 0 || rng.random_bool(0.3) {
        ops.push(match rng.random_range(0..6) {
            0 | 1 => Op::Load(rng.random_range(0..2)),
            2 => Op::Const(
                [rng.random_range(-9..9), rng.random_range(-2000..2000)][rng.random_range(0..2)],
            ),
            3 => Op::Const(i32::MAX as i64 + rng.random_range(-2..3)),
            4 => Op::Const(rng.random_range(1i64 << 33..1 << 40) * [1, -1][rng.random_range(0..2)]),
            _ => Op::Null,
        });
        return;
    }
    match rng.random_range(0..6) {
        0..=2 => {
            random_value(rng, depth - 1, ops);
            random_value(rng, depth - 1, ops);
            ops.push([Op::Add, Op::Sub, Op::Mul][rng.random_range(0..3)]);
        }
        3 => {
            random_value(rng, depth - 1, ops);
            ops.push(Op::Neg);
        }
        4 => {
            random_value(rng, depth - 1, ops);
            random_value(rng, depth - 1, ops);
            random_predicate(rng, depth - 1, ops);
            ops.push(Op::Select);
        }
        _ => random_predicate(rng, depth - 1, ops),
    }
}

/// Pushes a random predicate: comparisons of values, AND / OR / NOT, IS [NOT] NULL, and CASE
/// between predicates.
fn random_predicate(rng: &mut impl Rng, depth: u32, ops: &mut Vec<Op>) {
    let compare = [Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge];
    if depth == 0 || rng.random_bool(0.3) {
        random_value(rng, depth.min(1), ops);
        random_value(rng, depth.min(1), ops);
        ops.push(compare[rng.random_range(0..compare.len())]);
        return;
    }
    match rng.random_range(0..6) {
        0 | 1 => {
            random_predicate(rng, depth - 1, ops);
            random_predicate(rng, depth - 1, ops);
            ops.push([Op::And, Op::Or][rng.random_range(0..2)]);
        }
        2 => {
            random_predicate(rng, depth - 1, ops);
            ops.push(Op::Not);
        }
        3 => {
            random_value(rng, depth - 1, ops);
            ops.push([Op::IsNull, Op::IsNotNull][rng.random_range(0..2)]);
        }
        4 => {
            random_predicate(rng, depth - 1, ops);
            random_predicate(rng, depth - 1, ops);
            random_predicate(rng, depth - 1, ops);
            ops.push(Op::Select);
        }
        _ => {
            random_value(rng, depth - 1, ops);
            random_value(rng, depth - 1, ops);
            ops.push(compare[rng.random_range(0..compare.len())]);
        }
    }
}

/// A random program: a random filter, group by column 2, sums of random values, a count and
/// a sum of random predicates, and the min / max of column 0.
fn random_program(rng: &mut impl Rng) -> Program {
    let mut l = Layout::default();
    let mut ops = Vec::new();
    random_predicate(rng, 3, &mut ops);
    ops.push(Op::Filter);
    ops.push(Op::Load(2));
    ops.push(Op::Group);
    for _ in 0..3 {
        let w = l.sum();
        random_value(rng, 3, &mut ops);
        ops.push(Op::Sum(w));
    }
    let w = l.sum();
    random_predicate(rng, 2, &mut ops);
    ops.push(Op::Count(w));
    let w = l.sum();
    random_predicate(rng, 2, &mut ops);
    ops.push(Op::Sum(w));
    let (min, max) = (l.extreme(false), l.extreme(true));
    ops.extend([Op::Load(0), Op::Min(min), Op::Load(0), Op::Max(max)]);
    Program {
        ops,
        kinds: l.into_kinds(),
    }
}

#[test]
fn random_programs_match_the_oracle() {
    let ctx = gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(19);
    for case in 0..32u64 {
        let p = random_program(&mut rng);
        p.check()
            .unwrap_or_else(|e| panic!("case {case}: {e}: {:?}", p.ops));
        let rows = [1, 257, 5_003][case as usize % 3];
        let nulls = case % 2 == 0;
        let extreme = case % 4 == 1;
        check(&ctx, &p, 5, rows, extreme, 100 + case, nulls, None);
    }
}

/// A lookup buffer (`LookupShape`) for keys -200..400 from word 37 (another side's words
/// before it, valid rows, so a probe that ignored the base would read wrong ones): about a
/// third without a row, two columns over 300 rows (the second with i32 extremes).
fn lookup(rng: &mut impl Rng) -> (Vec<u32>, LookupShape) {
    let (base, keys, rows) = (37u32, 600u32, 300u32);
    let mut words: Vec<u32> = (0..base + keys)
        .map(|w| {
            if w < base {
                return rng.random_range(0..rows);
            }
            if rng.random_range(0..3) == 0 {
                NO_ROW
            } else {
                rng.random_range(0..rows)
            }
        })
        .collect();
    let columns = vec![base + keys, base + keys + rows];
    words.extend((0..rows).map(|_| rng.random_range(-50..50i32) as u32));
    words.extend((0..rows).map(|r| [i32::MIN, i32::MAX, -7, 9][r as usize % 4] as u32));
    let shape = LookupShape {
        base,
        first_key: -200,
        keys,
        columns,
        ..LookupShape::default()
    };
    (words, shape)
}

/// Probe with key c0 − 3 (a miss below, inside and above the map): an inner join's filter,
/// then group by c2, sum(lookup a × c1), count, and min/max of lookup b; plus an unfiltered
/// variant where missing rows leave null sums.
fn join_program(shape: &LookupShape, inner: bool) -> Program {
    let mut l = Layout::default();
    let rows = l.sum();
    let sum = l.sum();
    let min = l.extreme(false);
    let max = l.extreme(true);
    let probe = |ops: &mut Vec<Op>| {
        ops.extend([
            Op::Load(0),
            Op::Const(3),
            Op::Sub,
            Op::Const(shape.first_key),
            Op::Sub,
            Op::Const(shape.keys as i64),
            Op::Const(shape.base as i64),
            Op::Probe,
        ])
    };
    let mut ops = Vec::new();
    if inner {
        probe(&mut ops);
        ops.extend([Op::IsNotNull, Op::Filter]);
    }
    ops.extend([Op::Load(2), Op::Group, Op::Const(1), Op::Count(rows)]);
    probe(&mut ops);
    ops.extend([Op::Const(shape.columns[0] as i64), Op::Gather, Op::Load(1)]);
    ops.extend([Op::Mul, Op::Sum(sum)]);
    for op in [Op::Min(min), Op::Max(max)] {
        probe(&mut ops);
        ops.extend([Op::Const(shape.columns[1] as i64), Op::Gather, op]);
    }
    Program {
        ops,
        kinds: l.into_kinds(),
    }
}

#[test]
fn lookups_match_the_oracle() {
    let ctx = gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(21);
    let (words, shape) = lookup(&mut rng);
    for inner in [true, false] {
        let p = join_program(&shape, inner);
        p.check().expect("well-formed");
        for (rows, seed) in [(0, 22), (1, 23), (257, 24), (70_001, 25)] {
            for nulls in [false, true] {
                check(&ctx, &p, 5, rows, false, seed, nulls, Some(&words));
            }
        }
    }
}

#[test]
fn sums_carry_past_64_bits() {
    let ctx = gpu();
    let mut l = Layout::default();
    let s = l.sum();
    // 2^62 - 1 per row: 40,000 rows sum to ~1.8e23, past i64.
    let p = Program {
        ops: vec![
            Op::Const(0),
            Op::Group,
            Op::Const((1i64 << 62) - 1),
            Op::Sum(s),
        ],
        kinds: l.into_kinds(),
    };
    let chunk = Chunk {
        rows: 40_000,
        columns: vec![],
        has_valid: 0,
        bounds: vec![],
    };
    let chunks = vec![upload(&ctx, &chunk).expect("upload")];
    let (got, _) = run(&ctx, &p, 1, &chunks, None).expect("run");
    assert_eq!(
        crate::program::sum96(&got, 0),
        40_000i128 * ((1i128 << 62) - 1)
    );
    let p = Program {
        ops: vec![Op::Const(0), Op::Group, Op::Const(i64::MIN), Op::Sum(s)],
        kinds: p.kinds.clone(),
    };
    let (got, _) = run(&ctx, &p, 1, &chunks, None).expect("run");
    assert_eq!(
        crate::program::sum96(&got, 0),
        40_000i128 * i64::MIN as i128
    );
}

/// Passes streamed in over several submissions (a graph per submission) leave the same
/// accumulators as one run over the same chunks, empty chunks dispatch nothing, and each
/// pass is timed where the device has timestamp queries: a run's time spans its passes, a
/// streamed run's is their sum.
#[test]
fn streamed_passes_equal_one_run_and_time_each_chunk() {
    let ctx = gpu();
    let mut l = Layout::default();
    let s = l.sum();
    let p = Program {
        ops: vec![Op::Const(0), Op::Group, Op::Const(7), Op::Sum(s)],
        kinds: l.into_kinds(),
    };
    let chunks: Vec<GpuChunk> = [1_000usize, 0, 40_000, 3]
        .iter()
        .map(|&rows| {
            let chunk = Chunk {
                rows,
                columns: vec![],
                has_valid: 0,
                bounds: vec![],
            };
            upload(&ctx, &chunk).expect("upload")
        })
        .collect();
    let (whole, times) = run(&ctx, &p, 1, &chunks, None).expect("run");
    assert_eq!(crate::program::sum96(&whole, 0), 7 * 41_003);
    let mut acc = Accumulation::new(&ctx, &p, 1, 0).expect("compiles");
    for pair in chunks.chunks(2) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let batch: Vec<&GpuChunk> = pair.iter().collect();
        acc.encode_streamed(&ctx, &mut encoder, &batch, None)
            .expect("encodes");
        ctx.queue.submit([encoder.finish()]);
    }
    assert_eq!(acc.passes(), 3, "the empty chunk dispatches nothing");
    let encoder = ctx.device.create_command_encoder(&Default::default());
    let (streamed, streamed_times) = acc.finish(&ctx, encoder).expect("finishes");
    assert_eq!(streamed, whole);
    if ctx.capabilities().timestamp_query {
        assert_eq!(times.chunks.len(), 3);
        let span = times.gpu.expect("timed");
        assert!(times.chunks.iter().all(|c| *c <= span), "{times:?}");
        assert_eq!(streamed_times.chunks.len(), 3);
        assert_eq!(
            streamed_times.gpu,
            Some(streamed_times.chunks.iter().sum()),
            "{streamed_times:?}"
        );
    } else {
        assert!(times.chunks.is_empty() && times.gpu.is_none(), "{times:?}");
    }
}

#[test]
fn private_copies_fill_workgroup_memory_with_odd_strides() {
    assert_eq!(
        private_copies(3),
        (MAX_COPIES as u32, 3),
        "few words: at most MAX_COPIES copies"
    );
    assert_eq!(private_copies(216), (18, 217));
    assert_eq!(private_copies(4095), (1, 4095));
    for words in 1..PRIVATE_WORDS {
        let (copies, stride) = private_copies(words);
        assert!(stride % 2 == 1 && stride as usize >= words);
        assert!(copies >= 1 && copies as usize * stride as usize <= PRIVATE_WORDS);
    }
}

/// The lookup buffer of `words` (`program::LookupShape`), written at creation.
fn lookup_buffer(device: &wgpu::Device, words: &[u32]) -> Result<wgpu::Buffer, KernelError> {
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-lookup"),
        size: (words.len() as u64 * 4).max(16).div_ceil(16) * 16,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: true,
    });
    {
        let mut view = buffer
            .slice(..)
            .get_mapped_range_mut()
            .map_err(|e| KernelError::Stage {
                what: "the join's lookup buffer",
                bytes: words.len() as u64 * 4,
                reason: e.to_string(),
            })?;
        view.slice(..words.len() * 4)
            .copy_from_slice(bytemuck::cast_slice(words));
    }
    buffer.unmap();
    Ok(buffer)
}
