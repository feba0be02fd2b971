//! `gpugraph generate-table`: a synthetic, flights-like table for scale demos of
//! `gpugraph analyze`, streamed to Parquet or Arrow IPC in batches (memory stays at one batch)
//! with progress on stderr. Deterministic for a given seed and row count.
//!
//! Columns (nycflights13-like):
//! * `dep_time` Int32, `HHMM` departure time (morning and evening peaks); null for
//!   cancelled flights (~2%);
//! * `arr_delay` Float32 minutes: a carrier offset, a drift through the day, noise and a heavy
//!   late tail; null for cancelled and diverted flights, NaN for ~0.1% (bad sensor rows);
//! * `carrier` Dictionary<UInt8, Utf8>, 16 carriers with skewed shares;
//! * `distance` Float32 miles, log-normal in [80, 5000].

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arrow_array::types::UInt8Type;
use arrow_array::{
    ArrayRef, DictionaryArray, Float32Array, Int32Array, RecordBatch, StringArray, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::load::{thousands, FileKind};
use crate::output::{PendingFile, Progress};

/// Rows per written batch (and Parquet row group).
pub const BATCH_ROWS: u64 = 1 << 20;

/// Upper bound of the bytes one row takes on disk, uncompressed: four values of 4, 4, 1 and
/// 4 bytes plus validity bits and per-batch metadata.
pub const MAX_BYTES_PER_ROW: u64 = 14;

/// The carriers, their share weights and mean delay offsets (minutes).
const CARRIERS: [(&str, f32, f32); 16] = [
    ("UA", 58.7, 3.6),
    ("B6", 54.6, 9.5),
    ("EV", 54.2, 15.8),
    ("DL", 48.1, 1.6),
    ("AA", 32.7, 0.4),
    ("MQ", 26.4, 10.8),
    ("US", 20.5, 2.1),
    ("9E", 18.5, 7.4),
    ("WN", 12.3, 9.6),
    ("VX", 5.2, 1.8),
    ("FL", 3.3, 20.1),
    ("AS", 0.7, -9.9),
    ("F9", 0.7, 21.9),
    ("YV", 0.6, 15.6),
    ("HA", 0.3, -6.9),
    ("OO", 0.1, 11.9),
];

/// `gpugraph generate-table`.
#[derive(Args, Debug, Clone)]
pub struct GenerateArgs {
    /// Rows to write (the synthetic flights-like table).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), required_unless_present = "tpch", conflicts_with = "tpch")]
    pub rows: Option<u64>,
    /// Write this TPC-H table instead (tpchgen: the DataFusion community's generator).
    #[arg(long, value_enum, value_name = "TABLE", requires = "scale")]
    pub tpch: Option<super::tpch::TpchTable>,
    /// TPC-H scale factor (1 = lineitem 6M rows, orders 1.5M).
    #[arg(long, value_name = "SF", requires = "tpch")]
    pub scale: Option<f64>,
    /// Output file: .parquet (Snappy) or .arrow / .ipc / .feather (IPC file) or .arrows.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The generated table's schema.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("dep_time", DataType::Int32, true),
        Field::new("arr_delay", DataType::Float32, true),
        Field::new(
            "carrier",
            DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8)),
            false,
        ),
        Field::new("distance", DataType::Float32, false),
    ]))
}

fn normal(rng: &mut StdRng) -> f32 {
    // Box-Muller; u1 in (0, 1] keeps the log finite.
    let u1: f32 = 1.0 - rng.random::<f32>();
    let u2: f32 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// One batch of `n` rows.
pub fn batch(rng: &mut StdRng, n: usize) -> Result<RecordBatch> {
    let total: f32 = CARRIERS.iter().map(|c| c.1).sum();
    let mut dep = Vec::with_capacity(n);
    let mut delay = Vec::with_capacity(n);
    let mut carrier = Vec::with_capacity(n);
    let mut distance = Vec::with_capacity(n);
    for _ in 0..n {
        let mut pick = rng.random::<f32>() * total;
        let mut code = CARRIERS.len() - 1;
        for (k, c) in CARRIERS.iter().enumerate() {
            if pick < c.1 {
                code = k;
                break;
            }
            pick -= c.1;
        }
        carrier.push(code as u8);
        let peak = if rng.random::<f32>() < 0.55 {
            8.5
        } else {
            17.5
        };
        let minutes = ((peak + 2.5 * normal(rng)) * 60.0).clamp(5.0 * 60.0, 23.0 * 60.0 + 59.0);
        let m = minutes as i32;
        let fate = rng.random::<f32>();
        let cancelled = fate < 0.02;
        dep.push((!cancelled).then_some((m / 60) * 100 + m % 60));
        let hour = minutes / 60.0;
        let mut d = CARRIERS[code].2 - 8.0 + 1.2 * (hour - 5.0) + 18.0 * normal(rng);
        if rng.random::<f32>() < 0.12 {
            d += -60.0 * (1.0 - rng.random::<f32>()).ln();
        }
        delay.push(if cancelled || fate < 0.023 {
            None
        } else if fate < 0.024 {
            Some(f32::NAN)
        } else {
            Some(d.round())
        });
        distance.push((6.6 + 0.6 * normal(rng)).exp().clamp(80.0, 5000.0).round());
    }
    let keys = UInt8Array::from(carrier);
    let names = StringArray::from(CARRIERS.iter().map(|c| c.0).collect::<Vec<_>>());
    let carrier = DictionaryArray::<UInt8Type>::try_new(keys, Arc::new(names))?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(dep)),
        Arc::new(Float32Array::from(delay)),
        Arc::new(carrier),
        Arc::new(Float32Array::from(distance)),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}

