//! `ScanKernel`: the compiled pipelines of `scan.wgsl`, bind-group construction, and encoding
//! into a caller's compute pass. Independent of the command graph: the graph node (and any
//! other caller) plans with [`ScanKernel::plan`], allocates the scratch the plan names, builds
//! bind groups once, and calls [`ScanKernel::encode`] per frame.

use std::num::NonZeroU64;
use std::sync::OnceLock;

use wgpu::util::DeviceExt;

use super::bindings::{ScanBindError, ScanBindGroups, ScanBindings};
use super::options::{check_device, ScanKernelError, ScanKernelOptions};
use super::plan::{ChunkLayout, PlanLimits, ScanMode, ScanPlan, ScanPlanError, PARAMS_BYTES};
use super::source::{self, Variant};
use crate::kernel::{buffer_entry, placeholder_buffer, Kernel};

/// Storage buffers one segmented dispatch binds (input ×2, output ×2, status, flags ×2).
pub(crate) const STORAGE_BINDINGS_SEGMENTED: u32 = 7;
/// Binding of the tile-status words in every scan layout (`scan.wgsl`).
pub(crate) const STATUS_BINDING: u32 = 5;
/// Binding of the live-count word in the `LIVE_COUNT` layouts (`scan.wgsl`).
pub(crate) const LIVE_BINDING: u32 = 9;

/// The single-pass chained scan (decoupled look-back + decoupled fallback) over u32, wrapping.
///
/// Owns its shader modules, layouts, pipelines (plain and segmented, each compiled the first
/// time [`ScanKernel::create_bind_groups`] needs it, so a caller that only scans one way pays
/// for one) and two 16-byte placeholder buffers; allocates nothing else. Per planned scan the
/// caller provides:
/// - reads: each chunk's input (and flags) storage range, the params uniform;
/// - writes: each chunk's output storage range (every element in `0..len` is written);
/// - scratch: the status storage range ([`ScanPlan::status_bytes`]), cleared by the kernel's own
///   first dispatch, so it needs no initialization and may be a reused transient.
///
/// Limits: a chunk holds at most `u32::MAX - tile` elements with its offsets (binding-size
/// limits are lower in practice); all chunks together at most `u32::MAX / 2 - 2` tiles.
#[derive(Debug)]
pub struct ScanKernel {
    device: wgpu::Device,
    options: ScanKernelOptions,
    plan_limits: PlanLimits,
    storage_alignment: u64,
    uniform_alignment: u64,
    max_storage_binding: u64,
    /// Scan pipelines by `segmented as usize + 2 * live as usize`, compiled on first use.
    variants: [OnceLock<Kernel>; 4],
    clear: Kernel,
    placeholder_read: wgpu::Buffer,
    placeholder_write: wgpu::Buffer,
}

fn storage_entry(binding: u32, read_only: bool, min: u64) -> wgpu::BindGroupLayoutEntry {
    buffer_entry(binding, wgpu::BufferBindingType::Storage { read_only }, min)
}

impl ScanKernel {
    /// Prepares the kernel for `device`: compiles the clear pipeline now and the plain and
    /// segmented scan pipelines on first use. Fails when [`check_device`] does (invalid
    /// policy, subgroups requested without `Features::SUBGROUP`, or a device limit below what
    /// the policy needs).
    pub fn new(device: &wgpu::Device, options: ScanKernelOptions) -> Result<Self, ScanKernelError> {
        check_device(device, &options)?;
        let policy = options.policy;
        let limits = device.limits();
        // The clear entry point lives in every variant; the plain one is compiled here.
        let clear = Kernel::with_entries(
            device,
            "scan clear",
            &source::wgsl(&policy, Self::variant(&options, false, false)),
            "clear_status",
            &[storage_entry(STATUS_BINDING, false, 16)],
            &[],
        );
        Ok(Self {
            device: device.clone(),
            options,
            plan_limits: PlanLimits::new(&policy, &limits),
            storage_alignment: limits.min_storage_buffer_offset_alignment.into(),
            uniform_alignment: limits.min_uniform_buffer_offset_alignment.into(),
            max_storage_binding: limits.max_storage_buffer_binding_size,
            variants: Default::default(),
            clear,
            placeholder_read: placeholder_buffer(device, "scan placeholder (read)"),
            placeholder_write: placeholder_buffer(device, "scan placeholder (write)"),
        })
    }

