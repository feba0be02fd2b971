//! [`VectorMadd`]: `output = input * scale + addend` over float32 vectors (1 to 4 components
//! per row), with a scalar scale from a host binding or a GPU result. The in-place form
//! (`addend` is state, updated read-write) is AXPY: `state = input * scale + state`.
//!
//! One pass, one dispatch node per non-empty chunk; the output inherits the input's chunk
//! topology. Bytes per component: 8 read + 4 written (the scale is one word per invocation).

pub mod cpu;

use gpugraph_command::{Binding, DispatchNode, Grid};

use crate::expr::ScalarType;
use crate::graph::declaration::{ValueRef, ValueSpec};
use crate::graph::error::BoxError;
use crate::lowering::{LowerContext, Lowering};
use crate::operation::policy::{operation_source, MADD_ITEMS_PER_THREAD, MADD_TILE};
use crate::operation::support::{is_float32, word_offset, words, Check, Operand};
use crate::operation::{Operation, OperationContract, Scope, Shape};

/// Type name of [`VectorMadd`].
pub const TYPE: &str = "vector-madd";

const WGSL: &str = include_str!("madd.wgsl");

/// `output = input * scale + addend`. Reads `input` and `addend` once per component and the
/// float32 scalar `scale`; writes every output component once. `input` and `addend` have one
/// float32 format and equal chunk lengths. When `output` names `addend` (which must then be
/// state) the update is in place.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorMadd {
    /// Operation id.
    pub id: String,
    /// The multiplied vector.
    pub input: ValueRef,
    /// The float32 scale.
    pub scale: ValueRef,
    /// The added vector.
    pub addend: ValueRef,
    /// The result name (a new result, or `addend`'s name for the in-place form).
    pub output: String,
}

impl VectorMadd {
    /// `output = input * scale + addend` into a new result.
    pub fn new(
        id: impl Into<String>,
        input: impl Into<ValueRef>,
        scale: impl Into<ValueRef>,
        addend: impl Into<ValueRef>,
        output: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            input: input.into(),
            scale: scale.into(),
            addend: addend.into(),
            output: output.into(),
        }
    }

    /// `state = input * scale + state`, updating the state vector in place (read-write).
    pub fn in_place(
        id: impl Into<String>,
        input: impl Into<ValueRef>,
        scale: impl Into<ValueRef>,
        state: impl Into<ValueRef>,
    ) -> Self {
        let state = state.into();
        let output = state.name().to_string();
        Self::new(id, input, scale, state, output)
    }

    fn is_in_place(&self) -> bool {
        self.output == self.addend.name()
    }
}

impl Operation for VectorMadd {
    operation_identity!(TYPE);
    fn contract(&self, scope: &Scope<'_>) -> Result<OperationContract, BoxError> {
        let format = scope.vector_format(&self.input)?;
        if !is_float32(format) {
            return Err(format!(
                "input {} is {format}; vector MADD needs float32 components",
                self.input
            )
            .into());
        }
        let addend = scope.vector_format(&self.addend)?;
        if addend != format {
            return Err(format!(
                "addend {} is {addend} but input {} is {format}",
                self.addend, self.input
            )
            .into());
        }
        let scale = scope.scalar_type(&self.scale)?;
        if scale != ScalarType::Float32 {
            return Err(format!("scale {} is {scale}; it must be float32", self.scale).into());
        }
        let c = OperationContract::new().read(self.scale.clone());
        if self.is_in_place() {
            if self.input.name() == self.addend.name() {
                return Err(format!(
                    "in-place MADD cannot read its state {} as the input too",
                    self.addend
                )
                .into());
            }
            return Ok(c.read(self.input.clone()).read_write(self.addend.clone()));
        }
        // `x * s + x` lists x once.
        let c = c.read(self.input.clone()).read_once(self.addend.clone());
        Ok(c.output(&self.output, ValueSpec::vector(format))
            .write(&self.output, Some(Shape::Like(self.input.clone()))))
    }
}

/// Built-in lowering: one compute node, one dispatch per non-empty chunk.
pub(crate) fn lowering() -> Lowering {
    Lowering::typed::<VectorMadd>(TYPE, lower)
}

