#!/usr/bin/env bash
# Real programs nobody here wrote, under glibc and under libnnmem_malloc.so:
# the outputs must be identical byte for byte. python3 (workload.py),
# sqlite3 (a generated database and queries), gzip and xz round trips,
# sort of a big file. A missing program is skipped; all missing: exit 77.
# The front must not complain (no "nnmem malloc:" line on stderr).
set -u
so=${NNMEM_MALLOC_SO:?}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ran=0
fail() { echo "FAIL: $*"; exit 1; }
have() { command -v "$1" > /dev/null 2>&1; }

# twice: glibc into $tmp/$1.glibc, the front into $tmp/$1.front; then compare
both() {
  local name=$1
  shift
  "$@" > "$tmp/$name.glibc" 2> "$tmp/$name.glibc.err" || { cat "$tmp/$name.glibc.err"; fail "$name (glibc) failed"; }
  LD_PRELOAD=$so "$@" > "$tmp/$name.front" 2> "$tmp/$name.front.err" || { cat "$tmp/$name.front.err"; fail "$name (front) failed"; }
  grep -q "nnmem malloc:" "$tmp/$name.front.err" && { cat "$tmp/$name.front.err"; fail "$name: the front reported misuse"; }
  cmp "$tmp/$name.glibc" "$tmp/$name.front" || fail "$name: outputs differ"
  echo "$name: identical ($(wc -c < "$tmp/$name.front") bytes)"
  ran=$((ran + 1))
}

py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3 || true)
if [ -n "$py" ]; then
  export PYTHONHASHSEED=0
  both python "$py" "$here/workload.py"
  grep -q "front: True" "$tmp/python.front.err" || fail "python: libnnmem_malloc.so not loaded"
else
  echo "python3: missing, skipped"
fi

# input for the compressors and sort: 300k deterministic lines (~10 MB)
awk 'BEGIN { x = 12345; for (i = 0; i < 300000; i++) {
  x = (x * 1103515245 + 12345) % 2147483648;
  printf "%010d line %d %s\n", x, i, substr("abcdefghijklmnopqrstuvwxyz", 1 + x % 26) } }' > "$tmp/lines"

if have sqlite3; then
  cat > "$tmp/q.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, v REAL);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 120000)
INSERT INTO t SELECT i, i % 97, 'name' || (i * 7919 % 100003), (i * 31 % 1000) / 7.0 FROM c;
CREATE INDEX t_name ON t(name);
CREATE TABLE u AS SELECT grp, count(*) AS n, sum(v) AS s FROM t GROUP BY grp;
SELECT grp, n, printf('%.3f', s) FROM u ORDER BY s DESC LIMIT 20;
SELECT count(*), count(DISTINCT name) FROM t;
SELECT t.name, u.n FROM t JOIN u ON t.grp = u.grp WHERE t.name LIKE 'name99%' ORDER BY t.name LIMIT 30;
SELECT group_concat(name, ',') FROM (SELECT name FROM t ORDER BY v DESC, id LIMIT 2000);
UPDATE t SET name = upper(name) WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
VACUUM;
SELECT count(*), max(name), min(name), printf('%.3f', total(v)) FROM t;
SQL
  both sqlite sh -c "rm -f '$tmp/db'; sqlite3 '$tmp/db' < '$tmp/q.sql'"
else
  echo "sqlite3: missing, skipped"
fi

if have gzip; then
  both gzip gzip -6 -c "$tmp/lines"
  LD_PRELOAD=$so gzip -dc "$tmp/gzip.front" | cmp - "$tmp/lines" || fail "gzip: round trip differs"
else
  echo "gzip: missing, skipped"
fi

if have xz; then
  head -c 3000000 "$tmp/lines" > "$tmp/head" # xz is slow: 3 MB, two blocks
  both xz xz -T2 --block-size=1500000 -3 -c "$tmp/head"
  LD_PRELOAD=$so xz -dc "$tmp/xz.front" | cmp - "$tmp/head" || fail "xz: round trip differs"
else
  echo "xz: missing, skipped"
fi

if have sort; then
  # a small buffer: temporary files and merges; two threads
  both sort env LC_ALL=C sort -S 2M --parallel=2 -T "$tmp" -k3,3 -k1,1n "$tmp/lines"
else
  echo "sort: missing, skipped"
fi

[ $ran -gt 0 ] || exit 77
echo "programs: $ran identical"
