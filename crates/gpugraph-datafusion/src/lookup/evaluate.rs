//! One lookup batch evaluated on the host: its keys, each lookup column's i32 words (a
//! few-valued string column's expressions once per value, [`by_values`]) and their bounds.

use std::sync::{Arc, RwLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, UInt32Array};
use datafusion::arrow::compute::{cast, max, min, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Int64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::HashMap;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::is_volatile;

use super::LookupPlan;
use crate::convert::{local_codes, KeyValue, LocalValues};

/// The i32 words of `array` (integers, dates, decimals' unscaled values, booleans as 0/1),
/// or why they cannot be gathered.
pub(super) fn words(array: &ArrayRef, what: &str) -> Result<Vec<u32>, String> {
    if array.null_count() > 0 {
        return Err(format!(
            "the lookup column {what} has {} nulls, which the GPU's lookups do not carry",
            array.null_count()
        ));
    }
    let narrow = |v: i128| {
        i32::try_from(v)
            .map(|v| v as u32)
            .map_err(|_| format!("the lookup column {what} holds {v}, past the GPU's 32 bits"))
    };
    match array.data_type() {
        DataType::Boolean => Ok(array
            .as_boolean()
            .values()
            .iter()
            .map(|b| b as u32)
            .collect()),
        DataType::Decimal128(..) => array
            .as_primitive::<Decimal128Type>()
            .values()
            .iter()
            .map(|&v| narrow(v))
            .collect(),
        dt if crate::expr::column_type(dt).is_some() => {
            let wide = cast(array, &DataType::Int64).map_err(|e| e.to_string())?;
            wide.as_primitive::<Int64Type>()
                .values()
                .iter()
                .map(|&v| narrow(v as i128))
                .collect()
        }
        dt => Err(format!("the lookup column {what} has type {dt}")),
    }
}

/// A batch's rows as codes of one column's distinct values ([`local_codes`]): each row's code
/// and each code's value and first row; `None` when the column is not a string column or has
/// too many distinct values to pay off.
type Coded = Option<(Arc<Vec<u32>>, LocalValues)>;

/// One lookup column's words over a batch: row by row, or a few-valued string column's rows
/// as value codes and each value's word ([`by_values`]), so the rows' words are only ever
/// written into the staged records (15M rows of two Q12 columns at SF 10 shared one code
/// array instead of allocating two word arrays).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Column {
    /// A word per row.
    Words(Vec<u32>),
    /// A code per row (shared by the batch's columns over the same string column) and a
    /// word per code; every code occurs in the batch.
    Coded {
        codes: Arc<Vec<u32>>,
        words: Vec<u32>,
    },
}

impl Column {
    /// Row `i`'s word.
    #[inline]
    pub(super) fn get(&self, i: usize) -> u32 {
        match self {
            Column::Words(w) => w[i],
            Column::Coded { codes, words } => words[codes[i] as usize],
        }
    }

    /// Every row's word.
    pub(super) fn to_words(&self) -> Vec<u32> {
        match self {
            Column::Words(w) => w.clone(),
            Column::Coded { codes, words } => codes.iter().map(|&c| words[c as usize]).collect(),
        }
    }

    /// The smallest and largest word (as i32), if the batch has rows.
    fn bounds(&self) -> Option<(i32, i32)> {
        let words = match self {
            Column::Words(w) => w,
            Column::Coded { codes, .. } if codes.is_empty() => return None,
            Column::Coded { words, .. } => words,
        };
        words.iter().fold(None, |b, &v| {
            let v = v as i32;
            Some(b.map_or((v, v), |(lo, hi): (i32, i32)| (lo.min(v), hi.max(v))))
        })
    }
}

/// What a lookup's evaluation keeps across its batches: each lookup column's word for each
/// string value it has evaluated ([`by_values`]). A few-valued column has the same values in
/// every batch (Q12's five priorities over 1,800 batches of orders at SF 10), and evaluating
/// the expression over them costs DataFusion's per-call overhead each time. Batches on
/// every thread share it: they read it once each and write it only for new values.
#[derive(Default)]
pub(super) struct ValueWords {
    pub(super) words: HashMap<(usize, KeyValue), u32>,
}

