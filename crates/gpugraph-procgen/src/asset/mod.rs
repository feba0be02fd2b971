//! Kernel assets: a WGSL compute shader and its `bindings.yaml`, resolved from a literal
//! identity (`asset.resolve("procgen/gather", "computeShader")`), and their variants, each
//! checked against the WGSL it selects (slots, access, element words, params, the storage
//! buffer limit) before anything is built.

pub mod reflect;
pub mod schema;
pub mod variant;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::column::Word;
use crate::error::{ProcgenError, Result};
pub use schema::{Access, BindingDecl, BindingKind, DispatchShape, Element, Param, Schema, Size};
pub use variant::{Specialization, When};

/// Storage buffers one stage may bind (the web's limit, which the kernels keep everywhere).
pub const STORAGE_LIMIT: usize = 8;

/// The asset kind device.kernel takes.
pub const COMPUTE_SHADER: &str = "computeShader";

/// A resolved compute-shader asset.
#[derive(Debug)]
pub struct KernelAsset {
    /// Its literal identity (`procgen/gather`).
    pub identity: String,
    /// kernel.wgsl as written (with its `// @when` blocks).
    pub wgsl: String,
    /// bindings.yaml.
    pub schema: Schema,
    variants: Mutex<HashMap<String, Arc<Variant>>>,
}

/// A binding of one variant, at the slot its WGSL declares.
#[derive(Clone, Debug)]
pub struct SlotBinding {
    /// The schema entry.
    pub decl: BindingDecl,
    /// `@binding(n)`.
    pub slot: u32,
}

/// One checked variant of a kernel.
#[derive(Debug)]
pub struct Variant {
    /// Its specialization.
    pub spec: Specialization,
    /// `KEY=value …`, for labels and errors.
    pub label: String,
    /// The WGSL with the other variants' blocks removed.
    pub wgsl: String,
    /// Bindings that exist in this variant, schema order.
    pub bindings: Vec<SlotBinding>,
    /// Counter bindings of appended outputs: (output name, slot).
    pub counters: Vec<(String, u32)>,
    /// Params of this variant in struct order, and the `params` uniform's slot.
    pub params: Vec<Param>,
    /// The `params` uniform's slot (when there are params).
    pub params_slot: Option<u32>,
    /// Storage buffers the variant binds (counters and domain_count included).
    pub storage_buffers: usize,
}

impl Variant {
    /// `abi.directLimit`: how many more direct (buffer) columns the variant could take within
    /// the [`STORAGE_LIMIT`] storage buffers a stage binds. It counts every buffer binding the
    /// schema declares in the variant — `domain_count`, counters of appended outputs and the
    /// packed buffer of a columns binding included — so a `COUNT=device` variant has one direct
    /// column fewer than its plain one.
    pub fn direct_limit(&self) -> usize {
        STORAGE_LIMIT.saturating_sub(self.storage_buffers)
    }

    /// The binding named `name`.
    pub fn binding(&self, name: &str) -> Option<&SlotBinding> {
        self.bindings.iter().find(|b| b.decl.name == name)
    }
}

fn schema_field(
    kernel: &str,
    field: &'static str,
    name: &str,
    problem: &'static str,
) -> ProcgenError {
    ProcgenError::SchemaField {
        kernel: kernel.into(),
        field,
        name: name.into(),
        problem,
    }
}

