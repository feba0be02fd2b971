//! TPC-H Q1 and Q6 over lineitem (SF 0.01, tpchgen-arrow) in memory and from Parquet: the GPU
//! session's answer equals DataFusion's CPU answer exactly, and the plan runs on the GPU.

mod common;

use std::sync::Arc;

use common::{explain, gpu, same, sessions};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
use gpugraph_datafusion::datafusion::prelude::{ParquetReadOptions, SessionContext};
use tpchgen::generators::LineItemGenerator;
use tpchgen_arrow::LineItemArrow;

/// TPC-H Q1 as DataFusion's benchmarks write it (delta 90 days, folded by the simplifier).
const Q1: &str = "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
    sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty, \
    avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order \
    from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day \
    group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";

/// TPC-H Q6.
const Q6: &str = "select sum(l_extendedprice * l_discount) as revenue from lineitem \
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year \
    and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24";

fn lineitem() -> Vec<RecordBatch> {
    LineItemArrow::new(LineItemGenerator::new(0.01, 1, 1))
        .with_batch_size(8192)
        .collect::<Result<Vec<_>, _>>()
        .expect("tpchgen generates lineitem")
}

async fn check(gpu_ctx: &SessionContext, cpu_ctx: &SessionContext) {
    for q in [Q1, Q6] {
        let placement = same(gpu_ctx, cpu_ctx, q).await;
        assert_eq!(placement.gpu, 1, "{q}: {placement:?}");
        assert!(placement.fallbacks.is_empty(), "{q}: {placement:?}");
        assert!(placement.cpu.is_empty(), "{q}: {placement:?}");
        let text = explain(gpu_ctx, q).await;
        assert!(text.contains("GpuPartialAggregateExec: on=GPU"), "{text}");
        assert!(!text.contains("CpuFallbackExec"), "{text}");
    }
}

#[tokio::test]
async fn q1_q6_in_memory_match_the_cpu() {
    let gpu = gpu();
    let batches = lineitem();
    let schema = batches[0].schema();
    let (g, c) = sessions(&gpu);
    // Two partitions, as a multi-threaded scan would deliver them.
    let half = batches.len() / 2;
    let parts = vec![batches[..half].to_vec(), batches[half..].to_vec()];
    for ctx in [&g, &c] {
        let table = MemTable::try_new(Arc::clone(&schema), parts.clone()).expect("table");
        ctx.register_table("lineitem", Arc::new(table))
            .expect("registers");
    }
    check(&g, &c).await;
    // The columns of the first runs stay GPU-resident: the next run converts nothing.
    let text = explain(&g, &format!("ANALYZE {Q6}")).await;
    assert!(text.contains("gpu_cache_hits=1"), "{text}");
}

#[tokio::test]
async fn q1_q6_from_parquet_match_the_cpu() {
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
    let (g, c) = sessions(&gpu);
    for ctx in [&g, &c] {
        ctx.register_parquet(
            "lineitem",
            path.to_str().expect("utf-8"),
            ParquetReadOptions::default(),
        )
        .await
        .expect("registers");
    }
    check(&g, &c).await;
    // Both queries' columns are flat, non-null and dictionary-encoded: the GPU expands the
    // pages itself.
    for q in [Q1, Q6] {
        let text = explain(&g, &format!("ANALYZE {q}")).await;
        assert!(text.contains("page_decode=1"), "{text}");
        assert!(!text.contains("page_decode_refused"), "{text}");
    }
}
