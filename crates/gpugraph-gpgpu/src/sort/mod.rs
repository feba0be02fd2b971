//! Stable sort of `uint32`, `int32` or `float32` keys, ascending or descending, optionally
//! paired with `uint32` values: one packed domain ([`Sort`]), each chunk of a vector as its own
//! domain ([`BatchSort`]), and many small segments of `uint32` keys in place inside shared
//! buffers ([`SegmentedSort`], ascending).
//!
//! # Contract
//! Equal keys keep their input order (stable), in both directions. [`Sort`] and [`BatchSort`]
//! read their inputs and write separate outputs (inputs are never modified, and no output may
//! share a buffer with an input); [`SegmentedSort`] sorts in place. Values may be caller data
//! moved with their keys, or generated source rows (argsort: row ids `0..n`, written on the
//! GPU, nothing uploaded). Scratch is graph-owned transients.
//!
//! # Options ([`SortOptions`], [`keys`])
//! - Key type: the format of the keys view (`Uint32`, `Sint32`, `Float32`; the sorted keys view
//!   has the same format). Integers compare as numbers; floats in the total order
//!   `-inf < … < -0 < +0 < … < +inf < NaN`, every NaN last in *both* directions, all NaNs equal
//!   (input order kept). Sorted keys hold the exact input bits, except NaNs: they come out as
//!   the canonical `0x7fc00000` (payload and sign dropped; argsort rows still find the
//!   original). Why canonical: numpy's and torch's stable sorts treat NaNs as equal, and a
//!   bijective code cannot make different NaN bit patterns compare equal.
//! - Direction: [`SortOrder::Descending`] sorts by the complemented code, which is stable
//!   (equal keys have equal codes, and the core is stable).
//! - `key_bits` (1..=32): a promise about the key range (uint32 below `2^key_bits`, int32 in
//!   `[-2^(key_bits-1), 2^(key_bits-1))`; float32 must use 32); the codes of both directions
//!   then fit the low `key_bits`, so the radix path runs `ceil(key_bits / 8)` digit passes
//!   ([`SortOptions::radix_passes`]; any count 1..=4: the passes ping-pong so that the last
//!   one writes the output). Keys outside the promise keep their bits but their order is
//!   unspecified.
//! - How: the radix core sorts uint32 codes ascending ([`cpu::KeyCode`]; the oracle is
//!   [`cpu::sort_typed`]). For every key type and order but uint32 ascending the radix
//!   kernels apply the code themselves ([`SortPolicy::fuse_keys`], the default except on
//!   NVIDIA, where the fused kernels measured slower: [`SortPolicy::for_gpu`]): the histogram
//!   and the first digit pass encode the caller's keys as they load them (the decoupled
//!   fallback's recount too), the last pass decodes as it stores, so the transform costs no
//!   memory traffic. Domains of at most 256 rows, and radix domains with `fuse_keys` off, add
//!   `<id>.encode` (keys → a transient of uint32 codes, `keys.wgsl`) before the core and
//!   `<id>.decode` (codes → key bits, in place in the sorted keys) after it: +8 B/row each.

