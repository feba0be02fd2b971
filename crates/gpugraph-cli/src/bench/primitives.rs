//! `bench copy|mask` (and the other u32 primitives): builds the primitive's graph over
//! imported buffers of each size, checks one run against the CPU oracle, then times it with
//! [`super::throughput`] next to a device copy of the same traffic.

use anyhow::{Context, Result};
use clap::Args;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::{CommandGraph, CompiledGraph, VectorFormat};
use gpugraph_gpgpu::mask::cpu as mask_cpu;
use gpugraph_gpgpu::{Mask, MaskOp};
use rand::{Rng, SeedableRng};

use super::floor::Floor;
use super::report::{self, BenchJson};
use super::throughput::{self, ThroughputRow};
use super::BenchOptions;
use crate::gpu::{import, Gpu};

/// Arguments of the u32 primitive benches.
#[derive(Args, Clone, Debug)]
pub struct PrimitiveArgs {
    /// Element counts (counts or powers like 2^28), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = throughput::parse_size, default_value = "2^16,2^20,2^22")]
    pub sizes: Vec<u64>,
    /// Scan-kernel variants to compare in one run (scan and compact benches): comma-separated
    /// `key=value` over the default policy, keys `wg`, `vec4`, `window`, `spin`, `unroll`,
    /// `subgroups` (subgroup tile scans), `sglb` (subgroup look-back), `gather` (compaction:
    /// values loaded before the scattered stores), or `default` for the
    /// default itself; repeat the flag for several variants
    /// (e.g. `--scan-policy default --scan-policy unroll=0`).
    #[arg(long = "scan-policy", value_name = "SPEC")]
    pub scan_policies: Vec<String>,
    /// Radix-sort variants to compare in one run (sort bench): comma-separated `key=value`
    /// over the device default, keys `kpt`, `tiles`, `window`, `spin`, `unroll`, `subgroups`,
    /// `indep` (independent look-back), `split` (multisplit ranking), `apart` (multisplit
    /// counters in their own workgroup array), `early` (look back before ranking); `default`
    /// names the device default; repeatable (e.g. `--sort-policy default --sort-policy
    /// indep=0,split=0`).
    #[arg(long = "sort-policy", value_name = "SPEC")]
    pub sort_policies: Vec<String>,
    /// Reduction variants to compare in one run (reduce bench): comma-separated `key=value`
    /// over the default policy, keys `wg`, `vec4`, `partials`, or `default`; repeatable.
    #[arg(long = "reduce-policy", value_name = "SPEC")]
    pub reduce_policies: Vec<String>,
    /// Compact bench: percentages of rows the random mask selects, one case each (0..=100).
    #[arg(long, value_delimiter = ',', default_value = "50", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub selected: Vec<u32>,
    #[command(flatten)]
    pub options: BenchOptions,
}

/// One scan-kernel variant of a bench: options and the label appended to the op name.
#[derive(Clone, Debug)]
pub struct ScanVariant {
    /// Kernel options for the device.
    pub options: gpugraph_gpgpu::scan::ScanKernelOptions,
    /// `""` for the default, else `[spec]`.
    pub label: String,
}

/// The variants named by `--scan-policy` over the default options of a plain scan
/// (`for_scan`) or of a compaction (`!for_scan`); the default alone when none is given.
pub fn scan_variants(gpu: &Gpu, specs: &[String], for_scan: bool) -> Result<Vec<ScanVariant>> {
    use gpugraph_gpgpu::kernel::PolicySpec;
    use gpugraph_gpgpu::scan::ScanKernelOptions;
    let default = if for_scan {
        ScanKernelOptions::for_scan(gpu.device())
    } else {
        ScanKernelOptions::for_compaction(gpu.device())
    };
    if specs.is_empty() {
        return Ok(vec![ScanVariant {
            options: default,
            label: String::new(),
        }]);
    }
    specs
        .iter()
        .map(|spec| {
            if spec.trim() == "default" {
                return Ok(ScanVariant {
                    options: default,
                    label: String::new(),
                });
            }
            // The library's key=value syntax (ScanKernelOptions: the ScanPolicy keys plus
            // subgroups and sglb); subgroup switches only where the device has subgroups.
            let mut o = default;
            o.apply(spec)
                .with_context(|| format!("--scan-policy '{spec}'"))?;
            let subgroups = gpu.device().features().contains(wgpu::Features::SUBGROUP);
            o.subgroups &= subgroups;
            o.subgroup_lookback &= subgroups;
            o.policy
                .validate()
                .with_context(|| format!("--scan-policy '{spec}'"))?;
            Ok(ScanVariant {
                options: o,
                label: format!("[{spec}]"),
            })
        })
        .collect()
}

