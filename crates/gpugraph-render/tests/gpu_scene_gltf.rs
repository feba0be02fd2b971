//! The scene-graph consumer (spec 6.3a) end to end: a glTF 2.0 file written here through
//! `gltf-json` (nodes with names and transforms, a hierarchy with a grouping node, an
//! unreachable node, three meshes, one of two primitives, two materials, u16 and u32 indices)
//! as `.gltf` + `.bin` and as `.glb`, loaded, flattened into a GpuScene, drawn by a
//! GpuSceneFrame whose diagnostics match the CPU oracles, and picked: the pick answers the
//! application's node name. Bad files are typed errors naming what is wrong.

mod scene_support;

use std::borrow::Cow;
use std::path::PathBuf;

use gltf::json::{self, validation::Checked::Valid, validation::USize64};
use gpugraph_render::camera::{look_at, mul, perspective};
use gpugraph_render::gpu_scene::cpu;
use gpugraph_render::gpu_scene::source::{SceneSource, SOURCE_GROUP_BASE, SOURCE_OBJECT_BASE};
use gpugraph_render::gpu_scene::{GpuSceneFrame, GpuSceneFrameOptions, GpuSceneLayer};
use gpugraph_render::scene::padded_bytes_per_row;
use gpugraph_render::{RenderError, ViewParams, NO_OBJECT};
use scene_support::*;

const W: u32 = 96;
const H: u32 = 72;

/// The binary buffer and the document that describes it.
struct Writer {
    root: json::Root,
    bin: Vec<u8>,
}

impl Writer {
    /// An accessor over `bytes` (its own buffer view) of `count` elements.
    fn accessor(
        &mut self,
        bytes: &[u8],
        count: usize,
        component: json::accessor::ComponentType,
        type_: json::accessor::Type,
        bounds: Option<([f32; 3], [f32; 3])>,
    ) -> json::Index<json::Accessor> {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let view = self.root.push(json::buffer::View {
            buffer: json::Index::new(0),
            byte_length: USize64::from(bytes.len()),
            byte_offset: Some(USize64::from(self.bin.len())),
            byte_stride: None,
            extensions: Default::default(),
            extras: Default::default(),
            name: None,
            target: None,
        });
        self.bin.extend_from_slice(bytes);
        self.root.push(json::Accessor {
            buffer_view: Some(view),
            byte_offset: None,
            count: USize64::from(count),
            component_type: Valid(json::accessor::GenericComponentType(component)),
            extensions: Default::default(),
            extras: Default::default(),
            type_: Valid(type_),
            min: bounds.map(|(lo, _)| json::Value::from(lo.to_vec())),
            max: bounds.map(|(_, hi)| json::Value::from(hi.to_vec())),
            name: None,
            normalized: false,
            sparse: None,
        })
    }

    fn positions(&mut self, p: &[[f32; 3]]) -> json::Index<json::Accessor> {
        let lo = std::array::from_fn(|i| p.iter().map(|v| v[i]).fold(f32::INFINITY, f32::min));
        let hi = std::array::from_fn(|i| p.iter().map(|v| v[i]).fold(f32::NEG_INFINITY, f32::max));
        use json::accessor::{ComponentType as C, Type as T};
        self.accessor(
            bytemuck::cast_slice(p),
            p.len(),
            C::F32,
            T::Vec3,
            Some((lo, hi)),
        )
    }

    fn primitive(
        &mut self,
        positions: &[[f32; 3]],
        normals: Option<&[[f32; 3]]>,
        indices: Indices<'_>,
        material: u32,
    ) -> json::mesh::Primitive {
        use json::accessor::{ComponentType as C, Type as T};
        let mut attributes = std::collections::BTreeMap::new();
        attributes.insert(
            Valid(json::mesh::Semantic::Positions),
            self.positions(positions),
        );
        if let Some(n) = normals {
            let a = self.accessor(bytemuck::cast_slice(n), n.len(), C::F32, T::Vec3, None);
            attributes.insert(Valid(json::mesh::Semantic::Normals), a);
        }
        let indices = match indices {
            Indices::U16(i) => {
                self.accessor(bytemuck::cast_slice(i), i.len(), C::U16, T::Scalar, None)
            }
            Indices::U32(i) => {
                self.accessor(bytemuck::cast_slice(i), i.len(), C::U32, T::Scalar, None)
            }
        };
        json::mesh::Primitive {
            attributes,
            extensions: Default::default(),
            extras: Default::default(),
            indices: Some(indices),
            material: Some(json::Index::new(material)),
            mode: Valid(json::mesh::Mode::Triangles),
            targets: None,
        }
    }
}

