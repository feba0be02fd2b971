//! Built-in operations on lavapipe against their CPU oracles, each run through both Graph
//! (one submission) and SimpleGraph (one evaluator pass per operation) with bit-identical
//! results: vector MADD (host and GPU scales, in-place state), dot products (feeding an
//! expression with no host binding), CSR SpMV, scalar literals and arithmetic, upload and
//! copy; sizes around workgroup and tile boundaries, uneven and empty chunks, 2-D grids.

mod graph_common;

use gpugraph_command::VectorFormat as F;
use gpugraph_program::expr::{ScalarType, ScalarValue};
use gpugraph_program::graph::{Bindings, CompileOptions, ProgramError, RunOptions, ValueSpec};
use gpugraph_program::operation::{
    dot, madd, scalar, spmv, Compact, CopyVector, DotProduct, ExpressionOperation, ScalarLiteral,
    ScalarOp, ScalarOperation, SpMV, Upload, VectorMadd,
};
use gpugraph_tables::GpuVector;
use gpugraph_testing::{ctx, ctx_with_max_dispatch, rng, uneven_chunks};
use graph_common::{assert_close, read_f32, read_u32, run_both, upload, upload1, Program};
use rand::Rng;

fn random_f32(rng: &mut impl Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect()
}

/// MADD tolerance: the GPU may fuse the multiply-add (one rounding instead of two).
fn madd_tol<'a>(x: &'a [f32], s: f32, a: &'a [f32]) -> impl Fn(usize) -> f32 + 'a {
    move |i| 2.0 * f32::EPSILON * ((x[i] * s).abs() + a[i].abs()) + f32::MIN_POSITIVE
}

#[test]
fn vector_madd_matches_the_oracle_with_host_and_gpu_scales() {
    let ctx = ctx();
    let mut r = rng(1);
    for format in [F::Float32, F::Float32x3] {
        let w = format.components() as usize;
        // Scale from the host, and from a GPU scalar (a literal times a host factor).
        let program = Program::default()
            .input("x", ValueSpec::vector(format))
            .input("a", ValueSpec::vector(format))
            .input("s", ValueSpec::scalar(ScalarType::Float32))
            .input("factor", ValueSpec::scalar(ScalarType::Float32))
            .op(VectorMadd::new("host", "x", "s", "a", "y_host"))
            .op(ScalarLiteral::new("lit", "two", ScalarValue::Float32(2.0)))
            .op(ScalarOperation::new(
                "mul",
                ScalarOp::Multiply,
                "two",
                "factor",
                "gpu_s",
            ))
            .op(VectorMadd::new("gpu", "x", "gpu_s", "a", "y_gpu"));
        let compiled = program.compile_both(&ctx, &["y_host", "y_gpu", "gpu_s"]);
        for n in [0usize, 1, 255, 256, 257, 1023, 1024, 1025, 4099] {
            let chunks = uneven_chunks(&mut r, n, 3);
            let (xs, adds) = (random_f32(&mut r, n * w), random_f32(&mut r, n * w));
            let (x, a) = (
                upload(&ctx, format, &xs, &chunks),
                upload(&ctx, format, &adds, &chunks),
            );
            let s = r.random_range(-3.0f32..3.0);
            let factor = r.random_range(-3.0f32..3.0);
            let results = run_both(
                &ctx,
                &compiled,
                Bindings::new()
                    .vector("x", &x)
                    .vector("a", &a)
                    .float32("s", s)
                    .float32("factor", factor),
            );
            let y = results.get("y_host").unwrap();
            assert_eq!(
                y.chunk_lengths(),
                x.chunk_lengths(),
                "MADD inherits input chunks"
            );
            assert_close(
                &read_f32(&ctx, y),
                &madd::cpu::madd(&xs, s, &adds),
                madd_tol(&xs, s, &adds),
                "y_host",
            );
            let gpu_s = read_f32(&ctx, results.get("gpu_s").unwrap());
            assert_eq!(
                gpu_s,
                vec![2.0 * factor],
                "scalar result is a one-row vector"
            );
            let y = results.get("y_gpu").unwrap();
            assert_close(
                &read_f32(&ctx, y),
                &madd::cpu::madd(&xs, gpu_s[0], &adds),
                madd_tol(&xs, gpu_s[0], &adds),
                "y_gpu",
            );
        }
    }
}

