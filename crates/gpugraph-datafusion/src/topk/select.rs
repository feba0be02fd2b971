//! The k smallest rows of word-planar sort keys on the device: a most-significant-digit-first
//! radix selection (`select.wgsl`). Each step reads the candidates' keys once, counts one
//! 8-bit digit into 256 buckets and keeps the bucket that holds the k-th candidate; the rows
//! before it are in, the rows after it out. Digits in which no two rows differ (a decimal's
//! high words, a date's sign byte) are fixed by the host without a step, and the search ends
//! at the first step whose bucket holds exactly the rows still wanted, so a query's top-k over
//! keys that differ early costs a few passes over its first key word.
//!
//! Why select instead of sorting: a `LIMIT k` wants k rows, and a radix sort moves every row
//! through every digit pass. The host orders the k selected rows ([`super::encode::order_by`]),
//! which the oracle [`super::encode::select_cpu`] defines.
//!
//! Capacity: fewer than 2^32 rows, at most [`super::encode::MAX_KEY_WORDS`] key words per row
//! in which rows differ, and those planes within one storage binding; [`select`] names a
//! violated limit.

use bytemuck::{Pod, Zeroable};
use gpugraph_command::{wgpu, GpuContext};
use gpugraph_gpgpu::kernel::{parameter_buffer, Access, Kernel};
use gpugraph_tables::upload::write_parts;

use super::encode::{Encoded, MAX_KEY_WORDS};
use crate::kernel::{storage, submit_and_map, KernelError};

const WGSL: &str = include_str!("select.wgsl");

/// The shader's `MAX_WORDS`: key words plus the row word.
const MAX_WORDS: usize = 16;

/// Threads per workgroup of `histogram` and `gather`.
const WORKGROUP: u32 = 256;

/// Most workgroups a pass launches; threads stride over the rest.
const MAX_WORKGROUPS: u32 = 4096;

/// The shader's `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    rows: u32,
    words: u32,
    stride: u32,
    capacity: u32,
}

/// The shader's `State`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct State {
    remaining: u32,
    done: u32,
    step: u32,
    steps: u32,
    fixmask: [u32; MAX_WORDS],
    prefix: [u32; MAX_WORDS],
}

/// Why the device cannot select over some keys: a limit, named with the numbers.
pub fn check(ctx: &GpuContext, rows: usize, words: usize) -> Result<(), String> {
    if words > MAX_KEY_WORDS {
        return Err(format!(
            "the sort keys take {words} words per row; the GPU top-k compares at most {MAX_KEY_WORDS}"
        ));
    }
    if rows >= u32::MAX as usize {
        return Err(format!(
            "{rows} rows; the GPU top-k selects among fewer than 2^32"
        ));
    }
    let bytes = (rows * words * 4) as u64;
    let binding = ctx.device.limits().max_storage_buffer_binding_size;
    if bytes > binding {
        return Err(format!(
            "the sort keys of {rows} rows take {bytes} bytes, past the {binding} bytes a GPU binding holds"
        ));
    }
    Ok(())
}

/// The digits to count, most significant first (`word << 8 | shift`), and the state with the
/// digits no two rows differ in already fixed. `vary[w]` holds the bits in which rows differ
/// in key word `w`, `first[w]` one row's word `w`.
fn plan(rows: usize, first: &[u32], vary: &[u32], k: usize) -> (Vec<u32>, State) {
    let words = first.len();
    let mut state = State {
        remaining: k as u32,
        done: 0,
        step: 0,
        steps: 0,
        fixmask: [0; MAX_WORDS],
        prefix: [0; MAX_WORDS],
    };
    // The row word: rows 0..rows differ in the bits below the highest bit of rows - 1.
    let row_vary = u32::MAX
        .checked_shr((rows.max(2) as u32 - 1).leading_zeros())
        .unwrap_or(0);
    let mut digits = Vec::new();
    for w in 0..=words {
        let (one, differ) = if w < words {
            (first[w], vary[w])
        } else {
            (0, row_vary)
        };
        for shift in [24u32, 16, 8, 0] {
            if (differ >> shift) & 0xff != 0 {
                digits.push((w as u32) << 8 | shift);
            } else {
                state.fixmask[w] |= 0xff << shift;
            }
        }
        state.prefix[w] = one & state.fixmask[w];
    }
    state.steps = digits.len() as u32;
    (digits, state)
}

/// Workgroups for `n` items and the threads' stride over them.
fn grid(n: u32) -> (u32, u32) {
    let workgroups = n.div_ceil(WORKGROUP).clamp(1, MAX_WORKGROUPS);
    (workgroups, workgroups * WORKGROUP)
}

