#!/usr/bin/env bash
# CLI: reading inputs. "-" is standard input for every command (format from
# the content); --max-input-size caps files, pipes and devices (/dev/zero
# is refused, not read until memory runs out); content that does not match
# the extension is named ("this looks like an ONNX model (protobuf), not a
# CSV problem") instead of a parser error about its first byte.
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/p.csv"
OUT="$T/should-not-exist.csv"

# ---- the size limit ----
expect_error plan /dev/zero --max-input-size 1M --out "$OUT"
err_has "over the limit"
err_has "--max-input-size"
expect_error plan "$T/p.csv" --max-input-size 10 --out "$OUT"
err_has "over the limit"
#    the sizes read as sizes: "... is 61 B, over the limit of 10 B;", not
#    "10 B bytes ()"
err_matches "p.csv: the input is [0-9]+ B, over the limit of 10 B; raise it"
LAST_CMD="cat p.csv | nnmem plan - --max-input-size 10"
cat "$T/p.csv" | "$NNMEM_BIN" plan - --max-input-size 10 >"$T/stdout" \
  2>"$T/stderr"
[ $? -eq 1 ] || fail "expected exit 1"
err_has "standard input: the input is over the limit of 10 B (stopped reading after 11 B); raise it"
expect_rc 0 plan "$T/p.csv" --max-input-size 1K --quiet
expect_error plan "$T/p.csv" --max-input-size 0
expect_error plan "$T/p.csv" --max-input-size lots
expect_error verify /dev/zero --max-input-size 64K
err_has "over the limit"
expect_error replay /dev/zero --max-input-size 64K
err_has "over the limit"
expect_error inspect /dev/zero --max-input-size 64K
err_has "over the limit"
#    a pipe that never ends is cut at the limit too
LAST_CMD="yes | nnmem plan - --max-input-size 100K"
yes 'a,0,1,4' | "$NNMEM_BIN" plan - --max-input-size 100K >"$T/stdout" \
  2>"$T/stderr"
RC=$?
[ "$RC" -eq 1 ] || fail "expected exit 1"
err_has "standard input: the input is over"

# ---- "-" reads standard input ----
LAST_CMD="nnmem plan - < p.csv"
"$NNMEM_BIN" plan - --out "$T/stdin-plan.csv" <"$T/p.csv" >"$T/stdout" \
  2>"$T/stderr"
RC=$?
[ "$RC" -eq 0 ] || fail "plan - failed"
grep -q '^d,3,5,4,' "$T/stdin-plan.csv" || fail "plan - wrote no plan"
LAST_CMD="nnmem verify - < solution"
"$NNMEM_BIN" verify - <"$T/stdin-plan.csv" >"$T/stdout" 2>"$T/stderr"
RC=$?
[ "$RC" -eq 0 ] || fail "verify - failed"
LAST_CMD="nnmem replay - < p.csv"
"$NNMEM_BIN" replay - <"$T/p.csv" >"$T/stdout" 2>"$T/stderr"
RC=$?
[ "$RC" -eq 0 ] || fail "replay - failed"
cat >"$T/g.json" <<'JSON'
{"format_version": 1, "name": "tiny", "tensors": [
  {"name": "x", "kind": "input", "shape": [4], "dtype": "float32"},
  {"name": "y", "kind": "output", "shape": [4], "dtype": "float32"}],
 "ops": [{"name": "relu", "type": "Relu", "inputs": ["x"], "outputs": ["y"]}]}
JSON
LAST_CMD="nnmem inspect - < g.json"
"$NNMEM_BIN" inspect - <"$T/g.json" >"$T/stdout" 2>"$T/stderr"
RC=$?
[ "$RC" -eq 0 ] || fail "inspect - failed"
out_has "float32  [4]"
expect_error verify - -
#    an output naming the file standard input comes from (/dev/stdin, or the
#    redirected file itself) is the input file: it used to be overwritten
cp "$T/p.csv" "$T/in.csv"
for o in "--profile /dev/stdin" "--out $T/in.csv" "--svg $T/in.csv"; do
  LAST_CMD="nnmem plan - $o < in.csv"
  # shellcheck disable=SC2086
  "$NNMEM_BIN" plan - $o <"$T/in.csv" >"$T/stdout" 2>"$T/stderr"
  [ $? -eq 1 ] || fail "expected exit 1"
  err_matches "is the input file|named twice"
  cmp -s "$T/p.csv" "$T/in.csv" || fail "the input file was overwritten"
done
#    a FIFO is read like a pipe
if mkfifo "$T/fifo" 2>/dev/null; then
  cat "$T/p.csv" >"$T/fifo" &
  expect_rc 0 plan "$T/fifo" --quiet
  wait
fi

# ---- content that does not match the extension ----
printf '\x08\x07\x12\x07pytorch\x3a\x00' >"$T/model.csv"
expect_error plan "$T/model.csv" --out "$OUT"
err_has "model.csv: this looks like an ONNX model (protobuf), not a CSV problem"
cp "$T/model.csv" "$T/model.json"
expect_error plan "$T/model.json"
err_has "looks like an ONNX model (protobuf), not a JSON graph"
expect_error inspect "$T/model.json"
err_has "looks like an ONNX model (protobuf)"
expect_error verify "$T/model.csv"
err_has "looks like an ONNX model"
cp "$T/g.json" "$T/graph.csv"
expect_error plan "$T/graph.csv"
err_has "this looks like a JSON document, not a CSV problem"
cp "$T/p.csv" "$T/problem.json"
expect_error plan "$T/problem.json"
err_has "this looks like CSV text, not a JSON graph"
cp "$T/p.csv" "$T/problem.onnx"
expect_error plan "$T/problem.onnx"
err_has "this looks like CSV text, not an ONNX model"
if command -v gzip >/dev/null; then
  gzip -c "$T/p.csv" >"$T/gz.csv"
  expect_error plan "$T/gz.csv"
  err_has "compressed file; decompress it first"
fi
printf 'PK\x03\x04\x14\x00\x00\x00' >"$T/zipped.onnx"
expect_error plan "$T/zipped.onnx"
err_has "compressed file; decompress it first"
#    no extension: the content decides
cp "$T/p.csv" "$T/noext"
expect_rc 0 plan "$T/noext" --quiet
cp "$T/g.json" "$T/noext2"
expect_rc 0 plan "$T/noext2" --quiet
head -c 64 /dev/urandom | tr '\010\022' '\001\001' >"$T/random.bin"
printf '\001' | cat - "$T/random.bin" >"$T/random"
expect_error plan "$T/random"
err_has "binary file"
cp "$T/random" "$T/random.csv"
expect_error plan "$T/random.csv"
err_has "this looks like a binary file, not a CSV problem"

finish
