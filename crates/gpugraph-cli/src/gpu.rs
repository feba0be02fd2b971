//! GPU plumbing shared by the commands: opening a [`GpuContext`] whose wgpu errors are
//! collected instead of panicking, uploading `u32` words, importing buffers into graphs,
//! running a compiled graph once, submit-and-wait, and explicit readback.
//!
//! The CLI is a convenience layer: unlike the libraries, it submits and reads back.

use std::sync::{mpsc, Arc, Mutex};

use anyhow::{bail, Context, Result};
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    pipeline_cache, BufferDescriptor, CommandGraph, CompiledGraph, ContextOptions, DataView,
    EncodeOptions, GpuContext, PersistentPipelineCache, VectorFormat,
};

/// The driver pipeline caches of the devices this process opened, saved by
/// [`save_pipeline_caches`] when the command succeeded.
fn opened_caches() -> &'static Mutex<Vec<Arc<PersistentPipelineCache>>> {
    static OPENED: std::sync::OnceLock<Mutex<Vec<Arc<PersistentPipelineCache>>>> =
        std::sync::OnceLock::new();
    OPENED.get_or_init(Default::default)
}

/// Writes back the pipeline caches of every device opened so far (each file atomically).
/// A failure is a warning on stderr, never a failed command: the cache only saves time.
pub fn save_pipeline_caches() {
    let caches = match opened_caches().lock() {
        Ok(g) => g.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    for cache in caches {
        if let Err(e) = cache.save() {
            eprintln!(
                "warning: {} (the next run compiles from scratch)",
                one_line(&e.to_string())
            );
        }
    }
}

/// A device opened for one CLI command, with a sink for wgpu's uncaptured errors.
pub struct Gpu {
    /// Adapter, device, queue and capabilities.
    pub ctx: GpuContext,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Gpu {
    /// Selects the adapter (`WGPU_BACKEND`, `GPUGRAPH_ADAPTER` apply) and opens a device whose
    /// uncaptured wgpu errors are recorded for [`Gpu::check`] rather than panicking. Its
    /// pipelines compile through the driver pipeline cache in the user's cache directory
    /// (`GPUGRAPH_PIPELINE_CACHE=off` disables it), which `main` saves on success.
    pub fn open() -> Result<Self> {
        Self::open_with(false)
    }

    /// [`Gpu::open`], with wgpu's indirect-dispatch validation off when `unvalidated_indirect`
    /// (see `ContextOptions::unvalidated_indirect`: for GPU-gated programs, whose gate
    /// kernel keeps every count within the device limit).
    pub fn open_with(unvalidated_indirect: bool) -> Result<Self> {
        check_backend_env()?;
        let options = ContextOptions {
            pipeline_cache_dir: pipeline_cache::default_dir()?,
            unvalidated_indirect,
            ..ContextOptions::from_env()
        };
        let ctx = GpuContext::with_options(&options).context("opening a GPU device")?;
        if let Some(cache) = ctx.pipeline_cache() {
            match opened_caches().lock() {
                Ok(mut g) => g.push(Arc::clone(cache)),
                Err(poisoned) => poisoned.into_inner().push(Arc::clone(cache)),
            }
        }
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        ctx.device
            .on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut v) = sink.lock() {
                    v.push(one_line(&e.to_string()));
                }
            }));
        let sink = Arc::clone(&errors);
        ctx.device.set_device_lost_callback(move |reason, message| {
            // Dropping the device at exit also "loses" it; only report real losses.
            if reason != wgpu::DeviceLostReason::Destroyed {
                if let Ok(mut v) = sink.lock() {
                    v.push(format!("device lost ({reason:?}): {}", one_line(&message)));
                }
            }
        });
        Ok(Self { ctx, errors })
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.ctx.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.ctx.queue
    }

    /// Fails with the first wgpu error reported since the last check, naming `during`.
    pub fn check(&self, during: &str) -> Result<()> {
        let mut errors = match self.errors.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(first) = errors.first().cloned() {
            let more = errors.len() - 1;
            errors.clear();
            if more > 0 {
                bail!("wgpu error during {during}: {first} (and {more} more)");
            }
            bail!("wgpu error during {during}: {first}");
        }
        Ok(())
    }

    /// Submits `commands` and blocks until the GPU finished them.
    ///
    /// A wgpu error recorded before or during the submission (an invalid command buffer, a
    /// refused allocation, a lost device) is reported by name instead of the poll's internal
    /// message about an unknown submission index.
    pub fn submit_and_wait(&self, commands: wgpu::CommandBuffer) -> Result<()> {
        self.check("encoding")?;
        let index = self.queue().submit([commands]);
        let waited = self.device().poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        });
        self.check("submission")?;
        waited.context("waiting for the GPU (the device may have been lost)")?;
        Ok(())
    }

    /// Encodes `graph` once (default options) into its own encoder and submits it, blocking
    /// until the GPU finished. Errors recorded while encoding fail naming `what` before the
    /// submission can hide them.
    pub fn run_graph(&self, graph: &mut CompiledGraph, what: &str) -> Result<()> {
        let mut enc = self
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
        graph.encode(&mut enc, &EncodeOptions::default())?;
        let commands = enc.finish();
        self.check(&format!("encoding {what}"))?;
        self.submit_and_wait(commands)
    }

    /// A STORAGE | COPY_SRC | COPY_DST buffer holding `data` (at least 4 bytes; written
    /// through the queue, so it is ready for the next submission).
    ///
    /// A failed upload (the device lost while waiting for a staging batch) is recorded like a
    /// wgpu error and fails the next [`Gpu::check`] or submission.
    pub fn upload(&self, label: &str, data: &[u32]) -> wgpu::Buffer {
        let buffer = self.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (data.len() as u64 * 4).max(4),
            usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
            mapped_at_creation: false,
        });
        if !data.is_empty() {
            // Bounded staging pieces: one host-visible allocation as large as the data slows
            // later kernels down on NVIDIA (gpugraph_tables::upload).
            let parts = [(0, bytemuck::cast_slice::<u32, u8>(data))];
            let written =
                gpugraph_tables::upload::write_parts(self.device(), self.queue(), &buffer, &parts);
            if let (Err(e), Ok(mut errors)) = (written, self.errors.lock()) {
                errors.push(format!("uploading {label}: {e}"));
            }
        }
        buffer
    }

    /// A MAP_READ | COPY_DST buffer of `bytes` bytes to copy results into for [`Gpu::read_u32`].
    pub fn staging(&self, label: &str, bytes: u64) -> wgpu::Buffer {
        self.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: U::MAP_READ | U::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// READBACK (one submission, blocks): the first `len` `u32` words of `buffer` (COPY_SRC,
    /// at least `max(4 len, 4)` bytes), copied through a temporary staging buffer.
    pub fn read_back(&self, buffer: &wgpu::Buffer, len: u64) -> Result<Vec<u32>> {
        let bytes = (len * 4).max(4);
        let staging = self.staging("readback", bytes);
        let mut enc = self.device().create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
        self.submit_and_wait(enc.finish())?;
        let mut words = self.read_u32(&staging)?;
        words.truncate(len as usize);
        staging.destroy();
        Ok(words)
    }

    /// Maps `staging` (MAP_READ, already written by a finished submission) and returns its
    /// contents as `u32` words; unmaps it again.
    pub fn read_u32(&self, staging: &wgpu::Buffer) -> Result<Vec<u32>> {
        let slice = staging.slice(..);
        let (tx, rx) = mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .context("waiting for a buffer mapping")?;
        rx.recv()
            .context("the mapping callback never ran")?
            .context("mapping the readback buffer")?;
        let words = {
            let bytes = slice
                .get_mapped_range()
                .context("reading the mapped range")?;
            bytemuck::pod_collect_to_vec::<u8, u32>(&bytes)
        };
        staging.unmap();
        self.check("readback")?;
        Ok(words)
    }
}

