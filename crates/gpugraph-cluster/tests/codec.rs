//! GPU units through the codec (TPC-H SF 0.01 from Parquet, lavapipe in CI): the units of
//! the scheduler's plans of Q1, Q3, Q6 and Q12 (GPU partial aggregates, finalizers and a
//! top-k among them) decode to the same plan text and the same answer; decoded where there is
//! no GPU they run DataFusion's plan with the same answer; whole plans through the codec
//! answer as DataFusion's CPU session does; a damaged unit is an error that says so.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use gpugraph_cluster::{cpu_planner, gpu_planner, scheduler_session_state, GpuCodec, GpuUnitExec};
use gpugraph_command::GpuContext;
use gpugraph_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use gpugraph_datafusion::datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use gpugraph_datafusion::datafusion::physical_plan::{collect, displayable, ExecutionPlan};
use gpugraph_datafusion::datafusion::prelude::{SessionConfig, SessionContext};
use gpugraph_datafusion::tpch::{Q1, Q12, Q3, Q6};
use gpugraph_datafusion::{session_context, Engine, SessionOptions};

const QUERIES: [(&str, &str); 4] = [("Q1", Q1), ("Q3", Q3), ("Q6", Q6), ("Q12", Q12)];

fn options(engine: Engine) -> SessionOptions {
    SessionOptions {
        engine,
        target_partitions: Some(2),
        ..SessionOptions::default()
    }
}

/// The units of `plan`, outermost first.
fn units(plan: &Arc<dyn ExecutionPlan>) -> Vec<Arc<dyn ExecutionPlan>> {
    let mut out = Vec::new();
    let _ = plan.apply(|node| {
        if node.downcast_ref::<GpuUnitExec>().is_some() {
            out.push(Arc::clone(node));
        }
        Ok(TreeNodeRecursion::Continue)
    });
    out
}

/// The names of the operators of `plan`.
fn operators(plan: &Arc<dyn ExecutionPlan>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let _ = plan.apply(|node| {
        out.insert(node.name().to_string());
        Ok(TreeNodeRecursion::Continue)
    });
    out
}

async fn answer(plan: Arc<dyn ExecutionPlan>, ctx: &SessionContext) -> String {
    let batches = collect(plan, ctx.task_ctx()).await.expect("runs");
    pretty_format_batches(&batches)
        .expect("formats")
        .to_string()
}

/// `answer`'s lines in order: a unit's rows come in no particular order (the query's
/// `ORDER BY`, if any, sits above it).
fn rows(answer: String) -> Vec<String> {
    let mut lines: Vec<String> = answer.lines().map(String::from).collect();
    lines.sort();
    lines
}

