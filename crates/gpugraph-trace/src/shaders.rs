//! The crate's WGSL registry: every kernel file under `src/`, named by its path, for
//! [`ShaderSource`] recipes (the one assembly path, `gpugraph-command`'s `shader/`). Kernels
//! `#include "common.wgsl"`; a draw outside the crate that reads the LOD bitmap adds this
//! registry to its recipe and includes `lod/params.wgsl`.

use gpugraph_command::{ShaderRegistry, ShaderSource};

/// Every WGSL file of the crate, by its path under `src/`.
pub static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-trace",
    &[
        ("common.wgsl", include_str!("common.wgsl")),
        ("csr/csr.wgsl", include_str!("csr/csr.wgsl")),
        ("frame/params.wgsl", include_str!("frame/params.wgsl")),
        ("frame/frame.wgsl", include_str!("frame/frame.wgsl")),
        ("frame/blocks.wgsl", include_str!("frame/blocks.wgsl")),
        (
            "frame/candidates.wgsl",
            include_str!("frame/candidates.wgsl"),
        ),
        ("frame/draw.wgsl", include_str!("frame/draw.wgsl")),
        ("lod/params.wgsl", include_str!("lod/params.wgsl")),
        ("lod/lod.wgsl", include_str!("lod/lod.wgsl")),
        ("scene/scene.wgsl", include_str!("scene/scene.wgsl")),
        ("stats/stats.wgsl", include_str!("stats/stats.wgsl")),
    ],
);

/// The recipe of registry file `path` under key `key` ("trace/stats").
pub(crate) fn shader(key: &str, path: &'static str) -> ShaderSource {
    ShaderSource::from_registry(&WGSL, path).keyed(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every WGSL file of the crate can be named, and every recipe of the crate assembles
    /// into text naga accepts.
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
        for path in [
            "csr/csr.wgsl",
            "frame/draw.wgsl",
            "lod/lod.wgsl",
            "scene/scene.wgsl",
            "stats/stats.wgsl",
        ] {
            let text = shader("t", path).build();
            assert!(
                !text.lines().any(|l| l.trim_start().starts_with("#include")),
                "{path}"
            );
            naga::front::wgsl::parse_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }
}
