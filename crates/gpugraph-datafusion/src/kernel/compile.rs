//! A [`Program`] compiled to straight-line WGSL: the body of the aggregate kernel's
//! `run_row`, after an `#include` of `aggregate.wgsl`'s accumulation and flush code, which
//! the recipe's registry resolves (the one assembly path, `gpugraph_command::shader`).
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

use gpugraph_command::{ShaderRegistry, ShaderSource};

use crate::program::{Op, Program};

/// The kernel's accumulation and flush code, without `run_row`.
const TEMPLATE: &str = include_str!("aggregate.wgsl");

/// The aggregate's WGSL files, for the generated shader's `#include`.
static WGSL: ShaderRegistry = ShaderRegistry::new(
    "gpugraph-datafusion",
    &[("kernel/aggregate.wgsl", TEMPLATE)],
);

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
    /// The WGSL prefix that runs a statement only for a non-null value (empty when it never
    /// is null); `None` when the value is always null.
    fn unless_null(&self) -> Option<String> {
        match self {
            Flag::True => None,
            Flag::False => Some(String::new()),
            Flag::Var(n) => Some(format!("if (!{n}) ")),
        }
    }
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

/// The WGSL type a stack entry's value is kept in. Every entry stands for an i64; the
/// narrower types are how the compiler avoids 64-bit emulation where the value is known to
/// fit: a column word, a constant that fits i32 and a lookup column's word are [`Ty::Narrow`],
/// a comparison or logical result is [`Ty::Bool`] (0 or 1). On the H200, whose SM clock
/// stays near its 345 MHz floor through the short bursts a query gives it, the aggregate is
/// bound by instructions per row, not by memory: comparing a column with a literal in one
/// i32 instruction instead of a widened 64-bit compare, and combining filters as `bool`s
/// instead of 0/1 pairs, is what makes it faster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    /// `vec2<u32>`: an i64, x the low word.
    Wide,
    /// `i32`: an i64 that fits i32.
    Narrow,
    /// `bool`: 0 or 1.
    Bool,
}

/// One stack entry at compile time: the name (or literal text) of its value, its type and
/// its null flag.
#[derive(Clone, Debug)]
struct Entry {
    value: String,
    ty: Ty,
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

    /// An entry of type `ty` holding `expr`.
    fn entry(&mut self, ty: Ty, expr: String, null: Flag) -> Entry {
        let wgsl = match ty {
            Ty::Wide => "vec2<u32>",
            Ty::Narrow => "i32",
            Ty::Bool => "bool",
        };
        let value = self.bind(wgsl, expr);
        Entry { value, ty, null }
    }

    /// `v` as an i64 (`vec2<u32>`).
    fn wide(&mut self, v: &Entry) -> String {
        match v.ty {
            Ty::Wide => v.value.clone(),
            Ty::Narrow => self.bind("vec2<u32>", format!("widen_i({})", v.value)),
            Ty::Bool => self.bind("vec2<u32>", format!("boolean({})", v.value)),
        }
    }

    /// `v` as an i32; only for [`Ty::Narrow`] and [`Ty::Bool`] entries.
    fn narrow(&mut self, v: &Entry) -> String {
        match v.ty {
            Ty::Bool => self.bind("i32", format!("select(0i, 1i, {})", v.value)),
            _ => v.value.clone(),
        }
    }

    /// Whether `v` is not zero, as a `bool` expression.
    fn truth(&mut self, v: &Entry) -> String {
        match v.ty {
            Ty::Bool => v.value.clone(),
            Ty::Narrow => self.bind("bool", format!("{} != 0i", v.value)),
            Ty::Wide => self.bind("bool", format!("truth({})", v.value)),
        }
    }

