//! Execution bindings and output targets, and their validation against a compiled plan: every
//! input and state bound with the declared kind, format, layout and fixed dimensions; every
//! result's rows and chunks resolved from its shape, declaration or target; targets checked
//! for layout, topology, overlapping chunks and aliasing. Pure: no GPU work.

use std::collections::HashMap;

use gpugraph_command::VectorFormat;
use gpugraph_tables::{GpuData, GpuVector, VectorLayout};

use crate::expr::ScalarValue;
use crate::graph::declaration::{scalar_format, Role, ValueSpec};
use crate::graph::error::ProgramError;
use crate::graph::planner::{Plan, PlannedShape, ValueRole};

/// One execution binding (the spec's term for a run's input): a borrowed vector, or a host
/// scalar.
#[derive(Clone, Copy, Debug)]
pub enum ExecutionBinding<'a> {
    /// A fixed-width vector (inputs, state, or a GPU-resident one-row scalar).
    Vector(&'a GpuVector),
    /// A host scalar value.
    Scalar(ScalarValue),
}

/// The inputs and state of one run, by name. Vectors are borrowed: the run never keeps,
/// destroys or repacks them.
#[derive(Clone, Debug, Default)]
pub struct Bindings<'a> {
    pub(crate) entries: Vec<(String, ExecutionBinding<'a>)>,
}

impl<'a> Bindings<'a> {
    /// No bindings.
    pub fn new() -> Self {
        Self::default()
    }
    /// Binds a vector input or state (or a one-row vector for a scalar input).
    pub fn vector(mut self, name: impl Into<String>, vector: &'a GpuVector) -> Self {
        self.entries
            .push((name.into(), ExecutionBinding::Vector(vector)));
        self
    }
    /// Binds a host scalar.
    pub fn scalar(mut self, name: impl Into<String>, value: ScalarValue) -> Self {
        self.entries
            .push((name.into(), ExecutionBinding::Scalar(value)));
        self
    }
    /// Binds a float32 host scalar.
    pub fn float32(self, name: impl Into<String>, value: f32) -> Self {
        self.scalar(name, ScalarValue::Float32(value))
    }
    /// Binds a sint32 host scalar.
    pub fn sint32(self, name: impl Into<String>, value: i32) -> Self {
        self.scalar(name, ScalarValue::Sint32(value))
    }
    /// Binds a uint32 host scalar.
    pub fn uint32(self, name: impl Into<String>, value: u32) -> Self {
        self.scalar(name, ScalarValue::Uint32(value))
    }
}

/// Per-run options.
#[derive(Clone, Debug, Default)]
pub struct RunOptions<'a> {
    /// Caller storage for results, by name: borrowed, written in place, and returned as the
    /// result. Targets must match the result's format and chunk topology, must not overlap
    /// themselves, inputs, state or other targets, and cannot replace inputs or state.
    pub output_targets: Vec<(String, &'a GpuVector)>,
}

impl<'a> RunOptions<'a> {
    /// No targets.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds an output target for result `name`.
    pub fn target(mut self, name: impl Into<String>, vector: &'a GpuVector) -> Self {
        self.output_targets.push((name.into(), vector));
        self
    }
}

/// Where a value's storage comes from in one run.
#[derive(Clone, Debug)]
pub(crate) enum Storage<'a> {
    /// Caller storage: an input, state, GPU scalar input, or output target.
    Borrowed(&'a GpuVector),
    /// A host scalar.
    Host(ScalarValue),
    /// A result to allocate with these chunk lengths.
    Allocate {
        format: VectorFormat,
        chunks: Vec<u64>,
    },
}

/// The validated storage plan of one run, indexed like `Plan::values`.
pub(crate) struct RunLayout<'a> {
    /// `None` for values no run binds (unused texture declarations).
    pub storage: Vec<Option<Storage<'a>>>,
    /// Whether a result's storage is a caller target.
    pub targeted: Vec<bool>,
}