/// The backend names wgpu understands in `WGPU_BACKEND` (it silently skips any other).
const BACKEND_NAMES: [&str; 10] = [
    "vulkan", "vk", "dx12", "d3d12", "metal", "mtl", "opengl", "gles", "gl", "webgpu",
];

/// Fails naming `WGPU_BACKEND` when it is set to anything but a comma-separated list of
/// backend names: wgpu would only log a warning and then find no adapter (or all of them).
pub fn check_backend_env() -> Result<()> {
    let Some(value) = std::env::var_os("WGPU_BACKEND") else {
        return Ok(());
    };
    let value = value.to_string_lossy();
    let names: Vec<String> = value.split(',').map(|s| s.trim().to_lowercase()).collect();
    for n in &names {
        if !BACKEND_NAMES.contains(&n.as_str()) {
            bail!(
                "WGPU_BACKEND='{value}' is invalid: '{n}' is not a backend; use a comma-separated list of {}",
                BACKEND_NAMES.join(", ")
            );
        }
    }
    Ok(())
}

/// Gives the process a private, absolute `XDG_RUNTIME_DIR` when none usable is set, so the
/// Vulkan loader (through libwayland) does not print "XDG_RUNTIME_DIR is invalid or not set"
/// on every run from a plain shell. Call first in `main`, before any thread starts.
///
/// The directory is `gpugraph-runtime-UID` in the temp directory (mode 0700, reused when it
/// is ours and private), else a per-process one; nothing is written into it.
pub fn quiet_loader_environment() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    use std::path::PathBuf;
    let current = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    if current.is_some_and(|p| p.is_absolute() && p.is_dir()) {
        return;
    }
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return;
    };
    let private = |p: &std::path::Path| {
        std::fs::symlink_metadata(p)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0)
    };
    let tmp = std::env::temp_dir();
    for name in [
        format!("gpugraph-runtime-{uid}"),
        format!("gpugraph-runtime-{uid}-{}", std::process::id()),
    ] {
        let dir = tmp.join(name);
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        if dir.is_absolute() && private(&dir) {
            std::env::set_var("XDG_RUNTIME_DIR", &dir);
            return;
        }
    }
}

