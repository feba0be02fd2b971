//! The error of registering tables and running queries ([`crate::query`]), below both the
//! query runner and the script checker ([`crate::script`]) that report it.

use std::path::PathBuf;

use datafusion::error::DataFusionError;

/// Errors of registering tables and running queries.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A table file's extension names no supported format.
    #[error(
        "{}: unsupported table file extension {extension}; use .parquet (.pq), .csv, or .arrow (.ipc, .feather)",
        path.display()
    )]
    UnsupportedExtension {
        /// The file.
        path: PathBuf,
        /// Its extension with the dot, or `(none)`.
        extension: String,
    },
    /// A table file does not exist.
    #[error("{}: no such table file", path.display())]
    MissingFile {
        /// The file.
        path: PathBuf,
    },
    /// A table path names something other than a regular file (a directory, a FIFO, a
    /// device): tables are read from regular files only.
    #[error("{}: not a regular file ({kind}); a table must be a .parquet, .csv or .arrow file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A Parquet table file is not valid Parquet (a bad magic, a truncated or garbled
    /// footer), found before any query reads it.
    #[error("{}: not a valid Parquet file: {problem}", path.display())]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// What the footer check found.
        problem: String,
    },
    /// A table path is not valid UTF-8 (DataFusion takes table locations as URLs).
    #[error("{}: table paths must be valid UTF-8", path.display())]
    NonUtf8Path {
        /// The file.
        path: PathBuf,
    },
    /// A table name is empty or already registered.
    #[error("table name '{name}': {problem}")]
    TableName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Registering table `name` failed in DataFusion (an unreadable file, a bad schema).
    #[error("table '{name}': {source}")]
    Register {
        /// The table.
        name: String,
        /// DataFusion's error.
        source: DataFusionError,
    },
    /// A function was called with argument types none of its signatures takes.
    #[error("{call}: no such signature; the function takes {candidates} (cast the argument to one of these)")]
    Signature {
        /// The call with its argument types, as DataFusion prints it (`sum(Utf8)`).
        call: String,
        /// The signatures that exist.
        candidates: String,
    },
    /// A statement is neither a read-only query nor a session-only definition (see
    /// [`crate::script`]): nothing in a script writes files or changes settings.
    #[error("{at}{statement} statements are not supported: queries run (SELECT, WITH, VALUES, EXPLAIN), \
        with views and in-memory tables (CREATE [TEMP] VIEW, CREATE [TEMP] TABLE ... AS, DROP VIEW, DROP TABLE); \
        nothing writes files or changes settings")]
    NotAQuery {
        /// Where in a script of several statements (`statement 2 of 3: `), or empty.
        at: String,
        /// The statement's leading keywords (`CREATE FUNCTION`, `COPY`).
        statement: String,
    },
    /// The SQL text holds no statement (nothing, or only comments and semicolons).
    #[error("no SQL statement to run: the text is empty or only comments")]
    Empty,
    /// Planning or executing the query failed (SQL syntax, unknown column or table,
    /// unreadable data, a refused DDL/DML statement).
    #[error("{0}")]
    Query(#[from] DataFusionError),
}
