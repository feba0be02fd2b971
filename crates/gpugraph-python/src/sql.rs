//! `gpugraph.sql`: a read-only query through DataFusion on the GPU or CPU engine, over
//! tables given as files or as Arrow streams (pyarrow tables), answered as an Arrow stream.

use std::sync::{Arc, OnceLock};

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_pyarrow::{FromPyArrow, PyArrowType};
use arrow_schema::SchemaRef;
use gpugraph_datafusion::cache::GpuCache;
use gpugraph_datafusion::query::{self, QueryError};
use gpugraph_datafusion::{
    session_context, session_context_sharing, Engine, SessionError, SessionOptions,
};
use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The Tokio runtime every query runs on, started by the first query.
pub(crate) fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(r) = RUNTIME.get() {
        return Ok(r);
    }
    let r = query::runtime()
        .map_err(|e| PyRuntimeError::new_err(format!("starting the query runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| r))
}

pub(crate) fn query_error(e: QueryError) -> PyErr {
    match e {
        QueryError::MissingFile { .. } => PyFileNotFoundError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

pub(crate) fn session_error(e: SessionError) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A table argument: a file, or record batches already in memory.
pub(crate) enum Source {
    File(std::path::PathBuf),
    Batches(SchemaRef, Vec<RecordBatch>),
}

pub(crate) fn source(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Source> {
    let py = value.py();
    if value.hasattr("__arrow_c_stream__")? {
        // Read under the GIL: a stream produced by Python code calls back into Python.
        // The batches share the producer's buffers (the C stream interface copies nothing).
        let reader = ArrowArrayStreamReader::from_pyarrow_bound(value)?;
        let schema = reader.schema();
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PyValueError::new_err(format!("tables['{name}']: {e}")))?;
        return Ok(Source::Batches(schema, batches));
    }
    if value.is_instance_of::<pyo3::types::PyString>() || value.hasattr("__fspath__")? {
        let path: std::path::PathBuf = py
            .import("os")?
            .call_method1("fspath", (value,))?
            .extract()?;
        return Ok(Source::File(path));
    }
    Err(PyTypeError::new_err(format!(
        "tables['{name}']: expected a pyarrow.Table (any object with __arrow_c_stream__) or a file path, got {}",
        value.get_type().name()?
    )))
}

/// Parses an engine name (`sql` and `Session` take the same names).
pub(crate) fn engine(name: &str) -> PyResult<Engine> {
    match name {
        "gpu" => Ok(Engine::Gpu),
        "cpu" => Ok(Engine::Cpu),
        other => Err(PyValueError::new_err(format!(
            "engine must be 'gpu' or 'cpu', got '{other}'"
        ))),
    }
}

/// Runs `query` on `engine` ("gpu" or "cpu") with `tables` registered by name; returns the
/// result as a `pyarrow.RecordBatchReader` (the Python layer reads it into a table).
#[pyfunction]
#[pyo3(signature = (query, tables, engine))]
pub fn sql(
    py: Python<'_>,
    query: &str,
    tables: &Bound<'_, PyDict>,
    engine: &str,
) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
    let engine = self::engine(engine)?;
    let mut sources = Vec::new();
    for (name, value) in tables.iter() {
        let name: String = name
            .extract()
            .map_err(|_| PyTypeError::new_err("table names must be strings"))?;
        let s = source(&name, &value)?;
        sources.push((name, s));
    }
    let runtime = runtime()?;
    let options = SessionOptions {
        engine,
        ..SessionOptions::default()
    };
    // One device and one set of upload slabs for every query of the process (a device a
    // query cost each call its creation and its pipelines' compilation). No GPU column cache:
    // tables arrive as new Arrow arrays each call, so its entries would never be hit again
    // and would only hold their GPU memory.
    static CACHE: OnceLock<GpuCache> = OnceLock::new();
    let gpu = match engine {
        Engine::Gpu => Some(Arc::clone(crate::shared_context()?)),
        Engine::Cpu => None,
    };
    let output = py.detach(move || -> PyResult<query::QueryOutput> {
        runtime.block_on(async move {
            let ctx = match gpu {
                Some(gpu) => session_context_sharing(
                    &options,
                    gpu,
                    CACHE.get_or_init(|| GpuCache::new(false)).clone(),
                ),
                None => session_context(&options).map_err(session_error)?,
            }
            .enable_url_table();
            for (name, s) in sources {
                match s {
                    Source::File(path) => query::register_file(&ctx, &name, &path).await,
                    Source::Batches(schema, batches) => {
                        query::register_batches(&ctx, &name, schema, batches)
                    }
                }
                .map_err(query_error)?;
            }
            query::run(&ctx, query).await.map_err(query_error)
        })
    })?;
    let reader = RecordBatchIterator::new(output.batches.into_iter().map(Ok), output.schema);
    Ok(PyArrowType(Box::new(reader)))
}
