//! GPU execution plans for Apache DataFusion.
//!
//! [`session_context`] builds a DataFusion `SessionContext` whose physical plans run supported
//! operators on gpugraph primitives ([`Engine::Gpu`]) or DataFusion's own CPU operators
//! ([`Engine::Cpu`], the same SQL front-end and logical optimizer, for comparison).
//!
//! # Where the GPU takes over: partial aggregation
//!
//! [`GpuAggregateRule`] runs before DataFusion's physical-optimizer rules and replaces each
//! `AggregateExec{mode: Partial}` together with its projection/filter chain by a
//! [`GpuPartialAggregateExec`] reading the operator below the chain (the scan). It emits
//! exactly the partial-state schema DataFusion's final aggregate expects (sum → its sum type,
//! avg → (count, sum), count → Int64, min/max → the value type), so DataFusion's CPU final
//! aggregate finishes over one row per group and result types, avg rounding and order are
//! DataFusion's own. A partial aggregate the rule cannot take is wrapped in a transparent
//! [`CpuFallbackExec`] naming the reason, so `EXPLAIN` shows what runs where and why.
//!
//! When the GPU's partial output cannot repeat a group ([`plan::GpuPlan::unique_groups`]:
//! coded keys only, or the lookup side's own join key among the keys, as in TPC-H Q3 and
//! Q10), the final aggregate above it becomes a [`GpuFinalizeExec`], which finishes each
//! state row as its own group with DataFusion's accumulators instead of repartitioning and
//! hashing the keys (`finalize.rs`).
//!
//! COUNT(DISTINCT x) over numbers, dates and decimals, several per query (a lone one
//! DataFusion rewrites into a grouping by x), keeps a presence bitmap per group over x's
//! run-time bounds: the row sets bit `x − min` ([`program::Op::Bits`]), and the state row
//! lists the set bits' values, the list state DataFusion's distinct accumulator merges. A
//! range past [`plan::MAX_SPAN_WORDS`] words falls back at run time with the reason.
//!
//! # Sort + limit: top-k selection
//!
//! [`GpuTopKRule`] replaces each `SortExec` with a fetch (`ORDER BY … LIMIT k`, TPC-H Q3's
//! and Q10's over their final aggregates) over a GPU aggregate by a [`GpuTopKExec`] (a sort
//! fed from the host stays DataFusion's heap unless [`SessionOptions::topk_host_inputs`]): the host encodes each
//! batch's sort keys as order-preserving words where the batch arrives, the device selects
//! the k smallest rows by radix selection, and the host orders those k and gathers them
//! ([`topk`]). Ties come in input order. String keys, and sorts without a fetch, stay on the
//! CPU (the former marked with the reason).
//!
//! # Joins: lookup sides gathered by key
//!
//! A hash join in the chain keyed by the streamed side (TPC-H Q14's `lineitem ⋈ part`) runs
//! as a lookup: the input whose base table is smaller runs on DataFusion's CPU operators
//! while the larger one streams to the GPU, its key becomes a direct-addressed map to lookup
//! rows and the columns the query reads from it become gathered words (`lookup.rs`). Each
//! such join is one lookup side, all of them in one GPU buffer (Q5 probes orders ⋈ customer
//! by `l_orderkey` and supplier by `l_suppkey`); a join's further keys become equalities the
//! row checks, over either side's columns (Q5's `s_nationkey = c_nationkey`). A lookup input
//! that is itself an inner join with an unfiltered dimension (Q5's and Q10's `orders ⋈
//! customer`) becomes two sides instead, the dimension probed by a key gathered from the
//! other (`o_custkey`): such a join drops no rows, and the GPU probes a second map per row
//! faster than DataFusion builds the dimension's hash table. Subexpressions over lookup
//! columns alone (`p_type LIKE 'PROMO%'`) are evaluated on the host once per lookup row, so
//! strings never reach the GPU. A repeated or sparse key refuses at run time and the exec
//! runs DataFusion's plan. A left join that preserves the streamed side keeps its unmatched
//! rows with NULL lookup columns.
//!
//! Group keys may come from one lookup side (TPC-H Q3's `o_orderdate`, Q10's `c_name`): its
//! lookup row is then a digit of the group index, and the host takes the keys' values by row
//! for the groups that have rows; a partial state may repeat a key, which DataFusion's final
//! aggregate merges. A join whose key reads only one lookup side's columns (Q10's nation)
//! moves into that side on the CPU, since inner joins associate (`plan/join.rs`).
//!
//! # Exact arithmetic
//!
//! Numbers travel as i32 (integers, Date32, Decimal128's unscaled values; checked per batch
//! while converting, `convert.rs`), group keys as dictionary codes combined into one
//! mixed-radix group index (at most [`kernel::MAX_GROUPS`] groups; past
//! [`kernel::PRIVATE_WORDS`] accumulator words they accumulate in device memory). Predicates and aggregate
//! arguments become [`ir::Ir`] over exact integers with DataFusion's decimal scales
//! (`expr.rs`), checked before launch against the columns' minimum and maximum to stay within
//! i64 ([`ir::Ir::bounds`]); sums accumulate in 96 bits, so fewer than 2^32 rows cannot
//! overflow. Float comparisons against a decimal column (TPC-H Q6's `between 0.06 - 0.01 and
//! 0.06 + 0.01`) become exact integer thresholds of the cast. Float64 columns stay on the CPU.
//! String columns compared with literals (TPC-H Q12's `l_shipmode IN ('MAIL', 'SHIP')`) are
//! coded like group keys and compared as codes, with SQL's NULLs.
//! When the data breaks an assumption at run time (a value past i32, a bound past i64, too
//! many groups) the exec runs the original CPU subtree it keeps and records why.
//!
//! # Deviations from the agreed design, and why
//!
//! - Predicates and derived values are lowered to a small postfix program (oracle
//!   `program::run_cpu`) that `kernel/compile.rs` compiles to straight-line WGSL around the
//!   accumulation code of `kernel/aggregate.wgsl`, rather than to the expression language's
//!   generated kernels: that language computes in f32/u32 without SQL nulls. Pipelines are
//!   per program shape (constants stay in a buffer), so literals compile nothing new.
//! - The column cache ([`GpuCache`]) holds in-memory tables only, per (source, column set);
//!   files are re-read every time (see `cache.rs`).
//! - A plain local Parquet scan below the aggregate is read by the exec itself
//!   ([`scan::DirectScan`]): whole row groups on every core, decimals as the file's own
//!   integers, converted on the decoding thread. Other sources keep DataFusion's scan.
//!   When every column it reads is flat, non-null and stored as integers or dictionary
//!   strings, the host only decompresses pages and walks their run headers, and the GPU
//!   expands them ([`pages`]); a page it cannot expand sends the scan back to the Arrow
//!   reader's path (`EXPLAIN ANALYZE`: `page_decode`, `page_decode_refused`).
//! - Kernel time is measured both ways: host (submission to completion, `gpu_kernel_time`)
//!   and, where the device has timestamp queries, on the GPU (`gpu_time`).

