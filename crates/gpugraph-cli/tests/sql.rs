//! `gpugraph sql` end to end on TPC-H SF 0.01 lineitem (written by `generate-table --tpch`):
//! Q1 and Q6 on DataFusion's CPU plan against a plain-Rust oracle over the same Parquet file
//! (exact decimal sums and counts), the GPU engine's output against `--cpu` byte for byte,
//! `--out` in each format read back, tables by quoted path and by `--table`, `--explain`, and
//! the named errors after which no output file (or temporary) may exist.

mod common;

use std::collections::BTreeMap;
use std::fs::File;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type};
use arrow_array::RecordBatch;
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// TPC-H Q1 (pricing summary report), with the standard 90-day delta.
const Q1: &str = "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, \
    sum(l_extendedprice) AS sum_base_price, \
    sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, \
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, \
    avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, \
    avg(l_discount) AS avg_disc, count(*) AS count_order \
    FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY \
    GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus";

/// TPC-H Q6 (forecasting revenue change), with the standard parameters.
const Q6: &str = "SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem \
    WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
    AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND l_quantity < 24";

/// A scratch directory holding `lineitem.parquet` at SF 0.01.
fn lineitem(name: &str) -> (TempDir, String) {
    let t = TempDir::new(name);
    let path = t.path("lineitem.parquet");
    let args = [
        "generate-table",
        "--tpch",
        "lineitem",
        "--scale",
        "0.01",
        "--out",
        &path,
    ];
    assert_success(&args, &gpugraph(&args));
    (t, path)
}

fn run_ok(args: &[&str]) -> String {
    let out = gpugraph(args);
    assert_success(args, &out);
    text(&out.stdout)
}

fn read_parquet(path: &str) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil), so the oracle
/// needs no date crate.
fn days(y: i32, m: u32, d: u32) -> i32 {
    let y = (if m <= 2 { y - 1 } else { y }) as i64;
    let era = (if y >= 0 { y } else { y - 399 }) / 400;
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146097 + doe - 719468) as i32
}

/// `v` (a decimal of `scale` digits) as DataFusion prints it.
fn decimal(v: i128, scale: u32) -> String {
    let p = 10i128.pow(scale);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.abs();
    format!("{sign}{}.{:0width$}", a / p, a % p, width = scale as usize)
}

/// Plain-Rust Q6 and Q1 (count, sum_qty, sum_base_price per group) over the Parquet file.
struct Oracle {
    q6_revenue: String,
    q1: BTreeMap<(String, String), (u64, String, String)>,
}

fn oracle(path: &str) -> Oracle {
    let batches = read_parquet(path);
    let (lo, hi, q1_end) = (days(1994, 1, 1), days(1995, 1, 1), days(1998, 9, 2));
    let mut revenue = 0i128;
    let mut q1: BTreeMap<(String, String), (u64, i128, i128)> = BTreeMap::new();
    for b in &batches {
        let col = |n: &str| b.column(b.schema().index_of(n).unwrap()).clone();
        let dec = |n: &str| col(n).as_primitive::<Decimal128Type>().clone();
        let (qty, price, disc) = (dec("l_quantity"), dec("l_extendedprice"), dec("l_discount"));
        let ship = col("l_shipdate").as_primitive::<Date32Type>().clone();
        let flag = arrow_cast::cast(&col("l_returnflag"), &arrow_schema::DataType::Utf8).unwrap();
        let status = arrow_cast::cast(&col("l_linestatus"), &arrow_schema::DataType::Utf8).unwrap();
        let (flag, status) = (flag.as_string::<i32>(), status.as_string::<i32>());
        for i in 0..b.num_rows() {
            let s = ship.value(i);
            if s >= lo && s < hi && (5..=7).contains(&disc.value(i)) && qty.value(i) < 2400 {
                revenue += price.value(i) * disc.value(i);
            }
            if s <= q1_end {
                let e = q1
                    .entry((flag.value(i).to_string(), status.value(i).to_string()))
                    .or_default();
                e.0 += 1;
                e.1 += qty.value(i);
                e.2 += price.value(i);
            }
        }
    }
    Oracle {
        q6_revenue: decimal(revenue, 4),
        q1: q1
            .into_iter()
            .map(|(k, (n, q, p))| (k, (n, decimal(q, 2), decimal(p, 2))))
            .collect(),
    }
}

