//! [`HashIndexQuery`] (spec: GPUHashIndexQuery): bounded lookup of packed keys against a
//! [`super::HashTable`] built by [`super::HashIndex`] or [`super::BatchHashIndex`]. The
//! lookup shared with [`super::HashJoin`] lives here too ([`add_lookup`]).

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, VectorFormat, VectorView,
};

use super::index::key_format;
use super::policy::HashPolicy;
use super::source::{keyed, query_source, QueryParams};
use super::table::{HashTable, STATS_WORDS};
use crate::error::AlgorithmError;
use crate::kernel::{
    check_same_topology, check_writes_alone, require_output, require_packed_live, Binder,
    ViewCheck, IN_PLACE,
};

const ALGORITHM: &str = "hash query";

/// Looks up every key of `keys` in `table`: `output[i]` = the lowest source row holding
/// `keys[i]`, or [`super::MISS`]; `stats` = the [`super::HashQueryStats`] block (found,
/// missing, invalid, probe maximum and sum, rows, incomplete).
///
/// Contract:
/// * `keys`: one chunk of packed `Uint32` or `Sint32` (bits compared), which may carry a
///   live count; rows at or past it are not read and their output rows are not written.
/// * `valid`: optional packed u32 flags with the keys' length; a 0 flag writes
///   [`super::MISS`] and counts the row `invalid`, not `missing`.
/// * `output`: packed u32 with the keys' length (the bound: one row per key). `stats`:
///   [`STATS_WORDS`] packed u32 rows, cleared and rewritten every encode.
/// * Incomplete source: when the index's build overflowed, `incomplete` is 1 and misses may
///   be false; the caller must not present the result as complete.
/// * Reads the table (build it earlier in the same graph or import a built one), the keys,
///   flags and live count; writes `output` and `stats` only, which may share no buffer with
///   what it reads.
#[derive(Clone, Debug)]
pub struct HashIndexQuery {
    /// Node id (and label prefix).
    pub id: String,
    /// The index to query.
    pub table: HashTable,
    /// The keys: one packed chunk.
    pub keys: VectorView,
    /// Optional validity flags (nonzero = valid).
    pub valid: Option<VectorView>,
    /// One row per key: the row found, or `MISS`.
    pub output: DataView,
    /// The query statistics block.
    pub stats: DataView,
}

impl HashIndexQuery {
    /// Validates and adds `{id}/clear` and `{id}/lookup` with the default policy.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, &HashPolicy::DEFAULT)
    }

    /// [`HashIndexQuery::add_to_graph`] with an explicit policy (workgroup size; the probe
    /// sequence is the table's).
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &HashPolicy,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        let lookup = Lookup {
            table: self.table,
            keys: self.keys,
            valid: self.valid,
            output: self.output,
            stats: self.stats,
            join: None,
        };
        add_lookup(graph, c, &lookup, policy)
    }
}

/// What one lookup binds (see [`HashIndexQuery`]); `join` adds the match flags and row ids
/// (transients of the keys' length) the join's compaction reads.
pub(crate) struct Lookup {
    pub table: HashTable,
    pub keys: VectorView,
    pub valid: Option<VectorView>,
    pub output: DataView,
    pub stats: DataView,
    pub join: Option<(DataView, DataView)>,
}

