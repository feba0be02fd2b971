//! The one command graph of `gpugraph analyze`: imports the uploaded columns, adds the filter
//! predicates, conversions and masks (`nodes`), the library primitives (Reduction, Histogram,
//! GroupAggregation, GridBinning / GridAggregation, Mask), and copy nodes that gather every
//! small result into one MAP_READ staging buffer. One encode, one submission, one readback.
//!
//! Which rows each statistic sees (nulls are excluded through the Arrow validity masks):
//! * `selected`: rows passing every `--filter` (a filter column's null or NaN rows never pass);
//! * value extent and histogram: selected rows with a non-null value; non-finite values are
//!   ignored (counted as `nonfinite`);
//! * groups: selected rows with a non-null group and (with `--value`) a finite value;
//! * grid counts: selected rows whose x and y are non-null and finite, whatever the value;
//!   the domain is the extent of x and y over exactly those rows (computed on the GPU, so
//!   positions are mapped onto the unit square on the GPU and binned there), widened one
//!   float32 step outwards for columns whose upload rounded values;
//! * grid means: those rows whose value is also non-null and finite (counted per cell as
//!   `grid_value_count`).
//!
//! Per-row traffic: every primitive reads its 4-byte inputs and its 4-byte mask once, and the
//! helper kernels (`nodes`) read 4 and write 4 per column they touch. The flights demo
//! (integer value and x converted, value/group/grid, no filter) moves about 140 bytes per row:
//! conversions 16, extent 8, histogram 8, groups 12, grid mask 20 (x/y validity and
//! finiteness), value mask 16, x/y extents 16, positions 16, grid binning 12, grid
//! aggregation 16 (the separate value mask and binning keep point counts independent of the
//! value); a numeric `--filter` adds 12 (predicate) + 8 (selected count) and
//! a mask AND per statistic.

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataView, DataViewDescriptor,
    VectorFormat, VectorView,
};
use gpugraph_gpgpu::{
    AggregateOutputs, GridAggregation, GridBinning, GridDomain, GroupAggregation, Histogram,
    HistogramBins, Mask, MaskOp, ReduceOp, Reduction, Summation,
};
use gpugraph_tables::GraphImporter;

use super::args::{CmpOp, Filter, GridSize};
use super::nodes::{self, Comparison};
use super::upload::Uploaded;
use crate::gpu::Gpu;

/// Chunks of graph transients start at multiples of this many bytes (a multiple of every
/// device's storage offset alignment, so every chunk binds at its own offset too).
const CHUNK_ALIGN: u64 = 256;

/// How the histogram's bins are chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum Bins {
    /// Equal-width bins over the value's GPU-computed extent.
    Uniform(u32),
    /// Literal edges.
    Edges(Vec<f32>),
}

/// What to compute: column names per role (already checked against the file).
#[derive(Clone, Debug)]
pub struct Spec {
    /// `--value`.
    pub value: Option<String>,
    /// `--x`, `--y`.
    pub xy: Option<(String, String)>,
    /// `--group`.
    pub group: Option<String>,
    /// `--filter`s.
    pub filters: Vec<Filter>,
    /// Histogram bins.
    pub bins: Bins,
    /// Grid cells.
    pub grid: GridSize,
    /// Whether the x and y extents are widened one float32 step outwards before binning
    /// (columns whose float32 upload rounded some values; see `nodes::widened`).
    pub grid_widen: [bool; 2],
    /// How group and grid means sum their values.
    pub summation: Summation,
}

/// Where one result lives in the staging buffer (in 4-byte words).
#[derive(Clone, Copy, Debug)]
struct Section {
    offset: usize,
    words: usize,
}

#[derive(Default)]
struct Layout {
    selected: Option<Section>,
    extent: Option<Section>,
    nonfinite: Option<Section>,
    edges: Option<Section>,
    counts: Option<Section>,
    cumulative: Option<Section>,
    hist_ignored: Option<Section>,
    invalid_edges: Option<Section>,
    group_count: Option<Section>,
    group_rows: Option<Section>,
    group_mean: Option<Section>,
    x_extent: Option<Section>,
    y_extent: Option<Section>,
    grid_count: Option<Section>,
    grid_value_count: Option<Section>,
    grid_mean: Option<Section>,
}

