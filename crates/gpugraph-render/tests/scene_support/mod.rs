//! Test support of the GPUScene tests: a device (`GpuContext` requests
//! `INDIRECT_FIRST_INSTANCE`, which draw generation's `firstInstance` contract needs, where the
//! adapter has it; lavapipe does), explicit readback, and random records. No adapter is a
//! failure, never a skip.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    BufferDescriptor, BufferHandle, CommandGraph, CompiledGraph, DataView, DataViewDescriptor,
    EncodeOptions, GpuContext, VectorFormat,
};
use gpugraph_render::gpu_scene::GpuSceneMutation;
use gpugraph_render::gpu_scene::GpuSceneRecord;
use gpugraph_render::{DrawCommandBuffer, DrawLayout, GpuScene, GpuSceneUpload};
use rand::Rng;

/// The context's device and queue (fields kept so tests read `d.device`, `d.queue`).
pub struct SceneDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub ctx: GpuContext,
}

pub fn scene_device() -> SceneDevice {
    let ctx = gpugraph_testing::ctx();
    assert!(
        ctx.device
            .features()
            .contains(wgpu::Features::INDIRECT_FIRST_INSTANCE),
        "GpuContext's device lacks INDIRECT_FIRST_INSTANCE (the adapter has: {:?})",
        ctx.adapter.features()
    );
    SceneDevice {
        device: ctx.device.clone(),
        queue: ctx.queue.clone(),
        ctx,
    }
}

pub use gpugraph_testing::{rng, POISON};

/// Reads a whole buffer (COPY_SRC) back as bytes.
pub fn read_bytes(d: &SceneDevice, buffer: &wgpu::Buffer) -> Vec<u8> {
    gpugraph_testing::read_bytes(&d.ctx, buffer, 0, buffer.size())
}

/// Maps a `MAP_READ` buffer once the queue has finished with it.
pub fn read_mapped(d: &SceneDevice, buffer: &wgpu::Buffer) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(&gpugraph_testing::map_read(&d.ctx, buffer))
}

pub fn read_words(d: &SceneDevice, buffer: &wgpu::Buffer) -> Vec<u32> {
    gpugraph_testing::read_buffer(&d.ctx, buffer)
}

/// A STORAGE | COPY_SRC | COPY_DST (| `extra`) buffer of `words` (at least 16 bytes).
pub fn upload_words(d: &SceneDevice, words: &[u32], extra: U) -> wgpu::Buffer {
    gpugraph_testing::upload_padded(&d.ctx, words, U::STORAGE | U::COPY_SRC | extra, 16)
}

/// Encodes `compiled` once, submits and waits.
pub fn encode_wait(d: &SceneDevice, compiled: &mut CompiledGraph) {
    encode_upload(d, compiled, None, true);
}

/// Encodes `compiled` once after `upload`'s take ([`GpuSceneUpload::encode`]: the copy of
/// host-staged bytes), submits, and waits when `wait` (without a poll the upload's host
/// buffers do not map again).
pub fn encode_upload(
    d: &SceneDevice,
    compiled: &mut CompiledGraph,
    upload: Option<&GpuSceneUpload>,
    wait: bool,
) {
    let mut enc = d.device.create_command_encoder(&Default::default());
    if let Some(u) = upload {
        u.encode(&mut enc);
    }
    compiled
        .encode(&mut enc, &EncodeOptions::default())
        .unwrap();
    d.queue.submit([enc.finish()]);
    if wait {
        d.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    }
}

/// A random valid record for `id`: random box in `[-extent, extent]³`, group/geometry/slot
/// drawn from small ranges (so collisions happen), invalid references sometimes.
pub fn random_record(rng: &mut impl Rng, id: u32, extent: f32, slots: u32) -> GpuSceneRecord {
    let c: [f32; 3] = std::array::from_fn(|_| rng.random_range(-extent..extent));
    let h: [f32; 3] = std::array::from_fn(|_| rng.random_range(0.0..2.0f32));
    let mut r = GpuSceneRecord::new(id)
        .with_aabb(
            std::array::from_fn(|i| c[i] - h[i]),
            std::array::from_fn(|i| c[i] + h[i]),
        )
        .with_group(rng.random_range(0..4))
        .with_geometry(rng.random_range(0..3));
    r.command_slot = if rng.random_bool(0.1) {
        u32::MAX
    } else {
        rng.random_range(0..slots.max(1) + 2)
    };
    r.flags |= rng.random_range(0..4u32) << 1;
    r.transform[3] = [c[0], c[1], c[2], 1.0];
    r
}

