//! gpugraph's GPU SQL operators on an Apache Ballista 55 cluster: a scheduler
//! ([`serve_scheduler`]), executors that run the GPU operators on their own device
//! ([`run_executor`]) and a client session ([`client_context`]). `docs/cluster.md` says how
//! to start one.
//!
//! # What travels, and why not the GPU execs themselves
//!
//! A GPU exec of `gpugraph-datafusion` holds what cannot travel (its device, a plan of
//! kernels, a CPU fallback plan that is not its child) and is made by its physical-optimizer
//! rule from the planner's plan, before DataFusion's rules. Reading Ballista 55 decided the
//! rest:
//!
//! - Its executors run the stage plan they decode as is: no physical-optimizer rule runs on
//!   an executor (`ballista-executor`'s `DefaultExecutionEngine` only points shuffle readers
//!   at the work directory), so shipping the plain plan and letting each executor's session
//!   apply `GpuAggregateRule` has no place to happen; an `ExecutionEngine` override could
//!   rewrite the stage, but the scheduler pairs the metrics an executor reports with the
//!   operators of *its* plan by position, so a stage rewritten on the executor would fail
//!   the job ("task metrics array size ... does not equal") or misreport.
//! - Its adaptive planner (on by default) runs its own rule chain, not the session's: the
//!   scheduler here uses the static planner, whose session has our rule.
//! - Before a task is shipped the scheduler restricts every scan and shuffle read of the
//!   stage to the task's partitions, unless an operator requires its input whole. A GPU exec
//!   reads every partition of its input and writes one, without declaring that; visible to
//!   Ballista, a 1-task stage would aggregate a quarter of a 4-partition scan.
//!
//! So the scheduler's first rule ([`GpuUnitRule`]) replaces each outermost subtree the GPU
//! chain would turn into a GPU exec by a [`GpuUnitExec`], a leaf to Ballista that keeps the
//! subtree as the planner made it (`origin`). [`GpuCodec`] ships that origin through
//! `datafusion-proto` (plain DataFusion nodes: scans, filters, joins, aggregates), and the
//! executor decoding it runs its own `gpugraph-datafusion` chain over it (a [`LocalPlanner`]):
//! the GPU rules against its own device, or DataFusion's CPU rules where it has none. The
//! unit's one task reads the whole subtree input (files every executor must reach), and its
//! metrics (`gpu_execs`, `gpu_fallbacks`, the GPU execs' own) reach the scheduler under one
//! operator, so `EXPLAIN ANALYZE` through Ballista shows where the GPU ran. Shuffles between
//! stages are Ballista's (Arrow IPC files served over Arrow Flight).
//!
//! The crates: `ballista-core`, `ballista-scheduler` and `ballista-executor` 55 without
//! default features (no binaries' CLI, logging, REST API or allocator); the umbrella crate
//! `ballista` only adds a `SessionContext` extension over `ballista-core`'s, used directly.
//!
//! The price: one GPU unit runs on one executor (one task), however many executors there
//! are; several queries, or the stages outside units, spread over them.

mod codec;
mod node;
mod unit;

pub use codec::GpuCodec;
pub use node::{
    client_context, cpu_planner, device_planner, executed_plan, gpu_planner, parse_address,
    run_executor, scheduler_session_state, serve_scheduler, wait_for_scheduler, ClusterError,
    ExecutorOptions, SchedulerOptions,
};
pub use unit::{GpuUnitExec, GpuUnitRule, LocalPlanner};
