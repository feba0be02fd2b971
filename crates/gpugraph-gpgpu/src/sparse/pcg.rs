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
    Binding, BufferDescriptor, BufferHandle, CommandGraph, DataView, DispatchNode, Grid,
    VectorFormat,
};

use super::{distinct, require, rows_grid_of, tiles_of, ROWS_PER_WG, WG};
use crate::error::AlgorithmError;
use crate::kernel::{shader, ViewCheck};

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

/// The shape of one CG solve's vector passes: `n` unknowns, `rows_per_wg` rows per
/// workgroup (see [`PcgVectors::rows_per_workgroup`]). Its methods build the passes
/// (see pcg.wgsl) over whole-buffer views; they describe nodes and schedule nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcgShape {
    /// Unknowns.
    pub n: u32,
    /// Rows per workgroup (a power of two ≥ [`WG`]).
    pub rows_per_wg: u32,
}

impl PcgShape {
    /// The shape for `n` unknowns ([`PcgVectors::rows_per_workgroup`] picks the tiles).
    pub fn new(n: u32) -> Self {
        Self {
            n,
            rows_per_wg: PcgVectors::rows_per_workgroup(u64::from(n)).0,
        }
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

    fn node(
        &self,
        id: &str,
        stage: &'static str,
        entry: &str,
        bindings: Vec<Binding>,
        grid: Grid,
    ) -> DispatchNode {
        let mut all = vec![Binding::params(0, &self.params())];
        all.extend(bindings);
        DispatchNode::new(
            id,
            gpugraph_command::ShaderSource::new(
                format!("sparse/pcg/{entry}"),
                source(stage, self.rows_per_wg),
            ),
            entry,
            all,
            grid,
        )
    }

    fn grid(&self) -> Grid {
        rows_grid_of(u64::from(self.n), self.rows_per_wg)
    }

    /// Checks the views of pass `id`: vectors are `n` float32 rows, `partials` `2·tiles`
    /// float32 rows, `pq partials` `tiles` (tiles ≥ 1), `scalars` [`PCG_SCALARS`] uint32
    /// words; all from byte 0 of their buffers (the passes index from 0), and the `written`
    /// ones in buffers of their own.
    fn check(
        &self,
        id: &str,
        views: &[(&str, &DataView)],
        written: &[&str],
    ) -> Result<(), AlgorithmError> {
        let check = ViewCheck::new("pcg", id);
        if !self.rows_per_wg.is_power_of_two() || self.rows_per_wg < WG {
            return Err(check.unsupported(
                "rows per workgroup",
                format!("a power of two ≥ {WG}"),
                self.rows_per_wg.to_string(),
            ));
        }
        let n = u64::from(self.n);
        // At least one tile, so that an empty system still has partial buffers to bind.
        let t = self.tiles().max(1);
        for (role, v) in views {
            let (format, rows, rule) = match *role {
                "partials" => (VectorFormat::Float32, 2 * t, "two per tile"),
                "pq partials" => (VectorFormat::Float32, t, "one per tile"),
                "scalars" => (VectorFormat::Uint32, PCG_SCALARS, "the PCG scalars"),
                _ => (VectorFormat::Float32, n, "the unknowns"),
            };
            require(check, role, v, format, rows, rule)?;
            if v.byte_offset() != 0 {
                return Err(check.unsupported(
                    *role,
                    "a view from byte 0 of its buffer",
                    format!("a view at byte {}", v.byte_offset()),
                ));
            }
        }
        for w in written {
            if let Some((_, wv)) = views.iter().find(|(r, _)| r == w) {
                let others: Vec<(&str, &DataView)> =
                    views.iter().filter(|(r, _)| r != w).copied().collect();
                distinct(check, (*w, *wv), &others)?;
            }
        }
        Ok(())
    }

    /// `r = b − q, z = D⁻¹r, p = z` with r·z and r·r partials.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &self,
        id: &str,
        b: DataView,
        q: DataView,
        dinv: DataView,
        r: DataView,
        z: DataView,
        p: DataView,
        partials: DataView,
    ) -> Result<DispatchNode, AlgorithmError> {
        let slots = [
            (2, "b", b, READ),
            (3, "q", q, READ),
            (4, "dinv", dinv, READ),
            (5, "r", r, WRITE),
            (6, "z", z, WRITE),
            (7, "p", p, WRITE),
            (8, "partials", partials, WRITE),
        ];
        self.pass(id, "START", "pcg_start", slots, self.grid())
    }

