//! CPU oracle of [`super::MaskOp`]: the plain loop the kernel parallelizes.

use super::MaskOp;

/// Combines source-aligned masks row by row with zero/nonzero semantics; output is 0 or 1.
/// `Not` uses the first mask only; `Difference` is `first AND NOT (any other)`.
pub fn combine(op: MaskOp, inputs: &[&[u32]]) -> Vec<u32> {
    let n = inputs.first().map_or(0, |m| m.len());
    (0..n)
        .map(|i| {
            let bit = |k: usize| inputs[k][i] != 0;
            let v = match op {
                MaskOp::And => (0..inputs.len()).all(bit),
                MaskOp::Or => (0..inputs.len()).any(bit),
                MaskOp::Xor => (0..inputs.len()).filter(|&k| bit(k)).count() % 2 == 1,
                MaskOp::Difference => bit(0) && !(1..inputs.len()).any(bit),
                MaskOp::Not => !bit(0),
            };
            v as u32
        })
        .collect()
}
