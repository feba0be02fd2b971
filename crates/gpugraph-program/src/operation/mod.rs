//! Operations: logical work with a contract ([`Operation`], [`OperationContract`]) and the
//! built-in operations with their lowerings: scalar literals and arithmetic, vector MADD, dot
//! products, CSR SpMV, upload/copy, stable compaction, and expressions (through
//! [`ExpressionOperation`]).
//!
//! An operation never touches a device. A lowering (see [`crate::lowering`]) turns it into
//! command-graph passes over resolved views.

/// `Operation::id` (the `id` field) and `Operation::operation_type` (the type-name constant)
/// of a built-in operation; defined before the modules so each can use it.
macro_rules! operation_identity {
    ($type_name:expr) => {
        fn id(&self) -> &str {
            &self.id
        }
        fn operation_type(&self) -> &str {
            $type_name
        }
    };
}

pub mod compact;
pub mod contract;
pub mod copy;
pub mod dot;
pub mod expression;
pub mod madd;
pub mod policy;
pub mod scalar;
pub mod spmv;
mod support;

use std::any::Any;

pub use compact::Compact;
pub use contract::{Access, OperationContract, Scope, Shape, ValueUse};
pub use copy::{CopyVector, Upload};
pub use dot::DotProduct;
pub use expression::ExpressionOperation;
pub use madd::VectorMadd;
pub use scalar::{ScalarLiteral, ScalarOp, ScalarOperation};
pub use spmv::SpMV;

use crate::graph::error::BoxError;

/// Logical work in a graph: an id, a type name that selects its lowering, and a contract.
///
/// `contract` is computed once per compilation against the declarations visible to the
/// operation (inputs, state, explicit declarations and the results of earlier operations),
/// so an operation can derive output formats from its inputs. It must be a pure description:
/// the graph snapshots it and never asks again during that compilation.
pub trait Operation: Any + Send + Sync {
    /// Unique id within the graph: error name and node-id prefix.
    fn id(&self) -> &str;
    /// The operation type (`"copy-rows"`): the key of its lowering.
    fn operation_type(&self) -> &str;
    /// What the operation reads and writes, given the visible declarations.
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError>;
}

impl dyn Operation {
    /// The operation as its concrete type, if it is a `T`.
    pub fn downcast_ref<T: Operation>(&self) -> Option<&T> {
        let any: &dyn Any = self;
        any.downcast_ref::<T>()
    }
}

/// Every built-in lowering: scalar literal and operation, vector MADD, dot product, SpMV,
/// upload, copy, expression and compaction.
pub(crate) fn builtin_lowerings() -> Vec<crate::lowering::Lowering> {
    vec![
        scalar::literal_lowering(),
        scalar::operation_lowering(),
        madd::lowering(),
        dot::lowering(),
        spmv::lowering(),
        copy::upload_lowering(),
        copy::copy_lowering(),
        expression::lowering(),
        compact::lowering(),
    ]
}
