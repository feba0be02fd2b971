//! The expression language of `GPUExpressionOperation` (spec: expression-operation): numeric
//! expressions over named vector inputs and scalars, e.g. `positions * scale + offset`.
//!
//! Pipeline: [`parse`] (text → [`Expr`] AST with spans) → [`types::check`] (names resolved,
//! float32/sint32/uint32 × width 1–4, the spec's diagnostics) → [`wgsl::generate`] (one
//! compute shader over packed rows) and [`eval`] (the CPU oracle). [`compile_expression`]
//! runs all of it and returns a [`CompiledExpression`]; [`ExpressionKernel`] lowers one onto a
//! [`gpugraph_command::CommandGraph`] as a single compute node and reuses its pipeline for
//! every length. [`fuse_expressions`] compiles several row-local expressions into one shader
//! whose stages pass results in registers ([`FusedExpression`]).
//!
//! Bytes per row on the GPU: each referenced vector input's row size read once plus the output
//! row size written once (e.g. `positions * scale + offset` over float32x3: 24 B read + 12 B
//! written); scalars and parameters are read once per invocation. One pass, no scratch.

pub mod ast;
mod error;
pub mod eval;
pub mod functions;
mod fused;
mod helpers;
mod kernel;
mod lexer;
mod parser;
pub mod policy;
mod scalar;
mod signatures;
mod typed;
pub mod types;
pub mod wgsl;

pub use ast::{BinaryOp, Expr, ExprKind, Span};
pub use error::{ExprError, ExprErrorKind};
pub use eval::{Column, ScalarValue, Values};
pub use fused::{fuse_expressions, FusedExpression, FusedStage};
pub use kernel::{ExpressionKernel, ScalarBinding};
pub use parser::parse;
pub use types::{Declarations, IntegerRounding, ScalarType, TypedExpr, ValueType};

use gpugraph_command::VectorFormat;

use crate::expr::wgsl::ShaderLayout;

/// An expression given as text or as an AST (from [`parse`] or built by hand).
#[derive(Clone, Debug, PartialEq)]
pub enum ExpressionSource {
    /// Source text.
    Text(String),
    /// A parsed or hand-built tree.
    Ast(Expr),
}

impl From<&str> for ExpressionSource {
    fn from(s: &str) -> Self {
        ExpressionSource::Text(s.to_string())
    }
}

impl From<String> for ExpressionSource {
    fn from(s: String) -> Self {
        ExpressionSource::Text(s)
    }
}

impl From<Expr> for ExpressionSource {
    fn from(e: Expr) -> Self {
        ExpressionSource::Ast(e)
    }
}

impl From<&Expr> for ExpressionSource {
    fn from(e: &Expr) -> Self {
        ExpressionSource::Ast(e.clone())
    }
}

/// Per-operation settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpressionOptions {
    /// Name of the result; the default operation id is `<output>-expression`.
    pub output: String,
    /// An explicitly declared output format the inferred type must match.
    pub output_format: Option<VectorFormat>,
    /// Rounding of every float→integer cast in this operation (nested casts included).
    pub integer_rounding: IntegerRounding,
}

impl Default for ExpressionOptions {
    fn default() -> Self {
        Self {
            output: "output".into(),
            output_format: None,
            integer_rounding: IntegerRounding::Truncate,
        }
    }
}

impl ExpressionOptions {
    /// Options naming the output `output` (other settings default).
    pub fn output(output: &str) -> Self {
        Self {
            output: output.to_string(),
            ..Self::default()
        }
    }
    /// The same options with `rounding`.
    pub fn with_rounding(mut self, rounding: IntegerRounding) -> Self {
        self.integer_rounding = rounding;
        self
    }
    /// The same options with a declared output format.
    pub fn with_output_format(mut self, format: VectorFormat) -> Self {
        self.output_format = Some(format);
        self
    }
}

