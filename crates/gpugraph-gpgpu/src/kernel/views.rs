//! Boundary checks algorithms apply to their views: exact memory form and matching chunk
//! topology. Errors name the algorithm, instance, argument and what was found.

use gpugraph_command::{DataView, VectorFormat, VectorView};

use crate::error::AlgorithmError;

/// Who is checking: algorithm name and instance id, for error messages.
#[derive(Clone, Copy, Debug)]
pub struct ViewCheck<'a> {
    /// Algorithm name ("scan").
    pub algorithm: &'static str,
    /// Instance id.
    pub id: &'a str,
}

impl<'a> ViewCheck<'a> {
    /// The checker of instance `id` of `algorithm`.
    pub fn new(algorithm: &'static str, id: &'a str) -> Self {
        Self { algorithm, id }
    }

    /// [`AlgorithmError::LengthMismatch`] of this instance: `what` has `actual` `unit` where
    /// `rule` needs `expected`.
    pub fn length(
        self,
        what: impl Into<Box<str>>,
        unit: &'static str,
        actual: u64,
        expected: u64,
        rule: impl Into<Box<str>>,
    ) -> AlgorithmError {
        AlgorithmError::LengthMismatch {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what: what.into(),
            unit,
            actual,
            expected,
            rule: rule.into(),
        }
    }

    /// [`AlgorithmError::OutOfRange`] of this instance: `what` is `value`, must be `allowed`.
    pub fn out_of_range(
        self,
        what: impl Into<Box<str>>,
        value: impl std::fmt::Display,
        allowed: impl Into<Box<str>>,
    ) -> AlgorithmError {
        AlgorithmError::OutOfRange {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what: what.into(),
            value: value.to_string().into(),
            allowed: allowed.into(),
        }
    }

    /// [`AlgorithmError::MissingArgument`] of this instance: `needed_by` needs `what`.
    pub fn missing(
        self,
        what: impl Into<Box<str>>,
        needed_by: impl Into<Box<str>>,
    ) -> AlgorithmError {
        AlgorithmError::MissingArgument {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what: what.into(),
            needed_by: needed_by.into(),
        }
    }

