//! The analysis workflow against a plain-Rust oracle of the whole analysis on random chunked
//! tables (empty chunks, nulls, NaN and infinities, integer and text columns), with filters
//! of every kind, empty selections, literal and GPU edges, widened grid domains and both
//! summations. The staging buffer is poisoned before every run, so a result the graph does
//! not write fails.

use std::collections::HashMap;

use gpugraph_command::{GpuContext, VectorFormat};
use gpugraph_gpgpu::grid::cpu::cell_of;
use gpugraph_gpgpu::histogram::cpu::{edge_bin, edges_valid};
use gpugraph_gpgpu::{GridDomain, Summation};
use gpugraph_program::workflow::analyze::{
    cpu, Analysis, AnalyzeColumn, AnalyzeError, AnalyzeInput, AnalyzeResults, AnalyzeSpec, Bins,
    CompareOp, FilterValue, GridSize, RowFilter,
};
use gpugraph_tables::GpuVector;
use gpugraph_testing::ctx;
use rand::{Rng, SeedableRng};

const GROUPS: [&str; 5] = ["a", "b", "c", "d", "e"];

/// One host column: raw bits per row, validity (None: no mask), format.
#[derive(Clone)]
struct HostColumn {
    bits: Vec<u32>,
    valid: Option<Vec<u32>>,
    format: VectorFormat,
    text: bool,
}

impl HostColumn {
    fn is_valid(&self, i: usize) -> bool {
        self.valid.as_ref().is_none_or(|v| v[i] != 0)
    }
    /// The value as float32 (the workflow's conversion: round to nearest even).
    fn float(&self, i: usize) -> f32 {
        let b = self.bits[i];
        match self.format {
            VectorFormat::Float32 => f32::from_bits(b),
            VectorFormat::Sint32 => b as i32 as f32,
            _ => b as f32,
        }
    }
    /// The exact value (integers exactly, floats widened).
    fn exact(&self, i: usize) -> f64 {
        let b = self.bits[i];
        match self.format {
            VectorFormat::Float32 => f32::from_bits(b) as f64,
            VectorFormat::Sint32 => b as i32 as f64,
            _ => b as f64,
        }
    }
}

struct Table {
    chunks: Vec<usize>,
    columns: HashMap<&'static str, HostColumn>,
}

fn float_value(rng: &mut impl Rng) -> f32 {
    match rng.random_range(0..40) {
        0 => f32::NAN,
        1 => f32::INFINITY,
        2 => f32::NEG_INFINITY,
        3 => -0.0,
        // Quarters of small integers: every sum the oracle forms is exact in float32.
        _ => rng.random_range(-400i32..=400) as f32 * 0.25,
    }
}

fn validity(rng: &mut rand::rngs::StdRng, n: usize) -> Option<Vec<u32>> {
    if rng.random_bool(0.2) {
        return None;
    }
    Some((0..n).map(|_| u32::from(!rng.random_bool(0.15))).collect())
}

fn column(
    rng: &mut rand::rngs::StdRng,
    n: usize,
    format: VectorFormat,
    text: bool,
    gen: &dyn Fn(&mut rand::rngs::StdRng) -> u32,
) -> HostColumn {
    let valid = validity(rng, n);
    let bits = (0..n)
        .map(|i| {
            let x = gen(rng);
            // Null slots hold zero, as the Arrow upload writes them.
            if valid.as_ref().is_some_and(|v| v[i] == 0) {
                0
            } else {
                x
            }
        })
        .collect();
    HostColumn {
        bits,
        valid,
        format,
        text,
    }
}

fn random_table(rng: &mut impl Rng, chunks: Vec<usize>) -> Table {
    let n: usize = chunks.iter().sum();
    let mut r = rand::rngs::StdRng::seed_from_u64(rng.random());
    let mut columns = HashMap::new();
    let float = |r: &mut rand::rngs::StdRng| float_value(r).to_bits();
    columns.insert("v", column(&mut r, n, VectorFormat::Float32, false, &float));
    columns.insert("x", column(&mut r, n, VectorFormat::Float32, false, &float));
    columns.insert(
        "i",
        column(&mut r, n, VectorFormat::Sint32, false, &|r| {
            r.random_range(-60i32..=60) as u32
        }),
    );
    columns.insert(
        "u",
        column(&mut r, n, VectorFormat::Uint32, false, &|r| {
            r.random_range(0..20)
        }),
    );
    columns.insert(
        "g",
        column(&mut r, n, VectorFormat::Uint32, true, &|r| {
            r.random_range(0..GROUPS.len() as u32)
        }),
    );
    Table { chunks, columns }
}

