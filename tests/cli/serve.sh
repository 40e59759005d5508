#!/usr/bin/env bash
# nnmem serve's checks before it runs anything (no malloc library needed,
# so this also runs in the sanitizer build): a plan that cannot be read,
# is not a plan, or overlaps is an error naming the file, exit 1, and the
# program does not run; usage errors; --help.
set -u
bin=${NNMEM_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"

expect_refused() { # file, text in the message
  "$bin" serve "$1" -- touch ran 2> err.txt
  [ $? -eq 1 ] || fail "$1: exit code"
  grep -q "$2" err.txt || { cat err.txt; fail "$1: message lacks '$2'"; }
  [ -e ran ] && fail "$1: the program ran"
  cat err.txt
}
echo '{' > cut.json
expect_refused cut.json "cut.json"
expect_refused absent.json "absent.json: cannot open"
printf 'id,lower,upper,size\n0,0,2,16\n' > trace.csv
expect_refused trace.csv "trace.csv: no offset column"
# a plan whose two buffers overlap while both live
printf 'id,lower,upper,size\n0,0,2,1008\n1,1,3,2000\n' > two.csv
"$bin" plan two.csv --out two.json -q || fail "plan two.csv"
sed 's/"offset": *[0-9]*/"offset": 0/' two.json > overlap.json
cmp -s two.json overlap.json && fail "the plan has no offset to change"
expect_refused overlap.json "overlaps"
# a recorded trace out of recording order (starts decrease)
printf 'id,lower,upper,size\n0,3,5,16\n1,1,5,16\n' > order.csv
"$bin" plan order.csv --out order.json -q || fail "plan order.csv"
expect_refused order.json "not a trace in recording order"

"$bin" serve two.json 2> err.txt
[ $? -eq 1 ] && grep -q "missing the plan or the program" err.txt || fail "no program"
"$bin" serve 2> err.txt
[ $? -eq 1 ] || fail "no arguments"
"$bin" serve --help | grep -q "Usage: nnmem serve" || fail "--help"
"$bin" serve --malloc-lib ./nope.so two.json -- touch ran 2> err.txt
[ $? -eq 1 ] && grep -q "nope.so: no such library" err.txt || fail "bad --malloc-lib"
[ -e ran ] && fail "bad --malloc-lib: the program ran"
echo "serve (cli): ok"
