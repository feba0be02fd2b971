//! Everything a command writes: atomic output files and directories, JSON, aligned text
//! tables and progress lines on stderr.
//!
//! The rule every command follows: outputs are validated (and their temporaries created)
//! before any GPU work; each output is written to a temporary beside its target and renamed
//! over it only when the whole command succeeded; temporaries are removed on any error (by
//! `Drop`) and on SIGINT/SIGTERM/SIGHUP (by [`install_signal_cleanup`]), so a failed or
//! interrupted command leaves nothing behind.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// Temporaries alive in this process, removed by the signal handler.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

fn forget(path: &Path) {
    pending().retain(|p| p != path);
}

/// Removes every registered temporary and exits with 128 + the signal number when the process
/// receives SIGINT, SIGTERM or SIGHUP. Call once, first thing in `main`.
///
/// The handler runs on its own thread (not in signal context) and keeps the registry locked
/// until the process exits, so no temporary can be created after the clean-up.
pub fn install_signal_cleanup() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing the signal handler")?;
    std::thread::Builder::new()
        .name("signal-cleanup".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let held = pending();
                for p in held.iter() {
                    let _ = if p.is_dir() {
                        std::fs::remove_dir_all(p)
                    } else {
                        std::fs::remove_file(p)
                    };
                }
                eprintln!("error: interrupted by signal {sig}; removed unfinished outputs");
                std::process::exit(128 + sig);
            }
        })
        .context("starting the signal handler thread")?;
    Ok(())
}

