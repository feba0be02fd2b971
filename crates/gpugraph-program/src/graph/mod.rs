//! Declaration graphs: [`Graph`] (fused: one command graph, one encoder, one submission per
//! run) and [`SimpleGraph`] (one evaluator pass per operation, the portable path).
//!
//! Applications declare external inputs ([`Graph::add_input`]) and initialized mutable state
//! ([`Graph::add_state`]); operations define their own results through their contracts. A
//! compiled graph ([`CompiledGraph`], [`CompiledSimpleGraph`]) runs with [`Bindings`] and
//! [`RunOptions`]: inputs and state stay borrowed, selected results are new caller-owned
//! [`gpugraph_tables::GpuVector`]s (or the caller's output targets) that survive later runs and the compiled
//! graph, and unselected intermediates are released when the run ends. Scalars produced by
//! operations live on the GPU as one-row vectors; selected ones are returned as such.
//!
//! Resource preparation and command-graph lowering happen per run (lengths come from the
//! bindings); pipelines are cached per compiled graph, so shaders compile once.
//!
//! `Graph` also fuses consecutive row-local expression operations into one shader
//! (`fusion.rs`): intermediates read only inside the group and not selected never touch
//! memory. Results stay bit-identical to SimpleGraph by construction: every float operand in
//! the generated shaders passes through a run-time opaque identity (and stages read earlier
//! results through an opaque mask), so no shader compiler can contract or reassociate
//! arithmetic within a stage or across stages (lavapipe did across stages; NVIDIA contracted
//! within one, 1 ulp apart between the two paths).

pub mod bindings;
pub mod declaration;
pub mod error;
mod execute;
mod fusion;
pub(crate) mod planner;

use std::collections::HashSet;
use std::sync::Arc;

use gpugraph_command::GpuContext;
use serde::Serialize;

pub use bindings::{Bindings, ExecutionBinding, RunOptions};
pub use declaration::{
    scalar_format, Declaration, Role, TextureSpec, ValueKind, ValueRef, ValueSpec, VectorSpec,
};
pub use error::{BoxError, ProgramError};
pub use execute::RunResults;

use crate::lowering::{
    BackendCapabilities, Lowering, LoweringDecision, LoweringReport, LoweringSet, LoweringSource,
};
use crate::operation::{Operation, OperationContract};
use execute::{Engine, Mode};
use planner::{plan, ProgramParts};

/// Declarations and operations shared by both graph kinds.
#[derive(Clone)]
struct Program {
    id: String,
    declarations: Vec<Declaration>,
    operations: Vec<Arc<dyn Operation>>,
    operation_ids: HashSet<String>,
}

impl Program {
    fn new(id: String) -> Self {
        Self {
            id,
            declarations: Vec::new(),
            operations: Vec::new(),
            operation_ids: HashSet::new(),
        }
    }

    fn declare(
        &mut self,
        name: &str,
        spec: ValueSpec,
        role: Role,
    ) -> Result<ValueRef, ProgramError> {
        if let Some(existing) = self.declarations.iter().find(|d| d.name == name) {
            return Err(ProgramError::DuplicateDeclaration {
                graph: self.id.clone(),
                name: name.to_string(),
                existing: existing.role,
            });
        }
        let invalid = |reason: String| ProgramError::InvalidDeclaration {
            graph: self.id.clone(),
            name: name.to_string(),
            reason,
        };
        if name.is_empty() {
            return Err(invalid("the name is empty".into()));
        }
        spec.check().map_err(invalid)?;
        if role == Role::State && spec.as_vector().is_none() {
            return Err(ProgramError::StateNotVector {
                graph: self.id.clone(),
                name: name.to_string(),
                kind: spec.kind(),
            });
        }
        self.declarations.push(Declaration {
            name: name.to_string(),
            spec: spec.clone(),
            role,
        });
        Ok(ValueRef::typed(name, spec))
    }

    fn add(&mut self, op: Arc<dyn Operation>) -> Result<(), ProgramError> {
        let id = op.id().to_string();
        if id.is_empty() || !self.operation_ids.insert(id.clone()) {
            return Err(ProgramError::DuplicateOperation {
                graph: self.id.clone(),
                operation: id,
            });
        }
        self.operations.push(op);
        Ok(())
    }

    fn parts(&self) -> ProgramParts<'_> {
        ProgramParts {
            graph: &self.id,
            declarations: &self.declarations,
            operations: &self.operations,
        }
    }
}

/// Options of [`Graph::compile`] / [`SimpleGraph::compile`].
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Results to return from each run (`None`: every operation-defined result).
    pub outputs: Option<Vec<String>>,
    /// Extension lowerings (full `Graph` only), snapshotted at compilation.
    pub lowerings: Vec<Lowering>,
}

impl CompileOptions {
    /// Options selecting `outputs`.
    pub fn outputs(outputs: &[&str]) -> Self {
        Self {
            outputs: Some(outputs.iter().map(|s| s.to_string()).collect()),
            lowerings: Vec::new(),
        }
    }
    /// The same options with extension lowerings.
    pub fn with_lowerings(mut self, lowerings: &[Lowering]) -> Self {
        self.lowerings = lowerings.to_vec();
        self
    }
}