/// Diagnostics: `n` words between guard words, all poisoned.
pub struct Words {
    pub buffer: wgpu::Buffer,
    pub handle: BufferHandle,
    pub n: u64,
}

impl Words {
    pub fn new(d: &SceneDevice, g: &mut CommandGraph, id: &str, n: u64) -> Self {
        let buffer = upload_words(d, &vec![POISON; n as usize + 2], U::empty());
        let handle = g
            .import_buffer(
                BufferDescriptor::new(id, buffer.size(), U::STORAGE | U::COPY_DST),
                &buffer,
            )
            .unwrap();
        Self { buffer, handle, n }
    }
    /// Rows `at..at+len` (row 0 is the leading guard).
    pub fn view(&self, g: &CommandGraph, at: u64, len: u64) -> DataView {
        g.create_data_view(
            self.handle,
            DataViewDescriptor::packed(VectorFormat::Uint32, len).at_offset(4 * (1 + at)),
        )
        .unwrap()
    }
    pub fn read(&self, d: &SceneDevice) -> Vec<u32> {
        let w = read_words(d, &self.buffer);
        assert_eq!((w[0], w[self.n as usize + 1]), (POISON, POISON), "guards");
        w[1..=self.n as usize].to_vec()
    }
    pub fn poison(&self, d: &SceneDevice) {
        d.queue.write_buffer(
            &self.buffer,
            0,
            bytemuck::cast_slice(&vec![POISON; self.n as usize + 2]),
        );
    }
}

/// A command buffer of `n` records whose renderer words are distinct and whose
/// instanceCount/firstInstance are poisoned.
pub fn commands(d: &SceneDevice, layout: DrawLayout, n: u32) -> (DrawCommandBuffer, Vec<u32>) {
    let draw = DrawCommandBuffer::create(&d.device, "commands", layout, n);
    let words = (layout.record_bytes() / 4) as usize;
    let init: Vec<u32> = (0..n as usize * words)
        .map(|i| {
            let w = i % words;
            if w == 1 || w == words - 1 {
                POISON
            } else {
                0x1000_0000 + i as u32
            }
        })
        .collect();
    if !init.is_empty() {
        d.queue
            .write_buffer(draw.buffer(), 0, bytemuck::cast_slice(&init));
    }
    (draw, init)
}

/// Checks the command words: generated fields as the oracle says, renderer words untouched.
pub fn check_commands(
    got: &[u32],
    init: &[u32],
    layout: DrawLayout,
    want: &[(u32, u32)],
    ctx: &str,
) {
    let words = (layout.record_bytes() / 4) as usize;
    for (c, &(ic, fi)) in want.iter().enumerate() {
        let r = &got[c * words..(c + 1) * words];
        assert_eq!((r[1], r[words - 1]), (ic, fi), "{ctx}: command {c}");
        for w in [0, 2, 3].into_iter().filter(|&w| w != words - 1) {
            assert_eq!(
                r[w],
                init[c * words + w],
                "{ctx}: command {c} renderer word {w}"
            );
        }
    }
}

/// A scene with holes: `n` random records, every third removed again.
pub fn scene_with_holes(
    d: &SceneDevice,
    rng: &mut rand::rngs::StdRng,
    n: u32,
    slots: u32,
) -> GpuScene {
    let records: Vec<GpuSceneRecord> = (0..n)
        .map(|i| random_record(rng, 5000 + i * 7, 20.0, slots))
        .collect();
    let mut scene = GpuScene::new(&d.device, &d.queue, "scene", n, &records).unwrap();
    let remove = (0..n)
        .filter(|i| i % 3 == 1)
        .map(|i| 5000 + i * 7)
        .collect();
    scene
        .mutate(
            &d.queue,
            &GpuSceneMutation {
                remove,
                ..Default::default()
            },
        )
        .unwrap();
    scene
}

pub fn slots_records(scene: &GpuScene) -> Vec<GpuSceneRecord> {
    (0..scene.capacity())
        .map(|s| *scene.record(s).unwrap())
        .collect()
}

/// Moves each of `ids` out with probability `p` (in order) and returns those taken.
pub fn take_some(rng: &mut impl Rng, ids: &mut Vec<u32>, p: f64) -> Vec<u32> {
    let mut out = Vec::new();
    ids.retain(|&id| {
        let t = rng.random_bool(p);
        if t {
            out.push(id);
        }
        !t
    });
    out
}