impl KernelAsset {
    /// The asset `identity` of `wgsl` and `yaml`, after checking the schema is consistent
    /// (unique names, `when` over declared keys, counters of appended outputs).
    pub fn new(identity: &str, wgsl: &str, yaml: &str) -> Result<Self> {
        let schema: Schema =
            serde_norway::from_str(yaml).map_err(|source| ProcgenError::Schema {
                kernel: identity.into(),
                source,
            })?;
        let keys: Vec<&str> = schema.specialize.iter().map(|s| s.name.as_str()).collect();
        let mut seen = std::collections::HashSet::new();
        for s in &schema.specialize {
            if s.options.is_empty() {
                return Err(schema_field(
                    identity,
                    "specialize",
                    &s.name,
                    "has no options",
                ));
            }
        }
        let whens = schema
            .bindings
            .iter()
            .map(|b| ("binding", &b.name, &b.when))
            .chain(schema.params.iter().map(|p| ("param", &p.name, &p.when)));
        for (field, name, when) in whens {
            if let Some(w) = when {
                let w = When::parse(w)
                    .map_err(|_| schema_field(identity, field, name, "has a malformed when"))?;
                if w.keys().any(|k| !keys.contains(&k)) {
                    return Err(schema_field(
                        identity,
                        field,
                        name,
                        "has a when over an undeclared specialize key",
                    ));
                }
            }
        }
        // A name may be declared more than once when no specialization holds two of its
        // `when`s (an output sized one way in one variant and another way in another).
        let specs = specializations(&schema.specialize);
        for b in &schema.bindings {
            if !seen.insert(b.name.as_str()) {
                let twice = specs.iter().any(|spec| {
                    schema
                        .bindings
                        .iter()
                        .filter(|o| o.name == b.name)
                        .filter(|o| {
                            o.when.as_ref().is_none_or(|w| {
                                When::parse(w).map(|w| w.holds(spec)).unwrap_or(true)
                            })
                        })
                        .count()
                        > 1
                });
                if twice {
                    return Err(schema_field(
                        identity,
                        "binding",
                        &b.name,
                        "is declared twice in one variant",
                    ));
                }
            }
            if let Some(c) = &b.counter {
                if !schema.bindings.iter().any(|o| &o.name == c && o.append) {
                    return Err(schema_field(
                        identity,
                        "output",
                        &b.name,
                        "names a counter of no appended output",
                    ));
                }
            }
            if (b.append || b.counter.is_some()) && !b.is_output() {
                return Err(schema_field(
                    identity,
                    "output",
                    &b.name,
                    "appends but is not a written buffer",
                ));
            }
            if b.lanes == Some(0) {
                return Err(schema_field(identity, "binding", &b.name, "has 0 lanes"));
            }
        }
        Ok(Self {
            identity: identity.into(),
            wgsl: wgsl.into(),
            schema,
            variants: Mutex::new(HashMap::new()),
        })
    }

    /// `spec` completed with each specialize parameter's first option, after refusing names
    /// and options the kernel does not declare.
    pub fn complete(&self, spec: &Specialization) -> Result<Specialization> {
        for (k, v) in spec {
            let Some(decl) = self.schema.specialize.iter().find(|s| &s.name == k) else {
                return Err(ProcgenError::UnknownSpecialize {
                    kernel: self.identity.clone(),
                    name: k.clone(),
                });
            };
            if !decl.options.contains(v) {
                return Err(ProcgenError::SpecializeOption {
                    kernel: self.identity.clone(),
                    name: k.clone(),
                    value: v.clone(),
                    options: decl.options.join(" "),
                });
            }
        }
        Ok(self
            .schema
            .specialize
            .iter()
            .map(|s| {
                let v = spec
                    .get(&s.name)
                    .cloned()
                    .unwrap_or_else(|| s.options[0].clone());
                (s.name.clone(), v)
            })
            .collect())
    }

    /// Whether the kernel can run over a live count (it has a `COUNT=device` variant or a
    /// `domain_count` binding in every variant).
    pub fn reads_live_counts(&self) -> bool {
        self.schema
            .specialize
            .iter()
            .any(|s| s.name == "COUNT" && s.options.iter().any(|o| o == "device"))
            || self
                .schema
                .bindings
                .iter()
                .any(|b| b.name == "domain_count" && b.when.is_none())
    }

    /// Every specialization the schema allows.
    pub fn all_specializations(&self) -> Vec<Specialization> {
        specializations(&self.schema.specialize)
    }

    /// The checked variant of `spec` (completed with defaults), built once per asset.
    pub fn variant(&self, spec: &Specialization) -> Result<Arc<Variant>> {
        let spec = self.complete(spec)?;
        let label = variant::describe(&spec);
        if let Some(v) = self.variants.lock().expect("variant cache").get(&label) {
            return Ok(v.clone());
        }
        let v = Arc::new(self.build_variant(spec, label.clone())?);
        self.variants
            .lock()
            .expect("variant cache")
            .insert(label, v.clone());
        Ok(v)
    }