fn describe_chunks(chunks: &[u64]) -> String {
    let total: u64 = chunks.iter().sum();
    format!("{total} rows in chunks {chunks:?}")
}

fn layout_name(v: &GpuVector) -> String {
    match v.layout() {
        VectorLayout::Fixed => v.format().to_string(),
        _ => v.describe(),
    }
}

pub(crate) fn validate<'a>(
    plan: &Plan,
    bindings: &Bindings<'a>,
    options: &RunOptions<'a>,
) -> Result<RunLayout<'a>, ProgramError> {
    let graph = plan.graph.clone();
    let n = plan.values.len();
    let mut storage: Vec<Option<Storage<'a>>> = vec![None; n];
    let mut topology: Vec<Option<Vec<u64>>> = vec![None; n];

    // Inputs and state.
    for (name, binding) in &bindings.entries {
        let unexpected = |reason: &str| ProgramError::UnexpectedBinding {
            graph: graph.clone(),
            value: name.clone(),
            reason: reason.to_string(),
        };
        let Some((v, value)) = plan.value(name) else {
            return Err(unexpected("is not declared"));
        };
        if let ValueRole::Result { .. } = value.role {
            return Err(unexpected(&format!(
                "is produced by operation {}; supply caller storage for it as an output target",
                plan.writer(v)
            )));
        }
        if storage[v].is_some() {
            return Err(unexpected("is bound twice"));
        }
        let mismatch = |expected: String, actual: String| ProgramError::BindingMismatch {
            graph: graph.clone(),
            value: name.clone(),
            expected,
            actual,
        };
        let bound = match (&value.spec, binding) {
            (ValueSpec::Vector(decl), ExecutionBinding::Vector(vector)) => {
                if !matches!(vector.layout(), VectorLayout::Fixed) || vector.format() != decl.format
                {
                    return Err(mismatch(
                        format!("a fixed-width {} vector", decl.format),
                        format!("a {} vector", layout_name(vector)),
                    ));
                }
                let chunks = vector.chunk_lengths();
                check_declared(
                    "bindings",
                    name,
                    decl.length,
                    decl.chunk_lengths.as_deref(),
                    &chunks,
                )?;
                topology[v] = Some(chunks);
                Storage::Borrowed(vector)
            }
            (ValueSpec::Scalar(ty), ExecutionBinding::Scalar(s)) => {
                if value.role == ValueRole::State {
                    return Err(mismatch("a vector".into(), "a host scalar".into()));
                }
                if s.scalar() != *ty {
                    return Err(mismatch(
                        format!("a {ty} scalar"),
                        format!("a {} scalar", s.scalar()),
                    ));
                }
                Storage::Host(*s)
            }
            (ValueSpec::Scalar(ty), ExecutionBinding::Vector(vector)) => {
                let format = scalar_format(*ty);
                let ok = matches!(vector.layout(), VectorLayout::Fixed)
                    && vector.format() == format
                    && vector.chunk_lengths() == [1];
                if !ok {
                    return Err(mismatch(
                        format!("a {ty} value or a one-chunk, one-row {format} vector"),
                        format!(
                            "a {} vector of {}",
                            layout_name(vector),
                            describe_chunks(&vector.chunk_lengths())
                        ),
                    ));
                }
                topology[v] = Some(vec![1]);
                Storage::Borrowed(vector)
            }
            (ValueSpec::Vector(decl), ExecutionBinding::Scalar(s)) => {
                return Err(mismatch(
                    format!("a {} vector", decl.format),
                    format!("a {} scalar", s.scalar()),
                ))
            }
            (ValueSpec::Texture(_), _) => {
                return Err(mismatch(
                    "a texture (reusable graph execution does not bind textures yet)".into(),
                    "a buffer binding".into(),
                ))
            }
        };
        storage[v] = Some(bound);
    }
    for (v, value) in plan.values.iter().enumerate() {
        let role = match value.role {
            ValueRole::Input => Role::Input,
            ValueRole::State => Role::State,
            ValueRole::Result { .. } => continue,
        };
        if storage[v].is_none() && !matches!(value.spec, ValueSpec::Texture(_)) {
            return Err(ProgramError::MissingBinding {
                graph: graph.clone(),
                value: value.name.clone(),
                role,
            });
        }
    }

    // Output targets.
    let mut targets: HashMap<usize, &'a GpuVector> = HashMap::new();
    for (name, target) in &options.output_targets {
        let Some((v, value)) = plan.value(name) else {
            return Err(ProgramError::InvalidTarget {
                operation: "bindings".into(),
                value: name.clone(),
                reason: "names no declared value or result".into(),
            });
        };
        let invalid = |reason: String| ProgramError::InvalidTarget {
            operation: plan.writer(v).to_string(),
            value: name.clone(),
            reason,
        };
        if !matches!(value.role, ValueRole::Result { .. }) {
            return Err(invalid(format!(
                "cannot replace {} storage; targets are for operation results",
                value.role.as_role()
            )));
        }
        if targets.contains_key(&v) {
            return Err(invalid("is supplied twice".into()));
        }
        let format = value.spec.row_format().unwrap_or(VectorFormat::Uint32);
        if !matches!(target.layout(), VectorLayout::Fixed) || target.format() != format {
            return Err(invalid(format!(
                "must be a fixed-width {format} vector, got {}",
                layout_name(target)
            )));
        }
        if value.spec.as_scalar().is_some() && target.chunk_lengths() != [1] {
            return Err(invalid(format!(
                "of a scalar result must be one chunk of one row, got {}",
                describe_chunks(&target.chunk_lengths())
            )));
        }
        if let Some((a, b)) = overlapping_chunks(target.chunks()) {
            return Err(invalid(format!(
                "has overlapping writable chunks {a} and {b}"
            )));
        }
        for (other, s) in storage.iter().enumerate() {
            if let Some(Storage::Borrowed(bound)) = s {
                if aliases(target, bound) {
                    return Err(invalid(format!(
                        "aliases {} '{}'",
                        plan.values[other].role.as_role(),
                        plan.values[other].name
                    )));
                }
            }
        }
        for (&other, other_target) in &targets {
            if aliases(target, other_target) {
                return Err(invalid(format!(
                    "aliases the output target of '{}'",
                    plan.values[other].name
                )));
            }
        }
        targets.insert(v, *target);
    }

    // Result shapes, in producer order.
    for op in &plan.ops {
        for u in &op.uses {
            let value = &plan.values[u.value];
            if !u.access.writes() {
                continue;
            }
            let expected: Option<Vec<u64>> = match &u.shape {
                Some(PlannedShape::Like(src)) => topology[*src].clone(),
                Some(PlannedShape::Length(n)) => Some(
                    value
                        .spec
                        .as_vector()
                        .and_then(|d| d.chunk_lengths.clone())
                        .filter(|c| c.iter().sum::<u64>() == *n)
                        .unwrap_or_else(|| vec![*n]),
                ),
                Some(PlannedShape::Chunked(c)) => Some(c.clone()),
                None => None,
            };
            let mismatch = |expected: &[u64], actual: &[u64]| ProgramError::LengthMismatch {
                operation: op.id().to_string(),
                value: value.name.clone(),
                expected: describe_chunks(expected),
                actual: describe_chunks(actual),
            };
            match value.role {
                ValueRole::State | ValueRole::Input => {
                    let bound = topology[u.value].clone().unwrap_or_default();
                    if let Some(e) = &expected {
                        if *e != bound {
                            return Err(mismatch(e, &bound));
                        }
                    }
                }
                ValueRole::Result { .. } => {
                    if topology[u.value].is_some() {
                        continue;
                    }
                    let chunks = resolve_result(plan, u.value, expected, targets.get(&u.value))?;
                    topology[u.value] = Some(chunks);
                }
            }
        }
    }

    let mut targeted = vec![false; n];
    for (v, value) in plan.values.iter().enumerate() {
        if storage[v].is_some() {
            continue;
        }
        if let Some(t) = targets.get(&v) {
            storage[v] = Some(Storage::Borrowed(t));
            targeted[v] = true;
            continue;
        }
        let (Some(format), Some(chunks)) = (value.spec.row_format(), topology[v].clone()) else {
            continue;
        };
        storage[v] = Some(Storage::Allocate { format, chunks });
    }
    Ok(RunLayout { storage, targeted })
}

