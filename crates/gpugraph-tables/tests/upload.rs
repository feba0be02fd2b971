//! Bounded-staging uploads (`gpugraph_tables::upload`): data larger than several staging pieces
//! and batches, parts at aligned offsets with gaps, and lengths that are not multiples of 4,
//! land byte for byte. Runs on the selected adapter (lavapipe in CI); never skips.

use gpugraph_command::GpuContext;
use gpugraph_tables::upload::{write_parts, IN_FLIGHT, PIECE};
use gpugraph_tables::{GpuData, GpuVector, VectorFormat};
use gpugraph_testing::ctx;
use wgpu::BufferUsages;

fn bytes(n: usize, salt: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(salt) >> 13) as u8)
        .collect()
}

fn read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Vec<u8> {
    GpuData::borrowed_packed(buffer, 0, buffer.size(), VectorFormat::Uint8)
        .expect("a whole-buffer u8 range")
        .read_back_bytes(ctx)
        .expect("readback")
}

#[test]
fn parts_spanning_many_pieces_and_batches_land_exactly() {
    let ctx = ctx();
    // Two batches' worth plus odd tails: every piece boundary, the batch flush and the padded
    // last word are crossed.
    let big = bytes((IN_FLIGHT + PIECE / 2 + 3) as usize, 7);
    let small = bytes(37, 9);
    let second = (37u64).div_ceil(256) * 256;
    let size = (second + big.len() as u64).div_ceil(4) * 4;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("upload-test"),
        size,
        usage: BufferUsages::STORAGE | BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    // Poison first, so a byte the upload skipped cannot pass as written.
    ctx.queue
        .write_buffer(&buffer, 0, &vec![0xEE; size as usize]);
    write_parts(
        &ctx.device,
        &ctx.queue,
        &buffer,
        &[(0, &small), (second, &big)],
    )
    .expect("upload");
    let got = read(&ctx, &buffer);
    assert_eq!(&got[..37], &small[..]);
    // Padding of the small part's last word is zero; the gap after it keeps the poison.
    assert_eq!(&got[37..40], &[0, 0, 0]);
    assert!(got[40..second as usize].iter().all(|&b| b == 0xEE));
    let at = second as usize;
    if let Some(i) = (0..big.len()).find(|&i| got[at + i] != big[i]) {
        panic!(
            "byte {i} of the large part is {} not {}",
            got[at + i],
            big[i]
        );
    }
}

#[test]
fn table_uploads_go_through_plain_buffers() {
    let ctx = ctx();
    let words: Vec<u32> = (0..(PIECE / 4 * 3 + 5) as u32)
        .map(|i| i ^ 0xA5A5)
        .collect();
    let data =
        GpuData::upload(&ctx, &words, VectorFormat::Uint32, BufferUsages::empty()).expect("upload");
    assert!(!data.buffer().usage().contains(BufferUsages::MAP_WRITE));
    let got = data.read_back_bytes(&ctx).expect("readback");
    assert_eq!(got, bytemuck::cast_slice::<u32, u8>(&words));
    // Shared chunks at aligned offsets, one of them empty.
    let (a, b) = (vec![1u32, 2, 3], (0..1000u32).collect::<Vec<_>>());
    let v = GpuVector::upload_chunks_shared(&ctx, &[&a, &[], &b], VectorFormat::Uint32)
        .expect("shared upload");
    let back: Vec<Vec<u8>> = v
        .chunks()
        .iter()
        .map(|c| c.read_back_bytes(&ctx).expect("chunk readback"))
        .collect();
    assert_eq!(back[0], bytemuck::cast_slice::<u32, u8>(&a));
    assert!(back[1].is_empty());
    assert_eq!(back[2], bytemuck::cast_slice::<u32, u8>(&b));
}