pub mod query;
mod query_error;

pub use datafusion;

pub mod cache;
pub mod codemap;
pub mod convert;
pub mod exec;
pub mod expr;
pub mod finalize;
pub mod guard;
pub mod ir;
pub mod kernel;
pub mod lookup;
pub mod pages;
pub mod plan;
pub mod program;
pub mod recursion;
pub mod rule;
pub mod scan;
pub mod script;
pub mod share;
pub mod topk;
pub mod tpch;

use std::sync::Arc;

use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::{SessionConfig, SessionContext};
use gpugraph_command::GpuContext;

pub use cache::GpuCache;
pub use exec::{CpuFallbackExec, GpuPartialAggregateExec};
pub use finalize::GpuFinalizeExec;
pub use rule::GpuAggregateRule;
pub use topk::{GpuTopKExec, GpuTopKRule};

/// Which operators a session's physical plans use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Supported operators run on the GPU; the rest fall back to DataFusion's CPU operators.
    Gpu,
    /// DataFusion's CPU operators only.
    Cpu,
}

/// Options of [`session_context`].
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// GPU plans or DataFusion's CPU plans.
    pub engine: Engine,
    /// DataFusion's `target_partitions` (CPU threads of scans and CPU operators); `None` keeps
    /// DataFusion's default (the number of cores).
    pub target_partitions: Option<usize>,
    /// Whether `ORDER BY … LIMIT k` over host-fed input (a scan and filters) runs as a GPU
    /// top-k too; off by default, since DataFusion's heap with its dynamic scan filter is
    /// faster there ([`GpuTopKRule`]). Sorts over a GPU aggregate's groups always may.
    pub topk_host_inputs: bool,
    /// Bytes DataFusion's operators may hold at once (its memory pool: sorts, joins,
    /// aggregations, recursive queries); past it a query fails with DataFusion's "Resources
    /// exhausted" error naming the operator. `None`: unbounded.
    pub memory_limit: Option<usize>,
    /// Iterations a `WITH RECURSIVE` query may run before it fails by name
    /// ([`recursion::RecursionLimitRule`]).
    pub max_recursion: usize,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            engine: Engine::Gpu,
            target_partitions: None,
            topk_host_inputs: false,
            memory_limit: None,
            max_recursion: recursion::DEFAULT_MAX_ITERATIONS,
        }
    }
}

