//! Rules of `shared/spec/procgen-abi.txt` that `docs/procgen-conformance.md` names this file
//! for, on a real device: Vec params and `step`, `domain_count` over a plain number, a Column
//! as the domain, device.live, every transfer.upload / transfer.readback form (text included),
//! append after append, columns read by `NAME_col_<column>`, cpu.read's and device.guard's
//! Luau forms.

mod common;

use std::collections::BTreeMap;

use common::*;
use gpugraph_procgen::asset::AssetLibrary;
use gpugraph_procgen::luau::Host;
use gpugraph_procgen::{
    BindValue, Bounded, ColumnType, CountExpr, Domain, KernelAsset, KernelCall, KernelRef,
    LiveCount, ProcgenError, ReadSource, ReadValue, Uniform, UploadValue, Uploaded,
};

const SPREAD_WGSL: &str = "
struct Params { n: u32, p_x: f32, p_y: f32, p_z: f32, p_w: f32, dt: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x >= params.n { return; }
    o[g.x] = params.p_x + 10.0 * params.p_y + 100.0 * params.p_z + 1000.0 * params.p_w
        + 10000.0 * params.dt + f32(g.x);
}
";

const SPREAD_YAML: &str = "params:
  - { name: n, type: u32 }
  - { name: p_x, type: f32 }
  - { name: p_y, type: f32 }
  - { name: p_z, type: f32 }
  - { name: p_w, type: f32 }
  - { name: dt, type: f32 }
bindings:
  - { name: o, access: write, element: f32, count: domain }
";

/// A Vec uniform spreads over `<param>_x` to `<param>_w`; `step` fills the params the shader
/// declares (`dt`) and leaves the others (`speed`) out; a Vec the shader has no lanes for is
/// refused by name.
#[test]
fn vec_uniforms_spread_over_x_to_w_and_step_fills_declared_params() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let k = KernelRef::Asset(
        KernelAsset::new("t/spread", SPREAD_WGSL, SPREAD_YAML)
            .unwrap()
            .into(),
    );
    let call = KernelCall {
        uniforms: [("p".to_string(), Uniform::Vec(vec![1.0, 2.0, 3.0, 4.0]))].into(),
        step: [("dt".to_string(), 0.5), ("speed".to_string(), 9.0)].into(),
        ..Default::default()
    };
    let out = c.kernel(&k, Domain::Number(3), &call).unwrap();
    for bad in [
        ("q", Uniform::Vec(vec![1.0, 2.0])),
        ("p", Uniform::Vec(vec![1.0; 5])),
    ] {
        let mut wrong = call.clone();
        wrong.uniforms = [(bad.0.to_string(), bad.1)].into();
        let e = c.kernel(&k, Domain::Number(3), &wrong).unwrap_err();
        assert!(
            matches!(e, ProcgenError::UnknownUniform { ref name, .. } if name == bad.0),
            "{e}"
        );
    }
    let rec = run(c);
    let base = 1.0 + 20.0 + 300.0 + 4000.0 + 5000.0;
    assert_eq!(
        floats(&rec, &out.columns["o"]),
        [base, base + 1.0, base + 2.0]
    );
}

const COUNT_WGSL: &str = "
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> domain_count: array<u32>;
@group(0) @binding(2) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if g.x >= params.n { return; }
    o[g.x] = domain_count[0] * 100u + g.x;
}
";

const COUNT_YAML: &str = "params: [{ name: n, type: u32 }]
bindings:
  - { name: domain_count, access: read, element: u32 }
  - { name: o, access: write, element: u32, count: domain }
";

/// A kernel that declares `domain_count` without `when` reads it in every variant: over a
/// plain number it holds the number, over a live count the count (dispatched over the room).
#[test]
fn domain_count_without_when_holds_a_plain_number() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let k = KernelRef::Asset(
        KernelAsset::new("t/count", COUNT_WGSL, COUNT_YAML)
            .unwrap()
            .into(),
    );
    let plain = c
        .kernel(&k, Domain::Number(3), &KernelCall::default())
        .unwrap();
    let lc = live(&mut c, 2, 4);
    let dev = c
        .kernel(&k, Domain::Live(lc), &KernelCall::default())
        .unwrap();
    let rec = run(c);
    assert_eq!(words(&rec, &plain.columns["o"]), [300, 301, 302]);
    assert_eq!(words(&rec, &dev.columns["o"]), [200, 201, 202, 203]);
}