//! # Algorithms
//! - Domains of at most [`policy::LOCAL_SORT_MAX`] (256) rows: one workgroup, a bitonic
//!   network on (key, row) pairs (`local.wgsl`). Reads each key once, writes each output row
//!   once; values are gathered by source row.
//! - Larger domains: LSD radix sort with 8-bit digits, up to four passes, one-sweep design
//!   (Adinets & Merrill's Onesweep): one histogram pass computes all four digit histograms at
//!   once (`radix_histogram.wgsl`), then each digit pass (`radix_pass.wgsl`) ranks a tile
//!   stably, finds each digit's output offset through a chained scan with decoupled
//!   look-back over the tiles' digit counts, and scatters. The look-back has the *decoupled
//!   fallback* of Smith, Levien & Owens (SPAA 2025): a workgroup that sees no progress for
//!   `spin_limit` rounds counts the stalled predecessor tile's digits itself from its keys,
//!   so it never waits on a workgroup the device does not schedule (Mesa lavapipe, Apple and
//!   mobile GPUs give no forward-progress guarantee between workgroups). We chose it over
//!   reduce-then-scan because it reads the keys once per pass instead of twice (16 B/row
//!   less for 32-bit keys), and the fallback makes it as safe. The tests force the fallback
//!   path (every predecessor recounted) and a last-tile-first schedule.
//! - Scatter: through workgroup memory into rank order, so each store instruction writes
//!   contiguous runs of equal digits; [`SortPolicy::scatter_direct`] stores from registers
//!   instead (no reorder, uncoalesced stores).
//! - In-tile ranking: warp-level multisplit where the adapter has subgroups of 8–128 lanes
//!   ([`SortPolicy::multisplit`]: 8 ballots per key find its digit peers, per-subgroup
//!   counters and one scan over subgroups give the stable rank), otherwise two 4-bit counting
//!   sorts in workgroup memory. The look-back walks each digit independently (no workgroup
//!   barrier per read); the workgroup recounts a stalled tile only after `spin_limit`
//!   fruitless reads ([`SortPolicy::independent_lookback`]).
//!
//! # Memory traffic (radix path, `n` rows, 4-byte keys and values, 32 key bits)
//! Histogram: read keys (4 B/row). Each of the 4 passes: read + write keys (8 B/row) and
//! values (8 B/row). Keys only: 36 B/row; pairs: 68 B/row; argsort: 64 B/row (the first pass
//! generates values); the same for int32, float32 and descending keys (fused transforms).
//! Status words add about 1 B/row (zeroed once) plus a few hundred bytes per 4096-row tile
//! and pass. The floor, one copy of the data, is 8 B/row (keys) or 16 B/row (pairs): the
//! design moves 4.5× (4.25×) the floor, against 6× (5×) for a reduce-then-scan radix sort
//! with the same digit width (an extra key read per pass, 48 and 80 B/row).
//!
//! # Measured (NVIDIA H200, wgpu 30 / Vulkan, default policy, uniform random keys)
//! 2^26 rows, 2026-12-01 (`bench sort --sort-policy ...`, one call): keys 4.52 ms, pairs
//! 5.11 ms (each pass 1.04 / 1.19 ms against a 0.136 / 0.261 ms streaming floor), from 16.2 /
//! 21.4 ms before the multisplit ranking and the independent look-back. The multisplit alone
//! halved the time; a look-back window of 4 with unrolled key loops ([`SortPolicy::for_gpu`])
//! nearly halved it again. The passes remain latency-bound (7–8× their floor); the per-node
//! rows of `bench sort` show it pass by pass. The spec's radix stages use 4-bit digits; we use
//! 8-bit digits (half the passes over memory).
//!
//! # Capacity
//! A radix domain holds at most [`policy::MAX_RADIX_ROWS`] rows (status words pack 30-bit
//! counts). A [`Sort`] whose keys or values are larger than one storage binding (2^29 uint32
//! keys are 2 GiB; wgpu caps a binding just below 2^31 bytes) binds them in two key windows
//! of whole tiles (radix.rs `KeyWindows`), so it sorts up to about twice the binding size;
//! [`BatchSort`] and [`SegmentedSort`] bind every chunk whole. Violations are
//! [`AlgorithmError`]s naming the sort and the numbers, raised by `add_to_graph`.
//!
//! # Benchmarks
//! [`add_sort_of_buffers`] adds a sort of whole caller buffers to a graph in one call.

pub mod batch;
mod code;
pub mod cpu;
mod kernels;
pub mod keys;
mod local;
pub mod plan;
pub mod policy;
mod radix;
pub mod segmented;
mod source;

pub use batch::BatchSort;
pub use keys::{KeyType, SortOptions, SortOptionsError, SortOrder};
pub use policy::{SortPolicy, SortPolicyError};
pub use segmented::SegmentedSort;

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{BufferDescriptor, CommandGraph, DataView, VectorFormat, VectorView};

use crate::error::AlgorithmError;
use crate::kernel::{check_same_topology, require_packed, ViewCheck};
use policy::{LOCAL_SORT_MAX, MAX_RADIX_ROWS};
use radix::RadixScratch;
use source::ValueMode;

