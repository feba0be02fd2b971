use super::evaluate::{by_values, words, Column, ValueWords};
use super::*;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::common::HashMap;
use datafusion::physical_expr::expressions::{col, like, lit};
use datafusion::physical_plan::empty::EmptyExec;
use std::sync::RwLock;

fn plan(schema: &SchemaRef, columns: Vec<Arc<dyn PhysicalExpr>>) -> LookupPlan {
    LookupPlan {
        input: Arc::new(EmptyExec::new(Arc::clone(schema))),
        key: col("k", schema).expect("k"),
        columns,
        groups: Vec::new(),
        outer: false,
        set: None,
    }
}

fn batch(keys: Vec<Option<i64>>, names: Vec<&str>) -> (SchemaRef, RecordBatch) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("name", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(keys)),
            Arc::new(StringArray::from(names)),
        ],
    )
    .expect("batch");
    (schema, batch)
}

/// Key `k` maps to its row; host-evaluated columns follow the map.
#[test]
fn keys_map_to_rows_and_columns_follow() {
    let (schema, b) = batch(
        vec![Some(12), Some(10), None, Some(15)],
        vec!["PROMO A", "B", "PROMO C", "D"],
    );
    let promo = like(
        false,
        false,
        col("name", &schema).unwrap(),
        lit("PROMO%"),
        &schema,
    )
    .expect("like");
    let p = plan(&schema, vec![promo, col("k", &schema).unwrap()]);
    // Two batches, as partitions deliver them.
    let t = p.build(&[b.slice(0, 1), b.slice(1, 3)]).unwrap_err();
    assert!(t.contains("nulls"), "{t}");
    let p = plan(&schema, vec![p.columns[0].clone()]);
    let t = p.build(&[b.slice(0, 1), b.slice(1, 3)]).expect("builds");
    assert_eq!(t.shape.first_key, 10);
    assert_eq!(t.shape.keys, 6);
    let words = t.words().expect("many-to-one");
    assert_eq!(&words[..6], &[1, NO_ROW, 0, NO_ROW, NO_ROW, 3]);
    assert_eq!(t.shape.columns, vec![6]);
    assert_eq!(&words[6..], &[1, 0, 1, 0]);
    assert_eq!(t.buffer_words(), words.len());
    assert_eq!(t.bounds, vec![(0, 1)]);
}

#[test]
fn group_keys_follow_the_lookup_rows_across_batches() {
    let (schema, b) = batch(vec![Some(3), Some(1), Some(2)], vec!["three", "one", "two"]);
    let mut p = plan(&schema, vec![]);
    p.groups = vec![col("name", &schema).unwrap()];
    let t = p.build(&[b.slice(0, 2), b.slice(2, 1)]).expect("builds");
    // Row r's key maps to r and its group value is row r's, whichever batch held it.
    assert_eq!(&t.words().expect("many-to-one")[..3], &[1, 2, 0]);
    let strings = |rows: &[u32]| -> Vec<String> {
        let names = t.group_values(0, rows).expect("takes");
        let names = names.as_string::<i32>();
        (0..names.len())
            .map(|i| names.value(i).to_string())
            .collect()
    };
    // Rows in any order (interleaved), in order across both batches (a take per batch),
    // and within one batch.
    assert_eq!(strings(&[2, 0, 1, 2]), ["two", "three", "one", "two"]);
    assert_eq!(strings(&[0, 0, 1, 2]), ["three", "three", "one", "two"]);
    assert_eq!(strings(&[2]), ["two"]);
    // No batches: empty key values of the key's type, no rows.
    let t = p.build(&[]).expect("builds");
    let none = t.group_values(0, &[]).expect("takes");
    assert_eq!((t.rows, none.len()), (0, 0));
    assert_eq!(none.data_type(), &DataType::Utf8);
}

