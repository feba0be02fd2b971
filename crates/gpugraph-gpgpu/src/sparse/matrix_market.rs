//! A Matrix Market reader for the sparse solvers: `%%MatrixMarket matrix coordinate real
//! general|symmetric` (and `integer`, read as real). Symmetric files store the lower
//! triangle; the mirror entries are added. Every refusal names the line.

use std::io::BufRead;

use super::csr::{CsrError, CsrMatrix};

/// Why a Matrix Market file was refused; `line` is 1-based.
#[derive(Debug, thiserror::Error)]
pub enum MatrixMarketError {
    /// Reading failed.
    #[error("reading line {line}: {source}")]
    Io {
        /// The line being read.
        line: u64,
        /// The reader's error.
        #[source]
        source: std::io::Error,
    },
    /// The first line is not a `%%MatrixMarket matrix …` banner.
    #[error("line {line}: expected '%%MatrixMarket matrix coordinate real general|symmetric', found '{found}'")]
    Banner {
        /// The line.
        line: u64,
        /// What it holds.
        found: String,
    },
    /// A banner field this reader does not support.
    #[error("line {line}: {field} '{found}' is not supported (supported: {supported})")]
    Unsupported {
        /// The line.
        line: u64,
        /// Which banner field.
        field: &'static str,
        /// Its value.
        found: String,
        /// What is supported.
        supported: &'static str,
    },
    /// A size or entry line that does not parse.
    #[error("line {line}: {what}: '{found}'")]
    Syntax {
        /// The line.
        line: u64,
        /// What was expected.
        what: &'static str,
        /// The text.
        found: String,
    },
    /// An entry outside the declared size (indices are 1-based in the file).
    #[error("line {line}: entry ({row}, {column}) is outside the {rows}×{columns} matrix")]
    OutOfRange {
        /// The line.
        line: u64,
        /// Its 1-based row.
        row: u64,
        /// Its 1-based column.
        column: u64,
        /// Declared rows.
        rows: u64,
        /// Declared columns.
        columns: u64,
    },
    /// A symmetric file with an entry above the diagonal.
    #[error("line {line}: entry ({row}, {column}) is above the diagonal of a symmetric file")]
    UpperTriangle {
        /// The line.
        line: u64,
        /// Its 1-based row.
        row: u64,
        /// Its 1-based column.
        column: u64,
    },
    /// Fewer or more entries than the size line declared.
    #[error("the size line declares {declared} entries, the file has {found}")]
    EntryCount {
        /// Declared on the size line.
        declared: u64,
        /// Found (counted up to the first extra one).
        found: u64,
    },
    /// The size line declares more rows or columns than the caller's limit (the device's
    /// largest vector, for a solver): refused before anything of that size is allocated.
    #[error("line {line}: the size line declares {count} {what}; at most {limit} fit ({why})")]
    TooLarge {
        /// The size line.
        line: u64,
        /// `rows` or `columns`.
        what: &'static str,
        /// Declared.
        count: u64,
        /// The limit.
        limit: u64,
        /// Where the limit comes from.
        why: &'static str,
    },
    /// The entries do not form a valid matrix (e.g. a non-finite value).
    #[error(transparent)]
    Matrix(#[from] CsrError),
}

/// Longest excerpt of a line an error quotes: a 2 MB line is not echoed whole.
const EXCERPT: usize = 80;

/// `line`, or its first [`EXCERPT`] characters and how long it was.
fn excerpt(line: &str) -> String {
    match line.char_indices().nth(EXCERPT) {
        None => line.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &line[..end], line.len()),
    }
}

/// Reads a coordinate real (or integer) general/symmetric Matrix Market matrix.
pub fn read_matrix_market(reader: impl BufRead) -> Result<CsrMatrix, MatrixMarketError> {
    read_matrix_market_within(reader, u64::from(u32::MAX - 1), "32-bit indices")
}

