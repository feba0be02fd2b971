//! `gpugraph expr`: one expression of the expression language over `.npy` columns, run on the
//! GPU through a declaration graph (`program::Graph`, or `SimpleGraph` with `--simple`) with
//! one `ExpressionOperation`, read back and written as `.npy`.
//!
//! Each `--input NAME=FILE.npy` (float32/int32/uint32, shape `(n,)` or `(n, k)` with k in
//! 1..=4) is a vector of rows of that format (`(n, 3)` float32 is float32x3); each
//! `--scalar NAME=VALUE[:f32|i32|u32]` (float32 when untyped) is one value for every row. The
//! result has the inferred format: `(n,)` for one component, `(n, k)` otherwise, one row when
//! the expression reads no vector. A parse or type error is a [`CompileError`] (exit status
//! 2: the diagnostic on stderr, then the expression with a caret line under the offending
//! span); everything else fails with status 1. `--help` lists the functions (from the
//! checker's own table).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use gpugraph_command::VectorFormat;
use gpugraph_program::expr::{ScalarValue, ValueType};
use gpugraph_program::graph::{Bindings, CompileOptions, ProgramError, RunOptions, ValueSpec};
use gpugraph_program::operation::ExpressionOperation;
use gpugraph_program::{
    compile_expression, ExprError, ExpressionOptions, IntegerRounding, ScalarType,
};
use gpugraph_program::{graph::Graph, graph::SimpleGraph};
use gpugraph_tables::{GpuData, GpuVector};

use crate::gpu::Gpu;
use crate::npy::{self, Dtype, NpyArray};

/// Name of the result value in the graph (so the default operation id is `output-expression`).
pub const OUTPUT: &str = "output";
/// Id of the declaration graph the command builds.
const GRAPH_ID: &str = "cli-expr";

/// Float→integer cast rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Rounding {
    /// Toward zero.
    Truncate,
    /// To nearest, halves away from zero.
    Nearest,
}

impl From<Rounding> for IntegerRounding {
    fn from(r: Rounding) -> Self {
        match r {
            Rounding::Truncate => IntegerRounding::Truncate,
            Rounding::Nearest => IntegerRounding::Nearest,
        }
    }
}

/// `gpugraph expr`.
#[derive(Args, Debug)]
#[command(after_help = help_text())]
pub struct ExprArgs {
    /// The expression, e.g. 'positions * scale + offset'.
    #[arg(
        short = 'e',
        long = "expression",
        value_name = "EXPR",
        allow_hyphen_values = true
    )]
    pub expression: String,
    /// Operation id (prefix of diagnostics); default `output-expression`.
    #[arg(long)]
    pub id: Option<String>,
    /// Rounding of float→integer casts.
    #[arg(long, value_enum, default_value_t = Rounding::Truncate)]
    pub rounding: Rounding,
    /// Run through SimpleGraph (one evaluator pass per operation) instead of Graph.
    #[arg(long)]
    pub simple: bool,
    /// A vector input: NAME=FILE.npy (float32/int32/uint32, shape (n,) or (n, k), k ≤ 4).
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = parse_input)]
    pub inputs: Vec<(String, PathBuf)>,
    /// A scalar: NAME=VALUE[:f32|i32|u32] (float32 when no type is given).
    #[arg(long = "scalar", value_name = "NAME=VALUE[:TYPE]", value_parser = parse_scalar)]
    pub scalars: Vec<(String, ScalarValue)>,
    /// Output file (.npy).
    #[arg(long, value_name = "FILE.npy")]
    pub out: PathBuf,
}

/// The text after the options in `gpugraph expr --help`: the function list, generated from
/// the table the type checker uses, and where the full reference lives.
fn help_text() -> String {
    format!(
        "{}\nOperators: + - * / and unary -, on float32 (cast integers with float32(...)); \
         .xyzw selectors. Literals are float32.\nFull reference: docs/expressions.md",
        gpugraph_program::expr::functions::reference()
    )
}

/// The expression does not parse or type-check. `Display` is the [`ExprError`]'s text, then
/// the expression with a caret line under the offending span.
#[derive(Debug)]
pub struct CompileError {
    /// The diagnostic.
    pub error: ExprError,
    /// The expression text its span refers to.
    pub source: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error.render(&self.source))
    }
}

impl std::error::Error for CompileError {}

fn parse_input(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("expected NAME=FILE.npy, got '{text}'")),
    }
}

