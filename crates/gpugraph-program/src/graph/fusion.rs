//! Expression fusion for [`super::Graph`]: a run of consecutive built-in expression
//! operations that are row-local ("pure arithmetic") becomes ONE compute shader
//! ([`FusedExpression`]). A result read only by later operations of the same run and not
//! selected as an output stays in registers: no buffer, no write, no re-read. SimpleGraph
//! never fuses (one evaluator pass per operation is its contract).
//!
//! Groups are planned once per compilation (their kernel and pipeline are reused by every
//! run); a run applies a group only when every stage's result and every vector the shader
//! reads have the same chunk lengths, and otherwise lowers its operations one by one (which
//! then reports any mismatch with the operation's own error).

use std::collections::HashMap;
use std::ops::Range;

use crate::expr::{fuse_expressions, ExpressionKernel, FusedStage, ScalarBinding};
use crate::graph::bindings::{RunLayout, Storage};
use crate::graph::error::ProgramError;
use crate::graph::planner::{Plan, PlannedOp};
use crate::lowering::{BackendCapabilities, LowerContext, LoweringDecision};
use crate::lowering::{LoweringSource, Resolved};
use crate::operation::{Access, ExpressionOperation};

/// Consecutive expression operations compiled into one kernel.
pub(crate) struct FusionGroup {
    /// Operation indices in the plan.
    pub ops: Range<usize>,
    /// Per operation: whether its result is written to memory.
    pub stored: Vec<bool>,
    /// Results that never leave registers (value indices): runs that apply the group do not
    /// bind them.
    pub in_registers: Vec<usize>,
    kernel: ExpressionKernel,
    /// Every name the operations' contracts list.
    names: Vec<String>,
}

/// The expression operation behind `op`, when it uses the built-in lowering and produces
/// one row per input row.
fn row_local_expression<'a>(
    plan: &Plan,
    op: &'a PlannedOp,
) -> Option<(&'a ExpressionOperation, crate::expr::CompiledExpression)> {
    if op.source != LoweringSource::BuiltIn {
        return None;
    }
    let e = op.op.downcast_ref::<ExpressionOperation>()?;
    let compiled = e.compiled(|n| plan.value(n).map(|(_, v)| v.spec.clone()))?;
    compiled.is_row_sized().then_some((e, compiled))
}

/// The fusion groups of `plan` (runs of two or more fusible operations).
pub(crate) fn plan_fusion(plan: &Plan) -> Vec<FusionGroup> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < plan.ops.len() {
        let mut stages = Vec::new();
        let mut end = start;
        while let Some(found) = plan
            .ops
            .get(end)
            .and_then(|op| row_local_expression(plan, op))
        {
            stages.push(found);
            end += 1;
        }
        if stages.len() >= 2 {
            if let Some(g) = build_group(plan, start..end, stages) {
                groups.push(g);
            }
        }
        start = end.max(start + 1);
    }
    groups
}

