//! `gpugraph.SessionContext`'s compiled half: one DataFusion session that lives across
//! queries, shaped like datafusion-python's (`register_parquet`, `register_record_batches`,
//! `sql(...)` returning a frame that collects to Arrow).
//!
//! Why a session beside the one-shot `gpugraph.sql`: the one-shot form registers its tables
//! anew every call, so in-memory tables are converted and uploaded to the GPU every time. A
//! session keeps its registered tables and a GPU column cache keyed by their batches, so the
//! second query over an in-memory table finds its columns already on the GPU ("warm"), and
//! views or tables a script defines stay defined for later queries.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_pyarrow::PyArrowType;
use gpugraph_datafusion::cache::GpuCache;
use gpugraph_datafusion::datafusion::execution::TaskContext;
use gpugraph_datafusion::datafusion::physical_plan::execution_plan::reset_plan_states;
use gpugraph_datafusion::datafusion::physical_plan::metrics::MetricValue;
use gpugraph_datafusion::datafusion::physical_plan::{collect, ExecutionPlan};
use gpugraph_datafusion::datafusion::prelude::SessionContext;
use gpugraph_datafusion::query::{self, QueryError, TableFormat};
use gpugraph_datafusion::{session_context, session_context_sharing, Engine, SessionOptions};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;

use crate::sql::{query_error, runtime, session_error, source, Source};

/// A DataFusion session on the GPU (or CPU) engine that keeps its tables, its definitions
/// and its GPU column cache across queries.
#[pyclass(name = "Session", module = "gpugraph._native")]
pub struct Session {
    ctx: SessionContext,
    engine: &'static str,
}

/// A GPU session over the devices `list` names (`gpugraph sql --devices` syntax): a list that
/// does not parse or names a missing adapter is a `ValueError`, a device that does not open a
/// `RuntimeError`.
fn devices_session(options: &SessionOptions, list: &str) -> PyResult<SessionContext> {
    use gpugraph_command::{ContextError, ContextOptions, DeviceSelection, GpuContext};
    let selection: DeviceSelection =
        list.parse()
            .map_err(|e: gpugraph_command::ParseDeviceSelectionError| {
                PyValueError::new_err(e.to_string())
            })?;
    let devices =
        GpuContext::for_devices(&selection, &ContextOptions::from_env()).map_err(|e| {
            let text = format!("devices='{selection}': {e}");
            match e {
                ContextError::NoSuchAdapter { .. } => PyValueError::new_err(text),
                _ => pyo3::exceptions::PyRuntimeError::new_err(text),
            }
        })?;
    let devices = devices.into_iter().map(Arc::new).collect();
    gpugraph_datafusion::session_context_on_devices(options, devices, GpuCache::new(true))
        .map_err(session_error)
}

#[pymethods]
impl Session {
    /// A new session: `engine` "gpu" or "cpu"; `target_partitions` DataFusion's CPU threads
    /// (default: the cores); `memory_limit` bytes DataFusion's operators may hold; `devices`
    /// the GPUs each aggregate splits its input over, as `gpugraph sql --devices` takes them
    /// ("all" or "0,1"; default: the process's one device).
    #[new]
    #[pyo3(signature = (engine = "gpu", target_partitions = None, memory_limit = None, devices = None))]
    fn new(
        engine: &str,
        target_partitions: Option<usize>,
        memory_limit: Option<usize>,
        devices: Option<&str>,
    ) -> PyResult<Self> {
        let kind = crate::sql::engine(engine)?;
        if target_partitions == Some(0) {
            return Err(PyValueError::new_err(
                "target_partitions must be at least 1",
            ));
        }
        let options = SessionOptions {
            engine: kind,
            target_partitions,
            memory_limit,
            ..SessionOptions::default()
        };
        let ctx = match (kind, devices) {
            (Engine::Cpu, Some(_)) => {
                return Err(PyValueError::new_err(
                    "devices= is for the GPU engine; engine='cpu' runs DataFusion's CPU plan",
                ))
            }
            (Engine::Gpu, Some(list)) => devices_session(&options, list)?,
            // The process's device (shared with the array functions and `sql`), and a cache
            // of its own that keeps in-memory tables' columns on the GPU across queries.
            (Engine::Gpu, None) => session_context_sharing(
                &options,
                Arc::clone(crate::shared_context()?),
                GpuCache::new(true),
            ),
            (Engine::Cpu, None) => session_context(&options).map_err(session_error)?,
        }
        .enable_url_table();
        Ok(Self {
            ctx,
            engine: if kind == Engine::Gpu { "gpu" } else { "cpu" },
        })
    }

