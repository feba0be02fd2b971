//! The application-owned CPU scene the explorer flattens: named nodes with children, a local
//! transform and optionally one geometry and material. Built from a glTF 2.0 file (`.gltf`
//! with its `.bin` files, or `.glb`) or generated.

use std::path::Path;

use gpugraph_render::camera::{mul, Mat4};

use crate::renderer::Vertex;

/// One node of the application's hierarchy.
pub struct Node {
    pub name: String,
    pub children: Vec<usize>,
    pub local: Mat4,
    /// `(geometry, material)` when the node draws.
    pub draws: Option<(usize, usize)>,
}

/// A geometry: a range of the shared index buffer and its local box.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub first_index: u32,
    pub index_count: u32,
    pub base_vertex: i32,
    pub min: [f32; 3],
    pub max: [f32; 3],
}

pub struct Source {
    pub nodes: Vec<Node>,
    pub roots: Vec<usize>,
    pub geometries: Vec<Geometry>,
    pub vertices: Vec<Vertex>,
    pub indices: Vec<u32>,
    /// RGBA per material.
    pub materials: Vec<[f32; 4]>,
}

pub const IDENTITY: Mat4 = gpugraph_render::gpu_scene::IDENTITY;

fn translate_scale(t: [f32; 3], s: [f32; 3]) -> Mat4 {
    [
        [s[0], 0.0, 0.0, 0.0],
        [0.0, s[1], 0.0, 0.0],
        [0.0, 0.0, s[2], 0.0],
        [t[0], t[1], t[2], 1.0],
    ]
}

impl Source {
    fn add_geometry(&mut self, vertices: &[Vertex], indices: &[u32]) -> usize {
        let mut min = [f32::INFINITY; 3];
        let mut max = [f32::NEG_INFINITY; 3];
        for v in vertices {
            for i in 0..3 {
                min[i] = min[i].min(v[0][i]);
                max[i] = max[i].max(v[0][i]);
            }
        }
        if vertices.is_empty() {
            (min, max) = ([0.0; 3], [0.0; 3]);
        }
        self.geometries.push(Geometry {
            first_index: self.indices.len() as u32,
            index_count: indices.len() as u32,
            base_vertex: self.vertices.len() as i32,
            min,
            max,
        });
        self.vertices.extend_from_slice(vertices);
        self.indices.extend_from_slice(indices);
        self.geometries.len() - 1
    }