#[test]
fn vector_madd_and_dot_use_two_dimensional_grids_past_the_dispatch_limit() {
    // 16 workgroups per dimension: 40,000 components need 40 MADD and 20 dot workgroups.
    let ctx = ctx_with_max_dispatch(16);
    let mut r = rng(2);
    let program = Program::default()
        .input("x", ValueSpec::vector(F::Float32))
        .input("a", ValueSpec::vector(F::Float32))
        .input("s", ValueSpec::scalar(ScalarType::Float32))
        .op(VectorMadd::new("madd", "x", "s", "a", "y"))
        .op(DotProduct::new("dot", "y", "a", "d"));
    let compiled = program.compile_both(&ctx, &["y", "d"]);
    let n = 40_000;
    let (xs, adds) = (random_f32(&mut r, n), random_f32(&mut r, n));
    let (x, a) = (
        upload1(&ctx, F::Float32, &xs),
        upload1(&ctx, F::Float32, &adds),
    );
    let results = run_both(
        &ctx,
        &compiled,
        Bindings::new()
            .vector("x", &x)
            .vector("a", &a)
            .float32("s", 0.5),
    );
    let y = read_f32(&ctx, results.get("y").unwrap());
    assert_close(
        &y,
        &madd::cpu::madd(&xs, 0.5, &adds),
        madd_tol(&xs, 0.5, &adds),
        "y",
    );
    let d = read_f32(&ctx, results.get("d").unwrap())[0] as f64;
    let want = dot::cpu::dot(&y, &adds);
    assert!(
        (d - want).abs() <= dot::cpu::error_bound(&y, &adds),
        "dot {d} vs {want}"
    );
}

#[test]
fn dot_product_matches_the_oracle_across_tile_boundaries() {
    let ctx = ctx();
    let mut r = rng(3);
    for format in [F::Float32, F::Float32x4] {
        let w = format.components() as usize;
        let program = Program::default()
            .input("a", ValueSpec::vector(format))
            .input("b", ValueSpec::vector(format))
            .op(DotProduct::new("dot", "a", "b", "d"))
            .op(DotProduct::new("square", "a", "a", "aa"));
        let compiled = program.compile_both(&ctx, &["d", "aa"]);
        for rows in [0usize, 1, 511, 512, 513, 2047, 2048, 2049, 9000] {
            let chunks = uneven_chunks(&mut r, rows, 4);
            let (av, bv) = (random_f32(&mut r, rows * w), random_f32(&mut r, rows * w));
            let (a, b) = (
                upload(&ctx, format, &av, &chunks),
                upload(&ctx, format, &bv, &chunks),
            );
            let results = run_both(
                &ctx,
                &compiled,
                Bindings::new().vector("a", &a).vector("b", &b),
            );
            for (name, x, y) in [("d", &av, &bv), ("aa", &av, &av)] {
                let got = read_f32(&ctx, results.get(name).unwrap());
                assert_eq!(got.len(), 1, "{name} is a one-row vector");
                let want = dot::cpu::dot(x, y);
                let bound = dot::cpu::error_bound(x, y);
                assert!(
                    (got[0] as f64 - want).abs() <= bound,
                    "{format} rows {rows}: {name} = {} vs {want} (bound {bound})",
                    got[0]
                );
            }
        }
    }
}