enum Indices<'a> {
    U16(&'a [u16]),
    U32(&'a [u32]),
}

fn mesh(primitives: Vec<json::mesh::Primitive>, name: &str) -> json::Mesh {
    json::Mesh {
        extensions: Default::default(),
        extras: Default::default(),
        name: Some(name.into()),
        primitives,
        weights: None,
    }
}

fn node(name: &str, mesh: Option<u32>, t: [f32; 3], children: &[u32]) -> json::Node {
    json::Node {
        name: Some(name.into()),
        mesh: mesh.map(json::Index::new),
        translation: Some(t),
        children: (!children.is_empty())
            .then(|| children.iter().map(|&c| json::Index::new(c)).collect()),
        ..Default::default()
    }
}

fn material(name: &str, rgba: [f32; 4]) -> json::Material {
    json::Material {
        name: Some(name.into()),
        pbr_metallic_roughness: json::material::PbrMetallicRoughness {
            base_color_factor: json::material::PbrBaseColorFactor(rgba),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The test scene: (document, binary buffer). Nodes:
/// 0 world ─┬─ 1 left-cube (mesh 0, at x = -4)
///          └─ 2 right-group (at x = +4) ─┬─ 3 right-quad (mesh 1)
///                                        └─ 4 right-pair (mesh 2: two primitives, y + 3)
/// 5 orphan (mesh 0; in no scene)
fn write_scene() -> (json::Root, Vec<u8>) {
    let mut w = Writer {
        root: json::Root::default(),
        bin: Vec::new(),
    };
    let (cube_p, cube_n, cube_i) = cube_mesh();
    let quad_p = [
        [-1.0, -1.0, 0.0],
        [1.0, -1.0, 0.0],
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
    ];
    let quad_i = [0u32, 1, 2, 0, 2, 3];
    let cube = w.primitive(&cube_p, Some(&cube_n), Indices::U16(&cube_i), 0);
    let quad = w.primitive(&quad_p, None, Indices::U32(&quad_i), 1);
    let pair_cube = w.primitive(&cube_p, Some(&cube_n), Indices::U16(&cube_i), 0);
    let pair_quad = w.primitive(&quad_p, None, Indices::U32(&quad_i), 1);
    w.root.push(mesh(vec![cube], "cube"));
    w.root.push(mesh(vec![quad], "quad"));
    w.root.push(mesh(vec![pair_cube, pair_quad], "pair"));
    w.root.push(material("red", [0.9, 0.2, 0.2, 1.0]));
    w.root.push(material("blue", [0.2, 0.3, 0.9, 1.0]));
    for n in [
        node("world", None, [0.0; 3], &[1, 2]),
        node("left-cube", Some(0), [-4.0, 0.0, 0.0], &[]),
        node("right-group", None, [4.0, 0.0, 0.0], &[3, 4]),
        node("right-quad", Some(1), [0.0; 3], &[]),
        node("right-pair", Some(2), [0.0, 3.0, 0.0], &[]),
        node("orphan", Some(0), [0.0, -9.0, 0.0], &[]),
    ] {
        w.root.push(n);
    }
    let scene = w.root.push(json::Scene {
        extensions: Default::default(),
        extras: Default::default(),
        name: Some("main".into()),
        nodes: vec![json::Index::new(0)],
    });
    w.root.scene = Some(scene);
    w.root.asset.generator = Some("gpugraph gpu_scene_gltf test".into());
    while !w.bin.len().is_multiple_of(4) {
        w.bin.push(0);
    }
    w.root.push(json::Buffer {
        byte_length: USize64::from(w.bin.len()),
        extensions: Default::default(),
        extras: Default::default(),
        name: None,
        uri: None,
    });
    (w.root, w.bin)
}

/// Cube `[-1, 1]³` with flat normals and u16 indices.
fn cube_mesh() -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<u16>) {
    let (v, i) = gpugraph_render::gpu_scene::source::cube();
    (
        v.iter().map(|v| v[0]).collect(),
        v.iter().map(|v| v[1]).collect(),
        i.iter().map(|&i| i as u16).collect(),
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpugraph-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `.gltf` + `.bin` in `dir`, and the same scene as one `.glb`.
fn write_files(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let (mut root, bin) = write_scene();
    let glb = gltf::binary::Glb {
        header: gltf::binary::Header {
            magic: *b"glTF",
            version: 2,
            length: 0,
        },
        json: Cow::Owned(root.to_vec().unwrap()),
        bin: Some(Cow::Borrowed(&bin)),
    };
    let glb_path = dir.join("scene.glb");
    std::fs::write(&glb_path, glb.to_vec().unwrap()).unwrap();
    root.buffers[0].uri = Some("scene.bin".into());
    std::fs::write(dir.join("scene.bin"), &bin).unwrap();
    let gltf_path = dir.join("scene.gltf");
    std::fs::write(&gltf_path, root.to_string_pretty().unwrap()).unwrap();
    (gltf_path, glb_path)
}

#[test]
fn gltf_file_round_trips_into_a_picked_frame() {
    let dir = temp_dir("gltf-round-trip");
    let (gltf_path, glb_path) = write_files(&dir);
    let source = SceneSource::from_gltf(&gltf_path).unwrap();
    assert_eq!(
        SceneSource::from_gltf(&glb_path).unwrap(),
        source,
        ".glb = .gltf"
    );
    let names: Vec<&str> = source.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "world",
            "left-cube",
            "right-group",
            "right-quad",
            "right-pair",
            "orphan",
            "right-pair#0",
            "right-pair#1"
        ]
    );
    assert_eq!(source.roots, vec![0]);
    assert_eq!(source.nodes[4].children, vec![6, 7]);
    assert_eq!(source.nodes[6].draws, Some((2, 0)));
    assert_eq!(source.nodes[7].draws, Some((3, 1)));
    assert_eq!(source.materials[1], [0.2, 0.3, 0.9, 1.0]);
    let world = source.world_transforms();
    assert_eq!(
        world[3][3],
        [4.0, 0.0, 0.0, 1.0],
        "right-quad under right-group"
    );
    assert_eq!(
        world[7][3],
        [4.0, 3.0, 0.0, 1.0],
        "a primitive child under right-pair"
    );

    let d = scene_device();
    let flat = source.flatten(&d.device, &d.queue, "gltf", 2).unwrap();
    // Drawing nodes reachable from the scene in stable preorder; the orphan has no record.
    let live: Vec<(u32, String)> = flat
        .scene
        .active_records()
        .iter()
        .map(|(_, r)| (r.object_id, flat.names[&r.object_id].clone()))
        .collect();
    let want: Vec<(u32, String)> = [
        (1, "left-cube"),
        (3, "right-quad"),
        (6, "right-pair#0"),
        (7, "right-pair#1"),
    ]
    .iter()
    .map(|&(n, s)| (SOURCE_OBJECT_BASE + n, s.to_string()))
    .collect();
    assert_eq!(live, want);
    let group_ids: Vec<u32> = flat.groups.iter().map(|g| g.id).collect();
    assert_eq!(group_ids, vec![SOURCE_GROUP_BASE, SOURCE_GROUP_BASE + 1]);
    assert_eq!(
        flat.groups
            .iter()
            .map(|g| g.command_count)
            .collect::<Vec<_>>(),
        vec![2 + 2, 2 + 2],
        "two records per material plus two spares"
    );

    let mut frame = GpuSceneFrame::new(
        &d.device,
        &[GpuSceneLayer {
            scene: &flat.scene,
            commands: &flat.commands,
            groups: &flat.groups,
            colors: &flat.colors,
            upload: None,
        }],
        &source.vertices,
        &source.indices,
        GpuSceneFrameOptions {
            width: W,
            height: H,
            draw: true,
            picking: true,
            readback: true,
        },
    )
    .unwrap();
    let pipelines = frame.pipelines_created();
    let records = slots_records(&flat.scene);
    for (eye, target, name) in [
        ([-4.0, 0.0, 6.0], [-4.0, 0.0, 0.0], "left-cube"),
        ([4.0, 0.0, 6.0], [4.0, 0.0, 0.0], "right-quad"),
        ([4.0, 3.0, 6.0], [4.0, 3.0, 0.0], "right-pair#0"),
    ] {
        let vp = mul(
            &perspective(50f32.to_radians(), W as f32 / H as f32, 0.1, 100.0),
            &look_at(eye, target, [0.0, 1.0, 0.0]),
        );
        frame.set_camera(&d.queue, &vp, eye);
        frame.set_pick(W / 2, H / 2).unwrap();
        let mut enc = d.device.create_command_encoder(&Default::default());
        frame.encode(&mut enc, false).unwrap();
        d.queue.submit([enc.finish()]);
        let got = frame
            .decode_diagnostics(&read_words(&d, frame.diagnostics_buffer()))
            .unwrap();
        let oracle = cpu::frame_diagnostics(
            &records,
            &ViewParams::new(&vp, eye),
            flat.commands.records(),
            &flat.groups,
        );
        assert_eq!(got, vec![oracle.clone()], "{name}: diagnostics");
        assert!(oracle.published > 0, "{name}: something is drawn");
        let pick = read_mapped(&d, frame.pick_buffer().unwrap());
        assert_ne!(pick[0], NO_OBJECT, "{name}: the center pixel is covered");
        assert_eq!(
            flat.names[&pick[0]], name,
            "the pick answers the node's name"
        );
        assert_eq!(pick[1], 0, "layer");
        let image = read_mapped(&d, frame.image_buffer().unwrap());
        let covered = covered_pixels(&image);
        assert!(
            covered > (W * H) as usize / 20,
            "{name}: {covered} of {} pixels differ from the background",
            W * H
        );
    }
    assert_eq!(frame.pipelines_created(), pipelines, "no recompilation");
    std::fs::remove_dir_all(dir).ok();
}

/// Pixels of an RGBA8 image (rows padded to 256 bytes) that are not the clear color.
fn covered_pixels(words: &[u32]) -> usize {
    let bytes: &[u8] = bytemuck::cast_slice(words);
    let row = padded_bytes_per_row(W) as usize;
    let background = [8u8, 8, 15];
    (0..H as usize)
        .flat_map(|y| (0..W as usize).map(move |x| y * row + 4 * x))
        .filter(|&at| {
            (0..3).any(|c| (i32::from(bytes[at + c]) - i32::from(background[c])).abs() > 2)
        })
        .count()
}

#[test]
fn bad_gltf_files_are_typed_errors() {
    let dir = temp_dir("gltf-bad");
    let (gltf_path, _) = write_files(&dir);
    let gltf_err = |e: RenderError| match e {
        RenderError::Gltf { path, reason } => format!("{path}: {reason}"),
        other => panic!("not a glTF error: {other}"),
    };
    // Not glTF at all.
    let e = SceneSource::from_gltf_slice(b"not a gltf file", None, "junk.gltf").unwrap_err();
    assert!(gltf_err(e).starts_with("junk.gltf"));
    // A missing file.
    let e = SceneSource::from_gltf(&dir.join("missing.gltf")).unwrap_err();
    assert!(gltf_err(e).contains("missing.gltf"));
    // A missing .bin names the buffer.
    let text = std::fs::read(&gltf_path).unwrap();
    let e =
        SceneSource::from_gltf_slice(&text, Some(&dir.join("nowhere")), "scene.gltf").unwrap_err();
    assert!(gltf_err(e).contains("buffer 0 (scene.bin)"));
    // A short .bin: the buffer's declared length is not there.
    let (mut root, bin) = write_scene();
    std::fs::write(dir.join("short.bin"), &bin[..bin.len() / 2]).unwrap();
    root.buffers[0].uri = Some("short.bin".into());
    let e = SceneSource::from_gltf_slice(&root.to_vec().unwrap(), Some(&dir), "short.gltf")
        .unwrap_err();
    let text = gltf_err(e);
    assert!(text.contains("buffer 0 declares"), "{text}");
    // An index past the vertices names the mesh and primitive.
    let (root, mut bin) = write_scene();
    let quad_indices = root.accessors[root.meshes[1].primitives[0].indices.unwrap().value()]
        .buffer_view
        .unwrap();
    let at = root.buffer_views[quad_indices.value()]
        .byte_offset
        .unwrap()
        .0 as usize;
    bin[at..at + 4].copy_from_slice(&99u32.to_le_bytes());
    let glb = gltf::binary::Glb {
        header: gltf::binary::Header {
            magic: *b"glTF",
            version: 2,
            length: 0,
        },
        json: Cow::Owned(root.to_vec().unwrap()),
        bin: Some(Cow::Owned(bin)),
    };
    let e = SceneSource::from_gltf_slice(&glb.to_vec().unwrap(), None, "bad.glb").unwrap_err();
    let text = gltf_err(e);
    assert!(
        text.contains("mesh 1 primitive 0") && text.contains("99"),
        "{text}"
    );
    // A node drawing a material the scene lacks is refused by flatten, naming the node.
    let mut source = SceneSource::generate(3);
    source.nodes[4].draws = Some((0, 7));
    let d = scene_device();
    let e = source.flatten(&d.device, &d.queue, "bad", 0).unwrap_err();
    assert!(
        matches!(e, RenderError::SceneSource { .. }) && e.to_string().contains("node 4"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).ok();
}
