//! Graph contract without a GPU: a wgpu no-op device stands in, so these tests check
//! declarations, hazards, order, errors and the alias plan, not GPU results.

use gpugraph_command::plan::EdgeKind;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{
    copy_fn, BufferDescriptor, CommandGraph, CopyNode, DataViewDescriptor, EncodeOptions,
    GraphError, ResourceUse, VectorFormat,
};

fn device() -> (wgpu::Device, wgpu::Queue) {
    wgpu::Device::noop(&wgpu::DeviceDescriptor::default())
}

/// A node that records nothing: the planner treats every node kind alike, so a copy node
/// with arbitrary uses stands for any node here.
fn noop_node(id: &str, uses: Vec<ResourceUse>) -> CopyNode {
    CopyNode::new(id, uses, |_| Ok(copy_fn(|_, _| {})))
}

fn transient(g: &mut CommandGraph, id: &str, bytes: u64) -> gpugraph_command::BufferHandle {
    g.create_buffer(BufferDescriptor::new(id, bytes, U::STORAGE))
        .unwrap()
}

#[test]
fn hazards_and_stable_order_through_the_api() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("visibility", &dev);
    let flags = transient(&mut g, "flags", 64);
    let offsets = transient(&mut g, "offsets", 64);
    g.add_copy_node(noop_node(
        "visibility",
        vec![ResourceUse::storage_write(flags)],
    ))
    .unwrap();
    g.add_copy_node(noop_node(
        "scan",
        vec![
            ResourceUse::storage_read(flags),
            ResourceUse::storage_write(offsets),
        ],
    ))
    .unwrap();
    g.add_copy_node(noop_node("clear", vec![ResourceUse::storage_write(flags)]))
        .unwrap();
    g.add_copy_node(noop_node("independent", vec![])).unwrap();
    let c = g.compile().unwrap();
    let edges: Vec<(&str, &str, EdgeKind)> = c
        .edges()
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str(), e.kind))
        .collect();
    assert_eq!(
        edges,
        vec![
            ("visibility", "scan", EdgeKind::ReadAfterWrite),
            ("visibility", "clear", EdgeKind::WriteAfterWrite),
            ("scan", "clear", EdgeKind::WriteAfterRead),
        ]
    );
    assert_eq!(
        c.node_order(),
        ["visibility", "scan", "clear", "independent"]
    );
}

#[test]
fn explicit_dependency_reorders_and_missing_or_cyclic_ones_fail_with_ids() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("g", &dev);
    let mut a = noop_node("a", vec![]);
    a.depends_on = vec!["c".into()];
    g.add_copy_node(a).unwrap();
    g.add_copy_node(noop_node("b", vec![])).unwrap();
    g.add_copy_node(noop_node("c", vec![])).unwrap();
    assert_eq!(g.compile().unwrap().node_order(), ["b", "c", "a"]);

    let mut g = CommandGraph::new("g", &dev);
    let mut a = noop_node("a", vec![]);
    a.depends_on = vec!["ghost".into()];
    g.add_copy_node(a).unwrap();
    let err = g.compile().err().unwrap();
    assert_eq!(err.to_string(), "node a depends on unknown node 'ghost'");

    let mut g = CommandGraph::new("loop", &dev);
    let buf = transient(&mut g, "buf", 16);
    let mut a = noop_node("a", vec![ResourceUse::storage_write(buf)]);
    a.depends_on = vec!["b".into()];
    g.add_copy_node(a).unwrap();
    g.add_copy_node(noop_node("b", vec![ResourceUse::storage_read(buf)]))
        .unwrap();
    match g.compile() {
        Err(GraphError::Cycle { graph, nodes }) => {
            assert_eq!(graph, "loop");
            assert_eq!(nodes, vec!["a", "b"]);
        }
        other => panic!("expected a cycle, got {:?}", other.err()),
    }
}

#[test]
fn duplicate_ids_empty_usage_and_undeclared_usage_are_named_errors() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("g", &dev);
    let b = transient(&mut g, "ids", 16);
    let err = g
        .create_buffer(BufferDescriptor::new("ids", 16, U::STORAGE))
        .unwrap_err();
    assert_eq!(err.to_string(), "graph g: duplicate resource id 'ids'");
    let err = g
        .create_buffer(BufferDescriptor::new("nothing", 16, U::empty()))
        .unwrap_err();
    assert!(
        matches!(err, GraphError::InvalidDescriptor { ref id, .. } if id == "nothing"),
        "{err}"
    );
    let err = g
        .create_buffer(BufferDescriptor::new("huge", u64::MAX, U::STORAGE))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("exceeds the device's max buffer size"),
        "{err}"
    );
    let err = g
        .create_buffer(BufferDescriptor::new("m", 16, U::MAP_READ | U::STORAGE))
        .unwrap_err();
    assert!(matches!(err, GraphError::InvalidDescriptor { .. }), "{err}");
    g.add_copy_node(noop_node("n", vec![])).unwrap();
    let err = g.add_copy_node(noop_node("n", vec![])).unwrap_err();
    assert_eq!(err.to_string(), "graph g: duplicate node id 'n'");
    let err = g
        .add_copy_node(noop_node("draw", vec![ResourceUse::indirect(b)]))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("node draw uses ids as indirect but its descriptor lacks usage"),
        "{err}"
    );
}

