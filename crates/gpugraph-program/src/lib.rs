//! gpugraph-program: the program layer of gpugraph: the expression language ([`expr`]:
//! parser, type checker, WGSL code generation, CPU oracle and the compute-node lowering of an
//! expression over packed vector views), declaration graphs ([`graph`], [`operation`],
//! [`lowering`]) and workflows built from algorithms and expressions ([`workflow`]).

#![warn(missing_docs)]

pub mod expr;
pub mod graph;
pub mod lowering;
pub mod operation;
pub mod program;
pub mod workflow;

pub use expr::{
    compile_expression, parse, CompiledExpression, Expr, ExprError, ExprErrorKind,
    ExpressionKernel, ExpressionOptions, ExpressionSource, IntegerRounding, ScalarType,
};
