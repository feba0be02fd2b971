//! The analysis's row kernels, written in the expression language ([`crate::expr`]) and run as
//! [`ExpressionKernel`]s: filter predicates, integer→float32 conversions and the
//! validity/finiteness masks. Each reads 4 bytes per input column and writes 4 per row.
//!
//! The expressions name fixed declarations (`x`, `valid`, `m0`.., `f0`.., scalars `t`, `lo`,
//! `hi`, `invert`), and thresholds are scalars in the parameter buffer, so the generated
//! WGSL depends only on the kernel's shape: one pipeline per shape, shared by every column,
//! threshold and graph through the device's pipeline cache.
//!
//! Semantics are the expression language's (bit-exact against its CPU oracle, `eval.rs`):
//! float comparisons are IEEE on the bits (NaN compares false except `notEqual`, -0 == 0;
//! subnormal operands are flushed to zero), integers compare exactly, `float32(int)` rounds
//! to nearest even.

use gpugraph_command::{CommandGraph, VectorFormat, VectorView};
use gpugraph_gpgpu::kernel::ViewCheck;

use super::{AnalyzeError, FilterValue, RowFilter};
use crate::expr::{
    compile_expression, ExprError, ExpressionKernel, ExpressionOptions, ScalarBinding, ScalarType,
    ScalarValue,
};

/// A filter's comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CompareOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
            CompareOp::Eq => "==",
            CompareOp::Ne => "!=",
        }
    }
}

/// How a filter compares on the GPU after host-side normalization.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Comparison {
    /// float32 `x op threshold` (NaN never passes).
    Float {
        /// The operator.
        op: CompareOp,
        /// The threshold (the filter's number rounded to float32).
        threshold: f32,
    },
    /// sint32 `(lo <= x <= hi) != invert`.
    Signed {
        /// Lowest passing value.
        lo: i32,
        /// Highest passing value.
        hi: i32,
        /// Pass outside the range instead.
        invert: bool,
    },
    /// uint32 (integers and dictionary codes) `(lo <= x <= hi) != invert`.
    Unsigned {
        /// Lowest passing value.
        lo: u32,
        /// Highest passing value.
        hi: u32,
        /// Pass outside the range instead.
        invert: bool,
    },
}

impl Comparison {
    /// The exact integer form of `x op value` for integers `x` in `[min, max]`: an inclusive
    /// range `(lo, hi, invert)` (empty as `(1, 0)`) and whether to pass outside it instead.
    pub fn integer_range(op: CompareOp, value: f64, min: i64, max: i64) -> (i64, i64, bool) {
        let (lo, hi, invert) = match op {
            CompareOp::Lt => (f64::NEG_INFINITY, value.ceil() - 1.0, false),
            CompareOp::Le => (f64::NEG_INFINITY, value.floor(), false),
            CompareOp::Gt => (value.floor() + 1.0, f64::INFINITY, false),
            CompareOp::Ge => (value.ceil(), f64::INFINITY, false),
            CompareOp::Eq | CompareOp::Ne if value.fract() != 0.0 || !value.is_finite() => {
                (1.0, 0.0, op == CompareOp::Ne)
            }
            CompareOp::Eq => (value, value, false),
            CompareOp::Ne => (value, value, true),
        };
        let lo = lo.max(min as f64);
        let hi = hi.min(max as f64);
        if lo > hi {
            // Empty: encoded as the canonical empty range [1, 0] (invert keeps `!=` true).
            return (1, 0, invert);
        }
        (lo as i64, hi as i64, invert)
    }

    /// The comparison `op value` on a column stored as `format`; `None` for formats a filter
    /// cannot compare. Integer comparisons are exact (see [`Self::integer_range`]).
    pub fn numeric(op: CompareOp, value: f64, format: VectorFormat) -> Option<Self> {
        Some(match format {
            VectorFormat::Float32 => Comparison::Float {
                op,
                threshold: value as f32,
            },
            VectorFormat::Sint32 => {
                let (lo, hi, invert) =
                    Self::integer_range(op, value, i32::MIN as i64, i32::MAX as i64);
                Comparison::Signed {
                    lo: lo as i32,
                    hi: hi as i32,
                    invert,
                }
            }
            VectorFormat::Uint32 => {
                let (lo, hi, invert) = Self::integer_range(op, value, 0, u32::MAX as i64);
                Comparison::Unsigned {
                    lo: lo as u32,
                    hi: hi as u32,
                    invert,
                }
            }
            _ => return None,
        })
    }

