//! gpugraph-procgen: the procgen op ABI (`shared/spec/procgen-abi.txt`) on the command graph.
//!
//! Device kernels are assets — a WGSL compute shader and its `bindings.yaml` — resolved from a
//! literal identity and run over a domain that may be a live count the device holds, so counts
//! flow from one kernel to the next without crossing to the CPU. A cook adds every op's nodes
//! to one command graph, compiled once into a recording that later cooks replay; counts with
//! no stated capacity run clamped to a measured room behind a guard word. A Luau front-end
//! ([`luau::Host`], `gpugraph procgen run`) writes a node graph as a script.
//!
//! # The spec, paragraph by paragraph
//!
//! | spec | code |
//! |---|---|
//! | Ops table (runs: gpu / cpu_to_gpu / gpu_to_cpu / cpu) | [`Op`] / [`Runs`]: `Cook::kernel`, `Cook::upload` / `Recording::readback`, `luau::cpu_call::call`, `Cook::bound` / `Cook::live` / `Cook::guard` |
//! | device.kernel: `kernel` resolved from a literal, a name refused | [`asset::AssetLibrary::resolve`], [`KernelRef::Name`] → `BareKernelName`, `NotAnIdentity` |
//! | `specialize` gives each parameter one of its options | [`asset::KernelAsset::complete`] (`SpecializeOption`, `UnknownSpecialize`) |
//! | `bind`, `domain`, `uniforms` (undeclared refused), `step` (undeclared left out), `columns` | [`KernelCall`], `kernel.rs` `param_values` (`UnknownUniform`, `MissingParam`, `ParamValue`) |
//! | a written binding bound to a Column writes a copy under its name | `kernel.rs` `dispatch` (copy node, cast when the words differ) |
//! | columns binding packed in `order` or sorted-name order; read by `NAME_col_<column>` | `kernel.rs` `pack_columns` (`ColumnsOrder`, `ColumnLength`); `<name>_stride` param, and a `<name>_col_<column>` param holding each column's word offset |
//! | a Vec spreads over `_x … _w`; `count`, `time`, `frame` left out when undeclared | `kernel.rs` `param_values` |
//! | domain = Number, Column, live count; `domain_count`; plain number into `domain_count` | [`Domain`]; `dispatch` binds the live word or a one-word column of the number |
//! | outputs with count/capacity allocated before the dispatch; appended → Column + `<name>_count` | `dispatch`: `count`/`capacity` size expressions, counters, [`KernelOutputs`] |
//! | Column elements are 32-bit words (Int i32, UInt u32, others f32) | [`Column`], [`ColumnType`], [`Word`] |
//! | cast by value (read and in-place bindings), written back as the binding's type | [`Cook::cast`], `assets/internal/cast.wgsl`, [`cpu::cast`] |
//! | Over a live count: COUNT=device variant, dispatch over capacity, `min(domain_count, zero_n())` | [`asset::variant::select`] (`// @when … // @end`), every built-in `kernel.wgsl` |
//! | growing count arithmetic evaluated on the device | [`Cook::count_at`] (`count_op.wgsl`); no wait (`tests/waits.rs`) |
//! | arithmetic that takes a count away is read back where the dispatch needs the number | [`wait`]: [`Cook::read_back`] splits the recording (segment submitted, words read, plan goes on with the number), [`PlanWait`] names the expression and the node; every [`Recording::run`] reads it again and a moved number plans again ([`Counts`] `replans`, `plan_waits`); [`Domain::Count`], `tests/waits.rs` |
//! | an output sized by a live count (`count: "nv"`, `{ live = count }`) | [`BindValue::Live`], `Ctx::size` |
//! | the inert-value table | `assets/procgen/*/kernel.wgsl`, checked by `tests/kernels.rs` |
//! | reduce: the last segment ends at the live count; a segment past segment_count is not written | `assets/procgen/reduce` (SEGMENTS=plain\|device, OP=sum\|min\|max), [`cpu::reduce`], `tests/segments.rs` |
//! | scan (SEGMENTS=device): a segment past segment_count is not scanned or written | `assets/procgen/scan` (SEGMENTS=none\|plain\|device, per-segment `totals`), [`cpu::segmented_scan`], `tests/segments.rs` |
//! | expand (ELEMENTS=device): counts and offsets hold element_count live elements whatever the dispatch covers | `assets/procgen/expand` (ELEMENTS=device: strides over the whole dispatch; offsets sized and live by `element_count`), `tests/segments.rs` |
//! | scatter (fold pass): an index past the live count reaches no place | `assets/procgen/scatter` (OP=add\|min\|max, i32 atomics into a copy of `dst`), [`cpu::scatter`], `tests/segments.rs` |
//! | a count word binding (`segment_count`, `element_count`) takes a count or a number | `kernel.rs` `dispatch` (the count's word; a number's one-word column) |
//! | a new count (compact, expand, hash_gather, scan's total) | appended outputs' counters; scan's `total` |
//! | capacity and overflow (count − capacity) | the kernels count every append; `tests/kernels.rs` (expand, hash_gather past their bound); [`ProcgenError::Overflow`] for nodes that check |
//! | storage buffers ≤ 8 per stage, the table per variant | [`asset::STORAGE_LIMIT`], `Variant::storage_buffers` (`StorageLimit`), `tests/assets.rs` (the table; every `device` option of COUNT / SEGMENTS / ELEMENTS binds exactly its one count word more; the added variants' counts) |
//! | a binding that exists only in some variants (`when`), the `edges_runs` stage trick | `when` alternatives (`;`) in bindings.yaml and in `// @when` lines; a name may be declared again under a disjoint `when` (expand's ELEMENTS=device outputs) |
//! | device.bound (number, live number, stated capacity, measured room) | [`Cook::bound`], [`bound::room_for`] |
//! | device.live | [`Cook::live`], `device.live` in Luau |
//! | device.guard and record/replay, re-record at 4×, `counts().guarded`, `traffic().deferredReads` | [`Cook::guard`], [`Player`], [`Counts`], `clamp_guard.wgsl`, `tests/replay.rs` |
//! | transfer.upload (numbers, lists, `{x,y,z}`, text, typed tables, tables, Columns) | [`transfer`], [`UploadValue`]; text is a [`ColumnType::String`] column whose words index [`Column::text`] |
//! | transfer.readback (columns, text columns, live counts, plain values, tables; a Field with no column refused) | [`Recording::readback`], [`ReadSource`] |
//! | cpu.call: returns checked, ceilingMs over coroutines and tasks but not waits, BufferRef, pure | [`luau::cpu_call`], `luau/prelude.luau` (task.spawn/defer/delay/wait), `tests/luau.rs` |
//! | a Handle in the results is released when the result is | `luau::values::LuaHandle`, `luau::Host::play` (released when the recording goes) |
//! | no op calls another op | `luau/ops.rs` `op_entry` ([`ProcgenError::OpInOp`]) |
//! | `abi.directLimit` counts every buffer binding, `domain_count` included | `asset::Variant::direct_limit`, Luau `abi.directLimit` |
//! | a list recorded over a live number runs again inside its room, records again outside | [`Player::set_number`], [`Counts`] `renumbered` |
//! | cpu.read: digest folds into a live digest, re-cook when it moves | `luau::Host::play` (`digest_recooks`) |
//! | untrusted scripts: source text only, sandbox, a CPU-time ceiling per entry (sleeps charged) and a memory limit, cycles and deep nesting refused | [`luau::Host`], [`luau::limits`], [`luau::values::Walk`], `tests/sandbox.rs`, `tests/limits.rs`, `fuzz/` |
//!
//! Sentence by sentence, with the test that checks each rule: `docs/procgen-conformance.md`
//! (checked by `scripts/check_procgen_conformance.py`).
//!
//! # What this host models, and what it does not
//!
//! The spec names its host system's things; this crate implements the minimal host they need:
//! `asset.resolve` is [`AssetLibrary`] (built-ins under `assets/procgen`, plus directories);
//! `cookrun.counts()` is [`Counts`]; the "frame" is one [`Player::cook`]; a readback answers after
//! the submission completes (the play report names each readback as the point the plan waited), and
//! guard words are read from the previous replay, already complete, so no frame is waited for. Not
//! modelled: Geometry, Part, Texture bindings, Fields (a [`ReadSource::Field`] reads the column it
//! is over; one over no column is refused), the field compiler (`fieldc.*`), `traffic()` beyond
//! `deferredReads` ([`Counts`]), `curves` and component hooks. A recording over a live number
//! (`device.bound { live = true }`) takes a new number inside its room through
//! [`Player::set_number`]; the Luau host runs `cook` only when it records, so its live numbers
//! are the recorded ones. Beyond the ABI the Luau host offers `view.show{...}` (device columns
//! handed to a renderer, [`luau::view`]) and `handle.new(release)` (a Handle a cpu.call result
//! holds, released with the result). Of the kernel table, gather, compact, scan (plain and
//! segmented), jump (rank, min), expand (incl. ELEMENTS=device), hash_gather / hash_hook, reduce
//! (segmented) and scatter's fold pass are built in. Not built: loops, loops_cut, loops_place,
//! edges_runs and intersect_pairs / intersect_cuts / intersect_unify / intersect_retri — the spec
//! (all of `shared/spec`) states only their inert values and binding counts, not what they compute.
//! The designs this crate chose where the spec fixes only the inert values: segments are ascending
//! `starts` (an exclusive scan of lengths), segment `s` spanning `[starts[s], starts[s+1])` clamped
//! to the live count; reduce folds f32 in slot order; scan states per-segment `totals`; scatter
//! folds i32 atomically (add, min, max).

#![warn(missing_docs)]

pub mod asset;
pub mod bound;
pub mod column;
pub mod cook;
pub mod count;
pub mod cpu;
pub mod error;
pub mod kernel;
pub mod luau;
pub mod op;
mod plan;
mod submit;
pub mod transfer;
pub mod wait;

pub use asset::{AssetLibrary, KernelAsset};
pub use bound::{Bounded, Counts, GuardFlag, Player};
pub use column::{Column, ColumnType, LiveCount, Word};
pub use cook::{Cook, Recording, Run};
pub use count::{CountExpr, CountValue};
pub use error::{ProcgenError, Result, ValueError};
pub use kernel::{BindValue, Domain, KernelCall, KernelOutputs, KernelRef, Uniform};
pub use mlua;
pub use op::{Op, Runs};
pub use transfer::{ReadSource, ReadValue, UploadValue, Uploaded};
pub use wait::PlanWait;
