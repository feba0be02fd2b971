//! gpugraph-procgen: the procgen op ABI (`shared/spec/procgen-abi.txt`) on the command graph.
//!
//! Device kernels are assets — a WGSL compute shader and its `bindings.yaml` — resolved from a
//! literal identity and run over a domain that may be a live count the device holds, so counts
//! flow from one kernel to the next without crossing to the CPU. A cook adds every op's nodes
//! to one command graph, compiled once into a recording that later cooks replay; counts with
//! no stated capacity run clamped to a measured room behind a guard word.

#![warn(missing_docs)]

pub mod asset;
pub mod bound;
pub mod column;
pub mod cook;
pub mod count;
pub mod cpu;
pub mod error;
pub mod kernel;

pub use asset::{AssetLibrary, KernelAsset};
pub use bound::{Bounded, Counts, GuardFlag, Player};
pub use column::{Column, ColumnType, LiveCount, Word};
pub use cook::{Cook, Recording};
pub use count::{CountExpr, CountValue};
pub use error::{ProcgenError, Result};
pub use kernel::{BindValue, Domain, KernelCall, KernelOutputs, KernelRef, Uniform};