/// The compiled analysis, ready to run once.
pub struct Analysis {
    compiled: CompiledGraph,
    staging: wgpu::Buffer,
    layout: Layout,
    literal_edges: Option<Vec<f32>>,
    /// Nodes in execution order.
    pub nodes: Vec<String>,
}

/// The small results read back after the run.
#[derive(Clone, Debug, Default)]
pub struct GpuResults {
    /// Rows passing the filters (`None` without filters: every row).
    pub selected: Option<u64>,
    /// `[min, max]` of the finite selected values (NaN when there are none).
    pub extent: Option<[f32; 2]>,
    /// Selected non-null values that are NaN or infinite.
    pub nonfinite: u64,
    /// Histogram edges (bins + 1).
    pub edges: Vec<f32>,
    /// Histogram counts per bin.
    pub counts: Vec<u32>,
    /// Inclusive prefix sums of `counts`.
    pub cumulative: Vec<u32>,
    /// Values the histogram ignored (non-finite or outside the edges).
    pub hist_ignored: u64,
    /// The GPU edges were invalid (no finite value, or the extent too narrow for distinct
    /// float32 edges): counts are all zero.
    pub invalid_edges: bool,
    /// Per group (dictionary code order): rows counted.
    pub group_count: Vec<u32>,
    /// Per group: selected rows whatever the value (only with filters and a value column;
    /// otherwise empty, and `group_count` is that number or every group has rows).
    pub group_rows: Vec<u32>,
    /// Per group: mean value (NaN when empty).
    pub group_mean: Vec<f32>,
    /// `[min, max]` of x over the grid's rows.
    pub x_extent: Option<[f32; 2]>,
    /// `[min, max]` of y over the grid's rows.
    pub y_extent: Option<[f32; 2]>,
    /// Row-major grid counts of x/y points (`cy * nx + cx`), whatever the value.
    pub grid_count: Vec<u32>,
    /// Row-major counts of the points whose value is non-null and finite (the rows each
    /// cell's mean averages; empty without `--value`).
    pub grid_value_count: Vec<u32>,
    /// Row-major grid means of the value (empty without `--value`).
    pub grid_mean: Vec<f32>,
}

/// One imported column: values (float32, sint32 or uint32 codes), validity, dictionary.
struct Column {
    values: VectorView,
    validity: Option<VectorView>,
    format: VectorFormat,
    dictionary: Option<Vec<String>>,
}

/// Small result views (graph transients) gathered into the staging buffer by copy nodes.
struct Results {
    views: Vec<(String, DataView)>,
    words: usize,
}

impl Results {
    fn add(
        &mut self,
        g: &mut CommandGraph,
        name: &str,
        format: VectorFormat,
        len: u64,
    ) -> Result<(DataView, Section)> {
        let bytes = (len * format.byte_size() as u64).max(4);
        let h = g.create_buffer(BufferDescriptor::new(
            format!("result/{name}"),
            bytes,
            BufferUsages::STORAGE | BufferUsages::COPY_SRC,
        ))?;
        let view = g.create_packed_view(h, format, len)?;
        let section = Section {
            offset: self.words,
            words: (len * format.components() as u64) as usize,
        };
        self.words += section.words;
        self.views.push((name.to_string(), view));
        Ok((view, section))
    }
}

struct Builder {
    g: CommandGraph,
    lens: Vec<u64>,
    results: Results,
    floats: HashMap<String, VectorView>,
    columns: HashMap<String, Column>,
    layout: Layout,
    max_buffer: u64,
    summation: Summation,
}