/// A Column as the domain runs over its elements; an appended output (it carries its live
/// count) runs the COUNT=device variant over its capacity and the result carries the count.
#[test]
fn a_column_domain_runs_over_its_elements() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let keep = upload_u32(&mut c, &[1, 0, 1, 1, 0]);
    let kept = c
        .kernel(
            &kernel("procgen/compact"),
            Domain::Number(5),
            &KernelCall {
                bind: bind(vec![("keep", BindValue::Column(keep))]),
                ..Default::default()
            },
        )
        .unwrap();
    let indices = kept.columns["indices"].clone();
    assert!(
        indices.live.is_some(),
        "an appended output carries its count"
    );
    let src = upload_f32(&mut c, &[10.0, 20.0, 30.0, 40.0, 50.0]);
    let gather = |c: &mut gpugraph_procgen::Cook, index: &gpugraph_procgen::Column| {
        c.kernel(
            &kernel("procgen/gather"),
            Domain::Column(index.clone()),
            &KernelCall {
                bind: bind(vec![
                    ("src", BindValue::Column(src.clone())),
                    ("index", BindValue::Column(index.clone())),
                ]),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let plain_index = upload_i32(&mut c, &[4, 0, 1]);
    let plain = gather(&mut c, &plain_index);
    let over_kept = gather(&mut c, &indices);
    let rec = run(c);
    assert_eq!(floats(&rec, &plain.columns["dst"]), [50.0, 10.0, 20.0]);
    let dst = &over_kept.columns["dst"];
    assert_eq!(dst.capacity, 5, "dispatched over the capacity");
    assert_eq!(
        rec.readback("dst", &ReadSource::Column(dst.clone()))
            .unwrap(),
        ReadValue::Numbers(vec![10.0, 30.0, 40.0])
    );
}

/// device.live: the column carries the count, and a reader takes the live elements only.
#[test]
fn device_live_readers_take_the_live_elements_only() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let col = upload_f32(&mut c, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let lc = live(&mut c, 2, 6);
    let l = c.live(&col, lc.clone());
    assert!(l.same_buffer(&col) && l.capacity == 6 && l.live == Some(lc));
    let rec = run(c);
    assert_eq!(
        rec.readback("l", &ReadSource::Column(l)).unwrap(),
        ReadValue::Numbers(vec![1.0, 2.0])
    );
    assert_eq!(
        rec.readback("col", &ReadSource::Column(col)).unwrap(),
        ReadValue::Numbers(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    );
}

fn column(u: Uploaded) -> gpugraph_procgen::Column {
    match u {
        Uploaded::Column(c) => c,
        other => panic!("not a column: {other:?}"),
    }
}

/// Every transfer.upload form: a Number, a list of numbers, `{x,y,z}` vectors, typed columns
/// (a value the type cannot hold refused by key), a table of those, a Column held as it is.
#[test]
fn upload_forms_become_their_columns() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let one = column(c.upload("one", &UploadValue::Number(2.5)).unwrap());
    assert_eq!((one.ty, one.capacity), (ColumnType::Float, 1));
    let list = column(
        c.upload("list", &UploadValue::Numbers(vec![1.0, -2.0, 3.5]))
            .unwrap(),
    );
    assert_eq!((list.ty, list.capacity), (ColumnType::Float, 3));
    let vecs = column(
        c.upload(
            "vecs",
            &UploadValue::Vectors(vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]),
        )
        .unwrap(),
    );
    assert_eq!(
        (vecs.ty, vecs.lanes, vecs.capacity),
        (ColumnType::Vec3, 3, 2)
    );
    let ints = column(
        c.upload(
            "ints",
            &UploadValue::Typed(ColumnType::Int, vec![1.0, -2.0]),
        )
        .unwrap(),
    );
    assert_eq!(ints.ty, ColumnType::Int);
    let color = column(
        c.upload(
            "color",
            &UploadValue::Typed(ColumnType::Color, vec![0.0, 0.5, 1.0, 1.0]),
        )
        .unwrap(),
    );
    assert_eq!((color.ty, color.capacity), (ColumnType::Color, 1));
    let held = column(
        c.upload("held", &UploadValue::Column(list.clone()))
            .unwrap(),
    );
    assert!(held.same_buffer(&list));
    let table = c
        .upload(
            "t",
            &UploadValue::Table(
                [
                    ("a".to_string(), UploadValue::Number(1.0)),
                    (
                        "b".to_string(),
                        UploadValue::Typed(ColumnType::UInt, vec![7.0]),
                    ),
                ]
                .into(),
            ),
        )
        .unwrap();
    let Uploaded::Table(t) = table else {
        panic!("a table of columns")
    };
    assert_eq!(t.keys().collect::<Vec<_>>(), ["a", "b"]);
    for (key, bad) in [
        ("neg", UploadValue::Typed(ColumnType::UInt, vec![-1.0])),
        ("half", UploadValue::Typed(ColumnType::Int, vec![0.5])),
        (
            "odd",
            UploadValue::Typed(ColumnType::Vec2, vec![1.0, 2.0, 3.0]),
        ),
        (
            "ragged",
            UploadValue::Vectors(vec![vec![1.0, 2.0], vec![1.0]]),
        ),
        ("wide", UploadValue::Vectors(vec![vec![1.0; 5]])),
        (
            "nested",
            UploadValue::Table(
                [(
                    "x".to_string(),
                    UploadValue::Typed(ColumnType::UInt, vec![-1.0]),
                )]
                .into(),
            ),
        ),
    ] {
        let e = c.upload(key, &bad).unwrap_err();
        assert!(
            matches!(e, ProcgenError::Upload { key: ref k, .. } if k.starts_with(key)),
            "{key}: {e}"
        );
    }
    let rec = run(c);
    assert_eq!(floats(&rec, &one), [2.5]);
    assert_eq!(floats(&rec, &list), [1.0, -2.0, 3.5]);
    assert_eq!(floats(&rec, &vecs), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(common::ints(&rec, &ints), [1, -2]);
    assert_eq!(floats(&rec, &color), [0.0, 0.5, 1.0, 1.0]);
    assert_eq!(words(&rec, &column(t["b"].clone())), [7]);
}

/// Every transfer.readback form: a live count a Number, Float and Int columns lists of
/// numbers, a vector column `{x,y,z,w}` lists, plain values themselves, tables of them; a
/// Field over no column refused naming the form to use.
#[test]
fn readback_answers_each_form() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let f = upload_f32(&mut c, &[1.5, -2.0]);
    let i = upload_i32(&mut c, &[-3, 4]);
    let v = upload_vec3(&mut c, &[[1.0, 2.0, 3.0]]);
    let lc = live(&mut c, 7, 16);
    let rec = run(c);
    let source = ReadSource::Table(
        [
            ("count".to_string(), ReadSource::Count(lc)),
            ("f".to_string(), ReadSource::Column(f.clone())),
            ("i".to_string(), ReadSource::Column(i)),
            ("v".to_string(), ReadSource::Column(v)),
            ("n".to_string(), ReadSource::Number(0.25)),
            ("b".to_string(), ReadSource::Bool(true)),
            ("s".to_string(), ReadSource::Text("hi".into())),
            ("field".to_string(), ReadSource::Field(Some(f))),
        ]
        .into(),
    );
    let want: BTreeMap<String, ReadValue> = [
        ("count".to_string(), ReadValue::Number(7.0)),
        ("f".to_string(), ReadValue::Numbers(vec![1.5, -2.0])),
        ("i".to_string(), ReadValue::Numbers(vec![-3.0, 4.0])),
        (
            "v".to_string(),
            ReadValue::Vectors(vec![vec![1.0, 2.0, 3.0]]),
        ),
        ("n".to_string(), ReadValue::Number(0.25)),
        ("b".to_string(), ReadValue::Bool(true)),
        ("s".to_string(), ReadValue::Text("hi".into())),
        ("field".to_string(), ReadValue::Numbers(vec![1.5, -2.0])),
    ]
    .into();
    assert_eq!(rec.readback("r", &source).unwrap(), ReadValue::Table(want));
    let e = rec
        .readback(
            "r",
            &ReadSource::Table([("lonely".to_string(), ReadSource::Field(None))].into()),
        )
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::Readback { ref key, ref problem } if key == "r.lonely" && problem.contains("over a column")),
        "{e}"
    );
}

