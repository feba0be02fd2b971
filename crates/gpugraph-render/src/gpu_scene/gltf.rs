//! glTF 2.0 into a [`SceneSource`] through the maintained `gltf` crate (`.gltf` with `.bin`
//! files beside it, or `.glb`): node hierarchy, names, local transforms, triangle primitives
//! (positions, normals, indices) and materials' base color factors. Geometry only: no images,
//! textures, skins or animations are read.
//!
//! Every problem of the file is a [`RenderError::Gltf`] naming the file and the mesh,
//! primitive, buffer or node; nothing here panics on bad input (the crate's own validation
//! runs first, accessor reads past a buffer come back empty and are reported, indices past
//! the vertices are refused).

use std::path::Path;

use super::source::{SceneNode, SceneSource, SceneVertex};
use super::IDENTITY;
use crate::RenderError;

impl SceneSource {
    /// Loads `path` (`.gltf` or `.glb`); external buffers are read relative to its directory.
    pub fn from_gltf(path: &Path) -> Result<Self, RenderError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| RenderError::Gltf {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        Self::from_gltf_slice(&bytes, path.parent(), &shown)
    }

    /// Loads glTF or GLB `bytes`; external buffers are read from `dir` (refused when `None`).
    /// `name` is the file name errors show.
    pub fn from_gltf_slice(
        bytes: &[u8],
        dir: Option<&Path>,
        name: &str,
    ) -> Result<Self, RenderError> {
        let bad = |reason: String| RenderError::Gltf {
            path: name.to_string(),
            reason,
        };
        let gltf = gltf::Gltf::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        let mut buffers: Vec<Vec<u8>> = Vec::new();
        for b in gltf.buffers() {
            let data = match b.source() {
                gltf::buffer::Source::Bin => gltf.blob.clone().ok_or_else(|| {
                    bad(format!(
                        "buffer {} is the GLB BIN chunk, which the file lacks",
                        b.index()
                    ))
                })?,
                gltf::buffer::Source::Uri(uri) if uri.starts_with("data:") => {
                    return Err(bad(format!(
                        "buffer {}: data: URIs are not supported; use .bin files or .glb",
                        b.index()
                    )))
                }
                gltf::buffer::Source::Uri(uri) => {
                    let dir = dir.ok_or_else(|| {
                        bad(format!(
                            "buffer {} names file {uri} but no directory was given",
                            b.index()
                        ))
                    })?;
                    std::fs::read(dir.join(uri))
                        .map_err(|e| bad(format!("buffer {} ({uri}): {e}", b.index())))?
                }
            };
            if data.len() < b.length() {
                return Err(bad(format!(
                    "buffer {} declares {} bytes but holds {}",
                    b.index(),
                    b.length(),
                    data.len()
                )));
            }
            buffers.push(data);
        }
        let mut s = SceneSource {
            materials: gltf
                .materials()
                .map(|m| m.pbr_metallic_roughness().base_color_factor())
                .collect(),
            ..Default::default()
        };
        if s.materials.is_empty() {
            s.materials.push([0.8, 0.8, 0.8, 1.0]);
        }
        // (geometry, material) per triangle primitive of each mesh; other modes are skipped.
        let mut mesh_draws: Vec<Vec<(usize, usize)>> = Vec::new();
        for mesh in gltf.meshes() {
            let mut draws = Vec::new();
            for p in mesh.primitives() {
                if p.mode() != gltf::mesh::Mode::Triangles {
                    continue;
                }
                let at = format!("mesh {} primitive {}", mesh.index(), p.index());
                let reader = p.reader(|b| buffers.get(b.index()).map(|v| v.as_slice()));
                let positions: Vec<[f32; 3]> = reader
                    .read_positions()
                    .ok_or_else(|| bad(format!("{at}: no readable POSITION accessor")))?
                    .collect();
                let normals: Vec<[f32; 3]> = match reader.read_normals() {
                    Some(n) => n.collect(),
                    None => vec![[0.0, 1.0, 0.0]; positions.len()],
                };
                if normals.len() != positions.len() {
                    return Err(bad(format!(
                        "{at}: {} normals for {} positions",
                        normals.len(),
                        positions.len()
                    )));
                }
                let indices: Vec<u32> = match reader.read_indices() {
                    Some(i) => i.into_u32().collect(),
                    None if p.indices().is_some() => {
                        return Err(bad(format!("{at}: its indices accessor is not readable")))
                    }
                    None => (0..positions.len() as u32).collect(),
                };
                if !indices.len().is_multiple_of(3) {
                    return Err(bad(format!(
                        "{at}: {} indices are not whole triangles",
                        indices.len()
                    )));
                }
                let vertices: Vec<SceneVertex> = positions
                    .iter()
                    .zip(&normals)
                    .map(|(p, n)| [*p, *n])
                    .collect();
                let g = s
                    .add_geometry(&vertices, &indices)
                    .map_err(|e| bad(format!("{at}: {e}")))?;
                let material = p.material().index().unwrap_or(0);
                draws.push((g, material.min(s.materials.len() - 1)));
            }
            mesh_draws.push(draws);
        }
        // Nodes keep their glTF indices; a mesh of several primitives gets one child node per
        // primitive, appended after the file's nodes and named `{node}#{k}`.
        for node in gltf.nodes() {
            s.nodes.push(SceneNode {
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
            let draws = &mesh_draws[mesh.index()];
            if let [single] = draws.as_slice() {
                s.nodes[node.index()].draws = Some(*single);
                continue;
            }
            for (k, &draw) in draws.iter().enumerate() {
                let name = format!("{}#{k}", s.nodes[node.index()].name);
                s.nodes.push(SceneNode {
                    name,
                    children: Vec::new(),
                    local: IDENTITY,
                    draws: Some(draw),
                });
                let child = s.nodes.len() - 1;
                s.nodes[node.index()].children.push(child);
            }
        }
        if let Some((i, n)) = s
            .nodes
            .iter()
            .enumerate()
            .find(|(_, n)| !n.local.iter().flatten().all(|v| v.is_finite()))
        {
            return Err(bad(format!(
                "node {i} ({}): transform is not finite",
                n.name
            )));
        }
        let scene = gltf
            .default_scene()
            .or_else(|| gltf.scenes().next())
            .ok_or_else(|| bad("the file has no scene".into()))?;
        s.roots = scene.nodes().map(|n| n.index()).collect();
        Ok(s)
    }
}
