#!/usr/bin/env bash
# Main-job latency (issue 10 §5), in one device call from the carried binaries:
#   . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/analyze-latency.sh OUT
# Generates ROWS (default 50M) flights-like rows once, then runs the demo's `analyze` three
# times: with an empty pipeline cache (first run), again (the saved Vulkan pipeline cache is
# loaded), and with GPUGRAPH_PIPELINE_CACHE=off. Prints each run's stage timings and wall time.
set -uo pipefail
out=${1:-analyze-latency-out}
mkdir -p "$out"
G=${GPUGRAPH:-./.devbin/gpugraph}
rows=${ROWS:-50000000}
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
table=${TABLE:-/tmp/gpugraph-latency-$rows.parquet}
[ -f "$table" ] || "$G" generate-table --rows "$rows" --out "$table" >/dev/null
cache=$(mktemp -d)
run() {
  local label=$1; shift
  local start end
  start=$(date +%s%N)
  env XDG_CACHE_HOME="$cache" "$@" "$G" analyze "$table" --value arr_delay --group carrier \
    --x dep_time --y arr_delay --out "$out/$label" >"$out/$label.txt" 2>"$out/$label.log"
  local rc=$?
  end=$(date +%s%N)
  printf '%-14s rc=%d wall %6.0f ms | %s\n' "$label" "$rc" "$(( (end - start) / 1000000 ))" \
    "$(grep -E 'timings|compiled|uploaded' "$out/$label.log" "$out/$label.txt" | tr '\n' ' ' | cut -c1-400)"
}
run first
run second
run cache-off GPUGRAPH_PIPELINE_CACHE=off
run masks-words GPUGRAPH_MASK_TRANSFER=words
run third
ls -la "$cache"/gpugraph/pipelines 2>/dev/null | tail -n +2