    fn variant(options: &ScanKernelOptions, segmented: bool, live: bool) -> Variant {
        Variant::of(options, segmented, live)
    }

    /// The plain or segmented pipeline (with or without a live count) and its layout,
    /// compiled on first use.
    fn specialization(&self, segmented: bool, live: bool) -> &Kernel {
        let cell = &self.variants[usize::from(segmented) + 2 * usize::from(live)];
        cell.get_or_init(|| {
            let label = match (segmented, live) {
                (false, false) => "scan",
                (true, false) => "scan (segmented)",
                (false, true) => "scan (live count)",
                (true, true) => "scan (segmented, live count)",
            };
            let mut entries = vec![
                buffer_entry(0, wgpu::BufferBindingType::Uniform, PARAMS_BYTES),
                storage_entry(1, true, 4),
                storage_entry(2, true, 16),
                storage_entry(3, false, 4),
                storage_entry(4, false, 16),
                storage_entry(STATUS_BINDING, false, 16),
            ];
            if segmented {
                entries.push(storage_entry(6, true, 4));
                entries.push(storage_entry(7, true, 16));
            }
            if live {
                entries.push(storage_entry(LIVE_BINDING, true, 4));
            }
            Kernel::with_entries(
                &self.device,
                label,
                &source::wgsl(
                    &self.options.policy,
                    Self::variant(&self.options, segmented, live),
                ),
                "scan_tiles",
                &entries,
                &[],
            )
        })
    }

    /// The options the kernel was built with.
    pub fn options(&self) -> &ScanKernelOptions {
        &self.options
    }

    /// Elements per tile (the policy's `tile_elements`).
    pub fn tile_elements(&self) -> u32 {
        self.plan_limits.tile_elements
    }

    /// The limits [`Self::plan`] uses (tile size and this device's dispatch and uniform
    /// alignment limits).
    pub fn plan_limits(&self) -> PlanLimits {
        self.plan_limits
    }

    /// The WGSL this kernel compiled for the plain or segmented variant (for inspection).
    pub fn wgsl(&self, segmented: bool) -> String {
        source::wgsl(
            &self.options.policy,
            Self::variant(&self.options, segmented, false),
        )
    }

    /// Plans a scan of `chunks` (one logical sequence) with this kernel's tile size and the
    /// device's limits. Pure; see [`ScanPlan::new`].
    pub fn plan(&self, chunks: &[ChunkLayout], mode: ScanMode) -> Result<ScanPlan, ScanPlanError> {
        ScanPlan::new(chunks, mode, self.plan_limits)
    }

