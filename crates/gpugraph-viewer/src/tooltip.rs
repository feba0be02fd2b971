//! [`Tooltip`]: what the viewer says about one span (the hover tooltip, and the head of the
//! selected span's details), plain Rust over the [`TraceModel`] so that both shells, the
//! painter and the tests read the same text.

use gpugraph_trace::TraceModel;

use crate::camera;

/// The facts shown for one span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tooltip {
    /// The span ID.
    pub span: u32,
    /// Its name.
    pub name: String,
    /// Its category (empty: none).
    pub category: String,
    /// Its start, ticks (ns) after the trace's origin.
    pub start: u64,
    /// Its duration, ticks (ns).
    pub duration: u64,
    /// Its process (`pid name`, or the pid alone).
    pub process: String,
    /// Its thread (`pid:tid name`).
    pub thread: String,
}

impl Tooltip {
    /// The facts of span `id`; `None` when the model has no such span.
    pub fn of(model: &TraceModel, id: u32) -> Option<Self> {
        let s = model.spans.get(id as usize)?;
        let thread = model.threads.get(s.thread as usize)?;
        let process = model.processes.get(thread.process as usize)?;
        let category = model
            .span_categories
            .get(id as usize)
            .and_then(|&c| model.categories.get(c as usize))
            .cloned()
            .unwrap_or_default();
        Some(Self {
            span: id,
            name: model.name_of(id).to_string(),
            category,
            start: s.start(),
            duration: s.duration(),
            process: match &process.name {
                Some(n) => format!("{} {n}", process.pid),
                None => process.pid.to_string(),
            },
            thread: model.thread_label(s.thread),
        })
    }

    /// The duration in human units (`12.50 µs`).
    pub fn duration_text(&self) -> String {
        camera::format_duration(self.duration)
    }

    /// The lines painted: the name, then labelled facts in human units. (The model keeps
    /// no event args, so no args count is shown.)
    pub fn lines(&self) -> Vec<String> {
        vec![
            self.name.clone(),
            format!("duration  {}", self.duration_text()),
            format!(
                "start     {}",
                camera::format_time(self.start, 1_000.min(self.duration.max(1)))
            ),
            format!("process   {}", self.process),
            format!("thread    {}", self.thread),
            format!("category  {}", self.category),
        ]
    }

    /// As JSON: `{span, name, duration, durationText, lines}` (duration in ns), what the web
    /// page exposes for tests.
    pub fn to_json(&self) -> String {
        let lines: Vec<String> = self.lines().iter().map(|l| json_str(l)).collect();
        format!(
            r#"{{"span":{},"name":{},"duration":{},"durationText":{},"lines":[{}]}}"#,
            self.span,
            json_str(&self.name),
            self.duration,
            json_str(&self.duration_text()),
            lines.join(",")
        )
    }
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpugraph_trace::{parse_chrome_trace, IngestOptions};

    #[test]
    fn the_facts_of_a_span() {
        let m = parse_chrome_trace(
            br#"[{"ph":"M","name":"process_name","pid":7,"args":{"name":"gpu"}},
                 {"ph":"X","name":"kernel","cat":"cuda","pid":7,"tid":3,"ts":2,"dur":12.5}]"#,
            IngestOptions::default(),
        )
        .unwrap();
        let t = Tooltip::of(&m, 0).unwrap();
        assert_eq!(
            (t.name.as_str(), t.duration, t.category.as_str()),
            ("kernel", 12_500, "cuda")
        );
        assert_eq!(t.duration_text(), "12.50 µs");
        assert_eq!(t.process, "7 gpu");
        assert_eq!(t.lines()[0], "kernel");
        assert!(t.lines()[4].starts_with("thread    7:3"), "{:?}", t.lines());
        assert_eq!(Tooltip::of(&m, 1), None);
        assert!(t
            .to_json()
            .starts_with(r#"{"span":0,"name":"kernel","duration":12500,"#));
        assert_eq!(json_str("a\"b\\c\n"), r#""a\"b\\c\u000a""#);
    }
}
