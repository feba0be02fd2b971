//! The function table of the language (one row per callable name, with its signature and an
//! example) and the extension functions that are not in the spec: component-wise comparisons
//! (`lessThan`, ..., `notEqual`) and logic on uint32 masks (`and`, `or`, `not`).
//!
//! The checker ([`FUNCTIONS`]), the diagnostics that list the supported names, `gpugraph expr
//! --help` ([`reference()`]) and `docs/expressions.md` all read this one table, so they cannot
//! drift apart.
//!
//! Extension rules: comparisons take two operands of the same component type (float32,
//! sint32 or uint32; no implicit conversion) whose widths match or where one side has one
//! component (it broadcasts), and give one uint32 0/1 per component. Floats compare as IEEE
//! numbers: -0 equals 0, and every comparison with NaN is false except `notEqual`, which is
//! true. Integers compare exactly (signed or unsigned). `and`/`or`/`not` take uint32 masks
//! (nonzero is true; widths broadcast like comparisons) and give uint32 0/1 per component.

use crate::expr::scalar::ScalarType;

/// One callable name of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function {
    /// The name as called.
    pub name: &'static str,
    /// Parameters as written in the reference, e.g. `(x, exponent)`.
    pub params: &'static str,
    /// What it computes, in one line.
    pub summary: &'static str,
    /// An expression using it.
    pub example: &'static str,
    /// Whether it extends the spec (not part of `GPUExpressionOperation`'s syntax table).
    pub extension: bool,
}

const fn f(
    name: &'static str,
    params: &'static str,
    summary: &'static str,
    example: &'static str,
    extension: bool,
) -> Function {
    Function {
        name,
        params,
        summary,
        example,
        extension,
    }
}

/// Every function, spec functions first (in the spec's order), then the extensions.
pub const FUNCTION_TABLE: [Function; 27] = [
    f(
        "abs",
        "(x)",
        "magnitude per component (float32)",
        "abs(values)",
        false,
    ),
    f(
        "sqrt",
        "(x)",
        "square root per component; negative -> NaN (float32)",
        "sqrt(abs(values))",
        false,
    ),
    f(
        "sin",
        "(x)",
        "sine per component, radians (float32)",
        "sin(angles)",
        false,
    ),
    f(
        "cos",
        "(x)",
        "cosine per component, radians (float32)",
        "cos(angles)",
        false,
    ),
    f(
        "tan",
        "(x)",
        "tangent per component, radians (float32)",
        "tan(angles)",
        false,
    ),
    f(
        "exp",
        "(x)",
        "e to the power x per component (float32)",
        "exp(-values)",
        false,
    ),
    f(
        "log",
        "(x)",
        "natural logarithm per component; 0 -> -inf (float32)",
        "log(values + 1)",
        false,
    ),
    f(
        "pow",
        "(x, exponent)",
        "x to the power exponent per component, C99 special cases (float32)",
        "pow(values, 2)",
        false,
    ),
    f(
        "float32",
        "(x)",
        "convert to float32, width kept (integers round to nearest even)",
        "float32(ids)",
        false,
    ),
    f(
        "sint32",
        "(x)",
        "convert to sint32, width kept (truncate or nearest, then saturate; NaN -> 0)",
        "sint32(positions)",
        false,
    ),
    f(
        "uint32",
        "(x)",
        "convert to uint32, width kept (truncate or nearest, then saturate; NaN -> 0)",
        "uint32(weights * 255)",
        false,
    ),
    f(
        "vec2",
        "(a, ...)",
        "concatenate to 2 components, or replicate one",
        "vec2(uv.y, uv.x)",
        false,
    ),
    f(
        "vec3",
        "(a, ...)",
        "concatenate to 3 components, or replicate one",
        "vec3(uv, 0)",
        false,
    ),
    f(
        "vec4",
        "(a, ...)",
        "concatenate to 4 components, or replicate one",
        "vec4(positions, 1)",
        false,
    ),
    f(
        "dot",
        "(x, y)",
        "sum of component products within a row (float32, equal widths)",
        "dot(positions, directions)",
        false,
    ),
    f(
        "length",
        "(x)",
        "Euclidean magnitude of a row (float32)",
        "length(positions)",
        false,
    ),
    f(
        "equalAll",
        "(x, y)",
        "uint32 1 when every component is equal, else 0 (same type and width)",
        "equalAll(ids, targetIds)",
        false,
    ),
    f(
        "select",
        "(condition, whenTrue, whenFalse)",
        "whenTrue where condition is nonzero, else whenFalse",
        "select(mask, colors, vec4(0))",
        false,
    ),
    f(
        "lessThan",
        "(x, y)",
        "uint32 1 per component where x < y, else 0",
        "lessThan(values, 0.5)",
        true,
    ),
    f(
        "lessThanEqual",
        "(x, y)",
        "uint32 1 per component where x <= y, else 0",
        "lessThanEqual(ids, limit)",
        true,
    ),
    f(
        "greaterThan",
        "(x, y)",
        "uint32 1 per component where x > y, else 0",
        "select(greaterThan(b, 2), b, 0)",
        true,
    ),
    f(
        "greaterThanEqual",
        "(x, y)",
        "uint32 1 per component where x >= y, else 0",
        "greaterThanEqual(positions, vec3(0))",
        true,
    ),
    f(
        "equal",
        "(x, y)",
        "uint32 1 per component where x == y, else 0 (NaN equals nothing)",
        "equal(ids3, selectedId)",
        true,
    ),
    f(
        "notEqual",
        "(x, y)",
        "uint32 1 per component where x != y, else 0 (true for NaN)",
        "notEqual(values, values)",
        true,
    ),
    f(
        "and",
        "(a, b)",
        "uint32 1 per component where both uint32 masks are nonzero",
        "and(greaterThan(v, 0), lessThan(v, 1))",
        true,
    ),
    f(
        "or",
        "(a, b)",
        "uint32 1 per component where either uint32 mask is nonzero",
        "or(equal(ids, uint32(3)), equal(ids, uint32(7)))",
        true,
    ),
    f(
        "not",
        "(a)",
        "uint32 1 per component where the uint32 mask is zero",
        "not(equal(ids, uint32(0)))",
        true,
    ),
];

