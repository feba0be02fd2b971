//! Shared helpers of the cluster tests: TPC-H SF 0.01 tables as Parquet files.

use std::path::Path;

use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
use gpugraph_datafusion::datafusion::parquet::file::properties::WriterProperties;
use gpugraph_datafusion::datafusion::prelude::{ParquetReadOptions, SessionContext};
use tpchgen::generators::{CustomerGenerator, LineItemGenerator, OrderGenerator};
use tpchgen_arrow::{CustomerArrow, LineItemArrow, OrderArrow};

/// The tables TPC-H Q1, Q3, Q6 and Q12 read.
pub const TABLES: [&str; 3] = ["lineitem", "orders", "customer"];

fn batches(name: &str) -> Vec<RecordBatch> {
    let all = |b: Result<Vec<RecordBatch>, _>| b.expect("tpchgen generates the table");
    match name {
        "lineitem" => all(LineItemArrow::new(LineItemGenerator::new(0.01, 1, 1))
            .with_batch_size(8192)
            .collect()),
        "orders" => all(OrderArrow::new(OrderGenerator::new(0.01, 1, 1))
            .with_batch_size(4096)
            .collect()),
        _ => all(CustomerArrow::new(CustomerGenerator::new(0.01, 1, 1))
            .with_batch_size(1024)
            .collect()),
    }
}

/// Writes each of [`TABLES`] to `dir/NAME.parquet` (row groups of 16384 rows, so a scan
/// splits into several partitions).
pub fn write_tpch(dir: &Path) {
    for name in TABLES {
        let rows = batches(name);
        let file = std::fs::File::create(dir.join(format!("{name}.parquet"))).expect("creates");
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(16384))
            .build();
        let mut writer = ArrowWriter::try_new(file, rows[0].schema(), Some(props)).expect("writer");
        for b in &rows {
            writer.write(b).expect("writes");
        }
        writer.close().expect("closes");
    }
}

/// Registers [`TABLES`] from `dir` in `ctx`.
#[allow(dead_code)] // The loopback test registers through the client.
pub async fn register(ctx: &SessionContext, dir: &Path) {
    for name in TABLES {
        let path = dir.join(format!("{name}.parquet"));
        ctx.register_parquet(
            name,
            path.to_str().expect("utf-8"),
            ParquetReadOptions::default(),
        )
        .await
        .expect("registers");
    }
}
