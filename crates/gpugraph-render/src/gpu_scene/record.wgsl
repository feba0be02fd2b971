// The GPUScene record (`record.rs` states the layout; a test checks this struct against it),
// shared by the scene kernels, which read records as `array<u32>` words.

const RECORD_WORDS: u32 = 32u;
const ACTIVE_FLAG: u32 = 1u;
const INVALID_REFERENCE: u32 = 0xffffffffu;
const OBJECT_ID_WORD: u32 = 0u;
const FLAGS_WORD: u32 = 1u;
const GROUP_WORD: u32 = 2u;
const GEOMETRY_WORD: u32 = 3u;
const COMMAND_SLOT_WORD: u32 = 11u;

struct SceneRecord {
    object_id: u32,
    flags: u32,
    group_id: u32,
    geometry_id: u32,
    sphere: vec4<f32>,
    aabb_min: vec3<f32>,
    command_slot: u32,
    aabb_max: vec3<f32>,
    reserved: u32,
    transform: mat4x4<f32>,
}

// Word index of `field_word` of record `row` in a binding whose record 0 starts at `base`.
fn record_word(base: u32, row: u32, field_word: u32) -> u32 {
    return base + row * RECORD_WORDS + field_word;
}

// The linear row of a `Grid::Rows` dispatch (x·y split past the per-dimension limit).
fn linear_row(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, size: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * size + lid;
}
