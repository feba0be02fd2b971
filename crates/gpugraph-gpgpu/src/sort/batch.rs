//! [`BatchSort`]: every chunk of aligned key/value vectors sorted as its own domain, with no
//! packed copy: chunk count, order and lengths are preserved, and the algorithm is chosen per
//! chunk (one workgroup up to 256 rows, radix above).

use gpugraph_command::{CommandGraph, VectorView};

use super::kernels::SortKernels;
use super::policy::{SortPolicy, LOCAL_SORT_MAX};
use super::radix::{self, RadixScratch};
use super::{check_radix_capacity, check_views, domains, local, resolve_policy, SortPayload};
use crate::error::AlgorithmError;
use crate::kernel::ViewCheck;

/// Sorts chunk `k` of `keys` (stable, ascending) into chunk `k` of `sorted_keys`, moving the
/// payload's chunk `k` with it; chunks never mix. Views are packed uint32 with equal chunk
/// lengths; outputs have their own buffers. Writes every output row once; owns scratch sized
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
    /// Tunables; `None` picks [`SortPolicy::for_device`].
    pub policy: Option<SortPolicy>,
    /// Compiled-kernel cache; share one clone among many sorts to compile each kernel once.
    pub kernels: SortKernels,
}

impl BatchSort {
    /// Validates the views and adds the nodes: `<id>.local` (one dispatch per non-empty chunk
    /// of at most 256 rows) and, per larger chunk `k`, `<id>.chunk<k>.histogram` and
    /// `<id>.chunk<k>.pass0` .. `pass3`; transients `<id>.scratch-keys`,
    /// `<id>.scratch-values`, `<id>.status` when any chunk is larger than 256 rows.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("batch sort", &self.id);
        check_views(graph, check, &self.keys, &self.sorted_keys, &self.payload)?;
        let policy = resolve_policy(graph, check, self.policy)?;
        let all = domains(&self.keys, &self.sorted_keys, &self.payload);
        let (small, large): (Vec<_>, Vec<_>) = all
            .into_iter()
            .enumerate()
            .filter(|(_, d)| !d.keys.is_empty())
            .partition(|(_, d)| d.keys.len() <= LOCAL_SORT_MAX as u64);
        let cache = self.kernels.clone();
        let values = !matches!(self.payload, SortPayload::KeysOnly);
        let largest = large.iter().map(|(_, d)| d.keys.len()).max().unwrap_or(0);
        for (k, d) in &large {
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
        if !small.is_empty() {
            local::add_local_node(
                graph,
                format!("{}.local", self.id),
                small.into_iter().map(|(_, d)| d).collect(),
                cache.clone(),
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
                &cache,
            )?;
        }
        Ok(())
    }
}
