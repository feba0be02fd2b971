//! The fused passes of Jacobi-preconditioned CG as semantic operations (gpgpu
//! `sparse::PcgShape` realizes them): `pcg-start` (r = b − q, z = D⁻¹r, p = z with r·z and
//! r·r partials), `pcg-rho` (the prologue's scalars and predicate), `pcg-update` (α folded
//! from the p·q partials, then x, r, z with r·z and r·r partials) and `pcg-direction` (β
//! folded from the r·z partials, then p = z + βp, the scalars and the predicate). The
//! matrix product is the sparse `spmv-dot` operation. Every operation carries the attributes
//! `n` and `rows_per_wg`; scalars are the uint32 words of gpgpu's `sparse::PCG_SCALARS`.
//!
//! CPU semantics: float32 vectors, each tile's partial summed in f64 then rounded, partials
//! summed in f64 (the GPU sums them in float32 in a fixed tree order, so scalars agree to
//! float32 rounding, not bit for bit).

use gpugraph_command::DataView;
use gpugraph_gpgpu::sparse::{PcgShape, FOLD_PARTIALS, S_PRED, S_RR, S_RZ_NEW, S_TOL2};

use super::sparse::{tile_sums, ROWS_PER_WG_ATTR};
use crate::lowering::{Attribute, ProgramLowering, ProgramOp};
use crate::program::primitive::{CpuMemory, PrimitiveNode};
use crate::program::ProgramTreeError;

/// Scalar words (float32 bits) besides gpgpu's named ones.
const S_RZ: usize = 0;
const S_PQ: usize = 1;
const S_ALPHA: usize = 2;
const S_BETA: usize = 3;

/// A PCG operation of type `name` over `shape`.
pub fn pcg_op(id: impl Into<String>, name: &str, shape: PcgShape) -> ProgramOp {
    ProgramOp::new(id, name)
        .attr("n", Attribute::U32(shape.n))
        .attr(ROWS_PER_WG_ATTR, Attribute::U32(shape.rows_per_wg))
}

fn shape(op: &ProgramOp) -> Result<PcgShape, ProgramTreeError> {
    Ok(PcgShape {
        n: op.u32_attr("n")?,
        rows_per_wg: op.u32_attr(ROWS_PER_WG_ATTR)?,
    })
}

fn one(node: gpugraph_command::DispatchNode) -> Vec<PrimitiveNode> {
    vec![PrimitiveNode::Dispatch(node)]
}

fn sum(parts: &[f32]) -> f32 {
    parts.iter().map(|&v| f64::from(v)).sum::<f64>() as f32
}

/// `(Σ first half, Σ second half)`: the r·z and r·r folds of the partials.
fn fold2(parts: &[f32]) -> (f32, f32) {
    let t = parts.len() / 2;
    (sum(&parts[..t]), sum(&parts[t..]))
}

struct Cpu<'a> {
    op: &'a ProgramOp,
    m: &'a mut CpuMemory,
}

impl Cpu<'_> {
    fn f32s(&self, role: &str) -> Result<Vec<f32>, ProgramTreeError> {
        self.m.read_f32(&self.op.id, &self.op.view(role)?)
    }
    fn put(&mut self, role: &str, v: &[f32]) -> Result<(), ProgramTreeError> {
        let view: DataView = self.op.view(role)?;
        self.m.write_f32(&self.op.id, &view, v)
    }
    fn scalars(&self) -> Result<Vec<u32>, ProgramTreeError> {
        self.m.read(&self.op.id, &self.op.view("scalars")?)
    }
    fn put_scalars(&mut self, s: &[u32]) -> Result<(), ProgramTreeError> {
        let view = self.op.view("scalars")?;
        self.m.write(&self.op.id, &view, s)
    }
    /// z = D⁻¹r, then writes r, z and the r·z, r·r partials.
    fn precondition(&mut self, r: &[f32], per: u32) -> Result<(), ProgramTreeError> {
        let dinv = self.f32s("dinv")?;
        let z: Vec<f32> = r.iter().zip(&dinv).map(|(r, d)| d * r).collect();
        let n = r.len();
        let mut parts = tile_sums(n, per, |i| f64::from(r[i]) * f64::from(z[i]));
        parts.extend(tile_sums(n, per, |i| f64::from(r[i]) * f64::from(r[i])));
        self.put("r", r)?;
        self.put("z", &z)?;
        self.put("partials", &parts)
    }
}

fn f(s: &[u32], i: usize) -> f32 {
    f32::from_bits(s[i])
}

/// Records rz' and rr and clears the predicate once `rr ≤ TOL2`.
fn record(s: &mut [u32], rz_new: f32, rr: f32) {
    s[S_RZ_NEW as usize] = rz_new.to_bits();
    s[S_RR as usize] = rr.to_bits();
    s[S_PRED as usize] &= u32::from(rr > f(s, S_TOL2 as usize));
}

