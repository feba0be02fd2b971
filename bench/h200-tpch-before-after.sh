#!/usr/bin/env bash
# TPC-H before/after of one change on the lent GPU, in one call (issue 48's "within 3 % of
# before"): two CLI binaries of the same build profile, xz-packed in .devcmp/ as
# gpugraph-before.xz and gpugraph-after.xz (with before-commit/after-commit files), run
# alternately (before, after, before, after) over the same generated Parquet files so drift hits
# both; Q1, Q6, Q12 and Q3, warm (tables on the GPU) and from Parquet.
#   carry [".gl", ".devcmp"]; . .gl/setup.sh; bash bench/h200-tpch-before-after.sh $OUT
# SF (default 10), REPEAT (default 5), QUERIES (default q1,q6,q12,q3). Prints to OUT/log.txt;
# the JSON of every run goes to OUT/json.tar (python3 bench/before_after.py reads it).
set -uo pipefail
out=${1:?OUT}
mkdir -p "$out/json" .tpch
# Either gpugraph-{before,after}.xz or both in one solid both.tar.xz (they share most of
# their bytes, so one big-dictionary stream is half the size of two).
if [ -f .devcmp/both.tar.xz ]; then
  tar -C .devcmp -xJf .devcmp/both.tar.xz
else
  ( cd .devcmp && for b in before after; do xz -dkf "gpugraph-$b.xz"; done )
fi
chmod +x .devcmp/gpugraph-before .devcmp/gpugraph-after
export WGPU_BACKEND=vulkan
sf=${SF:-10}
repeat=${REPEAT:-5}
queries=${QUERIES:-q1,q6,q12,q3}
{
  echo "before: $(cat .devcmp/before-commit 2>/dev/null)  after: $(cat .devcmp/after-commit 2>/dev/null)"
  for t in lineitem orders customer; do
    start=$(date +%s.%N)
    .devcmp/gpugraph-after generate-table --tpch "$t" --scale "$sf" --out ".tpch/$t-sf$sf.parquet" > /dev/null 2>&1 \
      || { echo "generate-table $t failed"; exit 1; }
    echo "generate-table $t SF $sf: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
  done
  for round in 1 2; do
    for b in before after; do
      echo "== tpch $b round $round"
      timeout 150 ".devcmp/gpugraph-$b" bench tpch --scale "$sf" --query "$queries" \
        --parquet ".tpch/lineitem-sf$sf.parquet" --orders-parquet ".tpch/orders-sf$sf.parquet" \
        --customer-parquet ".tpch/customer-sf$sf.parquet" --variants gpu-warm,gpu-parquet \
        --repeat "$repeat" --json "$out/json/tpch-$b-$round.json" 2>&1
    done
  done
} 2>&1 | tee "$out/log.txt"
tar -C "$out" -cf "$out/json.tar" json && rm -rf "$out/json"