/// What a compilation decided: the selected outputs, the backend capabilities lowerings see,
/// and one lowering decision per operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compilation {
    /// Selected result names.
    pub outputs: Vec<String>,
    /// Backend capabilities.
    pub capabilities: BackendCapabilities,
    /// Which lowering each operation uses and why.
    pub lowering: LoweringReport,
}

macro_rules! builder_methods {
    () => {
        /// An empty graph named `id`.
        pub fn new(id: impl Into<String>) -> Self {
            Self {
                program: Program::new(id.into()),
            }
        }

        /// The graph id (named in errors and labels).
        pub fn id(&self) -> &str {
            &self.program.id
        }

        /// Declares an external input: borrowed, read-only, bound on every run. Returns a typed
        /// reference to it.
        pub fn add_input(&mut self, name: &str, spec: ValueSpec) -> Result<ValueRef, ProgramError> {
            self.program.declare(name, spec, Role::Input)
        }

        /// Declares state: initialized mutable vector storage, caller-owned, bound on every run;
        /// operations may update it in place (read-write).
        pub fn add_state(&mut self, name: &str, spec: ValueSpec) -> Result<ValueRef, ProgramError> {
            self.program.declare(name, spec, Role::State)
        }

        /// An explicit declaration without a role: a result when an operation writes it (its
        /// format and fixed dimensions then constrain that output), otherwise an input.
        pub fn declare(&mut self, name: &str, spec: ValueSpec) -> Result<ValueRef, ProgramError> {
            self.program.declare(name, spec, Role::Declared)
        }

        /// Adds an operation after every operation added so far (producers before consumers;
        /// contracts never reorder). Its contract is checked at compilation.
        pub fn add(&mut self, operation: impl Operation) -> Result<(), ProgramError> {
            self.program.add(Arc::new(operation))
        }

        /// Adds a shared operation.
        pub fn add_shared(&mut self, operation: Arc<dyn Operation>) -> Result<(), ProgramError> {
            self.program.add(operation)
        }

        /// The declarations in order.
        pub fn declarations(&self) -> &[Declaration] {
            &self.program.declarations
        }

        /// The operations in order.
        pub fn operations(&self) -> impl Iterator<Item = &dyn Operation> {
            self.program.operations.iter().map(|o| o.as_ref())
        }
    };
}

/// The full declaration graph: every run lowers all operations into one command graph,
/// encodes them into ONE command encoder and submits once. Accepts custom lowerings.
#[derive(Clone)]
pub struct Graph {
    program: Program,
}

impl Graph {
    builder_methods!();

    /// Checks contracts, producer order and outputs against the built-in lowerings plus
    /// `options.lowerings`, and returns a program that can run many times.
    pub fn compile(
        &self,
        ctx: &GpuContext,
        options: CompileOptions,
    ) -> Result<CompiledGraph, ProgramError> {
        let outputs: Option<Vec<&str>> = options
            .outputs
            .as_ref()
            .map(|o| o.iter().map(String::as_str).collect());
        GraphCompiler::new(ctx, &options.lowerings)?.compile(self, outputs.as_deref())
    }
}

/// The portable graph: each run executes one evaluator pass per operation (its own command
/// graph and queue submission). Same declarations, operations and results as [`Graph`], but
/// only built-in lowerings: custom lowerings are rejected with a named error.
#[derive(Clone)]
pub struct SimpleGraph {
    program: Program,
}

impl SimpleGraph {
    builder_methods!();

    /// Like [`Graph::compile`]; `options.lowerings` must be empty.
    pub fn compile(
        &self,
        ctx: &GpuContext,
        options: CompileOptions,
    ) -> Result<CompiledSimpleGraph, ProgramError> {
        if !options.lowerings.is_empty() {
            return Err(ProgramError::CustomLoweringsUnsupported {
                graph: self.program.id.clone(),
                types: options
                    .lowerings
                    .iter()
                    .map(|l| l.operation_type().to_string())
                    .collect(),
            });
        }
        let outputs: Option<Vec<String>> = options.outputs;
        Ok(CompiledSimpleGraph::from_engine(compile_engine(
            ctx,
            &self.program,
            &LoweringSet::builtins(),
            outputs.as_deref(),
            Mode::PerOperation,
        )?))
    }
}

/// A compiler bound to a device and an immutable lowering set (built-ins plus the supplied
/// descriptors, snapshotted at construction; duplicate type names are rejected).
#[derive(Clone, Debug)]
pub struct GraphCompiler {
    ctx: GpuContext,
    lowerings: LoweringSet,
}

impl GraphCompiler {
    /// Snapshots `lowerings`; later changes to the caller's list do not affect the compiler.
    pub fn new(ctx: &GpuContext, lowerings: &[Lowering]) -> Result<Self, ProgramError> {
        Ok(Self {
            ctx: ctx.clone(),
            lowerings: LoweringSet::new(lowerings)?,
        })
    }

    /// The compiler's lowering set.
    pub fn lowerings(&self) -> &LoweringSet {
        &self.lowerings
    }

