//! `gpugraph join LEFT RIGHT --left-on C --right-on C [--how inner|left] [--select …] --out F`:
//! a many-to-one hash join on the GPU.
//!
//! The files are read with the analyze loader (only the key and selected columns, the
//! file's own types kept). Keys become u32 hash keys under one mapping chosen over both
//! sides ([`keys`]); payload columns become u32 words ([`payload`]). One command graph then
//! builds the right index (`gpugraph_gpgpu::HashIndex`), joins the left keys
//! (`HashJoin`: lookup, stable compaction into pairs; for `--how left`, `HashIndexQuery`)
//! and gathers every payload column by the pairs (`RowGather`), in one submission. The
//! readback checks that the right keys were unique (else the first duplicate key is the
//! error) and the index complete, then the columns are rebuilt and written ([`write`]):
//! to a temporary that only a complete write renames into place.

mod keys;
mod payload;
pub(crate) mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use clap::{Args, ValueEnum};
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CommandGraph, DataView};
use gpugraph_gpgpu::hash::keys::KeyMapping;
use gpugraph_gpgpu::hash::{
    HashBuildStats, HashIndex, HashIndexQuery, HashJoin, HashPolicy, HashQueryStats, HashTable,
    RowGather, STATS_WORDS,
};

use crate::analyze::load::{self, thousands, FileKind, Loaded, Request, CHUNK_ROWS};
use crate::gpu::{import, Gpu};
use crate::output::{progress, PendingFile};

/// Which left rows the output keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum How {
    /// Left rows whose key is in the right table.
    Inner,
    /// Every left row; right columns are null where the key is not in the right table.
    Left,
}

/// `gpugraph join`.
#[derive(Args, Debug, Clone)]
pub struct JoinArgs {
    /// Left table: .csv, .parquet, .arrow (.ipc, .feather) or .arrows.
    pub left: PathBuf,
    /// Right table; its keys must be unique (many-to-one).
    pub right: PathBuf,
    /// Left key column (integers).
    #[arg(long, value_name = "COL")]
    pub left_on: String,
    /// Right key column (integers, unique).
    #[arg(long, value_name = "COL")]
    pub right_on: String,
    /// Join type.
    #[arg(long, value_enum, default_value_t = How::Inner)]
    pub how: How,
    /// Output columns, comma-separated: a column name of either table (left.NAME or
    /// right.NAME when both have it). Default: every left column, then every right column
    /// but the right key. Names in both tables are written as left.NAME / right.NAME.
    #[arg(long, value_delimiter = ',', value_name = "COLS")]
    pub select: Option<Vec<String>>,
    /// Output file: .parquet, .arrow (.ipc, .feather), .arrows or .csv.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Hash policy, key=value,… (load = load factor in percent, probe = 0 linear /
    /// 1 triangular, wg = workgroup size).
    #[arg(long, default_value = "default", value_name = "SPEC")]
    pub hash_policy: HashPolicy,
}

/// Left or right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Left => "left",
            Side::Right => "right",
        }
    }
}

/// One output column: its side, source column and output name.
#[derive(Clone, Debug)]
struct Column {
    side: Side,
    source: String,
    name: String,
}

