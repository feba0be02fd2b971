//! [`CsrMatrix`]: a validated host CSR matrix (uint32 offsets and columns, float32 values),
//! the 2-D Poisson generator and the Jacobi preconditioner it feeds.

/// Why a CSR matrix (or its preconditioner) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CsrError {
    /// `row_offsets` is not `rows + 1` non-decreasing entries from 0 to the nonzero count.
    #[error("row offsets: {reason}")]
    Offsets {
        /// What is wrong.
        reason: String,
    },
    /// A column index past the column count.
    #[error("row {row}: column {column} is out of range (the matrix has {columns} columns)")]
    Column {
        /// Row of the entry.
        row: u32,
        /// Its column.
        column: u32,
        /// Columns of the matrix.
        columns: u32,
    },
    /// A NaN or infinite value.
    #[error("row {row}, column {column}: value {value} is not finite")]
    NonFinite {
        /// Row of the entry.
        row: u32,
        /// Its column.
        column: u32,
        /// The value.
        value: f32,
    },
    /// More rows, columns or nonzeros than uint32 indices address.
    #[error("{what}: {count} exceeds the uint32 index range")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
        /// How many there are.
        count: u64,
    },
    /// A solver needs a square matrix.
    #[error("the matrix is {rows}×{columns}; a solver needs a square matrix")]
    NotSquare {
        /// Rows.
        rows: u32,
        /// Columns.
        columns: u32,
    },
    /// The Jacobi preconditioner divides by the diagonal.
    #[error("row {row}: diagonal entry is {value}; Jacobi needs a positive diagonal")]
    BadDiagonal {
        /// The row.
        row: u32,
        /// Its diagonal (0 when absent).
        value: f32,
    },
    /// The vector does not match the matrix.
    #[error("{what} has {actual} entries; the matrix needs {expected}")]
    VectorLength {
        /// Which vector.
        what: &'static str,
        /// Its length.
        actual: u64,
        /// The length the matrix needs.
        expected: u64,
    },
}

/// A CSR matrix whose invariants hold: `row_offsets` has `rows + 1` non-decreasing entries
/// from 0 to `nnz`, every column is below `columns`, every value is finite. Columns within
/// a row are sorted (the constructors sort; duplicates are summed).
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix {
    rows: u32,
    columns: u32,
    row_offsets: Vec<u32>,
    column_indices: Vec<u32>,
    values: Vec<f32>,
}

