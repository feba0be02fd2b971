//! `gpugraph demo`: builds a small real command graph, runs it once and checks it on the CPU.
//!
//! Graph `demo` over N imported `u32` rows:
//!
//! ```text
//! input (import) -> square -> squared (transient)
//! squared        -> add-one -> plus-one (transient)
//! plus-one       -> mix -> mixed (transient)
//! plus-one, mixed -> sum-rows -> output (import)
//! ```
//!
//! `squared` lives over [square, add-one] and `mixed` over [mix, sum-rows]: disjoint lifetimes,
//! so the compiler may host both in one physical buffer. The caller's encoder also carries an
//! unrelated copy and the explicit readback copy; it is submitted once.

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use gpugraph_command::wgpu::{self, util::DeviceExt};
use gpugraph_command::{
    Binding, BufferDescriptor, CommandGraph, CompiledGraph, DataView, DispatchNode, EncodeOptions,
    Grid, ShaderSource, VectorFormat,
};
use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::gpu::{import, Gpu};

/// Options of `gpugraph demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Number of u32 input rows.
    #[arg(long, default_value_t = 100_000, value_parser = parse_rows)]
    pub rows: u64,
    /// Seed of the random input.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

fn parse_rows(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("the demo needs at least 1 row".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("'{s}' is not a row count: {e}")),
    }
}

/// Invocations per workgroup of every demo kernel (matches `@workgroup_size` below).
const WORKGROUP: u64 = 256;

/// A one-input kernel: `dst[i] = <value>` for every row `i`, reading `src`.
macro_rules! unary_wgsl {
    ($value:literal) => {
        concat!(
            "
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&dst)) { dst[i] = ",
            $value,
            "; }
}"
        )
    };
}

/// `squared[i] = input[i] * input[i]` (wrapping).
const SQUARE_WGSL: &str = unary_wgsl!("src[i] * src[i]");

/// `plus_one[i] = squared[i] + 1` (wrapping).
const ADD_ONE_WGSL: &str = unary_wgsl!("src[i] + 1u");

/// `mixed[i] = plus_one[i] * 3 + i` (wrapping).
const MIX_WGSL: &str = unary_wgsl!("src[i] * 3u + i");

/// `output[i] = plus_one[i] + mixed[i]` (wrapping): the sum of the two columns of row i.
const SUM_ROWS_WGSL: &str = "
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&dst)) { dst[i] = a[i] + b[i]; }
}";

/// Words the unrelated copy moves; checked after the run.
const STAMP: [u32; 4] = [0x00C0_FFEE, 1, 2, 3];
/// Written into the output before the run so unwritten rows are caught.
const POISON: u32 = 0xDEAD_BEEF;

/// The CPU oracle: the same four stages as plain loops.
pub fn cpu_reference(input: &[u32]) -> Vec<u32> {
    input
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let squared = x.wrapping_mul(x);
            let plus_one = squared.wrapping_add(1);
            let mixed = plus_one.wrapping_mul(3).wrapping_add(i as u32);
            plus_one.wrapping_add(mixed)
        })
        .collect()
}

/// A dispatch node running `wgsl` (entry `main`, one invocation per output row) with `inputs`
/// bound read-only at bindings 0.. and `output` bound read-write after them; the graph checks
/// the bindings against the WGSL when it compiles.
fn kernel_node(
    id: &str,
    wgsl: &'static str,
    inputs: Vec<DataView>,
    output: DataView,
) -> DispatchNode {
    let mut bindings: Vec<Binding> = (0u32..)
        .zip(&inputs)
        .map(|(slot, &v)| Binding::read(slot, v))
        .collect();
    bindings.push(Binding::read_write(inputs.len() as u32, output));
    // The demo's shaders index by global_invocation_id.x: one dispatch row only (the graph
    // refuses a grid past the device's per-dimension limit when the node is added).
    let groups = output.len().div_ceil(WORKGROUP);
    let grid = Grid::Workgroups([u32::try_from(groups).unwrap_or(u32::MAX), 1, 1]);
    DispatchNode::new(id, ShaderSource::new(id, wgsl), "main", bindings, grid)
}

