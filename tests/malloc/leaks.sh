#!/usr/bin/env bash
# Leak records under the malloc front: NNMEM_LEAKS=1 (or sampled[:BYTES])
# with LD_PRELOAD=libnnmem_malloc.so writes, at each process's exit, the
# blocks still live grouped by call site (NNMEM_LEAKS_REPORT=PATH, "%p" the
# process id; default nnmem-leaks.PID.txt in the working directory at
# start). The sites start at the program's own frames (the front's are
# left out). Programs' outputs stay those of glibc runs.
set -u
so=${NNMEM_MALLOC_SO:?}
edges=${NNMEM_MALLOC_EDGES:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3 || true)
[ -n "$py" ] || { echo "python3 missing: skipped"; exit 77; }

# full records of a C program: two sites, one of them in a second thread
(cd "$tmp" && NNMEM_LEAKS=1 NNMEM_LEAKS_REPORT="$tmp/c.%p.json" \
  LD_PRELOAD=$so "$edges" leaks) || fail "leaks mode: exit $?"
set -- "$tmp"/c.*.json
[ $# = 1 ] && [ -f "$1" ] || fail "want one report, got: $*"
"$py" - "$1" <<'PY' || fail "full report"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["mode"] == "full", j["mode"]
def at(fn):  # the sites opening in fn (a call per site: a loop unrolled)
    return [s for s in j["sites"] if s["stack"] and
            s["stack"][0].split("+")[0] == fn]
here, there = at("leak_here"), at("leak_there")
assert (sum(s["bytes"] for s in here), sum(s["blocks"] for s in here)) == \
    (3000, 3), here
assert [(s["bytes"], s["blocks"]) for s in there] == [(7000, 1)], there
assert there[0]["thread"] != here[0]["thread"], (here, there)
assert not any(s["bytes"] == 5000 for s in j["sites"]), "a freed block"
# no frame of the front itself opens a site
assert not any(s["stack"][0].startswith(("malloc", "calloc", "libnnmem_malloc"))
               for s in j["sites"] if s["stack"]), j["sites"][:3]
print("full: leak_here 3000 B in 3 blocks, leak_there 7000 B in a thread")
PY

# the default path, in the working directory at start, per process
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && NNMEM_LEAKS=1 LD_PRELOAD=$so "$edges" leaks) || fail "default path run"
n=$(ls "$tmp/cwd" | grep -c '^nnmem-leaks\.[0-9]*\.txt$')
[ "$n" = 1 ] || fail "default path: want one nnmem-leaks.PID.txt, got $n"
grep -q "leak_here" "$tmp/cwd"/nnmem-leaks.*.txt || fail "text report names no site"

# sampled records under a real program with threads: output as glibc's
cat > "$tmp/w.py" <<'PY'
import json, threading
out = []
def work(k):
    d = {str(i): [i] * (i % 17) for i in range(20000)}
    out.append((k, len(json.dumps(d))))
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sorted(out))
keep = [bytes(4096) for _ in range(256)]  # 1 MiB live at exit
print(len(keep))
PY
"$py" "$tmp/w.py" > "$tmp/want.txt" || fail "python3 under glibc"
NNMEM_LEAKS=sampled:65536 NNMEM_LEAKS_REPORT="$tmp/py.folded" LD_PRELOAD=$so \
  "$py" "$tmp/w.py" > "$tmp/got.txt" || fail "python3 with sampled records"
cmp -s "$tmp/want.txt" "$tmp/got.txt" || fail "python3 output differs"
[ -s "$tmp/py.folded" ] || fail "no folded report"
awk '{ if ($NF !~ /^[0-9]+$/) bad = 1 } END { exit bad }' "$tmp/py.folded" ||
  fail "folded report: a line without its bytes"

# bad settings: one line on stderr, the program runs, nothing written
LD_PRELOAD=$so NNMEM_LEAKS=bogus "$edges" leaks 2> "$tmp/bogus.err" ||
  fail "NNMEM_LEAKS=bogus: exit $?"
grep -q "NNMEM_LEAKS not understood" "$tmp/bogus.err" || fail "bogus: no message"
LD_PRELOAD=$so NNMEM_LEAKS=1 NNMEM_LEAKS_REPORT=/nonexistent-dir/r.txt \
  "$edges" leaks 2> "$tmp/nodir.err" || fail "unwritable report: exit $?"
grep -q "cannot write the leak report /nonexistent-dir/r.txt" "$tmp/nodir.err" ||
  fail "unwritable report: no message"
echo "leaks: ok"
