//! A [`Program`] compiled to straight-line WGSL: the body of the aggregate kernel's
//! `run_row`, appended to `aggregate.wgsl`'s accumulation and flush code.
//!
//! Why compile rather than interpret: an interpreter keeps its operand stack in an array the
//! shader indexes dynamically, which GPUs place in per-thread local memory, and it branches
//! on every opcode of every row; on the H200 that made TPC-H Q6 run at 1/30 of the memory
//! bandwidth. Compiled, every value is a named `let` the shader compiler keeps in registers,
//! a filter returns before the columns after it are loaded, and null flags of columns without
//! nulls fold to `false` here, so a table without nulls pays nothing for SQL null logic.
//!
//! The generated text depends on the program's *shape* only — its instructions with their
//! slots and words, its word layout and which slots may hold nulls — never on constant values
//! (those stay in the `program` buffer), so queries that differ in literals share one
//! pipeline through the device cache. Identical sub-expressions are emitted once (the text of
//! each `let` is its value number), which matters because the planner lowers an aggregate's
//! argument once for its count and again for its sum.

use std::collections::HashMap;
use std::fmt::Write;

use crate::program::{Op, Program};

/// The kernel's accumulation and flush code, without `run_row`.
const TEMPLATE: &str = include_str!("aggregate.wgsl");

/// Most column slots a program reads (the shader's `col0` … `col7` bindings).
const SLOTS: u32 = 8;

/// A null flag known while compiling, or computed per row.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Flag {
    /// Never null.
    False,
    /// Always null.
    True,
    /// The value of this WGSL `bool` expression (a name).
    Var(String),
}

impl Flag {
    fn text(&self) -> &str {
        match self {
            Flag::False => "false",
            Flag::True => "true",
            Flag::Var(v) => v,
        }
    }
}

/// One stack entry at compile time: the name of its value (a `vec2<u32>` holding an i64,
/// x low word) and its null flag.
#[derive(Clone, Debug)]
struct Entry {
    value: String,
    null: Flag,
}

/// Emits one row's WGSL, naming each distinct expression once: column loads (and validity
/// bits) into `loads`, which the step issues for all its rows before any row's body, and
/// everything else into `body`.
struct Emitter {
    /// Which of the step's rows (names get it as a prefix; the row index is `row{k}`).
    k: u32,
    loads: String,
    body: String,
    names: HashMap<String, String>,
    next: usize,
}

impl Emitter {
    /// The name of a `let` holding `expr` of type `ty` (reused when emitted before).
    fn bind(&mut self, ty: &str, expr: String) -> String {
        if let Some(name) = self.names.get(&expr) {
            return name.clone();
        }
        let name = format!("r{}t{}", self.k, self.next);
        self.next += 1;
        let (to, indent) = if expr.contains("[row") || expr.contains("(row") {
            (&mut self.loads, "    ")
        } else {
            (&mut self.body, "        ")
        };
        let _ = writeln!(to, "{indent}let {name}: {ty} = {expr};");
        self.names.insert(expr, name.clone());
        name
    }

    fn value(&mut self, expr: String) -> String {
        self.bind("vec2<u32>", expr)
    }

    /// `a || b` with known flags folded.
    fn or(&mut self, a: &Flag, b: &Flag) -> Flag {
        match (a, b) {
            (Flag::True, _) | (_, Flag::True) => Flag::True,
            (Flag::False, x) | (x, Flag::False) => x.clone(),
            (Flag::Var(x), Flag::Var(y)) if x == y => a.clone(),
            (Flag::Var(x), Flag::Var(y)) => Flag::Var(self.bind("bool", format!("{x} || {y}"))),
        }
    }

    /// A `bool` expression as a flag (named unless literal).
    fn flag(&mut self, expr: String) -> Flag {
        match expr.as_str() {
            "false" => Flag::False,
            "true" => Flag::True,
            _ => Flag::Var(self.bind("bool", expr)),
        }
    }

    fn line(&mut self, text: &str) {
        self.body.push_str("        ");
        self.body.push_str(text);
        self.body.push('\n');
    }
}

fn pop(stack: &mut Vec<Entry>) -> Entry {
    stack
        .pop()
        .expect("Program::check rules out stack underflow before compiling")
}

/// Rows per step of an invocation (the template's `UNROLL`).
pub const UNROLL: u32 = 4;