#[test]
fn a_dot_product_scalar_feeds_an_expression_with_no_host_binding() {
    let ctx = ctx();
    let mut r = rng(4);
    let program = Program::default()
        .input("a", ValueSpec::vector(F::Float32))
        .input("b", ValueSpec::vector(F::Float32))
        .input("positions", ValueSpec::vector(F::Float32x3))
        .op(DotProduct::new("dot", "a", "b", "d"))
        .op(ExpressionOperation::new(
            "scaled",
            "positions * d + vec3(1, 2, 3)",
        ))
        .op(ExpressionOperation::new("twice", "d * 2"));
    let compiled = program.compile_both(&ctx, &["scaled", "d", "twice"]);
    let n = 700;
    let chunks = [300, 0, 400];
    let (av, bv) = (random_f32(&mut r, 100), random_f32(&mut r, 100));
    let pv = random_f32(&mut r, n * 3);
    let (a, b) = (
        upload1(&ctx, F::Float32, &av),
        upload1(&ctx, F::Float32, &bv),
    );
    let p = upload(&ctx, F::Float32x3, &pv, &chunks);
    let results = run_both(
        &ctx,
        &compiled,
        Bindings::new()
            .vector("a", &a)
            .vector("b", &b)
            .vector("positions", &p),
    );
    let d = read_f32(&ctx, results.get("d").unwrap())[0];
    let scaled = results.get("scaled").unwrap();
    assert_eq!(scaled.format(), F::Float32x3);
    assert_eq!(scaled.chunk_lengths(), vec![300, 0, 400]);
    let want: Vec<f32> = pv
        .chunks(3)
        .flat_map(|row| [row[0] * d + 1.0, row[1] * d + 2.0, row[2] * d + 3.0])
        .collect();
    assert_close(
        &read_f32(&ctx, scaled),
        &want,
        |i| 2.0 * f32::EPSILON * (want[i].abs() + 4.0 * d.abs()),
        "scaled",
    );
    assert_eq!(read_f32(&ctx, results.get("twice").unwrap()), vec![d * 2.0]);
    let decision = results.lowering().decision("scaled-expression").unwrap();
    assert!(
        decision.reason.contains("1 GPU-resident"),
        "{}",
        decision.reason
    );
}

/// A random CSR matrix with empty rows.
fn random_csr(r: &mut impl Rng, rows: usize, cols: usize) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let mut offsets = vec![0u32];
    let (mut ci, mut vals) = (Vec::new(), Vec::new());
    for _ in 0..rows {
        let len = if r.random_bool(0.2) {
            0
        } else {
            r.random_range(0..12)
        };
        for _ in 0..len {
            ci.push(r.random_range(0..cols as u32));
            vals.push(r.random_range(-2.0f32..2.0));
        }
        offsets.push(ci.len() as u32);
    }
    (offsets, ci, vals)
}

/// `y = A · x` for a CSR matrix of `rows` rows bound as `offsets`, `cols` and `vals`.
fn spmv_program(rows: u64) -> Program {
    Program::default()
        .input("offsets", ValueSpec::vector(F::Uint32))
        .input("cols", ValueSpec::vector(F::Uint32))
        .input("vals", ValueSpec::vector(F::Float32))
        .input("x", ValueSpec::vector(F::Float32))
        .op(SpMV::new("spmv", "offsets", "cols", "vals", "x", "y", rows))
}

/// One-chunk uploads of a CSR matrix (offsets, columns, values) and `x`.
fn csr_uploads(
    ctx: &gpugraph_command::GpuContext,
    offsets: &[u32],
    ci: &[u32],
    vals: &[f32],
    xs: &[f32],
) -> [GpuVector; 4] {
    [
        upload1(ctx, F::Uint32, offsets),
        upload1(ctx, F::Uint32, ci),
        upload1(ctx, F::Float32, vals),
        upload1(ctx, F::Float32, xs),
    ]
}

/// The bindings of [`spmv_program`].
fn csr_bindings<'a>(
    offsets: &'a GpuVector,
    cols: &'a GpuVector,
    vals: &'a GpuVector,
    x: &'a GpuVector,
) -> Bindings<'a> {
    Bindings::new()
        .vector("offsets", offsets)
        .vector("cols", cols)
        .vector("vals", vals)
        .vector("x", x)
}

#[test]
fn spmv_matches_the_oracle() {
    let ctx = ctx();
    let mut r = rng(5);
    for rows in [0usize, 1, 255, 256, 257, 1000] {
        let cols = 300;
        let (offsets, ci, vals) = random_csr(&mut r, rows, cols);
        let xs = random_f32(&mut r, cols);
        let compiled = spmv_program(rows as u64).compile_both(&ctx, &["y"]);
        let [o, c, v, x] = csr_uploads(&ctx, &offsets, &ci, &vals, &xs);
        let results = run_both(&ctx, &compiled, csr_bindings(&o, &c, &v, &x));
        let y = results.get("y").unwrap();
        assert_eq!(y.len(), rows as u64);
        let want = spmv::cpu::spmv(&offsets, &ci, &vals, &xs);
        let tol = |i: usize| {
            let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
            let mag: f32 = (s..e).map(|k| (vals[k] * xs[ci[k] as usize]).abs()).sum();
            16.0 * f32::EPSILON * mag + f32::MIN_POSITIVE
        };
        assert_close(&read_f32(&ctx, y), &want, tol, &format!("spmv rows {rows}"));
    }
}

