#!/usr/bin/env bash
# Session 7's targeted H200 call (render batching, fft variants, staged upload):
#   . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/h200-s7.sh $OUT
# Everything it writes is tarred into OUT/all.tar.xz (a device call returns at most 8 files).
set -uo pipefail
out=${1:-s7-out}
mkdir -p "$out"
G=./.devbin/gpugraph
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
SUITE_TIMEOUT=200 bash bench/device-suite.sh "$out" >"$out/suite.txt" 2>&1
cat "$out/suite.txt" | cut -c1-100
STAGES="${STAGES:-render fft}" bash bench/h200-families.sh "$out/fam" 2>&1 | tail -40
for n in 1000000 16777216; do
  timeout 120 "$G" render cull --instances "$n" --frames 30 --msaa 4 --cubes-per-instance 1 \
    --out "$out/cull-$n-c1.png" >"$out/cull-$n-c1.txt" 2>&1
  echo "cull $n cubes/instance=1: $(tail -1 "$out/cull-$n-c1.txt" | cut -c1-140)"
done
ROWS=50000000 bash bench/analyze-latency.sh "$out/lat" 2>&1 | cut -c1-300
grep -h "uploaded" "$out"/lat/*.log
cd "$out" && tar cJf ../all.tar.xz . && find . -mindepth 1 -delete && mv ../all.tar.xz .
