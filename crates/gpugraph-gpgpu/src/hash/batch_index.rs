//! [`BatchHashIndex`] (spec: GPUBatchHashIndex): the [`super::HashIndex`] map built from
//! preserved right-side chunks without concatenating them.

use gpugraph_command::{CommandGraph, VectorView};

use super::index::{add_build, ALGORITHM};
use super::policy::HashPolicy;
use super::table::HashTable;
use crate::error::AlgorithmError;
use crate::kernel::ViewCheck;

/// Builds `table` from the chunks of `keys` in order, exactly as a [`super::HashIndex`] over
/// their concatenation would: row ids are global (the rows of earlier chunks, then the local
/// row), the lowest global row wins on duplicate keys. Chunks may be empty or uneven; none may
/// carry a live count (a count bounds one chunk). One clear and one insert dispatch per
/// non-empty chunk (`{id}/clear`, `{id}/insert/{k}`), no copy. Otherwise the contract of
/// [`super::HashIndex`].
#[derive(Clone, Debug)]
pub struct BatchHashIndex {
    /// Node id (and label prefix).
    pub id: String,
    /// The keys: ordered chunks of packed `Uint32` (or `Sint32`).
    pub keys: VectorView,
    /// Optional validity flags with the keys' chunk lengths.
    pub valid: Option<VectorView>,
    /// Where the index goes.
    pub table: HashTable,
}

impl BatchHashIndex {
    /// Validates and adds the build with the default policy.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, &HashPolicy::DEFAULT)
    }

    /// [`BatchHashIndex::add_to_graph`] with an explicit policy.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &HashPolicy,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        if self.keys.chunks().len() > 1
            && self.keys.chunks().iter().any(|k| k.live_count().is_some())
        {
            return Err(c.unsupported(
                "keys",
                "chunks without live counts (batched keys are read whole)",
                "a chunk with a live count",
            ));
        }
        add_build(
            graph,
            c,
            &self.keys,
            self.valid.as_ref(),
            &self.table,
            policy,
        )
    }
}