/// Resolves `--select` (or the default) against both schemas.
fn select(args: &JoinArgs, left: &Schema, right: &Schema) -> Result<Vec<Column>> {
    let has = |s: &Schema, n: &str| s.fields().iter().any(|f| f.name() == n);
    let picked: Vec<(Side, String)> = match &args.select {
        None => left
            .fields()
            .iter()
            .map(|f| (Side::Left, f.name().clone()))
            .chain(
                right
                    .fields()
                    .iter()
                    .filter(|f| *f.name() != args.right_on)
                    .map(|f| (Side::Right, f.name().clone())),
            )
            .collect(),
        Some(names) => {
            let mut out = Vec::new();
            for raw in names {
                let n = raw.trim();
                let (side, name) = if let Some(n) = n.strip_prefix("left.") {
                    (Some(Side::Left), n)
                } else if let Some(n) = n.strip_prefix("right.") {
                    (Some(Side::Right), n)
                } else {
                    (None, n)
                };
                let side = match (side, has(left, name), has(right, name)) {
                    (Some(Side::Left), true, _) => Side::Left,
                    (Some(Side::Right), _, true) => Side::Right,
                    (None, true, false) => Side::Left,
                    (None, false, true) => Side::Right,
                    (None, true, true) => bail!(
                        "--select {name}: both {} and {} have a column '{name}'; write left.{name} or right.{name}",
                        args.left.display(),
                        args.right.display()
                    ),
                    (s, _, _) => {
                        let listing = |s: &Schema| {
                            s.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
                        };
                        let file = match s {
                            Some(Side::Right) => args.right.display().to_string(),
                            Some(Side::Left) => args.left.display().to_string(),
                            None => format!("{} or {}", args.left.display(), args.right.display()),
                        };
                        bail!(
                            "--select {raw}: no column '{name}' in {file}; left columns: {}; right columns: {}",
                            listing(left),
                            listing(right)
                        )
                    }
                };
                out.push((side, name.to_string()));
            }
            out
        }
    };
    if picked.is_empty() {
        bail!("--select: no output columns");
    }
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (_, n) in &picked {
        *count.entry(n.as_str()).or_default() += 1;
    }
    let mut seen = std::collections::HashSet::new();
    let mut columns = Vec::new();
    for (side, source) in &picked {
        let name = if count[source.as_str()] > 1 {
            format!("{}.{source}", side.name())
        } else {
            source.clone()
        };
        if !seen.insert(name.clone()) {
            bail!("--select: column {name} is selected twice");
        }
        columns.push(Column {
            side: *side,
            source: source.clone(),
            name,
        });
    }
    Ok(columns)
}

/// Loads `path`'s `key` and `columns` in the file's own types.
fn load_side(path: &Path, key: &str, flag: &str, columns: &[&str]) -> Result<Loaded> {
    let mut other = vec![key.to_string()];
    other.extend(columns.iter().filter(|c| **c != key).map(|c| c.to_string()));
    let request = Request {
        other,
        keep_types: true,
        ..Request::default()
    };
    let spinner = crate::output::Spinner::new("join: ");
    let loaded = load::load(path, &request, &mut |line| spinner.line(&line));
    spinner.finish();
    loaded.with_context(|| format!("{flag} {key}"))
}

fn chunks(loaded: &Loaded, name: &str) -> Result<Vec<ArrayRef>> {
    let i = loaded.schema.index_of(name)?;
    Ok(loaded.batches.iter().map(|b| b.column(i).clone()).collect())
}

