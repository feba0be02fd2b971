//! `gpugraph spatial`: one radius or box query over the points of a `.npy` or Parquet file,
//! through a grid index, a BVH or an unindexed scan (gpgpu's `spatial` family), writing the
//! matching row IDs (ascending) to `.npy` and printing the count and the phase timings.
//!
//! Every path gives the same IDs: the exact float32 predicate ([`SpatialQuery::matches`]) runs
//! over all rows (scan), over the grid's candidate rows (grid), or is the BVH's own leaf test
//! (points are boxes with equal corners); a stable compaction of the mask gives the sorted
//! IDs. The grid covers the points' finite extent with about [`POINTS_PER_CELL`] points per
//! cell; the BVH has the next power of two of leaves in Morton order over the same extent.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::Array;
use arrow_schema::DataType;
use clap::{Args, ValueEnum};
use gpugraph_command::{wgpu, CommandGraph, VectorFormat};
use gpugraph_gpgpu::spatial::{
    Bvh, BvhOrder, BvhQuery, FilterCandidates, GridIndex, GridIndexQuery, PointSpatialFilter,
    SpatialDomain, SpatialQuery, QUERY_WORDS,
};
use gpugraph_gpgpu::Compaction;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::gpu::{import, import_as, Gpu};
use crate::npy::{self, Dtype};
use crate::output::{ms, PendingFile};

/// Target points per grid cell (the grid's resolution).
pub const POINTS_PER_CELL: u64 = 4;
/// Most grid cells (bounds the offsets array: 16 MiB).
const MAX_CELLS: u64 = 1 << 22;

/// Which structure answers the query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IndexKind {
    /// Uniform grid index, candidates refined by the exact point filter.
    Grid,
    /// Morton-ordered BVH over the points.
    Bvh,
    /// No index: the exact predicate over every row.
    Scan,
}

/// `gpugraph spatial`.
#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("query").required(true).args(["radius", "bounds"]))]
pub struct SpatialArgs {
    /// Points: a `.parquet` file (columns by name) or a 2-D float `.npy` of shape (n, k)
    /// (columns by index).
    pub input: PathBuf,
    /// x column.
    #[arg(long)]
    pub x: String,
    /// y column.
    #[arg(long)]
    pub y: String,
    /// z column (3-D points).
    #[arg(long)]
    pub z: Option<String>,
    /// Radius query: X,Y,R (X,Y,Z,R with --z); matches squared distance <= R².
    #[arg(long, value_name = "X,Y[,Z],R", allow_hyphen_values = true)]
    pub radius: Option<String>,
    /// Box query: x0,y0,x1,y1 (x0,y0,z0,x1,y1,z1 with --z), corners included.
    #[arg(
        long = "box",
        id = "bounds",
        value_name = "MIN,MAX",
        allow_hyphen_values = true
    )]
    pub bounds: Option<String>,
    /// Index to use.
    #[arg(long, value_enum, default_value_t = IndexKind::Grid)]
    pub index: IndexKind,
    /// Matching row IDs (.npy, uint32, ascending).
    #[arg(long)]
    pub out: PathBuf,
}

fn parse_numbers(text: &str, flag: &str, want: usize) -> Result<Vec<f32>> {
    let values: Vec<f32> = text
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<f32>()
                .with_context(|| format!("{flag} '{text}': '{}' is not a number", s.trim()))
        })
        .collect::<Result<_>>()?;
    if values.len() != want {
        bail!(
            "{flag} '{text}' has {} numbers; expected {want}",
            values.len()
        );
    }
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        bail!("{flag} '{text}': {v} is not finite");
    }
    Ok(values)
}

/// The query of the arguments for `dims` dimensions.
pub fn parse_query(args: &SpatialArgs, dims: usize) -> Result<SpatialQuery> {
    let pad = |v: &[f32]| -> [f32; 3] { std::array::from_fn(|a| v.get(a).copied().unwrap_or(0.0)) };
    if let Some(text) = &args.radius {
        let v = parse_numbers(text, "--radius", dims + 1)?;
        if v[dims] < 0.0 {
            bail!("--radius '{text}': the radius {} is negative", v[dims]);
        }
        return Ok(SpatialQuery::Radius {
            center: pad(&v[..dims]),
            radius: v[dims],
        });
    }
    let text = args.bounds.as_deref().unwrap_or_default();
    let v = parse_numbers(text, "--box", 2 * dims)?;
    let (min, max) = (pad(&v[..dims]), pad(&v[dims..]));
    if let Some(a) = (0..dims).find(|&a| min[a] > max[a]) {
        bail!(
            "--box '{text}': the {} range {}..{} is empty (min > max)",
            ["x", "y", "z"][a],
            min[a],
            max[a]
        );
    }
    Ok(SpatialQuery::Bounds { min, max })
}