/// Random words below `bound` from a fixed seed.
pub fn random_words(n: u64, bound: u32, seed: u64) -> Vec<u32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..bound)).collect()
}

/// One case: a compiled graph, its traffic per element, and the check of one run.
pub struct Case {
    /// Operation name in the table.
    pub op: String,
    /// Bytes moved per element at minimum (read and written).
    pub bytes_per_element: f64,
    /// Of those, the bytes written per element: the floor is the copy kernel for the writes and
    /// as many reads, the read-only kernel for the other reads ([`Floor::time_traffic`]).
    pub written_bytes_per_element: f64,
    /// The compiled graph.
    pub graph: CompiledGraph,
    /// Checks the outputs after one run (reads back explicitly).
    pub check: CaseCheck,
}

/// Checks a case's outputs after one run against its CPU oracle.
pub type CaseCheck = Box<dyn Fn(&Gpu) -> Result<()>>;

/// Runs every case size by size: check once, time the graph and the copy floor, report.
pub fn run_cases(
    bench: &str,
    args: &PrimitiveArgs,
    build: impl FnMut(&Gpu, u64) -> Result<Vec<Case>>,
) -> Result<()> {
    run_cases_with_nodes(bench, args, build, &|_, _| None)
}

/// [`run_cases`] that also times the nodes `node_bytes(op, node)` names against their own
/// floors ([`super::nodes`]).
pub fn run_cases_with_nodes(
    bench: &str,
    args: &PrimitiveArgs,
    mut build: impl FnMut(&Gpu, u64) -> Result<Vec<Case>>,
    node_bytes: &dyn Fn(&str, &str) -> Option<f64>,
) -> Result<()> {
    if let Some(path) = &args.options.json {
        report::check_writable(path)?;
    }
    let gpu = Gpu::open()?;
    for &n in &args.sizes {
        check_size(&gpu, bench, n)?;
    }
    let mut floor = Floor::new(&gpu);
    let mut rows: Vec<ThroughputRow> = Vec::new();
    for &n in &args.sizes {
        report::progress(format_args!("bench {bench}: n = {n}: building"));
        if bench == "copy" {
            rows.extend(floor_rows(&gpu, &mut floor, n, args.options.repeat)?);
        }
        let cases = build(&gpu, n)?;
        for mut case in cases {
            gpu.run_graph(&mut case.graph, &case.op)?;
            (case.check)(&gpu)
                .with_context(|| format!("{} at n = {n} failed its check", case.op))?;
            report::progress(format_args!(
                "bench {bench}: n = {n}: {} checked, timing",
                case.op
            ));
            let (t, timing) = throughput::time_graph(&gpu, &mut case.graph, args.options.repeat)?;
            let written = (n as f64 * case.written_bytes_per_element) as u64;
            let read = (n as f64 * case.bytes_per_element) as u64 - written;
            let floor_t = floor.time_traffic(&gpu, read, written, args.options.repeat)?;
            let mut row =
                throughput::row(&case.op, n, case.bytes_per_element, &t, &floor_t, timing);
            let op = case.op.clone();
            row.nodes = super::nodes::time_nodes(
                &gpu,
                &mut case.graph,
                n,
                args.options.repeat,
                &mut floor,
                &|node| node_bytes(&op, node),
            )?;
            rows.push(row);
        }
    }
    throughput::print_rows(&rows);
    super::nodes::print_nodes(rows.iter().map(|r| (r.elements, r.nodes.as_slice())));
    if let Some(path) = &args.options.json {
        let caps = gpu.ctx.capabilities().clone();
        report::write_json(
            path,
            &BenchJson::new(bench, &caps, args.options.repeat, &rows),
        )?;
    }
    Ok(())
}

/// `bench copy`'s floor rows: the copy kernel at every candidate grid for n u32 (the floor is
/// the fastest of them; each is checked against the data it copied).
fn floor_rows(gpu: &Gpu, floor: &mut Floor, n: u64, repeat: u32) -> Result<Vec<ThroughputRow>> {
    let traffic = n * 4;
    let best = floor.time(gpu, traffic, repeat)?;
    let variants = floor.variants(gpu, traffic, repeat)?;
    let timing = if gpu
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY)
    {
        "gpu-timestamps"
    } else {
        "wall-clock"
    };
    Ok(variants
        .iter()
        .map(|v| {
            let op = format!("copy-kernel[groups={}]", v.workgroups);
            throughput::row(&op, n, 8.0, &v.time, &best, timing)
        })
        .collect())
}