type Out<'a> = BufWriter<&'a File>;

enum Sink<'a> {
    Parquet(parquet::arrow::ArrowWriter<Out<'a>>),
    IpcFile(arrow_ipc::writer::FileWriter<Out<'a>>),
    IpcStream(arrow_ipc::writer::StreamWriter<Out<'a>>),
}

impl Sink<'_> {
    fn write(&mut self, b: &RecordBatch) -> Result<()> {
        match self {
            Sink::Parquet(w) => w.write(b)?,
            Sink::IpcFile(w) => w.write(b)?,
            Sink::IpcStream(w) => w.write(b)?,
        }
        Ok(())
    }
    fn finish(self) -> Result<()> {
        use std::io::Write;
        let mut out = match self {
            Sink::Parquet(w) => w.into_inner()?,
            Sink::IpcFile(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
            Sink::IpcStream(mut w) => {
                w.finish()?;
                w.into_inner()?
            }
        };
        out.flush()?;
        Ok(())
    }
}

/// Fails when `rows` rows may not fit in the free space of the file system holding `dir`.
fn check_free_space(dir: &Path, rows: u64, per_row: u64, target: &Path) -> Result<()> {
    let need = rows.saturating_mul(per_row);
    let st = rustix::fs::statvfs(dir)
        .with_context(|| format!("--out {}: reading the free disk space", target.display()))?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    if need > free {
        bail!(
            "--out {}: {} rows need up to {} bytes ({} per row) but the file system has {} bytes free; use fewer --rows or another directory",
            target.display(),
            thousands(rows),
            thousands(need),
            per_row,
            thousands(free)
        );
    }
    Ok(())
}

/// Writes the table; the file appears under its name only when complete (written to a
/// temporary beside it first, removed on error or SIGINT/SIGTERM, so an interrupted run never
/// leaves a truncated file or a `.partial` behind). Checks the free disk space first.
pub fn run(args: &GenerateArgs) -> Result<()> {
    let kind = FileKind::of(&args.out)?;
    if kind == FileKind::Csv {
        bail!(
            "{}: generate-table writes .parquet or Arrow IPC (.arrow, .ipc, .feather, .arrows), not CSV",
            args.out.display()
        );
    }
    let pending = PendingFile::new(&args.out, "--out")?;
    let dir = pending
        .temp_path()
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let (rows, per_row, schema) = match (args.tpch, args.scale) {
        (Some(table), Some(sf)) => {
            super::tpch::check_scale(sf)?;
            (table.rows(sf), table.max_bytes_per_row(), table.schema())
        }
        _ => (args.rows.unwrap_or(0), MAX_BYTES_PER_ROW, schema()),
    };
    check_free_space(&dir, rows, per_row, &args.out)?;
    let partial = args.out.clone();
    let out = BufWriter::with_capacity(1 << 22, pending.file());
    let mut sink = match kind {
        FileKind::Parquet => {
            let props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::SNAPPY)
                .set_max_row_group_row_count(Some(BATCH_ROWS as usize))
                .build();
            Sink::Parquet(parquet::arrow::ArrowWriter::try_new(
                out,
                schema,
                Some(props),
            )?)
        }
        FileKind::IpcFile => Sink::IpcFile(arrow_ipc::writer::FileWriter::try_new(out, &schema)?),
        FileKind::IpcStream | FileKind::Csv => {
            Sink::IpcStream(arrow_ipc::writer::StreamWriter::try_new(out, &schema)?)
        }
    };
    let started = Instant::now();
    if let (Some(table), Some(sf)) = (args.tpch, args.scale) {
        // `rows` is the generator's estimate: the bar's total, not a promise.
        let mut bar = Progress::new("generate-table", "rows", Some(rows));
        let mut written = 0u64;
        super::tpch::generate(table, sf, &mut |batch| {
            sink.write(&batch)
                .with_context(|| format!("writing {}", partial.display()))?;
            written += batch.num_rows() as u64;
            bar.set(written);
            Ok(())
        })?;
        bar.finish();
        sink.finish()
            .with_context(|| format!("finishing {}", partial.display()))?;
        pending.commit()?;
        println!(
            "wrote {} rows of TPC-H {table:?} at scale {sf} to {} in {:.1} s",
            thousands(written),
            args.out.display(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let total = rows;
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut bar = Progress::new("generate-table", "rows", Some(total));
    let mut written = 0u64;
    while written < total {
        let n = BATCH_ROWS.min(total - written);
        sink.write(&batch(&mut rng, n as usize)?)
            .with_context(|| format!("writing {}", partial.display()))?;
        written += n;
        bar.set(written);
    }
    bar.finish();
    sink.finish()
        .with_context(|| format!("finishing {}", partial.display()))?;
    pending.commit()?;
    println!(
        "wrote {} rows to {} in {:.1} s",
        thousands(total),
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn batches_are_deterministic_and_flights_like() {
        let a = batch(&mut StdRng::seed_from_u64(7), 10_000).unwrap();
        let b = batch(&mut StdRng::seed_from_u64(7), 10_000).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.schema(), schema());
        let dep = a.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
        let nulls = dep.null_count();
        assert!((100..400).contains(&nulls), "{nulls} cancelled of 10,000");
        for v in dep.iter().flatten() {
            assert!((500..=2359).contains(&v) && v % 100 < 60, "HHMM {v}");
        }
        let delay = a.column(1).as_any().downcast_ref::<Float32Array>().unwrap();
        assert!(delay.null_count() > nulls);
        assert!(delay.iter().flatten().any(f32::is_nan));
    }
}
