#!/usr/bin/env bash
# Installs the Debian packages nnmem needs to build and test, when missing.
# Usage: scripts/install-deps.sh [build|test|bench]
set -euo pipefail
need=(cmake make gcc pkg-config libcjson-dev libprotobuf-c-dev protobuf-c-compiler)
if [ "${1:-build}" = test ]; then
  need+=(libcmocka-dev libonnx-testdata libxml2-dev) # libxml2: test_map reads the SVG
  need+=(chromium) # tests/cli/map_browser.sh (about 20 s; skips without it)
fi
if [ "${1:-build}" = bench ]; then
  need+=(libjemalloc-dev libmimalloc-dev) # optional: bench/alloc skips absent ones
fi
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "nnmem: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "nnmem: need root to install ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