    /// "gpu" or "cpu".
    #[getter]
    fn engine(&self) -> &'static str {
        self.engine
    }

    /// Registers the file at `path` as table `name`; `format` ("parquet", "csv", "arrow")
    /// must match the file's extension when given. The schema is read now.
    #[pyo3(signature = (name, path, format = None))]
    fn register_file(
        &self,
        py: Python<'_>,
        name: &str,
        path: PathBuf,
        format: Option<&str>,
    ) -> PyResult<()> {
        if let Some(want) = format {
            let have = TableFormat::of(&path).map_err(query_error)?;
            let have = match have {
                TableFormat::Parquet => "parquet",
                TableFormat::Csv => "csv",
                TableFormat::Arrow => "arrow",
            };
            if have != want {
                return Err(PyValueError::new_err(format!(
                    "register_{want}('{name}', '{}'): the file's extension says {have}",
                    path.display()
                )));
            }
        }
        let ctx = self.ctx.clone();
        let name = name.to_string();
        let runtime = runtime()?;
        py.detach(move || {
            runtime.block_on(async move { query::register_file(&ctx, &name, &path).await })
        })
        .map_err(query_error)
    }

    /// Registers `data` (anything with `__arrow_c_stream__`: a pyarrow Table or
    /// RecordBatchReader) as the in-memory table `name`, sharing its buffers.
    fn register_stream(&self, name: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        match source(name, data)? {
            Source::Batches(schema, batches) => {
                query::register_batches(&self.ctx, name, schema, batches).map_err(query_error)
            }
            Source::File(_) => Err(PyValueError::new_err(format!(
                "register_record_batches('{name}'): expected Arrow data, got a path"
            ))),
        }
    }

    /// Removes table (or view) `name`; raises `KeyError` when there is none.
    fn deregister_table(&self, name: &str) -> PyResult<()> {
        match self.ctx.deregister_table(name) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(PyKeyError::new_err(format!("no table named '{name}'"))),
            Err(e) => Err(PyValueError::new_err(e.to_string())),
        }
    }

    /// Whether a table or view `name` is registered.
    fn table_exist(&self, name: &str) -> PyResult<bool> {
        self.ctx
            .table_exist(name)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The registered tables and views, sorted.
    fn table_names(&self) -> Vec<String> {
        let state = self.ctx.state();
        let at = &state.config().options().catalog;
        let mut names = self
            .ctx
            .catalog(&at.default_catalog)
            .and_then(|c| c.schema(&at.default_schema))
            .map(|s| s.table_names())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Plans `query` (a query or a script: its definitions run now, in order); the returned
    /// plan runs each time it is collected.
    fn plan(&self, py: Python<'_>, query: &str) -> PyResult<Plan> {
        let ctx = self.ctx.clone();
        let query = query.to_string();
        let runtime = runtime()?;
        let plan = py
            .detach(move || runtime.block_on(async move { query::plan(&ctx, &query).await }))
            .map_err(query_error)?
            .0;
        Ok(Plan {
            plan: Mutex::new((plan, false)),
            task: self.ctx.task_ctx(),
        })
    }
}

/// A planned query of a [`Session`]: collect it (again) or explain it.
#[pyclass(name = "Plan", module = "gpugraph._native")]
pub struct Plan {
    /// The plan and whether it ran: operators keep run state (a repartition's channels), so
    /// a plan that ran is reset (`reset_plan_states`: fresh operators, fresh metrics) before
    /// it runs again.
    plan: Mutex<(Arc<dyn ExecutionPlan>, bool)>,
    task: Arc<TaskContext>,
}

impl Plan {
    fn current(&self) -> Arc<dyn ExecutionPlan> {
        Arc::clone(&self.plan.lock().unwrap_or_else(|e| e.into_inner()).0)
    }
}

#[pymethods]
impl Plan {
    /// Runs the plan to completion; the rows as a `pyarrow.RecordBatchReader`.
    fn collect(&self, py: Python<'_>) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
        let plan = {
            let mut slot = self.plan.lock().unwrap_or_else(|e| e.into_inner());
            if slot.1 {
                slot.0 = reset_plan_states(Arc::clone(&slot.0))
                    .map_err(|e| query_error(QueryError::Query(e)))?;
            }
            slot.1 = true;
            Arc::clone(&slot.0)
        };
        let task = Arc::clone(&self.task);
        let schema = plan.schema();
        let runtime = runtime()?;
        let batches: Vec<RecordBatch> = py
            .detach(move || runtime.block_on(async move { collect(plan, task).await }))
            .map_err(|e| query_error(QueryError::Query(e)))?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        Ok(PyArrowType(Box::new(reader)))
    }

    /// The physical plan, one operator a line, GPU operators with where they run and why.
    fn explain(&self) -> String {
        query::explain(self.current().as_ref())
    }

    /// The counters and times of every operator in the last run, summed over its partitions
    /// and over operators of one name: `{"Operator.metric": value}`, counts as
    /// ints and times in milliseconds (e.g. `GpuPartialAggregateExec.gpu_cache_hits`).
    fn metrics(&self) -> std::collections::BTreeMap<String, f64> {
        fn walk(plan: &dyn ExecutionPlan, out: &mut std::collections::BTreeMap<String, f64>) {
            if let Some(metrics) = plan.metrics() {
                for m in metrics.aggregate_by_name().iter() {
                    let (name, value) = match m.value() {
                        MetricValue::Count { name, count } => {
                            (name.to_string(), count.value() as f64)
                        }
                        MetricValue::OutputRows(c) => ("output_rows".into(), c.value() as f64),
                        MetricValue::ElapsedCompute(t) => {
                            ("elapsed_compute".into(), t.value() as f64 / 1e6)
                        }
                        MetricValue::Time { name, time } => {
                            (name.to_string(), time.value() as f64 / 1e6)
                        }
                        _ => continue,
                    };
                    *out.entry(format!("{}.{name}", plan.name())).or_default() += value;
                }
            }
            for child in plan.children() {
                walk(child.as_ref(), out);
            }
        }
        let mut out = std::collections::BTreeMap::new();
        walk(self.current().as_ref(), &mut out);
        out
    }
}
