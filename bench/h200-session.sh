#!/usr/bin/env bash
# One device call that verifies issues 10-12 at their target sizes, most important first (a call
# cut by its time limit still returns what it wrote):
#   bash bench/device-pack.sh   (here)
#   device, carry [".gl", ".devbin"]: . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/h200-session.sh "$OUT"
# 1. the test suite (bench/device-suite.sh);
# 2. the streaming primitives at 2^28 (issue 10 §4), group aggregation at 2^24 and 2^28,
#    expressions at 2^26, each with its peer (bench/h200.sh, REPEAT=10, no memory probe);
# 3. analyze latency on 50M rows (issue 10 §5);
# 4. sort at 2^26 with the policy variants, then 2^28 with the default (issue 11).
# Writes suite/, h200/ (JSON, combined tables in h200.txt, throughput.png) and lat/ into
# DEST/session.tar.xz (the device tool returns at most 8 files from $OUT).
set -uo pipefail
dest=${1:-h200-session-out}
# Everything is written under a work folder; DEST receives only session.tar.xz, refreshed after
# every stage, so a call cut by its limit still returns what was measured.
out=${SESSION_WORK:-/tmp/h200-session}
mkdir -p "$out/h200" "$dest"
pack() { tar -C "$out" -cJf "$dest/session.tar.xz" . 2>/dev/null; }
export REPEAT=${REPEAT:-10} MEMORY=0
bash bench/device-suite.sh "$out" | tee "$out/device-suite.txt" | tail -n 8
# A binary that failed with 4 test threads runs again alone, one thread, with a backtrace: tells a
# race or a driver crash between tests from a failure of one test.
for t in $(awk '$2 == "FAIL" || $2 == "TIMEOUT" {print $1}' "$out/device-suite.txt"); do
  case "$t" in example-*) continue ;; esac
  RUST_BACKTRACE=1 timeout 120 ".devbin/$t" --test-threads 1 > "$out/suite/$t.rerun.log" 2>&1
  echo "rerun $t --test-threads 1: rc $?"; grep -E "^test |panicked|SIGSEGV|signal" "$out/suite/$t.rerun.log" | tail -6
done
pack
{
  SIZES=2^28 BENCHES="copy scan compact mask reduce histogram" bash bench/h200.sh "$out/h200"
  BENCHES="group expr" bash bench/h200.sh "$out/h200"
} > "$out/h200/h200.txt" 2>&1
grep -E "^ +[a-z].*x peer|^ +[a-z0-9%-]+(\[[^]]*\])? +[0-9]+ +[0-9.]+ \[" "$out/h200/h200.txt" \
  | awk 'NF >= 5 {print $1, $2, $3, $(NF-2), $NF}' | head -60
pack
bash bench/analyze-latency.sh "$out/lat" 2>&1 | grep -v generate-table | cut -c1-260
pack
# SORT=0 leaves the sort stage to a later call; SORT=28 runs only 2^28 with the default policy.
[ "${SORT:-1}" = 0 ] && exit 0
[ "${SORT:-1}" = 28 ] || SIZES=2^26 BENCHES=sort REPEAT=5 bash bench/h200.sh "$out/h200" > "$out/h200/sort26.txt" 2>&1
[ "${SORT:-1}" = 28 ] || grep -E "x peer|sort-(keys|pairs)" "$out/h200/sort26.txt" | grep -v "[.]pass\|[.]hist\|[.]enc\|[.]dec" | awk 'NF >= 5 {print $1, $2, $3, $(NF-2), $NF}' | tail -14
timeout 200 ./.devbin/gpugraph bench sort --sizes 2^28 --repeat 3 --json "$out/h200/sort28.json" > "$out/h200/sort28.txt" 2>&1
python3 bench/peers/peers.py sort --sizes 268435456 --repeat 3 --json "$out/h200/sort28-peer.json" >/dev/null 2>&1 \
  && python3 bench/combine.py "$out/h200/sort28.json" "$out/h200/sort28-peer.json" | awk 'NF >= 5 {print $1, $2, $3, $(NF-2), $NF}' | tail -5
pack