    /// Convenience: a `UNIFORM | COPY_DST` buffer holding [`ScanPlan::params_data`], for
    /// [`ScanBindings::params`] at offset 0. Allocates; call when compiling, not per frame.
    pub fn create_params_buffer(&self, device: &wgpu::Device, plan: &ScanPlan) -> wgpu::Buffer {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("scan params"),
            contents: &plan.params_data(),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        })
    }

    /// Convenience: a `STORAGE` buffer of [`ScanPlan::status_bytes`] for
    /// [`ScanBindings::status`]. Allocates; call when compiling, not per frame.
    pub fn create_status_buffer(&self, device: &wgpu::Device, plan: &ScanPlan) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("scan status"),
            size: plan.status_bytes(),
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    }

    /// Validates `bindings` against `plan` and this device, then creates the clear bind group
    /// and one bind group per non-empty chunk. Nothing is created for an empty plan.
    ///
    /// Each stream is bound twice over the same bytes: as `array<u32>` (exactly
    /// `(offset + len) * 4` bytes) and, when the chunk has a full tile at a 4-element aligned
    /// offset, as `array<vec4<u32>>` (rounded down to 16 bytes); otherwise the vec4 view is a
    /// placeholder the dispatch never touches.
    pub fn create_bind_groups(
        &self,
        device: &wgpu::Device,
        plan: &ScanPlan,
        bindings: &ScanBindings<'_>,
    ) -> Result<ScanBindGroups, ScanBindError> {
        if plan.tile_elements != self.tile_elements() {
            return Err(ScanBindError::TileMismatch {
                planned: plan.tile_elements,
                kernel: self.tile_elements(),
            });
        }
        if bindings.chunks.len() != plan.chunks.len() {
            return Err(ScanBindError::ChunkCount {
                planned: plan.chunks.len(),
                given: bindings.chunks.len(),
            });
        }
        let segmented = plan.mode.segmented;
        let live = bindings.live.is_some();
        let mut groups = ScanBindGroups {
            clear: None,
            clear_workgroups: plan.clear_workgroups,
            segmented,
            live,
            dispatches: Vec::new(),
        };
        if plan.is_empty() {
            return Ok(groups);
        }

        let status = &bindings.status;
        let status_size = plan.status_bytes();
        self.check_range(
            "status",
            status,
            status_size,
            wgpu::BufferUsages::STORAGE,
            self.storage_alignment,
        )?;
        let status_binding = wgpu::BufferBinding {
            buffer: status.buffer,
            offset: status.offset,
            size: NonZeroU64::new(status_size),
        };
        let params = &bindings.params;
        self.check_range(
            "params",
            params,
            plan.params_bytes(),
            wgpu::BufferUsages::UNIFORM,
            self.uniform_alignment,
        )?;

        groups.clear = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("scan clear"),
            layout: &self.clear.layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 5,
                resource: wgpu::BindingResource::Buffer(status_binding.clone()),
            }],
        }));

        let layout = &self.specialization(segmented, live).layout;
        for (index, (chunk, binding)) in plan.chunks.iter().zip(bindings.chunks).enumerate() {
            if chunk.tiles == 0 {
                continue;
            }
            let limit = self.plan_limits.max_workgroups_per_dimension;
            if chunk.workgroups.iter().any(|&w| w > limit) {
                return Err(ScanBindError::Dispatch {
                    chunk: index,
                    workgroups: chunk.workgroups,
                    limit,
                });
            }
            let binding = binding.as_ref().ok_or(ScanBindError::MissingChunk {
                chunk: index,
                len: chunk.layout.len,
            })?;
            if binding.flags.is_some() != segmented {
                return Err(ScanBindError::Flags {
                    chunk: index,
                    segmented,
                });
            }
            let layout_of = &chunk.layout;
            let has_full_tile = layout_of.len >= plan.tile_elements;
            let input = self.stream(
                index,
                "input",
                &binding.input,
                layout_of.input_offset,
                layout_of.len,
                has_full_tile,
                false,
            )?;
            let output = self.stream(
                index,
                "output",
                &binding.output,
                layout_of.output_offset,
                layout_of.len,
                has_full_tile,
                true,
            )?;
            let flags = match &binding.flags {
                Some(f) => Some(self.stream(
                    index,
                    "flags",
                    f,
                    layout_of.flags_offset,
                    layout_of.len,
                    has_full_tile,
                    false,
                )?),
                None => None,
            };
            let out_name = format!("chunk {index} output");
            let mut others = vec![
                (format!("chunk {index} input"), binding.input.buffer),
                ("status".to_string(), status.buffer),
            ];
            if let Some(f) = &binding.flags {
                others.push((format!("chunk {index} flags"), f.buffer));
            }
            for (name, buffer) in &others {
                if *buffer == binding.output.buffer {
                    return Err(ScanBindError::Aliased {
                        written: out_name,
                        other: name.clone(),
                    });
                }
                if name != "status" && *buffer == status.buffer {
                    return Err(ScanBindError::Aliased {
                        written: "status".to_string(),
                        other: name.clone(),
                    });
                }
            }

            let params_binding = wgpu::BufferBinding {
                buffer: params.buffer,
                offset: params.offset + chunk.params_offset,
                size: NonZeroU64::new(PARAMS_BYTES),
            };
            let mut entries = vec![
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(params_binding),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(input.0),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(input.1),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: wgpu::BindingResource::Buffer(output.0),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: wgpu::BindingResource::Buffer(output.1),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: wgpu::BindingResource::Buffer(status_binding.clone()),
                },
            ];
            if let Some((words, vec4)) = flags {
                entries.push(wgpu::BindGroupEntry {
                    binding: 6,
                    resource: wgpu::BindingResource::Buffer(words),
                });
                entries.push(wgpu::BindGroupEntry {
                    binding: 7,
                    resource: wgpu::BindingResource::Buffer(vec4),
                });
            }
            if let Some(l) = &bindings.live {
                let needed = 4 * (u64::from(chunk.params.live_offset) + 1);
                self.check_range(
                    "live count",
                    l,
                    needed,
                    wgpu::BufferUsages::STORAGE,
                    self.storage_alignment,
                )?;
                if l.buffer == binding.output.buffer {
                    return Err(ScanBindError::Aliased {
                        written: out_name,
                        other: "live count".to_string(),
                    });
                }
                entries.push(wgpu::BindGroupEntry {
                    binding: LIVE_BINDING,
                    resource: wgpu::BindingResource::Buffer(l.clone()),
                });
            }
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("scan chunk"),
                layout,
                entries: &entries,
            });
            groups.dispatches.push((group, chunk.workgroups));
        }
        Ok(groups)
    }

    /// Records the scan into `pass`: one clear dispatch, then one dispatch per non-empty chunk,
    /// in chunk order. Records nothing for an empty plan. Does not allocate. The pass must not
    /// run other work on the same status range between these dispatches; wgpu orders the
    /// dispatches (they all write the status buffer).
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>, groups: &ScanBindGroups) {
        let Some(clear) = &groups.clear else {
            return;
        };
        pass.set_pipeline(&self.clear.pipeline);
        pass.set_bind_group(0, clear, &[]);
        pass.dispatch_workgroups(groups.clear_workgroups, 1, 1);
        // Compiled by create_bind_groups, which built `groups`.
        let pipeline = &self.specialization(groups.segmented, groups.live).pipeline;
        pass.set_pipeline(pipeline);
        for (group, [x, y, z]) in &groups.dispatches {
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(*x, *y, *z);
        }
    }

    fn check_range(
        &self,
        what: &str,
        binding: &wgpu::BufferBinding<'_>,
        needed: u64,
        usage: wgpu::BufferUsages,
        alignment: u64,
    ) -> Result<u64, ScanBindError> {
        let buffer = binding.buffer;
        if !buffer.usage().contains(usage) {
            return Err(ScanBindError::Usage {
                what: what.to_string(),
                needed: usage,
            });
        }
        if !binding.offset.is_multiple_of(alignment) {
            return Err(ScanBindError::Unaligned {
                what: what.to_string(),
                offset: binding.offset,
                alignment,
            });
        }
        let rest = buffer.size().saturating_sub(binding.offset);
        let available = binding.size.map_or(rest, |s| s.get().min(rest));
        if available < needed {
            return Err(ScanBindError::TooSmall {
                what: what.to_string(),
                needed,
                available,
            });
        }
        Ok(available)
    }

    /// The (words, vec4) bindings of one chunk stream.
    #[allow(clippy::too_many_arguments)]
    fn stream<'a>(
        &'a self,
        chunk: usize,
        stream: &str,
        binding: &wgpu::BufferBinding<'a>,
        element_offset: u32,
        len: u32,
        has_full_tile: bool,
        written: bool,
    ) -> Result<(wgpu::BufferBinding<'a>, wgpu::BufferBinding<'a>), ScanBindError> {
        let what = format!("chunk {chunk} {stream}");
        let bytes = 4 * (u64::from(element_offset) + u64::from(len));
        self.check_range(
            &what,
            binding,
            bytes,
            wgpu::BufferUsages::STORAGE,
            self.storage_alignment,
        )?;
        if bytes > self.max_storage_binding {
            return Err(ScanBindError::TooLarge {
                what,
                size: bytes,
                limit: self.max_storage_binding,
            });
        }
        let words = wgpu::BufferBinding {
            buffer: binding.buffer,
            offset: binding.offset,
            size: NonZeroU64::new(bytes),
        };
        let vec4 = if has_full_tile && element_offset.is_multiple_of(4) {
            wgpu::BufferBinding {
                buffer: binding.buffer,
                offset: binding.offset,
                size: NonZeroU64::new(bytes / 16 * 16),
            }
        } else {
            let buffer = if written {
                &self.placeholder_write
            } else {
                &self.placeholder_read
            };
            buffer.as_entire_buffer_binding()
        };
        Ok((words, vec4))
    }
}