#[test]
fn spmv_skips_out_of_range_columns_and_clamps_offsets() {
    let ctx = ctx();
    // Row 1 names column 9 of a 3-column x; row 2's end offset overruns nnz.
    let offsets = [0u32, 2, 3, 9];
    let ci = [0u32, 2, 9, 1];
    let vals = [1.0f32, 2.0, 5.0, 3.0];
    let xs = [10.0f32, 20.0, 30.0];
    let compiled = spmv_program(3).compile_both(&ctx, &["y"]);
    let [o, c, v, x] = csr_uploads(&ctx, &offsets, &ci, &vals, &xs);
    let results = run_both(&ctx, &compiled, csr_bindings(&o, &c, &v, &x));
    let want = spmv::cpu::spmv(&offsets, &ci, &vals, &xs);
    assert_eq!(want, vec![70.0, 0.0, 60.0]);
    assert_eq!(read_f32(&ctx, results.get("y").unwrap()), want);

    // A matrix split over two non-empty chunks is refused (chunks are never repacked).
    let split = upload(&ctx, F::Uint32, &ci, &[2, 2]);
    let err = compiled
        .0
        .run(csr_bindings(&o, &split, &v, &x), RunOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::Lowering { operation, .. } if operation == "spmv"),
        "{err}"
    );
    assert!(err.to_string().contains("single chunk"), "{err}");
}

#[test]
fn scalar_literals_and_operations_match_the_oracle() {
    let ctx = ctx();
    use ScalarValue as S;
    let cases = [
        (S::Float32(1.5), S::Float32(-4.25)),
        (S::Sint32(i32::MIN), S::Sint32(-1)),
        (S::Sint32(-7), S::Sint32(0)),
        (S::Sint32(i32::MAX), S::Sint32(3)),
        (S::Uint32(u32::MAX), S::Uint32(2)),
        (S::Uint32(17), S::Uint32(0)),
    ];
    let ops = [
        ScalarOp::Add,
        ScalarOp::Subtract,
        ScalarOp::Multiply,
        ScalarOp::Divide,
        ScalarOp::Min,
        ScalarOp::Max,
    ];
    for (a, b) in cases {
        // `a` is a GPU literal, `b` a host binding; results chain GPU to GPU.
        let mut program = Program::default()
            .input("b", ValueSpec::scalar(b.scalar()))
            .op(ScalarLiteral::new("lit", "a", a));
        let mut outputs = vec!["a".to_string()];
        for op in ops {
            let name = format!("{op:?}");
            program = program.op(ScalarOperation::new(
                format!("op-{name}"),
                op,
                "a",
                "b",
                &name,
            ));
            outputs.push(name);
        }
        program = program.op(ScalarOperation::new(
            "chain",
            ScalarOp::Add,
            "Add",
            "Multiply",
            "chained",
        ));
        outputs.push("chained".into());
        let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
        let compiled = program.compile_both(&ctx, &refs);
        let results = run_both(&ctx, &compiled, Bindings::new().scalar("b", b));
        assert_eq!(read_u32(&ctx, results.get("a").unwrap()), vec![a.bits()]);
        for op in ops {
            let got = read_u32(&ctx, results.get(&format!("{op:?}")).unwrap());
            let want = scalar::cpu::apply(op, a, b).unwrap();
            assert_eq!(got, vec![want.bits()], "{a:?} {op:?} {b:?}");
        }
        let add = scalar::cpu::apply(ScalarOp::Add, a, b).unwrap();
        let mul = scalar::cpu::apply(ScalarOp::Multiply, a, b).unwrap();
        let chained = scalar::cpu::apply(ScalarOp::Add, add, mul).unwrap();
        assert_eq!(
            read_u32(&ctx, results.get("chained").unwrap()),
            vec![chained.bits()]
        );
    }
}