    /// World transform of every node (the application resolves inherited state itself).
    pub fn world_transforms(&self) -> Vec<Mat4> {
        let mut world = vec![IDENTITY; self.nodes.len()];
        let mut stack: Vec<(usize, Mat4)> = self.roots.iter().map(|&r| (r, IDENTITY)).collect();
        let mut seen = vec![false; self.nodes.len()];
        while let Some((n, parent)) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            world[n] = mul(&parent, &self.nodes[n].local);
            for &c in &self.nodes[n].children {
                stack.push((c, world[n]));
            }
        }
        world
    }

    /// A generated city: three districts (materials) of buildings (cubes and octahedra) on a
    /// grid, `n` buildings in all.
    pub fn generate(n: usize) -> Self {
        let mut s = Source {
            nodes: Vec::new(),
            roots: Vec::new(),
            geometries: Vec::new(),
            vertices: Vec::new(),
            indices: Vec::new(),
            materials: vec![
                [0.35, 0.7, 0.35, 1.0],
                [0.8, 0.55, 0.3, 1.0],
                [0.35, 0.5, 0.9, 1.0],
            ],
        };
        let (cv, ci) = cube();
        let (ov, oi) = octahedron();
        let cube = s.add_geometry(&cv, &ci);
        let octa = s.add_geometry(&ov, &oi);
        let side = (n as f32).sqrt().ceil().max(1.0) as usize;
        let names = ["terrain", "structures", "signals"];
        for name in names {
            s.nodes.push(Node {
                name: name.to_string(),
                children: Vec::new(),
                local: IDENTITY,
                draws: None,
            });
            s.roots.push(s.nodes.len() - 1);
        }
        for i in 0..n {
            let district = i % 3;
            let (x, z) = ((i % side) as f32, (i / side) as f32);
            let h = 0.5 + ((i * 7919) % 13) as f32 / 6.0;
            let pos = [
                (x - side as f32 / 2.0) * 3.0,
                h,
                (z - side as f32 / 2.0) * 3.0,
            ];
            let geometry = if i % 5 == 4 { octa } else { cube };
            s.nodes.push(Node {
                name: format!("{}/building-{i}", names[district]),
                children: Vec::new(),
                local: translate_scale(pos, [1.0, h, 1.0]),
                draws: Some((geometry, district)),
            });
            let id = s.nodes.len() - 1;
            s.nodes[district].children.push(id);
        }
        s
    }

    /// Geometry and hierarchy of a glTF 2.0 file (triangle primitives; materials' base color
    /// factors). A node with a mesh of several primitives gets one child node per primitive.
    pub fn from_gltf(path: &Path) -> Result<Self, String> {
        let gltf = gltf::Gltf::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut buffers: Vec<Vec<u8>> = Vec::new();
        for b in gltf.buffers() {
            buffers.push(match b.source() {
                gltf::buffer::Source::Bin => gltf
                    .blob
                    .clone()
                    .ok_or_else(|| "GLB buffer without a BIN chunk".to_string())?,
                gltf::buffer::Source::Uri(uri) if !uri.starts_with("data:") => {
                    std::fs::read(dir.join(uri)).map_err(|e| format!("buffer {uri}: {e}"))?
                }
                gltf::buffer::Source::Uri(_) => {
                    return Err("data: URIs are not supported; use .bin files or .glb".into())
                }
            });
        }
        let mut s = Source {
            nodes: Vec::new(),
            roots: Vec::new(),
            geometries: Vec::new(),
            vertices: Vec::new(),
            indices: Vec::new(),
            materials: gltf
                .materials()
                .map(|m| m.pbr_metallic_roughness().base_color_factor())
                .collect(),
        };
        if s.materials.is_empty() {
            s.materials.push([0.8, 0.8, 0.8, 1.0]);
        }
        // Geometry per (mesh, primitive).
        let mut primitive_geometry: Vec<Vec<(usize, usize)>> = Vec::new();
        for mesh in gltf.meshes() {
            let mut prims = Vec::new();
            for p in mesh.primitives() {
                if p.mode() != gltf::mesh::Mode::Triangles {
                    continue;
                }
                let reader = p.reader(|b| buffers.get(b.index()).map(|v| v.as_slice()));
                let positions: Vec<[f32; 3]> = reader
                    .read_positions()
                    .ok_or_else(|| format!("mesh {}: primitive without positions", mesh.index()))?
                    .collect();
                let normals: Vec<[f32; 3]> = match reader.read_normals() {
                    Some(n) => n.collect(),
                    None => vec![[0.0, 1.0, 0.0]; positions.len()],
                };
                let indices: Vec<u32> = match reader.read_indices() {
                    Some(i) => i.into_u32().collect(),
                    None => (0..positions.len() as u32).collect(),
                };
                let vertices: Vec<Vertex> = positions
                    .iter()
                    .zip(&normals)
                    .map(|(p, n)| [*p, *n])
                    .collect();
                let g = s.add_geometry(&vertices, &indices);
                prims.push((
                    g,
                    p.material().index().unwrap_or(0).min(s.materials.len() - 1),
                ));
            }
            primitive_geometry.push(prims);
        }
        // Nodes keep their glTF indices; primitive children are appended after them.
        for node in gltf.nodes() {
            s.nodes.push(Node {
                name: node
                    .name()
                    .map_or(format!("node-{}", node.index()), str::to_string),
                children: node.children().map(|c| c.index()).collect(),
                local: node.transform().matrix(),
                draws: None,
            });
        }
        for node in gltf.nodes() {
            let Some(mesh) = node.mesh() else { continue };
            let prims = &primitive_geometry[mesh.index()];
            if let [single] = prims.as_slice() {
                s.nodes[node.index()].draws = Some(*single);
                continue;
            }
            for (k, &draw) in prims.iter().enumerate() {
                let name = format!("{}#{k}", s.nodes[node.index()].name);
                s.nodes.push(Node {
                    name,
                    children: Vec::new(),
                    local: IDENTITY,
                    draws: Some(draw),
                });
                let child = s.nodes.len() - 1;
                s.nodes[node.index()].children.push(child);
            }
        }
        let scene = gltf
            .default_scene()
            .or_else(|| gltf.scenes().next())
            .ok_or("the file has no scene")?;
        s.roots = scene.nodes().map(|n| n.index()).collect();
        Ok(s)
    }
}

/// A unit cube `[-1, 1]³` with flat normals.
fn cube() -> (Vec<Vertex>, Vec<u32>) {
    let mut v = Vec::new();
    let mut i = Vec::new();
    for axis in 0..3 {
        for sign in [-1.0f32, 1.0] {
            let mut n = [0.0; 3];
            n[axis] = sign;
            let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
            let base = v.len() as u32;
            for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                let mut p = [0.0; 3];
                p[axis] = sign;
                p[u] = a;
                p[w] = b;
                v.push([p, n]);
            }
            i.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
    (v, i)
}

/// A unit octahedron with flat normals.
fn octahedron() -> (Vec<Vertex>, Vec<u32>) {
    let mut v = Vec::new();
    let mut i = Vec::new();
    for sx in [-1.0f32, 1.0] {
        for sy in [-1.0f32, 1.0] {
            for sz in [-1.0f32, 1.0] {
                let n = [sx / 3f32.sqrt(), sy / 3f32.sqrt(), sz / 3f32.sqrt()];
                let base = v.len() as u32;
                v.push([[sx, 0.0, 0.0], n]);
                v.push([[0.0, sy, 0.0], n]);
                v.push([[0.0, 0.0, sz], n]);
                i.extend([base, base + 1, base + 2]);
            }
        }
    }
    (v, i)
}
