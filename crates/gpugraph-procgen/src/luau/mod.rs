//! The Luau front-end: a node graph written as a script, cooked frame after frame.
//!
//! A script defines `cook(frame, inputs)`, which calls the ops (`asset.resolve`,
//! `device.kernel`, `device.bound`, `device.live`, `device.guard`, `transfer.upload`,
//! `transfer.readback`, `cpu.call`, `cpu.read`) and returns a `transfer.readback{...}`; and
//! optionally `inputs(frame)`, a record of this frame's values (transfer.upload's forms). The
//! host records `cook` once into a [`Player`] recording and replays it, writing each frame's
//! inputs into the recorded columns; it records again when a guard was run past, when the
//! inputs change shape, or when a cpu.read digest moves.

pub mod cpu;
mod ops;
pub mod values;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use gpugraph_command::wgpu;
use mlua::{Function, Lua, Table, Value};

use crate::bound::{Counts, Player};
use crate::column::Column;
use crate::cook::Cook;
use crate::error::{ProcgenError, Result};
use crate::transfer::{encode, ReadSource, ReadValue, UploadValue, Uploaded};
use crate::AssetLibrary;
use values::{LuaColumn, LuaReadback};

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

/// A Luau state with the procgen ops.
pub struct Host {
    lua: Lua,
    state: Rc<RefCell<State>>,
    ceiling: Rc<Cell<Option<cpu::Ceiling>>>,
    device: wgpu::Device,
    queue: wgpu::Queue,
}

/// The text of a Luau error, or the typed error an op refused with.
fn refused(state: &Rc<RefCell<State>>, e: mlua::Error) -> ProcgenError {
    state
        .borrow_mut()
        .error
        .take()
        .unwrap_or(ProcgenError::Luau {
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
    /// A host on `device` resolving assets from `lib`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, lib: AssetLibrary) -> Result<Self> {
        let lua = Lua::new();
        let state = Rc::new(RefCell::new(State {
            cook: None,
            lib,
            bounds: 0,
            digests: Vec::new(),
            folded: HashMap::new(),
            folded_hits: 0,
            error: None,
        }));
        let ceiling = Rc::new(Cell::new(None));
        let luau = |e: mlua::Error| ProcgenError::Luau {
            message: e.to_string(),
        };
        cpu::install(&lua, ceiling.clone());
        ops::register(&lua, &state, &ceiling).map_err(luau)?;
        lua.load(PRELUDE)
            .set_name("=procgen-prelude")
            .exec()
            .map_err(luau)?;
        Ok(Self {
            lua,
            state,
            ceiling,
            device: device.clone(),
            queue: queue.clone(),
        })
    }

    /// The Luau state (tests define functions in it).
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Runs `source` (named `name` in errors): it defines `cook` and optionally `inputs`.
    pub fn load(&self, name: &str, source: &str) -> Result<()> {
        self.lua
            .load(source)
            .set_name(format!("@{name}"))
            .exec()
            .map_err(|e| refused(&self.state, e))
    }

    /// cpu.call from Rust: `fn` is a global function of the script.
    pub fn call(&self, spec: &Table) -> Result<Vec<Value>> {
        let s = cpu::spec(spec, true).map_err(|e| ProcgenError::Luau {
            message: e.to_string(),
        })?;
        cpu::call(&self.lua, &self.ceiling, &s)
    }

    fn frame_inputs(&self, frame: u64) -> Result<Vec<(String, UploadValue)>> {
        let f: Option<Function> = self
            .lua
            .globals()
            .get("inputs")
            .map_err(|e| refused(&self.state, e))?;
        let Some(f) = f else { return Ok(Vec::new()) };
        let t: Table = f.call(frame).map_err(|e| refused(&self.state, e))?;
        let mut out = Vec::new();
        for pair in t.pairs::<String, Value>() {
            let (k, v) = pair.map_err(|e| refused(&self.state, e))?;
            let u = values::upload_value(&k, &v).map_err(|e| refused(&self.state, e))?;
            flatten_values(&k, &u, &mut out);
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Whether a cpu.read digest moved since the recording (each digest is called once).
    fn digest_moved(&self) -> Result<bool> {
        let digests = self.state.borrow().digests.clone();
        for (f, args, before) in digests {
            let v: Value = f
                .call(mlua::MultiValue::from_iter(args))
                .map_err(|e| refused(&self.state, e))?;
            if values::key_of(&v) != before {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Cooks the script's graph for `frames` frames and reports.
    pub fn play(&self, frames: u64) -> Result<PlayReport> {
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
            if player.outputs().is_some() && self.digest_moved()? {
                player.invalidate();
                report.digest_recooks += 1;
            }
            let recordings = player.counts.recordings;
            let waits_before = player.waits.len();
            let mut build = |cook: &mut Cook, frame: u64| -> Result<FrameOut> {
                self.build(cook, frame, &cook_fn, &inputs)
            };
            let mut update = |queue: &wgpu::Queue, out: &FrameOut, _frame: u64| -> Result<bool> {
                if out.inputs.len() != inputs.len() {
                    return Ok(false);
                }
                for ((key, col), (k2, value)) in out.inputs.iter().zip(&inputs) {
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
            player.cook(frame, &mut build, &mut update)?;
            let recorded = player.counts.recordings > recordings;
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
        }
        let result: mlua::Result<Value> = cook_fn.call((frame, table));
        let back = self
            .state
            .borrow_mut()
            .cook
            .take()
            .expect("the cook stays with the host during cook()");
        *cook = back;
        let v = result.map_err(|e| refused(&self.state, e))?;
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