fn parse_scalar(text: &str) -> Result<(String, ScalarValue), String> {
    let Some((name, value)) = text.split_once('=').filter(|(n, _)| !n.is_empty()) else {
        return Err(format!("expected NAME=VALUE[:f32|i32|u32], got '{text}'"));
    };
    let (value, ty) = match value.rsplit_once(':') {
        Some((v, "f32" | "float32")) => (v, ScalarType::Float32),
        Some((v, "i32" | "sint32")) => (v, ScalarType::Sint32),
        Some((v, "u32" | "uint32")) => (v, ScalarType::Uint32),
        Some((_, t)) => return Err(format!("unknown scalar type '{t}' (use f32, i32 or u32)")),
        None => (value, ScalarType::Float32),
    };
    let bad = |e: &dyn fmt::Display| format!("scalar {name}: '{value}' is not a {ty}: {e}");
    let v = value.trim();
    let parsed = match ty {
        ScalarType::Float32 => ScalarValue::Float32(v.parse().map_err(|e| bad(&e))?),
        ScalarType::Sint32 => ScalarValue::Sint32(v.parse().map_err(|e| bad(&e))?),
        ScalarType::Uint32 => ScalarValue::Uint32(v.parse().map_err(|e| bad(&e))?),
    };
    Ok((name.to_string(), parsed))
}

/// A loaded `--input`: its rows as a format of the expression subset.
struct Input {
    name: String,
    path: PathBuf,
    format: VectorFormat,
    rows: usize,
    array: NpyArray,
}

fn load_input(name: &str, path: &Path) -> Result<Input> {
    let array = npy::read(path)?;
    let scalar = match array.dtype {
        Dtype::F32 => ScalarType::Float32,
        Dtype::I32 => ScalarType::Sint32,
        Dtype::U32 => ScalarType::Uint32,
        Dtype::U8 => bail!(
            "{}: input {name} is uint8; expressions read float32, int32 or uint32",
            path.display()
        ),
    };
    let cols = array.cols();
    if !(1..=4).contains(&cols) {
        bail!(
            "{}: input {name} has shape {:?}; rows must have 1 to 4 components ((n,) or (n, k), k ≤ 4)",
            path.display(),
            array.shape
        );
    }
    Ok(Input {
        name: name.to_string(),
        path: path.to_path_buf(),
        format: ValueType::new(scalar, cols as u8).format(),
        rows: array.rows(),
        array,
    })
}

/// A graph compilation failure: an expression diagnostic becomes a [`CompileError`].
fn compile_failure(e: ProgramError, text: &str) -> anyhow::Error {
    if let ProgramError::Contract { operation, source } = &e {
        if let Some(x) = source.downcast_ref::<ExprError>() {
            return CompileError {
                error: x.clone().with_operation(operation),
                source: text.to_string(),
            }
            .into();
        }
    }
    anyhow::Error::new(e).context("compiling the expression graph")
}

