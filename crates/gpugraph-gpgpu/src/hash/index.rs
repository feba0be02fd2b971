//! [`HashIndex`] (spec: GPUHashIndex): a fixed-capacity sparse uint32 identity map from one
//! packed batch of keys to the lowest source row holding each key. The build shared with
//! [`super::BatchHashIndex`] lives here too ([`add_build`]).

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, VectorFormat, VectorView,
};

use super::policy::HashPolicy;
use super::source::{build_source, keyed, BuildParams};
use super::table::{HashTable, STATS_WORDS};
use crate::error::AlgorithmError;
use crate::kernel::{
    check_same_topology, check_writes_alone, require_packed_live, Binder, ViewCheck, IN_PLACE,
};

pub(crate) const ALGORITHM: &str = "hash index";

/// Builds `table` from packed `keys`: every valid key row `r` maps key → the lowest `r`
/// holding it (the lowest row wins on duplicate keys, whatever the thread schedule: slots are
/// claimed by compare-exchange on the key, rows kept by atomic minimum).
///
/// Contract:
/// * `keys`: one chunk of packed `Uint32` (or `Sint32`, hashed by its two's-complement bits),
///   which may carry a live count (rows at or past it are not read); at most `u32::MAX` rows
///   (row [`super::MISS`] is the miss marker).
/// * `valid`: optional packed u32 flags with the keys' chunk lengths; a 0 flag skips the row
///   and counts it `invalid` (Arrow nulls never match).
/// * Every key, `0` and `0xffffffff` included, is indexable: `0xffffffff` marks free slots and
///   is kept in the extra row slot.
/// * Overflow: when more distinct keys arrive than the table has slots, the rows whose key
///   found no slot are counted in the `overflow` word and the index is *incomplete*: queries
///   report it, joins propagate it. Which keys overflow depends on the schedule; the counts of
///   stored keys (= capacity) and the stored mappings are exact.
/// * Every encode clears the table first: it is rebuilt, never updated.
///
/// Writes `table` (all three views) and nothing else; reads `keys`, `valid` and the live count.
#[derive(Clone, Debug)]
pub struct HashIndex {
    /// Node id (and label prefix).
    pub id: String,
    /// The keys: one packed chunk.
    pub keys: VectorView,
    /// Optional validity flags (nonzero = valid), the keys' chunk lengths.
    pub valid: Option<VectorView>,
    /// Where the index goes.
    pub table: HashTable,
}

impl HashIndex {
    /// Validates and adds nodes `{id}/clear` and `{id}/insert` with the default policy.
    pub fn add_to_graph(self, graph: &mut CommandGraph) -> Result<(), AlgorithmError> {
        self.add_to_graph_with(graph, &HashPolicy::DEFAULT)
    }

