//! Command-line surface of `gpugraph analyze`: the arguments, and the parsing of `--filter`,
//! `--edges` and `--grid` into checked values (syntax only; column names and types are
//! resolved against the file's schema in [`super::load`]).

use std::fmt;
use std::path::PathBuf;

use clap::Args;

/// Default number of equal-width histogram bins.
pub const DEFAULT_BINS: u32 = 40;
/// Most histogram bins (GPU edges beyond 1,024 fall back to a global-memory search).
pub const MAX_BINS: u32 = 65_536;
/// Most grid cells per axis.
pub const MAX_GRID_AXIS: u32 = 4_096;

/// `gpugraph analyze`.
#[derive(Args, Debug, Clone)]
pub struct AnalyzeArgs {
    /// Table file: .csv (header row; NA, N/A, null and empty fields are nulls), .parquet, or
    /// Arrow IPC (.arrow, .ipc, .feather file format; .arrows stream format).
    pub file: PathBuf,
    /// Column for the grid's x axis (numeric; needs --y).
    #[arg(long, requires = "y")]
    pub x: Option<String>,
    /// Column for the grid's y axis (numeric; needs --x).
    #[arg(long, requires = "x")]
    pub y: Option<String>,
    /// Numeric column whose extent, histogram and CDF are computed, averaged per group (and
    /// per grid cell when --z is not given).
    #[arg(long)]
    pub value: Option<String>,
    /// Numeric column averaged per grid cell: heatmap_mean.png shows the mean of Z over the
    /// x × y cells (e.g. --x dep_time --y distance --z arr_delay: mean delay by departure
    /// time and flight length) [default: the --value column]. Must be neither --x nor --y
    /// (a cell's mean of its own axis only says where the cell lies).
    #[arg(long, requires = "x")]
    pub z: Option<String>,
    /// Text column (Utf8 or dictionary of strings) whose values are the groups. As in pandas
    /// (groupby after filtering), a group with no row passing --filter is left out of the
    /// report; a note names it. A group whose selected rows all have a null or non-finite
    /// value stays, with count 0 and no mean.
    #[arg(long)]
    pub group: Option<String>,
    /// Row predicate 'COLUMN OP VALUE' with OP one of < <= > >= == != (repeat to AND them).
    /// Numeric columns compare in their GPU type (float32 columns against VALUE rounded to
    /// float32); text columns support == and !=. Null and NaN rows never pass.
    #[arg(long = "filter", value_name = "'COL OP VALUE'", value_parser = parse_filter)]
    pub filters: Vec<Filter>,
    /// Equal-width histogram bins over the value's extent [default: 40, or one bin per
    /// integer when the value column holds only integers spanning fewer than 40].
    #[arg(long, conflicts_with = "edges",
          value_parser = clap::value_parser!(u32).range(1..=MAX_BINS as i64))]
    pub bins: Option<u32>,
    /// Explicit histogram edges a,b,c,... (finite, strictly increasing, at least two).
    #[arg(long, value_name = "A,B,...", allow_hyphen_values = true, value_parser = parse_edges)]
    pub edges: Option<Edges>,
    /// Grid cells along x and y.
    #[arg(long, value_name = "NX,NY", default_value = "64,64", value_parser = parse_grid)]
    pub grid: GridSize,
    /// Bit-identical group and grid means on every run: fixed-point sums (an extra pass over
    /// the grouped rows) instead of float atomics, whose addition order varies.
    #[arg(long)]
    pub deterministic: bool,
    /// Histogram counts on a log scale in histogram.png (for heavy-tailed values, whose
    /// tail bins would not show on a linear axis).
    #[arg(long)]
    pub log_y: bool,
    /// Output directory for report.json and the PNG plots. Written whole or not at all: the
    /// results are assembled in a temporary directory that replaces DIR only when the run
    /// succeeded, so no plot of an earlier run survives beside a new report. An existing DIR
    /// is replaced only when it holds nothing but files analyze writes (report.json,
    /// histogram.png, cdf.png, heatmap.png, heatmap_mean.png); otherwise the run refuses
    /// before reading the table.
    #[arg(long, value_name = "DIR", default_value = "analyze-out")]
    pub out: PathBuf,
}

/// A comparison operator of `--filter` (the workflow's own operator type).
pub use gpugraph_program::workflow::analyze::CompareOp as CmpOp;

/// One parsed `--filter`: the column, the operator and the VALUE text (a number for numeric
/// columns, a string for text columns; decided once the column's type is known).
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Column name.
    pub column: String,
    /// Operator.
    pub op: CmpOp,
    /// The right-hand side as written (surrounding quotes removed).
    pub value: String,
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.column, self.op.symbol(), self.value)
    }
}

impl Filter {
    /// VALUE as a number: finite or infinite, never NaN.
    pub fn number(&self) -> Result<f64, String> {
        let v: f64 = self.value.trim().parse().map_err(|_| {
            format!(
                "--filter '{self}': '{}' is not a number (column '{}' is numeric)",
                self.value, self.column
            )
        })?;
        if v.is_nan() {
            return Err(format!(
                "--filter '{self}': NaN never compares true; NaN rows never pass a filter"
            ));
        }
        Ok(v)
    }
}

