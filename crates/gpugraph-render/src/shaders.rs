//! The crate's WGSL registry: every shader file under `src/`, named by its path, for
//! [`ShaderSource`] recipes (the one assembly path, `gpugraph-command`'s `shader/`), compute
//! and render alike: the GPUScene kernels `#include "gpu_scene/record.wgsl"` (and
//! `gpu_scene/group_classify.wgsl`) instead of being concatenated with them.

use gpugraph_command::{ShaderRegistry, ShaderSource};

/// Every WGSL file of the crate, by its path under `src/`.
pub static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-render",
    &[
        ("batches.wgsl", include_str!("batches.wgsl")),
        ("cubes.wgsl", include_str!("cubes.wgsl")),
        (
            "gpu_scene/draw_generation.wgsl",
            include_str!("gpu_scene/draw_generation.wgsl"),
        ),
        (
            "gpu_scene/frame_draw.wgsl",
            include_str!("gpu_scene/frame_draw.wgsl"),
        ),
        (
            "gpu_scene/group_classify.wgsl",
            include_str!("gpu_scene/group_classify.wgsl"),
        ),
        (
            "gpu_scene/record.wgsl",
            include_str!("gpu_scene/record.wgsl"),
        ),
        (
            "gpu_scene/resource_groups.wgsl",
            include_str!("gpu_scene/resource_groups.wgsl"),
        ),
        ("gpu_scene/table.wgsl", include_str!("gpu_scene/table.wgsl")),
        (
            "gpu_scene/upload.wgsl",
            include_str!("gpu_scene/upload.wgsl"),
        ),
        (
            "gpu_scene/visibility.wgsl",
            include_str!("gpu_scene/visibility.wgsl"),
        ),
        ("picking/region.wgsl", include_str!("picking/region.wgsl")),
        ("visibility/cull.wgsl", include_str!("visibility/cull.wgsl")),
    ],
);

/// The recipe of registry file `path` under key `key` ("render/gpu_scene/visibility").
pub(crate) fn shader(key: &str, path: &'static str) -> ShaderSource {
    ShaderSource::from_registry(&WGSL, path).keyed(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every WGSL file of the crate can be named, and each assembles into text naga accepts.
    #[test]
    fn the_registry_holds_every_wgsl_file_and_each_assembles() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut missing = Vec::new();
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "wgsl") {
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
        // The classifier is a fragment: its includer declares `params` and the bindings.
        for path in WGSL
            .paths()
            .filter(|p| *p != "gpu_scene/group_classify.wgsl")
        {
            let text = shader("t", path).build();
            assert!(
                !text.lines().any(|l| l.trim_start().starts_with("#include")),
                "{path}"
            );
            naga::front::wgsl::parse_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }
}