/// Rows of a CSV text after its header, split on commas (TPC-H Q1/Q6 results hold no commas).
fn csv_rows(csv: &str) -> Vec<Vec<String>> {
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn q1_and_q6_on_the_cpu_plan_match_a_plain_rust_oracle() {
    let (t, path) = lineitem("sql-oracle");
    let table = format!("lineitem={path}");
    let want = oracle(&path);
    let q6 = t.path("q6.csv");
    run_ok(&["sql", Q6, "--cpu", "--table", &table, "--out", &q6]);
    let rows = csv_rows(&std::fs::read_to_string(&q6).unwrap());
    assert_eq!(rows, vec![vec![want.q6_revenue.clone()]], "Q6 revenue");
    let q1 = t.path("q1.csv");
    run_ok(&["sql", Q1, "--cpu", "--table", &table, "--out", &q1]);
    let rows = csv_rows(&std::fs::read_to_string(&q1).unwrap());
    assert_eq!(rows.len(), want.q1.len(), "Q1 groups");
    assert_eq!(want.q1.len(), 4, "SF 0.01 has the four Q1 groups");
    for (row, ((flag, status), (count, qty, price))) in rows.iter().zip(&want.q1) {
        assert_eq!(
            (&row[0], &row[1], &row[2], &row[3], &row[9]),
            (flag, status, qty, price, &count.to_string()),
            "Q1 row {row:?}"
        );
    }
}

/// Exercises the GPU engine: until the GPU plans land, `Engine::Gpu` reports it is not
/// available and this fails; with them, the GPU plan must print exactly what the CPU does.
#[test]
fn q1_and_q6_gpu_output_is_identical_to_the_cpu_plan() {
    let (_t, path) = lineitem("sql-gpu-cpu");
    let table = format!("lineitem={path}");
    for (name, q) in [("Q1", Q1), ("Q6", Q6)] {
        let gpu = run_ok(&["sql", q, "--table", &table]);
        let cpu = run_ok(&["sql", q, "--cpu", "--table", &table]);
        assert_eq!(gpu, cpu, "{name}: GPU and CPU results differ");
        assert!(
            cpu.contains("l_returnflag") || cpu.contains("revenue"),
            "{cpu}"
        );
    }
    // The plan itself names its operators (GPU or CPU fallbacks).
    let plan = run_ok(&["sql", Q6, "--explain", "--table", &table]);
    assert!(plan.contains("Exec"), "{plan}");
}

/// `--devices`: two devices (on the one adapter here) print what one prints, the plan says
/// how many devices each aggregate uses, and bad lists are named errors.
#[test]
fn devices_split_the_aggregate_and_bad_lists_are_named() {
    let (_t, path) = lineitem("sql-devices");
    let table = format!("lineitem={path}");
    for q in [Q1, Q6] {
        let one = run_ok(&["sql", q, "--table", &table]);
        let args = ["sql", q, "--table", &table, "--devices", "0,0"];
        let out = gpugraph(&args);
        assert_success(&args, &out);
        assert_eq!(text(&out.stdout), one, "two devices print what one does");
        assert!(
            our_stderr(&out).contains("sql: 2 devices: "),
            "{}",
            our_stderr(&out)
        );
    }
    let plan = run_ok(&[
        "sql",
        Q6,
        "--explain",
        "--devices",
        "0,0",
        "--table",
        &table,
    ]);
    assert!(plan.contains("devices=2"), "{plan}");
    for (devices, says) in [
        ("7", "there is no adapter 7"),
        ("0,x", "'x' is not an adapter number"),
        ("", "empty"),
    ] {
        let out = gpugraph(&["sql", Q6, "--table", &table, "--devices", devices]);
        assert!(!out.status.success(), "--devices '{devices}' should fail");
        let err = our_stderr(&out);
        assert!(err.contains(says) && !err.contains("panicked"), "{err}");
    }
    let info = run_ok(&["info"]);
    assert!(
        info.contains("adapters (--devices N,M; * = --devices all)\n  0* "),
        "{info}"
    );
}

/// TPC-H Q14 (lineitem joined with part).
const Q14: &str = "SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' \
    THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / sum(l_extendedprice * (1 - l_discount)) \
    AS promo_revenue FROM lineitem, part WHERE l_partkey = p_partkey \
    AND l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01'";

#[test]
fn q14_joins_on_the_gpu_and_bench_tpch_checks_its_answers() {
    let (t, path) = lineitem("sql-q14");
    let part = t.path("part.parquet");
    let args = [
        "generate-table",
        "--tpch",
        "part",
        "--scale",
        "0.01",
        "--out",
        &part,
    ];
    assert_success(&args, &gpugraph(&args));
    let tables = [format!("lineitem={path}"), format!("part={part}")];
    let with = |extra: &[&str]| {
        let mut args = vec!["sql", Q14, "--table", &tables[0], "--table", &tables[1]];
        args.extend(extra);
        run_ok(&args)
    };
    let (gpu, cpu) = (with(&[]), with(&["--cpu"]));
    assert_eq!(gpu, cpu, "Q14: GPU and CPU results differ");
    assert!(cpu.contains("promo_revenue"), "{cpu}");
    let plan = with(&["--explain"]);
    assert!(plan.contains("GpuPartialAggregateExec: on=GPU"), "{plan}");
    assert!(plan.contains("lookup=[key=p_partkey"), "{plan}");
    // The bench compares every GPU variant's answer with the CPU's before timing.
    let out = run_ok(&[
        "bench",
        "tpch",
        "--scale",
        "0.01",
        "--query",
        "q14,q10,topk,q15,q21",
        "--repeat",
        "1",
        "--variants",
        "gpu-host,cpu-memory",
    ]);
    assert!(out.contains("q14") && out.contains("gpu-host"), "{out}");
    // Q10 joins four tables: the bench generates customer and nation for it.
    assert!(out.contains("q10"), "{out}");
    // The GPU top-k's answer matched the CPU's too.
    assert!(out.contains("topk"), "{out}");
    // The specification's texts: Q15 is a script (a view, the query, the view dropped), Q21
    // reads four tables through semi and anti joins.
    assert!(out.contains("q15") && out.contains("q21"), "{out}");
}

#[test]
fn join_queries_through_gpugraph_sql_match_the_cpu_plan() {
    use gpugraph_datafusion::tpch::{Q12, Q5};
    let (t, path) = lineitem("sql-joins");
    let mut tables = vec![format!("lineitem={path}")];
    for name in ["orders", "customer", "nation", "supplier", "region"] {
        let out = t.path(&format!("{name}.parquet"));
        let args = [
            "generate-table",
            "--tpch",
            name,
            "--scale",
            "0.01",
            "--out",
            &out,
        ];
        assert_success(&args, &gpugraph(&args));
        tables.push(format!("{name}={out}"));
    }
    // Q12 gathers orders by key; Q5 probes three lookup sides, customer by a gathered key.
    for (name, q, expect) in [("Q12", Q12, "MAIL"), ("Q5", Q5, "revenue")] {
        let mut args = vec!["sql", q];
        for t in &tables {
            args.extend(["--table", t.as_str()]);
        }
        let gpu = run_ok(&args);
        let plan = run_ok(&[args.as_slice(), &["--explain"]].concat());
        assert!(
            plan.contains("GpuPartialAggregateExec: on=GPU"),
            "{name}: {plan}"
        );
        args.push("--cpu");
        let cpu = run_ok(&args);
        assert_eq!(gpu, cpu, "{name}: GPU and CPU results differ");
        assert!(cpu.contains(expect), "{name}: {cpu}");
    }
    // Q5's answer names nations of ASIA: the comparison is not of two empty tables.
    let mut args = vec!["sql", gpugraph_datafusion::tpch::Q5, "--cpu"];
    for t in &tables {
        args.extend(["--table", t.as_str()]);
    }
    let cpu = run_ok(&args);
    assert!(
        ["INDIA", "CHINA", "JAPAN", "VIETNAM", "INDONESIA"]
            .iter()
            .any(|n| cpu.contains(n)),
        "{cpu}"
    );
}

#[test]
fn out_writes_each_format_and_reads_back_the_same_rows() {
    let (t, path) = lineitem("sql-out");
    let table = format!("lineitem={path}");
    let files: Vec<String> = ["q.parquet", "q.arrow", "q.feather", "q.csv"]
        .iter()
        .map(|f| t.path(f))
        .collect();
    for f in &files {
        let printed = run_ok(&["sql", Q1, "--cpu", "--table", &table, "--out", f]);
        assert!(printed.contains("4 rows ->"), "{printed}");
    }
    let parquet = read_parquet(&files[0]);
    assert_eq!(parquet.iter().map(RecordBatch::num_rows).sum::<usize>(), 4);
    for ipc in &files[1..3] {
        let reader =
            arrow_ipc::reader::FileReader::try_new(File::open(ipc).unwrap(), None).unwrap();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let a = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        let b = arrow_select::concat::concat_batches(&parquet[0].schema(), &parquet).unwrap();
        assert_eq!(
            a.columns(),
            b.columns(),
            "{ipc} differs from the Parquet output"
        );
    }
    // The CSV is what arrow's CSV writer makes of the Parquet output's rows.
    let mut expected = Vec::new();
    {
        let mut w = arrow_csv::WriterBuilder::new()
            .with_header(true)
            .build(&mut expected);
        for b in &parquet {
            w.write(b).unwrap();
        }
    }
    assert_eq!(
        std::fs::read_to_string(&files[3]).unwrap(),
        String::from_utf8(expected).unwrap()
    );
}

#[test]
fn tables_by_quoted_path_and_explain_on_the_cpu_plan() {
    let (_t, path) = lineitem("sql-url");
    let rows: usize = read_parquet(&path).iter().map(RecordBatch::num_rows).sum();
    let q = format!("SELECT count(*) AS n FROM '{path}'");
    let printed = run_ok(&["sql", &q, "--cpu"]);
    assert!(printed.contains(&format!("| {rows} |")), "{printed}");
    let plan = run_ok(&[
        "sql",
        Q6,
        "--cpu",
        "--explain",
        "--table",
        &format!("lineitem={path}"),
    ]);
    assert!(plan.contains("AggregateExec"), "{plan}");
    assert!(plan.contains("lineitem.parquet"), "{plan}");
}

#[test]
fn bad_sql_missing_files_and_unknown_extensions_fail_naming_the_problem() {
    let (t, path) = lineitem("sql-errors");
    let table = format!("lineitem={path}");
    let out = t.path("out.parquet");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["SELEC 1".into(), "--table".into(), table.clone()],
            "SELEC",
        ),
        (
            vec![
                "SELECT nope FROM lineitem".into(),
                "--table".into(),
                table.clone(),
            ],
            "nope",
        ),
        (
            vec![
                "SELECT 1 FROM t".into(),
                "--table".into(),
                format!("t={}", t.path("missing.parquet")),
            ],
            "missing.parquet: no such table file",
        ),
        (
            vec!["SELECT * FROM 'nowhere.parquet'".into()],
            "nowhere.parquet: no such table file",
        ),
        (
            vec![
                "SELECT 1 FROM t".into(),
                "--table".into(),
                format!("t={}", t.path("data.txt")),
            ],
            "unsupported table file extension .txt",
        ),
        (
            vec!["SELECT 1".into(), "--table".into(), "lineitem".into()],
            "expected NAME=PATH",
        ),
        (
            vec![
                "SELECT 1".into(),
                "--table".into(),
                table.clone(),
                "--table".into(),
                table.clone(),
            ],
            "given twice",
        ),
        (
            vec![format!("COPY (SELECT 1) TO '{}'", t.path("copied.csv"))],
            "not supported",
        ),
    ];
    for (args, needle) in &cases {
        let mut full: Vec<&str> = vec!["sql", "--cpu", "--out", &out];
        full.extend(args.iter().map(String::as_str));
        let err = fails_without_output(&full, &out);
        assert!(
            err.to_lowercase().contains(&needle.to_lowercase()),
            "{full:?}: stderr does not name '{needle}':\n{err}"
        );
        // Each cause once: DataFusion's errors print their sources themselves.
        assert_eq!(
            err.matches(needle).count(),
            1,
            "{full:?}: '{needle}' repeated:\n{err}"
        );
    }
    assert!(!std::path::Path::new(&t.path("copied.csv")).exists());
    let bad_out = t.path("out.txt");
    let err = fails_without_output(&["sql", "SELECT 1", "--cpu", "--out", &bad_out], &bad_out);
    assert!(err.contains("'.txt'"), "{err}");
}

