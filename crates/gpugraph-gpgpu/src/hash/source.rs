//! The hash kernels' shader recipes and their `#[repr(C)]` parameter blocks (checked against
//! the WGSL structs by naga in the tests below).

use bytemuck::{Pod, Zeroable};

use super::policy::{HashPolicy, Probing};
use crate::kernel::{shader, ShaderSource};

/// Parameters of `hash/build.wgsl` (`clear` and `insert_rows`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct BuildParams {
    pub rows: u32,
    pub key_offset: u32,
    pub row_base: u32,
    pub valid_offset: u32,
    pub live_offset: u32,
    pub capacity: u32,
    pub slot_key_offset: u32,
    pub slot_row_offset: u32,
    pub stats_offset: u32,
    pub pad0: u32,
    pub pad1: u32,
    pub pad2: u32,
}

/// Parameters of `hash/query.wgsl` (`query_clear` and `lookup`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct QueryParams {
    pub rows: u32,
    pub key_offset: u32,
    pub valid_offset: u32,
    pub live_offset: u32,
    pub capacity: u32,
    pub slot_key_offset: u32,
    pub slot_row_offset: u32,
    pub table_stats_offset: u32,
    pub out_offset: u32,
    pub stats_offset: u32,
    pub flags_offset: u32,
    pub ids_offset: u32,
}

/// Parameters of `hash/gather.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct GatherParams {
    pub capacity: u32,
    pub count_offset: u32,
    pub index_offset: u32,
    pub source_offset: u32,
    pub output_offset: u32,
    pub valid_offset: u32,
    pub source_valid_offset: u32,
    pub source_rows: u32,
}

fn base(file: &'static str, policy: &HashPolicy, probing: Probing) -> ShaderSource {
    shader(file)
        .comment(format!("hash {policy:?}"))
        .u32("WG_SIZE", policy.workgroup_size)
        .u32("ROWS_PER_THREAD", policy.rows_per_thread)
        .bool("PROBE_TRIANGULAR", probing == Probing::Triangular)
}

/// The build shader: `clear` when `clear`, else `insert_rows` with optional validity flags
/// and live count.
pub(crate) fn build_source(
    policy: &HashPolicy,
    probing: Probing,
    clear: bool,
    valid: bool,
    live: bool,
) -> ShaderSource {
    base("hash/build.wgsl", policy, probing)
        .define_if(clear, "CLEAR")
        .define_if(valid, "VALID")
        .define_if(live, "LIVE")
}

/// The query shader: `query_clear` when `clear`, else `lookup` (with the join's flags and
/// ids when `join`).
pub(crate) fn query_source(
    policy: &HashPolicy,
    probing: Probing,
    clear: bool,
    join: bool,
    valid: bool,
    live: bool,
) -> ShaderSource {
    base("hash/query.wgsl", policy, probing)
        .define_if(clear, "CLEAR")
        .define_if(join, "JOIN")
        .define_if(valid, "VALID")
        .define_if(live, "LIVE")
}

/// The gather shader for rows of `width` u32 words.
pub(crate) fn gather_source(
    workgroup_size: u32,
    width: u32,
    count: bool,
    valid_out: bool,
    source_valid: bool,
) -> ShaderSource {
    shader("hash/gather.wgsl")
        .u32("WG_SIZE", workgroup_size)
        .u32("WIDTH", width)
        .define_if(count, "COUNT")
        .define_if(valid_out, "VALID_OUT")
        .define_if(source_valid, "SOURCE_VALID")
}

/// `recipe` labelled `key` (assembled when its node compiles).
pub(crate) fn keyed(key: &str, recipe: &ShaderSource) -> ShaderSource {
    recipe.clone().keyed(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel;

    #[test]
    fn every_variant_validates_and_params_match_the_shaders() {
        let p = HashPolicy::DEFAULT;
        for probing in [Probing::Linear, Probing::Triangular] {
            for (clear, valid, live) in [
                (true, false, false),
                (false, false, false),
                (false, true, true),
            ] {
                let s = build_source(&p, probing, clear, valid, live).build();
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
                let members = kernel::field_offsets!(BuildParams; rows, key_offset, row_base,
                    valid_offset, live_offset, capacity, slot_key_offset, slot_row_offset,
                    stats_offset, pad0, pad1, pad2);
                let size = Some(std::mem::size_of::<BuildParams>());
                kernel::assert_struct_layout(&s, "Params", size, &members);
            }
            for (clear, join, valid, live) in [
                (true, false, false, false),
                (false, false, false, false),
                (false, true, true, true),
            ] {
                let s = query_source(&p, probing, clear, join, valid, live).build();
                kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
                let members = kernel::field_offsets!(QueryParams; rows, key_offset,
                    valid_offset, live_offset, capacity, slot_key_offset, slot_row_offset,
                    table_stats_offset, out_offset, stats_offset, flags_offset, ids_offset);
                let size = Some(std::mem::size_of::<QueryParams>());
                kernel::assert_struct_layout(&s, "Params", size, &members);
            }
        }
        for (count, valid_out, source_valid) in [(false, false, false), (true, true, true)] {
            let s = gather_source(256, 2, count, valid_out, source_valid).build();
            kernel::validate_wgsl(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
            let members = kernel::field_offsets!(GatherParams; capacity, count_offset,
                index_offset, source_offset, output_offset, valid_offset, source_valid_offset,
                source_rows);
            let size = Some(std::mem::size_of::<GatherParams>());
            kernel::assert_struct_layout(&s, "Params", size, &members);
        }
    }
}
