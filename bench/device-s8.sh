#!/usr/bin/env bash
# One device call for GPUScene, the trace frame and the viewer from the level-3 CLI and the
# viewer's frame_bench example (packed as .devo3/{gpugraph,frame_bench}.xz by the lead):
#   carry [".gl", ".devo3"]; . .gl/setup.sh; bash .devo3/unpack.sh; bash bench/device-s8.sh $OUT
# 0. the two GPUScene consumers' pictures (a generated city, a TPC-H lineitem table);
# 1. `bench scene` at 2^20 and 16,000,000 records (frame, staged patch, the culling peer);
# 2. `bench trace` at 2^20 and 16,000,000 spans (open, cache, frames; no Python peer: its
#    numbers from 2026-12-07 stand, bench/results/h200/2026-12-07-3b4867c-h100-scene-trace);
# 3. the viewer's offscreen frame_bench at 1M and 16M spans.
# Everything printed goes to OUT/log.txt, JSON beside it.
set -uo pipefail
out=${1:?OUT}
mkdir -p "$out"
bin=${DEVBIN:-.devo3}
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
dir=/tmp/gpugraph-bench-trace
{
  nvidia-smi -L; echo "cores: $(nproc)"
  "$bin/gpugraph" info
  echo "== scene consumers (pictures compared with lavapipe's afterwards)"
  "$bin/gpugraph" scene --generate 3000 --out "$out/city-3000.png" --frames 3 --mutate 20 --pick 640,360
  "$bin/gpugraph" generate-table --tpch lineitem --scale 0.05 --out /tmp/li.parquet
  "$bin/gpugraph" scene --table /tmp/li.parquet --x l_partkey --y l_suppkey --z l_quantity \
    --group l_linenumber --groups 8 --out "$out/table.png" --pick 640,360 --frames 2
  echo "== scene"
  timeout 150 "$bin/gpugraph" bench scene --sizes 2^20,16000000 --repeat 10 --json "$out/scene.json"
  echo "== trace"
  rm -rf "$dir"
  timeout 200 "$bin/gpugraph" bench trace --sizes 2^20,16000000 --repeat 3 --dir "$dir" \
    --json "$out/trace.json"
  rm -rf "$dir"
  if [ -x "$bin/frame_bench" ]; then
    for n in ${VIEWER_SPANS:-1000000 16000000}; do
      echo "== viewer frame_bench $n"
      timeout 120 "$bin/frame_bench" "$n" 12
    done
  fi
} 2>&1 | tee "$out/log.txt"
