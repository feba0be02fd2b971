#!/usr/bin/env bash
# All 22 TPC-H queries as written, gpugraph (GPU-resident and from Parquet, every answer checked
# against DataFusion's CPU plan first) against DuckDB on the same Parquet files, one device call
# per half (issue 49's 22-query chart; the files stay in .tpch/ while the machine is held):
#   PACK_CLI=1 bash bench/device-pack.sh; bash bench/wheels.sh
#   device, carry [".gl", ".devcli", ".wheels"]:
#     . .gl/setup.sh; bash .devcli/unpack.sh; QUERIES=q1,...,q11 bash bench/device-tpch22.sh $OUT
# When the CLI and the wheels do not fit one carry (64 MiB with the tracked files), the first
# call carries [".gl", ".devcli"] (tables generated, GPU bench), the next one, on the still-held
# machine, [".gl", ".wheels"] (DuckDB on the files the first left in .tpch/).
# SF (default 10), REPEAT (default 3), QUERIES (default all 22), VARIANTS (bench tpch's; default
# gpu-warm,gpu-parquet), DEVICES (bench tpch's --devices, e.g. `all` on an nvidia-h100-x2:
# adds the rows gpu-warm-2d and gpu-parquet-2d of every aggregate split over two GPUs). Writes OUT/tpch-gpu.json, OUT/tpch-duckdb.json and OUT/log.txt;
# python3 bench/plot_tpch.py DIR draws the chart and the table from them.
set -uo pipefail
out=${1:?OUT}
g=${GPUGRAPH:-.devcli/gpugraph}
sf=${SF:-10}
repeat=${REPEAT:-3}
queries=${QUERIES:-$(seq -s, -f 'q%g' 1 22)}
variants=${VARIANTS:-gpu-warm,gpu-parquet}
dir=.tpch/sf$sf
mkdir -p "$dir" "$out"
export WGPU_BACKEND=vulkan
{
  nvidia-smi -L
  # The tables are generated side by side: each file has one Parquet writer thread, so
  # lineitem's writer alone sets the wall time when the others run beside it.
  gen_start=$(date +%s.%N)
  for t in part supplier partsupp customer orders lineitem nation region; do
    [ -s "$dir/$t.parquet" ] && continue
    [ -x "$g" ] || { echo "$dir/$t.parquet is missing and there is no $g to generate it"; exit 1; }
    (
      start=$(date +%s.%N)
      if "$g" generate-table --tpch "$t" --scale "$sf" --out "$dir/$t.parquet.tmp" > /dev/null 2>&1; then
        mv "$dir/$t.parquet.tmp" "$dir/$t.parquet"
        echo "generate-table $t SF $sf: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
      else
        echo "generate-table $t failed"
      fi
    ) &
  done
  wait
  echo "tables ready after $(awk -v a="$gen_start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
  for t in part supplier partsupp customer orders lineitem nation region; do
    [ -s "$dir/$t.parquet" ] || { echo "$dir/$t.parquet missing"; exit 1; }
  done
  py=/tmp/tpch22-peers
  if [ -f .peers/duckdb.tar.xz ]; then
    # The wheel's files re-packed with xz (a third smaller than the wheel's zip), so the CLI and
    # DuckDB fit one carry: mkdir .peers; unzip the wheel; tar -c . | xz -9e > .peers/duckdb.tar.xz
    mkdir -p "$py" && tar -xJf .peers/duckdb.tar.xz -C "$py"
  elif ls .wheels/duckdb-*.whl > /dev/null 2>&1; then
    python3 -m pip install --no-index --no-deps --quiet --target "$py" .wheels/duckdb-*.whl > /dev/null 2>&1
  fi
  if [ -d "$py/duckdb" ]; then
    PYTHONPATH="$py" timeout 200 python3 bench/peers/peers_tpch22.py --tables-dir "$dir" --repeat "$repeat" \
      --queries "$queries" --json "$out/tpch-duckdb.json"
  fi
  [ -x "$g" ] || { echo "no $g: the peers alone ran"; exit 0; }
  timeout 380 "$g" bench tpch --scale "$sf" --query "$queries" --parquet-dir "$dir" \
    --variants "$variants" --repeat "$repeat" ${DEVICES:+--devices "$DEVICES"} \
    --json "$out/tpch-gpu.json" 2>&1
} 2>&1 | tee "$out/log.txt"
