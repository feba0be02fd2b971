//! Arithmetic over counts. Growing arithmetic (sums, products, min, max of counts and numbers)
//! is a domain as it stands: its capacity is the same arithmetic over the capacities and its
//! count is evaluated on the device, one `count_op` dispatch per operator. Arithmetic that takes
//! a count away (`kept.count - 3`) is read back where the dispatch needs the number: the cook
//! submits what it recorded before, reads the count words, and plans on from the number
//! ([`Cook::read_back`]); the recording holds that planning wait and every replay makes it
//! again (see [`crate::wait::PlanWait`]); both are planned in `plan.rs`.

use crate::column::LiveCount;

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