fn build_group(
    plan: &Plan,
    ops: Range<usize>,
    stages: Vec<(&ExpressionOperation, crate::expr::CompiledExpression)>,
) -> Option<FusionGroup> {
    let mut stored = Vec::new();
    let mut in_registers = Vec::new();
    for (op, _) in &stages {
        let (v, _) = plan.value(op.output())?;
        let read_outside = plan.ops.iter().enumerate().any(|(i, o)| {
            !ops.contains(&i)
                && o.uses
                    .iter()
                    .any(|u| u.value == v && u.access != Access::Write)
        });
        let keep = plan.selected.contains(&v) || read_outside;
        if !keep {
            in_registers.push(v);
        }
        stored.push(keep);
    }
    let first = plan.ops[ops.start].id();
    let last = plan.ops[ops.end - 1].id();
    let fused = fuse_expressions(
        &format!("fused[{first}..{last}]"),
        stages
            .into_iter()
            .zip(&stored)
            .map(|((_, expression), &stored)| FusedStage { expression, stored })
            .collect(),
    )
    .ok()?;
    let mut names: Vec<String> = Vec::new();
    for op in &plan.ops[ops.clone()] {
        for n in &op.names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    Some(FusionGroup {
        ops,
        stored,
        in_registers,
        kernel: ExpressionKernel::fused(fused),
        names,
    })
}

/// Chunk lengths of a value's storage in this run (`None` for host scalars).
fn chunks_of(layout: &RunLayout<'_>, v: usize) -> Option<Vec<u64>> {
    match layout.storage[v].as_ref()? {
        Storage::Borrowed(vector) => Some(vector.chunk_lengths()),
        Storage::Allocate { chunks, .. } => Some(chunks.clone()),
        Storage::Host(_) => None,
    }
}

impl FusionGroup {
    /// The fused kernel's id (its node id).
    pub fn id(&self) -> &str {
        self.kernel.id()
    }

    /// Whether this run's storage lets the group run as one shader: every stage result and
    /// every vector the shader reads has the same chunk lengths.
    pub fn applies(&self, plan: &Plan, layout: &RunLayout<'_>) -> bool {
        let fused_inputs = self.kernel.declarations().inputs.iter().map(|(n, _)| n);
        let outputs = plan.ops[self.ops.clone()].iter().filter_map(|op| {
            op.op
                .downcast_ref::<ExpressionOperation>()
                .map(|e| e.output())
        });
        let mut topology: Option<Vec<u64>> = None;
        for name in outputs.chain(fused_inputs.map(String::as_str)) {
            let Some(chunks) = plan.value(name).and_then(|(v, _)| chunks_of(layout, v)) else {
                return false;
            };
            match &topology {
                Some(t) if *t != chunks => return false,
                Some(_) => {}
                None => topology = Some(chunks),
            }
        }
        true
    }

    /// Adds the fused node to `cg` and returns one decision per operation.
    pub fn lower(
        &self,
        plan: &Plan,
        cg: &mut gpugraph_command::CommandGraph,
        resolved: &HashMap<String, Resolved>,
        capabilities: &BackendCapabilities,
    ) -> Result<Vec<LoweringDecision>, ProgramError> {
        let ops = &plan.ops[self.ops.clone()];
        let cx = LowerContext {
            graph: cg,
            operation: ops[0].id(),
            declared: &self.names,
            values: resolved,
            capabilities,
            nodes: Vec::new(),
            realization: None,
        };
        let decls = self.kernel.declarations();
        let inputs = decls
            .inputs
            .iter()
            .map(|(n, _)| cx.resolve_vector(n.as_str()).map(|r| r.view))
            .collect::<Result<Vec<_>, _>>()?;
        let scalars: Vec<ScalarBinding> = decls
            .scalars
            .iter()
            .map(|(n, _)| cx.resolve_scalar(n.as_str()).map(|s| s.binding))
            .collect::<Result<Vec<_>, _>>()?;
        let mut outputs = Vec::new();
        let mut stored_names = Vec::new();
        for (op, &stored) in ops.iter().zip(&self.stored) {
            if let (true, Some(e)) = (stored, op.op.downcast_ref::<ExpressionOperation>()) {
                outputs.push(cx.resolve_vector(e.output())?.view);
                stored_names.push(e.output().to_string());
            }
        }
        let node = self.kernel.id().to_string();
        self.kernel
            .add_fused_to_graph(cx.graph, &node, &inputs, &scalars, &outputs)
            .map_err(|e| ProgramError::Lowering {
                operation: ops[0].id().to_string(),
                operation_type: ops[0].op.operation_type().to_string(),
                source: Box::new(e),
            })?;
        let ids: Vec<&str> = ops.iter().map(|o| o.id()).collect();
        let in_registers: Vec<&str> = self
            .in_registers
            .iter()
            .map(|&v| plan.values[v].name.as_str())
            .collect();
        let reason = format!(
            "consecutive row-local expressions [{}] share one shader and one pass over the rows; stored: [{}]; kept in registers (not selected, read only inside the group): [{}]",
            ids.join(", "),
            stored_names.join(", "),
            in_registers.join(", ")
        );
        Ok(ops
            .iter()
            .enumerate()
            .map(|(i, op)| LoweringDecision {
                operation: op.id().to_string(),
                operation_type: op.op.operation_type().to_string(),
                source: op.source,
                realization: format!("fused expression kernel {node}"),
                reason: reason.clone(),
                nodes: vec![node.clone()],
                node_count: usize::from(i == 0),
            })
            .collect())
    }
}
