//! The reused staging ring of `gpugraph_tables::upload::write_parts`: parts that end exactly
//! on, just before and just after staging-buffer boundaries, many small parts sharing one
//! staging buffer, more data than the ring holds (every buffer reused after its copy), and the
//! small-upload path at its threshold all land byte for byte over poison, with the padding of
//! unaligned part ends zero. Also the upload rate (`--ignored`, prints GB/s; not a timed test).
//! Runs on the selected adapter (lavapipe in CI); never skips.

use gpugraph_command::GpuContext;
use gpugraph_tables::upload::{
    release_staging, write_parts, write_targets, Outcome, Source, Stopped, Target, IN_FLIGHT,
    PIECE, SMALL,
};
use gpugraph_tables::{GpuData, VectorFormat};
use gpugraph_testing::ctx;
use wgpu::BufferUsages;

fn bytes(n: usize, salt: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(salt) >> 11) as u8)
        .collect()
}

/// Uploads `lens` as parts at 256-aligned offsets with a gap after each, over poison, and
/// checks every byte: data, zero padding up to the next word, poison in the gaps.
fn check(ctx: &GpuContext, lens: &[usize]) {
    let mut offsets = Vec::new();
    let mut end = 0u64;
    for &len in lens {
        offsets.push(end);
        end = (end + len as u64 + 4).div_ceil(256) * 256;
    }
    let size = end.max(4);
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging-ring-test"),
        size,
        usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue
        .write_buffer(&buffer, 0, &vec![0xEE; size as usize]);
    let data: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| bytes(n, i as u32))
        .collect();
    let parts: Vec<(u64, &[u8])> = offsets
        .iter()
        .zip(&data)
        .map(|(&o, d)| (o, d.as_slice()))
        .collect();
    write_parts(&ctx.device, &ctx.queue, &buffer, &parts).expect("upload");
    let got = GpuData::borrowed_packed(&buffer, 0, size, VectorFormat::Uint8)
        .unwrap()
        .read_back_bytes(ctx)
        .unwrap();
    for (k, (&o, d)) in offsets.iter().zip(&data).enumerate() {
        let o = o as usize;
        if let Some(i) = (0..d.len()).find(|&i| got[o + i] != d[i]) {
            panic!(
                "part {k} of {lens:?}: byte {i} is {} not {}",
                got[o + i],
                d[i]
            );
        }
        let padded = d.len().div_ceil(4) * 4;
        assert!(
            got[o + d.len()..o + padded].iter().all(|&b| b == 0),
            "part {k}: padding not zero"
        );
        let next = offsets.get(k + 1).map_or(size as usize, |&n| n as usize);
        assert!(
            got[o + padded..next].iter().all(|&b| b == 0xEE),
            "part {k}: the gap after it was written"
        );
    }
}

#[test]
fn parts_around_staging_boundaries_land_exactly() {
    let ctx = ctx();
    let piece = PIECE as usize;
    // One buffer exactly, then one byte short of and past a buffer's end.
    check(&ctx, &[piece]);
    check(&ctx, &[piece - 1, 5, piece + 1]);
    // More than the whole ring, so every staging buffer is reused after its copy.
    check(&ctx, &[IN_FLIGHT as usize * 2 + 7, 3]);
}

#[test]
fn many_small_parts_share_staging_buffers() {
    let ctx = ctx();
    // 3,000 parts of odd lengths (about 5 MiB): several per staging buffer, some at their
    // boundaries, all padded.
    let lens: Vec<usize> = (0..3000).map(|i| 1 + (i * 7919) % 3500).collect();
    check(&ctx, &lens);
}

#[test]
fn the_small_upload_path_and_its_threshold() {
    let ctx = ctx();
    let small = SMALL as usize;
    check(&ctx, &[small - 256 - 4 - 3]);
    check(&ctx, &[small + 1]);
    check(&ctx, &[0, 1, 2, 3]);
    check(&ctx, &[]);
}

