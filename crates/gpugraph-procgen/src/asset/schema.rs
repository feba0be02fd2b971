//! The `bindings.yaml` schema of a kernel asset: its bindings (buffer / columns), their access
//! and element, `when` conditions, outputs (count, capacity, append, live, fill), params and
//! `specialize` options.

use serde::Deserialize;

use crate::column::Word;

/// A kernel's `bindings.yaml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Entry point (default `main`).
    #[serde(default = "default_entry")]
    pub entry: String,
    /// Elements one workgroup covers along the domain (the shader's workgroup size).
    #[serde(default = "default_workgroup")]
    pub workgroup_size: u32,
    /// `rows` (default): one invocation per domain slot; `single`: one workgroup that loops
    /// over the domain itself (a scan whose carry crosses the whole run).
    #[serde(default)]
    pub dispatch: DispatchShape,
    /// Specialize parameters, each with its options; the first option is the default.
    #[serde(default)]
    pub specialize: Vec<Specialize>,
    /// The members of the shader's `params` uniform struct, in order.
    #[serde(default)]
    pub params: Vec<Param>,
    /// The bindings, buffer and columns.
    pub bindings: Vec<BindingDecl>,
}

fn default_entry() -> String {
    "main".into()
}

fn default_workgroup() -> u32 {
    64
}

/// How the dispatch covers the domain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DispatchShape {
    /// One invocation per slot.
    #[default]
    Rows,
    /// One workgroup.
    Single,
}

/// One specialize parameter.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Specialize {
    /// Its key (`COUNT`).
    pub name: String,
    /// Its options (`[plain, device]`).
    pub options: Vec<String>,
}

/// One param: a 4-byte member of the `params` uniform struct.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// Member name.
    pub name: String,
    /// Member type.
    #[serde(rename = "type")]
    pub ty: Word,
    /// Variants it exists in (see [`crate::asset::variant::When`]).
    #[serde(default)]
    pub when: Option<String>,
}

/// What a binding binds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BindingKind {
    /// One column.
    #[default]
    Buffer,
    /// A table of columns packed into one buffer (in `order`, or sorted by name).
    Columns,
}

/// How the shader uses a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read only.
    Read,
    /// Written only (an output).
    Write,
    /// Read and written (in place).
    ReadWrite,
}

impl Access {
    /// Whether the shader writes it.
    pub fn writes(self) -> bool {
        self != Access::Read
    }
}

/// The element of a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Element {
    /// f32.
    F32,
    /// i32.
    I32,
    /// u32.
    U32,
    /// Two f32.
    Vec2f,
    /// Three f32.
    Vec3f,
    /// Four f32.
    Vec4f,
}

impl Element {
    /// The word type of each lane.
    pub fn word(self) -> Word {
        match self {
            Element::I32 => Word::I32,
            Element::U32 => Word::U32,
            _ => Word::F32,
        }
    }

    /// Lanes per element.
    pub fn lanes(self) -> u32 {
        match self {
            Element::Vec2f => 2,
            Element::Vec3f => 3,
            Element::Vec4f => 4,
            _ => 1,
        }
    }
}

/// A size: a number, or a product of terms (`domain`, a param, a bind name, a number) such as
/// `"domain * k"`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// A fixed number of elements.
    Number(u64),
    /// A product of terms.
    Expr(String),
}

/// One binding.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingDecl {
    /// The WGSL variable's name.
    pub name: String,
    /// buffer (default) or columns.
    #[serde(default)]
    pub kind: BindingKind,
    /// read, write or read_write.
    pub access: Access,
    /// The element the shader reads.
    pub element: Element,
    /// Words per element when more than the element's lanes (an index pair: `u32`, 2).
    #[serde(default)]
    pub lanes: Option<u32>,
    /// Variants the binding exists in.
    #[serde(default)]
    pub when: Option<String>,
    /// A columns binding's slot order (`"shapeKind center extent"`).
    #[serde(default)]
    pub order: Option<String>,
    /// An output's element count (`domain`, a param or bind name, a number, a product).
    #[serde(default)]
    pub count: Option<Size>,
    /// An appended output's capacity.
    #[serde(default)]
    pub capacity: Option<Size>,
    /// Appended: slots are taken through the one-word counter `<name>_count`, which the shader
    /// declares as `array<atomic<u32>>` and the op returns as the output's live count.
    #[serde(default)]
    pub append: bool,
    /// An appended output that takes its slots through another output's counter.
    #[serde(default)]
    pub counter: Option<String>,
    /// The output carries the count its dispatch ran over as its live count.
    #[serde(default)]
    pub live: bool,
    /// The value every slot holds before the dispatch (an appended output's slots past the
    /// count keep it).
    #[serde(default)]
    pub fill: Option<f64>,
}

impl BindingDecl {
    /// Words per element.
    pub fn lanes(&self) -> u32 {
        self.lanes.unwrap_or_else(|| self.element.lanes())
    }

    /// Whether this is an output the op allocates or copies (a written buffer binding).
    pub fn is_output(&self) -> bool {
        self.kind == BindingKind::Buffer && self.access.writes()
    }

    /// The name of the counter binding an appended output declares.
    pub fn counter_binding(&self) -> Option<String> {
        self.append.then(|| format!("{}_count", self.name))
    }
}
