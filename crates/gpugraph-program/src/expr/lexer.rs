//! Tokens of the expression text. The lexer also recognizes the JavaScript operators the
//! language rejects (`==`, `?`, `&&`, `[`, `=`, ...) so the parser can name them in its
//! diagnostics instead of reporting an unknown character.

use crate::expr::ast::Span;
use crate::expr::error::{ExprError, ExprErrorKind};

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// A decimal numeric literal (its JavaScript value).
    Num(f64),
    /// An identifier or keyword.
    Ident(String),
    LParen,
    RParen,
    Comma,
    Dot,
    Plus,
    Minus,
    Star,
    Slash,
    /// Any other JavaScript punctuator (all unsupported): `==`, `?`, `[`, `&&`, `=`, ...
    Other(&'static str),
    Eof,
}

/// A token and its span.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Punctuators other than the supported ones, longest first so `===` wins over `==`.
const OTHER: [&str; 44] = [
    ">>>=", "===", "!==", "**=", "<<=", ">>=", ">>>", "...", "&&=", "||=", "??=", "==", "!=", "<=",
    ">=", "&&", "||", "**", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "++", "--",
    "=>", "?.", "??", "%", "<", ">", "!", "&", "|", "^", "~", "=", "?", ":",
];
const SINGLE: [&str; 5] = ["[", "]", "{", "}", ";"];

fn syntax(span: Span, msg: impl Into<String>) -> ExprError {
    ExprError::at(ExprErrorKind::Syntax, span, msg)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

fn is_ident_char(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

/// Splits `text` into tokens (ending with `Eof`).
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, ExprError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (value, end) = number(text, start)?;
            out.push(Token {
                tok: Tok::Num(value),
                span: Span::new(start, end),
            });
            i = end;
            continue;
        }
        if is_ident_start(c) {
            while i < bytes.len() && is_ident_char(bytes[i]) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(text[start..i].to_string()),
                span: Span::new(start, i),
            });
            continue;
        }
        if c == b'\'' || c == b'"' || c == b'`' {
            let end = text[i + 1..]
                .find(c as char)
                .map_or(text.len(), |k| i + 2 + k);
            return Err(ExprError::at(
                ExprErrorKind::Unsupported,
                Span::new(start, end),
                "string literals are not supported; expressions use numbers and declared names",
            ));
        }
        let simple = match c {
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b',' => Some(Tok::Comma),
            b'+' | b'-' | b'*' | b'/' | b'.'
                if !OTHER
                    .iter()
                    .chain(SINGLE.iter())
                    .any(|p| p.len() > 1 && text[i..].starts_with(p)) =>
            {
                Some(match c {
                    b'+' => Tok::Plus,
                    b'-' => Tok::Minus,
                    b'*' => Tok::Star,
                    b'/' => Tok::Slash,
                    _ => Tok::Dot,
                })
            }
            _ => None,
        };
        if let Some(tok) = simple {
            out.push(Token {
                tok,
                span: Span::new(start, start + 1),
            });
            i += 1;
            continue;
        }
        if let Some(p) = OTHER
            .iter()
            .chain(SINGLE.iter())
            .filter(|p| text[i..].starts_with(**p))
            .max_by_key(|p| p.len())
        {
            out.push(Token {
                tok: Tok::Other(p),
                span: Span::new(start, start + p.len()),
            });
            i += p.len();
            continue;
        }
        let ch = text[i..].chars().next().unwrap_or('?');
        return Err(syntax(
            Span::new(start, start + ch.len_utf8()),
            format!("unexpected character '{ch}' at offset {start}"),
        ));
    }
    out.push(Token {
        tok: Tok::Eof,
        span: Span::new(text.len(), text.len()),
    });
    Ok(out)
}

/// A JavaScript decimal literal starting at `start`: `1`, `0.25`, `.5`, `5.`, `1e-3`.
/// Hexadecimal, octal, binary, BigInt and separator forms are rejected, and so are leading
/// zeros (`010` is octal 8 in sloppy JavaScript and an error in strict mode).
fn number(text: &str, start: usize) -> Result<(f64, usize), ExprError> {
    let b = text.as_bytes();
    let mut i = start;
    let digits = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(&mut i);
    let int_end = i;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        digits(&mut i);
    }
    let mut malformed = false;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        digits(&mut j);
        malformed = j == exp_start;
        i = j;
    }
    // A letter, digit, `_` or `$` glued to the literal (`0x10`, `1n`, `1_000`, `1e`).
    let mut end = i;
    while end < b.len() && is_ident_char(b[end]) {
        end += 1;
        malformed = true;
    }
    let leading_zero = int_end - start > 1 && b[start] == b'0';
    if malformed || leading_zero {
        return Err(ExprError::at(
            ExprErrorKind::Unsupported,
            Span::new(start, end),
            format!(
                "unsupported numeric literal {}; write decimal float32 numbers such as 1, 0.25 or 1e-3",
                &text[start..end]
            ),
        ));
    }
    let value: f64 = text[start..i]
        .parse()
        .map_err(|_| syntax(Span::new(start, i), "malformed numeric literal"))?;
    if value.is_infinite() {
        // Beyond even float64 (a 5,000-digit literal, 1e400): say so instead of "Infinity".
        return Err(ExprError::at(
            ExprErrorKind::Unsupported,
            Span::new(start, i),
            out_of_range(&text[start..i]),
        ));
    }
    Ok((value, i))
}

/// The diagnostic of a literal beyond float32's range; long literals are shortened.
pub(crate) fn out_of_range(literal: &str) -> String {
    let shown = if literal.chars().count() > 24 {
        let head: String = literal.chars().take(12).collect();
        format!("{head}... ({} characters)", literal.chars().count())
    } else {
        literal.to_string()
    };
    format!(
        "numeric literal {shown} is out of range for float32 (largest finite magnitude {:e})",
        f32::MAX
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_operators_and_identifiers() {
        assert_eq!(
            toks("a.xy*-.5e1"),
            vec![
                Tok::Ident("a".into()),
                Tok::Dot,
                Tok::Ident("xy".into()),
                Tok::Star,
                Tok::Minus,
                Tok::Num(5.0),
                Tok::Eof
            ]
        );
        assert_eq!(toks("5.")[0], Tok::Num(5.0));
        assert_eq!(toks("a===b")[1], Tok::Other("==="));
        assert_eq!(toks("a**b")[1], Tok::Other("**"));
        assert_eq!(toks("a+=b")[1], Tok::Other("+="));
        assert_eq!(toks("a?.b")[1], Tok::Other("?."));
        assert_eq!(toks("a[0]")[1], Tok::Other("["));
        for bad in ["0x10", "1n", "1_000", "1e", "010", "'a'", "#"] {
            assert!(tokenize(bad).is_err(), "{bad}");
        }
    }
}
