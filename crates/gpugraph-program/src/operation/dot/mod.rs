//! [`DotProduct`]: `Σ a[i]·b[i]` over two float32 vectors (1 to 4 components per row, equal
//! chunk lengths) into a float32 scalar that stays on the GPU, where later operations
//! (expressions included) read it without a host binding.
//!
//! Two passes: per chunk, one workgroup per tile of `DOT_TILE` components writes a partial sum
//! into graph-owned scratch; then one workgroup reduces the partials in a fixed order.
//! Bytes per component: 8 read; plus 4 bytes per tile written and read back by pass 2.

pub mod cpu;

use gpugraph_command::{view_binding, wgpu, BindGroupCache, BufferDescriptor, ComputeNode};
use gpugraph_gpgpu::kernel::{parameter_buffer, Grid, SHARED_TREE_REDUCE_WGSL};

use crate::expr::ScalarType;
use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::policy::{wgsl_header, DOT_ITEMS_PER_THREAD, DOT_TILE};
use crate::operation::support::{
    buffers_of, cached_kernel, is_float32, labeled, read_then_write, word_offset, words, Check,
};
use crate::operation::{Operation, OperationContract, Scope};

/// Type name of [`DotProduct`].
pub const TYPE: &str = "dot-product";

const PARTIALS_WGSL: &str = include_str!("dot.wgsl");
const FINISH_WGSL: &str = include_str!("finish.wgsl");
const REDUCE_WGSL: &str = include_str!("reduce.wgsl");

/// `output = Σ a[i]·b[i]`: reads both vectors once, writes the float32 scalar result `output`
/// (an empty input gives 0). `a` and `b` have one float32 format and equal chunk lengths.
#[derive(Clone, Debug, PartialEq)]
pub struct DotProduct {
    /// Operation id.
    pub id: String,
    /// Left vector.
    pub a: ValueRef,
    /// Right vector.
    pub b: ValueRef,
    /// The scalar result name.
    pub output: String,
}

impl DotProduct {
    /// `output = a · b`.
    pub fn new(
        id: impl Into<String>,
        a: impl Into<ValueRef>,
        b: impl Into<ValueRef>,
        output: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            a: a.into(),
            b: b.into(),
            output: output.into(),
        }
    }
}

impl Operation for DotProduct {
    operation_identity!(TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        let fa = scope.vector_format(&self.a)?;
        let fb = scope.vector_format(&self.b)?;
        if !is_float32(fa) || fa != fb {
            return Err(format!("a ({fa}) and b ({fb}) must have one float32 format").into());
        }
        Ok(OperationContract::new()
            .output(&self.output, ValueSpec::scalar(ScalarType::Float32))
            .read(self.a.clone())
            .read_once(self.b.clone())
            .write(&self.output, None))
    }
}

/// Built-in lowering: a partial-sums node and a finishing node.
pub(crate) fn lowering() -> Lowering {
    Lowering::typed::<DotProduct>(TYPE, lower)
}

