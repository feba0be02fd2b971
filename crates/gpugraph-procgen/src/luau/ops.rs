//! The ops as Luau globals: `asset.resolve`, `device.*`, `transfer.*`, `cpu.*`, `count.*`.
//! A refusal keeps its typed [`ProcgenError`] in the host state and raises its text in Luau.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::cpu_call;
use super::limits::{self, SharedMeter};
use super::values::{
    self, column, number, to_count, LuaColumn, LuaCount, LuaHandle, LuaKernel, LuaReadback,
};
use super::State;
use crate::bound::{Bounded, GuardFlag};
use crate::count::{CountExpr, CountValue};
use crate::error::ProcgenError;
use crate::kernel::{BindValue, Domain, KernelCall, KernelRef};
use crate::transfer::{ReadSource, Uploaded};

type S = Rc<RefCell<State>>;

/// Keeps `e` for the host and raises its text.
fn raise(state: &S, e: ProcgenError) -> mlua::Error {
    let msg = e.to_string();
    state.borrow_mut().error = Some(e);
    mlua::Error::runtime(msg)
}

/// Refuses `op` while another op runs a function of the script: no op calls another op.
fn op_entry(state: &S, op: &'static str) -> mlua::Result<()> {
    let inside = state.borrow().inside;
    match inside {
        Some(inside) => Err(raise(state, ProcgenError::OpInOp { op, inside })),
        None => Ok(()),
    }
}

/// While alive, the ops are inside `op` (which is running a function of the script).
pub(crate) struct Inside<'a> {
    state: &'a S,
    before: Option<&'static str>,
}

impl<'a> Inside<'a> {
    pub(crate) fn enter(state: &'a S, op: &'static str) -> Self {
        let before = state.borrow_mut().inside.replace(op);
        Self { state, before }
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.state.borrow_mut().inside = self.before;
    }
}

/// Runs `f` on the cook in progress.
fn with_cook<R>(
    state: &S,
    f: impl FnOnce(&mut crate::Cook) -> Result<R, ProcgenError>,
) -> mlua::Result<R> {
    let r = {
        let mut s = state.borrow_mut();
        let Some(cook) = s.cook.as_mut() else {
            return Err(mlua::Error::runtime(
                "device and transfer ops run inside cook(frame, inputs)",
            ));
        };
        f(cook)
    };
    r.map_err(|e| raise(state, e))
}

fn domain(v: &Value) -> mlua::Result<Domain> {
    if let Some(n) = number(v) {
        if n < 0.0 || n.fract() != 0.0 {
            return Err(mlua::Error::runtime(format!(
                "domain {n} is not a whole number of elements"
            )));
        }
        return Ok(Domain::Number(n as u64));
    }
    match v {
        Value::UserData(ud) if ud.is::<LuaColumn>() => {
            Ok(Domain::Column(ud.borrow::<LuaColumn>()?.0.clone()))
        }
        // Planned by device.kernel, which names itself as the node a planning wait is for.
        Value::UserData(ud) => Ok(Domain::Count(to_count(ud)?)),
        Value::Table(t) => {
            let count = column(&t.get("count")?).ok_or_else(|| {
                mlua::Error::runtime(
                    "domain { count = <one-word Column>, capacity = <Number> }: count is no Column",
                )
            })?;
            let capacity: f64 = t.get("capacity")?;
            Ok(Domain::Live(crate::LiveCount {
                word: count.buffer,
                capacity: capacity as u64,
            }))
        }
        other => Err(mlua::Error::runtime(format!(
            "domain takes a Number, a Column or a live count, got {}",
            other.type_name()
        ))),
    }
}