impl Builder {
    /// A graph-owned vector with the table's chunk lengths (chunks at [`CHUNK_ALIGN`]-byte
    /// offsets, in as few buffers as the device's buffer and binding sizes allow).
    fn chunked(&mut self, id: &str, format: VectorFormat) -> Result<VectorView> {
        let row = format.byte_size() as u64;
        let mut groups: Vec<Vec<(u64, u64)>> = vec![Vec::new()];
        let mut size = 0u64;
        for &len in &self.lens {
            let bytes = (len * row).max(4);
            if size > 0 && size + bytes > self.max_buffer {
                groups.push(Vec::new());
                size = 0;
            }
            groups
                .last_mut()
                .unwrap_or_else(|| unreachable!())
                .push((size, len));
            size = (size + bytes).div_ceil(CHUNK_ALIGN) * CHUNK_ALIGN;
        }
        let mut chunks = Vec::new();
        for (k, group) in groups.iter().enumerate() {
            let end = group
                .iter()
                .map(|&(off, len)| off + (len * row).max(4))
                .max()
                .unwrap_or(4);
            let name = if groups.len() == 1 {
                format!("vector/{id}")
            } else {
                format!("vector/{id}-{k}")
            };
            let h =
                self.g
                    .create_buffer(BufferDescriptor::new(name, end, BufferUsages::STORAGE))?;
            for &(off, len) in group {
                chunks.push(
                    self.g.create_data_view(
                        h,
                        DataViewDescriptor::packed(format, len).at_offset(off),
                    )?,
                );
            }
        }
        Ok(self.g.create_vector_view(chunks)?)
    }

    fn column(&self, name: &str) -> Result<&Column> {
        self.columns
            .get(name)
            .with_context(|| format!("column '{name}' was not uploaded"))
    }

    /// The column as float32 (converted on the GPU once when it is an integer column).
    fn float(&mut self, name: &str) -> Result<VectorView> {
        if let Some(v) = self.floats.get(name) {
            return Ok(v.clone());
        }
        let (values, format) = {
            let c = self.column(name)?;
            (c.values.clone(), c.format)
        };
        let v = match format {
            VectorFormat::Float32 => values,
            VectorFormat::Sint32 | VectorFormat::Uint32 => {
                let id = format!("to-float/{name}");
                let out = self.chunked(&id, VectorFormat::Float32)?;
                nodes::to_float(
                    &mut self.g,
                    &id,
                    &values,
                    format == VectorFormat::Sint32,
                    &out,
                )?;
                out
            }
            other => bail!(
                "column '{name}' is stored as {other}, which analyze cannot convert to float32"
            ),
        };
        self.floats.insert(name.to_string(), v.clone());
        Ok(v)
    }

    fn validity(&self, name: &str) -> Result<Option<VectorView>> {
        Ok(self.column(name)?.validity.clone())
    }

    /// AND of 0/1 masks through the library's Mask primitive (none: no mask; one: itself).
    fn and(&mut self, id: &str, mut masks: Vec<VectorView>) -> Result<Option<VectorView>> {
        dedup(&mut masks);
        match masks.len() {
            0 => Ok(None),
            1 => Ok(masks.into_iter().next()),
            _ => {
                let output = self.chunked(id, VectorFormat::Uint32)?;
                Mask {
                    id: id.to_string(),
                    inputs: masks,
                    output: output.clone(),
                    op: MaskOp::And,
                }
                .add_to_graph(&mut self.g)?;
                Ok(Some(output))
            }
        }
    }

    fn filters(&mut self, filters: &[Filter]) -> Result<Option<VectorView>> {
        let mut masks = Vec::new();
        for (k, f) in filters.iter().enumerate() {
            let (values, validity, comparison) = {
                let c = self.column(&f.column)?;
                (
                    c.values.clone(),
                    c.validity.clone(),
                    comparison(f, c.format, c.dictionary.as_deref())?,
                )
            };
            let id = format!("filter-{k}");
            let out = self.chunked(&id, VectorFormat::Uint32)?;
            nodes::predicate(
                &mut self.g,
                &id,
                &values,
                validity.as_ref(),
                comparison,
                &out,
            )?;
            masks.push(out);
        }
        let selected = self.and("selected", masks)?;
        if let Some(sel) = &selected {
            let (out, section) =
                self.results
                    .add(&mut self.g, "selected", VectorFormat::Uint32, 1)?;
            Reduction {
                id: "selected-count".into(),
                input: sel.clone(),
                mask: Some(sel.clone()),
                op: ReduceOp::Count,
                output: out,
                ignored: None,
            }
            .add_to_graph(&mut self.g)?;
            self.layout.selected = Some(section);
        }
        Ok(selected)
    }

