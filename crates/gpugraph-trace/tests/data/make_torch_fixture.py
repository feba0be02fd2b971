"""Writes torch_small.json: a small trace shaped like torch.profiler's export_chrome_trace
(CPU ops nested on the Python thread, cudaLaunchKernel -> kernel flow links with cat "ac2g",
GPU kernels on "stream" threads of the device process, memory instants, global instants with
string pids, process/thread metadata with sort indices), and torch_small.expected.json: the
per-name count / total / self time a plain Python reader derives from the same JSON (Decimal
sums, so the reference is exact). Deterministic: run it again to regenerate both files."""
import json
from decimal import Decimal

BASE = 1700000000000000  # epoch microseconds, as real traces carry
PID, TID = 4242, 4242
events = []
def x(name, cat, ts, dur, pid=PID, tid=TID, **args):
    events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                   "ts": f"{BASE + ts:.3f}", "dur": f"{dur:.3f}", "args": args})

corr = 100
for step in range(3):
    t0 = 1000.0 + step * 5000.0
    x(f"ProfilerStep#{step}", "user_annotation", t0, 4000.125, **{"External id": 1 + step * 10})
    t = t0 + 10.5
    for op, k in (("aten::linear", "ampere_sgemm_32x32_sliced1x4_tn"), ("aten::relu", "vectorized_elementwise_kernel"),
                  ("aten::linear", "ampere_sgemm_32x32_sliced1x4_tn")):
        x(op, "cpu_op", t, 300.25, **{"External id": corr, "Input Dims": [[8, 16], [32, 16]]})
        inner = "aten::addmm" if op == "aten::linear" else "aten::clamp_min"
        x(inner, "cpu_op", t + 20.0, 250.75, **{"External id": corr + 1})
        x("cudaLaunchKernel", "cuda_runtime", t + 200.0, 12.333, correlation=corr)
        events.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": f"{BASE + t + 200.0:.3f}",
                       "cat": "ac2g", "name": "ac2g"})
        kts = t + 1500.0 + step
        x(k, "kernel", kts, 95.5 + step, pid=0, tid=7, correlation=corr, stream=7, device=0)
        events.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": f"{BASE + kts:.3f}",
                       "cat": "ac2g", "name": "ac2g", "bp": "e"})
        corr += 1
        t += 400.0
    x("cudaDeviceSynchronize", "cuda_runtime", t + 1.0, 2500.001)
    x("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", t + 2400.0, 35.25, pid=0, tid=8, stream=8)
    events.append({"ph": "i", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
                   "ts": f"{BASE + t + 5.0:.3f}", "args": {"Bytes": 4096, "Total Allocated": 8192}})
# A launch whose kernel never arrived (profiler stopped): a flow without its end.
x("cudaLaunchKernel", "cuda_runtime", 16100.0, 10.0, correlation=999)
events.append({"ph": "s", "id": 999, "pid": PID, "tid": TID, "ts": f"{BASE + 16100.0:.3f}",
               "cat": "ac2g", "name": "ac2g"})
events += [
    {"name": "process_name", "ph": "M", "ts": f"{BASE:.3f}", "pid": PID, "tid": 0, "args": {"name": "python3"}},
    {"name": "process_labels", "ph": "M", "ts": f"{BASE:.3f}", "pid": PID, "tid": 0, "args": {"labels": "CPU"}},
    {"name": "process_sort_index", "ph": "M", "ts": f"{BASE:.3f}", "pid": PID, "tid": 0, "args": {"sort_index": PID}},
    {"name": "thread_name", "ph": "M", "ts": f"{BASE:.3f}", "pid": PID, "tid": TID, "args": {"name": "thread 4242 (python3)"}},
    {"name": "thread_sort_index", "ph": "M", "ts": f"{BASE:.3f}", "pid": PID, "tid": TID, "args": {"sort_index": TID}},
    {"name": "process_name", "ph": "M", "ts": f"{BASE:.3f}", "pid": 0, "tid": 0, "args": {"name": "python3"}},
    {"name": "process_labels", "ph": "M", "ts": f"{BASE:.3f}", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
    {"name": "process_sort_index", "ph": "M", "ts": f"{BASE:.3f}", "pid": 0, "tid": 0, "args": {"sort_index": 5000000}},
    {"name": "thread_name", "ph": "M", "ts": f"{BASE:.3f}", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
    {"name": "thread_name", "ph": "M", "ts": f"{BASE:.3f}", "pid": 0, "tid": 8, "args": {"name": "stream 8 "}},
    {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler",
     "ts": f"{BASE + 1000.0:.3f}"},
    {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": f"{BASE + 16200.0:.3f}"},
]
# torch writes numbers, not strings: turn the formatted text back into JSON numbers.
text = json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
                   "traceEvents": events, "traceName": "torch_small", "displayTimeUnit": "ms",
                   "baseTimeNanoseconds": BASE * 1000}, indent=1)
for key in ("ts", "dur"):
    import re
    text = re.sub(rf'"{key}": "([0-9.]+)"', rf'"{key}": \1', text)
open("torch_small.json", "w").write(text + "\n")

# The Python reference: count / total / self time per name, in microseconds (exact Decimals).
doc = json.loads(open("torch_small.json").read(), parse_float=Decimal)
spans = [e for e in doc["traceEvents"] if e["ph"] in ("X", "i", "I")]
stats = {}
for e in spans:
    d = e.get("dur", Decimal(0))
    s = stats.setdefault(e["name"], {"count": 0, "total": Decimal(0), "self": Decimal(0)})
    s["count"] += 1; s["total"] += d; s["self"] += d
# Self time: subtract each span from its innermost enclosing span of the same pid/tid.
by_thread = {}
for e in spans:
    by_thread.setdefault((str(e["pid"]), str(e["tid"])), []).append(e)
for evs in by_thread.values():
    evs.sort(key=lambda e: (e["ts"], -e.get("dur", Decimal(0))))
    stack = []
    for e in evs:
        end = e["ts"] + e.get("dur", Decimal(0))
        while stack and stack[-1]["ts"] + stack[-1].get("dur", Decimal(0)) <= e["ts"]:
            stack.pop()
        if stack:
            stats[stack[-1]["name"]]["self"] -= e.get("dur", Decimal(0))
        stack.append(e)
out = {n: {"count": s["count"], "total_us": str(s["total"]), "self_us": str(s["self"])} for n, s in sorted(stats.items())}
json.dump({"spans": len(spans), "flows": sum(1 for e in doc["traceEvents"] if e["ph"] == "f"),
           "stats": out}, open("torch_small.expected.json", "w"), indent=1, sort_keys=True)
