//! The lookup buffer of a many-to-one join on the device: the host stages one packed record
//! per lookup row (its key-map word and lookup column values, [`crate::lookup::Records`]),
//! and the device clears the key map, scatters the rows into it and unpacks the columns
//! (`keymap.wgsl`, one dispatch node of a command graph submitted with the readback of its
//! repeat count). At SF 10 the map of TPC-H's orders is 60M words for 1.5M
//! (Q3) to 15M (Q12) rows: filling it on the host and sending it over PCIe cost more than the
//! query's GPU pass. [`LookupTable::words`] is the oracle.

use bytemuck::{Pod, Zeroable};
use gpugraph_command::{
    wgpu, Access, Binding, BufferDescriptor, CommandGraph, DispatchNode, EncodeOptions, GpuContext,
    Grid, ShaderSource,
};
use gpugraph_tables::readback;
use gpugraph_tables::upload::{write_targets, Outcome, Source, Target};

use super::{storage, KernelError};
use crate::lookup::{Field, LookupTable};

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
    record: u32,
    key_bits: u32,
    none: u32,
    columns: u32,
    set: u32,
    pad: [u32; 3],
}

/// Workgroups for `n` items and the threads' stride over them.
fn grid(n: u32) -> (u32, u32) {
    let workgroups = n.div_ceil(WORKGROUP).clamp(1, MAX_WORKGROUPS);
    (workgroups, workgroups * WORKGROUP)
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

/// Writes `table`'s part of the lookup buffer `buffer`: stages its rows' records
/// ([`LookupTable::records`]) through the tables crate's reused staging ring, filled on
/// several threads straight from the lookup batches (one host-visible allocation as large
/// as a lookup side costs its page faults, and on the H200 slows every later streaming
/// kernel of the process), then clears its map and unpacks the records on the device.
fn side(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    table: &LookupTable,
) -> Result<Result<(), String>, KernelError> {
    if let Some(bits) = table.present() {
        return expand(ctx, buffer, table, bits).map(Ok);
    }
    let layout = table.records();
    let record = layout.words as usize;
    let records = storage(
        &ctx.device,
        "gpugraph-datafusion-lookup-records",
        (table.rows * record) as u64 * 4,
        wgpu::BufferUsages::COPY_DST,
    );
    let fill = |at: u64, out: &mut [u8]| {
        let first = at as usize / (4 * record);
        table.fill_records(&layout, first, bytemuck::cast_slice_mut(out));
        Ok(())
    };
    let target = Target {
        buffer: &records,
        offset: 0,
        source: Source::Fill {
            len: (table.rows * record) as u64 * 4,
            row: record as u64 * 4,
            fill: &fill,
        },
    };
    match write_targets(&ctx.device, &ctx.queue, &[target])? {
        Outcome::Written => {}
        Outcome::Stopped => unreachable!("the records' fill never stops"),
    }
    let keys = table.shape.keys;
    let (workgroups, stride) = grid(keys.max(table.rows as u32));
    let params = Params {
        rows: table.rows as u32,
        keys,
        stride,
        base: table.shape.base,
        record: layout.words,
        key_bits: layout.key_bits,
        none: layout.none,
        columns: layout.fields.len() as u32,
        set: u32::from(table.set),
        pad: [0; 3],
    };
    let entries = ["clear", "scatter"];
    let repeats = dispatch(
        ctx,
        buffer,
        &records,
        &params,
        &layout.fields,
        (&entries, workgroups),
    );
    records.destroy();
    Ok(match repeats? {
        [0, _] => Ok(()),
        [_, d] => Err(table.repeated(table.shape.first_key + d as i64)),
    })
}

/// Writes `table`'s key map into `buffer` from its presence bitmap `bits`
/// ([`LookupTable::from_bits`]): the bitmap crosses PCIe (a bit per key instead of a record
/// per row) and `expand` writes every word of the map, and of a payload side's columns from
/// their value bitmaps ([`LookupTable::from_payload_bits`]; each column's entry of `fields`
/// is then its first word, first value bitmap, value count and first value word).
fn expand(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    table: &LookupTable,
    bits: &[u32],
) -> Result<(), KernelError> {
    let words = storage(
        &ctx.device,
        "gpugraph-datafusion-lookup-bits",
        bits.len() as u64 * 4,
        wgpu::BufferUsages::COPY_DST,
    );
    let target = Target {
        buffer: &words,
        offset: 0,
        source: Source::Bytes(bytemuck::cast_slice(bits)),
    };
    if !bits.is_empty() {
        write_targets(&ctx.device, &ctx.queue, &[target])?;
    }
    let keys = table.shape.keys;
    let (workgroups, stride) = grid(keys);
    let params = Params {
        keys,
        stride,
        base: table.shape.base,
        record: keys.div_ceil(32),
        columns: table.valued().len() as u32,
        set: u32::from(table.set),
        ..Params::default()
    };
    let fields: Vec<Field> = table
        .valued()
        .iter()
        .zip(&table.shape.columns)
        .map(|(v, &at)| Field {
            at,
            bit: v.bitmap,
            bits: v.values,
            lo: v.value,
        })
        .collect();
    let done = dispatch(
        ctx,
        buffer,
        &words,
        &params,
        &fields,
        (&["expand"], workgroups),
    );
    words.destroy();
    done.map(|_| ())
}

/// Runs `entries` (`clear`, then `scatter`, which must see the whole map cleared; or
/// `expand`) over the records (`params`, `fields`) into `map`: one dispatch node of
/// `workgroups` workgroups per entry, submitted with the readback of the repeat count and
/// smallest repeated word, which it returns.
fn dispatch(
    ctx: &GpuContext,
    map: &wgpu::Buffer,
    records: &wgpu::Buffer,
    params: &Params,
    fields: &[Field],
    (entries, workgroups): (&[&str], u32),
) -> Result<[u32; 2], KernelError> {
    let device = &ctx.device;
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
    // A binding is never empty: a side without columns binds one unread field.
    let mut field_words: Vec<u32> = bytemuck::cast_slice(fields).to_vec();
    if field_words.is_empty() {
        field_words = vec![0; std::mem::size_of::<Field>() / 4];
    }
    let mut graph = CommandGraph::new("gpugraph-datafusion keymap", device);
    let storage = wgpu::BufferUsages::STORAGE;
    let mut import = |id: &str, buffer: &wgpu::Buffer| {
        graph.import_buffer(BufferDescriptor::new(id, buffer.size(), storage), buffer)
    };
    let records = import("records", records)?;
    let map = import("map", map)?;
    let repeat_handle = import("repeats", &repeats)?;
    let grid = Grid::Workgroups([workgroups, 1, 1]);
    let mut node = DispatchNode::new(
        "keymap",
        ShaderSource::new("datafusion/keymap", WGSL),
        entries[0],
        vec![
            Binding::params(0, params),
            Binding::handle(1, records, Access::Read),
            Binding::handle(2, map, Access::ReadWrite),
            Binding::handle(3, repeat_handle, Access::ReadWrite),
            Binding::storage_params(4, &field_words),
        ],
        grid,
    );
    for entry in &entries[1..] {
        node = node.then(*entry, grid);
    }
    graph.add_dispatch_node(node.private_bind_group())?;
    let mut compiled = graph.compile()?;
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("gpugraph-datafusion-keymap"),
    });
    compiled.encode(&mut encoder, &EncodeOptions::default())?;
    let read = readback::submit_and_read(device, &ctx.queue, encoder, &[(&repeats, 0, 8)]);
    drop(compiled);
    repeats.destroy();
    let read: Vec<u32> = bytemuck::pod_collect_to_vec(&read?.concat());
    Ok([read[0], read[1]])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_plan::empty::EmptyExec;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::lookup::LookupPlan;
    use crate::pages::tests::{gpu, read_back};
    use crate::program::NO_ROW;

    /// Lookup batches of `keys` (None: null) with value columns of every record width: `v =
    /// key × 3`, a constant, a 0/1 flag and one spanning all of i32 (so fields cross
    /// words), split unevenly.
    fn table(keys: &[Option<i64>]) -> LookupTable {
        let names = ["v", "c", "f", "w"];
        let mut fields = vec![Field::new("k", DataType::Int64, true)];
        fields.extend(names.iter().map(|n| Field::new(*n, DataType::Int32, false)));
        let schema = Arc::new(Schema::new(fields));
        let key = |k: &Option<i64>| k.unwrap_or(-1) as i32;
        let column = |f: &dyn Fn(i32) -> i32| -> ArrayRef {
            Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| f(key(k)))))
        };
        let wide = |k: i32| match k.rem_euclid(3) {
            0 => i32::MIN,
            1 => i32::MAX,
            _ => k,
        };
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                column(&|k| k * 3),
                column(&|_| 7),
                column(&|k| k & 1),
                column(&wide),
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
            columns: names
                .iter()
                .map(|n| col(n, &schema).expect("column"))
                .collect(),
            groups: Vec::new(),
            outer: false,
            set: None,
        }
        .build(&batches)
        .expect("builds")
    }

    /// The shader's `Params` is the Rust struct, field for field (the key-set flag last).
    #[test]
    fn wgsl_params_match_the_struct() {
        let module = naga::front::wgsl::parse_str(WGSL).expect("keymap.wgsl parses");
        let (_, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Params"))
            .expect("struct Params");
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("Params is a struct");
        };
        assert_eq!(*span as usize, std::mem::size_of::<Params>());
        let key_set = members
            .iter()
            .find(|m| m.name.as_deref() == Some("key_set"))
            .expect("key_set");
        assert_eq!(key_set.offset as usize, std::mem::offset_of!(Params, set));
    }

    /// The device's buffer equals the host's build, word for word, for shuffled sparse keys
    /// with nulls, one row, and none (records of several words whose fields cross words); a
    /// repeated key is named by value.
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
            if rows == 70_001 {
                // 18 key bits, then 20, 0, 1 and 32 column bits.
                assert_eq!(t.records().words, 3);
            }
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

    /// A key set found on the device expands into the host oracle's map, word for word,
    /// beside a collected side placed before it: random bitmaps of every density over
    /// spans that end inside a word or on one, a single key, and no key (an empty set, whose
    /// map has no word).
    #[test]
    fn device_expands_presence_bitmaps_like_the_host() {
        let ctx = gpu();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for (words, density) in [(0usize, 0.0), (1, 0.5), (3, 1.0), (33, 0.01), (9_000, 0.3)] {
            let mut bits: Vec<u32> = (0..words)
                .map(|_| (0..32).fold(0, |w, b| w | (u32::from(rng.random_bool(density)) << b)))
                .collect();
            if words == 3 {
                bits[2] = 1 << 5;
            }
            let set = LookupTable::from_bits("k".into(), -77, bits.clone()).expect("a key set");
            let keys: Vec<Option<i64>> = (0..300).map(Some).collect();
            let mut tables = [table(&keys), set];
            crate::lookup::place(&mut tables);
            let mut expected = tables[0].words().expect("many-to-one");
            expected.extend(tables[1].words().expect("a key set"));
            let buffer = lookup_buffer(&ctx, &tables).expect("runs").expect("builds");
            assert_eq!(
                read_back(&ctx, &buffer, expected.len()),
                expected,
                "{words} words"
            );
            let present: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
            assert_eq!(tables[1].rows, present);
            assert_eq!(tables[1].shape.empty, present == 0);
        }
    }

    /// A payload side found on the device expands into its map (each present key's offset)
    /// and key-indexed columns, word for word as the host oracle and as each key's assigned
    /// value, beside a collected side placed before it: random presence over spans that end
    /// inside a word or on one, a column of three values at i32's edges and a 0/1 column,
    /// one key, and no key.
    #[test]
    fn device_expands_payload_bitmaps_like_the_host() {
        let ctx = gpu();
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        let values = [vec![i32::MIN as u32, 7, i32::MAX as u32], vec![1, 0]];
        for (keys, density) in [
            (0usize, 0.0),
            (1, 1.0),
            (64, 0.5),
            (100, 0.9),
            (70_000, 0.3),
        ] {
            let present: Vec<bool> = (0..keys).map(|_| rng.random_bool(density)).collect();
            let words = keys.div_ceil(32);
            let mut bits = vec![0u32; words];
            let mut columns: Vec<Vec<(u32, Vec<u32>)>> = values
                .iter()
                .map(|vs| vs.iter().map(|&v| (v, vec![0u32; words])).collect())
                .collect();
            let mut expected = vec![NO_ROW; keys];
            let mut column_words = vec![vec![0u32; keys]; values.len()];
            for d in (0..keys).filter(|&d| present[d]) {
                bits[d / 32] |= 1 << (d % 32);
                expected[d] = d as u32;
                for (j, column) in columns.iter_mut().enumerate() {
                    let i = rng.random_range(0..column.len());
                    column[i].1[d / 32] |= 1 << (d % 32);
                    column_words[j][d] = column[i].0;
                }
            }
            let rows = present.iter().filter(|&&p| p).count() as u64;
            let side = LookupTable::from_payload_bits("k".into(), -9, bits, rows, columns)
                .expect("a payload side");
            // The span ends at the last key present.
            let span = side.shape.keys as usize;
            expected.truncate(span);
            for c in &column_words {
                expected.extend(&c[..span]);
            }
            assert_eq!(side.words().expect("words"), expected, "{keys} keys");
            let collected: Vec<Option<i64>> = (0..300).map(Some).collect();
            let mut tables = [table(&collected), side];
            crate::lookup::place(&mut tables);
            let mut all = tables[0].words().expect("many-to-one");
            all.extend(expected);
            let buffer = lookup_buffer(&ctx, &tables).expect("runs").expect("builds");
            assert_eq!(read_back(&ctx, &buffer, all.len()), all, "{keys} keys");
        }
    }
}