/// The chunk lengths of result `v`: from its shape, else its declaration, else its target;
/// then checked against the declaration's fixed dimensions and the target.
fn resolve_result(
    plan: &Plan,
    v: usize,
    from_shape: Option<Vec<u64>>,
    target: Option<&&GpuVector>,
) -> Result<Vec<u64>, ProgramError> {
    let value = &plan.values[v];
    let operation = plan.writer(v).to_string();
    let Some(decl) = value.spec.as_vector() else {
        // Scalars: one row.
        return Ok(vec![1]);
    };
    let target_chunks = target.map(|t| t.chunk_lengths());
    let chunks = match (&from_shape, &target_chunks) {
        (Some(s), _) => s.clone(),
        (None, Some(t)) => t.clone(),
        (None, None) => match (&decl.chunk_lengths, decl.length) {
            (Some(c), _) => c.clone(),
            (None, Some(l)) => vec![l],
            (None, None) => {
                return Err(ProgramError::ShapeUndetermined {
                    operation,
                    value: value.name.clone(),
                })
            }
        },
    };
    check_declared(
        &operation,
        &value.name,
        decl.length,
        decl.chunk_lengths.as_deref(),
        &chunks,
    )?;
    if let Some(t) = target_chunks {
        if t != chunks {
            return Err(ProgramError::InvalidTarget {
                operation,
                value: value.name.clone(),
                reason: format!(
                    "has {} but the result needs {}; chunks are never repacked",
                    describe_chunks(&t),
                    describe_chunks(&chunks)
                ),
            });
        }
    }
    Ok(chunks)
}

