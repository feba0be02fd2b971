//! Sort options ([`SortOptions`]: direction and `key_bits`) and key types ([`KeyType`]) on
//! top of the uint32 ascending radix core: order-preserving codes ([`KeyCode`], in `code.rs`).
//!
//! Radix domains apply the code inside their kernels by default (`radix_common.wgsl`
//! `encode_key`/`decode_key`, [`super::SortPolicy::fuse_keys`]): the histogram and the first
//! pass encode on load, the last pass decodes on store. The one-workgroup path, and radix
//! domains with `fuse_keys` off, use this module's graph nodes instead (`keys.wgsl`):
//! `<id>.encode` (keys → a transient of uint32 codes) before the core and `<id>.decode` (the
//! sorted codes back to key bits, in place in the caller's output) after it, 8 B/row each.
//! uint32 ascending keys need neither.
//!
//! The code of each key type and direction, and its inverse, is [`KeyCode::encode`] and
//! [`KeyCode::decode`] (re-exported by the oracle, `cpu.rs`); both WGSL files compute the same
//! bits.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, DataView, DataViewDescriptor, DispatchNode, Grid,
    VectorFormat,
};

use super::code::KeyCode;
use crate::error::AlgorithmError;
use crate::kernel::{self, grid_for, shader, ShaderSource, ViewCheck, WorkgroupSplit};

const KEYS_WORKGROUP: u64 = 256;

/// The direction of a sort. Both directions are stable: equal keys keep their input order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Smallest key first.
    #[default]
    Ascending,
    /// Largest key first (NaN float keys still come last).
    Descending,
}

/// The type of the keys, taken from the format of the keys view: `Uint32`, `Sint32` or
/// `Float32` (the sorted keys view has the same format).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// Unsigned 32-bit integers.
    Uint32,
    /// Signed 32-bit integers (two's complement).
    Int32,
    /// IEEE 754 binary32, in the total order `-inf < … < -0 < +0 < … < +inf < NaN`.
    Float32,
}

impl KeyType {
    /// The key type stored in `format`, if sortable.
    pub fn of_format(format: VectorFormat) -> Option<Self> {
        match format {
            VectorFormat::Uint32 => Some(Self::Uint32),
            VectorFormat::Sint32 => Some(Self::Int32),
            VectorFormat::Float32 => Some(Self::Float32),
            _ => None,
        }
    }

    /// The view format of this key type.
    pub fn format(self) -> VectorFormat {
        match self {
            Self::Uint32 => VectorFormat::Uint32,
            Self::Int32 => VectorFormat::Sint32,
            Self::Float32 => VectorFormat::Float32,
        }
    }
}

/// How a sort orders its keys.
///
/// # Contract
/// - `order`: ascending or descending, both stable.
/// - `key_bits` (1..=32, default 32): a promise of the caller about the key *range*, not about
///   the transformed code: uint32 keys are below `2^key_bits`; int32 keys lie in
///   `[-2^(key_bits-1), 2^(key_bits-1))` (they fit a `key_bits`-wide two's complement).
///   Float32 keys take all 32 bits (any other value is an error). The codes then fit the low
///   `key_bits` bits in both directions, so a radix sort needs only
///   [`SortOptions::radix_passes`] digit passes. Keys outside the promise are not detected on
///   the GPU: their order is unspecified, but every output key still holds its exact input
///   bits (the integer codes are bijections; the CLI checks the promise on the host).
/// - Float32: every NaN (any sign or payload) sorts last in both directions, all NaNs equal
///   (so they keep their input order, as numpy's and torch's stable sorts do) and the sorted
///   keys hold the canonical quiet NaN `0x7fc00000` in their place: the NaN payloads and signs
///   are not kept (the argsort's source rows point to the original NaNs). Every other key,
///   including `-0.0`/`+0.0` (`-0` first ascending) and subnormals, keeps its exact bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortOptions {
    /// Direction (stable both ways).
    pub order: SortOrder,
    /// Significant key bits, 1..=32 (see the contract).
    pub key_bits: u32,
}

impl Default for SortOptions {
    fn default() -> Self {
        Self {
            order: SortOrder::Ascending,
            key_bits: 32,
        }
    }
}