    fn value(&mut self, name: &str, selected: Option<&VectorView>, bins: &Bins) -> Result<()> {
        let values = self.float(name)?;
        let mut masks: Vec<VectorView> = selected.into_iter().cloned().collect();
        masks.extend(self.validity(name)?);
        let mask = self.and("value-mask", masks)?;
        let (extent, s_extent) =
            self.results
                .add(&mut self.g, "extent", VectorFormat::Float32, 2)?;
        let (nonfinite, s_nonfinite) =
            self.results
                .add(&mut self.g, "nonfinite", VectorFormat::Uint32, 1)?;
        Reduction {
            id: "value-extent".into(),
            input: values.clone(),
            mask: mask.clone(),
            op: ReduceOp::Extent,
            output: extent,
            ignored: Some(nonfinite),
        }
        .add_to_graph(&mut self.g)?;
        self.layout.extent = Some(s_extent);
        self.layout.nonfinite = Some(s_nonfinite);

        let (hist_bins, bin_count, flag) = match bins {
            Bins::Uniform(n) => {
                let (edges, s_edges) =
                    self.results
                        .add(&mut self.g, "edges", VectorFormat::Float32, *n as u64 + 1)?;
                nodes::uniform_edges(&mut self.g, "histogram-edges", extent, edges)?;
                self.layout.edges = Some(s_edges);
                let (flag, s_flag) =
                    self.results
                        .add(&mut self.g, "invalid-edges", VectorFormat::Uint32, 1)?;
                self.layout.invalid_edges = Some(s_flag);
                (HistogramBins::GpuEdges(edges), *n as u64, Some(flag))
            }
            Bins::Edges(e) => (HistogramBins::Edges(e.clone()), e.len() as u64 - 1, None),
        };
        let (counts, s_counts) =
            self.results
                .add(&mut self.g, "counts", VectorFormat::Uint32, bin_count)?;
        let (cumulative, s_cumulative) =
            self.results
                .add(&mut self.g, "cumulative", VectorFormat::Uint32, bin_count)?;
        let (ignored, s_ignored) =
            self.results
                .add(&mut self.g, "histogram-ignored", VectorFormat::Uint32, 1)?;
        Histogram {
            id: "histogram".into(),
            input: values,
            mask,
            bins: hist_bins,
            counts,
            cumulative: Some(cumulative),
            ignored: Some(ignored),
            invalid_edges: flag,
        }
        .add_to_graph(&mut self.g)?;
        self.layout.counts = Some(s_counts);
        self.layout.cumulative = Some(s_cumulative);
        self.layout.hist_ignored = Some(s_ignored);
        Ok(())
    }

    fn groups(
        &mut self,
        name: &str,
        value: Option<&str>,
        selected: Option<&VectorView>,
    ) -> Result<()> {
        let (codes, groups) = {
            let c = self.column(name)?;
            let groups = c.dictionary.as_ref().map_or(0, Vec::len);
            (c.values.clone(), groups)
        };
        if groups == 0 {
            // Every group value is null: there is nothing to aggregate.
            self.layout.group_count = Some(Section {
                offset: 0,
                words: 0,
            });
            return Ok(());
        }
        let mut masks: Vec<VectorView> = selected.into_iter().cloned().collect();
        masks.extend(self.validity(name)?);
        if let (Some(_), Some(_)) = (selected, value) {
            // Which groups the filter emptied: `group-count` also drops rows whose value is
            // null or non-finite, so a group it counts 0 may still have selected rows.
            let rows_mask = self.and("group-rows-mask", masks.clone())?;
            let (rows, s_rows) = self.results.add(
                &mut self.g,
                "group-rows",
                VectorFormat::Uint32,
                groups as u64,
            )?;
            GroupAggregation {
                id: "group-rows".into(),
                codes: codes.clone(),
                values: None,
                mask: rows_mask,
                group_count: groups as u32,
                outputs: AggregateOutputs {
                    count: Some(rows),
                    ..Default::default()
                },
                ignored: None,
            }
            .add_to_graph(&mut self.g)?;
            self.layout.group_rows = Some(s_rows);
        }
        let values = match value {
            Some(v) => {
                masks.extend(self.validity(v)?);
                Some(self.float(v)?)
            }
            None => None,
        };
        let mask = self.and("group-mask", masks)?;
        let (count, s_count) = self.results.add(
            &mut self.g,
            "group-count",
            VectorFormat::Uint32,
            groups as u64,
        )?;
        let mut outputs = AggregateOutputs {
            count: Some(count),
            summation: self.summation,
            ..Default::default()
        };
        if values.is_some() {
            let (mean, s_mean) = self.results.add(
                &mut self.g,
                "group-mean",
                VectorFormat::Float32,
                groups as u64,
            )?;
            outputs.mean = Some(mean);
            self.layout.group_mean = Some(s_mean);
        }
        GroupAggregation {
            id: "groups".into(),
            codes,
            values,
            mask,
            group_count: groups as u32,
            outputs,
            ignored: None,
        }
        .add_to_graph(&mut self.g)?;
        self.layout.group_count = Some(s_count);
        Ok(())
    }