    /// The CPU twin of the predicate on one valid row's bits (what the GPU computes).
    pub fn passes(self, bits: u32) -> bool {
        match self {
            Comparison::Float { op, threshold: t } => {
                // The expression language flushes subnormal operands to signed zero.
                let flush = |v: f32| {
                    if v.is_subnormal() {
                        0.0 * v.signum()
                    } else {
                        v
                    }
                };
                let (x, t) = (flush(f32::from_bits(bits)), flush(t));
                match op {
                    CompareOp::Lt => x < t,
                    CompareOp::Le => x <= t,
                    CompareOp::Gt => x > t,
                    CompareOp::Ge => x >= t,
                    CompareOp::Eq => x == t,
                    CompareOp::Ne => x != t && !x.is_nan(),
                }
            }
            Comparison::Signed { lo, hi, invert } => {
                let x = bits as i32;
                (lo <= x && x <= hi) != invert
            }
            Comparison::Unsigned { lo, hi, invert } => (lo <= bits && bits <= hi) != invert,
        }
    }

    /// The expression text over input `x` (and `valid` when `validity`), its scalar
    /// declarations and their values.
    fn expression(
        self,
        validity: bool,
    ) -> (String, VectorFormat, Vec<(&'static str, ScalarValue)>) {
        let (test, format, scalars) = match self {
            Comparison::Float { op, threshold } => {
                let f = match op {
                    CompareOp::Lt => "lessThan(x, t)",
                    CompareOp::Le => "lessThanEqual(x, t)",
                    CompareOp::Gt => "greaterThan(x, t)",
                    CompareOp::Ge => "greaterThanEqual(x, t)",
                    CompareOp::Eq => "equal(x, t)",
                    // `notEqual` is true for NaN; `equal(x, x)` is false exactly for NaN.
                    CompareOp::Ne => "and(notEqual(x, t), equal(x, x))",
                };
                (
                    f.to_string(),
                    VectorFormat::Float32,
                    vec![("t", ScalarValue::Float32(threshold))],
                )
            }
            Comparison::Signed { lo, hi, invert } => (
                RANGE.to_string(),
                VectorFormat::Sint32,
                vec![
                    ("lo", ScalarValue::Sint32(lo)),
                    ("hi", ScalarValue::Sint32(hi)),
                    ("invert", ScalarValue::Uint32(invert.into())),
                ],
            ),
            Comparison::Unsigned { lo, hi, invert } => (
                RANGE.to_string(),
                VectorFormat::Uint32,
                vec![
                    ("lo", ScalarValue::Uint32(lo)),
                    ("hi", ScalarValue::Uint32(hi)),
                    ("invert", ScalarValue::Uint32(invert.into())),
                ],
            ),
        };
        let text = if validity {
            format!("and(valid, {test})")
        } else {
            test
        };
        (text, format, scalars)
    }
}

/// The GPU comparison of filter `f` on a column stored as `format` (with its dictionary for
/// text columns). Errors name the filter and the column.
pub(super) fn comparison(
    f: &RowFilter,
    format: VectorFormat,
    dictionary: Option<&[String]>,
) -> Result<Comparison, AnalyzeError> {
    let bad = |reason: String| AnalyzeError::FilterValue {
        filter: f.to_string(),
        reason,
    };
    match (&f.value, dictionary) {
        (FilterValue::Text(s), Some(dict)) => {
            let code = dict.iter().position(|d| d == s).map(|c| c as u32);
            let invert = match f.op {
                CompareOp::Eq => false,
                CompareOp::Ne => true,
                _ => {
                    return Err(bad(format!(
                        "column '{}' is text; text columns support only == and !=",
                        f.column
                    )))
                }
            };
            let (lo, hi) = code.map_or((1, 0), |c| (c, c));
            Ok(Comparison::Unsigned { lo, hi, invert })
        }
        (FilterValue::Number(_), Some(_)) => Err(bad(format!(
            "column '{}' is text; compare it with a string",
            f.column
        ))),
        (FilterValue::Text(s), None) => Err(bad(format!(
            "'{s}' is not a number (column '{}' is numeric)",
            f.column
        ))),
        (FilterValue::Number(v), None) if v.is_nan() => Err(bad(
            "NaN never compares true; NaN rows never pass a filter".into(),
        )),
        (FilterValue::Number(v), None) => {
            Comparison::numeric(f.op, *v, format).ok_or_else(|| AnalyzeError::FilterFormat {
                filter: f.to_string(),
                column: f.column.clone(),
                format,
            })
        }
    }
}

/// `(lo <= x <= hi) != invert` as a uint32 0/1.
const RANGE: &str = "notEqual(and(greaterThanEqual(x, lo), lessThanEqual(x, hi)), invert)";

fn mask_options() -> ExpressionOptions {
    ExpressionOptions::output("mask").with_output_format(VectorFormat::Uint32)
}

/// The predicate kernel of `comparison` (with a validity input when `validity`) and the
/// scalar values to bind.
pub fn predicate_kernel(
    comparison: Comparison,
    validity: bool,
) -> Result<(ExpressionKernel, Vec<ScalarBinding>), ExprError> {
    let (text, format, scalars) = comparison.expression(validity);
    let mut inputs = vec![("x", format)];
    if validity {
        inputs.push(("valid", VectorFormat::Uint32));
    }
    let decls: Vec<(&str, ScalarType)> = scalars.iter().map(|(n, v)| (*n, v.scalar())).collect();
    let expr = compile_expression(
        Some("analyze-filter"),
        text.as_str(),
        &inputs,
        &decls,
        &mask_options(),
    )?;
    let values = scalars
        .into_iter()
        .map(|(_, v)| ScalarBinding::Value(v))
        .collect();
    Ok((ExpressionKernel::new(expr), values))
}

/// Adds node `id`: `output[i] = valid[i] && column[i] satisfies comparison` (0/1). `column` is
/// float32, sint32 or uint32 to match the comparison; `validity` (0/1 uint32) is optional.
/// Reads the column and validity (4 + 4 bytes per row), writes 4 per row; every view must
/// have the output's chunk lengths.
pub fn predicate(
    graph: &mut CommandGraph,
    id: &str,
    column: &VectorView,
    validity: Option<&VectorView>,
    comparison: Comparison,
    output: &VectorView,
) -> Result<(), super::AnalyzeError> {
    let (kernel, scalars) = predicate_kernel(comparison, validity.is_some())?;
    let mut inputs = vec![column.clone()];
    inputs.extend(validity.cloned());
    kernel.add_to_graph_as(graph, id, &inputs, &scalars, output)?;
    Ok(())
}

/// The conversion kernel `float32(x)` for a sint32 or uint32 column.
pub fn to_float_kernel(format: VectorFormat) -> Result<ExpressionKernel, ExprError> {
    let expr = compile_expression(
        Some("analyze-to-float"),
        "float32(x)",
        &[("x", format)],
        &[],
        &ExpressionOptions::output("float").with_output_format(VectorFormat::Float32),
    )?;
    Ok(ExpressionKernel::new(expr))
}

/// Adds node `id`: `output[i] = float32(column[i])` (round to nearest even) for a column
/// stored as `format`, sint32 or uint32 (4 + 4 bytes per row).
pub fn to_float(
    graph: &mut CommandGraph,
    id: &str,
    column: &VectorView,
    format: VectorFormat,
    output: &VectorView,
) -> Result<(), super::AnalyzeError> {
    let kernel = to_float_kernel(format)?;
    kernel.add_to_graph_as(graph, id, std::slice::from_ref(column), &[], output)?;
    Ok(())
}

/// The text of [`all_valid`] over `masks` 0/1 inputs `m0..` and `floats` float32 inputs
/// `f0..`: the AND of every mask and of `equal(f - f, 0)` per float (false exactly for NaN
/// and infinities, whose difference with themselves is NaN).
pub fn all_valid_text(masks: usize, floats: usize) -> String {
    let terms: Vec<String> = (0..masks)
        .map(|k| format!("m{k}"))
        .chain((0..floats).map(|k| format!("equal(f{k} - f{k}, 0)")))
        .collect();
    let mut text = terms.first().cloned().unwrap_or_default();
    for t in &terms[1..] {
        text = format!("and({text}, {t})");
    }
    text
}

/// The kernel of [`all_valid`].
pub fn all_valid_kernel(masks: usize, floats: usize) -> Result<ExpressionKernel, ExprError> {
    let names: Vec<String> = (0..masks)
        .map(|k| format!("m{k}"))
        .chain((0..floats).map(|k| format!("f{k}")))
        .collect();
    let inputs: Vec<(&str, VectorFormat)> = names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let f = if k < masks {
                VectorFormat::Uint32
            } else {
                VectorFormat::Float32
            };
            (n.as_str(), f)
        })
        .collect();
    let expr = compile_expression(
        Some("analyze-valid"),
        all_valid_text(masks, floats),
        &inputs,
        &[],
        &mask_options(),
    )?;
    Ok(ExpressionKernel::new(expr))
}

