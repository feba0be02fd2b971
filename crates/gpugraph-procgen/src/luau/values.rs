//! Procgen values as Luau userdata (Column, live count, kernel reference, readback request,
//! BufferRef) and the conversions of Luau values into the ops' Rust inputs.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::ffi::c_void;

use mlua::{AnyUserData, MetaMethod, Table, UserData, UserDataFields, UserDataMethods, Value};

use crate::column::{Column, ColumnType, LiveCount};
use crate::count::CountExpr;
use crate::error::ValueError;
use crate::kernel::Uniform;
use crate::transfer::{ReadSource, UploadValue};
use crate::KernelAsset;

/// A device Column in Luau.
#[derive(Clone)]
pub struct LuaColumn(pub Column);
/// A count (live or arithmetic over live counts) in Luau.
#[derive(Clone)]
pub struct LuaCount(pub CountExpr);
/// A kernel reference `asset.resolve` answered.
#[derive(Clone)]
pub struct LuaKernel(pub Arc<KernelAsset>);
/// A transfer.readback request, answered after the cook runs.
#[derive(Clone)]
pub struct LuaReadback(pub BTreeMap<String, ReadSource>);
/// A device Column as cpu.call hands it to a function: its data does not move.
#[derive(Clone)]
pub struct BufferRef {
    /// A stable id of the device buffer within the run.
    pub buffer: String,
    /// The column type.
    pub ty: ColumnType,
    /// Elements (the capacity; a live count stays on the device).
    pub count: u64,
    /// Words per element.
    pub lanes: u32,
}

/// A Handle (`handle.new(release)`): something a cpu.call result holds that must be let go.
/// `h:release()` calls `release` once (later calls do nothing); `h.released` says whether it
/// was. A cpu.call that returns one hands it to the cook, which releases it when the result is
/// released: when the recording that made the call is let go.
#[derive(Clone)]
pub struct LuaHandle(pub std::rc::Rc<HandleState>);

/// A Handle's release function and whether it ran.
pub struct HandleState {
    release: std::cell::RefCell<Option<mlua::Function>>,
}

impl LuaHandle {
    /// A handle whose release calls `release`.
    pub fn new(release: mlua::Function) -> Self {
        Self(std::rc::Rc::new(HandleState {
            release: std::cell::RefCell::new(Some(release)),
        }))
    }

    /// Calls the release function, the first time only.
    pub fn release(&self) -> mlua::Result<()> {
        let f = self.0.release.borrow_mut().take();
        match f {
            Some(f) => f.call(()),
            None => Ok(()),
        }
    }

    /// Whether it was released.
    pub fn released(&self) -> bool {
        self.0.release.borrow().is_none()
    }
}

impl UserData for LuaHandle {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("released", |_, this| Ok(this.released()));
    }
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("release", |_, this, ()| this.release());
    }
}

/// A capacity a raw count column states nothing about: the most a u32 word holds.
pub const UNSTATED: u64 = u32::MAX as u64;

impl UserData for LuaColumn {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("count", |_, this| {
            Ok(match &this.0.live {
                Some(l) => LuaCount(CountExpr::Count(l.clone())),
                None => LuaCount(CountExpr::Number(this.0.capacity)),
            })
        });
        f.add_field_method_get("_capacity", |_, this| Ok(this.0.capacity));
        f.add_field_method_get("type", |_, this| Ok(this.0.ty.name()));
    }
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("element", |_, this, ()| Ok(this.0.element().wgsl()));
        m.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("Column<{} x{}>", this.0.ty.name(), this.0.capacity))
        });
    }
}

fn count_operand(v: &Value) -> mlua::Result<CountExpr> {
    match v {
        Value::Integer(i) if *i >= 0 => Ok(CountExpr::Number(*i as u64)),
        Value::Number(n) if *n >= 0.0 && n.fract() == 0.0 => Ok(CountExpr::Number(*n as u64)),
        Value::UserData(ud) => to_count(ud),
        other => Err(mlua::Error::runtime(format!(
            "count arithmetic takes counts and whole numbers, got {}",
            other.type_name()
        ))),
    }
}

/// A count from a userdata: a count, or a one-word column (its capacity unstated).
pub fn to_count(ud: &AnyUserData) -> mlua::Result<CountExpr> {
    if let Ok(c) = ud.borrow::<LuaCount>() {
        return Ok(c.0.clone());
    }
    if let Ok(c) = ud.borrow::<LuaColumn>() {
        return Ok(CountExpr::Count(match &c.0.live {
            Some(l) => l.clone(),
            None => LiveCount {
                word: c.0.buffer.clone(),
                capacity: UNSTATED,
            },
        }));
    }
    Err(mlua::Error::runtime(
        "expected a count or a one-word Column",
    ))
}

