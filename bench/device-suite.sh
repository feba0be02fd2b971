#!/usr/bin/env bash
# The whole test suite from carried binaries (bench/device-pack.sh), on a machine without cargo:
#   . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/device-suite.sh [OUT]
# Runs every test binary and example, prints one line per binary (passed/failed/ignored and
# seconds) and the names of failing tests; full logs go to OUT/suite/. Exit status: the number
# of failing binaries (0 = all green). Run from the repository root (the CLI tests find their
# data files and, through GPUGRAPH_BIN, the binary from there).
set -uo pipefail
out=${1:-device-suite-out}/suite
bin=${DEVBIN:-.devbin}
mkdir -p "$out"
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
export GPUGRAPH_BIN=${GPUGRAPH_BIN:-$PWD/$bin/gpugraph}
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR=/tmp/gpugraph-xdg
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
limit=${SUITE_TIMEOUT:-300}
failed=0
printf '%-44s %-6s %7s %7s %7s %8s\n' binary result passed failed ignored seconds
for t in "$bin"/*-test "$bin"/example-*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  log="$out/$name.log"
  start=$(date +%s%N)
  case "$name" in
    example-visible_instances) timeout "$limit" "$t" 300000 >"$log" 2>&1 ;;
    example-particles) timeout "$limit" "$t" 100000 >"$log" 2>&1 ;;
    example-scene_explorer) timeout "$limit" "$t" --generate 20000 --out "$out/scene_explorer.png" >"$log" 2>&1 ;;
    # Interactive (a window, a server), benches with their own calls, and tools that need a
    # file: not suite members.
    example-open|example-serve|example-frame_bench|example-*_speed|example-page_decode) continue ;;
    example-*) timeout "$limit" "$t" >"$log" 2>&1 ;;
    *) timeout "$limit" "$t" --test-threads "${THREADS:-4}" >"$log" 2>&1 ;;
  esac
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
  sum() { grep -Eo "[0-9]+ $1" "$log" | awk '{s+=$1} END {print s+0}'; }
  result=ok
  [ $rc -eq 0 ] || { result=FAIL; failed=$((failed + 1)); }
  [ $rc -eq 124 ] && result=TIMEOUT
  printf '%-44s %-6s %7s %7s %7s %8s\n' "$name" "$result" "$(sum passed)" "$(sum failed)" "$(sum ignored)" "$secs"
  if [ $rc -ne 0 ]; then
    grep -E '^test .* FAILED$|panicked at' "$log" | head -8 | sed 's/^/    /'
    tail -3 "$log" | sed 's/^/    | /'
  fi
done
echo "device-suite: $failed failing binaries"
exit $failed
