#!/usr/bin/env bash
# Packaging: another project uses nnmem in each supported way.
#   1. add_subdirectory(<nnmem source>) in a consumer project: nnmem builds
#      only its libraries there (no tests, tools, benchmarks), its generated
#      files stay in its own binary folder, nnmem::nnmem and
#      nnmem::nnmem_shared link and run;
#   2. `cmake --install` of this build tree with DESTDIR and --prefix: the
#      expected files and only those headers;
#   3. find_package(nnmem CONFIG) from that (moved) prefix with pkg-config
#      disabled: the static and the shared library link and run;
#   4. pkg-config --cflags --libs nnmem (shared) and --static (static).
# Environment (set by tests/CMakeLists.txt): CMAKE, CC, NNMEM_SOURCE_DIR,
# NNMEM_BUILD_DIR, NNMEM_VERSION, NNMEM_SAN_FLAGS (sanitizer flags of this
# build, for the consumers), NNMEM_HAVE_CLI (ON when the CLI is installed).
# Exits 77 when cmake or the compiler is missing.
set -u
for v in CMAKE CC NNMEM_SOURCE_DIR NNMEM_BUILD_DIR NNMEM_VERSION; do
  [ -n "${!v:-}" ] || { echo "$v is not set" >&2; exit 1; }
