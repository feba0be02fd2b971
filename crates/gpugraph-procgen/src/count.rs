//! Arithmetic over counts. Growing arithmetic (sums, products, min, max of counts and numbers)
//! is a domain as it stands: its capacity is the same arithmetic over the capacities and its
//! count is evaluated on the device, one `count_op` dispatch per operator. Arithmetic that takes
//! a count away (`kept.count - 3`) is read back where the dispatch needs the number: the cook
//! submits what it recorded before, reads the count words, and plans on from the number
//! ([`Cook::read_back`]); the recording holds that planning wait and every replay makes it
//! again (see [`crate::cook::PlanWait`]).

use bytemuck::Pod;
use gpugraph_command::{Access, Grid};

use crate::column::{ColumnType, LiveCount};
use crate::cook::{u32_count, Cook};
use crate::error::Result;

const COUNT_OP_WGSL: &str = include_str!("../assets/internal/count_op.wgsl");

/// A count: a live count, a number, or arithmetic over them.
#[derive(Clone, Debug, PartialEq)]
pub enum CountExpr {
    /// A count the device holds.
    Count(LiveCount),
    /// A known number.
    Number(u64),
    /// a + b.
    Add(Box<CountExpr>, Box<CountExpr>),
    /// a × b.
    Mul(Box<CountExpr>, Box<CountExpr>),
    /// min(a, b).
    Min(Box<CountExpr>, Box<CountExpr>),
    /// max(a, b).
    Max(Box<CountExpr>, Box<CountExpr>),
    /// a − b, saturating at 0 (takes a count away: read back where a dispatch needs it).
    Sub(Box<CountExpr>, Box<CountExpr>),
    /// A count under the name a node gave it (`kept.indices_count`), for waits and errors.
    Named(String, Box<CountExpr>),
}

impl CountExpr {
    /// The expression under any names it was given.
    pub fn unnamed(&self) -> &CountExpr {
        match self {
            CountExpr::Named(_, e) => e.unnamed(),
            e => e,
        }
    }
}

impl std::fmt::Display for CountExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountExpr::Count(l) => write!(f, "count(≤{})", l.capacity),
            CountExpr::Number(n) => write!(f, "{n}"),
            CountExpr::Add(a, b) => write!(f, "({a} + {b})"),
            CountExpr::Mul(a, b) => write!(f, "{a} * {b}"),
            CountExpr::Min(a, b) => write!(f, "min({a}, {b})"),
            CountExpr::Max(a, b) => write!(f, "max({a}, {b})"),
            CountExpr::Sub(a, b) => write!(f, "({a} - {b})"),
            CountExpr::Named(n, _) => write!(f, "{n}"),
        }
    }
}

/// What a count comes to when the plan is made.
#[derive(Clone, Debug, PartialEq)]
pub enum CountValue {
    /// Known on the CPU.
    Known(u64),
    /// Held on the device.
    Live(LiveCount),
}

#[repr(C)]
#[derive(Clone, Copy, Pod, bytemuck::Zeroable)]
struct CountOpParams {
    op: u32,
    a_const: u32,
    b_const: u32,
    a_live: u32,
    b_live: u32,
}

/// The CPU arithmetic of `count_op.wgsl` (saturating at u32::MAX), also the capacities'.
pub fn apply(op: u32, a: u64, b: u64) -> u64 {
    let r = match op {
        0 => a.saturating_add(b),
        1 => a.saturating_mul(b),
        2 => a.min(b),
        _ => a.max(b),
    };
    r.min(u64::from(u32::MAX))
}

impl Cook {
    /// Plans `expr` for a count node (see [`Cook::count_at`]).
    pub fn count(&mut self, expr: &CountExpr) -> Result<CountValue> {
        self.count_at(expr, "a count")
    }

    /// Plans `expr` where `node` needs it: known numbers fold on the CPU; growing arithmetic
    /// over live counts is evaluated on the device into a new count word whose capacity is the
    /// arithmetic over the capacities; a subtraction involving a live count is read back
    /// ([`Cook::read_back`], a planning wait naming `expr` and `node`) and is known from then on.
    pub fn count_at(&mut self, expr: &CountExpr, node: &str) -> Result<CountValue> {
        let (op, a, b) = match expr {
            CountExpr::Count(l) => return Ok(CountValue::Live(l.clone())),
            CountExpr::Number(n) => return Ok(CountValue::Known(*n)),
            CountExpr::Named(_, e) => return self.count_at(e, node),
            CountExpr::Sub(a, b) => {
                return match (self.count_at(a, node)?, self.count_at(b, node)?) {
                    (CountValue::Known(x), CountValue::Known(y)) => {
                        Ok(CountValue::Known(x.saturating_sub(y)))
                    }
                    (x, y) => Ok(CountValue::Known(self.read_back(expr, node, x, y)?)),
                }
            }
            CountExpr::Add(a, b) => (0, a, b),
            CountExpr::Mul(a, b) => (1, a, b),
            CountExpr::Min(a, b) => (2, a, b),
            CountExpr::Max(a, b) => (3, a, b),
        };
        let (x, y) = (self.count_at(a, node)?, self.count_at(b, node)?);
        let cap = |v: &CountValue| match v {
            CountValue::Known(n) => *n,
            CountValue::Live(l) => l.capacity,
        };
        if let (CountValue::Known(p), CountValue::Known(q)) = (&x, &y) {
            return Ok(CountValue::Known(apply(op, *p, *q)));
        }
        // Multiplying a live count by 1 is the count itself: no dispatch.
        match (&x, &y) {
            (CountValue::Known(1), CountValue::Live(l))
            | (CountValue::Live(l), CountValue::Known(1))
                if op == 1 =>
            {
                return Ok(CountValue::Live(l.clone()))
            }
            _ => {}
        }
        let capacity = apply(op, cap(&x), cap(&y));
        let out = self.alloc("procgen/count", ColumnType::UInt, 1, 1);
        let operand =
            |v: &CountValue| -> Result<(u32, u32, Option<gpugraph_command::wgpu::Buffer>)> {
                Ok(match v {
                    CountValue::Known(n) => (u32_count("count operand", *n)?, 0, None),
                    CountValue::Live(l) => (0, 1, Some(l.word.clone())),
                })
            };
        let (a_const, a_live, a_buf) = operand(&x)?;
        let (b_const, b_live, b_buf) = operand(&y)?;
        let a_buf = a_buf.unwrap_or_else(|| out.buffer.clone());
        let b_buf = b_buf.unwrap_or_else(|| a_buf.clone());
        // A constant operand binds another live word (never read): the layout stays fixed.
        let a_buf = if a_live == 0 { b_buf.clone() } else { a_buf };
        self.internal(
            "procgen/count_op",
            COUNT_OP_WGSL,
            &CountOpParams {
                op,
                a_const,
                b_const,
                a_live,
                b_live,
            },
            &[
                (&a_buf, Access::Read),
                (&b_buf, Access::Read),
                (&out.buffer, Access::ReadWrite),
            ],
            Grid::Workgroups([1, 1, 1]),
        )?;
        Ok(CountValue::Live(LiveCount {
            word: out.buffer,
            capacity,
        }))
    }
}