/// What moves with the keys: nothing, caller values, or generated source rows (argsort).
/// `V` is [`DataView`] for [`Sort`] and [`VectorView`] for [`BatchSort`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortPayload<V> {
    /// Keys only.
    KeysOnly,
    /// `input[i]` is written to `output` at the sorted position of key `i`. Packed uint32,
    /// one value per key.
    Values {
        /// Values aligned with the keys (read only).
        input: V,
        /// Destination, aligned with the sorted keys.
        output: V,
    },
    /// `output` receives, for each sorted row, the row the key came from (its chunk-local row
    /// for [`BatchSort`]): a stable argsort. Generated on the GPU; nothing is uploaded.
    SourceRows {
        /// Destination, aligned with the sorted keys.
        output: V,
    },
}

/// Sorts one packed domain of `uint32`, `sint32` or `float32` keys (stable; ascending, or as
/// the [`SortOptions`] given to [`Sort::add_to_graph_with`] say) into `sorted_keys`, moving the payload with them. Reads `keys` (and input values);
/// writes every row of the outputs (the sorted keys twice when the key transforms run as
/// nodes: codes, then key bits); owns its scratch as transients (none up to 256 rows uint32
/// ascending; above: one copy of the keys and values plus about one status byte per row; key
/// transforms as nodes: one more copy of the keys, the codes).
#[derive(Clone, Debug)]
pub struct Sort {
    /// Node id prefix (and label).
    pub id: String,
    /// Keys to sort: packed uint32, sint32 or float32 (the key type), read only.
    pub keys: DataView,
    /// Destination of the sorted keys: packed, the keys' format, same length, its own buffer.
    pub sorted_keys: DataView,
    /// What moves with the keys.
    pub payload: SortPayload<DataView>,
    /// Tunables; `None` picks [`SortPolicy::for_gpu`].
    pub policy: Option<SortPolicy>,
}

impl Sort {
    /// A keys-only sort.
    pub fn keys(id: impl Into<String>, keys: DataView, sorted_keys: DataView) -> Self {
        Self {
            id: id.into(),
            keys,
            sorted_keys,
            payload: SortPayload::KeysOnly,
            policy: None,
        }
    }

    /// A key/value sort.
    pub fn pairs(
        id: impl Into<String>,
        keys: DataView,
        values: DataView,
        sorted_keys: DataView,
        sorted_values: DataView,
    ) -> Self {
        Self {
            payload: SortPayload::Values {
                input: values,
                output: sorted_values,
            },
            ..Self::keys(id, keys, sorted_keys)
        }
    }

    /// A stable argsort: `source_rows[i]` = the input row of the `i`-th key in sorted order;
    /// the sorted keys are written too.
    pub fn argsort(
        id: impl Into<String>,
        keys: DataView,
        sorted_keys: DataView,
        source_rows: DataView,
    ) -> Self {
        Self {
            payload: SortPayload::SourceRows {
                output: source_rows,
            },
            ..Self::keys(id, keys, sorted_keys)
        }
    }

