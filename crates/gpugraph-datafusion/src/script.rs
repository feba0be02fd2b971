//! SQL scripts: several statements run in order in one session, so a query can lean on
//! views and in-memory tables defined before it (TPC-H Q15's `CREATE VIEW revenue0 …;
//! SELECT …; DROP VIEW revenue0`).
//!
//! A statement is either a query (`SELECT`, `WITH`, `VALUES`, `EXPLAIN`) or a definition
//! that lives only in the session: `CREATE [OR REPLACE] [TEMP] VIEW`, `CREATE [OR REPLACE]
//! [TEMP] TABLE … [AS query]` (an in-memory table), `DROP VIEW` and `DROP TABLE` (which
//! forget a name; no file is deleted). Everything else (`COPY … TO`, `INSERT`, `CREATE
//! EXTERNAL TABLE`, `SET`, `CREATE FUNCTION`, …) is refused by kind, naming the statement,
//! before any statement runs, so a script can never write a file or change the session's
//! settings.

use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::prelude::{SQLOptions, SessionContext};
use datafusion::sql::parser::{DFParserBuilder, Statement as Parsed};
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

use crate::query_error::QueryError;

/// What a script statement does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A query: it answers rows and changes nothing.
    Query,
    /// A session-only definition (a view or in-memory table created or dropped).
    Define,
}

/// One checked statement of a script.
#[derive(Debug)]
pub struct Step {
    /// The statement, `TEMP` taken off tables (every table of a session is temporary).
    pub statement: Parsed,
    /// What it does.
    pub kind: Kind,
}

impl Step {
    /// The DataFusion options its logical plan must pass: DDL only for definitions, DML and
    /// `SET`-like statements never (a second guard behind [`kind`], checking the plan).
    pub fn options(&self) -> SQLOptions {
        SQLOptions::new()
            .with_allow_ddl(self.kind == Kind::Define)
            .with_allow_dml(false)
            .with_allow_statements(false)
    }

    /// Whether `plan` (this step's logical plan) is a definition this module runs: a
    /// view or in-memory table created or dropped; anything else is refused by name.
    pub fn check_plan(&self, plan: &LogicalPlan, at: &str) -> Result<(), QueryError> {
        if self.kind == Kind::Query {
            return Ok(());
        }
        match plan {
            LogicalPlan::Ddl(
                DdlStatement::CreateView(_)
                | DdlStatement::CreateMemoryTable(_)
                | DdlStatement::DropView(_)
                | DdlStatement::DropTable(_),
            ) => Ok(()),
            other => Err(QueryError::NotAQuery {
                at: at.to_string(),
                statement: other.display().to_string(),
            }),
        }
    }
}

/// Parses `sql` into its statements (empty ones between semicolons skipped) and checks
/// each; fails on the first one that is neither a query nor a session-only definition,
/// before anything runs. Syntax errors are DataFusion's, with their positions.
pub fn parse(ctx: &SessionContext, sql: &str) -> Result<Vec<Step>, QueryError> {
    let state = ctx.state();
    let options = state.config().options();
    let dialect_name = options.sql_parser.dialect;
    let dialect = dialect_from_str(dialect_name).ok_or_else(|| {
        QueryError::Query(datafusion::error::DataFusionError::Plan(format!(
            "unsupported SQL dialect {dialect_name}"
        )))
    })?;
    let statements = DFParserBuilder::new(sql)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.sql_parser.recursion_limit.get())
        .build()?
        .parse_statements()?;
    if statements.is_empty() {
        return Err(QueryError::Empty);
    }
    let count = statements.len();
    statements
        .into_iter()
        .enumerate()
        .map(|(i, statement)| {
            let at = position(i, count);
            match kind(&statement) {
                Some(kind) => Ok(Step {
                    statement: untemporary(statement),
                    kind,
                }),
                None => Err(QueryError::NotAQuery {
                    at,
                    statement: refused_name(&statement),
                }),
            }
        })
        .collect()
}

/// `statement 2 of 3: ` for a script of several statements, nothing for one.
pub fn position(index: usize, count: usize) -> String {
    if count > 1 {
        format!("statement {} of {count}: ", index + 1)
    } else {
        String::new()
    }
}

