//! The CLI side of the analysis graph: turns the parsed arguments and the uploaded table into
//! the library workflow's input and spec ([`gpugraph_program::workflow::analyze`], which
//! builds, compiles and decodes the one command graph), runs it through [`Gpu`] (which
//! reports wgpu errors by name) and adds the command-line names (`--filter`, `--grid`) to
//! its errors.

use std::collections::HashMap;

use anyhow::{Context, Result};
use gpugraph_program::workflow::analyze::{
    AnalyzeColumn, AnalyzeError, AnalyzeInput, AnalyzeSpec, FilterValue, RowFilter,
};

pub use gpugraph_program::workflow::analyze::{Analysis, AnalyzeResults as GpuResults, Bins};

use super::args::Filter;
use super::upload::Uploaded;
use crate::gpu::Gpu;

/// What to compute: the workflow's spec (filters from [`row_filters`]).
pub type Spec = AnalyzeSpec;

/// The workflow filters of `filters`: VALUE as text for text (dictionary) columns, else as a
/// number (errors name the filter as typed).
pub fn row_filters(table: &Uploaded, filters: &[Filter]) -> Result<Vec<RowFilter>> {
    filters
        .iter()
        .map(|f| {
            let value = match table.dictionary(&f.column)? {
                Some(_) => FilterValue::Text(f.value.clone()),
                None => FilterValue::Number(f.number().map_err(anyhow::Error::msg)?),
            };
            Ok(RowFilter {
                column: f.column.clone(),
                op: f.op,
                value,
            })
        })
        .collect()
}

/// Builds and compiles the analysis graph over `table` (which must stay alive while the
/// analysis runs: the graph borrows its buffers).
pub fn build(gpu: &Gpu, table: &Uploaded, spec: &Spec) -> Result<Analysis> {
    let names = spec.columns();
    let mut columns = HashMap::new();
    for name in &names {
        let c = table.column(name)?;
        columns.insert(
            name.to_string(),
            AnalyzeColumn {
                values: &c.values,
                validity: c.validity.as_ref(),
                dictionary: c.dictionary.as_deref().map(Vec::as_slice),
            },
        );
    }
    // The chunks the columns were uploaded in (one per record batch).
    let chunk_rows = match names.first() {
        Some(n) => table.column(n)?.values.chunk_lengths(),
        None => table.batch_rows().to_vec(),
    };
    let input = AnalyzeInput {
        columns,
        chunk_rows,
    };
    Analysis::build(gpu.device(), &input, spec).map_err(|e| {
        let grid = spec.grid;
        let context = match &e {
            AnalyzeError::Grid { .. } | AnalyzeError::Compile { grid: Some(_), .. } => {
                Some(format!("--grid {},{}", grid.nx, grid.ny))
            }
            AnalyzeError::FilterValue { filter, .. }
            | AnalyzeError::FilterFormat { filter, .. } => Some(format!("--filter '{filter}'")),
            _ => None,
        };
        let e = anyhow::Error::new(e);
        match context {
            Some(c) => e.context(c),
            None => e,
        }
    })
}

/// Encodes the graph once and submits it, blocking until the GPU finished.
pub fn run(analysis: &mut Analysis, gpu: &Gpu) -> Result<()> {
    gpu.run_graph(analysis.compiled_mut(), "the analysis")
}

/// READBACK: maps the staging buffer and decodes every result.
pub fn read(analysis: &Analysis, gpu: &Gpu) -> Result<GpuResults> {
    let words = gpu
        .read_u32(analysis.staging())
        .context("reading the analysis results")?;
    Ok(analysis.decode(&words))
}
