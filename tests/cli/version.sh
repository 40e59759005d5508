#!/usr/bin/env bash
# CLI: --version, -V and `nnmem version` print "nnmem <project version>", the
# version of project() in CMakeLists.txt as the library reports it
# (nnmem_version()), and --help lists the option.
. "$(dirname "$0")/lib/common.sh"

want=$(sed -n 's/^project(nnmem VERSION \([0-9][0-9.]*\).*/\1/p' \
  "$NNMEM_SOURCE_DIR/CMakeLists.txt")
[ -n "$want" ] || { echo "no project(nnmem VERSION ...) in CMakeLists.txt" >&2; exit 1; }

for arg in --version -V version; do
  expect_rc 0 "$arg"
  [ "$(cat "$T/stdout")" = "nnmem $want" ] ||
    fail "expected exactly 'nnmem $want'"
  err_empty
done

expect_rc 0 --help
out_has "-V, --version"

# Extra arguments after --version are not an error; the output is the same.
expect_rc 0 --version --help
out_has "nnmem $want"

finish