/// [`read_matrix_market`], refusing a size line that declares more than `max_dimension`
/// rows or columns (`why` says where the limit comes from) before allocating for them.
pub fn read_matrix_market_within(
    reader: impl BufRead,
    max_dimension: u64,
    why: &'static str,
) -> Result<CsrMatrix, MatrixMarketError> {
    let mut lines = reader.lines();
    let mut line_no = 0u64;
    let mut next = |line_no: &mut u64| -> Result<Option<String>, MatrixMarketError> {
        *line_no += 1;
        match lines.next() {
            None => Ok(None),
            Some(Ok(l)) => Ok(Some(l)),
            Some(Err(source)) => Err(MatrixMarketError::Io {
                line: *line_no,
                source,
            }),
        }
    };
    let banner = next(&mut line_no)?.unwrap_or_default();
    let fields: Vec<String> = banner
        .split_whitespace()
        .map(|f| f.to_ascii_lowercase())
        .collect();
    if fields.len() != 5 || fields[0] != "%%matrixmarket" || fields[1] != "matrix" {
        return Err(MatrixMarketError::Banner {
            line: 1,
            found: excerpt(&banner),
        });
    }
    let unsupported = |field, found: &str, supported| MatrixMarketError::Unsupported {
        line: 1,
        field,
        found: found.to_string(),
        supported,
    };
    if fields[2] != "coordinate" {
        return Err(unsupported("format", &fields[2], "coordinate"));
    }
    if fields[3] != "real" && fields[3] != "integer" {
        return Err(unsupported("field", &fields[3], "real, integer"));
    }
    let symmetric = match fields[4].as_str() {
        "general" => false,
        "symmetric" => true,
        other => return Err(unsupported("symmetry", other, "general, symmetric")),
    };
    // Size line: the first line that is neither a comment nor blank.
    let (size_line, size) = loop {
        match next(&mut line_no)? {
            None => {
                return Err(MatrixMarketError::Syntax {
                    line: line_no,
                    what: "expected a size line 'rows columns entries', found the end of the file",
                    found: String::new(),
                })
            }
            Some(l) if l.trim().is_empty() || l.starts_with('%') => continue,
            Some(l) => break (line_no, l),
        }
    };
    let dims: Vec<u64> = size
        .split_whitespace()
        .map(|t| t.parse::<u64>())
        .collect::<Result<_, _>>()
        .ok()
        .filter(|d: &Vec<u64>| d.len() == 3)
        .ok_or_else(|| MatrixMarketError::Syntax {
            line: size_line,
            what: "expected a size line of three non-negative integers 'rows columns entries'",
            found: excerpt(&size),
        })?;
    let (rows, columns, declared) = (dims[0], dims[1], dims[2]);
    for (what, n) in [("rows", rows), ("columns", columns)] {
        if n > u64::from(u32::MAX - 1) {
            return Err(CsrError::TooLarge { what, count: n }.into());
        }
        if n > max_dimension {
            return Err(MatrixMarketError::TooLarge {
                line: size_line,
                what,
                count: n,
                limit: max_dimension,
                why,
            });
        }
    }
    let mut entries: Vec<(u32, u32, f32)> = Vec::new();
    let mut found = 0u64;
    while let Some(l) = next(&mut line_no)? {
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        found += 1;
        if found > declared {
            return Err(MatrixMarketError::EntryCount { declared, found });
        }
        let syntax = || MatrixMarketError::Syntax {
            line: line_no,
            what: "expected an entry 'row column value' (1-based indices, a real value)",
            found: excerpt(&l),
        };
        let mut it = t.split_whitespace();
        let (Some(r), Some(c), Some(v), None) = (it.next(), it.next(), it.next(), it.next()) else {
            return Err(syntax());
        };
        let (Ok(r), Ok(c), Ok(v)) = (r.parse::<u64>(), c.parse::<u64>(), v.parse::<f64>()) else {
            return Err(syntax());
        };
        if r == 0 || c == 0 || r > rows || c > columns {
            return Err(MatrixMarketError::OutOfRange {
                line: line_no,
                row: r,
                column: c,
                rows,
                columns,
            });
        }
        let value = v as f32;
        if !value.is_finite() {
            return Err(MatrixMarketError::Syntax {
                line: line_no,
                what: "the value is not finite in float32",
                found: excerpt(&l),
            });
        }
        if symmetric && c > r {
            return Err(MatrixMarketError::UpperTriangle {
                line: line_no,
                row: r,
                column: c,
            });
        }
        let (r0, c0) = ((r - 1) as u32, (c - 1) as u32);
        entries.push((r0, c0, value));
        if symmetric && r0 != c0 {
            entries.push((c0, r0, value));
        }
    }
    if found != declared {
        return Err(MatrixMarketError::EntryCount { declared, found });
    }
    Ok(CsrMatrix::from_triplets(
        rows as u32,
        columns as u32,
        entries,
    )?)
}