/// Adds node `id`: `output[i] = 1` when every mask is nonzero at `i` and every float32 input
/// is finite at `i`, else 0 (4 bytes read per input, 4 written per row). At least one input.
pub fn all_valid(
    graph: &mut CommandGraph,
    id: &str,
    masks: &[VectorView],
    floats: &[VectorView],
    output: &VectorView,
) -> Result<(), super::AnalyzeError> {
    if masks.is_empty() && floats.is_empty() {
        return Err(ViewCheck::new("analyze", id)
            .missing("at least one input (mask or float)", "a validity mask")
            .into());
    }
    let kernel = all_valid_kernel(masks.len(), floats.len())?;
    let inputs: Vec<VectorView> = masks.iter().chain(floats).cloned().collect();
    kernel.add_to_graph_as(graph, id, &inputs, &[], output)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Column, Values};

    #[test]
    fn integer_comparisons_normalize_exactly() {
        let r = |op, v| Comparison::integer_range(op, v, i32::MIN as i64, i32::MAX as i64);
        let max = i32::MAX as i64;
        let min = i32::MIN as i64;
        assert_eq!(r(CompareOp::Lt, 2.5), (min, 2, false));
        assert_eq!(r(CompareOp::Lt, 3.0), (min, 2, false));
        assert_eq!(r(CompareOp::Le, 2.5), (min, 2, false));
        assert_eq!(r(CompareOp::Gt, 2.5), (3, max, false));
        assert_eq!(r(CompareOp::Gt, 2.0), (3, max, false));
        assert_eq!(r(CompareOp::Ge, 2.5), (3, max, false));
        assert_eq!(r(CompareOp::Ge, -2.5), (-2, max, false));
        assert_eq!(r(CompareOp::Eq, 7.0), (7, 7, false));
        assert_eq!(r(CompareOp::Eq, 7.5), (1, 0, false));
        assert_eq!(r(CompareOp::Ne, 7.5), (1, 0, true));
        assert_eq!(r(CompareOp::Ne, -7.0), (-7, -7, true));
        assert_eq!(r(CompareOp::Lt, -1e300), (1, 0, false));
        assert_eq!(r(CompareOp::Lt, 1e300), (min, max, false));
        assert_eq!(r(CompareOp::Gt, f64::INFINITY), (1, 0, false));
        assert_eq!(r(CompareOp::Eq, 1e10), (1, 0, false));
        let u = |op, v| Comparison::integer_range(op, v, 0, u32::MAX as i64);
        assert_eq!(u(CompareOp::Lt, 0.0), (1, 0, false));
        assert_eq!(u(CompareOp::Ge, -5.0), (0, u32::MAX as i64, false));
    }

    const OPS: [CompareOp; 6] = [
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
        CompareOp::Eq,
        CompareOp::Ne,
    ];

    fn u32s(v: Values) -> Vec<u32> {
        match v {
            Values::Uint32(v) => v,
            other => panic!("expected uint32, got {other:?}"),
        }
    }

    /// The expressions' CPU evaluation (the expression oracle) agrees with `passes` and with
    /// validity, on NaN, infinities, signed zeros, subnormals and integer extremes.
    #[test]
    fn predicate_expressions_match_their_twin() {
        let floats = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            2.5,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-40,
            f32::MAX,
        ];
        let bits: Vec<u32> = floats.iter().map(|f| f.to_bits()).collect();
        let valid: Vec<u32> = (0..bits.len() as u32)
            .map(|i| u32::from(i % 3 != 1))
            .collect();
        for op in OPS {
            for t in [0.0f32, 1.0, 2.5, -1.0, f32::INFINITY] {
                let c = Comparison::Float { op, threshold: t };
                for validity in [false, true] {
                    let (kernel, scalars) = predicate_kernel(c, validity).unwrap();
                    let expr = kernel.expression().unwrap();
                    let values: Vec<ScalarValue> = scalars
                        .iter()
                        .map(|s| match s {
                            ScalarBinding::Value(v) => *v,
                            ScalarBinding::View(_) => unreachable!(),
                        })
                        .collect();
                    let mut cols = vec![Column::Float32(&floats)];
                    if validity {
                        cols.push(Column::Uint32(&valid));
                    }
                    let got = u32s(expr.evaluate(&cols, &values).unwrap());
                    for (i, &b) in bits.iter().enumerate() {
                        let want = c.passes(b) && (!validity || valid[i] != 0);
                        assert_eq!(got[i] != 0, want, "{op:?} {t} on {}", floats[i]);
                    }
                }
            }
        }
        let ints = [i32::MIN, -7, -1, 0, 1, 2, 3, 7, i32::MAX];
        for op in OPS {
            for v in [-7.0, -2.5, 0.0, 2.0, 2.5, 1e12] {
                let c = Comparison::numeric(op, v, VectorFormat::Sint32).unwrap();
                let (kernel, scalars) = predicate_kernel(c, false).unwrap();
                let values: Vec<ScalarValue> = scalars
                    .iter()
                    .map(|s| match s {
                        ScalarBinding::Value(v) => *v,
                        ScalarBinding::View(_) => unreachable!(),
                    })
                    .collect();
                let got = u32s(
                    kernel
                        .expression()
                        .unwrap()
                        .evaluate(&[Column::Sint32(&ints)], &values)
                        .unwrap(),
                );
                for (i, &x) in ints.iter().enumerate() {
                    let want = match op {
                        CompareOp::Lt => (x as f64) < v,
                        CompareOp::Le => (x as f64) <= v,
                        CompareOp::Gt => (x as f64) > v,
                        CompareOp::Ge => (x as f64) >= v,
                        CompareOp::Eq => (x as f64) == v,
                        CompareOp::Ne => (x as f64) != v,
                    };
                    assert_eq!(got[i] != 0, want, "{x} {op:?} {v}");
                    assert_eq!(c.passes(x as u32), want);
                }
            }
        }
    }

    #[test]
    fn all_valid_is_and_of_masks_and_finiteness() {
        assert_eq!(all_valid_text(0, 1), "equal(f0 - f0, 0)");
        assert_eq!(all_valid_text(2, 1), "and(and(m0, m1), equal(f0 - f0, 0))");
        let kernel = all_valid_kernel(1, 2).unwrap();
        let m = [1u32, 0, 1, 1, 1];
        let a = [1.0f32, 1.0, f32::NAN, 3.0, 1e-40];
        let b = [2.0f32, 2.0, 2.0, f32::NEG_INFINITY, f32::MAX];
        let got = u32s(
            kernel
                .expression()
                .unwrap()
                .evaluate(
                    &[Column::Uint32(&m), Column::Float32(&a), Column::Float32(&b)],
                    &[],
                )
                .unwrap(),
        );
        assert_eq!(got, [1, 0, 0, 0, 1]);
        let k = to_float_kernel(VectorFormat::Uint32).unwrap();
        let x = [0u32, 16_777_217, u32::MAX];
        match k
            .expression()
            .unwrap()
            .evaluate(&[Column::Uint32(&x)], &[])
            .unwrap()
        {
            Values::Float32(v) => assert_eq!(v, [0.0, 16_777_216.0, 4_294_967_296.0]),
            other => panic!("{other:?}"),
        }
    }
}
