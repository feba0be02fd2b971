//! [`DeviceCache`]: one compute-pipeline cache and one bind-group cache per `wgpu::Device`.
//!
//! Design. Every kernel of every primitive builds its pipeline through
//! [`DeviceCache::compute_pipeline`], keyed by the full WGSL text (not only a hash, so two
//! sources can never share a pipeline by collision), the entry point, the group-0 layout
//! entries and the pipeline-overridable constants. Compiling the same graph shape twice
//! therefore creates no pipeline the second time ([`CacheStats`] proves it in tests). Bind
//! groups are keyed by layout and the exact buffer ranges; the map is bounded
//! ([`BIND_GROUP_CAPACITY`], oldest evicted first) because its keys keep buffer handles alive.
//!
//! A creation that wgpu rejects (invalid WGSL, a binding too small) is never cached: the cache
//! creates inside its own error scope and, on error, creates once more outside it so the
//! caller's scope (a graph compile) sees the same validation error it would without a cache.
//!
//! [`DeviceCache::for_device`] returns the device's one cache from a process-wide registry,
//! so `CommandGraph::new(id, &device)` reaches it without any new argument; the registry holds
//! the device until [`DeviceCache::release`].
//!
//! Render pipelines (a frame's draw, the viewer's spans) take their shader module from
//! [`DeviceCache::shader_module`], the one other place a module is created: both paths start
//! from a [`ShaderSource`] recipe, so every WGSL text the workspace hands a device is assembled
//! by `shader/` (`#include`, `#ifdef`, headers) and nowhere else.
//!
//! A device created with a persisted pipeline cache ([`crate::context::ContextOptions`])
//! attaches it here once ([`DeviceCache::attach_pipeline_cache`]); every pipeline this cache
//! creates then goes through it, so the driver can reuse machine code from an earlier process.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::pipeline_cache::PersistentPipelineCache;
use crate::shader::ShaderSource;

/// Bind groups kept per device before the oldest is evicted.
pub const BIND_GROUP_CAPACITY: usize = 4096;

/// What one device's cache did so far (monotonic counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Compute pipelines created (cache misses).
    pub pipelines_created: u64,
    /// Pipeline requests served from the cache.
    pub pipeline_hits: u64,
    /// Bind groups created (cache misses).
    pub bind_groups_created: u64,
    /// Bind-group requests served from the cache.
    pub bind_group_hits: u64,
}

/// Everything that makes one compute pipeline: the cache key.
#[derive(Clone, Debug)]
pub struct PipelineDescriptor<'a> {
    /// Label of the module, layout and pipeline (not part of the key).
    pub label: &'a str,
    /// Complete WGSL text.
    pub wgsl: &'a str,
    /// Entry point.
    pub entry_point: &'a str,
    /// Group-0 layout entries (the only bind group).
    pub entries: &'a [wgpu::BindGroupLayoutEntry],
    /// Pipeline-overridable constants.
    pub constants: &'a [(&'a str, f64)],
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    wgsl: String,
    entry_point: String,
    entries: Vec<wgpu::BindGroupLayoutEntry>,
    constants: Vec<(String, u64)>,
}

/// A cached compute pipeline with its group-0 layout. Cheap to clone.
#[derive(Clone, Debug)]
pub struct CachedPipeline {
    /// The pipeline.
    pub pipeline: wgpu::ComputePipeline,
    /// Layout of bind group 0.
    pub layout: wgpu::BindGroupLayout,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct BindKey {
    layout: wgpu::BindGroupLayout,
    entries: Vec<(u32, wgpu::Buffer, u64, Option<NonZeroU64>)>,
}

#[derive(Default)]
struct Inner {
    layouts:
        HashMap<Vec<wgpu::BindGroupLayoutEntry>, (wgpu::BindGroupLayout, wgpu::PipelineLayout)>,
    pipelines: HashMap<PipelineKey, CachedPipeline>,
    /// One slot per key being created: a second request for the key waits on it instead of
    /// compiling a duplicate (graphs compile their nodes on several threads).
    creating: HashMap<PipelineKey, Arc<Mutex<Option<CachedPipeline>>>>,
    bind_groups: HashMap<BindKey, wgpu::BindGroup>,
    bind_order: VecDeque<BindKey>,
    stats: CacheStats,
}

/// The pipeline and bind-group cache of one device (see the module doc). Thread-safe.
pub struct DeviceCache {
    device: wgpu::Device,
    inner: Mutex<Inner>,
    persistent: OnceLock<Arc<PersistentPipelineCache>>,
}

impl std::fmt::Debug for DeviceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceCache")
            .field("stats", &self.stats())
            .finish()
    }
}

fn registry() -> &'static Mutex<HashMap<wgpu::Device, Arc<DeviceCache>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<wgpu::Device, Arc<DeviceCache>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves maps that are still consistent (inserts are
    // single calls), so a poisoned lock is safe to reuse.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `create` in a validation scope; returns its value and whether wgpu rejected it.
fn scoped<T>(device: &wgpu::Device, create: impl FnOnce() -> T) -> (T, bool) {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let value = create();
    let failed = crate::device_check::scope_error(scope).is_some();
    (value, failed)
}

impl DeviceCache {
    /// The one cache of `device`, created on first request.
    pub fn for_device(device: &wgpu::Device) -> Arc<DeviceCache> {
        lock(registry())
            .entry(device.clone())
            .or_insert_with(|| {
                Arc::new(DeviceCache {
                    device: device.clone(),
                    inner: Mutex::new(Inner::default()),
                    persistent: OnceLock::new(),
                })
            })
            .clone()
    }

