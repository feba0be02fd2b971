//! Columns larger than the staging ring's small-upload threshold, so their values convert
//! straight into staging on the thread pool (`gpugraph_arrow`'s staged upload): converted
//! values, zeroed null rows and validity masks over several chunks and both placements match a
//! CPU oracle over poison-free fresh buffers, and a value out of range names the FIRST
//! offending row in column order however the conversion jobs were scheduled.
//! Runs on the selected adapter (lavapipe in CI); never skips.

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, Float64Array, Int64Array};
use gpugraph_arrow::{upload_array_chunks, ArrowAdapterError, ChunkPlacement, UploadOptions};
use gpugraph_testing::ctx;

/// Chunk lengths straddling 256 KiB fill jobs and the staging buffers (8 MiB), one empty.
const CHUNKS: [usize; 4] = [700_001, 0, 1_300_017, 65_537];

fn value(i: usize) -> i64 {
    (i as i64).wrapping_mul(2_654_435_761) % 2_000_000_000 - 1_000_000_000
}

fn null(i: usize) -> bool {
    i % 7 == 3
}

fn int_chunks(bad: &[usize]) -> Vec<Int64Array> {
    let mut base = 0;
    CHUNKS
        .iter()
        .map(|&n| {
            let a: Int64Array = (base..base + n)
                .map(|i| (!null(i)).then(|| if bad.contains(&i) { 1 << 40 } else { value(i) }))
                .collect();
            base += n;
            a
        })
        .collect()
}

/// Equal lengths and elements; a failure names the first differing row, not every row.
fn same<T: PartialEq + std::fmt::Debug>(got: &[T], expect: &[T], what: &str) {
    assert_eq!(got.len(), expect.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != expect[i]) {
        panic!("{what}: row {i} is {:?} not {:?}", got[i], expect[i]);
    }
}

fn options(placement: ChunkPlacement) -> UploadOptions {
    UploadOptions::default()
        .narrow_int64()
        .round_float64()
        .with_placement(placement)
}

#[test]
fn narrowed_ints_and_masks_match_the_oracle_in_both_placements() {
    let ctx = ctx();
    let chunks = int_chunks(&[]);
    let arrays: Vec<&dyn Array> = chunks.iter().map(|a| a as &dyn Array).collect();
    let rows: usize = CHUNKS.iter().sum();
    let expect: Vec<i32> = (0..rows)
        .map(|i| if null(i) { 0 } else { value(i) as i32 })
        .collect();
    let mask: Vec<u32> = (0..rows).map(|i| u32::from(!null(i))).collect();
    for placement in [
        ChunkPlacement::BufferPerChunk,
        ChunkPlacement::SharedPerColumn,
    ] {
        let col = upload_array_chunks(
            &ctx,
            "ts",
            arrays[0].data_type(),
            &arrays,
            &options(placement),
        )
        .unwrap();
        let lens: Vec<u64> = col.values.chunks().iter().map(|c| c.len()).collect();
        assert_eq!(
            lens,
            CHUNKS.map(|n| n as u64),
            "{placement:?}: chunk lengths"
        );
        assert_eq!(
            col.values.read_back::<i32>(&ctx).unwrap(),
            expect,
            "{placement:?}"
        );
        let validity = col.validity.expect("a nullable column gets a mask");
        assert_eq!(
            validity.read_back::<u32>(&ctx).unwrap(),
            mask,
            "{placement:?}"
        );
    }
}

#[test]
fn rounded_floats_and_twelve_byte_rows_match_the_oracle() {
    let ctx = ctx();
    let x = |i: usize| (value(i) as f64) * 1e-3 + 0.1;
    let floats: Vec<Float64Array> = {
        let mut base = 0;
        CHUNKS
            .iter()
            .map(|&n| {
                let a = (base..base + n).map(|i| (!null(i)).then(|| x(i))).collect();
                base += n;
                a
            })
            .collect()
    };
    let arrays: Vec<&dyn Array> = floats.iter().map(|a| a as &dyn Array).collect();
    let col = upload_array_chunks(
        &ctx,
        "f",
        arrays[0].data_type(),
        &arrays,
        &options(ChunkPlacement::BufferPerChunk),
    )
    .unwrap();
    let rows: usize = CHUNKS.iter().sum();
    let expect: Vec<u32> = (0..rows)
        .map(|i| if null(i) { 0 } else { (x(i) as f32).to_bits() })
        .collect();
    same(
        &col.values.read_back::<u32>(&ctx).unwrap(),
        &expect,
        "f32 bits",
    );

    // Rows of three f32 (12 bytes: fill jobs and staging buffers split on whole rows).
    let n = 1_500_007;
    let points = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        (0..n).map(|i| {
            (!null(i)).then(|| (0..3).map(|c| Some((i * 3 + c) as f32)).collect::<Vec<_>>())
        }),
        3,
    );
    let col = upload_array_chunks(
        &ctx,
        "p",
        points.data_type(),
        &[&points as &dyn Array],
        &options(ChunkPlacement::BufferPerChunk),
    )
    .unwrap();
    let expect: Vec<f32> = (0..n * 3)
        .map(|j| if null(j / 3) { 0.0 } else { j as f32 })
        .collect();
    same(
        &col.values.read_back::<f32>(&ctx).unwrap(),
        &expect,
        "points",
    );
}

