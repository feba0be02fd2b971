//! Code maps on the device against the CPU oracle, DataFusion evaluating the expression row
//! by row: random string columns coded by the converter (NULLs, all-NULL, empty, sizes
//! around the 256-thread workgroups, batches split unevenly), each expression's table built
//! from the dictionary and probed by [`Ir::Mapped`] as the planner lowers it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::prelude::SessionContext;
use gpugraph_command::GpuContext;
use rand::{Rng, SeedableRng};

use super::CodeMap;
use crate::convert::{Chunk, Converter, Part};
use crate::ir::{Ir, Lowering};
use crate::kernel::{self, keymap::lookup_buffer};
use crate::lookup::place;
use crate::pages::tests::gpu;
use crate::program::{run_cpu, sum96, ColumnWords, Layout, Op, Program};

/// Boolean and numeric expressions over `s`, NULL-producing and NULL-consuming ones among
/// them.
const EXPRESSIONS: [&str; 8] = [
    "substr(s, 1, 2) IN ('13', '31', '23')",
    "s LIKE '%3%'",
    "s NOT LIKE '1%'",
    "starts_with(s, '2')",
    "upper(s) = 'AB-X'",
    "character_length(s)",
    "CASE WHEN s IS NULL THEN 7 ELSE length(s) * 2 END",
    "NOT (substr(s, 2, 1) = '3') OR s IS NULL",
];

/// `rows` strings of a few prefixes and lengths (so the expressions take every value), each
/// NULL with probability `nulls`.
fn strings(rng: &mut impl Rng, rows: usize, nulls: f64) -> Vec<Option<String>> {
    let prefixes = ["13", "31", "23", "ab", "2", "", "1"];
    (0..rows)
        .map(|_| {
            (!rng.random_bool(nulls)).then(|| {
                let p = prefixes[rng.random_range(0..prefixes.len())];
                let tail: String = (0..rng.random_range(0..4))
                    .map(|_| ['-', 'x', '3', 'X'][rng.random_range(0..4)])
                    .collect();
                format!("{p}{tail}")
            })
        })
        .collect()
}

/// The map of `sql` over a column `s` of type `dt`.
fn code_map(sql: &str, dt: &DataType) -> CodeMap {
    let field = Arc::new(Field::new("s", dt.clone(), true));
    let schema = DFSchema::try_from(Schema::new(vec![field.as_ref().clone()])).expect("schema");
    let ctx = SessionContext::new();
    let logical = ctx.parse_sql_expr(sql, &schema).expect("parses");
    let expr = ctx.create_physical_expr(logical, &schema).expect("plans");
    CodeMap {
        column: 0,
        field,
        expr,
    }
}

/// DataFusion's value of `map` for every row of `column`, as the GPU's integers.
fn oracle(map: &CodeMap, column: &ArrayRef) -> Vec<Option<i64>> {
    let values = map.evaluate(column).expect("evaluates");
    let values = cast(&values, &DataType::Int64).expect("integers");
    let values = values.as_primitive::<Int64Type>();
    (0..values.len())
        .map(|r| values.is_valid(r).then(|| values.value(r)))
        .collect()
}

/// The device's value of `map` for each row of `column`, converted in the batches `cuts`
/// delimit: one group per row (slot 1) counting and summing the mapped value (slot 0's code).
/// Also checks the program's CPU oracle ([`run_cpu`]) against the device.
fn device(
    ctx: &GpuContext,
    map: &CodeMap,
    column: &ArrayRef,
    cuts: &[usize],
    key: Option<&mut Option<ArrayRef>>,
) -> Vec<Option<i64>> {
    let rows = column.len();
    let mut converter = Converter::new(&[], &[0], vec!["s".into()]);
    let schema = Arc::new(Schema::new(vec![map.field.as_ref().clone()]));
    for w in cuts.windows(2) {
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![column.slice(w[0], w[1] - w[0])])
                .expect("batch");
        converter.push(&batch).expect("converts");
    }
    let chunk = converter.take_chunk();
    let codes = chunk.words(0);
    let values = converter
        .dictionary(0)
        .expect("interleaves")
        .unwrap_or_else(|| datafusion::arrow::array::new_empty_array(map.field.data_type()));
    assert_eq!(values.len(), converter.cardinalities()[0] as usize);
    let table = match key {
        Some(distinct) => {
            let (table, keys) = map.key_table(&values).expect("a key table");
            *distinct = Some(keys);
            table
        }
        None => map.table(&values).expect("a table"),
    };
    let mut tables = vec![table];
    place(&mut tables);
    let buffer = lookup_buffer(ctx, &tables)
        .expect("runs")
        .expect("codes never repeat");
    let shapes = [tables[0].shape.clone()];
    let slot = |c: usize| c as u32;
    let code = |_: usize, _: Option<&str>| None;
    let lowering = Lowering {
        slot: &slot,
        code: &code,
        lookup: &[],
        maps: &shapes,
    };
    let mapped = Ir::Mapped { map: 0, column: 0 };
    let mut layout = Layout::default();
    let (count, sum) = (layout.sum(), layout.sum());
    let mut ops = vec![Op::Load(1), Op::Group];
    mapped.lower(&lowering, &mut ops);
    ops.push(Op::Count(count));
    mapped.lower(&lowering, &mut ops);
    ops.push(Op::Sum(sum));
    let program = Program {
        ops,
        kinds: layout.into_kinds(),
    };
    program.check().expect("well-formed");
    let ids: Vec<u32> = (0..rows as u32).collect();
    let upload = Chunk {
        rows,
        columns: vec![
            vec![Part::Words(codes.clone())],
            vec![Part::Words(ids.clone())],
        ],
        has_valid: 0,
        bounds: vec![None, None],
    };
    let uploaded = kernel::upload(ctx, &upload).expect("upload");
    let groups = rows.max(1);
    let (acc, _) = kernel::run(ctx, &program, groups, &[uploaded], Some(&buffer)).expect("runs");
    let lookup = tables[0].words().expect("host words");
    let mut cpu = program.initial_accumulators(groups);
    let columns = [
        ColumnWords {
            values: &codes,
            valid: None,
        },
        ColumnWords {
            values: &ids,
            valid: None,
        },
    ];
    run_cpu(&program, &columns, &lookup, rows, &mut cpu);
    assert_eq!(acc, cpu, "{map}: the device against the program's oracle");
    buffer.destroy();
    (0..rows)
        .map(|r| {
            let w = 6 * r;
            (sum96(&acc, w + count as usize) > 0).then(|| sum96(&acc, w + sum as usize) as i64)
        })
        .collect()
}

