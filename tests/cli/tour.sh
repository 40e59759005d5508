#!/usr/bin/env bash
# CLI: the README's tour runs as written. Every ```console block of
# README.md is run command by command in a scratch folder where build/nnmem
# is the binary under test and examples/ a copy of the source examples, and
# the output must match what the README shows (conventions: tour.py). Also
# checks that a changed figure or a broken command makes it fail.
. "$(dirname "$0")/lib/common.sh"

have_python || skip "python3 is needed to run the README tour"
SRC=${NNMEM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 "$(dirname "$0")/tour.py" "$SRC/README.md" "$NNMEM_BIN" "$SRC" --self-test ||
  fail "the README tour does not run as written (diffs above)"
finish