fn bind_value(name: &str, v: &Value) -> mlua::Result<BindValue> {
    if let Some(n) = number(v) {
        return Ok(BindValue::Number(n as u64));
    }
    if let Some(c) = column(v) {
        return Ok(BindValue::Column(c));
    }
    match v {
        Value::UserData(ud) => Ok(BindValue::Live(to_count(ud)?)),
        Value::Table(t) => {
            if let Value::UserData(ud) = t.get::<Value>("live")? {
                return Ok(BindValue::Live(to_count(&ud)?));
            }
            let mut cols = BTreeMap::new();
            for pair in t.pairs::<String, Value>() {
                let (k, v) = pair?;
                let c = column(&v).ok_or_else(|| {
                    mlua::Error::runtime(format!("bind `{name}`: `{k}` is not a Column"))
                })?;
                cols.insert(k, c);
            }
            Ok(BindValue::Columns(cols))
        }
        other => Err(mlua::Error::runtime(format!(
            "bind `{name}`: a {} binds nothing",
            other.type_name()
        ))),
    }
}

fn string_map(t: &Option<Table>) -> mlua::Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    if let Some(t) = t {
        for pair in t.pairs::<String, Value>() {
            let (k, v) = pair?;
            out.insert(k, v);
        }
    }
    Ok(out)
}

fn kernel_op(lua: &Lua, state: &S, t: Table) -> mlua::Result<Table> {
    op_entry(state, "device.kernel")?;
    let kernel = match t.get::<Value>("kernel")? {
        Value::UserData(ud) if ud.is::<LuaKernel>() => {
            KernelRef::Asset(ud.borrow::<LuaKernel>()?.0.clone())
        }
        Value::String(s) => KernelRef::Name(s.to_str()?.to_string()),
        other => {
            return Err(mlua::Error::runtime(format!(
                "device.kernel: `kernel` is a {}",
                other.type_name()
            )))
        }
    };
    let dom = domain(&t.get("domain")?)?;
    let name: Option<String> = t.get("name")?;
    let mut call = KernelCall::default();
    for (k, v) in string_map(&t.get("bind")?)? {
        call.bind.insert(k.clone(), bind_value(&k, &v)?);
    }
    for (k, v) in string_map(&t.get("uniforms")?)? {
        call.uniforms.insert(k.clone(), values::uniform(&k, &v)?);
    }
    for (k, v) in string_map(&t.get("step")?)? {
        if let Some(n) = number(&v) {
            call.step.insert(k, n);
        }
    }
    for (k, v) in string_map(&t.get("specialize")?)? {
        let s = match v {
            Value::String(s) => s.to_str()?.to_string(),
            other => number(&other).map_or_else(|| format!("{other:?}"), |n| format!("{n}")),
        };
        call.specialize.insert(k, s);
    }
    for (k, v) in string_map(&t.get("columns")?)? {
        if let Some(c) = column(&v) {
            call.columns.insert(k, c);
        }
    }
    call.name = name.clone();
    let out = with_cook(state, |c| c.kernel(&kernel, dom, &call))?;
    let res = lua.create_table()?;
    for (k, c) in out.columns {
        res.set(k, LuaColumn(c))?;
    }
    // A count is named by the node that made it (`name`, else the dispatch node's id), so a
    // planning wait over it says whose count it read.
    let node = name.unwrap_or_else(|| out.node.clone());
    for (k, l) in out.counts {
        let named = CountExpr::Named(format!("{node}.{k}_count"), Box::new(CountExpr::Count(l)));
        res.set(format!("{k}_count"), LuaCount(named))?;
    }
    Ok(res)
}

/// The most a number of elements may be: above 2^53 an f64 no longer holds every whole number.
const MAX_ELEMENTS: f64 = 9_007_199_254_740_992.0;

/// A bound's number of elements; anything but a whole number in 0..=2^53 is refused by name
/// (a plain cast would make -5 and NaN 0 and 1.5 one).
fn elements(state: &S, bound: &str, field: &'static str, n: f64) -> mlua::Result<u64> {
    if (0.0..=MAX_ELEMENTS).contains(&n) && n.fract() == 0.0 {
        return Ok(n as u64);
    }
    Err(raise(
        state,
        ProcgenError::BoundValue {
            bound: bound.into(),
            field,
            value: n,
        },
    ))
}

