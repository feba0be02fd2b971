//! Shared helpers of the GPU-vs-CPU SQL tests (included by each test file).

use std::sync::Arc;

use gpugraph_command::GpuContext;
use gpugraph_datafusion::datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
use gpugraph_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use gpugraph_datafusion::datafusion::datasource::MemTable;
use gpugraph_datafusion::datafusion::physical_plan::{collect, ExecutionPlan};
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use gpugraph_datafusion::{
    session_context_on, CpuFallbackExec, Engine, GpuFinalizeExec, GpuPartialAggregateExec,
    GpuTopKExec, SessionOptions,
};
use rand::{Rng, SeedableRng};

pub fn gpu() -> Arc<GpuContext> {
    Arc::new(gpugraph_testing::ctx())
}

/// A GPU and a CPU session with two partitions each.
/// The GPU session takes every `ORDER BY … LIMIT` ([`SessionOptions::topk_host_inputs`]),
/// so the top-k tests reach the selection over every key type.
#[allow(dead_code)] // The TPC-H query suite runs scripts through `query::plan`.
pub fn sessions(gpu: &Arc<GpuContext>) -> (SessionContext, SessionContext) {
    let options = |engine| SessionOptions {
        engine,
        target_partitions: Some(2),
        topk_host_inputs: true,
        ..SessionOptions::default()
    };
    (
        session_context_on(&options(Engine::Gpu), Arc::clone(gpu), true),
        session_context_on(&options(Engine::Cpu), Arc::clone(gpu), false),
    )
}

/// What the GPU execs of a plan said after running: (GPU aggregates, GPU top-k execs, their
/// fallback reasons, the planning-time CPU reasons).
#[derive(Debug, Default)]
pub struct Placement {
    pub gpu: usize,
    #[allow(dead_code)] // Read by the top-k tests only.
    pub topk: usize,
    /// Final aggregates finished without a merge, and those of them that merged on the CPU
    /// after all (their partial aggregate fell back).
    pub finalize: usize,
    pub merged: usize,
    pub fallbacks: Vec<String>,
    pub cpu: Vec<String>,
}

fn walk(plan: &Arc<dyn ExecutionPlan>, out: &mut Placement) {
    if let Some(g) = plan.downcast_ref::<GpuPartialAggregateExec>() {
        out.gpu += 1;
        out.fallbacks.extend(g.fallback());
    }
    if plan.downcast_ref::<GpuFinalizeExec>().is_some() {
        out.finalize += 1;
        let merged = plan
            .metrics()
            .and_then(|m| m.sum_by_name("merged_on_cpu"))
            .map_or(0, |v| v.as_usize());
        out.merged += usize::from(merged > 0);
    }
    if let Some(t) = plan.downcast_ref::<GpuTopKExec>() {
        out.topk += 1;
        out.fallbacks.extend(t.fallback_reason());
    }
    if let Some(c) = plan.downcast_ref::<CpuFallbackExec>() {
        out.cpu.push(c.reason().to_string());
    }
    for child in plan.children() {
        walk(child, out);
    }
}

/// Where an executed `plan`'s operators ran (run-time fallbacks are known only after it ran).
#[allow(dead_code)] // Read by the TPC-H query suite only.
pub fn placement(plan: &Arc<dyn ExecutionPlan>) -> Placement {
    let mut placement = Placement::default();
    walk(plan, &mut placement);
    placement
}

/// Runs `sql` on `ctx`: its result, printed, and where it ran.
#[allow(dead_code)] // The TPC-H query suite runs scripts through `query::plan`.
pub async fn run(ctx: &SessionContext, sql: &str) -> (String, Placement) {
    let df = ctx.sql(sql).await.expect("plans");
    let plan = df.create_physical_plan().await.expect("physical plan");
    let batches: Vec<RecordBatch> = collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut placement = Placement::default();
    walk(&plan, &mut placement);
    (
        pretty_format_batches(&batches).expect("prints").to_string(),
        placement,
    )
}

/// Runs `sql` on both sessions and asserts equal results; returns the GPU side's placement.
#[allow(dead_code)] // The TPC-H query suite runs scripts through `query::plan`.
pub async fn same(gpu: &SessionContext, cpu: &SessionContext, sql: &str) -> Placement {
    let (g, placement) = run(gpu, sql).await;
    let (c, _) = run(cpu, sql).await;
    assert_eq!(g, c, "{sql}\nGPU:\n{g}\nCPU:\n{c}\nplacement {placement:?}");
    placement
}

/// The EXPLAIN text of `sql`.
#[allow(dead_code)] // Not every test file explains.
pub async fn explain(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .expect("plans")
        .collect()
        .await
        .expect("explains");
    pretty_format_batches(&batches).expect("prints").to_string()
}

/// `rows` rows of (k, g, v) in batches of at most 1,000: k from `keys` (NULL with
/// probability `nulls`; a non-nullable column when 0), g in 0..5, v in ±10^6.
#[allow(dead_code)] // The join tests only.
pub fn table(
    rows: usize,
    seed: u64,
    keys: (i32, i32),
    nulls: f64,
) -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, nulls > 0.0),
        Field::new("g", DataType::Int32, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut batches = Vec::new();
    let mut left = rows;
    while left > 0 || batches.is_empty() {
        let n = left.min(1000);
        let k: Int32Array = (0..n)
            .map(|_| (!rng.random_bool(nulls)).then(|| rng.random_range(keys.0..keys.1)))
            .collect();
        let g: Int32Array = (0..n).map(|_| Some(rng.random_range(0..5))).collect();
        let v: Int64Array = (0..n)
            .map(|_| Some(rng.random_range(-1_000_000..1_000_000)))
            .collect();
        let columns: Vec<ArrayRef> = vec![Arc::new(k), Arc::new(g), Arc::new(v)];
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch"));
        left -= n;
    }
    (schema, batches)
}

/// Registers the same table as `name` in both sessions (GPU and CPU).
#[allow(dead_code)] // The join tests only.
pub fn register(
    ctxs: [&SessionContext; 2],
    name: &str,
    (schema, batches): (Arc<Schema>, Vec<RecordBatch>),
) {
    for ctx in ctxs {
        let table = MemTable::try_new(Arc::clone(&schema), vec![batches.clone()]).expect("table");
        ctx.register_table(name, Arc::new(table))
            .expect("registers");
    }
}