/// A STORAGE | COPY_SRC buffer of `words` words (at least one).
fn output_buffer(gpu: &Gpu, label: &str, words: u64) -> wgpu::Buffer {
    gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: words.max(1) * 4,
        usage: U::STORAGE | U::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// The first right row whose key an earlier valid row already had: (key, first row, row).
fn first_duplicate(keys: &keys::Keys) -> Option<(u32, usize, usize)> {
    let mut seen: HashMap<u32, usize> = HashMap::with_capacity(keys.words.len());
    for (row, &k) in keys.words.iter().enumerate() {
        if keys.valid.as_ref().is_some_and(|v| v[row] == 0) {
            continue;
        }
        if let Some(&first) = seen.get(&k) {
            return Some((k, first, row));
        }
        seen.insert(k, row);
    }
    None
}

fn original_key(mapping: KeyMapping, k: u32) -> i64 {
    match mapping {
        KeyMapping::Unsigned => i64::from(k),
        KeyMapping::Signed => i64::from(k as i32),
    }
}

/// Runs `gpugraph join`.
pub fn run(args: &JoinArgs) -> Result<()> {
    let started = Instant::now();
    let out_kind = FileKind::of(&args.out)?;
    args.hash_policy
        .validate()
        .map_err(|e| anyhow::anyhow!("--hash-policy: {e}"))?;
    let pending = PendingFile::new(&args.out, "--out")?;
    let left_schema = load::read_schema(&args.left)?;
    let right_schema = load::read_schema(&args.right)?;
    for (flag, key, schema, file) in [
        ("--left-on", &args.left_on, &left_schema, &args.left),
        ("--right-on", &args.right_on, &right_schema, &args.right),
    ] {
        if schema.index_of(key).is_err() {
            bail!("{flag} {key}: no column '{key}' in {}", file.display());
        }
    }
    let columns = select(args, &left_schema, &right_schema)?;
    let names = |side: Side| -> Vec<&str> {
        columns
            .iter()
            .filter(|c| c.side == side)
            .map(|c| c.source.as_str())
            .collect()
    };
    progress(format_args!("join: reading {}", args.left.display()));
    let left = load_side(&args.left, &args.left_on, "--left-on", &names(Side::Left))?;
    progress(format_args!("join: reading {}", args.right.display()));
    let right = load_side(
        &args.right,
        &args.right_on,
        "--right-on",
        &names(Side::Right),
    )?;
    let loaded = started.elapsed();
    let (n_left, n_right) = (left.rows, right.rows);
    if n_left >= u64::from(u32::MAX) || n_right >= u64::from(u32::MAX) {
        bail!(
            "join: {} left and {} right rows; each side must have fewer than 4,294,967,295 rows",
            thousands(n_left),
            thousands(n_right)
        );
    }

    // Keys and payload words on the host.
    let encode_started = Instant::now();
    let lkc = chunks(&left, &args.left_on)?;
    let rkc = chunks(&right, &args.right_on)?;
    let mapping = keys::mapping([
        keys::range("left", "--left-on", &args.left_on, &lkc)?,
        keys::range("right", "--right-on", &args.right_on, &rkc)?,
    ])?;
    let left_keys = keys::words("left", "--left-on", &args.left_on, &lkc, mapping)?;
    let right_keys = keys::words("right", "--right-on", &args.right_on, &rkc, mapping)?;
    let mut encoded = Vec::new();
    for c in &columns {
        let side = if c.side == Side::Left { &left } else { &right };
        let field = side.schema.field_with_name(&c.source)?;
        let mut e = payload::encode(
            c.side.name(),
            &c.source,
            field.data_type(),
            &chunks(side, &c.source)?,
        )?;
        e.name = c.name.clone();
        encoded.push((c.side, e));
    }
    let encode_time = encode_started.elapsed();

    // One graph: index, join (or query), gathers.
    let gpu = Gpu::open()?;
    let upload_started = Instant::now();
    let policy = args.hash_policy;
    let capacity = policy.capacity_for(n_right).with_context(|| {
        format!(
            "{} right keys need more than 2^31 slots at the --hash-policy load factor",
            thousands(n_right)
        )
    })?;
    let rk = gpu.upload("join/right-keys", &right_keys.words);
    let rv = right_keys
        .valid
        .as_ref()
        .map(|v| gpu.upload("join/right-valid", v));
    let lk = gpu.upload("join/left-keys", &left_keys.words);
    let lv = left_keys
        .valid
        .as_ref()
        .map(|v| gpu.upload("join/left-valid", v));
    let slot_keys = output_buffer(&gpu, "join/slot-keys", capacity);
    let slot_rows = output_buffer(&gpu, "join/slot-rows", capacity + 1);
    let words = output_buffer(&gpu, "join/words", 2 + STATS_WORDS);
    // The build's statistics apart: the lookup reads them while writing its own.
    let table_stats = output_buffer(&gpu, "join/table-stats", STATS_WORDS);
    let pairs = n_left; // many-to-one: at most one pair per left row
    let left_rows = output_buffer(&gpu, "join/left-rows", pairs);
    let right_rows = output_buffer(&gpu, "join/right-rows", pairs);
    struct Gathered {
        source: wgpu::Buffer,
        source_valid: Option<wgpu::Buffer>,
        output: wgpu::Buffer,
        valid_out: Option<wgpu::Buffer>,
    }
    let mut gathered = Vec::new();
    for (k, (side, e)) in encoded.iter().enumerate() {
        // A left join's left columns are the left rows themselves: nothing to gather.
        if args.how == How::Left && *side == Side::Left {
            gathered.push(None);
            continue;
        }
        let may_miss = args.how == How::Left;
        gathered.push(Some(Gathered {
            source: gpu.upload(&format!("join/payload-{k}"), &e.words),
            source_valid: e
                .valid
                .as_ref()
                .map(|v| gpu.upload(&format!("join/payload-valid-{k}"), v)),
            output: output_buffer(&gpu, &format!("join/out-{k}"), pairs * u64::from(e.width)),
            valid_out: (e.valid.is_some() || may_miss)
                .then(|| output_buffer(&gpu, &format!("join/out-valid-{k}"), pairs)),
        }));
    }
    let mut g = CommandGraph::new("join", gpu.device());
    let table = HashTable {
        keys: import(&mut g, "slot-keys", &slot_keys, capacity)?,
        rows: import(&mut g, "slot-rows", &slot_rows, capacity + 1)?,
        stats: import(&mut g, "table-stats", &table_stats, STATS_WORDS)?,
        probing: policy.probing,
    };
    let rkv = import(&mut g, "right-keys", &rk, n_right)?;
    let rvv = match &rv {
        Some(b) => Some(import(&mut g, "right-valid", b, n_right)?.into()),
        None => None,
    };
    HashIndex {
        id: "index".into(),
        keys: rkv.into(),
        valid: rvv,
        table,
    }
    .add_to_graph_with(&mut g, &policy)?;
    let lkv = import(&mut g, "left-keys", &lk, n_left)?;
    let lvv = match &lv {
        Some(b) => Some(import(&mut g, "left-valid", b, n_left)?.into()),
        None => None,
    };
    let count = view_at(&mut g, &words, 0, 1)?;
    let query_stats = view_at(&mut g, &words, 2, STATS_WORDS)?;
    let lrv = import(&mut g, "left-rows", &left_rows, pairs)?;
    let rrv = import(&mut g, "right-rows", &right_rows, pairs)?;
    let (left_index, right_index) = match args.how {
        How::Inner => {
            HashJoin {
                id: "join".into(),
                table,
                left_keys: lkv.into(),
                left_valid: lvv,
                left_rows: lrv,
                right_rows: rrv,
                count,
                overflow: Some(view_at(&mut g, &words, 1, 1)?),
                stats: query_stats,
            }
            .add_to_graph_with(&mut g, &policy)?;
            (
                g.with_live_count(lrv, count)?,
                g.with_live_count(rrv, count)?,
            )
        }
        How::Left => {
            HashIndexQuery {
                id: "lookup".into(),
                table,
                keys: lkv.into(),
                valid: lvv,
                output: rrv,
                stats: query_stats,
            }
            .add_to_graph_with(&mut g, &policy)?;
            (lrv, rrv)
        }
    };
    for (k, ((side, e), buffers)) in encoded.iter().zip(&gathered).enumerate() {
        let Some(b) = buffers else { continue };
        let rows_in = if *side == Side::Left { n_left } else { n_right };
        RowGather {
            id: format!("gather/{k}"),
            indices: if *side == Side::Left {
                left_index
            } else {
                right_index
            },
            source: import(
                &mut g,
                &format!("payload-{k}"),
                &b.source,
                rows_in * u64::from(e.width),
            )?,
            width: e.width,
            output: import(
                &mut g,
                &format!("out-{k}"),
                &b.output,
                pairs * u64::from(e.width),
            )?,
            source_valid: match &b.source_valid {
                Some(v) => Some(import(&mut g, &format!("payload-valid-{k}"), v, rows_in)?),
                None => None,
            },
            valid_out: match &b.valid_out {
                Some(v) => Some(import(&mut g, &format!("out-valid-{k}"), v, pairs)?),
                None => None,
            },
        }
        .add_to_graph(&mut g)?;
    }
    let mut compiled = g.compile()?;
    gpu.check("compiling the join graph")?;
    // The uploads are queue writes that run at the next submission: flush them here, so the
    // GPU time below is the join's kernels alone.
    gpu.submit_and_wait(
        gpu.device()
            .create_command_encoder(&Default::default())
            .finish(),
    )?;
    let upload_time = upload_started.elapsed();
    let gpu_started = Instant::now();
    gpu.run_graph(&mut compiled, "join")?;
    let gpu_time = gpu_started.elapsed();

    // Readback and checks, before anything is written.
    let readback_started = Instant::now();
    let w = gpu.read_back(&words, 2 + STATS_WORDS)?;
    let query = HashQueryStats::from_words(&w[2..]);
    let build = HashBuildStats::from_words(&gpu.read_back(&table_stats, STATS_WORDS)?);
    let right_valid = build.rows - build.invalid;
    if build.keys < right_valid {
        let detail = first_duplicate(&right_keys)
            .map(|(k, a, b)| {
                format!(
                    "key {} at right rows {} and {}",
                    original_key(mapping, k),
                    thousands(a as u64),
                    thousands(b as u64)
                )
            })
            .unwrap_or_else(|| "a repeated key".into());
        bail!(
            "--right-on {}: {} has duplicate keys ({detail}; {} distinct of {} keys); the right side of a join must have unique keys",
            args.right_on,
            args.right.display(),
            thousands(u64::from(build.keys)),
            thousands(u64::from(right_valid))
        );
    }
    if build.overflow > 0 || query.incomplete {
        bail!(
            "join: the hash index of {} slots overflowed ({} rows found no slot); use a lower load factor in --hash-policy",
            thousands(capacity),
            thousands(u64::from(build.overflow))
        );
    }
    let rows = match args.how {
        How::Inner => w[0] as usize,
        How::Left => n_left as usize,
    };
    let mut arrays = Vec::new();
    let mut fields = Vec::new();
    for (((side, e), b), c) in encoded.iter().zip(&gathered).zip(&columns) {
        let schema = if *side == Side::Left {
            &left.schema
        } else {
            &right.schema
        };
        let nullable = schema.field_with_name(&c.source)?.is_nullable();
        let array = match b {
            // A left join's left column: the left rows as read.
            None => {
                let parts = chunks(&left, &c.source)?;
                let refs: Vec<&dyn arrow_array::Array> = parts.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs)?
            }
            Some(b) => {
                let data = gpu.read_back(&b.output, rows as u64 * u64::from(e.width))?;
                let valid = match &b.valid_out {
                    Some(v) => Some(gpu.read_back(v, rows as u64)?),
                    None => None,
                };
                payload::decode(e, data, valid, rows)?
            }
        };
        let nullable = nullable || b.as_ref().is_some_and(|b| b.valid_out.is_some());
        fields.push(Field::new(&e.name, e.data_type.clone(), nullable));
        arrays.push(array);
    }
    let readback_time = readback_started.elapsed();
    let write_started = Instant::now();
    let schema: SchemaRef = std::sync::Arc::new(Schema::new(fields));
    let mut batches = Vec::new();
    let mut at = 0;
    while at < rows || (rows == 0 && batches.is_empty()) {
        let n = CHUNK_ROWS.min(rows - at);
        batches.push(RecordBatch::try_new(
            schema.clone(),
            arrays.iter().map(|a| a.slice(at, n)).collect(),
        )?);
        at += n;
        if rows == 0 {
            break;
        }
    }
    write::write(pending, &args.out, out_kind, schema, &batches)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "join ({:?}): {} left rows x {} right rows -> {} rows in {}",
        args.how,
        thousands(n_left),
        thousands(n_right),
        thousands(rows as u64),
        args.out.display()
    );
    println!(
        "  probes per key: build mean {:.2} max {}, probe mean {:.2} max {}; index {} slots ({} keys)",
        build.mean_probe(),
        build.max_probe,
        query.mean_probe(),
        query.max_probe,
        thousands(capacity),
        thousands(u64::from(build.keys))
    );
    println!(
        "  timings: read {:.1} ms, keys+payload encode {:.1} ms, upload+compile {:.1} ms, GPU {:.1} ms, readback+decode {:.1} ms, write {:.1} ms, total {:.1} ms",
        ms(loaded),
        ms(encode_time),
        ms(upload_time),
        ms(gpu_time),
        ms(readback_time),
        ms(write_started.elapsed()),
        ms(started.elapsed())
    );
    Ok(())
}

/// A packed u32 view of `len` words at word `offset` of `buffer` (imported on first use).
fn view_at(g: &mut CommandGraph, buffer: &wgpu::Buffer, offset: u64, len: u64) -> Result<DataView> {
    use gpugraph_command::{DataViewDescriptor, VectorFormat};
    let h = g.import_buffer_once("join/words", buffer, buffer.usage())?;
    Ok(g.create_data_view(
        h,
        DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(offset * 4),
    )?)
}