/// Interleaved float32 points (`dims` per row) of the requested columns.
pub fn load_points(path: &Path, columns: &[&str]) -> Result<Vec<f32>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => load_npy(path, columns),
        Some("parquet") | Some("pq") => load_parquet(path, columns),
        _ => bail!(
            "{}: unsupported points file; expected .npy or .parquet (.pq)",
            path.display()
        ),
    }
}

fn load_npy(path: &Path, columns: &[&str]) -> Result<Vec<f32>> {
    let a = npy::read(path)?;
    if a.dtype != Dtype::F32 || a.shape.len() != 2 {
        bail!(
            "{}: points must be a 2-D float32/float64 array of shape (n, k), got {} {:?}",
            path.display(),
            a.dtype.name(),
            a.shape
        );
    }
    let (rows, cols) = (a.rows(), a.cols());
    let index: Vec<usize> = columns
        .iter()
        .map(|c| match c.parse::<usize>() {
            Ok(i) if i < cols => Ok(i),
            _ => bail!(
                "{}: column '{c}' is not an index below the array's {cols} columns",
                path.display()
            ),
        })
        .collect::<Result<_>>()?;
    let words = a.words();
    let mut out = Vec::with_capacity(rows * index.len());
    for r in 0..rows {
        for &i in &index {
            out.push(f32::from_bits(words[r * cols + i]));
        }
    }
    Ok(out)
}

fn load_parquet(path: &Path, columns: &[&str]) -> Result<Vec<f32>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .with_context(|| format!("{}: not a readable Parquet file", path.display()))?;
    let schema = builder.schema().clone();
    let mut roots = Vec::new();
    for c in columns {
        let Ok(i) = schema.index_of(c) else {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            bail!(
                "{}: no column '{c}' (columns: {})",
                path.display(),
                names.join(", ")
            );
        };
        let t = schema.field(i).data_type();
        if !(t.is_integer() || t.is_floating()) {
            bail!(
                "{}: column '{c}' has type {t}; coordinates must be numeric",
                path.display()
            );
        }
        roots.push(i);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .build()
        .with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut row0 = 0usize;
    let mut null_rows = 0usize;
    for batch in reader {
        let batch = batch.with_context(|| format!("decoding {}", path.display()))?;
        let mut cols = Vec::new();
        for c in columns {
            let col = batch
                .column_by_name(c)
                .context("projected column missing")?;
            // Float64 and wide integers round to the nearest float32 (the GPU's coordinate type).
            let f = arrow_cast::cast(col, &DataType::Float32)
                .with_context(|| format!("{}: column '{c}' to float32", path.display()))?;
            // A null coordinate becomes NaN, which no query matches (as SQL's NULL in a
            // predicate, and as the indexes treat non-finite points).
            let values = f.as_primitive::<Float32Type>();
            cols.push(
                (0..values.len())
                    .map(|r| {
                        if values.is_null(r) {
                            f32::NAN
                        } else {
                            values.value(r)
                        }
                    })
                    .collect::<Vec<f32>>(),
            );
        }
        for r in 0..batch.num_rows() {
            let null = columns
                .iter()
                .any(|c| batch.column_by_name(c).is_some_and(|col| col.is_null(r)));
            null_rows += usize::from(null);
            out.extend(cols.iter().map(|c| c[r]));
        }
        row0 += batch.num_rows();
    }
    if null_rows > 0 {
        eprintln!(
            "spatial: {null_rows} of {row0} rows of {} have a null coordinate; they match no query",
            path.display()
        );
    }
    Ok(out)
}