fn bound_op(lua: &Lua, state: &S, t: Table) -> mlua::Result<Value> {
    op_entry(state, "device.bound")?;
    let name = match t.get::<Option<String>>("name")? {
        Some(n) => n,
        None => {
            let mut s = state.borrow_mut();
            s.bounds += 1;
            format!("bound{}", s.bounds)
        }
    };
    let value = t.get::<Value>("value")?;
    let expr = match &value {
        Value::UserData(ud) => to_count(ud)?,
        v => {
            let n = number(v)
                .ok_or_else(|| mlua::Error::runtime("device.bound: `value` is no count"))?;
            CountExpr::Number(elements(state, &name, "value", n)?)
        }
    };
    let capacity = match t.get::<Option<f64>>("capacity")? {
        Some(c) => Some(elements(state, &name, "capacity", c)?),
        None => None,
    };
    let live = t.get::<Option<bool>>("live")?.unwrap_or(false);
    Ok(
        match with_cook(state, |c| c.bound(&name, &expr, capacity, live))? {
            Bounded::Known(n) => Value::Number(n as f64),
            Bounded::Live(l) => {
                Value::UserData(lua.create_userdata(LuaCount(CountExpr::Count(l)))?)
            }
        },
    )
}

fn cpu_op(lua: &Lua, state: &S, meter: &SharedMeter, t: Table, read: bool) -> mlua::Result<Table> {
    let op = if read { "cpu.read" } else { "cpu.call" };
    op_entry(state, op)?;
    let spec = cpu_call::spec(&t, !read)?;
    let key = cpu_call::fold_key(&spec);
    if let Some(k) = &key {
        let hit = state.borrow().folded.get(k).cloned();
        if let Some(values) = hit {
            state.borrow_mut().folded_hits += 1;
            return lua.create_sequence_from(values);
        }
    }
    let values = {
        let _inside = Inside::enter(state, op);
        cpu_call::call(lua, meter, &spec).map_err(|e| match e {
            // An op inside the function refused with a typed error: keep it for the host.
            ProcgenError::Luau { message } if state.borrow().error.is_some() => {
                mlua::Error::runtime(message)
            }
            other => raise(state, other),
        })?
    };
    // A Handle in the results is released when the result is: the cook holds it until its
    // recording is let go, and a result holding one is never folded into later cooks.
    let handles: Vec<LuaHandle> = values
        .iter()
        .filter_map(|v| match v {
            Value::UserData(ud) => ud.borrow::<LuaHandle>().ok().map(|h| h.clone()),
            _ => None,
        })
        .collect();
    if let Some(k) = key.filter(|_| handles.is_empty()) {
        state.borrow_mut().folded.insert(k, values.clone());
    }
    state.borrow_mut().handles.extend(handles);
    if read {
        let digest: mlua::Function = t
            .get::<Option<mlua::Function>>("digest")?
            .ok_or_else(|| mlua::Error::runtime("cpu.read: `digest` must be a function"))?;
        let d: Value = {
            let _inside = Inside::enter(state, op);
            digest.call(mlua::MultiValue::from_iter(spec.args.clone()))?
        };
        let key = values::key_of("cpu.read digest", &d).map_err(|e| raise(state, e.into()))?;
        state
            .borrow_mut()
            .digests
            .push((digest, spec.args.clone(), key));
    }
    lua.create_sequence_from(values)
}

fn uploaded(lua: &Lua, u: Uploaded) -> mlua::Result<Value> {
    Ok(match u {
        Uploaded::Column(c) => Value::UserData(lua.create_userdata(LuaColumn(c))?),
        Uploaded::Table(t) => {
            let out = lua.create_table()?;
            for (k, v) in t {
                out.set(k, uploaded(lua, v)?)?;
            }
            Value::Table(out)
        }
    })
}

