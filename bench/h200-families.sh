#!/usr/bin/env bash
# One device call for the families that landed on 2026-12-01 (issues 14 and 15) and the checks
# the session left for the H200 (issues 10 and 11), most important first; everything goes into
# DEST/families.tar.xz, refreshed after every stage (the device tool returns at most 8 files):
#   PACK_TESTS='live_count|dispatch' bash bench/device-pack.sh   (here; keeps the carry small)
#   bash bench/wheels.sh                             (here, optional: DuckDB for the join peer)
#   device, carry [".gl", ".devbin", ".wheels"]:
#     . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/h200-families.sh "$OUT"
# Stages (STAGES overrides, e.g. STAGES="render hash"):
#   race     the context-creation race: live_count and dispatch tests, 8 threads, 6 times each
#   compile  analyze on 50M rows with 1, 4, 8 and 16 compile threads (issue 10: <= 100 ms)
#   reduce   reduce variants at 2^28 with torch.sum / aminmax (issue 10: extent >= 0.9x)
#   sort29   sort of 2^29 u32 keys (issue 11: any n the device holds)
#   render   render cull at 1M and 16M instances (PNG, per-frame GPU and encode), bench render
#   hash     bench hash and bench join
#   tpch     TPC-H lineitem x orders at SF 1 and 10 through gpugraph join, DuckDB peer
#   spatial  bench spatial with the cKDTree peer
#   suite    bench/device-suite.sh over the carried test binaries (PACK_TESTS picks them)
#   fft      bench fft 4096² and 8192² with policy variants, torch.fft.fft2 peer (issue 16)
#   solve    gpugraph solve / bench solve, PCG on Poisson 2048², cupyx cg peer (issue 17)
#   traverse bench traverse 2^20 / 2^24 nodes, torch / cuSPARSE peers (issue 16)
#   procgen  the procgen example graphs' play reports (issue 18; sprout_tail: a planning wait)
# SMALL=1 runs every stage at toy sizes (a local smoke test on lavapipe).
set -uo pipefail
dest=${1:-h200-families-out}
out=${FAMILIES_WORK:-/tmp/h200-families}
mkdir -p "$out" "$dest"
pack() { tar -C "$out" -cJf "$dest/families.tar.xz" . 2>/dev/null; }
G=${GPUGRAPH:-./.devbin/gpugraph}
bin=${DEVBIN:-.devbin}
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR=/tmp/gpugraph-xdg
  mkdir -p -m 700 "$XDG_RUNTIME_DIR"
fi
small=${SMALL:-0}
pick() { if [ "$small" = 1 ]; then echo "$1"; else echo "$2"; fi; }
stages=${STAGES:-race compile reduce sort29 render hash tpch spatial suite fft solve traverse procgen}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
peer_ok() { python3 -c "import $1" >/dev/null 2>&1; }

if has race; then
  for i in 1 2 3 4 5 6; do
    for t in gpugraph-gpgpu--live_count-test gpugraph-command--dispatch-test; do
      [ -x "$bin/$t" ] || continue
      timeout 120 "$bin/$t" --test-threads 8 >"$out/race-$t-$i.log" 2>&1
      echo "race $t run $i: rc $?"
    done
  done | tee "$out/race.txt" | sort | uniq -c | sort -rn | head -4
  pack
fi

if has compile; then
  rows=$(pick 200000 50000000)
  table=/tmp/gpugraph-latency-$rows.parquet
  [ -f "$table" ] || "$G" generate-table --rows "$rows" --out "$table" >/dev/null 2>&1
  for th in 1 4 8 16; do
    GPUGRAPH_PIPELINE_CACHE=off GPUGRAPH_COMPILE_THREADS=$th GPUGRAPH_TRACE_UPLOAD=1 \
      "$G" analyze "$table" --value arr_delay --group carrier --x dep_time --y arr_delay \
      --out "$out/analyze-th$th" >"$out/analyze-th$th.txt" 2>"$out/analyze-th$th.log"
    echo "compile threads $th: rc $? $(grep -ho 'compiled [0-9]* pipelines in [0-9.]* ms' "$out/analyze-th$th.log") | $(grep -h '^timings' "$out/analyze-th$th.txt" | cut -c1-150)"
  done | tee "$out/compile.txt"
  grep -h "^upload " "$out"/analyze-th16.log | head -4
  pack
fi

