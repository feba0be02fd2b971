//! [`GpuContext`]: adapter selection, device creation with the adapter's own limits, and the
//! [`Capabilities`] report (`gpugraph info`).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::pipeline_cache::PersistentPipelineCache;

/// Environment variable that selects an adapter by name substring or backend name.
pub const ADAPTER_ENV: &str = "GPUGRAPH_ADAPTER";

/// Why no usable device could be created.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// No adapter at all (no Vulkan driver installed?).
    #[error("no GPU adapter found (backends tried: {backends}); on a machine without a GPU install a software Vulkan driver: apt-get install -y mesa-vulkan-drivers")]
    NoAdapter {
        /// Backends that were enumerated.
        backends: String,
    },
    /// Adapters exist but none matches `GPUGRAPH_ADAPTER`.
    #[error("no adapter matches {env}='{wanted}'; available: {available:?}")]
    NoMatch {
        /// The variable name.
        env: &'static str,
        /// Its value.
        wanted: String,
        /// Names and backends of the adapters found.
        available: Vec<String>,
    },
    /// `request_device` failed.
    #[error("adapter {adapter} refused the device request: {source}")]
    RequestDevice {
        /// Adapter name.
        adapter: String,
        /// wgpu's error.
        #[source]
        source: wgpu::RequestDeviceError,
    },
    /// A device list (`--devices`) names an adapter number the list does not have.
    #[error(
        "there is no adapter {index}; the adapters are: {available:?} (`gpugraph info` lists them)"
    )]
    NoSuchAdapter {
        /// The number asked for.
        index: usize,
        /// `N: name (backend)` of each adapter.
        available: Vec<String>,
    },
    /// A context with the other indirect-validation setting already exists in this process.
    #[error("a device with indirect-dispatch validation {} was requested, but this process already created its devices with it {}: one process uses one setting (devices of two wgpu instances can share ids, which the per-device pipeline cache keys on)", on_off(*.requested), on_off(!*.requested))]
    IndirectValidationConflict {
        /// Whether validation was requested.
        requested: bool,
    },
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Graph-relevant facts about the selected adapter and device.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Capabilities {
    /// Backend name, e.g. "vulkan".
    pub backend: String,
    /// Adapter name, e.g. "NVIDIA H200" or "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub adapter: String,
    /// "DiscreteGpu", "Cpu", ...
    pub device_type: String,
    /// Driver name.
    pub driver: String,
    /// Driver version text.
    pub driver_info: String,
    /// Largest buffer the device can create.
    pub max_buffer_size: u64,
    /// Largest storage-buffer binding.
    pub max_storage_buffer_binding_size: u64,
    /// Storage buffers one shader stage may bind.
    pub max_storage_buffers_per_shader_stage: u32,
    /// Largest uniform binding.
    pub max_uniform_buffer_binding_size: u64,
    /// Alignment of storage binding offsets.
    pub min_storage_buffer_offset_alignment: u32,
    /// Alignment of uniform binding offsets.
    pub min_uniform_buffer_offset_alignment: u32,
    /// Workgroups per dispatch dimension.
    pub max_compute_workgroups_per_dimension: u32,
    /// Invocations per workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// Workgroup memory bytes.
    pub max_compute_workgroup_storage_size: u32,
    /// Smallest subgroup size (0 when subgroups are unavailable).
    pub subgroup_min_size: u32,
    /// Largest subgroup size (0 when subgroups are unavailable).
    pub subgroup_max_size: u32,
    /// GPU timestamp queries enabled.
    pub timestamp_query: bool,
    /// WGSL subgroup operations enabled.
    pub subgroups: bool,
    /// WGSL `f16` enabled.
    pub shader_f16: bool,
    /// wgpu validates every indirect dispatch's counts with an extra compute dispatch (see
    /// [`ContextOptions::unvalidated_indirect`]).
    pub indirect_validation: bool,
}

/// How [`GpuContext::with_options`] picks the adapter and sets the device up.
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// Adapter filter (see [`adapter_matches`]); `None` takes the best adapter.
    pub adapter: Option<String>,
    /// Directory of the persisted driver pipeline cache
    /// ([`crate::pipeline_cache::PersistentPipelineCache`]): pipelines then compile through a
    /// cache loaded from the file there, and [`GpuContext::save_pipeline_cache`] writes it
    /// back. `None` (the default) persists nothing. Ignored where the backend has no such
    /// cache (only Vulkan has one).
    pub pipeline_cache_dir: Option<PathBuf>,
    /// Create the device WITHOUT wgpu's indirect-dispatch validation
    /// (`wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL`, on by default). With it, wgpu runs
    /// before every indirect dispatch an extra one-invocation compute dispatch (plus a
    /// pipeline switch and two barriers) that zeroes counts above
    /// `max_compute_workgroups_per_dimension`; a gated PCG iteration pays that for each of
    /// its dispatches. Without it an out-of-limit count is undefined behavior, so turn it off
    /// only for work whose indirect counts are within the limit by construction:
    /// gpugraph-program's gate kernel clamps every count it writes to the limit (its program
    /// compiler records the setting in its decisions). The flag belongs to the wgpu instance
    /// and devices of two instances can share ids (the per-device pipeline cache keys on
    /// them), so one process uses ONE setting: a context asking for the other one is refused
    /// with [`ContextError::IndirectValidationConflict`]. Default: `false` (validated).
    pub unvalidated_indirect: bool,
}

