//! Program-tree lowerings in the one [`super::LoweringSet`]: a [`ProgramOp`] is a semantic
//! operation (a type name, named input and output views, attributes) with no command nodes;
//! its [`ProgramLowering`] gives its CPU semantics and its [`Realization`]s in preference
//! order. The program compiler asks the set for the operation's type and takes the first
//! realization whose selector accepts the operation's shape and the backend's
//! capabilities, recording the realization and the selector's reason (plus why the
//! preferred ones were passed over) as the decision.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use gpugraph_command::{CommandGraph, DataView};

use super::BackendCapabilities;
use crate::program::{CpuMemory, PrimitiveNode, ProgramTreeError};

/// An attribute of a [`ProgramOp`].
#[derive(Clone, Debug, PartialEq)]
pub enum Attribute {
    /// An unsigned integer (sizes, lanes, rows per workgroup).
    U32(u32),
    /// A number (shape statistics such as a mean row length).
    F64(f64),
    /// Text (e.g. `realization`: a realization the caller forces).
    Text(String),
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::U32(v) => write!(f, "{v}"),
            Self::F64(v) => write!(f, "{v}"),
            Self::Text(v) => f.write_str(v),
        }
    }
}

/// The attribute that forces a realization by name (the selectors are then not asked).
pub const FORCED: &str = "realization";

/// A semantic program operation: `name` is its type (the registry key); it lists the views
/// it reads and writes by role and its attributes, and never touches a command graph.
#[derive(Clone, Debug)]
pub struct ProgramOp {
    /// Id (unique among siblings).
    pub id: String,
    /// Operation type, e.g. `spmv`, `dot`.
    pub name: String,
    /// Views read, by role.
    pub inputs: Vec<(String, DataView)>,
    /// Views written, by role.
    pub outputs: Vec<(String, DataView)>,
    /// Attributes by name.
    pub attributes: BTreeMap<String, Attribute>,
}

impl ProgramOp {
    /// Operation `id` of type `name`, with nothing bound yet.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            attributes: BTreeMap::new(),
        }
    }

    /// Adds input `role`.
    pub fn input(mut self, role: impl Into<String>, view: DataView) -> Self {
        self.inputs.push((role.into(), view));
        self
    }

    /// Adds output `role`.
    pub fn output(mut self, role: impl Into<String>, view: DataView) -> Self {
        self.outputs.push((role.into(), view));
        self
    }

    /// Sets attribute `key`.
    pub fn attr(mut self, key: impl Into<String>, value: Attribute) -> Self {
        self.attributes.insert(key.into(), value);
        self
    }

    fn missing(&self, what: String) -> ProgramTreeError {
        ProgramTreeError::Operand {
            operation: self.id.clone(),
            operation_type: self.name.clone(),
            what,
        }
    }

    /// The view bound to `role` (inputs first, then outputs).
    pub fn view(&self, role: &str) -> Result<DataView, ProgramTreeError> {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .find(|(r, _)| r == role)
            .map(|(_, v)| *v)
            .ok_or_else(|| self.missing(format!("view '{role}'")))
    }

    /// Attribute `key` as an unsigned integer.
    pub fn u32_attr(&self, key: &str) -> Result<u32, ProgramTreeError> {
        match self.attributes.get(key) {
            Some(Attribute::U32(v)) => Ok(*v),
            _ => Err(self.missing(format!("uint attribute '{key}'"))),
        }
    }

    /// Attribute `key` as a number (an integer attribute converts).
    pub fn f64_attr(&self, key: &str) -> Result<f64, ProgramTreeError> {
        match self.attributes.get(key) {
            Some(Attribute::F64(v)) => Ok(*v),
            Some(Attribute::U32(v)) => Ok(f64::from(*v)),
            _ => Err(self.missing(format!("number attribute '{key}'"))),
        }
    }

    /// Attribute `key` as text, if set.
    pub fn text_attr(&self, key: &str) -> Option<&str> {
        match self.attributes.get(key) {
            Some(Attribute::Text(t)) => Some(t),
            _ => None,
        }
    }
}

/// Decides whether a realization fits an operation: `Ok(why it fits)` or `Err(why not)`.
pub type SelectFn =
    dyn Fn(&ProgramOp, &BackendCapabilities) -> Result<String, String> + Send + Sync;
