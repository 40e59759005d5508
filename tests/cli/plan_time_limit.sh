#!/usr/bin/env bash
# CLI: `nnmem plan --time-limit` on the comb of issue 7 (n long-lived
# 1-byte buffers alternating with n short-lived ones at step 0, then n
# 2-byte buffers at step 1): a spent limit still gives a complete plan that
# verifies, and the report says the limit cut the search; without a limit
# auto reaches the lower bound 3n.
. "$(dirname "$0")/lib/common.sh"

P="$T/comb.csv"
N=2000
{
  echo "id,lower,upper,size"
  i=0
  for ((k = 0; k < N; k++)); do
    echo "$i,0,3,1"
    echo "$((i + 1)),0,1,1"
    i=$((i + 2))
  done
  for ((k = 0; k < N; k++)); do
    echo "$((i + k)),1,2,2"
  done
} >"$P"

expect_rc 0 plan "$P" --out "$T/full.csv"
out_has "6,000 buffers"
out_matches "height +5.9 KiB \(6,000 B\)"
expect_rc 0 verify "$T/full.csv"
out_has "valid: height 6000"

# 1 us: spent before the first clock reading inside the placement.
expect_rc 0 plan "$P" --time-limit 0.000001 --out "$T/cut.csv"
out_has "greedy-size (picked by auto)"
out_has "time limit reached: best of 1 strategy so far"
expect_rc 0 verify "$T/cut.csv"
out_has "valid: height"

# The JSON report says so too (and does not without a limit).
expect_rc 0 plan "$P" --time-limit 0.000001 --json=compact
out_has '"time_limited":true'
expect_rc 0 plan "$P" --json=compact
out_has '"time_limited":false'

finish