if has reduce; then
  s=$(pick 2^20 2^28)
  "$G" bench reduce --sizes "$s" --repeat "$(pick 3 10)" --json "$out/reduce.json" \
    --reduce-policy default --reduce-policy vec4=8 --reduce-policy wg=512 \
    --reduce-policy wg=128,vec4=8 --reduce-policy partials=2048 --reduce-policy wg=512,vec4=8 \
    >"$out/reduce.txt" 2>&1 || tail -3 "$out/reduce.txt"
  if peer_ok torch; then
    python3 bench/peers/peers.py reduce --sizes "$(python3 -c "print(2**int('$s'[2:]))")" \
      --repeat 10 --json "$out/reduce-peer.json" >/dev/null 2>&1 \
      && python3 bench/combine.py "$out/reduce.json" "$out/reduce-peer.json" | cut -c1-140 | tee "$out/reduce-combined.txt"
  else
    grep -E "^reduce" "$out/reduce.txt" | cut -c1-120
  fi
  pack
fi

if has sort29; then
  # 2^29 uint32 keys are 2 GiB, above wgpu's storage binding cap: the key-window path.
  s=$(pick 2^20 2^29)
  timeout 240 "$G" bench sort --sizes "$s" --repeat 3 --json "$out/sort29.json" >"$out/sort29.txt" 2>&1
  echo "sort $s: rc $?"; grep -E "^ *sort-(keys|pairs)" "$out/sort29.txt" | grep -v "[.]pass\|[.]hist\|[.]enc\|[.]dec" | head -8 | cut -c1-130
  if peer_ok torch; then
    timeout 120 python3 bench/peers/peers.py sort --sizes "$(python3 -c "print(2**int('$s'[2:]))")" \
      --repeat 3 --json "$out/sort29-peer.json" >/dev/null 2>&1 \
      && python3 bench/combine.py "$out/sort29.json" "$out/sort29-peer.json" | grep -v "[.]pass\|[.]hist\|[.]enc\|[.]dec" | cut -c1-140 | tee "$out/sort29-combined.txt"
  fi
  pack
fi

if has render; then
  for n in $(pick "2000 20000" "1000000 16777216"); do
    timeout 240 "$G" render cull --instances "$n" --frames "$(pick 3 30)" --msaa 4 --pick 640,360 \
      --out "$out/cull-$n.png" >"$out/cull-$n.txt" 2>&1
    echo "render cull $n: rc $?"; tail -4 "$out/cull-$n.txt" | cut -c1-160
  done
  timeout 240 "$G" bench render --sizes "$(pick 2^12 2^20,2^24)" --repeat "$(pick 3 10)" \
    --json "$out/render.json" >"$out/render.txt" 2>&1 || tail -3 "$out/render.txt"
  grep -E "^cull" "$out/render.txt" | cut -c1-140
  pack
fi

if has hash; then
  timeout 240 "$G" bench hash --sizes "$(pick 2^12 2^20,2^26)" --repeat "$(pick 3 10)" \
    --json "$out/hash.json" >"$out/hash.txt" 2>&1 || tail -3 "$out/hash.txt"
  grep -E "^hash|probes" "$out/hash.txt" | cut -c1-140
  timeout 240 "$G" bench join --sizes "$(pick 2^12 2^22,2^26)" --repeat "$(pick 3 10)" \
    --json "$out/join.json" >"$out/join.txt" 2>&1 || tail -3 "$out/join.txt"
  grep -E "^join" "$out/join.txt" | cut -c1-140
  pack
fi

if has tpch; then
  if ! peer_ok duckdb && ls .wheels/duckdb-*.whl >/dev/null 2>&1; then
    python3 -m pip install --no-index --quiet .wheels/duckdb-*.whl >/dev/null 2>&1 || true
  fi
  cols=l_orderkey,l_quantity,l_extendedprice,l_shipdate,o_custkey,o_orderdate,o_totalprice
  for sf in $(pick "0.01" "1 10"); do
    li=/tmp/li$sf.parquet o=/tmp/o$sf.parquet
    [ -f "$li" ] || "$G" generate-table --tpch lineitem --scale "$sf" --out "$li" >/dev/null 2>&1
    [ -f "$o" ] || "$G" generate-table --tpch orders --scale "$sf" --out "$o" >/dev/null 2>&1
    timeout 240 "$G" join "$li" "$o" --left-on l_orderkey --right-on o_orderkey --select "$cols" \
      --out "/tmp/j$sf.parquet" >"$out/join-sf$sf.txt" 2>&1
    echo "join SF $sf: rc $?"; tail -5 "$out/join-sf$sf.txt" | cut -c1-160
    if peer_ok duckdb; then
      timeout 240 python3 bench/peers/peers_join.py "$li" "$o" --out "/tmp/jd$sf.parquet" --repeat 3 \
        --json "$out/join-peer-sf$sf.json" >"$out/join-peer-sf$sf.txt" 2>&1
      echo "duckdb SF $sf: rc $?"; tail -4 "$out/join-peer-sf$sf.txt" | cut -c1-160
    else
      echo "duckdb: not importable (carry a wheel: bash bench/wheels.sh)"
    fi
    pack
  done
fi