/// Errors of building a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The GPU engine was asked for but its plans are not available.
    #[error("the GPU engine is not available: {0}")]
    GpuUnavailable(String),
}

/// A DataFusion session for `options`: register tables on it (`register_parquet`,
/// `register_batch`, ...) and run SQL with `sql(...)`.
pub fn session_context(options: &SessionOptions) -> Result<SessionContext, SessionError> {
    match options.engine {
        Engine::Cpu => Ok(SessionContext::new_with_state(
            state_builder(options).build(),
        )),
        Engine::Gpu => {
            let gpu = GpuContext::new().map_err(|e| SessionError::GpuUnavailable(e.to_string()))?;
            let gpu = Arc::new(gpu);
            Ok(gpu_session(
                state_builder(options),
                Arc::clone(&gpu),
                GpuCache::new(true),
                options,
                vec![gpu],
            ))
        }
    }
}

/// DataFusion's default session state with `options`' partitions.
fn state_builder(options: &SessionOptions) -> SessionStateBuilder {
    let mut config = SessionConfig::new();
    if let Some(partitions) = options.target_partitions {
        config = config.with_target_partitions(partitions.max(1));
    }
    let builder = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rules(physical_rules(options, Vec::new()));
    match options.memory_limit {
        Some(bytes) => {
            // The default environment (what DataFusion builds itself) with a bounded pool:
            // a fair spill pool shares the limit between the operators that can spill.
            let env = datafusion::execution::runtime_env::RuntimeEnv {
                memory_pool: Arc::new(datafusion::execution::memory_pool::FairSpillPool::new(
                    bytes,
                )),
                ..Default::default()
            };
            builder.with_runtime_env(Arc::new(env))
        }
        None => builder,
    }
}

/// `first`, then DataFusion's own physical optimizer rules, then the recursion bound.
fn physical_rules(
    options: &SessionOptions,
    mut first: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>>,
) -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    first.extend(PhysicalOptimizer::new().rules);
    first.push(Arc::new(recursion::RecursionLimitRule {
        max_iterations: options.max_recursion,
    }));
    first
}

/// A session like [`session_context`]'s on an existing GPU context (tests and benchmarks
/// share one device), with a GPU column cache of its own when `cache` is true (in-memory
/// tables stay GPU-resident between queries; see [`cache`]).
pub fn session_context_on(
    options: &SessionOptions,
    gpu: Arc<GpuContext>,
    cache: bool,
) -> SessionContext {
    session_context_sharing(options, gpu, GpuCache::new(cache))
}

/// A session like [`session_context_on`]'s that shares `cache` (its GPU columns, if enabled,
/// and its upload slabs) with the other sessions given it: a process that runs one query a
/// session (the Python package) keeps its device and upload memory from query to query.
pub fn session_context_sharing(
    options: &SessionOptions,
    gpu: Arc<GpuContext>,
    cache: GpuCache,
) -> SessionContext {
    let builder = state_builder(options);
    match options.engine {
        Engine::Cpu => SessionContext::new_with_state(builder.build()),
        Engine::Gpu => gpu_session(builder, Arc::clone(&gpu), cache, options, vec![gpu]),
    }
}

/// A session like [`session_context_sharing`]'s whose GPU aggregates split their input over
/// `devices` (one [`GpuContext`] per GPU; see [`GpuPartialAggregateExec::with_devices`]); the
/// first device also runs everything that uses one device (top-k). `devices` must not be
/// empty.
pub fn session_context_on_devices(
    options: &SessionOptions,
    devices: Vec<Arc<GpuContext>>,
    cache: GpuCache,
) -> Result<SessionContext, SessionError> {
    let Some(first) = devices.first().cloned() else {
        return Err(SessionError::GpuUnavailable("no device was given".into()));
    };
    let builder = state_builder(options);
    Ok(match options.engine {
        Engine::Cpu => SessionContext::new_with_state(builder.build()),
        Engine::Gpu => gpu_session(builder, first, cache, options, devices),
    })
}

/// Our rules first (the aggregate rule must see the planner's partial aggregates before DataFusion's rules
/// combine or repartition them), then DataFusion's own rules.
fn gpu_session(
    builder: SessionStateBuilder,
    gpu: Arc<GpuContext>,
    cache: GpuCache,
    options: &SessionOptions,
    devices: Vec<Arc<GpuContext>>,
) -> SessionContext {
    let ours: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> = vec![
        Arc::new(GpuAggregateRule::new(Arc::clone(&gpu), cache).with_devices(devices)),
        Arc::new(GpuTopKRule::new(gpu).with_host_inputs(options.topk_host_inputs)),
    ];
    let rules = physical_rules(options, ours);
    SessionContext::new_with_state(builder.with_physical_optimizer_rules(rules).build())
}