    /// Drops the registry's reference to `device`'s cache (and so to the device): call when a
    /// device is retired. Graphs compiled earlier keep what they hold.
    pub fn release(device: &wgpu::Device) {
        lock(registry()).remove(device);
    }

    /// The device this cache creates on.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// Makes every pipeline created from now on go through `cache` (a driver pipeline cache
    /// of this device). The first attachment wins; returns whether `cache` is the one in use.
    pub fn attach_pipeline_cache(&self, cache: Arc<PersistentPipelineCache>) -> bool {
        let ours = Arc::clone(&cache);
        Arc::ptr_eq(self.persistent.get_or_init(|| cache), &ours)
    }

    /// The attached driver pipeline cache, if any.
    pub fn pipeline_cache(&self) -> Option<Arc<PersistentPipelineCache>> {
        self.persistent.get().cloned()
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        lock(&self.inner).stats
    }

    /// The pipeline of `desc`, created on the first request for its key.
    pub fn compute_pipeline(&self, desc: &PipelineDescriptor<'_>) -> CachedPipeline {
        let key = PipelineKey {
            wgsl: desc.wgsl.to_string(),
            entry_point: desc.entry_point.to_string(),
            entries: desc.entries.to_vec(),
            constants: desc
                .constants
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_bits()))
                .collect(),
        };
        let slot = {
            let mut inner = lock(&self.inner);
            if let Some(p) = inner.pipelines.get(&key).cloned() {
                inner.stats.pipeline_hits += 1;
                return p;
            }
            Arc::clone(inner.creating.entry(key.clone()).or_default())
        };
        // Created outside the cache's lock (shader compilation takes long and other keys
        // proceed meanwhile) but inside the key's slot: a racing request for the same key
        // waits here and takes the result.
        let mut created = lock(&slot);
        if let Some(p) = created.clone() {
            lock(&self.inner).stats.pipeline_hits += 1;
            return p;
        }
        let (cached, failed) = scoped(&self.device, || self.create(desc));
        let mut inner = lock(&self.inner);
        inner.stats.pipelines_created += 1;
        inner.creating.remove(&key);
        if failed {
            drop(inner);
            drop(created);
            // Again outside our scope, so the caller's error scope reports the error.
            return self.create(desc);
        }
        *created = Some(cached.clone());
        inner.pipelines.insert(key, cached.clone());
        cached
    }

    fn layouts(
        &self,
        label: &str,
        entries: &[wgpu::BindGroupLayoutEntry],
    ) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
        // Created under the lock (cheap calls): racing requests get one layout object.
        let mut inner = lock(&self.inner);
        if let Some(l) = inner.layouts.get(entries) {
            return l.clone();
        }
        let layout = self
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries,
            });
        let pipeline_layout = self
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pair = (layout, pipeline_layout);
        inner.layouts.insert(entries.to_vec(), pair.clone());
        pair
    }

    fn create(&self, desc: &PipelineDescriptor<'_>) -> CachedPipeline {
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(desc.label),
                source: wgpu::ShaderSource::Wgsl(desc.wgsl.into()),
            });
        let (layout, pipeline_layout) = self.layouts(desc.label, desc.entries);
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(desc.label),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(desc.entry_point),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: desc.constants,
                    ..Default::default()
                },
                cache: self.persistent.get().map(|p| p.wgpu()),
            });
        CachedPipeline { pipeline, layout }
    }

    /// The shader module of `source` (assembled by [`ShaderSource::build`], labelled by its
    /// key), for render pipelines, which the caller creates from it. Not cached: render
    /// pipelines are created once per consumer, and an invalid module must reach the caller's
    /// error scope every time.
    pub fn shader_module(&self, source: &ShaderSource) -> wgpu::ShaderModule {
        let wgsl = source.build();
        self.device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(source.key()),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            })
    }

    /// A bind group of `layout` over buffer ranges `entries` (binding, range), created on the
    /// first request for exactly these buffers, offsets and sizes.
    pub fn bind_group(
        &self,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        entries: &[(u32, wgpu::BufferBinding<'_>)],
    ) -> wgpu::BindGroup {
        let key = BindKey {
            layout: layout.clone(),
            entries: entries
                .iter()
                .map(|(i, b)| (*i, b.buffer.clone(), b.offset, b.size))
                .collect(),
        };
        {
            let mut inner = lock(&self.inner);
            if let Some(g) = inner.bind_groups.get(&key).cloned() {
                inner.stats.bind_group_hits += 1;
                return g;
            }
        }
        let create = || {
            let wgpu_entries: Vec<wgpu::BindGroupEntry<'_>> = entries
                .iter()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: *i,
                    resource: wgpu::BindingResource::Buffer(b.clone()),
                })
                .collect();
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(label),
                layout,
                entries: &wgpu_entries,
            })
        };
        let (group, failed) = scoped(&self.device, create);
        let mut inner = lock(&self.inner);
        inner.stats.bind_groups_created += 1;
        if failed {
            drop(inner);
            return create();
        }
        if inner.bind_groups.len() >= BIND_GROUP_CAPACITY {
            if let Some(old) = inner.bind_order.pop_front() {
                inner.bind_groups.remove(&old);
            }
        }
        inner.bind_order.push_back(key.clone());
        inner.bind_groups.insert(key, group.clone());
        group
    }
}
