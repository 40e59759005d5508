#!/usr/bin/env bash
# CLI: output files are written all or none. On any failure (a --profile on
# /dev/full, a name too long, a read-only folder, a dangling link) every
# file that existed keeps its bytes and no temporary is left behind; a
# symbolic link --out is written through (its target replaced, the link
# stays).
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/p.csv"
OLD="old contents, not a plan"

# same_bytes FILE: FILE still holds exactly $OLD.
same_bytes() {
  [ -f "$1" ] && [ "$(cat "$1")" = "$OLD" ] || fail "'$1' lost its old bytes"
}
# no_temps DIR: no staged temporary is left in DIR.
no_temps() {
  ls -A "$1" | grep -q '\.tmp-' && fail "temporary left in $1: $(ls -A "$1")"
  return 0
}

# 1. --profile on /dev/full: the old --out survives byte for byte.
if [ -w /dev/full ]; then
  echo "$OLD" >"$T/old.csv"
  expect_rc 1 plan "$T/p.csv" --out "$T/old.csv" --profile /dev/full
  err_has "/dev/full"
  same_bytes "$T/old.csv"
  no_temps "$T"
fi

# 1b. The memory maps are in the same set: a map on /dev/full, or in a
#     missing folder, leaves --out, --profile and the other maps as they were.
if [ -w /dev/full ]; then
  echo "$OLD" >"$T/old.csv"
  echo "$OLD" >"$T/old.svg"
  expect_rc 1 plan "$T/p.csv" --out "$T/old.csv" --svg "$T/old.svg" \
    --trace-json /dev/full
  err_has "/dev/full"
  same_bytes "$T/old.csv"
  same_bytes "$T/old.svg"
  no_temps "$T"
fi
echo "$OLD" >"$T/old.csv"
echo "$OLD" >"$T/old.json"
expect_rc 1 plan "$T/p.csv" --out "$T/old.csv" --profile "$T/old.json" \
  --html "$T/missing/map.html"
err_has "missing/map.html"
same_bytes "$T/old.csv"
same_bytes "$T/old.json"
no_temps "$T"

# 2. An over-long --profile name.
LONG=$(printf 'x%.0s' $(seq 1 300))
echo "$OLD" >"$T/old.csv"
expect_rc 1 plan "$T/p.csv" --out "$T/old.csv" --profile "$T/$LONG.json"
err_has "too long"
same_bytes "$T/old.csv"
no_temps "$T"

# 3. A --profile in a folder that cannot be written.
mkdir "$T/ro"
echo "$OLD" >"$T/ro/prof.json"
chmod 555 "$T/ro"
if ! touch "$T/ro/probe" 2>/dev/null; then
  echo "$OLD" >"$T/old.csv"
  expect_rc 1 plan "$T/p.csv" --out "$T/old.csv" --profile "$T/ro/prof.json"
  err_has "ro/prof.json"
  same_bytes "$T/old.csv"
  same_bytes "$T/ro/prof.json"
  no_temps "$T"
fi
chmod 755 "$T/ro"
rm -f "$T/ro/probe"
#    as root the mode does not stop us: a read-only mount does (when mounting
#    is allowed)
if [ "$(id -u)" = 0 ] && mkdir "$T/rofs" &&
  mount -t tmpfs -o size=64k tmpfs "$T/rofs" 2>/dev/null; then
  echo "$OLD" >"$T/rofs/prof.json"
  if mount -o remount,ro "$T/rofs" 2>/dev/null; then
    echo "$OLD" >"$T/old.csv"
    expect_rc 1 plan "$T/p.csv" --out "$T/old.csv" --profile "$T/rofs/prof.json"
    err_has "rofs/prof.json"
    same_bytes "$T/old.csv"
    same_bytes "$T/rofs/prof.json"
    no_temps "$T"
  fi
  umount "$T/rofs"
fi

# 4. A symbolic link --out is written through: the target gets the plan,
#    the link stays a link.
mkdir "$T/real"
echo "$OLD" >"$T/real/target.csv"
ln -s "$T/real/target.csv" "$T/link.csv"
expect_rc 0 plan "$T/p.csv" --out "$T/link.csv" --quiet
[ -L "$T/link.csv" ] || fail "the --out link was replaced by a file"
grep -q '^a,0,2,4,' "$T/real/target.csv" || fail "link target lacks the plan"
no_temps "$T"
no_temps "$T/real"
#    ... and on a later failure (profile on /dev/full) both stay as they were.
if [ -w /dev/full ]; then
  echo "$OLD" >"$T/real/target.csv"
  expect_rc 1 plan "$T/p.csv" --out "$T/link.csv" --profile /dev/full
  [ -L "$T/link.csv" ] || fail "the --out link was removed"
  same_bytes "$T/real/target.csv"
  no_temps "$T/real"
