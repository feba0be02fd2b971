//! [`BatchSort`]: every chunk of aligned key/value vectors sorted as its own domain, with no
//! packed copy: chunk count, order and lengths are preserved, and the algorithm is chosen per
//! chunk (one workgroup up to 256 rows, radix above).

use gpugraph_command::{CommandGraph, VectorView};

use super::keys::{self, KeyType, SortOptions};
use super::policy::{SortPolicy, LOCAL_SORT_MAX};
use super::radix::{self, RadixScratch};
use super::{
    check_radix_capacity, check_views, domains, key_type_of, local, resolve_policy, Domain,
    SortPayload,
};
use crate::error::AlgorithmError;
use crate::kernel::ViewCheck;

/// Sorts chunk `k` of `keys` (stable; ascending, or as the [`SortOptions`] given to
/// [`BatchSort::add_to_graph_with`] say) into chunk `k` of `sorted_keys`,
/// moving the payload's chunk `k` with it; chunks never mix. Keys are packed uint32, sint32
/// or float32 (the key type, as for [`super::Sort`]); payload views packed uint32; equal
/// chunk lengths; outputs have their own buffers. Writes every output row once; owns scratch sized
/// for the largest radix chunk, shared by the radix chunks one after another.
#[derive(Clone, Debug)]
pub struct BatchSort {
    /// Node id prefix.
    pub id: String,
    /// Key chunks (read only).
    pub keys: VectorView,
    /// Destination chunks, same topology as `keys`.
    pub sorted_keys: VectorView,
    /// What moves with the keys, chunk by chunk ([`SortPayload::SourceRows`] gives
    /// chunk-local rows).
    pub payload: SortPayload<VectorView>,
    /// Tunables; `None` picks [`SortPolicy::for_gpu`].
    pub policy: Option<SortPolicy>,
}

impl BatchSort {
    /// [`BatchSort::add_to_graph_with`] the default options: ascending, all 32 key bits.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, SortOptions::default())
    }

    /// Validates the views and `options` and adds the nodes: `<id>.local` (one dispatch per non-empty chunk
    /// of at most 256 rows) and, per larger chunk `k`, `<id>.chunk<k>.histogram` and
    /// `<id>.chunk<k>.pass0` .. `pass3`; transients `<id>.scratch-keys`,
    /// `<id>.scratch-values`, `<id>.status` when any chunk is larger than 256 rows. Keys
    /// other than uint32 ascending add `<id>.encode` first (into the transient
    /// `<id>.encoded-keys`) and `<id>.decode` last (in place in every sorted chunk).
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        options: SortOptions,
    ) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("batch sort", &self.id);
        let key_type = key_type_of(check, &self.keys, &self.sorted_keys)?;
        options.check(key_type).map_err(|e| check.policy(e))?;
        let code = keys::key_code(key_type, options);
        let (mut key_view, mut sorted_view) = (self.keys.clone(), self.sorted_keys.clone());
        if key_type != KeyType::Uint32 {
            let mut as_u32 = |v: &VectorView| -> Result<VectorView, AlgorithmError> {
                let chunks = v.chunks().iter().map(|&c| keys::as_uint32(graph, c));
                Ok(VectorView::from_chunks(chunks.collect::<Result<_, _>>()?))
            };
            key_view = as_u32(&self.keys)?;
            sorted_view = as_u32(&self.sorted_keys)?;
        }
        check_views(graph, check, &key_view, &sorted_view, &self.payload, true)?;
        let policy = resolve_policy(graph, check, self.policy)?;
        let mut all = domains(&key_view, &sorted_view, &self.payload);
        for (k, d) in all.iter().enumerate() {
            if d.keys.len() > LOCAL_SORT_MAX as u64 {
                let c = ViewCheck {
                    algorithm: check.algorithm,
                    id: &format!("{} chunk {k}", self.id),
                };
                check_radix_capacity(graph, c, d.keys.len(), &policy)?;
                radix::grids(
                    graph,
                    &self.id,
                    check.algorithm,
                    &super::plan::RadixPlan::new(d.keys.len() as u32, &policy),
                )?;
            }
        }
        // Radix chunks apply the transform inside their kernels (SortPolicy::fuse_keys); the
        // other chunks go through the encode and decode nodes.
        let fused = |d: &Domain| policy.fuse_keys && d.keys.len() > LOCAL_SORT_MAX as u64;
        let by_nodes: Vec<usize> = match code {
            Some(_) => (0..all.len()).filter(|&k| !fused(&all[k])).collect(),
            None => Vec::new(),
        };
        if let (Some(code), false) = (code, by_nodes.is_empty()) {
            let lengths: Vec<u64> = by_nodes.iter().map(|&k| all[k].keys.len()).collect();
            let encoded = keys::encoded_keys(graph, &self.id, &lengths)?;
            let pairs = by_nodes
                .iter()
                .zip(&encoded)
                .map(|(&k, &e)| (all[k].keys, e))
                .collect();
            keys::add_encode_node(graph, &self.id, check.algorithm, pairs, code)?;
            for (&k, e) in by_nodes.iter().zip(encoded) {
                all[k].keys = e;
            }
        }
        let sorted: Vec<_> = by_nodes.iter().map(|&k| all[k].sorted_keys).collect();
        self.add_core(graph, all, policy, (options.radix_passes(), code))?;
        if let (Some(code), false) = (code, sorted.is_empty()) {
            keys::add_decode_node(graph, &self.id, check.algorithm, sorted, code)?;
        }
        Ok(())
    }

    /// The uint32 ascending core over the (validated) domains of every chunk; radix chunks
    /// apply the key transform `code` themselves when the policy fuses it.
    fn add_core(
        &self,
        graph: &mut CommandGraph,
        all: Vec<Domain>,
        policy: SortPolicy,
        (passes, code): (u32, Option<keys::KeyParams>),
    ) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("batch sort", &self.id);
        let (small, large): (Vec<_>, Vec<_>) = all
            .into_iter()
            .enumerate()
            .filter(|(_, d)| !d.keys.is_empty())
            .partition(|(_, d)| d.keys.len() <= LOCAL_SORT_MAX as u64);
        let values = !matches!(self.payload, SortPayload::KeysOnly);
        let largest = large.iter().map(|(_, d)| d.keys.len()).max().unwrap_or(0);
        if !small.is_empty() {
            local::add_local_node(
                graph,
                format!("{}.local", self.id),
                small.into_iter().map(|(_, d)| d).collect(),
            )?;
        }
        if large.is_empty() {
            return Ok(());
        }
        let scratch = RadixScratch::create(graph, &self.id, largest as u32, values, &policy)?;
        for (k, d) in &large {
            radix::add_radix_nodes(
                graph,
                &format!("{}.chunk{k}", self.id),
                check.algorithm,
                d,
                &scratch,
                policy,
                passes,
                code.filter(|_| policy.fuse_keys),
            )?;
        }
        Ok(())
    }
}
