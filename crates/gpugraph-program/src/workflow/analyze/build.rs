//! Building the analysis graph: imports the named columns, adds the row kernels ([`rows`],
//! [`kernels`]), the library primitives (Reduction, Histogram, GroupAggregation, GridBinning /
//! GridAggregation, Mask) and copy nodes that gather every small result into the staging
//! buffer, then compiles.

use std::collections::HashMap;

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, DataView, DataViewDescriptor, VectorFormat,
    VectorView,
};
use gpugraph_gpgpu::{
    AggregateOutputs, GridAggregation, GridBinning, GridDomain, GroupAggregation, Histogram,
    HistogramBins, Mask, MaskOp, ReduceOp, Reduction, Summation,
};
use gpugraph_tables::GraphImporter;

use super::rows::{self, comparison};
use super::{
    kernels, Analysis, AnalyzeError, AnalyzeInput, AnalyzeSpec, Bins, GridSize, Layout, RowFilter,
    Section,
};

/// Chunks of graph transients start at multiples of this many bytes (a multiple of every
/// device's storage offset alignment, so every chunk binds at its own offset too).
const CHUNK_ALIGN: u64 = 256;

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
    ) -> Result<(DataView, Section), AnalyzeError> {
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
    fn chunked(&mut self, id: &str, format: VectorFormat) -> Result<VectorView, AnalyzeError> {
        let row = format.byte_size() as u64;
        let mut groups: Vec<Vec<(u64, u64)>> = vec![Vec::new()];
        let mut size = 0u64;
        for &len in &self.lens {
            let bytes = (len * row).max(4);
            if size > 0 && size + bytes > self.max_buffer {
                groups.push(Vec::new());
                size = 0;
            }
            if let Some(group) = groups.last_mut() {
                group.push((size, len));
            }
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

    fn column(&self, name: &str) -> Result<&Column, AnalyzeError> {
        self.columns
            .get(name)
            .ok_or_else(|| AnalyzeError::MissingColumn {
                column: name.to_string(),
            })
    }

    /// The column as float32 (converted on the GPU once when it is an integer column).
    fn float(&mut self, name: &str) -> Result<VectorView, AnalyzeError> {
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
                rows::to_float(&mut self.g, &id, &values, format, &out)?;
                out
            }
            other => {
                return Err(AnalyzeError::NotNumeric {
                    column: name.to_string(),
                    format: other,
                })
            }
        };
        self.floats.insert(name.to_string(), v.clone());
        Ok(v)
    }

    fn validity(&self, name: &str) -> Result<Option<VectorView>, AnalyzeError> {
        Ok(self.column(name)?.validity.clone())
    }

    /// AND of 0/1 masks through the library's Mask primitive (none: no mask; one: itself).
    fn and(
        &mut self,
        id: &str,
        mut masks: Vec<VectorView>,
    ) -> Result<Option<VectorView>, AnalyzeError> {
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

    fn filters(&mut self, filters: &[RowFilter]) -> Result<Option<VectorView>, AnalyzeError> {
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
            rows::predicate(
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

    fn value(
        &mut self,
        name: &str,
        selected: Option<&VectorView>,
        bins: &Bins,
    ) -> Result<(), AnalyzeError> {
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
                kernels::uniform_edges(&mut self.g, "histogram-edges", extent, edges)?;
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
    ) -> Result<(), AnalyzeError> {
        let (codes, groups) = {
            let c = self.column(name)?;
            let Some(dictionary) = &c.dictionary else {
                return Err(AnalyzeError::GroupNotText {
                    column: name.to_string(),
                });
            };
            (c.values.clone(), dictionary.len())
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
    ) -> Result<(), AnalyzeError> {
        // Counts are of x/y points: they never depend on the grid value (z) column, whose nulls
        // and non-finite values only leave a cell's mean (counted apart as `grid-value-count`).
        let mut masks: Vec<VectorView> = selected.into_iter().cloned().collect();
        let floats = [self.float(x)?, self.float(y)?];
        masks.extend(self.validity(x)?);
        masks.extend(self.validity(y)?);
        let mask = self.chunked("grid-mask", VectorFormat::Uint32)?;
        dedup(&mut masks);
        let mut distinct = floats.to_vec();
        dedup(&mut distinct);
        rows::all_valid(&mut self.g, "grid-mask", &masks, &distinct, &mask)?;
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
        kernels::positions(
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
            rows::all_valid(
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

/// Checks the spec against the input before anything is added: columns present with the
/// input's chunk lengths, bins in range.
fn check(input: &AnalyzeInput<'_>, spec: &AnalyzeSpec) -> Result<(), AnalyzeError> {
    let rows: u64 = input.chunk_rows.iter().sum();
    if rows > u32::MAX as u64 {
        return Err(AnalyzeError::TooManyRows { rows });
    }
    for name in spec.columns() {
        let c = input
            .columns
            .get(name)
            .ok_or_else(|| AnalyzeError::MissingColumn {
                column: name.to_string(),
            })?;
        for v in std::iter::once(c.values).chain(c.validity) {
            let actual = v.chunk_lengths();
            if actual != input.chunk_rows {
                return Err(AnalyzeError::ChunkMismatch {
                    column: name.to_string(),
                    expected: input.chunk_rows.clone(),
                    actual,
                });
            }
        }
    }
    match &spec.bins {
        Bins::Uniform(0) => Err(AnalyzeError::Bins {
            reason: "at least one uniform bin is needed".into(),
        }),
        Bins::Edges(e) if e.len() < 2 => Err(AnalyzeError::Bins {
            reason: format!("{} edges given; at least two are needed", e.len()),
        }),
        _ => Ok(()),
    }
}

pub(super) fn build(
    device: &wgpu::Device,
    input: &AnalyzeInput<'_>,
    spec: &AnalyzeSpec,
) -> Result<Analysis, AnalyzeError> {
    check(input, spec)?;
    let mut g = CommandGraph::new("analyze", device);
    let mut columns = HashMap::new();
    {
        let mut importer = GraphImporter::new(&mut g);
        for name in spec.columns() {
            let c = &input.columns[name];
            let values = importer.import_vector(
                &format!("column/{name}"),
                c.values,
                BufferUsages::STORAGE,
            )?;
            let validity = c
                .validity
                .map(|v| {
                    importer.import_vector(&format!("validity/{name}"), v, BufferUsages::STORAGE)
                })
                .transpose()?;
            columns.insert(
                name.to_string(),
                Column {
                    values,
                    validity,
                    format: c.values.format(),
                    dictionary: c.dictionary.map(<[String]>::to_vec),
                },
            );
        }
    }
    // Each transient stays bindable as a whole: the graph may host small transients of the
    // primitives inside the same physical allocation, and some bind it entirely.
    let limits = device.limits();
    let max_buffer = limits
        .max_buffer_size
        .min(limits.max_storage_buffer_binding_size);
    let mut b = Builder {
        g,
        lens: input.chunk_rows.clone(),
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
            spec.grid_value.as_deref(),
            selected.as_ref(),
            grid,
            spec.grid_widen,
        )
        .map_err(|e| AnalyzeError::Grid {
            nx: grid.nx,
            ny: grid.ny,
            source: Box::new(e),
        })?;
    }
    let Builder {
        mut g,
        results,
        layout,
        ..
    } = b;
    let staging_bytes = (results.words as u64 * 4).max(4);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("analyze: results staging"),
        size: staging_bytes,
        usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
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
    let compiled = g.compile().map_err(|source| AnalyzeError::Compile {
        grid: spec.xy.as_ref().map(|_| spec.grid),
        source,
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