/// Parses `COLUMN OP VALUE` (spaces around OP optional; VALUE may be quoted).
pub fn parse_filter(text: &str) -> Result<Filter, String> {
    let syntax = |why: &str| {
        format!("bad --filter '{text}': {why}; expected 'COLUMN OP VALUE' with OP one of < <= > >= == !=")
    };
    let at = text
        .find(['<', '>', '=', '!'])
        .ok_or_else(|| syntax("no comparison operator"))?;
    let (column, rest) = text.split_at(at);
    let (op, len) = match rest.as_bytes() {
        [b'<', b'=', ..] => (CmpOp::Le, 2),
        [b'>', b'=', ..] => (CmpOp::Ge, 2),
        [b'=', b'=', ..] => (CmpOp::Eq, 2),
        [b'!', b'=', ..] => (CmpOp::Ne, 2),
        [b'<', ..] => (CmpOp::Lt, 1),
        [b'>', ..] => (CmpOp::Gt, 1),
        [b'=', ..] => return Err(syntax("'=' is not an operator (use ==)")),
        _ => return Err(syntax("'!' must be followed by '='")),
    };
    let column = column.trim();
    let value = rest[len..].trim();
    if column.is_empty() {
        return Err(syntax("the column name is missing"));
    }
    if value.is_empty() {
        return Err(syntax("the value is missing"));
    }
    if value.starts_with(['<', '>', '=', '!']) {
        return Err(syntax(&format!(
            "unexpected '{}' after the operator",
            &value[..1]
        )));
    }
    let unquoted = strip_quotes(value);
    Ok(Filter {
        column: strip_quotes(column).to_string(),
        op,
        value: unquoted.to_string(),
    })
}

fn strip_quotes(s: &str) -> &str {
    for q in ['\'', '"'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// Literal histogram edges: finite, strictly increasing, at least two.
#[derive(Clone, Debug, PartialEq)]
pub struct Edges(pub Vec<f32>);

/// Parses `a,b,c` into checked float32 edges (each rounded to the nearest float32).
pub fn parse_edges(text: &str) -> Result<Edges, String> {
    let edges = text
        .split(',')
        .map(|s| {
            let s = s.trim();
            s.parse::<f64>()
                .map_err(|_| format!("--edges: '{s}' is not a number"))
                .map(|v| v as f32)
        })
        .collect::<Result<Vec<f32>, String>>()?;
    if edges.len() < 2 {
        return Err(format!(
            "--edges needs at least 2 edges, got {}",
            edges.len()
        ));
    }
    for (i, e) in edges.iter().enumerate() {
        if !e.is_finite() {
            return Err(format!(
                "--edges: edge {i} is {e} as float32; edges must be finite"
            ));
        }
        if i > 0 && edges[i - 1] >= *e {
            return Err(format!(
                "--edges must be strictly increasing (as float32): edge {} = {} is not below edge {i} = {e}",
                i - 1,
                edges[i - 1]
            ));
        }
    }
    Ok(Edges(edges))
}

/// Grid cells per axis (the workflow's own type).
pub use gpugraph_program::workflow::analyze::GridSize;

/// Parses `NX,NY` (each 1..=[`MAX_GRID_AXIS`]).
pub fn parse_grid(text: &str) -> Result<GridSize, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [nx, ny] = parts[..] else {
        return Err(format!("--grid '{text}': expected NX,NY (e.g. 64,64)"));
    };
    let axis = |s: &str| -> Result<u32, String> {
        match s.parse::<u32>() {
            Ok(n) if (1..=MAX_GRID_AXIS).contains(&n) => Ok(n),
            _ => Err(format!(
                "--grid '{text}': '{s}' is not a cell count in 1..={MAX_GRID_AXIS}"
            )),
        }
    };
    Ok(GridSize {
        nx: axis(nx)?,
        ny: axis(ny)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_with_and_without_spaces() {
        let f = parse_filter("arr_delay>=15").unwrap();
        assert_eq!(
            (f.column.as_str(), f.op, f.value.as_str()),
            ("arr_delay", CmpOp::Ge, "15")
        );
        let f = parse_filter("  dep time  <  -2.5e3 ").unwrap();
        assert_eq!(
            (f.column.as_str(), f.op, f.value.as_str()),
            ("dep time", CmpOp::Lt, "-2.5e3")
        );
        let f = parse_filter("carrier != 'UA'").unwrap();
        assert_eq!((f.op, f.value.as_str()), (CmpOp::Ne, "UA"));
        for (text, op) in [
            ("a<1", CmpOp::Lt),
            ("a<=1", CmpOp::Le),
            ("a>1", CmpOp::Gt),
            ("a==1", CmpOp::Eq),
        ] {
            assert_eq!(parse_filter(text).unwrap().op, op);
        }
    }

    #[test]
    fn bad_filters_name_the_problem() {
        for (text, needle) in [
            ("arr_delay 15", "no comparison operator"),
            ("arr_delay = 15", "use =="),
            ("arr_delay >> 15", "unexpected '>'"),
            ("> 15", "column name is missing"),
            ("x <", "value is missing"),
            ("x ! 3", "'!' must be followed"),
        ] {
            let e = parse_filter(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
            assert!(e.contains("COLUMN OP VALUE"), "{e}");
        }
        let f = parse_filter("x < abc").unwrap();
        assert!(f.number().unwrap_err().contains("not a number"));
        assert!(parse_filter("x < nan").unwrap().number().is_err());
        assert_eq!(
            parse_filter("x < -inf").unwrap().number().unwrap(),
            f64::NEG_INFINITY
        );
    }

    #[test]
    fn edges_and_grid() {
        assert_eq!(
            parse_edges("-1, 0,2.5").unwrap(),
            Edges(vec![-1.0, 0.0, 2.5])
        );
        assert!(parse_edges("1").unwrap_err().contains("at least 2"));
        assert!(parse_edges("1,1")
            .unwrap_err()
            .contains("strictly increasing"));
        assert!(parse_edges("0,inf").unwrap_err().contains("finite"));
        assert!(parse_edges("0,x").unwrap_err().contains("not a number"));
        assert_eq!(parse_grid("8, 4").unwrap(), GridSize { nx: 8, ny: 4 });
        assert!(parse_grid("8").is_err());
        assert!(parse_grid("0,4").is_err());
    }
}
