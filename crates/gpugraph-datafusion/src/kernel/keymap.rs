//! The lookup buffer of a many-to-one join on the device: the host stages each lookup row's
//! key-map word and the lookup columns, and the device clears the key map and scatters the
//! rows into it (`keymap.wgsl`). At SF 10 the map of TPC-H's orders is 60M words for 1.5M
//! (Q3) to 15M (Q12) rows: filling it on the host and sending it over PCIe cost more than the
//! query's GPU pass. [`LookupTable::words`] is the oracle.

use bytemuck::{Pod, Zeroable};
use gpugraph_command::{wgpu, GpuContext};
use gpugraph_gpgpu::kernel::{parameter_buffer, Binding, Kernel};
use gpugraph_tables::upload::write_parts;

use super::{storage, KernelError};
use crate::lookup::LookupTable;

const WGSL: &str = include_str!("keymap.wgsl");

/// Threads per workgroup (`keymap.wgsl`'s `@workgroup_size`).
const WORKGROUP: u32 = 256;

/// Most workgroups a pass launches; threads stride over the rest.
const MAX_WORKGROUPS: u32 = 8192;

/// The shader's `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    rows: u32,
    keys: u32,
    stride: u32,
    base: u32,
}

/// Workgroups for `n` items and the threads' stride over them.
fn grid(n: u32) -> (u32, u32) {
    let workgroups = n.div_ceil(WORKGROUP).clamp(1, MAX_WORKGROUPS);
    (workgroups, workgroups * WORKGROUP)
}

/// `words` staged into `buffer` from word `at` on, part after part, through the tables
/// crate's reused staging ring: one host-visible allocation as large as a lookup side (180
/// MB for TPC-H Q12's orders at SF 10) costs its allocation and page faults, and on the H200
/// slows every later streaming kernel of the process (`gpugraph_tables::upload`).
fn stage<'a>(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    at: usize,
    words: usize,
    parts: impl Iterator<Item = &'a [u32]>,
) -> Result<(), KernelError> {
    let mut offset = at as u64 * 4;
    let mut placed = Vec::new();
    for part in parts {
        let bytes: &[u8] = bytemuck::cast_slice(part);
        placed.push((offset, bytes));
        offset += bytes.len() as u64;
    }
    debug_assert_eq!(offset, (at + words) as u64 * 4);
    write_parts(&ctx.device, &ctx.queue, buffer, &placed)?;
    Ok(())
}

/// The lookup buffer of `tables`, placed one after the other
/// ([`crate::lookup::place`], [`crate::program::LookupShape`]'s layout), or why a join is
/// not many-to-one (a key a lookup side holds twice, named by value). Waits for the device:
/// the answer decides between the GPU plan and the CPU's.
pub fn lookup_buffer(
    ctx: &GpuContext,
    tables: &[LookupTable],
) -> Result<Result<wgpu::Buffer, String>, KernelError> {
    let device = &ctx.device;
    let words = tables
        .iter()
        .map(|t| t.shape.base as usize + t.buffer_words())
        .max()
        .unwrap_or(0);
    let buffer = storage(
        device,
        "gpugraph-datafusion-lookup",
        words as u64 * 4,
        // COPY_SRC: the tests read it back against the host's build.
        wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
    );
    for table in tables {
        let done = side(ctx, &buffer, table);
        if !matches!(done, Ok(Ok(()))) {
            buffer.destroy();
        }
        match done {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Ok(Err(why)),
            Err(e) => return Err(e),
        }
    }
    Ok(Ok(buffer))
}

/// Writes `table`'s part of the lookup buffer `buffer` at its shape's words: stages its
/// columns and its rows' key-map words, then clears and scatters its map on the device.
fn side(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    table: &LookupTable,
) -> Result<Result<(), String>, KernelError> {
    let keys = table.shape.keys as usize;
    let base = table.shape.base;
    for j in 0..table.shape.columns.len() {
        let at = table.shape.columns[j] as usize;
        stage(ctx, buffer, at, table.rows, table.column(j))?;
    }
    if table.rows == 0 || keys == 0 {
        // No key maps to a row: the map stays cleared.
        let (workgroups, stride) = grid(keys as u32);
        dispatch(
            ctx,
            buffer,
            None,
            (0, keys as u32, base),
            workgroups,
            stride,
        )?;
        return Ok(Ok(()));
    }
    let parts = match table.offsets() {
        Ok(parts) => parts,
        Err(why) => return Ok(Err(why)),
    };
    let offsets = storage(
        &ctx.device,
        "gpugraph-datafusion-lookup-offsets",
        table.rows as u64 * 4,
        wgpu::BufferUsages::COPY_DST,
    );
    stage(
        ctx,
        &offsets,
        0,
        table.rows,
        parts.iter().map(Vec::as_slice),
    )?;
    let (workgroups, stride) = grid(keys.max(table.rows) as u32);
    let repeats = dispatch(
        ctx,
        buffer,
        Some(&offsets),
        (table.rows as u32, keys as u32, base),
        workgroups,
        stride,
    );
    offsets.destroy();
    Ok(match repeats? {
        [0, _] => Ok(()),
        [_, d] => Err(table.repeated(table.shape.first_key + d as i64)),
    })
}