impl ContextOptions {
    /// The adapter filter from `GPUGRAPH_ADAPTER` (empty means none), no pipeline cache,
    /// indirect dispatches validated.
    pub fn from_env() -> Self {
        Self {
            adapter: std::env::var(ADAPTER_ENV).ok().filter(|s| !s.is_empty()),
            pipeline_cache_dir: None,
            unvalidated_indirect: false,
        }
    }
}

/// Adapter, device and queue chosen for gpugraph work, with the adapter's real limits.
#[derive(Clone, Debug)]
pub struct GpuContext {
    /// The wgpu instance.
    pub instance: wgpu::Instance,
    /// The selected adapter.
    pub adapter: wgpu::Adapter,
    /// The device (created with the adapter's own limits).
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    capabilities: Capabilities,
    pipeline_cache_dir: Option<PathBuf>,
    pipeline_cache: Option<Arc<PersistentPipelineCache>>,
    /// Shared by this context's clones: the last one to drop retires the device's cache.
    clones: Arc<()>,
    /// Declared last, so it is dropped after the device and queue (see [`Teardown`]).
    teardown: Teardown,
}

/// Serializes the creation and destruction of contexts' devices across the process.
///
/// Why: all contexts share one `wgpu::Instance` ([`shared_instance`]), and on the NVIDIA H200
/// (driver 580, 2026-12-01) two threads dropping their contexts at once deadlocked inside
/// `vkDestroyDevice` (one in the driver, one waiting on the loader's lock): the program tests
/// hung when run in parallel. Creation races there too: test binaries whose tests each create
/// a context segfaulted within 0.1 s when run with 4 test threads (`dispatch`, then
/// `live_count`; both pass with one thread), so adapter enumeration and `request_device` hold
/// the same flag ([`Teardown::lifecycle`]). `GpuContext`'s `Drop` takes the process-wide teardown flag before
/// its fields drop; this field, dropped last, gives it back. A device that outlives its
/// context (clones held elsewhere) is destroyed wherever its last clone drops, unserialized.
#[derive(Debug, Default)]
pub(crate) struct Teardown {
    held: bool,
}

impl Clone for Teardown {
    /// A clone has not taken the flag.
    fn clone(&self) -> Self {
        Self::default()
    }
}

fn teardown_flag() -> &'static (std::sync::Mutex<bool>, std::sync::Condvar) {
    static FLAG: std::sync::OnceLock<(std::sync::Mutex<bool>, std::sync::Condvar)> =
        std::sync::OnceLock::new();
    FLAG.get_or_init(Default::default)
}

impl Teardown {
    /// The flag, held until the returned guard drops: wraps device creation.
    pub(crate) fn lifecycle() -> Self {
        let mut guard = Self::default();
        guard.acquire();
        guard
    }

    fn acquire(&mut self) {
        let (lock, freed) = teardown_flag();
        let mut busy = lock.lock().unwrap_or_else(|e| e.into_inner());
        while *busy {
            busy = freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy = true;
        self.held = true;
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if self.held {
            let (lock, freed) = teardown_flag();
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = false;
            freed.notify_one();
        }
    }
}

impl Drop for GpuContext {
    /// The last clone also drops the device's [`crate::DeviceCache`] entry, so the device is
    /// destroyed here, under the teardown flag, rather than left alive until process exit:
    /// on the H200 (2026-12-01, at cdc1cd1) a test binary whose three contexts' devices were
    /// all still registered segfaulted after its last test passed, in 1 of 6 runs.
    fn drop(&mut self) {
        self.teardown.acquire();
        if Arc::strong_count(&self.clones) == 1 {
            crate::DeviceCache::release(&self.device);
        }
    }
}

/// Optional features gpugraph uses when the adapter has them. `INDIRECT_FIRST_INSTANCE`:
/// GPUScene's draw generation writes each drawn row's index into an indirect command's
/// `first_instance`, which wgpu otherwise zeroes.
pub fn wanted_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_F16
        | wgpu::Features::INDIRECT_FIRST_INSTANCE
}

fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

