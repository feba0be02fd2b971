#!/usr/bin/env bash
# TPC-H Q6/Q1 warm (GPU column cache) under the aggregate kernel's launch-shape overrides, with
# the SM clock sampled every 20 ms: where a warm run's GPU time goes (issue 19).
#   device, carry [".gl", ".devbin"]: . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/h200-q6-sweep.sh $OUT
# Each case is `NAME ENV...`; results (one bench tpch table per case) and the clocks go to OUT.
set -uo pipefail
export GPUGRAPH=${GPUGRAPH:-./.devbin/gpugraph}
out=${1:-h200-q6-sweep-out}
sf=${SF:-10}
mkdir -p "$out" .tpch
pq=.tpch/lineitem-sf$sf.parquet
[ -s "$pq" ] || "$GPUGRAPH" generate-table --tpch lineitem --scale "$sf" --out "$pq" > "$out/generate.txt" 2>&1 \
  || { cat "$out/generate.txt"; exit 1; }
clocks() {
  command -v nvidia-smi > /dev/null || return 0
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu --format=csv,noheader -lms 20 \
    > "$out/clocks-$1.csv" 2>/dev/null &
  echo $!
}
cases=${CASES:-"base|copies1|GPUGRAPH_AGG_COPIES=1 copies4|GPUGRAPH_AGG_COPIES=4 wg4096|GPUGRAPH_AGG_WORKGROUPS=4096 wg264|GPUGRAPH_AGG_WORKGROUPS=264 chunk16m|GPUGRAPH_CHUNK_ROWS=16777216 chunk64m|GPUGRAPH_CHUNK_ROWS=67108864"}
printf '%-10s %-6s %10s %10s %10s %10s %8s\n' case query ms gpu_ms first_ms chunks_ms hiclk
for c in $cases; do
  name=${c%%|*}
  envs=${c#*|}; envs=${envs//|/ }
  pid=$(clocks "$name")
  env $envs "$GPUGRAPH" bench tpch --scale "$sf" --parquet "$pq" --query q6 --query q1 --variants gpu-warm \
    --repeat "${REPEAT:-30}" --json "$out/$name.json" > "$out/$name.txt" 2> "$out/$name.err"
  rc=$?
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  for q in q6 q1; do
    ms=$(awk -v q=$q '$1 == q && $2 == "gpu-warm" {print $3}' "$out/$name.txt")
    gpu=$(awk -v q=$q '$1 == q && $2 == "gpu-warm" {print $6}' "$out/$name.txt")
    first=$(grep "  $q gpu-warm:" "$out/$name.txt" | grep -o "gpu_first_chunk_time [0-9.]*" | cut -d' ' -f2)
    chunks=$(grep "  $q gpu-warm:" "$out/$name.txt" | grep -o "gpu_chunks_time [0-9.]*" | cut -d' ' -f2)
    # Samples at >= 1500 MHz over all samples of the case (both queries).
    sm=$(awk -F', ' '{gsub(/ MHz/, "", $2); n++; if ($2 + 0 >= 1500) h++} END {printf "%d/%d", h, n}' "$out/clocks-$name.csv" 2>/dev/null)
    printf '%-10s %-6s %10s %10s %10s %10s %8s\n' "$name" "$q" "${ms:-rc$rc}" "${gpu:--}" "${first:--}" "${chunks:--}" "${sm:--}"
  done
done