#[test]
fn repeated_sparse_and_wide_keys_are_refused_by_name() {
    let (schema, b) = batch(vec![Some(3), Some(3)], vec!["a", "b"]);
    let e = plan(&schema, vec![]).build(&[b]).expect("builds").words();
    let e = e.unwrap_err();
    assert!(e.contains("k@0 repeats the value 3"), "{e}");
    let (schema, b) = batch(vec![Some(0), Some(1 << 28)], vec!["a", "b"]);
    let e = plan(&schema, vec![]).build(&[b]).unwrap_err();
    assert!(e.contains("spans 268435457 values over 2 rows"), "{e}");
    let (schema, b) = batch(vec![Some(1 << 40)], vec!["a"]);
    let e = plan(&schema, vec![]).build(&[b]).unwrap_err();
    assert!(e.contains("past the GPU's 32 bits"), "{e}");
    let (schema, b) = batch(vec![], vec![]);
    let t = plan(&schema, vec![]).build(&[b]).expect("empty");
    assert_eq!((t.shape.keys, t.rows), (0, 0));
}

/// An expression of one string column of few values evaluates once per value and agrees
/// with the row-wise evaluation (plain, view and dictionary strings, short and long);
/// nulls in the result, many distinct values or two columns take the row-wise path.
#[test]
fn few_valued_string_expressions_evaluate_once_per_value() {
    use datafusion::arrow::array::{DictionaryArray, StringViewArray};
    use datafusion::arrow::datatypes::Int32Type;
    use datafusion::common::ScalarValue;
    let names = [
        "PROMO A",
        "B",
        "PROMO C",
        "a PROMO value past twelve bytes",
        "PROMO long enough to be out of line",
    ];
    let column: Vec<&str> = (0..1000).map(|i| names[(i * 7) % names.len()]).collect();
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(column.clone())),
        Arc::new(StringViewArray::from(column.clone())),
        Arc::new(
            column
                .iter()
                .copied()
                .collect::<DictionaryArray<Int32Type>>(),
        ),
    ];
    for array in arrays {
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", array.data_type().clone(), true),
            Field::new("k", DataType::Int64, false),
        ]));
        let keys = Arc::new(Int64Array::from_iter_values(0..1000));
        let b = RecordBatch::try_new(Arc::clone(&schema), vec![array, keys]).expect("batch");
        let pattern = match schema.field(0).data_type() {
            DataType::Utf8View => ScalarValue::Utf8View(Some("PROMO%".into())),
            _ => ScalarValue::Utf8(Some("PROMO%".into())),
        };
        let promo = like(
            false,
            false,
            col("name", &schema).unwrap(),
            lit(pattern),
            &schema,
        )
        .expect("like");
        let row_wise = words(&promo.evaluate(&b).unwrap().into_array(1000).unwrap(), "p").unwrap();
        let mut coded = HashMap::new();
        let known = RwLock::new(ValueWords::default());
        let got = by_values((0, &promo), &b, &mut coded, &known).expect("evaluates");
        let got = got.expect("few values");
        assert!(matches!(got, Column::Coded { .. }));
        assert_eq!(got.to_words(), row_wise, "{}", schema.field(0).data_type());
        assert_eq!(row_wise.iter().filter(|&&w| w == 1).count(), 600);
        // A later batch of the same values takes the remembered words (shifted here, so
        // a fresh evaluation would not match).
        for w in known.write().unwrap().words.values_mut() {
            *w += 10;
        }
        let later = b.slice(1, 999);
        let again = by_values((0, &promo), &later, &mut HashMap::new(), &known)
            .expect("evaluates")
            .expect("few values");
        let shifted: Vec<u32> = row_wise[1..].iter().map(|w| w + 10).collect();
        assert_eq!(again.to_words(), shifted);
        // Another column index remembers its own words.
        let fresh = by_values((1, &promo), &later, &mut HashMap::new(), &known).expect("evaluates");
        assert_eq!(fresh.map(|c| c.to_words()).as_deref(), Some(&row_wise[1..]));
        // Two columns: row by row.
        let two = datafusion::physical_expr::expressions::binary(
            col("k", &schema).unwrap(),
            datafusion::logical_expr::Operator::Lt,
            lit(3i64),
            &schema,
        )
        .unwrap();
        assert_eq!(by_values((2, &two), &b, &mut coded, &known).unwrap(), None);
    }
    // Nulls in the result, or mostly distinct values: row by row.
    let (schema, b) = batch(
        (0..100).map(Some).collect(),
        (0..100)
            .map(|i| if i % 2 == 0 { "x" } else { "y" })
            .collect(),
    );
    let nulls = StringArray::from_iter((0..100).map(|i| (i % 2 == 0).then_some("x")));
    let nullable = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ]));
    let b2 =
        RecordBatch::try_new(nullable, vec![Arc::clone(b.column(0)), Arc::new(nulls)]).unwrap();
    let e = like(
        false,
        false,
        col("name", &schema).unwrap(),
        lit("x%"),
        &schema,
    )
    .unwrap();
    assert!(
        by_values((0, &e), &b, &mut HashMap::new(), &RwLock::default())
            .unwrap()
            .is_some()
    );
    assert_eq!(
        by_values((0, &e), &b2, &mut HashMap::new(), &RwLock::default()).unwrap(),
        None
    );
    let distinct: Vec<String> = (0..100).map(|i| format!("v{i}")).collect();
    let (_, b3) = batch(
        (0..100).map(Some).collect(),
        distinct.iter().map(String::as_str).collect(),
    );
    assert_eq!(
        by_values((0, &e), &b3, &mut HashMap::new(), &RwLock::default()).unwrap(),
        None
    );
}

