//! Adapters that import table containers into a [`CommandGraph`] as typed views.
//!
//! Every import BORROWS: the graph receives `wgpu::Buffer` handles as imports and never
//! destroys them; ownership stays with the [`GpuData`] (keep it alive while the compiled graph
//! encodes). Each distinct `wgpu::Buffer` becomes exactly ONE logical graph buffer covering the
//! whole allocation (`byte_length = buffer.size()`), so ranges that share an allocation share
//! one hazard chain; views then carry each range's offset, stride, format and length.
//! Only fixed-width vectors are imported; interleaved and variable-length vectors are rejected
//! with [`TableError::InterleavedVector`] / [`TableError::VariableLengthVector`] before the
//! graph is touched.
//!
//! Handle ids: an import `id` whose ranges live in one buffer names that buffer `{id}`; ranges
//! in several buffers name them `{id}-buffer-{k}` (k in first-seen chunk order). Batch columns
//! use `{id}-{column}` as their import id, table batches `{id}-batch-{i}`. A buffer that the
//! same [`GraphImporter`] already imported keeps its first handle and id.

use std::collections::HashMap;

use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, GraphError, VectorView,
};
use wgpu::BufferUsages;

use crate::batch::GpuRecordBatch;
use crate::data::GpuData;
use crate::error::TableError;
use crate::table::GpuTable;
use crate::vector::{GpuVector, VectorLayout};

/// Imports [`GpuData`], [`GpuVector`]s, record batches and tables into one graph, remembering
/// which `wgpu::Buffer` became which logical buffer so that later imports of ranges in the same
/// allocation reuse the handle (one hazard chain per physical buffer).
///
/// Mutably borrows the graph for its lifetime; use [`GraphImporter::graph`] to add nodes
/// in between imports.
pub struct GraphImporter<'g> {
    graph: &'g mut CommandGraph,
    handles: HashMap<wgpu::Buffer, (BufferHandle, BufferUsages)>,
}

/// The views of the imported columns of one record batch, in the requested order.
#[derive(Clone, Debug)]
pub struct ImportedBatch {
    columns: Vec<(String, VectorView)>,
    num_rows: u64,
}

impl ImportedBatch {
    /// Logical rows of every imported column.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }
    /// (column name, vector view) pairs in import order.
    pub fn columns(&self) -> &[(String, VectorView)] {
        &self.columns
    }
    /// The view of the imported column `name`; the error lists the imported names.
    pub fn column(&self, name: &str) -> Result<&VectorView, TableError> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| TableError::MissingColumn {
                column: name.to_string(),
                available: self.columns.iter().map(|(n, _)| n.clone()).collect(),
            })
    }
}

impl<'g> GraphImporter<'g> {
    /// An importer that adds imports to `graph`.
    pub fn new(graph: &'g mut CommandGraph) -> Self {
        Self {
            graph,
            handles: HashMap::new(),
        }
    }

    /// The graph, e.g. to add nodes between imports.
    pub fn graph(&mut self) -> &mut CommandGraph {
        self.graph
    }

    /// The logical buffer this importer created for `buffer`, if any.
    pub fn handle_of(&self, buffer: &wgpu::Buffer) -> Option<BufferHandle> {
        self.handles.get(buffer).map(|&(h, _)| h)
    }

    /// Imports the whole buffer behind `data` (once) and returns the view of its range with
    /// offset, stride, format and length preserved. `usage` is every use the graph may make
    /// of the buffer; it must be a subset of the buffer's creation usage.
    pub fn import_data(
        &mut self,
        id: &str,
        data: &GpuData,
        usage: BufferUsages,
    ) -> Result<DataView, TableError> {
        let handles = self.handles_for(id, &[data.buffer()], usage)?;
        Ok(self
            .graph
            .create_data_view(handles[0], data.view_descriptor())?)
    }