/// A committed TPC-H query file (`gpugraph-datafusion/src/tpch/qN.sql`).
fn tpch_file(n: usize) -> String {
    let path = crate_file(&format!("../gpugraph-datafusion/src/tpch/q{n}.sql"));
    path.to_str().expect("utf-8").to_string()
}

#[test]
fn query_files_scripts_and_leading_comments_answer_like_the_cpu_plan() {
    let (t, path) = lineitem("sql-scripts");
    let mut tables = vec![format!("lineitem={path}")];
    for name in ["orders", "customer", "nation", "supplier"] {
        let out = t.path(&format!("{name}.parquet"));
        let args = [
            "generate-table",
            "--tpch",
            name,
            "--scale",
            "0.01",
            "--out",
            &out,
        ];
        assert_success(&args, &gpugraph(&args));
        tables.push(format!("{name}={out}"));
    }
    let with_tables = |mut args: Vec<String>| -> Vec<String> {
        for t in &tables {
            args.extend(["--table".to_string(), t.clone()]);
        }
        args
    };
    let run = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_ok(&args)
    };
    // Q15 is a script (create view, the query, drop view); Q7 needs extract(year from …),
    // Q22 substring(… from … for …). Each file opens with a `--` comment.
    for (n, expect) in [(15, "total_revenue"), (7, "supp_nation"), (22, "cntrycode")] {
        let file = tpch_file(n);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("-- TPC-H"), "{file}");
        let gpu = run(&with_tables(vec!["sql".into(), "-f".into(), file.clone()]));
        let cpu = run(&with_tables(vec![
            "sql".into(),
            "--cpu".into(),
            "--file".into(),
            file.clone(),
        ]));
        assert_eq!(gpu, cpu, "Q{n}: GPU and CPU results differ");
        assert!(gpu.contains(expect), "Q{n}: {gpu}");
        // A table of at least one row: header, rule, a row, rule.
        assert!(gpu.lines().count() >= 5, "Q{n} has no rows:\n{gpu}");
        // The same text on the command line: after `--`, and as the first argument.
        let mut after = with_tables(vec!["sql".into()]);
        after.extend(["--".to_string(), text.clone()]);
        assert_eq!(run(&after), gpu, "Q{n} after --");
        let first = with_tables(vec!["sql".into(), text.clone()]);
        assert_eq!(run(&first), gpu, "Q{n} as the first argument");
    }
    // The plan of a script is its last query's; the view it defined is gone afterwards.
    let plan = run(&with_tables(vec![
        "sql".into(),
        "--explain".into(),
        "-f".into(),
        tpch_file(15),
    ]));
    assert!(plan.contains("supplier.parquet"), "{plan}");
    // A write anywhere in a script refuses the whole script, naming the statement, before
    // anything runs.
    let copied = t.path("copied.csv");
    let out = t.path("never.csv");
    for (script, named) in [
        (
            format!("create view v as select 1 as a; copy v to '{copied}'"),
            "statement 2 of 2: COPY statements are not supported",
        ),
        (
            "-- a comment\ninsert into lineitem select * from lineitem; select 1".to_string(),
            "statement 1 of 2: INSERT INTO statements are not supported",
        ),
        (
            format!("create external table x stored as csv location '{copied}'; select 1"),
            "CREATE EXTERNAL TABLE statements are not supported",
        ),
        (
            "-- nothing but\n-- comments\n".to_string(),
            "no SQL statement to run",
        ),
        (
            "--bogus-option".to_string(),
            "'--bogus-option' is no option of gpugraph sql",
        ),
    ] {
        let mut args = vec!["sql", "--cpu", "--out", &out, "--table", &tables[0], "--"];
        args.push(&script);
        let err = fails_without_output(&args, &out);
        assert!(err.contains(named), "{script}: {err}");
        assert!(!std::path::Path::new(&copied).exists(), "{script}");
    }
    // `-f -` reads the script from standard input.
    let mut child = std::process::Command::new(binary())
        .args(with_tables(vec!["sql".into(), "-f".into(), "-".into()]))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts gpugraph");
    let q22 = std::fs::read_to_string(tpch_file(22)).unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), q22.as_bytes()).unwrap();
    let piped = child.wait_with_output().unwrap();
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    let from_file = run(&with_tables(vec!["sql".into(), "-f".into(), tpch_file(22)]));
    assert_eq!(text(&piped.stdout), from_file);
    let missing = t.path("missing.sql");
    let err = fails_without_output(&["sql", "-f", &missing, "--out", &out], &out);
    assert!(err.contains("missing.sql: cannot read the query"), "{err}");
}
