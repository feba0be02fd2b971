//! What assembled WGSL declares, read with naga: each resource binding an entry point uses
//! (group, slot, name, kind) and the byte layout of a struct. [`crate::DispatchNode`]s check
//! their declared bindings against the former when they compile; parameter-struct tests check
//! `#[repr(C)]` types against the latter.
//!
//! Reflection parses and validates the module once per (text, entry point) per process: the
//! result is memoized, so graphs of the same shape pay nothing a second time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use naga::{AddressSpace, StorageAccess};

use crate::dispatch::Access;

/// What a WGSL resource binding is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindingKind {
    /// A buffer: `var<storage, read>`, `var<storage, read_write>` or `var<uniform>`.
    Buffer(Access),
    /// A 2-D texture a dispatch node can bind, by its canonical WGSL type:
    /// `texture_2d<u32>`, `texture_2d_array<f32>`, `texture_multisampled_2d<i32>`,
    /// `texture_depth_2d`, `texture_storage_2d<r32float, write>`, ... (see
    /// [`crate::dispatch::TextureSlot::wgsl_type`]).
    Texture(String),
    /// Anything a compute dispatch node cannot bind (a sampler, a 3-D texture, ...), by its
    /// WGSL kind.
    Other(String),
}

impl std::fmt::Display for BindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindingKind::Buffer(a) => write!(f, "{a}"),
            BindingKind::Texture(what) | BindingKind::Other(what) => f.write_str(what),
        }
    }
}

/// One resource global of the module with a `@group(g) @binding(n)` attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflectedBinding {
    /// `@group(g)`.
    pub group: u32,
    /// `@binding(n)`.
    pub slot: u32,
    /// The variable's name.
    pub name: String,
    /// Its kind.
    pub kind: BindingKind,
    /// Whether the reflected entry point (or a function it calls) accesses it.
    pub used: bool,
}

/// The bindings of one entry point's module, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// The entry point reflected.
    pub entry_point: String,
    /// Every global with a binding attribute, used by the entry point or not.
    pub bindings: Vec<ReflectedBinding>,
}

impl Interface {
    /// The group-0 binding at `slot`, if the module declares one.
    pub fn slot(&self, slot: u32) -> Option<&ReflectedBinding> {
        self.bindings
            .iter()
            .find(|b| b.group == 0 && b.slot == slot)
    }
}

/// Why WGSL could not be reflected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReflectError {
    /// naga could not parse or validate the text (its annotated report).
    #[error("the WGSL does not compile: {0}")]
    Invalid(String),
    /// The module has no compute entry point of this name.
    #[error("the WGSL has no entry point `{entry_point}` (it has {available:?})")]
    NoEntryPoint {
        /// The name asked for.
        entry_point: String,
        /// The entry points it has.
        available: Vec<String>,
    },
    /// The module has no struct of this name.
    #[error("the WGSL has no struct `{0}`")]
    NoStruct(String),
}

/// Parses and validates `wgsl` (every capability allowed: the device decides what it runs),
/// the compile check every generated variant gets without a device. The error is naga's
/// annotated report.
pub fn validate(wgsl: &str) -> Result<(), ReflectError> {
    parse_and_validate(wgsl).map(drop)
}

fn parse_and_validate(wgsl: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), ReflectError> {
    let module = naga::front::wgsl::parse_str(wgsl)
        .map_err(|e| ReflectError::Invalid(e.emit_to_string(wgsl)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| ReflectError::Invalid(e.emit_to_string(wgsl)))?;
    Ok((module, info))
}

type Memo = Mutex<HashMap<(String, String), Arc<Result<Interface, ReflectError>>>>;

/// The interface of `entry_point` in `wgsl`, memoized per process by text and entry point.
pub fn interface(wgsl: &str, entry_point: &str) -> Arc<Result<Interface, ReflectError>> {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    let key = (wgsl.to_string(), entry_point.to_string());
    if let Some(hit) = memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return hit;
    }
    // Computed outside the lock: two threads reflecting the same text both get equal answers.
    let result = Arc::new(reflect(wgsl, entry_point));
    if let Ok(mut m) = memo.lock() {
        m.insert(key, result.clone());
    }
    result
}

/// The interface of `entry_point` in `wgsl`, not memoized (see [`interface`]).
pub fn reflect(wgsl: &str, entry_point: &str) -> Result<Interface, ReflectError> {
    let (module, info) = parse_and_validate(wgsl)?;
    let Some(index) = module
        .entry_points
        .iter()
        .position(|e| e.name == entry_point)
    else {
        return Err(ReflectError::NoEntryPoint {
            entry_point: entry_point.to_string(),
            available: module.entry_points.iter().map(|e| e.name.clone()).collect(),
        });
    };
    let uses = info.get_entry_point(index);
    let bindings = module
        .global_variables
        .iter()
        .filter_map(|(handle, var)| {
            let binding = var.binding.as_ref()?;
            let kind = match var.space {
                AddressSpace::Storage { access } if access.contains(StorageAccess::STORE) => {
                    BindingKind::Buffer(Access::ReadWrite)
                }
                AddressSpace::Storage { .. } => BindingKind::Buffer(Access::Read),
                AddressSpace::Uniform => BindingKind::Buffer(Access::Uniform),
                _ => handle_kind(&module.types[var.ty].inner),
            };
            Some(ReflectedBinding {
                group: binding.group,
                slot: binding.binding,
                name: var.name.clone().unwrap_or_default(),
                kind,
                used: !uses[handle].is_empty(),
            })
        })
        .collect();
    Ok(Interface {
        entry_point: entry_point.to_string(),
        bindings,
    })
}

