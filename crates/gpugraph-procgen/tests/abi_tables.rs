//! Rules of `shared/spec/procgen-abi.txt` about tables, checked without a device: the ops
//! table (where each op runs) and the storage-buffer table against the reflected WGSL of every
//! built-in kernel variant.

use gpugraph_procgen::asset::{AssetLibrary, BUILTIN, STORAGE_LIMIT};
use gpugraph_procgen::op::{Op, Runs};

#[test]
fn ops_state_where_they_run() {
    let table: Vec<(&str, &str)> = Op::ALL
        .iter()
        .map(|o| (o.name(), o.runs().name()))
        .collect();
    assert_eq!(
        table,
        [
            ("device.kernel", "gpu"),
            ("transfer.upload", "cpu_to_gpu"),
            ("transfer.readback", "gpu_to_cpu"),
            ("cpu.call", "cpu"),
            ("cpu.read", "cpu"),
            ("device.bound", "gpu"),
            ("device.live", "gpu"),
            ("device.guard", "gpu"),
        ]
    );
    for o in Op::ALL {
        assert_eq!(Op::from_name(o.name()), Some(o));
    }
    assert_eq!(Op::from_name("device.dispatch"), None);
    assert_eq!(Op::DeviceKernel.runs(), Runs::Gpu);
}

/// The spec's storage-buffer table for the kernels it names that are built, against this
/// crate's: (kernel, spec plain, spec device, plain, device). The counts are of the variant
/// whose other specialize keys take their first option (scan SEGMENTS=none, jump OP=rank,
/// expand COUNTS=column ELEMENTS=plain). gather, compact and expand bind what the table states;
/// scan (no group-totals buffer), jump (no scratch buffers), hash_gather's device variant and
/// hash_hook (hook only: no MATCH or find stage) bind fewer, which the table's limit allows.
const TABLE: &[(&str, usize, usize, usize, usize)] = &[
    ("procgen/gather", 3, 4, 3, 4),
    ("procgen/compact", 4, 5, 4, 5),
    ("procgen/scan", 4, 5, 3, 4),
    ("procgen/jump", 7, 8, 4, 5),
    ("procgen/expand", 5, 6, 5, 6),
    ("procgen/hash_gather", 6, 8, 6, 7),
    ("procgen/hash_hook", 6, 7, 3, 4),
];

/// Storage buffers a variant's WGSL declares, reflected by naga.
fn reflected_storage(wgsl: &str) -> usize {
    let module = naga::front::wgsl::parse_str(wgsl).unwrap();
    module
        .global_variables
        .iter()
        .filter(|(_, g)| {
            g.binding.is_some() && matches!(g.space, naga::AddressSpace::Storage { .. })
        })
        .count()
}

/// Every built-in variant's storage buffers, counted from its reflected WGSL: the count the
/// asset states, at most 8; for the kernels the spec's table names, exactly this crate's
/// column of [`TABLE`] (COUNT=device one more than plain) and never more than the spec's.
#[test]
fn the_storage_table_matches_the_reflected_wgsl() {
    let lib = AssetLibrary::new();
    let mut problems = Vec::new();
    for (id, _, _) in BUILTIN {
        let asset = lib.resolve(id, "computeShader").unwrap();
        let row = TABLE.iter().find(|t| t.0 == *id);
        for s in asset.all_specializations() {
            let v = asset.variant(&s).unwrap();
            let n = reflected_storage(&v.wgsl);
            if n != v.storage_buffers || n > STORAGE_LIMIT {
                problems.push(format!(
                    "{id} [{}]: WGSL {n}, asset {}",
                    v.label, v.storage_buffers
                ));
            }
            let Some(&(_, spec_plain, spec_device, plain, device)) = row else {
                continue;
            };
            // The SEGMENTS=device and ELEMENTS=device variants are this crate's, not the table's.
            if ["SEGMENTS", "ELEMENTS"]
                .iter()
                .any(|k| s.get(*k).map(String::as_str) == Some("device"))
            {
                continue;
            }
            let dev = s.get("COUNT").map(String::as_str) == Some("device");
            let (spec_n, ours) = if dev {
                (spec_device, device)
            } else {
                (spec_plain, plain)
            };
            if n > spec_n {
                problems.push(format!("{id} [{}]: {n} > the table's {spec_n}", v.label));
            }
            let first = asset
                .schema
                .specialize
                .iter()
                .all(|p| p.name == "COUNT" || s.get(&p.name) == p.options.first());
            if first && n != ours {
                problems.push(format!("{id} [{}]: {n}, expected {ours}", v.label));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A kernel with a columns binding, in a plain and a COUNT=device variant.
const COLUMNS_WGSL: &str = "
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> cols: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// @when COUNT device
@group(0) @binding(3) var<storage, read> domain_count: array<u32>;
// @end
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x >= params.n { return; }
    out[g.x] = cols[g.x];
}
";

const COLUMNS_YAML: &str = "specialize:
  - { name: COUNT, options: [plain, device] }
params:
  - { name: n, type: u32 }
bindings:
  - { name: cols, kind: columns, access: read, element: f32 }
  - { name: out, access: write, element: f32, count: domain }
  - { name: domain_count, access: read, element: u32, when: \"COUNT=device\" }
";

/// `abi.directLimit` counts every buffer binding the schema declares, `domain_count` included:
/// for every built-in variant it is the stage's 8 less the storage buffers its reflected WGSL
/// binds, a COUNT=device variant has one direct column fewer than its plain one, and so does a
/// kernel with a columns binding that adopts the live-count form.
#[test]
fn direct_limit_counts_every_buffer_binding_domain_count_included() {
    let lib = AssetLibrary::new();
    let mut checked = 0;
    for (id, _, _) in BUILTIN {
        let asset = lib.resolve(id, "computeShader").unwrap();
        for s in asset.all_specializations() {
            let v = asset.variant(&s).unwrap();
            assert_eq!(
                v.direct_limit(),
                STORAGE_LIMIT - reflected_storage(&v.wgsl),
                "{id} [{}]",
                v.label
            );
            if s.get("COUNT").map(String::as_str) == Some("device") {
                let mut plain = s.clone();
                plain.insert("COUNT".into(), "plain".into());
                let p = asset.variant(&plain).unwrap();
                assert_eq!(p.direct_limit(), v.direct_limit() + 1, "{id} [{}]", v.label);
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked} device variants checked");
    let asset =
        gpugraph_procgen::KernelAsset::new("t/columns", COLUMNS_WGSL, COLUMNS_YAML).unwrap();
    let variant = |count: &str| {
        asset
            .variant(&[("COUNT".to_string(), count.to_string())].into())
            .unwrap()
    };
    // cols (one packed buffer) and out: 8 - 2; domain_count takes one more.
    assert_eq!(variant("plain").direct_limit(), 6);
    assert_eq!(variant("device").direct_limit(), 5);
}
