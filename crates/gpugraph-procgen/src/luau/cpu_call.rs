//! cpu.call and cpu.read: a Luau function called with declared return types under a CPU-time
//! ceiling. The ceiling counts the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) from the call
//! until it returns — the function, every coroutine it resumes and every task the host's task
//! library runs meanwhile all run on this thread — and not the time it sleeps waiting for a
//! task or a frame, nor the time the thread waits for a core. Luau's interrupt callback, called
//! at loop back-edges and calls, stops a call that ran past it ([`super::limits`], which also
//! holds the script-wide ceiling that counts the waits).

use mlua::{Function, Lua, MultiValue, Table, Value};

use super::limits::{out_of_memory, SharedMeter};
use super::values::{key_of, known, type_of, BufferRef, LuaColumn};
use crate::error::ProcgenError;

/// The default ceiling (a ceilingMs of 0 or none).
pub const DEFAULT_CEILING_MS: u64 = 5000;

pub use super::limits::{thread_cpu_ns, Ceiling};

/// What one cpu.call asks.
pub struct CallSpec {
    /// The function.
    pub f: Function,
    /// Its arguments.
    pub args: Vec<Value>,
    /// Declared result types.
    pub returns: Vec<String>,
    /// CPU-time ceiling in ms.
    pub ceiling_ms: u64,
    /// Results depend on the arguments alone.
    pub pure: bool,
}

/// Reads a cpu.call / cpu.read table.
pub fn spec(t: &Table, pure_allowed: bool) -> mlua::Result<CallSpec> {
    let f: Function = t
        .get::<Option<Function>>("fn")?
        .ok_or_else(|| mlua::Error::runtime("cpu.call: `fn` must be a function"))?;
    let args: Vec<Value> = match t.get::<Value>("args")? {
        Value::Nil => Vec::new(),
        Value::Table(a) => a.sequence_values::<Value>().collect::<mlua::Result<_>>()?,
        other => vec![other],
    };
    let returns: Vec<String> = match t.get::<Value>("returns")? {
        Value::Nil => Vec::new(),
        Value::Table(r) => r.sequence_values::<String>().collect::<mlua::Result<_>>()?,
        _ => {
            return Err(mlua::Error::runtime(
                "cpu.call: `returns` is a list of type names",
            ))
        }
    };
    let ceiling_ms = match t.get::<Option<f64>>("ceilingMs")? {
        None => DEFAULT_CEILING_MS,
        Some(c) if c <= 0.0 => DEFAULT_CEILING_MS,
        Some(c) => c as u64,
    };
    let pure = t.get::<Option<bool>>("pure")?.unwrap_or(false);
    if pure && !pure_allowed {
        return Err(mlua::Error::runtime("cpu.read takes no `pure`"));
    }
    if !pure_allowed
        && !matches!(
            t.get::<Value>("curves")?,
            Value::Nil | Value::Boolean(false)
        )
    {
        return Err(mlua::Error::runtime("cpu.read takes no `curves`"));
    }
    Ok(CallSpec {
        f,
        args,
        returns,
        ceiling_ms,
        pure,
    })
}

/// The name a function reports for errors.
fn name_of(f: &Function) -> String {
    f.info().name.unwrap_or_else(|| "?".into())
}

/// A Column argument as the BufferRef the function receives (its data does not move).
fn hand_over(lua: &Lua, v: Value) -> mlua::Result<Value> {
    if let Value::UserData(ud) = &v {
        if let Ok(c) = ud.borrow::<LuaColumn>() {
            let r = BufferRef {
                buffer: buffer_id(&c.0.buffer),
                ty: c.0.ty,
                count: c.0.capacity,
                lanes: c.0.lanes,
            };
            return Ok(Value::UserData(lua.create_userdata(r)?));
        }
    }
    Ok(v)
}

/// A stable id of a device buffer (its handle's hash), for BufferRef.buffer.
fn buffer_id(b: &gpugraph_command::wgpu::Buffer) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.hash(&mut h);
    format!("buffer:{:016x}", h.finish())
}

/// Calls `spec` under its ceiling and checks its results.
pub fn call(lua: &Lua, meter: &SharedMeter, spec: &CallSpec) -> Result<Vec<Value>, ProcgenError> {
    let name = name_of(&spec.f);
    let luau = |e: mlua::Error| {
        if out_of_memory(&e) {
            ProcgenError::ScriptMemory {
                during: format!("cpu.call `{name}`"),
                limit_bytes: meter.get().memory,
            }
        } else {
            ProcgenError::Luau {
                message: e.to_string(),
            }
        }
    };
    let run: Function = lua.globals().get("__procgen_run").map_err(luau)?;
    let mut args = MultiValue::new();
    args.push_back(Value::Function(spec.f.clone()));
    for a in &spec.args {
        args.push_back(hand_over(lua, a.clone()).map_err(luau)?);
    }
    let mut m = meter.get();
    let outer = m.call;
    let start = thread_cpu_ns();
    m.call = Some(Ceiling {
        start_ns: start,
        limit_ns: spec.ceiling_ms.saturating_mul(1_000_000),
        tripped: false,
    });
    meter.set(m);
    let result = run.call::<MultiValue>(args);
    let mut m = meter.get();
    let state = m.call;
    m.call = outer;
    meter.set(m);
    let used_ms = thread_cpu_ns().saturating_sub(start) / 1_000_000;
    if state.is_some_and(|s| s.tripped) {
        return Err(ProcgenError::Ceiling {
            call: name,
            ceiling_ms: spec.ceiling_ms,
            used_ms,
        });
    }
    let values: Vec<Value> = result.map_err(luau)?.into_iter().collect();
    check_returns(&name, &spec.returns, &values)?;
    Ok(values)
}

/// Refuses results that are not the declared types (count and kind).
pub fn check_returns(name: &str, returns: &[String], values: &[Value]) -> Result<(), ProcgenError> {
    for (i, want) in returns.iter().enumerate() {
        let got = values.get(i).map_or("nothing", type_of);
        let ok = match want.as_str() {
            "Number" | "String" | "Bool" | "Function" | "Column" | "BufferRef" | "Handle" => {
                got == want
            }
            "List" => got == "List",
            // A procgen type (Geometry, Part, ...): this host models them as tables.
            _ => got == "List",
        };
        if !ok {
            return Err(ProcgenError::ReturnType {
                call: name.into(),
                index: i + 1,
                expected: want.clone(),
                got: got.into(),
            });
        }
    }
    if values.len() > returns.len() {
        return Err(ProcgenError::ReturnType {
            call: name.into(),
            index: returns.len() + 1,
            expected: "nothing (no more declared results)".into(),
            got: type_of(&values[returns.len()]).into(),
        });
    }
    Ok(())
}

/// The key a pure call folds under, when every argument is known at plan time.
pub fn fold_key(spec: &CallSpec) -> Option<String> {
    if !spec.pure || !spec.args.iter().all(known) {
        return None;
    }
    // known() refused cycles and deep nesting already: every key is made.
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|a| key_of("cpu.call argument", a).ok())
        .collect::<Option<_>>()?;
    Some(format!("{:p}({})", spec.f.to_pointer(), args.join(",")))
}
