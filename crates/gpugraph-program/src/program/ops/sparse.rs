//! Sparse primitives over gpgpu's `sparse` kernels: [`Spmv`] (thread-row or subgroup-row,
//! chosen from the mean row length and the device's subgroups) and [`Dot`] (single-workgroup
//! or hierarchical, chosen from N). CPU semantics: gpgpu's `sparse::cpu` oracles; float
//! results match within float32 rounding of the summation order, not bit for bit.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{BufferDescriptor, CommandGraph, DataView, VectorFormat};
use gpugraph_gpgpu::sparse::{self, CsrViews, ReduceRealization, SpmvRealization};

use crate::lowering::BackendCapabilities;
use crate::program::primitive::{Choice, CpuMemory, PrimitiveNode, ProgramPrimitive};
use crate::program::ProgramTreeError;

/// The SpMV realization for a matrix of `mean_row_length` on `caps`, unless `forced`.
pub fn spmv_choice(
    mean_row_length: f64,
    caps: &BackendCapabilities,
    forced: Option<SpmvRealization>,
) -> (SpmvRealization, String) {
    match forced {
        Some(r) => (r, format!("forced by the caller ({})", r.name())),
        None => SpmvRealization::choose(
            mean_row_length,
            caps.device.subgroups,
            caps.device.subgroup_min_size,
        ),
    }
}

/// `y = A·x` for a CSR matrix.
#[derive(Clone, Debug)]
pub struct Spmv {
    /// Id.
    pub id: String,
    /// The matrix.
    pub a: CsrViews,
    /// Stored entries / rows (from the host matrix; it selects the realization).
    pub mean_row_length: f64,
    /// Input vector (float32, `columns` rows).
    pub x: DataView,
    /// Output vector (float32, `rows` rows; another buffer).
    pub y: DataView,
    /// A realization to use instead of the automatic choice.
    pub forced: Option<SpmvRealization>,
}

impl ProgramPrimitive for Spmv {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        "spmv"
    }
    fn choices(&self, caps: &BackendCapabilities) -> Vec<Choice> {
        let (r, why) = spmv_choice(self.mean_row_length, caps, self.forced);
        vec![Choice::new("spmv", r.name(), why)]
    }
    fn command_nodes(
        &self,
        graph: &CommandGraph,
        caps: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        let (r, _) = spmv_choice(self.mean_row_length, caps, self.forced);
        let n = sparse::spmv_node(graph, "spmv", &self.a, self.x, self.y, None, r)?;
        Ok(vec![PrimitiveNode::Dispatch(n)])
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let id = &self.id;
        let offsets = m.read(id, &self.a.row_offsets)?;
        let cols = m.read(id, &self.a.column_indices)?;
        let vals = m.read_f32(id, &self.a.values)?;
        let x = m.read_f32(id, &self.x)?;
        let y: Vec<f32> = (0..self.a.rows as usize)
            .map(|row| {
                (offsets[row] as usize..offsets[row + 1] as usize).fold(0.0f32, |acc, k| {
                    acc + vals[k] * x.get(cols[k] as usize).copied().unwrap_or(0.0)
                })
            })
            .collect();
        m.write_f32(id, &self.y, &y)
    }
}

/// `out = a·b` (float32 vectors of equal length, a one-row float32 result).
#[derive(Clone, Debug)]
pub struct Dot {
    /// Id.
    pub id: String,
    /// Left.
    pub a: DataView,
    /// Right.
    pub b: DataView,
    /// The result word.
    pub out: DataView,
    scratch: Option<DataView>,
}

impl Dot {
    /// `out = a·b`; allocates the hierarchical realization's scratch as a graph transient
    /// when N exceeds one workgroup (construction schedules nothing).
    pub fn new(
        graph: &mut CommandGraph,
        id: impl Into<String>,
        a: DataView,
        b: DataView,
        out: DataView,
    ) -> Result<Self, ProgramTreeError> {
        let id = id.into();
        let scratch = match ReduceRealization::choose(a.len()).0 {
            ReduceRealization::SingleWorkgroup => None,
            ReduceRealization::Hierarchical => {
                let t = sparse::tiles(a.len());
                let h = graph.create_buffer(BufferDescriptor::new(
                    format!("{id}/partials"),
                    t * 4,
                    BufferUsages::STORAGE,
                ))?;
                Some(graph.create_packed_view(h, VectorFormat::Float32, t)?)
            }
        };
        Ok(Self {
            id,
            a,
            b,
            out,
            scratch,
        })
    }
}

impl ProgramPrimitive for Dot {
    fn id(&self) -> &str {
        &self.id
    }
    fn operation_type(&self) -> &str {
        "dot"
    }
    fn choices(&self, _: &BackendCapabilities) -> Vec<Choice> {
        let (r, why) = ReduceRealization::choose(self.a.len());
        vec![Choice::new("reduction", r.name(), why)]
    }
    fn command_nodes(
        &self,
        graph: &CommandGraph,
        _: &BackendCapabilities,
    ) -> Result<Vec<PrimitiveNode>, ProgramTreeError> {
        let (r, _) = ReduceRealization::choose(self.a.len());
        Ok(
            sparse::dot_nodes(graph, "dot", self.a, self.b, self.out, self.scratch, r)?
                .into_iter()
                .map(PrimitiveNode::Dispatch)
                .collect(),
        )
    }
    fn interpret(&self, m: &mut CpuMemory) -> Result<(), ProgramTreeError> {
        let a = m.read_f32(&self.id, &self.a)?;
        let b = m.read_f32(&self.id, &self.b)?;
        m.write_f32(&self.id, &self.out, &[sparse::cpu::dot(&a, &b)])
    }
}