    /// [`HashIndex::add_to_graph`] with an explicit policy (its probing must match the
    /// table's; its load factor is the caller's to apply when sizing the table).
    pub fn add_to_graph_with(
        self,
        graph: &mut CommandGraph,
        policy: &HashPolicy,
    ) -> Result<(), AlgorithmError> {
        let c = ViewCheck::new(ALGORITHM, &self.id);
        if self.keys.chunks().len() != 1 {
            return Err(c.length(
                "keys",
                "chunks",
                self.keys.chunks().len() as u64,
                1,
                "a HashIndex (one packed batch; BatchHashIndex reads chunks)",
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

/// The key format `keys` are checked against: `Sint32` when the first chunk is, else
/// `Uint32` (the packed checks then name any other format).
pub(crate) fn key_format(keys: &VectorView) -> VectorFormat {
    match keys.chunks().first().map(DataView::format) {
        Some(VectorFormat::Sint32) => VectorFormat::Sint32,
        _ => VectorFormat::Uint32,
    }
}

/// The shared build of [`HashIndex`] and [`super::BatchHashIndex`]: one clear, then one insert
/// per non-empty chunk with global row ids (chunk base + local row).
pub(crate) fn add_build(
    graph: &mut CommandGraph,
    c: ViewCheck<'_>,
    keys: &VectorView,
    valid: Option<&VectorView>,
    table: &HashTable,
    policy: &HashPolicy,
) -> Result<(), AlgorithmError> {
    policy.validate().map_err(|e| c.policy(e))?;
    if policy.probing != table.probing {
        return Err(c.out_of_range(
            "the policy's probing",
            format!("{:?}", policy.probing),
            format!(
                "{:?}, the probing the table was laid out for",
                table.probing
            ),
        ));
    }
    let capacity = table.check(c)?;
    let format = key_format(keys);
    let live = require_packed_live(c, "keys", keys, format)?;
    if let Some(v) = valid {
        if require_packed_live(c, "valid", v, VectorFormat::Uint32)?.is_some() {
            return Err(c.unsupported(
                "valid",
                "a view without its own live count (the keys' count bounds both)",
                "a view with a live count",
            ));
        }
        check_same_topology(c, "keys", keys, "valid", v)?;
    }
    if keys.len() >= u64::from(u32::MAX) {
        return Err(c.device_limit(
            "key rows (row 0xffffffff marks a miss)",
            keys.len(),
            u64::from(u32::MAX) - 1,
        ));
    }
    let written = [
        ("table keys", VectorView::from(table.keys)),
        ("table rows", VectorView::from(table.rows)),
        ("table stats", VectorView::from(table.stats)),
    ];
    let mut reads: Vec<(&str, VectorView)> = vec![("keys", keys.clone())];
    if let Some(v) = valid {
        reads.push(("valid", v.clone()));
    }
    if let Some(l) = live {
        reads.push(("live count", VectorView::from(l)));
    }
    let w: Vec<(&str, &VectorView)> = written.iter().map(|(n, v)| (*n, v)).collect();
    let r: Vec<(&str, &VectorView)> = reads.iter().map(|(n, v)| (*n, v)).collect();
    check_writes_alone(graph, c, &w, &r, IN_PLACE)?;

    let binder = Binder::new(&graph.device().limits());
    let mut params = BuildParams {
        capacity,
        slot_key_offset: binder.offset(c, "table keys", &table.keys)?,
        slot_row_offset: binder.offset(c, "table rows", &table.rows)?,
        stats_offset: binder.offset(c, "table stats", &table.stats)?,
        ..BuildParams::default()
    };
    let table_bindings = |params: &BuildParams| {
        vec![
            Binding::params(0, params),
            Binding::read_write(1, table.keys),
            Binding::read_write(2, table.rows),
            Binding::read_write(3, table.stats),
        ]
    };
    let rows_per_workgroup = policy.workgroup_size;
    let insert_rows_per_workgroup = policy.rows_per_workgroup();
    graph.add_dispatch_node(DispatchNode::new(
        format!("{}/clear", c.id),
        keyed(
            "hash/clear",
            &build_source(policy, table.probing, true, false, false),
        ),
        "clear",
        table_bindings(&params),
        Grid::Rows {
            rows: (u64::from(capacity) + 1).max(STATS_WORDS),
            rows_per_workgroup,
        },
    ))?;
    let chunks = keys.chunks().len();
    let mut base = 0u64;
    for (k, chunk) in keys.chunks().iter().enumerate() {
        let rows = chunk.len();
        if rows == 0 {
            continue;
        }
        let chunk = chunk.without_live_count();
        let name = |what: &str| {
            if chunks == 1 {
                what.to_string()
            } else {
                format!("{what} chunk {k}")
            }
        };
        params.rows = rows as u32;
        params.row_base = base as u32;
        params.key_offset = binder.offset(c, &name("keys"), &chunk)?;
        let mut bindings = Vec::new();
        let valid_chunk = valid.map(|v| v.chunks()[k]);
        if let Some(v) = &valid_chunk {
            params.valid_offset = binder.offset(c, &name("valid"), v)?;
        }
        if let Some(l) = &live {
            params.live_offset = binder.offset(c, "live count", l)?;
        }
        bindings.extend(table_bindings(&params));
        bindings.push(Binding::read(4, chunk));
        if let Some(v) = valid_chunk {
            bindings.push(Binding::read(5, v));
        }
        if let Some(l) = live {
            bindings.push(Binding::read(6, l));
        }
        let id = if chunks == 1 {
            format!("{}/insert", c.id)
        } else {
            format!("{}/insert/{k}", c.id)
        };
        graph.add_dispatch_node(DispatchNode::new(
            id,
            keyed(
                "hash/insert",
                &build_source(
                    policy,
                    table.probing,
                    false,
                    valid.is_some(),
                    live.is_some(),
                ),
            ),
            "insert_rows",
            bindings,
            Grid::Rows {
                rows,
                rows_per_workgroup: insert_rows_per_workgroup,
            },
        ))?;
        base += rows;
    }
    Ok(())
}
