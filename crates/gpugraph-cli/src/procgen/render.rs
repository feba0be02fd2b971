//! `procgen run --render out.png`: draws what the graph showed (`view.show{...}`) after the last
//! frame, through one compiled command graph: a height field (`heights`, `cells` × `cells`
//! samples over a square of side `size`, shaded by height and normal, with a lake at `water`)
//! and, when the graph shows `trees`, one instanced tree per live element of that Vec4 column
//! (x, y, z, scale). The tree count never crosses to the CPU: a one-workgroup dispatch copies
//! the column's live count (clamped to its capacity) into the `instanceCount` of a
//! gpugraph-render [`DrawCommandBuffer`] record, and the pass draws that record indirectly.
//! The record is read back after the frame only to report how many trees were drawn.

use anyhow::{bail, Context, Result};
use gpugraph_command::{
    wgpu, Access, Binding, BufferDescriptor, ColorAttachment, ColorLoad, CommandGraph, CopyNode,
    DepthStencilAttachment, DeviceCache, DispatchNode, Grid, RenderPassNode, ResourceUse,
    ShaderRegistry, ShaderSource, TextureDescriptor,
};
use gpugraph_procgen::luau::view::Shown;
use gpugraph_procgen::{Column, ColumnType};
use gpugraph_render::camera::{look_at, mul, perspective, Mat4};
use gpugraph_render::scene::padded_bytes_per_row;
use gpugraph_render::{DrawCommandBuffer, DrawLayout};
use wgpu::util::{DeviceExt, DrawIndirectArgs};
use wgpu::{BufferUsages as U, TextureFormat as F, TextureUsages as T};

use crate::gpu::Gpu;

/// The forest's draw (`forest.wgsl`), a registry of one file for its [`ShaderSource`] recipe.
static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-cli procgen",
    &[("procgen/forest.wgsl", include_str!("forest.wgsl"))],
);

/// Writes the live tree count into the draw record's `instanceCount`.
const DRAW_COUNT_WGSL: &str = "
struct Params { capacity: u32, word: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> live: array<u32>;
@group(0) @binding(2) var<storage, read_write> record: array<u32>;
@compute @workgroup_size(1)
fn main() { record[params.word] = min(live[0], params.capacity); }
";

/// Vertices of one tree in `forest.wgsl`: a trunk of 10 quads and two cones of 10 triangles.
const TREE_VERTICES: u32 = 10 * 6 + 2 * 10 * 3;

/// The largest image side `--size` takes.
pub const MAX_SIDE: u32 = 8192;

/// Parses `--size WxH` (each side 1 ..= [`MAX_SIDE`]).
pub fn parse_size(s: &str) -> std::result::Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("'{s}' is not WIDTHxHEIGHT (e.g. 1280x720)"))?;
    let side = |v: &str, what: &str| -> std::result::Result<u32, String> {
        let n = v
            .trim()
            .parse::<u32>()
            .map_err(|e| format!("{what} '{v}' of '{s}' is not a number of pixels: {e}"))?;
        if !(1..=MAX_SIDE).contains(&n) {
            return Err(format!(
                "{what} {n} of '{s}' is outside 1..={MAX_SIDE} pixels"
            ));
        }
        Ok(n)
    };
    Ok((side(w, "width")?, side(h, "height")?))
}

/// The view's uniform (WGSL `View`, 96 bytes).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ViewUniform {
    view_projection: Mat4,
    eye: [f32; 4],
    cells: u32,
    size: f32,
    relief: f32,
    water: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DrawCountParams {
    capacity: u32,
    word: u32,
}

/// What `view.show` must hold for `--render`, checked before any drawing.
pub struct Scene {
    heights: Column,
    cells: u32,
    size: f32,
    relief: f32,
    water: f32,
    trees: Option<Column>,
}

