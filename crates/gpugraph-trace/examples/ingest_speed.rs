//! Chrome trace ingestion speed: `parse_chrome_trace` over a torch.profiler-like trace held in
//! memory (or a file), with 1 thread and with all threads, in MB/s of JSON text.
//!
//! The generated trace has torch.profiler's shape and spelling: the object form with
//! `schemaVersion` and `deviceProperties`, nested `X` events (profiler step > module op >
//! aten op > `cudaLaunchKernel`) with `External id`, `Input Dims`, `Input type` and `Ev Idx`
//! arguments, kernels on string-keyed GPU streams with their launch geometry, `ac2g` flow
//! pairs (`s` at the launch, `f` with `bp: "e"` at the kernel), and process/thread metadata,
//! written one event per few lines with two-space indentation as torch does.
//!
//! ```text
//! cargo run --release -p gpugraph-trace --example ingest_speed -- \
//!     [EVENTS | --file PATH] [--repeat R] [--threads 1,2,...]
//! ```
//!
//! `INGEST_SPEED_WRITE=PATH` also writes the generated trace to `PATH`. Timings are the best
//! of `R` runs (default 3) of the whole `parse_chrome_trace` (parse and model build).

use std::time::Instant;

use gpugraph_trace::{parse_chrome_trace, IngestOptions};

/// A deterministic xorshift generator (the example needs no `rand`).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const OPS: [&str; 12] = [
    "aten::linear",
    "aten::addmm",
    "aten::relu",
    "aten::clamp_min",
    "aten::layer_norm",
    "aten::native_layer_norm",
    "aten::softmax",
    "aten::_softmax",
    "aten::matmul",
    "aten::bmm",
    "aten::add_",
    "aten::empty",
];

const KERNELS: [&str; 5] = [
    "ampere_sgemm_32x32_sliced1x4_tn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
    "Memcpy HtoD (Pageable -> Device)",
];