#[test]
fn back_to_back_uploads_reuse_staging_still_in_flight() {
    let ctx = ctx();
    // Each upload returns with its last copies possibly still running; the next one takes
    // the same staging buffers and must wait for them, not overwrite them.
    let n = (PIECE * 3 + 12) as usize;
    let sources: Vec<Vec<u8>> = (0..4).map(|k| bytes(n, 100 + k)).collect();
    let buffers: Vec<wgpu::Buffer> = (0..4)
        .map(|_| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("back-to-back"),
                size: n as u64,
                usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
        .collect();
    for (k, (b, d)) in buffers.iter().zip(&sources).enumerate() {
        if k == 2 {
            release_staging(&ctx.device); // and a fresh ring works too
        }
        write_parts(&ctx.device, &ctx.queue, b, &[(0, d)]).expect("upload");
    }
    for (k, (b, d)) in buffers.iter().zip(&sources).enumerate() {
        let got = GpuData::borrowed_packed(b, 0, n as u64, VectorFormat::Uint8)
            .unwrap()
            .read_back_bytes(&ctx)
            .unwrap();
        if let Some(i) = (0..n).find(|&i| got[i] != d[i]) {
            panic!("upload {k}: byte {i} is {} not {}", got[i], d[i]);
        }
    }
}

#[test]
fn chunk_after_chunk_smaller_than_a_staging_buffer() {
    let ctx = ctx();
    // How a table uploads: one call per column chunk of a few MiB. Each call starts on a
    // buffer whose copy is done or a new one (up to the ring), and waits only when all are
    // busy; every chunk must land.
    let n = (SMALL * 3 + 5) as usize;
    let sources: Vec<Vec<u8>> = (0..10).map(|k| bytes(n, 200 + k)).collect();
    let buffers: Vec<wgpu::Buffer> = sources
        .iter()
        .map(|_| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("chunk"),
                size: (n as u64).div_ceil(4) * 4,
                usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
        .collect();
    for (b, d) in buffers.iter().zip(&sources) {
        write_parts(&ctx.device, &ctx.queue, b, &[(0, d)]).expect("upload");
    }
    for (k, (b, d)) in buffers.iter().zip(&sources).enumerate() {
        let got = GpuData::borrowed_packed(b, 0, b.size(), VectorFormat::Uint8)
            .unwrap()
            .read_back_bytes(&ctx)
            .unwrap();
        assert!(got[..n] == d[..], "chunk {k} differs");
        assert!(got[n..].iter().all(|&x| x == 0), "chunk {k}: padding");
    }
}

/// `cargo test --release -p gpugraph-tables --test staging_ring -- --ignored --nocapture`
#[test]
#[ignore = "prints the upload rate; run by hand"]
fn upload_rate() {
    let ctx = ctx();
    let n = 512usize << 20;
    let data = bytes(n, 1);
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("upload-rate"),
        size: n as u64,
        usage: BufferUsages::STORAGE | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    for round in 0..3 {
        let t = std::time::Instant::now();
        write_parts(&ctx.device, &ctx.queue, &buffer, &[(0, &data)]).unwrap();
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "round {round}: {} MiB in {:.1} ms = {:.2} GB/s",
            n >> 20,
            s * 1e3,
            n as f64 / s / 1e9
        );
    }
}

/// A fill source of `len` bytes with `row`-byte rows: byte `i` is `bytes(.., salt)[i]`; it
/// checks the contract (whole rows except at the end) and stops at `stop_at` if given.
fn fill_source(
    len: usize,
    row: usize,
    salt: u32,
    stop_at: Option<u64>,
    calls: &std::sync::atomic::AtomicUsize,
) -> impl Fn(u64, &mut [u8]) -> Result<(), Stopped> + Sync + '_ {
    let data = bytes(len, salt);
    move |at: u64, out: &mut [u8]| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let end = at as usize + out.len();
        assert!(end <= len, "fill past the source: {at}+{}", out.len());
        assert_eq!(at as usize % row, 0, "fill starts inside a row");
        assert!(
            end == len || out.len().is_multiple_of(row),
            "fill ends inside a row"
        );
        assert_eq!(
            out.as_ptr() as usize % 8,
            0,
            "fill scratch not 8-byte aligned"
        );
        if stop_at.is_some_and(|s| (at..end as u64).contains(&s)) {
            return Err(Stopped);
        }
        out.copy_from_slice(&data[at as usize..end]);
        Ok(())
    }
}