    /// [`Sort::add_to_graph_with`] the default options: ascending, all 32 key bits.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, SortOptions::default())
    }

    /// Validates the views and `options` and adds the nodes: none for 0 rows; `<id>` (one
    /// workgroup) up to 256 rows; otherwise `<id>.histogram` and `<id>.pass0` ..
    /// `<id>.pass{radix_passes - 1}` with transients `<id>.scratch-keys`,
    /// `<id>.scratch-values` and `<id>.status`. Keys other than uint32 ascending add
    /// `<id>.encode` before (into the transient `<id>.encoded-keys`) and `<id>.decode` after
    /// (in place in `sorted_keys`) on the one-workgroup path, and on the radix path when the
    /// policy does not fuse the transforms ([`SortPolicy::fuse_keys`]).
    ///
    /// Why a method argument rather than a field: callers build `Sort` as a struct literal,
    /// and a new field would break every one of them.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        options: SortOptions,
    ) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("sort", &self.id);
        let key_type = key_type_of(check, &self.keys.into(), &self.sorted_keys.into())?;
        options.check(key_type).map_err(|e| check.policy(e))?;
        let code = keys::key_code(key_type, options);
        let (mut keys, mut sorted_keys) = (self.keys, self.sorted_keys);
        if key_type != KeyType::Uint32 {
            keys = keys::as_uint32(graph, keys)?;
            sorted_keys = keys::as_uint32(graph, sorted_keys)?;
        }
        let payload = match self.payload {
            SortPayload::KeysOnly => SortPayload::KeysOnly,
            SortPayload::Values { input, output } => SortPayload::Values {
                input: input.into(),
                output: output.into(),
            },
            SortPayload::SourceRows { output } => SortPayload::SourceRows {
                output: output.into(),
            },
        };
        let keys: VectorView = keys.into();
        let sorted: VectorView = sorted_keys.into();
        // A domain larger than one storage binding is bound in key windows (radix.rs).
        check_views(graph, check, &keys, &sorted, &payload, false)?;
        let policy = resolve_policy(graph, check, self.policy)?;
        let mut domain = domains(&keys, &sorted, &payload).remove(0);
        let rows = domain.keys.len();
        if rows == 0 {
            return Ok(());
        }
        if rows > LOCAL_SORT_MAX as u64 {
            check_radix_capacity(graph, check, rows, &policy)?;
            radix::grids(
                graph,
                &self.id,
                "sort",
                &plan::RadixPlan::new(rows as u32, &policy),
            )?;
        }
        // Radix domains apply the transform inside their kernels (SortPolicy::fuse_keys);
        // the one-workgroup path and the unfused policy use the encode and decode nodes.
        let fused = code.filter(|_| policy.fuse_keys && rows > LOCAL_SORT_MAX as u64);
        let nodes = code.filter(|_| fused.is_none());
        if let Some(code) = nodes {
            let encoded = keys::encoded_keys(graph, &self.id, &[rows])?[0];
            let pairs = radix::binding_pieces(graph, domain.keys)?
                .into_iter()
                .zip(radix::binding_pieces(graph, encoded)?)
                .collect();
            keys::add_encode_node(graph, &self.id, "sort", pairs, code)?;
            domain.keys = encoded;
        }
        add_core(
            graph,
            &self.id,
            domain,
            policy,
            (options.radix_passes(), fused),
        )?;
        if let Some(code) = nodes {
            let sorted = radix::binding_pieces(graph, domain.sorted_keys)?;
            keys::add_decode_node(graph, &self.id, "sort", sorted, code)?;
        }
        Ok(())
    }
}

/// The uint32 ascending core for one validated domain of at least one row, `passes` digit
/// passes, with the fused key transform `code` (radix domains only).
fn add_core(
    graph: &mut CommandGraph,
    id: &str,
    domain: Domain,
    policy: SortPolicy,
    (passes, code): (u32, Option<keys::KeyParams>),
) -> Result<(), AlgorithmError> {
    let rows = domain.keys.len();
    if rows <= LOCAL_SORT_MAX as u64 {
        return local::add_local_node(graph, id.to_string(), vec![domain]);
    }
    let scratch = RadixScratch::create(
        graph,
        id,
        rows as u32,
        domain.mode != ValueMode::None,
        &policy,
    )?;
    radix::add_radix_nodes(graph, id, "sort", &domain, &scratch, policy, passes, code)
}

/// The key type of a sort: `keys` and `sorted keys` packed in one sortable format, without
/// live counts.
fn key_type_of(
    check: ViewCheck<'_>,
    keys: &VectorView,
    sorted: &VectorView,
) -> Result<KeyType, AlgorithmError> {
    let format = keys.format().unwrap_or(VectorFormat::Uint32);
    let Some(key_type) = KeyType::of_format(format) else {
        return Err(AlgorithmError::UnsupportedView {
            algorithm: check.algorithm,
            id: check.id.to_string(),
            what: "keys".into(),
            expected: "uint32, sint32 or float32".into(),
            actual: format.to_string(),
        });
    };
    require_packed(check, "keys", keys, format)?;
    require_packed(check, "sorted keys", sorted, format)?;
    Ok(key_type)
}