/// Clears the `keys` words of `map` from word `base` and scatters the `rows` words of
/// `offsets` into them; returns the repeat count and smallest repeated word.
fn dispatch(
    ctx: &GpuContext,
    map: &wgpu::Buffer,
    offsets: Option<&wgpu::Buffer>,
    (rows, keys, base): (u32, u32, u32),
    workgroups: u32,
    stride: u32,
) -> Result<[u32; 2], KernelError> {
    let device = &ctx.device;
    let bindings = [
        Binding::Uniform,
        Binding::StorageRead,
        Binding::StorageReadWrite,
        Binding::StorageReadWrite,
    ];
    let params = parameter_buffer(
        device,
        "gpugraph-datafusion-keymap-params",
        bytemuck::bytes_of(&Params {
            rows,
            keys,
            stride,
            base,
        }),
    );
    let repeats = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-keymap-repeats"),
        size: 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    repeats
        .slice(..)
        .get_mapped_range_mut()
        .map_err(|e| KernelError::Readback(format!("mapping the repeat count failed: {e}")))?
        .slice(..8)
        .copy_from_slice(bytemuck::cast_slice(&[0u32, u32::MAX]));
    repeats.unmap();
    let placeholder = storage(
        device,
        "gpugraph-datafusion-unused",
        16,
        wgpu::BufferUsages::empty(),
    );
    let resources = [
        params.as_entire_buffer_binding(),
        offsets.unwrap_or(&placeholder).as_entire_buffer_binding(),
        map.as_entire_buffer_binding(),
        repeats.as_entire_buffer_binding(),
    ];
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("gpugraph-datafusion-keymap"),
    });
    let entries: &[&str] = if offsets.is_some() {
        &["clear", "scatter"]
    } else {
        &["clear"]
    };
    // A pass per entry: the scatter must see the whole map cleared.
    for entry in entries {
        let kernel = Kernel::new(
            device,
            "gpugraph-datafusion-keymap",
            WGSL,
            entry,
            &bindings,
            &[],
        );
        let group = kernel.bind_group(device, &resources);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("gpugraph-datafusion-keymap"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&kernel.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(workgroups, 1, 1);
    }
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpugraph-datafusion-keymap-readback"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(&repeats, 0, &staging, 0, 8);
    super::submit_and_map(ctx, encoder, &staging).map_err(KernelError::Readback)?;
    let read: Vec<u32> = {
        let view = staging.slice(..).get_mapped_range().map_err(|e| {
            KernelError::Readback(format!("the mapped repeat count has no view: {e}"))
        })?;
        bytemuck::pod_collect_to_vec(&view[..8])
    };
    for b in [&staging, &repeats, &placeholder, &params] {
        b.destroy();
    }
    Ok([read[0], read[1]])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_plan::empty::EmptyExec;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::lookup::LookupPlan;
    use crate::pages::tests::{gpu, read_back};

    /// Lookup batches of `keys` (None: null) with a value column `v = key × 3`, split
    /// unevenly.
    fn table(keys: &[Option<i64>]) -> LookupTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int32, false),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(Int32Array::from_iter_values(
                    keys.iter().map(|k| k.unwrap_or(-1) as i32 * 3),
                )),
            ],
        )
        .expect("batch");
        let cuts = [
            0,
            keys.len() / 3,
            (keys.len() / 3 + 1).min(keys.len()),
            keys.len(),
        ];
        let batches: Vec<RecordBatch> = cuts
            .windows(2)
            .map(|w| batch.slice(w[0], w[1] - w[0]))
            .collect();
        LookupPlan {
            input: Arc::new(EmptyExec::new(Arc::clone(&schema))),
            key: col("k", &schema).expect("k"),
            columns: vec![col("v", &schema).expect("v")],
            groups: Vec::new(),
            outer: false,
        }
        .build(&batches)
        .expect("builds")
    }

    /// The device's buffer equals the host's build, word for word, for shuffled sparse keys
    /// with nulls, one row, and none; a repeated key is named by value.
    #[test]
    fn device_key_map_matches_the_host_build() {
        let ctx = gpu();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for rows in [0usize, 1, 255, 257, 70_001] {
            let mut keys: Vec<Option<i64>> = (0..rows as i64).map(|k| Some(-5 + 3 * k)).collect();
            keys.shuffle(&mut rng);
            for k in keys.iter_mut() {
                if rng.random_bool(0.05) {
                    *k = None;
                }
            }
            let t = table(&keys);
            let expected = t.words().expect("many-to-one");
            let buffer = lookup_buffer(&ctx, std::slice::from_ref(&t))
                .expect("runs")
                .expect("many-to-one");
            assert_eq!(
                read_back(&ctx, &buffer, expected.len()),
                expected,
                "{rows} rows"
            );
        }
        let mut keys: Vec<Option<i64>> = (0..5_000).map(Some).collect();
        keys[4_321] = Some(1_234);
        keys[77] = Some(1_234);
        keys[999] = Some(17);
        let t = table(&keys);
        let why = lookup_buffer(&ctx, std::slice::from_ref(&t))
            .expect("runs")
            .unwrap_err();
        assert_eq!(why, t.words().unwrap_err());
        assert!(why.contains("k@0 repeats the value 17"), "{why}");
    }
}