/// Imports `buffer` whole into `graph` as `id` and returns a packed `uint32` view of its first
/// `len` rows.
pub fn import(
    graph: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
    len: u64,
) -> Result<DataView> {
    import_as(graph, id, buffer, VectorFormat::Uint32, len)
}

/// [`import`] with a packed `format` view of the first `len` rows.
pub fn import_as(
    graph: &mut CommandGraph,
    id: &str,
    buffer: &wgpu::Buffer,
    format: VectorFormat,
    len: u64,
) -> Result<DataView> {
    let h = graph.import_buffer(
        BufferDescriptor::new(id, buffer.size(), buffer.usage()),
        buffer,
    )?;
    Ok(graph.create_packed_view(h, format, len)?)
}

/// An error and its causes on one line, each cause once: DataFusion's errors print their
/// sources themselves, so `{e:#}` repeated a planning error three times ("table … not
/// found: table … not found: table … not found"). A cause is left out when the text so far
/// already holds it, or holds it past its own prefix ("sql parser error: Expected …" after
/// `ParserError("Expected …")`); a short remainder ("x: 1") is kept, since it may match
/// by chance.
pub fn error_text(e: &anyhow::Error) -> String {
    const MIN_REPEAT: usize = 16;
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        let core = cause.split_once(": ").map_or(cause.as_str(), |(_, c)| c);
        if text.contains(cause.as_str()) || (core.len() > MIN_REPEAT && text.contains(core)) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    one_line(&text)
}

/// Collapses a possibly multi-line message into one line (`"; "` between lines).
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Repeats(&'static str, Option<Box<Repeats>>);

    impl std::fmt::Display for Repeats {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|r| r as _)
        }
    }

    #[test]
    fn error_text_names_each_cause_once() {
        // DataFusion's shape: the outer message already holds its source's text.
        let planning = Repeats(
            "Error during planning: table 't' not found",
            Some(Box::new(Repeats("table 't' not found", None))),
        );
        let e = anyhow::Error::new(planning).context("running the query");
        assert_eq!(
            error_text(&e),
            "running the query: Error during planning: table 't' not found"
        );
        // A cause that repeats the outer text past its own prefix.
        let parser = Repeats(
            "SQL error: ParserError(\"Expected: an SQL statement, found: SELEC\")",
            Some(Box::new(Repeats(
                "sql parser error: Expected: an SQL statement, found: SELEC",
                None,
            ))),
        );
        assert_eq!(
            error_text(&anyhow::Error::new(parser)),
            "SQL error: ParserError(\"Expected: an SQL statement, found: SELEC\")"
        );
        // Distinct causes all stay, on one line.
        let e = anyhow::anyhow!("reading x.npy:\nbad header").context("sort");
        assert_eq!(error_text(&e), "sort: reading x.npy:; bad header");
    }
}
