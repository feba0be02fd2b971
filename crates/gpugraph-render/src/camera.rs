//! The matrix helpers the visibility workflow and the cull consumer need: column-major 4×4
//! matrices (`m[column][row]`, WGSL's `mat4x4<f32>` layout), a right-handed look-at, a
//! perspective projection onto wgpu's clip space (depth 0..1), and the six frustum planes of
//! a view-projection matrix.

/// Column-major 4×4 matrix: `m[column][row]`.
pub type Mat4 = [[f32; 4]; 4];

/// `a · b` (apply `b` first).
pub fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut out = [[0.0f32; 4]; 4];
    for (c, col) in out.iter_mut().enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[k][r] * b[c][k]).sum();
        }
    }
    out
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn normalize(a: [f32; 3]) -> [f32; 3] {
    let l = dot(a, a).sqrt();
    [a[0] / l, a[1] / l, a[2] / l]
}

/// Right-handed view matrix looking from `eye` at `target` with `up` roughly up.
pub fn look_at(eye: [f32; 3], target: [f32; 3], up: [f32; 3]) -> Mat4 {
    let f = normalize(sub(target, eye));
    let s = normalize(cross(f, up));
    let u = cross(s, f);
    [
        [s[0], u[0], -f[0], 0.0],
        [s[1], u[1], -f[1], 0.0],
        [s[2], u[2], -f[2], 0.0],
        [-dot(s, eye), -dot(u, eye), dot(f, eye), 1.0],
    ]
}

/// Right-handed perspective projection onto depth 0 (near) .. 1 (far); `fovy` in radians.
pub fn perspective(fovy: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let f = 1.0 / (fovy / 2.0).tan();
    let range = far / (near - far);
    [
        [f / aspect, 0.0, 0.0, 0.0],
        [0.0, f, 0.0, 0.0],
        [0.0, 0.0, range, -1.0],
        [0.0, 0.0, near * range, 0.0],
    ]
}

/// The six planes `(n, d)` of a view-projection matrix's frustum (left, right, bottom, top,
/// near, far), normalized so that `n · p + d` is the signed world-space distance of `p`,
/// positive inside. Derived from the matrix rows (Gribb and Hartmann) in f64, then rounded to
/// f32 once: the GPU and the CPU oracle test against the same f32 planes.
pub fn frustum_planes(view_projection: &Mat4) -> [[f32; 4]; 6] {
    let row = |r: usize| -> [f64; 4] { std::array::from_fn(|c| f64::from(view_projection[c][r])) };
    let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
    let add = |a: [f64; 4], b: [f64; 4]| -> [f64; 4] { std::array::from_fn(|i| a[i] + b[i]) };
    let sub = |a: [f64; 4], b: [f64; 4]| -> [f64; 4] { std::array::from_fn(|i| a[i] - b[i]) };
    let raw = [
        add(r3, r0),
        sub(r3, r0),
        add(r3, r1),
        sub(r3, r1),
        r2,
        sub(r3, r2),
    ];
    raw.map(|p| {
        let len = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        let len = if len > 0.0 { len } else { 1.0 };
        p.map(|v| (v / len) as f32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planes_contain_what_the_camera_sees_and_exclude_what_is_behind() {
        let view = look_at([0.0, 0.0, 5.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        let proj = perspective(std::f32::consts::FRAC_PI_2, 1.0, 0.5, 50.0);
        let planes = frustum_planes(&mul(&proj, &view));
        let inside = |p: [f32; 3]| {
            planes
                .iter()
                .all(|pl| pl[0] * p[0] + pl[1] * p[1] + pl[2] * p[2] + pl[3] >= 0.0)
        };
        assert!(inside([0.0, 0.0, 0.0]));
        assert!(inside([0.0, 0.0, -40.0]));
        assert!(!inside([0.0, 0.0, 6.0]), "behind the eye");
        assert!(!inside([0.0, 0.0, -50.0]), "past the far plane");
        // 90° field of view: at distance 5 the half-width is 5.
        assert!(inside([4.9, 0.0, 0.0]));
        assert!(!inside([5.1, 0.0, 0.0]));
        // The near plane's distance is in world units (normalized).
        let near = planes[4];
        let d = near[0] * 0.0 + near[1] * 0.0 + near[2] * 4.0 + near[3];
        assert!((d - 0.5).abs() < 1e-4, "{d}");
    }
}
