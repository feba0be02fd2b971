use super::*;
use datafusion::arrow::array::{Decimal128Array, Int32Array, Int64Array, StringViewArray};
use datafusion::arrow::datatypes::{Field, Schema};
use rand::{Rng, SeedableRng};

#[test]
fn appended_validity_bits_match_a_bool_oracle_at_every_offset() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..200 {
        let mut dst = Vec::new();
        let mut oracle: Vec<bool> = Vec::new();
        for _ in 0..rng.random_range(1..6) {
            let n = rng.random_range(0..100usize);
            let bits: Option<Vec<bool>> = rng
                .random_bool(0.5)
                .then(|| (0..n).map(|_| rng.random_bool(0.3)).collect());
            let words = bits.as_ref().map(|b| {
                let mut w = vec![0u32; n.div_ceil(32)];
                for (i, &v) in b.iter().enumerate() {
                    w[i / 32] |= (v as u32) << (i % 32);
                }
                w
            });
            append_bits(&mut dst, oracle.len(), n, words.as_deref());
            oracle.extend(bits.unwrap_or_else(|| vec![true; n]));
        }
        assert_eq!(dst.len(), oracle.len().div_ceil(32));
        for (i, &v) in oracle.iter().enumerate() {
            assert_eq!((dst[i / 32] >> (i % 32)) & 1 == 1, v, "bit {i}");
        }
        for i in oracle.len()..dst.len() * 32 {
            assert_eq!(
                (dst[i / 32] >> (i % 32)) & 1,
                0,
                "bit {i} past the end is set"
            );
        }
    }
}

fn batch(values: Vec<Option<i32>>, prices: Vec<i128>, keys: Vec<Option<&str>>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("v", DataType::Int32, true),
        Field::new("p", DataType::Decimal128(15, 2), false),
        Field::new("k", DataType::Utf8View, true),
    ]));
    let prices = Decimal128Array::from(prices)
        .with_precision_and_scale(15, 2)
        .unwrap();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from(values)),
            Arc::new(prices),
            Arc::new(StringViewArray::from(keys)),
        ],
    )
    .unwrap()
}

/// Batches of uneven sizes (empty, 1, 31, 33, ...) converted on their own and merged give
/// the words, validity, bounds and first-seen key codes of a row-by-row oracle, with short
/// (in-view) and long key strings, null keys, and batches with few and with many distinct keys.
#[test]
fn batches_converted_apart_merge_into_the_row_by_row_answer() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    // More distinct keys than `SMALL_KEYS`, so larger batches switch from the linear search to
    // the hash map part-way through.
    let extra: Vec<String> = (0..15).map(|i| format!("k{i}")).collect();
    let mut pool = vec![
        "A",
        "N",
        "R",
        "a string longer than twelve",
        "another long key string",
    ];
    pool.extend(extra.iter().map(String::as_str));
    let mut converter = Converter::new(&[0, 1], &[2], vec!["v".into(), "p".into(), "k".into()]);
    let layout = converter.layout();
    let (mut values, mut prices, mut keys) = (Vec::new(), Vec::new(), Vec::new());
    for n in [0usize, 1, 31, 33, 100, 7, 64] {
        let v: Vec<Option<i32>> = (0..n)
            .map(|_| rng.random_bool(0.8).then(|| rng.random_range(-1000..1000)))
            .collect();
        let p: Vec<i128> = (0..n).map(|_| rng.random_range(0..10_000_000)).collect();
        let k: Vec<Option<&str>> = (0..n)
            .map(|_| {
                rng.random_bool(0.9)
                    .then(|| pool[rng.random_range(0..pool.len())])
            })
            .collect();
        converter.append(
            layout
                .convert(&batch(v.clone(), p.clone(), k.clone()))
                .unwrap(),
        );
        values.extend(v);
        prices.extend(p);
        keys.extend(k);
    }
    let rows = values.len();
    let chunk = converter.take_chunk();
    assert_eq!(chunk.rows, rows);
    assert_eq!(chunk.has_valid, 0b01, "only v has nulls");
    let v_words: Vec<u32> = values.iter().map(|v| v.unwrap_or(0) as u32).collect();
    let words: Vec<Vec<u32>> = (0..3).map(|s| chunk.words(s)).collect();
    assert_eq!(&words[0][..rows], &v_words[..]);
    for (i, v) in values.iter().enumerate() {
        let bit = (words[0][rows + i / 32] >> (i % 32)) & 1;
        assert_eq!(bit == 1, v.is_some(), "validity of row {i}");
    }
    let p_words: Vec<u32> = prices.iter().map(|&p| p as u32).collect();
    assert_eq!(words[1], p_words);
    let mut first_seen: Vec<Option<&str>> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let code = first_seen.iter().position(|s| s == k).unwrap_or_else(|| {
            first_seen.push(*k);
            first_seen.len() - 1
        });
        assert_eq!(words[2][i], code as u32, "key code of row {i} ({k:?})");
    }
    assert_eq!(converter.cardinalities(), vec![first_seen.len() as u32]);
    let groups: Vec<usize> = (0..first_seen.len()).collect();
    let back = converter.key_values(0, &groups).unwrap();
    let back = back.as_string_view();
    for (g, k) in first_seen.iter().enumerate() {
        assert_eq!(
            back.is_valid(g).then(|| back.value(g)),
            *k,
            "key of group {g}"
        );
    }
    let present: Vec<i64> = values.iter().flatten().map(|&v| v as i64).collect();
    let stats = converter.stats(0);
    assert_eq!(
        (stats.min, stats.max, stats.any),
        (
            *present.iter().min().unwrap(),
            *present.iter().max().unwrap(),
            true
        )
    );
}

