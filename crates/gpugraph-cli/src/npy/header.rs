//! The `.npy` header: a strict parser of the Python dict literal that NumPy writes
//! (`{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }`) and of the dtype string.
//!
//! NumPy reads this text with `ast.literal_eval`; a substring search (what this replaced)
//! accepts headers NumPy would refuse or read differently: a `'shape'` inside another key's
//! string, `'fortran_order': 1`, extra keys. So the text is parsed as a Python literal (strings,
//! integers, `True`/`False`/`None`, tuples, lists, dicts), then exactly the three keys are
//! checked by type. Everything else is an error saying what was found.

use std::fmt;

/// Deepest nesting accepted: a structured dtype nests a few levels; a hostile header must not
/// overflow the stack.
const MAX_DEPTH: usize = 32;

/// Element type of the array in the file (the dtype string's kind and size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileDtype {
    /// `|b1`, stored as one byte 0 or 1.
    Bool,
    /// `|u1`
    U8,
    /// `|i1`
    I8,
    /// `<u2`
    U16,
    /// `<i2`
    I16,
    /// `<u4`
    U32,
    /// `<i4`
    I32,
    /// `<u8`
    U64,
    /// `<i8`
    I64,
    /// `<f4`
    F32,
    /// `<f8`
    F64,
    /// `<c8`: complex64, a float32 (re, im) pair.
    C64,
    /// `<c16`: complex128, a float64 (re, im) pair.
    C128,
}

impl FileDtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            FileDtype::Bool | FileDtype::U8 | FileDtype::I8 => 1,
            FileDtype::U16 | FileDtype::I16 => 2,
            FileDtype::U32 | FileDtype::I32 | FileDtype::F32 => 4,
            FileDtype::U64 | FileDtype::I64 | FileDtype::F64 | FileDtype::C64 => 8,
            FileDtype::C128 => 16,
        }
    }

    /// NumPy's name (`np.int64`).
    pub fn name(self) -> &'static str {
        match self {
            FileDtype::Bool => "bool",
            FileDtype::U8 => "uint8",
            FileDtype::I8 => "int8",
            FileDtype::U16 => "uint16",
            FileDtype::I16 => "int16",
            FileDtype::U32 => "uint32",
            FileDtype::I32 => "int32",
            FileDtype::U64 => "uint64",
            FileDtype::I64 => "int64",
            FileDtype::F32 => "float32",
            FileDtype::F64 => "float64",
            FileDtype::C64 => "complex64",
            FileDtype::C128 => "complex128",
        }
    }

    /// Whether the elements are floating point (real or complex).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            FileDtype::F32 | FileDtype::F64 | FileDtype::C64 | FileDtype::C128
        )
    }

    /// Whether the elements are complex pairs.
    pub fn is_complex(self) -> bool {
        matches!(self, FileDtype::C64 | FileDtype::C128)
    }

    /// The type of one component and the components per element (2 for complex).
    pub fn component(self) -> (FileDtype, usize) {
        match self {
            FileDtype::C64 => (FileDtype::F32, 2),
            FileDtype::C128 => (FileDtype::F64, 2),
            other => (other, 1),
        }
    }

    /// The dtype of a descr string such as `<i8`; the error says why it is refused.
    pub fn parse(descr: &str) -> Result<Self, String> {
        let unsupported = |why: &str| {
            format!("unsupported dtype '{descr}' ({why}; expected little-endian bool, int8 to int64, uint8 to uint64, float32, float64, complex64 or complex128)")
        };
        let mut chars = descr.chars();
        let order = chars.next().ok_or_else(|| unsupported("empty"))?;
        let rest = chars.as_str();
        let kind_size = match order {
            '<' | '|' => rest,
            '=' if cfg!(target_endian = "little") => rest,
            '>' => {
                return Err(format!(
                    "unsupported dtype '{descr}': big-endian; save a.astype('<{rest}')"
                ))
            }
            _ => descr,
        };
        let dtype = match kind_size {
            "b1" | "?" => FileDtype::Bool,
            "u1" => FileDtype::U8,
            "i1" => FileDtype::I8,
            "u2" => FileDtype::U16,
            "i2" => FileDtype::I16,
            "u4" => FileDtype::U32,
            "i4" => FileDtype::I32,
            "u8" => FileDtype::U64,
            "i8" => FileDtype::I64,
            "f4" => FileDtype::F32,
            "f8" => FileDtype::F64,
            "c8" => FileDtype::C64,
            "c16" => FileDtype::C128,
            k if k.starts_with('V') => {
                return Err(format!(
                    "structured dtype '{descr}' (raw records) is not supported; save each field as its own array"
                ))
            }
            k if k.starts_with('O') => return Err(unsupported("Python objects")),
            k if k.starts_with('U') || k.starts_with('S') => return Err(unsupported("strings")),
            _ => return Err(unsupported("not a numeric type read here")),
        };
        if order == '|' && dtype.size() > 1 {
            return Err(unsupported("'|' (no byte order) on a multi-byte type"));
        }
        Ok(dtype)
    }
}