impl UserData for LuaCount {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("capacity", |_, this| {
            Ok(match this.0.unnamed() {
                CountExpr::Count(l) => Some(l.capacity),
                CountExpr::Number(n) => Some(*n),
                _ => None,
            })
        });
    }
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        type Op = fn(Box<CountExpr>, Box<CountExpr>) -> CountExpr;
        let ops: [(MetaMethod, Op); 3] = [
            (MetaMethod::Add, CountExpr::Add),
            (MetaMethod::Mul, CountExpr::Mul),
            (MetaMethod::Sub, CountExpr::Sub),
        ];
        for (mm, op) in ops {
            m.add_meta_function(mm, move |_, (a, b): (Value, Value)| {
                Ok(LuaCount(op(
                    Box::new(count_operand(&a)?),
                    Box::new(count_operand(&b)?),
                )))
            });
        }
        m.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("Count<{}>", this.0))
        });
    }
}

impl UserData for LuaKernel {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("computeShader<{}>", this.0.identity))
        });
    }
}

impl UserData for LuaReadback {}

impl UserData for BufferRef {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("buffer", |_, this| Ok(this.buffer.clone()));
        f.add_field_method_get("type", |_, this| Ok(this.ty.name()));
        f.add_field_method_get("count", |_, this| Ok(this.count));
        f.add_field_method_get("lanes", |_, this| Ok(this.lanes));
        f.add_field_method_get("element", |_, this| Ok(this.ty.word().wgsl()));
    }
}

/// The most levels of nested tables a conversion walks (deeper is refused by name: each level
/// is a Rust stack frame).
pub const MAX_DEPTH: usize = 64;

/// The tables on the path a conversion is walking, outermost first, with their key paths:
/// a table met again on its own path is a cycle, and the path is at most [`MAX_DEPTH`] long.
#[derive(Default)]
pub struct Walk {
    what: &'static str,
    path: Vec<(*const c_void, String)>,
}

impl Walk {
    /// A walk for errors naming `what` (`upload`, `readback`, `digest`, ...).
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            path: Vec::new(),
        }
    }

    /// Enters `t` at key path `key`; refuses a table already on the path and a path too deep.
    pub fn enter(&mut self, t: &Table, key: &str) -> Result<(), ValueError> {
        let p = t.to_pointer();
        if let Some((_, back)) = self.path.iter().find(|(q, _)| *q == p) {
            return Err(ValueError::Cycle {
                what: self.what,
                path: key.into(),
                back: back.clone(),
            });
        }
        if self.path.len() >= MAX_DEPTH {
            return Err(ValueError::TooDeep {
                what: self.what,
                path: key.into(),
                limit: MAX_DEPTH,
            });
        }
        self.path.push((p, key.into()));
        Ok(())
    }

    /// Leaves the table entered last.
    pub fn leave(&mut self) {
        self.path.pop();
    }
}

/// A [`ValueError`] carried through Luau (the host answers it typed).
fn refuse(e: ValueError) -> mlua::Error {
    mlua::Error::external(e)
}

/// The [`ValueError`] an error carries, if any (through callbacks and contexts).
pub fn value_error(e: &mlua::Error) -> Option<ValueError> {
    match e {
        mlua::Error::ExternalError(x) => x.downcast_ref::<ValueError>().cloned(),
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            value_error(cause)
        }
        _ => None,
    }
}

/// A number, if `v` is one.
pub fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// A column, if `v` is one.
pub fn column(v: &Value) -> Option<Column> {
    match v {
        Value::UserData(ud) => ud.borrow::<LuaColumn>().ok().map(|c| c.0.clone()),
        _ => None,
    }
}

/// A uniform's value: a number, a Bool, or a Vec (`{x=…, y=…}` or a list).
pub fn uniform(name: &str, v: &Value) -> mlua::Result<Uniform> {
    if let Some(n) = number(v) {
        return Ok(Uniform::Number(n));
    }
    match v {
        Value::Boolean(b) => Ok(Uniform::Bool(*b)),
        Value::Table(t) => {
            let mut lanes = Vec::new();
            for (i, k) in ["x", "y", "z", "w"].iter().enumerate() {
                let named: Value = t.get(*k)?;
                let listed: Value = t.get(i + 1)?;
                match number(&named).or_else(|| number(&listed)) {
                    Some(n) => lanes.push(n),
                    None => break,
                }
            }
            if lanes.is_empty() {
                return Err(mlua::Error::runtime(format!(
                    "uniform `{name}`: a Vec needs x (and y, z, w)"
                )));
            }
            Ok(Uniform::Vec(lanes))
        }
        other => Err(mlua::Error::runtime(format!(
            "uniform `{name}` takes a Number, a Bool or a Vec, got {}",
            other.type_name()
        ))),
    }
}