fn upload<T: bytemuck::Pod>(
    ctx: &GpuContext,
    data: &[T],
    chunks: &[usize],
    f: VectorFormat,
) -> GpuVector {
    let mut parts = Vec::new();
    let mut at = 0;
    for &c in chunks {
        parts.push(&data[at..at + c]);
        at += c;
    }
    GpuVector::upload_chunks(ctx, &parts, f).unwrap()
}

// ---------------------------------------------------------------- the oracle

fn passes(table: &Table, f: &RowFilter, i: usize) -> bool {
    let c = &table.columns[f.column.as_str()];
    if !c.is_valid(i) {
        return false;
    }
    match &f.value {
        FilterValue::Text(s) => {
            let code = GROUPS.iter().position(|g| g == s);
            let eq = code == Some(c.bits[i] as usize);
            if f.op == CompareOp::Eq {
                eq
            } else {
                !eq
            }
        }
        FilterValue::Number(t) => {
            // Float columns compare against the threshold rounded to float32.
            let (x, t) = match c.format {
                VectorFormat::Float32 => (c.exact(i), *t as f32 as f64),
                _ => (c.exact(i), *t),
            };
            if x.is_nan() {
                return false;
            }
            match f.op {
                CompareOp::Lt => x < t,
                CompareOp::Le => x <= t,
                CompareOp::Gt => x > t,
                CompareOp::Ge => x >= t,
                CompareOp::Eq => x == t,
                CompareOp::Ne => x != t,
            }
        }
    }
}

fn extent(values: impl Iterator<Item = f32>) -> [f32; 2] {
    let (mut lo, mut hi) = (f32::NAN, f32::NAN);
    for v in values.filter(|v| v.is_finite()) {
        if lo.is_nan() || v < lo {
            lo = v;
        }
        if hi.is_nan() || v > hi {
            hi = v;
        }
    }
    [lo, hi]
}

fn same_pair(a: Option<[f32; 2]>, b: [f32; 2], what: &str) {
    let a = a.unwrap_or_else(|| panic!("{what}: no result"));
    for k in 0..2 {
        assert!(
            a[k] == b[k] || (a[k].is_nan() && b[k].is_nan()),
            "{what}: GPU {a:?}, oracle {b:?}"
        );
    }
}

