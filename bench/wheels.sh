#!/usr/bin/env bash
# Downloads the Python wheels the device's peers need but the device lacks (it has no network)
# into .wheels/ (git-ignored), for the device tool's carry: bash bench/wheels.sh [PYVER]
# PYVER is the device's CPython (default 3.12); DuckDB is the hash-join peer (~20 MB).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
mkdir -p .git/info && touch .git/info/exclude
grep -qxF /.wheels/ .git/info/exclude || echo /.wheels/ >> .git/info/exclude
py=${1:-3.12}
# Newer glibc tags first: DuckDB publishes 2.x only as manylinux_2_27/2_28 wheels, and with
# manylinux2014 alone pip silently settles for 1.2.2. DUCKDB pins the version the issue's
# reference numbers came from.
rm -f .wheels/duckdb-*.whl
python3 -m pip download "duckdb==${DUCKDB:-2.0.1}" --no-deps --only-binary=:all: --python-version "$py" \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
  -d .wheels
du -sh .wheels
