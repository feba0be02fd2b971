//! The synthetic Chrome traces `bench trace` opens: deterministic span trees per thread,
//! process and thread metadata, and flow pairs, streamed to disk in parallel work units.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Processes of the synthetic trace.
pub const PROCESSES: u64 = 8;
/// Threads per process.
pub const THREADS_PER_PROCESS: u64 = 8;
/// The last processes, GPU-like: string thread IDs (`"stream 7"`).
pub const GPU_PROCESSES: u64 = 2;
/// Spans per tree (a step, 3 ops, 2 sub-ops each, 1 leaf each).
const TREE: u64 = 16;
/// Nanoseconds between the starts of consecutive trees of a thread.
pub(super) const SLOT_NS: u64 = 100_000;
/// Absolute time of the trace start in ns (an epoch timestamp of 2023, as real traces carry).
const BASE_NS: u64 = 1_700_000_000_000_000_000;
/// Every `FLOW_EVERY`-th span of a thread (index ≡ `FLOW_AT`) starts a flow.
const FLOW_EVERY: u64 = 10;
const FLOW_AT: u64 = 7;
/// Trees per generation work unit (about 10 MB of JSON).
const UNIT_TREES: u64 = 4096;

/// What the generator wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Generated {
    /// `X` events (spans).
    pub spans: u64,
    /// `s`/`f` pairs (each one dependency).
    pub flows: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Processes.
    pub processes: u64,
    /// Threads.
    pub threads: u64,
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A deterministic hash of (thread, index, salt).
fn h(g: u64, i: u64, salt: u64) -> u64 {
    splitmix64(g << 40 ^ i << 4 ^ salt)
}

/// The synthetic trace of `spans` spans (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Recipe {
    /// Spans in all.
    pub spans: u64,
}

const CPU_NAMES: [&[&str]; 4] = [
    &["ProfilerStep#train", "ProfilerStep#eval"],
    &[
        "aten::linear",
        "aten::layer_norm",
        "aten::softmax",
        "aten::matmul",
        "aten::conv2d",
    ],
    &[
        "aten::addmm",
        "aten::native_layer_norm",
        "aten::_softmax",
        "aten::bmm",
        "aten::empty",
        "aten::copy_",
    ],
    &[
        "cudaLaunchKernel",
        "cudaMemcpyAsync",
        "cudaStreamSynchronize",
    ],
];
const GPU_NAMES: [&[&str]; 4] = [
    &["graph replay"],
    &[
        "ampere_sgemm_128x64_tn",
        "sm90_xmma_gemm_bf16bf16_bf16f32",
        "flash_fwd_kernel",
    ],
    &[
        "void at::native::vectorized_elementwise_kernel<4>",
        "void at::native::reduce_kernel<512, 1>",
        "Memcpy DtoD (Device -> Device)",
    ],
    &[
        "Memset (Device)",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>",
    ],
];
const CPU_CATS: [&str; 4] = ["user_annotation", "cpu_op", "cpu_op", "cuda_runtime"];
const GPU_CATS: [&str; 4] = ["gpu_user_annotation", "kernel", "kernel", "gpu_memset"];

impl Recipe {
    /// Threads in all.
    pub fn threads(self) -> u64 {
        PROCESSES * THREADS_PER_PROCESS
    }
    /// Spans of thread `g`.
    pub fn spans_of(self, g: u64) -> u64 {
        let t = self.threads();
        self.spans / t + u64::from(g < self.spans % t)
    }
    fn trees_of(self, g: u64) -> u64 {
        self.spans_of(g).div_ceil(TREE)
    }
    fn is_gpu(g: u64) -> bool {
        g / THREADS_PER_PROCESS >= PROCESSES - GPU_PROCESSES
    }
    fn pid(g: u64) -> u64 {
        let p = g / THREADS_PER_PROCESS;
        if Self::is_gpu(g) {
            p - (PROCESSES - GPU_PROCESSES)
        } else {
            3000 + 17 * p
        }
    }
    /// The `"tid":` value as JSON.
    fn tid(g: u64) -> String {
        let t = g % THREADS_PER_PROCESS;
        if Self::is_gpu(g) {
            format!("\"stream {}\"", 7 + t)
        } else {
            (Self::pid(g) + t).to_string()
        }
    }
    fn root_start(g: u64, j: u64) -> u64 {
        j * SLOT_NS + (g * 997) % 5000 + h(g, j, 1) % 2000
    }
    /// The 16 spans of tree `j` of thread `g` in depth-first order: (depth, start, duration)
    /// in ns since the trace start. Children lie strictly inside their parent and never
    /// overlap their siblings.
    pub(super) fn tree(g: u64, j: u64) -> [(u32, u64, u64); TREE as usize] {
        let mut out = [(0, 0, 0); TREE as usize];
        let r0 = Self::root_start(g, j);
        let rd = 80_000 + h(g, j, 2) % 10_000;
        let child = |a: u64, d: u64, k: u64, i: u64, salt: u64| {
            let slot = d / k;
            let margin = slot / 10 + 2;
            let shrink = h(g, j, salt) % (slot / 10 + 1);
            (a + i * slot + margin, slot - 2 * margin - shrink)
        };
        let mut n = 0;
        let mut push = |depth, s, d| {
            out[n] = (depth, s, d);
            n += 1;
        };
        push(0, r0, rd);
        for c in 0..3 {
            let (cs, cd) = child(r0, rd, 3, c, 10 + c);
            push(1, cs, cd);
            for gc in 0..2 {
                let (gs, gd) = child(cs, cd, 2, gc, 20 + 2 * c + gc);
                push(2, gs, gd);
                let (ls, ld) = child(gs, gd, 1, 0, 40 + 2 * c + gc);
                push(3, ls, ld);
            }
        }
        out
    }
    /// The flow started by span `i` of thread `g`: (target thread, target tree), whose root
    /// the flow ends in; `None` for spans that start none.
    pub(super) fn flow_target(self, g: u64, i: u64) -> Option<(u64, u64)> {
        let j = i / TREE;
        // The target tree must exist on every thread.
        let shortest = self.spans / self.threads();
        if i % FLOW_EVERY != FLOW_AT || (j + 1) * TREE >= shortest {
            return None;
        }
        let t = self.threads();
        let b = (g + 1 + (i / FLOW_EVERY) % (t - 1)) % t;
        Some((b, j + 1))
    }

