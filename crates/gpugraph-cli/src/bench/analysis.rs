//! `bench sort|reduce|histogram|group`: the sort family and the analysis primitives over
//! imported buffers, checked against their CPU oracles once, then timed like every
//! throughput case (GPU timestamps, copy floor of the same traffic).

use anyhow::{bail, Result};
use gpugraph_command::{CommandGraph, VectorFormat};
use gpugraph_gpgpu::group::{AggregateOutputs, GroupAggregation};
use gpugraph_gpgpu::histogram::{cpu as histogram_cpu, Histogram, HistogramBins};
use gpugraph_gpgpu::kernel::PolicySpec;
use gpugraph_gpgpu::reduce::{cpu as reduce_cpu, ReduceOp, ReducePolicy, Reduction};
use gpugraph_gpgpu::sort::cpu as sort_cpu;
use gpugraph_gpgpu::{KeyType, Sort, SortOptions, SortPolicy};
use rand::{Rng, SeedableRng};

use super::primitives::{random_words, Case};
use super::throughput::check_equal;
use crate::gpu::{import, import_as, Gpu};

fn random_unit_floats(n: u64, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<f32>()).collect()
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// The sort variants named by `--sort-policy` (`None` = the device default, label "": no spec,
/// or the spec `default`).
pub fn sort_variants(gpu: &Gpu, specs: &[String]) -> Result<Vec<(Option<SortPolicy>, String)>> {
    if specs.is_empty() {
        return Ok(vec![(None, String::new())]);
    }
    let limits = gpu.device().limits();
    specs
        .iter()
        .map(|spec| {
            if spec.trim() == "default" {
                return Ok((None, String::new()));
            }
            let mut p = SortPolicy::for_gpu(gpu.device());
            p.apply(spec)
                .map_err(|e| anyhow::anyhow!("--sort-policy '{spec}': {e}"))?;
            p.validate(&limits)
                .map_err(|e| anyhow::anyhow!("--sort-policy '{spec}': {e}"))?;
            Ok((Some(p), format!("[{spec}]")))
        })
        .collect()
}

/// The op of float32 keys sorted descending (peers: `torch.sort(descending=True,
/// stable=True)`, `cupy.sort` of the negated keys).
pub const SORT_F32_DESC: &str = "sort-keys-f32-desc";

/// Bytes per row each node of a sort case moves, for the per-node floors: the histogram reads
/// the keys (4), a digit pass reads and writes keys (8) and values (16 with values), the key
/// transforms read and write the keys (8). Other nodes (the one-workgroup path) are left out.
pub fn sort_node_bytes(op: &str, node: &str) -> Option<f64> {
    let pairs = op.starts_with("sort-pairs");
    let (_, stage) = node.rsplit_once('.')?;
    match stage {
        "histogram" => Some(4.0),
        "encode" | "decode" => Some(8.0),
        s if s.starts_with("pass") => Some(if pairs { 16.0 } else { 8.0 }),
        _ => None,
    }
}

/// `bench sort`: keys-only (36 bytes per key at the 8-bit one-sweep floor), pairs (68) and
/// float32 keys descending (52: the keys-only passes plus the encode and decode nodes), once
/// per `--sort-policy` variant.
pub fn sort_cases(
    gpu: &Gpu,
    n: u64,
    variants: &[(Option<SortPolicy>, String)],
) -> Result<Vec<Case>> {
    let keys = random_words(n, u32::MAX, 7);
    let rows: Vec<u32> = (0..n as u32).collect();
    let kb = gpu.upload("sort-keys", &keys);
    let vb = gpu.upload("sort-values", &rows);
    let (want_k, want_v) = sort_cpu::sort_pairs(&keys, &rows);
    // Finite floats of both signs over many magnitudes (no NaNs: the peers' orders agree).
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let floats: Vec<u32> = (0..n)
        .map(|_| ((rng.random::<f32>() - 0.5) * 2e4).to_bits())
        .collect();
    let fb = gpu.upload("sort-f32-keys", &floats);
    let desc = SortOptions::descending();
    let want_f = std::rc::Rc::new(sort_cpu::sort_keys_typed(&floats, KeyType::Float32, desc));
    drop(floats);
    let mut cases = Vec::new();
    for (policy, label) in variants {
        for pairs in [false, true] {
            let out_k = gpu.upload("sorted-keys", &vec![0xDEAD_BEEF; n as usize]);
            let out_v = gpu.upload("sorted-values", &vec![0xDEAD_BEEF; n as usize]);
            let mut g = CommandGraph::new("bench-sort", gpu.device());
            let op = format!("{}{label}", if pairs { "sort-pairs" } else { "sort-keys" });
            let k = import(&mut g, "keys", &kb, n)?;
            let sk = import(&mut g, "sorted-keys", &out_k, n)?;
            let mut sort = if pairs {
                let v = import(&mut g, "values", &vb, n)?;
                let sv = import(&mut g, "sorted-values", &out_v, n)?;
                Sort::pairs(op.clone(), k, v, sk, sv)
            } else {
                Sort::keys(op.clone(), k, sk)
            };
            sort.policy = *policy;
            sort.add_to_graph(&mut g)?;
            let (want_k, want_v, what) = (want_k.clone(), want_v.clone(), op.clone());
            cases.push(Case {
                op,
                bytes_per_element: if pairs { 68.0 } else { 36.0 },
                written_bytes_per_element: if pairs { 32.0 } else { 16.0 },
                graph: g.compile()?,
                check: Box::new(move |gpu| {
                    check_equal(&what, &gpu.read_back(&out_k, n)?, &want_k)?;
                    if pairs {
                        check_equal(&what, &gpu.read_back(&out_v, n)?, &want_v)?;
                    }
                    Ok(())
                }),
            });
        }
        let out_k = gpu.upload("sorted-keys", &vec![0xDEAD_BEEF; n as usize]);
        let mut g = CommandGraph::new("bench-sort", gpu.device());
        let op = format!("{SORT_F32_DESC}{label}");
        let k = import_as(&mut g, "keys", &fb, VectorFormat::Float32, n)?;
        let sk = import_as(&mut g, "sorted-keys", &out_k, VectorFormat::Float32, n)?;
        Sort {
            policy: *policy,
            ..Sort::keys(op.clone(), k, sk)
        }
        .add_to_graph_with(&mut g, desc)?;
        let (want, what) = (want_f.clone(), op.clone());
        cases.push(Case {
            op,
            bytes_per_element: 52.0,
            written_bytes_per_element: 24.0,
            graph: g.compile()?,
            check: Box::new(move |gpu| check_equal(&what, &gpu.read_back(&out_k, n)?, &want)),
        });
    }
    Ok(cases)
}