impl Scene {
    /// The scene the graph showed, or an error naming what is missing or malformed.
    pub fn from_shown(shown: Option<&Shown>) -> Result<Self> {
        let Some(shown) = shown else {
            bail!("--render: the graph shows nothing (call view.show{{ heights = …, cells = …, size = … }} in cook)");
        };
        let number = |key: &str| -> Result<f64> {
            shown
                .numbers
                .get(key)
                .copied()
                .with_context(|| format!("--render: view.show has no number `{key}`"))
        };
        let heights = shown
            .columns
            .get("heights")
            .cloned()
            .context("--render: view.show has no `heights` Column")?;
        let cells = number("cells")?;
        if !(cells.fract() == 0.0 && (2.0..=4096.0).contains(&cells)) {
            bail!("--render: view.show's `cells` is {cells}, not a whole number from 2 to 4096");
        }
        let cells = cells as u32;
        let samples = u64::from(cells) * u64::from(cells);
        if heights.ty != ColumnType::Float || heights.capacity < samples {
            bail!(
                "--render: view.show's `heights` is a {} column of {} elements, not a Float column of cells² = {samples}",
                heights.ty.name(),
                heights.capacity
            );
        }
        let size = number("size")?;
        if !(size.is_finite() && size > 0.0) {
            bail!("--render: view.show's `size` is {size}, not a positive number");
        }
        let relief = shown.numbers.get("relief").copied().unwrap_or(size * 0.25);
        if !(relief.is_finite() && relief > 0.0) {
            bail!("--render: view.show's `relief` is {relief}, not a positive number");
        }
        let water = shown
            .numbers
            .get("water")
            .copied()
            .unwrap_or(f64::NEG_INFINITY);
        let trees = shown.columns.get("trees").cloned();
        if let Some(t) = &trees {
            if t.lanes != 4 || t.element() != gpugraph_procgen::Word::F32 {
                bail!(
                    "--render: view.show's `trees` is a {} column, not (x, y, z, scale) Vec4",
                    t.ty.name()
                );
            }
        }
        Ok(Self {
            heights,
            cells,
            size: size as f32,
            relief: relief as f32,
            water: if water.is_finite() {
                water as f32
            } else {
                -1e30
            },
            trees,
        })
    }
}

/// The rendered image and the trees its indirect draw drew.
pub struct Image {
    /// Tightly packed RGBA8 rows, top row first.
    pub rgba: Vec<u8>,
    /// The draw record's `instanceCount` after the frame.
    pub trees_drawn: u32,
}