/// Every callable name of the language (the names of [`FUNCTION_TABLE`]).
pub const FUNCTIONS: [&str; FUNCTION_TABLE.len()] = {
    let mut out = [""; FUNCTION_TABLE.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = FUNCTION_TABLE[i].name;
        i += 1;
    }
    out
};

/// The function list of `gpugraph expr --help`: one line per function with its parameters
/// and summary, extensions marked.
pub fn reference() -> String {
    let width = FUNCTION_TABLE
        .iter()
        .map(|f| f.name.len() + f.params.len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("Functions (* = extension, not in the spec):\n");
    for f in &FUNCTION_TABLE {
        let call = format!("{}{}", f.name, f.params);
        let mark = if f.extension { "*" } else { " " };
        out.push_str(&format!("  {mark}{call:<width$}  {}\n", f.summary));
    }
    out
}

/// Component-wise one-argument float32 functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `abs`
    Abs,
    /// `sqrt`
    Sqrt,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `tan`
    Tan,
    /// `exp`
    Exp,
    /// `log` (natural logarithm)
    Log,
}

impl MathFn {
    /// The function's name in expressions and in WGSL.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Abs => "abs",
            MathFn::Sqrt => "sqrt",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Exp => "exp",
            MathFn::Log => "log",
        }
    }
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "abs" => MathFn::Abs,
            "sqrt" => MathFn::Sqrt,
            "sin" => MathFn::Sin,
            "cos" => MathFn::Cos,
            "tan" => MathFn::Tan,
            "exp" => MathFn::Exp,
            "log" => MathFn::Log,
            _ => return None,
        })
    }
}

/// Component-wise comparisons (extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareFn {
    /// `lessThan`
    Less,
    /// `lessThanEqual`
    LessEqual,
    /// `greaterThan`
    Greater,
    /// `greaterThanEqual`
    GreaterEqual,
    /// `equal`
    Equal,
    /// `notEqual`
    NotEqual,
}

