#!/usr/bin/env bash
# Packs everything a run on the lent NVIDIA machine needs (it has no cargo and no network):
#   bash bench/device-pack.sh
# 1. .gl/: the Vulkan/EGL loader packages and setup.sh (from GPUGRAPH_GL_DEBS, default
#    ../shared/gpu when present; otherwise downloaded with apt-get download).
# 2. .devbin/pack.tar.xz: the release `gpugraph` binary, every release test binary named
#    <package>--<target>-test (two crates may both have a `tables` test), and the examples,
#    stripped and xz-packed, with .devbin/unpack.sh. Both folders are git-ignored.
# Device command: carry [".gl", ".devbin"],
#   . .gl/setup.sh; bash .devbin/unpack.sh; bash bench/device-suite.sh $OUT; bash bench/h200.sh $OUT
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
# CARGO_TARGET_DIR is honored (e.g. target-o3 for the level-3 build beside the CI profile's),
# and CARGO (e.g. "cargo --config .ci/profile.toml" to pack the CI profile's build in target/
# without rebuilding it at level 3).
target=${CARGO_TARGET_DIR:-target}
cargo=${CARGO:-cargo}
mkdir -p .git/info && touch .git/info/exclude
for d in /.gl/ /.devbin/; do grep -qxF "$d" .git/info/exclude || echo "$d" >> .git/info/exclude; done
if [ "${PACK_CLI:-}" = 1 ]; then
  # .devcli/: the release CLI alone (~10 MB), for calls whose carry also holds Python wheels.
  # It packs the binary the last full build made (a `cargo build -p`/`--bins` here would
  # resolve features differently and rebuild DataFusion and wgpu).
  grep -qxF /.devcli/ .git/info/exclude || echo /.devcli/ >> .git/info/exclude
  [ -x "$target/release/gpugraph" ] || { echo "build first: cargo build --release --workspace --all-targets" >&2; exit 1; }
  rm -rf .devcli && mkdir -p .devcli
  strip -o .devcli/gpugraph "$target/release/gpugraph"
  xz -T0 -6 .devcli/gpugraph
  printf '%s\n' 'd=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); xz -dkf "$d/gpugraph.xz" && chmod +x "$d/gpugraph"' > .devcli/unpack.sh
  du -sh .devcli
  exit 0
fi
rm -rf .devbin .gl && mkdir -p .gl .devbin/stage
debs=${GPUGRAPH_GL_DEBS:-$root/../shared/gpu}
if [ -d "$debs" ]; then
  cp "$debs"/*.deb "$debs"/setup.sh .gl/
else
  (cd .gl && apt-get download libvulkan1 libegl1 libglvnd0)
  cat > .gl/setup.sh <<'SETUP'
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
SETUP
fi
# PACK_EXCLUDE="crate ...": leave these workspace crates out of a whole-suite pack.
exclude=""
for p in ${PACK_EXCLUDE:-}; do exclude="$exclude --exclude $p"; done
if [ "${PACK_TESTS:-}" = none ]; then
  # Only the CLI: no test binary or example to build (a bench-only call).
  $cargo build --release -p gpugraph-cli --bins 2>&1 | tail -2
elif [ -n "${PACK_PACKAGES:-}" ]; then
  # PACK_PACKAGES="gpugraph-render gpugraph-arrow": the CLI and only these crates' tests.
  $cargo build --release -p gpugraph-cli --bins 2>&1 | tail -2
else
  # shellcheck disable=SC2086
  $cargo build --release --workspace --all-targets $exclude 2>&1 | tail -2
fi
scope="--workspace $exclude"
[ -n "${PACK_PACKAGES:-}" ] && scope=$(printf -- '-p %s ' $PACK_PACKAGES)
# shellcheck disable=SC2086
[ "${PACK_TESTS:-}" = none ] || $cargo test --release $scope --no-run --message-format=json 2>/dev/null | python3 -c '
import json, shutil, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except Exception:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        pkg = m["package_id"].split("#")[0].rstrip("/").split("/")[-1].split("@")[0]
        name = m["target"]["name"]
        shutil.copy(m["executable"], os.path.join(".devbin/stage", f"{pkg}--{name}-test"))
'
cp "$target/release/gpugraph" .devbin/stage/
[ "${PACK_TESTS:-}" = none ] || [ -n "${PACK_PACKAGES:-}" ] || for e in "$target"/release/examples/*; do
  case "$e" in *-*|*.d) ;; *) [ -x "$e" ] && cp "$e" ".devbin/stage/example-$(basename "$e")" ;; esac
done
# PACK_TESTS=REGEX keeps only the test binaries whose names match (the carry is limited to 64 MiB
# in all; the whole suite alone comes close), e.g. PACK_TESTS='live_count|dispatch' for
# bench/h200-families.sh; PACK_TESTS=none keeps none.
if [ -n "${PACK_TESTS:-}" ]; then
  for t in .devbin/stage/*-test; do
    [ -e "$t" ] || continue
    basename "$t" | grep -Eq -- "${PACK_TESTS}" || rm -f "$t"
  done
fi
strip .devbin/stage/* 2>/dev/null || true
# One solid stream with a dictionary larger than a binary: the test binaries share most of their
# code (wgpu, naga), so the whole suite packs in ~41 MiB instead of ~90 (the carry limit is 64).
tar -C .devbin/stage --sort=name -cf - . | xz -T1 --lzma2=preset=6,dict=512MiB > .devbin/pack.tar.xz
rm -rf .devbin/stage
cat > .devbin/unpack.sh <<'UNPACK'
# Unpacks the carried binaries next to this script: bash .devbin/unpack.sh
d=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tar -C "$d" -xJf "$d/pack.tar.xz" && ls "$d" | grep -c -- '-test$' | sed 's/^/unpacked test binaries: /'
UNPACK
du -sh .gl .devbin