/// `bench reduce`: float32 sum and extent, uint32 sum (4 bytes per element read).
/// The reduction variants named by `--reduce-policy`: `None` (label "") for the device's
/// default ([`ReducePolicy::for_device`]: no spec, or the spec `default`).
pub fn reduce_variants(specs: &[String]) -> Result<Vec<(Option<ReducePolicy>, String)>> {
    if specs.is_empty() {
        return Ok(vec![(None, String::new())]);
    }
    specs
        .iter()
        .map(|spec| {
            if spec.trim() == "default" {
                return Ok((None, String::new()));
            }
            let p: ReducePolicy = spec
                .parse()
                .map_err(|e| anyhow::anyhow!("--reduce-policy '{spec}': {e}"))?;
            Ok((Some(p), format!("[{spec}]")))
        })
        .collect()
}

/// `bench reduce`: float sum, float extent and u32 sum, each once per policy variant.
pub fn reduce_cases(
    gpu: &Gpu,
    n: u64,
    variants: &[(Option<ReducePolicy>, String)],
) -> Result<Vec<Case>> {
    let device_policy = ReducePolicy::for_device(gpu.device());
    let floats = random_unit_floats(n, 8);
    let words = random_words(n, 1 << 20, 9);
    let fb = gpu.upload("reduce-f32", &bits(&floats));
    let ub = gpu.upload("reduce-u32", &words);
    let want_f = reduce_cpu::reduce_f32(&floats, None);
    let want_u = reduce_cpu::reduce_u32(&words, None);
    let mut cases = Vec::new();
    let ops = [
        (ReduceOp::Sum, "reduce-sum-f32"),
        (ReduceOp::Extent, "reduce-extent-f32"),
        (ReduceOp::Sum, "reduce-sum-u32"),
    ];
    for ((op, name), (policy, label)) in variants
        .iter()
        .flat_map(|v| ops.iter().map(move |o| (*o, v)))
    {
        let is_u32 = name.ends_with("u32");
        let out = gpu.upload("reduce-out", &[0xDEAD_BEEF; 4]);
        let mut g = CommandGraph::new("bench-reduce", gpu.device());
        let input = if is_u32 {
            import(&mut g, "in", &ub, n)?
        } else {
            import_as(&mut g, "in", &fb, VectorFormat::Float32, n)?
        };
        let kind = if is_u32 {
            gpugraph_command::ScalarKind::Uint
        } else {
            gpugraph_command::ScalarKind::Float
        };
        let (words_out, _) = op.output_words(kind);
        let output = if is_u32 {
            import(&mut g, "out", &out, words_out)?
        } else {
            import_as(&mut g, "out", &out, VectorFormat::Float32, words_out)?
        };
        Reduction {
            id: name.into(),
            input: input.into(),
            mask: None,
            op,
            output,
            ignored: None,
        }
        .add_to_graph_with(&mut g, policy.unwrap_or(device_policy))?;
        let (wf, wu) = (want_f, want_u);
        cases.push(Case {
            op: format!("{name}{label}"),
            bytes_per_element: 4.0,
            written_bytes_per_element: 0.0,
            graph: g.compile()?,
            check: Box::new(move |gpu| {
                let got = gpu.read_back(&out, 2)?;
                let ok = match name {
                    "reduce-sum-f32" => {
                        let s = f32::from_bits(got[0]) as f64;
                        (s - wf.sum).abs() <= 1e-4 * wf.sum.abs().max(1.0)
                    }
                    "reduce-extent-f32" => {
                        f32::from_bits(got[0]) == wf.min && f32::from_bits(got[1]) == wf.max
                    }
                    _ => (got[0] as u64 | (got[1] as u64) << 32) == wu.sum,
                };
                if !ok {
                    bail!("{name}: GPU words {got:?} disagree with the CPU oracle");
                }
                Ok(())
            }),
        });
    }
    Ok(cases)
}

