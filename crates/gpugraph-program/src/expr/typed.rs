//! The checked expression tree the type checker ([`super::types`]) builds and the function
//! table's rules ([`super::signatures`]) extend, evaluated by [`super::eval`] and emitted as
//! WGSL by [`super::wgsl`].

use crate::expr::ast::{BinaryOp, Span};
use crate::expr::functions::{CompareFn, LogicFn, MathFn};
use crate::expr::scalar::{IntegerRounding, ScalarType, ValueType};

/// A type-checked node: resolved operation, its type, whether it varies per row, its span.
#[derive(Clone, Debug, PartialEq)]
pub struct TypedExpr {
    /// The operation.
    pub node: Node,
    /// Result type.
    pub ty: ValueType,
    /// Whether the value depends on a vector input (otherwise it is the same for every row).
    pub row_varying: bool,
    /// Source span of the originating AST node.
    pub span: Span,
}

/// Resolved operations. Operand widths already satisfy the rules; broadcasting of a
/// one-component operand is implicit where stated.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Declared vector input by index.
    Input(usize),
    /// Declared scalar by index (one component, same for every row).
    Scalar(usize),
    /// A float32 literal.
    Literal(f32),
    /// Float32 negation.
    Neg(Box<TypedExpr>),
    /// Float32 arithmetic; a one-component side broadcasts.
    Arith(BinaryOp, Box<TypedExpr>, Box<TypedExpr>),
    /// Component-wise float32 function.
    Math(MathFn, Box<TypedExpr>),
    /// Component-wise float32 power; a one-component side broadcasts.
    Pow(Box<TypedExpr>, Box<TypedExpr>),
    /// Width-preserving numeric conversion.
    Cast {
        /// Destination component type.
        to: ScalarType,
        /// Float→integer rounding of the operation.
        rounding: IntegerRounding,
        /// The converted value.
        arg: Box<TypedExpr>,
    },
    /// Static component selection (indices 0..=3, one to four of them).
    Swizzle(Box<TypedExpr>, Vec<u8>),
    /// Replication of one component to `ty.width` components.
    Splat(Box<TypedExpr>),
    /// Concatenation of the arguments' components.
    Concat(Vec<TypedExpr>),
    /// Sum of component products (equal widths).
    Dot(Box<TypedExpr>, Box<TypedExpr>),
    /// Euclidean magnitude of a row.
    Length(Box<TypedExpr>),
    /// 1 when every component is equal (exact, same types and widths), else 0.
    EqualAll(Box<TypedExpr>, Box<TypedExpr>),
    /// Component-wise comparison (extension): uint32 0/1; a one-component side broadcasts.
    Compare(CompareFn, Box<TypedExpr>, Box<TypedExpr>),
    /// Logic on uint32 masks (extension): uint32 0/1; one or two operands.
    Logic(LogicFn, Vec<TypedExpr>),
    /// Per-row (one-component condition) or per-component choice; branches broadcast.
    Select {
        /// Nonzero selects `when_true`.
        cond: Box<TypedExpr>,
        /// Chosen where the condition is nonzero.
        when_true: Box<TypedExpr>,
        /// Chosen where the condition is zero.
        when_false: Box<TypedExpr>,
    },
}
