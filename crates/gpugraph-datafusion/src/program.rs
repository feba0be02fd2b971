//! The row program the aggregate kernel runs (compiled to WGSL by `kernel/compile.rs`), the
//! constants and word kinds it reads from the kernel's `program` buffer, and its CPU oracle.
//!
//! A program is a postfix list of [`Op`]s run once per row over a stack of 64-bit
//! two's-complement integers with SQL null flags: filters first ([`Op::Filter`] drops the
//! row unless its value is true and not null), then the group index ([`Op::Group`]), then
//! the accumulations ([`Op::Sum`], [`Op::Count`], [`Op::Min`], [`Op::Max`], [`Op::Bits`])
//! into the group's accumulator words. The host guarantees (`ir.rs` bounds) that every intermediate value fits
//! i64, so the kernel's wrapping arithmetic is exact.

/// Most stack entries a program may use (the kernel's `STACK`).
pub const STACK: usize = 16;

/// One instruction. Comparisons and logic yield 0 or 1; any null operand makes an
/// arithmetic or comparison result null; [`Op::And`] / [`Op::Or`] follow SQL's
/// three-valued logic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Push column slot `c`'s value of the row (i32, sign-extended) and its null flag.
    Load(u32),
    /// Push a constant.
    Const(i64),
    /// Push null.
    Null,
    /// a + b.
    Add,
    /// a − b.
    Sub,
    /// a × b.
    Mul,
    /// −a.
    Neg,
    /// a = b.
    Eq,
    /// a ≠ b.
    Ne,
    /// a < b.
    Lt,
    /// a ≤ b.
    Le,
    /// a > b.
    Gt,
    /// a ≥ b.
    Ge,
    /// SQL AND.
    And,
    /// SQL OR.
    Or,
    /// SQL NOT (null stays null).
    Not,
    /// Whether a is null (never null).
    IsNull,
    /// Whether a is not null (never null).
    IsNotNull,
    /// Pops condition, then, else (pushed in the order else, then, condition): then when the
    /// condition is true and not null, else otherwise.
    Select,
    /// Pops the key map's first word b, its key count n and a key's offset d from the first
    /// key; pushes the lookup row of that key (word b + d of the lookup buffer), null where d
    /// is null, outside [0, n), or no row has the key. One buffer holds every lookup side's
    /// map, each from its own first word.
    Probe,
    /// Pops a lookup column's first word o and a lookup row r; pushes word o + r of the
    /// lookup buffer (i32, sign-extended), null where r is.
    Gather,
    /// Pops a predicate; the row ends unless it is true and not null.
    Filter,
    /// Pops the group index (below the group count, by construction).
    Group,
    /// Pops a value; unless null, adds it to the 3-word sum at word offset `w` of the group.
    Sum(u32),
    /// Pops a value; unless null, adds 1 to the 3-word count at word offset `w`.
    Count(u32),
    /// Pops a value fitting i32; unless null, keeps the minimum at word `w`.
    Min(u32),
    /// Pops a value fitting i32; unless null, keeps the maximum at word `w`.
    Max(u32),
    /// Pops an offset d; unless null or outside [0, 32 × `words`), sets bit d of the presence
    /// bitmap at words `word` .. `word + words` (COUNT(DISTINCT): d is the value less the
    /// smallest value it may have, so the set bits are the distinct values).
    Bits {
        /// First word of the bitmap.
        word: u32,
        /// Its words.
        words: u32,
    },
}

/// Word of the lookup buffer's key map where no row has the key.
pub const NO_ROW: u32 = u32::MAX;

/// The layout of one many-to-one join's part of the lookup buffer (`lookup.rs` builds it):
/// from word `base`, `keys` words mapping key `first_key + i` to its lookup row (or
/// [`NO_ROW`]), then each lookup column's values, one i32 word per row, from its first word
/// on. A plan with several lookup sides places them one after the other.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LookupShape {
    /// First word of the key map.
    pub base: u32,
    /// The smallest key.
    pub first_key: i64,
    /// Keys the map covers (largest − smallest + 1).
    pub keys: u32,
    /// First word of each lookup column, in the whole buffer.
    pub columns: Vec<u32>,
    /// Whether some lookup row's key is null (no map word: a null key matches nothing, but
    /// a null-aware anti join keeps no row then, [`crate::ir::Ir::NotIn`]).
    pub null_keys: bool,
    /// Whether the side has no rows at all.
    pub empty: bool,
}

