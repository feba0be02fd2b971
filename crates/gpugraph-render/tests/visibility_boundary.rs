//! The plane boundaries of VisibilityWorkflow against the exact f32 oracle, bit for bit:
//! spheres exactly tangent to a plane, one ulp of radius short of it or past it, straddling it
//! and just missing it; zero (and negative-zero) radii on faces, edges and corners; boxes
//! touching the planes; LOD edges exactly at the distance. The scenes are exact in f32, so
//! every IEEE device must agree; the tangent test also checks that a strict comparison, an
//! epsilon either way, flipped planes or an ignored radius would disagree with the GPU.

mod common;
mod visibility_support;

use common::*;
use gpugraph_render::visibility::cpu;
use gpugraph_render::ViewParams;
use rand::Rng;
use visibility_support::*;

/// Rows of the boundary test: each sphere is outside exactly one plane by its center, and is
/// exactly tangent to it, one ulp of radius short of it, one ulp past it, straddling it, or
/// 1/16 short, while the other five planes keep it whatever the kind (so that plane decides).
fn boundary_spheres(
    view: &ViewParams,
    eye: [f32; 3],
    target: [f32; 3],
    rows: usize,
    seed: u64,
) -> Vec<[f32; 4]> {
    let mut rng = rng(seed);
    let norm = |v: [f32; 3]| {
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|x| x / l)
    };
    let fwd = norm([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
    let right = norm([-fwd[2], 0.0, fwd[0]]);
    let up = [
        right[1] * fwd[2] - right[2] * fwd[1],
        right[2] * fwd[0] - right[0] * fwd[2],
        right[0] * fwd[1] - right[1] * fwd[0],
    ];
    let mut out = Vec::with_capacity(rows);
    while out.len() < rows {
        // Around the frustum at every depth, behind the eye included.
        let u = rng.random_range(-3.0..48.0f32);
        let w = u.abs().max(1.0) * 0.7;
        let (a, b) = (
            rng.random_range(-1.5..1.5f32) * w,
            rng.random_range(-1.0..1.0f32) * w,
        );
        let c: [f32; 3] =
            std::array::from_fn(|k| snap(eye[k] + fwd[k] * u + right[k] * a + up[k] * b, GRID));
        let d: Vec<f32> = view
            .planes
            .iter()
            .map(|p| cpu::plane_distance(p, c))
            .collect();
        let outside: Vec<usize> = (0..6).filter(|&k| d[k] < 0.0).collect();
        let [p] = outside[..] else { continue };
        if !(-3.0..=-0.25).contains(&d[p]) {
            continue;
        }
        if (0..6).any(|k| k != p && d[k] < d[p] + 0.125) {
            continue;
        }
        let r = match out.len() % 5 {
            0 => -d[p],
            1 => (-d[p]).next_down(),
            2 => (-d[p]).next_up(),
            3 => -d[p] + 1.0,
            _ => -d[p] - 1.0 / GRID,
        };
        out.push([c[0], c[1], c[2], r]);
    }
    out
}

/// A sphere oracle with the comparison replaced: `keep(distance, radius)` per plane.
fn mutant(view: &ViewParams, spheres: &[[f32; 4]], keep: impl Fn(f32, f32) -> bool) -> Vec<u32> {
    spheres
        .iter()
        .map(|s| {
            let c = [s[0], s[1], s[2]];
            u32::from(
                s[3] >= 0.0
                    && view
                        .planes
                        .iter()
                        .all(|p| keep(cpu::plane_distance(p, c), s[3])),
            )
        })
        .collect()
}

#[test]
fn tangent_ulp_and_straddling_spheres_match_the_oracle_exactly() {
    let ctx = ctx();
    let (eye, target) = ([0.0, 0.0, 30.0], [2.0, 1.0, 0.0]);
    let view = view_from(eye, target);
    let case = Case {
        chunks: vec![0, 777, 1, 0, 4101],
        publish_mask: true,
        extent: 1.0,
        seed: 9,
        ..Default::default()
    };
    let mut inputs = Inputs::random(&case);
    inputs.spheres = boundary_spheres(&view, eye, target, 4879, 10);
    let mut s = setup(&ctx, &case, &inputs, &view);
    let gpu = run_and_check(&ctx, &case, &inputs, &view, &mut s);
    let kept = gpu.iter().filter(|&&m| m == 1).count();
    assert!(
        kept > 1000 && kept < 4000,
        "both sides of the planes: {kept}"
    );
    // The GPU's answer rules out each near miss of the contract.
    type Keep<'a> = &'a dyn Fn(f32, f32) -> bool;
    let mutants: [(&str, Keep); 5] = [
        ("strict comparison", &|d, r| d > -r),
        ("epsilon outward", &|d, r| d + 1e-6 >= -r),
        ("epsilon inward", &|d, r| d >= -r + 1e-6),
        ("flipped planes", &|d, r| -d >= -r),
        ("radius ignored", &|d, _| d >= 0.0),
    ];
    for (what, keep) in mutants {
        assert_ne!(mutant(&view, &inputs.spheres, keep), gpu, "{what}");
    }
}

#[test]
fn zero_radii_and_boxes_on_the_planes_match_the_oracle_exactly() {
    let ctx = ctx();
    let view = axis_box_view();
    let mut rng = rng(11);
    // Points on faces, edges and corners of [-4, 4]³, on it or 1/16 outside; radius 0 or -0.
    let coordinate = |rng: &mut rand::rngs::StdRng| match rng.random_range(0..4) {
        0 => 4.0,
        1 => -4.0,
        2 => 4.0 + 1.0 / GRID,
        _ => snap(rng.random_range(-4.0..4.0f32), GRID),
    };
    let points: Vec<[f32; 4]> = (0..3000)
        .map(|_| {
            let r = if rng.random_bool(0.5) { 0.0 } else { -0.0 };
            [
                coordinate(&mut rng),
                coordinate(&mut rng),
                coordinate(&mut rng),
                r,
            ]
        })
        .collect();
    let mut spheres_case = Case {
        chunks: vec![1000, 0, 2000],
        publish_mask: true,
        lod: true,
        extent: 1.0,
        seed: 12,
        ..Default::default()
    };
    let mut inputs = Inputs::random(&spheres_case);
    inputs.spheres = points.clone();
    inputs.lod.fill([0.0, 100.0]);
    // Rows at distance 5 from the eye with LOD edges exactly there (or 1/16 off): the near
    // edge keeps, the far edge culls.
    let bands = [
        [5.0, 6.0],
        [1.0, 5.0],
        [5.0625, 9.0],
        [0.0, 5.0625],
        [-1.0, 5.0],
    ];
    for (k, band) in bands.iter().cycle().take(60).enumerate() {
        let c = [[3.0, 4.0, 0.0], [0.0, -3.0, 4.0], [-4.0, 0.0, 3.0]][k % 3];
        inputs.spheres[k] = [c[0], c[1], c[2], 0.0];
        inputs.lod[k] = *band;
    }
    let mut s = setup(&ctx, &spheres_case, &inputs, &view);
    let gpu = run_and_check(&ctx, &spheres_case, &inputs, &view, &mut s);
    let kept = gpu.iter().filter(|&&m| m == 1).count();
    assert!(kept > 100 && kept < 2900, "{kept} of 3000 kept");
    spheres_case.lod = false;
    // Boxes [p - 1, p] and [p, p + 1]: touching a face where p is on it, 1/16 apart (or
    // straddling) where p is outside.
    let boxes_case = Case {
        boxes: true,
        ..spheres_case
    };
    let shifted = |p: &[f32; 4], by: f32| [p[0] + by, p[1] + by, p[2] + by, 0.0];
    let (lo, hi): (Vec<[f32; 4]>, Vec<[f32; 4]>) = points
        .iter()
        .enumerate()
        .map(|(k, p)| {
            if k % 2 == 0 {
                (shifted(p, -1.0), shifted(p, 0.0))
            } else {
                (shifted(p, 0.0), shifted(p, 1.0))
            }
        })
        .unzip();
    inputs.spheres = lo;
    inputs.box_max = hi;
    let mut s = setup(&ctx, &boxes_case, &inputs, &view);
    run_and_check(&ctx, &boxes_case, &inputs, &view, &mut s);
}