/// Refuses a size whose buffers the device or this host cannot hold, before allocating: the
/// largest per-element footprint of any bench (sort pairs: keys, values, two ping-pong copies
/// and the host's input and oracle copies) against `max_buffer_size` and available memory.
fn check_size(gpu: &Gpu, bench: &str, n: u64) -> Result<()> {
    // Bytes per element of the largest single buffer and of all host copies, by bench.
    let (buffer_bytes, host_bytes): (u64, u64) = match bench {
        "expr" => (12, 48),
        "sort" => (4, 48),
        "group" | "histogram" | "reduce" => (4, 24),
        _ => (4, 24),
    };
    let max = gpu.device().limits().max_buffer_size;
    let largest = n.saturating_mul(buffer_bytes);
    if largest > max {
        anyhow::bail!(
            "bench {bench}: --sizes {n} needs a {largest}-byte buffer but this device's \
             max_buffer_size is {max}"
        );
    }
    // A sort binds a domain larger than one binding in two key windows (and refuses, naming
    // the limit, what two do not hold); the other benches bind whole buffers.
    let binding = gpu.device().limits().max_storage_buffer_binding_size;
    if largest > binding && bench != "sort" {
        anyhow::bail!(
            "bench {bench}: --sizes {n} needs a {largest}-byte storage binding but this \
             device's max_storage_buffer_binding_size is {binding}"
        );
    }
    let host = n.saturating_mul(host_bytes);
    if let Some(available) = available_memory() {
        if host > available {
            anyhow::bail!(
                "bench {bench}: --sizes {n} needs about {} MiB of host memory for inputs and \
                 CPU oracles but only {} MiB are available",
                host >> 20,
                available >> 20
            );
        }
    }
    Ok(())
}

/// `MemAvailable` from /proc/meminfo, in bytes (None where the file does not exist).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `bench copy`: a graph copy node (`vkCmdCopyBuffer` on Vulkan) moving n u32 (8 bytes per
/// element: read + write). Its own row: on NVIDIA it runs at a fraction of the floor.
pub fn copy_cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let data = random_words(n, u32::MAX, 1);
    let src = gpu.upload("copy-src", &data);
    let dst = gpu.upload("copy-dst", &vec![0; n as usize]);
    let mut g = CommandGraph::new("bench-copy", gpu.device());
    let (vs, vd) = (
        import(&mut g, "src", &src, n)?,
        import(&mut g, "dst", &dst, n)?,
    );
    g.add_view_copy("copy", vs, vd)?;
    let graph = g.compile()?;
    Ok(vec![Case {
        op: "copy-buffer".into(),
        bytes_per_element: 8.0,
        written_bytes_per_element: 4.0,
        graph,
        check: Box::new(move |gpu| {
            throughput::check_equal("copy-buffer", &gpu.read_back(&dst, n)?, &data)
        }),
    }])
}

/// `bench mask`: `and` of two random 0/1 masks (12 bytes per element).
pub fn mask_cases(gpu: &Gpu, n: u64) -> Result<Vec<Case>> {
    let a = random_words(n, 2, 2);
    let b = random_words(n, 2, 3);
    let want = mask_cpu::combine(MaskOp::And, &[&a, &b]);
    let (ba, bb) = (gpu.upload("mask-a", &a), gpu.upload("mask-b", &b));
    let out = gpu.upload("mask-out", &vec![0xDEAD_BEEF; n as usize]);
    let mut g = CommandGraph::new("bench-mask", gpu.device());
    let inputs = vec![
        import(&mut g, "a", &ba, n)?.into(),
        import(&mut g, "b", &bb, n)?.into(),
    ];
    let output = import(&mut g, "out", &out, n)?.into();
    Mask {
        id: "mask-and".into(),
        inputs,
        output,
        op: MaskOp::And,
    }
    .add_to_graph(&mut g)?;
    Ok(vec![Case {
        op: "mask-and".into(),
        bytes_per_element: 12.0,
        written_bytes_per_element: 4.0,
        graph: g.compile()?,
        check: Box::new(move |gpu| {
            throughput::check_equal("mask-and", &gpu.read_back(&out, n)?, &want)
        }),
    }])
}