    fn grid(
        &mut self,
        (x, y): (&str, &str),
        value: Option<&str>,
        selected: Option<&VectorView>,
        size: GridSize,
        widen: [bool; 2],
    ) -> Result<()> {
        // Counts are of x/y points: they never depend on the value column, whose nulls and
        // non-finite values only leave a cell's mean (counted apart as `grid-value-count`).
        let mut masks: Vec<VectorView> = selected.into_iter().cloned().collect();
        let floats = [self.float(x)?, self.float(y)?];
        masks.extend(self.validity(x)?);
        masks.extend(self.validity(y)?);
        let mask = self.chunked("grid-mask", VectorFormat::Uint32)?;
        dedup(&mut masks);
        let mut distinct = floats.to_vec();
        dedup(&mut distinct);
        nodes::all_valid(&mut self.g, "grid-mask", &masks, &distinct, &mask)?;
        let mut extents = Vec::new();
        for (axis, values) in [("x", &floats[0]), ("y", &floats[1])] {
            let (out, section) = self.results.add(
                &mut self.g,
                &format!("{axis}-extent"),
                VectorFormat::Float32,
                2,
            )?;
            Reduction {
                id: format!("grid-{axis}-extent"),
                input: values.clone(),
                mask: Some(mask.clone()),
                op: ReduceOp::Extent,
                output: out,
                ignored: None,
            }
            .add_to_graph(&mut self.g)?;
            extents.push((out, section));
        }
        self.layout.x_extent = Some(extents[0].1);
        self.layout.y_extent = Some(extents[1].1);
        let positions = self.chunked("grid-positions", VectorFormat::Float32x2)?;
        nodes::positions(
            &mut self.g,
            "grid-positions",
            [&floats[0], &floats[1]],
            [extents[0].0, extents[1].0],
            widen,
            &positions,
        )?;
        let domain = GridDomain {
            x_min: 0.0,
            x_max: 1.0,
            y_min: 0.0,
            y_max: 1.0,
            nx: size.nx,
            ny: size.ny,
        };
        let cells = domain.cells();
        let (count, s_count) =
            self.results
                .add(&mut self.g, "grid-count", VectorFormat::Uint32, cells)?;
        self.layout.grid_count = Some(s_count);
        GridBinning {
            id: "grid".into(),
            positions: positions.clone(),
            mask: Some(mask.clone()),
            domain,
            counts: count,
            ignored: None,
        }
        .add_to_graph(&mut self.g)?;
        if let Some(v) = value {
            let weights = self.float(v)?;
            let mut value_masks = vec![mask];
            value_masks.extend(self.validity(v)?);
            let value_mask = self.chunked("grid-value-mask", VectorFormat::Uint32)?;
            nodes::all_valid(
                &mut self.g,
                "grid-value-mask",
                &value_masks,
                std::slice::from_ref(&weights),
                &value_mask,
            )?;
            let (vcount, s_vcount) =
                self.results
                    .add(&mut self.g, "grid-value-count", VectorFormat::Uint32, cells)?;
            let (mean, s_mean) =
                self.results
                    .add(&mut self.g, "grid-mean", VectorFormat::Float32, cells)?;
            self.layout.grid_value_count = Some(s_vcount);
            self.layout.grid_mean = Some(s_mean);
            GridAggregation {
                id: "grid-value".into(),
                positions,
                weights,
                mask: Some(value_mask),
                domain,
                outputs: AggregateOutputs {
                    count: Some(vcount),
                    mean: Some(mean),
                    summation: self.summation,
                    ..Default::default()
                },
                ignored: None,
            }
            .add_to_graph(&mut self.g)?;
        }
        Ok(())
    }
}

