//! The GPU test scaffolding the crates' tests share, so every test gets its device, poisons
//! its outputs, reads back and compares floats the same way.
//!
//! A `[dev-dependencies]` entry only (`publish = false`): no production crate depends on it.
//! The rules it carries:
//! - [`device`]: a GPU test runs on a real adapter (Mesa lavapipe in CI) and fails, never
//!   skips, when there is none.
//! - [`buffers`]: outputs are filled with [`POISON`] before a run, so a row the kernel never
//!   writes is caught.
//! - [`readback`]: reads go through `gpugraph_tables::readback`, the one readback path
//!   production uses, never a private staging copy.
//! - [`random`]: inputs come from seeded generators, at the boundary sizes of a kernel's tiles.
//! - [`float`]: GPU floats match the oracles' IEEE rules: bit for bit (every NaN alike), or
//!   within a stated bound.

pub mod buffers;
pub mod device;
pub mod float;
pub mod graph;
pub mod random;
pub mod readback;

pub use buffers::{poison, poisoned, upload, upload_padded, POISON};
pub use device::{ctx, ctx_with_max_dispatch, shared_ctx, NO_ADAPTER};
pub use float::{assert_close, assert_same_floats, same_float};
pub use graph::{encode_wait, run};
pub use random::{boundary_sizes, random_u32s, rng, uneven_chunks};
pub use readback::{map_read, read, read_buffer, read_bytes, submit_and_read};
