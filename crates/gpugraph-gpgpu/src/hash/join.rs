//! [`HashJoin`] (spec: GPUHashJoin): lookup + stable compaction into bounded many-to-one row
//! pairs, with the exact required count and overflow.

use gpugraph_command::{wgpu, BufferDescriptor, CommandGraph, DataView, VectorFormat, VectorView};

use super::gather::RowGather;
use super::policy::HashPolicy;
use super::query::{add_lookup, Lookup};
use super::table::{HashTable, STATS_WORDS};
use crate::compact::Compaction;
use crate::error::AlgorithmError;
use crate::kernel::{check_writes_alone, require_output, require_packed, ViewCheck};

const ALGORITHM: &str = "hash join";

/// Many-to-one inner join of `left_keys` against the index in `table` (the right side, one
/// row per distinct key: the lowest row of each key): for every left row `i` whose key is
/// found, one pair (`i`, right row), in left order (stable).
///
/// Contract:
/// * `left_keys`: one packed `Uint32`/`Sint32` chunk, may carry a live count; `left_valid`
///   optional flags (0 = null key, never matches).
/// * `left_rows`, `right_rows`: packed u32 views of equal length, the pair capacity.
///   The first `min(count, capacity)` rows are the pairs; rows past them are untouched.
/// * `count`: one u32 row, the exact number of matches (it may exceed the capacity: size the
///   outputs by it and run again). `overflow`: optional u32 row, 1 when `count > capacity`.
/// * `stats`: the lookup's [`super::HashQueryStats`] block. Its `incomplete` word is 1 when
///   the index overflowed; then matches may be missing and the pairs must not be presented
///   as the complete join.
/// * Nodes: `{id}/clear`, `{id}/lookup` (writes the transients `{id}/lookup`, `{id}/flags`,
///   `{id}/ids`, one u32 per left row), `{id}/compact` (a [`Compaction`] of the row ids by
///   the match flags: the left rows, count and overflow) and `{id}/right-rows` (a
///   [`RowGather`] of the lookup by the left rows, bounded by the count).
/// * `right_rows` may share no buffer with `left_rows` or `count` (the gather reads them).
#[derive(Clone, Debug)]
pub struct HashJoin {
    /// Node id (and label prefix).
    pub id: String,
    /// The right side's index.
    pub table: HashTable,
    /// The left keys: one packed chunk.
    pub left_keys: VectorView,
    /// Optional left validity flags.
    pub left_valid: Option<VectorView>,
    /// Output: left row of each pair.
    pub left_rows: DataView,
    /// Output: right row of each pair.
    pub right_rows: DataView,
    /// Output: the number of matches.
    pub count: DataView,
    /// Output: 1 when the matches exceed the capacity.
    pub overflow: Option<DataView>,
    /// Output: the lookup's statistics block.
    pub stats: DataView,
}

impl HashJoin {
    /// Validates and adds the join's nodes with the default policy.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, &HashPolicy::DEFAULT)
    }

    /// [`HashJoin::add_to_graph`] with an explicit policy.
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &HashPolicy,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        for (what, v) in [
            ("left_rows", &self.left_rows),
            ("right_rows", &self.right_rows),
        ] {
            require_packed(c, what, &VectorView::from(*v), VectorFormat::Uint32)?;
        }
        if self.left_rows.len() != self.right_rows.len() {
            return Err(c.length(
                "right_rows",
                "rows",
                self.right_rows.len(),
                self.left_rows.len(),
                "left_rows (one capacity bounds the pairs)",
            ));
        }
        require_output(c, "count", &self.count, VectorFormat::Uint32, 1)?;
        if let Some(o) = &self.overflow {
            require_output(c, "overflow", o, VectorFormat::Uint32, 1)?;
        }
        require_output(c, "stats", &self.stats, VectorFormat::Uint32, STATS_WORDS)?;
        let right = VectorView::from(self.right_rows);
        check_writes_alone(
            graph,
            c,
            &[("right_rows", &right)],
            &[
                ("left_rows", &VectorView::from(self.left_rows)),
                ("count", &VectorView::from(self.count)),
            ],
            "the right-row gather reads the left rows and the count while writing right_rows",
        )?;
        let rows = self.left_keys.len().max(1);
        let transient =
            |graph: &mut CommandGraph, name: &str| -> Result<DataView, AlgorithmError> {
                let h = graph.create_buffer(BufferDescriptor::new(
                    format!("{}/{name}", self.id),
                    rows * 4,
                    wgpu::BufferUsages::STORAGE,
                ))?;
                Ok(graph.create_packed_view(h, VectorFormat::Uint32, self.left_keys.len())?)
            };
        let lookup = transient(graph, "lookup")?;
        let flags = transient(graph, "flags")?;
        let ids = transient(graph, "ids")?;
        add_lookup(
            graph,
            c,
            &Lookup {
                table: self.table,
                keys: self.left_keys.clone(),
                valid: self.left_valid.clone(),
                output: lookup,
                stats: self.stats,
                join: Some((flags, ids)),
            },
            policy,
        )?;
        let live = self.left_keys.chunks()[0].live_count();
        let values = match live {
            Some(l) => graph.with_live_count(ids, l)?,
            None => ids,
        };
        Compaction {
            id: format!("{}/compact", self.id),
            values: values.into(),
            flags: flags.into(),
            output: self.left_rows.into(),
            count: self.count,
            overflow: self.overflow,
        }
        .add_to_graph(graph)?;
        let indices = graph.with_live_count(self.left_rows, self.count)?;
        RowGather {
            id: format!("{}/right-rows", self.id),
            indices,
            source: lookup,
            width: 1,
            output: self.right_rows,
            source_valid: None,
            valid_out: None,
        }
        .add_to_graph(graph)
    }
}