/// Microseconds with three decimals, as torch writes them.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A torch.profiler-like trace of about `events` events.
fn generate(events: usize) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = String::with_capacity(events * 330);
    s.push_str("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, \"name\": \"NVIDIA H200\", \"totalGlobalMem\": 150021177344,\n      \"computeMajor\": 9, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024\n    }\n  ],\n  \"traceEvents\": [\n");
    let (pid, tid) = (3713u64, 3713u64);
    let mut t = 1_700_000_000_000_000_000u64 / 1000; // ns
    let mut gpu_t = t + 5_000_000;
    let mut ext = 1u64;
    let mut correlation = 1u64;
    let mut n = 0usize;
    let mut step = 0u64;
    while n < events {
        // One profiler step of several module ops.
        let step_start = t;
        let mut body = String::new();
        for _ in 0..8 {
            let op = OPS[rng.below(OPS.len() as u64) as usize];
            let op_start = t + 1_000 + rng.below(2_000);
            let sub = OPS[rng.below(OPS.len() as u64) as usize];
            let sub_start = op_start + 2_000 + rng.below(1_000);
            let launch_start = sub_start + 3_000 + rng.below(1_000);
            let launch_dur = 4_000 + rng.below(3_000);
            let sub_dur = launch_start + launch_dur + 2_000 - sub_start;
            let op_dur = sub_start + sub_dur + 1_500 - op_start;
            for (name, start, dur, dims) in [
                (op, op_start, op_dur, true),
                (sub, sub_start, sub_dur, false),
            ] {
                body.push_str(&format!(
                    "  {{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {ext},\"Record function id\": 0, \"Ev Idx\": {}{}\n    }}\n  }},\n",
                    us(start),
                    us(dur),
                    ext - 1,
                    if dims {
                        ", \"Input Dims\": [[8, 16, 128], [512, 128], []], \"Input type\": [\"float\", \"float\", \"\"], \"Input Strides\": [[2048, 128, 1], [128, 1], []]"
                    } else {
                        ", \"Sequence number\": 42, \"Fwd thread id\": 0"
                    }
                ));
                ext += 1;
            }
            body.push_str(&format!(
                "  {{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {pid}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {}, \"cbid\": 211, \"correlation\": {correlation}\n    }}\n  }},\n",
                us(launch_start),
                us(launch_dur),
                ext - 1
            ));
            body.push_str(&format!(
                "  {{\n    \"ph\": \"s\", \"id\": {correlation}, \"pid\": {pid}, \"tid\": {tid},\n    \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }},\n",
                us(launch_start)
            ));
            gpu_t = gpu_t.max(launch_start + 10_000) + rng.below(3_000);
            let stream = 7 + rng.below(2);
            let kdur = 20_000 + rng.below(80_000);
            let kernel = KERNELS[rng.below(KERNELS.len() as u64) as usize];
            body.push_str(&format!(
                "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{kernel}\", \"pid\": 0, \"tid\": \"stream {stream}\",\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {}, \"queued\": 0, \"device\": 0, \"context\": 1,\n      \"stream\": {stream}, \"correlation\": {correlation}, \"registers per thread\": 128, \"shared memory\": 16384,\n      \"blocks per SM\": 1.250000, \"warps per SM\": 10.000000, \"grid\": [128, 1, 1], \"block\": [256, 1, 1],\n      \"est. achieved occupancy %\": 31\n    }}\n  }},\n",
                us(gpu_t),
                us(kdur),
                ext - 1
            ));
            body.push_str(&format!(
                "  {{\n    \"ph\": \"f\", \"id\": {correlation}, \"pid\": 0, \"tid\": \"stream {stream}\",\n    \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }},\n",
                us(gpu_t)
            ));
            gpu_t += kdur;
            correlation += 1;
            t = op_start + op_dur;
            n += 6;
        }
        s.push_str(&format!(
            "  {{\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {pid}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {ext}, \"Record function id\": 0, \"Ev Idx\": {ext}\n    }}\n  }},\n",
            us(step_start),
            us(t + 500 - step_start)
        ));
        s.push_str(&body);
        ext += 1;
        step += 1;
        n += 1;
        t += 1_000;
    }
    for (p, name, sort) in [(pid, "python3", 3713), (0, "GPU 0", 16777216)] {
        s.push_str(&format!(
            "  {{\n    \"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": {p}, \"tid\": 0,\n    \"args\": {{\n      \"name\": \"{name}\"\n    }}\n  }},\n  {{\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": {p}, \"tid\": 0,\n    \"args\": {{\n      \"sort_index\": {sort}\n    }}\n  }},\n"
        ));
    }
    for stream in [7, 8] {
        s.push_str(&format!(
            "  {{\n    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 0, \"tid\": \"stream {stream}\",\n    \"args\": {{\n      \"name\": \"stream {stream} \"\n    }}\n  }},\n"
        ));
    }
    s.push_str(&format!(
        "  {{\n    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": {pid}, \"tid\": {tid},\n    \"args\": {{\n      \"name\": \"thread {tid} (python3)\"\n    }}\n  }}\n  ],\n  \"traceName\": \"generated.pt.trace.json\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}}\n"
    ));
    s
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut events = 1_000_000usize;
    let mut file = None;
    let mut repeat = 3usize;
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut thread_counts = vec![1, all];
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--file" => {
                file = args.get(i + 1).cloned();
                i += 1;
            }
            "--threads" => {
                thread_counts = args
                    .get(i + 1)
                    .map(|t| t.split(',').filter_map(|n| n.parse().ok()).collect())
                    .unwrap_or_default();
                i += 1;
            }
            "--repeat" => {
                repeat = args.get(i + 1).and_then(|r| r.parse().ok()).unwrap_or(3);
                i += 1;
            }
            a => events = a.parse().expect("EVENTS is a number"),
        }
        i += 1;
    }
    let bytes = match file {
        Some(p) => std::fs::read(&p).expect("readable trace file"),
        None => {
            let t = Instant::now();
            let s = generate(events).into_bytes();
            eprintln!(
                "generated {:.1} MB in {:.2} s",
                s.len() as f64 / 1e6,
                t.elapsed().as_secs_f64()
            );
            s
        }
    };
    if let Ok(out) = std::env::var("INGEST_SPEED_WRITE") {
        std::fs::write(&out, &bytes).expect("writable output");
    }
    let mb = bytes.len() as f64 / 1e6;
    for threads in thread_counts {
        let mut best = f64::INFINITY;
        let mut best_cpu = f64::INFINITY;
        let mut summary = String::new();
        for _ in 0..repeat.max(1) {
            let cpu0 = cpu_seconds();
            let t = Instant::now();
            let m =
                parse_chrome_trace(&bytes, IngestOptions { threads }).expect("the trace parses");
            best = best.min(t.elapsed().as_secs_f64());
            if let (Some(a), Some(b)) = (cpu0, cpu_seconds()) {
                best_cpu = best_cpu.min(b - a);
            }
            summary = format!(
                "{} events, {} spans, {} dependencies, {} names",
                m.report.events,
                m.spans.len(),
                m.dependencies.len(),
                m.names.len()
            );
            drop(m);
        }
        let cpu = if best_cpu.is_finite() {
            format!("; {:.1} MB per CPU-second", mb / best_cpu.max(0.01))
        } else {
            String::new()
        };
        println!(
            "threads {threads}: {mb:.1} MB in {best:.3} s = {:.1} MB/s ({:.1} MB/s per thread{cpu}); {summary}",
            mb / best,
            mb / best / threads as f64
        );
    }
}

/// This process's user + system CPU time (Linux `/proc`, 100 Hz ticks), if known.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}
