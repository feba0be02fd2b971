//! The Luau front-end: a node graph written as a script, cooked frame after frame.
//!
//! A script defines `cook(frame, inputs)`, which calls the ops (`asset.resolve`,
//! `device.kernel`, `device.bound`, `device.live`, `device.guard`, `transfer.upload`,
//! `transfer.readback`, `cpu.call`, `cpu.read`) and returns a `transfer.readback{...}`; and
//! optionally `inputs(frame)`, a record of this frame's values (transfer.upload's forms). No
//! op may be called from a function an op runs (cpu.call's `fn`, a digest, a guard's detail).
//! Beside the ops: `count.min/max`, `abi.directLimit(kernel, specialize)`,
//! `handle.new(release)` (a Handle, released with the cpu.call result that holds it) and
//! `view.show{...}` (device columns for the host's renderer, [`view`]). The
//! host records `cook` once into a [`Player`] recording and replays it, writing each frame's
//! inputs into the recorded columns; it records again when a guard was run past, when the
//! inputs change shape, or when a cpu.read digest moves.

// Not `cpu`: that module name is kept for CPU oracles, which production code never imports
// (`scripts/import_circles.py`).
pub mod cpu_call;
pub mod limits;
mod ops;
pub mod values;
pub mod view;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use gpugraph_command::wgpu;
use limits::{Meter, SharedMeter};
pub use limits::{ScriptLimits, DEFAULT_SCRIPT_CPU_TIME, DEFAULT_SCRIPT_MEMORY};
use mlua::{ChunkMode, Function, Lua, Table, Value};

use crate::bound::{Counts, Player};
use crate::column::Column;
use crate::cook::Cook;
use crate::error::{ProcgenError, Result};
use crate::transfer::{encode, ReadSource, ReadValue, UploadValue, Uploaded};
use crate::AssetLibrary;
use values::{LuaColumn, LuaHandle, LuaReadback};

const PRELUDE: &str = include_str!("prelude.luau");

/// What ops share with the host between calls.
pub(crate) struct State {
    pub(crate) cook: Option<Cook>,
    pub(crate) lib: AssetLibrary,
    pub(crate) bounds: usize,
    pub(crate) digests: Vec<(Function, Vec<Value>, String)>,
    pub(crate) folded: HashMap<String, Vec<Value>>,
    pub(crate) folded_hits: u64,
    /// The typed error an op refused with (Luau carries only its text).
    pub(crate) error: Option<ProcgenError>,
    /// What the host is running (`cook(frame 3)`), for the limit errors.
    pub(crate) during: String,
    /// The state's memory limit, for the error that names it.
    pub(crate) memory: usize,
    /// What the cook in force showed (`view.show`).
    pub(crate) shown: Option<view::Shown>,
    /// The op running a function of the script now (no op calls another op).
    pub(crate) inside: Option<&'static str>,
    /// Handles cpu.call results of the cook being built hold (released with their results).
    pub(crate) handles: Vec<values::LuaHandle>,
}

/// One frame of the play report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FrameReport {
    /// The frame.
    pub frame: u64,
    /// Whether this cook recorded (else it replayed).
    pub recorded: bool,
    /// Where this frame's plan waited on the device, in order.
    pub waited: Vec<String>,
    /// What the readback answered.
    pub values: BTreeMap<String, ReadValue>,
}

/// The play report of `gpugraph procgen run`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlayReport {
    /// Frame by frame.
    pub frames: Vec<FrameReport>,
    /// recordings, replays, guarded, measured (cookrun.counts()).
    pub counts: Counts,
    /// Recordings made because a cpu.read digest moved.
    pub digest_recooks: u64,
    /// Pure calls answered from the plan's constants instead of being called.
    pub folded_calls: u64,
    /// The rooms bounds were given: (frame, bound, room).
    pub rooms: Vec<(u64, String, u64)>,
}

/// A Luau state with the procgen ops, sandboxed: scripts load as source text only, the
/// globals and built-in libraries are read-only, and `loadstring`, `getfenv`/`setfenv`,
/// `require` (and `load`, `loadfile`, `dofile`, absent from Luau) are not there;
/// `collectgarbage` answers only `"count"`. Every entry into the script runs under its
/// [`ScriptLimits`].
pub struct Host {
    lua: Lua,
    state: Rc<RefCell<State>>,
    meter: SharedMeter,
    limits: ScriptLimits,
    device: wgpu::Device,
    queue: wgpu::Queue,
}

/// The globals a script does not get: loaders of other code (text or bytecode, from a string
/// or a file) and the environment functions that would reach past the sandbox.
pub const CLOSED_GLOBALS: [&str; 7] = [
    "load",
    "loadstring",
    "loadfile",
    "dofile",
    "require",
    "getfenv",
    "setfenv",
];