/// The process's instance for the environment's backends (`WGPU_BACKEND`, all by default)
/// and its adapters matching `filter`, best first ([`ordered`]); never empty.
pub(crate) fn listed_adapters(
    filter: Option<&str>,
    validate_indirect: bool,
) -> Result<(wgpu::Instance, Vec<wgpu::Adapter>), ContextError> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all());
    let instance = shared_instance(backends, validate_indirect)?;
    let adapters = {
        let _lifecycle = Teardown::lifecycle();
        pollster::block_on(instance.enumerate_adapters(backends))
    };
    if adapters.is_empty() {
        return Err(ContextError::NoAdapter {
            backends: format!("{backends:?}"),
        });
    }
    Ok((instance, ordered(adapters, filter)?))
}

/// `adapters` that match `filter` (see [`adapter_matches`]), best first: discrete GPUs, then
/// integrated, virtual, CPU and other devices, each in the order the instance listed them.
/// This is the order `gpugraph info` numbers the adapters in and `--devices` indexes.
pub(crate) fn ordered(
    mut adapters: Vec<wgpu::Adapter>,
    filter: Option<&str>,
) -> Result<Vec<wgpu::Adapter>, ContextError> {
    if let Some(w) = filter {
        let available = adapters
            .iter()
            .map(|a| {
                let i = a.get_info();
                format!("{} ({})", i.name, i.backend.to_str())
            })
            .collect();
        adapters.retain(|a| adapter_matches(&a.get_info(), w));
        if adapters.is_empty() {
            return Err(ContextError::NoMatch {
                env: ADAPTER_ENV,
                wanted: w.to_string(),
                available,
            });
        }
    }
    adapters.sort_by_key(|a| rank(a.get_info().device_type));
    Ok(adapters)
}

/// Whether `info` matches a `GPUGRAPH_ADAPTER` value: a backend name ("vulkan", "gl", ...)
/// or a case-insensitive substring of the adapter name.
pub fn adapter_matches(info: &wgpu::AdapterInfo, wanted: &str) -> bool {
    let wanted = wanted.to_lowercase();
    info.backend.to_str().eq_ignore_ascii_case(&wanted)
        || info.name.to_lowercase().contains(&wanted)
}

/// One `wgpu::Instance` per backend set for the whole process. wgpu identifies devices (and
/// compares them) by ids that are unique only within one instance, and the per-device
/// [`crate::DeviceCache`] registry relies on that comparison: contexts made here never
/// collide. A device of an instance created elsewhere may compare equal to one of ours;
/// do not mix such devices with gpugraph graphs in one process. The instance flags follow
/// `validate_indirect`, which must be the same for every context of the process.
fn shared_instance(
    backends: wgpu::Backends,
    validate_indirect: bool,
) -> Result<wgpu::Instance, ContextError> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    /// The process's indirect-validation setting (set by its first context) and its
    /// instances by backend bits.
    type Instances = (Option<bool>, HashMap<u32, wgpu::Instance>);
    static INSTANCES: OnceLock<Mutex<Instances>> = OnceLock::new();
    let mut guard = INSTANCES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let (setting, map) = &mut *guard;
    if *setting.get_or_insert(validate_indirect) != validate_indirect {
        return Err(ContextError::IndirectValidationConflict {
            requested: validate_indirect,
        });
    }
    Ok(map
        .entry(backends.bits())
        .or_insert_with(|| {
            let mut flags = wgpu::InstanceFlags::default();
            flags.set(
                wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL,
                validate_indirect,
            );
            wgpu::Instance::new(wgpu::InstanceDescriptor {
                backends,
                flags,
                ..wgpu::InstanceDescriptor::new_without_display_handle()
            })
        })
        .clone())
}

impl GpuContext {
    /// Selects the best adapter (discrete first; `GPUGRAPH_ADAPTER` filters by name substring
    /// or backend) and creates a device with its own limits and the wanted optional features.
    /// No pipeline cache is persisted (see [`GpuContext::with_options`]).
    pub fn new() -> Result<Self, ContextError> {
        Self::with_options(&ContextOptions::from_env())
    }

    /// Like [`GpuContext::new`] with an explicit adapter filter instead of the environment.
    pub fn with_adapter(filter: Option<&str>) -> Result<Self, ContextError> {
        Self::with_options(&ContextOptions {
            adapter: filter.map(str::to_string),
            ..ContextOptions::default()
        })
    }

    /// Selects the adapter as [`GpuContext::new`] does with `options.adapter` as the filter,
    /// and persists the driver pipeline cache in `options.pipeline_cache_dir` when given.
    pub fn with_options(options: &ContextOptions) -> Result<Self, ContextError> {
        let (instance, mut adapters) =
            listed_adapters(options.adapter.as_deref(), !options.unvalidated_indirect)?;
        let adapter = adapters.swap_remove(0);
        let limits = adapter.limits();
        Self::create(
            instance,
            adapter,
            limits,
            options.pipeline_cache_dir.clone(),
            !options.unvalidated_indirect,
        )
    }

