// Region picking: every pixel of the region whose (object, batch) texel is not NONE appends
// one pair through an atomic counter; pairs past the capacity are counted, not written, and
// raise the overflow flag. Append order is unspecified; duplicates are kept.

const NONE: u32 = 0xffffffffu;

struct Params {
    max_width: u32,
    max_height: u32,
    capacity: u32,
    objects_offset: u32,
    batches_offset: u32,
    count_offset: u32,
    overflow_offset: u32,
    pad: u32,
}

struct Region {
    x: u32,
    y: u32,
    width: u32,
    height: u32,
}

@group(0) @binding(0) var ids: texture_2d<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<uniform> region: Region;
@group(0) @binding(3) var<storage, read_write> objects: array<u32>;
@group(0) @binding(4) var<storage, read_write> batches: array<u32>;
@group(0) @binding(5) var<storage, read_write> count: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> overflow: array<atomic<u32>>;

@compute @workgroup_size(1)
fn reset() {
    atomicStore(&count[params.count_offset], 0u);
    atomicStore(&overflow[params.overflow_offset], 0u);
}

@compute @workgroup_size(8, 8)
fn collect(@builtin(global_invocation_id) g: vec3<u32>) {
    let dims = textureDimensions(ids);
    let width = min(region.width, params.max_width);
    let height = min(region.height, params.max_height);
    // Compared as differences: region.x + g.x could wrap.
    if g.x >= width || g.y >= height || region.x >= dims.x || region.y >= dims.y
        || g.x >= dims.x - region.x || g.y >= dims.y - region.y {
        return;
    }
    let texel = textureLoad(ids, vec2<u32>(region.x + g.x, region.y + g.y), 0);
    if texel.x == NONE {
        return;
    }
    let slot = atomicAdd(&count[params.count_offset], 1u);
    if slot < params.capacity {
        objects[params.objects_offset + slot] = texel.x;
        batches[params.batches_offset + slot] = texel.y;
    } else {
        atomicStore(&overflow[params.overflow_offset], 1u);
    }
}