    /// Imports a fixed-width vector: one view per chunk, in chunk order (empty chunks kept),
    /// with chunks that share a buffer ranging over one logical buffer. Interleaved and
    /// variable-length vectors are rejected naming `id` as the column.
    pub fn import_vector(
        &mut self,
        id: &str,
        vector: &GpuVector,
        usage: BufferUsages,
    ) -> Result<VectorView, TableError> {
        self.import_column(id, id, vector, usage)
    }

    /// Imports the named columns of `batch` (all columns when `columns` is `None`) as vector
    /// views with import ids `{id}-{column}`. Every requested column is checked (name and
    /// layout) before anything is imported.
    pub fn import_batch(
        &mut self,
        id: &str,
        batch: &GpuRecordBatch,
        columns: Option<&[&str]>,
        usage: BufferUsages,
    ) -> Result<ImportedBatch, TableError> {
        let names: Vec<String> = match columns {
            Some(c) => c.iter().map(|s| s.to_string()).collect(),
            None => batch.schema().names(),
        };
        let mut selected = Vec::with_capacity(names.len());
        for name in &names {
            let vector = batch.column(name)?;
            check_fixed(name, vector)?;
            selected.push((name, vector));
        }
        let mut out = Vec::with_capacity(selected.len());
        for (name, vector) in selected {
            let view = self.import_column(&format!("{id}-{name}"), name, vector, usage)?;
            out.push((name.clone(), view));
        }
        Ok(ImportedBatch {
            columns: out,
            num_rows: batch.num_rows(),
        })
    }

    /// Imports the named columns of every batch of `table`, batch `i` with id `{id}-batch-{i}`,
    /// preserving batch boundaries (one [`ImportedBatch`] per batch, empty batches included).
    pub fn import_table(
        &mut self,
        id: &str,
        table: &GpuTable,
        columns: Option<&[&str]>,
        usage: BufferUsages,
    ) -> Result<Vec<ImportedBatch>, TableError> {
        for batch in table.batches() {
            let names = columns.map_or_else(
                || batch.schema().names(),
                |c| c.iter().map(|s| s.to_string()).collect(),
            );
            for name in &names {
                check_fixed(name, batch.column(name)?)?;
            }
        }
        table
            .batches()
            .iter()
            .enumerate()
            .map(|(i, b)| self.import_batch(&format!("{id}-batch-{i}"), b, columns, usage))
            .collect()
    }

