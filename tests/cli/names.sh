#!/usr/bin/env bash
# CLI: names from input files with control bytes (a newline, a terminal
# escape) are escaped in error messages too: one message is one line, and
# "\n" / "\x1b[31m" show what the name holds (defect 9).
. "$(dirname "$0")/lib/common.sh"

# one_line: stderr is exactly one line without control bytes
one_line() {
  [ "$(wc -l <"$T/stderr")" -eq 1 ] || fail "the message spans lines"
  LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$T/stderr" &&
    fail "the message holds control bytes"
  return 0
}

# A JSON graph: an op reads a tensor nobody defines, named with a newline
# and a colour escape.
cat >"$T/bad.json" <<'JSON'
{"format_version": 1, "name": "g",
 "tensors": [{"name": "x", "kind": "input", "dtype": "float32", "shape": [4]},
             {"name": "y", "kind": "output", "dtype": "float32", "shape": [4]}],
 "ops": [{"name": "evil\nop\u001b[31m", "type": "Add",
          "inputs": ["x", "no\nwhere\u001b[31m"], "outputs": ["y"]}]}
JSON
expect_error plan "$T/bad.json"
one_line
err_has 'no\nwhere\x1b[31m'

# A CSV id with a control byte in an error (a duplicate id).
printf 'id,lower,upper,size\n"a\033[31m",0,2,4\n"a\033[31m",1,3,4\n' >"$T/dup.csv"
expect_error plan "$T/dup.csv"
one_line
err_has 'a\x1b[31m'

finish