#[test]
fn fill_sources_of_any_row_size_land_exactly_across_buffers() {
    let ctx = ctx();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    // Rows of 4, 12 and 1 bytes; lengths straddling staging buffers and one tiny source, each
    // into its own destination, all in one ring pass; plus a byte source between them.
    let shapes = [
        (PIECE as usize + 12 * 1000, 12usize),
        (PIECE as usize * 2 - 8, 4),
        (7, 1),
        (3 * PIECE as usize / 2 + 3, 1),
    ];
    let raw = bytes(100_003, 77);
    let fills: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(k, &(len, row))| fill_source(len, row, k as u32, None, &calls))
        .collect();
    let buffers: Vec<wgpu::Buffer> = shapes
        .iter()
        .map(|&(len, _)| len)
        .chain([raw.len()])
        .map(|len| {
            let b = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("fill-target"),
                size: (len as u64 + 8).div_ceil(4) * 4,
                usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            ctx.queue
                .write_buffer(&b, 0, &vec![0xEE; b.size() as usize]);
            b
        })
        .collect();
    let mut targets: Vec<Target<'_>> = shapes
        .iter()
        .zip(&fills)
        .zip(&buffers)
        .map(|((&(len, row), fill), buffer)| Target {
            buffer,
            offset: 0,
            source: Source::Fill {
                len: len as u64,
                row: row as u64,
                fill,
            },
        })
        .collect();
    targets.insert(
        2,
        Target {
            buffer: &buffers[4],
            offset: 4,
            source: Source::Bytes(&raw),
        },
    );
    assert_eq!(
        write_targets(&ctx.device, &ctx.queue, &targets).expect("upload"),
        Outcome::Written
    );
    assert!(
        calls.load(std::sync::atomic::Ordering::Relaxed) > 100,
        "fills ran in small jobs"
    );
    let expect: Vec<(usize, Vec<u8>, usize)> = shapes
        .iter()
        .enumerate()
        .map(|(k, &(len, _))| (k, bytes(len, k as u32), 0))
        .chain([(4, raw.clone(), 4)])
        .collect();
    for (k, data, offset) in expect {
        let b = &buffers[k];
        let got = GpuData::borrowed_packed(b, 0, b.size(), VectorFormat::Uint8)
            .unwrap()
            .read_back_bytes(&ctx)
            .unwrap();
        if let Some(i) = (0..data.len()).find(|&i| got[offset + i] != data[i]) {
            panic!(
                "target {k}: byte {i} is {} not {}",
                got[offset + i],
                data[i]
            );
        }
        let end = offset + data.len();
        let padded = offset + data.len().div_ceil(4) * 4;
        assert!(
            got[end..padded].iter().all(|&b| b == 0),
            "target {k}: padding"
        );
        assert!(
            got[padded..].iter().all(|&b| b == 0xEE),
            "target {k}: past the end"
        );
        assert!(
            got[..offset].iter().all(|&b| b == 0xEE),
            "target {k}: before the start"
        );
    }
}

#[test]
fn a_stopped_fill_submits_nothing_after_it() {
    let ctx = ctx();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let len = PIECE as usize * 3;
    // Stops inside the second staging buffer: the first was submitted, the second and third
    // never are (the third would not even be filled).
    let fill = fill_source(len, 4, 9, Some(PIECE + 4096), &calls);
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("stopped-target"),
        size: len as u64,
        usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&buffer, 0, &vec![0xEE; len]);
    let targets = [Target {
        buffer: &buffer,
        offset: 0,
        source: Source::Fill {
            len: len as u64,
            row: 4,
            fill: &fill,
        },
    }];
    assert_eq!(
        write_targets(&ctx.device, &ctx.queue, &targets).expect("upload"),
        Outcome::Stopped
    );
    let got = GpuData::borrowed_packed(&buffer, 0, len as u64, VectorFormat::Uint8)
        .unwrap()
        .read_back_bytes(&ctx)
        .unwrap();
    let data = bytes(len, 9);
    assert_eq!(
        &got[..PIECE as usize],
        &data[..PIECE as usize],
        "first buffer landed"
    );
    assert!(
        got[PIECE as usize..].iter().all(|&b| b == 0xEE),
        "nothing after the stopped buffer was written"
    );
    // The ring is usable afterwards (the stopped buffer went back to the pool still mapped).
    check(&ctx, &[PIECE as usize * 2 + 5]);
}
