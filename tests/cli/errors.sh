#!/usr/bin/env bash
# CLI: every kind of bad input exits 1 with one message naming the file and
# the line / node, and creates no output file.
. "$(dirname "$0")/lib/common.sh"

OUT="$T/should-not-exist.csv"
JOUT="$T/should-not-exist.json"

# Empty files.
: >"$T/empty.csv"
expect_error plan "$T/empty.csv" --out "$OUT"
err_has "empty.csv"
: >"$T/empty.json"
expect_error plan "$T/empty.json" --out "$JOUT"
err_has "empty.json: empty file"
printf ' \n\r\n\t' >"$T/blank.json"
expect_error plan "$T/blank.json" --out "$JOUT"
err_has "blank.json: empty file"
expect_error inspect "$T/empty.json"
err_has "empty.json: empty file"
: >"$T/problem.csv"
expect_error inspect "$T/problem.csv"
err_has "is a MiniMalloc problem, not a model"

# A bad CSV row: the message names file and line.
printf 'id,lower,upper,size\na,0,2,4\nb,1,x,4\n' >"$T/badrow.csv"
expect_error plan "$T/badrow.csv" --out "$OUT" --profile "$JOUT"
err_has "badrow.csv:3"
printf 'id,lower,upper,size\na,0,2,4\nb,5,2,4\n' >"$T/backwards.csv"
expect_error plan "$T/backwards.csv" --out "$OUT"
err_has "backwards.csv:3"
printf 'id,lower,upper,size\na,0,2,4\na,1,3,4\n' >"$T/dup.csv"
expect_error plan "$T/dup.csv" --out "$OUT"
err_has "dup.csv:3"
printf 'id,lower,upper,size\na,0,2\n' >"$T/short.csv"
expect_error plan "$T/short.csv" --out "$OUT"
err_has "short.csv:2"
printf 'id,lower,size\na,0,2\n' >"$T/nocol.csv"
expect_error plan "$T/nocol.csv" --out "$OUT"
err_has "nocol.csv"
printf 'id,lower,upper,size\na,0,2,-4\n' >"$T/neg.csv"
expect_error plan "$T/neg.csv" --out "$OUT"
err_has "neg.csv:2"

# Sizes whose sum overflows 64 bits; a value past 2^64; a file cut off in
# the middle of its last row.
printf 'id,lower,upper,size\na,0,2,18446744073709551615\nb,1,3,1\n' >"$T/sum.csv"
expect_error plan "$T/sum.csv" --out "$OUT"
err_has "sum.csv:3: sum of sizes overflows 64 bits"
printf 'id,lower,upper,size\na,0,2,18446744073709551616\n' >"$T/huge.csv"
expect_error plan "$T/huge.csv" --out "$OUT"
err_has "huge.csv:2:"
err_has "does not fit in 64 bits"
printf 'id,lower,upper,size,alignment\na,0,2,4,9223372036854775808\nb,0,2,4,9223372036854775808\n' \
  >"$T/bigalign.csv"
expect_error plan "$T/bigalign.csv" --out "$OUT"
err_has "bigalign.csv: "
err_has "overflows 64 bits"
printf 'id,lower,upper,size\na,0,2,4\nb,1,3' >"$T/cut.csv"
expect_error plan "$T/cut.csv" --out "$OUT"
err_has "cut.csv:3:"
err_has "cut off"

# Non-UTF-8 bytes.
printf 'id,lower,upper,size\na\377,0,2,4\n' >"$T/latin.csv"
expect_error plan "$T/latin.csv" --out "$OUT"
err_has "latin.csv:2"
printf '{"format_version": 1, "name": "bad\377", "tensors": [], "ops": []}\n' \
  >"$T/latin.json"
expect_error plan "$T/latin.json" --out "$JOUT"
err_has "latin.json"

# Missing files and directories.
expect_error plan "$T/missing.csv" --out "$OUT"
err_has "missing.csv"
expect_error plan "$T/missing.json" --out "$JOUT"
err_has "missing.json"
mkdir "$T/dir.csv"
expect_error plan "$T/dir.csv" --out "$OUT"
err_has "dir.csv"

# JSON graphs: syntax error, unknown tensor, cycle.
printf '{"format_version": 1,\n "name": "x",\n "tensors": [,]}\n' >"$T/syntax.json"
expect_error plan "$T/syntax.json" --out "$JOUT"
err_has "syntax.json:3"
cat >"$T/unknown.json" <<'JSON'
{"format_version": 1, "name": "u",
 "tensors": [{"name": "x", "kind": "input", "dtype": "float32", "shape": [4]},
             {"name": "y", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "relu1", "type": "Relu", "inputs": ["nosuch"], "outputs": ["y"]}]}
JSON
expect_error plan "$T/unknown.json" --out "$JOUT"
err_has "unknown.json"
err_has "relu1"
err_has "nosuch"
cat >"$T/cycle.json" <<'JSON'
{"format_version": 1, "name": "c",
 "tensors": [{"name": "a", "kind": "activation", "dtype": "float32", "shape": [4]},
             {"name": "b", "kind": "activation", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "opA", "type": "Relu", "inputs": ["b"], "outputs": ["a"]},
         {"name": "opB", "type": "Relu", "inputs": ["a"], "outputs": ["b"]}]}
JSON
expect_error plan "$T/cycle.json" --out "$JOUT" --profile "$T/should-not-exist.p.json"
err_has "cycle.json"
err_matches "op(A|B)"
err_has "cycle"

# JSON graphs: a file cut short, a tensor nobody produces, a name used
# twice, nesting past the parser's limit.
printf '{"format_version": 1, "name": "x", "tensors": [{"name": "a"' \
  >"$T/cut.json"
