#!/usr/bin/env bash
# Every throughput bench with its peer, in one device call:
#   bash bench/device-pack.sh              (here: release binaries + loaders, packed)
#   device run, carry [".gl", ".devbin"]:  . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/h200.sh "$OUT"
# Writes ours/peer JSON per bench into OUT and prints one combined table per bench.
# SIZES / REPEAT / BENCHES override the defaults (the issues' target sizes).
set -uo pipefail
out=${1:-bench-out}
mkdir -p "$out"
G=${GPUGRAPH:-./.devbin/gpugraph}
repeat=${REPEAT:-20}
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
sizes_for() {
  case "$1" in
    sort) echo "${SIZES:-2^26,2^28}" ;;
    expr) echo "${SIZES:-2^26}" ;;
    *) echo "${SIZES:-2^24,2^28}" ;;
  esac
}
peer_sizes() { python3 - "$1" <<'PY'
import sys
print(",".join(str(2 ** int(s[2:])) if s.startswith("2^") else s for s in sys.argv[1].split(",")))
PY
}
# Where uploads land (the 512 MiB cliff): the floor kernel over differently created buffers.
# MEMORY=0 skips it (it runs by default, with or without BENCHES).
if [ "${MEMORY:-1}" = 1 ]; then
  echo "=== memory"
  "$G" bench memory --sizes "${MEMORY_SIZES:-2^24,2^26,2^27,2^28}" --repeat "$repeat" \
    --json "$out/memory.json" 2>"$out/memory.log" || tail -3 "$out/memory.log"
fi
for b in ${BENCHES:-copy scan compact mask sort reduce histogram group expr}; do
  s=$(sizes_for "$b")
  echo "=== $b ($s)"
  extra=()
  peer_extra=()
  case "$b" in
    # Scan-kernel variants in the same run (default first). On NVIDIA the default is 8 vec4,
    # workgroup-memory tile scans and the subgroup look-back (ScanKernelOptions::for_scan);
    # sglb=0 is the workgroup-window look-back it replaced.
    scan) extra=(--scan-policy default --scan-policy wg=128,vec4=16 --scan-policy sglb=0) ;;
    # Compaction at 1%, 50% and 100% selected (ScanKernelOptions::for_compaction).
    # wg=256,vec4=4,gather=1: the previous NVIDIA default (4,096-row tiles, values loaded after
    # the look-back) against today's 512 x 6 vec4 tiles with values loaded before it.
    compact) extra=(--selected 1,50,100 --scan-policy default --scan-policy wg=256,vec4=4,gather=1 --scan-policy sglb=0)
      peer_extra=(--selected 1,50,100) ;;
    # Sort: the default and a wider look-back window; more variants with SORT_SWEEP=1.
    # fuse=1: key transforms inside the radix kernels (off by default on NVIDIA);
    # overlap=1,wgtiles=1: keys staged and values loaded before the look-back, tiles by
    # workgroup id; hbatch=4: four vec4 loads in flight per histogram invocation.
    # Reduce: the default (256 x 4 vec4, 1,024 partials) against wider tiles and more partials.
    reduce) extra=(--reduce-policy default --reduce-policy vec4=8 --reduce-policy wg=512 --reduce-policy wg=128,vec4=8 --reduce-policy partials=2048) ;;
    sort) extra=(--sort-policy default --sort-policy fuse=1 --sort-policy overlap=1,wgtiles=1 --sort-policy hbatch=4)
      [ "${SORT_SWEEP:-0}" = 1 ] && extra+=(--sort-policy window=8 --sort-policy window=1,unroll=0 --sort-policy split=0 --sort-policy indep=0 --sort-policy early=1 --sort-policy kpt=8) ;;
  esac
  "$G" bench "$b" --sizes "$s" --repeat "$repeat" --json "$out/$b.json" "${extra[@]}" 2>"$out/$b.log" || { tail -3 "$out/$b.log"; continue; }
  {
    python3 bench/peers/peers.py "$b" --sizes "$(peer_sizes "$s")" --repeat "$repeat" --json "$out/$b-peer.json" "${peer_extra[@]}" 2>>"$out/$b.log" \
      && python3 bench/combine.py "$out/$b.json" "$out/$b-peer.json" \
           $( [ -f "$out/copy-peer.json" ] && echo --copy-peer "$out/copy-peer.json" ) \
      || python3 -c "import json,sys;[print(r['op'],r['elements'],round(r['median_ms'],4),round(r['ratio_to_floor'],2)) for r in json.load(open(sys.argv[1]))['rows']]" "$out/$b.json"
  }
done
# One chart of everything measured above (ours and peers, copy floor marked).
"$G" bench plot $(ls "$out"/*.json | grep -v memory.json) --out "$out/throughput.png" || true
