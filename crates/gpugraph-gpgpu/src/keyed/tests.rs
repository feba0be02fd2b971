//! Unit tests of the keyed engine: layouts, shapes, and its kernels against naga.
use super::layout::*;
use super::*;

#[test]
fn layouts_pack_only_the_needed_statistics() {
    let l = Layout::from_flags(false, false, false, true, true, false);
    assert_eq!(
        (l.count_at, l.sum_at, l.min_at, l.max_at, l.stride),
        (0, 1, NONE, 2, 3)
    );
    assert_eq!(
        Layout::from_flags(true, false, false, false, false, false).stride,
        1
    );
    assert_eq!(
        Layout::from_flags(true, true, true, true, true, false).stride,
        4
    );
    // Deterministic sums: two words of fixed-point total plus the scale word.
    let l = Layout::from_flags(false, false, true, false, true, true);
    assert_eq!(
        (l.count_at, l.sum_at, l.scale_at, l.min_at, l.max_at, l.stride),
        (0, 1, 3, 4, NONE, 5)
    );
    assert!(!Layout::from_flags(true, false, true, true, false, true).fixed_sum());
}

/// Every kernel variant of a few engine configurations validates, and the parameter
/// structs match the shaders' (needs a device: a graph declares the engine).
#[test]
fn kernels_validate_and_params_match_the_shaders() {
    use gpugraph_command::{BufferDescriptor, DataViewDescriptor};
    let ctx = gpugraph_testing::ctx();
    let mut g = CommandGraph::new("keyed", &ctx.device);
    let mut view = |name: &str, format: VectorFormat, rows: u64| {
        let h = g
            .create_buffer(BufferDescriptor::new(
                name.to_string(),
                4096,
                wgpu::BufferUsages::STORAGE,
            ))
            .unwrap();
        (h, DataViewDescriptor::packed(format, rows))
    };
    let views: Vec<_> = [
        ("keys", VectorFormat::Uint32, 100),
        ("values", VectorFormat::Float32, 100),
        ("count", VectorFormat::Uint32, 8),
        ("sum", VectorFormat::Float32, 8),
        ("min", VectorFormat::Float32, 8),
        ("mean", VectorFormat::Float32, 8),
        ("live", VectorFormat::Uint32, 1),
    ]
    .into_iter()
    .map(|(n, f, r)| view(n, f, r))
    .collect();
    let views: Vec<DataView> = views
        .into_iter()
        .map(|(h, d)| g.create_data_view(h, d).unwrap())
        .collect();
    let keys = g.with_live_count(views[0], views[6]).unwrap();
    for (i, (summation, live)) in [(Summation::Atomic, false), (Summation::Deterministic, true)]
        .into_iter()
        .enumerate()
    {
        let spec = KeyedSpec {
            algorithm: "group aggregation",
            id: format!("k{i}"),
            keys: if live { keys.into() } else { views[0].into() },
            keys_name: "codes",
            key_format: VectorFormat::Uint32,
            key_file: "group/code_key.wgsl",
            key_define: None,
            key_f: [0.0; 8],
            key_u: [0; 4],
            key_count: 8,
            values: Some(views[1].into()),
            values_name: "values",
            mask: None,
            edges: None,
            gated: false,
            outputs: KeyedOutputs {
                count: Some(views[2]),
                sum: Some(views[3]),
                min: Some(views[4]),
                mean: Some(views[5]),
                summation,
                ..Default::default()
            },
        };
        let k = Keyed::declare(&mut g, spec, KeyedPolicy::DEFAULT).unwrap();
        for source in [
            k.accumulate_source(false),
            k.accumulate_source(true),
            k.finalize_source(),
        ] {
            kernel::validate_wgsl(&source).unwrap_or_else(|e| panic!("{e}"));
            assert!(!source.contains("#unroll") && !source.contains("#if"));
        }
        let members = kernel::field_offsets!(AccumulateParams; rows, key_off, value_off,
            mask_off, tiles, workgroups, edges_off, edge_count, key_f0, key_f1, key_u,
            live_off);
        let size = Some(std::mem::size_of::<AccumulateParams>());
        kernel::assert_struct_layout(&k.accumulate_source(false), "Params", size, &members);
        let members = kernel::field_offsets!(FillParams; keys, words, count_off, sum_off,
            min_off, max_off, mean_off, ignored_off, flag_off, nan_bits);
        let size = Some(std::mem::size_of::<FillParams>());
        kernel::assert_struct_layout(&k.finalize_source(), "Params", size, &members);
    }
}

#[test]
fn small_key_sets_are_privatized_and_replicated() {
    let p = KeyedPolicy::DEFAULT;
    let s = shape(&p, 4, 0, 32768);
    assert!(s.private && s.copies == 8 && !s.edges_shared);
    let s = shape(&p, 100, 0, 32768);
    assert!(s.private && s.copies == 2);
    let s = shape(&p, 8000, 0, 32768);
    assert!(s.private && s.copies == 1);
    let s = shape(&p, 8185, 0, 32768);
    assert!(!s.private);
    let s = shape(&p, 16384, 0, 1 << 20);
    assert!(s.private);
    let s = shape(&p, 3000, 1024, 16384);
    assert!(s.private && s.edges_shared);
    let s = shape(&p, 4000, 2000, 16384);
    assert!(s.private && !s.edges_shared);
    let s = shape(&p, 4000, 1024, 16384);
    assert!(!s.private && s.edges_shared);
}