/// Validates `l` and adds `{id}/clear` and (for non-empty keys) `{id}/lookup`.
pub(crate) fn add_lookup(
    graph: &mut CommandGraph,
    c: ViewCheck<'_>,
    l: &Lookup,
    policy: &HashPolicy,
) -> Result<(), AlgorithmError> {
    policy.validate().map_err(|e| c.policy(e))?;
    let capacity = l.table.check(c)?;
    if l.keys.chunks().len() != 1 {
        return Err(c.length(
            "keys",
            "chunks",
            l.keys.chunks().len() as u64,
            1,
            "a query (one packed chunk; BatchHashJoin queries chunks)",
        ));
    }
    let live = require_packed_live(c, "keys", &l.keys, key_format(&l.keys))?;
    if let Some(v) = &l.valid {
        if require_packed_live(c, "valid", v, VectorFormat::Uint32)?.is_some() {
            return Err(c.unsupported(
                "valid",
                "a view without its own live count (the keys' count bounds both)",
                "a view with a live count",
            ));
        }
        check_same_topology(c, "keys", &l.keys, "valid", v)?;
    }
    require_output(c, "output", &l.output, VectorFormat::Uint32, l.keys.len())?;
    require_output(c, "stats", &l.stats, VectorFormat::Uint32, STATS_WORDS)?;
    let written = [
        ("output", VectorView::from(l.output)),
        ("stats", VectorView::from(l.stats)),
    ];
    let mut reads: Vec<(&str, VectorView)> = vec![
        ("keys", l.keys.clone()),
        ("table keys", l.table.keys.into()),
        ("table rows", l.table.rows.into()),
        ("table stats", l.table.stats.into()),
    ];
    if let Some(v) = &l.valid {
        reads.push(("valid", v.clone()));
    }
    if let Some(live) = live {
        reads.push(("live count", live.into()));
    }
    let w: Vec<(&str, &VectorView)> = written.iter().map(|(n, v)| (*n, v)).collect();
    let r: Vec<(&str, &VectorView)> = reads.iter().map(|(n, v)| (*n, v)).collect();
    check_writes_alone(graph, c, &w, &r, IN_PLACE)?;

    let binder = Binder::new(&graph.device().limits());
    let keys = l.keys.chunks()[0].without_live_count();
    let mut params = QueryParams {
        rows: keys.len() as u32,
        key_offset: binder.offset(c, "keys", &keys)?,
        capacity,
        slot_key_offset: binder.offset(c, "table keys", &l.table.keys)?,
        slot_row_offset: binder.offset(c, "table rows", &l.table.rows)?,
        table_stats_offset: binder.offset(c, "table stats", &l.table.stats)?,
        out_offset: binder.offset(c, "output", &l.output)?,
        stats_offset: binder.offset(c, "stats", &l.stats)?,
        ..QueryParams::default()
    };
    if keys.len() > u64::from(u32::MAX) {
        return Err(c.device_limit("key rows", keys.len(), u64::from(u32::MAX)));
    }
    let probing = l.table.probing;
    graph.add_dispatch_node(DispatchNode::new(
        format!("{}/clear", c.id),
        keyed(
            "hash/query-clear",
            &query_source(policy, probing, true, false, false, false),
        ),
        "query_clear",
        vec![
            Binding::params(0, &params),
            Binding::read(3, l.table.stats),
            Binding::read_write(6, l.stats),
        ],
        Grid::Workgroups([1, 1, 1]),
    ))?;
    if keys.is_empty() {
        return Ok(());
    }
    let valid = l.valid.as_ref().map(|v| v.chunks()[0]);
    if let Some(v) = &valid {
        params.valid_offset = binder.offset(c, "valid", v)?;
    }
    if let Some(live) = &live {
        params.live_offset = binder.offset(c, "live count", live)?;
    }
    if let Some((flags, ids)) = &l.join {
        params.flags_offset = binder.offset(c, "match flags", flags)?;
        params.ids_offset = binder.offset(c, "row ids", ids)?;
    }
    let mut bindings = vec![
        Binding::params(0, &params),
        Binding::read(1, l.table.keys),
        Binding::read(2, l.table.rows),
        Binding::read(3, l.table.stats),
        Binding::read(4, keys),
        Binding::read_write(5, l.output),
        Binding::read_write(6, l.stats),
    ];
    if let Some((flags, ids)) = l.join {
        bindings.push(Binding::read_write(7, flags));
        bindings.push(Binding::read_write(8, ids));
    }
    if let Some(v) = valid {
        bindings.push(Binding::read(9, v));
    }
    if let Some(live) = live {
        bindings.push(Binding::read(10, live));
    }
    graph.add_dispatch_node(DispatchNode::new(
        format!("{}/lookup", c.id),
        keyed(
            "hash/lookup",
            &query_source(
                policy,
                probing,
                false,
                l.join.is_some(),
                valid.is_some(),
                live.is_some(),
            ),
        ),
        "lookup",
        bindings,
        Grid::Rows {
            rows: keys.len(),
            rows_per_workgroup: policy.rows_per_workgroup(),
        },
    ))?;
    Ok(())
}