fn check_declared(
    operation: &str,
    name: &str,
    length: Option<u64>,
    chunk_lengths: Option<&[u64]>,
    actual: &[u64],
) -> Result<(), ProgramError> {
    let total: u64 = actual.iter().sum();
    let mismatch = |expected: String| ProgramError::LengthMismatch {
        operation: operation.to_string(),
        value: name.to_string(),
        expected,
        actual: describe_chunks(actual),
    };
    if let Some(c) = chunk_lengths {
        if c != actual {
            return Err(mismatch(format!("the declared chunks {c:?}")));
        }
    }
    if let Some(l) = length {
        if l != total {
            return Err(mismatch(format!("the declared length {l}")));
        }
    }
    Ok(())
}

/// Byte range `[start, end)` a chunk touches; `None` for empty chunks.
fn byte_range(c: &GpuData) -> Option<(u64, u64)> {
    (!c.is_empty()).then(|| (c.byte_offset(), c.byte_offset() + c.byte_span()))
}

fn overlap(a: &GpuData, b: &GpuData) -> bool {
    match (byte_range(a), byte_range(b)) {
        (Some((a0, a1)), Some((b0, b1))) => a.shares_buffer(b) && a0 < b1 && b0 < a1,
        _ => false,
    }
}

/// The first pair of chunks of one vector whose bytes overlap.
fn overlapping_chunks(chunks: &[GpuData]) -> Option<(usize, usize)> {
    for i in 0..chunks.len() {
        for j in i + 1..chunks.len() {
            if overlap(&chunks[i], &chunks[j]) {
                return Some((i, j));
            }
        }
    }
    None
}

/// Whether any chunk of `a` overlaps any chunk of `b` in memory.
fn aliases(a: &GpuVector, b: &GpuVector) -> bool {
    a.chunks()
        .iter()
        .any(|x| b.chunks().iter().any(|y| overlap(x, y)))
}
