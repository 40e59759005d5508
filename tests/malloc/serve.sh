#!/usr/bin/env bash
# nnmem serve PLAN -- PROG: a run served from the plan of a recorded run.
# Real programs (sort, python3 when present) and the C edge cases are
# recorded, planned (every plan verified) and served: outputs identical to
# glibc runs, every request from the plan when the run repeats the recorded
# one, the pools taking the rest when it does not (another input, threads,
# a forked child), steps by markers; a bad plan is an error naming the
# file and the program does not run.
set -u
bin=${NNMEM_BIN:?}
edges=${NNMEM_MALLOC_EDGES:?}
so=${NNMEM_MALLOC_SO:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"

# record, plan (verified), serve; $1 name, rest: the program
rec_plan() {
  local name=$1; shift
  "$bin" record --malloc-lib "$so" --out "$name.csv" -- "$@" > rec.txt ||
    { cat rec.txt; fail "record $name"; }
  "$bin" plan "$name.csv" --out "$name.json" -q || fail "plan $name"
  "$bin" verify "$name.csv" "$name.json" > /dev/null || fail "verify $name"
}
# the report's count after $2 ("from the plan", "from the pools") in $1
count() { sed -n "s/.* \([0-9]*\) $2.*/\1/p" "$1"; }

# sort: the same input served entirely from the plan, another diverges.
# A fixed buffer and one thread: by default GNU sort sizes its buffer from
# the memory free at the time (other tests running change it) and the run
# would not repeat the recorded one
S="/usr/bin/sort -S 4M --parallel=1"
if [ -x /usr/bin/sort ]; then
  seq 20000 | sort -R --random-source=/dev/zero > in.txt
  seq 600000 | sort -R --random-source=/dev/zero > in2.txt # 4 MB: past the buffer
  rec_plan sort $S in.txt
  $S in.txt > want.txt
  "$bin" serve --malloc-lib "$so" sort.json -- $S in.txt > got.txt 2> err.txt ||
    { cat err.txt; fail "serve sort"; }
  grep "^nnmem serve:" got.txt > rep.txt; grep -v "^nnmem serve:" got.txt > out.txt
  cat rep.txt
  cmp -s want.txt out.txt || fail "served sort: output differs"
  [ "$(count rep.txt 'from the pools')" = 0 ] || fail "served sort: requests left the plan"
  [ "$(count rep.txt 'from the plan')" -gt 0 ] || fail "served sort: nothing from the plan"
  grep -q "steps: allocations" rep.txt || fail "sort: steps are allocations"
  "$bin" serve --malloc-lib "$so" sort.json -- $S in2.txt > got.txt ||
    fail "serve sort, another input"
  grep "^nnmem serve:" got.txt > rep.txt; grep -v "^nnmem serve:" got.txt > out.txt
  cat rep.txt
  $S in2.txt | cmp -s - out.txt || fail "divergent sort: output differs"
  [ "$(count rep.txt 'from the pools')" -gt 0 ] || fail "divergent sort: no request left the plan"
  # the plan as CSV (an offset column): through the CLI, and straight in
  # the environment (what the CLI passes on)
  "$bin" plan sort.csv --out sortplan.csv -q || fail "plan sort.csv as CSV"
  "$bin" serve --malloc-lib "$so" sortplan.csv -- $S in.txt > got.txt ||
    fail "serve sort, CSV plan"
  grep "^nnmem serve:" got.txt > rep.txt
  [ "$(count rep.txt 'from the pools')" = 0 ] || fail "CSV plan: requests left the plan"
  LD_PRELOAD="$so" NNMEM_SERVE="$tmp/sortplan.csv" NNMEM_SERVE_REPORT=env.txt \
    $S in.txt > out.txt || fail "NNMEM_SERVE: sort failed"
  cmp -s want.txt out.txt || fail "NNMEM_SERVE: output differs"
  grep -q "^fallback 0$" env.txt && grep -q "^served [1-9]" env.txt ||
    { cat env.txt; fail "NNMEM_SERVE: not served from the plan"; }
fi

# python3: dicts, lists, json (realloc growth); threads (an order the
# plan does not have) must still give the same output
py=/usr/bin/python3
if [ -x "$py" ]; then
  cat > w.py <<'PY'
import json, sys, threading
d = {str(i): list(range(i % 50)) for i in range(20000)}
s = json.dumps(d, sort_keys=True)
out = [len(s), sum(len(v) for v in d.values())]
if len(sys.argv) > 1:
    res = [0] * 4
    def work(k):
        res[k] = len(json.dumps([str(j) * (j % 7) for j in range(20000 + k)]))
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    out.append(res)
print(out)
PY
  export PYTHONHASHSEED=0
  rec_plan py "$py" w.py
  "$py" w.py > want.txt
  "$bin" serve --malloc-lib "$so" py.json -- "$py" w.py > got.txt || fail "serve python3"
  grep "^nnmem serve:" got.txt > rep.txt; grep -v "^nnmem serve:" got.txt > out.txt
  cat rep.txt
  cmp -s want.txt out.txt || fail "served python3: output differs"
  [ "$(count rep.txt 'from the pools')" = 0 ] || fail "served python3: requests left the plan"
  rec_plan pyt "$py" w.py threads
  "$py" w.py threads > want.txt
  for i in 1 2 3; do
    "$bin" serve --malloc-lib "$so" pyt.json -- "$py" w.py threads > got.txt ||
      fail "serve python3 threads"
    grep -v "^nnmem serve:" got.txt | cmp -s want.txt - || fail "served python3 threads: output differs"
  done
  grep "^nnmem serve:" got.txt
fi

# step markers: the recorded steps are nnmem_record_step() calls (steps2:
# two allocations in step 0); with one allocation per step (steps) the
# two clocks agree and the allocation order serves
rec_plan steps2 "$edges" steps2
"$bin" serve --malloc-lib "$so" steps2.json -- "$edges" steps2 > rep.txt || fail "serve steps2"
cat rep.txt
grep -q "4 requests: 4 from the plan, 0 from the pools" rep.txt || fail "steps2: not all served"
grep -q "steps: markers" rep.txt || fail "steps2: not served by markers"
# a realloc no memory can satisfy, of a block served from the plan: the
# block stays the caller's (size, bytes, free, realloc), no bad-free report
rec_plan realloc_fail "$edges" realloc-fail
"$bin" serve --malloc-lib "$so" realloc_fail.json -- "$edges" realloc-fail > rf.txt 2> rf.err ||
  { cat rf.txt rf.err; fail "serve realloc-fail"; }
grep -q "realloc-fail: ok" rf.txt || fail "realloc-fail: the block was lost"
grep -q "not a live block" rf.err && { cat rf.err; fail "realloc-fail: a bad free reported"; }
rec_plan steps "$edges" steps
"$bin" serve --malloc-lib "$so" steps.json -- "$edges" steps > rep.txt || fail "serve steps"
cat rep.txt
grep -q "3 requests: 3 from the plan, 0 from the pools" rep.txt || fail "steps: not all served"

# the C edge cases (alignments up to 2 MiB, realloc to 0, huge sizes, fork
# from a thread while others allocate, threads exiting with live blocks)
# on the plan of their own run: everything still holds
rec_plan edges "$edges"
"$bin" serve --malloc-lib "$so" edges.json -- "$edges" > got.txt 2> err.txt ||
  { cat got.txt err.txt; fail "serve the edge cases"; }
grep "^nnmem serve:" got.txt

# bad plans: an error naming the file; the program does not run
echo '{' > bad.json
"$bin" serve --malloc-lib "$so" bad.json -- touch ran 2> err.txt && fail "bad plan accepted"
grep -q "bad.json" err.txt || { cat err.txt; fail "bad plan: file not named"; }
[ -e ran ] && fail "bad plan: the program ran"
"$bin" serve --malloc-lib "$so" absent.json -- touch ran 2> err.txt && fail "absent plan accepted"
grep -q "absent.json" err.txt || fail "absent plan: file not named"
[ -e ran ] && fail "absent plan: the program ran"
sed 's/"offset": *[0-9]*/"offset": 0/' steps.json > overlap.json
if ! cmp -s steps.json overlap.json; then
  "$bin" serve --malloc-lib "$so" overlap.json -- touch ran 2> err.txt &&
    fail "overlapping plan accepted"
  cat err.txt
  [ -e ran ] && fail "overlapping plan: the program ran"
fi
"$bin" serve --malloc-lib "$so" steps.json 2> err.txt && fail "no program accepted"
grep -q "missing the plan or the program" err.txt || fail "no program: message"
# a failing program: its status
"$bin" serve --malloc-lib "$so" steps.json -- sh -c 'exit 3' > /dev/null 2> err.txt
[ $? -eq 1 ] || fail "failing program: exit code"
grep -q "exited with status 3" err.txt || fail "failing program: message"
# NNMEM_SERVE with an unreadable plan, or a trace without offsets, straight
# in the environment: the program runs on the pools, one line says why
for f in bad.json steps.csv absent.csv; do
  LD_PRELOAD="$so" NNMEM_SERVE="$tmp/$f" /usr/bin/env true 2> err.txt ||
    fail "bad NNMEM_SERVE ($f): the program failed"
  grep -q "NNMEM_SERVE: .*$f.*not serving" err.txt || { cat err.txt; fail "bad NNMEM_SERVE ($f): message"; }
done
echo "serve: ok"