/// What one accumulator word of a group holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordKind {
    /// The low word of a 96-bit sum (the next two words are [`WordKind::Continued`]).
    Sum,
    /// A minimum (i32 with its sign bit flipped; `u32::MAX` when unset).
    Min,
    /// A maximum (i32 with its sign bit flipped; 0 when unset).
    Max,
    /// The middle or top word of a sum.
    Continued,
    /// 32 bits of a presence bitmap ([`Op::Bits`]; 0 when unset).
    Bits,
}

/// A complete program: instructions and the accumulator layout of one group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// The instructions, run in order for every row.
    pub ops: Vec<Op>,
    /// One entry per accumulator word of a group.
    pub kinds: Vec<WordKind>,
}

/// The kernel's view of a [`Program`]: the `program` buffer and where its parts start. The
/// instructions themselves are compiled into the shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The constants (low, high words) in instruction order, then one kind per word.
    pub words: Vec<u32>,
    /// Index of the first constant word.
    pub constants: u32,
    /// Index of the first word kind.
    pub kinds: u32,
}

/// A program the kernel cannot run as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// An instruction pops more than the stack holds.
    #[error("instruction {at} pops an empty stack")]
    Underflow {
        /// Index of the instruction.
        at: usize,
    },
    /// The stack grows past [`STACK`].
    #[error("instruction {at} needs {depth} stack entries, the kernel has {STACK}")]
    TooDeep {
        /// Index of the instruction.
        at: usize,
        /// Entries needed.
        depth: usize,
    },
    /// An accumulation names a word past the group's layout.
    #[error("instruction {at} writes word {word}, a group has {words}")]
    Word {
        /// Index of the instruction.
        at: usize,
        /// The word.
        word: u32,
        /// Words per group.
        words: usize,
    },
}

impl Op {
    /// (pops, pushes).
    fn arity(self) -> (usize, usize) {
        match self {
            Op::Load(_) | Op::Const(_) | Op::Null => (0, 1),
            Op::Neg | Op::Not | Op::IsNull | Op::IsNotNull => (1, 1),
            Op::Select | Op::Probe => (3, 1),
            Op::Filter
            | Op::Group
            | Op::Sum(_)
            | Op::Count(_)
            | Op::Min(_)
            | Op::Max(_)
            | Op::Bits { .. } => (1, 0),
            _ => (2, 1),
        }
    }
}

impl Program {
    /// Words per group.
    pub fn words_per_group(&self) -> usize {
        self.kinds.len()
    }

