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
//! which the oracle [`super::encode::select_cpu`] defines. The steps are the dispatches of one
//! dispatch node of a command graph, submitted with the readback of the gathered rows.
//!
//! Capacity: fewer than 2^32 rows, at most [`super::encode::MAX_KEY_WORDS`] key words per row
//! in which rows differ, and those planes within one storage binding; [`select`] names a
//! violated limit.

use bytemuck::{Pod, Zeroable};
use gpugraph_command::wgpu::util::DeviceExt;
use gpugraph_command::{
    wgpu, Access, Binding, BufferDescriptor, CommandGraph, DispatchNode, EncodeOptions, GpuContext,
    Grid, ShaderSource,
};
use gpugraph_tables::readback;
use gpugraph_tables::upload::write_parts;

use super::encode::{Encoded, MAX_KEY_WORDS};
use crate::kernel::{storage, KernelError};

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
    let params = Params {
        rows: rows as u32,
        words: words as u32,
        stride,
        capacity: k as u32,
    };
    let state_buffer = initialized(
        ctx,
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
    // The count starts at zero, every row slot poisoned: a slot the gather leaves unwritten
    // reads as a row that does not exist, never as row 0.
    let mut initial = vec![u32::MAX; k + 1];
    initial[0] = 0;
    let gathered = initialized(
        ctx,
        "gpugraph-datafusion-topk-gathered",
        bytemuck::cast_slice(&initial),
    );
    let read = run_steps(
        ctx,
        &params,
        &digits,
        [&keys, &state_buffer, &hist, &gathered],
        workgroups,
    )
    .and_then(|encoder| {
        let read = readback::submit_and_read(
            device,
            &ctx.queue,
            encoder,
            &[(&gathered, 0, gathered_bytes)],
        )?;
        Ok(bytemuck::pod_collect_to_vec::<u8, u32>(&read.concat()))
    });
    for b in [&keys, &state_buffer, &hist, &gathered] {
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

/// A storage buffer (`COPY_SRC` for the readback) holding `bytes` from its creation: no
/// submission before the steps.
fn initialized(ctx: &GpuContext, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    let mut contents = bytes.to_vec();
    contents.resize(bytes.len().max(16).div_ceil(16) * 16, 0);
    ctx.device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: &contents,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
}

/// Records the selection into a fresh encoder: one dispatch node over `keys`, `state`, `hist`
/// and `gathered` whose dispatches are a `histogram` and a `choose` per digit, then the
/// `gather`, each reading what the one before it wrote.
fn run_steps(
    ctx: &GpuContext,
    params: &Params,
    digits: &[u32],
    [keys, state, hist, gathered]: [&wgpu::Buffer; 4],
    workgroups: u32,
) -> Result<wgpu::CommandEncoder, KernelError> {
    let device = &ctx.device;
    let mut graph = CommandGraph::new("gpugraph-datafusion topk", device);
    let mut import = |id: &str, buffer: &wgpu::Buffer| {
        let desc = BufferDescriptor::new(id, buffer.size(), wgpu::BufferUsages::STORAGE);
        graph.import_buffer(desc, buffer)
    };
    let bindings = vec![
        Binding::params(0, params),
        Binding::handle(1, import("keys", keys)?, Access::Read),
        // Never empty: rows differ at least in the row word.
        Binding::storage_params(2, if digits.is_empty() { &[0] } else { digits }),
        Binding::handle(3, import("state", state)?, Access::ReadWrite),
        Binding::handle(4, import("histogram", hist)?, Access::ReadWrite),
        Binding::handle(5, import("gathered", gathered)?, Access::ReadWrite),
    ];
    let rows = Grid::Workgroups([workgroups, 1, 1]);
    let mut node = DispatchNode::new(
        "topk",
        ShaderSource::new("datafusion/topk/select", WGSL),
        "histogram",
        bindings,
        rows,
    )
    .then("choose", Grid::Workgroups([1, 1, 1]))
    .private_bind_group();
    for _ in 1..digits.len() {
        node = node
            .then("histogram", rows)
            .then("choose", Grid::Workgroups([1, 1, 1]));
    }
    graph.add_dispatch_node(node.then("gather", rows))?;
    let mut compiled = graph.compile()?;
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("gpugraph-datafusion-topk"),
    });
    compiled.encode(&mut encoder, &EncodeOptions::default())?;
    Ok(encoder)
}