impl CompareFn {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            CompareFn::Less => "lessThan",
            CompareFn::LessEqual => "lessThanEqual",
            CompareFn::Greater => "greaterThan",
            CompareFn::GreaterEqual => "greaterThanEqual",
            CompareFn::Equal => "equal",
            CompareFn::NotEqual => "notEqual",
        }
    }
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        [
            CompareFn::Less,
            CompareFn::LessEqual,
            CompareFn::Greater,
            CompareFn::GreaterEqual,
            CompareFn::Equal,
            CompareFn::NotEqual,
        ]
        .into_iter()
        .find(|f| f.name() == name)
    }
    /// The WGSL operator on integers (and on float order keys).
    pub(crate) fn wgsl_operator(self) -> &'static str {
        match self {
            CompareFn::Less => "<",
            CompareFn::LessEqual => "<=",
            CompareFn::Greater => ">",
            CompareFn::GreaterEqual => ">=",
            CompareFn::Equal => "==",
            CompareFn::NotEqual => "!=",
        }
    }
    /// The comparison of two components (bit patterns of `scalar`): IEEE for floats (NaN
    /// compares false except `notEqual`; -0 == 0), exact for integers.
    pub fn apply(self, a: u32, b: u32, scalar: ScalarType) -> bool {
        fn cmp<T: PartialOrd>(f: CompareFn, a: T, b: T) -> bool {
            match f {
                CompareFn::Less => a < b,
                CompareFn::LessEqual => a <= b,
                CompareFn::Greater => a > b,
                CompareFn::GreaterEqual => a >= b,
                CompareFn::Equal => a == b,
                CompareFn::NotEqual => a != b,
            }
        }
        match scalar {
            ScalarType::Float32 => cmp(self, f32::from_bits(a), f32::from_bits(b)),
            ScalarType::Sint32 => cmp(self, a as i32, b as i32),
            ScalarType::Uint32 => cmp(self, a, b),
        }
    }
}

/// Logic on uint32 masks (extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogicFn {
    /// `and(a, b)`
    And,
    /// `or(a, b)`
    Or,
    /// `not(a)`
    Not,
}

impl LogicFn {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            LogicFn::And => "and",
            LogicFn::Or => "or",
            LogicFn::Not => "not",
        }
    }
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        [LogicFn::And, LogicFn::Or, LogicFn::Not]
            .into_iter()
            .find(|f| f.name() == name)
    }
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            LogicFn::Not => 1,
            _ => 2,
        }
    }
    /// The result for masks `a` and `b` (`b` ignored by `not`): nonzero is true.
    pub fn apply(self, a: u32, b: u32) -> bool {
        match self {
            LogicFn::And => a != 0 && b != 0,
            LogicFn::Or => a != 0 || b != 0,
            LogicFn::Not => a == 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_comparisons_follow_ieee() {
        let nan = f32::NAN.to_bits();
        let one = 1.0f32.to_bits();
        let (z, nz) = (0.0f32.to_bits(), (-0.0f32).to_bits());
        for f in [
            CompareFn::Less,
            CompareFn::LessEqual,
            CompareFn::Greater,
            CompareFn::GreaterEqual,
            CompareFn::Equal,
        ] {
            assert!(!f.apply(nan, one, ScalarType::Float32), "{f:?}");
            assert!(!f.apply(one, nan, ScalarType::Float32), "{f:?}");
            assert!(!f.apply(nan, nan, ScalarType::Float32), "{f:?}");
        }
        assert!(CompareFn::NotEqual.apply(nan, nan, ScalarType::Float32));
        assert!(CompareFn::Equal.apply(z, nz, ScalarType::Float32));
        assert!(!CompareFn::Less.apply(nz, z, ScalarType::Float32));
        assert!(CompareFn::Less.apply(u32::MAX, 0, ScalarType::Sint32));
        assert!(!CompareFn::Less.apply(u32::MAX, 0, ScalarType::Uint32));
    }

    #[test]
    fn the_name_list_is_the_table() {
        assert_eq!(FUNCTIONS.len(), FUNCTION_TABLE.len());
        assert!(FUNCTIONS.contains(&"greaterThan") && FUNCTIONS.contains(&"select"));
        let help = reference();
        for f in &FUNCTION_TABLE {
            assert!(
                help.contains(&format!("{}{}", f.name, f.params)),
                "{}",
                f.name
            );
        }
    }

    /// docs/expressions.md documents every function of the table with its parameters.
    #[test]
    fn the_reference_document_covers_the_table() {
        let built = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/expressions.md");
        let doc = std::fs::read_to_string(built)
            .or_else(|_| std::fs::read_to_string("docs/expressions.md"))
            .expect("docs/expressions.md (from the crate or the repository root)");
        for f in &FUNCTION_TABLE {
            let call = format!("`{}{}", f.name, f.params.split(',').next().unwrap_or(""));
            assert!(doc.contains(&call), "{call} is not documented");
            assert!(
                doc.contains(f.example),
                "example {} is not documented",
                f.example
            );
        }
    }
}