    /// Checks stack use and accumulator words, so the kernel never indexes out of bounds.
    pub fn check(&self) -> Result<(), ProgramError> {
        let mut depth = 0usize;
        for (at, op) in self.ops.iter().enumerate() {
            let (pops, pushes) = op.arity();
            if depth < pops {
                return Err(ProgramError::Underflow { at });
            }
            depth = depth - pops + pushes;
            if depth > STACK {
                return Err(ProgramError::TooDeep { at, depth });
            }
            let word = match op {
                Op::Sum(w) | Op::Count(w) => Some((*w, 3)),
                Op::Min(w) | Op::Max(w) => Some((*w, 1)),
                Op::Bits { word, words } => Some((*word, *words as usize)),
                _ => None,
            };
            if let Some((w, n)) = word {
                if w as usize + n > self.kinds.len() {
                    return Err(ProgramError::Word {
                        word: w,
                        at,
                        words: self.kinds.len(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The kernel's `program` buffer.
    pub fn encode(&self) -> Encoded {
        let mut words = Vec::with_capacity(self.ops.len() + self.kinds.len());
        for op in &self.ops {
            if let Op::Const(v) = *op {
                words.push(v as u64 as u32);
                words.push((v as u64 >> 32) as u32);
            }
        }
        let kinds_at = words.len() as u32;
        words.extend(self.kinds.iter().map(|k| match k {
            WordKind::Sum => 0,
            WordKind::Min => 1,
            WordKind::Max => 2,
            WordKind::Continued => 3,
            WordKind::Bits => 4,
        }));
        Encoded {
            words,
            constants: 0,
            kinds: kinds_at,
        }
    }

    /// The accumulator words of `groups` groups before any row: sums 0, minima `u32::MAX`,
    /// maxima and bitmaps 0 (what the kernel's "unset" tests expect).
    pub fn initial_accumulators(&self, groups: usize) -> Vec<u32> {
        let group: Vec<u32> = self
            .kinds
            .iter()
            .map(|k| if *k == WordKind::Min { u32::MAX } else { 0 })
            .collect();
        group.repeat(groups)
    }
}

/// One column slot as the kernel sees it: i32 values, optional validity bits (bit `r % 32`
/// of word `r / 32` set when row `r` is not null).
#[derive(Clone, Copy, Debug)]
pub struct ColumnWords<'a> {
    /// Values (i32 bits).
    pub values: &'a [u32],
    /// Validity bits, `None` when no row is null.
    pub valid: Option<&'a [u32]>,
}

/// The 96-bit sum held by words `w`, `w+1`, `w+2` of `acc`, as i128 (two's complement).
pub fn sum96(acc: &[u32], w: usize) -> i128 {
    let raw = acc[w] as u128 | (acc[w + 1] as u128) << 32 | (acc[w + 2] as u128) << 64;
    // Sign-extend from 96 bits.
    ((raw << 32) as i128) >> 32
}

/// The CPU oracle: what the kernel leaves in the accumulators after `rows` rows of
/// `columns` with lookup buffer `lookup`, starting from `acc` (e.g.
/// [`Program::initial_accumulators`]). Assumes [`Program::check`] passed.
pub fn run_cpu(
    program: &Program,
    columns: &[ColumnWords<'_>],
    lookup: &[u32],
    rows: usize,
    acc: &mut [u32],
) {
    let wpg = program.words_per_group();
    let groups = acc.len() / wpg.max(1);
    'rows: for row in 0..rows {
        let mut stack: Vec<(i64, bool)> = Vec::with_capacity(STACK);
        let mut group = 0usize;
        for op in &program.ops {
            let truth = |v: (i64, bool)| !v.1 && v.0 != 0;
            match *op {
                Op::Load(c) => {
                    let col = &columns[c as usize];
                    let valid = col.valid.is_none_or(|v| v[row / 32] >> (row % 32) & 1 == 1);
                    stack.push((col.values[row] as i32 as i64, !valid));
                }
                Op::Const(v) => stack.push((v, false)),
                Op::Null => stack.push((0, true)),
                Op::Neg => {
                    let a = stack.last_mut().expect("checked");
                    a.0 = a.0.wrapping_neg();
                }
                Op::Not => {
                    let a = stack.last_mut().expect("checked");
                    a.0 = (a.0 == 0) as i64;
                }
                Op::IsNull | Op::IsNotNull => {
                    let a = stack.last_mut().expect("checked");
                    *a = ((a.1 == (*op == Op::IsNull)) as i64, false);
                }
                Op::And | Op::Or => {
                    let b = stack.pop().expect("checked");
                    let a = stack.pop().expect("checked");
                    let decided = *op != Op::And;
                    let decides = |v: (i64, bool)| !v.1 && (v.0 != 0) == decided;
                    stack.push(if decides(a) || decides(b) {
                        (decided as i64, false)
                    } else if a.1 || b.1 {
                        (0, true)
                    } else {
                        (!decided as i64, false)
                    });
                }
                Op::Select => {
                    let cond = stack.pop().expect("checked");
                    let then = stack.pop().expect("checked");
                    if truth(cond) {
                        *stack.last_mut().expect("checked") = then;
                    }
                }
                Op::Probe => {
                    let base = stack.pop().expect("checked");
                    let n = stack.pop().expect("checked");
                    let d = stack.last_mut().expect("checked");
                    let row = match u32::try_from(d.0) {
                        Ok(i) if !d.1 && (i as i64) < n.0 => lookup[(base.0 + i as i64) as usize],
                        _ => NO_ROW,
                    };
                    *d = (row as i64, d.1 || row == NO_ROW);
                }
                Op::Gather => {
                    let at = stack.pop().expect("checked");
                    let r = stack.last_mut().expect("checked");
                    r.0 = if r.1 {
                        0
                    } else {
                        lookup[(at.0 + r.0) as usize] as i32 as i64
                    };
                }
                Op::Filter => {
                    if !truth(stack.pop().expect("checked")) {
                        continue 'rows;
                    }
                }
                Op::Group => {
                    group = stack.pop().expect("checked").0 as u32 as usize;
                    if group >= groups {
                        continue 'rows;
                    }
                }
                Op::Sum(w) | Op::Count(w) | Op::Min(w) | Op::Max(w) => {
                    let (v, null) = stack.pop().expect("checked");
                    if null {
                        continue;
                    }
                    let at = group * wpg + w as usize;
                    match *op {
                        Op::Sum(_) | Op::Count(_) => {
                            let add = if matches!(op, Op::Sum(_)) {
                                v as i128
                            } else {
                                1
                            };
                            let s = sum96(acc, at).wrapping_add(add) as u128;
                            acc[at] = s as u32;
                            acc[at + 1] = (s >> 32) as u32;
                            acc[at + 2] = (s >> 64) as u32;
                        }
                        Op::Min(_) => acc[at] = acc[at].min(v as u32 ^ 0x8000_0000),
                        _ => acc[at] = acc[at].max(v as u32 ^ 0x8000_0000),
                    }
                }
                Op::Bits { word, words } => {
                    let (d, null) = stack.pop().expect("checked");
                    if null || d < 0 || d >= 32 * words as i64 {
                        continue;
                    }
                    acc[group * wpg + word as usize + d as usize / 32] |= 1 << (d % 32);
                }
                binary => {
                    let b = stack.pop().expect("checked");
                    let a = stack.pop().expect("checked");
                    let v = match binary {
                        Op::Add => a.0.wrapping_add(b.0),
                        Op::Sub => a.0.wrapping_sub(b.0),
                        Op::Mul => a.0.wrapping_mul(b.0),
                        Op::Eq => (a.0 == b.0) as i64,
                        Op::Ne => (a.0 != b.0) as i64,
                        Op::Lt => (a.0 < b.0) as i64,
                        Op::Le => (a.0 <= b.0) as i64,
                        Op::Gt => (a.0 > b.0) as i64,
                        _ => (a.0 >= b.0) as i64,
                    };
                    stack.push((v, a.1 || b.1));
                }
            }
        }
    }
}

/// The accumulator layout of one group, built word by word.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    kinds: Vec<WordKind>,
}

impl Layout {
    /// Reserves a 3-word sum or count; returns its first word.
    pub fn sum(&mut self) -> u32 {
        let at = self.kinds.len() as u32;
        self.kinds
            .extend([WordKind::Sum, WordKind::Continued, WordKind::Continued]);
        at
    }

    /// Reserves a minimum (`max == false`) or maximum word; returns it.
    pub fn extreme(&mut self, max: bool) -> u32 {
        let at = self.kinds.len() as u32;
        self.kinds
            .push(if max { WordKind::Max } else { WordKind::Min });
        at
    }

    /// Reserves a presence bitmap of `words` words ([`Op::Bits`]); returns its first word.
    pub fn bits(&mut self, words: u32) -> u32 {
        let at = self.kinds.len() as u32;
        self.kinds
            .extend(std::iter::repeat_n(WordKind::Bits, words as usize));
        at
    }

    /// The word kinds.
    pub fn into_kinds(self) -> Vec<WordKind> {
        self.kinds
    }
}