fn kind(statement: &Parsed) -> Option<Kind> {
    let s = match statement {
        Parsed::Statement(s) => s.as_ref(),
        Parsed::Explain(_) => return Some(Kind::Query),
        // CREATE EXTERNAL TABLE (a file table by location: `--table` checks the file
        // first), COPY … TO (writes a file), RESET (a setting).
        Parsed::CreateExternalTable(_) | Parsed::CopyTo(_) | Parsed::Reset(_) => return None,
    };
    match s {
        Statement::Query(_) | Statement::Explain { .. } | Statement::ExplainTable { .. } => {
            Some(Kind::Query)
        }
        Statement::CreateView(_) => Some(Kind::Define),
        // In memory: EXTERNAL, a LOCATION or a storage format would name files.
        Statement::CreateTable(t) => {
            let files = t.hive_formats.as_ref().is_some_and(|h| {
                h.location.is_some() || h.storage.is_some() || h.row_format.is_some()
            });
            let in_memory =
                !t.external && t.location.is_none() && t.file_format.is_none() && !files;
            in_memory.then_some(Kind::Define)
        }
        Statement::Drop {
            object_type: ObjectType::View | ObjectType::Table,
            ..
        } => Some(Kind::Define),
        _ => None,
    }
}

/// `CREATE TEMP TABLE` as `CREATE TABLE`: DataFusion refuses `TEMPORARY` tables, and a
/// table created here lives only as long as the session anyway.
fn untemporary(statement: Parsed) -> Parsed {
    match statement {
        Parsed::Statement(s) => Parsed::Statement(Box::new(match *s {
            Statement::CreateTable(mut t) => {
                t.temporary = false;
                Statement::CreateTable(t)
            }
            other => other,
        })),
        other => other,
    }
}

/// What a refused statement is called in its error: a `CREATE TABLE` by what made it one
/// (the in-memory form is allowed), others by their leading keywords.
fn refused_name(statement: &Parsed) -> String {
    match statement {
        Parsed::Statement(s) if matches!(s.as_ref(), Statement::CreateTable(_)) => {
            "CREATE TABLE with a location or file format (files)".to_string()
        }
        other => leading_keywords(&other.to_string()),
    }
}

/// The statement's leading keywords (`COPY`, `INSERT INTO`, `CREATE EXTERNAL TABLE`): its
/// printed form's first upper-case words (the printer writes keywords in upper case).
fn leading_keywords(printed: &str) -> String {
    let words: Vec<&str> = printed
        .split_whitespace()
        .take_while(|w| w.chars().all(|c| c.is_ascii_uppercase()))
        .take(3)
        .collect();
    if words.is_empty() {
        "this".to_string()
    } else {
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str) -> Result<Vec<Kind>, String> {
        let ctx = SessionContext::new();
        parse(&ctx, sql)
            .map(|steps| steps.iter().map(|s| s.kind).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn queries_and_session_definitions_are_taken_in_order() {
        use Kind::{Define, Query};
        let script = "-- a comment first\ncreate view v as select 1 as a;\n\
            create temp table t as select * from v; select * from t;; \
            explain select 1; drop view v; drop table t;";
        assert_eq!(
            kinds(script).unwrap(),
            [Define, Define, Query, Query, Define, Define]
        );
        assert_eq!(
            kinds("with x as (select 1) select * from x").unwrap(),
            [Query]
        );
        assert_eq!(kinds("values (1), (2)").unwrap(), [Query]);
    }

    #[test]
    fn writes_and_settings_are_refused_naming_the_statement() {
        for (sql, named) in [
            (
                "select 1; copy (select 1) to '/tmp/x.csv'",
                "statement 2 of 2: COPY",
            ),
            ("insert into t values (1)", "INSERT INTO"),
            (
                "create external table t stored as csv location '/tmp/x.csv'",
                "CREATE EXTERNAL TABLE",
            ),
            (
                "create table t (a int) location '/tmp/x'",
                "CREATE TABLE with a location",
            ),
            ("set datafusion.execution.batch_size = 1", "SET"),
            (
                "select 1; delete from t; select 2",
                "statement 2 of 3: DELETE",
            ),
            (
                "create function f() returns int return 1",
                "CREATE FUNCTION",
            ),
            ("drop function f", "DROP FUNCTION"),
            ("reset datafusion.execution.batch_size", "RESET"),
        ] {
            let err = kinds(sql).expect_err(sql);
            assert!(err.starts_with(named), "{sql}: {err}");
            assert!(err.contains("statements are not supported"), "{sql}: {err}");
        }
    }

    #[test]
    fn empty_text_and_syntax_errors_are_named() {
        for sql in ["", "  ;; ", "-- only a comment\n"] {
            let err = kinds(sql).expect_err(sql);
            assert!(err.contains("no SQL statement"), "{sql:?}: {err}");
        }
        let err = kinds("select 1; selec 2").expect_err("syntax");
        assert!(err.contains("selec"), "{err}");
    }
}