/// The kind of a handle binding: 2-D textures by their canonical WGSL type, the rest by
/// what they are.
fn handle_kind(ty: &naga::TypeInner) -> BindingKind {
    use naga::{ImageClass, ImageDimension, ScalarKind};
    let naga::TypeInner::Image {
        dim: ImageDimension::D2,
        arrayed,
        class,
    } = ty
    else {
        return BindingKind::Other(other_kind(ty));
    };
    let array = if *arrayed { "_array" } else { "" };
    let scalar = |kind: &ScalarKind| match kind {
        ScalarKind::Uint => "u32",
        ScalarKind::Sint => "i32",
        _ => "f32",
    };
    BindingKind::Texture(match class {
        ImageClass::Sampled { kind, multi: false } => {
            format!("texture_2d{array}<{}>", scalar(kind))
        }
        ImageClass::Sampled { kind, multi: true } => {
            format!("texture_multisampled_2d{array}<{}>", scalar(kind))
        }
        ImageClass::Depth { multi: false } => format!("texture_depth_2d{array}"),
        ImageClass::Depth { multi: true } => format!("texture_depth_multisampled_2d{array}"),
        ImageClass::Storage { format, access } => {
            let access = match (
                access.contains(StorageAccess::LOAD),
                access.contains(StorageAccess::STORE),
            ) {
                (true, true) => "read_write",
                (true, false) => "read",
                _ => "write",
            };
            // naga's and wgpu's format names agree once lower-cased (`R32Uint`, `r32uint`).
            let format = format!("{format:?}").to_lowercase();
            format!("texture_storage_2d{array}<{format}, {access}>")
        }
        ImageClass::External => "texture_external".into(),
    })
}

fn other_kind(ty: &naga::TypeInner) -> String {
    match ty {
        naga::TypeInner::Image { .. } => "texture".into(),
        naga::TypeInner::Sampler { .. } => "sampler".into(),
        naga::TypeInner::AccelerationStructure { .. } => "acceleration structure".into(),
        naga::TypeInner::BindingArray { .. } => "binding array".into(),
        _ => "handle".into(),
    }
}

/// A struct's byte size and member offsets as naga lays it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    /// `SizeOf` the struct (for a struct ending in a runtime array, its fixed part rounded).
    pub size: u32,
    /// `(member name, byte offset)` in declaration order.
    pub members: Vec<(String, u32)>,
}

/// The layout of struct `name` in `wgsl` (parsed, not validated), to check a `#[repr(C)]`
/// parameter struct against the shader's view of it.
pub fn struct_layout(wgsl: &str, name: &str) -> Result<StructLayout, ReflectError> {
    let module = naga::front::wgsl::parse_str(wgsl)
        .map_err(|e| ReflectError::Invalid(e.emit_to_string(wgsl)))?;
    let ty = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .map(|(_, t)| t)
        .ok_or_else(|| ReflectError::NoStruct(name.to_string()))?;
    match &ty.inner {
        naga::TypeInner::Struct { members, span } => Ok(StructLayout {
            size: *span,
            members: members
                .iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                .collect(),
        }),
        _ => Err(ReflectError::NoStruct(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_ENTRIES: &str = "
struct P { n: u32, x: f32 }
@group(0) @binding(0) var<uniform> params: P;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read_write> other: array<atomic<u32>>;
fn helper(i: u32) -> u32 { return src[i]; }
@compute @workgroup_size(1) fn a() { dst[0] = helper(params.n); }
@compute @workgroup_size(1) fn b() { atomicAdd(&other[0], 1u); }
";

    #[test]
    fn entry_points_see_their_own_uses_through_calls() {
        let a = reflect(TWO_ENTRIES, "a").unwrap();
        let used: Vec<(u32, &str, bool)> = a
            .bindings
            .iter()
            .map(|b| (b.slot, b.name.as_str(), b.used))
            .collect();
        assert_eq!(
            used,
            [
                (0, "params", true),
                (1, "src", true),
                (2, "dst", true),
                (3, "other", false)
            ]
        );
        assert_eq!(
            a.slot(0).unwrap().kind,
            BindingKind::Buffer(Access::Uniform)
        );
        assert_eq!(a.slot(1).unwrap().kind, BindingKind::Buffer(Access::Read));
        assert_eq!(
            a.slot(3).unwrap().kind,
            BindingKind::Buffer(Access::ReadWrite)
        );
        let b = reflect(TWO_ENTRIES, "b").unwrap();
        assert!(b.slot(3).unwrap().used && !b.slot(1).unwrap().used);
        assert!(matches!(
            reflect(TWO_ENTRIES, "c"),
            Err(ReflectError::NoEntryPoint { available, .. }) if available == ["a", "b"]
        ));
        assert!(matches!(
            reflect("fn (", "a"),
            Err(ReflectError::Invalid(_))
        ));
        assert_eq!(*interface(TWO_ENTRIES, "a"), Ok(a));
    }

    #[test]
    fn struct_layouts_follow_wgsl_rules() {
        let l = struct_layout(
            "struct S { a: u32, b: vec3<f32>, c: u32 }\n@compute @workgroup_size(1) fn m() {}",
            "S",
        )
        .unwrap();
        assert_eq!(l.size, 32);
        assert_eq!(
            l.members,
            [("a".to_string(), 0), ("b".into(), 16), ("c".into(), 28)]
        );
        assert_eq!(
            struct_layout("struct S { a: u32 }", "T"),
            Err(ReflectError::NoStruct("T".into()))
        );
    }
}