fn lower(op: &VectorMadd, cx: &mut LowerContext<'_>) -> Result<(), BoxError> {
    let check = Check::new(TYPE, &op.id);
    let in_place = op.is_in_place();
    let x = cx.resolve_vector(op.input.clone())?;
    let scale = Operand::of(&cx.resolve_scalar(op.scale.clone())?.binding);
    let out = cx.resolve_vector(op.output.as_str())?;
    let addend = if in_place {
        out.clone()
    } else {
        cx.resolve_vector(op.addend.clone())?
    };
    let format = x.format;
    check.packed_words("input", &x.view, format)?;
    check.packed_words("addend", &addend.view, format)?;
    check.packed_words("output", &out.view, format)?;
    check.same_topology("output", &out.view, "input", &x.view)?;
    check.same_topology("output", &out.view, "addend", &addend.view)?;
    let writes = out.view.buffers();
    let mut reads: Vec<(String, gpugraph_command::BufferHandle)> = x
        .view
        .buffers()
        .into_iter()
        .map(|b| (format!("input {}", op.input), b))
        .collect();
    if !in_place {
        reads.extend(
            addend
                .view
                .buffers()
                .into_iter()
                .map(|b| (format!("addend {}", op.addend), b)),
        );
    }
    if let Some(b) = scale.buffer() {
        reads.push((format!("scale {}", op.scale), b));
    }
    check.disjoint(cx.graph(), &writes, &reads)?;
    let limits = cx.device().limits();
    let mut grids = Vec::with_capacity(out.chunks().len());
    for (k, c) in out.chunks().iter().enumerate() {
        check.fits_u32("components in one chunk", words(c))?;
        check.binding_fits(&format!("output chunk {k}"), c, &limits)?;
        check.binding_fits(&format!("input chunk {k}"), &x.chunks()[k], &limits)?;
        check.binding_fits(&format!("addend chunk {k}"), &addend.chunks()[k], &limits)?;
        grids.push(check.grid("one chunk", words(c).div_ceil(MADD_TILE), &limits)?);
    }

    let key = format!(
        "{TYPE}/{}",
        if in_place { "in-place" } else { "out-of-place" }
    );
    let source = operation_source(key, WGSL, MADD_ITEMS_PER_THREAD).define_if(in_place, "IN_PLACE");
    // Bindings are the views' aligned ranges at the device's storage alignment.
    let align = u64::from(cx.device().limits().min_storage_buffer_offset_alignment);
    let (xv, av, ov) = (x.view.clone(), addend.view.clone(), out.view.clone());
    let chunk_count = ov.chunks().len();
    let dispatched = grids.iter().filter(|g| !g.is_empty()).count();
    for (k, grid) in grids.iter().enumerate() {
        if grid.is_empty() {
            continue;
        }
        let (o, xc, ac) = (ov.chunks()[k], xv.chunks()[k], av.chunks()[k]);
        let p = [
            words(&o) as u32,
            word_offset(&o, align),
            word_offset(&xc, align),
            word_offset(&ac, align),
            scale.word(align, 5),
            scale.host_bits(),
        ];
        // A host scale is read from a node-owned copy of the parameter words (word 5).
        let scale_binding = match scale {
            Operand::View(v) => Binding::read(3, v),
            Operand::Host(_) => Binding::storage_params(3, &p),
        };
        let mut bindings = vec![
            Binding::storage_params(0, &p),
            Binding::read_write(1, o),
            Binding::read(2, xc),
            scale_binding,
        ];
        if !in_place {
            bindings.push(Binding::read(4, ac));
        }
        let id = if dispatched == 1 {
            cx.node_id("madd")
        } else {
            cx.node_id(&format!("madd/{k}"))
        };
        cx.add_dispatch_node(DispatchNode::new(
            id,
            source.clone(),
            "vector_madd",
            bindings,
            Grid::Workgroups(grid.dims()),
        ))?;
    }
    cx.explain(
        if in_place {
            "in-place elementwise kernel"
        } else {
            "elementwise kernel"
        },
        format!(
            "{} float32 components in {chunk_count} chunk(s); {} components per workgroup, one dispatch per non-empty chunk",
            x.len() * format.components() as u64,
            MADD_TILE
        ),
    );
    Ok(())
}