    /// Appends trees `trees` of thread `g` (each event preceded by `,\n`) to `out`: (spans,
    /// flows) written.
    fn write_unit(self, out: &mut Vec<u8>, g: u64, trees: std::ops::Range<u64>) -> (u64, u64) {
        let n = self.spans_of(g);
        let (pid, tid) = (Self::pid(g), Self::tid(g));
        let (names, cats) = if Self::is_gpu(g) {
            (&GPU_NAMES, &GPU_CATS)
        } else {
            (&CPU_NAMES, &CPU_CATS)
        };
        let us = |ns: u64| (ns / 1000, ns % 1000);
        let (mut spans, mut flows) = (0, 0);
        for j in trees {
            for (k, &(depth, start, dur)) in Self::tree(g, j).iter().enumerate() {
                let i = j * TREE + k as u64;
                if i >= n {
                    break;
                }
                let list = names[depth as usize];
                let name = list[(h(g, i, 3) % list.len() as u64) as usize];
                let (ts, tf) = us(BASE_NS + start);
                let (ds, df) = us(dur);
                let _ = write!(
                    out,
                    ",\n{{\"ph\":\"X\",\"cat\":\"{}\",\"name\":\"{name}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts}.{tf:03},\"dur\":{ds}.{df:03},\"args\":{{\"External id\":{},\"seq\":{i}}}}}",
                    cats[depth as usize],
                    g << 32 | i,
                );
                spans += 1;
                if let Some((b, jb)) = self.flow_target(g, i) {
                    let id = g << 32 | i;
                    let (fs, ff) = us(BASE_NS + Self::root_start(b, jb) + 1);
                    let _ = write!(
                        out,
                        ",\n{{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":{id},\"pid\":{pid},\"tid\":{tid},\"ts\":{ts}.{tf:03}}},\n{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"launch\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{fs}.{ff:03}}}",
                        Self::pid(b),
                        Self::tid(b),
                    );
                    flows += 1;
                }
            }
        }
        (spans, flows)
    }

    /// Streams the trace to `path` (generation in parallel, in units of [`UNIT_TREES`]
    /// trees, written in order; a few MB per worker in memory at a time).
    pub fn write(self, path: &Path) -> Result<Generated> {
        let file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut out = Generated {
            processes: PROCESSES,
            threads: self.threads(),
            ..Default::default()
        };
        let mut head = String::from("{\"traceEvents\":[\n");
        for p in 0..PROCESSES {
            let g = p * THREADS_PER_PROCESS;
            let pid = Self::pid(g);
            let name = if Self::is_gpu(g) {
                format!("GPU {pid}")
            } else {
                format!("python3 worker {p}")
            };
            let sep = if p == 0 { "" } else { ",\n" };
            head.push_str(&format!(
                "{sep}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"{name}\"}}}},\n{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{p}}}}}"
            ));
            for t in 0..THREADS_PER_PROCESS {
                let g = g + t;
                let tid = Self::tid(g);
                let tname = if Self::is_gpu(g) {
                    format!("stream {}", 7 + t)
                } else if t == 0 {
                    "MainThread".to_string()
                } else {
                    format!("worker {t}")
                };
                head.push_str(&format!(
                    ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"{tname}\"}}}},\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{t}}}}}"
                ));
            }
        }
        w.write_all(head.as_bytes())?;
        let units: Vec<(u64, std::ops::Range<u64>)> = (0..self.threads())
            .flat_map(|g| {
                let trees = self.trees_of(g);
                (0..trees.div_ceil(UNIT_TREES))
                    .map(move |u| (g, u * UNIT_TREES..((u + 1) * UNIT_TREES).min(trees)))
            })
            .collect();
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        for batch in units.chunks(workers) {
            let done: Vec<(Vec<u8>, u64, u64)> = std::thread::scope(|s| {
                let handles: Vec<_> = batch
                    .iter()
                    .map(|(g, trees)| {
                        let (g, trees) = (*g, trees.clone());
                        s.spawn(move || {
                            let mut buf = Vec::with_capacity(
                                ((trees.end - trees.start) * TREE * 170) as usize,
                            );
                            let (spans, flows) = self.write_unit(&mut buf, g, trees);
                            (buf, spans, flows)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("generator thread panicked"))
                    .collect()
            });
            for (buf, spans, flows) in done {
                w.write_all(&buf)?;
                out.spans += spans;
                out.flows += flows;
            }
        }
        w.write_all(b"\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"gpugraph bench trace\"}}\n")?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all().ok();
        out.bytes = std::fs::metadata(path)?.len();
        Ok(out)
    }
}