    /// `rz = Σ r·z partials, rr = Σ r·r partials, PRED &= rr > TOL2` (one workgroup; the
    /// prologue's scalar pass).
    pub fn rho(
        &self,
        id: &str,
        partials: DataView,
        scalars: DataView,
    ) -> Result<DispatchNode, AlgorithmError> {
        let slots = [
            (2, "partials", partials, READ),
            (1, "scalars", scalars, WRITE),
        ];
        self.pass(id, "RHO", "pcg_rho", slots, Grid::Workgroups([1, 1, 1]))
    }

    /// `α = rz / Σ p·q partials` (folded in every workgroup; workgroup 0 records pq, α, rz
    /// and a breakdown), then `x += αp, r −= αq, z = D⁻¹r` with r·z and r·r partials.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &self,
        id: &str,
        p: DataView,
        q: DataView,
        dinv: DataView,
        pq_partials: DataView,
        x: DataView,
        r: DataView,
        z: DataView,
        partials: DataView,
        scalars: DataView,
    ) -> Result<DispatchNode, AlgorithmError> {
        let slots = [
            (2, "p", p, READ),
            (3, "q", q, READ),
            (4, "dinv", dinv, READ),
            (9, "pq partials", pq_partials, READ),
            (5, "x", x, WRITE),
            (6, "r", r, WRITE),
            (7, "z", z, WRITE),
            (8, "partials", partials, WRITE),
            (1, "scalars", scalars, WRITE),
        ];
        self.pass(id, "UPDATE", "pcg_update", slots, self.grid())
    }

    /// `β = rz'/rz` with rz' folded from the r·z partials in every workgroup, then
    /// `p = z + βp`; workgroup 0 also writes β, rz' (word [`S_RZ_NEW`]), r·r and
    /// `PRED &= rr > TOL2`.
    pub fn direction(
        &self,
        id: &str,
        z: DataView,
        partials: DataView,
        p: DataView,
        scalars: DataView,
    ) -> Result<DispatchNode, AlgorithmError> {
        let slots = [
            (2, "z", z, READ),
            (4, "partials", partials, READ),
            (3, "p", p, WRITE),
            (1, "scalars", scalars, WRITE),
        ];
        self.pass(id, "DIRECTION", "pcg_direction", slots, self.grid())
    }

    /// Pass `id` of `stage` over `slots` (binding slot, role, view, written), checked in
    /// their order by [`Self::check`] and bound after the parameters.
    fn pass<const N: usize>(
        &self,
        id: &str,
        stage: &'static str,
        entry: &str,
        slots: [(u32, &str, DataView, bool); N],
        grid: Grid,
    ) -> Result<DispatchNode, AlgorithmError> {
        let views: Vec<(&str, &DataView)> = slots.iter().map(|(_, r, v, _)| (*r, v)).collect();
        let written: Vec<&str> = slots.iter().filter(|s| s.3).map(|s| s.1).collect();
        self.check(id, &views, &written)?;
        let bindings = slots
            .into_iter()
            .map(|(slot, _, v, written)| {
                if written {
                    Binding::read_write(slot, v)
                } else {
                    Binding::read(slot, v)
                }
            })
            .collect();
        Ok(self.node(id, stage, entry, bindings, grid))
    }
}

/// [`PcgVectors::pass`] slot access: read only, or read and written.
const READ: bool = false;
const WRITE: bool = true;

fn source(stage: &'static str, rows_per_wg: u32) -> String {
    shader("sparse/pcg.wgsl")
        .comment(format!("gpugraph-gpgpu sparse/pcg.rs: {stage}"))
        .u32("WG", WG)
        .u32("ROWS_PER_WG", rows_per_wg)
        .define(stage)
        .define_if(matches!(stage, "START" | "UPDATE"), "ROW_PASS")
        .define_if(matches!(stage, "RHO" | "DIRECTION"), "FOLD_PASS")
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

    /// The shape of its passes.
    pub fn shape(&self) -> PcgShape {
        PcgShape {
            n: self.n,
            rows_per_wg: self.rows_per_wg,
        }
    }

    /// Partial sums of one vector pass.
    pub fn tiles(&self) -> u64 {
        self.shape().tiles()
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