    fn import_column(
        &mut self,
        id: &str,
        column: &str,
        vector: &GpuVector,
        usage: BufferUsages,
    ) -> Result<VectorView, TableError> {
        check_fixed(column, vector)?;
        let mut distinct: Vec<&wgpu::Buffer> = Vec::new();
        for c in vector.chunks() {
            if !distinct.contains(&c.buffer()) {
                distinct.push(c.buffer());
            }
        }
        let handles = self.handles_for(id, &distinct, usage)?;
        let views = vector
            .chunks()
            .iter()
            .map(|c| {
                let k = distinct.iter().position(|b| *b == c.buffer()).unwrap_or(0);
                self.graph.create_data_view(handles[k], c.view_descriptor())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.graph.create_vector_view(views)?)
    }

    /// The handle and usage of `buffer` if this importer or any earlier import into the graph
    /// brought it in (a graph imports each physical buffer once).
    fn known(&self, buffer: &wgpu::Buffer) -> Option<(BufferHandle, BufferUsages)> {
        if let Some(&hit) = self.handles.get(buffer) {
            return Some(hit);
        }
        let h = self.graph.imported_handle(buffer)?;
        let usage = self.graph.buffer_descriptor(h).ok()?.usage;
        Some((h, usage))
    }

    /// One handle per distinct buffer: the remembered one, or a new import named after `id`.
    /// Usage is checked for every buffer before any is imported.
    fn handles_for(
        &mut self,
        id: &str,
        buffers: &[&wgpu::Buffer],
        usage: BufferUsages,
    ) -> Result<Vec<BufferHandle>, TableError> {
        let name = |k: usize| {
            if buffers.len() == 1 {
                id.to_string()
            } else {
                format!("{id}-buffer-{k}")
            }
        };
        for (k, buffer) in buffers.iter().enumerate() {
            match self.known(buffer) {
                Some((h, imported)) if !imported.contains(usage) => {
                    return Err(TableError::SharedBufferUsage {
                        id: self.graph.buffer_id(h)?.to_string(),
                        imported,
                        missing: usage - imported,
                        requested_by: name(k),
                    });
                }
                Some(_) => {}
                None if !buffer.usage().contains(usage) => {
                    return Err(GraphError::BufferMissingUsage {
                        id: name(k),
                        actual: buffer.usage(),
                        missing: usage - buffer.usage(),
                    }
                    .into());
                }
                None => {}
            }
        }
        let mut out = Vec::with_capacity(buffers.len());
        for (k, buffer) in buffers.iter().enumerate() {
            let handle = match self.known(buffer) {
                Some((h, _)) => h,
                None => {
                    let desc = BufferDescriptor::new(name(k), buffer.size(), usage);
                    let h = self.graph.import_buffer(desc, buffer)?;
                    self.handles.insert((*buffer).clone(), (h, usage));
                    h
                }
            };
            out.push(handle);
        }
        Ok(out)
    }
}

fn check_fixed(column: &str, vector: &GpuVector) -> Result<(), TableError> {
    match vector.layout() {
        VectorLayout::Fixed => Ok(()),
        VectorLayout::Interleaved { .. } => Err(TableError::InterleavedVector {
            column: column.to_string(),
        }),
        VectorLayout::VariableLength { .. } => Err(TableError::VariableLengthVector {
            column: column.to_string(),
            format: vector.describe(),
        }),
    }
}

/// Imports the whole buffer behind `data` as one logical buffer `{id}` (borrowed, never
/// destroyed by the graph) and returns the view of the range: offset, stride, format and
/// length preserved. `usage` must be a subset of the buffer's creation usage.
pub fn import_gpu_data(
    graph: &mut CommandGraph,
    id: &str,
    data: &GpuData,
    usage: BufferUsages,
) -> Result<DataView, TableError> {
    GraphImporter::new(graph).import_data(id, data, usage)
}

/// Imports a fixed-width vector as an ordered [`VectorView`] (one view per chunk, empty chunks
/// kept). Chunks sharing one `wgpu::Buffer` become views of ONE logical buffer; logical ids
/// are `{id}` (one buffer) or `{id}-buffer-{k}`. Interleaved and variable-length vectors fail
/// with a named error before the graph is touched; graph errors are wrapped.
pub fn import_gpu_vector(
    graph: &mut CommandGraph,
    id: &str,
    vector: &GpuVector,
    usage: BufferUsages,
) -> Result<VectorView, TableError> {
    GraphImporter::new(graph).import_vector(id, vector, usage)
}

/// Imports the named columns (all when `None`) of a record batch; see
/// [`GraphImporter::import_batch`]. Buffers shared between columns become one logical buffer.
pub fn import_record_batch(
    graph: &mut CommandGraph,
    id: &str,
    batch: &GpuRecordBatch,
    columns: Option<&[&str]>,
    usage: BufferUsages,
) -> Result<ImportedBatch, TableError> {
    GraphImporter::new(graph).import_batch(id, batch, columns, usage)
}

/// Imports the named columns (all when `None`) of every batch of a table, one
/// [`ImportedBatch`] per batch; see [`GraphImporter::import_table`].
pub fn import_gpu_table(
    graph: &mut CommandGraph,
    id: &str,
    table: &GpuTable,
    columns: Option<&[&str]>,
    usage: BufferUsages,
) -> Result<Vec<ImportedBatch>, TableError> {
    GraphImporter::new(graph).import_table(id, table, columns, usage)
}
