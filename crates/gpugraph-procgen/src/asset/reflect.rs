//! What a variant's WGSL declares, read with naga: each group-0 binding's slot, access and
//! element word, and the members of the `params` uniform struct. The asset layer checks these
//! against bindings.yaml, so slot numbers live in the WGSL only and a mismatch is refused by
//! name before any pipeline is built.

use std::collections::BTreeMap;

use naga::{AddressSpace, ScalarKind, StorageAccess, TypeInner};

use crate::column::Word;

/// One storage or uniform binding of the shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reflected {
    /// `@binding(n)` (group 0).
    pub slot: u32,
    /// Whether the shader may write it (`read_write`).
    pub writable: bool,
    /// Whether it is a uniform.
    pub uniform: bool,
    /// The word of its array's element (`None`: not an array of 32-bit scalars).
    pub word: Option<Word>,
    /// Whether the element is `atomic<…>`.
    pub atomic: bool,
}

/// The reflected interface of one variant.
#[derive(Clone, Debug, Default)]
pub struct Interface {
    /// Bindings by variable name.
    pub bindings: BTreeMap<String, Reflected>,
    /// `params` struct members in order: name and word (`None`: not a 32-bit scalar).
    pub params: Vec<(String, Option<Word>)>,
    /// The module's compute entry points, by name.
    pub compute_entries: Vec<String>,
}

fn word(kind: ScalarKind, width: u8) -> Option<Word> {
    match (kind, width) {
        (ScalarKind::Float, 4) => Some(Word::F32),
        (ScalarKind::Sint, 4) => Some(Word::I32),
        (ScalarKind::Uint, 4) => Some(Word::U32),
        _ => None,
    }
}

/// Parses and validates `wgsl`, then reads its interface; the error is naga's message.
pub fn interface(wgsl: &str) -> Result<Interface, String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .map_err(|e| e.emit_to_string(wgsl))?;
    let mut out = Interface {
        compute_entries: module
            .entry_points
            .iter()
            .filter(|e| e.stage == naga::ShaderStage::Compute)
            .map(|e| e.name.clone())
            .collect(),
        ..Interface::default()
    };
    for (_, var) in module.global_variables.iter() {
        let (Some(name), Some(binding)) = (&var.name, &var.binding) else {
            continue;
        };
        if binding.group != 0 {
            return Err(format!(
                "`{name}` is in group {}; kernels bind group 0 only",
                binding.group
            ));
        }
        let (writable, uniform) = match var.space {
            AddressSpace::Storage { access } => (access.contains(StorageAccess::STORE), false),
            AddressSpace::Uniform => (false, true),
            _ => {
                return Err(format!(
                    "`{name}` is neither a storage buffer nor a uniform"
                ))
            }
        };
        if uniform && name == "params" {
            if let TypeInner::Struct { members, .. } = &module.types[var.ty].inner {
                for m in members {
                    let w = match module.types[m.ty].inner {
                        TypeInner::Scalar(s) => word(s.kind, s.width),
                        _ => None,
                    };
                    out.params.push((m.name.clone().unwrap_or_default(), w));
                }
            }
        }
        let (word, atomic) = match &module.types[var.ty].inner {
            TypeInner::Array { base, .. } => match module.types[*base].inner {
                TypeInner::Scalar(s) => (word(s.kind, s.width), false),
                TypeInner::Atomic(s) => (word(s.kind, s.width), true),
                _ => (None, false),
            },
            _ => (None, false),
        };
        out.bindings.insert(
            name.clone(),
            Reflected {
                slot: binding.binding,
                writable,
                uniform,
                word,
                atomic,
            },
        );
    }
    Ok(out)
}
