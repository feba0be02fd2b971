//! Variants of a kernel asset: a specialization (one option per specialize parameter) selects
//! the `// @when KEY value … // @end` blocks of the WGSL it names and the bindings and params
//! whose `when` it satisfies. Blocks are removed, never spliced: a variant's text is the
//! asset's text with whole lines left out.

use std::collections::BTreeMap;

use crate::error::{ProcgenError, Result};

/// One option per specialize parameter, e.g. `{COUNT: device, STAGE: table}`.
pub type Specialization = BTreeMap<String, String>;

/// `KEY=value` pairs joined by spaces, for labels and errors.
pub fn describe(spec: &Specialization) -> String {
    spec.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A `when` condition: alternatives separated by `;`, each a space-separated conjunction of
/// `KEY=value` terms (`"COUNT=plain; COUNT=device STAGE=table"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct When(Vec<Vec<(String, String)>>);

impl When {
    /// Parses `text`; `None` names the malformed term.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut alts = Vec::new();
        for alt in text.split(';') {
            let mut terms = Vec::new();
            for term in alt.split_whitespace() {
                let (k, v) = term.split_once('=').ok_or_else(|| term.to_string())?;
                if k.is_empty() || v.is_empty() {
                    return Err(term.to_string());
                }
                terms.push((k.to_string(), v.to_string()));
            }
            if terms.is_empty() {
                return Err(alt.to_string());
            }
            alts.push(terms);
        }
        Ok(When(alts))
    }

    /// Whether `spec` satisfies one of the alternatives.
    pub fn holds(&self, spec: &Specialization) -> bool {
        self.0
            .iter()
            .any(|alt| alt.iter().all(|(k, v)| spec.get(k) == Some(v)))
    }

    /// Every key the condition names.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().flatten().map(|(k, _)| k.as_str())
    }
}

/// The WGSL of the variant `spec`: each `// @when KEY value` … `// @end` block is kept when
/// `spec[KEY] == value` (several `KEY value` pairs on one line must all hold; alternatives are
/// separated by `;`, as in `// @when SEGMENTS plain; SEGMENTS device`) and removed otherwise,
/// marker lines included. Blocks nest. An unbalanced block is refused by line.
pub fn select(kernel: &str, wgsl: &str, spec: &Specialization) -> Result<String> {
    let mut out = String::with_capacity(wgsl.len());
    // One entry per open block: whether it (and every block around it) is kept.
    let mut open: Vec<(bool, usize)> = Vec::new();
    for (n, line) in wgsl.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("// @when") {
            let mut holds = false;
            for alt in rest.split(';') {
                let words: Vec<&str> = alt.split_whitespace().collect();
                if words.is_empty() || !words.len().is_multiple_of(2) {
                    return Err(ProcgenError::WhenBlock {
                        kernel: kernel.into(),
                        line: n + 1,
                        problem: "@when takes KEY value pairs",
                    });
                }
                holds |= words
                    .chunks(2)
                    .all(|kv| spec.get(kv[0]).map(String::as_str) == Some(kv[1]));
            }
            let outer = open.last().is_none_or(|o| o.0);
            open.push((outer && holds, n + 1));
            out.push('\n');
            continue;
        }
        if trimmed.starts_with("// @end") {
            if open.pop().is_none() {
                return Err(ProcgenError::WhenBlock {
                    kernel: kernel.into(),
                    line: n + 1,
                    problem: "@end without an open @when",
                });
            }
            out.push('\n');
            continue;
        }
        // Removed lines stay as empty lines so naga's line numbers match the asset's.
        if open.last().is_none_or(|o| o.0) {
            out.push_str(line);
        }
        out.push('\n');
    }
    if let Some((_, line)) = open.pop() {
        return Err(ProcgenError::WhenBlock {
            kernel: kernel.into(),
            line,
            problem: "@when without its @end",
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pairs: &[(&str, &str)]) -> Specialization {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn blocks_are_kept_only_in_the_variants_they_name() {
        let src = "a\n// @when COUNT device\nb\n// @when STAGE table\nc\n// @end\n// @end\nd\n";
        let dev = select("k", src, &spec(&[("COUNT", "device"), ("STAGE", "heads")])).unwrap();
        assert_eq!(
            dev.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>(),
            ["a", "b", "d"]
        );
        let both = select("k", src, &spec(&[("COUNT", "device"), ("STAGE", "table")])).unwrap();
        assert_eq!(
            both.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
        let plain = select("k", src, &spec(&[("COUNT", "plain"), ("STAGE", "table")])).unwrap();
        assert_eq!(
            plain.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>(),
            ["a", "d"]
        );
        assert_eq!(
            plain.lines().count(),
            src.lines().count(),
            "line numbers kept"
        );
    }

    #[test]
    fn a_block_holds_when_one_of_its_alternatives_does() {
        let src = "a\n// @when S plain; S device C x\nb\n// @end\n";
        let kept = |pairs: &[(&str, &str)]| {
            select("k", src, &spec(pairs))
                .unwrap()
                .lines()
                .any(|l| l == "b")
        };
        assert!(kept(&[("S", "plain")]));
        assert!(kept(&[("S", "device"), ("C", "x")]));
        assert!(!kept(&[("S", "device"), ("C", "y")]));
        assert!(!kept(&[("S", "none")]));
        let e = select("k", "// @when S plain;\n// @end\n", &spec(&[])).unwrap_err();
        assert!(matches!(e, ProcgenError::WhenBlock { line: 1, .. }), "{e}");
    }

    #[test]
    fn unbalanced_blocks_are_refused_by_line() {
        let e = select("k", "x\n// @when COUNT device\ny\n", &spec(&[])).unwrap_err();
        assert!(matches!(e, ProcgenError::WhenBlock { line: 2, .. }), "{e}");
        let e = select("k", "x\n// @end\n", &spec(&[])).unwrap_err();
        assert!(matches!(e, ProcgenError::WhenBlock { line: 2, .. }), "{e}");
        let e = select("k", "// @when COUNT\n// @end\n", &spec(&[])).unwrap_err();
        assert!(matches!(e, ProcgenError::WhenBlock { line: 1, .. }), "{e}");
    }

    #[test]
    fn when_conditions_are_alternatives_of_conjunctions() {
        let w = When::parse("COUNT=plain; COUNT=device STAGE=table").unwrap();
        assert!(w.holds(&spec(&[("COUNT", "plain"), ("STAGE", "heads")])));
        assert!(w.holds(&spec(&[("COUNT", "device"), ("STAGE", "table")])));
        assert!(!w.holds(&spec(&[("COUNT", "device"), ("STAGE", "heads")])));
        assert_eq!(When::parse("COUNT"), Err("COUNT".into()));
        assert!(When::parse("COUNT=plain;").is_err());
    }
}