    /// Creates the device on a chosen adapter with its own limits and wanted features.
    pub fn from_adapter(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
    ) -> Result<Self, ContextError> {
        let limits = adapter.limits();
        // wgpu does not expose an instance's flags: claim validation (wgpu's release default),
        // which is the safe claim for a caller's own instance.
        Self::create(instance, adapter, limits, None, true)
    }

    /// A second context on the same adapter with `adjust` applied to its limits, e.g. a small
    /// `max_compute_workgroups_per_dimension` so tests reach multi-dimensional dispatch paths
    /// with small inputs.
    pub fn with_adjusted_limits(
        &self,
        adjust: impl FnOnce(&mut wgpu::Limits),
    ) -> Result<Self, ContextError> {
        let mut limits = self.adapter.limits();
        adjust(&mut limits);
        Self::create(
            self.instance.clone(),
            self.adapter.clone(),
            limits,
            self.pipeline_cache_dir.clone(),
            self.capabilities.indirect_validation,
        )
    }

    pub(crate) fn create(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
        limits: wgpu::Limits,
        pipeline_cache_dir: Option<PathBuf>,
        indirect_validation: bool,
    ) -> Result<Self, ContextError> {
        let info = adapter.get_info();
        let mut features = adapter.features() & wanted_features();
        if pipeline_cache_dir.is_some() {
            features |= adapter.features() & wgpu::Features::PIPELINE_CACHE;
        }
        let lifecycle = Teardown::lifecycle();
        let requested = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("gpugraph"),
            required_features: features,
            required_limits: limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }));
        drop(lifecycle);
        let (device, queue) = requested.map_err(|source| ContextError::RequestDevice {
            adapter: info.name.clone(),
            source,
        })?;
        let capabilities = Capabilities {
            indirect_validation,
            ..capabilities_of(&info, &device)
        };
        let pipeline_cache = pipeline_cache_dir
            .as_deref()
            .and_then(|dir| PersistentPipelineCache::open(&device, &info, dir))
            .map(Arc::new);
        if let Some(cache) = &pipeline_cache {
            crate::DeviceCache::for_device(&device).attach_pipeline_cache(Arc::clone(cache));
        }
        Ok(Self {
            instance,
            adapter,
            device,
            queue,
            capabilities,
            pipeline_cache_dir,
            pipeline_cache,
            clones: Arc::new(()),
            teardown: Teardown::default(),
        })
    }

    /// The persisted driver pipeline cache in use, if one was asked for and the backend has
    /// one.
    pub fn pipeline_cache(&self) -> Option<&Arc<PersistentPipelineCache>> {
        self.pipeline_cache.as_ref()
    }

    /// Writes the driver pipeline cache back to its file (atomically). Returns the bytes
    /// written; `None` when no cache is in use or the driver returned no data.
    pub fn save_pipeline_cache(
        &self,
    ) -> Result<Option<u64>, crate::pipeline_cache::PipelineCacheError> {
        match &self.pipeline_cache {
            Some(cache) => cache.save(),
            None => Ok(None),
        }
    }

    /// The capabilities report.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }
}

fn capabilities_of(info: &wgpu::AdapterInfo, device: &wgpu::Device) -> Capabilities {
    let l = device.limits();
    let f = device.features();
    let subgroups = f.contains(wgpu::Features::SUBGROUP);
    Capabilities {
        backend: info.backend.to_str().to_string(),
        adapter: info.name.clone(),
        device_type: format!("{:?}", info.device_type),
        driver: info.driver.clone(),
        driver_info: info.driver_info.clone(),
        max_buffer_size: l.max_buffer_size,
        max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
        max_storage_buffers_per_shader_stage: l.max_storage_buffers_per_shader_stage,
        max_uniform_buffer_binding_size: l.max_uniform_buffer_binding_size,
        min_storage_buffer_offset_alignment: l.min_storage_buffer_offset_alignment,
        min_uniform_buffer_offset_alignment: l.min_uniform_buffer_offset_alignment,
        max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
        max_compute_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
        max_compute_workgroup_storage_size: l.max_compute_workgroup_storage_size,
        subgroup_min_size: if subgroups { info.subgroup_min_size } else { 0 },
        subgroup_max_size: if subgroups { info.subgroup_max_size } else { 0 },
        timestamp_query: f.contains(wgpu::Features::TIMESTAMP_QUERY),
        subgroups,
        shader_f16: f.contains(wgpu::Features::SHADER_F16),
        indirect_validation: true,
    }
}