/// A type-checked expression with its generated shader: output type, WGSL, CPU evaluation.
/// Immutable; create GPU work through [`ExpressionKernel`].
#[derive(Clone, Debug)]
pub struct CompiledExpression {
    id: String,
    output: String,
    ast: Expr,
    typed: TypedExpr,
    decls: Declarations,
    wgsl: String,
    layout: ShaderLayout,
}

/// Parses (if text), type-checks and generates WGSL for one expression operation.
///
/// `inputs` are vector declarations (row-varying; storage formats of the float32/sint32/
/// uint32 subset, one to four components), `scalars` one value per execution broadcast to
/// every row. Errors carry the operation id (`id`, or `<options.output>-expression`).
pub fn compile_expression(
    id: Option<&str>,
    expression: impl Into<ExpressionSource>,
    inputs: &[(&str, VectorFormat)],
    scalars: &[(&str, ScalarType)],
    options: &ExpressionOptions,
) -> Result<CompiledExpression, ExprError> {
    let id = id.map_or_else(|| format!("{}-expression", options.output), str::to_string);
    let run = || -> Result<CompiledExpression, ExprError> {
        let ast = match expression.into() {
            ExpressionSource::Text(t) => parse(&t)?,
            ExpressionSource::Ast(a) => a,
        };
        let decls = Declarations::new(inputs, scalars)?;
        let typed = types::check(&ast, &decls, options.integer_rounding)?;
        if let Some(declared) = options.output_format {
            if declared != typed.ty.format() {
                return Err(ExprError::new(
                    ExprErrorKind::Declaration,
                    format!(
                        "output {} is declared {declared} but the expression produces {}",
                        options.output, typed.ty
                    ),
                    Some(ast.span),
                ));
            }
        }
        let (wgsl, layout) = wgsl::generate(&typed, &decls, &ast);
        Ok(CompiledExpression {
            id: id.clone(),
            output: options.output.clone(),
            ast,
            typed,
            decls,
            wgsl,
            layout,
        })
    };
    run().map_err(|e| e.with_operation(&id))
}

impl CompiledExpression {
    /// The operation id (prefix of every diagnostic, node id on the GPU).
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The output name.
    pub fn output_name(&self) -> &str {
        &self.output
    }
    /// The inferred output type.
    pub fn output_type(&self) -> ValueType {
        self.typed.ty
    }
    /// The packed storage format of the output.
    pub fn output_format(&self) -> VectorFormat {
        self.typed.ty.format()
    }
    /// Whether the output has one row per input row (it reads a vector input); otherwise it
    /// is a single constant row.
    pub fn is_row_sized(&self) -> bool {
        self.typed.row_varying
    }
    /// The parsed tree.
    pub fn ast(&self) -> &Expr {
        &self.ast
    }
    /// The type-checked tree.
    pub fn typed(&self) -> &TypedExpr {
        &self.typed
    }
    /// The declarations it was checked against.
    pub fn declarations(&self) -> &Declarations {
        &self.decls
    }
    /// The generated compute shader (entry point [`wgsl::ENTRY_POINT`]).
    pub fn wgsl(&self) -> &str {
        &self.wgsl
    }
    /// Which declarations the shader binds, and where their parameters go.
    pub fn layout(&self) -> &ShaderLayout {
        &self.layout
    }

    /// Evaluates on the CPU (the oracle). `inputs` are row-major packed columns in declaration
    /// order, `scalars` values in declaration order. Returns the packed output: one row per
    /// input row, or one row when the expression reads no vector input. Rejects bindings whose
    /// types, widths or row counts do not match.
    pub fn evaluate(
        &self,
        inputs: &[Column<'_>],
        scalars: &[ScalarValue],
    ) -> Result<Values, ExprError> {
        let rows = eval::check_bindings(
            &self.typed,
            &self.decls.inputs,
            &self.decls.scalars,
            inputs,
            scalars,
        )
        .map_err(|e| e.with_operation(&self.id))?;
        let env = eval::Env {
            inputs,
            input_widths: self
                .decls
                .inputs
                .iter()
                .map(|(_, t)| t.width as usize)
                .collect(),
            scalars,
        };
        Ok(eval::evaluate(&self.typed, &env, rows))
    }
}
