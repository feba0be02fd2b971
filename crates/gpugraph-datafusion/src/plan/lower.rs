//! A GPU plan's run-time checks and program: the bounds of every value it computes, and its
//! lowering to the kernel's instructions for the data's key cardinalities and lookup sides.

use super::{AggKind, AggWords, GpuPlan, Span, MAX_SPAN_WORDS};
use crate::ir::{Bounds, Ir, Leaf, Lowering};
use crate::lookup::LookupTable;
use crate::program::{Layout, LookupShape, Op, Program};

impl GpuPlan {
    /// The kernel slot of source column `c` read as a number.
    /// The kernel slot of source column `c`: a number slot, else a code slot after them.
    fn slot(&self, c: usize) -> u32 {
        let at = match self.values.iter().position(|&v| v == c) {
            Some(s) => s,
            None => self.values.len() + self.coded.iter().position(|&k| k == c).unwrap_or(0),
        };
        at as u32
    }

    /// Checks that every value the program computes fits i64 (min/max arguments i32), given
    /// the source columns' bounds, and returns each aggregate's [`Span`] (COUNT(DISTINCT)s
    /// only; an argument range past [`MAX_SPAN_WORDS`] is refused).
    /// `lookups` are the joins' built lookup sides, then the code maps' tables.
    pub fn check_bounds(
        &self,
        source: &dyn Fn(usize) -> Bounds,
        lookups: &[LookupTable],
    ) -> Result<Vec<Option<Span>>, String> {
        let column = |leaf: Leaf| match leaf {
            Leaf::Column(c) => source(c),
            Leaf::Lookup(s, j) => lookups
                .get(s)
                .and_then(|l| l.bounds.get(j))
                .copied()
                .unwrap_or((0, 0)),
            Leaf::Map(m) => lookups
                .get(self.lookups.len() + m)
                .and_then(|l| l.bounds.first())
                .copied()
                .unwrap_or((0, 0)),
        };
        let column: &dyn Fn(Leaf) -> Bounds = &column;
        for p in &self.predicates {
            p.bounds(column).map_err(|e| e.to_string())?;
        }
        let mut spans = Vec::with_capacity(self.aggregates.len());
        for a in &self.aggregates {
            let (lo, hi) = a.arg.bounds(column).map_err(|e| e.to_string())?;
            if matches!(a.kind, AggKind::Min | AggKind::Max)
                && (lo < i32::MIN as i128 || hi > i32::MAX as i128)
            {
                return Err(format!(
                    "a min/max argument may reach [{lo}, {hi}], past the 32-bit range the GPU keeps extremes in"
                ));
            }
            spans.push(if a.kind == AggKind::CountDistinct {
                let words = (hi.max(lo) - lo + 32) / 32;
                if words > MAX_SPAN_WORDS as i128 {
                    return Err(format!(
                        "a COUNT(DISTINCT) argument may take the {} values of [{lo}, {hi}], more than the {} a GPU presence bitmap covers",
                        hi - lo + 1,
                        MAX_SPAN_WORDS * 32
                    ));
                }
                Some(Span {
                    lo: lo as i64,
                    words: words as u32,
                })
            } else {
                None
            });
        }
        Ok(spans)
    }

