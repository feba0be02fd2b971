//! Kernel assets without a device: every variant of every built-in kernel parses, validates
//! and matches its bindings.yaml; storage-buffer counts stay within the spec's table; the
//! asset layer's refusals name what they refuse.

use gpugraph_procgen::asset::{AssetLibrary, KernelAsset, Specialization, BUILTIN, STORAGE_LIMIT};
use gpugraph_procgen::ProcgenError;

fn spec(pairs: &[(&str, &str)]) -> Specialization {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The spec's storage-buffer table (plain, device) for the kernels it lists.
const TABLE: &[(&str, usize, usize)] = &[
    ("procgen/gather", 3, 4),
    ("procgen/compact", 4, 5),
    ("procgen/scan", 4, 5),
    ("procgen/jump", 7, 8),
    ("procgen/expand", 5, 6),
    ("procgen/hash_gather", 6, 8),
    ("procgen/hash_hook", 6, 7),
];

/// Specialize keys whose `device` option reads one count word more than its `plain` one.
const COUNT_WORDS: &[(&str, &str)] = &[
    ("COUNT", "domain_count"),
    ("SEGMENTS", "segment_count"),
    ("ELEMENTS", "element_count"),
];

/// The storage buffers of the variants this crate adds beyond the spec's table (the table's
/// rule: a device variant binds one more than the plain one), per specialization.
/// (kernel, specialization pairs, storage buffers).
type Added = (&'static str, &'static [(&'static str, &'static str)], usize);

const ADDED: &[Added] = &[
    ("procgen/scan", &[("SEGMENTS", "none")], 3),
    ("procgen/scan", &[("SEGMENTS", "plain")], 4),
    ("procgen/scan", &[("SEGMENTS", "device")], 5),
    (
        "procgen/scan",
        &[("SEGMENTS", "device"), ("COUNT", "device")],
        6,
    ),
    ("procgen/reduce", &[("SEGMENTS", "plain")], 3),
    (
        "procgen/reduce",
        &[("SEGMENTS", "device"), ("COUNT", "device")],
        5,
    ),
    ("procgen/scatter", &[], 3),
    ("procgen/scatter", &[("COUNT", "device")], 4),
    ("procgen/expand", &[("ELEMENTS", "device")], 6),
    (
        "procgen/expand",
        &[("ELEMENTS", "device"), ("COUNT", "device")],
        7,
    ),
    (
        "procgen/expand",
        &[("ELEMENTS", "device"), ("COUNTS", "fixed")],
        5,
    ),
];

#[test]
fn added_variants_bind_what_their_design_states() {
    let lib = AssetLibrary::new();
    for (id, pairs, want) in ADDED {
        let v = lib
            .resolve(id, "computeShader")
            .unwrap()
            .variant(&spec(pairs))
            .unwrap();
        assert_eq!(v.storage_buffers, *want, "{id} [{}]", v.label);
    }
}

#[test]
fn every_builtin_variant_builds_within_the_binding_table() {
    let lib = AssetLibrary::new();
    for (id, _, _) in BUILTIN {
        let asset = lib.resolve(id, "computeShader").unwrap();
        for s in asset.all_specializations() {
            let v = asset.variant(&s).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(v.storage_buffers <= STORAGE_LIMIT, "{id} [{}]", v.label);
            // Each count word a device option reads is one binding more than its plain option.
            for (key, word) in COUNT_WORDS {
                if s.get(*key).map(String::as_str) == Some("device") {
                    let mut p = s.clone();
                    p.insert(key.to_string(), "plain".into());
                    let plain = asset.variant(&p).unwrap();
                    assert_eq!(v.storage_buffers, plain.storage_buffers + 1, "{id} {key}");
                    assert!(v.binding(word).is_some() && plain.binding(word).is_none());
                }
            }
            // The spec's table counts the variants it names: the SEGMENTS=device and
            // ELEMENTS=device ones are this crate's and bind their count word on top.
            let extra = ["SEGMENTS", "ELEMENTS"]
                .iter()
                .any(|k| s.get(*k).map(String::as_str) == Some("device"));
            if let Some((_, plain, device)) = TABLE.iter().find(|(t, _, _)| t == id && !extra) {
                let limit = if s.get("COUNT").map(String::as_str) == Some("device") {
                    *device
                } else {
                    *plain
                };
                assert!(
                    v.storage_buffers <= limit,
                    "{id} [{}] binds {} > {limit}",
                    v.label,
                    v.storage_buffers
                );
            }
            // A device variant binds exactly one more buffer than the plain one: domain_count.
            if s.get("COUNT").map(String::as_str) == Some("device") {
                let mut p = s.clone();
                p.insert("COUNT".into(), "plain".into());
                let plain = asset.variant(&p).unwrap();
                assert_eq!(v.storage_buffers, plain.storage_buffers + 1, "{id}");
                assert!(
                    v.binding("domain_count").is_some() && plain.binding("domain_count").is_none()
                );
                assert!(v.wgsl.contains("domain_count") && !plain.wgsl.contains("domain_count"));
            }
        }
    }
}

#[test]
fn identities_are_literal_and_names_are_refused() {
    let lib = AssetLibrary::new();
    for bad in [
        "gather",
        "",
        "procgen/",
        "/gather",
        "procgen/gather/x",
        "procgen/ga ther",
    ] {
        let e = lib.resolve(bad, "computeShader").unwrap_err();
        assert!(
            matches!(e, ProcgenError::NotAnIdentity { ref identity } if identity == bad),
            "{e}"
        );
    }
    let e = lib.resolve("procgen/gather", "texture").unwrap_err();
    assert!(
        matches!(e, ProcgenError::UnsupportedAssetKind { .. }),
        "{e}"
    );
    let e = lib.resolve("procgen/nothing", "computeShader").unwrap_err();
    assert!(matches!(e, ProcgenError::UnknownAsset { .. }), "{e}");
    assert!(e.to_string().contains("procgen/nothing"));
}

const ONE: &str = "
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) { if g.x < params.n { b[g.x] = a[g.x]; } }
";

