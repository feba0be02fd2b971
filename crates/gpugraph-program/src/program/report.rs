//! [`ProgramReport`]: `compilation.lowering` (one decision per tree node and per primitive
//! choice), the capabilities, and a printable tree (also JSON) an inspector can render.

use std::fmt;

use serde::Serialize;

use super::{join, Program};
use crate::lowering::{BackendCapabilities, LoweringDecision, LoweringReport};

/// What a program compilation decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgramReport {
    /// Root id.
    pub program: String,
    /// The capabilities the compiler advertised.
    pub capabilities: BackendCapabilities,
    /// Every decision, keyed by tree path (`pcg/iterate`) or `path#aspect` for a primitive's
    /// own choices (explicit primitives only; a semantic operation's realization is its own
    /// decision, e.g. `pcg/iterate/step/spmv-dot`).
    pub lowering: LoweringReport,
    /// The tree with its decisions.
    pub tree: TreeReport,
}

impl ProgramReport {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The decision at `path`.
    pub fn decision(&self, path: &str) -> Option<&LoweringDecision> {
        self.lowering.decision(path)
    }
}

/// A primitive's choice in the tree report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeChoice {
    /// `spmv`, `reduction`, ...
    pub aspect: String,
    /// The realization.
    pub realization: String,
    /// Why.
    pub reason: String,
}

/// One tree node with its lowering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeReport {
    /// Id.
    pub id: String,
    /// Tree path.
    pub path: String,
    /// `operation`, `composite`, `conditional`, `loop`.
    pub kind: String,
    /// An operation's type.
    pub operation_type: Option<String>,
    /// A loop's bound.
    pub max_iterations: Option<u32>,
    /// The lowering.
    pub lowering: String,
    /// Why.
    pub reason: String,
    /// Command nodes emitted for it in total (gates for loops/conditionals).
    pub node_count: usize,
    /// An operation's realization choices.
    pub choices: Vec<TreeChoice>,
    /// Children (`then` before `otherwise`).
    pub children: Vec<TreeReport>,
}

impl TreeReport {
    pub(crate) fn build(p: &Program, prefix: &str, decisions: &[LoweringDecision]) -> Self {
        let path = join(prefix, p.id());
        let d = decisions.iter().find(|d| d.operation == path);
        let (kind, operation_type, max_iterations, children) = match p {
            Program::Operation(op) => (
                "operation",
                Some(op.operation_type().to_string()),
                None,
                vec![],
            ),
            Program::Semantic(op) => ("operation", Some(op.name.clone()), None, vec![]),
            Program::Composite { children, .. } => {
                ("composite", None, None, children.iter().collect())
            }
            Program::Conditional {
                then, otherwise, ..
            } => {
                let mut c: Vec<&Program> = vec![then];
                c.extend(otherwise.as_deref());
                ("conditional", None, None, c)
            }
            Program::Loop {
                body,
                max_iterations,
                ..
            } => ("loop", None, Some(*max_iterations), vec![&**body]),
        };
        let aspect_prefix = format!("{path}#");
        Self {
            id: p.id().to_string(),
            path: path.clone(),
            kind: kind.into(),
            operation_type,
            max_iterations,
            lowering: d.map_or("not emitted".into(), |d| d.realization.clone()),
            reason: d.map_or("the enclosing loop runs 0 iterations".into(), |d| {
                d.reason.clone()
            }),
            node_count: d.map_or(0, |d| d.node_count),
            choices: decisions
                .iter()
                .filter_map(|d| {
                    d.operation
                        .strip_prefix(&aspect_prefix)
                        .map(|a| TreeChoice {
                            aspect: a.to_string(),
                            realization: d.realization.clone(),
                            reason: d.reason.clone(),
                        })
                })
                .collect(),
            children: children
                .into_iter()
                .map(|c| Self::build(c, &path, decisions))
                .collect(),
        }
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        let what = match (&self.operation_type, self.max_iterations) {
            (Some(t), _) => format!("{} ({t})", self.id),
            (None, Some(n)) => format!("{} ({}, ≤ {n} iterations)", self.id, self.kind),
            _ => format!("{} ({})", self.id, self.kind),
        };
        writeln!(f, "{pad}{what}")?;
        writeln!(
            f,
            "{pad}  lowering: {} [{} nodes]",
            self.lowering, self.node_count
        )?;
        writeln!(f, "{pad}  reason: {}", self.reason)?;
        for c in &self.choices {
            writeln!(f, "{pad}  {}: {}", c.aspect, c.realization)?;
            writeln!(f, "{pad}    reason: {}", c.reason)?;
        }
        for c in &self.children {
            c.write(f, depth + 1)?;
        }
        Ok(())
    }
}

impl fmt::Display for TreeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, 0)
    }
}

impl fmt::Display for ProgramReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.capabilities;
        writeln!(
            f,
            "backend {} ({}): gpu-resident conditionals {}, native loops {}, child graphs {}, subgroups {} (sizes {}..{}), indirect validation {}",
            c.backend,
            c.device.adapter,
            c.gpu_resident_conditionals,
            c.native_loops,
            c.child_graphs,
            c.device.subgroups,
            c.device.subgroup_min_size,
            c.device.subgroup_max_size,
            if c.device.indirect_validation { "on" } else { "off" }
        )?;
        write!(f, "{}", self.tree)
    }
}
