#!/usr/bin/env bash
# One device call for the viewer, GPUScene and compaction numbers, from the carried binaries
# (bash bench/device-pack.sh):
#   carry [".gl", ".devbin"]; . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/device-viewer-scene.sh $OUT
# 1. `bench scene` at 2^20 and 16,000,000 records (GPUScene frame, staged and direct patches,
#    the culling peer in the same run);
# 2. `bench compact` at 2^26, twice (the kernel-API before/after had one slow run there);
# 3. the viewer's offscreen frame_bench at 1M and 16M spans (full frame and frame graph
#    medians, per-node GPU times from timestamps).
# Everything printed goes to OUT/log.txt, the JSON beside it.
set -uo pipefail
out=${1:?OUT}
mkdir -p "$out"
bin=${DEVBIN:-.devbin}
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
{
  "$bin/gpugraph" info
  echo "== scene"
  timeout 240 "$bin/gpugraph" bench scene --sizes 2^20,16000000 --repeat 20 --json "$out/scene.json"
  for r in 1 2; do
    echo "== compact 2^26 round $r"
    timeout 90 "$bin/gpugraph" bench compact --sizes 2^26 --repeat 20 --json "$out/compact-$r.json"
  done
  for n in ${VIEWER_SPANS:-1000000 16000000}; do
    echo "== viewer frame_bench $n"
    timeout 200 "$bin/example-frame_bench" "$n" 12
  done
} 2>&1 | tee "$out/log.txt"
