//! The key encoding against Arrow's own lexicographic sort, and the device's selection
//! against the oracle, over uneven batches, ties, constant words and boundary sizes.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int32Array, Int64Array, Int8Array, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::compute::{lexsort_to_indices, take, SortColumn, SortOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::encode::{encode, key_words, order_by, select_cpu, Encoded, KeyLayout};
use super::select::select;
use crate::pages::tests::gpu;

/// `rows` random values of one type, about a sixth null, with the type's edge values.
fn column(kind: usize, rows: usize, rng: &mut StdRng) -> ArrayRef {
    let null = |rng: &mut StdRng| rng.random_range(0..6) == 0;
    match kind {
        0 => Arc::new(Int8Array::from_iter((0..rows).map(|_| {
            (!null(rng)).then(|| [i8::MIN, -1, 0, 1, i8::MAX, rng.random()][rng.random_range(0..6)])
        }))),
        1 => Arc::new(Int32Array::from_iter((0..rows).map(|_| {
            (!null(rng))
                .then(|| [i32::MIN, -7, 0, 7, i32::MAX, rng.random()][rng.random_range(0..6)])
        }))),
        2 => Arc::new(Int64Array::from_iter((0..rows).map(|_| {
            (!null(rng))
                .then(|| [i64::MIN, -1, 0, 1 << 40, i64::MAX, rng.random()][rng.random_range(0..6)])
        }))),
        3 => Arc::new(UInt64Array::from_iter((0..rows).map(|_| {
            (!null(rng)).then(|| [0, 1, u64::MAX, 1 << 63, rng.random()][rng.random_range(0..5)])
        }))),
        4 => Arc::new(Float32Array::from_iter((0..rows).map(|_| {
            let v = [
                f32::NAN,
                -f32::NAN,
                -0.0,
                0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                1.5,
                rng.random_range(-9.0..9.0),
            ];
            (!null(rng)).then(|| v[rng.random_range(0..v.len())])
        }))),
        5 => Arc::new(Float64Array::from_iter((0..rows).map(|_| {
            let v = [
                f64::NAN,
                -f64::NAN,
                -0.0,
                0.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
                rng.random_range(-9.0..9.0),
            ];
            (!null(rng)).then(|| v[rng.random_range(0..v.len())])
        }))),
        6 => {
            Arc::new(Date32Array::from_iter((0..rows).map(|_| {
                (!null(rng)).then(|| rng.random_range(-40_000..40_000))
            })))
        }
        7 => Arc::new(
            Decimal128Array::from_iter((0..rows).map(|_| {
                let big = 10i128.pow(30);
                (!null(rng)).then(|| {
                    [-big, -1, 0, 1, big, rng.random_range(-big..big)][rng.random_range(0..6)]
                })
            }))
            .with_precision_and_scale(38, 4)
            .expect("decimal"),
        ),
        8 => Arc::new(BooleanArray::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| rng.random())),
        )),
        _ => Arc::new(TimestampNanosecondArray::from_iter((0..rows).map(|_| {
            (!null(rng)).then(|| rng.random_range(-5i64..5) * 1_000_000_007)
        }))),
    }
}

/// Our encoding orders rows as Arrow's lexicographic sort does: the keys taken in our order
/// equal the keys taken in Arrow's, for every type, direction and null placement, with a
/// second key of few values so the first one's ties matter.
#[test]
fn encoded_order_matches_arrows_sort() {
    let mut rng = StdRng::seed_from_u64(11);
    let rows = 600;
    for kind in 0..10 {
        for (descending, nulls_first) in
            [(false, false), (false, true), (true, false), (true, true)]
        {
            let first = column(kind, rows, &mut rng);
            let second: ArrayRef =
                Arc::new(Int32Array::from_iter((0..rows).map(|_| {
                    (rng.random_range(0..4) != 0).then(|| rng.random_range(-2..2))
                })));
            let options = SortOptions {
                descending,
                nulls_first,
            };
            let layouts = [
                KeyLayout::new(first.data_type(), descending, nulls_first, true).expect("layout"),
                KeyLayout::new(second.data_type(), !descending, !nulls_first, true)
                    .expect("layout"),
            ];
            let arrays = [Arc::clone(&first), Arc::clone(&second)];
            let encoded = encode(&layouts, &arrays).expect("encodes");
            let words = key_words(&layouts);
            let ours = select_cpu(rows, words, rows, |w, r| encoded.planes[w][r as usize]);
            let theirs = lexsort_to_indices(
                &[
                    SortColumn {
                        values: Arc::clone(&first),
                        options: Some(options),
                    },
                    SortColumn {
                        values: Arc::clone(&second),
                        options: Some(SortOptions {
                            descending: !descending,
                            nulls_first: !nulls_first,
                        }),
                    },
                ],
                None,
            )
            .expect("sorts");
            let ours = datafusion::arrow::array::UInt32Array::from(ours);
            for a in &arrays {
                let x = take(a.as_ref(), &ours, None).expect("takes");
                let y = take(a.as_ref(), &theirs, None).expect("takes");
                assert_eq!(
                    x.to_data(),
                    y.to_data(),
                    "type {} descending {descending} nulls_first {nulls_first}",
                    first.data_type()
                );
            }
        }
    }
}