/// The complete shader for `program`; `nullable` has bit s set when column slot s may hold
/// nulls in some chunk (the others' null flags fold to `false`). Assumes
/// [`Program::check`] passed.
pub fn shader(program: &Program, nullable: u32) -> String {
    let rows: Vec<Emitter> = (0..UNROLL).map(|k| row(program, nullable, k)).collect();
    let mut slots_used = 0u32;
    for op in &program.ops {
        if let Op::Load(c) = op {
            slots_used |= 1 << c;
        }
    }
    let mut out = String::with_capacity(TEMPLATE.len() + 4096);
    out.push_str(TEMPLATE);
    out.push_str("\n// Generated from the query's row program (kernel/compile.rs).\n");
    for c in 0..SLOTS {
        if slots_used >> c & 1 == 0 {
            continue;
        }
        // A uniform branch on the chunk's width (pack.rs): 32-bit words as they are, else
        // lane `row % per` of word `row / per`, plus the chunk's base.
        let _ = writeln!(
            out,
            "fn load{c}(row: u32) -> u32 {{\n    let s = params.slots[{c}];\n    let w = col{c}[row >> s.y];\n    if (s.y == 0u) {{ return w; }}\n    let bits = 32u >> s.y;\n    let lane = row & ((1u << s.y) - 1u);\n    return ((w >> (lane * bits)) & ((1u << bits) - 1u)) + s.x;\n}}"
        );
        if nullable >> c & 1 == 1 {
            let _ = writeln!(
                out,
                "fn valid{c}(row: u32) -> bool {{\n    if (((params.has_valid >> {c}u) & 1u) == 0u) {{ return true; }}\n    return ((col{c}[params.slots[{c}].z + row / 32u] >> (row % 32u)) & 1u) != 0u;\n}}"
            );
        }
    }
    out.push_str("fn run_rows(first: u32, private_acc: bool, copy_base: u32) {\n");
    out.push_str("    let last = params.rows - 1u;\n");
    for k in 0..UNROLL {
        // Rows past the chunk load its last row (in bounds) and skip their body.
        let _ = writeln!(
            out,
            "    let live{k} = first + {k}u * params.row_stride < params.rows;\n    let row{k} = min(first + {k}u * params.row_stride, last);"
        );
    }
    for r in &rows {
        out.push_str(&r.loads);
    }
    for r in &rows {
        // `break` leaves the row (a failed filter, a group out of range).
        let _ = writeln!(out, "    if (live{}) {{ loop {{", r.k);
        // A program without a Group instruction accumulates into group 0.
        if !program.ops.contains(&Op::Group) {
            out.push_str("        let base = 0u;\n");
        }
        out.push_str(&r.body);
        out.push_str("        break;\n    } }\n");
    }
    out.push_str("}\n");
    out
}

