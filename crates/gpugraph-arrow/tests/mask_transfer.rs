//! Validity masks uploaded as bitmaps and expanded on the GPU (`MaskTransfer::Bitmap`) are the
//! same words as masks written on the host (`MaskTransfer::Words`) and as the CPU oracle
//! (`Array::is_valid`), for chunks whose null bitmaps start at odd bit offsets (sliced arrays),
//! lengths around 32-row words and 256-row workgroups, empty chunks, chunks without nulls, and
//! both placements. Runs on the selected adapter (lavapipe in CI); never skips.

use arrow_array::{Array, ArrayRef, Int32Array};
use gpugraph_arrow::{
    mask_transfer, mask_transfer_bytes, upload_array_chunks, ChunkPlacement, MaskTransfer,
    UploadOptions, ValidityPolicy,
};
use gpugraph_command::GpuContext;
use gpugraph_testing::ctx;

/// A deterministic xorshift stream, so a failure names a reproducible row.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Chunks of `lens` rows, each sliced out of a longer array at an odd offset so its null
/// bitmap does not start on a byte; `density` nulls per 1,000 rows (0: no null buffer).
fn chunks(lens: &[usize], density: u64, rng: &mut Rng) -> Vec<ArrayRef> {
    lens.iter()
        .enumerate()
        .map(|(k, &n)| {
            let skip = 3 + 2 * k;
            let a: Int32Array = (0..n + skip)
                .map(|i| (rng.next() % 1000 >= density).then_some(i as i32))
                .collect();
            let a = a.slice(skip, n);
            if density == 0 {
                assert_eq!(a.null_count(), 0);
            }
            std::sync::Arc::new(a) as ArrayRef
        })
        .collect()
}

fn oracle(chunks: &[ArrayRef]) -> Vec<u32> {
    chunks
        .iter()
        .flat_map(|a| (0..a.len()).map(|i| u32::from(a.is_valid(i))))
        .collect()
}

fn masks(ctx: &GpuContext, chunks: &[ArrayRef], options: &UploadOptions) -> Vec<u32> {
    let arrays: Vec<&dyn Array> = chunks.iter().map(|a| a.as_ref()).collect();
    let col = upload_array_chunks(ctx, "x", arrays[0].data_type(), &arrays, options).unwrap();
    let lens: Vec<u64> = col.values.chunks().iter().map(|c| c.len()).collect();
    let expect: Vec<u64> = chunks.iter().map(|a| a.len() as u64).collect();
    assert_eq!(lens, expect, "chunk lengths");
    col.validity.expect("a mask").read_back::<u32>(ctx).unwrap()
}

fn first_difference(got: &[u32], expect: &[u32]) -> Option<usize> {
    (got.len() != expect.len())
        .then_some(got.len().min(expect.len()))
        .or_else(|| (0..got.len()).find(|&i| got[i] != expect[i]))
}

#[test]
fn bitmap_masks_expand_to_the_host_words_and_the_oracle() {
    let ctx = ctx();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let lens = [0, 1, 31, 32, 33, 63, 64, 65, 255, 256, 257, 100_003, 7];
    for density in [500, 3, 999] {
        let chunks = chunks(&lens, density, &mut rng);
        let expect = oracle(&chunks);
        for placement in [
            ChunkPlacement::BufferPerChunk,
            ChunkPlacement::SharedPerColumn,
        ] {
            for transfer in [MaskTransfer::Bitmap, MaskTransfer::Words] {
                let options = UploadOptions::default()
                    .with_placement(placement)
                    .with_mask_transfer(transfer);
                let got = masks(&ctx, &chunks, &options);
                if let Some(i) = first_difference(&got, &expect) {
                    panic!(
                        "density {density}, {placement:?}, {transfer:?}: row {i} is {:?} not {:?}",
                        got.get(i),
                        expect.get(i)
                    );
                }
            }
        }
    }
}

#[test]
fn columns_without_nulls_get_all_ones_from_the_bitmap_path() {
    let ctx = ctx();
    let mut rng = Rng(7);
    let chunks = chunks(&[40_000, 0, 513], 0, &mut rng);
    let options = UploadOptions::default()
        .with_validity(ValidityPolicy::Always)
        .with_mask_transfer(MaskTransfer::Bitmap);
    let got = masks(&ctx, &chunks, &options);
    assert_eq!(got.len(), 40_513);
    assert!(got.iter().all(|&w| w == 1), "every row valid");
}

#[test]
fn the_transfer_decision_and_its_bytes() {
    let ctx = ctx();
    let max = ctx.device.limits().max_storage_buffer_binding_size;
    assert_eq!(
        mask_transfer(&ctx.device, &[0, 1, 1 << 20], MaskTransfer::Bitmap),
        MaskTransfer::Bitmap
    );
    // A chunk whose mask cannot bind as one storage buffer goes as words.
    assert_eq!(
        mask_transfer(&ctx.device, &[1, max / 4 + 1], MaskTransfer::Bitmap),
        MaskTransfer::Words
    );
    assert_eq!(
        mask_transfer(&ctx.device, &[1], MaskTransfer::Words),
        MaskTransfer::Words
    );
    assert_eq!(mask_transfer_bytes(33, MaskTransfer::Bitmap), 8);
    assert_eq!(mask_transfer_bytes(33, MaskTransfer::Words), 132);
    assert_eq!(mask_transfer_bytes(0, MaskTransfer::Bitmap), 0);
}
