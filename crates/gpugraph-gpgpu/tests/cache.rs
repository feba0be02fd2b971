//! Every primitive builds its pipelines through the device's one `DeviceCache`: compiling the
//! same graph shape a second time (other buffers, other instance ids) creates no pipeline.

mod common;

use common::{ctx, import_typed, import_view, upload};
use gpugraph_command::{CommandGraph, GpuContext, VectorFormat};
use gpugraph_gpgpu::{
    Compaction, Histogram, HistogramBins, Mask, MaskOp, ReduceOp, Reduction, Scan, Sort,
};

/// Scan, segmented scan, compaction, mask, reduction, histogram and sort over `n` rows, with
/// ids prefixed by `tag`; compiled, never encoded.
fn compile_shape(ctx: &GpuContext, tag: &str, n: u64) {
    let data: Vec<u32> = (0..n as u32).collect();
    let buf = |d: &[u32]| upload(ctx, d);
    let (a, b, c, d) = (buf(&data), buf(&data), buf(&data), buf(&data));
    let (e, f, g_, h) = (buf(&data), buf(&data), buf(&data), buf(&data));
    let words = buf(&[0; 64]);
    let mut g = CommandGraph::new(format!("{tag}-graph"), &ctx.device);
    let av = import_view(&mut g, "a", &a, 0, n);
    let bv = import_view(&mut g, "b", &b, 0, n);
    let cv = import_view(&mut g, "c", &c, 0, n);
    let dv = import_view(&mut g, "d", &d, 0, n);
    let ev = import_view(&mut g, "e", &e, 0, n);
    let fv = import_typed(&mut g, "f", &f, VectorFormat::Float32, 0, n);
    let gv = import_view(&mut g, "g", &g_, 0, n);
    let hv = import_view(&mut g, "h", &h, 0, n);
    let count = import_view(&mut g, "words", &words, 0, 1);
    let sum = g
        .create_data_view(
            count.buffer(),
            gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 2).at_offset(16),
        )
        .unwrap();
    let bins = g
        .create_data_view(
            count.buffer(),
            gpugraph_command::DataViewDescriptor::packed(VectorFormat::Uint32, 8).at_offset(64),
        )
        .unwrap();
    let id = |s: &str| format!("{tag}/{s}");
    Scan {
        id: id("scan"),
        input: av.into(),
        output: bv.into(),
        inclusive: false,
        segment_starts: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Scan {
        id: id("segmented"),
        input: av.into(),
        output: cv.into(),
        inclusive: true,
        segment_starts: Some(bv.into()),
    }
    .add_to_graph(&mut g)
    .unwrap();
    Compaction {
        id: id("compact"),
        values: av.into(),
        flags: cv.into(),
        output: dv.into(),
        count,
        overflow: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Mask {
        id: id("mask"),
        op: MaskOp::And,
        inputs: vec![av.into(), bv.into()],
        output: ev.into(),
    }
    .add_to_graph(&mut g)
    .unwrap();
    Reduction {
        id: id("reduce"),
        input: dv.into(),
        mask: None,
        op: ReduceOp::Sum,
        output: sum,
        ignored: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Histogram {
        id: id("histogram"),
        input: fv.into(),
        mask: None,
        bins: HistogramBins::Uniform {
            min: 0.0,
            max: 1.0,
            bins: 8,
        },
        counts: bins,
        cumulative: None,
        ignored: None,
        invalid_edges: None,
    }
    .add_to_graph(&mut g)
    .unwrap();
    Sort::keys(id("sort"), gv, hv).add_to_graph(&mut g).unwrap();
    g.compile().unwrap();
}

#[test]
fn a_second_compile_of_the_same_shape_creates_no_pipeline() {
    let ctx = ctx();
    let cache = gpugraph_command::DeviceCache::for_device(&ctx.device);
    compile_shape(&ctx, "first", 10_000);
    let first = cache.stats();
    assert!(first.pipelines_created >= 8, "{first:?}");
    compile_shape(&ctx, "second", 10_000);
    let second = cache.stats();
    assert_eq!(
        second.pipelines_created, first.pipelines_created,
        "second compile created pipelines: {first:?} -> {second:?}"
    );
    assert!(second.pipeline_hits > first.pipeline_hits, "{second:?}");
}