    /// `v`'s low word, as a `u32` expression (group indices, minima and maxima).
    fn low_word(&mut self, v: &Entry) -> String {
        match v.ty {
            Ty::Wide => format!("{}.x", v.value),
            Ty::Narrow => format!("bitcast<u32>({})", v.value),
            Ty::Bool => format!("select(0u, 1u, {})", v.value),
        }
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

/// Whether a constant is kept as an i32 (its shader text says so, so the pipeline cache
/// tells the two apart; the value itself stays in the `program` buffer).
fn fits_i32(v: i64) -> bool {
    i32::try_from(v).is_ok()
}

/// The shader recipe for `program` (key `datafusion/aggregate`); `nullable` has bit s set
/// when column slot s may hold nulls in some chunk (the others' null flags fold to `false`).
/// Assumes [`Program::check`] passed.
pub fn shader(program: &Program, nullable: u32) -> ShaderSource {
    ShaderSource::new("datafusion/aggregate", generated(program, nullable)).registry(&WGSL)
}

/// The generated part of [`shader`]: the template's `#include`, then the row program.
fn generated(program: &Program, nullable: u32) -> String {
    let rows: Vec<Emitter> = (0..UNROLL).map(|k| row(program, nullable, k)).collect();
    let mut slots_used = 0u32;
    for op in &program.ops {
        if let Op::Load(c) = op {
            slots_used |= 1 << c;
        }
    }
    let mut out = String::with_capacity(4096);
    out.push_str("#include \"kernel/aggregate.wgsl\"\n");
    out.push_str("\n// Generated from the query's row program (kernel/compile.rs).\n");
    // The constants, read from the program buffer once per invocation rather than per row.
    let constants = program
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Const(_)))
        .count();
    for at in 0..constants {
        let _ = writeln!(out, "var<private> konst{at}: vec2<u32>;");
    }
    out.push_str("fn load_constants() {\n");
    for at in 0..constants {
        let _ = writeln!(
            out,
            "    konst{at} = vec2<u32>(program[params.constants + {}u], program[params.constants + {}u]);",
            2 * at,
            2 * at + 1
        );
    }
    out.push_str("}\n");
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
                let null = if nullable >> c & 1 == 1 {
                    e.flag(format!("!valid{c}(row{k})"))
                } else {
                    Flag::False
                };
                let v = e.entry(Ty::Narrow, format!("bitcast<i32>(load{c}(row{k}))"), null);
                stack.push(v);
            }
            Op::Const(v) => {
                let at = constants;
                constants += 1;
                stack.push(if fits_i32(v) {
                    e.entry(
                        Ty::Narrow,
                        format!("bitcast<i32>(konst{at}.x)"),
                        Flag::False,
                    )
                } else {
                    Entry {
                        value: format!("konst{at}"),
                        ty: Ty::Wide,
                        null: Flag::False,
                    }
                });
            }
            Op::Null => stack.push(Entry {
                value: "0i".into(),
                ty: Ty::Narrow,
                null: Flag::True,
            }),
            Op::Add | Op::Sub | Op::Mul => {
                let b = pop(&mut stack);
                let a = pop(&mut stack);
                let (x, y) = (e.wide(&a), e.wide(&b));
                let expr = match op {
                    Op::Add => format!("add64({x}, {y})"),
                    Op::Sub => format!("add64({x}, neg64({y}))"),
                    _ => format!("mul64({x}, {y})"),
                };
                let null = e.or(&a.null, &b.null);
                let v = e.entry(Ty::Wide, expr, null);
                stack.push(v);
            }
            Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                let b = pop(&mut stack);
                let a = pop(&mut stack);
                let expr = if a.ty != Ty::Wide && b.ty != Ty::Wide {
                    // Both fit i32: one signed compare.
                    let (x, y) = (e.narrow(&a), e.narrow(&b));
                    let sign = match op {
                        Op::Eq => "==",
                        Op::Ne => "!=",
                        Op::Lt => "<",
                        Op::Le => "<=",
                        Op::Gt => ">",
                        _ => ">=",
                    };
                    format!("{x} {sign} {y}")
                } else {
                    let (x, y) = (e.wide(&a), e.wide(&b));
                    match op {
                        Op::Eq => format!("eq64({x}, {y})"),
                        Op::Ne => format!("!eq64({x}, {y})"),
                        Op::Lt => format!("lt64({x}, {y})"),
                        Op::Le => format!("!lt64({y}, {x})"),
                        Op::Gt => format!("lt64({y}, {x})"),
                        _ => format!("!lt64({x}, {y})"),
                    }
                };
                let null = e.or(&a.null, &b.null);
                let v = e.entry(Ty::Bool, expr, null);
                stack.push(v);
            }
            Op::Neg => {
                let a = pop(&mut stack);
                let x = e.wide(&a);
                let v = e.entry(Ty::Wide, format!("neg64({x})"), a.null);
                stack.push(v);
            }
            Op::Not => {
                let a = pop(&mut stack);
                let t = e.truth(&a);
                let v = e.entry(Ty::Bool, format!("!{t}"), a.null);
                stack.push(v);
            }
            Op::IsNull | Op::IsNotNull => {
                let a = pop(&mut stack);
                let negate = if *op == Op::IsNull { "" } else { "!" };
                let v = e.entry(Ty::Bool, format!("{negate}{}", a.null.text()), Flag::False);
                stack.push(v);
            }
            Op::And | Op::Or => {
                // SQL three-valued logic: a decisive operand (false for AND, true for OR)
                // wins over null.
                let b = pop(&mut stack);
                let a = pop(&mut stack);
                let want = if *op == Op::And { "!" } else { "" };
                let mut decides = |v: &Entry| match &v.null {
                    Flag::True => "false".to_string(),
                    Flag::False => format!("{want}{}", e.truth(v)),
                    Flag::Var(n) => format!("(!{n} && {want}{})", e.truth(v)),
                };
                let (da, db) = (decides(&a), decides(&b));
                let decided = e.flag(format!("{da} || {db}"));
                let any_null = e.or(&a.null, &b.null);
                let d = decided.text().to_string();
                let value = if *op == Op::And {
                    format!("!{d} && !{}", any_null.text())
                } else {
                    d.clone()
                };
                let null = e.flag(format!("!{d} && {}", any_null.text()));
                let v = e.entry(Ty::Bool, value, null);
                stack.push(v);
            }
            Op::Select => {
                let cond = pop(&mut stack);
                let then = pop(&mut stack);
                let otherwise = pop(&mut stack);
                let truth = e.truth(&cond);
                let take = e.flag(format!("!{} && {truth}", cond.null.text()));
                let t = take.text().to_string();
                let (ty, o, th) = match (otherwise.ty, then.ty) {
                    (Ty::Bool, Ty::Bool) => (Ty::Bool, otherwise.value.clone(), then.value.clone()),
                    (Ty::Wide, _) | (_, Ty::Wide) => (Ty::Wide, e.wide(&otherwise), e.wide(&then)),
                    _ => (Ty::Narrow, e.narrow(&otherwise), e.narrow(&then)),
                };
                let null = if then.null == otherwise.null {
                    then.null
                } else {
                    e.flag(format!(
                        "select({}, {}, {t})",
                        otherwise.null.text(),
                        then.null.text()
                    ))
                };
                let v = e.entry(ty, format!("select({o}, {th}, {t})"), null);
                stack.push(v);
            }
            Op::Probe => {
                let base = pop(&mut stack);
                let n = pop(&mut stack);
                let d = pop(&mut stack);
                let (dv, nv, bv) = (e.wide(&d), e.wide(&n), e.wide(&base));
                let row = e.bind("u32", format!("probe({dv}, {nv}, {bv})"));
                let missing = e.flag(format!("{row} == NO_ROW"));
                let null = e.or(&d.null, &missing);
                let v = e.entry(Ty::Wide, format!("vec2<u32>({row}, 0u)"), null);
                stack.push(v);
            }
            Op::Gather => {
                let at = pop(&mut stack);
                let r = pop(&mut stack);
                let (av, rv) = (e.wide(&at), e.wide(&r));
                let v = e.entry(
                    Ty::Narrow,
                    format!("bitcast<i32>(gather({av}, {rv}))"),
                    r.null,
                );
                stack.push(v);
            }
            Op::Filter => {
                let p = pop(&mut stack);
                let t = e.truth(&p);
                e.line(&format!("if ({} || !{t}) {{ break; }}", p.null.text()));
            }
            Op::Group => {
                let g = pop(&mut stack);
                let low = e.low_word(&g);
                e.line(&format!("let group = {low};"));
                e.line("if (group >= params.groups) { break; }");
                e.line(&format!("let base = group * {wpg}u;"));
            }
            Op::Sum(w) | Op::Count(w) | Op::Min(w) | Op::Max(w) => {
                let v = pop(&mut stack);
                // An always-null value accumulates nothing.
                let Some(guard) = v.null.unless_null() else {
                    continue;
                };
                let call = match op {
                    Op::Sum(_) => {
                        let x = e.wide(&v);
                        format!("accumulate_sum(private_acc, copy_base, base + {w}u, {x});")
                    }
                    Op::Count(_) => {
                        format!("add96(private_acc, copy_base, base + {w}u, 1u, 0u, 0u);")
                    }
                    Op::Min(_) => format!(
                        "accumulate_min(private_acc, copy_base, base + {w}u, {});",
                        e.low_word(&v)
                    ),
                    _ => format!(
                        "accumulate_max(private_acc, copy_base, base + {w}u, {});",
                        e.low_word(&v)
                    ),
                };
                e.line(&format!("{guard}{{ {call} }}"));
            }
            Op::Bits { word, words } => {
                let v = pop(&mut stack);
                // An always-null value accumulates nothing.
                let Some(guard) = v.null.unless_null() else {
                    continue;
                };
                let d = e.wide(&v);
                let bits = words as u64 * 32;
                // The host bounds every offset into the bitmap; the test keeps a wrong bound
                // from writing another group's words.
                e.line(&format!(
                    "{guard}{{ let d = {d}; if (d.y == 0u && d.x < {bits}u) {{ mark(private_acc, copy_base, base + {word}u + d.x / 32u, 1u << (d.x % 32u)); }} }}"
                ));
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
        let no_nulls = shader(&p, 0).build();
        validate(&no_nulls);
        assert_eq!(
            no_nulls.matches("mul64(r0t").count(),
            1,
            "one product per row of a step: {no_nulls}"
        );
        assert_eq!(no_nulls.matches("mul64(").count(), UNROLL as usize + 1);
        assert!(!no_nulls.contains("valid0("), "no validity without nulls");
        let nulls = shader(&p, 0b010).build();
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
        assert_eq!(shader(&with(1), 0).build(), shader(&with(7), 0).build());
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
            validate(&shader(&p, nullable).build());
        }
    }
}