#[test]
fn the_first_value_out_of_range_in_column_order_is_the_error() {
    let ctx = ctx();
    // Offending rows in the third chunk (in a later staging buffer) and, earlier, in the
    // first chunk's last fill job and its first one: the first in order wins every time.
    for bad in [
        vec![1_900_000, 699_999, 5],
        vec![1_900_000, 699_999],
        vec![2_065_554, 1_900_000],
    ] {
        let chunks = int_chunks(&bad);
        let arrays: Vec<&dyn Array> = chunks.iter().map(|a| a as &dyn Array).collect();
        let first = *bad.iter().filter(|&&i| !null(i)).min().unwrap();
        for _ in 0..3 {
            let err = upload_array_chunks(
                &ctx,
                "ts",
                arrays[0].data_type(),
                &arrays,
                &options(ChunkPlacement::BufferPerChunk),
            )
            .unwrap_err();
            assert!(
                matches!(&err, ArrowAdapterError::ValueOutOfRange { column, row, value, .. }
                    if column == "ts" && *row == first && value == "1099511627776"),
                "{bad:?}: {err}"
            );
        }
    }
    // The ring stays usable after a stopped upload.
    let ok = int_chunks(&[]);
    let arrays: Vec<&dyn Array> = ok.iter().map(|a| a as &dyn Array).collect();
    let col = upload_array_chunks(
        &ctx,
        "ts",
        arrays[0].data_type(),
        &arrays,
        &options(ChunkPlacement::BufferPerChunk),
    )
    .unwrap();
    assert_eq!(col.values.len(), CHUNKS.iter().sum::<usize>() as u64);
}

#[test]
fn dictionary_codes_stage_per_row_with_one_dictionary_over_chunks() {
    use arrow_array::types::UInt8Type;
    use arrow_array::DictionaryArray;
    let ctx = ctx();
    // Chunk k's dictionary lists the names in a different order; codes follow first
    // appearance over the chunks' dictionaries in order. Null keys every 7th row.
    let names = ["AA", "DL", "UA", "WN", "B6"];
    let mut base = 0;
    let mut chunks = Vec::new();
    let mut order: Vec<&str> = Vec::new();
    let mut expect = Vec::new();
    for (k, &n) in CHUNKS.iter().enumerate() {
        let dict: Vec<&str> = (0..names.len())
            .map(|i| names[(i + k) % names.len()])
            .collect();
        let keys: Vec<Option<u8>> = (base..base + n)
            .map(|i| (!null(i)).then_some(((i * 31) % names.len()) as u8))
            .collect();
        for name in &dict {
            if !order.contains(name) {
                order.push(name);
            }
        }
        for key in &keys {
            expect.push(key.map_or(0, |key| {
                order.iter().position(|&o| o == dict[key as usize]).unwrap() as u32
            }));
        }
        let keys = arrow_array::UInt8Array::from(keys);
        let values = std::sync::Arc::new(arrow_array::StringArray::from(dict));
        chunks.push(DictionaryArray::<UInt8Type>::try_new(keys, values).unwrap());
        base += n;
    }
    let arrays: Vec<&dyn Array> = chunks.iter().map(|a| a as &dyn Array).collect();
    let col = upload_array_chunks(
        &ctx,
        "carrier",
        arrays[0].data_type(),
        &arrays,
        &options(ChunkPlacement::BufferPerChunk),
    )
    .unwrap();
    same(
        &col.values.read_back::<u32>(&ctx).unwrap(),
        &expect,
        "codes",
    );
    let mask: Vec<u32> = (0..base).map(|i| u32::from(!null(i))).collect();
    same(
        &col.validity.unwrap().read_back::<u32>(&ctx).unwrap(),
        &mask,
        "mask",
    );
    // The dictionary lists the strings in first-appearance order (codes index it).
    let dictionary = col.dictionary.unwrap();
    let first: Vec<&str> = dictionary.iter().map(String::as_str).collect();
    assert_eq!(&first[..order.len()], &order[..]);
}
