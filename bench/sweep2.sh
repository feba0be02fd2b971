#!/usr/bin/env bash
# Session-3 sweep 2 (untracked): subgroup look-back, mask loads, group merge, mixed floors; peers.
out=$1; G=./.devbin/gpugraph; export WGPU_BACKEND=vulkan; R=10
run() { name=$1; shift; echo "=== $name"; "$G" bench "$@" --repeat $R --json "$out/$name.json" 2>"$out/$name.log" | grep -v "^$" | tail -40 || tail -3 "$out/$name.log"; }
peer() { python3 bench/peers/peers.py "$@" 2>&1 | tail -12; }
run scan scan --sizes 2^28 --scan-policy default --scan-policy sglb=1 --scan-policy sglb=1,vec4=4 --scan-policy sglb=1,vec4=16 --scan-policy sglb=1,wg=128,vec4=16 --scan-policy sglb=1,subgroups=1 --scan-policy sglb=1,wg=512,vec4=4 --scan-policy sglb=1,spin=64 --scan-policy window=16 --scan-policy wg=128,vec4=16
run compact compact --sizes 2^28 --selected 1,50,100 --scan-policy default --scan-policy sglb=1 --scan-policy sglb=1,subgroups=0 --scan-policy sglb=1,subgroups=0,vec4=8 --scan-policy sglb=1,vec4=2
run group group --sizes 2^24,2^28
run mask mask --sizes 2^24,2^28
run reduce reduce --sizes 2^24,2^28
run histogram histogram --sizes 2^28
echo "=== peers"; peer scan --sizes 268435456 --repeat $R; peer compact --sizes 268435456 --selected 1,50,100 --repeat $R; peer group --sizes 16777216 --repeat $R; peer reduce --sizes 268435456 --repeat $R
