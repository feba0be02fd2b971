#!/usr/bin/env bash
# TPC-H Q1/Q6/Q12/Q14/Q3/Q10/Q5 on the device (issue 19): the GPU plans against DataFusion's CPU operators in the
# same process (`gpugraph bench tpch`), then DuckDB and/or Polars on the same Parquet file:
#   bash bench/device-pack.sh; PACK_CLI=1 bash bench/device-pack.sh  (here: .devcli/, the CLI
#   alone, ~10 MB); mkdir -p .wheels && cp duckdb-*.whl .wheels/      (bench/wheels.sh)
#   device, carry [".gl", ".devcli", ".wheels"]:
#     . .gl/setup.sh; bash .devcli/unpack.sh; GPUGRAPH=.devcli/gpugraph bash bench/h200-tpch.sh "$OUT"
# Polars' wheels (~52 MiB) fit a carry only without the CLI: a second call on the still-held
# machine carries [".gl", ".wheels"] with them and runs `PEERS_ONLY=1 ENGINES=polars bash
# bench/h200-tpch.sh "$OUT"` against the lineitem file the first call left in .tpch/ (ignored
# paths survive between calls while the machine is held).
# SF (default 10), REPEAT (default 5), ENGINES (default duckdb), QUERIES and VARIANTS (bench
# tpch's --query and --variants; default all), SORT26=1 also runs the sort
# bench at 2^26 with its peers first (issue 9's comparison). Writes DEST/tpch.tar.xz.
set -uo pipefail
export GPUGRAPH=${GPUGRAPH:-./.devbin/gpugraph}
dest=${1:-h200-tpch-out}
sf=${SF:-10}
repeat=${REPEAT:-5}
engines=${ENGINES:-duckdb}
out=${TPCH_WORK:-/tmp/h200-tpch}
mkdir -p "$out" "$dest" .tpch
pack() { tar -C "$out" -cJf "$dest/tpch.tar.xz" . 2>/dev/null; }
pq=.tpch/lineitem-sf$sf.parquet
ppq=.tpch/part-sf$sf.parquet
opq=.tpch/orders-sf$sf.parquet
cpq=.tpch/customer-sf$sf.parquet
npq=.tpch/nation-sf$sf.parquet
spq=.tpch/supplier-sf$sf.parquet
rpq=.tpch/region-sf$sf.parquet
if [ "${SORT26:-0}" = 1 ]; then
  SIZES=2^26 BENCHES=sort REPEAT=5 bash bench/h200.sh "$out/sort26" > "$out/sort26.txt" 2>&1
  grep -E "x peer|sort-(keys|pairs|f32)" "$out/sort26.txt" | grep -v "[.]pass\|[.]hist\|[.]enc\|[.]dec" \
    | awk 'NF >= 5 {print $1, $2, $3, $(NF-2), $NF}' | tail -14
  pack
fi
if [ ! -s "$pq" ]; then
  if [ "${PEERS_ONLY:-0}" = 1 ]; then
    echo "$pq is missing (the machine was released since the first call): nothing to compare" >&2
    exit 1
  fi
  start=$(date +%s.%N)
  "$GPUGRAPH" generate-table --tpch lineitem --scale "$sf" --out "$pq" > "$out/generate.txt" 2>&1 \
    || { cat "$out/generate.txt"; exit 1; }
  echo "generate-table lineitem SF $sf: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s, $(du -h "$pq" | cut -f1)"
fi
for t in part orders customer nation supplier region; do
  f=.tpch/$t-sf$sf.parquet
  if [ ! -s "$f" ] && [ "${PEERS_ONLY:-0}" != 1 ]; then
    "$GPUGRAPH" generate-table --tpch $t --scale "$sf" --out "$f" > "$out/generate-$t.txt" 2>&1 \
      || { cat "$out/generate-$t.txt"; exit 1; }
  fi
done
if [ "${PEERS_ONLY:-0}" != 1 ]; then
  # SM and memory clocks through the run (the GPU variants warm up first: bench tpch's
  # WARMUP_MS), to tell a card that idled down from a slow kernel.
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw \
      --format=csv -lms 250 > "$out/clocks.csv" 2>/dev/null &
    clocks=$!
  fi
  "$GPUGRAPH" bench tpch --scale "$sf" --parquet "$pq" --part-parquet "$ppq" --orders-parquet "$opq" \
    --customer-parquet "$cpq" \
    ${QUERIES:+--query "$QUERIES"} ${VARIANTS:+--variants "$VARIANTS"} \
    --repeat "$repeat" \
    --json "$out/tpch-gpu.json" > "$out/tpch-gpu.txt" 2> "$out/tpch-gpu.err"
  echo "bench tpch: rc $?"
  [ -n "${clocks:-}" ] && kill "$clocks" 2>/dev/null
  cat "$out/tpch-gpu.txt"; tail -5 "$out/tpch-gpu.err"
  pack
fi
# Outside $out: the installed packages must not travel back in the tarball.
py=/tmp/h200-tpch-py
for w in .wheels/*.whl; do
  [ -e "$w" ] && python3 -m pip install --no-index --no-deps --quiet --target "$py" "$w" > /dev/null 2>&1
done
for e in ${engines//,/ }; do
  part_arg=(); [ -s "$ppq" ] && part_arg=(--part "$ppq")
  [ -s "$opq" ] && part_arg+=(--orders "$opq")
  [ -s "$cpq" ] && part_arg+=(--customer "$cpq")
  [ -s "$npq" ] && part_arg+=(--nation "$npq")
  [ -s "$spq" ] && part_arg+=(--supplier "$spq")
  [ -s "$rpq" ] && part_arg+=(--region "$rpq")
  PYTHONPATH="$py" python3 bench/peers/peers_tpch.py --lineitem "$pq" "${part_arg[@]}" --engines "$e" \
    ${QUERIES:+--queries "$QUERIES"} --repeat "$repeat" --json "$out/tpch-$e.json" 2>&1 | tail -6
done
nproc; free -g | head -2
pack