/// Describes the command nodes of one execution (called once per operation and compile;
/// it may allocate graph transients, and must not add nodes: the compiler adds and may gate
/// them).
pub type RealizeFn = dyn Fn(
        &ProgramOp,
        &mut CommandGraph,
        &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError>
    + Send
    + Sync;
/// The CPU semantics of an operation type over host words.
pub type CpuFn = dyn Fn(&ProgramOp, &mut CpuMemory) -> Result<(), ProgramTreeError> + Send + Sync;

/// One way to realize an operation type.
#[derive(Clone)]
pub struct Realization {
    name: Arc<str>,
    select: Arc<SelectFn>,
    realize: Arc<RealizeFn>,
}

impl fmt::Debug for Realization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Realization")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Realization {
    /// The realization's name (the decision's realization).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its command nodes for `op`.
    pub fn realize(
        &self,
        op: &ProgramOp,
        graph: &mut CommandGraph,
        caps: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        (self.realize)(op, graph, caps)
    }
}

/// An operation type of program trees: CPU semantics plus realizations in preference order.
#[derive(Clone)]
pub struct ProgramLowering {
    operation_type: Arc<str>,
    interpret: Arc<CpuFn>,
    realizations: Vec<Realization>,
}

impl fmt::Debug for ProgramLowering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgramLowering")
            .field("operation_type", &self.operation_type)
            .field("realizations", &self.realizations)
            .finish()
    }
}

/// The realization chosen for one operation and why.
#[derive(Clone, Debug)]
pub struct Selected<'a> {
    /// The realization.
    pub realization: &'a Realization,
    /// Why it was chosen, and why the preferred ones were not.
    pub reason: String,
}

impl ProgramLowering {
    /// Operation type `operation_type` with CPU semantics `interpret` and no realization yet.
    pub fn new(
        operation_type: impl Into<String>,
        interpret: impl Fn(&ProgramOp, &mut CpuMemory) -> Result<(), ProgramTreeError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Self {
            operation_type: Arc::from(operation_type.into()),
            interpret: Arc::new(interpret),
            realizations: Vec::new(),
        }
    }

    /// Appends a realization (earlier ones are preferred).
    pub fn realization(
        mut self,
        name: impl Into<String>,
        select: impl Fn(&ProgramOp, &BackendCapabilities) -> Result<String, String>
            + Send
            + Sync
            + 'static,
        realize: impl Fn(
                &ProgramOp,
                &mut CommandGraph,
                &BackendCapabilities,
            ) -> Result<Vec<PrimitiveNode>, ProgramTreeError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.realizations.push(Realization {
            name: Arc::from(name.into()),
            select: Arc::new(select),
            realize: Arc::new(realize),
        });
        self
    }

    /// The operation type.
    pub fn operation_type(&self) -> &str {
        &self.operation_type
    }

    /// The realization names, in preference order.
    pub fn realization_names(&self) -> Vec<&str> {
        self.realizations.iter().map(|r| r.name()).collect()
    }

    /// Runs the CPU semantics.
    pub fn interpret(
        &self,
        op: &ProgramOp,
        memory: &mut CpuMemory,
    ) -> Result<(), ProgramTreeError> {
        (self.interpret)(op, memory)
    }

    /// The realization for `op` on `caps`: the one named by its [`FORCED`] attribute, else
    /// the first whose selector accepts it.
    pub fn select(
        &self,
        op: &ProgramOp,
        caps: &BackendCapabilities,
    ) -> Result<Selected<'_>, ProgramTreeError> {
        if let Some(name) = op.text_attr(FORCED) {
            return match self.realizations.iter().find(|r| r.name() == name) {
                Some(r) => Ok(Selected {
                    realization: r,
                    reason: format!("forced by the caller ({FORCED} = {name})"),
                }),
                None => Err(ProgramTreeError::NoRealization {
                    operation: op.id.clone(),
                    operation_type: op.name.clone(),
                    reasons: format!(
                        "{FORCED} = {name} is not one of {:?}",
                        self.realization_names()
                    ),
                }),
            };
        }
        let mut passed = Vec::new();
        for r in &self.realizations {
            match (r.select)(op, caps) {
                Ok(why) if passed.is_empty() => {
                    return Ok(Selected {
                        realization: r,
                        reason: why,
                    })
                }
                Ok(why) => {
                    return Ok(Selected {
                        realization: r,
                        reason: format!("{why} (not {})", passed.join("; not ")),
                    })
                }
                Err(why) => passed.push(format!("{}: {why}", r.name())),
            }
        }
        Err(ProgramTreeError::NoRealization {
            operation: op.id.clone(),
            operation_type: op.name.clone(),
            reasons: passed.join("; "),
        })
    }
}