/// The cells a point at unit position (tx, ty) may land in when each coordinate is off by up
/// to 3 ulp (WGSL's 2.5 ulp division bound, then clamped to [0, 1] as positions.wgsl does);
/// empty when the exact point is outside the grid (NaN).
fn edge_candidates(d: &GridDomain, tx: f32, ty: f32) -> Vec<u32> {
    let Some(_) = cell_of(d, tx, ty) else {
        return Vec::new();
    };
    let around = |t: f32| -> [f32; 2] {
        let step = |t: f32, k: i32| f32::from_bits((t.to_bits() as i32 + k).max(0) as u32);
        let lo = if t > 0.0 { step(t, -3) } else { t };
        [lo.clamp(0.0, 1.0), step(t, 3).clamp(0.0, 1.0)]
    };
    let mut out = Vec::new();
    for x in around(tx) {
        for y in around(ty) {
            if let Some(c) = cell_of(d, x, y) {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    // Cells are monotone along each axis, so the corners' cells bound every candidate; add
    // the ones between them (at most a 2 x 2 block for 3 ulp).
    let (xs, ys): (Vec<u32>, Vec<u32>) = out.iter().map(|c| (c % d.nx, c / d.nx)).unzip();
    let (x0, x1) = (*xs.iter().min().unwrap(), *xs.iter().max().unwrap());
    let (y0, y1) = (*ys.iter().min().unwrap(), *ys.iter().max().unwrap());
    (y0..=y1)
        .flat_map(|y| (x0..=x1).map(move |x| y * d.nx + x))
        .collect()
}

fn close(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-5 * b.abs().max(1.0)
}

/// Checks every result of `r` against the plain loop over `table`.
fn check(table: &Table, spec: &AnalyzeSpec, r: &AnalyzeResults) {
    let n: usize = table.chunks.iter().sum();
    let selected: Vec<bool> = (0..n)
        .map(|i| spec.filters.iter().all(|f| passes(table, f, i)))
        .collect();
    let sel_count = selected.iter().filter(|&&s| s).count() as u64;
    if spec.filters.is_empty() {
        assert_eq!(r.selected, None);
    } else {
        assert_eq!(r.selected, Some(sel_count), "selected rows");
    }
    let value = spec.value.as_deref().map(|v| &table.columns[v]);
    if let Some(vc) = value {
        let rows: Vec<usize> = (0..n).filter(|&i| selected[i] && vc.is_valid(i)).collect();
        let ext = extent(rows.iter().map(|&i| vc.float(i)));
        same_pair(r.extent, ext, "value extent");
        let nonfinite = rows.iter().filter(|&&i| !vc.float(i).is_finite()).count() as u64;
        assert_eq!(r.nonfinite, nonfinite, "nonfinite");
        let edges = match &spec.bins {
            Bins::Uniform(b) => {
                let want = cpu::uniform_edges(ext, *b);
                assert_eq!(r.edges.len(), want.len());
                for (g, w) in r.edges.iter().zip(&want) {
                    assert!(close(*g, *w), "edges: GPU {:?}, oracle {want:?}", r.edges);
                }
                r.edges.clone()
            }
            Bins::Edges(e) => {
                assert_eq!(&r.edges, e);
                e.clone()
            }
        };
        let bins = edges.len() - 1;
        let mut counts = vec![0u32; bins];
        let mut ignored = 0u64;
        let valid_edges = edges_valid(&edges);
        if valid_edges {
            for &i in &rows {
                match edge_bin(&edges, vc.float(i)) {
                    Some(b) => counts[b as usize] += 1,
                    None => ignored += 1,
                }
            }
        }
        assert_eq!(r.invalid_edges, !valid_edges, "invalid edges flag");
        assert_eq!(r.counts, counts, "histogram counts");
        assert_eq!(r.hist_ignored, ignored, "histogram ignored");
        let cum: Vec<u32> = counts
            .iter()
            .scan(0, |s, &c| {
                *s += c;
                Some(*s)
            })
            .collect();
        assert_eq!(r.cumulative, cum, "cumulative");
    }
    if let Some(g) = spec.group.as_deref() {
        let gc = &table.columns[g];
        let mut count = vec![0u32; GROUPS.len()];
        let mut rows = vec![0u32; GROUPS.len()];
        let mut sum = vec![0f64; GROUPS.len()];
        for i in (0..n).filter(|&i| selected[i] && gc.is_valid(i)) {
            let k = gc.bits[i] as usize;
            rows[k] += 1;
            if let Some(vc) = value {
                if !(vc.is_valid(i) && vc.float(i).is_finite()) {
                    continue;
                }
                sum[k] += vc.float(i) as f64;
            }
            count[k] += 1;
        }
        assert_eq!(r.group_count, count, "group counts");
        if value.is_some() && !spec.filters.is_empty() {
            assert_eq!(r.group_rows, rows, "group rows");
        } else {
            assert!(r.group_rows.is_empty());
        }
        if value.is_some() {
            for k in 0..GROUPS.len() {
                let want = (sum[k] / count[k] as f64) as f32;
                assert!(
                    close(r.group_mean[k], want),
                    "group {k} mean: GPU {}, oracle {want}",
                    r.group_mean[k]
                );
            }
        }
    }
    if let Some((x, y)) = &spec.xy {
        let (xc, yc) = (&table.columns[x.as_str()], &table.columns[y.as_str()]);
        // The cell means average the grid value z, a column of its own.
        let z = spec.grid_value.as_deref().map(|c| &table.columns[c]);
        let rows: Vec<usize> = (0..n)
            .filter(|&i| {
                selected[i]
                    && xc.is_valid(i)
                    && yc.is_valid(i)
                    && xc.float(i).is_finite()
                    && yc.float(i).is_finite()
            })
            .collect();
        let xe = extent(rows.iter().map(|&i| xc.float(i)));
        let ye = extent(rows.iter().map(|&i| yc.float(i)));
        same_pair(r.x_extent, xe, "x extent");
        same_pair(r.y_extent, ye, "y extent");
        let d = GridDomain {
            x_min: 0.0,
            x_max: 1.0,
            y_min: 0.0,
            y_max: 1.0,
            nx: spec.grid.nx,
            ny: spec.grid.ny,
        };
        let cells = d.cells() as usize;
        // WGSL bounds `x / y` only to 2.5 ulp (NVIDIA divides through a reciprocal), so a point
        // whose exact unit position lies within 3 ulp of a cell edge may land in either cell:
        // such rows are "uncertain" and only bound the counts of the cells they may reach.
        let mut sure = vec![0u32; cells];
        let mut reach = vec![0u32; cells];
        let mut sure_values = vec![0u32; cells];
        let mut reach_values = vec![0u32; cells];
        let mut vsum = vec![0f64; cells];
        let mut total = 0u32;
        let mut total_values = 0u32;
        for &i in &rows {
            let tx = cpu::unit(xc.float(i), xe, spec.grid_widen[0]);
            let ty = cpu::unit(yc.float(i), ye, spec.grid_widen[1]);
            let candidates = edge_candidates(&d, tx, ty);
            if candidates.is_empty() {
                continue;
            }
            let has_value = z.is_some_and(|zc| zc.is_valid(i) && zc.float(i).is_finite());
            total += 1;
            total_values += u32::from(has_value);
            for &c in &candidates {
                reach[c as usize] += 1;
                reach_values[c as usize] += u32::from(has_value);
            }
            if let [c] = candidates[..] {
                sure[c as usize] += 1;
                if has_value {
                    sure_values[c as usize] += 1;
                    vsum[c as usize] += z.map_or(0.0, |zc| zc.float(i) as f64);
                }
            }
        }
        let within = |got: &[u32], lo: &[u32], hi: &[u32], sum: u32, what: &str| {
            assert_eq!(got.len(), cells, "{what}");
            assert_eq!(got.iter().sum::<u32>(), sum, "{what}: total");
            for c in 0..cells {
                assert!(
                    lo[c] <= got[c] && got[c] <= hi[c],
                    "{what}, cell {c}: GPU {}, oracle {}..={}",
                    got[c],
                    lo[c],
                    hi[c]
                );
            }
        };
        within(&r.grid_count, &sure, &reach, total, "grid counts");
        if z.is_some() {
            within(
                &r.grid_value_count,
                &sure_values,
                &reach_values,
                total_values,
                "grid value counts",
            );
            for c in (0..cells).filter(|&c| reach[c] == sure[c]) {
                let want = (vsum[c] / sure_values[c] as f64) as f32;
                assert!(
                    close(r.grid_mean[c], want),
                    "cell {c} mean: GPU {}, oracle {want}",
                    r.grid_mean[c]
                );
            }
        } else {
            assert!(r.grid_value_count.is_empty() && r.grid_mean.is_empty());
        }
    }
}

// ---------------------------------------------------------------- running

struct Uploaded {
    vectors: HashMap<&'static str, (GpuVector, Option<GpuVector>)>,
    dictionary: Vec<String>,
    chunks: Vec<u64>,
}

fn upload_table(ctx: &GpuContext, t: &Table) -> Uploaded {
    let mut vectors = HashMap::new();
    for (name, c) in &t.columns {
        let values = upload(ctx, &c.bits, &t.chunks, c.format);
        let valid = c
            .valid
            .as_ref()
            .map(|v| upload(ctx, v, &t.chunks, VectorFormat::Uint32));
        vectors.insert(*name, (values, valid));
    }
    Uploaded {
        vectors,
        dictionary: GROUPS.iter().map(|s| s.to_string()).collect(),
        chunks: t.chunks.iter().map(|&c| c as u64).collect(),
    }
}

fn input<'a>(t: &Table, u: &'a Uploaded) -> AnalyzeInput<'a> {
    let columns = u
        .vectors
        .iter()
        .map(|(name, (values, valid))| {
            let text = t.columns[name].text;
            (
                name.to_string(),
                AnalyzeColumn {
                    values,
                    validity: valid.as_ref(),
                    dictionary: text.then_some(u.dictionary.as_slice()),
                },
            )
        })
        .collect();
    AnalyzeInput {
        columns,
        chunk_rows: u.chunks.clone(),
    }
}

fn run(ctx: &GpuContext, t: &Table, spec: &AnalyzeSpec) -> AnalyzeResults {
    let u = upload_table(ctx, t);
    let mut analysis = Analysis::build(&ctx.device, &input(t, &u), spec).expect("build");
    gpugraph_testing::poison(ctx, analysis.staging());
    analysis.run(&ctx.device, &ctx.queue).expect("run")
}

fn spec(rng: &mut impl Rng) -> AnalyzeSpec {
    let value = ["v", "i", "u"][rng.random_range(0..3)];
    let filters = (0..rng.random_range(0..3))
        .map(|_| match rng.random_range(0..4) {
            0 => RowFilter {
                column: "v".into(),
                op: [CompareOp::Lt, CompareOp::Ge, CompareOp::Ne, CompareOp::Eq]
                    [rng.random_range(0..4)],
                value: FilterValue::Number(rng.random_range(-40..40) as f64 * 0.5),
            },
            1 => RowFilter {
                column: "i".into(),
                op: [CompareOp::Le, CompareOp::Gt, CompareOp::Ne][rng.random_range(0..3)],
                value: FilterValue::Number(
                    rng.random_range(-50..50) as f64 + 0.5 * rng.random_range(0..2) as f64,
                ),
            },
            2 => RowFilter {
                column: "u".into(),
                op: CompareOp::Ge,
                value: FilterValue::Number(rng.random_range(0..25) as f64),
            },
            _ => RowFilter {
                column: "g".into(),
                op: [CompareOp::Eq, CompareOp::Ne][rng.random_range(0..2)],
                value: FilterValue::Text(["a", "c", "zz"][rng.random_range(0..3)].into()),
            },
        })
        .collect();
    AnalyzeSpec {
        value: Some(value.into()),
        xy: Some(("x".into(), ["i", "v"][rng.random_range(0..2)].into())),
        group: Some("g".into()),
        grid_value: [None, Some(value), Some("u"), Some("i"), Some("v")][rng.random_range(0..5)]
            .map(String::from),
        filters,
        bins: if rng.random_bool(0.3) {
            Bins::Edges(vec![-50.0, -10.0, 0.0, 0.5, 20.0])
        } else {
            Bins::Uniform(rng.random_range(1..40))
        },
        grid: GridSize {
            nx: rng.random_range(1..9),
            ny: rng.random_range(1..9),
        },
        grid_widen: [rng.random_bool(0.5), rng.random_bool(0.5)],
        summation: if rng.random_bool(0.5) {
            Summation::Atomic
        } else {
            Summation::Deterministic
        },
    }
}

#[test]
fn random_tables_match_the_oracle() {
    let ctx = ctx();
    let layouts: [&[usize]; 6] = [
        &[1],
        &[300],
        &[0, 37, 1, 0, 250],
        &[1023, 1025],
        &[5000],
        &[17, 0],
    ];
    for (seed, chunks) in layouts.iter().cycle().take(12).enumerate() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed as u64 * 7919 + 1);
        let t = random_table(&mut rng, chunks.to_vec());
        let s = spec(&mut rng);
        let r = run(&ctx, &t, &s);
        check(&t, &s, &r);
    }
}

