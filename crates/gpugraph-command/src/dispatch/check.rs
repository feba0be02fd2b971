//! A dispatch node's declared bindings against the bindings its WGSL declares (reflected by
//! naga): the declaration is what the graph plans hazards from, so it must be exactly what the
//! kernel accesses.

use super::{Binding, DispatchNode, Resource};
use crate::shader::reflect::{interface, BindingKind, ReflectError};

/// A dispatch node whose declared bindings disagree with its shader, found when the node
/// compiles, before any pipeline is created (it reaches the caller as the `source` of
/// [`crate::GraphError::NodeCompile`]). Every variant names the node, the shader's key and the
/// `@binding` slot.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// The entry point accesses a group-0 binding the node does not declare: its accesses would
    /// escape hazard analysis.
    #[error(
        "dispatch node {node}: shader {shader} entry `{entry_point}` uses @binding({slot}) \
         `{name}` ({kind}), which the node does not declare"
    )]
    Undeclared {
        /// Node id.
        node: String,
        /// The shader's key.
        shader: String,
        /// The entry point.
        entry_point: String,
        /// `@binding(slot)`.
        slot: u32,
        /// The WGSL variable.
        name: String,
        /// What the shader declares it as.
        kind: BindingKind,
    },
    /// The node declares a slot the shader has no binding for.
    #[error(
        "dispatch node {node}: declares @binding({slot}) as {declared}, but shader {shader} \
         has no binding {slot} in group 0"
    )]
    Missing {
        /// Node id.
        node: String,
        /// The shader's key.
        shader: String,
        /// `@binding(slot)`.
        slot: u32,
        /// How the node declares it.
        declared: BindingKind,
    },
    /// The node declares a slot with another kind than the shader's (storage read vs
    /// read-write vs uniform, a buffer vs a texture, or another texture type).
    #[error(
        "dispatch node {node}: @binding({slot}) `{name}` of shader {shader} is {kind}, but the \
         node declares {declared}"
    )]
    Mistyped {
        /// Node id.
        node: String,
        /// The shader's key.
        shader: String,
        /// `@binding(slot)`.
        slot: u32,
        /// The WGSL variable.
        name: String,
        /// How the node declares it.
        declared: BindingKind,
        /// What the shader declares it as.
        kind: BindingKind,
    },
    /// The entry point uses a binding outside group 0 (dispatch nodes bind group 0 only).
    #[error(
        "dispatch node {node}: shader {shader} uses @group({group}) @binding({slot}) `{name}`; \
         dispatch nodes bind group 0 only"
    )]
    OtherGroup {
        /// Node id.
        node: String,
        /// The shader's key.
        shader: String,
        /// `@group(group)`.
        group: u32,
        /// `@binding(slot)`.
        slot: u32,
        /// The WGSL variable.
        name: String,
    },
    /// The shader has no compute entry point of the node's name.
    #[error("dispatch node {node}: shader {shader}: {source}")]
    EntryPoint {
        /// Node id.
        node: String,
        /// The shader's key.
        shader: String,
        /// naga's answer.
        #[source]
        source: ReflectError,
    },
}

/// How `b` declares its slot; a texture slot's WGSL type is in `textures` (`(slot, type)`).
fn declared_kind(b: &Binding, textures: &[(u32, String)]) -> BindingKind {
    match &b.resource {
        Resource::Texture(_) => textures
            .iter()
            .find(|(slot, _)| *slot == b.slot)
            .map(|(_, wgsl)| BindingKind::Texture(wgsl.clone()))
            .unwrap_or_else(|| BindingKind::Other("unresolved texture".into())),
        _ => BindingKind::Buffer(b.access),
    }
}

/// Checks `node`'s bindings against `entry_point` of the assembled `wgsl`; `textures` holds the
/// WGSL type each texture slot implies (`(slot, type)`). WGSL naga cannot compile is left to
/// the pipeline, whose error (naga's, through wgpu) reaches the caller the same way.
// The error is large (two binding kinds, names), but it is built only on the failure path and
// boxed into the node's compile error at once.
#[allow(clippy::result_large_err)]
pub(super) fn check_bindings(
    node: &DispatchNode,
    entry_point: &str,
    wgsl: &str,
    textures: &[(u32, String)],
) -> Result<(), BindingError> {
    let shader = || node.shader.key().to_string();
    let reflected = interface(wgsl, entry_point);
    let interface = match reflected.as_ref() {
        Ok(i) => i,
        Err(ReflectError::Invalid(_)) => return Ok(()),
        Err(e) => {
            return Err(BindingError::EntryPoint {
                node: node.id.clone(),
                shader: shader(),
                source: e.clone(),
            })
        }
    };
    for b in interface.bindings.iter().filter(|b| b.used) {
        if b.group != 0 {
            return Err(BindingError::OtherGroup {
                node: node.id.clone(),
                shader: shader(),
                group: b.group,
                slot: b.slot,
                name: b.name.clone(),
            });
        }
        if !node.bindings.iter().any(|d| d.slot == b.slot) {
            return Err(BindingError::Undeclared {
                node: node.id.clone(),
                shader: shader(),
                entry_point: entry_point.to_string(),
                slot: b.slot,
                name: b.name.clone(),
                kind: b.kind.clone(),
            });
        }
    }
    // A declared slot the entry point does not reach is allowed (entry points of one module
    // may share a declaration), but it must exist in the module with the declared kind.
    for d in &node.bindings {
        let declared = declared_kind(d, textures);
        let Some(b) = interface.slot(d.slot) else {
            return Err(BindingError::Missing {
                node: node.id.clone(),
                shader: shader(),
                slot: d.slot,
                declared,
            });
        };
        if b.kind != declared {
            return Err(BindingError::Mistyped {
                node: node.id.clone(),
                shader: shader(),
                slot: d.slot,
                name: b.name.clone(),
                declared,
                kind: b.kind.clone(),
            });
        }
    }
    Ok(())
}