/// Bench entry point: imports whole caller buffers holding `rows` packed u32 at offset 0 and
/// adds a [`Sort`] named `id` (buffers are imported as `<id>.keys`, `<id>.values`,
/// `<id>.sorted-keys`, `<id>.sorted-values`). `values` and `sorted_values` both given: pairs;
/// only `sorted_values`: argsort; neither: keys only. Every buffer needs `STORAGE` usage and
/// at least `rows * 4` bytes; errors are those of [`Sort::add_to_graph`] and the imports.
pub fn add_sort_of_buffers(
    graph: &mut CommandGraph,
    id: &str,
    rows: u64,
    keys: &wgpu::Buffer,
    values: Option<&wgpu::Buffer>,
    sorted_keys: &wgpu::Buffer,
    sorted_values: Option<&wgpu::Buffer>,
) -> Result<(), AlgorithmError> {
    add_sort_of_typed_buffers(
        graph,
        id,
        rows,
        (KeyType::Uint32, SortOptions::default()),
        keys,
        values,
        sorted_keys,
        sorted_values,
    )
}

/// [`add_sort_of_buffers`] for keys of `key_type` (the keys and sorted keys buffers are
/// imported in its format; values stay uint32) sorted under `options`.
#[allow(clippy::too_many_arguments)]
pub fn add_sort_of_typed_buffers(
    graph: &mut CommandGraph,
    id: &str,
    rows: u64,
    (key_type, options): (KeyType, SortOptions),
    keys: &wgpu::Buffer,
    values: Option<&wgpu::Buffer>,
    sorted_keys: &wgpu::Buffer,
    sorted_values: Option<&wgpu::Buffer>,
) -> Result<(), AlgorithmError> {
    let mut import = |name: &str,
                      buffer: &wgpu::Buffer,
                      format: VectorFormat|
     -> Result<DataView, AlgorithmError> {
        let h = graph.import_buffer(
            BufferDescriptor::new(format!("{id}.{name}"), rows * 4, BufferUsages::STORAGE),
            buffer,
        )?;
        Ok(graph.create_packed_view(h, format, rows)?)
    };
    let u32f = VectorFormat::Uint32;
    let k = import("keys", keys, key_type.format())?;
    let sk = import("sorted-keys", sorted_keys, key_type.format())?;
    let payload = match (values, sorted_values) {
        (Some(v), Some(sv)) => SortPayload::Values {
            input: import("values", v, u32f)?,
            output: import("sorted-values", sv, u32f)?,
        },
        (None, Some(sv)) => SortPayload::SourceRows {
            output: import("sorted-values", sv, u32f)?,
        },
        (None, None) => SortPayload::KeysOnly,
        (Some(_), None) => {
            return Err(ViewCheck::new("sort", id).missing("a sorted-values buffer", "values"))
        }
    };
    Sort {
        payload,
        ..Sort::keys(id, k, sk)
    }
    .add_to_graph_with(graph, options)
}

/// One sort domain's views (validated): what the local and radix paths consume.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Domain {
    pub keys: DataView,
    pub sorted_keys: DataView,
    /// Source values ([`ValueMode::Load`] only).
    pub values: Option<DataView>,
    /// Destination values ([`ValueMode::Load`] and [`ValueMode::SourceRows`]).
    pub sorted_values: Option<DataView>,
    pub mode: ValueMode,
}

/// Per-chunk domains of validated views.
fn domains(
    keys: &VectorView,
    sorted: &VectorView,
    payload: &SortPayload<VectorView>,
) -> Vec<Domain> {
    (0..keys.chunks().len())
        .map(|c| {
            let (values, sorted_values, mode) = match payload {
                SortPayload::KeysOnly => (None, None, ValueMode::None),
                SortPayload::Values { input, output } => (
                    Some(input.chunks()[c]),
                    Some(output.chunks()[c]),
                    ValueMode::Load,
                ),
                SortPayload::SourceRows { output } => {
                    (None, Some(output.chunks()[c]), ValueMode::SourceRows)
                }
            };
            Domain {
                keys: keys.chunks()[c],
                sorted_keys: sorted.chunks()[c],
                values,
                sorted_values,
                mode,
            }
        })
        .collect()
}

