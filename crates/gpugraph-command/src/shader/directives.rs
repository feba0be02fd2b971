//! The directives a [`super::ShaderSource`] resolves after selecting `#ifdef` branches:
//! `#include` (once per shader, from the recipe's registries) and `#unroll K in A..B` blocks.

use super::ShaderRegistry;

/// The file `name` of the first registry in `registries` that holds it, with its `'static`
/// name (the include-once set compares names).
fn lookup(
    registries: &[&'static ShaderRegistry],
    name: &str,
) -> Option<(&'static str, &'static str)> {
    registries.iter().find_map(|r| r.entry(name))
}

/// Appends `source` to `out` with its `#include` lines replaced by their files (once each).
pub(super) fn include(
    source: &str,
    registries: &[&'static ShaderRegistry],
    included: &mut Vec<&'static str>,
    out: &mut String,
) {
    for line in source.lines() {
        let name = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'));
        let Some(name) = name else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        match lookup(registries, name) {
            Some((n, _)) if included.contains(&n) => {}
            Some((n, text)) => {
                included.push(n);
                include(text, registries, included, out);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

/// `#unroll K in A..B` header: (name, start, end).
fn repeat_header(line: &str, constants: &[(&str, u32)]) -> Option<(String, u32, u32)> {
    let rest = line.trim().strip_prefix("#unroll ")?;
    let (name, range) = rest.split_once(" in ")?;
    let (a, b) = range.trim().split_once("..")?;
    let value = |s: &str| {
        let s = s.trim();
        s.parse::<u32>()
            .ok()
            .or_else(|| constants.iter().find(|(n, _)| *n == s).map(|(_, v)| *v))
    };
    Some((name.trim().to_string(), value(a)?, value(b)?))
}

fn is_repeat_start(line: &str) -> bool {
    line.trim().starts_with("#unroll ") && line.contains(" in ")
}

/// Expands `#unroll K in A..B` … `#end_unroll` blocks (nestable).
pub(super) fn repeat(source: &str, constants: &[(&str, u32)]) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !is_repeat_start(line) {
            out.push_str(line);
            out.push('\n');
            i += 1;
            continue;
        }
        // The matching #end_unroll.
        let mut depth = 0;
        let mut end = None;
        for (j, l) in lines.iter().enumerate().skip(i) {
            if is_repeat_start(l) {
                depth += 1;
            } else if l.trim() == "#end_unroll" {
                depth -= 1;
                if depth == 0 {
                    end = Some(j);
                    break;
                }
            }
        }
        match (repeat_header(line, constants), end) {
            (Some((name, a, b)), Some(end)) => {
                let body = lines[i + 1..end].join("\n");
                for k in a..b {
                    out.push_str(&repeat(&substitute(&body, &name, k), constants));
                }
                i = end + 1;
            }
            _ => {
                // Left in place: the parse error names the directive.
                out.push_str(line);
                out.push('\n');
                i += 1;
            }
        }
    }
    out
}

/// `text` with every occurrence of `name` that no ASCII alphanumeric touches replaced by `k`.
fn substitute(text: &str, name: &str, k: u32) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(name) {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + name.len()).copied();
            let free = |c: Option<u8>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
            if free(before) && free(after) {
                out.push_str(&k.to_string());
                i += name.len();
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_repeat_with_the_index_substituted() {
        let src = "a\n#unroll K in 1..N\nlet in_K = x_K + K * WORK;\n#unroll J in 0..2\nb_K_J;\n#end_unroll\n#end_unroll\nz\n";
        let out = repeat(src, &[("N", 3)]);
        assert_eq!(
            out,
            "a\nlet in_1 = x_1 + 1 * WORK;\nb_1_0;\nb_1_1;\nlet in_2 = x_2 + 2 * WORK;\nb_2_0;\nb_2_1;\nz\n"
        );
        // Malformed blocks stay visible.
        assert!(repeat("#unroll K in 0..M\nx\n#end_unroll\n", &[]).contains("#unroll K"));
    }

    #[test]
    fn unknown_includes_stay_visible() {
        let mut out = String::new();
        include(
            "#include \"nope.wgsl\"\n",
            &[&super::super::SHARED],
            &mut Vec::new(),
            &mut out,
        );
        assert_eq!(out, "#include \"nope.wgsl\"\n");
    }
}