done
command -v "$CMAKE" >/dev/null 2>&1 || { echo "SKIP: no cmake"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler"; exit 77; }
SAN=${NNMEM_SAN_FLAGS:-}
JOBS=${NNMEM_TEST_JOBS:-2}
T=$(mktemp -d "${TMPDIR:-/tmp}/nnmem-pkg.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
CONSUMER=$(cd "$(dirname "$0")/consumer" && pwd)
FAILURES=0

fail() {
  FAILURES=$((FAILURES + 1))
  echo "FAIL: $*" >&2
}
# run LOG CMD...: runs CMD with output in $T/LOG.log; shows it on failure.
run() {
  local log=$T/$1.log
  shift
  "$@" >"$log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$* (exit $rc)"
    tail -n 40 "$log" >&2
    return 1
  fi
}
# runs_ok LOG PROGRAM: the consumer prints its success line.
runs_ok() {
  run "$1" "$2" || return 1
  grep -qx "consumer ok $NNMEM_VERSION height [0-9]*" "$T/$1.log" ||
    fail "$2 printed: $(head -c 300 "$T/$1.log")"
}
# needs_libnnmem_so PROGRAM yes|no: dynamic dependency on libnnmem.so.
needs_libnnmem_so() {
  command -v readelf >/dev/null 2>&1 || return 0
  if readelf -d "$1" | grep -q 'NEEDED.*libnnmem\.so'; then
    [ "$2" = yes ] || fail "$1 needs libnnmem.so but should be static"
  else
    [ "$2" = no ] || fail "$1 does not need libnnmem.so"
  fi
}
configure() {
  "$CMAKE" -DCMAKE_BUILD_TYPE= "-DCMAKE_C_FLAGS=$SAN" \
    "-DCMAKE_EXE_LINKER_FLAGS=$SAN" "-DCMAKE_SHARED_LINKER_FLAGS=$SAN" \
    -DCMAKE_C_COMPILER="$CC" "$@"
}

# ---- 1. add_subdirectory ---------------------------------------------------
echo "== add_subdirectory"
if run sub-configure configure -S "$CONSUMER" -B "$T/sub" \
  -DNNMEM_SOURCE="$NNMEM_SOURCE_DIR" &&
  run sub-build "$CMAKE" --build "$T/sub" -j "$JOBS"; then
  runs_ok sub-static "$T/sub/consumer_static"
  runs_ok sub-shared "$T/sub/consumer_shared"
  needs_libnnmem_so "$T/sub/consumer_static" no
  needs_libnnmem_so "$T/sub/consumer_shared" yes
  [ -f "$T/sub/nnmem/nnmem_generated/include/nnmem/version.h" ] ||
    fail "generated headers are not in nnmem's own binary folder"
  if [ -e "$T/sub/nnmem_generated" ] || [ -e "$T/sub/generated" ]; then
    fail "nnmem wrote generated files into the parent's binary folder"
  fi
  grep -q "add_test" "$T/sub/nnmem/CTestTestfile.cmake" 2>/dev/null &&
    fail "nnmem registered its tests inside the consumer"
fi

# ---- 2. cmake --install with DESTDIR ---------------------------------------
echo "== cmake --install"
STAGE=$T/stage
# cmake --install rewrites the build tree's install_manifest.txt, which
# `make uninstall` reads: keep the user's.
MANIFEST=$NNMEM_BUILD_DIR/install_manifest.txt
[ -f "$MANIFEST" ] && cp -p "$MANIFEST" "$T/manifest.keep"
DESTDIR=$STAGE run install "$CMAKE" --install "$NNMEM_BUILD_DIR" --prefix /opt/nnmem
ok=$?
if [ -f "$T/manifest.keep" ]; then
  cp -p "$T/manifest.keep" "$MANIFEST"
else
  rm -f "$MANIFEST"
fi
if [ "$ok" -ne 0 ]; then
  echo "$FAILURES failure(s)" >&2
  exit 1
fi
# Move the prefix: the package files must not remember where they were.
mv "$STAGE/opt/nnmem" "$T/prefix"
P=$T/prefix
LIBA=$(find "$P" -name libnnmem.a | head -n 1)
LIBDIR=$(dirname "${LIBA:-$P/lib/none}")
for f in "$LIBDIR/libnnmem.a" "$LIBDIR/libnnmem.so" \
  "$LIBDIR/libnnmem.so.${NNMEM_VERSION%%.*}" "$LIBDIR/libnnmem.so.$NNMEM_VERSION" \
  "$LIBDIR/pkgconfig/nnmem.pc" "$LIBDIR/cmake/nnmem/nnmemConfig.cmake" \
  "$LIBDIR/cmake/nnmem/nnmemConfigVersion.cmake" \
  "$LIBDIR/cmake/nnmem/nnmemTargets.cmake" \
  "$LIBDIR/cmake/nnmem/nnmemDependencies.cmake" \
  "$P/include/nnmem/version.h" "$P/include/nnmem/export.h" \
  "$P/include/nnmem/nnmem.h"; do
  [ -e "$f" ] || fail "not installed: ${f#"$T"/}"
done
# Headers: exactly include/nnmem/*.h plus the generated version.h.
(cd "$NNMEM_SOURCE_DIR/include/nnmem" && ls -- *.h; echo version.h) | sort >"$T/want-h"
(cd "$P/include/nnmem" && ls) | sort >"$T/got-h"
diff "$T/want-h" "$T/got-h" >"$T/h.diff" ||
  fail "installed headers differ from include/nnmem/ + version.h: $(cat "$T/h.diff")"
# Each installed header compiles on its own (it includes what it uses, e.g.
# nnmem/export.h for NNMEM_API), as C11 and, when a C++ compiler is here, as
# C++ (extern "C" guards).
CXX_BIN=$(command -v c++ || true)
for h in "$P"/include/nnmem/*.h; do
  name=nnmem/$(basename "$h")
  printf '#include <%s>\n' "$name" >"$T/one.c"
  "$CC" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$P/include" "$T/one.c" \
    >"$T/one.log" 2>&1 || fail "$name does not compile alone: $(head -c 600 "$T/one.log")"
  if [ -n "$CXX_BIN" ]; then
    "$CXX_BIN" -x c++ -Wall -Werror -fsyntax-only -I"$P/include" "$T/one.c" \
      >"$T/one.log" 2>&1 || fail "$name does not compile as C++: $(head -c 600 "$T/one.log")"
  fi
done
grep -q "#define NNMEM_VERSION_STRING \"$NNMEM_VERSION\"" \
  "$P/include/nnmem/version.h" || fail "installed version.h lacks $NNMEM_VERSION"
if [ "${NNMEM_HAVE_CLI:-OFF}" = ON ]; then
  run cli "$P/bin/nnmem" --version &&
    { grep -qx "nnmem $NNMEM_VERSION" "$T/cli.log" ||
      fail "installed nnmem --version: $(cat "$T/cli.log")"; }
fi

# ---- 3. find_package, without pkg-config -----------------------------------
echo "== find_package(nnmem CONFIG)"
if run fp-configure configure -S "$CONSUMER" -B "$T/fp" \
  -DCMAKE_PREFIX_PATH="$P" -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON &&
  run fp-build "$CMAKE" --build "$T/fp" -j "$JOBS"; then
  grep -q "consumer: nnmem $NNMEM_VERSION from $P" "$T/fp-configure.log" ||
    fail "find_package did not find nnmem $NNMEM_VERSION in the prefix"
  runs_ok fp-static "$T/fp/consumer_static"
  runs_ok fp-shared "$T/fp/consumer_shared"
  needs_libnnmem_so "$T/fp/consumer_static" no
  needs_libnnmem_so "$T/fp/consumer_shared" yes
fi

# ---- 4. pkg-config ----------------------------------------------------------
echo "== pkg-config"
if command -v pkg-config >/dev/null 2>&1; then
  export PKG_CONFIG_PATH=$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  v=$(pkg-config --modversion nnmem 2>&1)
  [ "$v" = "$NNMEM_VERSION" ] || fail "pkg-config --modversion nnmem: $v"
  # shellcheck disable=SC2046,SC2086 # the flags are words
  if run pc-shared-build "$CC" $SAN "$CONSUMER/main.c" -o "$T/pc_shared" \
    $(pkg-config --cflags --libs nnmem); then
    LD_LIBRARY_PATH=$LIBDIR runs_ok pc-shared "$T/pc_shared"
    needs_libnnmem_so "$T/pc_shared" yes
  fi
  libs=$(pkg-config --static --libs nnmem | sed 's/-lnnmem\b/-l:libnnmem.a/')
  # shellcheck disable=SC2046,SC2086
  if run pc-static-build "$CC" $SAN "$CONSUMER/main.c" -o "$T/pc_static" \
    $(pkg-config --static --cflags nnmem) $libs; then
    runs_ok pc-static "$T/pc_static"
    needs_libnnmem_so "$T/pc_static" no
  fi
else
  echo "(no pkg-config: part 4 skipped)"
fi

if [ "$FAILURES" -ne 0 ]; then
  echo "$FAILURES failure(s)" >&2
  exit 1
fi
echo "ok"
