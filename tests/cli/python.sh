#!/usr/bin/env bash
# The Python package (python/nnmem) over this build: tests/python/*.py with
# pytest — the planner API over this build's nnmem binary (NNMEM_CLI) and
# the runtime API (Pool, Allocator) over the libnnmem.so beside it. In a
# sanitizer build the library needs the ASan runtime loaded first, so the
# interpreter runs with it preloaded (leak checks off: they would report
# the interpreter's own). Installing with pip (which builds the tool with
# CMake) is checked by tests/python/pip_install.sh, run by hand or with
# NNMEM_TEST_PIP=1 (it needs PyPI for setuptools).
. "$(dirname "$0")/lib/common.sh"

PY=
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
    "$cand" -c 'import dataclasses, pytest' 2>/dev/null; then
    PY=$cand
    break
  fi
done
[ -n "$PY" ] || skip "no python3 with pytest (Debian: python3-pytest)"

LIB=$(dirname "$NNMEM_BIN")/libnnmem.so
[ -f "$LIB" ] || fail "no $LIB beside $NNMEM_BIN"
PRELOAD=
if ldd "$LIB" 2>/dev/null | grep -q libasan; then
  PRELOAD=$(${CC:-cc} -print-file-name=libasan.so)
  [ -f "$PRELOAD" ] || skip "sanitizer build but no libasan.so to preload"
fi

if NNMEM_CLI="$NNMEM_BIN" NNMEM_LIBRARY="$LIB" \
  PYTHONPATH="$NNMEM_SOURCE_DIR/python" NNMEM_SOURCE_DIR="$NNMEM_SOURCE_DIR" \
  LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  "$PY" -m pytest -q -p no:cacheprovider \
  "$NNMEM_SOURCE_DIR/tests/python/test_nnmem.py" \
  "$NNMEM_SOURCE_DIR/tests/python/test_native.py" \
  >"$T/stdout" 2>"$T/stderr"; then
  :
else
  cat "$T/stdout" "$T/stderr" >&2
  fail "tests/python (pytest) failed"
fi
if [ "${NNMEM_TEST_PIP:-0}" = 1 ]; then
  bash "$NNMEM_SOURCE_DIR/tests/python/pip_install.sh" >"$T/stdout" 2>"$T/stderr" ||
    fail "pip install ./python failed"
fi
finish
