//! device.kernel's ABI on a real device: cast-by-value rules (read and written bindings),
//! count arithmetic evaluated on the device, and the refusals, each naming what it refused.

mod common;

use std::collections::BTreeMap;

use common::*;
use gpugraph_procgen::{
    cpu, BindValue, ColumnType, CountExpr, CountValue, Domain, KernelAsset, KernelCall, KernelRef,
    ProcgenError, Uniform, Word,
};

const AWKWARD: [f32; 9] = [
    1.5,
    -2.7,
    3e9,
    f32::NAN,
    -1.0,
    7.0,
    -3e9,
    0.49,
    4294967296.0,
];

#[test]
fn casts_are_by_value_in_every_direction() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let f = upload_f32(&mut c, &AWKWARD);
    let ints: Vec<i32> = vec![-5, 0, 7, i32::MAX, i32::MIN];
    let i = upload_i32(&mut c, &ints);
    let uints: Vec<u32> = vec![0, 1, 3_000_000_000, u32::MAX];
    let u = upload_u32(&mut c, &uints);
    let mut cases = Vec::new();
    for (col, from) in [(&f, Word::F32), (&i, Word::I32), (&u, Word::U32)] {
        for to in [Word::F32, Word::I32, Word::U32] {
            let out = c.cast(col, to).unwrap();
            assert_eq!(
                out.ty,
                ColumnType::of(to, 1),
                "a cast column is typed as its words"
            );
            cases.push((col.clone(), from, to, out));
        }
    }
    let rec = run(c);
    for (src, from, to, out) in cases {
        let want: Vec<u32> = words(&rec, &src)
            .iter()
            .map(|&b| cpu::cast(b, from, to))
            .collect();
        assert_eq!(words(&rec, &out), want, "{from:?} -> {to:?}");
    }
    // Spot values: truncation toward zero, saturation, NaN to 0, negative to 0 for u32.
    assert_eq!(cpu::cast(1.5f32.to_bits(), Word::F32, Word::I32) as i32, 1);
    assert_eq!(
        cpu::cast((-2.7f32).to_bits(), Word::F32, Word::I32) as i32,
        -2
    );
    assert_eq!(
        cpu::cast(3e9f32.to_bits(), Word::F32, Word::I32) as i32,
        i32::MAX
    );
    assert_eq!(cpu::cast(f32::NAN.to_bits(), Word::F32, Word::U32), 0);
    assert_eq!(cpu::cast((-1.0f32).to_bits(), Word::F32, Word::U32), 0);
    assert_eq!(cpu::cast(-5i32 as u32, Word::I32, Word::U32), 0);
}

#[test]
fn a_float_column_meets_an_i32_binding_as_its_numbers() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    // scan's src is i32: a Float column is scanned as the numbers it holds, not its bits.
    let vals = [1.0f32, 2.9, -3.2, 10.0, 0.0];
    let f = upload_f32(&mut c, &vals);
    let call = KernelCall {
        bind: bind(vec![("src", BindValue::Column(f))]),
        ..Default::default()
    };
    let out = c
        .kernel(&kernel("procgen/scan"), Domain::Number(5), &call)
        .unwrap();
    // gather's src is f32 and its index i32: an Int column of sources and a Float column of
    // indices are both read by value.
    let src = upload_i32(&mut c, &[10, 20, 30]);
    let idx = upload_f32(&mut c, &[2.0, 0.7, 1.9, -0.5]);
    let g = c
        .kernel(
            &kernel("procgen/gather"),
            Domain::Number(4),
            &KernelCall {
                bind: bind(vec![
                    ("src", BindValue::Column(src.clone())),
                    ("index", BindValue::Column(idx)),
                ]),
                ..Default::default()
            },
        )
        .unwrap();
    // An in-place (written) binding bound to an Int column writes a copy typed as the
    // binding (Float), leaving the column itself as it was.
    let dst_int = upload_i32(&mut c, &[-1, -1, -1, -1]);
    let idx2 = upload_i32(&mut c, &[1, 2]);
    let g2 = c
        .kernel(
            &kernel("procgen/gather"),
            Domain::Number(2),
            &KernelCall {
                bind: bind(vec![
                    ("src", BindValue::Column(src)),
                    ("index", BindValue::Column(idx2)),
                    ("dst", BindValue::Column(dst_int.clone())),
                ]),
                ..Default::default()
            },
        )
        .unwrap();
    let rec = run(c);
    let as_ints: Vec<i32> = vals.iter().map(|v| *v as i32).collect();
    let (want, total) = cpu::scan(&as_ints, 5, 5);
    assert_eq!(ints(&rec, &out.columns["dst"]), want);
    assert_eq!(ints(&rec, &out.columns["total"]), [total]);
    assert_eq!(floats(&rec, &g.columns["dst"]), [30.0, 10.0, 20.0, 10.0]);
    let d = &g2.columns["dst"];
    assert_eq!(d.ty, ColumnType::Float);
    assert!(
        !d.same_buffer(&dst_int),
        "a written binding bound to a column writes a copy"
    );
    // Slots 0..2 written; slots 2..4 keep the copied (cast) values of the column.
    assert_eq!(floats(&rec, d), [20.0, 30.0, -1.0, -1.0]);
    assert_eq!(ints(&rec, &dst_int), [-1, -1, -1, -1]);
}