/// Text columns: a list of text (or `{ type = "String", values = ... }`) uploads as a String
/// column of its values and reads back as them, its live elements only when it carries a
/// count; numbers for a String column are refused; the Luau op takes both forms.
#[test]
fn text_columns_upload_and_read_back_their_values() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let names: Vec<String> = ["b", "a", "b", "", "c"].map(String::from).to_vec();
    let col = column(
        c.upload("names", &UploadValue::Texts(names.clone()))
            .unwrap(),
    );
    assert_eq!(
        (col.ty, col.capacity, col.lanes),
        (ColumnType::String, 5, 1)
    );
    assert_eq!(col.ty.name(), "String");
    assert_eq!(ColumnType::from_name("String"), Some(ColumnType::String));
    let empty = column(c.upload("empty", &UploadValue::Texts(vec![])).unwrap());
    let e = c
        .upload("nums", &UploadValue::Typed(ColumnType::String, vec![1.0]))
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::Upload { ref key, .. } if key == "nums"),
        "{e}"
    );
    let lc = live(&mut c, 2, 5);
    let first_two = c.live(&col, lc);
    let rec = run(c);
    assert_eq!(
        words(&rec, &col),
        [0, 1, 0, 2, 3],
        "indices of the distinct values"
    );
    assert_eq!(
        rec.readback("names", &ReadSource::Column(col)).unwrap(),
        ReadValue::Texts(names)
    );
    assert_eq!(
        rec.readback("two", &ReadSource::Column(first_two)).unwrap(),
        ReadValue::Texts(vec!["b".into(), "a".into()])
    );
    assert_eq!(
        rec.readback("empty", &ReadSource::Column(empty)).unwrap(),
        ReadValue::Texts(vec![])
    );

    let h = Host::new(&ctx.device, &ctx.queue, AssetLibrary::new()).unwrap();
    h.load(
        "text.luau",
        r#"
function cook(frame)
    local up = transfer.upload({ values = {
        plain = { "x", "y", "x" },
        typed = { type = "String", values = { "p", "q" } },
    } })
    return transfer.readback({ columns = { plain = up.plain, typed = up.typed } })
end
"#,
    )
    .unwrap();
    let report = h.play(1).unwrap();
    let values = &report.frames[0].values;
    assert_eq!(
        values["plain"],
        ReadValue::Texts(vec!["x".into(), "y".into(), "x".into()])
    );
    assert_eq!(
        values["typed"],
        ReadValue::Texts(vec!["p".into(), "q".into()])
    );
}