/// The text values of a list, refusing an item that is no text by key and position.
fn texts(key: &str, items: impl Iterator<Item = mlua::Result<Value>>) -> mlua::Result<Vec<String>> {
    items
        .enumerate()
        .map(|(i, item)| match item? {
            Value::String(s) => Ok(s.to_str()?.to_string()),
            other => Err(mlua::Error::runtime(format!(
                "upload `{key}`: item {} of a text list is a {}",
                i + 1,
                other.type_name()
            ))),
        })
        .collect()
}

/// transfer.upload's value for `key`; a table holding itself, or nested past [`MAX_DEPTH`],
/// is refused with a [`ValueError`] naming its key path.
pub fn upload_value(key: &str, v: &Value) -> mlua::Result<UploadValue> {
    upload_at(key, v, &mut Walk::new("upload"))
}

fn upload_at(key: &str, v: &Value, walk: &mut Walk) -> mlua::Result<UploadValue> {
    if let Some(n) = number(v) {
        return Ok(UploadValue::Number(n));
    }
    if let Some(c) = column(v) {
        return Ok(UploadValue::Column(c));
    }
    let Value::Table(t) = v else {
        return Err(mlua::Error::runtime(format!(
            "upload `{key}`: takes numbers, lists, {{x,y,z}} lists, typed tables or Columns, got {}",
            v.type_name()
        )));
    };
    if let Value::String(ty) = t.get::<Value>("type")? {
        let ty = ty.to_str()?.to_string();
        if ty == "String" {
            let values: Table = t.get("values")?;
            return texts(key, values.sequence_values::<Value>()).map(UploadValue::Texts);
        }
        let Some(ct) = ColumnType::from_name(&ty) else {
            return Err(mlua::Error::runtime(format!(
                "upload `{key}`: type `{ty}` is none of Float, Int, UInt, Vec2, Vec3, Vec4, Color, String"
            )));
        };
        let values: Table = t.get("values")?;
        let mut flat = Vec::new();
        for item in values.sequence_values::<Value>() {
            let item = item?;
            match (number(&item), &item) {
                (Some(n), _) => flat.push(n),
                (None, Value::Table(vt)) => {
                    for k in ["x", "y", "z", "w"].iter().take(ct.lanes() as usize) {
                        flat.push(number(&vt.get::<Value>(*k)?).unwrap_or(0.0));
                    }
                }
                _ => {
                    return Err(mlua::Error::runtime(format!(
                        "upload `{key}`: values must be numbers or vectors"
                    )))
                }
            }
        }
        return Ok(UploadValue::Typed(ct, flat));
    }
    if t.raw_len() > 0 {
        let first: Value = t.get(1)?;
        if number(&first).is_some() {
            let mut out = Vec::new();
            for item in t.sequence_values::<Value>() {
                let item = item?;
                out.push(number(&item).ok_or_else(|| {
                    mlua::Error::runtime(format!(
                        "upload `{key}`: a list of numbers holds a {}",
                        item.type_name()
                    ))
                })?);
            }
            return Ok(UploadValue::Numbers(out));
        }
        if let Value::Table(_) = first {
            let mut out = Vec::new();
            for item in t.sequence_values::<Table>() {
                let item = item?;
                let mut lanes = Vec::new();
                for k in ["x", "y", "z", "w"] {
                    match number(&item.get::<Value>(k)?) {
                        Some(n) => lanes.push(n),
                        None => break,
                    }
                }
                out.push(lanes);
            }
            return Ok(UploadValue::Vectors(out));
        }
        if let Value::String(_) = first {
            return texts(key, t.sequence_values::<Value>()).map(UploadValue::Texts);
        }
        return Err(mlua::Error::runtime(format!(
            "upload `{key}`: a list of {} (take numbers, {{x,y,z}} vectors or text)",
            first.type_name()
        )));
    }
    walk.enter(t, key).map_err(refuse)?;
    let mut table = BTreeMap::new();
    for pair in t.pairs::<String, Value>() {
        let (k, v) = pair?;
        table.insert(k.clone(), upload_at(&format!("{key}.{k}"), &v, walk)?);
    }
    walk.leave();
    Ok(UploadValue::Table(table))
}