#[test]
fn growing_count_arithmetic_runs_on_the_device() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let keep = upload_u32(&mut c, &[1, 0, 1, 1, 0, 1, 0, 0, 1, 1]);
    let out = c
        .kernel(
            &kernel("procgen/compact"),
            Domain::Number(10),
            &KernelCall {
                bind: bind(vec![("keep", BindValue::Column(keep))]),
                ..Default::default()
            },
        )
        .unwrap();
    let kept = CountExpr::Count(out.counts["indices"].clone());
    let twice = CountExpr::Mul(Box::new(kept.clone()), Box::new(CountExpr::Number(2)));
    let capped = CountExpr::Min(Box::new(twice.clone()), Box::new(CountExpr::Number(9)));
    let plus = CountExpr::Add(Box::new(kept.clone()), Box::new(kept.clone()));
    let mut lives = Vec::new();
    for e in [&twice, &capped, &plus] {
        match c.count(e).unwrap() {
            CountValue::Live(l) => lives.push(l),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        lives.iter().map(|l| l.capacity).collect::<Vec<_>>(),
        [20, 9, 20]
    );
    // A kernel over the arithmetic reads the count it comes to (scan writes its total past it).
    let src = upload_i32(&mut c, &[1; 20]);
    let s = c
        .kernel(
            &kernel("procgen/scan"),
            Domain::Live(lives[1].clone()),
            &KernelCall {
                bind: bind(vec![("src", BindValue::Column(src))]),
                ..Default::default()
            },
        )
        .unwrap();
    // Growing arithmetic made no planning wait: nothing was read back.
    assert_eq!(c.plan_waits().count(), 0);
    assert!(c.waits.is_empty(), "{:?}", c.waits);
    // Known numbers fold on the CPU with no wait; taking a count away is read back where it
    // is needed (a planning wait naming the expression and the node), then known.
    assert_eq!(
        c.count(&CountExpr::Sub(
            Box::new(CountExpr::Number(5)),
            Box::new(CountExpr::Number(2))
        ))
        .unwrap(),
        CountValue::Known(3)
    );
    assert_eq!(c.plan_waits().count(), 0);
    let named = CountExpr::Named("kept".into(), Box::new(kept));
    let less = CountExpr::Sub(Box::new(named), Box::new(CountExpr::Number(1)));
    assert_eq!(
        c.count_at(&less, "the test's node").unwrap(),
        CountValue::Known(5)
    );
    let waits: Vec<_> = c.plan_waits().cloned().collect();
    assert_eq!(waits.len(), 1);
    assert_eq!(
        (
            waits[0].expr.as_str(),
            waits[0].node.as_str(),
            waits[0].value
        ),
        ("(kept - 1)", "the test's node", 5)
    );
    assert_eq!(
        c.waits,
        ["planning wait: `(kept - 1)` read back = 5 for the test's node"]
    );
    let rec = run(c);
    let counts: Vec<u32> = lives.iter().map(|l| count(&rec, l)).collect();
    assert_eq!(counts, [12, 9, 12]);
    assert_eq!(ints(&rec, &s.columns["total"]), [9]);
}

