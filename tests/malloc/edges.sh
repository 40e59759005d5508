#!/usr/bin/env bash
# The C API edge cases (malloc_edges.c) under glibc and under
# libnnmem_malloc.so, then a double free under the front: reported once and
# survived, or an abort with NNMEM_MALLOC_ABORT=1.
set -u
so=${NNMEM_MALLOC_SO:?}
edges=${NNMEM_MALLOC_EDGES:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$edges" > "$tmp/glibc.out" || { cat "$tmp/glibc.out"; fail "glibc run"; }
grep -q "allocator: glibc" "$tmp/glibc.out" || fail "glibc run not on glibc"
LD_PRELOAD=$so "$edges" > "$tmp/front.out" 2> "$tmp/front.err" ||
  { cat "$tmp/front.out" "$tmp/front.err"; fail "front run"; }
cat "$tmp/front.out"
grep -q "allocator: libnnmem_malloc.so" "$tmp/front.out" || fail "front not loaded"
[ -s "$tmp/front.err" ] && { cat "$tmp/front.err"; fail "front run wrote to stderr"; }

# the front brings no libm into a program that has none (cat): its leak
# records' sampling does its own ln (about 320 KB of resident memory)
LD_PRELOAD=$so cat /proc/self/maps > "$tmp/maps" || fail "cat under the front"
grep -q libnnmem_malloc "$tmp/maps" || fail "maps: front not loaded"
grep -q '/libm[.-]' "$tmp/maps" && fail "the front loads libm"

# A bad-free mode of malloc_edges ($1; $2 names it): exit 0, "continued",
# exactly one report line, the program goes on
bad_free_mode() {
  LD_PRELOAD=$so "$edges" "$1" > "$tmp/$1.out" 2> "$tmp/$1.err"
  rc=$?
  cat "$tmp/$1.err"
  [ $rc -eq 0 ] || fail "$2: exit $rc (want 0; 3: a block handed out twice)"
  grep -qx continued "$tmp/$1.out" || fail "$2: did not continue"
  [ "$(grep -c '^nnmem malloc: free(0x[0-9a-f]*): not a live block' "$tmp/$1.err")" = 1 ] ||
    fail "$2: want exactly one report line"
}
# double free and a foreign pointer
bad_free_mode double-free "double free"
# second frees of free blocks handed out again before the free queue's
# flush (by the owner's queue, from another thread): no block twice
bad_free_mode double-free-reuse "double free then reuse"

LD_PRELOAD=$so NNMEM_MALLOC_ABORT=1 "$edges" double-free > "$tmp/ab.out" 2> "$tmp/ab.err"
rc=$?
[ $rc -eq 134 ] || fail "NNMEM_MALLOC_ABORT=1: exit $rc (want 134, SIGABRT)"
grep -q "aborting (NNMEM_MALLOC_ABORT=1)" "$tmp/ab.err" || fail "abort message"
grep -q continued "$tmp/ab.out" && fail "NNMEM_MALLOC_ABORT=1 continued"
echo "edges: ok"