if has spatial; then
  q=$(pick 50 10000)
  timeout 300 "$G" bench spatial --sizes "$(pick 2^12 2^20,2^24)" --queries "$q" --repeat 3 \
    --dump /tmp/spdump --json "$out/spatial.json" >"$out/spatial.txt" 2>&1 || tail -3 "$out/spatial.txt"
  grep -E "^(path|scan|grid|bvh)" "$out/spatial.txt" | cut -c1-150
  if peer_ok scipy; then
    timeout 200 python3 bench/peers/spatial_ckdtree.py /tmp/spdump --repeat 3 \
      --json "$out/spatial-peer.json" --check "$out/spatial.json" 2>&1 | tail -6 | cut -c1-160
  else
    echo "scipy: not importable on this host (cKDTree peer skipped)"
  fi
  pack
fi
if has suite; then
  bash bench/device-suite.sh "$out/suite" | tee "$out/device-suite.txt" | tail -n 40
  pack
fi

if has fft; then
  # default = FftPolicy::for_device (columns=1024,swizzle=1 on NVIDIA); every labelled variant
  # is over FftPolicy::DEFAULT, so it repeats columns=1024,swizzle=1.
  v=columns=1024,swizzle=1,interleave=1
  timeout 480 "$G" bench fft --sizes "$(pick 2^12 2^24,2^26)" --repeat "$(pick 3 10)" \
    --fft-policy default --fft-policy $v --fft-policy $v,colelements=4096 \
    --fft-policy $v,colelements=2048 --fft-policy $v,split=64 \
    --fft-policy $v,colelements=4096,split=64 --fft-policy $v,threads=1024 \
    --fft-policy $v,colelements=4096,threads=1024 \
    --json "$out/fft.json" >"$out/fft.txt" 2>&1 || tail -3 "$out/fft.txt"
  if peer_ok torch; then
    timeout 100 python3 bench/peers/peers_fft.py --sizes "$(pick 4096 16777216,67108864)" --repeat 10 \
      --json "$out/fft-peer.json" >/dev/null 2>&1 \
      && python3 bench/combine.py "$out/fft.json" "$out/fft-peer.json" | cut -c1-200 | tee "$out/fft-combined.txt"
  else
    grep -E "^ *fft" "$out/fft.txt" | cut -c1-140
  fi
  pack
fi

if has solve; then
  grid=$(pick 64 2048)
  timeout 150 "$G" solve --matrix "poisson2d:$grid" --tol 1e-6 --max-iter "$(pick 400 6000)" \
    --precond jacobi --out /tmp/solve-x.npy --report "$out/solve-report.json" >"$out/solve.txt" 2>&1
  echo "solve $grid: rc $?"; grep -v "^ *[|├└│]" "$out/solve.txt" | tail -8 | cut -c1-160
  timeout 200 "$G" bench solve --grid "$grid" --tol 1e-6 --max-iter "$(pick 400 6000)" --repeat 3 \
    --json "$out/solve-bench.json" >"$out/solve-bench.txt" 2>&1 || tail -3 "$out/solve-bench.txt"
  grep -E "pcg" "$out/solve-bench.txt" | cut -c1-150
  if peer_ok cupyx; then
    timeout 120 python3 bench/peers/peers_cg.py --grid "$grid" --tol 1e-6 --precond jacobi --repeat 3 \
      --json "$out/solve-peer.json" 2>&1 | tail -4 | cut -c1-160
  fi
  pack
fi

if has traverse; then
  timeout 200 "$G" bench traverse --sizes "$(pick 2^12 2^20,2^24)" --repeat "$(pick 3 10)" \
    --json "$out/traverse.json" >"$out/traverse.txt" 2>&1 || tail -3 "$out/traverse.txt"
  grep -E "traverse" "$out/traverse.txt" | cut -c1-150 | head -12
  if peer_ok torch; then
    timeout 150 python3 bench/peers/peers_traverse.py --sizes "$(pick 4096 1048576,16777216)" \
      --repeat "$(pick 3 10)" --json "$out/traverse-peer.json" 2>&1 | tail -8 | cut -c1-160
  fi
  pack
fi

if has procgen; then
  timeout 100 "$G" procgen run crates/gpugraph-procgen/examples/graph/scatter_expand.luau --frames 5 \
    --report "$out/procgen-report.json" >"$out/procgen.txt" 2>&1
  echo "procgen: rc $?"; tail -12 "$out/procgen.txt" | cut -c1-200
  timeout 100 "$G" procgen run crates/gpugraph-procgen/examples/graph/sprout_tail.luau --frames 4 \
    --report "$out/procgen-wait-report.json" >"$out/procgen-wait.txt" 2>&1
  echo "procgen sprout_tail: rc $?"; tail -12 "$out/procgen-wait.txt" | cut -c1-200
  pack
fi
pack
echo "families: done ($(du -h "$dest/families.tar.xz" | cut -f1))"
