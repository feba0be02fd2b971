//! The aliasing rule every GPUScene node states for its outputs, in one place: an output never
//! shares a buffer with what the node reads (a dispatch binds a buffer once, read-only or
//! read-write), and no two outputs overlap (the kernels write them independently).

use gpugraph_command::{BufferHandle, CommandGraph, DataView};

use crate::RenderError;

/// Checks `written` (argument name, view) against `reads` and against each other.
///
/// Returns [`RenderError::WritesAlone`] for an output in a buffer the node reads and
/// [`RenderError::UnsupportedView`] naming both arguments and their byte ranges for two
/// overlapping outputs; `workflow` and `id` name the node in either error.
pub(crate) fn check_outputs_alone(
    graph: &CommandGraph,
    workflow: &'static str,
    id: &str,
    reads: &[BufferHandle],
    written: &[(&'static str, DataView)],
) -> Result<(), RenderError> {
    let bytes = |v: &DataView| v.byte_offset()..v.byte_offset() + v.byte_span();
    for (i, (what, v)) in written.iter().enumerate() {
        if reads.contains(&v.buffer()) {
            return Err(RenderError::WritesAlone {
                workflow,
                id: id.to_string(),
                what,
                buffer: graph.buffer_id(v.buffer())?.to_string(),
            });
        }
        for (other, w) in &written[..i] {
            let (a, b) = (bytes(v), bytes(w));
            if v.buffer() == w.buffer() && a.start < b.end && b.start < a.end {
                return Err(RenderError::UnsupportedView {
                    workflow,
                    id: id.to_string(),
                    what,
                    expected: "a range overlapping no other output",
                    actual: format!("bytes {a:?} overlap {other} bytes {b:?}"),
                });
            }
        }
    }
    Ok(())
}