#[test]
fn a_value_past_i32_is_a_misfit_naming_the_column_row_and_value() {
    let schema = Arc::new(Schema::new(vec![Field::new("big", DataType::Int64, true)]));
    let big = Int64Array::from(vec![Some(1), None, Some(1 << 31), Some(5)]);
    let batch = RecordBatch::try_new(schema, vec![Arc::new(big)]).unwrap();
    let converter = Converter::new(&[0], &[], vec!["big".into()]);
    let err = converter.layout().convert(&batch).unwrap_err();
    assert_eq!(err.column, "big");
    assert!(err.what.contains("2147483648 (row 2"), "{}", err.what);
}

#[test]
fn narrowing_flags_exactly_the_values_past_i32() {
    // Boundary values of every width: each alone, and each among fitting neighbours.
    let edges: Vec<i128> = vec![
        0,
        1,
        -1,
        i32::MAX as i128,
        i32::MIN as i128,
        i32::MAX as i128 + 1,
        i32::MIN as i128 - 1,
        u32::MAX as i128,
        1 << 32,
        -(1 << 32),
        i64::MAX as i128,
        i64::MIN as i128,
        1 << 64,
        -(1 << 64),
        (1 << 64) + 5,
        -(1i128 << 64) + 5,
        i128::MAX,
        i128::MIN,
    ];
    for &v in &edges {
        let values = [3, v, -7];
        let fits = i32::try_from(v).is_ok();
        let (words, ok) = <i128 as Narrow>::words(&values);
        assert_eq!(ok, fits, "i128 {v}");
        assert_eq!(words, values.map(|x| x as i32 as u32), "i128 {v}");
        if let Ok(v64) = i64::try_from(v) {
            let values = [3, v64, -7];
            let (words, ok) = <i64 as Narrow>::words(&values);
            assert_eq!(ok, fits, "i64 {v}");
            assert_eq!(words, values.map(|x| x as i32 as u32), "i64 {v}");
        }
    }
}

#[test]
fn dictionary_keys_code_like_their_flat_strings() {
    use datafusion::arrow::array::{DictionaryArray, StringArray};
    // Entries 0 and 2 are equal, entry 3 is NULL, entry 4 is unused; one key is NULL.
    let values = StringArray::from(vec![Some("a"), Some("b"), Some("a"), None, Some("z")]);
    let keys = Int32Array::from(vec![
        Some(2),
        Some(0),
        None,
        Some(2),
        Some(1),
        Some(3),
        Some(0),
    ]);
    let dict = DictionaryArray::try_new(keys, Arc::new(values)).expect("dictionary");
    let flat = cast(&dict, &DataType::Utf8).expect("flat");
    let (codes, values) = local_codes(&dict, "k").expect("codes");
    let (flat_codes, flat_values) = local_codes(flat.as_ref(), "k").expect("flat codes");
    assert_eq!(codes, vec![0, 0, 1, 0, 2, 1, 0]);
    assert_eq!(codes, flat_codes);
    assert_eq!(values, flat_values);
    // Every batch size of a random dictionary column, against the flat coding.
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for n in [0, 1, 31, 32, 33, 1000] {
        let entries: Vec<Option<String>> = (0..6)
            .map(|e| (e != 4).then(|| format!("v{}", e % 4)))
            .collect();
        let keys: Int32Array = (0..n)
            .map(|_| rng.random_bool(0.9).then(|| rng.random_range(0..6)))
            .collect();
        let dict =
            DictionaryArray::try_new(keys, Arc::new(StringArray::from(entries))).expect("dict");
        let flat = cast(&dict, &DataType::Utf8).expect("flat");
        assert_eq!(
            local_codes(&dict, "k").expect("codes"),
            local_codes(flat.as_ref(), "k").expect("flat codes"),
            "{n} rows"
        );
    }
}