/// Removes repeated vectors, keeping first occurrences in order.
fn dedup(v: &mut Vec<VectorView>) {
    let mut seen: Vec<VectorView> = Vec::new();
    v.retain(|x| {
        let new = !seen.contains(x);
        if new {
            seen.push(x.clone());
        }
        new
    });
}

/// The GPU comparison of filter `f` on a column stored as `format` (with its dictionary
/// for text columns). Errors name the filter and the column.
pub fn comparison(
    f: &Filter,
    format: VectorFormat,
    dictionary: Option<&[String]>,
) -> Result<Comparison> {
    if let Some(dict) = dictionary {
        let code = dict.iter().position(|s| *s == f.value).map(|c| c as u32);
        let invert = match f.op {
            CmpOp::Eq => false,
            CmpOp::Ne => true,
            _ => bail!(
                "--filter '{f}': column '{}' is text; text columns support only == and !=",
                f.column
            ),
        };
        let (lo, hi) = code.map_or((1, 0), |c| (c, c));
        return Ok(Comparison::Unsigned { lo, hi, invert });
    }
    let v = f.number().map_err(anyhow::Error::msg)?;
    Ok(match format {
        VectorFormat::Float32 => Comparison::Float {
            op: f.op,
            threshold: v as f32,
        },
        VectorFormat::Sint32 => {
            let (lo, hi, invert) =
                Comparison::integer_range(f.op, v, i32::MIN as i64, i32::MAX as i64);
            Comparison::Signed {
                lo: lo as i32,
                hi: hi as i32,
                invert,
            }
        }
        VectorFormat::Uint32 => {
            let (lo, hi, invert) = Comparison::integer_range(f.op, v, 0, u32::MAX as i64);
            Comparison::Unsigned {
                lo: lo as u32,
                hi: hi as u32,
                invert,
            }
        }
        other => bail!(
            "--filter '{f}': column '{}' is stored as {other}, which the filter cannot compare",
            f.column
        ),
    })
}