    /// Compiles `graph`, selecting `outputs` (`None`: every result).
    pub fn compile(
        &self,
        graph: &Graph,
        outputs: Option<&[&str]>,
    ) -> Result<CompiledGraph, ProgramError> {
        let outputs: Option<Vec<String>> =
            outputs.map(|o| o.iter().map(|s| s.to_string()).collect());
        Ok(CompiledGraph::from_engine(compile_engine(
            &self.ctx,
            &graph.program,
            &self.lowerings,
            outputs.as_deref(),
            Mode::Fused,
        )?))
    }
}

fn compile_engine(
    ctx: &GpuContext,
    program: &Program,
    lowerings: &LoweringSet,
    outputs: Option<&[String]>,
    mode: Mode,
) -> Result<(Engine, Compilation), ProgramError> {
    let plan = plan(program.parts(), lowerings, ctx.device.features(), outputs)?;
    let capabilities = BackendCapabilities::of(ctx);
    let fusion = match mode {
        Mode::Fused => fusion::plan_fusion(&plan),
        Mode::PerOperation => Vec::new(),
    };
    let decisions = plan
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let ty = op.op.operation_type().to_string();
            let group = fusion.iter().find(|g| g.ops.contains(&i));
            let (realization, reason) = match (mode, op.source) {
                (Mode::Fused, _) if group.is_some() => (
                    format!("fused expression kernel {}", group.map_or("", |g| g.id())),
                    "consecutive row-local expressions share one shader; results read only inside the group stay in registers (a run whose chunk lengths differ lowers them one by one)".to_string(),
                ),
                (Mode::PerOperation, _) => (
                    "evaluator pass".to_string(),
                    "SimpleGraph lowers each operation into its own command graph and submission (portable path)".to_string(),
                ),
                (Mode::Fused, LoweringSource::BuiltIn) => (
                    "built-in lowering".to_string(),
                    format!("'{ty}' is a built-in operation type; fused into the run's single command graph"),
                ),
                (Mode::Fused, LoweringSource::Custom) => (
                    "custom lowering".to_string(),
                    format!("'{ty}' was supplied to the compiler's lowering set; fused into the run's single command graph"),
                ),
            };
            LoweringDecision {
                operation: op.id().to_string(),
                operation_type: ty,
                source: op.source,
                realization,
                reason,
                nodes: Vec::new(),
                node_count: 0,
            }
        })
        .collect();
    let compilation = Compilation {
        outputs: plan
            .selected
            .iter()
            .map(|&v| plan.values[v].name.clone())
            .collect(),
        capabilities: capabilities.clone(),
        lowering: LoweringReport { decisions },
    };
    Ok((
        Engine {
            ctx: ctx.clone(),
            fusion,
            plan,
            capabilities,
            mode,
        },
        compilation,
    ))
}

/// The methods and the `Drop` (which destroys) shared by both compiled graph kinds.
macro_rules! compiled_graph {
    ($ty:ident) => {
        impl $ty {
            fn from_engine((engine, compilation): (Engine, Compilation)) -> Self {
                Self {
                    engine,
                    compilation,
                    destroyed: false,
                }
            }

            /// Runs once with `bindings` and `options`; see [`RunResults`]. Fails before any GPU
            /// work when bindings, shapes or targets break a rule.
            pub fn run(
                &self,
                bindings: Bindings<'_>,
                options: RunOptions<'_>,
            ) -> Result<RunResults, ProgramError> {
                if self.destroyed {
                    return Err(ProgramError::Destroyed {
                        graph: self.engine.plan.graph.clone(),
                    });
                }
                self.engine.run(&bindings, &options)
            }

            /// What the compilation decided.
            pub fn compilation(&self) -> &Compilation {
                &self.compilation
            }

            /// The contract snapshotted for operation `id` at compilation.
            pub fn contract(&self, id: &str) -> Option<&OperationContract> {
                self.engine
                    .plan
                    .ops
                    .iter()
                    .find(|o| o.id() == id)
                    .map(|o| &o.contract)
            }

            /// Retires the graph: later runs fail with [`ProgramError::Destroyed`]. Idempotent.
            /// Inputs and returned results are untouched; pipelines stay in the device's cache
            /// for other graphs of the same shapes.
            pub fn destroy(&mut self) {
                self.destroyed = true;
            }

            /// Whether [`Self::destroy`] ran.
            pub fn is_destroyed(&self) -> bool {
                self.destroyed
            }
        }

        impl Drop for $ty {
            fn drop(&mut self) {
                self.destroy();
            }
        }
    };
}

/// A compiled [`Graph`]: each run encodes every operation into one encoder, submits once.
pub struct CompiledGraph {
    engine: Engine,
    compilation: Compilation,
    destroyed: bool,
}

compiled_graph!(CompiledGraph);

/// A compiled [`SimpleGraph`]: each run submits one evaluator pass per operation.
pub struct CompiledSimpleGraph {
    engine: Engine,
    compilation: Compilation,
    destroyed: bool,
}

compiled_graph!(CompiledSimpleGraph);
