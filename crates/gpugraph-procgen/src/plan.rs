//! How a cook plans counts: growing arithmetic as device dispatches, subtractions as planning
//! waits (see [`crate::count`] and [`crate::wait`] for the vocabulary). The cook's planning
//! lives here, above the count and wait types, so neither of them names the cook.

use bytemuck::Pod;
use gpugraph_command::{Access, CommandGraph, Grid};

use crate::column::{ColumnType, LiveCount};
use crate::cook::Cook;
use crate::count::{apply, CountExpr, CountValue};
use crate::error::Result;
use crate::submit::{submit, u32_count};
use crate::wait::{PlanWait, Segment};

const COUNT_OP_WGSL: &str = include_str!("../assets/internal/count_op.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, bytemuck::Zeroable)]
struct CountOpParams {
    op: u32,
    a_const: u32,
    b_const: u32,
    a_live: u32,
    b_live: u32,
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
            submit(&self.device, &self.queue, &mut compiled)?;
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