fn lower(op: &DotProduct, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let check = Check::new(TYPE, &op.id);
    let a = cx.resolve_vector(op.a.clone())?;
    let b = cx.resolve_vector(op.b.clone())?;
    let out = cx.resolve_vector(op.output.as_str())?;
    check.packed_words("a", &a.view, a.format)?;
    check.packed_words("b", &b.view, a.format)?;
    check.packed_words("output", &out.view, wgpu_format())?;
    check.same_topology("a", &a.view, "b", &b.view)?;
    let row = out.chunks()[0];
    let reads = labeled("an input", buffers_of([&a.view, &b.view]));
    check.disjoint(cx.graph(), &[row.buffer()], &reads)?;

    let limits = cx.device().limits();
    // Tiles per chunk and where each chunk's partials start.
    let mut tiles = Vec::with_capacity(a.chunks().len());
    let mut first = Vec::with_capacity(a.chunks().len());
    let mut total = 0u64;
    for (k, c) in a.chunks().iter().enumerate() {
        check.fits_u32("components in one chunk", words(c))?;
        check.binding_fits(&format!("a chunk {k}"), c, &limits)?;
        check.binding_fits(&format!("b chunk {k}"), &b.chunks()[k], &limits)?;
        let t = words(c).div_ceil(DOT_TILE);
        first.push(total);
        tiles.push(t);
        total += t;
    }
    check.fits_u32("partial sums", total)?;
    let grids = tiles
        .iter()
        .map(|&t| check.grid("one chunk", t, &limits))
        .collect::<Result<Vec<Grid>, _>>()?;
    let partials = cx.create_transient(BufferDescriptor::new(
        cx.node_id("partials"),
        (total * 4).max(4),
        wgpu::BufferUsages::STORAGE,
    ))?;

    let uses = read_then_write(buffers_of([&a.view, &b.view]), partials);
    let (av, bv) = (a.view.clone(), b.view.clone());
    let key = format!("{TYPE}/partials");
    let source = format!(
        "{}{SHARED_TREE_REDUCE_WGSL}\n{REDUCE_WGSL}{PARTIALS_WGSL}",
        wgsl_header(DOT_ITEMS_PER_THREAD)
    );
    let node = ComputeNode::new(cx.node_id("partials"), uses, move |cc| {
        let device = cc.device().clone();
        let kernel = cached_kernel(&device, &key, &source, "dot_partials", 2);
        let align = cc.limits().min_storage_buffer_offset_alignment as u64;
        let mut chunks = Vec::new();
        for (k, grid) in grids.iter().enumerate() {
            if grid.is_empty() {
                continue;
            }
            let p = [
                words(&av.chunks()[k]) as u32,
                word_offset(&av.chunks()[k], align),
                word_offset(&bv.chunks()[k], align),
                first[k] as u32,
                tiles[k] as u32,
            ];
            let params = parameter_buffer(&device, cc.node_id(), bytemuck::cast_slice(&p));
            chunks.push((k, params, BindGroupCache::default(), *grid));
        }
        Ok(gpugraph_command::compute_fn(move |pass, ec| {
            for (k, params, cache, grid) in chunks.iter_mut() {
                let (ac, bc) = (&av.chunks()[*k], &bv.chunks()[*k]);
                let (pb, ab, bb) = (ec.buffer(partials), ec.buffer(*ac), ec.buffer(*bc));
                let group = cache.get_or_create(&[pb, ab, bb], || {
                    kernel.bind_group(
                        &device,
                        &[
                            params.as_entire_buffer_binding(),
                            partials_binding(pb, total),
                            view_binding(ab, ac, align).0,
                            view_binding(bb, bc, align).0,
                        ],
                    )
                });
                kernel.dispatch(pass, group, *grid);
            }
        }))
    });
    cx.add_compute_node(node)?;

    let key = format!("{TYPE}/finish");
    let source = format!(
        "{}{SHARED_TREE_REDUCE_WGSL}\n{REDUCE_WGSL}{FINISH_WGSL}",
        wgsl_header(1)
    );
    let uses = read_then_write([partials], row);
    let node = ComputeNode::new(cx.node_id("finish"), uses, move |cc| {
        let device = cc.device().clone();
        let kernel = cached_kernel(&device, &key, &source, "dot_finish", 1);
        let align = cc.limits().min_storage_buffer_offset_alignment as u64;
        let p = [total as u32, word_offset(&row, align)];
        let params = parameter_buffer(&device, cc.node_id(), bytemuck::cast_slice(&p));
        let mut cache = BindGroupCache::default();
        Ok(gpugraph_command::compute_fn(move |pass, ec| {
            let (ob, pb) = (ec.buffer(row), ec.buffer(partials));
            let group = cache.get_or_create(&[ob, pb], || {
                kernel.bind_group(
                    &device,
                    &[
                        params.as_entire_buffer_binding(),
                        view_binding(ob, &row, align).0,
                        partials_binding(pb, total),
                    ],
                )
            });
            kernel.dispatch(pass, group, Grid { x: 1, y: 1 });
        }))
    });
    cx.add_compute_node(node)?;
    cx.explain(
        "two-pass workgroup reduction",
        format!(
            "{} components in {} chunk(s) reduce to {total} partial(s) of {DOT_TILE} components, then one workgroup sums them in a fixed order; the result stays on the GPU",
            words_total(&a),
            a.chunks().len()
        ),
    );
    Ok(())
}

/// The logical partials range (the physical transient may be larger when it is shared).
fn partials_binding(buffer: &wgpu::Buffer, total: u64) -> wgpu::BufferBinding<'_> {
    wgpu::BufferBinding {
        buffer,
        offset: 0,
        size: wgpu::BufferSize::new((total * 4).max(4)),
    }
}

fn words_total(v: &crate::lowering::ResolvedVector) -> u64 {
    v.chunks().iter().map(words).sum()
}

fn wgpu_format() -> gpugraph_command::VectorFormat {
    gpugraph_command::VectorFormat::Float32
}