/// Row `k` of a step: its loads and its body.
fn row(program: &Program, nullable: u32, k: u32) -> Emitter {
    let mut e = Emitter {
        k,
        loads: String::new(),
        body: String::new(),
        names: HashMap::new(),
        next: 0,
    };
    let wpg = program.words_per_group().max(1);
    let mut stack: Vec<Entry> = Vec::new();
    let mut constants = 0u32;
    for op in &program.ops {
        match *op {
            Op::Load(c) => {
                let value = e.value(format!("widen(load{c}(row{k}))"));
                let null = if nullable >> c & 1 == 1 {
                    e.flag(format!("!valid{c}(row{k})"))
                } else {
                    Flag::False
                };
                stack.push(Entry { value, null });
            }
            Op::Const(_) => {
                let at = constants;
                constants += 1;
                let value = e.value(format!(
                    "vec2<u32>(program[params.constants + {}u], program[params.constants + {}u])",
                    2 * at,
                    2 * at + 1
                ));
                stack.push(Entry {
                    value,
                    null: Flag::False,
                });
            }
            Op::Null => stack.push(Entry {
                value: "vec2<u32>(0u, 0u)".into(),
                null: Flag::True,
            }),
            Op::Add | Op::Sub | Op::Mul | Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                let b = pop(&mut stack);
                let a = pop(&mut stack);
                let (x, y) = (&a.value, &b.value);
                let expr = match op {
                    Op::Add => format!("add64({x}, {y})"),
                    Op::Sub => format!("add64({x}, neg64({y}))"),
                    Op::Mul => format!("mul64({x}, {y})"),
                    Op::Eq => format!("boolean(eq64({x}, {y}))"),
                    Op::Ne => format!("boolean(!eq64({x}, {y}))"),
                    Op::Lt => format!("boolean(lt64({x}, {y}))"),
                    Op::Le => format!("boolean(!lt64({y}, {x}))"),
                    Op::Gt => format!("boolean(lt64({y}, {x}))"),
                    _ => format!("boolean(!lt64({x}, {y}))"),
                };
                let value = e.value(expr);
                let null = e.or(&a.null, &b.null);
                stack.push(Entry { value, null });
            }
            Op::Neg => {
                let a = pop(&mut stack);
                let value = e.value(format!("neg64({})", a.value));
                stack.push(Entry {
                    value,
                    null: a.null,
                });
            }
            Op::Not => {
                let a = pop(&mut stack);
                let value = e.value(format!("boolean(!truth({}))", a.value));
                stack.push(Entry {
                    value,
                    null: a.null,
                });
            }
            Op::IsNull | Op::IsNotNull => {
                let a = pop(&mut stack);
                let negate = if *op == Op::IsNull { "" } else { "!" };
                let value = e.value(format!("boolean({negate}{})", a.null.text()));
                stack.push(Entry {
                    value,
                    null: Flag::False,
                });
            }
            Op::And | Op::Or => {
                // SQL three-valued logic: a decisive operand (false for AND, true for OR)
                // wins over null.
                let b = pop(&mut stack);
                let a = pop(&mut stack);
                let truth_of = |v: &Entry| format!("truth({})", v.value);
                let want = if *op == Op::And { "!" } else { "" };
                let decides = |v: &Entry| match &v.null {
                    Flag::True => "false".to_string(),
                    Flag::False => format!("{want}{}", truth_of(v)),
                    Flag::Var(n) => format!("(!{n} && {want}{})", truth_of(v)),
                };
                let decided = e.flag(format!("{} || {}", decides(&a), decides(&b)));
                let any_null = e.or(&a.null, &b.null);
                let d = decided.text().to_string();
                let value = if *op == Op::And {
                    e.value(format!("boolean(!{d} && !{})", any_null.text()))
                } else {
                    e.value(format!("boolean({d})"))
                };
                let null = e.flag(format!("!{d} && {}", any_null.text()));
                stack.push(Entry { value, null });
            }
            Op::Select => {
                let cond = pop(&mut stack);
                let then = pop(&mut stack);
                let otherwise = pop(&mut stack);
                let take = e.flag(format!("!{} && truth({})", cond.null.text(), cond.value));
                let t = take.text().to_string();
                let value = e.value(format!("select({}, {}, {t})", otherwise.value, then.value));
                let null = if then.null == otherwise.null {
                    then.null
                } else {
                    e.flag(format!(
                        "select({}, {}, {t})",
                        otherwise.null.text(),
                        then.null.text()
                    ))
                };
                stack.push(Entry { value, null });
            }
            Op::Probe => {
                let base = pop(&mut stack);
                let n = pop(&mut stack);
                let d = pop(&mut stack);
                let row = e.bind(
                    "u32",
                    format!("probe({}, {}, {})", d.value, n.value, base.value),
                );
                let value = e.value(format!("vec2<u32>({row}, 0u)"));
                let missing = e.flag(format!("{row} == NO_ROW"));
                let null = e.or(&d.null, &missing);
                stack.push(Entry { value, null });
            }
            Op::Gather => {
                let at = pop(&mut stack);
                let r = pop(&mut stack);
                let value = e.value(format!("widen(gather({}, {}))", at.value, r.value));
                stack.push(Entry {
                    value,
                    null: r.null,
                });
            }
            Op::Filter => {
                let p = pop(&mut stack);
                e.line(&format!(
                    "if ({} || !truth({})) {{ break; }}",
                    p.null.text(),
                    p.value
                ));
            }
            Op::Group => {
                let g = pop(&mut stack);
                e.line(&format!("let group = {}.x;", g.value));
                e.line("if (group >= params.groups) { break; }");
                e.line(&format!("let base = group * {wpg}u;"));
            }
            Op::Sum(w) | Op::Count(w) | Op::Min(w) | Op::Max(w) => {
                let v = pop(&mut stack);
                let guard = match &v.null {
                    Flag::True => continue,
                    Flag::False => String::new(),
                    Flag::Var(n) => format!("if (!{n}) "),
                };
                let call = match op {
                    Op::Sum(_) => format!(
                        "accumulate_sum(private_acc, copy_base, base + {w}u, {});",
                        v.value
                    ),
                    Op::Count(_) => {
                        format!("add96(private_acc, copy_base, base + {w}u, 1u, 0u, 0u);")
                    }
                    Op::Min(_) => format!(
                        "accumulate_min(private_acc, copy_base, base + {w}u, {}.x);",
                        v.value
                    ),
                    _ => format!(
                        "accumulate_max(private_acc, copy_base, base + {w}u, {}.x);",
                        v.value
                    ),
                };
                e.line(&format!("{guard}{{ {call} }}"));
            }
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Layout;

    fn validate(wgsl: &str) {
        let module = naga::front::wgsl::parse_str(wgsl)
            .unwrap_or_else(|e| panic!("{}\n{wgsl}", e.emit_to_string(wgsl)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{e:?}\n{wgsl}"));
    }

    #[test]
    fn shared_subexpressions_are_emitted_once_and_nulls_fold() {
        let mut l = Layout::default();
        let count = l.sum();
        let sum = l.sum();
        let p = Program {
            ops: vec![
                Op::Load(2),
                Op::Group,
                Op::Load(0),
                Op::Load(1),
                Op::Mul,
                Op::Count(count),
                Op::Load(0),
                Op::Load(1),
                Op::Mul,
                Op::Sum(sum),
            ],
            kinds: l.into_kinds(),
        };
        let no_nulls = shader(&p, 0);
        validate(&no_nulls);
        assert_eq!(
            no_nulls.matches("mul64(r0t").count(),
            1,
            "one product per row of a step: {no_nulls}"
        );
        assert_eq!(no_nulls.matches("mul64(").count(), UNROLL as usize + 1);
        assert!(!no_nulls.contains("valid0("), "no validity without nulls");
        let nulls = shader(&p, 0b010);
        validate(&nulls);
        assert!(nulls.contains("fn valid1("), "{nulls}");
        assert!(
            nulls.contains("if (!r0t"),
            "the sum is guarded by the null flag"
        );
        assert!(
            TEMPLATE.contains(&format!("const UNROLL: u32 = {UNROLL}u;")),
            "the template steps by the rows run_rows handles"
        );
        // Constants never reach the text: two literals give one pipeline.
        let with = |v| Program {
            ops: vec![Op::Const(v), Op::Group, Op::Const(v), Op::Sum(sum)],
            kinds: p.kinds.clone(),
        };
        assert_eq!(shader(&with(1), 0), shader(&with(7), 0));
    }

    #[test]
    fn every_instruction_compiles_to_valid_wgsl() {
        let mut l = Layout::default();
        let s = l.sum();
        let min = l.extreme(false);
        let max = l.extreme(true);
        let ops = vec![
            Op::Load(0),
            Op::Const(3),
            Op::Ge,
            Op::Load(1),
            Op::IsNotNull,
            Op::And,
            Op::Load(1),
            Op::IsNull,
            Op::Or,
            Op::Not,
            Op::Null,
            Op::Eq,
            Op::Load(0),
            Op::Load(1),
            Op::Ne,
            Op::Or,
            Op::Filter,
            Op::Load(3),
            Op::Group,
            Op::Load(0),
            Op::Neg,
            Op::Load(1),
            Op::Load(0),
            Op::Lt,
            Op::Load(0),
            Op::Load(1),
            Op::Le,
            Op::Load(0),
            Op::Load(1),
            Op::Gt,
            Op::And,
            Op::Select,
            Op::Load(1),
            Op::Sub,
            Op::Sum(s),
            Op::Load(0),
            Op::Min(min),
            Op::Null,
            Op::Max(max),
        ];
        let p = Program {
            ops,
            kinds: l.into_kinds(),
        };
        p.check().expect("a well-formed program");
        for nullable in [0, 0b1, 0b10, 0b11, 0xff] {
            validate(&shader(&p, nullable));
        }
    }
}
