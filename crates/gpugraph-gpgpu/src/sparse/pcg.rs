//! The fused passes of Jacobi-preconditioned conjugate gradients over whole buffers (see
//! pcg.wgsl). Prologue: `q = A·x0`; start (r = b − q, z = D⁻¹r, p = z with r·z, r·r
//! partials); rho (one workgroup: r·z, r·r, the predicate). Each iteration is three
//! dispatches: SpMV + p·q partials; update (α folded from the p·q partials by every
//! workgroup, then x/r/z with r·z and r·r partials); direction (β folded from the r·z
//! partials by every workgroup, then p = z + βp; workgroup 0 also writes the scalars and the
//! predicate). The folds are redundant per workgroup, which is why [`PcgVectors`] picks its
//! rows per workgroup so the partials stay ≤ [`FOLD_PARTIALS`].

use gpugraph_command::wgpu::BufferUsages;
use gpugraph_command::{
    Access, Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DispatchNode, Grid,
    VectorFormat,
};

use super::{
    rows_grid_of, spmv_node_tiled, tiles_of, CsrViews, SpmvRealization, ROWS_PER_WG, WG,
};
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
/// Word of the newest `r·z` (float32 bits; the direction pass writes it, the next update
/// reads it and moves it to word 0, so no pass reads a word another workgroup of the same
/// pass writes).
pub const S_RZ_NEW: u64 = 7;
/// The most partial sums a PCG pass leaves for the next pass to fold in every workgroup.
pub const FOLD_PARTIALS: u64 = 1024;
/// The largest rows per workgroup [`PcgVectors::rows_per_workgroup`] picks.
pub const MAX_ROWS_PER_WG: u32 = 1 << 16;

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
    /// Rows per workgroup of the vector passes ([`Self::rows_per_workgroup`]).
    pub rows_per_wg: u32,
}

/// The node builders over one [`PcgVectors`].
#[derive(Clone, Copy, Debug)]
pub struct PcgNodes<'a> {
    /// The buffers.
    pub v: &'a PcgVectors,
    /// The matrix.
    pub a: &'a CsrViews,
}

fn source(stage: &'static str, rows_per_wg: u32) -> String {
    ShaderSource::new("sparse/pcg.wgsl")
        .comment(format!("gpugraph-gpgpu sparse/pcg.rs: {stage}"))
        .u32("WG", WG)
        .u32("ROWS_PER_WG", rows_per_wg)
        .define(stage)
        .build()
}

impl PcgVectors {
    /// Rows per workgroup of the vector passes for `n` unknowns, and why: the smallest power
    /// of two ≥ [`ROWS_PER_WG`] that leaves at most [`FOLD_PARTIALS`] partials (each
    /// workgroup of the next pass folds them all; fewer, longer tiles make that fold cheap),
    /// capped at [`MAX_ROWS_PER_WG`].
    pub fn rows_per_workgroup(n: u64) -> (u32, String) {
        let mut rows = ROWS_PER_WG;
        while tiles_of(n, rows) > FOLD_PARTIALS && rows < MAX_ROWS_PER_WG {
            rows *= 2;
        }
        let t = tiles_of(n, rows);
        (
            rows,
            format!(
                "{rows} rows per workgroup: {t} partials, folded redundantly by every workgroup of the next pass (≤ {FOLD_PARTIALS} keeps the fold small), so α and β need no pass of their own"
            ),
        )
    }

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
        let (rows_per_wg, _) = Self::rows_per_workgroup(u64::from(n));
        let t = tiles_of(u64::from(n), rows_per_wg).max(1);
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
            rows_per_wg,
        })
    }

    /// Partial sums of one vector pass.
    pub fn tiles(&self) -> u64 {
        tiles_of(u64::from(self.n), self.rows_per_wg)
    }

    fn params(&self) -> PcgParams {
        PcgParams {
            n: self.n,
            tiles: self.tiles() as u32,
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
            gpugraph_command::ShaderSource::new(
                format!("sparse/pcg/{entry}"),
                source(stage, self.v.rows_per_wg),
            ),
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
        spmv_node_tiled(
            graph,
            id,
            self.a,
            self.v.view(graph, self.v.x, n)?,
            self.v.view(graph, self.v.q, n)?,
            None,
            realization,
            self.v.rows_per_wg,
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
            rows_grid_of(u64::from(v.n), v.rows_per_wg),
        )
    }

    /// `rz = Σ r·z partials, rr = Σ r·r partials, PRED &= rr > TOL2` (one workgroup; the
    /// prologue's scalar pass).
    pub fn rho(&self, id: &str) -> DispatchNode {
        self.node(
            id,
            "RHO",
            "pcg_rho",
            vec![
                Binding::handle(1, self.v.scalars, Access::ReadWrite),
                Binding::handle(2, self.v.partials, Access::Read),
            ],
            Grid::Workgroups([1, 1, 1]),
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
        spmv_node_tiled(
            graph,
            id,
            self.a,
            self.v.view(graph, self.v.p, n)?,
            self.v.view(graph, self.v.q, n)?,
            Some(self.v.view(graph, self.v.pq_partials, self.v.tiles())?),
            realization,
            self.v.rows_per_wg,
        )
    }

    /// `α = rz / Σ p·q partials` (folded in every workgroup; workgroup 0 records pq, α, rz
    /// and a breakdown), then `x += αp, r −= αq, z = D⁻¹r` with r·z and r·r partials.
    pub fn update(&self, id: &str) -> DispatchNode {
        let v = self.v;
        self.node(
            id,
            "UPDATE",
            "pcg_update",
            vec![
                Binding::handle(1, v.scalars, Access::ReadWrite),
                Binding::handle(2, v.p, Access::Read),
                Binding::handle(3, v.q, Access::Read),
                Binding::handle(4, v.dinv, Access::Read),
                Binding::handle(5, v.x, Access::ReadWrite),
                Binding::handle(6, v.r, Access::ReadWrite),
                Binding::handle(7, v.z, Access::ReadWrite),
                Binding::handle(8, v.partials, Access::ReadWrite),
                Binding::handle(9, v.pq_partials, Access::Read),
            ],
            rows_grid_of(u64::from(v.n), v.rows_per_wg),
        )
    }

    /// `β = rz'/rz` with rz' folded from the r·z partials in every workgroup, then
    /// `p = z + βp`; workgroup 0 also sums r·r and writes β, rz' (word [`S_RZ_NEW`]), r·r and
    /// `PRED &= rr > TOL2`.
    pub fn direction(&self, id: &str) -> DispatchNode {
        let v = self.v;
        self.node(
            id,
            "DIRECTION",
            "pcg_direction",
            vec![
                Binding::handle(1, v.scalars, Access::ReadWrite),
                Binding::handle(2, v.z, Access::Read),
                Binding::handle(3, v.p, Access::ReadWrite),
                Binding::handle(4, v.partials, Access::Read),
            ],
            rows_grid_of(u64::from(v.n), v.rows_per_wg),
        )
    }
}

#[cfg(test)]
pub(crate) fn check_layouts() {
    use crate::kernel::{assert_struct_layout, field_offsets};
    for stage in ["START", "UPDATE", "DIRECTION", "RHO"] {
        assert_struct_layout(
            &source(stage, ROWS_PER_WG),
            "PcgParams",
            Some(std::mem::size_of::<PcgParams>()),
            &field_offsets!(PcgParams; n, tiles, pad0, pad1)[..],
        );
    }
}