fn fold_reason(op: &ProgramOp, what: &str) -> Result<String, String> {
    let shape = shape(op).map_err(|e| e.to_string())?;
    let t = shape.tiles();
    let size = if t <= FOLD_PARTIALS {
        format!("≤ {FOLD_PARTIALS}")
    } else {
        format!("above the {FOLD_PARTIALS} the tiling aims for, at the largest tile")
    };
    Ok(format!(
        "{what} is folded from {t} partials ({size}; {} rows per workgroup) by every workgroup of this pass: no one-workgroup scalar pass (with both folds an iteration is 3 dispatches, not 5)",
        shape.rows_per_wg
    ))
}

fn start() -> ProgramLowering {
    ProgramLowering::new("pcg-start", |op, m| {
        let mut c = Cpu { op, m };
        let (b, q) = (c.f32s("b")?, c.f32s("q")?);
        let r: Vec<f32> = b.iter().zip(&q).map(|(b, q)| b - q).collect();
        c.precondition(&r, shape(op)?.rows_per_wg)?;
        let z = c.f32s("z")?;
        c.put("p", &z)
    })
    .realization(
        "fused start",
        |_, _| Ok("r = b − q, z = D⁻¹r, p = z and the r·z, r·r partials in one pass".into()),
        |op, _, _| {
            let v = |r: &str| op.view(r);
            Ok(one(shape(op)?.start(
                &op.id,
                v("b")?,
                v("q")?,
                v("dinv")?,
                v("r")?,
                v("z")?,
                v("p")?,
                v("partials")?,
            )?))
        },
    )
}

fn rho() -> ProgramLowering {
    ProgramLowering::new("pcg-rho", |op, m| {
        let mut c = Cpu { op, m };
        let (rz, rr) = fold2(&c.f32s("partials")?);
        let mut s = c.scalars()?;
        s[S_RZ] = rz.to_bits();
        record(&mut s, rz, rr);
        c.put_scalars(&s)
    })
    .realization(
        "one-workgroup fold",
        |_, _| Ok("the prologue's r·z and r·r partials summed once in one workgroup".into()),
        |op, _, _| {
            Ok(one(shape(op)?.rho(
                &op.id,
                op.view("partials")?,
                op.view("scalars")?,
            )?))
        },
    )
}

fn update() -> ProgramLowering {
    ProgramLowering::new("pcg-update", |op, m| {
        let mut c = Cpu { op, m };
        let mut s = c.scalars()?;
        let pq = sum(&c.f32s("pq partials")?);
        let rz = f(&s, S_RZ_NEW as usize);
        let mut alpha = rz / pq;
        if !(pq > 0.0 && alpha.is_finite()) {
            alpha = 0.0;
            s[S_PRED as usize] = 0;
        }
        s[S_RZ] = rz.to_bits();
        s[S_PQ] = pq.to_bits();
        s[S_ALPHA] = alpha.to_bits();
        c.put_scalars(&s)?;
        let (p, q) = (c.f32s("p")?, c.f32s("q")?);
        let mut x = c.f32s("x")?;
        let mut r = c.f32s("r")?;
        for i in 0..x.len() {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        c.put("x", &x)?;
        c.precondition(&r, shape(op)?.rows_per_wg)
    })
    .realization(
        "α-folded update",
        |op, _| fold_reason(op, "α = r·z / Σ p·q"),
        |op, _, _| {
            let v = |r: &str| op.view(r);
            Ok(one(shape(op)?.update(
                &op.id,
                v("p")?,
                v("q")?,
                v("dinv")?,
                v("pq partials")?,
                v("x")?,
                v("r")?,
                v("z")?,
                v("partials")?,
                v("scalars")?,
            )?))
        },
    )
}

fn direction() -> ProgramLowering {
    ProgramLowering::new("pcg-direction", |op, m| {
        let mut c = Cpu { op, m };
        let mut s = c.scalars()?;
        let (rz_new, rr) = fold2(&c.f32s("partials")?);
        let rz = f(&s, S_RZ);
        let beta = if rz != 0.0 { rz_new / rz } else { 0.0 };
        s[S_BETA] = beta.to_bits();
        record(&mut s, rz_new, rr);
        c.put_scalars(&s)?;
        let z = c.f32s("z")?;
        let mut p = c.f32s("p")?;
        for (p, z) in p.iter_mut().zip(&z) {
            *p = z + beta * *p;
        }
        c.put("p", &p)
    })
    .realization(
        "β-folded direction",
        |op, _| fold_reason(op, "β = Σ r·z / r·z"),
        |op, _, _| {
            let v = |r: &str| op.view(r);
            Ok(one(shape(op)?.direction(
                &op.id,
                v("z")?,
                v("partials")?,
                v("p")?,
                v("scalars")?,
            )?))
        },
    )
}

/// The PCG program lowerings.
pub(crate) fn lowerings() -> Vec<ProgramLowering> {
    vec![start(), rho(), update(), direction()]
}