#[test]
fn device_code_maps_match_datafusion_row_by_row() {
    let ctx = gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(22);
    for (i, &(rows, nulls)) in [
        (0, 0.0),
        (1, 0.0),
        (1, 1.0),
        (255, 0.1),
        (256, 0.0),
        (257, 1.0),
        (5_003, 0.05),
        (70_001, 0.2),
    ]
    .iter()
    .enumerate()
    {
        let column: ArrayRef = Arc::new(StringArray::from(strings(&mut rng, rows, nulls)));
        let cuts = [0, rows / 3, (rows / 3 + 1).min(rows), rows];
        // Utf8View as the plan may type it, and the converter's arrays cast to it.
        let dt = if i % 2 == 0 {
            DataType::Utf8
        } else {
            DataType::Utf8View
        };
        let column = cast(&column, &dt).expect("casts");
        for sql in EXPRESSIONS {
            let map = code_map(sql, &dt);
            let got = device(&ctx, &map, &column, &cuts, None);
            assert_eq!(
                got,
                oracle(&map, &column),
                "{sql}: {rows} rows, nulls {nulls}"
            );
        }
    }
}

/// A value past the GPU's 32 bits is a reason to fall back, not a wrong value.
#[test]
fn a_value_past_32_bits_refuses_the_map() {
    let map = code_map(
        "CAST(character_length(s) AS BIGINT) * 10000000000",
        &DataType::Utf8,
    );
    let values: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
    let why = map.table(&values).unwrap_err();
    assert!(why.contains("past the GPU's 32 bits"), "{why}");
}

/// A group key by code (TPC-H Q22's `cntrycode`): the device gives each row its value's code
/// (never NULL: a NULL value is a key of its own), and the key table's distinct values at
/// that code are DataFusion's value of the row; distinct codes, distinct values.
#[test]
fn device_key_codes_name_datafusion_values() {
    let ctx = gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    for (rows, nulls) in [(0, 0.0), (1, 1.0), (257, 0.1), (5_003, 0.0), (20_000, 0.3)] {
        let column: ArrayRef = Arc::new(StringArray::from(strings(&mut rng, rows, nulls)));
        let cuts = [0, rows / 2, rows];
        for sql in ["substr(s, 1, 2)", "upper(s)", "character_length(s)"] {
            let map = code_map(sql, &DataType::Utf8);
            let mut distinct = None;
            let codes = device(&ctx, &map, &column, &cuts, Some(&mut distinct));
            let distinct = distinct.expect("the key's values");
            let want = map.evaluate(&column).expect("evaluates");
            let mut seen = std::collections::HashSet::new();
            for r in 0..distinct.len() {
                let v = ScalarValue::try_from_array(&distinct, r).expect("a value");
                assert!(seen.insert(v.to_string()), "{sql}: value {v} coded twice");
            }
            for (r, code) in codes.iter().enumerate() {
                let code = code.unwrap_or_else(|| panic!("{sql}: row {r} has no key code"));
                let got = ScalarValue::try_from_array(&distinct, code as usize).expect("coded");
                let want = ScalarValue::try_from_array(&want, r).expect("evaluated");
                assert_eq!(got, want, "{sql}: row {r} of {rows}");
            }
        }
    }
}