#[test]
fn partial_specs_and_empty_selections() {
    let ctx = ctx();
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    let mut t = random_table(&mut rng, vec![100, 0, 55]);
    // NaN, infinities and nulls at known rows of the filtered column.
    let v = t.columns.get_mut("v").expect("v");
    for (i, x) in [
        (3, f32::NAN),
        (4, f32::INFINITY),
        (120, f32::NAN),
        (7, -0.0),
    ] {
        v.bits[i] = x.to_bits();
        if let Some(valid) = &mut v.valid {
            valid[i] = 1;
        }
    }
    let nothing = RowFilter {
        column: "u".into(),
        op: CompareOp::Gt,
        value: FilterValue::Number(1000.0),
    };
    let base = AnalyzeSpec {
        value: None,
        xy: None,
        group: None,
        grid_value: None,
        filters: vec![],
        bins: Bins::Uniform(8),
        grid: GridSize { nx: 3, ny: 2 },
        grid_widen: [false; 2],
        summation: Summation::Atomic,
    };
    let specs = [
        AnalyzeSpec {
            value: Some("v".into()),
            filters: vec![nothing.clone()],
            ..base.clone()
        },
        AnalyzeSpec {
            group: Some("g".into()),
            filters: vec![nothing.clone()],
            ..base.clone()
        },
        AnalyzeSpec {
            value: Some("i".into()),
            group: Some("g".into()),
            xy: Some(("x".into(), "v".into())),
            grid_value: Some("i".into()),
            filters: vec![nothing],
            ..base.clone()
        },
        AnalyzeSpec {
            group: Some("g".into()),
            ..base.clone()
        },
        AnalyzeSpec {
            xy: Some(("u".into(), "i".into())),
            ..base.clone()
        },
        AnalyzeSpec {
            filters: vec![RowFilter {
                column: "g".into(),
                op: CompareOp::Ne,
                value: FilterValue::Text("b".into()),
            }],
            ..base.clone()
        },
        // `!=` on a float column with NaN rows (which never pass) and a grid over them.
        AnalyzeSpec {
            value: Some("x".into()),
            group: Some("g".into()),
            xy: Some(("x".into(), "v".into())),
            grid_value: Some("x".into()),
            filters: vec![RowFilter {
                column: "v".into(),
                op: CompareOp::Ne,
                value: FilterValue::Number(0.5),
            }],
            ..base.clone()
        },
    ];
    for s in &specs {
        let r = run(&ctx, &t, s);
        check(&t, s, &r);
    }
    // The empty selection really is empty: no value, no edges, nothing counted.
    let r = run(&ctx, &t, &specs[0]);
    assert_eq!(r.selected, Some(0));
    assert!(r.invalid_edges && r.counts.iter().all(|&c| c == 0));
}