/// `bench scan`: exclusive and inclusive u32 sums of random small values (8 bytes per element),
/// once per `--scan-policy` variant.
pub fn scan_cases(gpu: &Gpu, n: u64, variants: &[ScanVariant]) -> Result<Vec<Case>> {
    use gpugraph_gpgpu::scan::{cpu as scan_cpu, Scan};
    let data = random_words(n, 4, 4);
    let input = gpu.upload("scan-input", &data);
    let mut cases = Vec::new();
    for variant in variants {
        for inclusive in [false, true] {
            let name = if inclusive {
                "scan-inclusive"
            } else {
                "scan-exclusive"
            };
            let op = format!("{name}{}", variant.label);
            let output = gpu.upload("scan-output", &vec![0xDEAD_BEEF; n as usize]);
            let mut g = CommandGraph::new(&op, gpu.device());
            let scan = Scan {
                id: op.clone(),
                input: import(&mut g, "input", &input, n)?.into(),
                output: import(&mut g, "output", &output, n)?.into(),
                inclusive,
                segment_starts: None,
            };
            scan.add_to_graph_with(&mut g, variant.options)?;
            let want = scan_cpu::scan(&data, None, inclusive);
            let what = op.clone();
            cases.push(Case {
                op,
                bytes_per_element: 8.0,
                written_bytes_per_element: 4.0,
                graph: g.compile()?,
                check: Box::new(move |gpu| {
                    throughput::check_equal(&what, &gpu.read_back(&output, n)?, &want)
                }),
            });
        }
    }
    Ok(cases)
}

/// `bench compact`: stable compaction of random values under a random mask selecting
/// `selected_percent` of the rows (count in the instanceCount word of an indirect record), once
/// per percentage and `--scan-policy` variant. Moves 8 bytes per element plus 4 per survivor,
/// the traffic its row reports.
pub fn compact_cases(
    gpu: &Gpu,
    n: u64,
    selected_percent: &[u32],
    variants: &[ScanVariant],
) -> Result<Vec<Case>> {
    use gpugraph_command::{BufferDescriptor as Desc, DataViewDescriptor};
    use gpugraph_gpgpu::compact::cpu as compact_cpu;
    use gpugraph_gpgpu::Compaction;
    let values = random_words(n, u32::MAX, 5);
    let bv = gpu.upload("compact-values", &values);
    let mut cases = Vec::new();
    for &percent in selected_percent {
        // Flags are 0/1 words; a draw below `percent` out of 100 selects the row.
        let flags: Vec<u32> = random_words(n, 100, 6 + percent as u64)
            .into_iter()
            .map(|r| (r < percent) as u32)
            .collect();
        let selected_fraction = f64::from(percent) / 100.0;
        let want = compact_cpu::compact(&values, &flags, n as usize).written;
        let bf = gpu.upload("compact-flags", &flags);
        for variant in variants {
            let op = format!("compact-{percent}%{}", variant.label);
            let out = gpu.upload("compact-output", &vec![0xDEAD_BEEF; n as usize]);
            let record = gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("compact-indirect-record"),
                size: 16,
                usage: U::STORAGE | U::INDIRECT | U::COPY_SRC | U::COPY_DST,
                mapped_at_creation: false,
            });
            let mut g = CommandGraph::new(&op, gpu.device());
            let rh = g.import_buffer(Desc::new("indirect-record", 16, record.usage()), &record)?;
            let count = g.create_data_view(
                rh,
                DataViewDescriptor::packed(VectorFormat::Uint32, 1).at_offset(4),
            )?;
            Compaction {
                id: op.clone(),
                values: import(&mut g, "values", &bv, n)?.into(),
                flags: import(&mut g, "flags", &bf, n)?.into(),
                output: import(&mut g, "output", &out, n)?.into(),
                count,
                overflow: None,
            }
            .add_to_graph_with(&mut g, variant.options)?;
            let (want, what) = (want.clone(), op.clone());
            cases.push(Case {
                op,
                bytes_per_element: 8.0 + 4.0 * selected_fraction,
                written_bytes_per_element: 4.0 * selected_fraction,
                graph: g.compile()?,
                check: Box::new(move |gpu| {
                    let count = gpu.read_back(&record, 4)?[1] as u64;
                    if count != want.len() as u64 {
                        anyhow::bail!(
                            "{what}: count {count} but the CPU oracle selects {}",
                            want.len()
                        );
                    }
                    throughput::check_equal(&what, &gpu.read_back(&out, count)?, &want)
                }),
            });
        }
    }
    Ok(cases)
}