/// The global rows (batch after batch of `parts`) of the `k` smallest keys, in no order:
/// every row of fewer than `k`. `parts` hold `words` planes each; planes in which every row
/// is equal carry no order and stay on the host. The inner error is a limit of [`check`]
/// (the caller orders on the host instead).
pub fn select(
    ctx: &GpuContext,
    parts: &[Encoded],
    words: usize,
    k: usize,
) -> Result<Result<Vec<u32>, String>, KernelError> {
    let rows: usize = parts.iter().map(Encoded::rows).sum();
    if k >= rows {
        return Ok(Ok((0..rows as u32).collect()));
    }
    if k == 0 {
        return Ok(Ok(Vec::new()));
    }
    let (first, vary) = Encoded::merged(parts, words);
    let varying: Vec<usize> = (0..words).filter(|&w| vary[w] != 0).collect();
    if let Err(why) = check(ctx, rows, varying.len()) {
        return Ok(Err(why));
    }
    let device = &ctx.device;
    let pick = |v: &[u32]| varying.iter().map(|&w| v[w]).collect::<Vec<u32>>();
    let (digits, state) = plan(rows, &pick(&first), &pick(&vary), k);
    let words = varying.len();
    let keys = storage(
        device,
        "gpugraph-datafusion-topk-keys",
        (rows * words * 4) as u64,
        wgpu::BufferUsages::COPY_DST,
    );
    // Through the tables crate's reused staging ring, never one host-visible allocation as
    // large as the keys (see `gpugraph_tables::upload`).
    let mut placed = Vec::with_capacity(words * parts.len());
    let mut offset = 0u64;
    for &w in &varying {
        for p in parts {
            let bytes: &[u8] = bytemuck::cast_slice(&p.planes[w]);
            placed.push((offset, bytes));
            offset += bytes.len() as u64;
        }
    }
    write_parts(device, &ctx.queue, &keys, &placed)?;
    let (workgroups, stride) = grid(rows as u32);
    let params = parameter_buffer(
        device,
        "gpugraph-datafusion-topk-params",
        bytemuck::bytes_of(&Params {
            rows: rows as u32,
            words: words as u32,
            stride,
            capacity: k as u32,
        }),
    );
    let digit_buffer = parameter_buffer(
        device,
        "gpugraph-datafusion-topk-digits",
        bytemuck::cast_slice(&digits),
    );
    let state_buffer = parameter_buffer(
        device,
        "gpugraph-datafusion-topk-state",
        bytemuck::bytes_of(&state),
    );
    let hist = storage(
        device,
        "gpugraph-datafusion-topk-histogram",
        256 * 4,
        wgpu::BufferUsages::empty(),
    );
    let gathered_bytes = (k as u64 + 1) * 4;
    let gathered = storage(
        device,
        "gpugraph-datafusion-topk-gathered",
        gathered_bytes,
        wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    );
    // The count starts at zero, every row slot poisoned: a slot the gather leaves unwritten
    // reads as a row that does not exist, never as row 0.
    let mut initial = vec![u32::MAX; k + 1];
    initial[0] = 0;
    ctx.queue
        .write_buffer(&gathered, 0, bytemuck::cast_slice(&initial));
    let bindings = [
        Access::Uniform,
        Access::Read,
        Access::Read,
        Access::ReadWrite,
        Access::ReadWrite,
        Access::ReadWrite,
    ];
    let resources = [
        params.as_entire_buffer_binding(),
        keys.as_entire_buffer_binding(),
        digit_buffer.as_entire_buffer_binding(),
        state_buffer.as_entire_buffer_binding(),
        hist.as_entire_buffer_binding(),
        gathered.as_entire_buffer_binding(),
    ];
    let kernel = |entry: &str| {
        let built = Kernel::new(
            device,
            "gpugraph-datafusion-topk",
            WGSL,
            entry,
            &bindings,
            &[],
        );
        let group = built.bind_group(device, &resources);
        (built, group)
    };
    let (histogram, histogram_group) = kernel("histogram");
    let (choose, choose_group) = kernel("choose");
    let (gather, gather_group) = kernel("gather");
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("gpugraph-datafusion-topk"),
    });
    // A pass per dispatch: each step reads what the one before it wrote.
    let mut pass = |kernel: &Kernel, group: &wgpu::BindGroup, workgroups: u32| {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("gpugraph-datafusion-topk"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&kernel.pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(workgroups, 1, 1);
    };
    for _ in &digits {
        pass(&histogram, &histogram_group, workgroups);
        pass(&choose, &choose_group, 1);
    }
    pass(&gather, &gather_group, workgroups);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-topk-readback"),
        size: gathered_bytes.div_ceil(4) * 4,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(&gathered, 0, &staging, 0, gathered_bytes);
    let mapped = submit_and_map(ctx, encoder, &staging).map_err(KernelError::Readback);
    let read: Result<Vec<u32>, KernelError> = mapped.and_then(|()| {
        let view = staging.slice(..).get_mapped_range().map_err(|e| {
            KernelError::Readback(format!("the mapped top-k rows have no view: {e}"))
        })?;
        Ok(bytemuck::pod_collect_to_vec(
            &view[..gathered_bytes as usize],
        ))
    });
    for b in [
        &keys,
        &params,
        &digit_buffer,
        &state_buffer,
        &hist,
        &gathered,
        &staging,
    ] {
        b.destroy();
    }
    let read = read?;
    if read[0] as usize != k || read[1..].iter().any(|&r| r as usize >= rows) {
        return Err(KernelError::Readback(format!(
            "the top-k selection gathered {} rows, not the {k} asked for, or a row past {rows}",
            read[0]
        )));
    }
    Ok(Ok(read[1..].to_vec()))
}
