# tests/cli/lib/common.sh - helpers sourced by the CLI tests (tests/cli/*.sh).
#
# Every test script: `. "$(dirname "$0")/lib/common.sh"`, then calls the
# assertions below and ends with `finish`. Assertions record failures and go
# on, so one run shows every broken expectation; `finish` exits 1 when any
# failed, 0 otherwise. `skip REASON` exits 77 (CTest: skipped).
#
# Environment: NNMEM_BIN (the nnmem binary, required), NNMEM_DATA_DIR (the
# shared data folder, optional), NNMEM_SOURCE_DIR (the source tree).

set -u

if [ -z "${NNMEM_BIN:-}" ] || [ ! -x "$NNMEM_BIN" ]; then
  echo "NNMEM_BIN is not set to an executable nnmem binary" >&2
  exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/nnmem-cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
FAILURES=0
RC=0

# Reports a failed expectation with the last command's output.
fail() {
  FAILURES=$((FAILURES + 1))
  echo "FAIL: $*" >&2
  echo "  command: ${LAST_CMD:-}" >&2
  echo "  exit: $RC" >&2
  echo "  stdout: $(head -c 2000 "$T/stdout" 2>/dev/null)" >&2
  echo "  stderr: $(head -c 2000 "$T/stderr" 2>/dev/null)" >&2
}

skip() {
  echo "SKIP: $*"
  exit 77
}

finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES expectation(s) failed" >&2
    exit 1
  fi
  echo "ok"
  exit 0
}

# nn ARGS...: runs nnmem, keeps stdout/stderr in $T/stdout, $T/stderr, the
# exit code in $RC.
nn() {
  LAST_CMD="nnmem $*"
  "$NNMEM_BIN" "$@" >"$T/stdout" 2>"$T/stderr"
  RC=$?
}

# expect_rc CODE ARGS...: runs nnmem and checks the exit code.
expect_rc() {
  local want=$1
  shift
  nn "$@"
  [ "$RC" -eq "$want" ] || fail "expected exit $want"
}

# out_has TEXT / err_has TEXT: fixed-string search in the last output.
out_has() { grep -qF -- "$1" "$T/stdout" || fail "stdout lacks '$1'"; }
err_has() { grep -qF -- "$1" "$T/stderr" || fail "stderr lacks '$1'"; }
out_matches() { grep -qE -- "$1" "$T/stdout" || fail "stdout does not match /$1/"; }
err_matches() { grep -qE -- "$1" "$T/stderr" || fail "stderr does not match /$1/"; }
err_empty() { [ ! -s "$T/stderr" ] || fail "stderr is not empty"; }
out_empty() { [ ! -s "$T/stdout" ] || fail "stdout is not empty"; }

no_file() { [ ! -e "$1" ] || fail "file '$1' should not exist"; }
has_file() { [ -s "$1" ] || fail "file '$1' is missing or empty"; }

# expect_error ARGS...: exit 1, a "nnmem" message on stderr, nothing on
# stdout, and no file named $T/should-not-exist.*.
expect_error() {
  expect_rc 1 "$@"
  err_has "nnmem"
  out_empty
  for f in "$T"/should-not-exist*; do
    [ -e "$f" ] && fail "output file '$f' was created"
  done
  return 0
}

have_python() { command -v python3 >/dev/null 2>&1; }

# py CODE FILE...: runs a python3 check (skipped when python3 is absent);
# the code sees sys.argv and fails by raising.
py() {
  have_python || return 0
  local code=$1
  shift
  python3 -c "$code" "$@" 2>"$T/py.err" ||
    fail "python check failed: $(cat "$T/py.err")"
}

# json_valid FILE: the file parses as JSON.
json_valid() {
  py 'import json,sys; json.load(open(sys.argv[1]))' "$1"
}

# profile_ok FILE: a memory profile with every field the issue names, whole
# bytes, peak = weights + activations + workspace, reuse ratio in [0, 1].
profile_ok() {
  py '
import json, sys
p = json.load(open(sys.argv[1]))
ints = ("peak_memory", "weight_memory", "activation_memory",
        "workspace_memory", "lower_bound", "naive_memory", "buffers", "tensors")
for k in ints:
    assert isinstance(p[k], int) and p[k] >= 0, (k, p.get(k))
assert isinstance(p["strategy"], str) and p["strategy"], p
assert 0 <= p["reuse_ratio"] <= 1, p
assert p["peak_memory"] == p["weight_memory"] + p["activation_memory"] + p["workspace_memory"], p
assert p["lower_bound"] <= p["peak_memory"] <= p["naive_memory"] or p["strategy"] == "naive", p
' "$1"
}

# A small MiniMalloc problem with a hand-computed answer:
#   live bytes per step: 0:4  1:8  2:12  3:12  4:4   -> lower bound 12,
#   naive total 20, and height 12 is reachable (c@0, a@0, b@8, d@8).
write_small_problem() {
  cat >"$1" <<'CSV'
id,lower,upper,size
a,0,2,4
b,1,3,4
c,2,4,8
d,3,5,4
CSV
}
