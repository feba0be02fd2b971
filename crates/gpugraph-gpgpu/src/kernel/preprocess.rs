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

/// Testing: parses and validates `source` with naga (all capabilities), the compile check every
/// generated variant gets without a device. The error is naga's annotated report.
#[cfg(test)]
pub(crate) fn validate_wgsl(source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map(drop)
    .map_err(|e| e.emit_to_string(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocessor_nests() {
        let src = "a\n#ifdef X\nb\n#ifdef Y\nc\n#else\nd\n#endif\n#else\ne\n#endif\n#ifndef Y\nf\n#endif\n";
        assert_eq!(preprocess(src, &["X"]), "a\nb\nd\nf\n");
        assert_eq!(preprocess(src, &["X", "Y"]), "a\nb\nc\n");
        assert_eq!(preprocess(src, &["Y"]), "a\ne\n");
    }
}
