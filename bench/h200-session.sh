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
# Writes OUT/suite, OUT/h200 (JSON, combined tables in h200.txt, throughput.png), OUT/lat.
set -uo pipefail
out=${1:-h200-session-out}
mkdir -p "$out/h200"
export REPEAT=${REPEAT:-10} MEMORY=0
bash bench/device-suite.sh "$out" | tee "$out/device-suite.txt" | tail -n 8
{
  SIZES=2^28 BENCHES="copy scan compact mask reduce histogram" bash bench/h200.sh "$out/h200"
  BENCHES="group expr" bash bench/h200.sh "$out/h200"
} > "$out/h200/h200.txt" 2>&1
grep -E "^ +[a-z].*x peer|^ +[a-z-]+(\[[^]]*\])? +[0-9]+ +[0-9.]+ \[" "$out/h200/h200.txt" \
  | awk '{print $1, $2, $3, $(NF-2), $NF}' | head -60
bash bench/analyze-latency.sh "$out/lat" 2>&1 | grep -v generate-table | cut -c1-260
SIZES=2^26 BENCHES=sort REPEAT=5 bash bench/h200.sh "$out/h200" > "$out/h200/sort26.txt" 2>&1
grep -E "x peer|sort-(keys|pairs)" "$out/h200/sort26.txt" | grep -v "[.]pass\|[.]hist\|[.]enc\|[.]dec" | awk '{print $1, $2, $3, $(NF-2), $NF}' | tail -14
timeout 200 ./.devbin/gpugraph bench sort --sizes 2^28 --repeat 3 --json "$out/h200/sort28.json" > "$out/h200/sort28.txt" 2>&1
python3 bench/peers/peers.py sort --sizes 268435456 --repeat 3 --json "$out/h200/sort28-peer.json" >/dev/null 2>&1 \
  && python3 bench/combine.py "$out/h200/sort28.json" "$out/h200/sort28-peer.json" | awk '{print $1, $2, $3, $(NF-2), $NF}' | tail -5
