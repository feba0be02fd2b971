//! An application-owned CPU scene graph for the scene-graph consumer (spec 6.3a): named nodes
//! with children, a local transform and optionally one geometry and material, over one shared
//! vertex and index array. Built from a glTF 2.0 file ([`SceneSource::from_gltf`]) or
//! generated ([`SceneSource::generate`]), and flattened into a [`GpuScene`] with per-material
//! resource groups and renderer-authored draw commands ([`SceneSource::flatten`]).
//!
//! This is the application's model, not GPUScene's: the scene only ever sees the flat records
//! the flattening callback writes (object IDs are `SOURCE_OBJECT_BASE + node index`, never the
//! slots), and the names stay here, which is how a pick answers a node's name.

use std::collections::HashMap;

use super::adapters::flatten_cpu_hierarchy;
use super::{GpuScene, GpuSceneGroup, GpuSceneRecord, IDENTITY};
use crate::camera::{mul, Mat4};
use crate::{DrawCommandBuffer, DrawLayout, RenderError};

/// A vertex: position, normal.
pub type SceneVertex = [[f32; 3]; 2];

/// Object ID of node 0 ([`SceneSource::flatten`]); node `i` is `SOURCE_OBJECT_BASE + i`.
pub const SOURCE_OBJECT_BASE: u32 = 1_000_000;
/// Group ID of material 0; material `m` draws in group `SOURCE_GROUP_BASE + m`.
pub const SOURCE_GROUP_BASE: u32 = 100;

/// One node of the application's hierarchy.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneNode {
    /// The application's name (what a pick answers).
    pub name: String,
    /// Child node indices, in order.
    pub children: Vec<usize>,
    /// Column-major local transform.
    pub local: Mat4,
    /// `(geometry, material)` when the node draws.
    pub draws: Option<(usize, usize)>,
}

/// A geometry: a range of the shared index array and its local bounding box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneGeometry {
    /// First index in [`SceneSource::indices`].
    pub first_index: u32,
    /// Indices (a multiple of 3: triangles).
    pub index_count: u32,
    /// Added to every index.
    pub base_vertex: i32,
    /// Local box minimum.
    pub min: [f32; 3],
    /// Local box maximum.
    pub max: [f32; 3],
}

/// The application's scene (see the module doc). Node indices are positions in `nodes`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SceneSource {
    /// Every node.
    pub nodes: Vec<SceneNode>,
    /// Root nodes of the scene, in order.
    pub roots: Vec<usize>,
    /// Geometries.
    pub geometries: Vec<SceneGeometry>,
    /// The shared vertex array.
    pub vertices: Vec<SceneVertex>,
    /// The shared index array (indices relative to a geometry's `base_vertex`).
    pub indices: Vec<u32>,
    /// RGBA per material (at least one).
    pub materials: Vec<[f32; 4]>,
}

/// A [`SceneSource`] flattened into GPU state (see [`SceneSource::flatten`]).
#[derive(Debug)]
pub struct FlattenedSource {
    /// The mutable scene, one record per drawing node in stable preorder.
    pub scene: GpuScene,
    /// Renderer-authored `drawIndexed` commands, one slot per record plus spares.
    pub commands: DrawCommandBuffer,
    /// One group per material (`SOURCE_GROUP_BASE + m`), windows in material order.
    pub groups: Vec<GpuSceneGroup>,
    /// RGBA per group, in group order.
    pub colors: Vec<[f32; 4]>,
    /// The node name of every object ID.
    pub names: HashMap<u32, String>,
}

