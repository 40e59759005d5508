#!/usr/bin/env bash
# pip install ./python into a fresh virtual environment (pip builds the
# nnmem tool with CMake inside it), then plan a model through the
# installed package. Needs python3's venv module and PyPI (setuptools).
# Usage: tests/python/pip_install.sh [SOURCE_DIR]   (exit 77: cannot run)
set -eu
SRC=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/nnmem-pip.XXXXXX")
trap 'rm -rf "$T"' EXIT
python3 -m venv "$T/venv" 2>/dev/null || { echo "skip: no venv module" >&2; exit 77; }
"$T/venv/bin/python" -m pip install --quiet "$SRC/python"
cd "$T" # not the source tree: the installed package must be the one found
NNMEM_CLI= NNMEM_LIBRARY= "$T/venv/bin/python" - "$SRC" <<'PY'
import sys, nnmem
src = sys.argv[1]
assert nnmem.cli_path().startswith(sys.prefix), nnmem.cli_path()
r = nnmem.plan(src + "/examples/problems/small.csv")
assert (r.peak, r.fits, r.optimal) == (96, True, True), r
m = nnmem.plan()  # the built-in resnet50
assert nnmem.library_path().startswith(sys.prefix), nnmem.library_path()
with nnmem.Pool("tlsf", device="1GiB") as pool:  # the shipped libnnmem.so
    a = pool.alloc("64MiB")
    pool.free(a)
    assert pool.stats()["allocations_total"] == 1
print("installed:", nnmem.__version__, "| resnet50 peak", m.peak, "arena", m.height)
PY
