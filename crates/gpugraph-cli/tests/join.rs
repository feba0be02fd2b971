//! `gpugraph join` and `generate-table --tpch` end to end: TPC-H SF 0.01 lineitem ⋈ orders
//! against a plain-Rust hash join of the same files, left and inner joins of small CSVs with
//! missing and null keys (expected text written by hand), and the named errors (duplicate
//! right keys, keys beyond 32 bits, non-integer keys, ambiguous or unknown columns), after
//! which no output file may exist. Runs on the real GPU path (lavapipe on CI).

mod common;

use std::collections::HashMap;
use std::fs::File;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn read_parquet(path: &str) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Column `name` of `batches`, concatenated.
fn column(batches: &[RecordBatch], name: &str) -> ArrayRef {
    let parts: Vec<ArrayRef> = batches
        .iter()
        .map(|b| b.column(b.schema().index_of(name).unwrap()).clone())
        .collect();
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    arrow_select::concat::concat(&refs).unwrap()
}

fn run_ok(args: &[&str]) -> String {
    let out = gpugraph(args);
    assert_success(args, &out);
    text(&out.stdout)
}

#[test]
fn tpch_lineitem_join_orders_matches_a_plain_rust_hash_join() {
    let t = TempDir::new("join-tpch");
    let (li, o, out) = (
        t.path("lineitem.parquet"),
        t.path("orders.parquet"),
        t.path("j.parquet"),
    );
    run_ok(&[
        "generate-table",
        "--tpch",
        "lineitem",
        "--scale",
        "0.01",
        "--out",
        &li,
    ]);
    run_ok(&[
        "generate-table",
        "--tpch",
        "orders",
        "--scale",
        "0.01",
        "--out",
        &o,
    ]);
    let lineitem = read_parquet(&li);
    let orders = read_parquet(&o);
    let rows = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
    assert_eq!(
        (rows(&lineitem), rows(&orders)),
        (60_175, 15_000),
        "TPC-H SF 0.01 sizes"
    );

    let left_cols = [
        "l_orderkey",
        "l_linenumber",
        "l_quantity",
        "l_extendedprice",
        "l_shipmode",
        "l_shipdate",
    ];
    let right_cols = [
        "o_custkey",
        "o_orderdate",
        "o_totalprice",
        "o_orderpriority",
        "o_shippriority",
    ];
    let select = left_cols
        .iter()
        .chain(&right_cols)
        .copied()
        .collect::<Vec<_>>()
        .join(",");
    let stdout = run_ok(&[
        "join",
        &li,
        &o,
        "--left-on",
        "l_orderkey",
        "--right-on",
        "o_orderkey",
        "--select",
        &select,
        "--out",
        &out,
    ]);
    assert!(stdout.contains("probes per key"), "{stdout}");

    // The oracle: a HashMap from o_orderkey to its row, probed in lineitem order.
    let okeys = column(&orders, "o_orderkey");
    let mut index = HashMap::new();
    for (row, k) in okeys.as_primitive::<Int64Type>().iter().enumerate() {
        assert!(
            index.insert(k.unwrap(), row as u32).is_none(),
            "o_orderkey is unique"
        );
    }
    let lkeys = column(&lineitem, "l_orderkey");
    let (mut left_rows, mut right_rows) = (Vec::new(), Vec::new());
    for (row, k) in lkeys.as_primitive::<Int64Type>().iter().enumerate() {
        if let Some(&r) = index.get(&k.unwrap()) {
            left_rows.push(row as u32);
            right_rows.push(r);
        }
    }
    let joined = read_parquet(&out);
    assert_eq!(rows(&joined), left_rows.len());
    let take = |batches: &[RecordBatch], name: &str, rows: &[u32]| {
        arrow_select::take::take(
            &column(batches, name),
            &UInt32Array::from(rows.to_vec()),
            None,
        )
        .unwrap()
    };
    for name in left_cols {
        let want = take(&lineitem, name, &left_rows);
        let got = column(&joined, name);
        assert_eq!(got.data_type(), want.data_type(), "{name}");
        assert_eq!(got.to_data(), want.to_data(), "column {name}");
    }
    for name in right_cols {
        let want = take(&orders, name, &right_rows);
        let got = column(&joined, name);
        assert_eq!(got.data_type(), want.data_type(), "{name}");
        assert_eq!(got.to_data(), want.to_data(), "column {name}");
    }
}

