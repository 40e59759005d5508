#!/usr/bin/env bash
# Makes sure the packages nnmem needs are present, installing the missing
# Debian ones with apt-get when it can.
# Usage: scripts/install-deps.sh [build|test|bench]
#
# Each need is a Debian package plus a probe that finds it without dpkg (a
# program on PATH, a header the C compiler can include). A need counts as
# met when dpkg says the package is installed or the probe succeeds, so a
# library built from source or a non-Debian system is fine. What is missing
# is then installed with apt-get (as root), or named with the command to run
# (not root: exit 1). Without apt-get (another distribution, a container
# without dpkg) the list is printed and the build goes on: CMake then stops
# with a clear message if something is really absent.
# Optional needs (ONNX test models, jemalloc/mimalloc for the benchmark) are
# installed when possible and never fail the script.
set -uo pipefail
mode=${1:-build}

# need: package|probe|what (probe: cmd:NAME, header:PATH, dir:PATH,
# py:MODULE for python3 on PATH, pyany:MODULE for it or /usr/bin/python3,
# lib:SONAME)
needs=(
  "cmake|cmd:cmake|CMake"
  "make|cmd:make|make"
  "gcc|cmd:${CC:-cc}|a C compiler (${CC:-cc})"
  "pkg-config|cmd:pkg-config|pkg-config (finds cmocka for the tests)"
  "libcjson-dev|header:cjson/cJSON.h|cJSON headers and library"
  "libprotobuf-c-dev|header:protobuf-c/protobuf-c.h|protobuf-c headers and library"
  "protobuf-c-compiler|cmd:protoc-c|the protoc-c code generator"
)
optional=()
# libnuma: NUMA-bound pools (the build falls back to one node without it)
optional+=("libnuma-dev|header:numa.h|libnuma (NUMA pools bind node memory; one node without it)")
optional+=("libmicrohttpd-dev|header:microhttpd.h|libmicrohttpd (the live /metrics endpoint; without it the endpoint is off)")
optional+=("libunwind8|lib:libunwind.so.8|libunwind (leak-record backtraces ~20x faster than glibc's backtrace(); opened at run time)")
case "$mode" in
build) ;;
test)
  needs+=("libcmocka-dev|header:cmocka.h|cmocka (unit tests)")
  needs+=("python3|cmd:python3|Python 3 (CLI tests: the README tour, exact JSON checks)")
  needs+=("python3-prometheus-client|py:prometheus_client|the Prometheus text parser (export tests)")
  needs+=("python3-pytest|pyany:pytest|pytest (the Python package tests)")
  needs+=("libxml2-dev|header:libxml/parser.h|libxml2 (test_map reads the SVG back)")
  needs+=("chromium|cmd:chromium|headless Chromium (the HTML memory map test, about 20 s)")
  optional+=("libonnx-testdata|dir:/usr/share/libonnx-testdata|ONNX conformance models (tests skip without them)")
  ;;
bench)
  optional+=("libjemalloc-dev|header:jemalloc/jemalloc.h|jemalloc (bench/alloc skips it when absent)")
  optional+=("libmimalloc-dev|header:mimalloc.h|mimalloc (bench/alloc skips it when absent)")
  ;;
*)
  echo "usage: $0 [build|test|bench]" >&2
  exit 2
  ;;
esac

have_dpkg() { command -v dpkg-query >/dev/null 2>&1; }

probe() {
  local kind=${1%%:*} arg=${1#*:}
  case "$kind" in
  cmd) command -v "$arg" >/dev/null 2>&1 ;;
  dir) [ -d "$arg" ] ;;
  lib) ldconfig -p 2>/dev/null | grep -qF "$arg" ;;
  py) command -v python3 >/dev/null 2>&1 && python3 -c "import $arg" 2>/dev/null ;;
  pyany) # the system python3 or the first on PATH (tests try both)
    for py in python3 /usr/bin/python3; do
      command -v "$py" >/dev/null 2>&1 && "$py" -c "import $arg" 2>/dev/null &&
        return 0
    done
    return 1
    ;;
  header)
    command -v "${CC:-cc}" >/dev/null 2>&1 &&
      printf '#include <%s>\n' "$arg" | "${CC:-cc}" -E -x c - >/dev/null 2>&1
    ;;
  esac
}

# present PACKAGE PROBE: dpkg knows it installed, or the probe finds it.
present() {
  if have_dpkg &&
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; then
    return 0
  fi
  probe "$2"
}

missing=() missing_what=() missing_opt=()
for n in "${needs[@]}"; do
  IFS='|' read -r pkg pr what <<<"$n"
  present "$pkg" "$pr" || { missing+=("$pkg"); missing_what+=("  $pkg: $what"); }
done
for n in ${optional[@]+"${optional[@]}"}; do
  IFS='|' read -r pkg pr what <<<"$n"
  present "$pkg" "$pr" || { missing_opt+=("$pkg"); missing_what+=("  $pkg (optional): $what"); }
done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ] && exit 0

all=(${missing[@]+"${missing[@]}"} ${missing_opt[@]+"${missing_opt[@]}"})
echo "nnmem: not found:"
printf '%s\n' "${missing_what[@]}"

if ! command -v apt-get >/dev/null 2>&1; then
  echo "nnmem: no apt-get here: install the equivalents of the packages above" \
    "with your package manager; continuing (CMake reports what is really" \
    "missing)" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing[@]} -eq 0 ]; then
    echo "nnmem: optional packages not installed (not root): sudo apt-get install -y ${all[*]}" >&2
    exit 0
  fi
  echo "nnmem: need root to install ${all[*]}; run: sudo apt-get install -y ${all[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
install_pkgs() {
  apt-get install -y --no-install-recommends "$@" ||
    { apt-get update && apt-get install -y --no-install-recommends "$@"; }
}
echo "nnmem: installing ${all[*]}"
if [ ${#missing[@]} -gt 0 ] && ! install_pkgs "${missing[@]}"; then
  echo "nnmem: apt-get could not install ${missing[*]}" >&2
  exit 1
fi
if [ ${#missing_opt[@]} -gt 0 ] && ! install_pkgs "${missing_opt[@]}"; then
  echo "nnmem: optional packages not installed: ${missing_opt[*]}" >&2
fi
exit 0