/// Draws `scene` into a `width` × `height` image (4× MSAA, resolved).
pub fn render(gpu: &Gpu, scene: &Scene, width: u32, height: u32) -> Result<Image> {
    let device = gpu.device();
    let mut g = CommandGraph::new("procgen-render", device);
    let import = |g: &mut CommandGraph, id: &str, b: &wgpu::Buffer| {
        g.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)
    };
    let s = scene.size;
    // From beyond the south edge, above it: the whole block in view at 16:9 (40° tall).
    let eye = [0.5 * s, 0.55 * s, -0.72 * s];
    let target = [0.5 * s, -0.04 * s, 0.5 * s];
    let projection = perspective(
        40f32.to_radians(),
        width as f32 / height as f32,
        0.01 * s,
        4.0 * s,
    );
    let uniform = ViewUniform {
        view_projection: mul(&projection, &look_at(eye, target, [0.0, 1.0, 0.0])),
        eye: [eye[0], eye[1], eye[2], 1.0],
        cells: scene.cells,
        size: scene.size,
        relief: scene.relief,
        water: scene.water,
    };
    let view = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("procgen-render view"),
        contents: bytemuck::bytes_of(&uniform),
        usage: U::UNIFORM,
    });
    let view_h = import(&mut g, "view", &view)?;
    let heights_h = import(&mut g, "heights", &scene.heights.buffer)?;
    // No trees shown: an empty record over a placeholder column.
    let placeholder;
    let (trees_buffer, capacity) = match &scene.trees {
        Some(t) => (&t.buffer, t.capacity),
        None => {
            placeholder = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("procgen-render no trees"),
                size: 16,
                usage: U::STORAGE,
                mapped_at_creation: false,
            });
            (&placeholder, 0)
        }
    };
    let capacity = u32::try_from(capacity).context("--render: more trees than a draw holds")?;
    let trees_h = import(&mut g, "trees", trees_buffer)?;
    let draw = DrawCommandBuffer::create(device, "procgen-render trees", DrawLayout::Draw, 1);
    draw.write_draw(
        gpu.queue(),
        0,
        DrawIndirectArgs {
            vertex_count: TREE_VERTICES,
            instance_count: capacity,
            first_vertex: 0,
            first_instance: 0,
        },
    )?;
    let draw_h = draw.import(&mut g, "draw")?;
    if let Some(live) = scene.trees.as_ref().and_then(|t| t.live.as_ref()) {
        let live_h = import(&mut g, "tree-count", &live.word)?;
        let word = draw.instance_count_byte_offset(0)? / 4;
        g.add_dispatch_node(DispatchNode::new(
            "tree-count",
            ShaderSource::new("procgen/render/draw_count", DRAW_COUNT_WGSL),
            "main",
            vec![
                Binding::params(
                    0,
                    &DrawCountParams {
                        capacity,
                        word: word as u32,
                    },
                ),
                Binding::handle(1, live_h, Access::Read),
                Binding::handle(2, draw_h, Access::ReadWrite),
            ],
            Grid::Workgroups([1, 1, 1]),
        ))?;
    }
    let ra = T::RENDER_ATTACHMENT;
    let resolved = g.create_texture(TextureDescriptor::new(
        "image",
        (width, height),
        F::Rgba8Unorm,
        ra | T::COPY_SRC,
    ))?;
    let msaa = g.create_texture(
        TextureDescriptor::new("image-msaa", (width, height), F::Rgba8Unorm, ra).with_samples(4),
    )?;
    let depth = g.create_texture(
        TextureDescriptor::new("depth", (width, height), F::Depth32Float, ra).with_samples(4),
    )?;
    let sky = ColorLoad::Clear(wgpu::Color {
        r: 0.64,
        g: 0.76,
        b: 0.88,
        a: 1.0,
    });
    let mut color = ColorAttachment::new(msaa, sky).resolve_into(resolved);
    color.store = false;
    // The surface's quads, then the block's four sides (`forest.wgsl`).
    let terrain_vertices = (scene.cells - 1) * (scene.cells - 1) * 6 + 4 * (scene.cells - 1) * 6;
    g.add_render_pass_node(RenderPassNode {
        id: "forest".into(),
        color: vec![color],
        depth_stencil: Some(DepthStencilAttachment::cleared_depth(depth, 1.0)),
        uses: vec![
            ResourceUse::uniform(view_h),
            ResourceUse::storage_read(heights_h),
            ResourceUse::storage_read(trees_h),
            ResourceUse::indirect(draw_h),
        ],
        depends_on: Vec::new(),
        compile: Box::new(move |cc| {
            let device = cc.device();
            let module = DeviceCache::for_device(device).shader_module(
                &ShaderSource::from_registry(&WGSL, "procgen/forest.wgsl")
                    .keyed("procgen/render/forest"),
            );
            let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT,
                ty,
                count: None,
            };
            let storage = wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            };
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("procgen/render/forest"),
                entries: &[
                    entry(
                        0,
                        wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Uniform,
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                    ),
                    entry(1, storage),
                    entry(2, storage),
                ],
            });
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("procgen/render/forest"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = |vs: &str| {
                device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some(vs),
                    layout: Some(&pipeline_layout),
                    vertex: wgpu::VertexState {
                        module: &module,
                        entry_point: Some(vs),
                        compilation_options: Default::default(),
                        buffers: &[],
                    },
                    // Open cones and a two-sided height field: nothing is culled.
                    primitive: wgpu::PrimitiveState::default(),
                    depth_stencil: Some(wgpu::DepthStencilState {
                        format: F::Depth32Float,
                        depth_write_enabled: Some(true),
                        depth_compare: Some(wgpu::CompareFunction::Less),
                        stencil: Default::default(),
                        bias: Default::default(),
                    }),
                    multisample: wgpu::MultisampleState {
                        count: 4,
                        ..Default::default()
                    },
                    fragment: Some(wgpu::FragmentState {
                        module: &module,
                        entry_point: Some("fs"),
                        compilation_options: Default::default(),
                        targets: &[Some(F::Rgba8Unorm.into())],
                    }),
                    multiview_mask: None,
                    cache: None,
                })
            };
            let terrain = pipeline("vs_terrain");
            let trees = pipeline("vs_tree");
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("procgen/render/forest"),
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(cc.binding(view_h)),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Buffer(cc.binding(heights_h)),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::Buffer(cc.binding(trees_h)),
                    },
                ],
            });
            let record = cc.buffer(draw_h).clone();
            let exec: Box<dyn gpugraph_command::RenderExecutable> = Box::new(
                move |pass: &mut wgpu::RenderPass<'_>, _: &gpugraph_command::EncodeContext<'_>| {
                    pass.set_bind_group(0, &group, &[]);
                    pass.set_pipeline(&terrain);
                    pass.draw(0..terrain_vertices, 0..1);
                    pass.set_pipeline(&trees);
                    pass.draw_indirect(&record, 0);
                },
            );
            Ok(exec)
        }),
    })?;
    let row = padded_bytes_per_row(width);
    let image = gpu.staging("procgen-render image", u64::from(row) * u64::from(height));
    let image_h = import(&mut g, "image-readback", &image)?;
    g.add_copy_node(CopyNode::texture_to_buffer(
        "read-image",
        resolved,
        image_h,
        (width, height),
        row,
    ))?;
    let mut compiled = g.compile().context("compiling the render graph")?;
    gpu.run_graph(&mut compiled, "procgen render")?;
    let words = gpu.read_u32(&image)?;
    let bytes: &[u8] = bytemuck::cast_slice(&words);
    let mut rgba = Vec::with_capacity(width as usize * height as usize * 4);
    for y in 0..height as usize {
        let at = y * row as usize;
        rgba.extend_from_slice(&bytes[at..at + width as usize * 4]);
    }
    let record = gpu.read_back(draw.buffer(), 4)?;
    Ok(Image {
        rgba,
        trees_drawn: record[1],
    })
}