impl SceneSource {
    /// Appends a geometry of `vertices` and `indices` (relative to the geometry's first vertex)
    /// and returns its index. Fails naming the index that is past the vertices.
    pub fn add_geometry(
        &mut self,
        vertices: &[SceneVertex],
        indices: &[u32],
    ) -> Result<usize, RenderError> {
        if let Some((at, &i)) = indices
            .iter()
            .enumerate()
            .find(|(_, &i)| i as usize >= vertices.len())
        {
            return Err(RenderError::SceneSource {
                reason: format!(
                    "geometry {}: index {at} is {i}, past its {} vertices",
                    self.geometries.len(),
                    vertices.len()
                ),
            });
        }
        let mut min = [f32::INFINITY; 3];
        let mut max = [f32::NEG_INFINITY; 3];
        for v in vertices {
            for i in 0..3 {
                min[i] = min[i].min(v[0][i]);
                max[i] = max[i].max(v[0][i]);
            }
        }
        if vertices.is_empty() || !min.iter().chain(&max).all(|v| v.is_finite()) {
            (min, max) = ([0.0; 3], [0.0; 3]);
        }
        self.geometries.push(SceneGeometry {
            first_index: self.indices.len() as u32,
            index_count: indices.len() as u32,
            base_vertex: self.vertices.len() as i32,
            min,
            max,
        });
        self.vertices.extend_from_slice(vertices);
        self.indices.extend_from_slice(indices);
        Ok(self.geometries.len() - 1)
    }

    /// World transform of every node: the product of its ancestors' local transforms along
    /// the first path the preorder walk reaches it by (a node reached again, through a shared
    /// subgraph or a cycle, keeps its first transform; unreached nodes keep the identity).
    pub fn world_transforms(&self) -> Vec<Mat4> {
        let mut world = vec![IDENTITY; self.nodes.len()];
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<(usize, Mat4)> =
            self.roots.iter().rev().map(|&r| (r, IDENTITY)).collect();
        while let Some((n, parent)) = stack.pop() {
            if n >= self.nodes.len() || std::mem::replace(&mut seen[n], true) {
                continue;
            }
            world[n] = mul(&parent, &self.nodes[n].local);
            for &c in self.nodes[n].children.iter().rev() {
                stack.push((c, world[n]));
            }
        }
        world
    }

