//! gpugraph-program: the program layer of gpugraph. So far it holds the expression language
//! ([`expr`]): parser, type checker, WGSL code generation, CPU oracle and the compute-node
//! lowering of one expression over packed vector views.

#![warn(missing_docs)]

pub mod expr;
pub mod graph;
pub mod lowering;
pub mod operation;

pub use expr::{
    compile_expression, parse, CompiledExpression, Expr, ExprError, ExprErrorKind,
    ExpressionKernel, ExpressionOptions, ExpressionSource, IntegerRounding, ScalarType,
};