/// A checked header: a C-ordered array of `dtype` with `shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Element type in the file.
    pub dtype: FileDtype,
    /// Dimensions, outermost first (empty for a 0-d array).
    pub shape: Vec<usize>,
}

/// Parses and checks header text (after the magic and length, padding included).
pub fn parse_header(text: &str) -> Result<Header, String> {
    let mut p = Parser { text, pos: 0 };
    p.skip_ws();
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos != text.len() {
        return Err(format!(
            "header has text after the dict at byte {}: {:?}",
            p.pos,
            excerpt(&text[p.pos..])
        ));
    }
    let Value::Dict(entries) = value else {
        return Err(format!("header is not a dict but {}", value.kind()));
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (key, value) in entries {
        let Value::Str(key) = key else {
            return Err(format!("header key {key} is not a string"));
        };
        let slot = match key.as_str() {
            "descr" => &mut descr,
            "fortran_order" => &mut fortran,
            "shape" => &mut shape,
            _ => {
                return Err(format!(
                    "header has an unexpected key {key:?} (an .npy header has exactly 'descr', 'fortran_order' and 'shape')"
                ))
            }
        };
        if slot.replace(value).is_some() {
            return Err(format!("header repeats the key '{key}'"));
        }
    }
    let missing = |k: &str| format!("header has no '{k}'");
    let dtype = match descr.ok_or_else(|| missing("descr"))? {
        Value::Str(s) => FileDtype::parse(&s)?,
        Value::List(fields) => {
            return Err(format!(
                "structured dtype with {} field(s) is not supported; save each field as its own array (np.save('x.npy', a['x']))",
                fields.len()
            ))
        }
        v => return Err(format!("'descr' must be a dtype string, got {v}")),
    };
    match fortran.ok_or_else(|| missing("fortran_order"))? {
        Value::Bool(false) => {}
        Value::Bool(true) => {
            return Err(
                "Fortran-ordered arrays are not supported; save np.ascontiguousarray(a)".into(),
            )
        }
        v => return Err(format!("'fortran_order' must be True or False, got {v}")),
    }
    let shape = match shape.ok_or_else(|| missing("shape"))? {
        Value::Tuple(dims) => dims
            .iter()
            .map(|d| match d {
                Value::Int(n) => usize::try_from(*n)
                    .map_err(|_| format!("'shape' has the dimension {n}, which is not a size")),
                v => Err(format!("'shape' has the non-integer dimension {v}")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        v => return Err(format!("'shape' must be a tuple of sizes, got {v}")),
    };
    Ok(Header { dtype, shape })
}

/// A Python literal of the subset `ast.literal_eval` accepts in `.npy` headers.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Int(_) => "an integer",
            Value::Bool(_) => "a boolean",
            Value::None => "None",
            Value::Tuple(_) => "a tuple",
            Value::List(_) => "a list",
            Value::Dict(_) => "a dict",
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seq = |f: &mut fmt::Formatter<'_>, items: &[Value], open, close| {
            write!(f, "{open}")?;
            for (i, v) in items.iter().enumerate() {
                write!(f, "{}{v}", if i > 0 { ", " } else { "" })?;
            }
            if open == "(" && items.len() == 1 {
                write!(f, ",")?;
            }
            write!(f, "{close}")
        };
        match self {
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Int(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Value::None => write!(f, "None"),
            Value::Tuple(items) => seq(f, items, "(", ")"),
            Value::List(items) => seq(f, items, "[", "]"),
            Value::Dict(_) => write!(f, "{{...}}"),
        }
    }
}

fn excerpt(s: &str) -> String {
    s.chars().take(24).collect()
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
    }

    fn error(&self, what: &str) -> String {
        match self.rest().chars().next() {
            None => format!("header ends where {what} was expected"),
            Some(_) => format!(
                "header has {:?} at byte {} where {what} was expected",
                excerpt(self.rest()),
                self.pos
            ),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("header nests more than {MAX_DEPTH} levels deep"));
        }
        let c = self
            .rest()
            .chars()
            .next()
            .ok_or_else(|| self.error("a value"))?;
        match c {
            '\'' | '"' => self.string(c),
            '{' => {
                self.pos += 1;
                let items = self.items('}', depth, |p, depth| {
                    let key = p.value(depth + 1)?;
                    p.skip_ws();
                    if !p.eat(':') {
                        return Err(p.error("':'"));
                    }
                    p.skip_ws();
                    Ok((key, p.value(depth + 1)?))
                })?;
                Ok(Value::Dict(items.0))
            }
            '[' => {
                self.pos += 1;
                let items = self.items(']', depth, |p, depth| p.value(depth + 1))?;
                Ok(Value::List(items.0))
            }
            '(' => {
                self.pos += 1;
                let (mut items, trailing_comma) =
                    self.items(')', depth, |p, depth| p.value(depth + 1))?;
                // `(x)` is x itself; only a comma (or nothing) makes a tuple.
                if items.len() == 1 && !trailing_comma {
                    Ok(items.remove(0))
                } else {
                    Ok(Value::Tuple(items))
                }
            }
            '-' | '+' | '0'..='9' => self.int(),
            _ => {
                for (word, v) in [
                    ("True", Value::Bool(true)),
                    ("False", Value::Bool(false)),
                    ("None", Value::None),
                ] {
                    if let Some(after) = self.rest().strip_prefix(word) {
                        if !after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                            self.pos += word.len();
                            return Ok(v);
                        }
                    }
                }
                Err(self.error("a value"))
            }
        }
    }

    /// Comma-separated items up to `close`; also says whether a comma followed the last one.
    fn items<T>(
        &mut self,
        close: char,
        depth: usize,
        mut item: impl FnMut(&mut Self, usize) -> Result<T, String>,
    ) -> Result<(Vec<T>, bool), String> {
        let mut out = Vec::new();
        let mut comma = false;
        loop {
            self.skip_ws();
            if self.eat(close) {
                return Ok((out, comma));
            }
            if !out.is_empty() && !comma {
                return Err(self.error(&format!("',' or '{close}'")));
            }
            out.push(item(self, depth)?);
            self.skip_ws();
            comma = self.eat(',');
        }
    }

    fn string(&mut self, quote: char) -> Result<Value, String> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + 1;
                    return Ok(Value::Str(out));
                }
                '\\' => match chars.next() {
                    Some((_, e @ ('\\' | '\'' | '"'))) => out.push(e),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    _ => {
                        return Err(format!(
                            "header has an unsupported escape in the string at byte {start}"
                        ))
                    }
                },
                '\n' => break,
                c => out.push(c),
            }
        }
        Err(format!("header has an unterminated string at byte {start}"))
    }

    fn int(&mut self) -> Result<Value, String> {
        let start = self.pos;
        let rest = self.rest();
        let sign_len = usize::from(rest.starts_with(['-', '+']));
        let digits = rest[sign_len..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - sign_len);
        if digits == 0 {
            return Err(self.error("a number"));
        }
        let text = rest[..sign_len + digits].to_string();
        self.pos += text.len();
        // Python 2's NumPy wrote long integers as `3L`.
        let after = self.rest();
        if after.starts_with(['L', 'l']) {
            self.pos += 1;
        } else if after.starts_with(|c: char| c.is_alphanumeric() || c == '.' || c == '_') {
            self.pos = start;
            return Err(self.error("an integer"));
        }
        let n = text
            .parse::<i128>()
            .map_err(|_| format!("header has the integer {text}, which is out of range"))?;
        Ok(Value::Int(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Result<Header, String> {
        parse_header(text)
    }

    #[test]
    fn numpy_headers_parse() {
        let h =
            header("{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }      \n").unwrap();
        assert_eq!(
            h,
            Header {
                dtype: FileDtype::U32,
                shape: vec![3]
            }
        );
        let h = header(r#"{"shape": (2, 5), "descr": "<f8", "fortran_order": False}"#).unwrap();
        assert_eq!((h.dtype, h.shape), (FileDtype::F64, vec![2, 5]));
        let h = header("{'descr': '|b1', 'fortran_order': False, 'shape': (), }").unwrap();
        assert_eq!((h.dtype, h.shape), (FileDtype::Bool, vec![]));
        let h = header("{'descr':'<i8','fortran_order':False,'shape':(7L, 1L)}").unwrap();
        assert_eq!((h.dtype, h.shape), (FileDtype::I64, vec![7, 1]));
        for (descr, dtype) in [
            ("|u1", FileDtype::U8),
            ("|i1", FileDtype::I8),
            ("<u2", FileDtype::U16),
            ("<i2", FileDtype::I16),
            ("<i4", FileDtype::I32),
            ("<u8", FileDtype::U64),
            ("<f4", FileDtype::F32),
            ("=u4", FileDtype::U32),
        ] {
            let text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (1,)}}");
            assert_eq!(header(&text).unwrap().dtype, dtype, "{descr}");
        }
    }

    fn refused(text: &str, needle: &str) {
        let e = header(text).expect_err(text);
        assert!(e.contains(needle), "{text}: {e}");
    }

    #[test]
    fn fortran_order_must_be_the_boolean_false() {
        refused(
            "{'descr': '<u4', 'fortran_order': True, 'shape': (3,)}",
            "Fortran-ordered arrays are not supported",
        );
        for v in ["1", "0", "'False'", "None", "Falsey"] {
            let text = format!("{{'descr': '<u4', 'fortran_order': {v}, 'shape': (3,)}}");
            let e = header(&text).expect_err(&text);
            assert!(
                e.contains("'fortran_order' must be True or False") || e.contains("at byte"),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn keys_are_exactly_the_three() {
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
            "unexpected key \"extra\"",
        );
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), 'shape': (4,)}",
            "repeats the key 'shape'",
        );
        refused("{'descr': '<u4', 'fortran_order': False}", "no 'shape'");
        refused("{'fortran_order': False, 'shape': (3,)}", "no 'descr'");
        refused("{'descr': '<u4', 'shape': (3,)}", "no 'fortran_order'");
        refused("{1: '<u4'}", "key 1 is not a string");
    }

    #[test]
    fn a_shape_inside_another_string_is_not_the_shape() {
        // The old substring search took the first "'shape'" it found: here, inside descr.
        refused(
            "{'descr': \"<u4'shape': (9,)\", 'fortran_order': False, 'shape': (3,)}",
            "unsupported dtype",
        );
        // And here the real shape key is missing altogether.
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'note': \"'shape': (3,)\"}",
            "unexpected key \"note\"",
        );
    }

    #[test]
    fn structured_dtypes_are_named() {
        refused(
            "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (3,)}",
            "structured dtype with 2 field(s) is not supported",
        );
        refused(
            "{'descr': '|V8', 'fortran_order': False, 'shape': (3,)}",
            "structured dtype '|V8'",
        );
    }

    #[test]
    fn bad_shapes_and_dtypes_say_what_they_got() {
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3)}",
            "'shape' must be a tuple of sizes, got 3",
        );
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (-1,)}",
            "dimension -1",
        );
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (1.5,)}",
            "where an integer was expected",
        );
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': [3]}",
            "got [3]",
        );
        refused(
            "{'descr': '<u4', 'fortran_order': False, 'shape': (99999999999999999999999999999999999999999,)}",
            "out of range",
        );
        refused(
            "{'descr': '>u4', 'fortran_order': False, 'shape': (3,)}",
            "big-endian; save a.astype('<u4')",
        );
        refused(
            "{'descr': '<f2', 'fortran_order': False, 'shape': (3,)}",
            "unsupported dtype '<f2'",
        );
        refused(
            "{'descr': '<U3', 'fortran_order': False, 'shape': (3,)}",
            "strings",
        );
        refused(
            "{'descr': '|u4', 'fortran_order': False, 'shape': (3,)}",
            "no byte order",
        );
    }

    #[test]
    fn malformed_text_is_refused_without_panicking() {
        for text in [
            "",
            "{",
            "}",
            "{'descr'}",
            "{'descr': '<u4' 'shape': (3,)}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3,)} x",
            "{'descr': '<u4\\q', 'fortran_order': False, 'shape': (3,)}",
            "{'descr': '<u4, 'fortran_order': False, 'shape': (3,)}",
            "['descr']",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (,)}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3,,)}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (- 3,)}",
            "{'descr': '<u4', 'fortran_order': Fals, 'shape': (3,)}",
            "{'d\u{e9}scr': '<u4'}",
        ] {
            assert!(header(text).is_err(), "{text:?} was accepted");
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        refused(&deep, "levels deep");
    }
}