#[test]
fn upload_and_copy_keep_chunk_boundaries() {
    let ctx = ctx();
    let rows: Vec<[u32; 2]> = (0..50u32).map(|i| [i, i * i]).collect();
    let program = Program::default()
        .op(Upload::new("up", "uploaded", F::Uint32x2, &rows).with_chunk_lengths(vec![20, 0, 30]))
        .op(CopyVector::new("copy", "uploaded", "copied"))
        .op(Upload::new("empty", "nothing", F::Float32, &[] as &[f32]));
    let compiled = program.compile_both(&ctx, &["uploaded", "copied", "nothing"]);
    let results = run_both(&ctx, &compiled, Bindings::new());
    let flat: Vec<u32> = rows.iter().flatten().copied().collect();
    for name in ["uploaded", "copied"] {
        let v = results.get(name).unwrap();
        assert_eq!(v.chunk_lengths(), vec![20, 0, 30], "{name}");
        assert_eq!(read_u32(&ctx, v), flat, "{name}");
    }
    assert_eq!(results.get("nothing").unwrap().len(), 0);
    let d = results.lowering().decision("copy").unwrap();
    assert_eq!(
        d.nodes,
        vec!["copy-chunk-0".to_string(), "copy-chunk-2".to_string()]
    );

    // Rows that are not whole, and chunks that do not sum to the rows, are named errors.
    let mut bad = gpugraph_program::graph::Graph::new("bad");
    bad.add(Upload::new("torn", "t", F::Float32x3, &[1.0f32, 2.0]))
        .unwrap();
    let err = bad.compile(&ctx, CompileOptions::default()).err().unwrap();
    assert!(
        matches!(&err, ProgramError::Contract { operation, .. } if operation == "torn"),
        "{err}"
    );
    let mut bad = gpugraph_program::graph::Graph::new("bad");
    bad.add(Upload::new("split", "s", F::Float32, &[1.0f32, 2.0]).with_chunk_lengths(vec![1, 2]))
        .unwrap();
    let err = bad.compile(&ctx, CompileOptions::default()).err().unwrap();
    assert!(
        matches!(&err, ProgramError::InvalidShape { operation, value, .. } if operation == "split" && value == "s"),
        "{err}"
    );
}

#[test]
fn state_is_updated_in_place_across_runs() {
    let ctx = ctx();
    let mut r = rng(6);
    let program = Program::default()
        .input("x", ValueSpec::vector(F::Float32x2))
        .input("s", ValueSpec::scalar(ScalarType::Float32))
        .state("y", ValueSpec::vector(F::Float32x2))
        .op(VectorMadd::in_place("axpy", "x", "s", "y"))
        .op(DotProduct::new("norm", "y", "y", "yy"));
    let (full, simple) = program.compile_both(&ctx, &["yy"]);
    assert_eq!(
        full.contract("axpy").unwrap().values[2].access,
        gpugraph_program::operation::Access::ReadWrite
    );
    let n = 1500;
    let chunks = [700, 0, 800];
    let xs = random_f32(&mut r, n * 2);
    let y0 = random_f32(&mut r, n * 2);
    let x = upload(&ctx, F::Float32x2, &xs, &chunks);
    let y_full = upload(&ctx, F::Float32x2, &y0, &chunks);
    let y_simple = upload(&ctx, F::Float32x2, &y0, &chunks);
    let mut want = y0.clone();
    for (run, s) in [0.5f32, -2.0, 0.25].into_iter().enumerate() {
        let a = full
            .run(
                Bindings::new()
                    .vector("x", &x)
                    .float32("s", s)
                    .vector("y", &y_full),
                RunOptions::new(),
            )
            .unwrap();
        let b = simple
            .run(
                Bindings::new()
                    .vector("x", &x)
                    .float32("s", s)
                    .vector("y", &y_simple),
                RunOptions::new(),
            )
            .unwrap();
        let prev = want.clone();
        want = madd::cpu::madd(&xs, s, &prev);
        let got = read_f32(&ctx, &y_full);
        assert_eq!(
            got,
            read_f32(&ctx, &y_simple),
            "run {run}: Graph and SimpleGraph state differ"
        );
        assert_close(
            &got,
            &want,
            madd_tol(&xs, s, &prev),
            &format!("state after run {run}"),
        );
        want = got.clone();
        // The norm reads the updated state in the same run.
        let yy = read_f32(&ctx, a.get("yy").unwrap())[0] as f64;
        assert_eq!(
            read_u32(&ctx, a.get("yy").unwrap()),
            read_u32(&ctx, b.get("yy").unwrap())
        );
        assert!((yy - dot::cpu::dot(&got, &got)).abs() <= dot::cpu::error_bound(&got, &got));
    }
    // Read-write values require bindings.
    let err = full
        .run(
            Bindings::new().vector("x", &x).float32("s", 1.0),
            RunOptions::new(),
        )
        .unwrap_err();
    assert!(
        matches!(&err, ProgramError::MissingBinding { value, .. } if value == "y"),
        "{err}"
    );
}

