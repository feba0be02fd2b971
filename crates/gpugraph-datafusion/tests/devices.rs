//! One GPU aggregate split over several devices (`gpugraph sql --devices`). On a one-GPU
//! machine (lavapipe in CI) the devices are several `wgpu::Device`s on the one adapter: the
//! split, the per-device runs, their merge and the all-or-nothing fallback are the same code
//! a host with several GPUs runs. Every answer is compared with DataFusion's CPU plan.

mod common;

use std::sync::Arc;

use common::{register, table};
use gpugraph_command::{ContextOptions, DeviceSelection, GpuContext};
use gpugraph_datafusion::datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use gpugraph_datafusion::datafusion::parquet::arrow::ArrowWriter;
use gpugraph_datafusion::datafusion::parquet::file::properties::WriterProperties;
use gpugraph_datafusion::datafusion::physical_plan::metrics::MetricValue;
use gpugraph_datafusion::datafusion::physical_plan::{collect, ExecutionPlan};
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use gpugraph_datafusion::{
    query, session_context_on_devices, Engine, GpuCache, GpuPartialAggregateExec, SessionOptions,
};

fn options(engine: Engine) -> SessionOptions {
    SessionOptions {
        engine,
        target_partitions: Some(2),
        ..SessionOptions::default()
    }
}

/// A GPU session over `n` devices on adapter 0 and a CPU session.
fn sessions(n: usize) -> (SessionContext, SessionContext) {
    let devices = GpuContext::for_devices(
        &DeviceSelection::Indices(vec![0; n]),
        &ContextOptions::from_env(),
    )
    .expect("a Vulkan adapter (lavapipe in CI) is required for GPU tests");
    assert_eq!(devices.len(), n);
    let devices: Vec<Arc<GpuContext>> = devices.into_iter().map(Arc::new).collect();
    let gpu = session_context_on_devices(&options(Engine::Gpu), devices, GpuCache::new(true))
        .expect("a session");
    let cpu = session_context_on_devices(
        &options(Engine::Cpu),
        vec![common::gpu()],
        GpuCache::new(false),
    )
    .expect("a session");
    (gpu, cpu)
}

/// The query's rows, sorted, as text; and the executed plan.
async fn rows_of(ctx: &SessionContext, sql: &str) -> (Vec<String>, Arc<dyn ExecutionPlan>) {
    let (plan, _) = query::plan(ctx, sql).await.expect("plans");
    let batches = collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let text = pretty_format_batches(&batches).expect("prints").to_string();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(str::to_string)
        .collect();
    lines.sort();
    (lines, plan)
}

/// The plan's GPU aggregates.
fn gpu_aggregates(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<Arc<dyn ExecutionPlan>>) {
    if plan.downcast_ref::<GpuPartialAggregateExec>().is_some() {
        out.push(Arc::clone(plan));
    }
    for child in plan.children() {
        gpu_aggregates(child, out);
    }
}

/// The `input_rows` of each share of the plan's one GPU aggregate, and its fallback.
fn shares_of(plan: &Arc<dyn ExecutionPlan>, devices: usize) -> (Vec<usize>, Option<String>) {
    let mut found = Vec::new();
    gpu_aggregates(plan, &mut found);
    assert_eq!(
        found.len(),
        1,
        "one GPU aggregate in\n{}",
        query::explain(plan.as_ref())
    );
    assert_eq!(common::placement(plan).gpu, 1);
    let exec = found[0]
        .downcast_ref::<GpuPartialAggregateExec>()
        .expect("a GPU aggregate");
    assert_eq!(exec.device_count(), devices);
    let mut per_share = vec![0usize; devices];
    for m in exec.metrics().expect("metrics").iter() {
        if let MetricValue::Count { name, count } = m.value() {
            if name == "input_rows" {
                per_share[m.partition().expect("a share")] += count.value();
            }
        }
    }
    (per_share, exec.fallback())
}

/// The sum of the plan's GPU aggregate's counter `name` over its shares.
fn counter(plan: &Arc<dyn ExecutionPlan>, name: &str) -> usize {
    let mut found = Vec::new();
    gpu_aggregates(plan, &mut found);
    found
        .iter()
        .flat_map(|e| {
            e.metrics()
                .expect("metrics")
                .iter()
                .cloned()
                .collect::<Vec<_>>()
        })
        .filter_map(|m| match m.value() {
            MetricValue::Count { name: n, count } if n == name => Some(count.value()),
            _ => None,
        })
        .sum()
}

const GROUPED: &str = "SELECT g, count(*), sum(v), min(v), max(v) FROM t GROUP BY g";

