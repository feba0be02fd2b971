//! gpugraph-trace: the trace domain (spec T.1–T.2).
//!
//! * [`span`]: the 32-byte canonical span ([`TraceSpan`]) and the 16-byte dependency record
//!   ([`TraceDependency`]), exactly as they lie in GPU memory; times are integer ticks
//!   relative to the trace start, in split 32-bit words.
//! * [`chrome`]: streaming ingestion of Chrome Trace Event Format JSON (`.json`, `.json.gz`;
//!   the object and the bare array forms), parsed in parallel on native targets.
//! * [`model`]: the canonical [`TraceModel`] (spans in canonical order, parents, lanes,
//!   dependencies, processes and threads, the preserved per-process source partitions, and
//!   the [`IngestReport`]).
//! * [`cache`]: a versioned, checksummed columnar binary cache of the model.
//! * [`cpu`]: the plain-Rust oracles of every GPU step.
//!
//! Nothing here submits GPU work or blocks; the GPU workflows add declared dispatch nodes to
//! a caller's [`gpugraph_command::CommandGraph`].

#![warn(missing_docs)]

pub mod cache;
pub mod chrome;
pub mod cpu;
pub mod csr;
mod error;
pub mod frame;
pub mod layout;
pub mod lod;
pub mod model;
pub mod scene;
pub mod shaders;
pub mod span;
pub mod stats;
pub mod view;

pub use chrome::event::TraceKey;
pub use chrome::{parse_chrome_trace, IngestOptions};
pub use error::{TraceError, TraceGpuError};
pub use model::{IngestReport, SkipCount, TraceModel, TraceProcess, TraceThread};
pub use span::{
    DependencyKind, SpanFlags, SpanParts, TraceDependency, TraceSpan, DRAW_GROUPS, MAX_LANE,
    MAX_PROCESSES, MAX_SPAN_DURATION, NO_SPAN, TRACE_DEPENDENCY_BYTES, TRACE_SPAN_BYTES,
    TRACE_SPAN_WORDS,
};
pub use view::{Focus, FocusDirection, Pick, TraceView};

/// Checks that the `#[repr(C)]` parameter struct `T` has the size of WGSL struct `name` in
/// `wgsl` and that its `words` members sit at consecutive 4-byte offsets.
#[cfg(test)]
pub(crate) fn assert_params_layout<T>(wgsl: &str, name: &str, words: u32) {
    let module = naga::front::wgsl::parse_str(wgsl).expect("the WGSL parses");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let (h, t) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .expect("the params struct");
    let naga::TypeInner::Struct { members, .. } = &t.inner else {
        panic!("{name} is a struct")
    };
    assert_eq!(layouter[h].size as usize, std::mem::size_of::<T>());
    let offsets: Vec<u32> = members.iter().map(|m| m.offset).collect();
    assert_eq!(offsets, (0..words).map(|i| i * 4).collect::<Vec<u32>>());
}
