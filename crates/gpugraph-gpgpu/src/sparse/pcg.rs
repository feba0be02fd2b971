//! The fused passes of Jacobi-preconditioned conjugate gradients over whole buffers (see
//! pcg.wgsl): start (r = b − A·x0, z = D⁻¹r, p = z), SpMV + p·q, α, the x/r/z update with
//! r·z and r·r, β and the predicate, the new direction.

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    Access, Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DispatchNode, Grid,
    VectorFormat,
};

use super::{rows_grid, spmv_node, tiles, CsrViews, SpmvRealization, ROWS_PER_WG, WG};
use crate::error::AlgorithmError;
use crate::kernel::{ShaderSource, ViewCheck};

/// uint32 words of the scalars buffer.
pub const PCG_SCALARS: u64 = 8;
/// Word of `r·r` (float32 bits).
pub const S_RR: u64 = 4;
/// Word of `(tol·|b|)²` (float32 bits), written by the host before the run.
pub const S_TOL2: u64 = 5;
/// Word of the predicate (uint32: 1 while `r·r > TOL2` and no breakdown); the host starts it
/// at 1.
pub const S_PRED: u64 = 6;

/// `PcgParams` in pcg.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct PcgParams {
    n: u32,
    tiles: u32,
    pad0: u32,
    pad1: u32,
}

/// The buffers of one CG solve of `n` unknowns, each a whole float32 buffer of `n` rows
/// (`scalars`: [`PCG_SCALARS`] uint32 words). `b`, `dinv`, `x` and `scalars` are the
/// caller's; `r`, `z`, `p`, `q` and the partial sums are graph transients.
#[derive(Clone, Copy, Debug)]
pub struct PcgVectors {
    /// Unknowns.
    pub n: u32,
    /// Right-hand side.
    pub b: BufferHandle,
    /// Inverse diagonal (Jacobi), or ones.
    pub dinv: BufferHandle,
    /// Iterate (initial guess on entry).
    pub x: BufferHandle,
    /// Scalars (see pcg.wgsl).
    pub scalars: BufferHandle,
    /// Residual.
    pub r: BufferHandle,
    /// Preconditioned residual.
    pub z: BufferHandle,
    /// Direction.
    pub p: BufferHandle,
    /// `A·p`.
    pub q: BufferHandle,
    /// r·z and r·r partials (`2·tiles`).
    pub partials: BufferHandle,
    /// p·q partials (`tiles`).
    pub pq_partials: BufferHandle,
}

/// The node builders over one [`PcgVectors`].
#[derive(Clone, Copy, Debug)]
pub struct PcgNodes<'a> {
    /// The buffers.
    pub v: &'a PcgVectors,
    /// The matrix.
    pub a: &'a CsrViews,
}

fn source(stage: &'static str) -> String {
    ShaderSource::new("sparse/pcg.wgsl")
        .comment(format!("gpugraph-gpgpu sparse/pcg.rs: {stage}"))
        .u32("WG", WG)
        .u32("ROWS_PER_WG", ROWS_PER_WG)
        .define(stage)
        .build()
}

impl PcgVectors {
    /// Creates the transients `{id}/r|z|p|q|partials|pq-partials` for `n` unknowns over the
    /// caller's `b`, `dinv`, `x` (float32, ≥ `n` rows) and `scalars` (≥ [`PCG_SCALARS`]
    /// words), after checking their sizes.
    pub fn new(
        graph: &mut CommandGraph,
        id: &str,
        n: u32,
        b: BufferHandle,
        dinv: BufferHandle,
        x: BufferHandle,
        scalars: BufferHandle,
    ) -> Result<Self, AlgorithmError> {
        let check = ViewCheck::new("pcg", id);
        let bytes = u64::from(n) * 4;
        for (what, h, need) in [
            ("b", b, bytes),
            ("dinv", dinv, bytes),
            ("x", x, bytes),
            ("scalars", scalars, PCG_SCALARS * 4),
        ] {
            let have = graph.buffer_descriptor(h)?.byte_length;
            if have < need {
                return Err(check.length(what, "bytes", have, need, "the unknowns"));
            }
        }
        let t = tiles(u64::from(n)).max(1);
        let mut transient = |name: &str, len: u64| {
            graph.create_buffer(BufferDescriptor::new(
                format!("{id}/{name}"),
                (len * 4).max(4),
                BufferUsages::STORAGE,
            ))
        };
        Ok(Self {
            n,
            b,
            dinv,
            x,
            scalars,
            r: transient("r", u64::from(n))?,
            z: transient("z", u64::from(n))?,
            p: transient("p", u64::from(n))?,
            q: transient("q", u64::from(n))?,
            partials: transient("partials", 2 * t)?,
            pq_partials: transient("pq-partials", t)?,
        })
    }

    fn params(&self) -> PcgParams {
        PcgParams {
            n: self.n,
            tiles: tiles(u64::from(self.n)) as u32,
            pad0: 0,
            pad1: 0,
        }
    }

    fn view(
        &self,
        graph: &CommandGraph,
        h: BufferHandle,
        len: u64,
    ) -> Result<DataView, AlgorithmError> {
        Ok(graph.create_packed_view(h, VectorFormat::Float32, len)?)
    }
}

