#!/usr/bin/env bash
# CLI: the shared MiniMalloc problems and real traces (skipped without
# $NNMEM_DATA_DIR).
. "$(dirname "$0")/lib/common.sh"

D="${NNMEM_DATA_DIR:-}/dsa"
[ -n "${NNMEM_DATA_DIR:-}" ] && [ -d "$D" ] || skip "no data at '$D'"

EX="$D/minimalloc/example.12.csv"
if [ -f "$EX" ]; then
  expect_rc 0 plan "$EX" --capacity 12 --out "$T/ex.csv"
  out_matches "height +12 B"
  expect_rc 0 verify --capacity 12 "$T/ex.csv"
  out_has "valid: height 12 (lower bound 12, ratio 1.000x)"
  expect_rc 0 verify "$EX" "$T/ex.csv"
fi

# The challenging problems have (almost) zero slack: greedy plans do not
# fit their capacity.
A="$D/minimalloc/A.1048576.csv"
if [ -f "$A" ]; then
  expect_rc 2 plan "$A" --capacity 1048576 --out "$T/should-not-exist.csv"
  err_has "does not fit"
  no_file "$T/should-not-exist.csv"
  expect_rc 0 plan "$A" --out "$T/a.csv" --json
  json_valid "$T/stdout"
  expect_rc 0 verify "$T/a.csv"
fi

R="$D/traces/resnet50.csv"
if [ -f "$R" ]; then
  expect_rc 0 plan "$R" --out "$T/r.csv"
  out_has "1,042 buffers"
  out_matches "lower bound +1\.4 GiB \(1,515,472,556 B\)"
  expect_rc 0 verify "$T/r.csv"
  out_has "lower bound 1515472556"
  expect_rc 0 plan "$R" --strategy greedy-size --align 256 --out "$T/r256.csv"
  expect_rc 0 verify --align 256 "$T/r256.csv"
fi

finish
