//! [`FusedExpression`]: consecutive row-local expressions compiled into ONE shader. Each
//! stage keeps its own type check (and its own cast rounding); a stage that reads an earlier
//! stage's result takes it from registers, so intermediates cost no memory traffic and need
//! no buffer unless they are stored. Vector inputs shared by several stages are loaded once.
//! Results pass between stages through an AND with a run-time all-ones mask, and every float
//! operand inside a stage through an opaque identity (see `wgsl` and `helpers`), so each
//! operation rounds exactly as it does in a shader of its own, on any compiler.
//!
//! Bytes per row: every distinct external input row read once, every stored result written
//! once; one dispatch per chunk for the whole group.

use crate::expr::error::{ExprError, ExprErrorKind};
use crate::expr::types::{Declarations, ValueType};
use crate::expr::wgsl::{self, ShaderLayout, Stage, StageInput};
use crate::expr::CompiledExpression;

/// One stage of a fusion: a compiled row-sized expression and whether its result is written
/// to memory (a result only later stages read can stay in registers).
#[derive(Clone, Debug)]
pub struct FusedStage {
    /// The expression, checked against the declarations its operation sees.
    pub expression: CompiledExpression,
    /// Whether the result is stored (bound as an output of the fused kernel).
    pub stored: bool,
}

/// Several expressions evaluated in order by one shader; see the module docs.
#[derive(Clone, Debug)]
pub struct FusedExpression {
    id: String,
    stages: Vec<FusedStage>,
    decls: Declarations,
    wgsl: String,
    layout: ShaderLayout,
}

/// Fuses `stages` (in evaluation order) into one shader with id `id`. A stage's declared
/// input named like an earlier stage's output reads that result (the latest such stage);
/// other inputs and scalars become the shader's own, shared by name. Fails when a stage is
/// not row-sized, when one name is declared with two types, or when no stage is stored.
pub fn fuse_expressions(id: &str, stages: Vec<FusedStage>) -> Result<FusedExpression, ExprError> {
    let fail = |msg: String| ExprError::new(ExprErrorKind::Declaration, msg, None);
    if !stages.iter().any(|s| s.stored) {
        return Err(fail(format!("fused expression {id} stores no result")));
    }
    let mut shader = Declarations::default();
    let mut wiring: Vec<(Vec<StageInput>, Vec<usize>)> = Vec::with_capacity(stages.len());
    for (j, stage) in stages.iter().enumerate() {
        let e = &stage.expression;
        if !e.is_row_sized() {
            return Err(fail(format!(
                "{} reads no vector input (one constant row); only row-sized expressions fuse",
                e.id()
            )));
        }
        let mut inputs = Vec::new();
        for (name, ty) in &e.declarations().inputs {
            let earlier = stages[..j]
                .iter()
                .rposition(|s| s.expression.output_name() == name);
            inputs.push(match earlier {
                Some(k) => {
                    let produced = stages[k].expression.output_type();
                    if produced != *ty {
                        return Err(fail(format!(
                            "{} reads {name} as {ty} but {} produces {produced}",
                            e.id(),
                            stages[k].expression.id()
                        )));
                    }
                    StageInput::Stage(k)
                }
                None => {
                    StageInput::External(declare(&mut shader.inputs, name, *ty, e.id(), &fail)?)
                }
            });
        }
        let mut scalars = Vec::new();
        for (name, ty) in &e.declarations().scalars {
            scalars.push(declare(&mut shader.scalars, name, *ty, e.id(), &fail)?);
        }
        wiring.push((inputs, scalars));
    }
    let refs: Vec<Stage<'_>> = stages
        .iter()
        .zip(&wiring)
        .map(|(s, (inputs, scalars))| Stage {
            typed: s.expression.typed(),
            decls: s.expression.declarations(),
            inputs,
            scalars,
            stored: s.stored,
            ast: s.expression.ast(),
        })
        .collect();
    let (wgsl, layout) = wgsl::generate_stages(&refs, &shader);
    Ok(FusedExpression {
        id: id.to_string(),
        stages,
        decls: shader,
        wgsl,
        layout,
    })
}

/// Index of `name` in `list`, appended when new; one name cannot carry two types.
fn declare<T: Copy + PartialEq + std::fmt::Display>(
    list: &mut Vec<(String, T)>,
    name: &str,
    ty: T,
    stage: &str,
    fail: &impl Fn(String) -> ExprError,
) -> Result<usize, ExprError> {
    match list.iter().position(|(n, _)| n == name) {
        Some(i) if list[i].1 == ty => Ok(i),
        Some(i) => Err(fail(format!(
            "{stage} declares {name} as {ty} but an earlier stage declares it {}",
            list[i].1
        ))),
        None => {
            list.push((name.to_string(), ty));
            Ok(list.len() - 1)
        }
    }
}

impl FusedExpression {
    /// The fused kernel's id (its node id on the GPU).
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The stages in evaluation order.
    pub fn stages(&self) -> &[FusedStage] {
        &self.stages
    }
    /// The shader's own vector inputs and scalars, in binding order of the kernel.
    pub fn declarations(&self) -> &Declarations {
        &self.decls
    }
    /// Names and types of the stored results, in output binding order.
    pub fn stored_outputs(&self) -> Vec<(String, ValueType)> {
        self.stages
            .iter()
            .filter(|s| s.stored)
            .map(|s| {
                let e = &s.expression;
                (e.output_name().to_string(), e.output_type())
            })
            .collect()
    }
    /// The generated compute shader.
    pub fn wgsl(&self) -> &str {
        &self.wgsl
    }
    /// Which declarations the shader binds, and where their parameters go.
    pub fn layout(&self) -> &ShaderLayout {
        &self.layout
    }
}
