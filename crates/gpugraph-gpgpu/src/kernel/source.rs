//! The crate's WGSL registry: every kernel file and shared core under `src/`, named by its
//! path, for [`gpugraph_command::ShaderSource`] recipes (the one assembly path, in
//! `gpugraph-command`). `shared/dispatch.wgsl` lives there, in [`gpugraph_command::shader::SHARED`].

use gpugraph_command::{ShaderRegistry, ShaderSource};

/// `[(name, text)]` of WGSL files under `src/`, by path.
macro_rules! registry {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../", $name)))),*]
    };
}

/// Every WGSL file a recipe of this crate may name or include, by its path under `src/`.
pub static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-gpgpu",
    registry![
        "shared/tile_status.wgsl",
        "shared/chained_lookback.wgsl",
        "shared/tree_reduce.wgsl",
        "shared/row_driver.wgsl",
        "shared/workgroup_scan.wgsl",
        "shared/chained_scan.wgsl",
        "shared/chained_scan_ticket.wgsl",
        "shared/chained_scan_tile.wgsl",
        "shared/chained_scan_carry.wgsl",
        "compact/compact.wgsl",
        "scan/scan.wgsl",
        "mask/mask.wgsl",
        "mask/mask_vec4.wgsl",
        "mask/combine.wgsl",
        "reduce/reduce.wgsl",
        "keyed/keyed.wgsl",
        "keyed/keyed_finalize.wgsl",
        "keyed/fixed_point.wgsl",
        "group/code_key.wgsl",
        "histogram/histogram.wgsl",
        "histogram/validate_edges.wgsl",
        "grid/grid.wgsl",
        "compact/distribute.wgsl",
        "compact/expand.wgsl",
        "compact/partition_totals.wgsl",
        "compact/range.wgsl",
        "compact/range_finish.wgsl",
        "compact/range_lengths.wgsl",
        "compact/zero.wgsl",
        "hash/hash.wgsl",
        "hash/stats.wgsl",
        "hash/build.wgsl",
        "hash/rows.wgsl",
        "hash/query.wgsl",
        "hash/gather.wgsl",
        "spatial/common.wgsl",
        "spatial/clear.wgsl",
        "spatial/grid_build.wgsl",
        "spatial/grid_query.wgsl",
        "spatial/batch_query.wgsl",
        "spatial/filter.wgsl",
        "spatial/bvh_build.wgsl",
        "spatial/bvh_query.wgsl",
        "spatial/segmented_bvh.wgsl",
        "fft/fft.wgsl",
        "topology/traversal.wgsl",
        "topology/ancestor.wgsl",
        "topology/hierarchy.wgsl",
        "topology/virtual_geometry.wgsl",
        "sparse/common.wgsl",
        "sparse/spmv.wgsl",
        "sparse/dot.wgsl",
        "sparse/pcg.wgsl",
        "sort/radix_common.wgsl",
        "sort/radix_histogram.wgsl",
        "sort/radix_pass.wgsl",
        "sort/radix_lookback.wgsl",
        "sort/local.wgsl",
        "sort/classify.wgsl",
        "sort/keys.wgsl",
    ],
);

/// The recipe of registry file `path` (e.g. `"reduce/reduce.wgsl"`), keyed by its path
/// without `.wgsl`, with loop unrolling on.
pub fn shader(path: &'static str) -> ShaderSource {
    ShaderSource::from_registry(&WGSL, path)
}

/// The registry file `name` (this crate's or the shared dispatch helper), if any.
pub fn registry_file(name: &str) -> Option<&'static str> {
    WGSL.file(name)
        .or_else(|| gpugraph_command::shader::SHARED.file(name))
}

/// Testing: parses and validates `source` with naga (all capabilities), the compile check every
/// generated variant gets without a device. The error is naga's annotated report.
#[cfg(test)]
pub(crate) fn validate_wgsl(source: &str) -> Result<(), String> {
    gpugraph_command::shader::reflect::validate(source).map_err(|e| e.to_string())
}

/// Testing: asserts that struct `name` of `wgsl` has `size` bytes (`None`: ends in a runtime
/// array, so only the members are compared) and the `members` at the given byte offsets, in
/// order.
#[cfg(test)]
pub(crate) fn assert_struct_layout(
    wgsl: &str,
    name: &str,
    size: Option<usize>,
    members: &[(&str, usize)],
) {
    let layout = gpugraph_command::shader::reflect::struct_layout(wgsl, name)
        .unwrap_or_else(|e| panic!("{e}"));
    if let Some(size) = size {
        assert_eq!(layout.size as usize, size, "size of {name}");
    }
    let got: Vec<(&str, usize)> = layout
        .members
        .iter()
        .map(|(n, o)| (n.as_str(), *o as usize))
        .collect();
    assert_eq!(got, members, "members of {name}");
}

/// Testing: `[(field name, byte offset)]` of the listed fields of a `#[repr(C)]` struct, for
/// [`assert_struct_layout`].
#[cfg(test)]
macro_rules! field_offsets {
    ($t:ty; $($f:ident),* $(,)?) => {
        vec![$((stringify!($f), std::mem::offset_of!($t, $f))),*]
    };
}
#[cfg(test)]
pub(crate) use field_offsets;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every WGSL file of the crate can be named.
    #[test]
    fn the_registry_holds_every_wgsl_file() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut missing = Vec::new();
        for dir in std::fs::read_dir(&src).unwrap() {
            let dir = dir.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&dir).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "wgsl") {
                    let name = path
                        .strip_prefix(&src)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    if WGSL.file(&name).is_none() {
                        missing.push(name);
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not in the registry: {missing:?}");
    }

    #[test]
    fn kernels_include_the_shared_dispatch_helper_once() {
        let s = shader("mask/mask.wgsl")
            .comment("test")
            .u32("INPUTS_END", 4)
            .build();
        assert!(
            s.starts_with("// test\nconst INPUTS_END: u32 = 4u;\n\n"),
            "{s}"
        );
        assert_eq!(s.matches("fn linear_workgroup").count(), 1);
        assert!(!s.contains("#include"));
    }
}