/// Registers the op tables as globals.
pub(crate) fn register(lua: &Lua, state: &S, meter: &SharedMeter) -> mlua::Result<()> {
    let g = lua.globals();

    let asset = lua.create_table()?;
    let s = state.clone();
    asset.set(
        "resolve",
        lua.create_function(move |_, (id, kind): (String, String)| {
            let r = s.borrow().lib.resolve(&id, &kind);
            r.map(LuaKernel).map_err(|e| raise(&s, e))
        })?,
    )?;
    g.set("asset", asset)?;

    let device = lua.create_table()?;
    let s = state.clone();
    device.set(
        "kernel",
        lua.create_function(move |lua, t: Table| kernel_op(lua, &s, t))?,
    )?;
    let s = state.clone();
    device.set(
        "bound",
        lua.create_function(move |lua, t: Table| bound_op(lua, &s, t))?,
    )?;
    let s = state.clone();
    device.set(
        "live",
        lua.create_function(move |_, t: Table| {
            op_entry(&s, "device.live")?;
            let values = column(&t.get("values")?)
                .ok_or_else(|| mlua::Error::runtime("device.live: `values` is no Column"))?;
            let count = match t.get::<Value>("count")? {
                Value::UserData(ud) => to_count(&ud)?,
                _ => return Err(mlua::Error::runtime("device.live: `count` is no count")),
            };
            let l = match with_cook(&s, |c| c.count_at(&count, "device.live"))? {
                CountValue::Live(l) if l.capacity == values::UNSTATED => crate::LiveCount {
                    capacity: values.capacity,
                    ..l
                },
                CountValue::Live(l) => l,
                CountValue::Known(n) => {
                    let word = with_cook(&s, |c| {
                        Ok(
                            c.upload_count("live", crate::cook::u32_count("live count", n)?)
                                .buffer,
                        )
                    })?;
                    crate::LiveCount {
                        word,
                        capacity: values.capacity,
                    }
                }
            };
            Ok(LuaColumn(values.with_live(l)))
        })?,
    )?;
    let s = state.clone();
    device.set(
        "guard",
        lua.create_function(move |_, t: Table| {
            op_entry(&s, "device.guard")?;
            let value: Value = t.get("value")?;
            let why: String = t
                .get::<Option<String>>("why")?
                .unwrap_or_else(|| "guard".into());
            let flag = match t.get::<Value>("flag")? {
                Value::Boolean(b) => GuardFlag::Number(u32::from(b)),
                v => match (number(&v), column(&v)) {
                    (Some(n), _) => GuardFlag::Number(n as u32),
                    (None, Some(c)) => GuardFlag::Column(c),
                    _ => {
                        return Err(mlua::Error::runtime(
                            "device.guard: `flag` is a number or a one-word Column",
                        ))
                    }
                },
            };
            if let (GuardFlag::Number(f), Some(detail)) =
                (&flag, t.get::<Option<mlua::Function>>("detail")?)
            {
                if *f != 0 {
                    let msg: String = {
                        let _inside = Inside::enter(&s, "device.guard");
                        detail.call(())?
                    };
                    return Err(raise(&s, ProcgenError::Guard { why: msg, flag: *f }));
                }
            }
            with_cook(&s, |c| c.guard(value, flag, &why))
        })?,
    )?;
    g.set("device", device)?;

    let transfer = lua.create_table()?;
    let s = state.clone();
    transfer.set(
        "upload",
        lua.create_function(move |lua, t: Table| {
            op_entry(&s, "transfer.upload")?;
            let vals: Table = t.get("values")?;
            let out = lua.create_table()?;
            for pair in vals.pairs::<String, Value>() {
                let (k, v) = pair?;
                let u = values::upload_value(&k, &v)?;
                let up = with_cook(&s, |c| c.upload(&k, &u))?;
                out.set(k, uploaded(lua, up)?)?;
            }
            Ok(out)
        })?,
    )?;
    let s = state.clone();
    transfer.set(
        "readback",
        lua.create_function(move |_, t: Table| {
            op_entry(&s, "transfer.readback")?;
            let cols: Table = t.get("columns")?;
            let mut out = BTreeMap::new();
            for pair in cols.pairs::<String, Value>() {
                let (k, v) = pair?;
                let mut counts = |e: CountExpr| -> mlua::Result<ReadSource> {
                    let need = format!("transfer.readback `{k}`");
                    Ok(match with_cook(&s, |c| c.count_at(&e, &need))? {
                        CountValue::Known(n) => ReadSource::Number(n as f64),
                        CountValue::Live(l) => ReadSource::Count(l),
                    })
                };
                out.insert(k.clone(), values::read_source(&k, &v, &mut counts)?);
            }
            Ok(LuaReadback(out))
        })?,
    )?;
    g.set("transfer", transfer)?;

    let cpu_t = lua.create_table()?;
    let (s, c) = (state.clone(), meter.clone());
    cpu_t.set(
        "call",
        lua.create_function(move |lua, t: Table| cpu_op(lua, &s, &c, t, false))?,
    )?;
    let (s, c) = (state.clone(), meter.clone());
    cpu_t.set(
        "read",
        lua.create_function(move |lua, t: Table| cpu_op(lua, &s, &c, t, true))?,
    )?;
    g.set("cpu", cpu_t)?;

    let count = lua.create_table()?;
    count.set(
        "min",
        lua.create_function(|_, (a, b): (Value, Value)| {
            Ok(LuaCount(CountExpr::Min(
                Box::new(operand(&a)?),
                Box::new(operand(&b)?),
            )))
        })?,
    )?;
    count.set(
        "max",
        lua.create_function(|_, (a, b): (Value, Value)| {
            Ok(LuaCount(CountExpr::Max(
                Box::new(operand(&a)?),
                Box::new(operand(&b)?),
            )))
        })?,
    )?;
    g.set("count", count)?;

    // abi.directLimit(kernel, specialize?): the direct columns a variant could still take.
    let abi = lua.create_table()?;
    let s = state.clone();
    abi.set(
        "directLimit",
        lua.create_function(move |_, (k, spec): (mlua::AnyUserData, Option<Table>)| {
            let asset = k.borrow::<LuaKernel>()?.0.clone();
            let mut sp = crate::asset::variant::Specialization::new();
            for (name, v) in string_map(&spec)? {
                let v = match v {
                    Value::String(v) => v.to_str()?.to_string(),
                    other => {
                        number(&other).map_or_else(|| format!("{other:?}"), |n| format!("{n}"))
                    }
                };
                sp.insert(name, v);
            }
            let variant = asset.variant(&sp).map_err(|e| raise(&s, e))?;
            Ok(variant.direct_limit())
        })?,
    )?;
    g.set("abi", abi)?;

    let handle = lua.create_table()?;
    handle.set(
        "new",
        lua.create_function(|_, release: mlua::Function| Ok(LuaHandle::new(release)))?,
    )?;
    g.set("handle", handle)?;

    // The thread's CPU seconds (what a ceiling counts), for scripts that pace their own work.
    g.set(
        "cpu_clock",
        lua.create_function(|_, ()| Ok(cpu_call::thread_cpu_ns() as f64 / 1e9))?,
    )?;
    let now0 = std::time::Instant::now();
    g.set(
        "__procgen_now",
        lua.create_function(move |_, ()| Ok(now0.elapsed().as_secs_f64()))?,
    )?;
    // The task library's waits, charged to the script's ceiling.
    let m = meter.clone();
    g.set(
        "__procgen_sleep",
        lua.create_function(move |_, s: f64| limits::sleep(&m, s))?,
    )?;
    Ok(())
}

fn operand(v: &Value) -> mlua::Result<CountExpr> {
    match v {
        Value::UserData(ud) => to_count(ud),
        v => number(v)
            .filter(|n| *n >= 0.0 && n.fract() == 0.0)
            .map(|n| CountExpr::Number(n as u64))
            .ok_or_else(|| mlua::Error::runtime("count arithmetic takes counts and whole numbers")),
    }
}
