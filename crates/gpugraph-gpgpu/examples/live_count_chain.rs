//! A GPU-written count bounding the next primitives, with no readback in between: a stable
//! compaction selects rows and writes its survivor count; an exclusive scan and a sum read the
//! compacted rows through that live count (`CommandGraph::with_live_count`). The output buffer
//! is larger than the survivors and poisoned past them; nothing past the count reaches the
//! sum. One encoder, one submission; the results are read back only to check them against
//! plain-Rust loops.
//!
//! ```sh
//! cargo run --release -p gpugraph-gpgpu --example live_count_chain [-- ROWS]
//! ```

use std::sync::mpsc;

use gpugraph_command::wgpu::{self, BufferUsages};
use gpugraph_command::{
    BufferDescriptor, CommandGraph, DataView, EncodeOptions, GpuContext, VectorFormat,
};
use gpugraph_gpgpu::{Compaction, ReduceOp, Reduction, Scan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows: u32 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|e| format!("ROWS must be a u32, got '{arg}': {e}"))?,
        None => 1_000_000,
    };
    let n = rows as usize;
    let ctx = GpuContext::new()?;
    println!("adapter: {}", ctx.capabilities().adapter);

    let mut state = 0x2545_F491u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let values: Vec<u32> = (0..n).map(|_| next() % 1000).collect();
    let flags: Vec<u32> = (0..n).map(|_| u32::from(next() % 4 == 0)).collect();
    let poison = vec![0xDEAD_BEEFu32; n.max(1)];

    let buffer = |data: &[u32]| {
        let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (data.len() as u64 * 4).max(8),
            usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.queue.write_buffer(&b, 0, bytemuck::cast_slice(data));
        b
    };
    let (vb, fb, ob, cb, sb, rb) = (
        buffer(&values),
        buffer(&flags),
        buffer(&poison),
        buffer(&poison[..1]),
        buffer(&poison),
        buffer(&poison[..1]),
    );

    let mut graph = CommandGraph::new("live-count-chain", &ctx.device);
    let mut view =
        |id: &str, b: &wgpu::Buffer, rows: u64| -> Result<DataView, Box<dyn std::error::Error>> {
            let h = graph.import_buffer(BufferDescriptor::new(id, b.size(), b.usage()), b)?;
            Ok(graph.create_packed_view(h, VectorFormat::Uint32, rows)?)
        };
    let (v, f, o) = (
        view("values", &vb, n as u64)?,
        view("flags", &fb, n as u64)?,
        view("out", &ob, n as u64)?,
    );
    let (c, s, r) = (
        view("count", &cb, 1)?,
        view("scanned", &sb, n as u64)?,
        view("sum", &rb, 2)?,
    );
    Compaction {
        id: "select".into(),
        values: v.into(),
        flags: f.into(),
        output: o.into(),
        count: c,
        overflow: None,
    }
    .add_to_graph(&mut graph)?;
    Scan {
        id: "offsets".into(),
        input: graph.with_live_count(o, c)?.into(),
        output: s.into(),
        inclusive: false,
        segment_starts: None,
    }
    .add_to_graph(&mut graph)?;
    Reduction {
        id: "sum".into(),
        input: graph.with_live_count(s, c)?.into(),
        mask: None,
        op: ReduceOp::Sum,
        output: r,
        ignored: None,
    }
    .add_to_graph(&mut graph)?;
    let mut compiled = graph.compile()?;
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    compiled.encode(&mut encoder, &EncodeOptions::default())?;
    ctx.queue.submit([encoder.finish()]);

    // Check against plain loops (readback only for checking).
    let survivors: Vec<u32> = values
        .iter()
        .zip(&flags)
        .filter(|(_, &f)| f != 0)
        .map(|(&v, _)| v)
        .collect();
    let mut offsets = Vec::with_capacity(survivors.len());
    let mut running = 0u32;
    for &x in &survivors {
        offsets.push(running);
        running = running.wrapping_add(x);
    }
    let want_sum: u64 = offsets.iter().map(|&x| u64::from(x)).sum();
    let count = read(&ctx, &cb)?[0] as usize;
    let scanned = read(&ctx, &sb)?;
    let sum = read(&ctx, &rb)?;
    let got_sum = u64::from(sum[0]) | (u64::from(sum[1]) << 32);
    println!("rows {n}, survivors {count}, sum of offsets {got_sum}");
    if count != survivors.len() || scanned[..count] != offsets[..] || got_sum != want_sum {
        return Err(format!(
            "mismatch: count {count} (want {}), sum {got_sum} (want {want_sum})",
            survivors.len()
        )
        .into());
    }
    println!("ok: matches the CPU");
    Ok(())
}

fn read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Vec<u32>, Box<dyn std::error::Error>> {
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: buffer.size(),
        usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    ctx.queue.submit([encoder.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    let view = slice.get_mapped_range()?;
    Ok(bytemuck::cast_slice(&view).to_vec())
}