    fn build_variant(&self, spec: Specialization, label: String) -> Result<Variant> {
        let kernel = &self.identity;
        let wgsl = variant::select(kernel, &self.wgsl, &spec)?;
        let iface = reflect::interface(&wgsl).map_err(|message| ProcgenError::Wgsl {
            kernel: kernel.clone(),
            variant: label.clone(),
            message,
        })?;
        // Without this, a missing entry point surfaces as wgpu's validation dump at the
        // first dispatch instead of one line naming the kernel.
        if !iface.compute_entries.contains(&self.schema.entry) {
            return Err(ProcgenError::Wgsl {
                kernel: kernel.clone(),
                variant: label.clone(),
                message: format!(
                    "no compute entry point `{}` (bindings.yaml `entry`); the WGSL has {}",
                    self.schema.entry,
                    if iface.compute_entries.is_empty() {
                        "none".to_string()
                    } else {
                        iface
                            .compute_entries
                            .iter()
                            .map(|e| format!("`{e}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            });
        }
        let holds = |w: &Option<String>| {
            w.as_ref()
                .is_none_or(|w| When::parse(w).map(|w| w.holds(&spec)).unwrap_or(false))
        };
        let mismatch = |name: &str, wgsl: String, yaml: String| ProcgenError::SchemaMismatch {
            kernel: kernel.clone(),
            variant: label.clone(),
            name: name.into(),
            wgsl,
            yaml,
        };
        let mut bindings = Vec::new();
        let mut counters = Vec::new();
        let mut claimed = vec!["params".to_string()];
        for decl in self.schema.bindings.iter().filter(|b| holds(&b.when)) {
            let Some(r) = iface.bindings.get(&decl.name) else {
                return Err(mismatch(
                    &decl.name,
                    "not declared".into(),
                    "a binding".into(),
                ));
            };
            let want_word = decl.element.word();
            if r.uniform || r.writable != decl.access.writes() || r.word != Some(want_word) {
                return Err(mismatch(
                    &decl.name,
                    format!(
                        "{} of {}",
                        if r.uniform {
                            "uniform"
                        } else if r.writable {
                            "read_write"
                        } else {
                            "read"
                        },
                        r.word.map_or("non-32-bit words", Word::wgsl)
                    ),
                    format!("{:?} of {}", decl.access, want_word.wgsl()),
                ));
            }
            claimed.push(decl.name.clone());
            bindings.push(SlotBinding {
                decl: decl.clone(),
                slot: r.slot,
            });
            if let Some(cname) = decl.counter_binding() {
                match iface.bindings.get(&cname) {
                    Some(c) if c.writable && c.atomic && c.word == Some(Word::U32) => {
                        counters.push((decl.name.clone(), c.slot));
                        claimed.push(cname);
                    }
                    _ => {
                        return Err(mismatch(
                            &cname,
                            "not a read_write array<atomic<u32>>".into(),
                            "the counter of an appended output".into(),
                        ))
                    }
                }
            }
        }
        if let Some(extra) = iface.bindings.keys().find(|k| !claimed.contains(k)) {
            return Err(mismatch(
                extra,
                "a binding".into(),
                "not declared in this variant".into(),
            ));
        }
        let params: Vec<Param> = self
            .schema
            .params
            .iter()
            .filter(|p| holds(&p.when))
            .cloned()
            .collect();
        let declared: Vec<(String, Option<Word>)> = params
            .iter()
            .map(|p| (p.name.clone(), Some(p.ty)))
            .collect();
        if declared != iface.params {
            let show = |ps: &[(String, Option<Word>)]| {
                ps.iter()
                    .map(|(n, w)| format!("{n}: {}", w.map_or("?", Word::wgsl)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(mismatch("params", show(&iface.params), show(&declared)));
        }
        let params_slot = iface.bindings.get("params").map(|r| r.slot);
        if !params.is_empty() && params_slot.is_none() {
            return Err(mismatch(
                "params",
                "not declared".into(),
                "a uniform struct".into(),
            ));
        }
        let storage_buffers = bindings.len() + counters.len();
        if storage_buffers > STORAGE_LIMIT {
            return Err(ProcgenError::StorageLimit {
                kernel: kernel.clone(),
                variant: label,
                count: storage_buffers,
                limit: STORAGE_LIMIT,
            });
        }
        Ok(Variant {
            spec,
            label,
            wgsl,
            bindings,
            counters,
            params,
            params_slot,
            storage_buffers,
        })
    }
}

/// Every combination of one option per specialize parameter.
fn specializations(params: &[schema::Specialize]) -> Vec<Specialization> {
    let mut out = vec![Specialization::new()];
    for s in params {
        out = out
            .into_iter()
            .flat_map(|base| {
                s.options.iter().map(move |o| {
                    let mut m = base.clone();
                    m.insert(s.name.clone(), o.clone());
                    m
                })
            })
            .collect();
    }
    out
}

macro_rules! builtin {
    ($name:literal) => {
        (
            concat!("procgen/", $name),
            include_str!(concat!("../../assets/procgen/", $name, "/kernel.wgsl")),
            include_str!(concat!("../../assets/procgen/", $name, "/bindings.yaml")),
        )
    };
}

/// The kernels this crate ships (`procgen/<name>`), in the source tree under `assets/`.
pub const BUILTIN: &[(&str, &str, &str)] = &[
    builtin!("gather"),
    builtin!("compact"),
    builtin!("scan"),
    builtin!("jump"),
    builtin!("expand"),
    builtin!("hash_hook"),
    builtin!("hash_gather"),
    builtin!("scatter_points"),
    builtin!("predicate_keep"),
    builtin!("reduce"),
    builtin!("scatter"),
];

/// Where assets are found: the built-in kernels and directories of
/// `<root>/<namespace>/<name>/{kernel.wgsl,bindings.yaml}`.
#[derive(Debug, Default)]
pub struct AssetLibrary {
    roots: Vec<PathBuf>,
    loaded: Mutex<BTreeMap<String, Arc<KernelAsset>>>,
}

/// Whether `identity` is a literal `<namespace>/<name>` (letters, digits, `_`, `-`).
pub fn is_identity(identity: &str) -> bool {
    let mut parts = identity.split('/');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

impl AssetLibrary {
    /// The built-in kernels only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also resolves identities under `root`, whether or not it exists (a script's optional
    /// `assets/` folder). For a root someone named, use [`AssetLibrary::with_existing_root`].
    pub fn with_root(mut self, root: impl AsRef<Path>) -> Self {
        self.roots.push(root.as_ref().to_path_buf());
        self
    }

    /// Also resolves identities under `root`, which must be a directory that can be read: a
    /// root that is missing, not a directory or unreadable is refused with
    /// [`ProcgenError::AssetRoot`] naming it (instead of resolving nothing from it).
    pub fn with_existing_root(self, root: impl AsRef<Path>) -> Result<Self> {
        let path = root.as_ref();
        let refuse = |problem: String| ProcgenError::AssetRoot {
            path: path.to_path_buf(),
            problem,
        };
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(refuse("is not a directory".into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(refuse("does not exist".into()))
            }
            Err(e) => return Err(refuse(format!("cannot be read: {e}"))),
        }
        std::fs::read_dir(path).map_err(|e| refuse(format!("cannot be read: {e}")))?;
        Ok(self.with_root(path))
    }

    /// `asset.resolve(identity, kind)`: the compute shader of a literal identity. A name that
    /// is not `<namespace>/<name>` is refused, as is any kind but `computeShader`.
    pub fn resolve(&self, identity: &str, kind: &str) -> Result<Arc<KernelAsset>> {
        if !is_identity(identity) {
            return Err(ProcgenError::NotAnIdentity {
                identity: identity.into(),
            });
        }
        if kind != COMPUTE_SHADER {
            return Err(ProcgenError::UnsupportedAssetKind {
                identity: identity.into(),
                kind: kind.into(),
            });
        }
        if let Some(a) = self.loaded.lock().expect("asset cache").get(identity) {
            return Ok(a.clone());
        }
        let asset = if let Some((_, w, y)) = BUILTIN.iter().find(|(id, _, _)| *id == identity) {
            KernelAsset::new(identity, w, y)?
        } else {
            let found = self.roots.iter().find_map(|r| {
                let dir = r.join(identity);
                let wgsl = std::fs::read_to_string(dir.join("kernel.wgsl")).ok()?;
                let yaml = std::fs::read_to_string(dir.join("bindings.yaml")).ok()?;
                Some((wgsl, yaml))
            });
            let Some((w, y)) = found else {
                return Err(ProcgenError::UnknownAsset {
                    identity: identity.into(),
                    kind: kind.into(),
                });
            };
            KernelAsset::new(identity, &w, &y)?
        };
        let asset = Arc::new(asset);
        self.loaded
            .lock()
            .expect("asset cache")
            .insert(identity.into(), asset.clone());
        Ok(asset)
    }
}
