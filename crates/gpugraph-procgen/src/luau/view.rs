//! `view.show{...}`: the host's display. A script hands the host device Columns and numbers by
//! name for a renderer to draw (`gpugraph procgen run --render`); nothing is read to the CPU and
//! nothing is added to the graph, so it is no op of the ABI. A column keeps its live count, so
//! a renderer can draw exactly the live elements with the count the device holds.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::values::{column, number};
use super::State;
use crate::column::Column;

/// What the last `view.show` of the cook in force handed the host.
#[derive(Clone, Debug, Default)]
pub struct Shown {
    /// Device columns by name (each with the live count it carries, if any).
    pub columns: BTreeMap<String, Column>,
    /// Numbers by name.
    pub numbers: BTreeMap<String, f64>,
}

/// Registers the `view` table: `view.show(t)` keeps every Column and number of `t` by its key,
/// replacing what an earlier call showed; any other value is refused naming its key.
pub(crate) fn register(lua: &Lua, state: &Rc<RefCell<State>>) -> mlua::Result<()> {
    let view = lua.create_table()?;
    let s = state.clone();
    view.set(
        "show",
        lua.create_function(move |_, t: Table| {
            let mut shown = Shown::default();
            for pair in t.pairs::<String, Value>() {
                let (k, v) = pair?;
                if let Some(n) = number(&v) {
                    shown.numbers.insert(k, n);
                } else if let Some(c) = column(&v) {
                    shown.columns.insert(k, c);
                } else {
                    return Err(mlua::Error::runtime(format!(
                        "view.show: `{k}` is a {}; it shows Columns and numbers",
                        v.type_name()
                    )));
                }
            }
            s.borrow_mut().shown = Some(shown);
            Ok(())
        })?,
    )?;
    lua.globals().set("view", view)
}
