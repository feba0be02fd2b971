//! [`DotProduct`]: `Σ a[i]·b[i]` over two float32 vectors (1 to 4 components per row, equal
//! chunk lengths) into a float32 scalar that stays on the GPU, where later operations
//! (expressions included) read it without a host binding.
//!
//! Two passes (dispatch nodes): per chunk, one workgroup per tile of `DOT_TILE` components writes a partial sum
//! into graph-owned scratch; then one workgroup reduces the partials in a fixed order.
//! Bytes per component: 8 read; plus 4 bytes per tile written and read back by pass 2.

pub mod cpu;

use gpugraph_command::{
    wgpu, Binding, BufferDescriptor, DispatchNode, Grid, ShaderRegistry, VectorFormat,
};
use gpugraph_gpgpu::kernel::WorkgroupSplit;

use crate::expr::ScalarType;
use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::policy::{operation_source, DOT_ITEMS_PER_THREAD, DOT_TILE};
use crate::operation::support::{buffers_of, is_float32, labeled, word_offset, words, Check};
use crate::operation::{Operation, OperationContract, Scope};

/// Type name of [`DotProduct`].
pub const TYPE: &str = "dot-product";

const PARTIALS_WGSL: &str = include_str!("dot.wgsl");
const FINISH_WGSL: &str = include_str!("finish.wgsl");

/// The shared tree sum both passes include (`#include "operation/dot/reduce.wgsl"`).
static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-program dot",
    &[("operation/dot/reduce.wgsl", include_str!("reduce.wgsl"))],
);

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
        .collect::<Result<Vec<WorkgroupSplit>, _>>()?;
    let partials = cx.create_transient(BufferDescriptor::new(
        cx.node_id("partials"),
        (total * 4).max(4),
        wgpu::BufferUsages::STORAGE,
    ))?;

    // The logical partials range (the physical transient may be larger when it is shared).
    let partials = cx
        .graph()
        .create_packed_view(partials, VectorFormat::Float32, total.max(1))?;
    // Bindings are the views' aligned ranges at the device's storage alignment.
    let align = u64::from(limits.min_storage_buffer_offset_alignment);
    let (av, bv) = (a.view.clone(), b.view.clone());
    let source = operation_source(
        format!("{TYPE}/partials"),
        PARTIALS_WGSL,
        DOT_ITEMS_PER_THREAD,
    )
    .registry(&WGSL)
    .registry(&gpugraph_gpgpu::kernel::WGSL);
    let dispatched = grids.iter().filter(|g| !g.is_empty()).count();
    for (k, grid) in grids.iter().enumerate() {
        if grid.is_empty() {
            continue;
        }
        let (ac, bc) = (av.chunks()[k], bv.chunks()[k]);
        let p = [
            words(&ac) as u32,
            word_offset(&ac, align),
            word_offset(&bc, align),
            first[k] as u32,
            tiles[k] as u32,
        ];
        let id = if dispatched == 1 {
            cx.node_id("partials")
        } else {
            cx.node_id(&format!("partials/{k}"))
        };
        cx.add_dispatch_node(DispatchNode::new(
            id,
            source.clone(),
            "dot_partials",
            vec![
                Binding::storage_params(0, &p),
                Binding::read_write(1, partials),
                Binding::read(2, ac),
                Binding::read(3, bc),
            ],
            Grid::Workgroups(grid.dims()),
        ))?;
    }

    let source = operation_source(format!("{TYPE}/finish"), FINISH_WGSL, 1)
        .registry(&WGSL)
        .registry(&gpugraph_gpgpu::kernel::WGSL);
    let p = [total as u32, word_offset(&row, align)];
    cx.add_dispatch_node(DispatchNode::new(
        cx.node_id("finish"),
        source,
        "dot_finish",
        vec![
            Binding::storage_params(0, &p),
            Binding::read_write(1, row),
            Binding::read(2, partials),
        ],
        Grid::Workgroups([1, 1, 1]),
    ))?;
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

fn words_total(v: &crate::lowering::ResolvedVector) -> u64 {
    v.chunks().iter().map(words).sum()
}

fn wgpu_format() -> gpugraph_command::VectorFormat {
    gpugraph_command::VectorFormat::Float32
}