/// The typed error a Luau error stands for: running out of memory, a value the host could not
/// convert, the typed error an op refused with, else Luau's text.
fn refused(state: &Rc<RefCell<State>>, e: mlua::Error) -> ProcgenError {
    let mut s = state.borrow_mut();
    if limits::out_of_memory(&e) {
        return ProcgenError::ScriptMemory {
            during: s.during.clone(),
            limit_bytes: s.memory,
        };
    }
    if let Some(v) = values::value_error(&e) {
        return v.into();
    }
    s.error.take().unwrap_or(ProcgenError::Luau {
        message: e.to_string(),
    })
}

struct FrameOut {
    readback: BTreeMap<String, ReadSource>,
    inputs: Vec<(String, Column)>,
}

fn flatten_inputs(prefix: &str, u: &Uploaded, out: &mut Vec<(String, Column)>) {
    match u {
        Uploaded::Column(c) => out.push((prefix.into(), c.clone())),
        Uploaded::Table(t) => t
            .iter()
            .for_each(|(k, v)| flatten_inputs(&format!("{prefix}.{k}"), v, out)),
    }
}

fn flatten_values(prefix: &str, v: &UploadValue, out: &mut Vec<(String, UploadValue)>) {
    match v {
        UploadValue::Table(t) => t
            .iter()
            .for_each(|(k, v)| flatten_values(&format!("{prefix}.{k}"), v, out)),
        other => out.push((prefix.into(), other.clone())),
    }
}

