//! The oracle of [`super::ScalarOperation`]: WGSL semantics on the CPU (integer arithmetic
//! wraps; integer division by zero, and `i32::MIN / -1`, return the dividend).

use crate::expr::ScalarValue;

use super::ScalarOp;

/// `a op b` as the GPU computes it; `None` when the operand types differ.
pub fn apply(op: ScalarOp, a: ScalarValue, b: ScalarValue) -> Option<ScalarValue> {
    use ScalarOp::*;
    use ScalarValue as S;
    Some(match (a, b) {
        (S::Float32(x), S::Float32(y)) => S::Float32(match op {
            Add => x + y,
            Subtract => x - y,
            Multiply => x * y,
            Divide => x / y,
            Min => x.min(y),
            Max => x.max(y),
        }),
        (S::Sint32(x), S::Sint32(y)) => S::Sint32(match op {
            Add => x.wrapping_add(y),
            Subtract => x.wrapping_sub(y),
            Multiply => x.wrapping_mul(y),
            Divide => {
                if y == 0 || (x == i32::MIN && y == -1) {
                    x
                } else {
                    x / y
                }
            }
            Min => x.min(y),
            Max => x.max(y),
        }),
        (S::Uint32(x), S::Uint32(y)) => S::Uint32(match op {
            Add => x.wrapping_add(y),
            Subtract => x.wrapping_sub(y),
            Multiply => x.wrapping_mul(y),
            Divide => x.checked_div(y).unwrap_or(x),
            Min => x.min(y),
            Max => x.max(y),
        }),
        _ => return None,
    })
}
