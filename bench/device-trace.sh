#!/usr/bin/env bash
# `gpugraph bench trace` (issue 46) on the lent machine, from carried binaries
# (bench/device-pack.sh; PACK_TESTS=none packs the CLI alone; PACK_CLI=1's .devcli/ works too):
#   carry [".gl", ".devbin"]; . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/device-trace.sh $OUT
# 1. `bench trace` at 2^20, 4,000,000 and 16,000,000 spans (TRACE_SIZES): JSON open, the
#    columnar cache, the GPU frame, against the targets -> OUT/trace.json; the
#    generated JSON files (~0.2, 0.75 and 3 GB) are kept in TRACE_DIR for step 2;
# 2. the Python json + numpy peer (bench/peers/trace_parse.py) on the same files, one call per
#    file so a slow 16M-span load cannot lose the smaller results -> OUT/trace-peer-N.json;
# 3. the files removed.
# Everything printed goes to OUT/log.txt. The machine needs python3 with numpy (no cargo).
# Afterwards, here: gpugraph bench plot OUT/trace.json OUT/trace-peer-*.json --out chart.png
set -uo pipefail
out=${1:?OUT}
mkdir -p "$out"
bin=${DEVBIN:-.devbin}
[ -x "$bin/gpugraph" ] || { [ -x .devcli/gpugraph ] && bin=.devcli; }
dir=${TRACE_DIR:-/tmp/gpugraph-bench-trace}
sizes=${TRACE_SIZES:-2^20,4000000,16000000}
python=${PYTHON:-python3}
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
rm -rf "$dir"
{
  echo "cores: $(nproc)"; free -g | head -2
  "$python" -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
  "$bin/gpugraph" info
  echo "== bench trace --sizes $sizes"
  timeout "${TRACE_TIMEOUT:-420}" "$bin/gpugraph" bench trace --sizes "$sizes" \
    --repeat "${REPEAT:-5}" --dir "$dir" --keep --json "$out/trace.json"
  echo "== peer: python json + numpy on the same files"
  for f in $(ls "$dir"/trace-*.json 2>/dev/null | sort -V); do
    n=$(basename "$f" .json); n=${n#trace-}
    timeout "${PEER_TIMEOUT:-240}" "$python" bench/peers/trace_parse.py "$f" \
      --repeat "${PEER_REPEAT:-1}" --json "$out/trace-peer-$n.json" ||
      echo "peer on $f failed or timed out (status $?)"
  done
  rm -rf "$dir"
} 2>&1 | tee "$out/log.txt"