/// Formats, chunk topology and buffer separation of a sort's views.
fn check_views(
    graph: &CommandGraph,
    check: ViewCheck<'_>,
    keys: &VectorView,
    sorted: &VectorView,
    payload: &SortPayload<VectorView>,
    one_binding: bool,
) -> Result<(), AlgorithmError> {
    let u32f = VectorFormat::Uint32;
    require_packed(check, "keys", keys, u32f)?;
    require_packed(check, "sorted keys", sorted, u32f)?;
    check_same_topology(check, "keys", keys, "sorted keys", sorted)?;
    let mut inputs = vec![("keys", keys)];
    let mut outputs = vec![("sorted keys", sorted)];
    match payload {
        SortPayload::KeysOnly => {}
        SortPayload::Values { input, output } => {
            require_packed(check, "values", input, u32f)?;
            require_packed(check, "sorted values", output, u32f)?;
            check_same_topology(check, "keys", keys, "values", input)?;
            check_same_topology(check, "keys", keys, "sorted values", output)?;
            inputs.push(("values", input));
            outputs.push(("sorted values", output));
        }
        SortPayload::SourceRows { output } => {
            require_packed(check, "source rows", output, u32f)?;
            check_same_topology(check, "keys", keys, "source rows", output)?;
            outputs.push(("source rows", output));
        }
    }
    for (i, (out_name, out)) in outputs.iter().enumerate() {
        for b in out.buffers() {
            if let Some((in_name, _)) = inputs.iter().find(|(_, v)| v.buffers().contains(&b)) {
                return Err(check.aliased(
                    *out_name,
                    *in_name,
                    graph.buffer_id(b)?,
                    "sort into another buffer",
                ));
            }
            if let Some((other, _)) = outputs[i + 1..]
                .iter()
                .find(|(_, v)| v.buffers().contains(&b))
            {
                return Err(check.aliased(
                    *out_name,
                    *other,
                    graph.buffer_id(b)?,
                    "give each output its own buffer",
                ));
            }
        }
    }
    if one_binding {
        for (name, v) in inputs.iter().chain(&outputs) {
            check_binding_sizes(graph, check, name, v)?;
        }
    }
    Ok(())
}

/// Every chunk's binding range must fit the device's storage binding size.
fn check_binding_sizes(
    graph: &CommandGraph,
    check: ViewCheck<'_>,
    name: &str,
    v: &VectorView,
) -> Result<(), AlgorithmError> {
    let limits = graph.device().limits();
    let align = limits.min_storage_buffer_offset_alignment as u64;
    for c in v.chunks() {
        let size = c.aligned_range(align).size;
        if size > limits.max_storage_buffer_binding_size {
            return Err(check.device_limit(
                format!("storage binding bytes of {name}"),
                size,
                limits.max_storage_buffer_binding_size,
            ));
        }
    }
    Ok(())
}

/// The caller's policy (validated) or the device default.
fn resolve_policy(
    graph: &CommandGraph,
    check: ViewCheck<'_>,
    policy: Option<SortPolicy>,
) -> Result<SortPolicy, AlgorithmError> {
    let limits = graph.device().limits();
    let policy = policy.unwrap_or_else(|| SortPolicy::for_gpu(graph.device()));
    policy.validate(&limits).map_err(|e| check.policy(e))?;
    Ok(policy)
}

/// Row count and scratch bindings of a radix domain against the status encoding and the
/// device's binding size.
fn check_radix_capacity(
    graph: &CommandGraph,
    check: ViewCheck<'_>,
    rows: u64,
    policy: &SortPolicy,
) -> Result<(), AlgorithmError> {
    if rows > MAX_RADIX_ROWS {
        return Err(check.device_limit(
            "rows in one sort domain (30-bit tile status counts)",
            rows,
            MAX_RADIX_ROWS,
        ));
    }
    let max = graph.device().limits().max_storage_buffer_binding_size;
    let status = RadixScratch::status_bytes(rows as u32, policy);
    if status > max {
        return Err(check.device_limit("storage binding bytes of the radix status", status, max));
    }
    Ok(())
}