const ONE_YAML: &str = "
params: [{ name: n, type: u32 }]
bindings:
  - { name: a, access: read, element: f32 }
  - { name: b, access: write, element: f32, count: domain }
";

#[test]
fn schema_and_wgsl_disagreements_are_refused_by_name() {
    KernelAsset::new("t/one", ONE, ONE_YAML)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap();
    // Access: the WGSL reads b, the schema says it writes it... here the other way round.
    let y = ONE_YAML.replace("name: a, access: read", "name: a, access: write");
    let e = KernelAsset::new("t/one", ONE, &y)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::SchemaMismatch { ref name, .. } if name == "a"),
        "{e}"
    );
    // Element word.
    let y = ONE_YAML.replace(
        "name: a, access: read, element: f32",
        "name: a, access: read, element: i32",
    );
    let e = KernelAsset::new("t/one", ONE, &y)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::SchemaMismatch { ref name, .. } if name == "a"),
        "{e}"
    );
    // A param the struct does not have.
    let y = ONE_YAML.replace(
        "[{ name: n, type: u32 }]",
        "[{ name: n, type: u32 }, { name: k, type: f32 }]",
    );
    let e = KernelAsset::new("t/one", ONE, &y)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::SchemaMismatch { ref name, .. } if name == "params"),
        "{e}"
    );
    // A WGSL binding the schema does not declare.
    let y = ONE_YAML.replace("  - { name: a, access: read, element: f32 }\n", "");
    let e = KernelAsset::new("t/one", ONE, &y)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::SchemaMismatch { ref name, .. } if name == "a"),
        "{e}"
    );
    // YAML that is not the schema.
    let e = KernelAsset::new("t/one", ONE, "bindings: 3").unwrap_err();
    assert!(matches!(e, ProcgenError::Schema { .. }), "{e}");
    let e = KernelAsset::new("t/one", ONE, &format!("{ONE_YAML}\nextra: 1")).unwrap_err();
    assert!(matches!(e, ProcgenError::Schema { .. }), "{e}");
    // A when over a key no specialize declares.
    let y = format!(
        "{ONE_YAML}  - {{ name: c, access: read, element: f32, when: \"COUNT=device\" }}\n"
    );
    let e = KernelAsset::new("t/one", ONE, &y).unwrap_err();
    assert!(
        matches!(e, ProcgenError::SchemaField { ref name, .. } if name == "c"),
        "{e}"
    );
    // A name declared twice where one specialization holds both is refused; where the `when`s
    // are disjoint it is one binding per variant.
    let twice = format!(
        "specialize: [{{ name: S, options: [x, y] }}]\n{}  - {{ name: b, access: write, element: f32, count: 2, when: \"S=y\" }}\n",
        ONE_YAML
    );
    let e = KernelAsset::new("t/one", ONE, &twice).unwrap_err();
    assert!(
        matches!(e, ProcgenError::SchemaField { ref name, .. } if name == "b"),
        "{e}"
    );
    let disjoint = twice.replace(
        "name: b, access: write, element: f32, count: domain }",
        "name: b, access: write, element: f32, count: domain, when: \"S=x\" }",
    );
    let a = KernelAsset::new("t/one", ONE, &disjoint).unwrap();
    let y = a.variant(&spec(&[("S", "y")])).unwrap();
    assert_eq!(
        y.binding("b").unwrap().decl.count,
        Some(gpugraph_procgen::asset::Size::Number(2))
    );
    // Invalid WGSL names the variant.
    let e = KernelAsset::new("t/one", "fn main( {", ONE_YAML)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap_err();
    assert!(matches!(e, ProcgenError::Wgsl { .. }), "{e}");
    // A module without the declared entry point is one line naming it and what is there
    // (issue 52: it was wgpu's validation dump at the first dispatch).
    for (wgsl, has) in [
        (ONE.replace("fn main(", "fn run("), "the WGSL has `run`"),
        (
            ONE.split("@compute").next().unwrap().to_string()
                + "fn helper(i: u32) { b[i] = a[i] * f32(params.n); }",
            "the WGSL has none",
        ),
    ] {
        let e = KernelAsset::new("t/one", &wgsl, ONE_YAML)
            .unwrap()
            .variant(&spec(&[]))
            .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ProcgenError::Wgsl { .. }), "{text}");
        assert!(text.contains("no compute entry point `main`"), "{text}");
        assert!(text.contains(has), "{text}");
        assert!(!text.contains('\n'), "{text}");
    }
}

