//! Device columns: 32-bit words typed by what they hold, with a capacity and, for the output of
//! an append or a count the device holds, a live count in a one-word device buffer.

use gpugraph_command::wgpu;

/// What a column's words hold. An Int column holds i32, a UInt column u32, every other type
/// f32 (`column:element()`); vector types hold their lanes packed, element after element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// One f32 per element.
    Float,
    /// One i32 per element.
    Int,
    /// One u32 per element.
    UInt,
    /// Two f32 lanes.
    Vec2,
    /// Three f32 lanes.
    Vec3,
    /// Four f32 lanes.
    Vec4,
    /// Four f32 lanes (r, g, b, a).
    Color,
    /// Text: one u32 per element, the index of its value in the column's [`Column::text`]
    /// (a list of text, or `{ type = "String", values = ... }`, uploads as one).
    String,
}

/// The word type of a column or binding element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Word {
    /// f32.
    F32,
    /// i32.
    I32,
    /// u32.
    U32,
}

impl Word {
    /// The WGSL name.
    pub fn wgsl(self) -> &'static str {
        match self {
            Word::F32 => "f32",
            Word::I32 => "i32",
            Word::U32 => "u32",
        }
    }

    /// The bits of `value` as this word type, `None` when the value is not exactly one.
    pub fn bits_of(self, value: f64) -> Option<u32> {
        match self {
            Word::F32 => Some((value as f32).to_bits()),
            Word::I32 => {
                (value.fract() == 0.0 && value >= i32::MIN as f64 && value <= i32::MAX as f64)
                    .then_some(value as i32 as u32)
            }
            Word::U32 => (value.fract() == 0.0 && value >= 0.0 && value <= u32::MAX as f64)
                .then_some(value as u32),
        }
    }

    /// The number `bits` holds as this word type.
    pub fn value_of(self, bits: u32) -> f64 {
        match self {
            Word::F32 => f32::from_bits(bits) as f64,
            Word::I32 => bits as i32 as f64,
            Word::U32 => bits as f64,
        }
    }
}

impl ColumnType {
    /// Words per element.
    pub fn lanes(self) -> u32 {
        match self {
            ColumnType::Float | ColumnType::Int | ColumnType::UInt | ColumnType::String => 1,
            ColumnType::Vec2 => 2,
            ColumnType::Vec3 => 3,
            ColumnType::Vec4 | ColumnType::Color => 4,
        }
    }

    /// The word type of each lane.
    pub fn word(self) -> Word {
        match self {
            ColumnType::Int => Word::I32,
            ColumnType::UInt | ColumnType::String => Word::U32,
            _ => Word::F32,
        }
    }

    /// The column type a binding of `word` × `lanes` writes (Int for i32, UInt for u32,
    /// Float or the vector of its lanes for f32).
    pub fn of(word: Word, lanes: u32) -> Self {
        match (word, lanes) {
            (Word::I32, _) => ColumnType::Int,
            (Word::U32, _) => ColumnType::UInt,
            (Word::F32, 2) => ColumnType::Vec2,
            (Word::F32, 3) => ColumnType::Vec3,
            (Word::F32, 4) => ColumnType::Vec4,
            (Word::F32, _) => ColumnType::Float,
        }
    }

    /// The name transfer.upload and BufferRef use.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Float => "Float",
            ColumnType::Int => "Int",
            ColumnType::UInt => "UInt",
            ColumnType::Vec2 => "Vec2",
            ColumnType::Vec3 => "Vec3",
            ColumnType::Vec4 => "Vec4",
            ColumnType::Color => "Color",
            ColumnType::String => "String",
        }
    }

    /// The type of `name` (as [`ColumnType::name`] writes it).
    pub fn from_name(name: &str) -> Option<Self> {
        [
            ColumnType::Float,
            ColumnType::Int,
            ColumnType::UInt,
            ColumnType::Vec2,
            ColumnType::Vec3,
            ColumnType::Vec4,
            ColumnType::Color,
            ColumnType::String,
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }
}

/// A count the device holds in one u32 word, with the most it can reach. A kernel dispatched
/// over it covers `capacity` and reads `min(count, capacity)`; nothing crosses to the CPU.
#[derive(Clone, Debug)]
pub struct LiveCount {
    /// The buffer whose first word is the count.
    pub word: wgpu::Buffer,
    /// The most the count can reach (the room allocated for what it counts).
    pub capacity: u64,
}

impl PartialEq for LiveCount {
    fn eq(&self, other: &Self) -> bool {
        self.word == other.word && self.capacity == other.capacity
    }
}

/// A device column: `capacity` elements of `lanes` 32-bit words each, in `buffer` from byte 0.
/// `live` is the live count of an appended output (or a column `device.live` gave one): a
/// reader takes the first `min(count, capacity)` elements only.
#[derive(Clone, Debug)]
pub struct Column {
    /// The device buffer (at least 16 bytes, so an empty column still binds).
    pub buffer: wgpu::Buffer,
    /// What the words hold.
    pub ty: ColumnType,
    /// Words per element (the type's lanes unless an output states more, e.g. index pairs).
    pub lanes: u32,
    /// Elements allocated (`_capacity`).
    pub capacity: u64,
    /// The live count (`_liveCount`), when the column carries one.
    pub live: Option<LiveCount>,
    /// A String column's values: element `i` is `text[words[i]]`. `None` for every other type
    /// (a kernel's copy of a String column is the UInt column of its indices).
    pub text: Option<std::sync::Arc<Vec<String>>>,
}

impl Column {
    /// Words the column spans.
    pub fn words(&self) -> u64 {
        self.capacity * u64::from(self.lanes)
    }

    /// The word type of its elements (`column:element()`).
    pub fn element(&self) -> Word {
        self.ty.word()
    }

    /// The same column carrying `live` as its live count (device.live).
    pub fn with_live(&self, live: LiveCount) -> Column {
        Column {
            live: Some(live),
            ..self.clone()
        }
    }

    /// Whether two columns are the same device run.
    pub fn same_buffer(&self, other: &Column) -> bool {
        self.buffer == other.buffer
    }
}

/// Bytes a column of `words` words allocates: at least 16, a multiple of 4.
pub(crate) fn column_bytes(words: u64) -> u64 {
    (words * 4).max(16)
}