    /// The program for key cardinalities `cards` (codes per coded key, then values per key
    /// map of [`Self::key_maps`]), with the word layout of
    /// the row count (word 0) and of each aggregate. `nullable` has bit s set when kernel slot
    /// s may hold nulls. Aggregates that would accumulate the same thing share words: the
    /// count of an argument that cannot be null is the row count, and equal arguments share
    /// their sum (TPC-H Q1's `sum(l_quantity)` and `avg(l_quantity)`), so the kernel does each
    /// accumulation once.
    /// `lookup` is each lookup side's layout in the lookup buffer (then each code map's),
    /// `code(k, s)` the code of
    /// string `s` (`None`: NULL) in coded column `k` ([`Self::coded`]), if any row has it;
    /// `spans` are [`Self::check_bounds`]'s (a COUNT(DISTINCT) without one gets an empty
    /// bitmap: only a plan without them may pass none).
    pub fn program(
        &self,
        cards: &[u32],
        nullable: u32,
        lookup: &[LookupShape],
        code: &dyn Fn(usize, Option<&str>) -> Option<u32>,
        spans: &[Option<Span>],
    ) -> (Program, Vec<AggWords>) {
        let slot = |c: usize| self.slot(c);
        let source_code = |c: usize, s: Option<&str>| {
            let k = self.coded.iter().position(|&k| k == c)?;
            code(k, s)
        };
        let joins = self.lookups.len().min(lookup.len());
        let slot = Lowering {
            slot: &slot,
            code: &source_code,
            lookup: &lookup[..joins],
            maps: &lookup[joins..],
        };
        // Lookup columns hold no nulls (`lookup.rs`), and the join's match filter runs first.
        let column_nullable = |leaf: Leaf| match leaf {
            Leaf::Column(c) => nullable >> self.slot(c) & 1 == 1,
            Leaf::Lookup(s, _) => self.lookups.get(s).is_some_and(|l| l.outer),
            // NULL wherever the expression is for some string.
            Leaf::Map(_) => true,
        };
        let mut ops = Vec::new();
        for p in &self.predicates {
            p.lower(&slot, &mut ops);
            ops.push(Op::Filter);
        }
        // Mixed-radix group index: key k's code times the product of the earlier
        // cardinalities.
        ops.push(Op::Const(0));
        let mut stride = 1i64;
        for (k, card) in cards.iter().enumerate() {
            match k.checked_sub(self.keys.len()) {
                None => ops.push(Op::Load((self.values.len() + k) as u32)),
                Some(j) => {
                    let m = self.key_maps.get(j).copied().unwrap_or(0);
                    let column = self.maps.get(m).map_or(0, |map| map.column);
                    Ir::Mapped { map: m, column }.lower(&slot, &mut ops);
                }
            }
            ops.push(Op::Const(stride));
            ops.push(Op::Mul);
            ops.push(Op::Add);
            stride *= *card as i64;
        }
        if let Some((side, key)) = &self.lookup_row {
            crate::ir::probe(*side, key, &slot, &mut ops);
            ops.push(Op::Const(stride));
            ops.push(Op::Mul);
            ops.push(Op::Add);
        }
        ops.push(Op::Group);
        let mut layout = Layout::default();
        let rows = layout.sum();
        ops.push(Op::Const(1));
        ops.push(Op::Count(rows));
        // (kind, argument) → word, where kind 0 is a count, 1 a sum, 2 a min, 3 a max.
        let mut shared: Vec<(u8, Ir, u32)> = Vec::new();
        let mut word = |kind: u8, arg: &Ir, ops: &mut Vec<Op>, layout: &mut Layout| -> u32 {
            if kind == 0 && !arg.nullable(&column_nullable) {
                return rows;
            }
            if let Some((_, _, w)) = shared.iter().find(|(k, a, _)| *k == kind && a == arg) {
                return *w;
            }
            let w = match kind {
                0 | 1 => layout.sum(),
                _ => layout.extreme(kind == 3),
            };
            arg.lower(&slot, ops);
            ops.push(match kind {
                0 => Op::Count(w),
                1 => Op::Sum(w),
                2 => Op::Min(w),
                _ => Op::Max(w),
            });
            shared.push((kind, arg.clone(), w));
            w
        };
        let mut words = Vec::new();
        for (i, a) in self.aggregates.iter().enumerate() {
            if a.kind == AggKind::CountDistinct {
                let span = spans
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or(Span { lo: 0, words: 0 });
                let at = layout.bits(span.words);
                a.arg.lower(&slot, &mut ops);
                ops.push(Op::Const(span.lo));
                ops.push(Op::Sub);
                ops.push(Op::Bits {
                    word: at,
                    words: span.words,
                });
                words.push(AggWords {
                    count: rows,
                    sum: None,
                    extreme: None,
                    bits: Some((at, span)),
                });
                continue;
            }
            let count = word(0, &a.arg, &mut ops, &mut layout);
            let mut w = AggWords {
                count,
                sum: None,
                extreme: None,
                bits: None,
            };
            match a.kind {
                AggKind::Sum | AggKind::Avg => w.sum = Some(word(1, &a.arg, &mut ops, &mut layout)),
                AggKind::Min => w.extreme = Some(word(2, &a.arg, &mut ops, &mut layout)),
                AggKind::Max => w.extreme = Some(word(3, &a.arg, &mut ops, &mut layout)),
                AggKind::Count | AggKind::CountDistinct => {}
            }
            words.push(w);
        }
        (
            Program {
                ops,
                kinds: layout.into_kinds(),
            },
            words,
        )
    }
}