#[tokio::test]
async fn memory_tables_split_by_batch_and_a_refusing_share_falls_back_whole() {
    for (devices, rows) in [(2, 5_500), (3, 1_000), (3, 2_000), (2, 0)] {
        let (g, c) = sessions(devices);
        // Batches of 1,000 rows: 1,000 rows leave two of three devices without a batch.
        register([&g, &c], "t", table(rows, devices as u64, (0, 50), 0.1));
        let (want, _) = rows_of(&c, GROUPED).await;
        for round in ["cold", "warm"] {
            let (got, plan) = rows_of(&g, GROUPED).await;
            assert_eq!(got, want, "{devices} devices, {rows} rows, {round}");
            let (per_share, fallback) = shares_of(&plan, devices);
            assert_eq!(fallback, None);
            if round == "cold" {
                assert_eq!(per_share.iter().sum::<usize>(), rows, "{per_share:?}");
                let batches = rows.div_ceil(1000);
                for (s, &n) in per_share.iter().enumerate() {
                    assert_eq!(n > 0, s < batches, "share {s}: {per_share:?}");
                }
            }
        }
        let text = query::explain(rows_of(&g, GROUPED).await.1.as_ref());
        assert!(text.contains(&format!("devices={devices}")), "{text}");
    }
    // A value past 32 bits in the last batch only: its share refuses, so the whole query
    // runs DataFusion's plan once (never one share's GPU rows plus the CPU's).
    let (g, c) = sessions(2);
    let schema = Arc::new(Schema::new(vec![
        Field::new("g", DataType::Int32, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let batch = |v: i64| {
        let g: ArrayRef = Arc::new(Int32Array::from_iter_values((0..100).map(|i| i % 7)));
        let v: ArrayRef = Arc::new(Int64Array::from_iter_values((0..100).map(|i| v + i)));
        RecordBatch::try_new(Arc::clone(&schema), vec![g, v]).expect("batch")
    };
    let batches = vec![batch(1), batch(2), batch(3), batch(5_000_000_000)];
    register([&g, &c], "t", (Arc::clone(&schema), batches));
    let sql = "SELECT g, count(*), sum(v) FROM t GROUP BY g";
    let (want, _) = rows_of(&c, sql).await;
    let (got, plan) = rows_of(&g, sql).await;
    assert_eq!(got, want);
    let (_, fallback) = shares_of(&plan, 2);
    let why = fallback.expect("the second share refused");
    assert!(why.contains("column v"), "{why}");
}

#[tokio::test]
async fn parquet_row_groups_split_unevenly_and_answer_like_one_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.parquet");
    let (schema, batches) = table(7_300, 11, (0, 1_000), 0.0);
    // Row groups of 2,000 rows: 2,000 / 2,000 / 2,000 / 1,300.
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(2_000))
        .build();
    let file = std::fs::File::create(&path).expect("creates");
    let mut writer = ArrowWriter::try_new(file, schema, Some(props)).expect("writer");
    for b in &batches {
        writer.write(b).expect("writes");
    }
    writer.close().expect("closes");
    for devices in [2, 3, 5] {
        let (g, c) = sessions(devices);
        for ctx in [&g, &c] {
            query::register_file(ctx, "t", &path)
                .await
                .expect("registers");
        }
        // Whether the GPU decodes the query's pages itself (no group key, or string keys).
        for (sql, pages) in [
            (GROUPED, false),
            ("SELECT count(*) FROM t", true),
            ("SELECT count(*), sum(v), min(k) FROM t WHERE v > 0", true),
            ("SELECT k, sum(v) FROM t WHERE v > 0 GROUP BY k", false),
        ] {
            let (want, _) = rows_of(&c, sql).await;
            let (got, plan) = rows_of(&g, sql).await;
            assert_eq!(got, want, "{devices} devices: {sql}");
            let (per_share, fallback) = shares_of(&plan, devices);
            assert_eq!(fallback, None, "{sql}");
            assert_eq!(per_share.iter().sum::<usize>(), 7_300, "{sql}");
            // Four row groups: five devices leave one without any.
            let busy = per_share.iter().filter(|&&n| n > 0).count();
            assert_eq!(busy, devices.min(4), "{devices} devices: {per_share:?}");
            if !pages {
                continue;
            }
            // Every device decoded its pages (none, for one without row groups) on the GPU
            // through upload slabs of its own, which the next run reuses (a pool keeps one
            // device's slabs only).
            assert_eq!(
                counter(&plan, "page_decode"),
                devices,
                "{sql}: {}",
                query::explain(plan.as_ref())
            );
            let (again, plan) = rows_of(&g, sql).await;
            assert_eq!(again, want, "{devices} devices, again: {sql}");
            assert_eq!(
                counter(&plan, "upload_slabs_created"),
                0,
                "{devices} devices: {sql}"
            );
        }
    }
}