fn play_one(source: &str) -> Result<gpugraph_procgen::luau::PlayReport, ProcgenError> {
    let ctx = ctx();
    let h = Host::new(&ctx.device, &ctx.queue, AssetLibrary::new())?;
    h.load("t.luau", source)?;
    h.play(1)
}

/// cpu.read is cpu.call without `pure` or `curves`: either is refused by name.
#[test]
fn cpu_read_takes_no_pure_or_curves() {
    let read = |extra: &str| {
        format!(
            r#"
function scene() return 1 end
function cook(frame)
    local v = cpu.read({{ fn = scene, returns = {{ "Number" }}, digest = scene{extra} }})[1]
    return transfer.readback({{ columns = {{ v = v }} }})
end
"#
        )
    };
    let report = play_one(&read("")).unwrap();
    assert_eq!(report.frames[0].values["v"], ReadValue::Number(1.0));
    for (extra, word) in [(", pure = true", "pure"), (", curves = true", "curves")] {
        let e = play_one(&read(extra)).unwrap_err();
        assert!(e.to_string().contains(&format!("takes no `{word}`")), "{e}");
    }
}

/// device.guard over a flag that is not 0 refuses with what the lazy `detail` raises (and
/// does not call it when the flag is 0).
#[test]
fn a_guard_refuses_with_what_its_detail_raises() {
    let guard = |flag: u32| {
        format!(
            r#"
calls = 0
function cook(frame)
    local v = device.guard({{ value = 5, flag = {flag}, why = "why",
        detail = function() calls += 1; return "the input has a hole" end }})
    return transfer.readback({{ columns = {{ v = v, calls = calls }} }})
end
"#
        )
    };
    let report = play_one(&guard(0)).unwrap();
    assert_eq!(report.frames[0].values["v"], ReadValue::Number(5.0));
    assert_eq!(report.frames[0].values["calls"], ReadValue::Number(0.0));
    let e = play_one(&guard(1)).unwrap_err();
    assert!(
        matches!(e, ProcgenError::Guard { ref why, flag: 1 } if why == "the input has a hole"),
        "{e}"
    );
}

