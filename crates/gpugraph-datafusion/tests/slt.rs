//! The sqllogictest files of `tests/slt/` (NULL, empty and overflow cases of the GPU's
//! operators), run by the `sqllogictest` crate through a GPU session. Every statement runs
//! in a CPU session too, and a query whose rows differ from DataFusion's CPU answer fails
//! whatever the file expects, so a wrong expectation cannot hide a wrong answer. Each file
//! states in its first line how many of its queries run a GPU aggregate without falling
//! back (`# gpu queries: N`), which the test checks: a case that silently left the GPU
//! would pass on the CPU's answer otherwise.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{gpu, placement, sessions};
use gpugraph_datafusion::datafusion::arrow::datatypes::DataType;
use gpugraph_datafusion::datafusion::arrow::record_batch::RecordBatch;
use gpugraph_datafusion::datafusion::arrow::util::display::array_value_to_string;
use gpugraph_datafusion::datafusion::error::DataFusionError;
use gpugraph_datafusion::datafusion::physical_plan::{collect, ExecutionPlan};
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};

/// The GPU session and its CPU twin, and the count of queries that ran on the GPU.
struct Both {
    gpu: SessionContext,
    cpu: SessionContext,
    on_gpu: Arc<AtomicUsize>,
}

/// The rows of `sql` on `ctx` as text (`NULL` for nulls), each column's type, and the plan.
async fn rows(
    ctx: &SessionContext,
    sql: &str,
) -> Result<
    (
        Vec<DefaultColumnType>,
        Vec<Vec<String>>,
        Arc<dyn ExecutionPlan>,
    ),
    DataFusionError,
> {
    let plan = ctx.sql(sql).await?.create_physical_plan().await?;
    let batches: Vec<RecordBatch> = collect(Arc::clone(&plan), ctx.task_ctx()).await?;
    let types = plan
        .schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            t if t.is_integer() => DefaultColumnType::Integer,
            t if t.is_floating() || matches!(t, DataType::Decimal128(..)) => {
                DefaultColumnType::FloatingPoint
            }
            _ => DefaultColumnType::Text,
        })
        .collect();
    let mut out = Vec::new();
    for b in &batches {
        for r in 0..b.num_rows() {
            let row = b
                .columns()
                .iter()
                .map(|c| {
                    if c.is_null(r) {
                        Ok("NULL".to_string())
                    } else {
                        array_value_to_string(c, r)
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.push(row);
        }
    }
    Ok((types, out, plan))
}

#[async_trait::async_trait]
impl AsyncDB for Both {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let (types, g, plan) = rows(&self.gpu, sql).await?;
        let (_, c, _) = rows(&self.cpu, sql).await?;
        let sorted = |mut r: Vec<Vec<String>>| {
            r.sort();
            r
        };
        if sorted(g.clone()) != sorted(c.clone()) {
            return Err(DataFusionError::Execution(format!(
                "the GPU session answers {g:?}, DataFusion's CPU plan {c:?}"
            )));
        }
        let statement = ["CREATE", "DROP"]
            .iter()
            .any(|w| sql.trim_start().to_uppercase().starts_with(w));
        if statement {
            return Ok(DBOutput::StatementComplete(0));
        }
        let p = placement(&plan);
        if p.gpu > 0 && p.fallbacks.is_empty() {
            self.on_gpu.fetch_add(1, Ordering::Relaxed);
        }
        Ok(DBOutput::Rows { types, rows: g })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "gpugraph"
    }
}

/// Runs `file` and checks its `# gpu queries: N` line.
async fn run_file(file: &Path) {
    let text = std::fs::read_to_string(file).expect("reads the file");
    let wanted: usize = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# gpu queries: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{}: no `# gpu queries: N` first line", file.display()));
    let device = gpu();
    let on_gpu = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&on_gpu);
    let mut runner = Runner::new(move || {
        let (gpu, cpu) = sessions(&device);
        let on_gpu = Arc::clone(&counter);
        async move { Ok::<_, DataFusionError>(Both { gpu, cpu, on_gpu }) }
    });
    if let Err(e) = runner.run_file_async(file).await {
        panic!("{}: {e}", file.display());
    }
    assert_eq!(
        on_gpu.load(Ordering::Relaxed),
        wanted,
        "{}: queries that ran on the GPU",
        file.display()
    );
}

#[tokio::test]
async fn sqllogictest_files_pass_on_the_gpu_session() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/slt")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt file in {}", dir.display());
    for file in files {
        run_file(&file).await;
    }
}