/// The words of lookup column `j`, `e` over `batch`, evaluated once per distinct value when
/// `e` reads one string column of few distinct values (Q12's two `CASE`s over
/// `o_orderpriority`: five values over 15M rows at SF 10, where evaluating per row cost most
/// of the query), and `None` otherwise. Deterministic expressions of one column agree on
/// equal values, so each row takes the words of its value, evaluated at its first row or
/// remembered in `known` from an earlier batch (any thread's). `coded` keeps each column's
/// codes for the batch's other expressions.
pub(super) fn by_values(
    (j, e): (usize, &Arc<dyn PhysicalExpr>),
    batch: &RecordBatch,
    coded: &mut HashMap<usize, Coded>,
    known: &RwLock<ValueWords>,
) -> Result<Option<Column>, String> {
    let read = collect_columns(e);
    let [column] = read.iter().collect::<Vec<_>>()[..] else {
        return Ok(None);
    };
    if is_volatile(e) || batch.num_rows() < 64 {
        return Ok(None);
    }
    let array = batch.column(column.index());
    let string = match array.data_type() {
        DataType::Dictionary(_, v) => v.as_ref(),
        dt => dt,
    };
    if !matches!(
        string,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return Ok(None);
    }
    let rows = batch.num_rows();
    let Some((codes, values)) = coded.entry(column.index()).or_insert_with(|| {
        let (codes, values) = local_codes(array.as_ref(), column.name()).ok()?;
        (values.len() * 8 <= rows).then_some((Arc::new(codes), values))
    }) else {
        return Ok(None);
    };
    let remembered: Option<Vec<u32>> = {
        let known = known.read().unwrap_or_else(|e| e.into_inner());
        values
            .iter()
            .map(|(v, _)| known.words.get(&(j, v.clone())).copied())
            .collect()
    };
    let words = match remembered {
        Some(words) => words,
        None => {
            let firsts = UInt32Array::from_iter_values(values.iter().map(|v| v.1 as u32));
            let distinct = take_record_batch(batch, &firsts)
                .map_err(|err| format!("taking the lookup side's distinct values failed: {err}"))?;
            let evaluated = e
                .evaluate(&distinct)
                .and_then(|v| v.into_array(distinct.num_rows()))
                .map_err(|err| format!("evaluating {e} over the lookup side failed: {err}"))?;
            if evaluated.null_count() > 0 {
                // The row-wise evaluation names the nulls' count.
                return Ok(None);
            }
            let words = words(&evaluated, &e.to_string())?;
            let mut known = known.write().unwrap_or_else(|e| e.into_inner());
            for ((v, _), &w) in values.iter().zip(&words) {
                known.words.insert((j, v.clone()), w);
            }
            words
        }
    };
    Ok(Some(Column::Coded {
        codes: Arc::clone(codes),
        words,
    }))
}

/// One lookup batch evaluated.
pub(super) struct Evaluated {
    /// Its keys, as i64.
    pub(super) keys: Int64Array,
    /// Its smallest and largest non-null key, if it has one (found here, on the batch's
    /// own task, rather than over every batch after the last arrives).
    pub(super) key_bounds: Option<(i64, i64)>,
    /// Each lookup column's words.
    pub(super) columns: Vec<Column>,
    /// Each lookup column's smallest and largest value (i32), if the batch has rows.
    pub(super) bounds: Vec<Option<(i32, i32)>>,
    /// Each group key's values.
    pub(super) groups: Vec<ArrayRef>,
}

/// `f` of every item, in order, over the cores: the lookup side is 15M rows for TPC-H's
/// orders at SF 10, and one thread would spend most of a query on it.
pub(super) fn on_cores<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(usize, T) -> Result<R, String> + Sync,
) -> Result<Vec<R>, String> {
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(items.len().max(1));
    let per_thread = items.len().div_ceil(threads).max(1);
    let mut groups: Vec<Vec<T>> = Vec::new();
    for item in items {
        match groups.last_mut() {
            Some(g) if g.len() < per_thread => g.push(item),
            _ => groups.push(vec![item]),
        }
    }
    let f = &f;
    std::thread::scope(|scope| {
        let tasks: Vec<_> = groups
            .into_iter()
            .enumerate()
            .map(|(t, group)| {
                scope.spawn(move || {
                    group
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| f(t * per_thread + i, item))
                        .collect::<Result<Vec<R>, String>>()
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.extend(
                t.join()
                    .map_err(|_| "a lookup thread panicked".to_string())??,
            );
        }
        Ok(out)
    })
}

impl LookupPlan {
    /// `batch`'s keys and lookup-column words.
    pub(super) fn evaluate(
        &self,
        batch: &RecordBatch,
        known: &RwLock<ValueWords>,
    ) -> Result<Evaluated, String> {
        let eval = |e: &Arc<dyn PhysicalExpr>| -> Result<ArrayRef, String> {
            e.evaluate(batch)
                .and_then(|v| v.into_array(batch.num_rows()))
                .map_err(|err| format!("evaluating {e} over the lookup side failed: {err}"))
        };
        let key = cast(&eval(&self.key)?, &DataType::Int64).map_err(|e| e.to_string())?;
        let key = key.as_primitive::<Int64Type>().clone();
        let mut coded = HashMap::new();
        let columns: Vec<Column> = self
            .columns
            .iter()
            .enumerate()
            .map(
                |(j, e)| match by_values((j, e), batch, &mut coded, known)? {
                    Some(column) => Ok(column),
                    None => Ok(Column::Words(words(&eval(e)?, &e.to_string())?)),
                },
            )
            .collect::<Result<_, String>>()?;
        let groups = self.groups.iter().map(eval).collect::<Result<_, _>>()?;
        let bounds = columns.iter().map(Column::bounds).collect();
        let key_bounds = min(&key).zip(max(&key));
        Ok(Evaluated {
            keys: key,
            key_bounds,
            columns,
            bounds,
            groups,
        })
    }
}
