//! [`BatchHashJoin`] (spec: GPUBatchHashJoin): ordered left chunks each join one shared
//! right index, with per-batch capacities, counts, overflow and statistics, without packing.

use gpugraph_command::{CommandGraph, DataView, VectorView};

use super::join::HashJoin;
use super::policy::HashPolicy;
use super::table::HashTable;
use crate::error::AlgorithmError;
use crate::kernel::{check_same_topology, ViewCheck};

/// The outputs of one left batch (see [`HashJoin`]): pairs of batch-local left rows and
/// right rows of the shared index, the exact match count, overflow and statistics.
#[derive(Clone, Copy, Debug)]
pub struct JoinOutputs {
    /// Left row (local to the batch) of each pair.
    pub left_rows: DataView,
    /// Right row of each pair.
    pub right_rows: DataView,
    /// The batch's match count.
    pub count: DataView,
    /// 1 when the batch's matches exceed its capacity.
    pub overflow: Option<DataView>,
    /// The batch's lookup statistics.
    pub stats: DataView,
}

/// Joins every chunk `k` of `left_keys` independently against `table`, into `batches[k]`
/// (one [`HashJoin`] `{id}/batch/{k}` each: empty chunks write count 0 and cleared
/// statistics). Left rows are local to their batch; add the batch's base to make them
/// global. Each batch's `incomplete` word propagates the shared index's overflow.
#[derive(Clone, Debug)]
pub struct BatchHashJoin {
    /// Node id (and label prefix).
    pub id: String,
    /// The shared right index.
    pub table: HashTable,
    /// The left keys: ordered chunks (no live counts).
    pub left_keys: VectorView,
    /// Optional left validity flags with the keys' chunk lengths.
    pub left_valid: Option<VectorView>,
    /// One output set per chunk.
    pub batches: Vec<JoinOutputs>,
}

impl BatchHashJoin {
    /// Validates and adds one join per batch with the default policy.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, &HashPolicy::DEFAULT)
    }

    /// [`BatchHashJoin::add_to_graph`] with an explicit policy.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &HashPolicy,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new("batch hash join", &self.id);
        let chunks = self.left_keys.chunks();
        if self.batches.len() != chunks.len() {
            return Err(c.length(
                "output batches",
                "batches",
                self.batches.len() as u64,
                chunks.len() as u64,
                "one per chunk of left keys",
            ));
        }
        if chunks.len() > 1 && chunks.iter().any(|k| k.live_count().is_some()) {
            return Err(c.unsupported(
                "left keys",
                "chunks without live counts (batches are read whole)",
                "a chunk with a live count",
            ));
        }
        if let Some(v) = &self.left_valid {
            check_same_topology(c, "left_keys", &self.left_keys, "left_valid", v)?;
        }
        for (k, (keys, out)) in chunks.iter().zip(&self.batches).enumerate() {
            HashJoin {
                id: format!("{}/batch/{k}", self.id),
                table: self.table,
                left_keys: VectorView::from(*keys),
                left_valid: self
                    .left_valid
                    .as_ref()
                    .map(|v| VectorView::from(v.chunks()[k])),
                left_rows: out.left_rows,
                right_rows: out.right_rows,
                count: out.count,
                overflow: out.overflow,
                stats: out.stats,
            }
            .add_to_graph_with(graph, policy)?;
        }
        Ok(())
    }
}
