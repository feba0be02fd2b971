//! Our one-line WGSL preprocessor: specializations of one kernel file are selected by
//! `#ifdef` lines instead of being copied (as in vello's shader permutations).

/// Resolves `#ifdef NAME`, `#ifndef NAME`, `#else` and `#endif` lines (nestable) against the
/// set of defined names. Directive lines are dropped; other lines are kept when every enclosing
/// condition holds. The input is our own source, so a malformed nesting is a bug caught by the
/// naga tests of each kernel: unbalanced `#endif`/`#else` lines are ignored rather than reported.
pub(crate) fn preprocess(source: &str, defines: &[&str]) -> String {
    let mut out = String::with_capacity(source.len());
    // One entry per open #ifdef/#ifndef: whether its current branch is taken. A line is kept
    // when every entry is.
    let mut stack: Vec<bool> = Vec::new();
    for line in source.lines() {
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix("#ifdef ") {
            stack.push(defines.contains(&name.trim()));
        } else if let Some(name) = trimmed.strip_prefix("#ifndef ") {
            stack.push(!defines.contains(&name.trim()));
        } else if trimmed.starts_with("#else") {
            if let Some(top) = stack.last_mut() {
                *top = !*top;
            }
        } else if trimmed.starts_with("#endif") {
            stack.pop();
        } else if stack.iter().all(|&on| on) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Expands every `for (var X = 0u; X < N; X += 1u) {` loop that follows a `#unroll` line into
/// N blocks `{ let X = k; body }`, N a literal or a name in `constants`; with `enabled` false the
/// `#unroll` lines are only dropped. Why: private arrays indexed by a loop counter may be
/// placed in slow local memory by some compilers (seen on NVIDIA: a reduction ran 3x faster
/// once its loads were straight-line code); constant indices keep them in registers. Bodies
/// with `break`/`continue`, or loops of another shape, are left as loops.
pub(crate) fn unroll(source: &str, constants: &[(&str, u32)], enabled: bool) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = String::with_capacity(source.len());
    expand(&lines, constants, enabled, &mut out);
    out
}

fn expand(lines: &[&str], constants: &[(&str, u32)], enabled: bool, out: &mut String) {
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() != "#unroll" {
            out.push_str(line);
            out.push('\n');
            i += 1;
            continue;
        }
        i += 1;
        let Some(header) = lines.get(i) else { break };
        let end = closing_line(lines, i);
        let parsed = loop_header(header, constants).filter(|_| enabled);
        let body = &lines[(i + 1).min(end)..end];
        let plain = !body.iter().any(|l| {
            let code = l.split("//").next().unwrap_or("");
            code.contains("break") || code.contains("continue")
        });
        match parsed.filter(|_| plain) {
            Some((var, count)) => {
                let indent: String = header.chars().take_while(|c| c.is_whitespace()).collect();
                for k in 0..count {
                    out.push_str(&format!("{indent}{{\n{indent}    let {var} = {k}u;\n"));
                    expand(body, constants, enabled, out);
                    out.push_str(&format!("{indent}}}\n"));
                }
            }
            None => {
                // Keep the loop; still expand directives nested in it.
                out.push_str(header);
                out.push('\n');
                expand(body, constants, enabled, out);
                if let Some(close) = lines.get(end) {
                    out.push_str(close);
                    out.push('\n');
                }
            }
        }
        i = end + 1;
    }
}

/// The index of the line holding the brace that closes the block opened on line `start`.
fn closing_line(lines: &[&str], start: usize) -> usize {
    let mut depth = 0i32;
    for (j, l) in lines.iter().enumerate().skip(start) {
        let code = l.split("//").next().unwrap_or("");
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        if depth <= 0 && j > start {
            return j;
        }
    }
    lines.len()
}

/// `(variable, trip count)` of `for (var X = 0u; X < N; X += 1u) {`.
fn loop_header(line: &str, constants: &[(&str, u32)]) -> Option<(String, u32)> {
    let inner = line.trim().strip_prefix("for (var ")?.strip_suffix(") {")?;
    let mut parts = inner.split(';').map(str::trim);
    let var = parts.next()?.strip_suffix("= 0u")?.trim().to_string();
    let bound = parts.next()?.strip_prefix(&format!("{var} <"))?.trim();
    let step = parts.next()?;
    if step != format!("{var} += 1u") || parts.next().is_some() {
        return None;
    }
    let count = match bound.strip_suffix('u').and_then(|n| n.parse().ok()) {
        Some(n) => n,
        None => constants.iter().find(|(name, _)| *name == bound)?.1,
    };
    Some((var, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unroll_expands_counted_loops_and_keeps_others() {
        let src = "fn f() {\n#unroll\n    for (var i = 0u; i < N; i += 1u) {\n        a[i] = i;\n#unroll\n        for (var c = 0u; c < 2u; c += 1u) {\n            b[c] = 0u;\n        }\n    }\n}\n";
        let out = unroll(src, &[("N", 2)], true);
        assert_eq!(out.matches("let i = ").count(), 2);
        assert_eq!(out.matches("let c = ").count(), 4);
        assert!(!out.contains("for ("), "{out}");
        let kept = unroll(src, &[("N", 2)], false);
        assert_eq!(kept.matches("for (").count(), 2);
        assert!(!kept.contains("#unroll"));
        let with_break = "#unroll\nfor (var i = 0u; i < 3u; i += 1u) {\n    if x { break; }\n}\n";
        assert!(unroll(with_break, &[], true).contains("for ("));
        let other = "#unroll\nfor (var i = 1u; i < 3u; i += 1u) {\n    y();\n}\n";
        assert!(unroll(other, &[], true).contains("for ("));
    }

    #[test]
    fn preprocessor_nests() {
        let src = "a\n#ifdef X\nb\n#ifdef Y\nc\n#else\nd\n#endif\n#else\ne\n#endif\n#ifndef Y\nf\n#endif\n";
        assert_eq!(preprocess(src, &["X"]), "a\nb\nd\nf\n");
        assert_eq!(preprocess(src, &["X", "Y"]), "a\nb\nc\n");
        assert_eq!(preprocess(src, &["Y"]), "a\ne\n");
    }
}