/// Runs `gpugraph demo`.
pub fn run(args: &DemoArgs) -> Result<()> {
    let rows = args.rows;
    let gpu = Gpu::open()?;
    let caps = gpu.ctx.capabilities();
    println!(
        "demo: adapter {} ({}, {})",
        caps.adapter, caps.backend, caps.device_type
    );
    let groups = rows.div_ceil(WORKGROUP);
    ensure!(
        groups <= u64::from(caps.max_compute_workgroups_per_dimension),
        "--rows {rows} needs {groups} workgroups of {WORKGROUP}, more than this device's {} per dimension",
        caps.max_compute_workgroups_per_dimension
    );
    let bytes = rows
        .checked_mul(4)
        .filter(|&b| b <= caps.max_storage_buffer_binding_size)
        .with_context(|| {
            format!(
                "--rows {rows} does not fit one storage binding of {} bytes",
                caps.max_storage_buffer_binding_size
            )
        })?;
    let n = usize::try_from(rows)?;

    let mut rng = StdRng::seed_from_u64(args.seed);
    let input: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let expected = cpu_reference(&input);
    println!(
        "demo: uploading {rows} u32 rows ({bytes} bytes, seed {})",
        args.seed
    );

    let device = gpu.device();
    let input_buf = gpu.upload("demo input", &input);
    let output_buf = gpu.upload("demo output", &vec![POISON; n]);
    let stamp_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("demo stamp"),
        contents: bytemuck::cast_slice(&STAMP),
        usage: wgpu::BufferUsages::COPY_SRC,
    });
    let stamp_bytes = std::mem::size_of_val(&STAMP) as u64;
    let staging = gpu.staging("demo readback", bytes + stamp_bytes);
    gpu.check("buffer creation")?;

    let (mut compiled, transients) = build_graph(device, &input_buf, &output_buf, rows)?;
    gpu.check("graph compilation")?;
    let stats = compiled.stats().clone();
    println!(
        "demo: compiled graph '{}': {} nodes, {} transients",
        compiled.id(),
        stats.node_order.len(),
        stats.logical_transient_count
    );

    println!("demo: encoding unrelated copy + graph + readback copy into one encoder");
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("demo"),
    });
    encoder.copy_buffer_to_buffer(&stamp_buf, 0, &staging, bytes, stamp_bytes);
    let report = compiled
        .encode(&mut encoder, &EncodeOptions::default())
        .context("encoding graph demo")?;
    encoder.copy_buffer_to_buffer(&output_buf, 0, &staging, 0, bytes);
    println!(
        "demo: encoded {} nodes in {} compute pass(es)",
        report.node_encode_cpu.len(),
        report.compute_passes
    );
    gpu.submit_and_wait(encoder.finish())?;
    println!("demo: submitted once; reading back {bytes} bytes");
    let words = gpu.read_u32(&staging)?;

    let (out, stamp) = words.split_at(n);
    if stamp != STAMP {
        bail!("demo: FAILED: the unrelated copy in the same encoder read back {stamp:?}, expected {STAMP:?}");
    }
    let mismatches: Vec<usize> = (0..n).filter(|&i| out[i] != expected[i]).collect();
    if let Some(&first) = mismatches.first() {
        let unwritten = mismatches.iter().filter(|&&i| out[i] == POISON).count();
        bail!(
            "demo: FAILED: {} of {n} rows differ ({unwritten} still poisoned); first: row {first}: gpu {} cpu {}",
            mismatches.len(),
            out[first],
            expected[first]
        );
    }

    println!("demo: node order: {}", stats.node_order.join(" -> "));
    println!(
        "demo: transients: logical {} ({} bytes), physical {} ({} bytes), reused {} bytes ({:.1}%)",
        stats.logical_transient_count,
        stats.logical_transient_bytes,
        stats.physical_transient_count,
        stats.physical_transient_bytes,
        stats.reused_bytes,
        stats.reuse_percent
    );
    for group in shared_allocations(&compiled, &transients)? {
        println!(
            "demo: aliased: {} share one physical buffer",
            group.join(" + ")
        );
    }
    println!("demo: OK ({n} rows checked)");
    Ok(())
}

/// Builds and compiles graph `demo`; returns it with its transients' (id, view) pairs.
fn build_graph(
    device: &wgpu::Device,
    input: &wgpu::Buffer,
    output: &wgpu::Buffer,
    rows: u64,
) -> Result<(CompiledGraph, Vec<(String, DataView)>)> {
    let bytes = rows * 4;
    let mut g = CommandGraph::new("demo", device);
    let packed = |g: &CommandGraph, h| g.create_packed_view(h, VectorFormat::Uint32, rows);
    let input_v = import(&mut g, "input", input, rows)?;
    let output_v = import(&mut g, "output", output, rows)?;
    let mut transients = Vec::new();
    let mut transient = |g: &mut CommandGraph, id: &str| -> Result<DataView> {
        let h = g.create_buffer(BufferDescriptor::new(
            id,
            bytes,
            wgpu::BufferUsages::STORAGE,
        ))?;
        let v = packed(g, h)?;
        transients.push((id.to_string(), v));
        Ok(v)
    };
    let squared = transient(&mut g, "squared")?;
    let plus_one = transient(&mut g, "plus-one")?;
    let mixed = transient(&mut g, "mixed")?;

    g.add_dispatch_node(kernel_node("square", SQUARE_WGSL, vec![input_v], squared))?;
    g.add_dispatch_node(kernel_node(
        "add-one",
        ADD_ONE_WGSL,
        vec![squared],
        plus_one,
    ))?;
    g.add_dispatch_node(kernel_node("mix", MIX_WGSL, vec![plus_one], mixed))?;
    g.add_dispatch_node(kernel_node(
        "sum-rows",
        SUM_ROWS_WGSL,
        vec![plus_one, mixed],
        output_v,
    ))?;
    let compiled = g.compile().context("compiling graph demo")?;
    Ok((compiled, transients))
}

/// Groups of transient ids that resolve to the same physical buffer (groups of two or more).
fn shared_allocations(
    compiled: &CompiledGraph,
    transients: &[(String, DataView)],
) -> Result<Vec<Vec<String>>> {
    let mut groups: Vec<(wgpu::Buffer, Vec<String>)> = Vec::new();
    for (id, view) in transients {
        let buffer = compiled.buffer(*view)?;
        match groups.iter_mut().find(|(b, _)| b == buffer) {
            Some((_, ids)) => ids.push(id.clone()),
            None => groups.push((buffer.clone(), vec![id.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(_, ids)| ids)
        .filter(|ids| ids.len() > 1)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oracle_wraps_like_wgsl_u32() {
        // x = 2^16: x*x wraps to 0, +1 = 1, mixed = 3 + i, out = 4 + i.
        assert_eq!(cpu_reference(&[1 << 16, 1 << 16]), vec![4, 5]);
        // x = 3: 9 + 1 = 10, mixed = 30 + 0, out = 40.
        assert_eq!(cpu_reference(&[3]), vec![40]);
        assert_eq!(cpu_reference(&[u32::MAX])[0], 2u32.wrapping_mul(4));
    }
}
