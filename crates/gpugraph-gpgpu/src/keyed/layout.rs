//! How the keyed engine lays out its accumulators and specializes its kernels: statistic word
//! offsets per key, privatization and replication in workgroup memory, and the kernels'
//! parameter structs.

use super::outputs::{KeyedOutputs, Summation};
use super::policy::KeyedPolicy;

/// Absent statistic (a word offset nobody uses).
pub(crate) const NONE: u32 = u32::MAX;

/// Parameters of one chunk's accumulate dispatch (`Params` in keyed.wgsl, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct AccumulateParams {
    /// Rows of the chunk (its capacity when a live count bounds it).
    pub rows: u32,
    /// Row offsets of the chunk's keys, values and mask inside their bindings.
    pub key_off: u32,
    pub value_off: u32,
    pub mask_off: u32,
    /// Tiles of the chunk, and the workgroups striding over them.
    pub tiles: u32,
    pub workgroups: u32,
    /// Row offset and length of GPU or literal edges.
    pub edges_off: u32,
    pub edge_count: u32,
    /// The key snippet's parameters.
    pub key_f0: [f32; 4],
    pub key_f1: [f32; 4],
    pub key_u: [u32; 4],
    /// Row offset of the live count inside its binding (LIVE variant).
    pub live_off: u32,
    pub _pad: [u32; 3],
}

/// Parameters of the init and finalize kernels (`Params` in keyed_finalize.wgsl, a uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct FillParams {
    /// Finalize: keys to decode.
    pub keys: u32,
    /// Init: accumulator words to reset.
    pub words: u32,
    /// Finalize: row offsets of the result views inside their bindings.
    pub count_off: u32,
    pub sum_off: u32,
    pub min_off: u32,
    pub max_off: u32,
    pub mean_off: u32,
    pub ignored_off: u32,
    pub flag_off: u32,
    /// `0x7fc0_0000` (a NaN const-expression is a shader-creation error).
    pub nan_bits: u32,
}

/// Statistic word offsets within one key's accumulator (NONE when absent). A deterministic
/// sum is two words (`sum_at`: low, `sum_at + 1`: high half of a 64-bit two's-complement
/// fixed-point total) plus `scale_at` (bits of the key's largest |value|).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub count_at: u32,
    pub sum_at: u32,
    pub min_at: u32,
    pub max_at: u32,
    pub scale_at: u32,
    pub stride: u32,
}

impl Layout {
    pub(crate) fn of(o: &KeyedOutputs) -> Self {
        Self::from_flags(
            o.count.is_some(),
            o.sum.is_some(),
            o.min.is_some(),
            o.max.is_some(),
            o.mean.is_some(),
            o.summation == Summation::Deterministic,
        )
    }

    pub(crate) fn from_flags(
        count: bool,
        sum: bool,
        min: bool,
        max: bool,
        mean: bool,
        deterministic: bool,
    ) -> Self {
        let mut next = 0;
        let mut slot = |want: bool, words: u32| {
            if want {
                next += words;
                next - words
            } else {
                NONE
            }
        };
        let fixed = deterministic && (sum || mean);
        let count_at = slot(count || mean, 1);
        let sum_at = slot(sum || mean, if fixed { 2 } else { 1 });
        let scale_at = slot(fixed, 1);
        let min_at = slot(min, 1);
        let max_at = slot(max, 1);
        Self {
            count_at,
            sum_at,
            min_at,
            max_at,
            scale_at,
            stride: next,
        }
    }

    /// Whether sums are fixed-point (a scale pass runs before accumulation).
    pub(crate) fn fixed_sum(&self) -> bool {
        self.scale_at != NONE
    }
}

/// How the accumulate kernel is specialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub private: bool,
    pub copies: u32,
    pub edges_shared: bool,
}

/// Private accumulation when the accumulators fit the budget; replicas while they are tiny.
pub(crate) fn shape(
    p: &KeyedPolicy,
    key_words: u64,
    edge_count: u64,
    device_wg_bytes: u32,
) -> Shape {
    let edges_shared = edge_count > 0 && edge_count <= p.shared_edges_max as u64;
    let edge_words = if edges_shared { edge_count as u32 } else { 1 };
    let budget = (device_wg_bytes / 4)
        .saturating_sub(edge_words + 8)
        .min(p.private_words_max) as u64;
    let private = key_words <= budget;
    let mut copies = 1u32;
    if private {
        while copies < p.max_copies.min(p.workgroup_size)
            && key_words * (copies as u64 * 2) <= budget.min(p.copy_target_words as u64)
        {
            copies *= 2;
        }
    }
    Shape {
        private,
        copies,
        edges_shared,
    }
}