fi

# 5. A dangling link --out is refused (not replaced by a regular file).
ln -s "$T/nowhere/missing.csv" "$T/dangling.csv"
expect_rc 1 plan "$T/p.csv" --out "$T/dangling.csv"
err_has "does not exist"
[ -L "$T/dangling.csv" ] || fail "the dangling link was replaced"
no_temps "$T"

# 6. A new file gets the mode of a normal new file (umask honoured); a
#    replaced file keeps its own mode.
(umask 027 && "$NNMEM_BIN" plan "$T/p.csv" --out "$T/new.csv" --quiet)
[ "$(stat -c %a "$T/new.csv")" = 640 ] ||
  fail "new file mode $(stat -c %a "$T/new.csv"), want 640"
echo "$OLD" >"$T/keep.csv"
chmod 604 "$T/keep.csv"
expect_rc 0 plan "$T/p.csv" --out "$T/keep.csv" --quiet
[ "$(stat -c %a "$T/keep.csv")" = 604 ] || fail "replaced file lost its mode"

# 7. Devices are written in place: /dev/null as --out still works.
expect_rc 0 plan "$T/p.csv" --profile /dev/null --quiet

#    /dev/stdout redirected to a file: the profile, then the report after it
#    (not over it).
"$NNMEM_BIN" plan "$T/p.csv" --profile /dev/stdout >"$T/both.txt" 2>"$T/stderr"
head -1 "$T/both.txt" | grep -q '^{' || fail "the profile is not first"
grep -q '^nnmem plan: ' "$T/both.txt" || fail "the report is missing"
grep -q '"peak_memory": 12' "$T/both.txt" || fail "the profile was overwritten"

# 8. A full file system, when a tiny tmpfs can be mounted (root only).
if [ "$(id -u)" = 0 ] && mkdir "$T/tiny" &&
  mount -t tmpfs -o size=8k tmpfs "$T/tiny" 2>/dev/null; then
  echo "$OLD" >"$T/tiny/old.csv"
  head -c 4096 /dev/zero >"$T/tiny/filler" 2>/dev/null
  head -c 8192 /dev/zero >>"$T/tiny/filler" 2>/dev/null
  awk 'BEGIN{print "id,lower,upper,size"; for(i=0;i<3000;i++) print "b" i "," i "," i+2 ",64"}' >"$T/big.csv"
  expect_rc 1 plan "$T/big.csv" --out "$T/tiny/old.csv"
  same_bytes "$T/tiny/old.csv"
  no_temps "$T/tiny"
  umount "$T/tiny"
fi

# An empty file name is a usage error before anything is planned (it used
# to plan, then fail with the internal "output set: bad argument", or call
# two empty names "named twice").
for opt in --profile --svg --html --trace-json; do
  expect_error plan "$T/p.csv" "$opt" ''
  err_has "$opt '': the file name is empty"
done
expect_error plan "$T/p.csv" --html '' --trace-json ''
err_has "the file name is empty"

# A regular file under /dev/ (/dev/shm) is an ordinary target, replaced
# whole; a regular file behind a /dev/fd link is rewritten whole. Both used
# to be written in place over the old bytes, keeping a longer old tail.
LONG=$(printf 'x%.0s' $(seq 1 3000))
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  SHM="/dev/shm/nnmem-outputs-$$.json"
  echo "$LONG" >"$SHM"
  expect_rc 0 plan "$T/p.csv" --quiet --profile "$SHM"
  json_valid "$SHM"
  no_temps /dev/shm
  rm -f "$SHM"
fi
echo "$LONG" >"$T/fd3.json"
LAST_CMD="nnmem plan --profile /dev/fd/3 3<>fd3.json"
"$NNMEM_BIN" plan "$T/p.csv" --quiet --profile /dev/fd/3 3<>"$T/fd3.json" \
  >"$T/stdout" 2>"$T/stderr" || fail "plan --profile /dev/fd/3 failed"
json_valid "$T/fd3.json"

finish