impl SortOptions {
    /// Descending order, all 32 key bits.
    pub fn descending() -> Self {
        Self {
            order: SortOrder::Descending,
            ..Self::default()
        }
    }

    /// These options with `key_bits` significant bits.
    pub fn with_key_bits(self, key_bits: u32) -> Self {
        Self { key_bits, ..self }
    }

    /// 8-bit digit passes a radix sort of these keys needs: `ceil(key_bits / 8)`.
    pub fn radix_passes(&self) -> u32 {
        self.key_bits.div_ceil(8)
    }

    /// Why these options do not fit `key_type`, if they do not.
    pub fn check(&self, key_type: KeyType) -> Result<(), SortOptionsError> {
        if !(1..=32).contains(&self.key_bits) {
            return Err(SortOptionsError::KeyBits {
                key_bits: self.key_bits,
            });
        }
        if key_type == KeyType::Float32 && self.key_bits != 32 {
            return Err(SortOptionsError::FloatKeyBits {
                key_bits: self.key_bits,
            });
        }
        Ok(())
    }
}

/// [`SortOptions`] that do not fit the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SortOptionsError {
    /// `key_bits` outside `1..=32`.
    #[error("key_bits {key_bits} is outside 1..=32")]
    KeyBits {
        /// The value given.
        key_bits: u32,
    },
    /// float32 keys with `key_bits` other than 32 (float keys take all 32 bits).
    #[error("key_bits {key_bits} with float32 keys: float keys take all 32 bits")]
    FloatKeyBits {
        /// The value given.
        key_bits: u32,
    },
}

/// `KeyParams` of `keys.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct KeyParams {
    rows: u32,
    src: u32,
    dst: u32,
    pub(crate) is_float: u32,
    descending: u32,
    pub(crate) bias: u32,
    pub(crate) flip: u32,
    pad: u32,
}

/// The transform of one key type and options; `None` when the code is the key itself
/// (uint32 ascending, for any `key_bits`).
pub(crate) fn key_code(key_type: KeyType, options: SortOptions) -> Option<KeyParams> {
    if key_type == KeyType::Uint32 && options.order == SortOrder::Ascending {
        return None;
    }
    let p = KeyCode::new(key_type, options);
    Some(KeyParams {
        is_float: (key_type == KeyType::Float32) as u32,
        descending: (options.order == SortOrder::Descending) as u32,
        bias: p.bias,
        flip: p.flip,
        ..Default::default()
    })
}

/// Declares `<id>.encoded-keys`, a transient of uint32 codes for views of `lengths` rows,
/// packed one after another, and returns one view per length.
pub(crate) fn encoded_keys(
    graph: &mut CommandGraph,
    id: &str,
    lengths: &[u64],
) -> Result<Vec<DataView>, AlgorithmError> {
    let total: u64 = lengths.iter().sum();
    let h = graph.create_buffer(BufferDescriptor::new(
        format!("{id}.encoded-keys"),
        total.max(1) * 4,
        BufferUsages::STORAGE,
    ))?;
    let mut offset = 0;
    let mut views = Vec::with_capacity(lengths.len());
    for &len in lengths {
        views.push(graph.create_data_view(
            h,
            DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(offset * 4),
        )?);
        offset += len;
    }
    Ok(views)
}

/// `view` (packed 32-bit rows of any format) reinterpreted as uint32, same buffer and range.
pub(crate) fn as_uint32(
    graph: &mut CommandGraph,
    view: DataView,
) -> Result<DataView, AlgorithmError> {
    Ok(graph.create_data_view(
        view.buffer(),
        DataViewDescriptor::packed(VectorFormat::Uint32, view.len()).at_offset(view.byte_offset()),
    )?)
}

/// Adds `<id>.encode`: for each `(keys, codes)` pair, `codes[i] = code(keys[i])` (one
/// dispatch per pair).
pub(crate) fn add_encode_node(
    graph: &mut CommandGraph,
    id: &str,
    algorithm: &'static str,
    pairs: Vec<(DataView, DataView)>,
    params: KeyParams,
) -> Result<(), AlgorithmError> {
    let views = pairs.into_iter().map(|(k, c)| (Some(k), c)).collect();
    add_key_node(graph, format!("{id}.encode"), algorithm, views, params)
}

