#!/usr/bin/env bash
# Before/after of one change on the lent GPU, in one call: two CLI binaries of the same build
# profile (xz-packed in .devcmp/ as gpugraph-before.xz and gpugraph-after.xz), each primitive
# bench run alternately (before, after, before, after) so drift hits both; then GPUScene's
# bench on both binaries. Everything printed goes to OUT/log.txt, the JSON to OUT/json.tar.
#   carry [".gl", ".devcmp"]; . .gl/setup.sh; bash bench/h200-before-after.sh $OUT
# Then: python3 bench/before_after.py OUT/json.tar RESULT_DIR (a table and an SVG of the ratios).
set -uo pipefail
out=${1:?OUT}
mkdir -p "$out/json"
( cd .devcmp && for b in before after; do xz -dkf "gpugraph-$b.xz" && chmod +x "gpugraph-$b"; done )
export WGPU_BACKEND=vulkan
sizes=${SIZES:-2^24,2^26}
repeat=${REPEAT:-10}
{
  echo "before: $(cat .devcmp/before-commit 2>/dev/null)  after: $(cat .devcmp/after-commit 2>/dev/null)"
  .devcmp/gpugraph-after info
  for bench in ${BENCHES:-scan compact sort reduce histogram group mask}; do
    for round in 1 2; do
      for b in before after; do
        echo "== $bench $b round $round"
        timeout 120 ".devcmp/gpugraph-$b" bench "$bench" --sizes "$sizes" --repeat "$repeat" \
          --json "$out/json/$bench-$b-$round.json" 2>&1
      done
    done
  done
  # GPUScene before and after on the same card (SCENE=0 skips it).
  if [ "${SCENE:-1}" = 1 ]; then
    for b in before after; do
      echo "== scene $b"
      timeout 240 ".devcmp/gpugraph-$b" bench scene --sizes "${SCENE_SIZES:-2^20,16000000}" \
        --repeat 10 --json "$out/json/scene-$b.json" 2>&1
    done
  fi
} 2>&1 | tee "$out/log.txt"
tar -C "$out" -cf "$out/json.tar" json && rm -rf "$out/json"
