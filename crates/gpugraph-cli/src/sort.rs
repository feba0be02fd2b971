//! `gpugraph sort` and `gpugraph argsort`: a stable sort of 1-D `.npy` keys on the GPU,
//! ascending or descending, optionally carrying values, written as `.npy`.
//!
//! Keys are uint32, int32 or float32: any `.npy` dtype that [`npy::read`] converts exactly
//! (int8..int64 as int32, bool and uint8..uint64 as uint32, float64 as float32; a value that
//! does not convert is named). The sorted keys keep the dtype the keys were read as (an int64
//! file gives int32 keys). Float keys follow the total order `-inf < … < -0 < +0 < … < +inf`
//! with every NaN last in both directions, in input order, written as the canonical NaN
//! `0x7fc00000` (see `gpugraph_gpgpu::SortOptions`). Values are any 1-D 32-bit array of the
//! same length, moved bit for bit. `--key-bits N` promises the keys fit N bits (uint32 below
//! 2^N, int32 in [-2^(N-1), 2^(N-1))); the promise is checked here, on the host, before any
//! GPU work. Outputs appear only when the command succeeds ([`crate::output`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use gpugraph_gpgpu::{KeyType, SortOptions, SortOrder};

use crate::files::distinct_outputs;
use crate::gpu::Gpu;
use crate::npy::{self, Dtype, NpyArray};
use crate::output::PendingFile;

/// `gpugraph sort`.
#[derive(Args, Debug)]
pub struct SortArgs {
    /// Keys (1-D .npy: uint32, int32 or float32, or a dtype that converts exactly).
    #[arg(long)]
    pub keys: PathBuf,
    /// Values carried with the keys (1-D 32-bit .npy, same length; needs --values-out).
    #[arg(long, requires = "values_out")]
    pub values: Option<PathBuf>,
    /// Largest key first (still stable; float NaNs still last).
    #[arg(long)]
    pub descending: bool,
    /// The keys fit N bits (uint32 < 2^N, int32 in [-2^(N-1), 2^(N-1))); checked, 1..=32.
    #[arg(long, value_name = "N")]
    pub key_bits: Option<u32>,
    /// Sorted keys (.npy, the keys' dtype).
    #[arg(long, alias = "out-keys", value_name = "OUT.npy")]
    pub out: PathBuf,
    /// Values in key order (.npy; needs --values).
    #[arg(long, alias = "out-values", requires = "values", value_name = "V2.npy")]
    pub values_out: Option<PathBuf>,
}

/// `gpugraph argsort`.
#[derive(Args, Debug)]
pub struct ArgsortArgs {
    /// Keys (1-D .npy: uint32, int32 or float32, or a dtype that converts exactly).
    #[arg(long)]
    pub keys: PathBuf,
    /// Largest key first (still stable; float NaNs still last).
    #[arg(long)]
    pub descending: bool,
    /// The keys fit N bits (as for `sort`); checked, 1..=32.
    #[arg(long, value_name = "N")]
    pub key_bits: Option<u32>,
    /// Source row ids (uint32) in stable key order (.npy).
    #[arg(long, value_name = "IDX.npy")]
    pub out: PathBuf,
}

/// Stable sort of keys (and values) on the GPU.
pub fn sort(args: &SortArgs) -> Result<()> {
    if let Some(v) = &args.values_out {
        // Both spellings in messages: scripts may use the older --out-keys/--out-values.
        distinct_outputs(&[
            ("--out (--out-keys)", args.out.as_path()),
            ("--values-out (--out-values)", v.as_path()),
        ])?;
    }
    let keys_file = PendingFile::new(&args.out, "--out (--out-keys)")?;
    let values_file = args
        .values_out
        .as_deref()
        .map(|p| PendingFile::new(p, "--values-out (--out-values)"))
        .transpose()?;
    let keys = SortKeys::load(&args.keys, args.descending, args.key_bits)?;
    let values = args
        .values
        .as_deref()
        .map(|p| read_values(p, &args.keys, keys.rows()))
        .transpose()?;
    let (sorted, moved) = run_sort(&keys, values.as_ref().map(|v| v.words()), false)?;
    keys_file.write_all(&npy::encode(&array_like(&keys.array, &sorted)))?;
    if let (Some(f), Some(v), Some(moved)) = (&values_file, &values, moved) {
        f.write_all(&npy::encode(&array_like(v, &moved)))?;
    }
    keys_file.commit()?;
    if let Some(f) = values_file {
        f.commit()?;
    }
    println!(
        "sort: {} {} rows ({}) -> {}",
        keys.rows(),
        keys.array.dtype.name(),
        direction(args.descending),
        args.out.display()
    );
    Ok(())
}