impl Host {
    /// A host on `device` resolving assets from `lib`, with the default [`ScriptLimits`].
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, lib: AssetLibrary) -> Result<Self> {
        Self::with_limits(device, queue, lib, ScriptLimits::default())
    }

    /// A host on `device` resolving assets from `lib` whose scripts run under `limits`.
    pub fn with_limits(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        lib: AssetLibrary,
        limits: ScriptLimits,
    ) -> Result<Self> {
        let lua = Lua::new();
        let state = Rc::new(RefCell::new(State {
            cook: None,
            lib,
            bounds: 0,
            digests: Vec::new(),
            folded: HashMap::new(),
            folded_hits: 0,
            error: None,
            during: String::new(),
            memory: limits.memory,
            shown: None,
            inside: None,
            handles: Vec::new(),
        }));
        let meter = Rc::new(Cell::new(Meter::with_memory(limits.memory)));
        let luau = |e: mlua::Error| ProcgenError::Luau {
            message: e.to_string(),
        };
        limits::install(&lua, meter.clone());
        ops::register(&lua, &state, &meter).map_err(luau)?;
        view::register(&lua, &state).map_err(luau)?;
        lua.load(PRELUDE)
            .set_name("=procgen-prelude")
            .set_mode(ChunkMode::Text)
            .exec()
            .map_err(luau)?;
        // The prelude's tables (task) become read-only with the rest: a script cannot replace
        // task.wait to dodge the ceiling.
        let g = lua.globals();
        for name in CLOSED_GLOBALS {
            g.raw_set(name, Value::Nil).map_err(luau)?;
        }
        lua.sandbox(true).map_err(luau)?;
        lua.set_memory_limit(limits.memory).map_err(luau)?;
        Ok(Self {
            lua,
            state,
            meter,
            limits,
            device: device.clone(),
            queue: queue.clone(),
        })
    }

    /// The Luau state (tests define functions in it).
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// What the cook in force showed through `view.show` (the last call of its recording):
    /// device columns a renderer draws after [`Host::play`], as the last frame left them.
    pub fn shown(&self) -> Option<view::Shown> {
        self.state.borrow().shown.clone()
    }

    /// The limits the host's scripts run under.
    pub fn limits(&self) -> ScriptLimits {
        self.limits
    }

    /// Runs `f`, an entry into the script (`during` names it in errors), under the script's
    /// CPU-time ceiling; an entry inside another shares the outer one's.
    fn entry<R>(&self, during: impl Into<String>, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let during = during.into();
        let armed = limits::arm(&self.meter, self.limits.cpu_time);
        if armed {
            let mut s = self.state.borrow_mut();
            s.error = None;
            s.during = during.clone();
        }
        let r = f();
        if !armed {
            return r;
        }
        let budget = limits::disarm(&self.meter).expect("armed above");
        if budget.tripped {
            return Err(ProcgenError::ScriptTimeout {
                during,
                limit_ms: self.limits.cpu_time.as_millis().min(u64::MAX as u128) as u64,
                used_ms: budget.used_ns / 1_000_000,
            });
        }
        r
    }

    /// Runs `source` (named `name` in errors): it defines `cook` and optionally `inputs`.
    /// Only source text loads: bytes that start as Luau bytecode does (below 0x09) are
    /// refused with [`ProcgenError::Bytecode`] (the VM trusts bytecode it is given).
    pub fn load(&self, name: &str, source: impl AsRef<[u8]>) -> Result<()> {
        let source = source.as_ref();
        if let Some(&first_byte) = source.first().filter(|b| **b < b'\t') {
            return Err(ProcgenError::Bytecode {
                script: name.into(),
                first_byte,
            });
        }
        self.entry(format!("loading `{name}`"), || {
            self.lua
                .load(source)
                .set_name(format!("@{name}"))
                .set_mode(ChunkMode::Text)
                .exec()
                .map_err(|e| refused(&self.state, e))
        })
    }

    /// cpu.call from Rust: `fn` is a global function of the script.
    pub fn call(&self, spec: &Table) -> Result<Vec<Value>> {
        let s = cpu_call::spec(spec, true).map_err(|e| ProcgenError::Luau {
            message: e.to_string(),
        })?;
        let _inside = ops::Inside::enter(&self.state, "cpu.call");
        self.entry("cpu.call", || cpu_call::call(&self.lua, &self.meter, &s))
    }

    /// Releases `handles` (each once) under the script's ceiling; the first failure is named.
    fn release(&self, handles: Vec<LuaHandle>) -> Result<()> {
        if handles.is_empty() {
            return Ok(());
        }
        self.entry("releasing cpu.call results", || {
            let mut first = None;
            for h in handles {
                if let Err(e) = h.release() {
                    first.get_or_insert(ProcgenError::Release {
                        message: e.to_string(),
                    });
                }
            }
            first.map_or(Ok(()), Err)
        })
    }

    fn frame_inputs(&self, frame: u64) -> Result<Vec<(String, UploadValue)>> {
        let f: Option<Function> = self
            .lua
            .globals()
            .get("inputs")
            .map_err(|e| refused(&self.state, e))?;
        let Some(f) = f else { return Ok(Vec::new()) };
        self.entry(format!("inputs(frame {frame})"), || {
            let t: Table = f.call(frame).map_err(|e| refused(&self.state, e))?;
            let mut out = Vec::new();
            for pair in t.pairs::<String, Value>() {
                let (k, v) = pair.map_err(|e| refused(&self.state, e))?;
                let u = values::upload_value(&k, &v).map_err(|e| refused(&self.state, e))?;
                flatten_values(&k, &u, &mut out);
            }
            out.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(out)
        })
    }

    /// Whether a cpu.read digest moved since the recording (each digest is called once).
    fn digest_moved(&self, frame: u64) -> Result<bool> {
        let digests = self.state.borrow().digests.clone();
        for (f, args, before) in digests {
            let moved = self.entry(format!("a cpu.read digest (frame {frame})"), || {
                let v: Value = f
                    .call(mlua::MultiValue::from_iter(args))
                    .map_err(|e| refused(&self.state, e))?;
                Ok(values::key_of("cpu.read digest", &v)? != before)
            })?;
            if moved {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Cooks the script's graph for `frames` frames and reports. A Handle a cpu.call returned
    /// is released when its result is: when the recording that made the call is let go (a
    /// re-record, or the end of play), and at once for a build that was not kept.
    pub fn play(&self, frames: u64) -> Result<PlayReport> {
        let mut held = Vec::new();
        let r = self.play_holding(frames, &mut held);
        let released = self.release(held);
        let report = r?;
        released?;
        Ok(report)
    }

    fn play_holding(&self, frames: u64, held: &mut Vec<LuaHandle>) -> Result<PlayReport> {
        let cook_fn: Function = self
            .lua
            .globals()
            .get::<Option<Function>>("cook")
            .map_err(|e| refused(&self.state, e))?
            .ok_or_else(|| ProcgenError::Luau {
                message: "the script defines no `cook(frame, inputs)` function".into(),
            })?;
        let mut player: Player<FrameOut> = Player::new(&self.device, &self.queue);
        let mut report = PlayReport {
            frames: Vec::new(),
            counts: Counts::default(),
            digest_recooks: 0,
            folded_calls: 0,
            rooms: Vec::new(),
        };
        for frame in 0..frames {
            let inputs = self.frame_inputs(frame)?;
            if player.outputs().is_some() && self.digest_moved(frame)? {
                player.invalidate();
                report.digest_recooks += 1;
            }
            let recordings = player.counts.recordings;
            let waits_before = player.waits.len();
            // The handles of each build this cook makes, in order: the last one's recording is
            // the one in force when this cook recorded.
            let made: RefCell<Vec<Vec<LuaHandle>>> = RefCell::new(Vec::new());
            let mut build = |cook: &mut Cook, frame: u64| -> Result<FrameOut> {
                let out = self.build(cook, frame, &cook_fn, &inputs);
                let handles = std::mem::take(&mut self.state.borrow_mut().handles);
                made.borrow_mut().push(handles);
                out
            };
            let mut update = |queue: &wgpu::Queue, out: &FrameOut, _frame: u64| -> Result<bool> {
                if out.inputs.len() != inputs.len() {
                    return Ok(false);
                }
                for ((key, col), (k2, value)) in out.inputs.iter().zip(&inputs) {
                    if let UploadValue::Texts(v) = value {
                        // Same key and values list: the words move, the dictionary may not.
                        let (dict, words) = crate::transfer::text_words(v);
                        if key != k2
                            || col.text.as_deref() != Some(&dict)
                            || words.len() as u64 != col.words()
                        {
                            return Ok(false);
                        }
                        crate::transfer::rewrite(queue, col, &words);
                        continue;
                    }
                    let (ty, vals) = match value {
                        UploadValue::Number(n) => (crate::ColumnType::Float, vec![*n]),
                        UploadValue::Numbers(v) => (crate::ColumnType::Float, v.clone()),
                        UploadValue::Typed(t, v) => (*t, v.clone()),
                        UploadValue::Vectors(v) => (col.ty, v.concat()),
                        _ => return Ok(false),
                    };
                    let words = encode(k2, ty, &vals)?;
                    if key != k2 || ty != col.ty || words.len() as u64 != col.words() {
                        return Ok(false);
                    }
                    crate::transfer::rewrite(queue, col, &words);
                }
                Ok(true)
            };
            let cooked = player.cook(frame, &mut build, &mut update).map(|_| ());
            let recorded = player.counts.recordings > recordings;
            let mut made = made.take();
            if cooked.is_ok() && recorded {
                let current = made.pop().unwrap_or_default();
                made.push(std::mem::replace(held, current));
            }
            self.release(made.into_iter().flatten().collect())?;
            cooked?;
            let prefix = format!("frame {frame}: ");
            let mut waited: Vec<String> = player.waits[waits_before..]
                .iter()
                .map(|w| w.strip_prefix(&prefix).unwrap_or(w).to_string())
                .collect();
            let out = player.outputs().expect("cooked above");
            let rec = player.recording().expect("cooked above");
            let mut values = BTreeMap::new();
            for (k, src) in &out.readback {
                values.insert(k.clone(), rec.readback(k, src)?);
            }
            waited.push(format!(
                "readback {{{}}}",
                out.readback.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
            report.frames.push(FrameReport {
                frame,
                recorded,
                waited,
                values,
            });
        }
        report.counts = player.counts.clone();
        report.rooms = player.room_log.clone();
        report.folded_calls = self.state.borrow().folded_hits;
        Ok(report)
    }

    fn build(
        &self,
        cook: &mut Cook,
        frame: u64,
        cook_fn: &Function,
        inputs: &[(String, UploadValue)],
    ) -> Result<FrameOut> {
        let placeholder = Cook::on(&self.device, &self.queue, "procgen-placeholder");
        let mut mine = std::mem::replace(cook, placeholder);
        let mut cols = Vec::new();
        let table = self
            .lua
            .create_table()
            .map_err(|e| refused(&self.state, e))?;
        for (k, v) in inputs {
            let up = mine.upload(k, v)?;
            flatten_inputs(k, &up, &mut cols);
        }
        for (k, c) in &cols {
            set_path(&self.lua, &table, k, LuaColumn(c.clone()))
                .map_err(|e| refused(&self.state, e))?;
        }
        {
            let mut s = self.state.borrow_mut();
            s.cook = Some(mine);
            s.bounds = 0;
            s.digests.clear();
            s.error = None;
            s.shown = None;
            s.inside = None;
            s.handles.clear();
        }
        let result = self.entry(format!("cook(frame {frame})"), || {
            cook_fn
                .call::<Value>((frame, table))
                .map_err(|e| refused(&self.state, e))
        });
        let back = self
            .state
            .borrow_mut()
            .cook
            .take()
            .expect("the cook stays with the host during cook()");
        *cook = back;
        let v = result?;
        let readback = match &v {
            Value::UserData(ud) => ud.borrow::<LuaReadback>().ok().map(|r| r.0.clone()),
            _ => None,
        }
        .ok_or_else(|| ProcgenError::Luau {
            message: format!(
                "cook(frame) must return transfer.readback{{...}}, returned a {}",
                v.type_name()
            ),
        })?;
        Ok(FrameOut {
            readback,
            inputs: cols,
        })
    }
}

/// Sets `t.a.b = v` for the dotted path `a.b`.
fn set_path(lua: &Lua, t: &Table, path: &str, v: LuaColumn) -> mlua::Result<()> {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut cur = t.clone();
    for p in parts {
        let next: Option<Table> = cur.get(p)?;
        let next = match next {
            Some(n) => n,
            None => {
                let n = lua.create_table()?;
                cur.set(p, n.clone())?;
                n
            }
        };
        cur = next;
    }
    cur.set(last, v)
}
