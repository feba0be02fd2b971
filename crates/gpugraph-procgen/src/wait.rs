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

use gpugraph_command::{wgpu, CommandGraph, CompiledGraph};

use crate::cook::{read_words, Cook};
use crate::count::{CountExpr, CountValue};
use crate::error::Result;

/// One planning wait a recording holds: the count `expr` that `node` needed as a number.
#[derive(Clone, Debug)]
pub struct PlanWait {
    /// The expression, as the graph named it (`(kept.indices_count - 3)`).
    pub expr: String,
    /// The node that needed the number (`the domain of procgen/gather#12`).
    pub node: String,
    /// The number the plan was made with.
    pub value: u64,
    a: CountValue,
    b: CountValue,
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

impl Cook {
    /// Reads `a - b` (the operands of `expr`, planned) for `node`: compiles and submits what the
    /// cook recorded so far as a segment, reads the count words and records the wait; the cook
    /// goes on in a fresh graph. The number is what the plan continues with.
    pub fn read_back(
        &mut self,
        expr: &CountExpr,
        node: &str,
        a: CountValue,
        b: CountValue,
    ) -> Result<u64> {
        let fresh = CommandGraph::new(self.graph.id().to_string(), &self.device);
        let graph = std::mem::replace(&mut self.graph, fresh);
        let graph = if graph.node_count() == 0 {
            None
        } else {
            let mut compiled = graph.compile()?;
            crate::cook::submit(&self.device, &self.queue, &mut compiled)?;
            Some(compiled)
        };
        let mut wait = PlanWait {
            expr: expr.to_string(),
            node: node.to_string(),
            value: 0,
            a,
            b,
        };
        wait.value = wait.read(&self.device, &self.queue)?;
        self.waits.push(wait.describe(wait.value));
        let value = wait.value;
        self.segments.push(Segment { graph, wait });
        Ok(value)
    }

    /// The planning waits this cook made so far.
    pub fn plan_waits(&self) -> impl Iterator<Item = &PlanWait> {
        self.segments.iter().map(|s| &s.wait)
    }
}
