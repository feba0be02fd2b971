//! `gpugraph analyze`: the main job. Reads a CSV, Parquet or Arrow IPC table, uploads only
//! the columns it needs, runs ONE compiled command graph (filter mask, value extent,
//! histogram + CDF, per-group counts and means, grid binning over x/y and per-cell means of a
//! third column z) in ONE
//! submission, reads the small results back explicitly, and writes a text summary (stdout),
//! `report.json` and PNG plots. Progress and phase lines go to stderr.
//!
//! Modules: [`args`] (command line, filter syntax), [`load`] (files → Arrow batches, column
//! checks; [`parquet_read`]: Parquet decoded on several threads), [`upload`] (the columns to
//! the GPU, one thread each), [`graph`] (the arguments and table handed to the library
//! workflow `gpugraph_program::workflow::analyze`, which builds the command graph, and its
//! readback), [`report`] (report.json and text), [`plot`] (PNG through plotters,
//! [`crate::chart`]), [`generate`] (`gpugraph generate-table`, the synthetic flights-like table).

pub mod args;
pub mod column_types;
pub mod exact;
pub mod generate;
pub mod graph;
pub mod ipc_extents;
pub mod load;
pub mod parquet_read;
pub mod plot;
pub mod report;
pub mod tpch;
pub mod upload;

use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpugraph_arrow::{MaskTransfer, UploadOptions};
use gpugraph_gpgpu::Summation;

pub use args::AnalyzeArgs;
use graph::{Bins, GpuResults, Spec};
use load::{thousands, Request};
use report::{
    extent, num, GraphInfo, GridReport, GroupRow, HistogramReport, Report, Timings, ValueReport,
};

use crate::gpu::Gpu;
use crate::output::{ms, progress, PendingDir, Spinner};

/// The files `analyze` writes into `--out`; a directory holding anything else is refused.
pub const OUTPUT_FILES: [&str; 5] = [
    "report.json",
    "histogram.png",
    "cdf.png",
    "heatmap.png",
    "heatmap_mean.png",
];

fn is_output_file(name: &str) -> bool {
    OUTPUT_FILES.contains(&name)
}

