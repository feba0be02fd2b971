#!/usr/bin/env bash
# Session-3 exploration sweep (untracked): scan/compaction look-back window and tile size.
out=$1; G=./.devbin/gpugraph; export WGPU_BACKEND=vulkan; R=10
run() { name=$1; shift; echo "=== $name"; "$G" bench "$@" --repeat $R --json "$out/$name.json" 2>"$out/$name.log" | grep -v "^$" | tail -40 || tail -3 "$out/$name.log"; }
run scan scan --sizes 2^28 --scan-policy default --scan-policy window=128 --scan-policy window=256 --scan-policy vec4=16 --scan-policy vec4=16,window=128 --scan-policy vec4=4,window=128 --scan-policy wg=512,vec4=4 --scan-policy wg=128,vec4=16 --scan-policy subgroups=1,window=128 --scan-policy spin=1000
run compact compact --sizes 2^28 --selected 1,50 --scan-policy default --scan-policy window=128 --scan-policy vec4=8 --scan-policy vec4=8,window=128 --scan-policy subgroups=0,vec4=8
run group group --sizes 2^24,2^28
run mask mask --sizes 2^24,2^28
run reduce reduce --sizes 2^28