#[test]
fn specialize_values_are_checked() {
    let lib = AssetLibrary::new();
    let jump = lib.resolve("procgen/jump", "computeShader").unwrap();
    let e = jump.variant(&spec(&[("OP", "max")])).unwrap_err();
    assert!(
        matches!(e, ProcgenError::SpecializeOption { ref value, .. } if value == "max"),
        "{e}"
    );
    let e = jump.variant(&spec(&[("MODE", "x")])).unwrap_err();
    assert!(
        matches!(e, ProcgenError::UnknownSpecialize { ref name, .. } if name == "MODE"),
        "{e}"
    );
    let v = jump.variant(&spec(&[("OP", "min")])).unwrap();
    assert!(v.wgsl.contains("min(value[i]") && !v.wgsl.contains("value[i] + value"));
}

/// Nine storage buffers in one variant: refused with the count and the limit.
#[test]
fn more_than_eight_storage_buffers_are_refused() {
    let mut wgsl = String::from(
        "struct Params { n: u32 }\n@group(0) @binding(0) var<uniform> params: Params;\n",
    );
    let mut yaml = String::from("params: [{ name: n, type: u32 }]\nbindings:\n");
    for i in 0..9 {
        wgsl.push_str(&format!(
            "@group(0) @binding({}) var<storage, read> b{i}: array<f32>;\n",
            i + 1
        ));
        yaml.push_str(&format!(
            "  - {{ name: b{i}, access: read, element: f32 }}\n"
        ));
    }
    wgsl.push_str("@compute @workgroup_size(1) fn main() { _ = params.n;");
    for i in 0..9 {
        wgsl.push_str(&format!(" _ = b{i}[0];"));
    }
    wgsl.push_str(" }\n");
    let e = KernelAsset::new("t/nine", &wgsl, &yaml)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            ProcgenError::StorageLimit {
                count: 9,
                limit: 8,
                ..
            }
        ),
        "{e}"
    );
    // Eight is within the limit.
    let yaml8 = yaml.replace("  - { name: b8, access: read, element: f32 }\n", "");
    let wgsl8 = wgsl
        .replace(
            "@group(0) @binding(9) var<storage, read> b8: array<f32>;\n",
            "",
        )
        .replace(" _ = b8[0];", "");
    KernelAsset::new("t/eight", &wgsl8, &yaml8)
        .unwrap()
        .variant(&spec(&[]))
        .unwrap();
}