#[test]
fn views_must_fit_and_be_aligned() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("g", &dev);
    let b = transient(&mut g, "values", 64);
    assert!(g.create_packed_view(b, VectorFormat::Uint32, 16).is_ok());
    let err = g
        .create_packed_view(b, VectorFormat::Uint32, 17)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "view over buffer values is out of range: byte offset 0 + span 68 > byte length 64"
    );
    let err = g
        .create_data_view(
            b,
            DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(2),
        )
        .unwrap_err();
    assert!(matches!(err, GraphError::InvalidView { .. }), "{err}");
    let strided = DataViewDescriptor {
        format: VectorFormat::Float32x3,
        length: 4,
        byte_offset: 0,
        byte_stride: Some(16),
    };
    let v = g.create_data_view(b, strided).unwrap();
    assert_eq!(v.byte_span(), 60);
    let err = g
        .create_data_view(
            b,
            DataViewDescriptor {
                byte_stride: Some(8),
                ..strided
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("stride 8 is smaller"), "{err}");
    // Zero-length views fit anywhere inside, even at the end.
    assert!(g
        .create_data_view(
            b,
            DataViewDescriptor::packed(VectorFormat::Uint32, 0).at_offset(64)
        )
        .is_ok());
    let huge = DataViewDescriptor::packed(VectorFormat::Uint32, u64::MAX);
    assert!(matches!(
        g.create_data_view(b, huge),
        Err(GraphError::ViewOutOfRange { .. })
    ));
}

#[test]
fn handles_from_another_graph_are_rejected() {
    let (dev, _queue) = device();
    let mut g1 = CommandGraph::new("one", &dev);
    let mut g2 = CommandGraph::new("two", &dev);
    let b1 = transient(&mut g1, "b", 16);
    let err = g2
        .add_copy_node(noop_node("n", vec![ResourceUse::storage_read(b1)]))
        .unwrap_err();
    assert!(matches!(err, GraphError::ForeignHandle { .. }), "{err}");
    assert!(g2.create_packed_view(b1, VectorFormat::Uint32, 1).is_err());
}

/// Three stages over two "groups": a(0..1) b(1..2) c(2..3) then d(4..5), with sizes chosen so
/// the plan is hand-checkable.
#[test]
fn alias_plan_stats_match_hand_computed_numbers() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("alias", &dev);
    let t: Vec<_> = [("t0", 1024u64), ("t1", 4096), ("t2", 2048), ("t3", 512)]
        .iter()
        .map(|&(id, n)| transient(&mut g, id, n))
        .collect();
    // n0 writes t0; n1 reads t0 writes t1; n2 reads t1 writes t2; n3 reads t2 writes t3; n4 reads t3.
    g.add_copy_node(noop_node("n0", vec![ResourceUse::storage_write(t[0])]))
        .unwrap();
    for i in 1..4 {
        let uses = vec![
            ResourceUse::storage_read(t[i - 1]),
            ResourceUse::storage_write(t[i]),
        ];
        g.add_copy_node(noop_node(&format!("n{i}"), uses)).unwrap();
    }
    g.add_copy_node(noop_node("n4", vec![ResourceUse::storage_read(t[3])]))
        .unwrap();
    let c = g.compile().unwrap();
    let s = c.stats();
    // Intervals: t0 [0,1], t1 [1,2], t2 [2,3], t3 [3,4]. t2 may reuse t0's allocation (free
    // after 1 < 2) and grows it to 2048; t3 may reuse t1's (free after 2 < 3): 4096.
    assert_eq!(s.logical_transient_count, 4);
    assert_eq!(s.logical_transient_bytes, 1024 + 4096 + 2048 + 512);
    assert_eq!(s.physical_transient_count, 2);
    assert_eq!(s.physical_transient_bytes, 2048 + 4096);
    assert_eq!(s.reused_bytes, 7680 - 6144);
    assert!((s.reuse_percent - 20.0).abs() < 1e-9, "{}", s.reuse_percent);
    assert_eq!(s.imported_count, 0);
    assert_eq!(s.physical_tenants, vec![vec!["t0", "t2"], vec!["t1", "t3"]]);
}

#[test]
fn ten_thousand_node_graphs_build_and_compile() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("big", &dev);
    let mut prev = transient(&mut g, "t0", 16);
    g.add_copy_node(noop_node("n0", vec![ResourceUse::storage_write(prev)]))
        .unwrap();
    for i in 1..10_000 {
        let next = transient(&mut g, &format!("t{i}"), 16);
        let uses = vec![
            ResourceUse::storage_read(prev),
            ResourceUse::storage_write(next),
        ];
        g.add_copy_node(noop_node(&format!("n{i}"), uses)).unwrap();
        prev = next;
    }
    let c = g.compile().unwrap();
    assert_eq!(c.stats().physical_transient_count, 2);
    assert_eq!(c.node_order().len(), 10_000);
}

#[test]
fn failing_node_compile_returns_named_error_and_releases_state() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("g", &dev);
    let t = transient(&mut g, "scratch", 64);
    g.add_copy_node(noop_node("ok", vec![ResourceUse::storage_write(t)]))
        .unwrap();
    g.add_copy_node(CopyNode::new(
        "broken",
        vec![ResourceUse::storage_read(t)],
        |_| Err("shader specialization failed".into()),
    ))
    .unwrap();
    let err = g.compile().err().unwrap();
    assert_eq!(
        err.to_string(),
        "node broken failed to compile: shader specialization failed"
    );
}

#[test]
fn destroyed_graph_cannot_encode_and_destroy_is_idempotent() {
    let (dev, _queue) = device();
    let mut g = CommandGraph::new("g", &dev);
    let t = transient(&mut g, "scratch", 64);
    g.add_copy_node(noop_node("n", vec![ResourceUse::storage_write(t)]))
        .unwrap();
    let mut c = g.compile().unwrap();
    let mut enc = dev.create_command_encoder(&Default::default());
    c.encode(&mut enc, &EncodeOptions::default()).unwrap();
    c.destroy();
    c.destroy();
    assert!(c.is_destroyed());
    let err = c.encode(&mut enc, &EncodeOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "graph g was destroyed and cannot encode");
}
