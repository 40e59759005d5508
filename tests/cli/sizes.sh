#!/usr/bin/env bash
# CLI: size arguments (--capacity, --align): units, garbage, overflow.
. "$(dirname "$0")/lib/common.sh"

P="$T/p.csv"
write_small_problem "$P"

# capacity_is ARG BYTES: --capacity ARG is accepted and reported as BYTES.
capacity_is() {
  expect_rc 0 plan "$P" --capacity "$1" --json
  out_matches "\"capacity\":[[:space:]]*$2[,}[:space:]]"
}
capacity_is 12 12
capacity_is 12B 12
capacity_is 1K 1024
capacity_is 1k 1024
capacity_is 1KiB 1024
capacity_is 1KB 1000
capacity_is 1.5K 1536
capacity_is 1M 1048576
capacity_is 1MiB 1048576
capacity_is 1MB 1000000
capacity_is 2G 2147483648
capacity_is 2GB 2000000000
capacity_is 1T 1099511627776

# Garbage, negative, fractions of a byte, overflow: exit 1 with a reason.
bad_size() {
  expect_error plan "$P" --capacity "$1" --out "$T/should-not-exist.csv"
  err_has "nnmem plan: bad --capacity '$1'"
  [ -n "$2" ] && err_has "$2"
  return 0
}
bad_size "" "empty"
bad_size abc "digit"
bad_size 12Q "unknown unit"
bad_size "12 KB" "unknown unit"
bad_size -5 "negative"
bad_size 1.5 "whole number of bytes"
bad_size 0.1K "whole number of bytes"
bad_size 1. "digits after"
bad_size 99999999999999999999 "overflows"
bad_size 16777216T "overflows"
bad_size 18446744073709551616 "overflows"
bad_size 0 "> 0"

expect_error plan "$P" --align 3
err_has "power of two"
expect_error plan "$P" --align 0
expect_error plan "$P" --align -8
err_has "negative"
expect_error plan "$P" --time-limit soon
err_has "bad --time-limit 'soon'"
expect_error plan "$P" --time-limit -1
expect_rc 0 plan "$P" --time-limit 2.5
expect_error plan --batch 0
err_has "bad --batch '0'"
expect_error plan --batch 2x
expect_error plan --batch 99999999999999999999999

finish
