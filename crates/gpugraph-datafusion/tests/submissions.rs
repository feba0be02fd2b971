//! Queue submissions (and readback maps) per query: TPC-H Q1 and Q6 (SF 0.01, tpchgen-arrow) in memory and from
//! Parquet, the first run (conversion or page decoding, uploads, the aggregate) and the
//! second (the GPU column cache's, or the slabs' reuse). A submission costs the submitting
//! thread a fixed price (0.68 ms on the H200 host, `exec/paged.rs`), so porting a kernel
//! must not add any: each count is at most what the kernels submitted before they were
//! command graphs (measured on lavapipe at 512ca23, printed by this test). The answers are
//! the CPU session's.

mod common;

use std::sync::Arc;

use common::{gpu, run, same, sessions};
use gpugraph_command::GpuContext;
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
use gpugraph_datafusion::datafusion::prelude::{ParquetReadOptions, SessionContext};
use gpugraph_datafusion::tpch::{Q1, Q6};
use tpchgen::generators::LineItemGenerator;
use tpchgen_arrow::LineItemArrow;

fn lineitem() -> Vec<RecordBatch> {
    LineItemArrow::new(LineItemGenerator::new(0.01, 1, 1))
        .with_batch_size(8192)
        .collect::<Result<Vec<_>, _>>()
        .expect("tpchgen generates lineitem")
}

/// The index of a new, empty submission. wgpu numbers a queue's submissions in order (and
/// shows the number only through `Debug`); a buffer map request takes a number too, so the
/// counts below are submissions plus readback maps: a wait a kernel adds counts as well.
fn submission_index(gpu: &GpuContext) -> u64 {
    let encoder = gpu.device.create_command_encoder(&Default::default());
    let index = gpu.queue.submit([encoder.finish()]);
    let text = format!("{index:?}");
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no submission number in {text}"))
}

/// Submissions of two runs of `sql` on `g` (each checked against `c`).
async fn submissions(
    gpu: &GpuContext,
    g: &SessionContext,
    c: &SessionContext,
    sql: &str,
) -> [u64; 2] {
    let mut counts = [0; 2];
    for count in &mut counts {
        let before = submission_index(gpu);
        let (got, placement) = run(g, sql).await;
        let after = submission_index(gpu);
        assert_eq!(placement.gpu, 1, "{placement:?}");
        assert!(placement.fallbacks.is_empty(), "{placement:?}");
        let (expected, _) = run(c, sql).await;
        assert_eq!(got, expected, "{sql}");
        *count = after - before - 1;
    }
    counts
}

/// At most the submissions of the kernels before they were command graphs, per query and
/// source: [first run, second run].
const BEFORE: [(&str, &str, [u64; 2]); 4] = [
    ("memory", "Q1", [2, 2]),
    ("memory", "Q6", [2, 2]),
    ("parquet", "Q1", [19, 19]),
    ("parquet", "Q6", [13, 13]),
];

#[tokio::test]
async fn q1_q6_submit_no_more_than_before() {
    let gpu = gpu();
    let batches = lineitem();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("lineitem.parquet");
    let file = std::fs::File::create(&path).expect("creates");
    let mut writer = ArrowWriter::try_new(file, batches[0].schema(), None).expect("writer");
    for b in &batches {
        writer.write(b).expect("writes");
    }
    writer.close().expect("closes");
    let mut measured = Vec::new();
    for source in ["memory", "parquet"] {
        // A session per source, so the column cache of one does not serve the other.
        let (g, c) = sessions(&gpu);
        for ctx in [&g, &c] {
            if source == "memory" {
                let half = batches.len() / 2;
                let parts = vec![batches[..half].to_vec(), batches[half..].to_vec()];
                let table = MemTable::try_new(batches[0].schema(), parts).expect("table");
                ctx.register_table("lineitem", Arc::new(table))
                    .expect("registers");
            } else {
                ctx.register_parquet(
                    "lineitem",
                    path.to_str().expect("utf-8"),
                    ParquetReadOptions::default(),
                )
                .await
                .expect("registers");
            }
        }
        for (name, sql) in [("Q1", Q1), ("Q6", Q6)] {
            measured.push((source, name, submissions(&gpu, &g, &c, sql).await));
            // A third run, still on the GPU and still the CPU's answer.
            assert_eq!(same(&g, &c, sql).await.gpu, 1);
        }
    }
    eprintln!("submissions [first run, second run]: {measured:?}");
    for ((source, name, got), (s, n, most)) in measured.iter().zip(BEFORE) {
        assert_eq!((*source, *name), (s, n));
        assert!(
            got[0] <= most[0] && got[1] <= most[1],
            "{source} {name}: {got:?} submissions, {most:?} before"
        );
    }
}
