//! Exact uint32 word primitives (words.wgsl): [`CounterStep`], [`Compare`], [`Mix`]. Their
//! GPU and CPU results are bit-identical, which makes them the test vocabulary of loops and
//! conditionals; they are also the building blocks of counters in real programs.

use gpugraph_command::{
    Binding, CommandGraph, DataView, DispatchNode, Grid, ShaderSource, VectorFormat,
};

use crate::lowering::BackendCapabilities;
use crate::program::primitive::{require_word, Choice, CpuMemory, PrimitiveNode, ProgramPrimitive};
use crate::program::ProgramTreeError;

const WGSL: &str = include_str!("words.wgsl");

/// `WordParams` in words.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct WordParams {
    pub n: u32,
    pub constant: u32,
    pub limit: u32,
    pub off_target: u32,
    pub off_word: u32,
    pub off_counter: u32,
    pub off_pred: u32,
    pub pad0: u32,
}

fn offset(graph: &CommandGraph, v: &DataView) -> u32 {
    let align = u64::from(graph.device().limits().min_storage_buffer_offset_alignment);
    v.aligned_range(align).element_offset as u32
}

fn node(
    id: &str,
    entry: &str,
    params: WordParams,
    views: Vec<Binding>,
    grid: Grid,
) -> PrimitiveNode {
    let mut bindings = vec![Binding::params(0, &params)];
    bindings.extend(views);
    PrimitiveNode::Dispatch(DispatchNode::new(
        id,
        ShaderSource::new(format!("program/words/{entry}"), WGSL),
        entry,
        bindings,
        grid,
    ))
}

fn distinct(id: &str, a: &DataView, b: &DataView) -> Result<(), ProgramTreeError> {
    if a.buffer() == b.buffer() {
        return Err(ProgramTreeError::Cpu {
            operation: id.to_string(),
            reason: "its two words must live in different buffers (one is written while the other is bound)".into(),
        });
    }
    Ok(())
}

/// `counter += 1; predicate = counter < limit` (one uint32 word each, different buffers).
#[derive(Clone, Debug)]
pub struct CounterStep {
    /// Id.
    pub id: String,
    /// The counter word.
    pub counter: DataView,
    /// The predicate word written.
    pub predicate: DataView,
    /// The exclusive bound.
    pub limit: u32,
}

impl ProgramPrimitive for CounterStep {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        "counter-step"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        graph: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        require_word(&self.id, &self.counter, VectorFormat::Uint32)?;
        require_word(&self.id, &self.predicate, VectorFormat::Uint32)?;
        distinct(&self.id, &self.counter, &self.predicate)?;
        let params = WordParams {
            limit: self.limit,
            off_counter: offset(graph, &self.counter),
            off_pred: offset(graph, &self.predicate),
            ..Default::default()
        };
        Ok(vec![node(
            "step",
            "counter_step",
            params,
            vec![
                Binding::read_write(3, self.counter),
                Binding::read_write(4, self.predicate),
            ],
            Grid::Workgroups([1, 1, 1]),
        )])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let c = m.read(&self.id, &self.counter)?[0].wrapping_add(1);
        m.write(&self.id, &self.counter, &[c])?;
        m.write(&self.id, &self.predicate, &[u32::from(c < self.limit)])
    }
}

/// `output = input >= threshold` (uint32 words, different buffers).
#[derive(Clone, Debug)]
pub struct Compare {
    /// Id.
    pub id: String,
    /// The word compared.
    pub input: DataView,
    /// The bound.
    pub threshold: u32,
    /// The 0/1 word written.
    pub output: DataView,
}

impl ProgramPrimitive for Compare {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        "compare"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        graph: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        require_word(&self.id, &self.input, VectorFormat::Uint32)?;
        require_word(&self.id, &self.output, VectorFormat::Uint32)?;
        distinct(&self.id, &self.input, &self.output)?;
        let params = WordParams {
            limit: self.threshold,
            off_counter: offset(graph, &self.input),
            off_pred: offset(graph, &self.output),
            ..Default::default()
        };
        Ok(vec![node(
            "compare",
            "compare",
            params,
            vec![
                Binding::read(5, self.input),
                Binding::read_write(6, self.output),
            ],
            Grid::Workgroups([1, 1, 1]),
        )])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let v = m.read(&self.id, &self.input)?[0];
        m.write(&self.id, &self.output, &[u32::from(v >= self.threshold)])
    }
}

/// `target[i] = target[i]·31 + constant + word + i` (wrapping uint32): order-sensitive, so
/// the result shows exactly which executions ran, in which order.
#[derive(Clone, Debug)]
pub struct Mix {
    /// Id.
    pub id: String,
    /// The uint32 vector updated in place.
    pub target: DataView,
    /// A uint32 word added to every row (another buffer).
    pub word: DataView,
    /// A constant added to every row.
    pub constant: u32,
}

impl ProgramPrimitive for Mix {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        "mix"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        Vec::new()
    }
    fn command_nodes(
        &self,
        graph: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        require_word(&self.id, &self.word, VectorFormat::Uint32)?;
        distinct(&self.id, &self.target, &self.word)?;
        if self.target.format() != VectorFormat::Uint32 || !self.target.is_packed() {
            return Err(ProgramTreeError::Cpu {
                operation: self.id.clone(),
                reason: format!(
                    "the target is {}; mix needs packed uint32",
                    self.target.format()
                ),
            });
        }
        let params = WordParams {
            n: self.target.len() as u32,
            constant: self.constant,
            off_target: offset(graph, &self.target),
            off_word: offset(graph, &self.word),
            ..Default::default()
        };
        Ok(vec![node(
            "mix",
            "mix",
            params,
            vec![
                Binding::read_write(1, self.target),
                Binding::read(2, self.word),
            ],
            Grid::Rows {
                rows: self.target.len(),
                rows_per_workgroup: 64,
            },
        )])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let w = m.read(&self.id, &self.word)?[0];
        let t: Vec<u32> = m
            .read(&self.id, &self.target)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.wrapping_mul(31)
                    .wrapping_add(self.constant)
                    .wrapping_add(w)
                    .wrapping_add(i as u32)
            })
            .collect();
        m.write(&self.id, &self.target, &t)
    }
}