expect_error plan "$T/cut.json" --out "$JOUT"
err_has "cut.json:1:"
err_has "unexpected end of input"
cat >"$T/orphan.json" <<'JSON'
{"format_version": 1, "name": "o",
 "tensors": [{"name": "a", "kind": "activation", "dtype": "float32", "shape": [4]},
             {"name": "y", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "relu1", "type": "Relu", "inputs": ["a"], "outputs": ["y"]}]}
JSON
expect_error plan "$T/orphan.json" --out "$JOUT"
err_has "orphan.json: op 'relu1' reads tensor 'a' which nobody produces"
cat >"$T/twice.json" <<'JSON'
{"format_version": 1, "name": "t",
 "tensors": [{"name": "a", "kind": "input", "dtype": "float32", "shape": [4]},
             {"name": "a", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": []}
JSON
expect_error plan "$T/twice.json" --out "$JOUT"
err_has "twice.json: tensor 'a' (tensors[1]): name already used by tensors[0]"
if have_python; then
  python3 -c 'print("[" * 5000 + "]" * 5000)' >"$T/deep.json"
  expect_error plan "$T/deep.json" --out "$JOUT"
  err_has "deep.json:1:"
  err_has "nested more than"
fi

# Other formats.
printf 'onnx' >"$T/model.onnx"
expect_error plan "$T/model.onnx"
err_has "model.onnx"

# Usage errors.
printf 'id,lower,upper,size\na,0,2,4\n' >"$T/ok.csv"
expect_error plan "$T/ok.csv" --bogus
err_has "nnmem plan: unknown option '--bogus'"
err_has "Try 'nnmem plan --help'"
expect_error plan "$T/ok.csv" --out
err_has "needs a value"
expect_error plan "$T/ok.csv" "$T/ok.csv"
err_has "unexpected argument"
expect_error plan "$T/ok.csv" --strategy fastest
err_has "unknown strategy 'fastest'"
expect_error plan "$T/ok.csv" --no-reuse --strategy greedy-size
err_has "does not combine with --strategy greedy-size"
expect_rc 0 plan "$T/ok.csv" --no-reuse --strategy naive -q
expect_error plan "$T/ok.csv" --json=yes
err_has "bad --json='yes': expected pretty or compact"
expect_error plan "$T/ok.csv" --quiet=yes
err_has "takes no value"
expect_error plan --model nosuchmodel --out "$JOUT"
err_has "nosuchmodel"
expect_error plan "$T/ok.csv" --out "$OUT" --profile "$OUT"
err_has "same file"
expect_error plan "$T/ok.csv" --out "$T/./should-not-exist.csv" --profile "$OUT"
err_has "same file"
# The input is never overwritten by an output (also through another name).
cp "$T/ok.csv" "$T/keep.csv"
expect_error plan "$T/keep.csv" --out "$T/keep.csv"
err_has "--out '$T/keep.csv' is the input file"
expect_error plan "$T/keep.csv" --out "$T/./keep.csv"
err_has "is the input file"
expect_error plan "$T/keep.csv" --profile "$T/keep.csv"
err_has "--profile"
cmp -s "$T/ok.csv" "$T/keep.csv" || fail "the input file was changed"

# An output folder that does not exist: error, nothing half-written.
expect_error plan "$T/ok.csv" --out "$T/nodir/should-not-exist.csv"
err_has "nodir"

# --profile into a missing folder or onto a folder: found before --out is
# written, so an existing --out file keeps its contents.
printf 'keep me\n' >"$T/old.csv"
expect_error plan "$T/ok.csv" --out "$T/old.csv" --profile "$T/nodir/p.json"
err_has "nodir/p.json"
grep -qx 'keep me' "$T/old.csv" || fail "--out file was replaced or removed"
expect_error plan "$T/ok.csv" --out "$T/old.csv" --profile "$T/dir.csv"
err_has "is a directory"
grep -qx 'keep me' "$T/old.csv" || fail "--out file was replaced or removed"

# --profile fails after --out succeeded: the --out file is removed again.
expect_error plan "$T/ok.csv" --out "$T/should-not-exist.csv" \
  --profile "$T/nodir/p.json"
no_file "$T/should-not-exist.csv"

# Outputs that are devices are written in place (never replaced by a
# regular file); a full device is an error, and so is a report that cannot
# be written to standard output.
if [ -c /dev/full ]; then
  ln -s /dev/full "$T/full.json"
  expect_error plan "$T/ok.csv" --profile "$T/full.json"
  err_has "full.json"
  [ -L "$T/full.json" ] || fail "the link to /dev/full was replaced"
  LAST_CMD="nnmem plan ok.csv >/dev/full"
  "$NNMEM_BIN" plan "$T/ok.csv" >/dev/full 2>"$T/stderr"
  RC=$?
  [ "$RC" -eq 1 ] || fail "expected exit 1 when stdout is full"
  err_has "standard output"
fi
ln -s /dev/stdout "$T/stdout-link.json"
LAST_CMD="nnmem plan ok.csv -q --profile stdout-link.json | cat"
"$NNMEM_BIN" plan "$T/ok.csv" -q --profile "$T/stdout-link.json" 2>"$T/stderr" |
  cat >"$T/piped"
grep -qF '"peak_memory": 4' "$T/piped" || fail "profile not written to the pipe"
[ -L "$T/stdout-link.json" ] || fail "the link to /dev/stdout was replaced"
mkdir "$T/outdir.json"
expect_error plan "$T/ok.csv" --profile "$T/outdir.json"
err_has "outdir.json: is a directory"

finish
