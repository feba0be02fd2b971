#!/usr/bin/env bash
# A real torch.profiler trace, recorded on the device and opened there by the trace commands
# on the NVIDIA GPU, each answer checked against scripts/trace_reference.py (issue 46):
#   device: . .gl/setup.sh; bash .devcli/unpack.sh; bash bench/device-torch-trace.sh $OUT
set -euo pipefail
out=$1
g=${GPUGRAPH:-.devcli/gpugraph}
export XDG_CACHE_HOME=$out/cache
nvidia-smi -L | tee "$out/device.txt"
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' | tee -a "$out/device.txt"
python3 bench/torch_trace.py --out "$out/torch_profiler.json"
gzip -9 -k "$out/torch_profiler.json"
ls -la "$out"/torch_profiler.json*
python3 scripts/trace_reference.py "$out/torch_profiler.json" --out "$out/torch_profiler.expected.json"
t=$out/torch_profiler.json.gz
$g trace info "$t" --json --no-cache > "$out/info.json"
$g trace info "$t"
$g trace info "$t" --json > "$out/info-cache-write.json"
$g trace info "$t" --json > "$out/info-cache-read.json"
$g trace stats "$t" --by name --top 0 --json --no-cache > "$out/stats.json"
$g trace stats "$t" --by name --top 15
$g trace render "$t" --out "$out/torch_profiler.png" --no-cache
# Pick: the middle of the longest GPU kernel, on its stream thread.
read -r thread at < <(python3 - "$out/torch_profiler.json" <<'PY'
import json, sys
from decimal import Decimal
ev = json.load(open(sys.argv[1]), parse_float=Decimal)["traceEvents"]
k = max((e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"), key=lambda e: e["dur"])
print(f'{k["pid"]}:{k["tid"]}', k["ts"] + k["dur"] / 2)
PY
)
$g trace pick "$t" --thread "$thread" --at "$at" --json --no-cache > "$out/pick.json"
python3 scripts/trace_reference.py "$out/torch_profiler.json" --pick "$thread" --at "$at" > "$out/pick.expected.json"
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
ref = json.load(open(f"{d}/torch_profiler.expected.json"))
info = json.load(open(f"{d}/info.json"))
got = json.load(open(f"{d}/stats.json"))["rows"]
bad = [r["name"] for r in got
       if r["count"] != ref["stats"][r["name"]]["count"]
       or abs(r["total"] - float(ref["stats"][r["name"]]["total_us"])) > 1e-6 * max(1e-9, abs(float(ref["stats"][r["name"]]["total_us"])))
       or abs(r["self"] - float(ref["stats"][r["name"]]["self_us"])) > 1e-6 * max(1e-9, abs(float(ref["stats"][r["name"]]["self_us"])))]
pick, want = json.load(open(f"{d}/pick.json")), json.load(open(f"{d}/pick.expected.json"))
checks = {
    "spans": info["spans"] == ref["spans"],
    "names": len(got) == len(ref["stats"]),
    "stats": not bad,
    "pick": pick["name"] == want["name"] and float(pick["ts"]) == float(want["ts"]),
    "cache": json.load(open(f"{d}/info-cache-read.json"))["loaded_from_cache"] is True,
}
print(json.dumps({"checks": checks, "mismatched_names": bad[:10], "spans": info["spans"],
                  "flow_links": info["flow_links"], "pick": pick["name"]}, indent=1))
json.dump(checks, open(f"{d}/checks.json", "w"))
sys.exit(0 if all(checks.values()) else 1)
PY