fn text(plan: &Arc<dyn ExecutionPlan>) -> String {
    displayable(plan.as_ref()).indent(true).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_travel_and_answer_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    common::write_tpch(dir.path());
    let gpu = Arc::new(GpuContext::new().expect("a Vulkan adapter (lavapipe in CI)"));
    let planner = gpu_planner(Arc::clone(&gpu), &options(Engine::Gpu));
    let codec = GpuCodec::new(planner.clone());
    let cpu_codec = GpuCodec::new(cpu_planner(&options(Engine::Cpu)));
    let config = SessionConfig::new().with_target_partitions(2);
    let scheduler = SessionContext::new_with_state(
        scheduler_session_state(&planner, config).expect("scheduler session"),
    );
    let reference = session_context(&options(Engine::Cpu)).expect("CPU session");
    common::register(&scheduler, dir.path()).await;
    common::register(&reference, dir.path()).await;

    let mut ran = BTreeSet::new();
    for (name, sql) in QUERIES {
        let plan = scheduler
            .sql(sql)
            .await
            .expect("plans")
            .create_physical_plan()
            .await
            .expect("plans");
        let found = units(&plan);
        assert!(!found.is_empty(), "{name}: no GPU unit in\n{}", text(&plan));
        for unit in found {
            let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&unit), &codec)
                .expect("encodes");
            let back = physical_plan_from_bytes_with_extension_codec(
                &bytes,
                &scheduler.task_ctx(),
                &codec,
            )
            .expect("decodes");
            assert_eq!(
                text(&back),
                text(&unit),
                "{name}: the unit decodes the same"
            );
            let on_cpu = physical_plan_from_bytes_with_extension_codec(
                &bytes,
                &scheduler.task_ctx(),
                &cpu_codec,
            )
            .expect("decodes without a GPU");
            let cpu_unit = on_cpu.downcast_ref::<GpuUnitExec>().expect("a unit");
            assert!(
                !operators(cpu_unit.planned())
                    .iter()
                    .any(|o| o.starts_with("Gpu")),
                "{name}: a GPU-less process plans DataFusion's operators:\n{}",
                text(cpu_unit.planned())
            );
            let want = rows(answer(Arc::clone(&unit), &scheduler).await);
            assert_eq!(
                rows(answer(Arc::clone(&back), &scheduler).await),
                want,
                "{name}"
            );
            assert_eq!(
                rows(answer(on_cpu, &scheduler).await),
                want,
                "{name} on the CPU"
            );
            let decoded = back.downcast_ref::<GpuUnitExec>().expect("a unit");
            ran.extend(operators(decoded.planned()));
            // The unit reports the GPU execs that ran, none of them on the CPU.
            let metrics = back.metrics().expect("a unit has metrics");
            let count = |m: &str| metrics.sum_by_name(m).map(|v| v.as_usize());
            assert!(count("gpu_execs").unwrap_or(0) > 0, "{name}: {metrics}");
            assert_eq!(count("gpu_fallbacks"), Some(0), "{name}: {metrics}");
        }
        // The whole plan through the codec answers as DataFusion's CPU session.
        let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &codec)
            .expect("encodes");
        let back =
            physical_plan_from_bytes_with_extension_codec(&bytes, &scheduler.task_ctx(), &codec)
                .expect("decodes");
        let want = reference
            .sql(sql)
            .await
            .expect("plans")
            .collect()
            .await
            .expect("runs");
        let want = pretty_format_batches(&want).expect("formats").to_string();
        assert_eq!(answer(back, &scheduler).await, want, "{name}");
    }
    for exec in ["GpuPartialAggregateExec", "GpuFinalizeExec", "GpuTopKExec"] {
        assert!(ran.contains(exec), "no unit ran a {exec}: {ran:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_unit_is_a_named_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    common::write_tpch(dir.path());
    let gpu = Arc::new(GpuContext::new().expect("a Vulkan adapter (lavapipe in CI)"));
    let planner = gpu_planner(gpu, &options(Engine::Gpu));
    let codec = GpuCodec::new(planner.clone());
    let scheduler = SessionContext::new_with_state(
        scheduler_session_state(&planner, SessionConfig::new().with_target_partitions(2))
            .expect("scheduler session"),
    );
    common::register(&scheduler, dir.path()).await;
    let plan = scheduler
        .sql(Q6)
        .await
        .expect("plans")
        .create_physical_plan()
        .await
        .expect("plans");
    let unit = units(&plan).remove(0);
    let mut buf = Vec::new();
    use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
    let converter = DefaultPhysicalProtoConverter {};
    codec
        .try_encode(Arc::clone(&unit), &mut buf, &converter)
        .expect("encodes");
    let ctx = scheduler.task_ctx();
    let decode = |b: &[u8]| {
        codec
            .try_decode(b, &[], &ctx, &converter)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(decode(&buf), Ok(()));
    // A later format of the unit: refused, naming both formats.
    let tag_end = buf
        .iter()
        .skip(1)
        .position(|&b| b == 1)
        .expect("the version byte")
        + 1;
    let mut newer = buf.clone();
    newer[tag_end] = 2;
    let err = decode(&newer).expect_err("a newer format is refused");
    assert!(err.contains("format 2"), "{err}");
    // A cut body: refused by the plan decoder, not a panic.
    let err = decode(&buf[..buf.len() / 2]).expect_err("a cut unit is refused");
    assert!(!err.is_empty());
    // A unit given children it cannot have.
    let err = codec
        .try_decode(&buf, &[Arc::clone(&plan)], &ctx, &converter)
        .map(|_| ())
        .expect_err("children are refused");
    assert!(err.to_string().contains("no inputs"), "{err}");
}