/// The directory a new entry `target` goes into (`.` for a bare file name).
fn parent_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.{file name}.` — the prefix of a target's temporaries (hidden, recognisable).
fn temp_prefix(target: &Path) -> String {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    format!(".{name}.")
}

/// An output file being written: a temporary in the target's directory that
/// [`PendingFile::commit`] renames over the target; dropped uncommitted, it is removed.
pub struct PendingFile {
    tmp: Option<tempfile::NamedTempFile>,
    target: PathBuf,
    what: String,
}

impl PendingFile {
    /// Checks that `target` (`what` names it in errors, e.g. `--out`) can be written and
    /// creates its temporary: fails when the target is a directory or its directory does not
    /// exist or is not writable. Nothing is created on failure.
    pub fn new(target: &Path, what: &str) -> Result<Self> {
        if target.is_dir() {
            bail!("{what} {}: is a directory, not a file", target.display());
        }
        let dir = parent_of(target);
        if !dir.is_dir() {
            bail!(
                "{what} {}: the directory {} does not exist",
                target.display(),
                dir.display()
            );
        }
        let mut registry = pending();
        let tmp = tempfile::Builder::new()
            .prefix(&temp_prefix(target))
            .suffix(".partial")
            .tempfile_in(&dir)
            .with_context(|| format!("{what} {}: cannot write there", target.display()))?;
        registry.push(tmp.path().to_path_buf());
        Ok(Self {
            tmp: Some(tmp),
            target: target.to_path_buf(),
            what: what.to_string(),
        })
    }

    /// The temporary file to write into.
    pub fn file(&self) -> &File {
        self.tmp
            .as_ref()
            .map(|t| t.as_file())
            .unwrap_or_else(|| unreachable!("a PendingFile keeps its temporary until commit"))
    }

    /// The temporary's path (for writers that open by path).
    pub fn temp_path(&self) -> &Path {
        self.tmp
            .as_ref()
            .map(|t| t.path())
            .unwrap_or_else(|| unreachable!("a PendingFile keeps its temporary until commit"))
    }

    /// Writes all of `bytes` into the temporary.
    pub fn write_all(&self, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        let mut f = self.file();
        f.write_all(bytes)
            .and_then(|()| f.flush())
            .with_context(|| format!("{} {}: writing", self.what, self.target.display()))
    }

    /// Flushes the temporary to disk and renames it over the target.
    pub fn commit(mut self) -> Result<()> {
        let tmp = self
            .tmp
            .take()
            .unwrap_or_else(|| unreachable!("commit consumes the PendingFile"));
        let path = tmp.path().to_path_buf();
        tmp.as_file()
            .sync_all()
            .with_context(|| format!("{} {}: writing", self.what, self.target.display()))?;
        // The permissions of a plain new file, not tempfile's private 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = tmp
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644));
        }
        let result = tmp.persist(&self.target);
        forget(&path);
        result.map_err(|e| {
            anyhow::anyhow!(
                "{} {}: renaming the finished temporary: {}",
                self.what,
                self.target.display(),
                e.error
            )
        })?;
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if let Some(t) = self.tmp.take() {
            let path = t.path().to_path_buf();
            drop(t);
            forget(&path);
        }
    }
}

/// An output directory being filled: a temporary directory beside the target that
/// [`PendingDir::commit`] puts in the target's place; dropped uncommitted, it is removed.
///
/// An existing target is replaced whole only when every entry in it is one this command
/// writes (`owned` decides by file name, e.g. `report.json`, `*.png`), so no stale file of an
/// earlier run survives beside the new ones and no foreign file is ever deleted; otherwise
/// [`PendingDir::new`] refuses before any work.
pub struct PendingDir {
    tmp: Option<tempfile::TempDir>,
    target: PathBuf,
    what: String,
}

impl PendingDir {
    /// Validates `target` (`what` names it in errors) and creates the temporary directory in
    /// its nearest existing ancestor (missing parents are created only at commit).
    pub fn new(target: &Path, what: &str, owned: impl Fn(&str) -> bool) -> Result<Self> {
        if target.exists() {
            if !target.is_dir() {
                bail!("{what} {}: exists and is not a directory", target.display());
            }
            let entries = std::fs::read_dir(target)
                .with_context(|| format!("{what} {}: cannot list it", target.display()))?;
            for e in entries {
                let e = e.with_context(|| format!("{what} {}: listing", target.display()))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let is_file = e.file_type().map(|t| t.is_file()).unwrap_or(false);
                if !is_file || !owned(&name) {
                    bail!(
                        "{what} {}: holds '{name}', which this command does not write; refusing to replace the directory (choose a new or empty directory)",
                        target.display()
                    );
                }
            }
        }
        let mut base = parent_of(target);
        while !base.is_dir() {
            base = match base.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
        }
        let mut registry = pending();
        let tmp = tempfile::Builder::new()
            .prefix(&temp_prefix(target))
            .suffix(".partial")
            .tempdir_in(&base)
            .with_context(|| format!("{what} {}: cannot write there", target.display()))?;
        registry.push(tmp.path().to_path_buf());
        Ok(Self {
            tmp: Some(tmp),
            target: target.to_path_buf(),
            what: what.to_string(),
        })
    }

    /// The temporary directory to write into.
    pub fn dir(&self) -> &Path {
        self.tmp
            .as_ref()
            .map(|t| t.path())
            .unwrap_or_else(|| unreachable!("a PendingDir keeps its temporary until commit"))
    }

    /// Puts the finished directory in the target's place (the previous target, checked in
    /// [`PendingDir::new`] to hold only this command's files, is removed).
    pub fn commit(mut self) -> Result<()> {
        let tmp = self
            .tmp
            .take()
            .unwrap_or_else(|| unreachable!("commit consumes the PendingDir"));
        let path = tmp.keep();
        let ctx = |doing: &str| format!("{} {}: {doing}", self.what, self.target.display());
        let result = (|| -> Result<()> {
            let parent = parent_of(&self.target);
            std::fs::create_dir_all(&parent).with_context(|| ctx("creating its parent"))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
            }
            if self.target.exists() {
                let old = tempfile::Builder::new()
                    .prefix(&temp_prefix(&self.target))
                    .suffix(".old")
                    .tempdir_in(&parent)
                    .with_context(|| ctx("making room for the new results"))?;
                let old_path = old.path().join("previous");
                pending().push(old.path().to_path_buf());
                std::fs::rename(&self.target, &old_path)
                    .with_context(|| ctx("moving the previous results aside"))?;
                if let Err(e) = std::fs::rename(&path, &self.target) {
                    let _ = std::fs::rename(&old_path, &self.target);
                    forget(old.path());
                    return Err(e).with_context(|| ctx("renaming the finished directory"));
                }
                forget(old.path());
                drop(old);
            } else {
                std::fs::rename(&path, &self.target)
                    .with_context(|| ctx("renaming the finished directory"))?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&path);
        }
        forget(&path);
        result
    }
}

impl Drop for PendingDir {
    fn drop(&mut self) {
        if let Some(t) = self.tmp.take() {
            let path = t.path().to_path_buf();
            drop(t);
            forget(&path);
        }
    }
}

/// Writes `value` as pretty JSON to `path`, atomically (temporary + rename).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serializing to JSON")?;
    let out = PendingFile::new(path, "cannot write JSON to")?;
    out.write_all((text + "\n").as_bytes())?;
    out.commit()
}

/// Fails now, before any measuring, when `path` cannot be written; leaves the file system
/// as it was (an existing file is neither truncated nor removed).
pub fn check_writable(path: &Path) -> Result<()> {
    PendingFile::new(path, "cannot write JSON to").map(drop)
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A phase line on stderr (stdout stays the result).
pub fn progress(message: impl fmt::Display) {
    eprintln!("{message}");
}

/// A status line for a phase whose progress arrives as text (the table loader's lines): on a
/// terminal an `indicatif` spinner showing the latest line, redrawn in place; otherwise each
/// line printed as it comes (the loader sends at most one a second).
pub struct Spinner {
    bar: Option<indicatif::ProgressBar>,
    prefix: String,
}

impl Spinner {
    /// A spinner whose lines start with `prefix` (e.g. `analyze: `).
    pub fn new(prefix: &str) -> Self {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Self {
            bar,
            prefix: prefix.to_string(),
        }
    }

    /// Shows `line` (replacing the previous one on a terminal).
    pub fn line(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("{}{line}", self.prefix)),
            None => eprintln!("{}{line}", self.prefix),
        }
    }

    /// Stops the spinner, leaving its last line on the terminal.
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

/// Progress of a counted loop (rows loaded, rows generated) on stderr. On a terminal an
/// `indicatif` bar (total known) or spinner redraws in place; otherwise (CI logs, pipes)
/// plain lines at most once per second and a last one at [`Progress::finish`], so logs stay
/// readable and small.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    what: String,
    unit: &'static str,
    total: Option<u64>,
    done: u64,
    started: std::time::Instant,
    last_line: std::time::Instant,
}

impl Progress {
    /// Progress of `what` (the line's prefix, e.g. `load`) counting `unit`s (e.g. `rows`) of
    /// `total` when known. Draws a bar only when stderr is a terminal.
    pub fn new(what: &str, unit: &'static str, total: Option<u64>) -> Self {
        use std::io::IsTerminal;
        let now = std::time::Instant::now();
        let mut p = Self {
            bar: None,
            what: what.to_string(),
            unit,
            total,
            done: 0,
            started: now,
            last_line: now,
        };
        if std::io::stderr().is_terminal() {
            p.bar = Some(p.make_bar());
        }
        p
    }

    fn make_bar(&self) -> indicatif::ProgressBar {
        use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
        let template = match self.total {
            Some(_) => format!(
                "{{prefix}}: [{{bar:40}}] {{human_pos}} of {{human_len}} {} ({{percent}}%) {{elapsed}}, {{per_sec}}",
                self.unit
            ),
            None => format!("{{prefix}}: {{spinner}} {{human_pos}} {} {{elapsed}}, {{per_sec}}", self.unit),
        };
        let bar = ProgressBar::with_draw_target(self.total, ProgressDrawTarget::stderr())
            .with_prefix(self.what.clone());
        // The templates are fixed: a template error is a bug, and the default style still works.
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    }

    /// Sets how many units are done.
    pub fn set(&mut self, done: u64) {
        self.done = done;
        match &self.bar {
            Some(bar) => bar.set_position(done),
            None => {
                if self.last_line.elapsed() >= Duration::from_secs(1) {
                    self.last_line = std::time::Instant::now();
                    eprintln!("{}", self.line());
                }
            }
        }
    }

    /// The plain line: `load: 1,234 of 5,000 rows (25%) in 1.0 s (1.2 M rows/s)`.
    pub fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let of = match self.total {
            Some(t) if t > 0 => format!(
                " of {} {} ({:.0}%)",
                crate::analyze::load::thousands(t),
                self.unit,
                self.done as f64 * 100.0 / t as f64
            ),
            _ => format!(" {}", self.unit),
        };
        format!(
            "{}: {}{of} in {secs:.1} s ({:.1} M {}/s)",
            self.what,
            crate::analyze::load::thousands(self.done),
            self.done as f64 / secs.max(1e-9) / 1e6,
            self.unit
        )
    }

    /// Ends the progress: the bar stays drawn at its final count, or the final plain line
    /// is printed.
    pub fn finish(self) {
        match &self.bar {
            Some(bar) => bar.finish(),
            None => eprintln!("{}", self.line()),
        }
    }
}

/// A text table: a header row, then rows; the first column is left-aligned, the others right.
/// Cells of any length print whole (widths are padded by hand, not by format width, whose
/// argument is limited to 16 bits).
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        Self {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells print empty, extra cells are kept).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len()])
            .max()
            .unwrap_or(0);
        let cell = |row: &[String], c: usize| row.get(c).map_or(0, |s| s.chars().count());
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| cell(r, c))
                    .chain([cell(&self.headers, c)])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |f: &mut fmt::Formatter<'_>, row: &[String]| -> fmt::Result {
            let mut text = String::new();
            for (c, &w) in widths.iter().enumerate() {
                let s = row.get(c).map_or("", String::as_str);
                let pad = " ".repeat(w.saturating_sub(s.chars().count()));
                if c > 0 {
                    text.push_str("  ");
                }
                if c == 0 {
                    text.push_str(s);
                    text.push_str(&pad);
                } else {
                    text.push_str(&pad);
                    text.push_str(s);
                }
            }
            writeln!(f, "{}", text.trim_end())
        };
        line(f, &self.headers)?;
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        line(f, &rule)?;
        for r in &self.rows {
            line(f, r)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_without_a_terminal() {
        // Tests run with stderr captured (not a terminal): no bar, plain lines.
        let mut p = Progress::new("generate-table", "rows", None);
        assert!(p.bar.is_none());
        p.set(1500);
        assert!(
            p.line().starts_with("generate-table: 1,500 rows in "),
            "{}",
            p.line()
        );
        let mut p = Progress::new("generate-table", "rows", Some(6000));
        p.set(1500);
        assert!(
            p.line()
                .starts_with("generate-table: 1,500 of 6,000 rows (25%) in "),
            "{}",
            p.line()
        );
        assert!(p.line().ends_with(" M rows/s)"), "{}", p.line());
        p.finish();
        let s = Spinner::new("analyze: ");
        assert!(s.bar.is_none());
        s.line("load: 10 rows");
        s.finish();
    }

    #[test]
    fn table_alignment() {
        let mut t = Table::new(["name", "value"]);
        t.row(["a", "1"]);
        t.row(["longer", "12345"]);
        assert_eq!(
            t.to_string(),
            "name    value\n------  -----\na           1\nlonger  12345\n"
        );
    }

    #[test]
    fn table_cells_beyond_format_width_limits() {
        let long = "g".repeat(70_000);
        let mut t = Table::new(["key", "count"]);
        t.row([long.clone(), "1".to_string()]);
        t.row(["b".to_string(), "22".to_string()]);
        let s = t.to_string();
        assert!(s.contains(&long));
        assert!(s.lines().all(|l| l.chars().count() <= 70_000 + 2 + 5));
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gpugraph-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn pending_file_appears_only_on_commit() {
        let d = scratch("file");
        let target = d.join("o.bin");
        let p = PendingFile::new(&target, "--out").unwrap();
        p.write_all(b"abc").unwrap();
        assert!(!target.exists());
        p.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"abc");
        let p = PendingFile::new(&target, "--out").unwrap();
        p.write_all(b"new").unwrap();
        drop(p);
        assert_eq!(entries(&d), ["o.bin"]);
        assert_eq!(std::fs::read(&target).unwrap(), b"abc");
        assert!(!pending().iter().any(|p| p.starts_with(&d)));
        let e = PendingFile::new(&d.join("missing/o.bin"), "--out")
            .err()
            .unwrap();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = PendingFile::new(&d, "--out").err().unwrap();
        assert!(e.to_string().contains("is a directory"), "{e}");
        check_writable(&target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"abc");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn pending_dir_replaces_only_its_own_files() {
        let d = scratch("dir");
        let owned = |n: &str| n == "report.json" || n.ends_with(".png");
        let target = d.join("a/b/out");
        let p = PendingDir::new(&target, "--out", owned).unwrap();
        std::fs::write(p.dir().join("report.json"), "1").unwrap();
        std::fs::write(p.dir().join("old.png"), "1").unwrap();
        p.commit().unwrap();
        assert_eq!(entries(&target), ["old.png", "report.json"]);
        let p = PendingDir::new(&target, "--out", owned).unwrap();
        std::fs::write(p.dir().join("report.json"), "2").unwrap();
        p.commit().unwrap();
        assert_eq!(entries(&target), ["report.json"]);
        assert_eq!(
            std::fs::read_to_string(target.join("report.json")).unwrap(),
            "2"
        );
        assert_eq!(entries(&d.join("a/b")), ["out"]);
        let p = PendingDir::new(&d.join("x/y"), "--out", owned).unwrap();
        drop(p);
        assert_eq!(entries(&d), ["a"]);
        std::fs::write(target.join("notes.txt"), "mine").unwrap();
        let e = PendingDir::new(&target, "--out", owned).err().unwrap();
        assert!(e.to_string().contains("notes.txt"), "{e}");
        assert!(!pending().iter().any(|p| p.starts_with(&d)));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
