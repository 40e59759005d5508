#!/usr/bin/env bash
# nnmem record -- PROG: the trace of a run (allocation order and step
# markers), planned by nnmem plan; a failing program, a missing one and a
# damaged trace are errors that leave no output / name the line.
set -u
bin=${NNMEM_BIN:?}
edges=${NNMEM_MALLOC_EDGES:?}
so=${NNMEM_MALLOC_SO:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"

# step markers: the rows of the three known blocks
"$bin" record --malloc-lib "$so" --out steps.csv -- "$edges" steps > out.txt ||
  { cat out.txt; fail "record steps"; }
cat out.txt
grep -q "allocations over" out.txt || fail "no summary"
head -1 steps.csv | grep -qx "id,lower,upper,size" || fail "header"
# sizes as recorded: rounded up to 16 bytes (malloc's alignment)
grep -Eq '^[0-9]+,0,2,1008$' steps.csv || fail "1000 B block not on [0,2) as 1008"
grep -Eq '^[0-9]+,1,3,2000$' steps.csv || fail "2000 B block not on [1,3)"
grep -Eq '^[0-9]+,2,3,3008$' steps.csv || fail "3000 B block not on [2,3) as 3008"
"$bin" plan steps.csv > plan.txt || { cat plan.txt; fail "plan steps.csv"; }
grep -q "lower bound" plan.txt || fail "plan report"

# allocation order (no markers), a real program; the default output name
if [ -x /bin/sort ]; then
  seq 20000 | sort -R --random-source=/dev/zero > in.txt
  "$bin" record --malloc-lib "$so" -- sort in.txt > out.txt || fail "record sort"
  [ -s recorded.csv ] || fail "no recorded.csv"
  # allocation order: row k has lower = k and upper > lower
  awk -F, 'NR > 1 && ($2 != NR - 2 || $3 <= $2) { bad = 1 } END { exit bad }' recorded.csv ||
    fail "allocation-order lifetimes"
  "$bin" plan recorded.csv --out planned.csv > plan.txt || { cat plan.txt; fail "plan recorded.csv"; }
  "$bin" verify planned.csv > /dev/null || fail "verify the plan of recorded.csv"
fi

# a failing program: its status, no output file
"$bin" record --malloc-lib "$so" --out f.csv -- sh -c 'exit 3' 2> err.txt
[ $? -eq 1 ] || fail "failing program: exit code"
grep -q "exited with status 3" err.txt || fail "failing program: message"
[ -e f.csv ] && fail "failing program left an output"
# 126 and 127 are the program's own statuses too (the exec's failure
# comes up a close-on-exec pipe): said, not taken for a failed exec
for code in 126 127; do
  "$bin" record --malloc-lib "$so" --out f.csv -- sh -c "exit $code" 2> err.txt
  [ $? -eq 1 ] || fail "status $code: exit code"
  grep -q "exited with status $code" err.txt || { cat err.txt; fail "status $code: message"; }
  [ -e f.csv ] && fail "status $code left an output"
done
"$bin" record --malloc-lib "$so" --out f.csv -- ./no-such-program 2> err.txt
[ $? -eq 1 ] || fail "missing program: exit code"
grep -q "cannot run ./no-such-program" err.txt || fail "missing program: message"
[ -e f.csv ] && fail "missing program left an output"
"$bin" record 2> err.txt
[ $? -eq 1 ] || fail "no program: exit code"
grep -q "missing the program" err.txt || fail "no program: message"
"$bin" record --malloc-lib ./nope.so -- true 2> err.txt
[ $? -eq 1 ] && grep -q "nope.so: no such library" err.txt || fail "bad --malloc-lib"

# a damaged trace: truncated in its last row, or an inconsistent row
printf '%s\n' "$(head -n -1 steps.csv)" "$(tail -1 steps.csv | cut -d, -f1-2)" > cut.csv
"$bin" plan cut.csv 2> err.txt && fail "truncated trace accepted"
grep -q "^nnmem: cut.csv:4: row has 2 fields" err.txt || { cat err.txt; fail "truncated trace: line 4 not named"; }
cat err.txt
sed '3s/^\([0-9]*\),\([0-9]*\),[0-9]*,/\1,\2,\2,/' steps.csv > bad.csv  # lower == upper
"$bin" plan bad.csv 2> err.txt && fail "inconsistent trace accepted"
grep -q "bad.csv:3:" err.txt || { cat err.txt; fail "inconsistent trace: line 3 not named"; }
cat err.txt
echo "record: ok"