impl CsrMatrix {
    /// Checks the CSR arrays (see the type's invariants) and sorts each row by column.
    pub fn new(
        rows: u32,
        columns: u32,
        row_offsets: Vec<u32>,
        column_indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self, CsrError> {
        let bad = |reason: String| Err(CsrError::Offsets { reason });
        if row_offsets.len() != rows as usize + 1 {
            return bad(format!(
                "{} entries, a {rows}-row matrix needs {}",
                row_offsets.len(),
                rows as u64 + 1
            ));
        }
        if column_indices.len() != values.len() {
            return bad(format!(
                "{} column indices but {} values",
                column_indices.len(),
                values.len()
            ));
        }
        if column_indices.len() > u32::MAX as usize {
            return Err(CsrError::TooLarge {
                what: "nonzeros",
                count: column_indices.len() as u64,
            });
        }
        if row_offsets[0] != 0 {
            return bad(format!("entry 0 is {}, not 0", row_offsets[0]));
        }
        if let Some(i) = (0..rows as usize).find(|&i| row_offsets[i] > row_offsets[i + 1]) {
            return bad(format!(
                "entry {} ({}) is below entry {i} ({})",
                i + 1,
                row_offsets[i + 1],
                row_offsets[i]
            ));
        }
        if row_offsets[rows as usize] as usize != values.len() {
            return bad(format!(
                "the last entry is {}, but there are {} nonzeros",
                row_offsets[rows as usize],
                values.len()
            ));
        }
        let mut m = Self {
            rows,
            columns,
            row_offsets,
            column_indices,
            values,
        };
        for row in 0..rows {
            let (s, e) = m.span(row);
            for k in s..e {
                let (column, value) = (m.column_indices[k], m.values[k]);
                if column >= columns {
                    return Err(CsrError::Column {
                        row,
                        column,
                        columns,
                    });
                }
                if !value.is_finite() {
                    return Err(CsrError::NonFinite { row, column, value });
                }
            }
            let mut entries: Vec<(u32, f32)> =
                (s..e).map(|k| (m.column_indices[k], m.values[k])).collect();
            entries.sort_by_key(|&(c, _)| c);
            for (k, (c, v)) in (s..e).zip(entries) {
                m.column_indices[k] = c;
                m.values[k] = v;
            }
        }
        Ok(m)
    }

    /// A `rows × columns` matrix from `(row, column, value)` entries in any order; duplicate
    /// positions are summed (Matrix Market semantics). Indices are 0-based.
    pub fn from_triplets(
        rows: u32,
        columns: u32,
        mut entries: Vec<(u32, u32, f32)>,
    ) -> Result<Self, CsrError> {
        if let Some(&(row, _, _)) = entries.iter().find(|e| e.0 >= rows) {
            return Err(CsrError::Offsets {
                reason: format!("an entry names row {row}; the matrix has {rows} rows"),
            });
        }
        if let Some(&(row, column, _)) = entries.iter().find(|e| e.1 >= columns) {
            return Err(CsrError::Column {
                row,
                column,
                columns,
            });
        }
        entries.sort_by_key(|&(r, c, _)| (r, c));
        let mut offsets = vec![0u32; rows as usize + 1];
        let mut cols = Vec::with_capacity(entries.len());
        let mut vals: Vec<f32> = Vec::with_capacity(entries.len());
        let mut last: Option<(u32, u32)> = None;
        for (r, c, v) in entries {
            if last == Some((r, c)) {
                *vals.last_mut().expect("a previous entry") += v;
                continue;
            }
            last = Some((r, c));
            cols.push(c);
            vals.push(v);
            offsets[r as usize + 1] += 1;
        }
        for i in 0..rows as usize {
            offsets[i + 1] += offsets[i];
        }
        Self::new(rows, columns, offsets, cols, vals)
    }

    /// The 5-point Laplacian of an `n × n` grid with Dirichlet boundaries: 4 on the diagonal,
    /// -1 to each grid neighbour; symmetric positive definite, `n²` rows.
    pub fn poisson2d(n: u32) -> Result<Self, CsrError> {
        let rows = u64::from(n) * u64::from(n);
        if rows > u64::from(u32::MAX / 5) {
            return Err(CsrError::TooLarge {
                what: "poisson2d rows",
                count: rows,
            });
        }
        let rows = rows as u32;
        let mut offsets = Vec::with_capacity(rows as usize + 1);
        let mut cols = Vec::with_capacity(rows as usize * 5);
        let mut vals = Vec::with_capacity(rows as usize * 5);
        offsets.push(0);
        for i in 0..n {
            for j in 0..n {
                let row = i * n + j;
                let mut push = |c: u32, v: f32| {
                    cols.push(c);
                    vals.push(v);
                };
                if i > 0 {
                    push(row - n, -1.0);
                }
                if j > 0 {
                    push(row - 1, -1.0);
                }
                push(row, 4.0);
                if j + 1 < n {
                    push(row + 1, -1.0);
                }
                if i + 1 < n {
                    push(row + n, -1.0);
                }
                offsets.push(cols.len() as u32);
            }
        }
        Self::new(rows, rows, offsets, cols, vals)
    }

    /// Rows.
    pub fn rows(&self) -> u32 {
        self.rows
    }
    /// Columns.
    pub fn columns(&self) -> u32 {
        self.columns
    }
    /// Stored entries.
    pub fn nnz(&self) -> u32 {
        self.values.len() as u32
    }
    /// `rows + 1` offsets.
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }
    /// Column of each entry.
    pub fn column_indices(&self) -> &[u32] {
        &self.column_indices
    }
    /// Value of each entry.
    pub fn values(&self) -> &[f32] {
        &self.values
    }
    /// Mean stored entries per row (0 for no rows).
    pub fn mean_row_length(&self) -> f64 {
        f64::from(self.nnz()) / f64::from(self.rows.max(1))
    }
    /// The index range of `row`'s entries.
    pub fn span(&self, row: u32) -> (usize, usize) {
        (
            self.row_offsets[row as usize] as usize,
            self.row_offsets[row as usize + 1] as usize,
        )
    }

    /// `1 / a_ii` per row: the Jacobi preconditioner. A square matrix with a positive
    /// diagonal is required (an SPD matrix has one).
    pub fn jacobi_inverse(&self) -> Result<Vec<f32>, CsrError> {
        if self.rows != self.columns {
            return Err(CsrError::NotSquare {
                rows: self.rows,
                columns: self.columns,
            });
        }
        (0..self.rows)
            .map(|row| {
                let (s, e) = self.span(row);
                let d: f32 = (s..e)
                    .filter(|&k| self.column_indices[k] == row)
                    .map(|k| self.values[k])
                    .sum();
                if d > 0.0 && (1.0 / d).is_finite() {
                    Ok(1.0 / d)
                } else {
                    Err(CsrError::BadDiagonal { row, value: d })
                }
            })
            .collect()
    }
}