/// Source row ids of the stable key order.
pub fn argsort(args: &ArgsortArgs) -> Result<()> {
    let out_file = PendingFile::new(&args.out, "--out")?;
    let keys = SortKeys::load(&args.keys, args.descending, args.key_bits)?;
    let (_, rows) = run_sort(&keys, None, true)?;
    out_file.write_all(&npy::encode(&NpyArray::from_u32(&rows.unwrap_or_default())))?;
    out_file.commit()?;
    println!(
        "argsort: {} {} rows ({}) -> {}",
        keys.rows(),
        keys.array.dtype.name(),
        direction(args.descending),
        args.out.display()
    );
    Ok(())
}

fn direction(descending: bool) -> &'static str {
    if descending {
        "descending"
    } else {
        "ascending"
    }
}

/// Loaded keys with their type and validated options.
struct SortKeys {
    array: NpyArray,
    key_type: KeyType,
    options: SortOptions,
}

impl SortKeys {
    fn load(path: &Path, descending: bool, key_bits: Option<u32>) -> Result<Self> {
        let array = npy::read(path)?;
        if array.shape.len() != 1 {
            bail!(
                "{}: keys must be a 1-D array, got shape {:?}",
                path.display(),
                array.shape
            );
        }
        let key_type = match array.dtype {
            Dtype::U32 => KeyType::Uint32,
            Dtype::I32 => KeyType::Int32,
            Dtype::F32 => KeyType::Float32,
            Dtype::U8 => bail!(
                "{}: keys must be uint32, int32 or float32, got uint8",
                path.display()
            ),
        };
        let options = SortOptions {
            order: if descending {
                SortOrder::Descending
            } else {
                SortOrder::Ascending
            },
            key_bits: key_bits.unwrap_or(32),
        };
        if let Err(reason) = options.check(key_type) {
            bail!("--key-bits: {reason}");
        }
        let keys = Self {
            array,
            key_type,
            options,
        };
        if let Some((i, k)) = keys.first_outside_key_bits() {
            bail!(
                "{}: the key {k} at index {i} does not fit --key-bits {} ({}); \
                 raise --key-bits or leave it out",
                path.display(),
                options.key_bits,
                keys.range()
            );
        }
        Ok(keys)
    }

    fn rows(&self) -> usize {
        self.array.rows()
    }

    /// The promised key range, in words.
    fn range(&self) -> String {
        let b = self.options.key_bits;
        match self.key_type {
            KeyType::Int32 => format!("int32 keys in [-2^{}, 2^{})", b - 1, b - 1),
            _ => format!("uint32 keys below 2^{b}"),
        }
    }

    /// The first key (index, value as text) outside the `key_bits` promise.
    fn first_outside_key_bits(&self) -> Option<(usize, String)> {
        let b = self.options.key_bits;
        if b == 32 {
            return None;
        }
        let words = self.array.words();
        match self.key_type {
            KeyType::Int32 => {
                let half = 1i64 << (b - 1);
                words
                    .iter()
                    .map(|&w| w as i32 as i64)
                    .position(|k| k < -half || k >= half)
                    .map(|i| (i, (words[i] as i32).to_string()))
            }
            _ => words
                .iter()
                .position(|&k| k >> b != 0)
                .map(|i| (i, words[i].to_string())),
        }
    }
}

/// Values for `keys_path`'s keys: 1-D, 32-bit, `rows` long.
fn read_values(path: &Path, keys_path: &Path, rows: usize) -> Result<NpyArray> {
    // Values travel as opaque 32-bit words: a wider file would be narrowed (and written
    // back narrower) without a word, so it is refused by its dtype before it is read.
    let declared = npy::file_dtype(path)?;
    if declared.size() != 4 || declared.is_complex() {
        bail!(
            "{}: values must be 32-bit (int32, uint32 or float32); the file holds {} ({} bytes each): \
             convert it first, e.g. numpy's a.astype('float32')",
            path.display(),
            declared.name(),
            declared.size()
        );
    }
    let v = npy::read(path)?;
    if v.shape.len() != 1 || v.dtype.size() != 4 {
        bail!(
            "{}: values must be a 1-D 32-bit array, got {} with shape {:?}",
            path.display(),
            v.dtype.name(),
            v.shape
        );
    }
    if v.rows() != rows {
        bail!(
            "{}: values have {} rows but the keys ({}) have {rows}",
            path.display(),
            v.rows(),
            keys_path.display()
        );
    }
    Ok(v)
}

/// `words` as an array of `like`'s dtype, 1-D.
fn array_like(like: &NpyArray, words: &[u32]) -> NpyArray {
    NpyArray {
        dtype: like.dtype,
        ..NpyArray::from_u32(words)
    }
}

/// Sorts on the GPU (gpugraph-host's one-shot sort): pairs when `values` is given, row ids
/// when `rows`, else keys only.
fn run_sort(
    keys: &SortKeys,
    values: Option<Vec<u32>>,
    rows: bool,
) -> Result<(Vec<u32>, Option<Vec<u32>>)> {
    let words = keys.array.words();
    let gpu = Gpu::open()?;
    Ok(gpugraph_host::sort_words(
        &gpu.ctx,
        &words,
        (keys.key_type, keys.options),
        values.as_deref(),
        rows,
    )?)
}
