//! [`Lowering`] descriptors and the immutable [`LoweringSet`] a compiler snapshots.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::graph::error::{BoxError, ProgramError};
use crate::lowering::context::LowerContext;
use crate::lowering::decision::LoweringSource;
use crate::lowering::program::ProgramLowering;
use crate::operation::Operation;

/// The callback of a lowering: adds command-graph passes for one operation.
pub type LowerFn =
    dyn Fn(&dyn Operation, &mut LowerContext<'_>) -> Result<(), BoxError> + Send + Sync;

/// A lowering descriptor `{ type, lower }`: implements operations of one type by adding
/// command-graph passes over resolved views. Immutable and cheap to clone; the callback must
/// not submit, read back, or depend on mutable captured configuration.
#[derive(Clone)]
pub struct Lowering {
    operation_type: Arc<str>,
    lower: Arc<LowerFn>,
}

impl fmt::Debug for Lowering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lowering")
            .field("operation_type", &self.operation_type)
            .finish_non_exhaustive()
    }
}

impl Lowering {
    /// A lowering for operations of type `operation_type` over the trait object.
    pub fn new(
        operation_type: impl Into<String>,
        lower: impl Fn(&dyn Operation, &mut LowerContext<'_>) -> Result<(), BoxError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Self {
            operation_type: Arc::from(operation_type.into()),
            lower: Arc::new(lower),
        }
    }

    /// A lowering for operations of concrete type `O`: the callback receives `&O`; an
    /// operation of the right type name but another Rust type is a named error.
    pub fn typed<O: Operation>(
        operation_type: impl Into<String>,
        lower: impl Fn(&O, &mut LowerContext<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Self {
        let ty: String = operation_type.into();
        let expected = ty.clone();
        Self::new(ty, move |op: &dyn Operation, cx: &mut LowerContext<'_>| {
            let Some(concrete) = op.downcast_ref::<O>() else {
                return Err(format!(
                    "lowering '{expected}' expects {} but operation {} is another Rust type",
                    std::any::type_name::<O>(),
                    op.id()
                )
                .into());
            };
            lower(concrete, cx)
        })
    }

    /// The operation type it lowers.
    pub fn operation_type(&self) -> &str {
        &self.operation_type
    }

    /// Runs the callback.
    pub fn lower(&self, op: &dyn Operation, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
        (self.lower)(op, cx)
    }
}

/// An immutable snapshot of lowerings by operation type: the built-ins plus supplied
/// descriptors. Later changes to the caller's descriptor list cannot affect it. It holds
/// both kinds of lowering: declaration-graph [`Lowering`]s and program-tree
/// [`ProgramLowering`]s (semantic operations with realizations chosen by shape and
/// capabilities), each keyed by operation type.
#[derive(Clone, Debug)]
pub struct LoweringSet {
    by_type: Arc<HashMap<String, (Lowering, LoweringSource)>>,
    program: Arc<HashMap<String, (ProgramLowering, LoweringSource)>>,
}

impl LoweringSet {
    /// Built-ins plus `custom`; a type supplied twice, or one that names a built-in type, is
    /// rejected.
    pub fn new(custom: &[Lowering]) -> Result<Self, ProgramError> {
        let mut by_type: HashMap<String, (Lowering, LoweringSource)> = HashMap::new();
        for l in crate::operation::builtin_lowerings() {
            by_type.insert(l.operation_type().to_string(), (l, LoweringSource::BuiltIn));
        }
        for l in custom {
            let ty = l.operation_type().to_string();
            if let Some((_, source)) = by_type.get(&ty) {
                return Err(ProgramError::DuplicateLowering {
                    operation_type: ty,
                    builtin: *source == LoweringSource::BuiltIn,
                });
            }
            by_type.insert(ty, (l.clone(), LoweringSource::Custom));
        }
        let mut program = HashMap::new();
        for l in crate::program::ops::builtin_program_lowerings() {
            program.insert(l.operation_type().to_string(), (l, LoweringSource::BuiltIn));
        }
        Ok(Self {
            by_type: Arc::new(by_type),
            program: Arc::new(program),
        })
    }

    /// This set plus the program-tree lowerings `custom`; a type supplied twice, or one that
    /// names a built-in program operation type, is rejected.
    pub fn with_program_lowerings(&self, custom: &[ProgramLowering]) -> Result<Self, ProgramError> {
        let mut program = (*self.program).clone();
        for l in custom {
            let ty = l.operation_type().to_string();
            if let Some((_, source)) = program.get(&ty) {
                return Err(ProgramError::DuplicateLowering {
                    operation_type: ty,
                    builtin: *source == LoweringSource::BuiltIn,
                });
            }
            program.insert(ty, (l.clone(), LoweringSource::Custom));
        }
        Ok(Self {
            by_type: Arc::clone(&self.by_type),
            program: Arc::new(program),
        })
    }

    /// The program-tree lowering for `operation_type` and where it came from.
    pub fn program_lowering(
        &self,
        operation_type: &str,
    ) -> Option<(&ProgramLowering, LoweringSource)> {
        self.program.get(operation_type).map(|(l, s)| (l, *s))
    }

    /// Every registered program operation type, sorted.
    pub fn program_types(&self) -> Vec<String> {
        let mut t: Vec<String> = self.program.keys().cloned().collect();
        t.sort();
        t
    }

    /// Only the built-ins.
    pub fn builtins() -> Self {
        Self::new(&[]).unwrap_or_else(|_| unreachable!("built-in types are distinct"))
    }

    /// The lowering for `operation_type` and where it came from.
    pub fn get(&self, operation_type: &str) -> Option<(&Lowering, LoweringSource)> {
        self.by_type.get(operation_type).map(|(l, s)| (l, *s))
    }

    /// Every registered type, sorted.
    pub fn types(&self) -> Vec<String> {
        let mut t: Vec<String> = self.by_type.keys().cloned().collect();
        t.sort();
        t
    }

    /// The types of supplied (custom) lowerings, sorted.
    pub fn custom_types(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .by_type
            .iter()
            .filter(|(_, (_, s))| *s == LoweringSource::Custom)
            .map(|(k, _)| k.clone())
            .collect();
        t.sort();
        t
    }
}