#[test]
fn results_survive_later_runs_and_the_compiled_graph() {
    let ctx = ctx();
    let program = Program::default()
        .input("x", ValueSpec::vector(F::Float32))
        .input("s", ValueSpec::scalar(ScalarType::Float32))
        .op(VectorMadd::new("madd", "x", "s", "x", "y"))
        .op(DotProduct::new("dot", "y", "x", "d"))
        .op(ExpressionOperation::new("z", "y * d"));
    let (full, simple) = program.compile_both(&ctx, &["y", "d"]);
    let x1 = upload1(&ctx, F::Float32, &[1.0f32, 2.0, 3.0]);
    let x2 = upload1(&ctx, F::Float32, &[10.0f32; 1000]);
    for compiled in [Box::new(full) as Box<dyn Runner>, Box::new(simple)] {
        let first = compiled.run(&x1, 2.0);
        let second = compiled.run(&x2, 3.0);
        // Unselected intermediates ("z") are not returned.
        assert_eq!(first.names().collect::<Vec<_>>(), vec!["y", "d"]);
        drop(compiled);
        assert_eq!(read_f32(&ctx, first.get("y").unwrap()), vec![3.0, 6.0, 9.0]);
        assert_eq!(read_f32(&ctx, first.get("d").unwrap()), vec![42.0]);
        assert_eq!(second.get("y").unwrap().len(), 1000);
        assert_eq!(read_f32(&ctx, second.get("d").unwrap()), vec![400_000.0]);
    }
}

trait Runner {
    fn run(&self, x: &GpuVector, s: f32) -> gpugraph_program::graph::RunResults;
}
/// Both compiled kinds have the same inherent `run` (no shared trait to call it through).
macro_rules! impl_runner {
    ($($compiled:ty),*) => {$(
        impl Runner for $compiled {
            fn run(&self, x: &GpuVector, s: f32) -> gpugraph_program::graph::RunResults {
                self.run(
                    Bindings::new().vector("x", x).float32("s", s),
                    RunOptions::new(),
                )
                .unwrap()
            }
        }
    )*};
}
impl_runner!(
    gpugraph_program::graph::CompiledGraph,
    gpugraph_program::graph::CompiledSimpleGraph
);

#[test]
fn built_in_lowerings_record_their_decisions_and_cache_pipelines() {
    let ctx = ctx();
    let program = Program::default()
        .input("a", ValueSpec::vector(F::Float32))
        .op(DotProduct::new("dot", "a", "a", "d"))
        .op(VectorMadd::new("madd", "a", "d", "a", "y"));
    let (full, simple) = program.compile_both(&ctx, &["y"]);
    let a = upload1(&ctx, F::Float32, &vec![1.0f32; 5000]);
    let created = || {
        gpugraph_command::DeviceCache::for_device(&ctx.device)
            .stats()
            .pipelines_created
    };
    let before = created();
    for _ in 0..3 {
        full.run(Bindings::new().vector("a", &a), RunOptions::new())
            .unwrap();
    }
    // Pipelines compile once, in the first run: dot partials, dot finish, MADD.
    assert_eq!(created() - before, 3);
    let r = full
        .run(Bindings::new().vector("a", &a), RunOptions::new())
        .unwrap();
    assert_eq!(read_f32(&ctx, r.get("y").unwrap())[0], 5001.0);
    let d = r.lowering().decision("dot").unwrap();
    assert_eq!(d.realization, "two-pass workgroup reduction");
    assert_eq!(
        d.nodes,
        vec!["dot-partials".to_string(), "dot-finish".to_string()]
    );
    assert!(d.reason.contains("5000 components"), "{}", d.reason);
    let r = simple
        .run(Bindings::new().vector("a", &a), RunOptions::new())
        .unwrap();
    assert_eq!(r.submissions(), 2);
    let d = r.lowering().decision("madd").unwrap();
    assert!(
        d.realization.starts_with("evaluator pass"),
        "{}",
        d.realization
    );
    assert_eq!(
        simple
            .compilation()
            .lowering
            .decision("madd")
            .unwrap()
            .realization,
        "evaluator pass"
    );
}