/// Runs the expression and writes the result.
pub fn run(args: &ExprArgs) -> Result<()> {
    if args.id.as_deref().is_some_and(|id| id.trim().is_empty()) {
        bail!("--id is empty; give the operation a name (or leave --id out for the default)");
    }
    // Created first: an unwritable --out fails before any GPU work, and the result appears
    // only when complete (removed on error or signal).
    let out = crate::output::PendingFile::new(&args.out, "--out")?;
    let inputs = args
        .inputs
        .iter()
        .map(|(name, path)| load_input(name, path))
        .collect::<Result<Vec<_>>>()?;
    if let Some(name) = inputs
        .iter()
        .map(|i| i.name.as_str())
        .chain(args.scalars.iter().map(|(n, _)| n.as_str()))
        .find(|&n| n == OUTPUT)
    {
        bail!("'{name}' names the result; give the input or scalar another name");
    }
    let rounding: IntegerRounding = args.rounding.into();
    let formats: Vec<(&str, VectorFormat)> =
        inputs.iter().map(|i| (i.name.as_str(), i.format)).collect();
    let scalar_types: Vec<(&str, ScalarType)> = args
        .scalars
        .iter()
        .map(|(n, v)| (n.as_str(), v.scalar()))
        .collect();
    // Diagnose the text before touching the GPU: parse, names and types, in the language's
    // own words (the graph would name undeclared identifiers in its terms instead).
    let compiled = compile_expression(
        args.id.as_deref(),
        args.expression.as_str(),
        &formats,
        &scalar_types,
        &ExpressionOptions::output(OUTPUT).with_rounding(rounding),
    )
    .map_err(|error| CompileError {
        error,
        source: args.expression.clone(),
    })?;
    let referenced = compiled.typed().referenced_inputs();
    if let [first, rest @ ..] = referenced.as_slice() {
        let a = &inputs[*first];
        if let Some(b) = rest.iter().map(|&i| &inputs[i]).find(|b| b.rows != a.rows) {
            bail!(
                "{}: input {} has {} rows but input {} ({}) has {}; the expression reads both row by row",
                b.path.display(),
                b.name,
                b.rows,
                a.name,
                a.path.display(),
                a.rows
            );
        }
    }

    let gpu = Gpu::open()?;
    let mut vectors = Vec::with_capacity(inputs.len());
    for i in &inputs {
        let data = GpuData::upload(
            &gpu.ctx,
            &i.array.data,
            i.format,
            gpugraph_command::wgpu::BufferUsages::empty(),
        )
        .with_context(|| format!("{}: uploading input {}", i.path.display(), i.name))?;
        vectors.push(GpuVector::from_data(data));
    }
    let mut bindings = Bindings::new();
    for (i, v) in inputs.iter().zip(&vectors) {
        bindings = bindings.vector(i.name.as_str(), v);
    }
    for (name, value) in &args.scalars {
        bindings = bindings.scalar(name.as_str(), *value);
    }
    let mut operation =
        ExpressionOperation::new(OUTPUT, args.expression.as_str()).with_rounding(rounding);
    if let Some(id) = &args.id {
        operation = operation.with_id(id.as_str());
    }
    let outputs = || CompileOptions::outputs(&[OUTPUT]);
    // Graph and SimpleGraph share their builder methods but no trait.
    macro_rules! declare_and_run {
        ($graph:expr) => {{
            let mut g = $graph;
            for i in &inputs {
                g.add_input(&i.name, ValueSpec::vector(i.format))?;
            }
            for (name, value) in &args.scalars {
                g.add_input(name, ValueSpec::scalar(value.scalar()))?;
            }
            g.add(operation)?;
            g.compile(&gpu.ctx, outputs())
                .map_err(|e| compile_failure(e, &args.expression))?
                .run(bindings, RunOptions::new())
                .context("running the expression graph")?
        }};
    }
    let mut results = if args.simple {
        declare_and_run!(SimpleGraph::new(GRAPH_ID))
    } else {
        declare_and_run!(Graph::new(GRAPH_ID))
    };
    let result = results
        .take(OUTPUT)
        .context("the graph returned no result")?;
    let bytes = result
        .read_back_bytes(&gpu.ctx)
        .context("reading the result back")?;
    gpu.check("the expression run")?;

    let ty = compiled.output_type();
    let width = ty.width as usize;
    let rows = bytes.len() / (4 * width);
    let array = NpyArray {
        dtype: match ty.scalar {
            ScalarType::Float32 => Dtype::F32,
            ScalarType::Sint32 => Dtype::I32,
            ScalarType::Uint32 => Dtype::U32,
        },
        shape: if width == 1 {
            vec![rows]
        } else {
            vec![rows, width]
        },
        data: bytes,
    };
    out.write_all(&npy::encode(&array))?;
    out.commit()?;
    println!(
        "expr {}: {rows} row{} of {} -> {}",
        compiled.id(),
        if rows == 1 { "" } else { "s" },
        result.format(),
        args.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_arguments_parse_with_and_without_types() {
        assert_eq!(
            parse_scalar("scale=2.5").unwrap(),
            ("scale".into(), ScalarValue::Float32(2.5))
        );
        assert_eq!(
            parse_scalar("n=-3:i32").unwrap(),
            ("n".into(), ScalarValue::Sint32(-3))
        );
        assert_eq!(
            parse_scalar("m=7:u32").unwrap(),
            ("m".into(), ScalarValue::Uint32(7))
        );
        assert!(parse_scalar("m=-7:u32").unwrap_err().contains("scalar m"));
        assert!(parse_scalar("m=1:f64").unwrap_err().contains("f64"));
        assert!(parse_scalar("=1").is_err());
        assert!(parse_input("a=x.npy").is_ok());
        assert!(parse_input("x.npy").is_err());
    }
}