/// Runs the analysis described by `args`.
pub fn run(args: &AnalyzeArgs) -> Result<()> {
    let started = Instant::now();
    let request = Request {
        value: args.value.clone(),
        x: args.x.clone(),
        y: args.y.clone(),
        group: args.group.clone(),
        z: args.z.clone(),
        filters: args.filters.clone(),
        ..Request::default()
    };
    if let Some(z) = &args.z {
        for (flag, axis) in [("--x", &args.x), ("--y", &args.y)] {
            if axis.as_ref() == Some(z) {
                bail!("--z '{z}' is also the grid's {flag} column: its mean per cell only says where the cell lies; give a third column (e.g. --x dep_time --y distance --z arr_delay)");
            }
        }
    }
    if request.columns().is_empty() {
        bail!("nothing to analyze: give --value, --group, --x/--y or --filter");
    }
    load::FileKind::of(&args.file)?;
    let out = PendingDir::new(&args.out, "--out", is_output_file)?;
    let mut timings = Timings::default();

    progress(format_args!(
        "analyze: reading {} (columns {})",
        args.file.display(),
        request.columns().join(", ")
    ));
    // The device opens (adapter enumeration, device creation, pipeline-cache file) while the
    // file decodes: both take tens to hundreds of milliseconds and need nothing of each other.
    // A file error still wins: the device's result is only looked at after the load.
    let opening = std::thread::Builder::new()
        .name("analyze: open device".into())
        .spawn(Gpu::open)
        .context("starting the device thread")?;
    let t = Instant::now();
    let spinner = Spinner::new("analyze: ");
    let loaded = load::load(&args.file, &request, &mut |line| spinner.line(&line));
    spinner.finish();
    timings.load = ms(t.elapsed());
    // Joined before anything can return: a process must not exit while another thread is
    // inside the Vulkan driver creating a device.
    let t = Instant::now();
    let opened = match opening.join() {
        Ok(gpu) => gpu,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    timings.device_wait = ms(t.elapsed());
    let mut loaded = loaded?;
    if loaded.rows == 0 {
        bail!(
            "{} has no data rows; nothing to analyze",
            args.file.display()
        );
    }
    let value_nulls = args.value.as_deref().map_or(0, |v| loaded.null_count(v));
    let (filters, mut notes) = exact::float64_filters(&mut loaded, &args.filters)?;
    let bins = match (args.bins, &args.value) {
        (Some(b), _) => b,
        (None, Some(v)) => match exact::integer_bins(&loaded, v, args::DEFAULT_BINS)? {
            Some(b) => {
                notes.push(format!(
                    "{b} histogram bins, one per integer: '{v}' holds only integers spanning fewer than {} (give --bins to choose)",
                    args::DEFAULT_BINS
                ));
                b
            }
            None => args::DEFAULT_BINS,
        },
        (None, None) => args::DEFAULT_BINS,
    };
    let mut grid_widen = [false; 2];
    if let (Some(x), Some(y)) = (&args.x, &args.y) {
        for (k, c) in [x, y].into_iter().enumerate() {
            grid_widen[k] = exact::rounds_in_float32(&loaded, c)?;
            if grid_widen[k] {
                notes.push(format!(
                    "grid {} domain widened one float32 step on each side: some values of '{c}' are not exact in float32, and the domain must contain every counted point",
                    ["x", "y"][k]
                ));
            }
        }
    }
    let gpu = opened?;

    progress(format_args!(
        "analyze: uploading {} columns x {} rows in {} chunks",
        loaded.schema.fields().len(),
        thousands(loaded.rows),
        loaded.batches.len()
    ));
    let t = Instant::now();
    // GPUGRAPH_MASK_TRANSFER=words uploads masks as words (the A/B of bench/analyze-latency.sh).
    let masks = match std::env::var("GPUGRAPH_MASK_TRANSFER").as_deref() {
        Ok("words") => MaskTransfer::Words,
        _ => MaskTransfer::Bitmap,
    };
    let options = UploadOptions::default()
        .round_float64()
        .narrow_int64()
        .encode_utf8()
        .with_mask_transfer(masks);
    let table = upload::upload(&gpu.ctx, &loaded, &options)
        .with_context(|| format!("uploading {}", args.file.display()))?;
    gpu.check("upload")?;
    let (rows, kind) = (loaded.rows, loaded.kind);
    drop(loaded);
    timings.upload = ms(t.elapsed());
    progress(format_args!(
        "analyze: uploaded {:.1} MB ({:.1} MB over the bus) in {:.1} ms ({:.1} GB/s over the bus)",
        table.bytes() as f64 / 1e6,
        table.bus_bytes() as f64 / 1e6,
        timings.upload,
        table.bus_bytes() as f64 / 1e6 / timings.upload.max(1e-3)
    ));

    let spec = Spec {
        value: args.value.clone(),
        xy: args.x.clone().zip(args.y.clone()),
        group: args.group.clone(),
        grid_value: grid_value(args),
        filters: graph::row_filters(&table, &filters)?,
        bins: match &args.edges {
            Some(e) => Bins::Edges(e.0.clone()),
            None => Bins::Uniform(bins),
        },
        grid: args.grid,
        grid_widen,
        summation: if args.deterministic {
            Summation::Deterministic
        } else {
            Summation::Atomic
        },
    };
    progress("analyze: building and compiling the graph");
    let t = Instant::now();
    let device_cache = gpugraph_command::DeviceCache::for_device(gpu.device());
    let created_before = device_cache.stats().pipelines_created;
    let mut analysis = graph::build(&gpu, &table, &spec)?;
    gpu.check("compile")?;
    timings.compile = ms(t.elapsed());
    let pipelines_created = device_cache.stats().pipelines_created - created_before;
    let pipeline_cache = gpu
        .ctx
        .pipeline_cache()
        .map(|c| report::PipelineCacheReport {
            file: c.path().display().to_string(),
            loaded: c.status().clone(),
        });
    progress(format_args!(
        "analyze: compiled {pipelines_created} pipelines in {:.1} ms ({})",
        timings.compile,
        match &pipeline_cache {
            Some(c) => format!("pipeline cache {}", c.file),
            None => "no pipeline cache".to_string(),
        }
    ));

    progress(format_args!(
        "analyze: running {} nodes in one submission",
        analysis.nodes().len()
    ));
    let t = Instant::now();
    graph::run(&mut analysis, &gpu)?;
    timings.gpu = ms(t.elapsed());

    let t = Instant::now();
    let results = graph::read(&analysis, &gpu)?;
    timings.readback = ms(t.elapsed());

    let (groups, groups_without_selected_rows) = match &args.group {
        Some(g) => group_rows(
            table.dictionary(g)?.unwrap_or_default(),
            &results,
            !args.filters.is_empty(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    if let (Some(g), false) = (&args.group, groups_without_selected_rows.is_empty()) {
        notes.push(omitted_groups_note(g, &groups_without_selected_rows));
    }
    let caps = gpu.ctx.capabilities();
    let stats = analysis.stats();
    let mut report = Report {
        schema_version: report::SCHEMA_VERSION,
        count_scopes: report::count_scopes(),
        file: args.file.display().to_string(),
        format: kind.name(),
        device: format!("{} ({})", caps.adapter, caps.backend),
        rows,
        selected: results.selected.unwrap_or(rows),
        filters: args.filters.iter().map(ToString::to_string).collect(),
        value: args
            .value
            .as_ref()
            .map(|v| value_report(v, &results, value_nulls, &spec.bins)),
        group_column: args.group.clone(),
        summation: if args.deterministic {
            "deterministic"
        } else {
            "atomic"
        },
        groups,
        groups_without_selected_rows,
        grid: spec
            .xy
            .as_ref()
            .map(|(x, y)| grid_report(x, y, args, &results, grid_widen)),
        notes,
        timings_ms: timings,
        graph: GraphInfo {
            nodes: analysis.nodes().to_vec(),
            transient_bytes: stats.physical_transient_bytes,
            imported_bytes: stats.imported_bytes,
            pipelines_created,
            pipeline_cache,
        },
    };
    drop(analysis);
    drop(table);

    let t = Instant::now();
    let plots = plot::write_all(&report, out.dir(), plot::PlotOptions { log_y: args.log_y })?;
    report.timings_ms.output = ms(t.elapsed());
    report.timings_ms.total = ms(started.elapsed());
    report.write(out.dir())?;
    let text = report.text();
    out.commit()?;
    print!("{text}");
    println!("wrote {}", args.out.join("report.json").display());
    for p in plots {
        if let Some(name) = p.file_name() {
            println!("wrote {}", args.out.join(name).display());
        }
    }
    Ok(())
}

fn value_report(column: &str, r: &GpuResults, nulls: u64, bins: &Bins) -> ValueReport {
    let total = r.cumulative.last().copied().unwrap_or(0) as u64;
    let outside = if r.invalid_edges {
        0
    } else {
        r.hist_ignored.saturating_sub(r.nonfinite)
    };
    let ext = extent(r.extent);
    let count = match (r.invalid_edges, ext) {
        (true, None) => Some(0),
        (true, Some(_)) => None,
        (false, _) => Some(total + outside),
    };
    ValueReport {
        column: column.to_string(),
        extent: ext,
        count,
        nonfinite: r.nonfinite,
        nulls,
        histogram: HistogramReport {
            kind: match bins {
                Bins::Uniform(_) => "uniform",
                Bins::Edges(_) => "edges",
            },
            edges: r.edges.iter().map(|&e| num(e)).collect(),
            counts: r.counts.iter().map(|&c| c as u64).collect(),
            cumulative: r.cumulative.iter().map(|&c| c as u64).collect(),
            cdf: r
                .cumulative
                .iter()
                .map(|&c| {
                    if total > 0 {
                        c as f64 / total as f64
                    } else {
                        0.0
                    }
                })
                .collect(),
            outside,
            invalid_edges: r.invalid_edges,
        },
    }
}

/// The groups to report, sorted by key, and the keys of the groups left out because no row
/// of theirs passed the filters (`filtered`; pandas' groupby after filtering has no such
/// group either). A group with selected rows whose values are all null or non-finite stays
/// (count 0, mean null), as pandas keeps it with a NaN mean.
fn group_rows(
    dictionary: &[String],
    r: &GpuResults,
    filtered: bool,
) -> (Vec<GroupRow>, Vec<String>) {
    let mut rows = Vec::new();
    let mut omitted = Vec::new();
    for (i, key) in dictionary.iter().enumerate() {
        let count = r.group_count.get(i).copied().unwrap_or(0) as u64;
        // Without a value column `group_count` is the selected rows themselves.
        let selected_rows = match r.group_rows.get(i) {
            Some(&n) => n as u64,
            None => count,
        };
        if filtered && selected_rows == 0 {
            omitted.push(key.clone());
            continue;
        }
        rows.push(GroupRow {
            key: key.clone(),
            count,
            mean: r.group_mean.get(i).and_then(|&m| num(m)),
        });
    }
    rows.sort_by(|a, b| a.key.cmp(&b.key));
    omitted.sort();
    (rows, omitted)
}

/// The note naming the groups the filters emptied (the first few keys, then how many more).
fn omitted_groups_note(column: &str, keys: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut names = keys
        .iter()
        .take(SHOWN)
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > SHOWN {
        names.push_str(&format!(" and {} more", keys.len() - SHOWN));
    }
    format!(
        "{} group{} of '{column}' with no row passing the filters left out of the groups (as pandas' groupby after filtering): {names}",
        keys.len(),
        if keys.len() == 1 { "" } else { "s" }
    )
}

/// The domain the positions kernel used: the extent, widened one float32 step outwards when
/// `widen`, then by 0.5 on each side when degenerate.
fn domain(e: Option<[f32; 2]>, widen: bool) -> Option<[f64; 2]> {
    let e = e.map(|e| gpugraph_program::workflow::analyze::widened(e, widen));
    let [lo, hi] = extent(e)?;
    Some(if hi > lo {
        [lo, hi]
    } else {
        [lo - 0.5, hi + 0.5]
    })
}

fn grid_report(
    x: &str,
    y: &str,
    args: &AnalyzeArgs,
    r: &GpuResults,
    widen: [bool; 2],
) -> GridReport {
    GridReport {
        x: x.to_string(),
        y: y.to_string(),
        x_domain: domain(r.x_extent, widen[0]),
        y_domain: domain(r.y_extent, widen[1]),
        bins: [args.grid.nx, args.grid.ny],
        counts: r.grid_count.clone(),
        z: grid_value(args),
        value_counts: grid_value(args).map(|_| r.grid_value_count.clone()),
        mean: grid_value(args).map(|_| r.grid_mean.iter().map(|&m| num(m)).collect()),
    }
}

/// The column averaged per grid cell: `--z`, else the `--value` column.
fn grid_value(args: &AnalyzeArgs) -> Option<String> {
    args.z.clone().or_else(|| args.value.clone())
}
