//! The persisted driver pipeline cache on a real device (lavapipe in CI, NVIDIA Vulkan on the
//! H200): saved data reaches a second device, and a damaged file never breaks anything. No
//! adapter is a failure, never a skip.

use std::path::Path;

use gpugraph_command::wgpu;
use gpugraph_command::{ContextOptions, DeviceCache, GpuContext, LoadStatus, PipelineDescriptor};

fn ctx_with(dir: &Path) -> GpuContext {
    let ctx = GpuContext::with_options(&ContextOptions {
        adapter: std::env::var("GPUGRAPH_ADAPTER")
            .ok()
            .filter(|s| !s.is_empty()),
        pipeline_cache_dir: Some(dir.to_path_buf()),
        unvalidated_indirect: false,
    })
    .expect("a Vulkan adapter (lavapipe in CI) is required for GPU tests");
    assert!(
        ctx.pipeline_cache().is_some(),
        "Vulkan adapters offer PIPELINE_CACHE; {} did not",
        ctx.capabilities().adapter
    );
    ctx
}

/// Compiles a small pipeline through the device's cache; fails on any wgpu error.
fn compile(ctx: &GpuContext, salt: u32) {
    let wgsl = format!(
        "@group(0) @binding(0) var<storage, read_write> d: array<u32>;
         @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
             if (g.x < arrayLength(&d)) {{ d[g.x] = d[g.x] * 3u + {salt}u; }}
         }}"
    );
    let entries = [wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: false },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }];
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    DeviceCache::for_device(&ctx.device).compute_pipeline(&PipelineDescriptor {
        label: "pipeline-cache-test",
        wgsl: &wgsl,
        entry_point: "main",
        entries: &entries,
        constants: &[],
    });
    let error = pollster::block_on(scope.pop());
    assert!(error.is_none(), "pipeline creation failed: {error:?}");
}

#[test]
fn a_second_device_starts_from_the_saved_cache() {
    let dir = tempfile::tempdir().unwrap();
    let first = ctx_with(dir.path());
    let cache = first.pipeline_cache().unwrap();
    assert_eq!(cache.status(), &LoadStatus::Missing);
    assert!(cache.path().starts_with(dir.path()));
    let empty_len = cache.data().map_or(0, |d| d.len());
    compile(&first, 7);
    let saved = first.save_pipeline_cache().unwrap().expect("driver data");
    // Lavapipe keeps no pipelines in its cache (96 bytes, headers only, before and after);
    // a GPU driver must store what it compiled, or the cache is useless there.
    let stores_pipelines = first.capabilities().device_type != "Cpu";
    assert!(
        saved > 0 && (!stores_pipelines || saved as usize > empty_len),
        "compiling added nothing to the cache ({saved} bytes, {empty_len} empty)"
    );
    assert_eq!(std::fs::metadata(cache.path()).unwrap().len(), saved);
    // No temporaries left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let second = ctx_with(dir.path());
    let loaded = second.pipeline_cache().unwrap();
    assert_eq!(loaded.status(), &LoadStatus::Offered { bytes: saved });
    // Before compiling anything, the second device's cache already holds the first one's
    // pipelines: the file was accepted, not dropped as corrupt.
    let data = loaded.data().expect("driver data");
    assert!(
        !data.is_empty() && (!stores_pipelines || data.len() > empty_len),
        "the second device started empty ({} bytes; saved {saved})",
        data.len()
    );
    compile(&second, 7);
}

#[test]
fn garbage_and_truncated_files_are_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let probe = ctx_with(dir.path());
    let path = probe.pipeline_cache().unwrap().path().to_path_buf();
    compile(&probe, 1);
    probe.save_pipeline_cache().unwrap();
    let valid = std::fs::read(&path).unwrap();

    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    // Garbage, a valid header with its data cut short, an empty file: wgpu drops them
    // silently. A header naming another device: wgpu refuses it with an error even under
    // `fallback`, which must not reach the device's uncaptured-error handler (the default
    // one panics).
    let mut foreign = valid.clone();
    foreign[8 + 4 + 4 + 1 + 3] ^= 0x5a; // a vendor-id byte of the adapter key
    let damaged = [
        (garbage, false),
        (valid[..valid.len() / 2].to_vec(), false),
        (Vec::new(), false),
        (foreign, true),
    ];
    for (i, (bytes, refused)) in damaged.into_iter().enumerate() {
        std::fs::write(&path, &bytes).unwrap();
        let ctx = ctx_with(dir.path());
        let status = ctx.pipeline_cache().unwrap().status().clone();
        if refused {
            assert!(
                matches!(status, LoadStatus::Refused { .. }),
                "file {i}: {status:?}"
            );
        } else {
            assert_eq!(
                status,
                LoadStatus::Offered {
                    bytes: bytes.len() as u64
                },
                "file {i}"
            );
        }
        compile(&ctx, 2 + i as u32);
        let saved = ctx.save_pipeline_cache().unwrap().expect("driver data");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), saved, "file {i}");
    }
}

#[test]
fn without_a_directory_nothing_is_persisted() {
    let ctx = gpugraph_testing::ctx();
    assert!(ctx.pipeline_cache().is_none());
    assert!(!ctx
        .device
        .features()
        .contains(wgpu::Features::PIPELINE_CACHE));
    assert_eq!(ctx.save_pipeline_cache().unwrap(), None);
    assert!(DeviceCache::for_device(&ctx.device)
        .pipeline_cache()
        .is_none());
}
