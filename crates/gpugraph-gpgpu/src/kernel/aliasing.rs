//! Alias checks at an algorithm's boundary: a buffer the algorithm writes may not also be read
//! by it (one dispatch cannot bind a buffer read-only and writable, and kernels do not work in
//! place), and written views that share a buffer may not overlap.

use gpugraph_command::{CommandGraph, DataView, VectorView};

use super::views::ViewCheck;
use crate::error::AlgorithmError;

/// Default reason of a written view sharing a buffer with a read one.
pub const IN_PLACE: &str =
    "the algorithm cannot write a buffer it reads (no in-place operation); write the result to another buffer";
/// Reason of two written views overlapping.
pub const OVERLAP: &str = "their byte ranges overlap";

/// An argument for [`check_writes_alone`]: its name and views.
pub type Arg<'a> = (&'a str, &'a VectorView);

fn chunk_name(name: &str, v: &VectorView, i: usize) -> String {
    if v.chunks().len() == 1 {
        name.to_string()
    } else {
        format!("{name} chunk {i}")
    }
}

fn overlap(a: &DataView, b: &DataView) -> bool {
    let (a0, b0) = (a.byte_offset(), b.byte_offset());
    let (a1, b1) = (a0 + a.byte_span(), b0 + b.byte_span());
    a.byte_span() > 0 && b.byte_span() > 0 && a0 < b1 && b0 < a1
}

/// Requires that no written view shares a buffer with a read view (the error carries
/// `reason`, or [`IN_PLACE`] when it is empty), and that written views sharing a buffer do not
/// overlap ([`OVERLAP`]).
pub fn check_writes_alone(
    graph: &CommandGraph,
    c: ViewCheck<'_>,
    written: &[Arg<'_>],
    read: &[Arg<'_>],
    reason: &'static str,
) -> Result<(), AlgorithmError> {
    let error = |w: String, o: String, view: &DataView, reason: &'static str| {
        let buffer = match graph.buffer_id(view.buffer()) {
            Ok(id) => id.into(),
            Err(e) => return AlgorithmError::Graph(e),
        };
        AlgorithmError::Aliased {
            algorithm: c.algorithm,
            id: c.id.to_string(),
            written: w,
            other: o,
            buffer,
            reason,
        }
    };
    for &(wname, wv) in written {
        for (i, w) in wv.chunks().iter().enumerate() {
            for &(rname, rv) in read {
                for (j, r) in rv.chunks().iter().enumerate() {
                    if w.buffer() == r.buffer() {
                        return Err(error(
                            chunk_name(wname, wv, i),
                            chunk_name(rname, rv, j),
                            w,
                            reason,
                        ));
                    }
                }
            }
        }
    }
    let mut all: Vec<(String, &DataView)> = Vec::new();
    for &(name, v) in written {
        for (i, chunk) in v.chunks().iter().enumerate() {
            all.push((chunk_name(name, v, i), chunk));
        }
    }
    for (i, (a_name, a)) in all.iter().enumerate() {
        for (b_name, b) in &all[i + 1..] {
            if a.buffer() == b.buffer() && overlap(a, b) {
                return Err(error(a_name.clone(), b_name.clone(), a, OVERLAP));
            }
        }
    }
    Ok(())
}