/// The finite extent of the points per axis (a degenerate or empty axis widened to 1).
pub fn extent(points: &[f32], dims: usize) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for p in points.chunks_exact(dims) {
        for a in 0..dims {
            if p[a].is_finite() {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
    }
    for a in 0..3 {
        // lo and hi start at ±inf and only take finite values: never NaN.
        if lo[a] > hi[a] {
            (lo[a], hi[a]) = (0.0, 1.0);
        } else if lo[a] == hi[a] {
            hi[a] = lo[a] + 1.0f32.max(lo[a].abs() * 1e-6);
        }
    }
    (lo, hi)
}

/// A grid over the extent with about [`POINTS_PER_CELL`] points per cell.
pub fn grid_domain(points: &[f32], dims: usize) -> SpatialDomain {
    let (min, max) = extent(points, dims);
    let n = (points.len() / dims) as u64;
    let cells = (n / POINTS_PER_CELL).clamp(1, MAX_CELLS) as f64;
    let per_axis = (cells.powf(1.0 / dims as f64).ceil() as u32).max(1);
    let mut cells = [per_axis; 3];
    if dims == 2 {
        cells[2] = 1;
    }
    SpatialDomain { min, max, cells }
}

/// Runs the command.
pub fn run(args: &SpatialArgs) -> Result<()> {
    let out_file = PendingFile::new(&args.out, "--out")?;
    let mut columns = vec![args.x.as_str(), args.y.as_str()];
    columns.extend(args.z.as_deref());
    let dims = columns.len();
    let query = parse_query(args, dims)?;
    let t0 = Instant::now();
    let points = load_points(&args.input, &columns)?;
    let n = points.len() / dims;
    if n as u64 >= u64::from(u32::MAX) {
        bail!(
            "{}: {n} points exceed the uint32 row IDs",
            args.input.display()
        );
    }
    let load = t0.elapsed();

    let t1 = Instant::now();
    let gpu = Gpu::open()?;
    let format = if dims == 2 {
        VectorFormat::Float32x2
    } else {
        VectorFormat::Float32x3
    };
    let words: &[u32] = bytemuck::cast_slice(&points);
    let pos_buf = gpu.upload("spatial-points", words);
    let query_buf = gpu.upload("spatial-query", &query.words());
    let iota: Vec<u32> = (0..n as u32).collect();
    let iota_buf = gpu.upload("spatial-rows", &iota);
    let mask_buf = gpu.upload("spatial-mask", &vec![0; n]);
    let ids_buf = gpu.upload("spatial-ids", &vec![0; n]);
    let count_buf = gpu.upload("spatial-count", &[0; 4]);
    gpu.check("uploading the points")?;
    let upload = t1.elapsed();

    let t2 = Instant::now();
    let mut build = CommandGraph::new("cli-spatial-build", gpu.device());
    let mut q = CommandGraph::new("cli-spatial-query", gpu.device());
    let positions = import_as(&mut q, "points", &pos_buf, format, n as u64)?;
    let query_v = import(&mut q, "query", &query_buf, QUERY_WORDS)?;
    let mask_v = import(&mut q, "mask", &mask_buf, n as u64)?;
    let mut detail = String::new();
    let mut status_read: Option<(wgpu::Buffer, u64)> = None;
    let index_bufs: Vec<wgpu::Buffer>;
    match args.index {
        IndexKind::Scan => {
            index_bufs = Vec::new();
            PointSpatialFilter {
                id: "filter".into(),
                positions: positions.into(),
                query: query_v,
                candidates: None,
                mask: Some(mask_v),
                hits: None,
            }
            .add_to_graph(&mut q)?;
        }
        IndexKind::Grid => {
            let domain = grid_domain(&points, dims);
            let cells = domain.cell_count();
            detail = format!(", {} cells", cells);
            let offsets = gpu.upload("grid-offsets", &vec![0; cells as usize + 1]);
            let object_ids = gpu.upload("grid-ids", &vec![0; n]);
            let status = gpu.upload("grid-status", &[0; 4]);
            let candidates = gpu.upload("grid-candidates", &vec![0; n]);
            let qstatus = gpu.upload("grid-query-status", &[0; 4]);
            let storage = GridIndex {
                id: "grid".into(),
                positions: import_as(&mut build, "points", &pos_buf, format, n as u64)?.into(),
                ids: None,
                domain,
                cell_offsets: import(&mut build, "offsets", &offsets, cells + 1)?,
                object_ids: import(&mut build, "object-ids", &object_ids, n as u64)?,
                status: import(&mut build, "status", &status, 3)?,
            }
            .add_to_graph(&mut build)?;
            // The query graph reads the same buffers through its own imports.
            let storage = gpugraph_gpgpu::spatial::GridStorage {
                cell_offsets: import(&mut q, "offsets", &offsets, cells + 1)?,
                object_ids: import(&mut q, "object-ids", &object_ids, n as u64)?,
                status: import(&mut q, "status", &status, 3)?,
                ..storage
            };
            let cand_v = import(&mut q, "candidates", &candidates, n as u64)?;
            let qstatus_v = import(&mut q, "query-status", &qstatus, 3)?;
            GridIndexQuery {
                id: "grid-query".into(),
                index: storage,
                query: query_v,
                candidates: cand_v,
                status: qstatus_v,
                mask: None,
            }
            .add_to_graph(&mut q)?;
            PointSpatialFilter {
                id: "filter".into(),
                positions: positions.into(),
                query: query_v,
                candidates: Some(FilterCandidates {
                    rows: cand_v,
                    count: qstatus_v,
                }),
                mask: Some(mask_v),
                hits: None,
            }
            .add_to_graph(&mut q)?;
            status_read = Some((qstatus.clone(), 3));
            index_bufs = vec![offsets, object_ids, status, candidates, qstatus];
        }
        IndexKind::Bvh => {
            let leaves = (n as u32).max(1).next_power_of_two();
            let (min, max) = extent(&points, dims);
            let node_count = 2 * u64::from(leaves) - 1;
            detail = format!(", {leaves} leaves (Morton order)");
            let nodes = gpu.upload("bvh-nodes", &vec![0; 8 * node_count as usize]);
            let children = gpu.upload("bvh-children", &vec![0; 2 * node_count as usize]);
            let leaf_ids = gpu.upload("bvh-leaf-ids", &vec![0; leaves as usize]);
            let status = gpu.upload("bvh-status", &[0; 4]);
            let candidates = gpu.upload("bvh-candidates", &vec![0; n]);
            let qstatus = gpu.upload("bvh-query-status", &[0; 4]);
            let points_b = import_as(&mut build, "points", &pos_buf, format, n as u64)?;
            let storage = Bvh {
                id: "bvh".into(),
                lower: points_b,
                upper: points_b,
                ids: None,
                leaf_capacity: leaves,
                order: BvhOrder::Morton { min, max },
                nodes: import_as(
                    &mut build,
                    "nodes",
                    &nodes,
                    VectorFormat::Float32,
                    8 * node_count,
                )?,
                children: import(&mut build, "children", &children, 2 * node_count)?,
                leaf_ids: import(&mut build, "leaf-ids", &leaf_ids, u64::from(leaves))?,
                status: import(&mut build, "status", &status, 3)?,
            }
            .add_to_graph(&mut build)?;
            let storage = gpugraph_gpgpu::spatial::BvhStorage {
                nodes: import_as(
                    &mut q,
                    "nodes",
                    &nodes,
                    VectorFormat::Float32,
                    8 * node_count,
                )?,
                leaf_ids: import(&mut q, "leaf-ids", &leaf_ids, u64::from(leaves))?,
                status: import(&mut q, "status", &status, 3)?,
                ..storage
            };
            BvhQuery {
                id: "bvh-query".into(),
                bvh: storage,
                query: query_v,
                candidates: import(&mut q, "candidates", &candidates, n as u64)?,
                status: import(&mut q, "query-status", &qstatus, 4)?,
                mask: Some(mask_v),
            }
            .add_to_graph(&mut q)?;
            status_read = Some((qstatus.clone(), 4));
            index_bufs = vec![nodes, children, leaf_ids, status, candidates, qstatus];
        }
    }
    Compaction {
        id: "ids".into(),
        values: import(&mut q, "rows", &iota_buf, n as u64)?.into(),
        flags: mask_v.into(),
        output: import(&mut q, "ids", &ids_buf, n as u64)?.into(),
        count: import(&mut q, "count", &count_buf, 1)?,
        overflow: None,
    }
    .add_to_graph(&mut q)?;
    let mut build = build.compile()?;
    let mut q = q.compile()?;
    gpu.check("compiling the spatial graphs")?;
    let compile = t2.elapsed();

    let t3 = Instant::now();
    gpu.run_graph(&mut build, "the index build")?;
    let build_t = t3.elapsed();
    let t4 = Instant::now();
    gpu.run_graph(&mut q, "the query")?;
    let query_t = t4.elapsed();

    let t5 = Instant::now();
    let count = gpu.read_back(&count_buf, 1)?[0] as u64;
    let ids = gpu.read_back(&ids_buf, count)?;
    let status = match &status_read {
        Some((b, len)) => gpu.read_back(b, *len)?,
        None => Vec::new(),
    };
    let readback = t5.elapsed();
    drop(index_bufs);
    if status.get(2).is_some_and(|&f| f != 0) {
        bail!(
            "the {:?} query reported flags {:#x} (incomplete result); nothing written",
            args.index,
            status[2]
        );
    }
    let npy_out = npy::encode(&npy::NpyArray::from_u32(&ids));
    out_file.write_all(&npy_out)?;
    out_file.commit()?;
    let work = match (args.index, status.as_slice()) {
        (IndexKind::Grid, [_, required, ..]) => format!(", {required} candidates"),
        (IndexKind::Bvh, [_, _, _, visited]) => format!(", {visited} nodes visited"),
        _ => String::new(),
    };
    println!(
        "spatial {}: {n} points ({dims}-D){detail}{work}; {count} matches -> {}",
        format!("{:?}", args.index).to_lowercase(),
        args.out.display()
    );
    println!(
        "timings (ms): load {:.2}, upload {:.2}, compile {:.2}, build {:.3}, query {:.3}, readback {:.2}",
        ms(load),
        ms(upload),
        ms(compile),
        ms(build_t),
        ms(query_t),
        ms(readback)
    );
    Ok(())
}
