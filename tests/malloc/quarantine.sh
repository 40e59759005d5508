#!/usr/bin/env bash
# The quarantine under the front (NNMEM_MALLOC_QUARANTINE): a stale second
# free after the block was handed out again (stale_free.c). Off (as
# before): the block is reused, the stale free goes unseen and frees the
# new owner's block. On: the block is held, the second free is refused
# with one line on stderr and the program's output stays right; with
# NNMEM_MALLOC_ABORT=1 it aborts at that free. The fill reports a write
# after free; a malformed size gives one line and no quarantine.
set -u
so=${NNMEM_MALLOC_SO:?}
prog=${NNMEM_MALLOC_STALE:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
report='^nnmem malloc: free(0x[0-9a-f]*): not a live block'

# off: the block comes back at once and the stale free is not caught
LD_PRELOAD=$so "$prog" > "$tmp/off.out" 2> "$tmp/off.err" || fail "off: exit $?"
cat "$tmp/off.out" "$tmp/off.err"
grep -q '^reused=1 ' "$tmp/off.out" || fail "off: the block was not reused"
[ -s "$tmp/off.err" ] && fail "off: a report (the stale free is not caught without a quarantine)"

# on, in K/M/G and plain bytes
for q in 1M 64K 1048576 1MiB; do
  NNMEM_MALLOC_QUARANTINE=$q LD_PRELOAD=$so "$prog" > "$tmp/on.out" 2> "$tmp/on.err" ||
    { cat "$tmp/on.out" "$tmp/on.err"; fail "on ($q): exit $?"; }
  cat "$tmp/on.out" "$tmp/on.err"
  grep -qx "reused=0 q=q's text r=r's text same=0" "$tmp/on.out" ||
    fail "on ($q): wrong output"
  [ "$(grep -c "$report" "$tmp/on.err")" = 1 ] || fail "on ($q): want one report line"
  [ "$(wc -l < "$tmp/on.err")" = 1 ] || fail "on ($q): more on stderr"
done

NNMEM_MALLOC_QUARANTINE=1M NNMEM_MALLOC_ABORT=1 LD_PRELOAD=$so "$prog" \
  > "$tmp/ab.out" 2> "$tmp/ab.err"
rc=$?
[ $rc -eq 134 ] || fail "NNMEM_MALLOC_ABORT=1: exit $rc (want 134)"
grep -q "aborting (NNMEM_MALLOC_ABORT=1)" "$tmp/ab.err" || fail "abort message"
grep -q reused "$tmp/ab.out" && fail "NNMEM_MALLOC_ABORT=1 continued"

# the fill: a write into a held block, reported when it leaves
NNMEM_MALLOC_QUARANTINE=4K NNMEM_MALLOC_QUARANTINE_FILL=1 LD_PRELOAD=$so \
  "$prog" write-after-free > "$tmp/w.out" 2> "$tmp/w.err" || fail "fill: exit $?"
cat "$tmp/w.err"
grep -qx done "$tmp/w.out" || fail "fill: did not finish"
[ "$(grep -c '^nnmem malloc: block 0x[0-9a-f]*: written after its free' "$tmp/w.err")" = 1 ] ||
  fail "fill: want one report of the write"
NNMEM_MALLOC_QUARANTINE=4K LD_PRELOAD=$so "$prog" write-after-free \
  > "$tmp/w.out" 2> "$tmp/w.err" || fail "no fill: exit $?"
[ -s "$tmp/w.err" ] && fail "no fill: a report"

# malformed: one line, no quarantine (as off)
NNMEM_MALLOC_QUARANTINE=12Q LD_PRELOAD=$so "$prog" > "$tmp/bad.out" 2> "$tmp/bad.err" ||
  fail "malformed: exit $?"
grep -q "NNMEM_MALLOC_QUARANTINE not understood" "$tmp/bad.err" || fail "malformed: no message"
[ "$(wc -l < "$tmp/bad.err")" = 1 ] || fail "malformed: more on stderr"
grep -q '^reused=1 ' "$tmp/bad.out" || fail "malformed: a quarantine after all"

# a threaded program under the quarantine prints what it prints under glibc
if command -v python3 > /dev/null; then
  code='import threading
def w(k):
    d = {}
    for i in range(20000):
        d[i % 500] = [k] * (i % 50)
    return len(d)
ts = [threading.Thread(target=w, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sum(len(str(i)) for i in range(100000)))'
  want=$(python3 -c "$code") || fail "python3 under glibc"
  got=$(NNMEM_MALLOC_QUARANTINE=8M NNMEM_MALLOC_QUARANTINE_FILL=1 LD_PRELOAD=$so \
    python3 -c "$code" 2> "$tmp/py.err") || { cat "$tmp/py.err"; fail "python3 under the quarantine"; }
  [ "$got" = "$want" ] || fail "python3: $got, want $want"
  [ -s "$tmp/py.err" ] && { cat "$tmp/py.err"; fail "python3: stderr"; }
fi
echo "quarantine: ok"
