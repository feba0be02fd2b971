//! [`PersistentPipelineCache`]: wgpu's driver pipeline cache (Vulkan `VkPipelineCache`) loaded
//! from and saved to one file, so a second process compiles its pipelines from the driver's
//! cached machine code instead of from scratch.
//!
//! Why: the in-process [`crate::DeviceCache`] only helps within one process; on the NVIDIA
//! H200 `gpugraph analyze` spent ~690 ms compiling its pipelines on every run. The file is
//! named by [`wgpu::util::pipeline_cache_key`] (backend, vendor and device id) inside a
//! directory the caller chooses; wgpu and the driver validate the data again (driver version,
//! device UUID), so a stale, truncated or foreign file only costs the speed-up.
//!
//! The library never persists anything unless its caller gives a directory
//! ([`crate::context::ContextOptions::pipeline_cache_dir`]); [`default_dir`] is the policy the
//! command-line tool uses (the user's cache directory, [`PIPELINE_CACHE_ENV`] to turn it off).
//! Saving is an explicit call ([`PersistentPipelineCache::save`]), never a side effect of drop.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Environment variable read by [`default_dir`]: `off` (or `0`, `false`, `no`) disables the
/// persisted pipeline cache; `on` (or `1`, `true`, `yes`, empty, unset) uses the default
/// directory.
pub const PIPELINE_CACHE_ENV: &str = "GPUGRAPH_PIPELINE_CACHE";

/// Why the pipeline cache could not be configured or saved.
#[derive(Debug, thiserror::Error)]
pub enum PipelineCacheError {
    /// [`PIPELINE_CACHE_ENV`] holds a value that is neither on nor off.
    #[error("{env}='{value}' is invalid: use 'off' to disable the pipeline cache or 'on'")]
    BadEnv {
        /// The variable name.
        env: &'static str,
        /// Its value.
        value: String,
    },
    /// Writing the cache file failed.
    #[error("writing the pipeline cache {}: {source}", path.display())]
    Write {
        /// The file (or its temporary) that could not be written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// What happened to the file's data when the cache was created.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadStatus {
    /// No file yet (first run) or it could not be read: the cache starts empty.
    Missing,
    /// The file's bytes were handed to wgpu, which checked its header (a corrupt or outdated
    /// file is dropped there silently and the cache starts empty).
    Offered {
        /// Size of the file.
        bytes: u64,
    },
    /// wgpu refused the data (made for another device); the cache starts empty.
    Refused {
        /// wgpu's message.
        reason: String,
    },
}

/// A wgpu pipeline cache tied to its file. Cheap to share (`Arc`); thread-safe.
#[derive(Debug)]
pub struct PersistentPipelineCache {
    cache: wgpu::PipelineCache,
    path: PathBuf,
    status: LoadStatus,
}

impl PersistentPipelineCache {
    /// Creates the cache of `device` (which must have [`wgpu::Features::PIPELINE_CACHE`])
    /// from the file for `info` in `dir`. `None` when the backend has no persistent pipeline
    /// cache (only Vulkan has one in wgpu 30) or the device lacks the feature.
    pub fn open(device: &wgpu::Device, info: &wgpu::AdapterInfo, dir: &Path) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let path = dir.join(wgpu::util::pipeline_cache_key(info)?);
        // Any read failure (absent, unreadable, a directory) means "start empty": the cache
        // is an optimization and must never fail the caller.
        let data = std::fs::read(&path).ok();
        let create = |data: Option<&[u8]>| {
            // SAFETY: wgpu requires `data` to come from `PipelineCache::get_data`. The file is
            // only ever written by `save` below (atomically, so never half-written); wgpu
            // checks its header (magic, ABI, adapter key, the driver's validation key, exact
            // length) and drops data that fails with `fallback: true`, and the Vulkan driver
            // checks its own header (vendor, device, pipeline-cache UUID) again.
            unsafe {
                device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                    label: Some("gpugraph pipeline cache"),
                    data,
                    fallback: true,
                })
            }
        };
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let cache = create(data.as_deref());
        let (cache, status) = match (crate::device_check::scope_error(scope), &data) {
            // Even with `fallback`, wgpu refuses data of another adapter with an error (and
            // an unusable cache object): start over empty.
            (Some(e), _) => (
                create(None),
                LoadStatus::Refused {
                    reason: e.to_string(),
                },
            ),
            (None, Some(d)) => (
                cache,
                LoadStatus::Offered {
                    bytes: d.len() as u64,
                },
            ),
            (None, None) => (cache, LoadStatus::Missing),
        };
        Some(Self {
            cache,
            path,
            status,
        })
    }

    /// The wgpu cache, for `cache:` of pipeline descriptors.
    pub fn wgpu(&self) -> &wgpu::PipelineCache {
        &self.cache
    }

    /// The file this cache loads from and saves to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What happened to the file's data at creation.
    pub fn status(&self) -> &LoadStatus {
        &self.status
    }

    /// The cache's current data (file header included), if the driver returns any.
    pub fn data(&self) -> Option<Vec<u8>> {
        self.cache.get_data()
    }

    /// Writes the cache's data to its file atomically (a temporary beside it, then a rename,
    /// so a concurrent reader or a crash never sees half a file); creates the directory.
    /// Returns the bytes written, `None` when the driver had no data.
    pub fn save(&self) -> Result<Option<u64>, PipelineCacheError> {
        let Some(data) = self.cache.get_data() else {
            return Ok(None);
        };
        let fail = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PipelineCacheError::Write { path, source }
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail(dir))?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Unique per process and call, so concurrent savers never write one temporary.
        static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let written = std::fs::File::create(&temp)
            .and_then(|mut f| f.write_all(&data))
            .map_err(fail(&temp))
            .and_then(|()| std::fs::rename(&temp, &self.path).map_err(fail(&self.path)));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map(|()| Some(data.len() as u64))
    }
}

/// The command-line default: `$XDG_CACHE_HOME/gpugraph/pipelines`, else
/// `$HOME/.cache/gpugraph/pipelines` (relative values are ignored, as the XDG spec says);
/// `None` when [`PIPELINE_CACHE_ENV`] is off or no home is known.
pub fn default_dir() -> Result<Option<PathBuf>, PipelineCacheError> {
    if let Some(value) = std::env::var_os(PIPELINE_CACHE_ENV) {
        let text = value.to_string_lossy();
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "0" | "false" | "no" => return Ok(None),
            "on" | "1" | "true" | "yes" | "" => {}
            _ => {
                return Err(PipelineCacheError::BadEnv {
                    env: PIPELINE_CACHE_ENV,
                    value: text.into_owned(),
                })
            }
        }
    }
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let base = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")));
    Ok(base.map(|b| b.join("gpugraph").join("pipelines")))
}
