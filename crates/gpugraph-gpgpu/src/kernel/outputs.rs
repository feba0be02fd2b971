//! Checks on caller-owned result views: algorithms that write a fixed number of rows (bins,
//! cells, groups, scalars) require packed views of exactly that length.

use gpugraph_command::{DataView, VectorFormat, VectorView};

use super::views::{require_packed, ViewCheck};
use crate::error::AlgorithmError;

/// Requires `v` to be packed `format` rows at a row-aligned offset, exactly `len` rows long.
pub fn require_output(
    c: ViewCheck<'_>,
    what: &str,
    v: &DataView,
    format: VectorFormat,
    len: u64,
) -> Result<(), AlgorithmError> {
    require_packed(c, what, &VectorView::from(*v), format)?;
    if v.len() != len {
        return Err(c.length(what, "rows", v.len(), len, "the contract"));
    }
    Ok(())
}