/// transfer.readback's source for `key` (counts stay expressions until the cook plans them);
/// a table holding itself, or nested past [`MAX_DEPTH`], is refused with a [`ValueError`]
/// naming its key path.
pub fn read_source(
    key: &str,
    v: &Value,
    counts: &mut dyn FnMut(CountExpr) -> mlua::Result<ReadSource>,
) -> mlua::Result<ReadSource> {
    read_at(key, v, counts, &mut Walk::new("readback"))
}

fn read_at(
    key: &str,
    v: &Value,
    counts: &mut dyn FnMut(CountExpr) -> mlua::Result<ReadSource>,
    walk: &mut Walk,
) -> mlua::Result<ReadSource> {
    if let Some(n) = number(v) {
        return Ok(ReadSource::Number(n));
    }
    match v {
        Value::Boolean(b) => Ok(ReadSource::Bool(*b)),
        Value::String(s) => Ok(ReadSource::Text(s.to_str()?.to_string())),
        Value::UserData(ud) => {
            if let Ok(c) = ud.borrow::<LuaColumn>() {
                return Ok(ReadSource::Column(c.0.clone()));
            }
            counts(to_count(ud)?)
        }
        Value::Table(t) => {
            walk.enter(t, key).map_err(refuse)?;
            let mut out = BTreeMap::new();
            for pair in t.pairs::<String, Value>() {
                let (k, v) = pair?;
                out.insert(k.clone(), read_at(&format!("{key}.{k}"), &v, counts, walk)?);
            }
            walk.leave();
            Ok(ReadSource::Table(out))
        }
        other => Err(mlua::Error::runtime(format!(
            "readback `{key}`: cannot read a {} back",
            other.type_name()
        ))),
    }
}

/// The Luau type name of `v` as cpu.call's `returns` names types.
pub fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) | Value::Number(_) => "Number",
        Value::String(_) => "String",
        Value::Boolean(_) => "Bool",
        Value::Function(_) => "Function",
        Value::Table(_) => "List",
        Value::UserData(ud) if ud.is::<LuaColumn>() => "Column",
        Value::UserData(ud) if ud.is::<BufferRef>() => "BufferRef",
        Value::UserData(_) => "Handle",
        Value::Nil => "nil",
        _ => "other",
    }
}

/// Whether `v` is plain data the plan knows (no device value, no function; a table holding
/// itself or nested past [`MAX_DEPTH`] is not).
pub fn known(v: &Value) -> bool {
    known_at(v, &mut Walk::new("known"))
}

fn known_at(v: &Value, walk: &mut Walk) -> bool {
    match v {
        Value::Nil
        | Value::Boolean(_)
        | Value::Integer(_)
        | Value::Number(_)
        | Value::String(_) => true,
        Value::Table(t) => {
            if walk.enter(t, "").is_err() {
                return false;
            }
            let all = t.pairs::<Value, Value>().all(|p| {
                p.map(|(k, v)| known_at(&k, walk) && known_at(&v, walk))
                    .unwrap_or(false)
            });
            walk.leave();
            all
        }
        _ => false,
    }
}

/// A stable text of known data (the key of a folded pure call and of a digest); `what` names
/// the value in the [`ValueError`] a table holding itself, or nested past [`MAX_DEPTH`], gets.
pub fn key_of(what: &'static str, v: &Value) -> Result<String, ValueError> {
    key_at(v, "", &mut Walk::new(what))
}

fn key_at(v: &Value, path: &str, walk: &mut Walk) -> Result<String, ValueError> {
    match v {
        Value::Table(t) => {
            walk.enter(t, if path.is_empty() { "(value)" } else { path })?;
            let mut items = Vec::new();
            for (k, v) in t.pairs::<Value, Value>().filter_map(Result::ok) {
                let label = match &k {
                    Value::String(s) => s.to_string_lossy(),
                    other => number(other).map_or_else(|| "[key]".into(), |n| format!("[{n}]")),
                };
                let at = if path.is_empty() {
                    label
                } else {
                    format!("{path}.{label}")
                };
                let k = key_at(&k, &format!("{at} (a key)"), walk)?;
                let v = key_at(&v, &at, walk)?;
                items.push((k, v));
            }
            walk.leave();
            items.sort();
            Ok(format!(
                "{{{}}}",
                items
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ))
        }
        Value::String(s) => Ok(format!("{:?}", s.to_string_lossy())),
        other => Ok(number(other).map_or_else(|| format!("{other:?}"), |n| format!("{n}"))),
    }
}