    /// A generated city: three district nodes (materials "terrain", "structures", "signals")
    /// with `n` buildings (cubes, every fifth an octahedron) on a square grid among them.
    pub fn generate(n: usize) -> Self {
        let mut s = SceneSource {
            materials: vec![
                [0.35, 0.7, 0.35, 1.0],
                [0.8, 0.55, 0.3, 1.0],
                [0.35, 0.5, 0.9, 1.0],
            ],
            ..Default::default()
        };
        let (cv, ci) = cube();
        let (ov, oi) = octahedron();
        let cube = s
            .add_geometry(&cv, &ci)
            .expect("the cube's indices are in range");
        let octa = s
            .add_geometry(&ov, &oi)
            .expect("the octahedron's indices are in range");
        let side = (n as f64).sqrt().ceil().max(1.0) as usize;
        let districts = ["terrain", "structures", "signals"];
        for name in districts {
            s.nodes.push(SceneNode {
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
            let half = side as f32 / 2.0;
            let pos = [(x - half) * 3.0, h, (z - half) * 3.0];
            s.nodes.push(SceneNode {
                name: format!("{}/building-{i}", districts[district]),
                children: Vec::new(),
                local: translate_scale(pos, [1.0, h, 1.0]),
                draws: Some((if i % 5 == 4 { octa } else { cube }, district)),
            });
            let id = s.nodes.len() - 1;
            s.nodes[district].children.push(id);
        }
        s
    }

    /// Flattens the drawing nodes (stable preorder from the roots, each node once) into a
    /// mutable scene of `records + spare_slots` slots, with one group per material whose
    /// command window holds its records plus `spare_slots` commands for insertions, and writes
    /// every record's renderer-authored command (`instanceCount` 0; draw generation sets it).
    /// A record's box is its geometry's local box under the node's world transform.
    /// Fails naming the node whose geometry or material does not exist; submits nothing.
    pub fn flatten(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        spare_slots: u32,
    ) -> Result<FlattenedSource, RenderError> {
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some((g, m)) = n.draws {
                if g >= self.geometries.len() || m >= self.materials.len() {
                    return Err(RenderError::SceneSource {
                        reason: format!(
                            "node {i} ({}) draws geometry {g} with material {m}; the scene has {} geometries and {} materials",
                            n.name,
                            self.geometries.len(),
                            self.materials.len()
                        ),
                    });
                }
            }
        }
        let world = self.world_transforms();
        let mut per_material = vec![0u32; self.materials.len()];
        let reachable = flatten_cpu_hierarchy(
            &self.roots,
            |&n| self.children_of(n),
            |v| {
                let (_, m) = self.nodes.get(*v.node)?.draws?;
                per_material[m] += 1;
                Some(GpuSceneRecord::new(0))
            },
        )
        .len() as u32;
        let mut groups = Vec::with_capacity(self.materials.len());
        let mut first = 0u32;
        for (m, &count) in per_material.iter().enumerate() {
            groups.push(GpuSceneGroup {
                id: SOURCE_GROUP_BASE + m as u32,
                first_command: first,
                command_count: count + spare_slots,
                geometry_id: None,
            });
            first += count + spare_slots;
        }
        let mut next_slot: Vec<u32> = groups.iter().map(|g| g.first_command).collect();
        let mut names = HashMap::new();
        let scene = GpuScene::from_cpu_hierarchy(
            device,
            queue,
            label,
            reachable + spare_slots,
            &self.roots,
            |&n| self.children_of(n),
            |v| {
                let node = &self.nodes[*v.node];
                let (geometry, material) = node.draws?;
                let slot = next_slot[material];
                next_slot[material] += 1;
                let id = SOURCE_OBJECT_BASE + *v.node as u32;
                names.insert(id, node.name.clone());
                let g = &self.geometries[geometry];
                let (lo, hi) = world_box(&world[*v.node], g.min, g.max);
                Some(
                    GpuSceneRecord::new(id)
                        .with_aabb(lo, hi)
                        .with_transform(world[*v.node])
                        .with_group(SOURCE_GROUP_BASE + material as u32)
                        .with_geometry(geometry as u32)
                        .with_command_slot(slot),
                )
            },
        )?;
        let commands = DrawCommandBuffer::create(
            device,
            &format!("{label}/commands"),
            DrawLayout::DrawIndexed,
            first.max(1),
        );
        let mut args = vec![[0u32; 5]; first.max(1) as usize];
        for (_, r) in scene.active_records() {
            let g = &self.geometries[r.geometry_id as usize];
            args[r.command_slot as usize] =
                [g.index_count, 0, g.first_index, g.base_vertex as u32, 0];
        }
        queue.write_buffer(commands.buffer(), 0, bytemuck::cast_slice(&args));
        Ok(FlattenedSource {
            scene,
            commands,
            groups,
            colors: self.materials.clone(),
            names,
        })
    }

    fn children_of(&self, n: usize) -> Vec<usize> {
        self.nodes
            .get(n)
            .map(|n| {
                n.children
                    .iter()
                    .copied()
                    .filter(|&c| c < self.nodes.len())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The world box of a local box under `m` (its eight corners transformed).
pub fn world_box(m: &Mat4, min: [f32; 3], max: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for k in 0..8 {
        let p = [
            if k & 1 == 0 { min[0] } else { max[0] },
            if k & 2 == 0 { min[1] } else { max[1] },
            if k & 4 == 0 { min[2] } else { max[2] },
        ];
        for i in 0..3 {
            let v = m[0][i] * p[0] + m[1][i] * p[1] + m[2][i] * p[2] + m[3][i];
            lo[i] = lo[i].min(v);
            hi[i] = hi[i].max(v);
        }
    }
    (lo, hi)
}

/// Translation `t` after scale `s`.
pub fn translate_scale(t: [f32; 3], s: [f32; 3]) -> Mat4 {
    [
        [s[0], 0.0, 0.0, 0.0],
        [0.0, s[1], 0.0, 0.0],
        [0.0, 0.0, s[2], 0.0],
        [t[0], t[1], t[2], 1.0],
    ]
}

/// A cube `[-1, 1]³` with flat normals (24 vertices, 36 indices).
pub fn cube() -> (Vec<SceneVertex>, Vec<u32>) {
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
pub fn octahedron() -> (Vec<SceneVertex>, Vec<u32>) {
    let mut v = Vec::new();
    let mut i = Vec::new();
    let k = 1.0 / 3f32.sqrt();
    for sx in [-1.0f32, 1.0] {
        for sy in [-1.0f32, 1.0] {
            for sz in [-1.0f32, 1.0] {
                let n = [sx * k, sy * k, sz * k];
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