const LEFT: &str = "id,k,v\n1,10,a\n2,,b\n3,30,c\n4,99,d\n5,10,e\n6,-1,f\n";
const RIGHT: &str = "k,name,price\n10,ten,1.5\n30,thirty,\n20,twenty,2.25\n-1,minus,0.5\n";

#[test]
fn left_and_inner_joins_of_csv_with_missing_and_null_keys() {
    let t = TempDir::new("join-csv");
    let (l, r) = (t.path("l.csv"), t.path("r.csv"));
    std::fs::write(&l, LEFT).unwrap();
    std::fs::write(&r, RIGHT).unwrap();
    let out = t.path("left.csv");
    run_ok(&[
        "join",
        &l,
        &r,
        "--left-on",
        "k",
        "--right-on",
        "k",
        "--how",
        "left",
        "--select",
        "id,v,name,price,right.k",
        "--out",
        &out,
    ]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "id,v,name,price,k\n1,a,ten,1.5,10\n2,b,,,\n3,c,thirty,,30\n4,d,,,\n5,e,ten,1.5,10\n6,f,minus,0.5,-1\n"
    );
    let out = t.path("inner.arrow");
    run_ok(&[
        "join",
        &l,
        &r,
        "--left-on",
        "k",
        "--right-on",
        "k",
        "--out",
        &out,
    ]);
    let reader = arrow_ipc::reader::FileReader::try_new(File::open(&out).unwrap(), None).unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let names: Vec<String> = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        ["id", "k", "v", "name", "price"],
        "default: left columns, then right but its key"
    );
    let ids = column(&batches, "id");
    let ids: Vec<i64> = ids
        .as_primitive::<Int64Type>()
        .iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(ids, [1, 3, 5, 6]);
    let names = column(&batches, "name");
    let names: Vec<&str> = names
        .as_string::<i32>()
        .iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(names, ["ten", "thirty", "ten", "minus"]);
    let price = column(&batches, "price");
    assert_eq!(price.null_count(), 1, "a null right payload stays null");
}

#[test]
fn bad_joins_are_named_errors_and_leave_no_output() {
    let t = TempDir::new("join-errors");
    let (l, r, out) = (t.path("l.csv"), t.path("r.csv"), t.path("out.parquet"));
    std::fs::write(&l, LEFT).unwrap();
    let run_on = |right: &str, right_on: &str, extra: &[&str]| {
        std::fs::write(&r, right).unwrap();
        let mut args = vec![
            "join",
            &l,
            &r,
            "--left-on",
            "k",
            "--right-on",
            right_on,
            "--out",
            &out,
        ];
        args.extend_from_slice(extra);
        fails_without_output(&args, &out)
    };
    let run = |right: &str, extra: &[&str]| run_on(right, "k", extra);
    let e = run("k,x\n7,1\n20,2\n8,3\n20,4\n7,5\n", &[]);
    assert!(
        e.contains("duplicate keys (key 20 at right rows 1 and 3;"),
        "{e}"
    );
    let e = run("k,x\n5000000000,1\n", &[]);
    assert!(e.contains("key 5000000000 fits neither"), "{e}");
    let e = run("k,x\n-3000000000,1\n", &[]);
    assert!(e.contains("key -3000000000 fits neither"), "{e}");
    let e = run("k,x\n1.5,1\n", &[]);
    assert!(e.contains("must be integer columns"), "{e}");
    let e = run(RIGHT, &["--select", "k"]);
    assert!(e.contains("write left.k or right.k"), "{e}");
    let e = run(RIGHT, &["--select", "nope"]);
    assert!(e.contains("no column 'nope'"), "{e}");
    let e = run_on(RIGHT, "missing", &[]);
    assert!(e.contains("--right-on missing: no column 'missing'"), "{e}");
}