/// Records decode to each row's key-map word (or `none`) and column values, from any first
/// row on, across uneven batches; widths follow the bounds.
#[test]
fn records_pack_each_row_in_the_fewest_bits() {
    use super::records::get;
    use datafusion::arrow::array::Int32Array;
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("a", DataType::Int32, false),
        Field::new("b", DataType::Int32, false),
    ]));
    let rows = 1000;
    let keys: Vec<Option<i64>> = (0..rows as i64)
        .map(|r| (r % 7 != 3).then_some(100 + 2 * r))
        .collect();
    let a: Vec<i32> = (0..rows as i32).map(|r| -40 + r % 50).collect();
    let b: Vec<i32> = (0..rows as i32)
        .map(|r| if r % 2 == 0 { i32::MIN } else { r })
        .collect();
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(keys.clone())),
            Arc::new(Int32Array::from(a.clone())),
            Arc::new(Int32Array::from(b.clone())),
        ],
    )
    .expect("batch");
    let p = plan(
        &schema,
        vec![col("a", &schema).unwrap(), col("b", &schema).unwrap()],
    );
    let batches = [
        batch.slice(0, 1),
        batch.slice(1, 0),
        batch.slice(1, 998),
        batch.slice(999, 1),
    ];
    let t = p.build(&batches).expect("builds");
    let layout = t.records();
    // Keys 100..=2098: 1999 words and `none` in 11 bits; a spans 49 (6 bits), b all of i32.
    assert_eq!((layout.key_bits, layout.none), (11, 2047));
    let widths: Vec<u32> = layout.fields.iter().map(|f| f.bits).collect();
    assert_eq!(widths, [6, 32]);
    assert_eq!(layout.words, 2);
    for first in [0, 1, 2, 500, 999] {
        let mut out = vec![u32::MAX; (rows - first) * 2];
        t.fill_records(&layout, first, &mut out);
        for (i, record) in out.chunks_exact(2).enumerate() {
            let r = first + i;
            let key = get(record, 0, layout.key_bits);
            let expected = keys[r].map_or(layout.none, |k| (k - 100) as u32);
            assert_eq!(key, expected, "row {r}");
            for (f, column) in layout.fields.iter().zip([&a, &b]) {
                let v = get(record, f.bit, f.bits).wrapping_add(f.lo) as i32;
                assert_eq!(v, column[r], "row {r} field {f:?}");
            }
        }
    }
}