impl PcgNodes<'_> {
    fn node(
        &self,
        id: &str,
        stage: &'static str,
        entry: &str,
        bindings: Vec<Binding>,
        grid: Grid,
    ) -> DispatchNode {
        let mut all = vec![Binding::params(0, &self.v.params())];
        all.extend(bindings);
        DispatchNode::new(
            id,
            gpugraph_command::ShaderSource::new(format!("sparse/pcg/{entry}"), source(stage)),
            entry,
            all,
            grid,
        )
    }

    fn check(&self, id: &str) -> Result<(), AlgorithmError> {
        if self.a.rows != self.a.columns || self.a.rows != self.v.n {
            return Err(ViewCheck::new("pcg", id).length(
                "matrix rows",
                "rows",
                u64::from(self.a.rows),
                u64::from(self.v.n),
                "a square matrix of the unknowns",
            ));
        }
        Ok(())
    }

    /// `q = A·x` (SpMV of the initial guess).
    pub fn initial_spmv(
        &self,
        graph: &CommandGraph,
        id: &str,
        realization: SpmvRealization,
    ) -> Result<DispatchNode, AlgorithmError> {
        self.check(id)?;
        let n = u64::from(self.v.n);
        spmv_node(
            graph,
            id,
            self.a,
            self.v.view(graph, self.v.x, n)?,
            self.v.view(graph, self.v.q, n)?,
            None,
            realization,
        )
    }

    /// `r = b − q, z = D⁻¹r, p = z` with r·z and r·r partials.
    pub fn start(&self, id: &str) -> DispatchNode {
        let v = self.v;
        self.node(
            id,
            "START",
            "pcg_start",
            vec![
                Binding::handle(2, v.b, Access::Read),
                Binding::handle(3, v.q, Access::Read),
                Binding::handle(4, v.dinv, Access::Read),
                Binding::handle(5, v.r, Access::ReadWrite),
                Binding::handle(6, v.z, Access::ReadWrite),
                Binding::handle(7, v.p, Access::ReadWrite),
                Binding::handle(8, v.partials, Access::ReadWrite),
            ],
            rows_grid(u64::from(v.n)),
        )
    }

    /// `q = A·p` with p·q partials (the fused SpMV + dot).
    pub fn spmv_dot(
        &self,
        graph: &CommandGraph,
        id: &str,
        realization: SpmvRealization,
    ) -> Result<DispatchNode, AlgorithmError> {
        self.check(id)?;
        let n = u64::from(self.v.n);
        spmv_node(
            graph,
            id,
            self.a,
            self.v.view(graph, self.v.p, n)?,
            self.v.view(graph, self.v.q, n)?,
            Some(self.v.view(graph, self.v.pq_partials, tiles(n))?),
            realization,
        )
    }

    /// `α = rz / Σ p·q partials` (one workgroup).
    pub fn alpha(&self, id: &str) -> DispatchNode {
        self.node(
            id,
            "ALPHA",
            "pcg_alpha",
            vec![
                Binding::handle(1, self.v.scalars, Access::ReadWrite),
                Binding::handle(2, self.v.pq_partials, Access::Read),
            ],
            Grid::Workgroups([1, 1, 1]),
        )
    }

    /// `x += αp, r −= αq, z = D⁻¹r` with r·z and r·r partials.
    pub fn update(&self, id: &str) -> DispatchNode {
        let v = self.v;
        self.node(
            id,
            "UPDATE",
            "pcg_update",
            vec![
                Binding::handle(1, v.scalars, Access::Read),
                Binding::handle(2, v.p, Access::Read),
                Binding::handle(3, v.q, Access::Read),
                Binding::handle(4, v.dinv, Access::Read),
                Binding::handle(5, v.x, Access::ReadWrite),
                Binding::handle(6, v.r, Access::ReadWrite),
                Binding::handle(7, v.z, Access::ReadWrite),
                Binding::handle(8, v.partials, Access::ReadWrite),
            ],
            rows_grid(u64::from(v.n)),
        )
    }

    /// `β = rz'/rz, rz = rz', rr, PRED &= rr > TOL2` (one workgroup).
    pub fn beta(&self, id: &str) -> DispatchNode {
        self.node(
            id,
            "BETA",
            "pcg_beta",
            vec![
                Binding::handle(1, self.v.scalars, Access::ReadWrite),
                Binding::handle(2, self.v.partials, Access::Read),
            ],
            Grid::Workgroups([1, 1, 1]),
        )
    }

    /// `p = z + βp`.
    pub fn direction(&self, id: &str) -> DispatchNode {
        let v = self.v;
        self.node(
            id,
            "DIRECTION",
            "pcg_direction",
            vec![
                Binding::handle(1, v.scalars, Access::Read),
                Binding::handle(2, v.z, Access::Read),
                Binding::handle(3, v.p, Access::ReadWrite),
            ],
            rows_grid(u64::from(v.n)),
        )
    }
}

#[cfg(test)]
pub(crate) fn check_layouts() {
    use crate::kernel::{assert_struct_layout, field_offsets};
    for stage in ["START", "UPDATE", "DIRECTION", "ALPHA", "BETA"] {
        assert_struct_layout(
            &source(stage),
            "PcgParams",
            Some(std::mem::size_of::<PcgParams>()),
            &field_offsets!(PcgParams; n, tiles, pad0, pad1)[..],
        );
    }
}