    /// [`AlgorithmError::UnsupportedView`] of this instance: `what` must be `expected`, is
    /// `actual`.
    pub fn unsupported(
        self,
        what: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> AlgorithmError {
        AlgorithmError::UnsupportedView {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what: what.into(),
            expected: expected.into(),
            actual: actual.into(),
        }
    }

    /// [`AlgorithmError::Policy`] of this instance, carrying the policy's typed error.
    pub fn policy(self, source: impl std::error::Error + Send + Sync + 'static) -> AlgorithmError {
        AlgorithmError::Policy {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            source: Box::new(source),
        }
    }

    /// [`AlgorithmError::Aliased`] of this instance: `written` and `other` share `buffer`.
    pub fn aliased(
        self,
        written: impl Into<String>,
        other: impl Into<String>,
        buffer: impl Into<Box<str>>,
        reason: &'static str,
    ) -> AlgorithmError {
        AlgorithmError::Aliased {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            written: written.into(),
            other: other.into(),
            buffer: buffer.into(),
            reason,
        }
    }

    /// [`AlgorithmError::DeviceLimit`] of this instance: `what` needs `needed`, the device
    /// allows `limit`.
    pub fn device_limit(self, what: impl Into<String>, needed: u64, limit: u64) -> AlgorithmError {
        AlgorithmError::DeviceLimit {
            algorithm: self.algorithm,
            id: self.id.to_string(),
            what: what.into(),
            needed,
            limit,
        }
    }
}

/// Requires every chunk of `v` to have `format` and no live count (an algorithm that does not
/// read live counts would otherwise process the whole capacity).
pub fn require_format(
    c: ViewCheck<'_>,
    what: &str,
    v: &VectorView,
    format: VectorFormat,
) -> Result<(), AlgorithmError> {
    if let Some(i) = v.chunks().iter().position(|x| x.live_count().is_some()) {
        return Err(AlgorithmError::UnsupportedView {
            algorithm: c.algorithm,
            id: c.id.to_string(),
            what: chunk_name(what, v, i),
            expected: "a view without a live count".into(),
            actual: "a view with a live count".into(),
        });
    }
    formats_only(c, what, v, format)
}

fn formats_only(
    c: ViewCheck<'_>,
    what: &str,
    v: &VectorView,
    format: VectorFormat,
) -> Result<(), AlgorithmError> {
    for (i, chunk) in v.chunks().iter().enumerate() {
        if chunk.format() != format {
            return Err(AlgorithmError::UnsupportedView {
                algorithm: c.algorithm,
                id: c.id.to_string(),
                what: chunk_name(what, v, i),
                expected: format.to_string(),
                actual: chunk.format().to_string(),
            });
        }
    }
    Ok(())
}

/// Requires every chunk of `v` to be packed `format` rows at an offset aligned to the row.
pub fn require_packed(
    c: ViewCheck<'_>,
    what: &str,
    v: &VectorView,
    format: VectorFormat,
) -> Result<(), AlgorithmError> {
    require_format(c, what, v, format)?;
    for (i, chunk) in v.chunks().iter().enumerate() {
        if !chunk.is_packed()
            || !chunk
                .byte_offset()
                .is_multiple_of(format.byte_size() as u64)
        {
            return Err(AlgorithmError::UnsupportedView {
                algorithm: c.algorithm,
                id: c.id.to_string(),
                what: chunk_name(what, v, i),
                expected: format!(
                    "packed {format} at a {}-byte aligned offset",
                    format.byte_size()
                ),
                actual: describe(chunk),
            });
        }
    }
    Ok(())
}

/// [`require_packed`] for an input that may carry a live count: then it must be one chunk
/// (a count bounds one range), and the count view is returned. The caller declares a read of
/// the count's buffer and has its kernel read `min(count, len)` rows.
pub fn require_packed_live(
    c: ViewCheck<'_>,
    what: &str,
    v: &VectorView,
    format: VectorFormat,
) -> Result<Option<DataView>, AlgorithmError> {
    let live = v.chunks().iter().find_map(DataView::live_count);
    if live.is_some() && v.chunks().len() != 1 {
        return Err(AlgorithmError::UnsupportedView {
            algorithm: c.algorithm,
            id: c.id.to_string(),
            what: what.to_string(),
            expected: "a live count on a one-chunk vector".into(),
            actual: format!("{} chunks with a live count", v.chunks().len()),
        });
    }
    let stripped =
        VectorView::from_chunks(v.chunks().iter().map(|x| x.without_live_count()).collect());
    formats_only(c, what, &stripped, format)?;
    require_packed(c, what, &stripped, format)?;
    Ok(live)
}

/// The one live count of several inputs that are read row for row together (keys, values and
/// mask of one row): each input is checked like [`require_packed_live`] with its format, and
/// every input that carries a live count must carry the same one (one count bounds the rows
/// of all of them), else [`AlgorithmError::LiveCountMismatch`] naming both inputs.
pub fn require_packed_live_all(
    c: ViewCheck<'_>,
    inputs: &[(&str, &VectorView, VectorFormat)],
) -> Result<Option<DataView>, AlgorithmError> {
    let mut found: Option<(&str, DataView)> = None;
    for (name, v, format) in inputs {
        let Some(live) = require_packed_live(c, name, v, *format)? else {
            continue;
        };
        match found {
            Some((first, l)) if l != live => {
                return Err(AlgorithmError::LiveCountMismatch {
                    algorithm: c.algorithm,
                    id: c.id.to_string(),
                    first: first.into(),
                    second: (*name).into(),
                });
            }
            Some(_) => {}
            None => found = Some((name, live)),
        }
    }
    Ok(found.map(|(_, l)| l))
}

/// Requires `b` to have the same number of chunks with the same lengths as `a`.
pub fn check_same_topology(
    c: ViewCheck<'_>,
    a_name: &str,
    a: &VectorView,
    b_name: &str,
    b: &VectorView,
) -> Result<(), AlgorithmError> {
    let la: Vec<u64> = a.chunks().iter().map(DataView::len).collect();
    let lb: Vec<u64> = b.chunks().iter().map(DataView::len).collect();
    if la != lb {
        return Err(AlgorithmError::ChunkMismatch {
            algorithm: c.algorithm,
            id: c.id.to_string(),
            what: b_name.into(),
            reference: a_name.into(),
            expected: la.into(),
            actual: lb.into(),
        });
    }
    Ok(())
}

fn chunk_name(what: &str, v: &VectorView, i: usize) -> String {
    if v.chunks().len() == 1 {
        what.to_string()
    } else {
        format!("{what} chunk {i}")
    }
}

fn describe(v: &DataView) -> String {
    format!(
        "{} rows of {} at byte offset {} with stride {}",
        v.len(),
        v.format(),
        v.byte_offset(),
        v.byte_stride()
    )
}
