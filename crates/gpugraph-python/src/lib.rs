//! `gpugraph._native`: the compiled half of the Python package `gpugraph` (python/gpugraph).
//!
//! The Python layer checks dtypes and shapes and views arrays as 32-bit words; this module
//! moves those words through [`gpugraph_host`] (one GPU context per process, opened on first
//! use) and runs SQL through [`gpugraph_datafusion`] on the same context, returning results as numpy arrays and
//! Arrow C streams. The GIL is released while the GPU or DataFusion works. Errors become
//! Python exceptions carrying the Rust message: `ValueError` for bad arguments and SQL,
//! `FileNotFoundError` for missing table files, `RuntimeError` for GPU failures.

mod arrays;
mod session;
mod sql;

use std::sync::{Arc, Mutex};

use gpugraph_command::{ContextOptions, GpuContext};
use gpugraph_host::HostError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The process's GPU context, opened by the first call that needs it (arrays or SQL) and
/// kept until exit.
fn shared_context() -> PyResult<&'static Arc<GpuContext>> {
    static CONTEXT: Mutex<Option<&'static Arc<GpuContext>>> = Mutex::new(None);
    let mut slot = CONTEXT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(ctx) = *slot {
        return Ok(ctx);
    }
    let ctx = GpuContext::with_options(&ContextOptions::from_env())
        .map_err(|e| PyRuntimeError::new_err(format!("opening a GPU device: {e}")))?;
    let ctx: &'static Arc<GpuContext> = Box::leak(Box::new(Arc::new(ctx)));
    *slot = Some(ctx);
    Ok(ctx)
}

/// [`shared_context`] for the array functions.
fn context() -> PyResult<&'static GpuContext> {
    shared_context().map(|c| c.as_ref())
}

/// `HostError` as the Python exception its cause calls for.
fn host_error(e: HostError) -> PyErr {
    match e {
        HostError::Device { .. } | HostError::Graph(_) | HostError::Table(_) => {
            PyRuntimeError::new_err(e.to_string())
        }
        HostError::Algorithm(_)
        | HostError::Length { .. }
        | HostError::TooLarge { .. }
        | HostError::NotPowerOfTwo { .. } => PyValueError::new_err(e.to_string()),
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sql::sql, m)?)?;
    m.add_class::<session::Session>()?;
    m.add_class::<session::Plan>()?;
    arrays::register(m)
}