#[test]
fn errors_name_the_column_or_filter() {
    let ctx = ctx();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let t = random_table(&mut rng, vec![10, 20]);
    let u = upload_table(&ctx, &t);
    let base = AnalyzeSpec {
        value: None,
        xy: None,
        group: None,
        grid_value: None,
        filters: vec![],
        bins: Bins::Uniform(8),
        grid: GridSize { nx: 3, ny: 2 },
        grid_widen: [false; 2],
        summation: Summation::Atomic,
    };
    let build = |s: &AnalyzeSpec| {
        Analysis::build(&ctx.device, &input(&t, &u), s)
            .err()
            .expect("an error")
    };
    let e = build(&AnalyzeSpec {
        value: Some("nope".into()),
        ..base.clone()
    });
    assert!(
        matches!(&e, AnalyzeError::MissingColumn { column } if column == "nope"),
        "{e}"
    );
    let e = build(&AnalyzeSpec {
        filters: vec![RowFilter {
            column: "g".into(),
            op: CompareOp::Lt,
            value: FilterValue::Text("b".into()),
        }],
        ..base.clone()
    });
    assert!(e.to_string().contains("'g' is text"), "{e}");
    let e = build(&AnalyzeSpec {
        filters: vec![RowFilter {
            column: "v".into(),
            op: CompareOp::Lt,
            value: FilterValue::Text("b".into()),
        }],
        ..base.clone()
    });
    assert!(matches!(e, AnalyzeError::FilterValue { .. }), "{e}");
    let e = build(&AnalyzeSpec {
        group: Some("v".into()),
        ..base.clone()
    });
    assert!(
        matches!(&e, AnalyzeError::GroupNotText { column } if column == "v"),
        "{e}"
    );
    let e = build(&AnalyzeSpec {
        value: Some("v".into()),
        bins: Bins::Edges(vec![1.0]),
        ..base.clone()
    });
    assert!(matches!(e, AnalyzeError::Bins { .. }), "{e}");
    let mut huge = input(&t, &u);
    huge.chunk_rows = vec![u32::MAX as u64, 1];
    let e = Analysis::build(&ctx.device, &huge, &base)
        .err()
        .expect("an error");
    assert!(
        matches!(e, AnalyzeError::TooManyRows { rows } if rows == 1 << 32),
        "{e}"
    );
    let mut bad = input(&t, &u);
    bad.chunk_rows = vec![30];
    let e = Analysis::build(
        &ctx.device,
        &bad,
        &AnalyzeSpec {
            value: Some("v".into()),
            ..base.clone()
        },
    )
    .err()
    .expect("an error");
    assert!(
        matches!(&e, AnalyzeError::ChunkMismatch { column, .. } if column == "v"),
        "{e}"
    );
}