/// An appended output bound to a column an append returned writes a copy that keeps its live
/// count: the second pass appends after what the first appended, and the first is unchanged.
#[test]
fn an_appended_output_bound_to_an_appended_column_appends_after_it() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let compact =
        |c: &mut gpugraph_procgen::Cook, keep: &[u32], into: Option<&gpugraph_procgen::Column>| {
            let k = upload_u32(c, keep);
            let mut b = bind(vec![("keep", BindValue::Column(k))]);
            if let Some(into) = into {
                b.insert("indices".into(), BindValue::Column(into.clone()));
            }
            c.kernel(
                &kernel("procgen/compact"),
                Domain::Number(keep.len() as u64),
                &KernelCall {
                    bind: b,
                    ..Default::default()
                },
            )
            .unwrap()
        };
    let first = compact(&mut c, &[1, 0, 1], None);
    let second = compact(&mut c, &[0, 1, 0, 0, 1], Some(&first.columns["indices"]));
    let again = &second.columns["indices"];
    assert!(!again.same_buffer(&first.columns["indices"]), "a copy");
    assert_eq!(again.capacity, 5);
    let rec = run(c);
    assert_eq!(count(&rec, &first.counts["indices"]), 2);
    assert_eq!(count(&rec, &second.counts["indices"]), 4);
    assert_eq!(again.live.as_ref(), Some(&second.counts["indices"]));
    assert_eq!(ints(&rec, &first.columns["indices"]), [0, 2, -1]);
    let got = ints(&rec, again);
    assert_eq!(got[..2], [0, 2], "the earlier pass's appends stay first");
    let mut tail = got[2..4].to_vec();
    tail.sort_unstable();
    assert_eq!(tail, [1, 4]);
    assert_eq!(got[4], -1);
}

const BY_NAME_WGSL: &str = "
struct Params { n: u32, cols_col_c: u32, cols_col_a: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> cols: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if i >= params.n { return; }
    out[i] = cols[params.cols_col_c + i] * 10.0 + cols[params.cols_col_a + i];
}
";

fn by_name_asset(order: Option<&str>) -> KernelRef {
    let order = order.map_or(String::new(), |o| format!(", order: \"{o}\""));
    let yaml = format!(
        "params:\n  - {{ name: n, type: u32 }}\n  - {{ name: cols_col_c, type: u32 }}\n  - {{ name: cols_col_a, type: u32 }}\nbindings:\n  - {{ name: cols, kind: columns, access: read, element: f32{order} }}\n  - {{ name: out, access: write, element: f32, count: domain }}\n"
    );
    KernelRef::Asset(
        KernelAsset::new("t/by_name", BY_NAME_WGSL, &yaml)
            .unwrap()
            .into(),
    )
}