/// Adds `<id>.decode`: `keys[i] = key(keys[i])` in place over each view of sorted codes.
pub(crate) fn add_decode_node(
    graph: &mut CommandGraph,
    id: &str,
    algorithm: &'static str,
    sorted: Vec<DataView>,
    params: KeyParams,
) -> Result<(), AlgorithmError> {
    let views = sorted.into_iter().map(|v| (None, v)).collect();
    add_key_node(graph, format!("{id}.decode"), algorithm, views, params)
}

/// The recipe of the encode (`decode` false) or decode kernel.
pub(crate) fn keys_source(decode: bool) -> ShaderSource {
    shader("sort/keys.wgsl")
        .comment("Generated by gpugraph-gpgpu sort/keys.rs.")
        .define_if(decode, "DECODE")
}

/// Elementwise dispatch nodes over `views` (all encode, `Some(src)`, or all decode, `None`):
/// encode from `src` into `dst`, or decode `dst` in place; one node per non-empty view
/// (`node_id` for one view, else `{node_id}/{k}`).
fn add_key_node(
    graph: &mut CommandGraph,
    node_id: String,
    algorithm: &'static str,
    views: Vec<(Option<DataView>, DataView)>,
    params: KeyParams,
) -> Result<(), AlgorithmError> {
    let views: Vec<_> = views.into_iter().filter(|(_, d)| !d.is_empty()).collect();
    let Some(decode) = views.first().map(|(s, _)| s.is_none()) else {
        return Ok(());
    };
    let limits = graph.device().limits();
    let max_dim = limits.max_compute_workgroups_per_dimension;
    // Bindings are the views' aligned ranges at the device's storage alignment.
    let align = u64::from(limits.min_storage_buffer_offset_alignment);
    let offset = |v: &DataView| v.aligned_range(align).element_offset as u32;
    let entry = if decode { "decode" } else { "encode" };
    let shader = keys_source(decode).keyed(format!("sort.keys.{entry}"));
    let single = views.len() == 1;
    for (k, (src, dst)) in views.into_iter().enumerate() {
        let workgroups = dst.len().div_ceil(KEYS_WORKGROUP);
        let grid: WorkgroupSplit = grid_for(workgroups, max_dim).ok_or_else(|| {
            ViewCheck::new(algorithm, &node_id).device_limit(
                "workgroups of the key transform",
                workgroups,
                max_dim as u64 * max_dim as u64,
            )
        })?;
        let p = KeyParams {
            rows: dst.len() as u32,
            src: src.as_ref().map_or(0, offset),
            dst: offset(&dst),
            ..params
        };
        let mut bindings = vec![Binding::params(0, &p)];
        match src {
            Some(s) => bindings.extend([Binding::read(1, s), Binding::read_write(2, dst)]),
            None => bindings.push(Binding::read_write(1, dst)),
        }
        let id = if single {
            node_id.clone()
        } else {
            format!("{node_id}/{k}")
        };
        kernel::add_node(
            graph,
            DispatchNode::new(
                id,
                shader.clone(),
                entry,
                bindings,
                Grid::Workgroups(grid.dims()),
            ),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::validate_wgsl;

    #[test]
    fn both_variants_validate_with_naga() {
        for decode in [false, true] {
            validate_wgsl(&keys_source(decode).build()).unwrap_or_else(|e| panic!("{decode}: {e}"));
        }
        assert!(!keys_source(true).build().contains("src_keys"));
    }

    #[test]
    fn options_check_key_bits_per_type() {
        let o = SortOptions::default();
        assert!(o.check(KeyType::Float32).is_ok());
        assert!(o.with_key_bits(0).check(KeyType::Uint32).is_err());
        assert!(o.with_key_bits(33).check(KeyType::Int32).is_err());
        assert!(o.with_key_bits(24).check(KeyType::Float32).is_err());
        assert!(o.with_key_bits(1).check(KeyType::Int32).is_ok());
        assert_eq!(o.with_key_bits(17).radix_passes(), 3);
        assert_eq!(key_code(KeyType::Uint32, o.with_key_bits(8)), None);
        assert!(key_code(KeyType::Uint32, SortOptions::descending()).is_some());
    }
}