/// A second build of the same shape creates no pipeline: every kernel, expression kernels
/// included, comes from the device's one pipeline cache.
#[test]
fn a_second_build_creates_no_pipeline() {
    let ctx = ctx();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let t = random_table(&mut rng, vec![64, 64]);
    let u = upload_table(&ctx, &t);
    let mut s = spec(&mut rng);
    s.filters = vec![RowFilter {
        column: "i".into(),
        op: CompareOp::Gt,
        value: FilterValue::Number(3.0),
    }];
    let cache = gpugraph_command::DeviceCache::for_device(&ctx.device);
    drop(Analysis::build(&ctx.device, &input(&t, &u), &s).unwrap());
    let before = cache.stats().pipelines_created;
    // Another threshold: a scalar, not a new shader.
    s.filters[0].value = FilterValue::Number(-7.0);
    drop(Analysis::build(&ctx.device, &input(&t, &u), &s).unwrap());
    assert_eq!(cache.stats().pipelines_created, before);
}

/// The heatmap of a third column: cell means of z (here uint32 `u`, then sint32 `i`) over an
/// x × y grid whose axes are other columns, with no value column at all, and z apart from
/// a value column; checked against the oracle's per-cell mean of z. A build that averaged
/// the value or y instead fails the means.
#[test]
fn grid_means_average_a_third_column() {
    let ctx = ctx();
    let mut rng = rand::rngs::StdRng::seed_from_u64(23);
    let t = random_table(&mut rng, vec![700, 0, 333]);
    let base = AnalyzeSpec {
        value: None,
        xy: Some(("x".into(), "v".into())),
        group: None,
        grid_value: Some("u".into()),
        filters: vec![],
        bins: Bins::Uniform(8),
        grid: GridSize { nx: 4, ny: 3 },
        grid_widen: [false; 2],
        summation: Summation::Atomic,
    };
    let with_value = AnalyzeSpec {
        value: Some("v".into()),
        grid_value: Some("i".into()),
        summation: Summation::Deterministic,
        ..base.clone()
    };
    for s in [&base, &with_value] {
        let r = run(&ctx, &t, s);
        check(&t, s, &r);
        assert_eq!(r.grid_mean.len(), 12);
        assert!(
            r.grid_mean.iter().any(|m| m.is_finite()),
            "{:?}",
            r.grid_mean
        );
    }
    // z is not y: the means of `i` differ from the cell means of y (`v`) somewhere.
    let r = run(&ctx, &t, &with_value);
    let y_means = run(
        &ctx,
        &t,
        &AnalyzeSpec {
            grid_value: Some("v".into()),
            ..with_value.clone()
        },
    );
    assert!(
        r.grid_mean
            .iter()
            .zip(&y_means.grid_mean)
            .any(|(a, b)| a.is_finite() && b.is_finite() && a != b),
        "z means equal the y means"
    );
}