/// A kernel that reads a columns binding by `NAME_col_<column>` needs no `order`: it finds
/// each column wherever the packing put it (sorted names, or a stated order); a column the
/// table lacks leaves its param unset, refused by name.
#[test]
fn a_columns_binding_read_by_name_needs_no_order() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let a = upload_f32(&mut c, &[1.0, 2.0]);
    let b = upload_f32(&mut c, &[7.0, 7.0]);
    let col_c = upload_f32(&mut c, &[3.0, 4.0]);
    let table: BTreeMap<String, _> = [
        ("a".to_string(), a.clone()),
        ("b".to_string(), b),
        ("c".to_string(), col_c),
    ]
    .into();
    let call = KernelCall {
        bind: bind(vec![("cols", BindValue::Columns(table))]),
        ..Default::default()
    };
    let sorted = c
        .kernel(&by_name_asset(None), Domain::Number(2), &call)
        .unwrap();
    let ordered = c
        .kernel(&by_name_asset(Some("c b a")), Domain::Number(2), &call)
        .unwrap();
    let lacking = KernelCall {
        bind: bind(vec![(
            "cols",
            BindValue::Columns([("a".to_string(), a)].into()),
        )]),
        ..Default::default()
    };
    let e = c
        .kernel(&by_name_asset(None), Domain::Number(2), &lacking)
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::MissingParam { ref name, .. } if name == "cols_col_c"),
        "{e}"
    );
    let rec = run(c);
    assert_eq!(floats(&rec, &sorted.columns["out"]), [31.0, 42.0]);
    assert_eq!(floats(&rec, &ordered.columns["out"]), [31.0, 42.0]);
}

/// An i32 scan's total is a count (`{ count = scanned.total, capacity = ... }`): a kernel runs
/// over it; device.bound takes arithmetic over it and answers a live count with the most it can
/// reach; a kernel's i32 / u32 / f32 outputs are Int / UInt / Float columns.
#[test]
fn a_scan_total_is_a_count_and_bound_takes_arithmetic_over_it() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let flags = upload_i32(&mut c, &[1, 0, 1, 1]);
    let scanned = c
        .kernel(
            &kernel("procgen/scan"),
            Domain::Number(4),
            &KernelCall {
                bind: bind(vec![("src", BindValue::Column(flags))]),
                ..Default::default()
            },
        )
        .unwrap();
    let total = scanned.columns["total"].clone();
    assert_eq!(
        (scanned.columns["dst"].ty, total.ty),
        (ColumnType::Int, ColumnType::Int)
    );
    let lc = LiveCount {
        word: total.buffer.clone(),
        capacity: 4,
    };
    let src = upload_f32(&mut c, &[10.0, 20.0, 30.0, 40.0]);
    let index = upload_i32(&mut c, &[3, 2, 1, 0]);
    let g = c
        .kernel(
            &kernel("procgen/gather"),
            Domain::Live(lc.clone()),
            &KernelCall {
                bind: bind(vec![
                    ("src", BindValue::Column(src)),
                    ("index", BindValue::Column(index)),
                ]),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(g.columns["dst"].ty, ColumnType::Float);
    let twice = CountExpr::Mul(
        Box::new(CountExpr::Count(lc)),
        Box::new(CountExpr::Number(2)),
    );
    let Bounded::Live(b) = c.bound("twice", &twice, None, false).unwrap() else {
        panic!("arithmetic over a device count stays live");
    };
    assert_eq!(b.capacity, 8, "the most the arithmetic can reach");
    let point = upload_vec3(&mut c, &[[0.0; 3]]);
    let hook = c
        .kernel(
            &kernel("procgen/hash_hook"),
            Domain::Number(1),
            &KernelCall {
                bind: bind(vec![("points", BindValue::Column(point))]),
                uniforms: [
                    ("cell".to_string(), Uniform::Number(1.0)),
                    ("table_size".to_string(), Uniform::Number(4.0)),
                ]
                .into(),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(hook.columns["next"].ty, ColumnType::UInt);
    let rec = run(c);
    assert_eq!(ints(&rec, &total), [3]);
    assert_eq!(
        rec.readback("dst", &ReadSource::Column(g.columns["dst"].clone()))
            .unwrap(),
        ReadValue::Numbers(vec![40.0, 30.0, 20.0])
    );
    assert_eq!(count(&rec, &b), 6);
}
