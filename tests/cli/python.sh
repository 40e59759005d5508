#!/usr/bin/env bash
# The Python package (python/nnmem) over this build's nnmem binary: the
# unit tests in tests/python/test_nnmem.py. Installing it with pip (which
# builds the tool with CMake) is checked by tests/python/pip_install.sh,
# run by hand or with NNMEM_TEST_PIP=1 (it needs PyPI for setuptools).
. "$(dirname "$0")/lib/common.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 is absent"
python3 -c 'import dataclasses' 2>/dev/null || skip "python3 is too old"

if NNMEM_CLI="$NNMEM_BIN" PYTHONPATH="$NNMEM_SOURCE_DIR/python" \
  python3 "$NNMEM_SOURCE_DIR/tests/python/test_nnmem.py" -v \
  >"$T/stdout" 2>"$T/stderr"; then
  :
else
  fail "tests/python/test_nnmem.py failed"
fi
if [ "${NNMEM_TEST_PIP:-0}" = 1 ]; then
  bash "$NNMEM_SOURCE_DIR/tests/python/pip_install.sh" >"$T/stdout" 2>"$T/stderr" ||
    fail "pip install ./python failed"
fi
finish