#[test]
fn refusals_name_what_they_refuse() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let src = upload_f32(&mut c, &[1.0]);
    let idx = upload_i32(&mut c, &[0]);
    let base = KernelCall {
        bind: bind(vec![
            ("src", BindValue::Column(src.clone())),
            ("index", BindValue::Column(idx.clone())),
        ]),
        ..Default::default()
    };
    let gather = kernel("procgen/gather");
    let e = c
        .kernel(&KernelRef::Name("gather".into()), Domain::Number(1), &base)
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::BareKernelName { ref name } if name == "gather"),
        "{e}"
    );

    let mut call = base.clone();
    call.uniforms.insert("bogus".into(), Uniform::Number(1.0));
    let e = c.kernel(&gather, Domain::Number(1), &call).unwrap_err();
    assert!(
        matches!(e, ProcgenError::UnknownUniform { ref name, .. } if name == "bogus"),
        "{e}"
    );

    // count, time and frame are names any node may give: left out when undeclared.
    let mut call = base.clone();
    call.uniforms.insert("time".into(), Uniform::Number(1.0));
    call.step.insert("dt".into(), 0.5);
    c.kernel(&gather, Domain::Number(1), &call).unwrap();

    let mut call = base.clone();
    call.bind.insert("nope".into(), BindValue::Number(1));
    let e = c.kernel(&gather, Domain::Number(1), &call).unwrap_err();
    assert!(
        matches!(e, ProcgenError::UnknownBinding { ref name, .. } if name == "nope"),
        "{e}"
    );

    let mut call = base.clone();
    call.bind.remove("index");
    let e = c.kernel(&gather, Domain::Number(1), &call).unwrap_err();
    assert!(
        matches!(e, ProcgenError::Unbound { ref binding, .. } if binding == "index"),
        "{e}"
    );
    // ... unless `columns` has a column of that name.
    call.columns.insert("index".into(), idx.clone());
    c.kernel(&gather, Domain::Number(1), &call).unwrap();

    let mut call = base.clone();
    call.bind.insert("src".into(), BindValue::Number(3));
    let e = c.kernel(&gather, Domain::Number(1), &call).unwrap_err();
    assert!(
        matches!(e, ProcgenError::BindKind { ref binding, .. } if binding == "src"),
        "{e}"
    );

    let pts = upload_vec3(&mut c, &[[0.0; 3]]);
    let hook = KernelCall {
        bind: bind(vec![("points", BindValue::Column(pts))]),
        uniforms: [
            ("cell".to_string(), Uniform::Number(1.0)),
            ("table_size".to_string(), Uniform::Number(1.5)),
        ]
        .into(),
        ..Default::default()
    };
    let e = c
        .kernel(&kernel("procgen/hash_hook"), Domain::Number(1), &hook)
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::ParamValue { ref name, .. } if name == "table_size"),
        "{e}"
    );
    let mut missing = hook.clone();
    missing.uniforms.remove("table_size");
    let e = c
        .kernel(&kernel("procgen/hash_hook"), Domain::Number(1), &missing)
        .unwrap_err();
    assert!(e.to_string().contains("table_size"), "{e}");

    // A Float column of 1 lane meeting a vec3 binding.
    let mut lanes = hook.clone();
    lanes
        .bind
        .insert("points".into(), BindValue::Column(src.clone()));
    lanes
        .uniforms
        .insert("table_size".into(), Uniform::Number(8.0));
    let e = c
        .kernel(&kernel("procgen/hash_hook"), Domain::Number(1), &lanes)
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::ColumnLength { ref binding, .. } if binding == "points"),
        "{e}"
    );

    // A kernel with no COUNT=device variant cannot run over a live count.
    let plain_only = KernelAsset::new(
        "t/plain",
        "struct Params { n: u32 }\n@group(0) @binding(0) var<uniform> params: Params;\n@group(0) @binding(1) var<storage, read_write> o: array<u32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { if g.x < params.n { o[g.x] = 1u; } }\n",
        "params: [{ name: n, type: u32 }]\nbindings:\n  - { name: o, access: write, element: u32, count: domain }\n",
    )
    .unwrap();
    let lc = live(&mut c, 1, 4);
    let e = c
        .kernel(
            &KernelRef::Asset(plain_only.into()),
            Domain::Live(lc),
            &KernelCall::default(),
        )
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::LiveDomainUnsupported { ref kernel } if kernel == "t/plain"),
        "{e}"
    );
}