/// `bench histogram`: 256 equal-width bins over [0, 1] (4 bytes per element read).
pub fn histogram_cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let floats = random_unit_floats(n, 10);
    let bins = HistogramBins::Uniform {
        min: 0.0,
        max: 1.0,
        bins: 256,
    };
    let (want, _) = histogram_cpu::histogram(&floats, None, &bins, None);
    let fb = gpu.upload("histogram-in", &bits(&floats));
    let counts = gpu.upload("histogram-counts", &[0xDEAD_BEEF; 256]);
    let mut g = CommandGraph::new("bench-histogram", gpu.device());
    let input = import_as(&mut g, "in", &fb, VectorFormat::Float32, n)?;
    let out = import(&mut g, "counts", &counts, 256)?;
    Histogram {
        id: "histogram-256".into(),
        input: input.into(),
        mask: None,
        bins,
        counts: out,
        cumulative: None,
        ignored: None,
        invalid_edges: None,
    }
    .add_to_graph(&mut g)?;
    Ok(vec![Case {
        op: "histogram-256".into(),
        bytes_per_element: 4.0,
        written_bytes_per_element: 0.0,
        graph: g.compile()?,
        check: Box::new(move |gpu| {
            check_equal("histogram-256", &gpu.read_back(&counts, 256)?, &want)
        }),
    }])
}

/// `bench group`: per-group count and mean over 1,024 groups (8 bytes per element read),
/// with atomic and with deterministic summation (the latter reads the rows twice).
pub fn group_cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    use gpugraph_gpgpu::Summation;
    const GROUPS: u32 = 1024;
    let codes = random_words(n, GROUPS, 11);
    let values = random_unit_floats(n, 12);
    let want = std::rc::Rc::new(gpugraph_gpgpu::group::cpu::group(
        &codes,
        Some(&values),
        None,
        GROUPS,
    ));
    let (cb, vb) = (
        gpu.upload("group-codes", &codes),
        gpu.upload("group-values", &bits(&values)),
    );
    let mut cases = Vec::new();
    for (summation, label) in [
        (Summation::Atomic, ""),
        (Summation::Deterministic, "[deterministic]"),
    ] {
        let op = format!("group-mean-1024{label}");
        let count = gpu.upload("group-count", &vec![0xDEAD_BEEF; GROUPS as usize]);
        let mean = gpu.upload("group-mean", &vec![0xDEAD_BEEF; GROUPS as usize]);
        let mut g = CommandGraph::new("bench-group", gpu.device());
        let codes_v = import(&mut g, "codes", &cb, n)?;
        let values_v = import_as(&mut g, "values", &vb, VectorFormat::Float32, n)?;
        let count_v = import(&mut g, "count", &count, GROUPS as u64)?;
        let mean_v = import_as(&mut g, "mean", &mean, VectorFormat::Float32, GROUPS as u64)?;
        GroupAggregation {
            id: op.clone(),
            codes: codes_v.into(),
            values: Some(values_v.into()),
            mask: None,
            group_count: GROUPS,
            outputs: AggregateOutputs {
                count: Some(count_v),
                mean: Some(mean_v),
                summation,
                ..Default::default()
            },
            ignored: None,
        }
        .add_to_graph(&mut g)?;
        let (want, what) = (want.clone(), op.clone());
        cases.push(Case {
            op,
            bytes_per_element: 8.0,
            written_bytes_per_element: 0.0,
            graph: g.compile()?,
            check: Box::new(move |gpu| {
                check_equal(
                    &format!("{what} counts"),
                    &gpu.read_back(&count, GROUPS as u64)?,
                    &want.count,
                )?;
                let got = gpu.read_back(&mean, GROUPS as u64)?;
                for (k, &word) in got.iter().enumerate() {
                    let m = f32::from_bits(word) as f64;
                    let w = want.sum[k] / want.count[k].max(1) as f64;
                    if want.count[k] > 0 && (m - w).abs() > 1e-4 * w.abs().max(1.0) {
                        bail!("{what}: group {k} mean {m} but the CPU oracle says {w}");
                    }
                }
                Ok(())
            }),
        });
    }
    Ok(cases)
}
