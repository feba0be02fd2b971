//! Shared helpers of the GPU tests: a real adapter (lavapipe in CI; none is a failure, never a
//! skip), poisoned outputs, word readback.
#![allow(dead_code)]
// Each test binary uses a part of the re-exported scaffolding.
#![allow(unused_imports)]

use std::collections::BTreeMap;

use gpugraph_command::GpuContext;
use gpugraph_procgen::{
    AssetLibrary, BindValue, Column, ColumnType, Cook, Domain, KernelCall, KernelOutputs,
    KernelRef, LiveCount, Recording,
};

pub use gpugraph_testing::{ctx, POISON};

pub fn kernel(id: &str) -> KernelRef {
    KernelRef::Asset(AssetLibrary::new().resolve(id, "computeShader").unwrap())
}

pub fn cook(ctx: &GpuContext) -> Cook {
    let mut c = Cook::new(ctx, "test");
    c.set_poison(Some(POISON));
    c
}

pub fn run(cook: Cook) -> Recording {
    let mut r = cook.finish().unwrap();
    r.run().unwrap();
    r
}

pub fn words(rec: &Recording, c: &Column) -> Vec<u32> {
    rec.read_words(&c.buffer, c.words()).unwrap()
}

pub fn ints(rec: &Recording, c: &Column) -> Vec<i32> {
    words(rec, c).into_iter().map(|w| w as i32).collect()
}

pub fn floats(rec: &Recording, c: &Column) -> Vec<f32> {
    words(rec, c).into_iter().map(f32::from_bits).collect()
}

pub fn count(rec: &Recording, l: &LiveCount) -> u32 {
    rec.read_words(&l.word, 1).unwrap()[0]
}

pub fn upload_i32(cook: &mut Cook, v: &[i32]) -> Column {
    let w: Vec<u32> = v.iter().map(|&x| x as u32).collect();
    cook.upload_words("i32", ColumnType::Int, &w)
}

pub fn upload_u32(cook: &mut Cook, v: &[u32]) -> Column {
    cook.upload_words("u32", ColumnType::UInt, v)
}

pub fn upload_f32(cook: &mut Cook, v: &[f32]) -> Column {
    let w: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
    cook.upload_words("f32", ColumnType::Float, &w)
}

pub fn upload_vec3(cook: &mut Cook, v: &[[f32; 3]]) -> Column {
    let w: Vec<u32> = v.iter().flatten().map(|x| x.to_bits()).collect();
    cook.upload_words("vec3", ColumnType::Vec3, &w)
}

/// A live count of `live` with room `capacity`.
pub fn live(cook: &mut Cook, live: u32, capacity: u64) -> LiveCount {
    LiveCount {
        word: cook.upload_count("live", live).buffer,
        capacity,
    }
}

/// The sizes every kernel test runs: empty, one, around a 64-slot workgroup, a few tiles.
pub const SIZES: &[usize] = &[0, 1, 63, 64, 65, 257, 300];

/// Live counts to try within `n`: none, one, half, all.
pub fn lives(n: usize) -> Vec<usize> {
    let mut v = vec![0, n.min(1), n / 2, n];
    v.dedup();
    v
}

/// A call's bindings by name.
pub fn bind(pairs: Vec<(&str, BindValue)>) -> BTreeMap<String, BindValue> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The built-in kernel `id` called twice with `call`: its plain variant over the number
/// `live_n`, and its COUNT=device variant over a live count of `live_n` in `capacity` slots.
/// Returns (plain, device, that live count) for further calls over the same count.
pub fn plain_and_device(
    cook: &mut Cook,
    id: &str,
    call: &KernelCall,
    live_n: usize,
    capacity: usize,
) -> (KernelOutputs, KernelOutputs, LiveCount) {
    let k = kernel(id);
    let plain = cook
        .kernel(&k, Domain::Number(live_n as u64), call)
        .unwrap();
    let lc = live(cook, live_n as u32, capacity as u64);
    let dev = cook.kernel(&k, Domain::Live(lc.clone()), call).unwrap();
    (plain, dev, lc)
}