const PACKED_WGSL: &str = "
struct Params { n: u32, cols_stride: u32, center_x: f32, center_y: f32, flag: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> cols: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if i >= params.n { return; }
    out[i] = cols[i] * 100.0 + cols[params.cols_stride + i] * 10.0 + params.center_x - params.center_y
        + f32(params.flag) * 1000.0;
}
";

fn packed_asset(order: Option<&str>) -> KernelAsset {
    let order = order.map_or(String::new(), |o| format!(", order: \"{o}\""));
    let yaml = format!(
        "params:\n  - {{ name: n, type: u32 }}\n  - {{ name: cols_stride, type: u32 }}\n  - {{ name: center_x, type: f32 }}\n  - {{ name: center_y, type: f32 }}\n  - {{ name: flag, type: u32 }}\nbindings:\n  - {{ name: cols, kind: columns, access: read, element: f32{order} }}\n  - {{ name: out, access: write, element: f32, count: domain }}\n"
    );
    KernelAsset::new("t/packed", PACKED_WGSL, &yaml).unwrap()
}

/// A columns binding packs its table in the stated order (sorted names without one), casting
/// each column by value; a Vec uniform spreads over `_x`, `_y`; a Bool is 1 or 0.
#[test]
fn columns_bindings_pack_in_order_and_vec_uniforms_spread() {
    let ctx = ctx();
    let mut c = cook(&ctx);
    let a = upload_f32(&mut c, &[1.0, 2.0, 3.0]);
    let b = upload_i32(&mut c, &[4, 5, 6]);
    let table: BTreeMap<String, _> =
        [("a".to_string(), a.clone()), ("b".to_string(), b.clone())].into();
    let call = KernelCall {
        bind: bind(vec![("cols", BindValue::Columns(table.clone()))]),
        uniforms: [
            ("center".to_string(), Uniform::Vec(vec![0.5, 0.25])),
            ("flag".to_string(), Uniform::Bool(true)),
        ]
        .into(),
        ..Default::default()
    };
    let sorted = c
        .kernel(
            &KernelRef::Asset(packed_asset(None).into()),
            Domain::Number(3),
            &call,
        )
        .unwrap();
    let ordered = c
        .kernel(
            &KernelRef::Asset(packed_asset(Some("b a")).into()),
            Domain::Number(3),
            &call,
        )
        .unwrap();
    // An unbound columns binding takes every column of `columns`.
    let from_columns = c
        .kernel(
            &KernelRef::Asset(packed_asset(None).into()),
            Domain::Number(3),
            &KernelCall {
                columns: table.clone(),
                uniforms: call.uniforms.clone(),
                ..Default::default()
            },
        )
        .unwrap();
    let short = upload_f32(&mut c, &[1.0]);
    let e = c
        .kernel(
            &KernelRef::Asset(packed_asset(Some("b a c")).into()),
            Domain::Number(3),
            &call,
        )
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::ColumnsOrder { ref binding, .. } if binding == "cols"),
        "{e}"
    );
    let mut uneven = call.clone();
    uneven.bind.insert(
        "cols".into(),
        BindValue::Columns([("a".to_string(), a), ("b".to_string(), short)].into()),
    );
    let e = c
        .kernel(
            &KernelRef::Asset(packed_asset(None).into()),
            Domain::Number(3),
            &uneven,
        )
        .unwrap_err();
    assert!(
        matches!(e, ProcgenError::ColumnLength { ref column, .. } if column == "b"),
        "{e}"
    );
    let rec = run(c);
    let f = |x: f32, y: f32| x * 100.0 + y * 10.0 + 0.25 + 1000.0;
    assert_eq!(
        floats(&rec, &sorted.columns["out"]),
        [f(1.0, 4.0), f(2.0, 5.0), f(3.0, 6.0)]
    );
    assert_eq!(
        floats(&rec, &ordered.columns["out"]),
        [f(4.0, 1.0), f(5.0, 2.0), f(6.0, 3.0)]
    );
    assert_eq!(
        floats(&rec, &from_columns.columns["out"]),
        floats(&rec, &sorted.columns["out"])
    );
}