/// Builds and compiles the analysis graph over `table` (which must stay alive while the
/// analysis runs: the graph borrows its buffers).
pub fn build(gpu: &Gpu, table: &Uploaded, spec: &Spec) -> Result<Analysis> {
    let mut g = CommandGraph::new("analyze", gpu.device());
    let mut names: Vec<&str> = Vec::new();
    for n in spec
        .value
        .iter()
        .chain(spec.group.iter())
        .chain(spec.xy.iter().flat_map(|(x, y)| [x, y]))
        .chain(spec.filters.iter().map(|f| &f.column))
    {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    let mut columns = HashMap::new();
    {
        let mut importer = GraphImporter::new(&mut g);
        for name in &names {
            let c = table.column(name)?;
            let format = c.values.format();
            let values = importer.import_vector(
                &format!("column/{name}"),
                &c.values,
                BufferUsages::STORAGE,
            )?;
            let validity = c
                .validity
                .as_ref()
                .map(|v| {
                    importer.import_vector(&format!("validity/{name}"), v, BufferUsages::STORAGE)
                })
                .transpose()?;
            columns.insert(
                name.to_string(),
                Column {
                    values,
                    validity,
                    format,
                    dictionary: c.dictionary.as_deref().cloned(),
                },
            );
        }
    }
    let lens: Vec<u64> = match names.first() {
        Some(n) => columns[*n]
            .values
            .chunks()
            .iter()
            .map(DataView::len)
            .collect(),
        None => table.batch_rows().to_vec(),
    };
    // Each transient stays bindable as a whole: the graph may host small transients of the
    // primitives inside the same physical allocation, and some bind it entirely.
    let limits = gpu.device().limits();
    let max_buffer = limits
        .max_buffer_size
        .min(limits.max_storage_buffer_binding_size);
    let mut b = Builder {
        g,
        lens,
        results: Results {
            views: Vec::new(),
            words: 0,
        },
        floats: HashMap::new(),
        columns,
        layout: Layout::default(),
        max_buffer,
        summation: spec.summation,
    };
    let selected = b.filters(&spec.filters)?;
    if let Some(v) = &spec.value {
        b.value(v, selected.as_ref(), &spec.bins)?;
    }
    if let Some(group) = &spec.group {
        b.groups(group, spec.value.as_deref(), selected.as_ref())?;
    }
    if let Some((x, y)) = &spec.xy {
        let grid = spec.grid;
        b.grid(
            (x, y),
            spec.value.as_deref(),
            selected.as_ref(),
            grid,
            spec.grid_widen,
        )
        .with_context(|| format!("--grid {},{}", grid.nx, grid.ny))?;
    }
    let Builder {
        mut g,
        results,
        layout,
        ..
    } = b;
    let staging_bytes = (results.words as u64 * 4).max(4);
    let staging = gpu.staging("analyze: results staging", staging_bytes);
    let handle: BufferHandle = g.import_buffer(
        BufferDescriptor::new(
            "results-staging",
            staging_bytes,
            BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        ),
        &staging,
    )?;
    let mut offset = 0u64;
    for (name, view) in &results.views {
        let dst = g.create_data_view(
            handle,
            DataViewDescriptor::packed(view.format(), view.len()).at_offset(offset),
        )?;
        offset += view.byte_span();
        if !view.is_empty() {
            g.add_view_copy(format!("readback/{name}"), *view, dst)?;
        }
    }
    let compiled = g.compile().with_context(|| match spec.xy {
        Some(_) => format!(
            "compiling the analysis graph (with --grid {},{})",
            spec.grid.nx, spec.grid.ny
        ),
        None => "compiling the analysis graph".to_string(),
    })?;
    let nodes = compiled.node_order().to_vec();
    Ok(Analysis {
        compiled,
        staging,
        layout,
        literal_edges: match &spec.bins {
            Bins::Edges(e) if spec.value.is_some() => Some(e.clone()),
            _ => None,
        },
        nodes,
    })
}

impl Analysis {
    /// Encodes the graph once and submits it, blocking until the GPU finished.
    pub fn run(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.run_graph(&mut self.compiled, "the analysis")
    }

    /// READBACK: maps the staging buffer and decodes every result.
    pub fn read(&self, gpu: &Gpu) -> Result<GpuResults> {
        let words = gpu.read_u32(&self.staging)?;
        let l = &self.layout;
        let u32s = |s: Option<Section>| -> Vec<u32> {
            s.map(|s| words[s.offset..s.offset + s.words].to_vec())
                .unwrap_or_default()
        };
        let f32s =
            |s: Option<Section>| -> Vec<f32> { u32s(s).into_iter().map(f32::from_bits).collect() };
        let word = |s: Option<Section>| u32s(s).first().copied().unwrap_or(0) as u64;
        let pair = |s: Option<Section>| {
            s.map(|_| {
                let v = f32s(s);
                [v[0], v[1]]
            })
        };
        Ok(GpuResults {
            selected: l.selected.map(|_| word(l.selected)),
            extent: pair(l.extent),
            nonfinite: word(l.nonfinite),
            edges: match &self.literal_edges {
                Some(e) => e.clone(),
                None => f32s(l.edges),
            },
            counts: u32s(l.counts),
            cumulative: u32s(l.cumulative),
            hist_ignored: word(l.hist_ignored),
            invalid_edges: word(l.invalid_edges) != 0,
            group_count: u32s(l.group_count),
            group_rows: u32s(l.group_rows),
            group_mean: f32s(l.group_mean),
            x_extent: pair(l.x_extent),
            y_extent: pair(l.y_extent),
            grid_count: u32s(l.grid_count),
            grid_value_count: u32s(l.grid_value_count),
            grid_mean: f32s(l.grid_mean),
        })
    }

    /// Graph statistics (transients, reuse, node order).
    pub fn stats(&self) -> &gpugraph_command::GraphStats {
        self.compiled.stats()
    }
}