#[test]
fn compaction_matches_the_oracle_and_its_count_feeds_an_expression() {
    use gpugraph_gpgpu::compact::cpu;
    let ctx = ctx();
    let mut r = rng(7);
    let program = Program::default()
        .input("values", ValueSpec::vector(F::Uint32))
        .input("flags", ValueSpec::vector(F::Uint32))
        .op(Compact::new("compact", "values", "flags", "kept", "count").with_overflow("overflow"))
        .op(
            Compact::new("bounded", "values", "flags", "first", "bcount")
                .with_capacity(10)
                .with_overflow("bover"),
        )
        .op(ExpressionOperation::new("twice", "float32(count) * 2"));
    let compiled = program.compile_both(
        &ctx,
        &[
            "kept", "count", "overflow", "first", "bcount", "bover", "twice",
        ],
    );
    for n in [0usize, 1, 255, 256, 4097, 10_000] {
        let chunks = uneven_chunks(&mut r, n, 3);
        let vals: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
        let flags: Vec<u32> = (0..n).map(|_| [0, 0, 1, 7][r.random_range(0..4)]).collect();
        let (v, f) = (
            upload(&ctx, F::Uint32, &vals, &chunks),
            upload(&ctx, F::Uint32, &flags, &chunks),
        );
        let results = run_both(
            &ctx,
            &compiled,
            Bindings::new().vector("values", &v).vector("flags", &f),
        );
        let want = cpu::compact(&vals, &flags, n);
        let count = read_u32(&ctx, results.get("count").unwrap());
        assert_eq!(count, vec![want.count], "n {n}");
        let kept = results.get("kept").unwrap();
        assert_eq!(
            kept.chunk_lengths(),
            v.chunk_lengths(),
            "capacity like the values"
        );
        assert_eq!(
            read_u32(&ctx, kept)[..want.written.len()],
            want.written[..],
            "n {n}"
        );
        assert_eq!(read_u32(&ctx, results.get("overflow").unwrap()), vec![0]);
        let bounded = cpu::compact(&vals, &flags, 10);
        let first = read_u32(&ctx, results.get("first").unwrap());
        assert_eq!(first[..bounded.written.len()], bounded.written[..], "n {n}");
        assert_eq!(
            read_u32(&ctx, results.get("bcount").unwrap()),
            vec![bounded.count]
        );
        assert_eq!(
            read_u32(&ctx, results.get("bover").unwrap()),
            vec![bounded.overflow as u32]
        );
        assert_eq!(
            read_f32(&ctx, results.get("twice").unwrap()),
            vec![want.count as f32 * 2.0]
        );
    }
}

#[test]
fn one_expression_operation_shared_by_graphs_with_different_formats() {
    let ctx = ctx();
    let op: std::sync::Arc<dyn gpugraph_program::operation::Operation> =
        std::sync::Arc::new(ExpressionOperation::new("y", "x * 2"));
    let mut narrow = gpugraph_program::graph::Graph::new("narrow");
    narrow
        .add_input("x", ValueSpec::vector(F::Float32))
        .unwrap();
    narrow.add_shared(op.clone()).unwrap();
    let mut wide = gpugraph_program::graph::Graph::new("wide");
    wide.add_input("x", ValueSpec::vector(F::Float32x3))
        .unwrap();
    wide.add_shared(op).unwrap();
    let narrow = narrow.compile(&ctx, CompileOptions::default()).unwrap();
    let wide = wide.compile(&ctx, CompileOptions::default()).unwrap();
    let x1 = upload1(&ctx, F::Float32, &[1.0f32, 2.0]);
    let x3 = upload1(&ctx, F::Float32x3, &[1.0f32, 2.0, 3.0]);
    let r = narrow
        .run(Bindings::new().vector("x", &x1), RunOptions::new())
        .unwrap();
    assert_eq!(read_f32(&ctx, r.get("y").unwrap()), vec![2.0, 4.0]);
    let r = wide
        .run(Bindings::new().vector("x", &x3), RunOptions::new())
        .unwrap();
    assert_eq!(r.get("y").unwrap().format(), F::Float32x3);
    assert_eq!(read_f32(&ctx, r.get("y").unwrap()), vec![2.0, 4.0, 6.0]);
}
