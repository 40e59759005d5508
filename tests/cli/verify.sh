#!/usr/bin/env bash
# CLI: `nnmem verify` on hand-made plans (valid, overlapping, misaligned,
# over capacity) in the one-file and two-file forms.
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/p.csv"

# Height 12 = the lower bound: c@0, a@0, b@8, d@8.
cat >"$T/sol.csv" <<'CSV'
id,lower,upper,size,offset
a,0,2,4,0
b,1,3,4,8
c,2,4,8,0
d,3,5,4,8
CSV
expect_rc 0 verify "$T/sol.csv"
out_has "valid: height 12 (lower bound 12, ratio 1.000x)"
err_empty

# Two files; the solution's rows in another order are matched by id.
cat >"$T/sol2.csv" <<'CSV'
offset,id,lower,upper,size
8,d,3,5,4
0,c,2,4,8
8,b,1,3,4
0,a,0,2,4
CSV
expect_rc 0 verify "$T/p.csv" "$T/sol2.csv"
out_has "valid: height 12 (lower bound 12, ratio 1.000x)"

expect_rc 0 verify --capacity 12 "$T/sol.csv"
expect_rc 2 verify --capacity 11 "$T/sol.csv"
out_has "over capacity: height 12 > capacity 11"

expect_rc 0 verify -q "$T/sol.csv"
out_empty

# Alignment: all offsets are multiples of 4, not of 8.
expect_rc 0 verify --align 4 "$T/sol.csv"
expect_rc 1 verify --align 16 "$T/sol.csv"
out_has "misaligned: buffer"
out_has "is not a multiple of 16"

# The example of the issue: b1 [0,3) @ [0,4) and b3 [0,9) @ [2,6) overlap.
cat >"$T/bad.csv" <<'CSV'
id,lower,upper,size,offset
b1,0,3,4,0
b2,3,9,4,0
b3,0,9,4,2
CSV
expect_rc 1 verify "$T/bad.csv"
out_has "conflict: buffers"
out_has "'b1' [0,3) @ [0,4)"
out_has "'b3' [0,9) @ [2,6)"
out_has "overlap"

# Touching lifetimes ([0,3) and [3,9)) may share bytes.
cat >"$T/touch.csv" <<'CSV'
id,lower,upper,size,offset
b1,0,3,4,0
b2,3,9,4,0
CSV
expect_rc 0 verify "$T/touch.csv"
out_has "valid: height 4 (lower bound 4, ratio 1.000x)"

# A per-buffer alignment column is honoured.
cat >"$T/al.csv" <<'CSV'
id,lower,upper,size,alignment,offset
x,0,2,4,1,0
y,0,2,4,16,4
CSV
expect_rc 1 verify "$T/al.csv"
out_has "misaligned: buffer 'y' offset 4 is not a multiple of 16"

# Input problems: no offsets, unknown id, different counts, missing file.
expect_rc 1 verify "$T/p.csv"
err_has "p.csv"
err_has "offset"
cat >"$T/other.csv" <<'CSV'
id,lower,upper,size,offset
a,0,2,4,0
b,1,3,4,8
c,2,4,8,0
zz,3,5,4,8
CSV
expect_rc 1 verify "$T/p.csv" "$T/other.csv"
err_has "no buffer 'd'"
err_has "other.csv"
head -n 3 "$T/sol.csv" >"$T/short.csv"
expect_rc 1 verify "$T/p.csv" "$T/short.csv"
err_has "short.csv"
expect_rc 1 verify "$T/nope.csv"
err_has "nope.csv"
expect_rc 1 verify "$T/p.csv" "$T/sol.csv" "$T/sol2.csv"
err_has "unexpected argument"
expect_rc 1 verify --align 3 "$T/sol.csv"
err_has "power of two"
expect_rc 1 verify --capacity lots "$T/sol.csv"
err_has "bad --capacity 'lots'"

finish
