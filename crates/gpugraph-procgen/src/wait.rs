//! Planning waits: arithmetic that takes a count away is read back where a dispatch needs the
//! number (spec: "Arithmetic that takes a count away from something is read back where the
//! dispatch needs the number").
//!
//! A subtraction cannot be bounded by the same arithmetic over capacities the way sums and
//! products are, so the node that needs it gets a plain number. The cook splits its recording
//! there: what it recorded so far is compiled into a segment and submitted, the count words are
//! read, and the plan goes on with the number. A [`Recording`](crate::Recording) keeps the
//! segments and their waits; every replay runs a segment, reads its words again and, when the
//! number is still the one the plan was made with, runs on; when it moved, the replay stops and
//! the [`Player`](crate::Player) plans again (`Counts::replans`).

use gpugraph_command::{wgpu, CompiledGraph};

use crate::count::CountValue;
use crate::error::Result;
use crate::submit::read_words;

/// One planning wait a recording holds: the count `expr` that `node` needed as a number.
#[derive(Clone, Debug)]
pub struct PlanWait {
    /// The expression, as the graph named it (`(kept.indices_count - 3)`).
    pub expr: String,
    /// The node that needed the number (`the domain of procgen/gather#12`).
    pub node: String,
    /// The number the plan was made with.
    pub value: u64,
    pub(crate) a: CountValue,
    pub(crate) b: CountValue,
}

impl PlanWait {
    /// What the wait reads now: `a - b` over the count words, each live count clamped to its
    /// capacity (a kernel reads `min(count, capacity)`; an overflowed count is not a number of
    /// elements any column holds), saturating at 0.
    pub fn read(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<u64> {
        let value = |v: &CountValue| -> Result<u64> {
            Ok(match v {
                CountValue::Known(n) => *n,
                CountValue::Live(l) => {
                    u64::from(read_words(device, queue, &l.word, 1)?[0]).min(l.capacity)
                }
            })
        };
        Ok(value(&self.a)?.saturating_sub(value(&self.b)?))
    }

    /// The play report's line for a read that found `value`.
    pub fn describe(&self, value: u64) -> String {
        format!(
            "planning wait: `{}` read back = {value} for {}",
            self.expr, self.node
        )
    }
}

/// A part of a recording that ends in a planning wait.
pub(crate) struct Segment {
    /// What the cook recorded before the wait (`None`: nothing).
    pub(crate) graph: Option<CompiledGraph>,
    pub(crate) wait: PlanWait,
}