#[test]
fn strings_and_wrong_types_are_refused_by_name() {
    let why = KeyLayout::new(
        &datafusion::arrow::datatypes::DataType::Utf8,
        false,
        false,
        true,
    )
    .expect_err("strings stay on the CPU");
    assert!(why.contains("Utf8"), "{why}");
    let layout = KeyLayout::new(
        &datafusion::arrow::datatypes::DataType::Int64,
        false,
        false,
        false,
    )
    .expect("layout");
    let array: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
    let why =
        encode(std::slice::from_ref(&layout), &[array]).expect_err("an Int32 for an Int64 key");
    assert!(why.contains("Int32") && why.contains("Int64"), "{why}");
    let array: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
    let why = encode(&[layout], &[array]).expect_err("a null where none was planned");
    assert!(why.contains("nulls"), "{why}");
}

/// Word planes of `rows` rows drawn by `draw(word, row)`, split into parts of uneven
/// lengths, some empty.
fn parts(
    rows: usize,
    words: usize,
    rng: &mut StdRng,
    draw: &dyn Fn(&mut StdRng, usize, usize) -> u32,
) -> Vec<Encoded> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < rows {
        let n = if rng.random_range(0..5) == 0 {
            0
        } else {
            rng.random_range(1..=(rows - at).min(3000))
        };
        let planes = (0..words)
            .map(|w| (at..at + n).map(|r| draw(rng, w, r)).collect())
            .collect();
        out.push(Encoded::from_planes(planes));
        at += n;
    }
    out.push(Encoded::from_planes(vec![Vec::new(); words]));
    out
}

/// The device selects the oracle's rows: ties broken by row (values from few), constant
/// words, words constant in their high digits, every row equal, descending runs, and sizes
/// around a workgroup, with k from 1 to all but one row (and past the rows).
#[test]
fn the_device_selects_the_oracles_rows() {
    let ctx = gpu();
    let mut rng = StdRng::seed_from_u64(5);
    type Draw = Box<dyn Fn(&mut StdRng, usize, usize) -> u32>;
    let draws: Vec<(&str, Draw)> = vec![
        (
            "few values",
            Box::new(|rng: &mut StdRng, _, _| rng.random_range(0..3)),
        ),
        ("random", Box::new(|rng: &mut StdRng, _, _| rng.random())),
        ("equal", Box::new(|_: &mut StdRng, _, _| 0x8000_0000)),
        (
            "high digits constant",
            Box::new(|rng: &mut StdRng, w, _| {
                if w == 0 {
                    0x8000_0000
                } else {
                    0x0100_0000 | rng.random_range(0..5000)
                }
            }),
        ),
        (
            "descending",
            Box::new(|_: &mut StdRng, _, r| u32::MAX - r as u32),
        ),
    ];
    for rows in [2usize, 3, 255, 256, 257, 1000, 4097, 70_000] {
        for words in [1usize, 2, 4] {
            for (name, draw) in &draws {
                let parts = parts(rows, words, &mut rng, draw.as_ref());
                let flat: Vec<Vec<u32>> = (0..words)
                    .map(|w| {
                        parts
                            .iter()
                            .flat_map(|p| p.planes[w].iter().copied())
                            .collect()
                    })
                    .collect();
                for k in [1, 2, rows / 2, rows - 1, rows + 3] {
                    if k == 0 {
                        continue;
                    }
                    let mut got = select(&ctx, &parts, words, k)
                        .expect("selects")
                        .expect("within the limits");
                    order_by(&mut got, words, |w, r| flat[w][r as usize]);
                    let want = select_cpu(rows, words, k, |w, r| flat[w][r as usize]);
                    assert_eq!(got, want, "{name}: {rows} rows, {words} words, k {k}");
                }
            }
        }
    }
    // No rows, and k = 0.
    assert_eq!(select(&ctx, &[], 1, 5).expect("selects"), Ok(Vec::new()));
    let some = parts(100, 1, &mut rng, &|rng: &mut StdRng, _, _| rng.random());
    assert_eq!(select(&ctx, &some, 1, 0).expect("selects"), Ok(Vec::new()));
}

#[test]
fn too_many_key_words_are_refused_by_name() {
    let ctx = gpu();
    let why = super::select::check(&ctx, 10, 16).expect_err("16 words");
    assert!(why.contains("16 words"), "{why}");
    let binding = ctx.device.limits().max_storage_buffer_binding_size as usize;
    let why = super::select::check(&ctx, binding / 8 + 1, 2).expect_err("past a binding");
    assert!(why.contains("bytes"), "{why}");
}
